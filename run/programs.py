"""`luatorch programs`: real Torch7 programs of 2016-17, run unmodified from a git copy of their repository,
on a small data set made here in each program's own format, with their results checked.

    luatorch programs fb.resnet.torch GIT [--work DIR] [--epochs 3]
    luatorch programs imagenet-multiGPU.torch GIT [--work DIR] [--epochs 1]
    luatorch programs char-rnn GIT [--work DIR] [--epochs 4]

GIT is a git copy (a clone or a bare repository) of the program; it is cloned into the work folder (a
temporary one unless --work is given), so nothing of the program lands in this project. Each step prints
the program's own last lines and a verdict; the exit status is 0 when every step passed. The record of what
they printed, and where they differ from Torch7, is docs/results/programs.md.

fb.resnet.torch: CIFAR-10 from its own `gen/cifar10.t7` cache layout (a synthetic, learnable 10-class set of
512 + 128 32x32 images, so nothing is downloaded), ResNet-20, `-nGPU 2 -nThreads 2` (cutorch's devices are
CPU workers here); then `-resume`, `-testOnly` on the saved best model, `-netType preresnet`,
`-shareGradInput true`, `-optnet true` (lua/optnet in training mode), and the checkpoints read back by luatorch and by the pure-Python reader.

imagenet-multiGPU.torch: a folder of JPEGs in its train/val layout (4 classes, made with Pillow), its
GoogLeNet-BN model (`-netType googlenetbn`), `-nGPU 2 -nDonkeys 2`, 3 iterations an epoch and its test pass;
then `-retrain` with the saved model and optimState, and `-backend nn`. Its first run estimates the mean and
std from 10,000 samples (about 4 minutes on 2 cores); the runs after it reuse that cache.

char-rnn (karpathy/char-rnn): a 40 kB text in its `data/<name>/input.txt` layout, sentences of a small grammar
(so that what it samples can be checked); a 2-layer LSTM on the CPU (`-gpuid -1`), `sample.lua` from its last
checkpoint at temperature 0.5 (7 in 10 of the sampled lines must be the grammar's sentences), `-init_from` that checkpoint, a GRU on cutorch
(`-gpuid 0`: the GPU where the GPU backend runs, else cutorch's CPU devices), `convert_gpu_cpu_checkpoint.lua` and
sampling from the converted model on the CPU.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cifar_like(n, rng):
    """n 3x32x32 byte images of 10 classes: class c has a bright band of rows in one channel, over noise."""
    labels = rng.integers(1, 11, n).astype(np.uint8)
    data = rng.integers(0, 60, (n, 3, 32, 32)).astype(np.uint8)
    for i, c in enumerate(labels):
        data[i, c % 3, (c - 1) * 3:(c - 1) * 3 + 3, :] += 180
    return {"data": data, "labels": labels}


def th(args, cwd, timeout=1800):
    """`luatorch th` in cwd; returns (exit status, output)."""
    r = subprocess.run([sys.executable, "-m", "run.cli", "th", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout + r.stderr


class Steps:
    def __init__(self):
        self.failed = []

    def check(self, name, ok, output, why=""):
        tail = "\n".join("    " + ln for ln in output.strip().splitlines()[-4:])
        print("%s %s%s\n%s" % ("ok  " if ok else "FAIL", name, (": " + why) if why and not ok else "", tail),
              flush=True)
        if not ok:
            self.failed.append(name)


def errors_of(output, kind="Finished epoch"):
    """fb.resnet.torch's top-1 errors (%) of each ' * Finished epoch' (or ' * Results') line."""
    return [float(m) for m in re.findall(r"\* %s.*?top1:\s*([0-9.]+)" % re.escape(kind), output)]


