"""`luatorch synth-data OUT --images N --classes K [--val M]`: an ImageNet-like folder of real JPEGs.

Sizes follow ImageNet's typical ones (width ~ N(400, 80), height ~ N(350, 70), clipped); the content is
a smooth random colour field plus mid-frequency texture and pixel noise, so that JPEG (quality 97)
files come out near ImageNet's ~110 KB average and decode as slowly as real photos. Image i of a split
depends only on (seed, split, i): the folder is the same for the same arguments, whatever the workers.
"""
import io
import multiprocessing as mp
import os

import numpy as np

from .pack import Progress

QUALITY = 97
NOISE = 14.0


def make_image(seed, split, i, width=None, height=None):
    """JPEG bytes of image i (deterministic)."""
    from PIL import Image
    rng = np.random.default_rng([seed, 0 if split == "train" else 1, i])
    w = width or int(np.clip(round(rng.normal(400, 80)), 120, 800))
    h = height or int(np.clip(round(rng.normal(350, 70)), 100, 700))
    base = Image.fromarray((rng.random((5, 6, 3)) * 255).astype(np.uint8)).resize((w, h), Image.BICUBIC)
    tex = Image.fromarray((rng.random((max(h // 8, 1), max(w // 8, 1), 3)) * 255).astype(np.uint8))
    im = np.asarray(base, np.float32)
    im += 0.3 * (np.asarray(tex.resize((w, h), Image.BILINEAR), np.float32) - 128)
    im += rng.normal(0, NOISE, (h, w, 3)).astype(np.float32)
    out = io.BytesIO()
    Image.fromarray(np.clip(im, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=QUALITY)
    return out.getvalue()


def _write(task):
    out, seed, split, i, cls, size = task
    path = os.path.join(out, split, cls, "%s_%08d.JPEG" % (split, i + 1))
    if not os.path.exists(path):
        data = make_image(seed, split, i, *(size or (None, None)))
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    return 1


def synth(out, images, classes, val=0, seed=0, workers=None, progress=True, size=None):
    """Write out/train/<class>/*.JPEG (images in all, round-robin over classes) and out/val/... (val)."""
    if classes < 1 or images < classes:
        raise ValueError("need at least one image per class (%d images, %d classes)" % (images, classes))
    names = ["n%08d" % (k + 1) for k in range(classes)]
    tasks = []
    for split, n in (("train", images), ("val", val)):
        if n:
            for c in names[:min(n, classes)]:
                os.makedirs(os.path.join(out, split, c), exist_ok=True)
            tasks += [(out, seed, split, i, names[i % classes], size) for i in range(n)]
    bar = Progress(len(tasks), "synth-data", progress)
    workers = workers or os.cpu_count() or 1
    if workers > 1 and len(tasks) > 8:
        with mp.get_context("fork").Pool(workers) as pool:
            for n in pool.imap_unordered(_write, tasks, chunksize=8):
                bar.add(n)
    else:
        for t in tasks:
            bar.add(_write(t))
    bar.close()
    return out
