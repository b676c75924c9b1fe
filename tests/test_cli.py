"""The `luatorch` command line: help for every command, one-line errors for bad values and unknown options
(before any rank starts), the start banner and end summary of a training run, Ctrl-C, the MPI of a foreign
launcher, and children that run the installed code wherever they start. Each check runs the real command."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from run.launch import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["--model", "resnet", "--depth", "8", "--workers", "1", "--val-iters", "2"]
QUICK = ["--epochs", "1", "--max-iters", "2", "--batch-size", "8"]


def luatorch(*args, cwd=ROOT, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "run.cli", *args], cwd=cwd, env=env or child_env(),
                          capture_output=True, text=True, timeout=timeout)


def one_line(r):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def log(save):
    with open(os.path.join(save, "log.jsonl")) as f:
        return [json.loads(line) for line in f]


# ------------------------------------------------------------------ help

def test_top_level_help_lists_every_command_and_version():
    r = luatorch("--help")
    assert r.returncode == 0
    for name in ["train", "th", "demo", "bench", "pack", "synth-data", "cluster", "data"]:
        assert re.search(r"^  %s\b" % re.escape(name), r.stdout, re.M), name
    for name in ["gemm", "tensor", "conv", "model", "overhead", "allreduce", "dpt", "data", "train"]:
        assert re.search(r"^      %s\b" % name, r.stdout, re.M), "bench " + name
    from importlib import metadata

    r = luatorch("--version")
    assert r.returncode == 0 and r.stdout.strip() == "luatorch " + metadata.version("luatorch")


@pytest.mark.parametrize("what,options", [
    ("allreduce", ["--np", "--calibrate", "--json", "--algorithms"]),
    ("train", ["--ranks", "--json", "--iters", "--configs"]),
    ("gemm", ["--json", "--threads"]),
    ("dpt", ["--devices", "--json"]),
])
def test_bench_help_shows_its_own_options(what, options):
    r = luatorch("bench", what, "--help", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: luatorch bench %s" % what), r.stdout[:200]
    for o in options:
        assert o in r.stdout, o


def test_demo_and_train_help():
    r = luatorch("demo", "--help")
    assert r.returncode == 0 and "tour" in r.stdout and "sgemm" not in r.stdout  # printed, not run
    r = luatorch("train", "--help")
    assert r.returncode == 0 and "--np N" in r.stdout and "-help" in r.stdout
    r = luatorch("train", "-help")  # every fb.resnet.torch option, from lua/luatorch/train/opts.lua
    assert r.returncode == 0 and "-netType" in r.stdout and "-warmupEpochs" in r.stdout


# ------------------------------------------------------------------ mistakes: one line, exit 2

def test_unknown_commands_and_options_are_one_line():
    r = luatorch("trian")
    assert r.returncode == 2 and "unknown command 'trian' (did you mean train?)" in one_line(r)
    r = luatorch("bench", "alreduce")
    assert r.returncode == 2 and "(did you mean allreduce?)" in one_line(r)
    r = luatorch("th", "-x")
    assert r.returncode == 2 and one_line(r).startswith("luatorch th: unknown option -x")
    r = luatorch("demo", "extra")
    assert r.returncode == 2 and "takes no arguments" in one_line(r)
    r = luatorch("bench", "allreduce", "--np", "-1")  # argparse's usage, then one line
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) <= 10, r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("--np: must be an integer >= 0 (got -1)")


@pytest.mark.parametrize("args,message", [
    (["--np", "0"], "--np must be an integer >= 1 (got 0)"),
    (["--np", "-1"], "--np must be an integer >= 1 (got -1)"),
    (["--np"], "--np needs a value"),
    (["--batch-size", "-5"], "--batch-size must be an integer >= 1 (got -5)"),
    (["-batchSize", "2.5"], "-batchSize must be an integer >= 1 (got 2.5)"),
    (["--epochs", "-1"], "--epochs must be an integer >= 1 (got -1)"),
    (["--devices", "0"], "--devices must be an integer >= 1 (got 0)"),
    (["--workers", "-1"], "--workers must be an integer >= 0 (got -1)"),
    (["--lr", "-0.1"], "--lr must be a number >= 0 (got -0.1)"),
    (["--timeout", "0"], "--timeout must be a number > 0 (got 0)"),
    (["--allreduce", "foo"], "--allreduce must be one of auto, mpi, ring, rhd, tree, multicolor, multicolor_ring "
                             "(got foo)"),
    (["--allreduce", "foo", "--np", "2"], "--allreduce must be one of"),
    (["--dpt", "fast"], "--dpt must be baseline or optimized (got fast)"),
    (["--data", "disk"], "--data must be memory or files (got disk)"),
    (["--depth", "9"], "--depth must be 6n+2 (8, 14, 20, 32, 44, 56, 110, ...) for mnist-type data (got 9)"),
    (["--model", "vgg"], "--model must be resnet, googlenet_bn or a Torch7 .t7 model file (got vgg)"),
    (["--model", "/nonexistent/m.t7"], "no such model file: /nonexistent/m.t7"),
    (["--dataset", "/nonexistent"], "--dataset must be builtin, a packed data set or an image folder"),
    (["--batch-size", "7", "--np", "2"], "--batch-size must be a multiple of the 2 ranks (got 7)"),
    (["-testOnly", "maybe"], "-testOnly must be true or false (got maybe)"),
    (["-schedule", "step:a"], "-schedule must be default, goyal or step:E1,E2,... (got step:a)"),
    (["--hostfile", "/nonexistent", "--np", "2"], "--hostfile must be an existing file"),
    (["--foo", "1"], "unknown option --foo; see luatorch train --help"),
    (["--batchsize", "8"], "unknown option --batchsize (did you mean --batch-size?); see luatorch train --help"),
    (["-nosuch", "1"], "unknown option -nosuch"),
    (["stray"], "unexpected argument 'stray'"),
])
def test_train_rejects_bad_values_before_starting(tmp_path, args, message):
    save = str(tmp_path / "run")
    t0 = time.time()
    # a short run, should a bad value pass (the values under test come last, and the last one counts)
    r = luatorch("train", "--save", save, *SMALL, "--epochs", "1", "--max-iters", "1", "--val-iters", "1", *args,
                 timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    line = one_line(r)
    assert line.startswith("luatorch train: ") and message in line, line
    assert not os.path.exists(save) and time.time() - t0 < 60  # nothing started


def test_rank_watch_says_when_no_rank_started(tmp_path):
    """The launcher's verdict when the job ended before any rank wrote its pid (e.g. they failed to import)."""
    from run.train import RankWatch

    watch = RankWatch(str(tmp_path))
    watch.start()
    time.sleep(0.3)
    watch.stop()
    assert watch.verdict() == "no rank had started (see the messages above)"


