"""Allreduce and friends over MPI, on numpy arrays (and, through lua/mpi, Torch tensors).

    from pytorch_bridge import mpi
    mpi.allreduce(grad)                         # in place, sum over all ranks
    mpi.allreduce(x, out=y, algorithm="multicolor", colors=2, chunk=1 << 18)
    h = mpi.iallreduce(grad); ...; mpi.wait(h)   # progressed by a communication thread
    mpi.broadcast(params, root=0); mpi.barrier(); mpi.rank(); mpi.size()
    mpi.cuda_aware()   # (aware, why): whether lua/mpi hands device tensors to MPI without staging

The collectives are C (native/collectives/, one file per algorithm) in their
own shared library, compiled on first use with the mpicc that belongs to the
MPI library mpi4py loaded (MPICH and Open MPI have different MPI_Comm types,
so one binary cannot serve both) and cached per MPI identity and source hash.
The main pytorch_bridge._native extension stays MPI-free.
"""
import atexit
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading

import numpy as np
from cffi import FFI

# ------------------------------------------------ which MPI, for the launcher that started us

# What the launchers set in every rank: Open MPI's mpirun/mpiexec (Debian's default `mpiexec` once
# openmpi-bin is installed), and MPICH's hydra (the venv's bin/mpiexec, from the mpich wheel).
LAUNCHER_SIZE_VARS = {"openmpi": "OMPI_COMM_WORLD_SIZE", "mpich": "PMI_SIZE"}
LAUNCHER_RANK_VARS = {"openmpi": "OMPI_COMM_WORLD_RANK", "mpich": "PMI_RANK"}
LAUNCHER_NAMES = {"openmpi": "Open MPI's mpirun/mpiexec", "mpich": "MPICH's mpiexec (hydra)"}


def launcher_family():
    """'openmpi' or 'mpich': the MPI whose launcher started this process, from the variables it sets; None
    when none did (or one that does not tell, such as srun)."""
    for family, var in LAUNCHER_SIZE_VARS.items():
        if var in os.environ:
            return family
    return None


def _mpi4py_builds():
    """The MPI families mpi4py has a build for (its MPI-agnostic wheel has one per family), without loading it."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("mpi4py")
    folders = list(spec.submodule_search_locations or []) if spec else []
    return {f for d in folders for f in ("openmpi", "mpich") if glob.glob(os.path.join(d, "MPI.%s.*" % f))}


def _say_once(message):
    """A line from rank 0 only (every rank has the same thing to say)."""
    if os.environ.get(LAUNCHER_RANK_VARS.get(launcher_family(), ""), "0") == "0":
        print("luatorch: " + message, file=sys.stderr, flush=True)


def select_mpi_for_launcher():
    """Before mpi4py loads an MPI: under Open MPI's launcher, make it load Open MPI (MPI4PY_MPIABI=openmpi).
    mpi4py's default here is the venv's MPICH, which aborts under Open MPI's launcher with "unsupported PMI
    version". A choice the user made (MPI4PY_MPIABI or MPI4PY_LIBMPI set) is kept; if it cannot work, one
    line says what to change (MPICH then aborts with its own message)."""
    family = launcher_family()
    if family != "openmpi" or "mpi4py.MPI" in sys.modules:
        return
    chosen = os.environ.get("MPI4PY_MPIABI") or os.environ.get("MPI4PY_LIBMPI")
    if chosen is None and "openmpi" in _mpi4py_builds():
        os.environ["MPI4PY_MPIABI"] = "openmpi"
    elif chosen is None:
        _say_once("started by %s, but this mpi4py is built for another MPI: launch with that MPI's mpiexec"
                  % LAUNCHER_NAMES[family])
    elif "openmpi" not in chosen.lower() and "libmpi.so.40" not in chosen:
        _say_once("started by %s, but MPI4PY_MPIABI/MPI4PY_LIBMPI=%s makes mpi4py load another MPI: unset it "
                  "(luatorch then loads Open MPI) or launch with the venv's bin/mpiexec (MPICH)"
                  % (LAUNCHER_NAMES[family], chosen))


def check_launcher_match(comm):
    """After MPI_Init: the ranks must see the world their launcher started. An MPI that does not belong to
    the launcher starts every rank alone (a world of 1), which would train N separate copies."""
    family = launcher_family()
    expected = int(os.environ.get(LAUNCHER_SIZE_VARS.get(family, ""), "0") or 0)
    if family and expected and comm.Get_size() != expected:
        fix = {"mpich": "unset MPI4PY_MPIABI/MPI4PY_LIBMPI, or start the ranks with Open MPI's mpirun",
               "openmpi": "set MPI4PY_MPIABI=openmpi, or start the ranks with the venv's bin/mpiexec (MPICH)"}
        raise MPIError("luatorch: started by %s as one of %d ranks, but mpi4py loaded %s, which sees a world of %d "
                       "(every rank alone): %s" % (LAUNCHER_NAMES[family], expected, mpi_family(), comm.Get_size(),
                                                   fix[family]))


select_mpi_for_launcher()  # at import, before anything here loads mpi4py


def _native_dir():
    """native/ of the source checkout, or its installed copy (package luatorch_native)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")
    if os.path.isdir(os.path.join(here, "collectives")):
        return here
    import importlib.util

    spec = importlib.util.find_spec("luatorch_native")
    if spec and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    raise ImportError("luatorch: the collectives' C sources (native/collectives) are not installed")


