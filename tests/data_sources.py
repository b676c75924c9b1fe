"""Small synthetic sources of every kind `luatorch pack` reads, built in a tmp folder for the tests."""
import gzip
import os
import pickle
import struct

import numpy as np


def image_folder(root, rng, per_class=(3, 2, 4), val=(1, 2, 1), size=(20, 28), fmt="JPEG"):
    """root/train/<class>/*.JPEG|png with random content; returns {relpath: label0}."""
    from PIL import Image
    names = ["cat", "ant", "dog"][:len(per_class)]   # unsorted on purpose: labels follow sorted order
    sorted_names = sorted(names)
    truth = {}
    for split, counts in (("train", per_class), ("val", val)):
        for c, n in zip(names, counts):
            os.makedirs(os.path.join(root, split, c), exist_ok=True)
            for i in range(n):
                h, w = int(rng.integers(size[0], size[1])), int(rng.integers(size[0], size[1]))
                a = (rng.random((h, w, 3)) * 255).astype(np.uint8)
                ext = "png" if (fmt == "mixed" and i % 2) or fmt == "png" else "JPEG"
                rel = os.path.join(split, c, "img%d.%s" % (i, ext))
                Image.fromarray(a).save(os.path.join(root, rel), "PNG" if ext == "png" else "JPEG")
                truth[rel] = sorted_names.index(c)
    return truth


def cifar_python(root, rng, n=(7, 5, 6), nval=5, k=10):
    os.makedirs(root, exist_ok=True)
    parts = []
    for b, m in enumerate(n, 1):
        x = (rng.random((m, 3072)) * 255).astype(np.uint8)
        y = rng.integers(0, k, m).tolist()
        with open(os.path.join(root, "data_batch_%d" % b), "wb") as f:
            pickle.dump({b"data": x, b"labels": y}, f)
        parts.append((x, y))
    xv = (rng.random((nval, 3072)) * 255).astype(np.uint8)
    yv = rng.integers(0, k, nval).tolist()
    with open(os.path.join(root, "test_batch"), "wb") as f:
        pickle.dump({b"data": xv, b"labels": yv}, f)
    with open(os.path.join(root, "batches.meta"), "wb") as f:
        pickle.dump({b"label_names": [b"c%d" % i for i in range(k)]}, f)
    x = np.concatenate([p[0] for p in parts]).reshape(-1, 3, 32, 32)
    y = np.concatenate([p[1] for p in parts])
    return {"train": (x, y), "val": (xv.reshape(-1, 3, 32, 32), np.array(yv))}, ["c%d" % i for i in range(k)]


def cifar_binary(root, rng, n=(6, 4), nval=5, k=10):
    os.makedirs(root, exist_ok=True)
    out = {}
    for split, files in (("train", ["data_batch_%d.bin" % (i + 1) for i in range(len(n))]), ("val", ["test_batch.bin"])):
        xs, ys = [], []
        for fn, m in zip(files, n if split == "train" else (nval,)):
            x = (rng.random((m, 3072)) * 255).astype(np.uint8)
            y = rng.integers(0, k, m).astype(np.uint8)
            with open(os.path.join(root, fn), "wb") as f:
                f.write(np.concatenate([y[:, None], x], 1).tobytes())
            xs.append(x)
            ys.append(y)
        out[split] = (np.concatenate(xs).reshape(-1, 3, 32, 32), np.concatenate(ys).astype(np.int64))
    with open(os.path.join(root, "batches.meta.txt"), "w") as f:
        f.write("\n".join("n%d" % i for i in range(k)) + "\n\n")
    return out, ["n%d" % i for i in range(k)]


def _idx_bytes(a):
    return struct.pack(">BBBB", 0, 0, 8, a.ndim) + struct.pack(">%di" % a.ndim, *a.shape) + a.tobytes()


def idx(root, rng, n=13, nval=6, gz=True, hw=(28, 28)):
    os.makedirs(root, exist_ok=True)
    out = {}
    for split, stem, m in (("train", "train", n), ("val", "t10k", nval)):
        x = (rng.random((m,) + hw) * 255).astype(np.uint8)
        y = rng.integers(0, 10, m).astype(np.uint8)
        for what, a, nd in (("images", x, 3), ("labels", y, 1)):
            p = os.path.join(root, "%s-%s-idx%d-ubyte" % (stem, what, nd))
            if gz:
                with gzip.open(p + ".gz", "wb") as f:
                    f.write(_idx_bytes(a))
            else:
                with open(p, "wb") as f:
                    f.write(_idx_bytes(a))
        out[split] = (x[:, None], y.astype(np.int64))
    return out


def fb_cifar_t7(path, rng, n=9, nval=4):
    from pytorch_bridge import t7
    out, obj = {}, {}
    for split, m in (("train", n), ("val", nval)):
        x = (rng.random((m, 3, 32, 32)) * 255).astype(np.uint8)
        y = rng.integers(1, 11, m).astype(np.int64)   # 1-based, as fb's cifar10-gen.lua stores them
        y[0] = 10
        obj[split] = {"data": x, "labels": y}
        out[split] = (x, y - 1)
    t7.save(path, obj)
    return out
