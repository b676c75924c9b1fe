"""`luatorch pack SRC OUT`: a source (see formats.py) to a packed set.

Packed layout (all in OUT):
  manifest.json                 classes, kind, encoding, per split the shard list with checksums
  <split>-NNNNN.bin             contiguous image records: encoded JPEG/PNG bytes as they were in the
                                files (with `restarts=True`, JPEGs transcoded losslessly with restart
                                markers: the same pixels, decodable in parts; see add_restarts), or raw
                                uint8 C x H x W records for array sources
  <split>-NNNNN.idx.npz         per record: offset, length (in the shard), label (1-based, fb.resnet
                                numbering), width/height (-1: header unreadable), source name
  <split>-NNNNN.done.json       written last per shard; what --resume trusts after re-checking the CRC
  .pack.lock                    flock'ed by the one process packing OUT (its pid inside); others wait on it
Records are stored in a seeded shuffled order, so every contiguous range (one rank's partition) is
class-mixed and a rank reads only the shards overlapping its range.

Files are written under names with `.tmp<pid>` and renamed when complete, so a half-written file never
has a final name. Every open checks the set cheaply (files present, sizes as the manifest says, no leftover
temporary files; checksums only with `luatorch pack --verify`); see open_packed().

Raw arrays are stored raw rather than PNG: CIFAR's 32x32 images barely compress (PNG ~ 90 % of raw)
and decoding them would cost more than the transforms; see docs/results/data.md for the numbers.
"""
import contextlib
import fcntl
import hashlib
import io
import json
import multiprocessing as mp
import os
import re
import sys
import time
import zlib

import numpy as np

from .formats import SourceError, read_source

FORMAT = "luatorch-packed"
VERSION = 1
CHUNK = 8 << 20
LOCK_NAME = ".pack.lock"
_TMP = re.compile(r"\.tmp\d*(\.npz)?$")          # a file being written (by the pid after .tmp)
_OURS = re.compile(r"-\d{5}\.(bin|idx\.npz|done\.json)$")
ABSENT = "not packed yet"


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
_RESTARTS = False   # pack(restarts=...), fork-inherited likewise


def add_restarts(data):
    """The JPEG with a restart marker every 1-4 MCUs (lt_data_jpeg_add_restarts): the same DCT coefficients,
    so the same pixels, with Huffman tables optimized (a little smaller), cut into segments a sample's
    decode can skip (native/src/data_restart.c). Other data, and JPEGs it does not take (progressive,
    arithmetic-coded, already with restart markers, corrupt), come back unchanged."""
    try:
        from pytorch_bridge.native import ffi, lib
    except ImportError:
        return data
    out, n = ffi.new("uint8_t **"), ffi.new("int64_t *")
    if lib.lt_data_jpeg_add_restarts(ffi.from_buffer("uint8_t[]", data), len(data), out, n) != 0:
        return data
    try:
        return bytes(ffi.buffer(out[0], n[0]))
    finally:
        lib.lt_data_free(out[0])


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
            if _RESTARTS and w > 0:
                data = add_restarts(data)
            yield data, name, label, w, h


def _items_digest(src, split, items, restarts=False):
    """What a shard holds: names and labels (raw arrays: the pixels too, so another array with the same
    labels is another set), and whether its JPEGs got restart markers."""
    s = src.splits[split]
    h = hashlib.sha1(b"restarts\n" if restarts else b"")
    for pos in items:
        h.update((s.files[pos][0] if s.files is not None else str(pos)).encode())
        h.update(b"\0%d\n" % s.labels[pos])
        if s.array is not None:
            h.update(s.array[pos])
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
    tmp_bin, tmp_idx = _tmp(os.path.join(out, base + ".bin")), _tmp(os.path.join(out, base + ".idx"), ".npz")
    with open(tmp_bin, "wb") as f:
        for i, (data, name, label, w, h) in enumerate(_records(src, split, items)):
            f.write(data)
            crc = zlib.crc32(data, crc)
            offsets[i], lengths[i], labels[i], widths[i], heights[i] = pos, len(data), label + 1, w, h
            names.append(name)
            pos += len(data)
            if w < 0:
                bad.append(name)
    np.savez(tmp_idx, offset=offsets, length=lengths, label=labels, width=widths, height=heights,
             name=np.array(names))
    os.replace(tmp_bin, os.path.join(out, base + ".bin"))
    os.replace(tmp_idx, os.path.join(out, base + ".idx.npz"))
    index = os.path.join(out, base + ".idx.npz")
    done = {"file": base + ".bin", "index": base + ".idx.npz", "count": n, "bytes": pos, "crc32": "%08x" % crc,
            "index_crc32": crc32_file(index), "index_bytes": os.path.getsize(index), "items": digest,
            "unreadable": bad}
    _write_json(os.path.join(out, base + ".done.json"), done)
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