# ------------------------------------------------------------------ banner and summary

def test_banner_and_summary(tmp_path):
    save = str(tmp_path / "run")
    r = luatorch("train", "--save", save, *SMALL, *QUICK)
    assert r.returncode == 0, r.stderr[-3000:]
    err = r.stderr
    assert re.search(r"^luatorch train: resnet-8 \([\d.]+k parameters\) on builtin \(mnist, \d+ train / \d+ val "
                     r"images, \d+ classes\)$", err, re.M), err
    assert re.search(r"^ +1 rank x 1 device, global batch 8; run folder %s$" % re.escape(save), err, re.M), err
    assert re.search(r"^luatorch train: 1 epoch in [\d.]+ s; best val top-1 [\d.]+%% \(epoch 1\); checkpoints, "
                     r"log.jsonl and plots in %s$" % re.escape(save), err, re.M), err


# ------------------------------------------------------------------ Ctrl-C

def _interrupt(tmp_path, np_, when, *args):
    """Start `luatorch train`, wait until `when(save, stderr so far)` holds, send SIGINT to its process group
    (what a terminal's Ctrl-C does), and return (exit status, stderr, save)."""
    save = str(tmp_path / "run")
    errfile = tmp_path / "stderr"
    cmd = [sys.executable, "-m", "run.cli", "train", "--save", save, *SMALL, "--batch-size", "8", *args]
    if np_ > 1:
        cmd += ["--np", str(np_)]
    with open(errfile, "w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            deadline = time.time() + 300
            while not when(save, errfile.read_text()):
                assert proc.poll() is None and time.time() < deadline, errfile.read_text()[-3000:]
                time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    return code, errfile.read_text(), save


def _check_interrupted(code, err):
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and not re.search(r"\(rank \d+\): *$", err, re.M), err[-3000:]
    lines = [ln for ln in err.splitlines() if "interrupted" in ln]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def _training(save, err):
    return "run folder" in err


def _epoch_done(save, err):
    return os.path.exists(os.path.join(save, "log.jsonl"))


def test_ctrl_c_before_a_checkpoint(tmp_path):
    code, err, save = _interrupt(tmp_path, 1, lambda s, e: _training(s, e) and time.sleep(1.5) is None,
                                 "--epochs", "1", "--max-iters", "100000")
    line = _check_interrupted(code, err)
    assert re.fullmatch(r"luatorch train: interrupted at epoch 1, iteration \d+ of \d+; nothing kept yet \(a "
                        r"checkpoint is written after each epoch\)", line), line


def test_ctrl_c_keeps_the_last_checkpoint(tmp_path):
    code, err, save = _interrupt(tmp_path, 1, _epoch_done, "--epochs", "1000", "--max-iters", "40")
    line = _check_interrupted(code, err)
    m = re.fullmatch(r"luatorch train: interrupted (at epoch \d+, iteration \d+ of 40|at the start of epoch \d+|"
                     r"after the training iterations of epoch \d+ \(validating or saving\)); "
                     r"kept (\S+)/model_(\d+)\.t7 \(epoch (\d+)\); continue with --resume (\S+)", line)
    assert m and m.group(2) == save == m.group(5) and m.group(3) == m.group(4), line
    assert os.path.exists(os.path.join(save, "model_%s.t7" % m.group(3)))


@pytest.mark.slow
def test_ctrl_c_stops_every_rank_together(tmp_path):
    """--np 2: the launcher passes Ctrl-C to the ranks, which stop at the same iteration; rank 0 says where,
    once, and the job ends with 130 (no rank is left waiting in a collective, no MPI_Abort)."""
    code, err, save = _interrupt(tmp_path, 2, _epoch_done, "--epochs", "1000", "--max-iters", "40",
                                 "--allreduce", "ring")
    line = _check_interrupted(code, err)
    assert "kept %s/model_" % save in line and "continue with --resume %s" % save in line, line
    assert "the job stopped" not in err and "Abort" not in err, err[-3000:]
    # the banner comes from rank 0 only
    assert len(re.findall(r"^ +2 ranks x 1 device, global batch 8 \(4 per rank\), allreduce ring; run folder",
                          err, re.M)) == 1, err[-3000:]


# ------------------------------------------------------------------ the MPI of a foreign launcher

OPEN_MPI = shutil.which("mpirun.openmpi")


def _open_mpi_env():
    env = child_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                    OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
    for var in ("MPI4PY_MPIABI", "MPI4PY_LIBMPI"):
        env.pop(var, None)
    return env


@pytest.mark.slow
@pytest.mark.skipif(not OPEN_MPI, reason="Open MPI (mpirun.openmpi) is not installed")
def test_open_mpi_launcher_works_without_settings(tmp_path):
    """Debian's Open MPI mpirun and no setting: mpi4py would load the venv's MPICH, which aborts ("unsupported
    PMI version"); luatorch makes it load Open MPI."""
    save = str(tmp_path / "run")
    r = subprocess.run([OPEN_MPI, "-n", "2", sys.executable, "-m", "run.cli", "train", "--save", save, *SMALL,
                        *QUICK], cwd=ROOT, env=_open_mpi_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert log(save)[0]["ranks"] == 2


@pytest.mark.skipif(not OPEN_MPI, reason="Open MPI (mpirun.openmpi) is not installed")
def test_mpi_of_another_launcher_is_one_line(tmp_path):
    """MPICH's mpiexec with mpi4py set to Open MPI: every rank would train alone; one line says what to change."""
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        pytest.skip("no MPICH mpiexec beside this Python (the mpich wheel)")
    env = {**_open_mpi_env(), "MPI4PY_MPIABI": "openmpi"}
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "run.cli", "train", "--save", str(tmp_path / "r"),
                        *SMALL, *QUICK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    ours = [ln for ln in r.stderr.splitlines() if ln.startswith("luatorch")]
    assert len(ours) == 1 and "every rank alone" in ours[0] and "unset MPI4PY_MPIABI" in ours[0], r.stderr[-3000:]


# ------------------------------------------------------------------ installed code, started in the checkout

def _copy_checkout(dst):
    """The checkout's sources as a fresh clone has them: no build, no venv."""
    shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "*.so", "_native.c", ".pytest_cache", "scratch",
        "checkpoints"))


