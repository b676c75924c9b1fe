"""`luatorch programs`: real Torch7 programs of 2016-17, run unmodified from a git copy of their repository,
on a small data set made here in each program's own format, with their results checked.

    luatorch programs fb.resnet.torch GIT [--work DIR] [--epochs 3] [--gpus 2]
    luatorch programs imagenet-multiGPU.torch GIT [--work DIR] [--epochs 1] [--gpus 2]
    luatorch programs char-rnn GIT [--work DIR] [--epochs 4]
    luatorch programs dcgan.torch GIT [--work DIR] [--epochs 3]
    luatorch programs pix2pix GIT [--work DIR] [--epochs 5]
    luatorch programs CycleGAN GIT [--work DIR] [--epochs 3]
    luatorch programs neural-style GIT [--work DIR] [--epochs 1]

GIT is a git copy (a clone or a bare repository) of the program; it is cloned into the work folder (a
temporary one unless --work is given), so nothing of the program lands in this project. Each step prints
the program's own last lines and a verdict; the exit status is 0 when every step passed. The record of what
they printed, and where they differ from Torch7, is docs/results/programs.md.

fb.resnet.torch: CIFAR-10 from its own `gen/cifar10.t7` cache layout (a synthetic, learnable 10-class set of
512 + 128 32x32 images, so nothing is downloaded), ResNet-20, `-nGPU 2 -nThreads 2` (cutorch's devices: GPUs on
the GPU backend, else CPU workers; `--gpus` sets -nGPU); then `-resume`, `-testOnly` on the saved best model, `-netType preresnet`,
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

dcgan.torch (soumith/dcgan.torch): a folder of pictures, one primary colour per class (`dataset=folder`); main.lua
with its default display on, talking to a `luatorch display` server started here (LUATORCH_DISPLAY points the
program at it); the real batch it shows is checked cell by cell; generate.lua (optnet) from the saved generator;
main.lua with gpu=1 (cunn, cudnn.convert). A GAN's generator needs far more steps than a check can afford: the
check asks that the discriminator learns (Err_D falls), not that the fakes look like the data.

pix2pix (phillipi/pix2pix): aligned A|B pictures (B the colour negative of A); train.lua (U-Net generator, PatchGAN
discriminator, nngraph) with the display windows and its errL1 plot; test.lua on val, whose outputs must be closer
to the targets than the inputs are; continue_train=1; gpu=1.

CycleGAN (junyanz/CycleGAN): unaligned trainA/trainB folders (B the colour negatives of other pictures); train.lua
(cycle_gan model: two resnet_6blocks generators, two PatchGAN discriminators, LSGAN, instance normalization, the
`class` package) with its plot and picture windows, 3 epochs and 1 of decaying learning rate, in which the
discriminators must learn; test.lua on testA/testB; continue_train=1; gpu=1.

neural-style (jcjohnson/neural-style): a small VGG-19-like Caffe model with VGG-19's layer names (conv1_1 ...
relu5_1, 8 to 24 channels, fixed random weights) written as an old-format prototxt and a caffemodel by the protobuf
package, read by neural_style.lua through lua/loadcaffe; a 64 px content PNG (rectangles) and a style JPEG (stripes);
40 iterations per --epochs of L-BFGS and of Adam on the CPU (-gpu -1), L-BFGS on cutorch (-gpu 0) and with
-backend cudnn. Each run must find its content and 5 style layers by name, its printed total loss must fall to under
half, and the output picture must be written.
"""
import argparse
import contextlib
import json
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


