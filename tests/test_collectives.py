"""The MPI collectives (native/collectives, pytorch_bridge.mpi, lua/mpi), run under a real launcher.

Each test starts `mpiexec -n N python tests/mpi_worker_collectives.py SCENARIO`
in a subprocess with a time limit and checks its output and exit status.
Launchers: the PyPI MPICH in the venv (mpiexec beside sys.executable) and
Debian's Open MPI (mpirun.openmpi, with mpi4py switched to it through
MPI4PY_MPIABI=openmpi); each is skipped when absent. CI keeps to <= 4 ranks.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("mpi4py")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "mpi_worker_collectives.py")


def _launchers():
    out = {}
    mpich = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(mpich) and os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpichversion")):
        out["mpich"] = ([mpich], {})
    ompi = shutil.which("mpirun.openmpi")
    if ompi and os.path.exists("/usr/lib/x86_64-linux-gnu/libmpi.so.40"):
        out["openmpi"] = ([ompi], {
            "MPI4PY_MPIABI": "openmpi",
            "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
            "OMPI_MCA_mpi_yield_when_idle": "1",   # ranks may outnumber the cores
        })
    return out


LAUNCHERS = _launchers()


def launch(mpi, n, *args, timeout=120, extra=(), base_env=None):
    if mpi not in LAUNCHERS:
        pytest.skip("%s is not installed" % mpi)
    cmd, env = LAUNCHERS[mpi]
    env = {**(os.environ if base_env is None else base_env), **env, "PYTHONPATH": ROOT, "LUATORCH_MPI_TIMEOUT": "60"}
    t0 = time.monotonic()
    r = subprocess.run([*cmd, *extra, "-n", str(n), sys.executable, WORKER, *args], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=ROOT)
    r.elapsed = time.monotonic() - t0
    return r


def assert_ok(r, word):
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "OK " + word in r.stdout, out[-4000:]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_algorithm_matches_mpi_allreduce_mpich(n):
    assert_ok(launch("mpich", n, "props"), "props")


@pytest.mark.parametrize("n", [2, 3])
def test_every_algorithm_matches_mpi_allreduce_openmpi(n):
    assert_ok(launch("openmpi", n, "props"), "props")


@pytest.mark.slow
@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
@pytest.mark.parametrize("n", [5, 6, 7, 8])
def test_every_algorithm_more_ranks(mpi, n):
    assert_ok(launch(mpi, n, "props", "--big", "3", "--max-count", "2000000", timeout=600), "props")


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_nonblocking_overlaps_and_keeps_order(mpi):
    assert_ok(launch(mpi, 3, "nonblocking", "--max-count", "2000000", "--algorithms", "multicolor"), "nonblocking")


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
@pytest.mark.parametrize("algorithm", ["auto", "ring"])
def test_mismatched_count_or_type_raises_on_every_rank(mpi, algorithm):
    r = launch(mpi, 3, "mismatch", "--algorithms", algorithm)
    assert_ok(r, "mismatch")
    assert "ranks disagree on the element count (from 10 to 11" in r.stdout


def test_multicolor_trees_are_two_trees():
    assert_ok(launch("mpich", 1, "trees"), "trees")


def test_argument_errors():
    assert_ok(launch("mpich", 1, "api"), "api")


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_lua_package(mpi):
    assert_ok(launch(mpi, 2, "lua"), "lua")


@pytest.mark.slow
def test_lua_package_on_gpu_tensors(simt, tmp_path):
    """mpi.allreduce/iallreduce/broadcast on tensors in GPU memory, and nn.DataParallelTable over two GPUs per
    rank with its gradient buckets allreduced across two ranks, against the same over CPU workers: on the
    emulated CUDA driver (two devices per rank, guarded device memory), cutorch's GPU backend."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, guard=True)
    env.update(LUATORCH_CUTORCH="gpu", LT_EMULATED_CUDA_DEVICES="2")
    assert_ok(launch("mpich", 2, "lua_gpu", timeout=900, base_env=env), "lua_gpu")


