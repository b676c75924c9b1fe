"""Batches from workers into a bounded ring of preallocated buffers.

    ld = ds.loader("train", batch_size=32, rank=r, world=w, seed=s, workers=4)
    ld.set_epoch(e)
    for x, y in ld:     # x: B x C x H x W float32 view into a ring slot, y: int64 1-based labels
        ...             # valid until the next step: only then is the slot handed back to the workers

Workers (threads, or forked processes with `mode="processes"`) take whole batches, as
fb.resnet.torch's threads did: fetch each record (from the in-memory store, or with `source="files"`
open/read the original file, the baseline), decode, transform with the per-sample random stream
`sample_rng(seed, epoch, index)`, and write into the slot. The ring has `slots` buffers
(default workers + 2: one held by the consumer, the others being filled); nothing is allocated per
batch. The slots an epoch frees at its end are filled with the next epoch's first batches (used when that
epoch is the next one asked for), so that an epoch's first batch does not wait for the workers either.
The time the consumer waits for its next batch is measured (`stats()["data_wait_s"]`).

ImageNet-kind JPEG records go through the C fast path (pytorch_bridge.data.fastpath: decode of the
crop's rows and columns, resize and colour straight into the slot, GIL released) unless `fast=False`;
what it does not take (grey, CMYK, PNG, truncated or corrupt records) goes the Pillow + numpy way.
A file that cannot be read (missing, unreadable) is replaced like a corrupt one; a read error that means the
file system itself is gone (ENOTCONN, EIO, ...: a network mount whose server or link is down) ends the
loader with the file's name. `fill="distributed"` (policy replicate): see store.py.

stats(): images, batches, epochs, data_wait_s (consumer blocked), fetch_s / decode_s / transform_s (summed
over workers; transform_s = scale_s + colour_s + plan_s on the fast path), scale_s (crop + resize) and
colour_s (jitter, lighting, normalize, flip) of the fast path, plan_s (its draws and call in Python),
copy_s (numpy path: into the slot), fast (images through the fast path), corrupt (records replaced by
gray images), load_s (store load), ring_s (touching the ring's pages once, at construction), store_bytes, ring_bytes, store_created_here, workers, mode, source,
policy, slots.
"""
import atexit
import errno
import mmap
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
import weakref

import numpy as np

from . import sampler
from .transforms import sample_rng

MODES = ("threads", "processes")
# read errors that mean the file system is gone (sshfs/NFS server or link down), not that one file is bad
GONE = {errno.ENOTCONN, errno.ECONNABORTED, errno.ECONNRESET, errno.ETIMEDOUT, errno.EHOSTDOWN, errno.EHOSTUNREACH,
        errno.ENETDOWN, errno.ENETUNREACH, errno.ESTALE, errno.EIO}
# Loaders whose workers run, closed at exit before the interpreter frees anything: a worker thread inside C
# (the JPEG path, numpy) runs on without the GIL, and would write into a ring already freed.
_running = weakref.WeakSet()


@atexit.register
def _close_running_loaders():
    for loader in list(_running):
        try:
            loader.close()
        except Exception:
            pass


PIECES = ("fetch_s", "decode_s", "transform_s", "scale_s", "colour_s", "plan_s", "copy_s")


def _exit_with(parent_sentinel):
    """In a worker process: exit once the parent process is gone (its sentinel becomes readable)."""
    from multiprocessing.connection import wait
    wait([parent_sentinel])
    os._exit(1)


