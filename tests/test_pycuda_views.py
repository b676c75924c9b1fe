"""pycuda views of device tensors (pytorch_bridge/pycuda_views.py): pycuda is an optional extra, imported when first
used, and works in the primary context our allocator and kernels use.

pycuda builds from source against the CUDA toolkit's headers and libcuda, so CI (no toolkit) does not install it:
there the first test runs and the second skips. Where pycuda is importable (a GPU machine with the extra, or a
build against the CUDA wheels' headers; docs/results/cuda.md says how it was run here), the second runs pycuda's
own driver calls in a process whose libcuda is the emulated driver with guarded device memory, so a pycuda copy
that used another context's pointers or host code that touched device memory would fail or crash."""
import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_without_pycuda_the_views_say_how_to_get_it(rt, monkeypatch):
    from pytorch_bridge import pycuda_views

    monkeypatch.setitem(sys.modules, "pycuda", None)   # as on a machine without the extra
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(ImportError, match=r"pip install 'luatorch\[pycuda\]'"):
        pycuda_views.primary_context(0)
    t = rt.eval("torch.FloatTensor(3)")
    with pytest.raises(ImportError, match="pycuda is not installed"):
        pycuda_views.gpuarray(rt, t)




def test_pycuda_views_share_device_memory_in_the_primary_context(request, tmp_path):
    if importlib.util.find_spec("pycuda") is None:
        pytest.skip("pycuda is not installed (pip install 'luatorch[pycuda]' builds it against the CUDA toolkit)")
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(request.getfixturevalue("simt"), tmp_path, guard=True)   # (the kernels built only now)
    # pycuda links libcuda by name: the emulated driver under the name it was linked with (the same file the C
    # layer loads, so one driver state); not as libcuda.so.1, which CUDA's runtime library would then load
    driver_so = importlib.util.find_spec("pycuda._driver").origin
    needed = subprocess.run(["readelf", "-d", driver_so], capture_output=True, text=True).stdout
    name = next((line.split("[")[1].rstrip("]") for line in needed.splitlines()
                 if "NEEDED" in line and "libcuda.so" in line), "libcuda.so.1")
    libdir = tmp_path / "libcuda"
    libdir.mkdir()
    os.symlink(env["LUATORCH_CUDA_DRIVER"], libdir / name)
    env.update(LUATORCH_CUTORCH="gpu", LT_EMULATED_CUDA_DEVICES="2",
               LD_LIBRARY_PATH=os.pathsep.join([str(libdir), os.environ.get("LD_LIBRARY_PATH", "")]))
    p = subprocess.run([sys.executable, os.path.join(HERE, "pycuda_views_worker.py")], env=env, cwd=os.path.dirname(HERE), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0 and "OK pycuda views" in p.stdout, p.stdout + p.stderr
    assert "PyCUDA ERROR" not in p.stderr   # the context stack was left empty at exit
