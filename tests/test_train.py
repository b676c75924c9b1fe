"""`luatorch train` end to end: global-batch semantics across ranks, resume, checkpoints,
bad input and failures. Each run is a real `luatorch train` process (with `--np N`, under the
MPI launcher) on the built-in data set, cut short with -maxIters."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from run.launch import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["--model", "resnet", "--depth", "8", "--workers", "1", "-momentum", "0.9", "--val-iters", "2"]


def train(tmp_path, name, *args, np_=1, check=True, timeout=600, env=None):
    save = str(tmp_path / name)
    cmd = [sys.executable, "-m", "run.cli", "train", "--save", save, *SMALL, *args]
    if np_ > 1:
        cmd += ["--np", str(np_)]
    env = child_env(**(env or {}))
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, "train failed (%d):\n%s\n%s" % (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    return save, r


def params(rt, path):
    """The flat parameters and BN running statistics of a saved model, as float64."""
    p = rt.execute("""
        local m = torch.load(...)
        local p = m:getParameters()
        local stats = {}
        for _, b in ipairs(m:findModules('nn.SpatialBatchNormalization')) do
           stats[#stats + 1] = b.running_mean:double()
           stats[#stats + 1] = b.running_var:double()
        end
        return p:double(), torch.cat(stats)
    """.replace("...", repr(path)))
    return rt.to_numpy(p[0]).copy(), rt.to_numpy(p[1]).copy()


def log(save):
    with open(os.path.join(save, "log.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def lrt(rt):
    rt.require("nn")
    rt.require("cudnn")
    return rt


def test_checkpoint_layout_log_and_plots(tmp_path, lrt):
    save, r = train(tmp_path, "run", "--epochs", "1", "--max-iters", "3", "--batch-size", "8")
    for f in ("model_1.t7", "optimState_1.t7", "latest.t7", "model_best.t7", "log.jsonl", "loss.svg",
              "accuracy.svg", "time.svg"):
        assert os.path.exists(os.path.join(save, f)), f
    rec = log(save)[0]
    for k in ("epoch", "train_loss", "val_top1", "val_top5", "images_per_s", "seconds"):
        assert k in rec, k
    assert rec["epoch"] == 1 and rec["iterations"] == 3 and 0 <= rec["val_top1"] <= 100
    latest = lrt.execute("local l = torch.load(%r); return l.epoch, l.modelFile, l.optimFile, "
                         "torch.type(l.rngState)" % os.path.join(save, "latest.t7"))
    assert latest == (1, "model_1.t7", "optimState_1.t7", "torch.ByteTensor")
    opt = lrt.execute("local o = torch.load(%r); return o.evalCounter, o.dfdx:nElement(), o.learningRate"
                      % os.path.join(save, "optimState_1.t7"))
    assert opt[0] == 3 and opt[1] > 0 and opt[2] == pytest.approx(0.1)
    # the saved model is the bare network (no DataParallelTable), state cleared
    kind = lrt.execute("local m = torch.load(%r); return torch.type(m), m.output:nElement()"
                       % os.path.join(save, "model_1.t7"))
    assert kind == ("nn.Sequential", 0)


def test_resume_continues_exactly(tmp_path, lrt):
    common = ["--max-iters", "3", "--batch-size", "8", "-precision", "double"]
    full, _ = train(tmp_path, "full", "--epochs", "2", *common)
    part, _ = train(tmp_path, "part", "--epochs", "1", *common)
    _, r = train(tmp_path, "part", "--epochs", "2", "--resume", part, *common)
    a, sa = params(lrt, os.path.join(full, "model_2.t7"))
    b, sb = params(lrt, os.path.join(part, "model_2.t7"))
    assert np.array_equal(a, b) and np.array_equal(sa, sb)
    assert [rec["epoch"] for rec in log(part)] == [1, 2]
    assert log(part)[1]["train_loss"] == log(full)[1]["train_loss"]


EXACT = ["--epochs", "1", "--max-iters", "3", "--batch-size", "12", "-precision", "double", "-freezeBN", "true"]


@pytest.fixture(scope="module")
def single_process(tmp_path_factory):
    """1 rank x 1 device: the reference parameters after 3 steps, and the initial ones."""
    from pytorch_bridge import Runtime

    tmp = tmp_path_factory.mktemp("single")
    rt = Runtime()
    rt.require("nn")
    rt.require("cudnn")
    one, _ = train(tmp, "one", *EXACT)
    init, _ = train(tmp, "init", *EXACT, "--max-iters", "1", "-LR", "0", "-weightDecay", "0")
    return params(rt, os.path.join(one, "model_1.t7"))[0], params(rt, os.path.join(init, "model_1.t7"))[0]


@pytest.mark.slow
@pytest.mark.parametrize("allreduce", ["multicolor", "ring", "rhd", "tree", "mpi", "auto"])
def test_ranks_equal_single_process(tmp_path, lrt, single_process, allreduce):
    """Same global batch and seed: 2 ranks give the parameters of 1 rank after k steps
    (BatchNorm frozen for the exact check; float64, so only reassociation differs)."""
    a, init = single_process
    two, _ = train(tmp_path, "two", *EXACT, "--allreduce", allreduce, np_=2)
    assert log(two)[0]["ranks"] == 2
    b, _ = params(lrt, os.path.join(two, "model_1.t7"))
    assert np.max(np.abs(a - b)) <= 1e-10 * np.max(np.abs(a))
    # and not trivially: the parameters moved
    assert np.max(np.abs(a - init)) > 1e-4


def test_nonfinite_loss_stops_and_names_layer(tmp_path):
    save, r = train(tmp_path, "nan", "--epochs", "1", "--max-iters", "6", "--batch-size", "8", "--lr", "1e30",
                    check=False)
    assert r.returncode != 0
    assert "non-finite loss" in r.stderr and "iteration" in r.stderr and "module" in r.stderr, r.stderr[-2000:]
    assert not os.path.exists(os.path.join(save, "model_1.t7"))


def test_bad_options_are_clear(tmp_path):
    _, r = train(tmp_path, "bad", "--batch-size", "7", "--np", "1", "-nosuch", "1", check=False)
    assert r.returncode != 0 and "unknown option -nosuch" in r.stderr
    _, r = train(tmp_path, "bad2", "--resume", str(tmp_path / "nothing"), check=False)
    assert r.returncode != 0 and "no latest.t7" in r.stderr
    _, r = train(tmp_path, "bad3", "--model", str(tmp_path / "missing.t7"), check=False)
    assert r.returncode != 0 and "no such model file" in r.stderr


def test_retrain_legacy_model_with_new_classifier(tmp_path, lrt):
    """A Torch7 model file (cudnn classes) fine-tuned with -retrain and -resetClassifier."""
    path = str(tmp_path / "legacy.t7")
    lrt.execute("""
        torch.setdefaulttensortype('torch.FloatTensor')
        local m = require('luatorch.models.resnet')({depth = 8, dataset = 'mnist', nClasses = 7})
        torch.save(%r, m)
    """ % path)
    save, _ = train(tmp_path, "ft", "-retrain", path, "-resetClassifier", "true", "-nClasses", "10", "--epochs", "1",
                    "--max-iters", "2", "--batch-size", "8")
    n = lrt.execute("local m = torch.load(%r); return m:get(#m.modules).weight:size(1), torch.type(m:get(1))"
                    % os.path.join(save, "model_1.t7"))
    assert n == (10, "cudnn.SpatialConvolution")


def test_th_script_form(tmp_path):
    """`luatorch th train.lua ...`: the bundled fb.resnet.torch-style script, single-dash options."""
    save = str(tmp_path / "th")
    env = child_env()
    r = subprocess.run([sys.executable, "-m", "run.cli", "th", "train.lua", "-nEpochs", "1", "-maxIters", "2",
                        "-batchSize", "8", "-depth", "8", "-nThreads", "1", "-valIters", "2", "-save", save], cwd=str(tmp_path),
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = log(save)[0]
    assert rec["epoch"] == 1 and rec["iterations"] == 2


def _rank_pids(rank):
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
        if b"run.train" in cmd and env.get(b"PMI_RANK", env.get(b"OMPI_COMM_WORLD_RANK")) == str(rank).encode():
            pids.append(int(pid))
    return pids


@pytest.mark.slow
def test_killed_rank_ends_the_job_at_once_and_resume_continues(tmp_path):
    """A rank SIGKILLed at a random point of the run, five times: each time the launcher ends the job well before
    the collectives' timeout, naming the rank and how it ended, the ranks' shared memory is released, and --resume goes on from the
    checkpoints kept; a last --resume runs to the end."""
    import random
    import signal
    import time

    from pytorch_bridge.data.store import clean_segments

    save = str(tmp_path / "dead")
    env = child_env()
    # short epochs (0.1-0.4 s each) and more than any attempt reaches: the kills land at random epochs, some
    # before the first checkpoint; a last --resume then goes two epochs further
    shape = [*SMALL, "--np", "2", "--max-iters", "16", "--batch-size", "8", "--timeout", "60"]
    args = shape + ["--epochs", "100000"]
    rng = random.Random()
    for attempt in range(5):
        # a kill before the first checkpoint leaves nothing to resume: that attempt starts afresh
        where = ["--resume", save] if os.path.exists(os.path.join(save, "latest.t7")) else ["--save", save,
                                                                                           "--overwrite"]
        proc = subprocess.Popen([sys.executable, "-m", "run.cli", "train", *where, *args], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 300
        while time.time() < deadline and not _rank_pids(1):
            time.sleep(0.2)
        time.sleep(rng.uniform(1, 4))
        victims, ranks = _rank_pids(1), _rank_pids(0) + _rank_pids(1)
        if proc.poll() is not None or not victims:
            out, err = proc.communicate()
            pytest.fail("the job ended before rank 1 could be killed (attempt %d): %s" % (attempt, err[-2000:]))
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        t0 = time.time()
        out, err = proc.communicate(timeout=120)
        took = time.time() - t0
        assert proc.returncode != 0, err[-2000:]
        # without the launcher's watch, rank 0 would wait for its collective's 60 s timeout; 20 s leaves room for
        # the processes' exit on a machine loaded hundreds of times over its cores (5.4 s once at load 400)
        assert took <= 20, "attempt %d: the job outlived the dead rank by %.1f s" % (attempt, took)
        assert "rank 1 (pid %d) died without an exit status" % victims[0] in err, err[-2000:]
        assert clean_segments(dry_run=True, created_by=ranks) == [], err[-2000:]
    done = max(rec["epoch"] for rec in log(save))
    r = subprocess.run([sys.executable, "-m", "run.cli", "train", "--resume", save, *shape, "--epochs", str(done + 2)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    assert max(rec["epoch"] for rec in log(save)) == done + 2


@pytest.mark.slow
def test_validation_counts_every_image_once_across_ranks(tmp_path):
    save, _ = train(tmp_path, "val", "--epochs", "1", "--max-iters", "1", "--batch-size", "64", "--val-iters", "0",
                    np_=2)
    rec = log(save)[0]
    assert rec["ranks"] == 2 and rec["val_images"] == 10000  # Fashion-MNIST's test set


@pytest.mark.slow
@pytest.mark.parametrize("ranks,devices,dpt,allreduce", [
    (1, 2, "baseline", "auto"), (1, 2, "optimized", "auto"), (2, 2, "baseline", "ring"),
    (2, 2, "optimized", "multicolor")], ids=["1x2-baseline", "1x2-optimized", "2x2-baseline", "2x2-optimized"])
def test_ranks_times_devices_equal_single_process(tmp_path, lrt, single_process, ranks, devices, dpt, allreduce):
    """N ranks x D DataParallelTable devices = 1 x 1 after k steps, for both DPT flavours (the
    optimized one with the inter-rank allreduce per gradient bucket, overlapped with backward)."""
    a, init = single_process
    run, _ = train(tmp_path, "nd", *EXACT, "--devices", str(devices), "--dpt", dpt, "--allreduce", allreduce,
                   np_=ranks)
    rec = log(run)[0]
    assert rec["ranks"] == ranks and rec["devices"] == devices
    b, _ = params(lrt, os.path.join(run, "model_1.t7"))
    assert np.max(np.abs(a - b)) <= 1e-10 * np.max(np.abs(a))
    assert np.max(np.abs(a - init)) > 1e-4


@pytest.mark.slow
def test_gpus_train_as_one_process(tmp_path, lrt, single_process, simt):
    """On cutorch's GPU backend (the emulated CUDA driver with two devices, guarded memory) `--devices 2` trains
    on the two GPUs (the optimized DataParallelTable, nothing staged through host memory) and ends where 1 rank
    x 1 CPU device does after k steps."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, guard=True)
    env.update(LUATORCH_CUTORCH="gpu", LT_EMULATED_CUDA_DEVICES="2", LUATORCH_CUDA_FALLBACK="error")
    a, init = single_process
    run, r = train(tmp_path, "gpus", *EXACT, "--devices", "2", "--dpt", "optimized", env=env, timeout=1200)
    assert "1 rank x 2 GPUs (1,2)" in r.stderr, r.stderr[-2000:]
    assert log(run)[0]["devices"] == 2
    b, _ = params(lrt, os.path.join(run, "model_1.t7"))   # a CudaDoubleTensor model, read here on the CPU
    assert np.max(np.abs(a - b)) <= 1e-10 * np.max(np.abs(a))
    assert np.max(np.abs(a - init)) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("model,data", [("googlenet_bn", "memory"), ("resnet", "files")])
def test_paper_models_train_on_imagenet_like_data(tmp_path, model, data):
    """The paper's networks on real JPEGs (synth-data, fb.resnet.torch's 224x224 transforms), from the packed
    in-memory store and from the per-file loader."""
    env = child_env()
    src, packed = str(tmp_path / "src"), str(tmp_path / "packed")
    for cmd in (["synth-data", src, "--images", "8", "--classes", "2", "--val", "4", "--seed", "1"],
                ["pack", src, packed]):
        r = subprocess.run([sys.executable, "-m", "run.cli", *cmd], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    save, _ = train(tmp_path, model, "--model", model, "--depth", "50", "--dataset", packed, "--data", data,
                    "--epochs", "1", "--max-iters", "1", "--val-iters", "1", "--batch-size", "2")
    rec = log(save)[0]
    assert rec["iterations"] == 1 and rec["val_images"] == 2 and np.isfinite(rec["train_loss"])


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_full_disk_keeps_the_previous_checkpoint(tmp_path):
    """Checkpoints on a 1.4 MB tmpfs: a write fails with ENOSPC during the run; the run ends with a line saying
    which file could not be written, no half-written file is left, and what latest.t7 names loads and resumes."""
    import shutil

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1400k", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        save = disk / "run"
        cmd = [sys.executable, "-m", "run.cli", "train", "--save", str(save), *SMALL, "--max-iters", "2",
               "--batch-size", "8", "--epochs", "4"]
        r = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=600)
        assert r.returncode != 0
        assert "checkpoints: cannot write" in r.stderr and "the checkpoints written before are intact" in r.stderr, \
            r.stderr[-2000:]
        left = os.listdir(save)
        assert not [n for n in left if n.endswith(".tmp")], left
        assert "latest.t7" in left, "the disk should hold the first epoch's checkpoint: %s" % left
        kept = tmp_path / "kept"
        shutil.copytree(save, kept)
    finally:
        subprocess.run(["umount", str(disk)])
    r = subprocess.run([sys.executable, "-m", "run.cli", "train", "--resume", str(kept), *SMALL, "--max-iters", "2",
                        "--batch-size", "8", "--epochs", "4"], cwd=ROOT, env=child_env(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert max(rec["epoch"] for rec in log(str(kept))) == 4


@pytest.mark.slow
def test_no_growth_over_epochs(tmp_path):
    """--np 2 --devices 2 with the optimized DataParallelTable, 8 short epochs: each rank's resident memory,
    open file descriptors, threads and the job's /dev/shm segments, sampled as each epoch is logged. After the
    first epochs (optimizer state, buffers and allocator pools appear), memory stays within 5% and the rest
    does not change."""
    import time

    save = str(tmp_path / "leak")
    cmd = [sys.executable, "-m", "run.cli", "train", "--save", save, "--np", "2", "--devices", "2", "--dpt",
           "optimized", "--epochs", "8", "--max-iters", "30", "--val-iters", "2", "--batch-size", "32", "--depth",
           "8", "--workers", "1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)

    def sample(pid):
        with open("/proc/%d/status" % pid) as f:
            rss = int(next(ln for ln in f if ln.startswith("VmRSS")).split()[1]) / 1024
        return rss, len(os.listdir("/proc/%d/fd" % pid)), len(os.listdir("/proc/%d/task" % pid))

    samples, seen = {}, 0
    while proc.poll() is None:
        try:
            with open(os.path.join(save, "log.jsonl")) as f:
                n = sum(1 for _ in f)
        except OSError:
            n = 0
        if n > seen and n < 8:  # the last epoch's sample would race with the job's end
            seen = n
            try:
                from pytorch_bridge.data.store import segments

                pids = _rank_pids(0) + _rank_pids(1)
                # this job's segments only: other work on the machine may make its own meanwhile
                shm = len([s for s in segments(created_by=pids) if s.kind == "segment"])
                samples[n] = ([sample(p) for p in pids], shm)
            except (OSError, StopIteration):
                pass
        time.sleep(0.05)
    assert proc.returncode == 0, proc.stderr.read()[-2000:]
    assert 3 in samples and 7 in samples, samples
    (early, shm3), (late, shm7) = samples[3], samples[7]
    assert len(early) == len(late) == 2 and shm3 == shm7, samples
    for (rss3, fds3, th3), (rss7, fds7, th7) in zip(early, late):
        assert rss7 <= rss3 * 1.05, samples
        assert (fds7, th7) == (fds3, th3), samples
