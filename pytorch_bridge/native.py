"""The compiled native library (pytorch_bridge._native), with BLAS loaded.

Importing this module loads the extension built from native/ by ffi/, loads
the scipy-openblas32 BLAS into it once per process, and defines the Python
callback that C calls when a numpy-backed storage is freed.
"""
import os
import threading

try:
    from pytorch_bridge._native import ffi, lib
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(
        "luatorch's native library is not built: install the project with `pip install -e .` "
        f"(or `pip install .`) so that ffi/build_native.py compiles native/ ({exc})"
    ) from exc

NATIVE_PATH = os.path.abspath(__import__("pytorch_bridge._native", fromlist=["_native"]).__file__)

# Owners of foreign (numpy) storages, keyed by the handle passed to C as ctx.
_owners = {}
_owners_lock = threading.Lock()
_next_handle = [1]


def keep_alive(obj):
    """Register obj as the owner of a foreign storage; returns the ctx handle for C."""
    with _owners_lock:
        h = _next_handle[0]
        _next_handle[0] += 1
        _owners[h] = obj
    return ffi.cast("void *", h)


@ffi.def_extern()
def lt_py_release(ctx):
    with _owners_lock:
        _owners.pop(int(ffi.cast("uintptr_t", ctx)), None)


def live_foreign_owners():
    """How many numpy arrays are currently kept alive by Lua storages."""
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

ELEMENT_TYPES = ["Byte", "Char", "Short", "Int", "Long", "Float", "Double"]
