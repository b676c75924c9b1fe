"""The GPU side of the device path (native/src/cuda_device.c): the allocator's CUDA backend and lt_cuops's
cuLaunchKernel launcher. Without a GPU: both refuse with the driver's reason, and the kernel images the
launcher loads are the ones cutorch.kernels compiles (one cache key). With one (marked gpu, skipped
without): the host layer's operations on real device memory against NumPy, the same checks the emulator
runs in test_cuda_ops_host.py, on one device."""
import json
import os

import numpy as np
import pytest

from pytorch_bridge import cuda  # noqa: F401  (registers the kernel folder and CUDA's headers)
from pytorch_bridge.native import ffi, lib
from simt_emulator import cuda_tensor

NVRTC = 2
count = ffi.new("int *")
lib.lt_cuda_device_count(count)
GPUS = count[0]
gpu = pytest.mark.skipif(GPUS == 0, reason="no CUDA device: %s" % ffi.string(lib.lt_cuda_library_info(0)).decode())


def err():
    return ffi.string(lib.lt_errmsg()).decode()


@pytest.mark.skipif(GPUS > 0, reason="this machine has a GPU")
def test_without_a_gpu_the_backend_and_the_launcher_say_why():
    assert lib.lt_cuda_device_backend() == ffi.NULL
    assert "no CUDA device" in err() and "driver" in err()
    ops = ffi.new("lt_cuops *")
    assert lib.lt_cuda_ops_init(ops, 0, ffi.NULL) == -1 and "no CUDA device" in err()
    assert lib.lt_cuda_set_device(0) == -1 and "no CUDA device" in err()


def test_library_symbols_are_found_or_refused_by_name():
    if lib.lt_cuda_version(NVRTC) <= 0:
        pytest.skip("NVRTC is not installed")
    assert lib.lt_cuda_symbol(NVRTC, b"nvrtcVersion") != ffi.NULL
    assert lib.lt_cuda_symbol(NVRTC, b"nvrtcNoSuchThing") == ffi.NULL and "NVRTC has no nvrtcNoSuchThing" in err()
    assert lib.lt_cuda_symbol(99, b"x") == ffi.NULL and "no library number 99" in err()


def test_the_launcher_loads_the_images_cutorch_kernels_compiles(tmp_path):
    """cutorch.kernels.compile (what `luatorch cuda compile` fills the cache with) and lt_cuda_kernel_image
    (what the launcher loads) share the registered cache: one compiles, the other reads the same bytes back."""
    if lib.lt_cuda_version(NVRTC) <= 0:
        pytest.skip("NVRTC is not installed")
    from pytorch_bridge import Runtime

    saved = ffi.string(lib.lt_cuda_path(2)).decode()
    assert lib.lt_cuda_set_path(2, str(tmp_path).encode()) == 0
    try:
        rt = Runtime()
        rt.require("cutorch.kernels")
        size, cached = rt.execute("local image, cached = require('cutorch.kernels').compile('fill.cu', 'sm_80') "
                                  "return #image, cached")
        assert size > 0 and not cached
        image, n, from_cache = ffi.new("char **"), ffi.new("int64_t *"), ffi.new("int *")
        assert lib.lt_cuda_kernel_image(b"fill", b"sm_80", ffi.NULL, image, n, from_cache) == 0, err()
        assert from_cache[0] == 1 and n[0] == size
        on_disk = open(os.path.join(tmp_path, os.listdir(tmp_path)[0]), "rb").read()
        assert ffi.buffer(image[0], n[0])[:] == on_disk
        lib.lt_cuda_free(image[0])
        assert lib.lt_cuda_kernel_image(b"nosuch", b"sm_80", ffi.NULL, image, n, from_cache) == -1
        assert "cannot read the kernel source" in err()
    finally:
        lib.lt_cuda_set_path(2, saved.encode())


