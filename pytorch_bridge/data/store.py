"""The in-memory store: one split's records [start, end) of a packed set, held in POSIX shared memory
(a file in /dev/shm, mmapped), one copy per host.

Every process that wants the same records of the same packed set maps the same segment: the first to
take the segment's lock (an flock, so creation order needs no MPI and survives any start order; in an
MPI job that is in practice local rank 0 of the ranks that share it) reads the shards, checks their
CRCs and fills it; the others wait on the lock and attach. With `policy="replicate"` every local rank
asks for the whole split, so the host holds one copy; with `policy="partition"` the ranks ask for
disjoint ranges and each range is held once. Each attached process holds a shared flock on the
segment; the last one to detach (its exclusive try succeeds) unlinks it, unless `keep=True`.
"""
import atexit
import fcntl
import hashlib
import mmap
import os
import time

import numpy as np

from .pack import ChecksumError, crc32_file, load_manifest

SHM_DIR = "/dev/shm"


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def shm_free(path=SHM_DIR):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def local_rank():
    """(local rank, local size) from MPI (if mpi4py is already initialised) or the launchers' env."""
    import sys
    m = sys.modules.get("mpi4py.MPI")
    if m is not None and m.Is_initialized() and not m.Is_finalized():
        c = m.COMM_WORLD.Split_type(m.COMM_TYPE_SHARED)
        r, n = c.Get_rank(), c.Get_size()
        c.Free()
        return r, n
    for rk, sz in (("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                   ("MPI_LOCALRANKID", "MPI_LOCALNRANKS")):
        if rk in os.environ:
            return int(os.environ[rk]), int(os.environ.get(sz, "1"))
    return 0, 1


def _lock(path):
    """An exclusive flock on `path`, retried when the file was unlinked (by a last closer) meanwhile."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


class NotEnoughMemory(MemoryError):
    pass


class Store:
    """Records [start, end) of one split, in one shared segment; `get(i)` is a zero-copy memoryview."""

    def __init__(self, packed, split, start=0, end=None, verify=True, keep=False, shm_dir=SHM_DIR):
        t0 = time.time()
        self.fd = None
        self.packed, self.split = os.path.abspath(packed), split
        m = load_manifest(packed)
        if split not in m["splits"]:
            raise KeyError("%s has no %r split (has %s)" % (packed, split, ", ".join(m["splits"])))
        shards = m["splits"][split]["shards"]
        count = m["splits"][split]["count"]
        end = count if end is None else end
        self.start, self.end, self.keep = start, end, keep
        # the shards overlapping [start, end): all this process reads
        mine = [s for s in shards if s["first"] < end and s["first"] + s["count"] > start]
        self.index = self._read_index(mine, start, end)
        nbytes = int(self.index["length"].sum())
        key = hashlib.sha1(("%s|%s|%s|%d|%d" % (self.packed, _content_key(m), split, start, end)).encode()).hexdigest()
        self.path = os.path.join(shm_dir, "luatorch-data-%s" % key[:20])
        self.created = False
        lock = _lock(self.path + ".lock")
        try:
            if not os.path.exists(self.path):
                self._check_room(nbytes, shm_dir)
                self._fill(mine, nbytes, verify)
                self.created = True
            self.fd = os.open(self.path, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_SH)
        except BaseException:
            if not os.path.exists(self.path):   # nothing made: leave no lock file behind
                os.unlink(self.path + ".lock")
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
        self.nbytes = nbytes
        self.mm = mmap.mmap(self.fd, nbytes, prot=mmap.PROT_READ) if nbytes else None
        self.buf = memoryview(self.mm) if nbytes else memoryview(b"")
        self.labels = self.index["label"].astype(np.int64)
        self.load_s = time.time() - t0
        self._pid = os.getpid()
        atexit.register(self.close)   # detach (and unlink when last) even if never closed by hand

    def _read_index(self, mine, start, end):
        parts = {k: [] for k in ("length", "label", "width", "height", "name")}
        for s in mine:
            z = np.load(os.path.join(self.packed, s["index"]))
            lo, hi = max(start - s["first"], 0), min(end - s["first"], s["count"])
            for k in parts:
                parts[k].append(z[k][lo:hi])
        idx = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in parts.items()}
        idx["offset"] = np.concatenate([[0], np.cumsum(idx["length"])[:-1]]).astype(np.int64) \
            if len(idx["length"]) else np.zeros(0, np.int64)
        idx["length"] = idx["length"].astype(np.int64)
        self._slices = [(s, max(start - s["first"], 0), min(end - s["first"], s["count"])) for s in mine]
        return idx

    def _check_room(self, nbytes, shm_dir):
        avail, free = mem_available(), shm_free(shm_dir)
        if (avail is not None and nbytes > avail) or nbytes > free:
            raise NotEnoughMemory(
                "not enough memory to hold the %s split of %s in memory: need %d bytes (%.2f GiB); "
                "MemAvailable %s bytes, %s free %d bytes" % (
                    self.split, self.packed, nbytes, nbytes / 2 ** 30, avail, shm_dir, free))

    def _fill(self, mine, nbytes, verify):
        tmp = self.path + ".tmp%d" % os.getpid()
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, nbytes)
            mm = mmap.mmap(fd, nbytes) if nbytes else None
            pos = 0
            for s, lo, hi in self._slices:
                path = os.path.join(self.packed, s["file"])
                if verify and crc32_file(path) != s["crc32"]:
                    raise ChecksumError("%s: shard %s fails its checksum (manifest crc32 %s); refusing to load it"
                                        % (self.packed, s["file"], s["crc32"]))
                z = np.load(os.path.join(self.packed, s["index"]))
                a = int(z["offset"][lo]) if hi > lo else 0
                b = int(z["offset"][hi - 1] + z["length"][hi - 1]) if hi > lo else 0
                with open(path, "rb") as f:
                    f.seek(a)
                    n = f.readinto(memoryview(mm)[pos:pos + b - a]) if b > a else 0
                if n != b - a:
                    raise ChecksumError("%s: shard %s is truncated" % (self.packed, s["file"]))
                pos += b - a
            if mm is not None:
                mm.close()
            os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)

    def __len__(self):
        return self.end - self.start

    def get(self, i):
        """Record i (0-based, relative to `start`) as a memoryview into the shared segment."""
        o = int(self.index["offset"][i])
        return self.buf[o:o + int(self.index["length"][i])]

    def close(self):
        if self.fd is None or os.getpid() != self._pid:   # forked workers leave it to their parent
            return
        atexit.unregister(self.close)
        try:
            self.buf.release()
            if self.mm is not None:
                self.mm.close()
        except BufferError:   # a record view is still alive somewhere: the mapping goes with it
            pass
        if not self.keep:
            lock = _lock(self.path + ".lock")
            try:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.unlink(self.path)   # nobody else holds it
                    os.unlink(self.path + ".lock")
                except OSError:
                    pass
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
                os.close(lock)
        os.close(self.fd)
        self.fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _content_key(m):
    """What identifies a packed set's content: its shard CRCs."""
    return ",".join(s["crc32"] for sp in m["splits"].values() for s in sp["shards"])


def remove_unused_segments(shm_dir=SHM_DIR):
    """Unlink the data segments no process holds (left by `keep=True` or by killed processes); returns
    the paths removed. A segment in use keeps its holders' shared flock, so it is never touched."""
    removed = []
    for name in sorted(os.listdir(shm_dir)):
        if not name.startswith("luatorch-data-") or name.endswith(".lock") or ".tmp" in name:
            continue
        path = os.path.join(shm_dir, name)
        lock = _lock(path + ".lock")
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
                os.unlink(path + ".lock")
                removed.append(path)
            except OSError:
                pass
            finally:
                os.close(fd)
        except FileNotFoundError:
            pass
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
    return removed
