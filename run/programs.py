"""`luatorch programs`: real Torch7 programs of 2016-17, run unmodified from a git copy of their repository,
on a small data set made here in each program's own format, with their results checked.

    luatorch programs fb.resnet.torch GIT [--work DIR] [--epochs 3]

GIT is a git copy (a clone or a bare repository) of the program; it is cloned into the work folder (a
temporary one unless --work is given), so nothing of the program lands in this project. Each step prints
the program's own last lines and a verdict; the exit status is 0 when every step passed. The record of what
they printed, and where they differ from Torch7, is docs/results/programs.md.

fb.resnet.torch: CIFAR-10 from its own `gen/cifar10.t7` cache layout (a synthetic, learnable 10-class set of
512 + 128 32x32 images, so nothing is downloaded), ResNet-20, `-nGPU 2 -nThreads 2` (cutorch's devices are
CPU workers here); then `-resume`, `-testOnly` on the saved best model, `-netType preresnet`,
`-shareGradInput true`, and the checkpoints read back by luatorch and by the pure-Python reader.
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
    path = os.path.join(src, "ck", "model_%d.t7" % (epochs + 1))
    try:
        model, state = t7.load(path), t7.load(os.path.join(src, "ck", "optimState_%d.t7" % (epochs + 1)))
        ok = getattr(model, "typename", None) == "nn.Sequential" and state["dfdx"].dtype == np.float32
        steps.check("checkpoints read by the pure-Python reader", ok, "%s, optimState dfdx %s %s"
                    % (model.typename, state["dfdx"].dtype, state["dfdx"].shape))
    except Exception as e:  # a reader error is a failed step, reported like the others
        steps.check("checkpoints read by the pure-Python reader", False, str(e))
    return steps.failed


PROGRAMS = {"fb.resnet.torch": fb_resnet}


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch programs", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("program", choices=sorted(PROGRAMS))
    p.add_argument("git", help="a git copy (clone or bare) of the program's repository")
    p.add_argument("--work", help="folder to clone and run in (default: a temporary one, removed after)")
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args(argv)
    if not os.path.exists(a.git):
        p.error("no such git copy: %s" % a.git)
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        failed = PROGRAMS[a.program](os.path.abspath(a.git), a.work, a.epochs)
    else:
        with tempfile.TemporaryDirectory(prefix="luatorch-programs-") as work:
            failed = PROGRAMS[a.program](os.path.abspath(a.git), work, a.epochs)
    print("%s: %s" % (a.program, "every step passed" if not failed else "failed: " + "; ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
