"""The run folder (`--save`): a new run never mixes into another run's files, `--overwrite` starts afresh,
`--resume` continues (or says there is nothing left to do). Real `luatorch train` processes on the built-in
data set, cut short as in test_train."""
import os
import shutil
import subprocess
import sys

import pytest

from pytorch_bridge.host import check_run_folder, claim_run_folder
from run.launch import child_env, launcher
from test_train import ROOT, SMALL, log, train

SHORT = ["--max-iters", "2", "--batch-size", "8"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run folder that finished its 2 epochs."""
    save, _ = train(tmp_path_factory.mktemp("finished"), "run", "--epochs", "2", *SHORT)
    return save


@pytest.fixture
def used(tmp_path, finished_run):
    """A private copy of the finished run, at tmp_path/run (where train(tmp_path, "run") writes)."""
    return shutil.copytree(finished_run, str(tmp_path / "run"))


def snapshot(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = (f.read(), os.stat(os.path.join(folder, name)).st_mtime_ns)
    return out


def refusal(save):
    shown = save.rstrip("/")
    return ("luatorch train: %s/ already holds a run (epoch 2 of 2, log.jsonl); continue it with --resume %s, "
            "pick a new --save, or pass --overwrite" % (shown, shown))


@pytest.mark.parametrize("np_", [1, 2])
def test_new_run_into_used_folder_refuses_and_touches_nothing(tmp_path, used, np_):
    before = snapshot(used)
    _, r = train(tmp_path, "run", "--epochs", "2", *SHORT, np_=np_, check=False)
    assert r.returncode != 0
    # one line from one place (the launching process), before any rank started
    assert r.stderr.strip() == refusal(used), r.stderr[-2000:]
    assert snapshot(used) == before


def test_refusal_under_own_mpi_launcher_comes_from_rank_0_once(tmp_path, used):
    cmd, env = launcher()
    if not cmd:
        pytest.skip("no MPI launcher")
    before = snapshot(used)
    r = subprocess.run([cmd, "-n", "2", sys.executable, "-m", "run.cli", "train", "--save", used, *SMALL,
                        "--epochs", "2", *SHORT], cwd=ROOT, env=child_env(**env), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode != 0
    assert r.stderr.count("already holds a run") == 1 and refusal(used) in r.stderr, r.stderr[-2000:]
    assert "Abort" not in r.stderr + r.stdout and "timed out" not in r.stderr
    assert snapshot(used) == before


def test_th_script_form_refuses_too(tmp_path, used):
    """`luatorch th train.lua` (fb.resnet.torch's script, no launcher in front) checks in train.main."""
    before = snapshot(used)
    r = subprocess.run([sys.executable, "-m", "run.cli", "th", "train.lua", "-save", used, "-nEpochs", "1",
                        "-maxIters", "2", "-batchSize", "8", "-depth", "8", "-nThreads", "1"], cwd=str(tmp_path),
                       env=child_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and refusal(used).replace("luatorch train", "luatorch th") in r.stderr, r.stderr[-2000:]
    assert snapshot(used) == before


def test_overwrite_deletes_the_run_files_only_and_starts_afresh(tmp_path, used):
    with open(os.path.join(used, "notes.txt"), "w") as f:
        f.write("mine\n")
    save, r = train(tmp_path, "run", "--epochs", "1", *SHORT, "--overwrite")
    assert "deleted the previous run's" in r.stderr
    assert [rec["epoch"] for rec in log(save)] == [1] and log(save)[0]["best"] is True
    names = set(os.listdir(save))
    assert "model_2.t7" not in names and "optimState_2.t7" not in names
    assert {"notes.txt", "model_1.t7", "optimState_1.t7", "latest.t7", "model_best.t7", "log.jsonl"} <= names


@pytest.mark.parametrize("np_", [1, 2])
def test_overwrite_with_a_mistyped_option_keeps_the_old_run(tmp_path, used, np_):
    before = snapshot(used)
    _, r = train(tmp_path, "run", "--epochs", "1", *SHORT, "--overwrite", "-nosuch", "1", np_=np_, check=False)
    assert r.returncode != 0 and "unknown option -nosuch" in r.stderr, r.stderr[-2000:]
    assert snapshot(used) == before


@pytest.mark.parametrize("np_", [1, 2])
def test_resume_of_finished_run_has_nothing_left_to_do(tmp_path, used, np_):
    before = snapshot(used)
    _, r = train(tmp_path, "run", "--epochs", "2", *SHORT, "--resume", used, np_=np_)
    best = max(rec["val_top1"] for rec in log(used))
    line = "nothing left to do: %s finished epoch 2 of 2 (best top-1 %.2f%%)" % (used, best)
    assert r.stdout.count("nothing left to do") == 1 and line in r.stdout, r.stdout[-2000:]
    assert snapshot(used) == before


def test_resume_of_unfinished_run_continues_without_duplicate_epochs(tmp_path, used):
    save, _ = train(tmp_path, "run", "--epochs", "3", *SHORT, "--resume", used)
    assert [rec["epoch"] for rec in log(save)] == [1, 2, 3]
    assert all(rec["n_epochs"] == 3 for rec in log(save)[2:])


def test_resume_writes_into_the_resumed_folder_by_default(used):
    assert claim_run_folder(["-resume", used, "-nEpochs", "3"]) == ["-resume", used, "-nEpochs", "3", "-save", used]
    assert claim_run_folder(["-resume", used, "-save", used + "/"])[-1] == used + "/"


def test_what_counts_as_a_run(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_run_folder(str(empty)) is None
    assert check_run_folder(str(tmp_path / "missing")) is None
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for name in ("notes.txt", "loss.svg", "model.t7", "model_x.t7"):
        (foreign / name).write_text("x")
    assert check_run_folder(str(foreign)) is None
    (foreign / "optimState_3.t7").write_text("x")
    assert "already holds a run (optimState_3.t7)" in check_run_folder(str(foreign))
    assert check_run_folder(str(foreign), overwrite=True, delete=False) is None
    assert "optimState_3.t7" in os.listdir(foreign)
    assert check_run_folder(str(foreign), overwrite=True) is None
    assert sorted(os.listdir(foreign)) == ["model.t7", "model_x.t7", "notes.txt"]  # loss.svg went with the run
    # continuing the run in the folder is fine; deleting the run it continues is not
    (foreign / "latest.t7").write_text("x")
    assert check_run_folder(str(foreign), resume=str(foreign)) is None
    assert "--overwrite would delete" in check_run_folder(str(foreign) + "/", resume=str(foreign), overwrite=True)
