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
MODULES = ["simt_selftest", "copy", "fill", "pointwise", "reduce", "reduce_dim", "logsoftmax",
           "classnll", "dropout"]


# the kernels' element types (their names in kernel names), as NumPy types, and their compute types
TYPES = ["Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Half"]
FLOATS = ["Float", "Double", "Half"]
INTS = ["Byte", "Char", "Short", "Int", "Long"]
NP = {"Byte": np.uint8, "Char": np.int8, "Short": np.int16, "Int": np.int32, "Long": np.int64,
      "Float": np.float32, "Double": np.float64, "Half": np.float16}
ACC = {t: np.int64 for t in INTS}
ACC.update({"Float": np.float32, "Double": np.float64, "Half": np.float32})


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