# ----------------------------------------------------------------------------- on a GPU
class GpuDevice:
    """lt_cuops on device 0 over the caching allocator and the CUDA backend; tensors are device copies of
    NumPy arrays (with their strides: the whole base buffer goes over)."""

    def __init__(self):
        backend = lib.lt_cuda_device_backend()
        assert backend != ffi.NULL, err()
        self.alloc = lib.lt_cuda_alloc_new(backend)
        self.ops = ffi.new("lt_cuops *")
        assert lib.lt_cuda_ops_init(self.ops, 0, self.alloc) == 0, err()
        self.keep = []

    def upload(self, view, base):
        p = ffi.new("void **")
        nbytes = max(base.nbytes, 1)
        assert lib.lt_cuda_alloc(self.alloc, 0, nbytes, ffi.NULL, p) == 0, err()
        host = np.ascontiguousarray(base)
        assert self.ops.to_device(self.ops.ctx, p[0], ffi.cast("void *", host.ctypes.data), base.nbytes,
                                  ffi.NULL) == 0, err()
        t, st = cuda_tensor(view, base, int(ffi.cast("uintptr_t", p[0])))
        self.keep.append((st, t, p))
        return t, p[0], base

    def download(self, handle):
        t, ptr, base = handle
        out = np.empty_like(np.ascontiguousarray(base))
        assert self.ops.to_host(self.ops.ctx, ffi.cast("void *", out.ctypes.data), ptr, out.nbytes, ffi.NULL) == 0
        return out

    def call(self, fn, *args):
        assert getattr(lib, "lt_cuops_" + fn)(self.ops, ffi.NULL, *args) == 0, err()

    def close(self):
        for _, _, p in self.keep:
            lib.lt_cuda_alloc_free(self.alloc, p[0])
        lib.lt_cuda_alloc_destroy(self.alloc)


@gpu
def test_device_operations_against_numpy(rng):
    g = GpuDevice()
    try:
        # a transposed copy with a conversion
        x = rng.standard_normal((37, 53)).astype(np.float32)
        xs = g.upload(x.T, x)
        o = np.zeros((53, 37), np.float64)
        od = g.upload(o, o)
        g.call("copy", od[0], xs[0])
        assert np.array_equal(g.download(od), x.T.astype(np.float64))
        # pointwise, in place, and a reduction of all elements
        y = rng.standard_normal((37, 53)).astype(np.float32)
        yd = g.upload(y, y)
        xd = g.upload(x, x)
        g.call("pointwise", b"cadd", xd[0], xd[0], yd[0], ffi.NULL, 0.5, 0.0)
        want = x + np.float32(0.5) * y
        assert np.array_equal(g.download(xd), want)
        res = ffi.new("double *")
        g.call("reduce", b"sum", xd[0], 0.0, res)
        assert abs(res[0] - want.astype(np.float64).sum()) <= 1e-5 * np.abs(want).sum()
        # max along a dimension, 1-based indices
        m = np.zeros((37, 1), np.float32)
        i = np.zeros((37, 1), np.int64)
        md, idd = g.upload(m, m), g.upload(i, i)
        g.call("reduce_dim", b"max", md[0], idd[0], xd[0], 1)
        assert np.array_equal(g.download(idd).reshape(-1), want.argmax(1) + 1)
        assert np.array_equal(g.download(md).reshape(-1), want.max(1))
        # LogSoftMax rows
        ls = np.zeros_like(want)
        lsd = g.upload(ls, ls)
        g.call("logsoftmax_forward", lsd[0], xd[0])
        w64 = want.astype(np.float64)
        ref = w64 - w64.max(1, keepdims=True) - np.log(np.exp(w64 - w64.max(1, keepdims=True)).sum(1, keepdims=True))
        assert np.abs(g.download(lsd) - ref).max() <= 1e-5 * (1 + np.abs(ref).max())
    finally:
        g.close()


