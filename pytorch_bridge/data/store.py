"""The in-memory store: one split's records [start, end) of a packed set, held in POSIX shared memory
(a file in /dev/shm, mmapped), one copy per host.

Every process that wants the same records of the same packed set maps the same segment: the first to
take the segment's lock (an flock, so creation order needs no MPI and survives any start order; in an
MPI job that is in practice local rank 0 of the ranks that share it) reads the shards, checks their
CRCs and fills it; the others wait on the lock and attach. With `policy="replicate"` every local rank
asks for the whole split, so the host holds one copy; with `policy="partition"` the ranks ask for
disjoint ranges and each range is held once. Each attached process holds a shared flock on the
segment; the last one to detach (its exclusive try succeeds) unlinks it, unless `keep=True`.

`fill="distributed"` (an MPI job, every rank asking for the same records): the ranks that share a
segment file (one host, found by each seeing the others' probe files, not by MPI's idea of a node) are
one group; one filler per group reads 1/N of the bytes from the packed set (N groups that lack the
segment) and the fillers exchange the rest over MPI (chunked Allgatherv), so a shared file system
carries the set once instead of N times. Every filler then checks every shard's CRC on the bytes it
holds. An error on any rank (a missing, truncated or corrupt shard, no room) is raised on all ranks,
naming the rank and the file. Without an initialised MPI (one process) it is the plain fill.

Detaching happens on close(), at exit, and on SIGTERM / SIGHUP / SIGINT (signals.py: also while the main
thread is inside Lua); only SIGKILL (or a crash) leaves a segment behind, for `luatorch data clean`
(clean_segments) to remove once no live process holds it. The segment's `.lock` file also records what the
segment holds (packed set, split, range, creator's pid) for `luatorch data list`.
"""
import atexit
import fcntl
import hashlib
import json
import mmap
import os
import threading
import time
import weakref
import zlib

import numpy as np

from . import signals
from .pack import ChecksumError, crc32_file, open_packed

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


# the launchers' variables local_rank() reads (Open MPI, MPICH hydra, Slurm's srun)
LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")


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
    if "SLURM_LOCALID" in os.environ:
        # srun: SLURM_STEP_TASKS_PER_NODE is "2" or "2(x3),1"; the node's own count is its entry
        counts = []
        for part in os.environ.get("SLURM_STEP_TASKS_PER_NODE", "1").split(","):
            n, _, times = part.partition("(x")
            counts += [int(n)] * (int(times.rstrip(")")) if times else 1)
        node = int(os.environ.get("SLURM_NODEID", "0"))
        return int(os.environ["SLURM_LOCALID"]), counts[node] if node < len(counts) else counts[-1]
    return 0, 1


def _lock(path, timeout=None):
    """An exclusive flock on `path`, retried when the file was unlinked (by a last closer) meanwhile.
    With `timeout` (seconds; 0: one try) None when it is still held by then."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)
            continue
        if _same_file(path, fd):
            return fd
        os.close(fd)


def _unlock(fd):
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def _unlink(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _same_file(path, fd):
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


# What a signal handler must release in this process: the stores attached, the segments being filled.
_attached = weakref.WeakSet()
_filling = set()


def _release_on_signal():
    for st in list(_attached):
        st._unlink_if_last(timeout=2)
    for tmp in list(_filling):   # a half-filled segment, and its lock file (this process holds it)
        _unlink(tmp, tmp.rsplit(".tmp", 1)[0] + ".lock")


class NotEnoughMemory(MemoryError):
    pass


class FillError(RuntimeError):
    """A distributed fill failed on some rank; raised on every rank with that rank's message."""


FILLS = ("local", "distributed")
EXCHANGE_CHUNK = 32 << 20   # bytes per rank per Allgatherv round (MPI counts are 32-bit)