NATIVE = _native_dir()
HEADER = os.path.join(NATIVE, "include", "lt_coll.h")
SOURCES = os.path.join(NATIVE, "collectives")
ALGORITHMS = ("auto", "mpi", "ring", "rhd", "tree", "multicolor", "multicolor_ring")
CFLAGS = ["-O3", "-march=native", "-std=gnu11", "-fPIC", "-shared", "-Wall"]
ABI = 1


class MPIError(RuntimeError):
    """A collective failed (mismatched calls across ranks, bad arguments, MPI error)."""


def cdef_text():
    """lt_coll.h without comments and preprocessor lines: what cffi and LuaJIT's ffi.cdef read."""
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return "\n".join(ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")) + "\n"


_ffi = FFI()
_ffi.cdef(cdef_text())


# ------------------------------------------------------------------ building

def loaded_libmpi():
    """Path of the libmpi shared object mpi4py loaded into this process."""
    from mpi4py import MPI  # noqa: F401  (loads libmpi)

    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if re.match(r"libmpi(_abi)?\.so", os.path.basename(path)):
                return os.path.realpath(path)
    return None


def mpi_family():
    from mpi4py import MPI

    v = MPI.Get_library_version()
    if "Open MPI" in v:
        return "openmpi"
    if "MPICH" in v or "MVAPICH" in v or "Intel(R) MPI" in v:
        return "mpich"
    return "unknown"


def _show(cc):
    try:
        return subprocess.run([cc, "-show"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def find_mpicc():
    """The MPI C compiler wrapper matching the MPI library mpi4py loaded.

    LUATORCH_MPICC wins. Otherwise: bin/mpicc of the prefix the library lives
    in (the PyPI mpich/openmpi wheels put it in the venv), then the Debian
    alternatives (mpicc.openmpi, mpicc.mpich), then mpicc on PATH; each one is
    accepted only if `mpicc -show` points at the loaded library's family."""
    env = os.environ.get("LUATORCH_MPICC")
    if env:
        return env
    family = mpi_family()
    lib = loaded_libmpi()
    cands = []
    if lib:
        libdir = os.path.dirname(lib)
        for up in (os.path.dirname(libdir), os.path.dirname(os.path.dirname(libdir))):
            cands.append(os.path.join(up, "bin", "mpicc"))
    cands += [os.path.join(os.path.dirname(sys.executable), "mpicc")]
    cands += ["mpicc.openmpi"] if family == "openmpi" else ["mpicc.mpich"]
    cands += ["mpicc"]
    for c in cands:
        path = c if os.path.isabs(c) else shutil.which(c)
        if not path or not os.access(path, os.X_OK):
            continue
        show = _show(path)
        if not show:
            continue
        is_ompi = "openmpi" in show or "open-mpi" in show
        if (family == "openmpi") == is_ompi and (not lib or family == "openmpi" or _same_prefix(show, lib)):
            return path
    raise MPIError(
        "luatorch mpi: no MPI C compiler matching the loaded MPI library (%s, %s). Install the one that "
        "goes with it (pip install mpich for the PyPI MPICH; apt-get install libopenmpi-dev for Debian's "
        "Open MPI) or set LUATORCH_MPICC to its mpicc." % (family, lib))


def _same_prefix(show, lib):
    """Whether an MPICH mpicc -show line links against the directory lib is in."""
    libdir = os.path.dirname(lib)
    return ("-L" + libdir) in show or libdir in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")


def cache_dir():
    base = os.environ.get("LUATORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "luatorch")
    return os.path.join(base, "coll")


def _source_hash():
    h = hashlib.sha256()
    h.update(" ".join(CFLAGS).encode())
    for name in sorted(os.listdir(SOURCES)) + [HEADER]:
        path = name if os.path.isabs(name) else os.path.join(SOURCES, name)
        if path.endswith((".c", ".h")):
            h.update(name.encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:16]


def library_path():
    """Build (once, cached) the collectives library for the loaded MPI; return its path."""
    if not os.path.isdir(SOURCES):
        raise MPIError("luatorch mpi: the C sources (%s) are not there; use a source checkout or an editable "
                       "install (pip install -e .)" % SOURCES)
    from mpi4py import MPI

    ident = MPI.Get_library_version().strip().splitlines()[0] + "|" + str(loaded_libmpi())
    key = "%s-%s-%s" % (mpi_family(), hashlib.sha256(ident.encode()).hexdigest()[:12], _source_hash())
    d = os.path.join(cache_dir(), key)
    so = os.path.join(d, "libltcoll.so")
    if os.path.exists(so):
        return so
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, ".lock"), "w") as lock:  # one rank builds, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(so):
            return so
        cc = find_mpicc()
        srcs = sorted(os.path.join(SOURCES, f) for f in os.listdir(SOURCES) if f.endswith(".c"))
        tmp = so + ".%d.tmp" % os.getpid()
        cmd = [cc, *CFLAGS, "-I", os.path.dirname(HEADER), *srcs, "-o", tmp, "-lm", "-lpthread", "-ldl"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise MPIError("luatorch mpi: building the collectives failed:\n%s\n%s" % (" ".join(cmd), r.stderr))
        with open(os.path.join(d, "build.json"), "w") as f:
            json.dump({"mpicc": cc, "show": _show(cc).strip(), "library": ident, "command": cmd}, f, indent=1)
        os.replace(tmp, so)
    return so


_lib = None
_lib_path = None
_lib_lock = threading.Lock()


def lib():
    """The loaded collectives library (cffi ABI mode over lt_coll.h)."""
    global _lib, _lib_path
    with _lib_lock:
        if _lib is None:
            path = library_path()
            L = _ffi.dlopen(path)
            fam = _ffi.string(L.ltc_mpi_family()).decode()
            if fam != mpi_family() or L.ltc_abi_version() != ABI:
                raise MPIError("luatorch mpi: %s was built for %s (abi %d) but mpi4py loaded %s" % (
                    path, fam, L.ltc_abi_version(), mpi_family()))
            _lib, _lib_path = L, path
    return _lib


def _check(rc):
    if rc != 0:
        raise MPIError(_ffi.string(lib().ltc_errmsg()).decode())


# ------------------------------------------------------------ CUDA-aware MPI

CUDA_AWARE_VAR = "LUATORCH_MPI_CUDA_AWARE"


def decide_cuda_aware(setting, library_answer, library_how, library_version, environ):
    """Whether device (CUDA) memory may go to this rank's MPI library as it is, and why: (aware, reason).

    setting: LUATORCH_MPI_CUDA_AWARE ('auto' or unset: ask the library; '1'/'0': the user's word);
    library_answer, library_how: ltc_mpi_cuda_support's answer (1, 0, -1 for no query) and its text;
    library_version: MPI_Get_library_version, for MVAPICH2, which has no query but a switch, MV2_USE_CUDA=1.
    An unknown setting raises MPIError."""
    value = (setting or "auto").strip().lower()
    if value not in ("auto", "0", "1"):
        raise MPIError("%s=%r: auto, 0 or 1 expected" % (CUDA_AWARE_VAR, setting))
    if value != "auto":
        return value == "1", "%s=%s" % (CUDA_AWARE_VAR, value)
    if library_answer >= 0:
        return library_answer == 1, library_how
    if "MVAPICH" in (library_version or ""):
        on = environ.get("MV2_USE_CUDA", "0") == "1"
        return on, "MVAPICH with MV2_USE_CUDA=%s" % environ.get("MV2_USE_CUDA", "(unset)")
    return False, library_how + ": taken as not CUDA-aware (%s=1 if it is)" % CUDA_AWARE_VAR


def agree_cuda_aware(local, gather):
    """Every rank's (aware, reason, error) from gather (an allgather) into one answer for all: aware only if every
    rank is, since ranks that stage and ranks that hand device memory to MPI would run different algorithms. An
    error on any rank raises on every rank."""
    everyone = gather(local)
    errors = [e for _, _, e in everyone if e]
    if errors:
        raise MPIError(errors[0])
    aware = [a for a, _, _ in everyone]
    if all(aware) or not any(aware):
        return local[0], local[1]
    return False, "not CUDA-aware on ranks %s (%s)" % (
        [i for i, (a, _, _) in enumerate(everyone) if not a], next(r for a, r, _ in everyone if not a))


def _query_cuda_aware(mpi4py_comm, library_version):
    how = _ffi.new("char[256]")
    answer = lib().ltc_mpi_cuda_support(how, 256)
    try:
        local = decide_cuda_aware(os.environ.get(CUDA_AWARE_VAR), answer, _ffi.string(how).decode(),
                                  library_version, os.environ) + (None,)
    except MPIError as e:
        local = (False, "", str(e))
    return agree_cuda_aware(local, mpi4py_comm.allgather)


# ------------------------------------------------------------ communicators

_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}


def _algorithm_id(name):
    if isinstance(name, int):
        return name
    if name not in ALGORITHMS:
        raise ValueError("unknown allreduce algorithm %r (one of %s)" % (name, ", ".join(ALGORITHMS)))
    return ALGORITHMS.index(name)


class Handle:
    """A pending iallreduce. wait() returns the result array."""

    def __init__(self, comm, req, keep, result):
        self._comm, self._req, self._keep, self._result = comm, req, keep, result

    def test(self):
        if self._req is None:
            return True
        done = _ffi.new("int *")
        _check(lib().ltc_test(self._req, done))
        return bool(done[0])

    def wait(self):
        if self._req is not None:
            req, self._req = self._req, None
            _check(lib().ltc_wait(req))
            self._keep = None
        return self._result

    def __del__(self):
        if getattr(self, "_req", None) is not None:
            try:
                lib().ltc_wait(self._req)  # the buffers must outlive the operation
            except Exception:  # interpreter shutdown
                pass


class Communicator:
    """Collectives on a duplicate of an mpi4py communicator."""

    def __init__(self, comm=None, timeout=None, check=True):
        from mpi4py import MPI

        self.mpi4py_comm = comm if comm is not None else MPI.COMM_WORLD
        out = _ffi.new("ltc_ctx **")
        addr = _ffi.cast("void *", MPI._addressof(self.mpi4py_comm))
        _check(lib().ltc_create(addr, float(timeout or 0), out))
        self._ctx = out[0]
        if not check:
            lib().ltc_set_check(self._ctx, 0)
        self.library = _ffi.string(lib().ltc_library(self._ctx)).decode()
        # whether device memory goes to MPI as it is (lua/mpi), the same answer on every rank
        try:
            self.cuda_aware, self.cuda_aware_reason = _query_cuda_aware(self.mpi4py_comm, MPI.Get_library_version())
        except MPIError:
            self.close()   # every rank raises: the context goes on all of them
            raise
        # auto's table is keyed by rank 0's host, so that every rank (on emulated or real
        # hosts with a shared file system) loads the same one
        self.host0 = self.mpi4py_comm.bcast(socket.gethostname(), root=0)
        load_calibration(self)

    @property
    def ctx(self):
        if self._ctx is None:
            raise MPIError("the communicator is closed")
        return self._ctx

    def close(self):
        if self._ctx is not None:
            ctx, self._ctx = self._ctx, None
            lib().ltc_destroy(ctx)

    def rank(self):
        return lib().ltc_rank(self.ctx)

    def size(self):
        return lib().ltc_size(self.ctx)

    def barrier(self):
        _check(lib().ltc_barrier(self.ctx))

    @property
    def timeout(self):
        return lib().ltc_get_timeout(self.ctx)

    @timeout.setter
    def timeout(self, seconds):
        lib().ltc_set_timeout(self.ctx, float(seconds))

    def _args(self, array, out, algorithm, colors, chunk):
        if not isinstance(array, np.ndarray):
            raise TypeError("allreduce: numpy.ndarray expected, got %s" % type(array).__name__)
        dt = _DTYPES.get(array.dtype)
        if dt is None:
            raise TypeError("allreduce: float32 or float64 array expected, got %s" % array.dtype)
        if not array.flags.c_contiguous:
            raise ValueError("allreduce: the array must be C-contiguous (np.ascontiguousarray)")
        if out is None:
            out = array
        if not isinstance(out, np.ndarray) or out.dtype != array.dtype or out.size != array.size \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("allreduce: out must be a writable C-contiguous %s array of %d elements"
                             % (array.dtype, array.size))
        send = _ffi.NULL if out is array else _ffi.cast("void *", array.ctypes.data)
        recv = _ffi.cast("void *", out.ctypes.data)
        return send, recv, array.size, dt, _algorithm_id(algorithm), int(colors or 0), int(chunk or 0), out

    def allreduce(self, array, out=None, algorithm="auto", colors=0, chunk=0):
        """Sum `array` over all ranks into `out` (default: in place); returns the result array."""
        send, recv, n, dt, alg, c, ch, out = self._args(array, out, algorithm, colors, chunk)
        _check(lib().ltc_allreduce(self.ctx, send, recv, n, dt, alg, c, ch))
        return out

    def iallreduce(self, array, out=None, algorithm="auto", colors=0, chunk=0):
        """Start an allreduce on the communication thread; returns a Handle (wait() it)."""
        send, recv, n, dt, alg, c, ch, out = self._args(array, out, algorithm, colors, chunk)
        req = _ffi.new("ltc_req **")
        _check(lib().ltc_iallreduce(self.ctx, send, recv, n, dt, alg, c, ch, req))
        return Handle(self, req[0], (array, out), out)

    def broadcast(self, array, root=0):
        """Copy root's `array` into every rank's `array` (any dtype, C-contiguous); returns it."""
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise ValueError("broadcast: a C-contiguous numpy array expected")
        _check(lib().ltc_broadcast(self.ctx, _ffi.cast("void *", array.ctypes.data), array.nbytes, int(root)))
        return array

    def choose(self, nbytes):
        """What auto runs for nbytes: (algorithm name, colors, chunk bytes)."""
        a, c, ch = _ffi.new("int *"), _ffi.new("int *"), _ffi.new("int64_t *")
        _check(lib().ltc_choose(self.ctx, int(nbytes), a, c, ch))
        return ALGORITHMS[a[0]], c[0], ch[0]

    def set_table(self, entries):
        """entries: [(nbytes, algorithm name, colors)], the measured best per size, for auto."""
        entries = sorted(entries)
        nb = _ffi.new("int64_t[]", [e[0] for e in entries] or [0])
        al = _ffi.new("int[]", [_algorithm_id(e[1]) for e in entries] or [0])
        co = _ffi.new("int[]", [int(e[2]) for e in entries] or [0])
        _check(lib().ltc_set_table(self.ctx, len(entries), nb, al, co))

    def set_model(self, alpha, beta, gamma):
        lib().ltc_set_model(self.ctx, alpha, beta, gamma)


# --------------------------------------------------------------- calibration

def calibration_path(comm):
    """Cache file of the auto table for this MPI library, host and rank count."""
    key = "%s|%s|%d" % (comm.library, getattr(comm, "host0", None) or socket.gethostname(), comm.size())
    return os.path.join(cache_dir(), "auto-%s.json" % hashlib.sha256(key.encode()).hexdigest()[:16])


def load_calibration(comm):
    """Give auto the cached measurements (run/bench_allreduce.py --calibrate), if any."""
    path = calibration_path(comm)
    try:
        with open(path) as f:
            cal = json.load(f)
    except (OSError, ValueError):
        return None
    if cal.get("model"):
        comm.set_model(*cal["model"])
    if cal.get("table"):
        comm.set_table([tuple(e) for e in cal["table"]])
    return cal


# ----------------------------------------------- module-level (COMM_WORLD)

_world = None


def world(timeout=None):
    """The default Communicator, on MPI.COMM_WORLD (created on first use)."""
    global _world
    if _world is None:
        from mpi4py import MPI

        check_launcher_match(MPI.COMM_WORLD)
        _world = Communicator(timeout=timeout)
        atexit.register(_close_world)  # before mpi4py's MPI_Finalize (atexit runs in reverse)
    elif timeout:
        _world.timeout = timeout
    return _world


def _close_world():
    global _world
    if _world is not None:
        _world.close()
        _world = None


def rank():
    return world().rank()


def size():
    return world().size()


def barrier():
    world().barrier()


def allreduce(array, out=None, algorithm="auto", colors=0, chunk=0):
    return world().allreduce(array, out, algorithm, colors, chunk)


def iallreduce(array, out=None, algorithm="auto", colors=0, chunk=0):
    return world().iallreduce(array, out, algorithm, colors, chunk)


def wait(handle):
    return handle.wait()


def broadcast(array, root=0):
    return world().broadcast(array, root)


def cuda_aware():
    """(aware, reason): whether the world communicator hands device memory to MPI without staging."""
    w = world()
    return w.cuda_aware, w.cuda_aware_reason


def lua_config():
    """What lua/mpi/init.lua needs: library path, cdef text, address of the world context, and whether device
    memory goes to MPI as it is (and why)."""
    w = world()
    return (lib(), _lib_path)[1], cdef_text(), int(_ffi.cast("uintptr_t", w.ctx)), w.cuda_aware, w.cuda_aware_reason