def fb_resnet(git, work, epochs):
    from pytorch_bridge import t7

    src = os.path.join(work, "fb.resnet.torch")
    subprocess.run(["git", "clone", "-q", git, src], check=True)
    os.makedirs(os.path.join(src, "gen"), exist_ok=True)
    rng = np.random.default_rng(7)
    # the layout of fb.resnet.torch's datasets/cifar10-gen.lua: {train = {data, labels}, val = {...}}
    t7.save(os.path.join(src, "gen", "cifar10.t7"), {"train": cifar_like(512, rng), "val": cifar_like(128, rng)})
    steps = Steps()
    common = ["main.lua", "-dataset", "cifar10", "-nThreads", "2", "-batchSize", "32"]

    rc, out = th(common + ["-depth", "20", "-nGPU", "2", "-nEpochs", str(epochs), "-save", "ck"], src)
    errs = errors_of(out)
    steps.check("train ResNet-20, -nGPU 2 -nThreads 2, %d epochs" % epochs,
                rc == 0 and len(errs) == epochs and min(errs) < 20, out,
                "exit %d, top-1 errors %s (want one < 20%%: the set is easy; lr 0.1 makes the epochs jumpy)"
                % (rc, errs))
    rc, out = th(common + ["-depth", "20", "-nGPU", "2", "-nEpochs", str(epochs + 1), "-save", "ck", "-resume", "ck"],
                 src)
    errs = errors_of(out)
    steps.check("-resume ck: one more epoch", rc == 0 and "Loading checkpoint" in out and len(errs) == 1
                and errs[0] < 50, out, "exit %d, top-1 errors %s" % (rc, errs))
    rc, out = th(common + ["-nGPU", "1", "-testOnly", "true", "-retrain", "ck/model_%d.t7" % (epochs + 1)], src)
    errs = errors_of(out, "Results")
    steps.check("-testOnly on the last checkpoint", rc == 0 and errs and errs[0] < 50, out,
                "exit %d, top-1 %s" % (rc, errs))
    rc, out = th(common + ["-netType", "preresnet", "-depth", "20", "-nGPU", "2", "-nEpochs", "1", "-save", "ckp"],
                 src)
    steps.check("-netType preresnet, 1 epoch", rc == 0 and len(errors_of(out)) == 1, out, "exit %d" % rc)
    rc, out = th(common + ["-depth", "20", "-nGPU", "2", "-nEpochs", "1", "-shareGradInput", "true", "-save",
                           "cks"], src)
    steps.check("-shareGradInput true, 1 epoch", rc == 0 and len(errors_of(out)) == 1, out, "exit %d" % rc)
    # models/init.lua: optnet.optimizeMemory(model, sampleInput, {inplace = false, mode = 'training'})
    rc, out = th(common + ["-depth", "20", "-nGPU", "2", "-nEpochs", "1", "-optnet", "true", "-save", "cko"], src)
    steps.check("-optnet true, 1 epoch", rc == 0 and len(errors_of(out)) == 1, out, "exit %d" % rc)
    path = os.path.join(src, "ck", "model_%d.t7" % (epochs + 1))
    try:
        model, state = t7.load(path), t7.load(os.path.join(src, "ck", "optimState_%d.t7" % (epochs + 1)))
        ok = getattr(model, "typename", None) == "nn.Sequential" and state["dfdx"].dtype == np.float32
        steps.check("checkpoints read by the pure-Python reader", ok, "%s, optimState dfdx %s %s"
                    % (model.typename, state["dfdx"].dtype, state["dfdx"].shape))
    except Exception as e:  # a reader error is a failed step, reported like the others
        steps.check("checkpoints read by the pure-Python reader", False, str(e))
    return steps.failed