@pytest.mark.slow
def test_lua_package_on_gpu_tensors_cuda_aware(simt, tmp_path):
    """With the MPI taken as CUDA-aware (LUATORCH_MPI_CUDA_AWARE=1), device tensors go to MPI without staging: on
    the emulated driver with unguarded device memory (a host MPI reads it as a CUDA-aware one reads GPU memory;
    guarded, the PROT_NONE arena would crash it) and lazy streams (a missing synchronize reads values not yet
    there)."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, guard=False)
    env.update(LUATORCH_CUTORCH="gpu", LT_EMULATED_CUDA_DEVICES="2", LUATORCH_MPI_CUDA_AWARE="1")
    env.pop("LT_EMULATED_CUDA_SYNC", None)
    env.pop("LT_EMULATED_CUDA_GUARD", None)
    assert_ok(launch("mpich", 2, "lua_gpu_aware", timeout=900, base_env=env), "lua_gpu_aware")


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_cuda_aware_detection(mpi):
    """Neither MPI here is CUDA-aware, and says so; the override, and one answer for all ranks."""
    assert_ok(launch(mpi, 2, "cuda_aware"), "cuda_aware")


@pytest.mark.parametrize("setting,answer,version,environ,expected", [
    (None, 1, "MPICH Version: 4.2.0", {}, (True, "how")),
    ("auto", 0, "MPICH Version: 4.2.0", {"MV2_USE_CUDA": "1"}, (False, "how")),
    (" AUTO ", -1, "Open MPI v4.1.4", {}, (False, "how: taken as not CUDA-aware (LUATORCH_MPI_CUDA_AWARE=1 if it is)")),
    ("", -1, "MVAPICH2 Version 2.3.7", {"MV2_USE_CUDA": "1"}, (True, "MVAPICH with MV2_USE_CUDA=1")),
    ("auto", -1, "MVAPICH2 Version 2.3.7", {}, (False, "MVAPICH with MV2_USE_CUDA=(unset)")),
    ("auto", 0, "MVAPICH2 Version 2.3.7", {"MV2_USE_CUDA": "1"}, (False, "how")),   # its query, where it has one
    ("1", 0, "MPICH Version: 4.2.0", {}, (True, "LUATORCH_MPI_CUDA_AWARE=1")),
    ("0", 1, "Open MPI v5.0.0", {}, (False, "LUATORCH_MPI_CUDA_AWARE=0")),
])
def test_cuda_aware_decision(setting, answer, version, environ, expected):
    from pytorch_bridge import mpi

    assert mpi.decide_cuda_aware(setting, answer, "how", version, environ) == expected


def test_cuda_aware_decision_is_the_same_on_every_rank():
    from pytorch_bridge import mpi

    def gather(everyone):
        return lambda local: everyone
    yes, no = (True, "LUATORCH_MPI_CUDA_AWARE=1", None), (False, "MPIX_Query_cuda_support() says no", None)
    assert mpi.agree_cuda_aware(yes, gather([yes, yes])) == (True, "LUATORCH_MPI_CUDA_AWARE=1")
    assert mpi.agree_cuda_aware(no, gather([no, no])) == (False, "MPIX_Query_cuda_support() says no")
    for local in (yes, no):
        assert mpi.agree_cuda_aware(local, gather([yes, no, yes])) == (
            False, "not CUDA-aware on ranks [1] (MPIX_Query_cuda_support() says no)")
    with pytest.raises(mpi.MPIError, match="'maybe': auto, 0 or 1"):
        mpi.agree_cuda_aware(yes, gather([yes, (False, "", "LUATORCH_MPI_CUDA_AWARE='maybe': auto, 0 or 1 expected")]))
    with pytest.raises(mpi.MPIError, match="auto, 0 or 1 expected"):
        mpi.decide_cuda_aware("yes", 1, "how", "", {})


def test_hung_rank_times_out_with_a_message():
    """A rank that stops calling: the others print who they waited for and abort the job."""
    r = launch("mpich", 3, "hang", "--timeout", "2", timeout=60)
    assert r.returncode != 0
    assert "did not finish within 2 s" in r.stderr and "agreement check" in r.stderr, r.stderr[-3000:]
    assert "FAIL" not in r.stdout
    assert r.elapsed < 40


@pytest.mark.parametrize("mpi,algorithm", [("mpich", "ring"), ("mpich", "multicolor"), ("openmpi", "ring")])
def test_dead_rank_ends_the_job(mpi, algorithm):
    """A rank dies inside a collective (test hook in the C engine): the others end non-zero, fast."""
    extra = ["-disable-auto-cleanup"] if mpi == "mpich" else []   # let the survivors notice by themselves
    r = launch(mpi, 3, "die", "--timeout", "5", "--algorithms", algorithm, timeout=60, extra=extra)
    assert r.returncode != 0
    assert "FAIL" not in r.stdout, r.stdout
    if mpi == "mpich":
        assert "luatorch mpi: rank" in r.stderr and ("a peer has probably died" in r.stderr
                                                      or "did not finish within" in r.stderr), r.stderr[-3000:]
    assert r.elapsed < 40


@pytest.mark.slow
def test_hung_rank_times_out_openmpi():
    r = launch("openmpi", 3, "hang", "--timeout", "2", timeout=90)
    assert r.returncode != 0
    assert "did not finish within 2 s" in r.stderr, r.stderr[-3000:]
