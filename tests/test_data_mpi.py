"""The store and the loader under a real MPI job (local rank from COMM_TYPE_SHARED): with replicate the
ranks of a host share one segment, with partition each holds its own range; one epoch covers every
record once. Uses the MPICH launcher that tests/test_collectives.py finds."""
import os
import subprocess
import sys

import pytest

from data_sources import idx
from pytorch_bridge.data import pack
from test_collectives import LAUNCHERS, ROOT

WORKER = os.path.join(ROOT, "tests", "mpi_worker_data.py")


@pytest.mark.parametrize("policy", ["replicate", "partition"])
def test_store_under_mpi(tmp_path, rng, policy):
    if "mpich" not in LAUNCHERS:
        pytest.skip("the mpich wheel's mpiexec is not installed")
    idx(str(tmp_path / "m"), rng, n=17)
    pack(str(tmp_path / "m"), str(tmp_path / "p"), shard_bytes=784 * 4, progress=False)
    cmd, env = LAUNCHERS["mpich"]
    r = subprocess.run([*cmd, "-n", "3", sys.executable, WORKER, str(tmp_path / "p"), policy], capture_output=True,
                       text=True, timeout=120, env={**os.environ, **env, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 0 and "OK data %s 3" % policy in r.stdout, (r.stdout + r.stderr)[-4000:]
