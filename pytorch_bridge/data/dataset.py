"""A packed data set: classes, sizes, decoding and the fb.resnet.torch transforms for its kind."""
import io
import os

import numpy as np

from . import transforms as T
from .pack import open_packed


class Dataset:
    def __init__(self, path, image_size=None):
        self.path = os.path.abspath(path)
        self.manifest = m = open_packed(path)   # complete (cheap check), or an error naming the fix
        self.kind, self.encoding = m["kind"], m["encoding"]
        self.classes = list(m["classes"])
        self.num_classes = len(self.classes)
        self._index = {}
        if self.kind == "imagenet":
            self.crop = int(image_size or 224)
            self.resize = int(round(self.crop * 256 / 224))   # Scale(256) + CenterCrop(224), kept in proportion
            self.image_shape = (3, self.crop, self.crop)
        else:
            c, h, w = m["record_shape"]
            self.resize = image_size if image_size and (image_size, image_size) != (h, w) else None
            self.image_shape = (c, self.resize or h, self.resize or w)

    @property
    def splits(self):
        return list(self.manifest["splits"])

    def size(self, split):
        if split not in self.manifest["splits"]:
            raise KeyError("%s has no %r split (has %s)" % (self.path, split, ", ".join(self.splits)))
        return self.manifest["splits"][split]["count"]

    def index(self, split):
        """The whole split's index: name, label (1-based), width, height (read once)."""
        if split not in self._index:
            self.size(split)
            parts = [np.load(os.path.join(self.path, s["index"])) for s in self.manifest["splits"][split]["shards"]]
            self._index[split] = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0)
                                  for k in ("name", "label", "width", "height", "length")}
        return self._index[split]

    def decode(self, data):
        """Record bytes -> C x H x W float32 (image.load(path, 3, 'float'): 0..1; raw arrays: 0..255)."""
        if self.encoding == "raw":
            return np.frombuffer(data, np.uint8).reshape(self.manifest["record_shape"]).astype(np.float32)
        from PIL import Image
        with Image.open(io.BytesIO(data)) as im:
            a = np.asarray(im.convert("RGB"))
        return a.transpose(2, 0, 1).astype(np.float32) / np.float32(255)

    def transform(self, split, train=None):
        """fb.resnet.torch's preprocess() for this kind; `train` defaults to split == 'train'."""
        train = split == "train" if train is None else train
        if self.kind == "imagenet":
            if train:
                return lambda img, rng: T.imagenet_train(img, rng, self.crop)
            return lambda img, rng: T.imagenet_val(img, rng, self.crop, self.resize)
        if self.kind == "cifar":
            return T.cifar_train if train else T.cifar_val
        return T.normalize_only(self.manifest["pixel_mean"], self.manifest["pixel_std"], self.resize)

    def fast_path(self, split, train=None):
        """The C pipeline for this split's JPEG records (pytorch_bridge.data.fastpath), or None where it
        does not apply (other kinds, raw records, a build without libjpeg)."""
        if self.kind != "imagenet" or self.encoding != "file":
            return None
        from .fastpath import fast_path
        return fast_path(split == "train" if train is None else train, self.crop, self.resize)

    def loader(self, split, batch_size, **kw):
        from .loader import Loader
        return Loader(self, split, batch_size, **kw)

    def __repr__(self):
        return "Dataset(%r, %s, %d classes, %s)" % (self.path, self.kind, self.num_classes,
                                                    ", ".join("%s=%d" % (s, self.size(s)) for s in self.splits))