def clone(git, dest):
    """A working copy of git at dest. A copy whose history lacks some blobs (a partial mirror: CycleGAN's gifs) still
    gives every file it has, and says which it lacks; a program that needs one of those fails on its own."""
    r = subprocess.run(["git", "clone", "-q", git, dest], capture_output=True, text=True)
    if r.returncode == 0:
        return
    subprocess.run(["rm", "-rf", dest], check=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", git, dest], check=True)
    names = subprocess.run(["git", "-C", dest, "ls-tree", "-r", "-z", "--name-only", "HEAD"], check=True,
                           capture_output=True, text=True).stdout.split("\0")
    missing = [n for n in names if n and subprocess.run(["git", "-C", dest, "checkout", "-q", "HEAD", "--", n],
                                                        capture_output=True).returncode != 0]
    print("(the git copy lacks %d file(s), left out: %s)" % (len(missing), ", ".join(missing[:5])), flush=True)


def th(args, cwd, timeout=1800, env=None):
    """`luatorch th` in cwd (with env's variables added); returns (exit status, output). It runs this checkout's
    luatorch (python_module and child_env), not an installed one that `-m run.cli` in the program's folder finds."""
    from run.launch import child_env, python_module

    r = subprocess.run(python_module("run.cli", "th", *args), cwd=cwd, capture_output=True, text=True,
                       timeout=timeout, env=child_env(**(env or {})))
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


def fb_resnet(git, work, epochs, gpus=2):
    from pytorch_bridge import t7

    src = os.path.join(work, "fb.resnet.torch")
    clone(git, src)
    os.makedirs(os.path.join(src, "gen"), exist_ok=True)
    rng = np.random.default_rng(7)
    # the layout of fb.resnet.torch's datasets/cifar10-gen.lua: {train = {data, labels}, val = {...}}
    t7.save(os.path.join(src, "gen", "cifar10.t7"), {"train": cifar_like(512, rng), "val": cifar_like(128, rng)})
    steps = Steps()
    common = ["main.lua", "-dataset", "cifar10", "-nThreads", "2", "-batchSize", "32"]

    rc, out = th(common + ["-depth", "20", "-nGPU", str(gpus), "-nEpochs", str(epochs), "-save", "ck"], src)
    errs = errors_of(out)
    steps.check("train ResNet-20, -nGPU 2 -nThreads 2, %d epochs" % epochs,
                rc == 0 and len(errs) == epochs and min(errs) < 20, out,
                "exit %d, top-1 errors %s (want one < 20%%: the set is easy; lr 0.1 makes the epochs jumpy)"
                % (rc, errs))
    rc, out = th(common + ["-depth", "20", "-nGPU", str(gpus), "-nEpochs", str(epochs + 1), "-save", "ck", "-resume", "ck"],
                 src)
    errs = errors_of(out)
    steps.check("-resume ck: one more epoch", rc == 0 and "Loading checkpoint" in out and len(errs) == 1
                and errs[0] < 50, out, "exit %d, top-1 errors %s" % (rc, errs))
    rc, out = th(common + ["-nGPU", "1", "-testOnly", "true", "-retrain", "ck/model_%d.t7" % (epochs + 1)], src)
    errs = errors_of(out, "Results")
    steps.check("-testOnly on the last checkpoint", rc == 0 and errs and errs[0] < 50, out,
                "exit %d, top-1 %s" % (rc, errs))
    rc, out = th(common + ["-netType", "preresnet", "-depth", "20", "-nGPU", str(gpus), "-nEpochs", "1", "-save", "ckp"],
                 src)
    steps.check("-netType preresnet, 1 epoch", rc == 0 and len(errors_of(out)) == 1, out, "exit %d" % rc)
    rc, out = th(common + ["-depth", "20", "-nGPU", str(gpus), "-nEpochs", "1", "-shareGradInput", "true", "-save",
                           "cks"], src)
    steps.check("-shareGradInput true, 1 epoch", rc == 0 and len(errors_of(out)) == 1, out, "exit %d" % rc)
    # models/init.lua: optnet.optimizeMemory(model, sampleInput, {inplace = false, mode = 'training'})
    rc, out = th(common + ["-depth", "20", "-nGPU", str(gpus), "-nEpochs", "1", "-optnet", "true", "-save", "cko"], src)
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


def class_pictures(folder, n, channel, sizes, noise, lift, name, rng):
    """n JPEGs in folder (named name % i) of random heights and widths in [sizes), noise in [0, noise) with `lift`
    added to one channel: a class's colour that a model can learn."""
    from PIL import Image

    for i in range(n):
        h, w = (int(v) for v in rng.integers(sizes[0], sizes[1], 2))
        a = rng.integers(0, noise, (h, w, 3)).astype(np.uint8)
        a[:, :, channel] += lift
        Image.fromarray(a).save(os.path.join(folder, name % i), quality=90)


def jpeg_folder(root, classes, per_class, rng):
    """imagenet-multiGPU.torch's layout, ROOT/{train,val}/<class>/*.JPEG: noisy pictures of a colour per class,
    of sizes around the 256 the program scales to."""
    for split, n in (("train", per_class), ("val", max(1, per_class // 3))):
        for c in range(classes):
            d = os.path.join(root, split, "class%d" % c)
            os.makedirs(d, exist_ok=True)
            class_pictures(d, n, c % 3, (256, 320), 80, 150, "img%d.JPEG", rng)


def imagenet_multigpu(git, work, epochs, gpus=2):
    src = os.path.join(work, "imagenet-multiGPU.torch")
    clone(git, src)
    data = os.path.join(work, "jpegs")
    jpeg_folder(data, 4, 12, np.random.default_rng(3))
    steps = Steps()
    common = ["main.lua", "-data", data, "-nClasses", "4", "-nGPU", str(gpus), "-nDonkeys", "2", "-epochSize", "3",
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
    clone(git, src)
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


def colour_folder(root, classes, per_class, rng):
    """dcgan.torch's `folder` layout, ROOT/<class>/*.jpg: pictures of one primary colour per class over a little
    noise, of sizes around the 96 the program scales to (so that what its real-image window shows can be checked)."""
    for c in range(classes):
        d = os.path.join(root, "class%d" % c)
        os.makedirs(d, exist_ok=True)
        class_pictures(d, per_class, c % 3, (96, 128), 40, 200, "img%d.jpg", rng)


def grid_cells(path, cell):
    """The mean colour (3 numbers in [0, 1]) of each cell x cell square of a saved grid picture, row by row."""
    from PIL import Image

    a = np.asarray(Image.open(path).convert("RGB"), dtype=np.float64) / 255
    rows, cols = a.shape[0] // cell, a.shape[1] // cell
    return [a[r * cell:(r + 1) * cell, c * cell:(c + 1) * cell].mean((0, 1)) for r in range(rows) for c in range(cols)]


@contextlib.contextmanager
def display_server(folder):
    """A `luatorch display` server in a thread, saving every window to folder, for the with-block: gives its
    address (host:port, for LUATORCH_DISPLAY)."""
    from run.display_server import serving_in_thread

    with serving_in_thread(folder) as server:
        yield "%s:%d" % server.server_address[:2]


def dcgan(git, work, epochs):
    src = os.path.join(work, "dcgan.torch")
    clone(git, src)
    data = os.path.join(work, "colours")
    colour_folder(data, 3, 64, np.random.default_rng(11))   # 12 batches an epoch: dcgan shows every 10th
    shown = os.path.join(work, "display")
    steps = Steps()
    with display_server(shown) as address:
        # dcgan's options are environment variables; its default display = 1 talks to the display server
        env = {"DATA_ROOT": data, "dataset": "folder", "batchSize": "16", "nThreads": "2", "ngf": "32", "ndf": "32",
               "niter": str(epochs), "gpu": "0", "name": "colours", "LUATORCH_DISPLAY": address}
        rc, out = th(["main.lua"], src, env=env)
        err_d = [float(x) for x in re.findall(r"Err_D: ([0-9.]+)", out)]
        saved = [os.path.join(src, "checkpoints", "colours_%d_net_%s.t7" % (epochs, n)) for n in "GD"]
        # the discriminator learns first: its loss falls from about 2 log 2 at the start
        ok = (rc == 0 and "End of epoch %d / %d" % (epochs, epochs) in out and len(err_d) >= 6
              and np.mean(err_d[-3:]) < err_d[0] and all(map(os.path.exists, saved)))
        steps.check("train on the CPU (gpu=0), %d epochs: Err_D %s, net_G and net_D saved" % (
            epochs, " -> ".join("%.3f" % v for v in err_d[:1] + err_d[-1:])), ok, out, "exit %d" % rc)
        # display_id 10 shows the fakes, 30 the real batch: 16 pictures of 64 x 64, each of one primary colour
        real = os.path.join(shown, "30.jpg")
        cells = grid_cells(real, 64) if os.path.exists(real) else []
        primary = sum(1 for m in cells if np.sort(m)[2] - np.sort(m)[1] > 0.5)
        steps.check("display windows: the real batch, %d of %d cells one primary colour, and the fakes" % (
            primary, len(cells)), len(cells) == 16 and primary == 16 and os.path.exists(os.path.join(shown, "10.jpg")),
            out, "windows saved: %s" % sorted(os.listdir(shown)) if os.path.isdir(shown) else "none")
        if os.path.exists(saved[0]):
            rc, out = th(["generate.lua"], src, env={"net": saved[0], "gpu": "0", "batchSize": "16",
                                                     "name": "generated", "LUATORCH_DISPLAY": address})
            png = os.path.join(src, "generated.png")
            steps.check("generate.lua (optnet.optimizeMemory) from net_G: generated.png and its window",
                        rc == 0 and os.path.exists(png) and "Displayed image" in out, out, "exit %d" % rc)
        # gpu=1: cunn and cudnn.convert'ed networks on cutorch (the GPU where the GPU backend runs, else cutorch's
        # CPU devices), display off
        rc, out = th(["main.lua"], src, env=dict(env, gpu="1", niter="1", display="0", name="colours_gpu"))
        gpu_net = os.path.join(src, "checkpoints", "colours_gpu_1_net_G.t7")
        steps.check("train on cutorch with cudnn (gpu=1), 1 epoch", rc == 0 and "End of epoch 1 / 1" in out and
                    os.path.exists(gpu_net), out, "exit %d" % rc)
        if os.path.exists(gpu_net):   # a checkpoint of Cuda tensors, read back on cutorch
            rc, out = th(["generate.lua"], src, env={"net": gpu_net, "gpu": "1", "batchSize": "16", "display": "0",
                                                     "name": "generated_gpu"})
            steps.check("generate.lua with gpu=1 from the cutorch checkpoint", rc == 0 and
                        os.path.exists(os.path.join(src, "generated_gpu.png")), out, "exit %d" % rc)
    return steps.failed


def rectangles(side, count, corners, sides, rng):
    """A side x side RGB picture: `count` rectangles of random colours (top-left corners in [0, corners), sides in
    [sides[0], sides[1])) over a background of a random colour."""
    a = np.empty((side, side, 3), np.uint8)
    a[:] = rng.integers(0, 256, 3)
    for _ in range(count):
        y, x = rng.integers(0, corners, 2)
        h, w = rng.integers(sides[0], sides[1], 2)
        a[y:y + h, x:x + w] = rng.integers(0, 256, 3)
    return a


def paired_folder(root, train, val, rng):
    """pix2pix's aligned layout, ROOT/{train,val}/*.jpg, each picture A and B side by side (256 x 512): A is
    rectangles of random colours over a random background, B its colour negative (a mapping the identity gets badly
    wrong, so that a learned one shows)."""
    from PIL import Image

    for split, n in (("train", train), ("val", val)):
        d = os.path.join(root, split)
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            a = rectangles(256, 6, 200, (20, 80), rng)
            Image.fromarray(np.concatenate([a, 255 - a], 1)).save(os.path.join(d, "%d.jpg" % i), quality=95)


def mean_l1(folder_a, folder_b):
    """The mean absolute difference (in [0, 1]) between the same-named pictures of two folders."""
    from PIL import Image

    names = sorted(os.listdir(folder_a))
    diffs = [np.abs(np.asarray(Image.open(os.path.join(folder_a, n)), dtype=np.float64)
                    - np.asarray(Image.open(os.path.join(folder_b, n)), dtype=np.float64)).mean() / 255 for n in names]
    return float(np.mean(diffs)) if diffs else float("nan")


def pix2pix(git, work, epochs):
    src = os.path.join(work, "pix2pix")
    clone(git, src)
    data = os.path.join(work, "negatives")
    paired_folder(data, 24, 4, np.random.default_rng(4))
    shown = os.path.join(work, "display")
    steps = Steps()
    with display_server(shown) as address:
        # options are environment variables; 256 x 256 as the U-Net wants, small filters banks to fit a CPU
        env = {"DATA_ROOT": data, "name": "negatives", "gpu": "0", "ngf": "16", "ndf": "16", "niter": str(epochs),
               "loadSize": "256", "fineSize": "256", "print_freq": "4", "display_freq": "8", "save_epoch_freq": "1",
               "save_latest_freq": "8", "save_display_freq": "16", "LUATORCH_DISPLAY": address}
        rc, out = th(["train.lua"], src, env=env)
        l1 = [float(x) for x in re.findall(r"ErrL1: ([0-9.]+)", out)]
        ck = os.path.join(src, "checkpoints", "negatives")
        saved = ["%d_net_G.t7" % epochs, "latest_net_G.t7", "latest_net_D.t7", "16_train_res.png", "opt.txt"]
        # (each printed ErrL1 is one picture's, so noisy: the means of the first and last five printed must fall;
        # test.lua's outputs on val below are the measure of what it learned)
        ok = (rc == 0 and len(l1) >= 10 and np.mean(l1[-5:]) < np.mean(l1[:5])
              and all(os.path.exists(os.path.join(ck, f)) for f in saved))
        steps.check("train.lua on the CPU (gpu=0), %d epochs: ErrL1 %.3f -> %.3f (means of the first and last 5), "
                    "checkpoints" % (epochs, np.mean(l1[:5]) if l1 else -1, np.mean(l1[-5:]) if l1 else -1), ok, out,
                    "exit %d" % rc)
        plot = os.path.join(shown, next((f for f in os.listdir(shown) if f.endswith(".json")), "none")) \
            if os.path.isdir(shown) else ""
        rows = (json.load(open(plot))["content"]["file"] if os.path.exists(plot) else [])
        steps.check("display windows: input, output, target (10, 11, 12) and the errL1 plot (%d points)" % len(rows),
                    all(os.path.exists(os.path.join(shown, "%d.jpg" % w)) for w in (10, 11, 12)) and len(rows) >= 6,
                    out, "windows saved: %s" % (sorted(os.listdir(shown)) if os.path.isdir(shown) else "none"))
        rc, out = th(["test.lua"], src, env=dict(env, phase="val", which_epoch=str(epochs), how_many="4"))
        images = os.path.join(src, "results", "negatives", "%d_net_G_val" % epochs, "images")
        learned = mean_l1(os.path.join(images, "output"), os.path.join(images, "target"))
        identity = mean_l1(os.path.join(images, "input"), os.path.join(images, "target"))
        steps.check("test.lua on val: |output - target| %.3f against |input - target| %.3f, index.html" % (
            learned, identity), rc == 0 and learned < 0.6 * identity and
            os.path.exists(os.path.join(images, "..", "index.html")), out, "exit %d" % rc)
        rc, out = th(["train.lua"], src, env=dict(env, continue_train="1", niter="1", display="0"))
        steps.check("continue_train=1 from latest_net_G/D, 1 epoch", rc == 0 and "loading previously trained netG"
                    in out and "End of epoch 1 / 1" in out, out, "exit %d" % rc)
        rc, out = th(["train.lua"], src, env=dict(env, gpu="1", niter="1", display="0", name="negatives_gpu"))
        steps.check("train.lua on cutorch with cudnn (gpu=1), 1 epoch", rc == 0 and "End of epoch 1 / 1" in out,
                    out, "exit %d" % rc)
    return steps.failed


def unaligned_folder(root, train, test, rng):
    """CycleGAN's unaligned layout, ROOT/{trainA,trainB,testA,testB}/*.jpg (80 x 80): A rectangles of random colours
    over a random background, B the colour negatives of other such pictures (never A's own)."""
    from PIL import Image

    for split, n in (("train", train), ("test", test)):
        for side in "AB":
            d = os.path.join(root, split + side)
            os.makedirs(d, exist_ok=True)
            for i in range(n):
                a = rectangles(80, 4, 60, (8, 30), rng)
                Image.fromarray(a if side == "A" else 255 - a).save(os.path.join(d, "%d.jpg" % i), quality=95)


def cyclegan(git, work, epochs):
    src = os.path.join(work, "CycleGAN")
    clone(git, src)
    data = os.path.join(work, "unaligned")
    unaligned_folder(data, 12, 3, np.random.default_rng(5))
    shown = os.path.join(work, "display")
    steps = Steps()
    with display_server(shown) as address:
        env = {"DATA_ROOT": data, "name": "negatives", "gpu": "0", "ngf": "8", "ndf": "8", "niter": str(epochs),
               "niter_decay": "1", "loadSize": "72", "fineSize": "64", "print_freq": "4", "display_freq": "4",
               "save_latest_freq": "8", "LUATORCH_DISPLAY": address}
        rc, out = th(["train.lua"], src, env=env)
        # each printed line: [A] G D Rec I || [B] G D Rec I; the discriminators learn first (LSGAN: from 0.5)
        losses = [[float(v) for v in m] for m in re.findall(
            r"\[A\] G: ([0-9.]+)\s+D: ([0-9.]+)\s+Rec: ([0-9.]+) I: ([0-9.]+) \|\| \[B\] G: ([0-9.]+) D: ([0-9.]+) "
            r"Rec: ([0-9.]+) I:([0-9.]+)", out)]
        ck = os.path.join(src, "checkpoints", "negatives")
        saved = ["%d_net_%s.t7" % (epochs + 1, n) for n in ("G_A", "G_B", "D_A", "D_B")] + ["latest_net_G_A.t7"]
        d_end = [np.mean([r[k] for r in losses[-2:]]) for k in (1, 5)] if losses else [1, 1]
        ok = (rc == 0 and "End of epoch %d / %d" % (epochs + 1, epochs + 1) in out and "update learning rate" in out
              and len(losses) >= 6 and all(np.isfinite(losses).flat) and max(d_end) < 0.45
              and all(os.path.exists(os.path.join(ck, f)) for f in saved))
        steps.check("train.lua (cycle_gan, resnet_6blocks, LSGAN) on the CPU, %d + 1 epochs: D_A %.3f, D_B %.3f at the end"
                    % (epochs, d_end[0], d_end[1]), ok, out, "exit %d" % rc)
        kinds = sorted(os.listdir(shown)) if os.path.isdir(shown) else []
        steps.check("display windows: the loss plot and the 8 pictures (real, fake, rec, idt of A and B)",
                    "10.json" in kinds and all("%d.jpg" % w in kinds for w in range(11, 19)), out,
                    "windows saved: %s" % kinds)
        rc, out = th(["test.lua"], src, env=dict(env, phase="test", loadSize="64", fineSize="64"))
        images = os.path.join(src, "results", "negatives", "latest_test", "images")
        made = {k: len(os.listdir(os.path.join(images, k))) for k in ("real_A", "fake_B", "rec_A", "real_B", "fake_A",
                                                                      "rec_B") if os.path.isdir(os.path.join(images, k))}
        steps.check("test.lua on testA/testB: %s" % made, rc == 0 and len(made) == 6 and
                    min(made.values()) == 3, out, "exit %d" % rc)
        rc, out = th(["train.lua"], src, env=dict(env, continue_train="1", niter="1", niter_decay="0", display_id="0"))
        steps.check("continue_train=1 from the latest networks, 1 epoch", rc == 0 and "End of epoch 1 / 1" in out, out,
                    "exit %d" % rc)
        rc, out = th(["train.lua"], src, env=dict(env, gpu="1", niter="1", niter_decay="0", display_id="0",
                                                  name="negatives_gpu"))
        steps.check("train.lua on cutorch with cudnn (gpu=1), 1 epoch", rc == 0 and "End of epoch 1 / 1" in out,
                    out, "exit %d" % rc)
    return steps.failed

# the layers of neural-style's VGG-19 up to relu5_1 (the last it uses), by block: (block, convolutions)
VGG_BLOCKS = [(1, 2), (2, 2), (3, 4), (4, 4), (5, 1)]


def small_vgg(proto, model, channels, seed):
    """A VGG-19-like net with VGG-19's layer names (conv1_1, relu1_1, ..., pool4, conv5_1, relu5_1) but
    `channels[b]` channels in block b, in Caffe's old V1 format as VGG_ILSVRC_19_layers_deploy.prototxt is,
    with fixed random (He-scaled) weights; the prototxt and the caffemodel are written by the protobuf package."""
    from pytorch_bridge import caffe

    rng = np.random.default_rng(seed)
    kind = caffe.CLASSES["V1LayerParameter"].LayerType.Value
    net = caffe.NetParameter(name="small-VGG")
    net.input.append("data")
    net.input_dim.extend([10, 3, 224, 224])
    bottom, c_in = "data", 3
    for b, convs in VGG_BLOCKS:
        c_out = channels[b - 1]
        for i in range(1, convs + 1):
            name = "conv%d_%d" % (b, i)
            layer = net.layers.add(name=name, type=kind("CONVOLUTION"), bottom=[bottom], top=[name])
            p = layer.convolution_param
            p.num_output = c_out
            p.pad.append(1)
            p.kernel_size.append(3)
            w = rng.standard_normal((c_out, c_in, 3, 3)) * np.sqrt(2.0 / (c_in * 9))
            layer.blobs.append(caffe.blob(w, legacy=True))
            layer.blobs.append(caffe.blob(rng.uniform(-0.1, 0.1, c_out), legacy=True))
            net.layers.add(name="relu%d_%d" % (b, i), type=kind("RELU"), bottom=[name], top=[name])
            bottom, c_in = name, c_out
        if b < 5:
            layer = net.layers.add(name="pool%d" % b, type=kind("POOLING"), bottom=[bottom], top=["pool%d" % b])
            layer.pooling_param.pool = caffe.CLASSES["PoolingParameter"].PoolMethod.Value("MAX")
            layer.pooling_param.kernel_size = 2
            layer.pooling_param.stride = 2
            bottom = "pool%d" % b
    with open(proto, "w") as f:
        f.write(caffe.text(net))
    with open(model, "wb") as f:
        f.write(caffe.binary(net))
    return net


def total_losses(output):
    """neural-style's '  Total loss: X' lines, as numbers."""
    return [float(m) for m in re.findall(r"Total loss: ([-0-9.e+naif]+)", output)]


def neural_style(git, work, epochs):
    from PIL import Image

    src = os.path.join(work, "neural-style")
    clone(git, src)
    proto, model = os.path.join(src, "small_vgg.prototxt"), os.path.join(src, "small_vgg.caffemodel")
    small_vgg(proto, model, (8, 12, 16, 24, 24), seed=3)
    rng = np.random.default_rng(4)
    # content: rectangles of random colours; style: diagonal stripes of two colours
    Image.fromarray(rectangles(64, 5, 48, (10, 30), rng)).save(os.path.join(src, "content.png"))
    yy, xx = np.mgrid[0:72, 0:72]
    stripes = np.where(((yy + xx) // 6) % 2 == 0, 1, 0)[..., None]
    style = np.where(stripes, np.array([230, 180, 30]), np.array([20, 40, 160])).astype(np.uint8)
    Image.fromarray(style).save(os.path.join(src, "style.jpg"), quality=95)
    steps = Steps()
    iterations = 40 * epochs
    common = ["neural_style.lua", "-style_image", "style.jpg", "-content_image", "content.png", "-proto_file", proto,
              "-model_file", model, "-image_size", "64", "-num_iterations", str(iterations), "-print_iter", "10",
              "-save_iter", "0", "-seed", "123"]
    runs = [("L-BFGS on the CPU (-gpu -1 -backend nn)", ["-gpu", "-1", "-backend", "nn"], "out_lbfgs.png"),
            ("Adam on the CPU (-gpu -1 -optimizer adam)", ["-gpu", "-1", "-backend", "nn", "-optimizer", "adam"],
             "out_adam.png"),
            ("L-BFGS on cutorch (-gpu 0)", ["-gpu", "0", "-backend", "nn"], "out_gpu.png"),
            ("L-BFGS on cutorch with cudnn (-gpu 0 -backend cudnn)", ["-gpu", "0", "-backend", "cudnn"],
             "out_cudnn.png")]
    for what, extra, out_name in runs:
        out_path = os.path.join(src, out_name)
        rc, out = th(common + extra + ["-output_image", out_name], src)
        losses = total_losses(out)
        # every layer neural-style asks for was found by its loadcaffe name (relu4_2 content, 5 style layers)
        found = out.count("Setting up content layer") == 1 and out.count("Setting up style layer") == 5
        picture = None
        if os.path.exists(out_path):
            picture = np.asarray(Image.open(out_path).convert("RGB"))
        ok = (rc == 0 and found and len(losses) == iterations // 10 and all(np.isfinite(losses))
              and losses[-1] < losses[0] / 2 and picture is not None and picture.shape[:2] == (64, 64)
              and picture.std() > 1)
        steps.check("neural_style.lua, %s, %d iterations: total loss %s; %s" % (
            what, iterations, " -> ".join("%.4g" % v for v in losses),
            "%s %s" % (out_name, "x".join(map(str, picture.shape))) if picture is not None else "no picture"),
            ok, out, "exit %d" % rc)
    return steps.failed


PROGRAMS = {"fb.resnet.torch": fb_resnet, "imagenet-multiGPU.torch": imagenet_multigpu, "char-rnn": char_rnn,
            "dcgan.torch": dcgan, "pix2pix": pix2pix, "CycleGAN": cyclegan, "neural-style": neural_style}


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch programs", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("program", choices=sorted(PROGRAMS))
    p.add_argument("git", help="a git copy (clone or bare) of the program's repository")
    p.add_argument("--work", help="folder to clone and run in (default: a temporary one, removed after)")
    p.add_argument("--epochs", type=int,
                   help="epochs of the first run (default: 3 for fb.resnet.torch and dcgan.torch, 4 for char-rnn, "
                        "5 for pix2pix, 3 (+ 1 decaying) for CycleGAN, else 1; neural-style: 40 iterations per epoch)")
    p.add_argument("--gpus", type=int, default=2,
                   help="-nGPU of fb.resnet.torch and imagenet-multiGPU.torch (default 2: DataParallelTable over two; "
                        "on the GPU backend at most the GPUs there are)")
    a = p.parse_args(argv)
    if not os.path.exists(a.git):
        p.error("no such git copy: %s" % a.git)
    epochs = a.epochs or {"fb.resnet.torch": 3, "char-rnn": 4, "dcgan.torch": 3, "pix2pix": 5,
                            "CycleGAN": 3}.get(a.program, 1)
    extra = {"gpus": a.gpus} if a.program in ("fb.resnet.torch", "imagenet-multiGPU.torch") else {}
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        failed = PROGRAMS[a.program](os.path.abspath(a.git), a.work, epochs, **extra)
    else:
        with tempfile.TemporaryDirectory(prefix="luatorch-programs-") as work:
            failed = PROGRAMS[a.program](os.path.abspath(a.git), work, epochs, **extra)
    print("%s: %s" % (a.program, "every step passed" if not failed else "failed: " + "; ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