def jpeg_folder(root, classes, per_class, rng):
    """imagenet-multiGPU.torch's layout, ROOT/{train,val}/<class>/*.JPEG: noisy pictures of a colour per class,
    of sizes around the 256 the program scales to."""
    from PIL import Image

    for split, n in (("train", per_class), ("val", max(1, per_class // 3))):
        for c in range(classes):
            d = os.path.join(root, split, "class%d" % c)
            os.makedirs(d, exist_ok=True)
            for i in range(n):
                h, w = (int(v) for v in rng.integers(256, 320, 2))
                a = rng.integers(0, 80, (h, w, 3)).astype(np.uint8)
                a[:, :, c % 3] += 150
                Image.fromarray(a).save(os.path.join(d, "img%d.JPEG" % i), quality=90)


def imagenet_multigpu(git, work, epochs):
    src = os.path.join(work, "imagenet-multiGPU.torch")
    subprocess.run(["git", "clone", "-q", git, src], check=True)
    data = os.path.join(work, "jpegs")
    jpeg_folder(data, 4, 12, np.random.default_rng(3))
    steps = Steps()
    common = ["main.lua", "-data", data, "-nClasses", "4", "-nGPU", "2", "-nDonkeys", "2", "-epochSize", "3",
              "-batchSize", "8", "-nEpochs", str(epochs)]
    rc, out = th(common + ["-netType", "googlenetbn"], src, timeout=3600)
    losses = [float(x) for x in re.findall(r"TRAINING SUMMARY.*?average loss \(per batch\): ([0-9.]+)", out)]
    steps.check("train googlenetbn, -nGPU 2 -nDonkeys 2, %d epoch(s) of 3 iterations" % epochs,
                rc == 0 and len(losses) == epochs and "TESTING SUMMARY" in out, out, "exit %d" % rc)
    saved = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(src, "imagenet", "checkpoint"))
                   for f in fs if f.startswith("model_"))
    if saved:
        rc, out = th(common[:-2] + ["-nEpochs", "1", "-netType", "googlenetbn", "-retrain", saved[-1],
                                    "-optimState", saved[-1].replace("model_", "optimState_")], src)
        steps.check("-retrain the saved model and optimState", rc == 0 and "TRAINING SUMMARY" in out, out,
                    "exit %d" % rc)
    else:
        steps.check("-retrain the saved model and optimState", False, out, "no model_*.t7 was saved")
    rc, out = th(common[:-2] + ["-nEpochs", "1", "-netType", "googlenetbn", "-backend", "nn"], src)
    steps.check("-backend nn", rc == 0 and "TESTING SUMMARY" in out, out, "exit %d" % rc)
    return steps.failed


GRAMMAR = (["the cat", "a dog", "the bird", "my friend", "the old man", "a child"],
           ["sees", "likes", "finds", "follows", "hears", "calls"],
           ["the ball", "a tree", "the river", "the moon", "a small house", "the red door"])


def grammar_text(chars, rng):
    """Lines 'SUBJECT VERB OBJECT.' drawn from GRAMMAR, about `chars` characters in all."""
    lines, n = [], 0
    while n < chars:
        line = "%s %s %s." % tuple(words[rng.integers(len(words))] for words in GRAMMAR)
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines) + "\n"


def grammatical_share(sample):
    """The share of the complete lines of a sample (the first and last may be cut) that are GRAMMAR's sentences,
    and how many complete lines there were."""
    lines = sample.split("\n")[1:-1]
    good = {"%s %s %s." % (s, v, o) for s in GRAMMAR[0] for v in GRAMMAR[1] for o in GRAMMAR[2]}
    return (sum(ln in good for ln in lines) / len(lines) if lines else 0.0), len(lines)


def val_losses(folder):
    """char-rnn's checkpoints in folder, lm_<savefile>_epoch<E>_<val loss>.t7, as (epoch, val loss, path) in
    epoch order."""
    found = []
    for f in os.listdir(folder) if os.path.isdir(folder) else []:
        m = re.match(r"lm_.*_epoch([0-9.]+)_([0-9.]+)\.t7$", f)
        if m:
            found.append((float(m.group(1)), float(m.group(2)), os.path.join(folder, f)))
    return sorted(found)


