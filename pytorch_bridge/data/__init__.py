"""Data sets for training: packing, the shared in-memory store, fb.resnet.torch's transforms and the
batch loader (see docs/architecture.md, "Data").

    from pytorch_bridge.data import open_dataset
    ds = open_dataset("builtin")        # or a packed folder, or a source (packed into the cache first)
    ld = ds.loader("train", batch_size=32, rank=0, world=1, seed=1, workers=2)
"""
import hashlib
import os

from .dataset import Dataset
from .formats import SourceError
from .pack import ChecksumError, is_packed_folder, open_packed, pack, verify
from .store import NotEnoughMemory

__all__ = ["open_dataset", "Dataset", "pack", "verify", "SourceError", "ChecksumError", "NotEnoughMemory"]


def open_dataset(spec="builtin", image_size=None, cache_dir=None, progress=True, **pack_kw):
    """'builtin', a packed folder (has manifest.json), or a source folder/file packed into
    `cache_dir` (default $LUATORCH_DATA or ~/.cache/luatorch/data) on first use."""
    from .builtin import builtin_path, cache_root
    if spec == "builtin":
        return Dataset(builtin_path(progress), image_size)
    if is_packed_folder(spec):
        return Dataset(spec, image_size)
    src = os.path.abspath(spec)
    key = hashlib.sha1(src.encode()).hexdigest()[:12]
    out = os.path.join(cache_dir or cache_root(), "packed", "%s-%s" % (os.path.basename(src), key))
    open_packed(out, rebuild=lambda: pack(src, out, progress=progress, **pack_kw))
    return Dataset(out, image_size)
