"""`luatorch train` under a real one-node Slurm (Debian's slurm-wlm: slurmctld, slurmd, munge), started here
when the tests run as root with Slurm installed; skipped with the reason otherwise. srun -n 2 trains with the
ranks' local ids from Slurm; the sbatch script of docs/training.md runs as written; srun without the MPI's PMI
ends with a line saying which --mpi= to give."""
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from run.launch import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMONS = ("slurmctld", "slurmd", "munged")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="starting slurmctld/slurmd/munged needs root"),
    pytest.mark.skipif(not all(shutil.which(d) or os.path.exists("/usr/sbin/" + d) for d in DAEMONS)
                       or not shutil.which("srun"), reason="Slurm is not installed (apt-get install slurm-wlm)"),
]

CONF = """ClusterName=luatorchtest
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName={host} CPUs={cpus} RealMemory={mem} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("slurm"))
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(d, sub))
    with open("/proc/meminfo") as f:
        mem = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1)) // 1024 // 2
    conf = os.path.join(d, "slurm.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(host=socket.gethostname().split(".")[0], dir=d, cpus=os.cpu_count(), mem=mem,
                            ctld_port=_free_port(), d_port=_free_port()))
    env = dict(os.environ, SLURM_CONF=conf)
    started = []
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0:
        if not os.path.exists("/etc/munge/munge.key"):
            pytest.skip("munge has no key (/etc/munge/munge.key)")
        os.makedirs("/run/munge", exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        if subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged"]).returncode != 0:
            pytest.skip("munged does not start here")
        started.append("munged")
    for daemon in ("slurmctld", "slurmd"):
        r = subprocess.run(["/usr/sbin/" + daemon, "-f", conf], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip("%s does not start here: %s" % (daemon, r.stderr.strip()[-300:]))
    deadline = time.time() + 60
    while time.time() < deadline:
        r = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True)
        if r.stdout.strip() in ("idle", "mix", "alloc"):
            break
        time.sleep(0.5)
    else:
        pytest.skip("the Slurm node never became idle: %s" % r.stdout + r.stderr)
    yield env
    subprocess.run(["scontrol", "shutdown"], env=env, capture_output=True)
    for pidfile in ("slurmd.pid", "slurmctld.pid"):
        try:
            with open(os.path.join(d, pidfile)) as f:
                os.kill(int(f.read()), 15)
        except (OSError, ValueError):
            pass
    if started:
        subprocess.run(["pkill", "-x", "munged"])


def _env(slurm):
    e = child_env()
    e["SLURM_CONF"] = slurm["SLURM_CONF"]
    return e


TRAIN = ["--epochs", "1", "--max-iters", "3", "--val-iters", "2", "--batch-size", "16", "--depth", "8",
         "--workers", "1"]


def test_srun_trains_with_two_ranks(slurm, tmp_path):
    save = str(tmp_path / "srun")
    r = subprocess.run(["srun", "-n", "2", "--mpi=pmi2", sys.executable, "-m", "run.cli", "train", "--save", save,
                        *TRAIN], cwd=ROOT, env=_env(slurm), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    import json

    with open(os.path.join(save, "log.jsonl")) as f:
        rec = [json.loads(ln) for ln in f][-1]
    assert rec["ranks"] == 2 and rec["epoch"] == 1, rec


def test_srun_without_pmi_says_which_to_give(slurm, tmp_path):
    r = subprocess.run(["srun", "-n", "2", "--mpi=none", sys.executable, "-m", "run.cli", "train", "--save",
                        str(tmp_path / "nopmi"), *TRAIN], cwd=ROOT, env=_env(slurm), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode != 0
    assert "--mpi=pmi2" in r.stderr and "srun started 2 tasks" in r.stderr, r.stderr[-2000:]


def test_the_sbatch_script_of_the_docs_runs(slurm, tmp_path):
    with open(os.path.join(ROOT, "docs", "training.md")) as f:
        doc = f.read()
    script = re.search(r"```bash\n(#!/bin/bash\n#SBATCH.*?)```", doc, re.S).group(1)
    # the script as written, with `luatorch` being this checkout's (a venv's bin first on PATH)
    path = tmp_path / "job.sh"
    path.write_text(script)
    env = _env(slurm)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    r = subprocess.run(["sbatch", "--wait", "--chdir", str(tmp_path), str(path)], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=900)
    outs = [p for p in os.listdir(tmp_path) if p.startswith("luatorch-") and p.endswith(".out")]
    out = open(os.path.join(tmp_path, outs[0])).read() if outs else ""
    assert r.returncode == 0, r.stderr + out[-3000:]
    assert re.search(r"luatorch train: 1 epoch in", out), out[-3000:]