def char_rnn(git, work, epochs):
    src = os.path.join(work, "char-rnn")
    subprocess.run(["git", "clone", "-q", git, src], check=True)
    os.makedirs(os.path.join(src, "data", "grammar"))
    with open(os.path.join(src, "data", "grammar", "input.txt"), "w") as f:
        f.write(grammar_text(40000, np.random.default_rng(5)))
    steps = Steps()
    common = ["train.lua", "-data_dir", "data/grammar", "-rnn_size", "64", "-num_layers", "2", "-seq_length", "25",
              "-batch_size", "20", "-learning_rate", "5e-3", "-eval_val_every", "38", "-print_every", "38"]
    # (the floor of this text's loss is about 0.2 nats a character: three choices of six in ~25 characters)
    rc, out = th(common + ["-gpuid", "-1", "-max_epochs", str(epochs), "-checkpoint_dir", "cv"], src)
    saved = val_losses(os.path.join(src, "cv"))
    ok = rc == 0 and len(saved) >= 2 and saved[-1][1] < min(0.6, saved[0][1] / 2)
    steps.check("train a 2-layer LSTM on the CPU (-gpuid -1), %d epochs: validation loss %s" % (
        epochs, " -> ".join("%.3f" % v for _, v, _ in saved[:1] + saved[-1:])), ok, out, "exit %d" % rc)
    if not saved:
        return steps.failed + ["(no checkpoint: the later steps need one)"]
    last = saved[-1][2]
    # (temperature 0.5: the likelier characters, as char-rnn's README suggests for cleaner text)
    rc, out = th(["sample.lua", last, "-gpuid", "-1", "-length", "600", "-verbose", "0", "-seed", "7",
                  "-temperature", "0.5"], src)
    share, lines = grammatical_share(out)
    steps.check("sample.lua from the last checkpoint: %d of %d lines are the grammar's sentences"
                % (round(share * lines), lines), rc == 0 and lines >= 10 and share >= 0.7, out, "exit %d" % rc)
    rc, out = th(common + ["-gpuid", "-1", "-max_epochs", "1", "-checkpoint_dir", "cv_resumed", "-init_from", last],
                 src)
    resumed = val_losses(os.path.join(src, "cv_resumed"))
    steps.check("-init_from the last checkpoint, 1 epoch: validation loss %s" % (
        "%.3f" % resumed[-1][1] if resumed else "-"), rc == 0 and bool(resumed) and resumed[0][1] < 0.6, out,
        "exit %d" % rc)
    rc, out = th(common + ["-gpuid", "0", "-model", "gru", "-max_epochs", "1", "-checkpoint_dir", "cv_gpu"], src)
    gpu = val_losses(os.path.join(src, "cv_gpu"))
    steps.check("train a GRU on cutorch (-gpuid 0), 1 epoch: validation loss %s" % (
        "%.3f" % gpu[-1][1] if gpu else "-"), rc == 0 and bool(gpu) and gpu[-1][1] < 1.0, out, "exit %d" % rc)
    if gpu:
        rc, out = th(["convert_gpu_cpu_checkpoint.lua", gpu[-1][2], "-gpuid", "0"], src)
        cpu_model = gpu[-1][2] + "_cpu.t7"
        steps.check("convert_gpu_cpu_checkpoint.lua", rc == 0 and os.path.exists(cpu_model), out, "exit %d" % rc)
        rc, out = th(["sample.lua", cpu_model, "-gpuid", "-1", "-length", "300", "-verbose", "0", "-temperature",
                      "0.5"], src)
        share, lines = grammatical_share(out)
        steps.check("sample.lua from the converted checkpoint on the CPU: %d of %d lines are sentences"
                    % (round(share * lines), lines), rc == 0 and lines >= 5, out, "exit %d" % rc)
    return steps.failed


PROGRAMS = {"fb.resnet.torch": fb_resnet, "imagenet-multiGPU.torch": imagenet_multigpu, "char-rnn": char_rnn}


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch programs", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("program", choices=sorted(PROGRAMS))
    p.add_argument("git", help="a git copy (clone or bare) of the program's repository")
    p.add_argument("--work", help="folder to clone and run in (default: a temporary one, removed after)")
    p.add_argument("--epochs", type=int,
                   help="epochs of the first run (default: 3 for fb.resnet.torch, 4 for char-rnn, else 1)")
    a = p.parse_args(argv)
    if not os.path.exists(a.git):
        p.error("no such git copy: %s" % a.git)
    epochs = a.epochs or {"fb.resnet.torch": 3, "char-rnn": 4}.get(a.program, 1)
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        failed = PROGRAMS[a.program](os.path.abspath(a.git), a.work, epochs)
    else:
        with tempfile.TemporaryDirectory(prefix="luatorch-programs-") as work:
            failed = PROGRAMS[a.program](os.path.abspath(a.git), work, epochs)
    print("%s: %s" % (a.program, "every step passed" if not failed else "failed: " + "; ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
