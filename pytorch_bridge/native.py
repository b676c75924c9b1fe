"""The compiled native library (pytorch_bridge._native), with BLAS loaded.

Importing this module loads the extension built from native/ by ffi/, loads
the scipy-openblas32 BLAS into it once per process, and defines the Python
callback that C calls when a numpy-backed storage is freed.
"""
import glob
import os
import sys
import threading


def _built_copies_elsewhere(here):
    """pytorch_bridge folders other than `here` that hold a built _native: on sys.path, or in an installed
    luatorch distribution's files."""
    found = []

    def add(folder):
        folder = os.path.realpath(folder)
        if folder != here and folder not in found and glob.glob(os.path.join(folder, "_native*.so")):
            found.append(folder)

    for entry in sys.path:
        add(os.path.join(entry or os.getcwd(), "pytorch_bridge"))
    try:
        from importlib import metadata

        for dist in metadata.distributions(name="luatorch"):
            for f in dist.files or ():
                if f.parts[0] == "pytorch_bridge" and f.name.startswith("_native"):
                    add(os.path.dirname(str(dist.locate_file(f))))
    except Exception:  # damaged metadata only makes the message shorter
        pass
    return found


def _not_built_message(exc):
    """What was imported from where, and why it has no native library: a source checkout that shadows an
    installed luatorch (Python puts the folder it starts in first on sys.path), or a broken install."""
    here = os.path.dirname(os.path.realpath(__file__))
    if glob.glob(os.path.join(here, "_native*.so")):
        return "luatorch: the native library in %s does not load (%s): reinstall luatorch" % (here, exc)
    checkout = os.path.dirname(here)
    if not os.path.isfile(os.path.join(checkout, "ffi", "build_native.py")):
        return "luatorch: %s has no native library (pytorch_bridge._native): reinstall luatorch" % here
    msg = "luatorch: imported %s, a source checkout whose native library is not built" % here
    elsewhere = _built_copies_elsewhere(here)
    if not elsewhere:
        return msg + ": build it with `pip install -e .`"
    if os.path.realpath(os.getcwd()) == checkout:
        return msg + ("; it shadows the installed luatorch in %s because Python was started in %s: start Python "
                      "from another folder, or build the checkout with `pip install -e .`" % (elsewhere[0], checkout))
    return msg + ("; it comes before the installed luatorch in %s on sys.path (PYTHONPATH?): take it off the path, "
                  "or build the checkout with `pip install -e .`" % elsewhere[0])


# OpenMP threads that have finished a parallel region sleep instead of spinning (libgomp reads this when the
# library loads, so before the import below): our kernels alternate OpenMP regions (im2col, col2im, bias) with
# OpenBLAS calls, whose own threads otherwise wait for cores that spinning OpenMP threads hold; measured: a
# dilated 3x3 convolution 140 -> 23 ms per pass on 2 cores (docs/results/nn.md). A user's setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

try:
    from pytorch_bridge._native import ffi, lib
except ImportError as exc:
    raise ImportError(_not_built_message(exc)) from None

NATIVE_PATH = os.path.abspath(__import__("pytorch_bridge._native", fromlist=["_native"]).__file__)

# Owners of foreign (numpy) storages, keyed by the handle passed to C as ctx.
_owners = {}
_owners_lock = threading.RLock()
_next_handle = [1]


def keep_alive(obj):
    """Register obj as the owner of a foreign storage; returns the ctx handle for C, whose storage gives it
    to RELEASE_OWNER when it is freed."""
    with _owners_lock:
        h = _next_handle[0]
        _next_handle[0] += 1
        _owners[h] = obj
    return ffi.cast("void *", h)


# C records the handles of freed foreign storages (no Python runs inside Lua's collector); they are dropped
# here, after each call into Lua from a Runtime (from_numpy's included) and before a count.
RELEASE_OWNER = ffi.addressof(lib, "lt_foreign_release_later")
_taken = ffi.new("void *[256]")


def drop_released_owners():
    """Let go of the owners whose storages C has freed."""
    with _owners_lock:   # which also guards _taken
        while True:
            n = lib.lt_foreign_take_released(_taken, len(_taken))
            if not n:
                return
            for i in range(n):
                _owners.pop(int(ffi.cast("uintptr_t", _taken[i])), None)


def forget_owner(ctx):
    """Let go of an owner whose storage was never made."""
    with _owners_lock:
        _owners.pop(int(ffi.cast("uintptr_t", ctx)), None)


def live_foreign_owners():
    """How many numpy arrays are currently kept alive by Lua storages."""
    drop_released_owners()
    return len(_owners)


def check(rc):
    if rc != 0:
        raise RuntimeError(ffi.string(lib.lt_errmsg()).decode())


def _load_blas():
    if lib.lt_blas_loaded():
        return
    import scipy_openblas32

    path = os.path.join(scipy_openblas32.get_lib_dir(), "lib" + scipy_openblas32.get_library() + ".so")
    check(lib.lt_blas_load(path.encode()))


_load_blas()


def _onednn_library():
    """libdnnl.so.3 of the onednn-cpu-gomp wheel, LUATORCH_ONEDNN_LIB if set, or None when not installed."""
    path = os.environ.get("LUATORCH_ONEDNN_LIB")
    if path:
        return path
    try:
        from importlib import metadata

        files = metadata.distribution("onednn-cpu-gomp").files or ()
    except Exception:  # not installed (or unreadable metadata): im2col it is
        return None
    for f in files:
        if f.name == "libdnnl.so.3":
            return os.path.realpath(str(f.locate()))
    return None


def _load_onednn():
    """oneDNN for float32 convolutions, when installed and not switched off with LUATORCH_ONEDNN=0; without it
    the convolutions stay im2col + GEMM (lt_onednn_info() says why). A LUATORCH_ONEDNN_LIB that does not load
    gets one line on stderr, since someone asked for it."""
    if lib.lt_onednn_loaded() or os.environ.get("LUATORCH_ONEDNN", "1") == "0":
        return
    path = _onednn_library()
    if path and lib.lt_onednn_load(path.encode()) != 0 and os.environ.get("LUATORCH_ONEDNN_LIB"):
        sys.stderr.write("luatorch: LUATORCH_ONEDNN_LIB: %s; convolutions use im2col\n"
                         % ffi.string(lib.lt_errmsg()).decode())


_load_onednn()


def _register_cuda():
    """Where the CUDA libraries, headers, kernel sources and kernel cache are (pytorch_bridge/cuda.py); nothing
    is loaded until cutorch needs it, and a machine without CUDA loses nothing."""
    from pytorch_bridge import cuda

    cuda.register(lib, ffi)


_register_cuda()

ELEMENT_TYPES = ["Byte", "Char", "Short", "Int", "Long", "Float", "Double"]