def _luatorch_here():
    """This venv's luatorch install: (version, where its files are), or None."""
    from importlib import metadata

    try:
        d = metadata.distribution("luatorch")
    except metadata.PackageNotFoundError:
        return None
    return d.version, str(d.locate_file(""))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`pip install .` (not -e) of this checkout into a venv of its own, and a clone without a build: the user
    who installs, then works in the clone. The venv sees this one's dependencies through a .pth line (which
    adds the folder, not the .pth files in it, so not this venv's editable luatorch), and the mpich wheel's
    libmpi and mpiexec through links. Building the C library takes a minute or two."""
    import site
    import sysconfig

    tmp = tmp_path_factory.mktemp("installed")
    clone, venv = tmp / "clone", tmp / "venv"
    _copy_checkout(clone)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    deps = dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"]])
    with open(os.path.join(purelib, "test-deps.pth"), "w") as f:
        f.write("\n".join(deps) + "\n")
    from importlib import metadata

    try:
        mpich = metadata.distribution("mpich")
    except metadata.PackageNotFoundError:  # mpi4py then loads a system MPI, which the new venv finds too
        mpich = None
    for f in (mpich.files or []) if mpich else []:  # the wheel's bin/mpiexec, lib/libmpi.so.12, ...
        path = os.path.realpath(str(mpich.locate_file(f)))
        rel = os.path.relpath(path, os.path.realpath(sys.prefix))
        if rel.split(os.sep)[0] in ("bin", "lib") and rel.count(os.sep) == 1 and os.path.exists(path):
            os.makedirs(venv / rel.split(os.sep)[0], exist_ok=True)
            if not os.path.lexists(venv / rel):
                os.symlink(path, venv / rel)
    before = _luatorch_here()
    # --ignore-installed: otherwise pip first uninstalls the luatorch of the venv it runs in (this test run's
    # own editable install), since --prefix does not tell it that the target is another environment
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--ignore-installed", "--prefix", str(venv), str(clone)], capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    assert _luatorch_here() == before, "installing into the test venv changed this venv's luatorch"
    shutil.rmtree(clone / "build", ignore_errors=True)
    assert not list((clone / "pytorch_bridge").glob("_native*.so"))  # the clone stays unbuilt
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {"clone": clone, "python": str(venv / "bin" / "python"), "luatorch": str(venv / "bin" / "luatorch"),
            "site": purelib, "env": env}


@pytest.mark.slow
def test_ranks_run_the_installed_code_from_the_checkout(installed, tmp_path):
    """`luatorch train --np 2` (and `bench train`) started in the clone: the ranks run the installed code,
    although Python puts the current folder, with its unbuilt pytorch_bridge, first on their sys.path."""
    save = str(tmp_path / "run")
    r = subprocess.run([installed["python"], installed["luatorch"], "train", "--save", save, *SMALL, *QUICK,
                        "--np", "2"], cwd=installed["clone"], env=installed["env"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert log(save)[0]["ranks"] == 2
    r = subprocess.run([installed["python"], installed["luatorch"], "bench", "train", "--configs", "scaling",
                        "--ranks", "1", "--iters", "1"], cwd=installed["clone"], env=installed["env"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.slow
def test_import_error_names_the_shadowing_checkout(installed):
    """The README's Python snippet in a Python started in the clone imports the clone's unbuilt package: the
    error says which folder it imported, that it shadows the installed one, and what to do."""
    r = subprocess.run([installed["python"], "-c", "from pytorch_bridge import Runtime"], cwd=installed["clone"],
                       env=installed["env"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert os.path.join(str(installed["clone"]), "pytorch_bridge") in last, last
    assert os.path.join(installed["site"], "pytorch_bridge") in last, last
    assert "start Python from another folder" in last and "pip install -e ." in last, last