def _mpi_comm(comm):
    """The communicator of a distributed fill: `comm`, else MPI's world if mpi4py has started MPI, else None."""
    if comm is not None:
        return comm
    import sys
    m = sys.modules.get("mpi4py.MPI")
    if m is not None and m.Is_initialized() and not m.Is_finalized() and m.COMM_WORLD.Get_size() > 1:
        return m.COMM_WORLD
    return None


class Store:
    """Records [start, end) of one split, in one shared segment; `get(i)` is a zero-copy memoryview."""

    def __init__(self, packed, split, start=0, end=None, verify=True, keep=False, shm_dir=SHM_DIR, fill="local",
                 comm=None):
        if fill not in FILLS:
            raise ValueError("fill must be one of %s, not %r" % (", ".join(FILLS), fill))
        t0 = time.time()
        self.fd = None
        self._pid = os.getpid()
        self._mutex = threading.RLock()   # close() against a signal's clean-up in another thread
        self._released = False
        self.packed, self.split, self.keep = os.path.abspath(packed), split, keep
        self.created = False
        self.read_bytes = 0   # bytes this process read from the packed set (shards; not the small indexes)
        self.fill_s = {}      # a distributed fill's read / exchange / check seconds on this rank
        comm = _mpi_comm(comm) if fill == "distributed" else None
        try:
            m, mine, nbytes = self._plan(packed, split, start, end, shm_dir)
        except Exception as e:
            if comm is None:
                raise
            m, mine, nbytes = None, None, 0
            self._agree(comm, "%s: %s" % (type(e).__name__, e))   # raises on every rank
        signals.at_signal(_release_on_signal)
        if comm is not None:
            self._agree(comm, None, (_content_key(m), split, self.start, self.end))
            self._fill_distributed(comm, nbytes, verify, shm_dir)
        lock = _lock(self.path + ".lock")
        try:
            if not os.path.exists(self.path):
                self._check_room(nbytes, shm_dir)
                _describe(lock, packed=self.packed, split=split, start=self.start, end=self.end, bytes=nbytes,
                          pid=os.getpid(), created=time.time())
                self._fill(mine, nbytes, verify)
                self.created = True
            self.fd = os.open(self.path, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_SH)
            _attached.add(self)
        except BaseException:
            if not os.path.exists(self.path):   # nothing made: leave no lock file behind
                _unlink(self.path + ".lock")
            raise
        finally:
            _unlock(lock)
        self.nbytes = nbytes
        self.mm = mmap.mmap(self.fd, nbytes, prot=mmap.PROT_READ) if nbytes else None
        self.buf = memoryview(self.mm) if nbytes else memoryview(b"")
        self.labels = self.index["label"].astype(np.int64)
        self.load_s = time.time() - t0
        atexit.register(self.close)   # detach (and unlink when last) even if never closed by hand

    def _plan(self, packed, split, start, end, shm_dir):
        """The manifest, the shards overlapping [start, end) and the bytes they hold; sets index and path."""
        m = open_packed(packed)
        if split not in m["splits"]:
            raise KeyError("%s has no %r split (has %s)" % (packed, split, ", ".join(m["splits"])))
        shards = m["splits"][split]["shards"]
        count = m["splits"][split]["count"]
        end = count if end is None else end
        self.start, self.end = start, end
        # the shards overlapping [start, end): all this process reads
        mine = [s for s in shards if s["first"] < end and s["first"] + s["count"] > start]
        self.index = self._read_index(mine, start, end)
        nbytes = int(self.index["length"].sum())
        key = hashlib.sha1(("%s|%s|%s|%d|%d" % (self.packed, _content_key(m), split, start, end)).encode()).hexdigest()
        self.path = os.path.join(shm_dir, "luatorch-data-%s" % key[:20])
        return m, mine, nbytes

    def _agree(self, comm, err, what=None):
        """Collective: raise FillError on every rank if any rank has an error (naming the first such rank), or
        if the ranks ask for different records (`what`)."""
        got = comm.allgather((err, what))
        bad = [(i, e) for i, (e, _) in enumerate(got) if e]
        if bad:
            raise FillError("distributed fill of the %s split: rank %d: %s" % (self.split, bad[0][0], bad[0][1]))
        if what is not None and len(set(w for _, w in got)) != 1:
            raise FillError("fill=distributed: the ranks do not all ask for the same records of the same packed set "
                            "(it is for policy replicate)")

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
        _filling.add(tmp)
        try:
            os.ftruncate(fd, nbytes)
            mm = mmap.mmap(fd, nbytes) if nbytes else None
            pos = 0
            for (s, lo, hi), (a, b) in zip(self._slices, self._byte_ranges()):
                path = os.path.join(self.packed, s["file"])
                whole = self._whole_shard(s, lo, hi, a, b)
                if verify and not whole:   # a part of a shard: its CRC is the whole file's, so read it once, whole
                    with open(path, "rb") as f:
                        data = f.read()
                    self.read_bytes += len(data)
                    self._check_crc(s, "%08x" % zlib.crc32(data))
                    if len(data) < b:
                        raise ChecksumError("%s: shard %s is truncated (%d of %d bytes)"
                                            % (self.packed, s["file"], len(data), b))
                    memoryview(mm)[pos:pos + b - a] = memoryview(data)[a:b]
                    pos += b - a
                    continue
                with open(path, "rb") as f:
                    f.seek(a)
                    n = _read_into(f, memoryview(mm)[pos:pos + b - a]) if b > a else 0
                self.read_bytes += n
                if n != b - a:
                    raise ChecksumError("%s: shard %s is truncated (%d of %d bytes)"
                                        % (self.packed, s["file"], _f_size(path), b))
                if verify and whole:
                    self._check_crc(s, "%08x" % zlib.crc32(memoryview(mm)[pos:pos + b - a]))
                pos += b - a
            if mm is not None:
                mm.close()
            os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            _unlink(tmp)
            raise
        finally:
            _filling.discard(tmp)
        os.close(fd)

    def _byte_ranges(self):
        """(first, end) byte of each of self._slices in its shard file."""
        out = []
        for s, lo, hi in self._slices:
            z = np.load(os.path.join(self.packed, s["index"]))
            out.append((int(z["offset"][lo]), int(z["offset"][hi - 1] + z["length"][hi - 1])) if hi > lo else (0, 0))
        return out

    @staticmethod
    def _whole_shard(s, lo, hi, a, b):
        return lo == 0 and hi == s["count"] and a == 0

    def _check_crc(self, s, crc):
        if crc != s["crc32"]:
            raise ChecksumError("%s: shard %s fails its checksum (crc32 %s, manifest %s); refusing to load it"
                                % (self.packed, s["file"], crc, s["crc32"]))

    def _fill_distributed(self, comm, nbytes, verify, shm_dir):
        """Make the segment of every host that lacks it, reading each byte from the packed set once over all
        hosts; returns once this rank's host has it (or raises FillError on every rank)."""
        from mpi4py import MPI
        host = comm.Split(self._group(comm), comm.Get_rank())
        lead = host.Get_rank() == 0
        leaders = comm.Split(0 if lead else MPI.UNDEFINED, comm.Get_rank())
        err = None
        if lead:
            lock = _lock(self.path + ".lock")
            try:
                have = os.path.exists(self.path)
                fillers = leaders.Split(MPI.UNDEFINED if have else 0, leaders.Get_rank())
                leaders.Free()
                if not have:
                    _describe(lock, packed=self.packed, split=self.split, start=self.start, end=self.end,
                              bytes=nbytes, pid=os.getpid(), created=time.time(), fill="distributed")
                    try:
                        err = self._exchange(fillers, comm.Get_rank(), nbytes, verify, shm_dir)
                    finally:
                        fillers.Free()
                    self.created = err is None
            finally:
                if not os.path.exists(self.path):
                    _unlink(self.path + ".lock")
                _unlock(lock)
        err = host.bcast(err, root=0)
        host.Free()
        if err:
            raise FillError(err)

    def _group(self, comm):
        """The lowest world rank among those that see this rank's segment file: probe files beside it."""
        tag = comm.bcast(os.urandom(6).hex() if comm.Get_rank() == 0 else None, root=0)
        d, base = os.path.split(self.path)
        mine = os.path.join(d, "luatorch-probe-%s-%s-%d" % (tag, base[len("luatorch-data-"):], comm.Get_rank()))
        try:
            try:
                with open(mine, "w"):
                    pass
                err = None
            except OSError as e:
                err = "cannot write the in-memory store's folder %s: %s" % (d, e.strerror)
            self._agree(comm, err)   # also the barrier after which every probe is there
            prefix = os.path.basename(mine).rsplit("-", 1)[0] + "-"
            seen = [int(n[len(prefix):]) for n in os.listdir(d) if n.startswith(prefix)]
            comm.Barrier()
        finally:
            _unlink(mine)
        return min(seen)

    def _exchange(self, fillers, world_rank, nbytes, verify, shm_dir):
        """One filler's part: read 1/N of the bytes, Allgatherv the rest, check the CRCs, publish the segment.
        Returns None, or the error message every filler gets (the first failing rank's)."""
        n, r = fillers.Get_size(), fillers.Get_rank()
        lo, hi = nbytes * r // n, nbytes * (r + 1) // n   # my bytes of the segment
        tmp = self.path + ".tmp%d" % os.getpid()
        _filling.add(tmp)
        fd, mm, err = None, None, None
        t0 = time.perf_counter()
        try:
            try:
                self._check_room(nbytes, shm_dir)
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                os.ftruncate(fd, nbytes)
                mm = mmap.mmap(fd, nbytes) if nbytes else None
                pos = 0
                for k, ((s, slo, shi), (a, b)) in enumerate(zip(self._slices, self._byte_ranges())):
                    path = os.path.join(self.packed, s["file"])
                    if verify and not self._whole_shard(s, slo, shi, a, b) and k % n == r:
                        self.read_bytes += os.path.getsize(path)
                        self._check_crc(s, crc32_file(path))
                    x, y = max(lo, pos), min(hi, pos + b - a)   # my part of this slice
                    if y > x:
                        with open(path, "rb") as f:
                            f.seek(a + x - pos)
                            got = _read_into(f, memoryview(mm)[x:y])
                        self.read_bytes += got
                        if got != y - x:
                            raise ChecksumError("%s: shard %s is truncated (%d of %d bytes)"
                                                % (self.packed, s["file"], _f_size(path), b))
                    pos += b - a
            except Exception as e:
                err = "%s: %s" % (type(e).__name__, e)
            t_read = time.perf_counter()
            errs = fillers.allgather(err)
            bad = [(i, e) for i, e in enumerate(errs) if e]
            if bad:
                who = fillers.allgather(world_rank)
                return "distributed fill of the %s split: rank %d: %s" % (self.split, who[bad[0][0]], bad[0][1])
            t_wait = time.perf_counter()   # the others' reads end here
            _allgather_bytes(fillers, mm, [nbytes * i // n for i in range(n + 1)])
            t_exchange = time.perf_counter()
            if verify:   # every filler checks every shard on the bytes it now holds: the same verdict on all
                pos = 0
                for (s, slo, shi), (a, b) in zip(self._slices, self._byte_ranges()):
                    if self._whole_shard(s, slo, shi, a, b):
                        crc = "%08x" % zlib.crc32(memoryview(mm)[pos:pos + b - a])
                        if crc != s["crc32"]:
                            return ("distributed fill of %s: shard %s fails its checksum (crc32 %s, manifest %s); "
                                    "refusing to load it" % (self.packed, s["file"], crc, s["crc32"]))
                    pos += b - a
            self.fill_s = dict(read=t_read - t0, wait=t_wait - t_read, exchange=t_exchange - t_wait,
                               check=time.perf_counter() - t_exchange)
            mm.close() if mm is not None else None
            mm = None
            os.rename(tmp, self.path)
            return None
        finally:
            if mm is not None:
                mm.close()
            if fd is not None:
                os.close(fd)
            _unlink(tmp)
            _filling.discard(tmp)

    def __len__(self):
        return self.end - self.start

    def get(self, i):
        """Record i (0-based, relative to `start`) as a memoryview into the shared segment."""
        o = int(self.index["offset"][i])
        return self.buf[o:o + int(self.index["length"][i])]

    def close(self):
        with self._mutex:
            if self.fd is None or os.getpid() != self._pid:   # forked workers leave it to their parent
                return
            atexit.unregister(self.close)
            _attached.discard(self)
            try:
                self.buf.release()
                if self.mm is not None:
                    self.mm.close()
            except BufferError:   # a record view is still alive somewhere: the mapping goes with it
                pass
            self._unlink_if_last()
            os.close(self.fd)
            self.fd = None

    def _unlink_if_last(self, timeout=None):
        """Unlink the segment when no other process holds it (unless keep). The mapping stays valid, so
        this is also safe from a signal's clean-up while workers still read records."""
        if not self._mutex.acquire(timeout=-1 if timeout is None else timeout):
            return
        try:
            if self.fd is None or self.keep or self._released or os.getpid() != self._pid:
                return
            lock = _lock(self.path + ".lock", timeout)
            if lock is None:
                return
            try:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if _same_file(self.path, self.fd):
                        _unlink(self.path, self.path + ".lock")
                except BlockingIOError:
                    # another process holds it and unlinks it when it is the last. Let go of ours before the
                    # lock file, so holders that leave at once (a signal to every rank) see each other go
                    # (Linux already drops it in the failed conversion; flock(2) does not promise that)
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                self._released = True
            finally:
                _unlock(lock)
        finally:
            self._mutex.release()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _f_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def _read_into(f, view):
    """readinto until `view` is full or the file ends (a network file system may return short reads)."""
    got = 0
    while got < len(view):
        k = f.readinto(view[got:])
        if not k:
            break
        got += k
    return got


def _allgather_bytes(comm, mm, bounds):
    """Rank i holds mm[bounds[i]:bounds[i+1]]; afterwards every rank holds all of it. In rounds of at most
    EXCHANGE_CHUNK bytes per rank, through a staging buffer (32-bit counts and displacements)."""
    from mpi4py import MPI
    n = comm.Get_size()
    if n == 1 or mm is None:
        return
    buf = np.frombuffer(mm, np.uint8)
    sizes = [bounds[i + 1] - bounds[i] for i in range(n)]
    stage = np.empty(n * EXCHANGE_CHUNK, np.uint8)
    me = comm.Get_rank()
    for off in range(0, max(sizes), EXCHANGE_CHUNK):
        counts = [max(0, min(EXCHANGE_CHUNK, sz - off)) for sz in sizes]
        displs = [i * EXCHANGE_CHUNK for i in range(n)]
        send = buf[bounds[me] + off:bounds[me] + off + counts[me]]
        comm.Allgatherv([send, MPI.BYTE], [stage, counts, displs, MPI.BYTE])
        for i in range(n):
            if i != me and counts[i]:
                buf[bounds[i] + off:bounds[i] + off + counts[i]] = stage[displs[i]:displs[i] + counts[i]]


def _content_key(m):
    """What identifies a packed set's content: its shard CRCs."""
    return ",".join(s["crc32"] for sp in m["splits"].values() for s in sp["shards"])


def _describe(lock_fd, **what):
    """Record in the segment's lock file what the segment holds (for `luatorch data list`)."""
    data = json.dumps(what).encode()
    os.ftruncate(lock_fd, 0)
    os.pwrite(lock_fd, data, 0)


def _description(lock_path):
    try:
        with open(lock_path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _holders(paths):
    """{path: [pids]} of the processes with an fd open on each path (those whose /proc we may read)."""
    want = {os.path.realpath(p): p for p in paths}
    out = {p: [] for p in paths}
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        seen = set()
        for fd in fds:
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target in want and target not in seen:
                seen.add(target)
                out[want[target]].append(pid)
    return out


class Segment:
    """One of our files in the shm folder: a segment, one being (or left half) filled, or a lone lock file."""

    def __init__(self, path, kind, nbytes, state, info, holders=()):
        self.path, self.kind, self.nbytes, self.state, self.info = path, kind, nbytes, state, info
        self.holders = list(holders)

    @property
    def removable(self):
        return self.state == "unused"


def _base(name):
    return name.split(".", 1)[0]


def segments(shm_dir=SHM_DIR, clean=False, created_by=None):
    """Our files in `shm_dir` and whether a live process uses each; with `clean`, unlink those nobody uses.
    With `created_by` (pids), only the segments those processes made (e.g. one job's ranks).

    Judged under each segment's lock file, as Store creates, attaches and closes them: a segment is in use
    while some process holds its shared flock (a live process attached to it; the kernel drops a dead one's
    flock), a `.tmp<pid>` is being filled while its filler holds the lock file; neither is ever touched."""
    try:
        names = sorted(n for n in os.listdir(shm_dir) if n.startswith("luatorch-data-"))
    except FileNotFoundError:
        return []
    found = []
    for base in sorted({_base(n) for n in names}):
        path = os.path.join(shm_dir, base)
        if created_by is not None and _description(path + ".lock").get("pid") not in created_by:
            continue
        had_lock = os.path.exists(path + ".lock")
        try:
            lock = _lock(path + ".lock", timeout=0)
        except PermissionError:   # another user's: not ours to judge
            found += [Segment(os.path.join(shm_dir, n), "segment", os.path.getsize(os.path.join(shm_dir, n)),
                              "another user's", {}) for n in names if n == base]
            continue
        info = _description(path + ".lock")
        try:
            left = 0   # files of this segment that stay
            for n in names:
                if _base(n) != base or n.endswith(".lock"):
                    continue
                p = os.path.join(shm_dir, n)
                try:
                    size = os.path.getsize(p)
                except FileNotFoundError:
                    continue
                kind = "fill" if ".tmp" in n else "segment"
                if lock is None:   # a Store is filling, attaching or closing it right now
                    state = "being filled" if kind == "fill" else "busy"
                elif kind == "fill":
                    state = "unused"   # its lock file is free: the filler is gone
                else:
                    state = "in use" if _held(p) else "unused"
                found.append(Segment(p, kind, size, state, info))
                if clean and state == "unused":
                    _unlink(p)
                else:
                    left += 1
            if lock is not None and not had_lock:   # made by _lock just now: leave things as they were
                _unlink(path + ".lock")
            elif lock is not None and not left:   # nothing left that the lock file guards
                if not any(s.path.startswith(path) for s in found):
                    found.append(Segment(path + ".lock", "lock", os.path.getsize(path + ".lock"), "unused", info))
                if clean:
                    _unlink(path + ".lock")
        finally:
            if lock is not None:
                _unlock(lock)
    holders = _holders([s.path for s in found if s.state != "unused"])
    for s in found:
        s.holders = holders.get(s.path, [])
    return found


def _held(path):
    """Whether some process holds the segment's shared flock (call holding its lock file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def clean_segments(shm_dir=SHM_DIR, dry_run=False, created_by=None):
    """Unlink what no live process uses (segments left by `keep=True` or by killed processes, half-filled
    segments of killed fillers, lone lock files); returns those Segments (with `dry_run`, only lists them).

    `created_by`: only what these pids made. A launcher can pass its ranks' pids once the job has ended:
    an MPI launcher SIGKILLs the other ranks when one dies, and SIGKILL runs no clean-up."""
    return [s for s in segments(shm_dir, clean=not dry_run, created_by=created_by) if s.removable]


def remove_unused_segments(shm_dir=SHM_DIR):
    """Unlink the data segments no process holds; returns their paths (see clean_segments)."""
    return [s.path for s in clean_segments(shm_dir) if s.kind == "segment"]
