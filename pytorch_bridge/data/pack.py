"""`luatorch pack SRC OUT`: a source (see formats.py) to a packed set.

Packed layout (all in OUT):
  manifest.json                 classes, kind, encoding, per split the shard list with checksums
  <split>-NNNNN.bin             contiguous image records: encoded JPEG/PNG bytes as they were in the
                                files, or raw uint8 C x H x W records for array sources
  <split>-NNNNN.idx.npz         per record: offset, length (in the shard), label (1-based, fb.resnet
                                numbering), width/height (-1: header unreadable), source name
  <split>-NNNNN.done.json       written last per shard; what --resume trusts after re-checking the CRC
Records are stored in a seeded shuffled order, so every contiguous range (one rank's partition) is
class-mixed and a rank reads only the shards overlapping its range.

Raw arrays are stored raw rather than PNG: CIFAR's 32x32 images barely compress (PNG ~ 90 % of raw)
and decoding them would cost more than the transforms; see docs/results/data.md for the numbers.
"""
import hashlib
import io
import json
import multiprocessing as mp
import os
import sys
import time
import zlib

import numpy as np

from .formats import SourceError, read_source

FORMAT = "luatorch-packed"
VERSION = 1
CHUNK = 8 << 20


class ChecksumError(RuntimeError):
    """A shard whose bytes do not match the manifest."""


def crc32_file(path):
    crc = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return "%08x" % crc
            crc = zlib.crc32(b, crc)