@pytest.mark.slow
def test_the_gpu_side_runs_end_to_end_on_the_emulated_driver(simt, tmp_path):
    """The test above, in a process whose libcuda is tests/cuda_host/emulated_driver.c (and libcublas
    emulated_cublas.c): the backend, the NVRTC compile for the device's compute capability (8.0 there), the
    CUBIN's kernels looked up by name and launched with the host layer's params, all on the CPU (the kernels
    in the SIMT emulator)."""
    import subprocess
    import sys

    from simt_emulator import emulated_cuda_env

    here = os.path.dirname(os.path.abspath(__file__))
    env = emulated_cuda_env(simt, tmp_path)   # every kernel file
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", os.path.abspath(__file__),
                        "-k", "device_operations or without_a_gpu"], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(here), timeout=1200)
    assert r.returncode == 0 and "1 passed, 1 skipped" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "this machine has a GPU" in r.stdout   # the no-GPU test saw the emulated device
    # test_cuda_ops_host.py's [gpu] cases: every operation through the launcher, the driver's copies, cu_gemm
    # over the emulated cuBLAS and the test's device mirrors, as a GPU runs them (no [gpu] case exists
    # without a device)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        os.path.join(here, "test_cuda_ops_host.py"), "-k", "gpu"], capture_output=True, text=True,
                       env=env, cwd=os.path.dirname(here), timeout=1200)
    # all run but the three 64-bit index cases (copy, copy_batch, a 4 GiB one), whose 2 and 4 GiB views do not fit
    # the emulated 1 GiB
    assert r.returncode == 0 and " passed, 3 skipped" in r.stdout and "failed" not in r.stdout, \
        r.stdout[-3000:] + r.stderr[-2000:]
    # luatorch bench cuda's measurements, on tiny sizes, with PyTorch's CPU tensors as the shared buffers (the
    # emulated device's memory is the host's): what a GPU machine's few minutes would otherwise find broken
    code = ("import torch\nfrom run import bench_cuda as B\no = B.Ours()\n"
            "r = (B.launch_records(torch, o, 2, 10, device='cpu') + B.bandwidth_records(torch, o, 2, 1 << 10, "
            "device='cpu') + B.gemm_records(torch, o, 1, [24], device='cpu') + "
            "B.batchnorm_records(torch, o, 2, [((3, 5, 4, 7), 'float32'), ((2, 3, 5), 'float64')], device='cpu'))\n"
            "print('records', sorted({x['what'] for x in r}), len(r))\n"
            # our side of train_step, on a small convolutional network instead of ResNet-50
            "net = ('nn.Sequential():add(nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true))'\n"
            "       ':add(nn.SpatialConvolution(4, 4, 3, 3, 2, 2, 1, 1)):add(nn.View(64)):add(nn.Linear(64, 10))')\n"
            "walls, cpus, losses, staged, convolutions, counts = B.ours_train_step(net, 4, 8, 10, False, 3, 2)\n"
            "print('train', len(walls), len(cpus), losses[-1] < losses[0], staged, convolutions)\n"
            "print('counts', counts['ours_device_allocs_per_iter'], counts['ours_launches_per_iter'] > 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(here), timeout=600)
    assert r.returncode == 0 and "records ['bandwidth', 'batchnorm', 'gemm', 'launch'] 10" in r.stdout, \
        r.stdout + r.stderr[-3000:]
    assert "train 3 3 True {} cuDNN" in r.stdout, r.stdout + r.stderr[-3000:]   # converted, on the emulated cuDNN
    assert "counts 0.0 True" in r.stdout, r.stdout   # warm steps allocate nothing
    # --ours-only over the null-execution driver (how docs/results/cuda.md measures the host's cost per step)
    out = tmp_path / "ours.json"
    r = subprocess.run([sys.executable, "-m", "run.cli", "bench", "cuda", "--ours-only", "--models", "resnet20",
                        "--batch", "2", "--iters", "2", "--warmup", "3", "--json", str(out)], capture_output=True,
                       text=True, env=dict(env, LT_EMULATED_CUDA_NOEXEC="1"), cwd=os.path.dirname(here), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    recs = json.loads(out.read_text())
    assert recs[0]["null_execution"] == "1" and recs[1]["what"] == "train_step_ours", recs
    assert recs[1]["ours_host_waits_per_iter"] == 1 and recs[1]["ours_device_allocs_per_iter"] == 0, recs[1]


@pytest.mark.skipif(GPUS > 0, reason="this machine has a GPU")
def test_bench_cuda_says_why_when_it_finds_no_device():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "run.cli", "bench", "cuda"], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 2 and "luatorch bench cuda: no CUDA device" in r.stdout, r.stdout + r.stderr
