"""The SIMT emulator's Python side, shared by the host tests of the CUDA kernels (test_cuda_kernels_host.py)
and of the host layer that launches them (test_cuda_ops_host.py): each kernel source of native/cuda/ built
with g++ and tests/cuda_host/simt.h into a shared library, and launched the way cuLaunchKernel launches it.
The session fixture `simt` (conftest.py) is a Builder."""
import concurrent.futures
import ctypes
import os
import shutil
import subprocess
import threading

import numpy as np
import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
CUDA_DIR = os.path.join(REPO, "native", "cuda")
SIMT_DIR = os.path.join(TESTS, "cuda_host")

# compile order: roughly the order the tests below need them
MODULES = ["simt_selftest", "copy", "fill", "pointwise", "reduce", "reduce_dim", "logsoftmax", "compare",
           "classnll", "dropout", "batchnorm", "pooling", "conv", "nn_pointwise", "nn_criterion", "gather_map", "lrn",
           "adaptive_pooling", "sort", "index", "stats", "scan", "masked", "histc", "multinomial", "sleep",
           "copy_batch"]
# every kernel file of native/cuda: what a process on the emulated driver needs to run all of the host layer
KERNEL_FILES = tuple(m for m in MODULES if m != "simt_selftest")


# the kernels' element types (their names in kernel names), as NumPy types, and their compute types
TYPES = ["Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Half"]
FLOATS = ["Float", "Double", "Half"]
INTS = ["Byte", "Char", "Short", "Int", "Long"]
NP = {"Byte": np.uint8, "Char": np.int8, "Short": np.int16, "Int": np.int32, "Long": np.int64,
      "Float": np.float32, "Double": np.float64, "Half": np.float16}
ACC = {t: np.int64 for t in INTS}
ACC.update({"Float": np.float32, "Double": np.float64, "Half": np.float32})