class Loader:
    def __init__(self, ds, split, batch_size, rank=0, world=1, seed=0, workers=2, policy="partition",
                 source="memory", shuffle=True, drop_last=False, mode="threads", slots=None, train=None,
                 keep=False, verify=True, log=None, root=None, shm_dir=None, fast=True, fill="local"):
        if mode not in MODES:
            raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
        if source not in ("memory", "files"):
            raise ValueError("source must be 'memory' or 'files', not %r" % source)
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if fill == "distributed" and (policy != "replicate" or source != "memory"):
            raise ValueError("fill='distributed' fills replicated in-memory stores (policy='replicate', "
                             "source='memory'); with partition each host already reads only its own part")
        self.ds, self.split, self.batch_size = ds, split, int(batch_size)
        self.rank, self.world, self.seed = rank, world, seed
        self.policy, self.source, self.shuffle, self.drop_last = policy, source, shuffle, drop_last
        self.mode, self.workers = mode, max(1, int(workers))
        self.n = ds.size(split)
        sampler.epoch_order(0, rank, world, 0, 0, policy)  # argument checks
        self.transform = ds.transform(split, train)
        self.decode = ds.decode
        self.fast = ds.fast_path(split, train) if fast else None
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.epoch = 1
        self.store = None
        t0 = time.time()
        lo, hi = sampler.rank_range(self.n, world, rank) if policy == "partition" else (0, self.n)
        self.base = lo
        if source == "memory":
            from .store import SHM_DIR, Store
            self.store = Store(ds.path, split, lo, hi, keep=keep, verify=verify, shm_dir=shm_dir or SHM_DIR, fill=fill)
            self.labels = self.store.labels
        else:
            if ds.encoding != "file":
                raise ValueError("source='files' needs a packed image folder: %s was packed from %s arrays"
                                 % (ds.path, ds.kind))
            idx = ds.index(split)
            self.names, self.labels, self.base = idx["name"], idx["label"].astype(np.int64), 0
            self.root = root or ds.manifest["source_root"]   # `root`: the original folder, if moved
        self.load_s = time.time() - t0
        self.sizes = {k: ds.index(split)[k] for k in ("width", "height")} if ds.encoding == "file" else None
        c, h, w = ds.image_shape
        self.nslots = int(slots or self.workers + 2)
        xbytes = self.nslots * self.batch_size * c * h * w * 4
        ybytes = self.nslots * self.batch_size * 8
        if mode == "processes":  # shared anonymous memory, inherited by the forked workers
            self._mm = mmap.mmap(-1, xbytes + ybytes)
            self.x = np.frombuffer(self._mm, np.float32, xbytes // 4).reshape(self.nslots, self.batch_size, c, h, w)
            self.y = np.frombuffer(self._mm, np.int64, ybytes // 8, xbytes).reshape(self.nslots, self.batch_size)
        else:
            self._mm = None
            self.x = np.zeros((self.nslots, self.batch_size, c, h, w), np.float32)
            self.y = np.zeros((self.nslots, self.batch_size), np.int64)
        # Touch every page of the ring now: its first writes would otherwise fault in fresh (huge) pages while
        # the first batches are written, 0.2-0.5 ms per image on this VM, where a long run pays it once
        t1 = time.time()
        self.x.fill(0)
        self.y.fill(0)
        self.ring_s = time.time() - t1
        self._procs = []
        self._inflight = 0
        self._ahead = None   # the next epoch's batches already given to the workers (__iter__)
        self._logged = set()
        self._stats = dict(images=0, batches=0, data_wait_s=0.0, corrupt=0, load_s=self.load_s, epochs=0,
                           fast=0, **{k: 0.0 for k in PIECES})

    # -- per-sample work (runs in the workers) --

    def _fetch(self, gi):
        if self.store is not None:
            return self.store.get(gi - self.base)
        with open(os.path.join(self.root, str(self.names[gi])), "rb") as f:
            return f.read()

    def _fill(self, slot, indices, epoch):
        st = dict.fromkeys(PIECES, 0.0)
        st["fast"] = 0
        bad = []
        indices = [int(gi) for gi in indices]
        records, errors = [], []
        for j, gi in enumerate(indices):
            t0 = time.perf_counter()
            data, err = self._fetch_or_error(gi)
            st["fetch_s"] += time.perf_counter() - t0
            records.append(data)
            errors.append(err)
            self.y[slot, j] = self.labels[gi - self.base]
        done = [False] * len(indices)
        if self.fast is not None:
            t1 = time.perf_counter()
            c = [0.0, 0.0, 0.0]   # the C call's decode, scale, colour seconds
            status = self.fast.batch(records, self.seed, epoch, indices, self.x[slot], c)
            if status is None:   # seeds the C stream does not take: sample by sample, uniforms from numpy
                status = [0 if d is not None and self.fast.sample(d, sample_rng(self.seed, epoch, gi), self.x[slot, j], c)
                          else 1 for j, (gi, d) in enumerate(zip(indices, records))]
            done = [bool(s == 0) for s in status]
            st["decode_s"] += c[0]
            st["scale_s"] += c[1]
            st["colour_s"] += c[2]
            st["plan_s"] += time.perf_counter() - t1 - sum(c)
            st["fast"] += int(sum(done))
        for j, gi in enumerate(indices):
            if done[j]:
                continue
            data, err = records[j], errors[j]
            t1 = time.perf_counter()
            img = None
            if data is not None:
                try:
                    img = self.decode(data)
                except Exception as e:  # corrupt or truncated: replaced below, label kept
                    err = "%s: %s" % (type(e).__name__, e)
            if img is None:
                img = self._gray(gi)
                bad.append((gi, err))
            t2 = time.perf_counter()
            sample = self.transform(img, sample_rng(self.seed, epoch, gi))
            t3 = time.perf_counter()
            self.x[slot, j] = sample
            st["decode_s"] += t2 - t1
            st["transform_s"] += t3 - t2
            st["copy_s"] += time.perf_counter() - t3
        st["transform_s"] += st["scale_s"] + st["colour_s"] + st["plan_s"]
        return st, bad

    def _fetch_or_error(self, gi):
        """(record, None), or (None, what went wrong) for a file that cannot be read; raises when the file
        system itself is gone."""
        try:
            return self._fetch(gi), None
        except OSError as e:
            if e.errno in GONE:   # not this file but the file system: every read after it would fail too
                raise OSError(e.errno, "cannot read %s record %d (%s): %s; the file system holding it is "
                              "unreachable (a network file system whose server or link went away?)"
                              % (self.split, gi + 1, os.path.join(self.root, str(self.names[gi])),
                                 os.strerror(e.errno))) from None
            return None, "%s: %s" % (type(e).__name__, e)

    def _gray(self, gi):
        c = self.ds.image_shape[0]
        if self.sizes is not None and self.sizes["width"][gi] > 0:
            h, w = int(self.sizes["height"][gi]), int(self.sizes["width"][gi])
        else:
            h, w = self.ds.image_shape[1:]
        return np.full((c, h, w), 0.5 if self.ds.kind == "imagenet" else 127.5, np.float32)

    def _work(self, jobs, results):
        while True:
            job = jobs.get()
            if job is None:
                return
            k, slot, indices, epoch = job
            try:
                st, bad = self._fill(slot, indices, epoch)
                results.put(((epoch, k), slot, len(indices), st, bad, None))
            except BaseException as e:  # reported to the consumer, which raises it
                results.put(((epoch, k), slot, 0, {}, [], "%s: %s" % (type(e).__name__, e)))

    def _proc_main(self, jobs, results):
        # Ctrl-C reaches the whole process group: the parent handles it (and ends us); and when the parent
        # dies without ending us (SIGKILL, or a signal's default action), so do we, at once: an orphan
        # blocked on the job queue would keep the store's memory mapped forever
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        parent = mp.parent_process()
        if parent is not None:
            threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True).start()
        try:
            from threadpoolctl import threadpool_limits
            threadpool_limits(1)   # one worker process = one core
        except Exception:
            pass
        self._work(jobs, results)

    def start(self):
        """Start the workers now (else on the first iteration), e.g. to keep fork time out of a measurement."""
        self._start()

    def _start(self):
        if self._procs:
            return
        self._pid = os.getpid()
        _running.add(self)
        if self.mode == "processes":
            ctx = mp.get_context("fork")
            self._jobs, self._results = ctx.Queue(), ctx.Queue()
            for _ in range(self.workers):
                p = ctx.Process(target=self._proc_main, args=(self._jobs, self._results), daemon=True)
                p.start()
                self._procs.append(p)
        else:
            self._jobs, self._results = queue.Queue(), queue.Queue()
            for _ in range(self.workers):
                t = threading.Thread(target=self._work, args=(self._jobs, self._results), daemon=True)
                t.start()
                self._procs.append(t)

    # -- the consumer side --

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        return sampler.num_batches(self.n, self.batch_size, self.world, self.drop_last)

    def batches(self):
        """This epoch's batches of split-global 0-based indices."""
        return sampler.epoch_batches(self.n, self.batch_size, self.rank, self.world, self.seed, self.epoch,
                                     self.policy, self.shuffle, self.drop_last)

    def _drain(self, timeout=None):
        """Wait for every job in flight. With `timeout` (seconds per result), give up when none comes: the
        count can be one too high after a KeyboardInterrupt between a result and its count."""
        while self._inflight:
            try:
                self._results.get(timeout=timeout)
            except queue.Empty:
                self._inflight = 0
                return
            self._inflight -= 1

    def __iter__(self):
        # Batches of the next epoch go into the slots this one frees at its end (prefetch across epochs), so
        # that its first batch does not wait for the workers to start over. They count only when that epoch
        # is asked for next and this one was read to its last batch; otherwise (another epoch, an iteration
        # abandoned early) every job still in flight is waited for and dropped.
        self._start()
        batches, epoch = self.batches(), self.epoch
        ahead, self._ahead = self._ahead, None
        # results by (epoch, batch): the next epoch's come in while this one is read, and wait here for it
        done, submitted = {}, {}
        if ahead is not None and ahead["complete"] and ahead["epoch"] == epoch:
            submitted, done = ahead["slots"], ahead["done"]
        else:
            self._drain()

        def submit(k, slot, ks=batches, ep=epoch):
            self._jobs.put((k, slot, ks[k], ep))
            self._inflight += 1

        free = [s for s in range(self.nslots) if s not in submitted.values()]
        for k in range(len(submitted), min(self.nslots, len(batches))):
            submit(k, free.pop(0))
        nxt = self._next_epoch(epoch)
        for k in range(len(batches)):
            t0 = time.perf_counter()
            while (epoch, k) not in done:
                r = self._results.get()
                self._inflight -= 1
                done[r[0]] = r
            self._stats["data_wait_s"] += time.perf_counter() - t0
            _, slot, n, st, bad, err = done.pop((epoch, k))
            if err:
                self._drain()
                raise RuntimeError("data loader worker failed on batch %d: %s" % (k + 1, err))
            self._account(n, st, bad)
            if k == len(batches) - 1:
                nxt["complete"], nxt["done"] = True, done
                self._ahead = nxt
                self._stats["epochs"] += 1
            yield self.x[slot, :n], self.y[slot, :n]
            # the consumer is done with this slot: this epoch's batch nslots on, or the next epoch's
            if k + self.nslots < len(batches):
                submit(k + self.nslots, slot)
            elif len(nxt["slots"]) < min(self.nslots, len(nxt["batches"])) and k < len(batches) - 1:
                j = len(nxt["slots"])
                nxt["slots"][j] = slot
                submit(j, slot, nxt["batches"], nxt["epoch"])

    def _next_epoch(self, epoch):
        """What this epoch's end prefetches: epoch + 1's batches, none submitted yet."""
        ks = sampler.epoch_batches(self.n, self.batch_size, self.rank, self.world, self.seed, epoch + 1,
                                   self.policy, self.shuffle, self.drop_last)
        return {"epoch": epoch + 1, "batches": ks, "slots": {}, "complete": False}

    def _account(self, n, st, bad):
        s = self._stats
        s["images"] += n
        s["batches"] += 1
        for key, v in st.items():
            s[key] += v
        for gi, msg in bad:
            s["corrupt"] += 1
            if gi not in self._logged:
                self._logged.add(gi)
                name = self.ds.index(self.split)["name"][gi] if self.ds.encoding == "file" else "#%d" % gi
                self.log("data: %s record %d (%s) cannot be decoded (%s); using a gray image, label kept"
                         % (self.split, gi + 1, name, msg))

    def stats(self):
        s = dict(self._stats)
        s["workers"], s["mode"], s["source"], s["policy"] = self.workers, self.mode, self.source, self.policy
        s["slots"], s["store_bytes"] = self.nslots, (self.store.nbytes if self.store is not None else 0)
        s["ring_s"] = self.ring_s
        s["store_created_here"] = bool(self.store is not None and self.store.created)
        s["ring_bytes"] = int(self.x.nbytes + self.y.nbytes)
        return s

    def close(self):
        self._ahead = None
        if self._procs and self._pid == os.getpid():   # a forked worker leaves them to its parent
            _running.discard(self)
            self._drain(timeout=10)   # a worker stuck on an unreachable file system must not hold up exit
            for _ in self._procs:
                self._jobs.put(None)
            deadline = time.time() + 10
            for p in self._procs:
                p.join(timeout=max(0.0, deadline - time.time()))
            self._procs = []
        if self.store is not None:
            self.store.close()
            self.store = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
