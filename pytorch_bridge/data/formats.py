"""Readers for every kind of source `luatorch pack` accepts.

Each reader returns a `Source`: the class names (sorted folder order for image
folders, as fb.resnet.torch's imagenet-gen.lua numbers them), the data set kind
(which picks the transforms: imagenet | cifar | mnist) and per split either
  - `files`: a list of (relative path, 0-based label) for encoded images kept
    as they are (JPEG/PNG bytes), or
  - `array` + `labels`: uint8 N x C x H x W and 0-based labels, for data sets
    that come as raw arrays (CIFAR, MNIST/IDX, fb's cifar .t7 cache).
Splits are named "train" and "val" (CIFAR's test batch and MNIST's t10k are "val").
"""
import gzip
import os
import pickle
import struct

import numpy as np

IMAGE_EXTS = (".jpeg", ".jpg", ".png", ".bmp", ".ppm", ".pgm", ".webp", ".tif", ".tiff", ".gif")
CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
FASHION_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                 "Ankle boot"]


class SourceError(ValueError):
    """A source folder or file that cannot be packed (said in words naming the path)."""


class Split:
    def __init__(self, files=None, array=None, labels=None):
        self.files = files
        self.array = array
        self.labels = np.asarray(labels if labels is not None else [f[1] for f in files], dtype=np.int64)

    def __len__(self):
        return len(self.labels)


class Source:
    def __init__(self, kind, classes, splits, root, encoding, name):
        self.kind = kind            # imagenet | cifar | mnist: picks the transforms
        self.classes = classes
        self.splits = splits        # {"train": Split, "val": Split}
        self.root = root            # folder the relative file paths start from (encoded sources)
        self.encoding = encoding    # "file" (encoded bytes) or "raw" (uint8 C x H x W records)
        self.name = name


def _is_image(name):
    return name.lower().endswith(IMAGE_EXTS) and not name.startswith(".")


def read_folder(src):
    """ImageNet layout: src/train/<class>/*.JPEG, optional src/val/<class>/*."""
    train = os.path.join(src, "train")
    if not os.path.isdir(train):
        raise SourceError("%s: no train/ folder (expected train/<class>/<image> and optionally val/<class>/<image>)"
                          % src)
    classes = sorted(d for d in os.listdir(train) if os.path.isdir(os.path.join(train, d)))
    if not classes:
        raise SourceError("%s: no class folders in train/" % train)
    label = {c: i for i, c in enumerate(classes)}
    splits = {}
    for split in ("train", "val"):
        top = os.path.join(src, split)
        if not os.path.isdir(top):
            continue
        names = sorted(d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d)))
        unknown = [d for d in names if d not in label]
        if unknown:
            raise SourceError("%s: class folder(s) %s are not in train/ (labels follow train/'s sorted class list)"
                              % (top, ", ".join(unknown[:5])))
        if split == "val" and not names:
            raise SourceError("%s: no class folders in val/" % top)
        files = []
        for c in names:
            imgs = sorted(f for f in os.listdir(os.path.join(top, c)) if _is_image(f))
            if not imgs:
                raise SourceError("%s: empty class folder (no image files)" % os.path.join(top, c))
            files += [(os.path.join(split, c, f), label[c]) for f in imgs]
        splits[split] = Split(files=files)
    return Source("imagenet", classes, splits, os.path.abspath(src), "file", os.path.basename(os.path.abspath(src)))


def _unpickle(path):
    with open(path, "rb") as f:
        return pickle.load(f, encoding="bytes")


def _names(meta, *keys):
    for k in keys:
        v = meta.get(k.encode()) if isinstance(next(iter(meta), None), bytes) else meta.get(k)
        if v is not None:
            return [x.decode() if isinstance(x, bytes) else str(x) for x in v]
    return None


def read_cifar_python(src):
    """cifar-10-batches-py (data_batch_1..5, test_batch, batches.meta) or cifar-100-python (train, test, meta)."""
    def batch(path):
        d = _unpickle(path)
        data = d.get(b"data", d.get("data"))
        labels = d.get(b"fine_labels", d.get(b"labels", d.get("fine_labels", d.get("labels"))))
        return np.asarray(data, np.uint8).reshape(-1, 3, 32, 32), np.asarray(labels, np.int64)

    if os.path.exists(os.path.join(src, "data_batch_1")):
        parts = [batch(os.path.join(src, "data_batch_%d" % i)) for i in range(1, 6)
                 if os.path.exists(os.path.join(src, "data_batch_%d" % i))]
        val = batch(os.path.join(src, "test_batch"))
        meta = os.path.join(src, "batches.meta")
        classes = _names(_unpickle(meta), "label_names") if os.path.exists(meta) else None
    else:
        parts = [batch(os.path.join(src, "train"))]
        val = batch(os.path.join(src, "test"))
        meta = os.path.join(src, "meta")
        classes = _names(_unpickle(meta), "fine_label_names") if os.path.exists(meta) else None
    train = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return _array_source("cifar", src, train, val, classes)