def cuda_tensor(view, base, data):
    """(lt_tensor *, lt_storage *) of the Cuda type of view's dtype, for native/src/cuda_ops.c: view's shape
    and strides over base's elements, which lie at data (base's own memory, or a device copy of base).
    Keep both alive while the tensor is used."""
    from pytorch_bridge.cuda import device_tensor
    from pytorch_bridge.native import ffi

    item = view.itemsize
    assert all(s % item == 0 for s in view.strides)
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return device_tensor(ffi, data, {np.dtype(v): k for k, v in NP.items()}[view.dtype], view.shape,
                         [s // item for s in view.strides], offset, base.size)


# ----------------------------------------------------------------------------- operand layouts and checks
def poison_value(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype.type(np.nan)
    return np.frombuffer(b"\x5a" * dtype.itemsize, dtype=dtype)[0]


def alloc(kind, shape, dtype, fill):
    """(base, view, index) with view = index(base) of the given logical shape and layout kind:
    contig, transposed (reversed dimension order in memory; a stride-3 view for 1-D), narrowed
    (offset into a bigger buffer and a step of 2 in the last dimension), expanded (the largest
    dimension has stride 0; inputs only)."""
    shape = tuple(shape)
    nd = len(shape)
    if kind == "contig":
        base = np.full(shape, fill, dtype)
        index = lambda a: a  # noqa: E731
    elif kind == "transposed":
        if nd == 1:
            base = np.full((3 * shape[0] + 1,), fill, dtype)
            index = lambda a: a[1::3][: shape[0]]  # noqa: E731
        else:
            base = np.full(shape[::-1], fill, dtype)
            index = lambda a: a.transpose()  # noqa: E731
    elif kind == "narrowed":
        base = np.full(tuple(s + 3 for s in shape[:-1]) + (2 * shape[-1] + 5,), fill, dtype)
        sl = tuple(slice(1, 1 + s) for s in shape[:-1]) + (slice(2, 2 + 2 * shape[-1], 2),)
        index = lambda a: a[sl]  # noqa: E731
    elif kind == "expanded":
        d = int(np.argmax(shape))
        small = tuple(1 if i == d else s for i, s in enumerate(shape))
        base = np.full(small, fill, dtype)
        index = lambda a: np.broadcast_to(a, shape)  # noqa: E731
    else:
        raise ValueError(kind)
    view = index(base)
    assert view.shape == shape
    return base, view, index


def make_input(kind, values, dtype):
    """(view, values, base): an input operand of the given layout holding `values` (already of dtype; for
    expanded, the values the view then holds) and the buffer it views."""
    values = np.asarray(values, dtype=dtype)
    if kind == "expanded":
        d = int(np.argmax(values.shape))
        values = np.broadcast_to(np.take(values, [0], axis=d), values.shape)
        base, view, index = alloc("expanded", values.shape, dtype, 0)
        base[...] = np.take(values, [0], axis=d)
        return view, values, base
    base, view, index = alloc(kind, values.shape, dtype, 0)
    view[...] = values
    return view, values, base


def make_output(kind, shape, dtype):
    """(base, view, outside-mask): a poisoned output and the mask of base elements not in the view."""
    base, view, index = alloc(kind, shape, dtype, poison_value(dtype))
    mask = np.ones(base.shape, bool)
    index(mask)[...] = False
    return base, view, mask


def assert_untouched(base, mask, what=""):
    outside = base[mask]
    p = poison_value(base.dtype)
    if base.dtype.kind == "f":
        bad = ~np.isnan(outside)
    else:
        bad = outside != p
    assert not bad.any(), "%s: %d elements outside the output view were written" % (what, bad.sum())


class LtTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sizes", ctypes.c_int64 * 8),
                ("strides", ctypes.c_int64 * 8), ("dims", ctypes.c_int32), ("pad_", ctypes.c_int32)]


assert ctypes.sizeof(LtTensor) == 144


_SIG = {ctypes.c_void_p: "p", ctypes.c_int64: "q", ctypes.c_uint64: "Q", ctypes.c_int32: "i",
        ctypes.c_uint32: "I", ctypes.c_float: "f", ctypes.c_double: "d"}


class SimtLib:
    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        self.dll.simt_launch.restype = ctypes.c_int
        self.dll.simt_launch.argtypes = [ctypes.c_char_p, ctypes.c_char_p] + [ctypes.c_uint] * 6 + [
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int]
        self.dll.simt_kernel_info.restype = ctypes.c_char_p
        self.dll.simt_kernel_info.argtypes = [ctypes.c_int, ctypes.c_int]
        self.dll.simt_set_jitter.argtypes = [ctypes.c_uint]
        self.dll.simt_set_timeout.argtypes = [ctypes.c_uint]
        self.dll.simt_set_timeout(int(os.environ.get("SIMT_TIMEOUT", "120")))

    def kernels(self):
        n = self.dll.simt_kernel_count()
        return {self.dll.simt_kernel_info(i, 0).decode(): self.dll.simt_kernel_info(i, 1).decode()
                for i in range(n)}

    def launch(self, name, grid, block, *args):
        """Launch with a cuLaunchKernel-style params array; args are ctypes values or LtTensor."""
        sig = []
        for a in args:
            if isinstance(a, ctypes.Structure):
                sig.append("S%d" % ctypes.sizeof(a))
            else:
                sig.append(_SIG[type(a)])
        params = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        err = ctypes.create_string_buffer(512)
        rc = self.dll.simt_launch(name.encode(), ",".join(sig).encode(), grid, 1, 1, block, 1, 1,
                                  params, err, len(err))
        if rc != 0:
            raise AssertionError("simt_launch(%s) = %d: %s" % (name, rc, err.value.decode()))


# ----------------------------------------------------------------------------- building
def _gxx():
    return os.environ.get("CXX") or shutil.which("g++")


class Builder:
    FLAGS = ["-std=c++20", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-pthread",
             "-fvisibility=hidden", "-Wall", "-Wextra", "-DLT_SIMT_HOST"]

    def __init__(self, cxx, outdir):
        self.cxx = cxx
        self.outdir = outdir
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
        self.futures = {m: self.pool.submit(self._compile, m) for m in MODULES}
        self.libs = {}
        self.lock = threading.Lock()

    def _compile(self, module):
        src = os.path.join(SIMT_DIR if module.startswith("simt_") else CUDA_DIR, module + ".cu")
        out = os.path.join(self.outdir, module + ".so")
        cmd = [self.cxx, *self.FLAGS, "-I", SIMT_DIR, "-I", CUDA_DIR, "-x", "c++", src, "-o", out]
        p = subprocess.run(cmd, capture_output=True, text=True)
        return out, p.returncode, " ".join(cmd) + "\n" + p.stderr

    def get(self, module):
        with self.lock:
            if module not in self.libs:
                out, rc, log = self.futures[module].result()
                if rc != 0:
                    pytest.fail("compiling %s for the emulator failed:\n%s" % (module, log[-6000:]))
                self.libs[module] = (SimtLib(out), log)
            return self.libs[module][0]

    def warnings(self, module):
        self.get(module)
        log = self.libs[module][1]
        return [line for line in log.splitlines() if "warning:" in line]


def simt_builder(tmp_path_factory):
    """The session fixture's body: a Builder, or a skip when there is no C++20 compiler."""
    cxx = _gxx()
    if cxx is None:
        pytest.skip("g++ not found: the host tests of the CUDA kernels need a C++20 compiler")
    probe_dir = tmp_path_factory.mktemp("simt_probe")
    probe = probe_dir / "probe.cpp"
    probe.write_text("#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n")
    p = subprocess.run([cxx, "-std=c++20", "-pthread", str(probe), "-o", str(probe_dir / "probe")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("%s cannot build C++20 <barrier> (needs g++ >= 11): %s" % (cxx, p.stderr[-300:]))
    b = Builder(cxx, str(tmp_path_factory.mktemp("simt_build")))
    yield b
    b.pool.shutdown(wait=True)


# ----------------------------------------------------------------------------- the emulated driver
def emulated_cuda_env(simt, outdir, files=KERNEL_FILES, guard=False):
    """The environment of a process whose libcuda.so.1, libcublas, libnccl and libcudnn are
    tests/cuda_host/emulated_driver.c, emulated_cublas.c, emulated_nccl.c and emulated_cudnn.c (built into outdir), with the kernels of native/cuda/<files>.cu in the SIMT emulator;
    guard: device memory the host cannot touch (LT_EMULATED_CUDA_GUARD). The kernel cache is the session's, so
    the emulated device's CUBINs are compiled once. Skips without NVRTC or a C compiler."""
    from pytorch_bridge.native import lib

    if lib.lt_cuda_version(2) <= 0:   # LT_CUDA_NVRTC: the C layer compiles the real CUBINs first
        pytest.skip("NVRTC is not installed")
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler for the emulated driver")
    built = {}
    for name in ("driver", "cublas", "nccl", "cudnn"):
        built[name] = os.path.join(str(outdir), "lib%s_emulated.so" % name)
        p = subprocess.run([cc, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                            "-fvisibility=hidden", os.path.join(SIMT_DIR, "emulated_%s.c" % name), "-o",
                            built[name], "-ldl", "-lm"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    env = dict(os.environ, LUATORCH_CUDA_DRIVER=built["driver"], LUATORCH_CUDA_CUBLAS=built["cublas"],
               LUATORCH_CUDA_NCCL=built["nccl"], LUATORCH_CUDA_CUDNN=built["cudnn"],
               LT_EMULATED_CUDA_KERNELS=":".join(simt.get(m).path for m in files),
               LUATORCH_CUDA_CACHE=os.path.join(simt.outdir, "nvrtc-cache"))   # the session's: NVRTC once
    if guard:
        env["LT_EMULATED_CUDA_GUARD"] = "1"
    return env
