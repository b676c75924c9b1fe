"""One thread pool: float32 GEMMs go through oneDNN's sgemm, which runs on the libgomp threads our kernels and
oneDNN's convolutions use, so that OpenBLAS's own pool (still there for float64 and as the fallback) has no
float32 work. Checked by what each thread of a child process spent on the CPU during GEMM work between our
OpenMP kernels (Linear layers between ReLUs), from /proc/self/task/*/stat: at T threads, at most T threads
ran; at 3 threads the same count finds 3 (the measurement sees every thread). OpenBLAS's sgemm is not held
to it: how long its pool spins is its own. And
the GEMM itself, against NumPy in float64 on odd shapes and transposed operands, with either library."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytorch_bridge import Runtime
from pytorch_bridge.native import ffi, lib

needs_onednn = pytest.mark.skipif(not lib.lt_onednn_loaded(),
                                  reason="oneDNN not loaded (%s)" % ffi.string(lib.lt_onednn_info()).decode())
needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no /proc/self/task here")

# The child: T threads, GEMM work for ~1.5 s, then the CPU seconds of every thread that ran during it.
CHILD = textwrap.dedent("""
    import os, sys, time
    from pytorch_bridge import Runtime
    from pytorch_bridge.native import lib, ffi
    lib.lt_blas_use_onednn_sgemm(int(sys.argv[1]))
    rt = Runtime(threads=int(sys.argv[2]))
    work = rt.execute('''
       require 'nn'
       torch.setdefaulttensortype('torch.FloatTensor')
       local lin, relu = nn.Linear(1024, 1024), nn.ReLU()
       local x, z = torch.randn(256, 1024), torch.randn(2048, 1024)
       return function(seconds)  -- GEMMs between our OpenMP kernels, as in a training step
          local t = torch.Timer()
          while t:time().real < seconds do
             local y = lin:forward(x); lin:backward(x, y)
             relu:forward(z); relu:backward(z, z)
          end
       end''')
    work(0.3)  # warm: threads started, buffers allocated
    def cpu():
        out = {}
        for tid in os.listdir('/proc/self/task'):
            try:
                f = open('/proc/self/task/%s/stat' % tid).read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            out[tid] = (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')  # utime + stime
        return out
    before, t0 = cpu(), time.perf_counter()
    work(1.5)
    wall, after = time.perf_counter() - t0, cpu()
    busy = sorted((after[t] - before.get(t, 0.0)) / wall for t in after)
    print(ffi.string(lib.lt_blas_sgemm_name()).decode(), ' '.join('%.3f' % b for b in busy))
""")


def busy_threads(use_onednn, threads):
    """(the GEMM library used, each thread's share of the wall time it spent on the CPU during the work)."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(use_onednn), str(threads)], capture_output=True, text=True,
                         timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr[-2000:]
    name, *shares = out.stdout.split()
    return name, [float(s) for s in shares]


@needs_onednn
@needs_proc
@pytest.mark.parametrize("use_onednn,threads", [(1, 2), (1, 3)], ids=["onednn-2", "onednn-3"])
def test_gemm_work_runs_on_the_configured_threads_only(use_onednn, threads):
    name, shares = busy_threads(use_onednn, threads)
    assert name == ("oneDNN" if use_onednn else "OpenBLAS")
    # a thread counts as running compute when it was on a CPU for a quarter of the busiest thread's time or more
    # (relative: on a machine loaded far past its cores every thread's share shrinks alike, to 7 % once)
    running = [s for s in shares if s >= 0.25 * max(shares)]
    assert len(running) <= threads, "threads on the CPU during GEMM work at %d threads: %s" % (threads, shares)
    if threads == 3:  # more threads than this machine may have cores: each still gets a share
        assert len(running) == 3, shares


@needs_onednn
@pytest.mark.parametrize("use_onednn", [1, 0], ids=["onednn", "openblas"])
def test_sgemm_matches_numpy(use_onednn):
    rt = Runtime(threads=2)
    old = lib.lt_blas_use_onednn_sgemm(use_onednn)
    try:
        assert ffi.string(lib.lt_blas_sgemm_name()).decode() == ("oneDNN" if use_onednn else "OpenBLAS")
        mm = rt.eval("""function(a, b, ta, tb, beta, c)
            if ta then a = a:t() end
            if tb then b = b:t() end
            return c:clone():addmm(beta, c, 1.5, a, b)
        end""")
        rng = np.random.default_rng()
        for m, n, k in [(1, 1, 1), (7, 13, 5), (33, 1, 65), (129, 67, 255)]:
            for ta in (False, True):
                for tb in (False, True):
                    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
                    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
                    c = rng.standard_normal((m, n)).astype(np.float32)
                    want = 0.5 * c.astype(np.float64) + 1.5 * ((a.T if ta else a).astype(np.float64)
                                                            @ (b.T if tb else b).astype(np.float64))
                    got = rt.to_numpy(rt.call(mm, rt.from_numpy(a), rt.from_numpy(b), ta, tb, 0.5, rt.from_numpy(c)))
                    err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
                    assert err < 1e-5 * max(1, k) ** 0.5 * 4, (m, n, k, ta, tb, err)
    finally:
        lib.lt_blas_use_onednn_sgemm(old)