def _tmp(path, ext=""):
    """This process's temporary name for `path` (+ `ext`, which np.savez would otherwise append)."""
    return "%s.tmp%d%s" % (path, os.getpid(), ext)


def _write_json(path, obj, **kw):
    tmp = _tmp(path)
    with open(tmp, "w") as f:
        json.dump(obj, f, **kw)
    os.replace(tmp, path)


@contextlib.contextmanager
def pack_lock(out):
    """Hold the exclusive lock of the packed folder `out` (created if needed): one process packs or repairs
    it at a time, the others wait here, saying for whom. An flock: the kernel drops it when its holder dies."""
    os.makedirs(out, exist_ok=True)
    fd = os.open(os.path.join(out, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            print("pack: waiting for another process packing %s (pid %s)" % (out, holder), file=sys.stderr,
                  flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"%d\n" % os.getpid(), 0)
        yield
    finally:
        os.close(fd)


def packer_pid(out):
    """The pid of the process packing `out` now, or None when nobody holds its lock."""
    try:
        fd = os.open(os.path.join(out, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
    finally:
        os.close(fd)


def is_packed_folder(out):
    """A packed folder, or one a pack was started in (its lock file: being packed, or interrupted)."""
    return any(os.path.exists(os.path.join(out, n)) for n in ("manifest.json", LOCK_NAME))


def leftovers(out):
    """Temporary files an interrupted pack left in `out` (meaningful only while nobody packs it)."""
    try:
        return sorted(n for n in os.listdir(out) if _TMP.search(n))
    except FileNotFoundError:
        return []


def remove_leftovers(out, names=None):
    """Remove `names` (default: all leftovers) from `out`; returns the bytes freed. Call under pack_lock."""
    freed = 0
    for n in leftovers(out) if names is None else names:
        try:
            freed += os.path.getsize(os.path.join(out, n))
            os.unlink(os.path.join(out, n))
        except FileNotFoundError:
            pass
    return freed


def damage(out, m):
    """What is wrong with the packed set `m` in `out`, decided cheaply (files present, sizes as the manifest
    says; no checksums: that is verify()); None when it is complete."""
    for sp in m["splits"].values():
        for s in sp["shards"]:
            for name, size in ((s["file"], s["bytes"]), (s["index"], s.get("index_bytes"))):
                try:
                    have = os.path.getsize(os.path.join(out, name))
                except FileNotFoundError:
                    return "%s is missing" % name
                if size is not None and have != size:
                    return "%s has %d bytes, the manifest says %d" % (name, have, size)
    return None


def _state(out):
    """(manifest or None, what is wrong or None, leftover temporary files) of the folder `out`."""
    try:
        names = os.listdir(out)
    except (FileNotFoundError, NotADirectoryError):
        return None, ABSENT, []
    tmp = sorted(n for n in names if _TMP.search(n))
    if "manifest.json" not in names:
        if tmp or any(_OURS.search(n) for n in names):
            return None, "an interrupted pack (shards but no manifest.json)", tmp
        return None, ABSENT, tmp
    try:
        m = load_manifest(out)
    except ValueError as e:   # SourceError, or a manifest that is not JSON
        return None, "manifest.json is unreadable (%s)" % e, tmp
    return m, damage(out, m), tmp


def open_packed(out, rebuild=None):
    """The manifest of the complete packed set in `out`, checked cheaply on every open.

    When something looks off (no manifest, a shard missing or of the wrong size, leftover temporary files), it
    looks again holding the pack lock, so it first waits for a process packing `out` right now. Leftovers
    beside a complete set are removed; a set still incomplete is rebuilt by `rebuild()` (caches, whose source
    is known), saying so in one line, or is an error naming the fix."""
    m, problem, tmp = _state(out)
    if problem is None and not tmp:
        return m
    lock = os.path.join(out, LOCK_NAME)
    writable = os.path.isdir(out) and os.access(lock if os.path.exists(lock) else out, os.W_OK)
    with pack_lock(out) if writable else contextlib.nullcontext():   # read-only: nobody packs it
        m, problem, tmp = _state(out)
        if problem is None:
            if tmp and writable:
                freed = remove_leftovers(out, tmp)
                print("data: %s: removed %d leftover temporary file(s) of an interrupted pack (%d bytes)"
                      % (out, len(tmp), freed), file=sys.stderr)
            return m
    if rebuild is not None:
        if problem != ABSENT:
            print("data: %s: %s; rebuilding it" % (out, problem), file=sys.stderr)
        return rebuild()
    if problem == ABSENT:
        raise SourceError("%s: not a packed data set (no manifest.json)" % out)
    src = m["source_root"] if m else "SRC"
    raise SourceError("%s: %s; repack it: luatorch pack %s %s" % (out, problem, src, out))


def _same_set(m, source, tasks, seed):
    """Whether manifest `m` already holds exactly what packing `tasks` of `source` would write."""
    if m.get("source_root") != source.root or m.get("seed") != seed or m.get("classes") != source.classes:
        return False
    have = [(split, s.get("items")) for split, sp in m["splits"].items() for s in sp["shards"]]
    return have == [(t[1], t[4]) for t in tasks]


def pack(src, out, shard_bytes=256 << 20, workers=None, seed=0, resume=True, progress=True, source=None,
         restarts=False):
    """Pack `src` (a path, or an already read `source`) into the folder `out`; returns the manifest dict.
    restarts: store JPEGs with restart markers (add_restarts) for the C pipeline's partial decode.

    One process at a time packs `out` (pack_lock); one that had to wait finds the set done and returns it
    (`already_packed` is then true), unless the source or the options changed: then it repacks, reusing the
    shards that still match (resume)."""
    source = source or read_source(src)
    with pack_lock(out):
        tasks = []
        for split in source.splits:
            for k, items in enumerate(_plan(source, split, seed, shard_bytes)):
                tasks.append((out, split, k, items, _items_digest(source, split, items, restarts)))
        m, problem, tmp = _state(out)
        remove_leftovers(out, tmp)   # nobody else writes here while we hold the lock
        if resume and problem is None and _same_set(m, source, tasks, seed):
            return dict(m, already_packed=True)
        if m is not None:
            os.unlink(os.path.join(out, "manifest.json"))   # its shards are about to change
        return _pack_locked(source, out, tasks, workers, seed, resume, progress, restarts)


def _pack_locked(source, out, tasks, workers, seed, resume, progress, restarts=False):
    global _SOURCE, _RESTARTS
    total = sum(len(t[3]) for t in tasks)
    bar = Progress(total, "pack %s" % os.path.basename(os.path.abspath(out)), progress)
    results = {}
    skipped = 0
    _SOURCE, _RESTARTS = source, bool(restarts) and source.encoding != "raw"
    fn = _check_shard if resume else _write_shard
    workers = workers or min(len(tasks), os.cpu_count() or 1)
    pool = None
    try:
        if workers <= 1 or len(tasks) <= 1:
            it = map(fn, tasks)
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
            pool = None
    finally:
        if pool is not None:   # interrupted: no worker outlives the pack (they hold the lock's fd too)
            pool.terminate()
            pool.join()
        _SOURCE, _RESTARTS = None, False
        bar.close()
    manifest = {"format": FORMAT, "version": VERSION, "kind": source.kind, "encoding": source.encoding,
                "name": source.name, "classes": source.classes, "source_root": source.root, "seed": seed,
                "splits": {}, "resumed_shards": skipped, "jpeg_restarts": bool(restarts) and source.encoding != "raw"}
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
            d["first"] = first
            first += d["count"]
            shards.append(d)   # with its "items" digest: what a later pack compares (_same_set)
        manifest["splits"][split] = {"count": first, "shards": shards}
    manifest["unreadable_headers"] = unreadable
    for name in unreadable[:20]:
        print("pack: unreadable image %s (kept; the loader replaces it by a gray image)" % name, file=sys.stderr)
    _write_json(os.path.join(out, "manifest.json"), manifest, indent=1)
    # shards of a set packed here before with another source or other options (more shards than now)
    kept = {n for sp in manifest["splits"].values() for s in sp["shards"]
            for n in (s["file"], s["index"], s["file"][:-len(".bin")] + ".done.json")}
    for n in os.listdir(out):
        if _OURS.search(n) and n not in kept:
            os.unlink(os.path.join(out, n))
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