def read_cifar_binary(src):
    """cifar-10-batches-bin (data_batch_N.bin: 1 label byte + 3072) or cifar-100-binary (train.bin: 2 + 3072)."""
    def batch(path, nlabel):
        raw = np.fromfile(path, np.uint8)
        rec = nlabel + 3072
        if raw.size % rec:
            raise SourceError("%s: %d bytes is not a whole number of %d-byte CIFAR records" % (path, raw.size, rec))
        raw = raw.reshape(-1, rec)
        return raw[:, nlabel:].reshape(-1, 3, 32, 32).copy(), raw[:, nlabel - 1].astype(np.int64)

    if os.path.exists(os.path.join(src, "data_batch_1.bin")):
        parts = [batch(os.path.join(src, "data_batch_%d.bin" % i), 1) for i in range(1, 6)
                 if os.path.exists(os.path.join(src, "data_batch_%d.bin" % i))]
        val = batch(os.path.join(src, "test_batch.bin"), 1)
        meta = os.path.join(src, "batches.meta.txt")
    else:
        parts = [batch(os.path.join(src, "train.bin"), 2)]
        val = batch(os.path.join(src, "test.bin"), 2)
        meta = os.path.join(src, "fine_label_names.txt")
    classes = None
    if os.path.exists(meta):
        with open(meta) as f:
            classes = [line.strip() for line in f if line.strip()]
    train = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    return _array_source("cifar", src, train, val, classes)


def _open_maybe_gz(path):
    with open(path, "rb") as f:
        head = f.read(2)
    return gzip.open(path, "rb") if head == b"\x1f\x8b" else open(path, "rb")


def read_idx_file(path):
    """One IDX file (gz or not): magic 0 0 <type 0x08=uint8> <ndim>, then ndim big-endian int32 sizes."""
    with _open_maybe_gz(path) as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise SourceError("%s: not an unsigned-byte IDX file" % path)
    ndim = data[3]
    dims = struct.unpack(">%di" % ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise SourceError("%s: %d data bytes, header says %s" % (path, body.size, "x".join(map(str, dims))))
    return body.reshape(dims)


def _find(src, *stems):
    for stem in stems:
        for ext in ("", ".gz"):
            for sep in ("-", "."):
                p = os.path.join(src, stem.replace("-", sep) + ext)
                if os.path.exists(p):
                    return p
    return None


def read_idx(src, classes=None):
    """(Fashion-)MNIST: train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-... (val)."""
    splits = {}
    for split, stem in (("train", "train"), ("val", "t10k")):
        imgs = _find(src, stem + "-images-idx3-ubyte")
        labs = _find(src, stem + "-labels-idx1-ubyte")
        if imgs is None or labs is None:
            if split == "train":
                raise SourceError("%s: no train-images-idx3-ubyte[.gz] / train-labels-idx1-ubyte[.gz]" % src)
            continue
        x, y = read_idx_file(imgs), read_idx_file(labs)
        if len(x) != len(y):
            raise SourceError("%s: %d images but %d labels" % (src, len(x), len(y)))
        splits[split] = (x.reshape(len(x), 1, x.shape[1], x.shape[2]), y.astype(np.int64))
    if classes is None and "fashion" in os.path.abspath(src).lower():
        classes = FASHION_NAMES
    return _array_source("mnist", src, splits["train"], splits.get("val"), classes)


def read_t7(path):
    """fb.resnet.torch's cifar cache: {train={data=ByteTensor N x 3 x 32 x 32, labels=1-based}, val=...}."""
    from pytorch_bridge import t7
    obj = t7.load(path)
    if not isinstance(obj, dict) or "train" not in obj:
        raise SourceError("%s: not a {train={data=..., labels=...}, val=...} table" % path)
    parts = {}
    for split in ("train", "val"):
        if split in obj:
            d = obj[split]
            x = np.ascontiguousarray(np.asarray(d["data"]))
            if x.ndim != 4 or x.dtype != np.uint8:
                raise SourceError("%s: %s.data must be a ByteTensor N x C x H x W (got %s %s)"
                                  % (path, split, x.dtype, x.shape))
            parts[split] = (x, np.asarray(d["labels"]).astype(np.int64).reshape(-1) - 1)
    k = int(max(parts["train"][1].max(), parts.get("val", parts["train"])[1].max())) + 1
    classes = CIFAR10_NAMES if k == 10 else None
    kind = "cifar" if parts["train"][0].shape[1] == 3 else "mnist"
    return _array_source(kind, path, parts["train"], parts.get("val"), classes)


def _array_source(kind, src, train, val, classes):
    k = int(max(train[1].max(), val[1].max() if val is not None else 0)) + 1
    if classes is None or len(classes) < k:
        classes = [str(i) for i in range(k)]
    if min(train[1].min(), val[1].min() if val is not None else 0) < 0:
        raise SourceError("%s: negative labels" % src)
    splits = {"train": Split(array=np.ascontiguousarray(train[0]), labels=train[1])}
    if val is not None:
        splits["val"] = Split(array=np.ascontiguousarray(val[0]), labels=val[1])
    name = os.path.splitext(os.path.basename(os.path.abspath(src)))[0]
    return Source(kind, list(classes), splits, os.path.abspath(src), "raw", name)


def detect(src):
    """Which reader a path needs, by what is in it."""
    if os.path.isfile(src):
        if src.endswith(".t7"):
            return "t7"
        raise SourceError("%s: a file source must be a .t7 data table" % src)
    if not os.path.isdir(src):
        raise SourceError("%s: no such file or folder" % src)
    has = lambda *n: any(os.path.exists(os.path.join(src, x)) for x in n)  # noqa: E731
    if has("train"):
        if os.path.isdir(os.path.join(src, "train")):
            return "folder"
        return "cifar-python"
    if has("data_batch_1"):
        return "cifar-python"
    if has("data_batch_1.bin", "train.bin"):
        return "cifar-binary"
    if _find(src, "train-images-idx3-ubyte"):
        return "idx"
    raise SourceError("%s: not an image folder (train/<class>/...), CIFAR (python or binary), IDX or .t7 source"
                      % src)


def read_source(src):
    kind = detect(src)
    return {"folder": read_folder, "cifar-python": read_cifar_python, "cifar-binary": read_cifar_binary,
            "idx": read_idx, "t7": read_t7}[kind](src)