class Progress:
    """A one-line progress bar on stderr: done/total, rate and ETA."""

    def __init__(self, total, what, enabled=True, stream=None):
        self.total, self.what, self.enabled = total, what, enabled
        self.stream = stream or sys.stderr
        self.done, self.t0, self.last = 0, time.time(), 0.0

    def add(self, n):
        self.done += n
        now = time.time()
        if self.enabled and (now - self.last > 0.2 or self.done >= self.total):
            self.last = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else 0
            filled = int(30 * self.done / max(self.total, 1))
            self.stream.write("\r%s [%s%s] %d/%d %.0f/s ETA %d:%02d " % (
                self.what, "#" * filled, "." * (30 - filled), self.done, self.total, rate, eta // 60, eta % 60))
            self.stream.flush()

    def close(self):
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _header_size(data):
    """(width, height) from the image header, (-1, -1) when Pillow cannot read it (counted at pack time;
    a truncated body is only found when decoding, and handled there)."""
    from PIL import Image
    try:
        with Image.open(io.BytesIO(data)) as im:
            return im.size
    except Exception:
        return -1, -1


_SOURCE = None  # the Source being packed; fork-inherited by the pool workers


def _records(src, split, items):
    s = src.splits[split]
    for pos in items:
        if src.encoding == "raw":
            yield s.array[pos].tobytes(), str(pos), int(s.labels[pos]), s.array.shape[3], s.array.shape[2]
        else:
            name, label = s.files[pos]
            with open(os.path.join(src.root, name), "rb") as f:
                data = f.read()
            w, h = _header_size(data)
            yield data, name, label, w, h


def _items_digest(src, split, items):
    s = src.splits[split]
    h = hashlib.sha1()
    for pos in items:
        h.update((s.files[pos][0] if s.files is not None else str(pos)).encode())
        h.update(b"\0%d\n" % s.labels[pos])
    return h.hexdigest()


def _shard_done(out, base, digest):
    """The shard's recorded state if its files are complete and its CRCs still match."""
    try:
        with open(os.path.join(out, base + ".done.json")) as f:
            done = json.load(f)
    except (OSError, ValueError):
        return None
    if done.get("items") != digest:
        return None
    for key, name in (("crc32", base + ".bin"), ("index_crc32", base + ".idx.npz")):
        p = os.path.join(out, name)
        if not os.path.exists(p) or crc32_file(p) != done.get(key):
            return None
    return done


def _write_shard(task):
    out, split, k, items, digest = task
    src = _SOURCE
    base = "%s-%05d" % (split, k)
    n = len(items)
    offsets, lengths = np.zeros(n, np.int64), np.zeros(n, np.int64)
    labels, widths, heights = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)
    names, bad = [], []
    crc, pos = 0, 0
    with open(os.path.join(out, base + ".bin.tmp"), "wb") as f:
        for i, (data, name, label, w, h) in enumerate(_records(src, split, items)):
            f.write(data)
            crc = zlib.crc32(data, crc)
            offsets[i], lengths[i], labels[i], widths[i], heights[i] = pos, len(data), label + 1, w, h
            names.append(name)
            pos += len(data)
            if w < 0:
                bad.append(name)
    np.savez(os.path.join(out, base + ".idx.tmp.npz"), offset=offsets, length=lengths, label=labels,
             width=widths, height=heights, name=np.array(names))
    os.replace(os.path.join(out, base + ".bin.tmp"), os.path.join(out, base + ".bin"))
    os.replace(os.path.join(out, base + ".idx.tmp.npz"), os.path.join(out, base + ".idx.npz"))
    done = {"file": base + ".bin", "index": base + ".idx.npz", "count": n, "bytes": pos, "crc32": "%08x" % crc,
            "index_crc32": crc32_file(os.path.join(out, base + ".idx.npz")), "items": digest, "unreadable": bad}
    with open(os.path.join(out, base + ".done.json.tmp"), "w") as f:
        json.dump(done, f)
    os.replace(os.path.join(out, base + ".done.json.tmp"), os.path.join(out, base + ".done.json"))
    return split, k, done, False


def _check_shard(task):
    out, split, k, items, digest = task
    done = _shard_done(out, "%s-%05d" % (split, k), digest)
    return (split, k, done, True) if done is not None else _write_shard(task)


def _plan(src, split, seed, shard_bytes):
    """Shard boundaries, fixed before any byte is read (sizes from stat), so a resumed pack cuts the same."""
    s = src.splits[split]
    order = np.random.default_rng([seed, 0 if split == "train" else 1]).permutation(len(s))
    if src.encoding == "raw":
        sizes = np.full(len(s), int(np.prod(s.array.shape[1:])), np.int64)
    else:
        sizes = np.array([os.path.getsize(os.path.join(src.root, s.files[i][0])) for i in order], np.int64)
    shards, start, acc = [], 0, 0
    for i, b in enumerate(sizes):
        if acc and acc + b > shard_bytes:
            shards.append(order[start:i])
            start, acc = i, 0
        acc += b
    if start < len(order):
        shards.append(order[start:])
    return shards


def pack(src, out, shard_bytes=256 << 20, workers=None, seed=0, resume=True, progress=True, source=None):
    """Pack `src` (a path, or an already read `source`) into the folder `out`; returns the manifest dict."""
    global _SOURCE
    source = source or read_source(src)
    os.makedirs(out, exist_ok=True)
    tasks = []
    for split in source.splits:
        for k, items in enumerate(_plan(source, split, seed, shard_bytes)):
            tasks.append((out, split, k, items, _items_digest(source, split, items)))
    total = sum(len(t[3]) for t in tasks)
    bar = Progress(total, "pack %s" % os.path.basename(os.path.abspath(out)), progress)
    results = {}
    skipped = 0
    _SOURCE = source
    fn = _check_shard if resume else _write_shard
    workers = workers or min(len(tasks), os.cpu_count() or 1)
    try:
        if workers <= 1 or len(tasks) <= 1:
            it = map(fn, tasks)
            pool = None
        else:
            pool = mp.get_context("fork").Pool(workers)
            it = pool.imap_unordered(fn, tasks)
        for split, k, done, was_done in it:
            results[(split, k)] = done
            skipped += was_done
            bar.add(done["count"])
        if pool is not None:
            pool.close()
            pool.join()
    finally:
        _SOURCE = None
        bar.close()
    manifest = {"format": FORMAT, "version": VERSION, "kind": source.kind, "encoding": source.encoding,
                "name": source.name, "classes": source.classes, "source_root": source.root, "seed": seed,
                "splits": {}, "resumed_shards": skipped}
    if source.encoding == "raw":
        manifest["record_shape"] = list(source.splits["train"].array.shape[1:])
        x = source.splits["train"].array
        # per-channel mean/std of the 0..255 pixels (MNIST-type normalisation); float64 sums over the set
        axes = (0, 2, 3)
        manifest["pixel_mean"] = [float(v) for v in x.mean(axis=axes, dtype=np.float64)]
        manifest["pixel_std"] = [float(v) for v in x.std(axis=axes, dtype=np.float64)]
    unreadable = []
    for split in source.splits:
        shards, first = [], 0
        for k in range(sum(1 for t in tasks if t[1] == split)):
            d = dict(results[(split, k)])
            unreadable += d.pop("unreadable", [])
            d.pop("items", None)
            d["first"] = first
            first += d["count"]
            shards.append(d)
        manifest["splits"][split] = {"count": first, "shards": shards}
    manifest["unreadable_headers"] = unreadable
    for name in unreadable[:20]:
        print("pack: unreadable image %s (kept; the loader replaces it by a gray image)" % name, file=sys.stderr)
    tmp = os.path.join(out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(out, "manifest.json"))
    return manifest


def load_manifest(out):
    path = os.path.join(out, "manifest.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except OSError:
        raise SourceError("%s: not a packed data set (no manifest.json)" % out)
    if m.get("format") != FORMAT:
        raise SourceError("%s: not a luatorch packed data set" % path)
    return m


def verify(out, splits=None, progress=False):
    """Recheck every shard's CRCs; returns a list of 'shard: what' strings (empty when all is well)."""
    m = load_manifest(out)
    bad = []
    shards = [s for name, sp in m["splits"].items() if splits is None or name in splits for s in sp["shards"]]
    bar = Progress(len(shards), "verify", progress)
    for s in shards:
        for key, name in (("crc32", s["file"]), ("index_crc32", s["index"])):
            p = os.path.join(out, name)
            if not os.path.exists(p):
                bad.append("%s: missing" % name)
            elif crc32_file(p) != s[key]:
                bad.append("%s: checksum mismatch (crc32 %s, manifest says %s)" % (name, crc32_file(p), s[key]))
        bar.add(1)
    bar.close()
    return bad
