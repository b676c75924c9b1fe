"""The Python side of a Lua training run: data, rank/world, progress bar, log and plots.

The Lua trainer (lua/luatorch/train) reaches this object as `package.loaded['luatorch.host']` and
calls its methods with `.` (bound methods, so no self from Lua):

    host.dataset(spec) -> {kind=, nClasses=, channels=, height=, width=, nTrain=, nVal=}
    host.loader(split, batch, workers, seed, source, policy[, fill]) -> .size(), .set_epoch(e), .start(), .next(), .stop()
    host.epoch_start(epoch, nEpochs, nIters); host.progress(n, total, loss, top1, waitFraction)
    host.log(record)      -- one JSON line per epoch in <save>/log.jsonl, and the plots beside it

claim_run_folder(argv) is the launcher's check that a new run does not write into another run's folder.
"""
import json
import math
import os
import re
import sys
import time


def _kind(ds):
    kind = getattr(ds, "kind", None)
    if kind:
        return kind
    c, h, w = ds.image_shape
    if h == 28:
        return "mnist"
    if h == 32:
        return "cifar10" if ds.num_classes <= 10 else "cifar100"
    return "imagenet"


class LuaLoader:
    """A pytorch_bridge.data loader as the Lua DataLoader sees it: batches as zero-copy tensors."""

    def __init__(self, rt, loader):
        self.rt = rt
        self.loader = loader
        self._it = None

    def size(self):
        return len(self.loader)

    def set_epoch(self, epoch):
        self._it = None
        self.loader.set_epoch(int(epoch))

    def start(self):
        self._it = iter(self.loader)

    def next(self):
        if self._it is None:
            self.start()
        try:
            x, y = next(self._it)
        except StopIteration:
            self._it = None
            return None
        return self.rt.from_numpy(x), self.rt.from_numpy(y)

    def stop(self):
        # the iterator is dropped; the loader restarts cleanly at the next set_epoch/start
        self._it = None


class Progress:
    """One line on stderr, redrawn in place: epoch, bar, rate, loss, top-1, data wait."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = 0.0

    def start(self, epoch, n_epochs, n_iters):
        self.epoch, self.n_epochs, self.n_iters = epoch, n_epochs, n_iters
        self.t0 = time.time()
        self.last = 0.0

    def update(self, n, total, loss, top1, wait, images):
        now = time.time()
        if n < total and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        width = 24
        done = int(width * n / max(1, total))
        rate = images / max(1e-9, now - self.t0)
        line = "epoch %d/%d [%s%s] %d/%d  %.0f img/s  loss %.4f  top1 %.2f%%  data wait %.1f%%" % (
            self.epoch, self.n_epochs, "=" * done, "." * (width - done), n, total, rate, loss, top1, 100 * wait)
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        if self.tty and n >= total:
            self.stream.write("\n")
        self.stream.flush()


class TrainHost:
    def __init__(self, rt, rank=0, world=1, save_dir="checkpoints", quiet=False):
        self.rt = rt
        self.rank = rank
        self.world = world
        self.save_dir = save_dir
        self.quiet = quiet or rank != 0
        self._ds = None
        self._bar = Progress()
        self._batch = 0
        self.records = []

    def install(self):
        self.rt.globals.package.loaded["luatorch.host"] = self
        return self

    def set_save(self, path):
        self.save_dir = str(path)

    def check_save(self, save, resume, overwrite, test_only):
        """For train.main, once its options are parsed: None, or why this run must not write into `save`
        (check_run_folder; with `overwrite`, the old run's files go now). `luatorch train` refused a used
        folder before its ranks started (claim_run_folder); `luatorch th train.lua` is checked only here."""
        if test_only:
            return None
        return _job_verdict(str(save), str(resume), bool(overwrite))[0]

    def dataset(self, spec):
        from pytorch_bridge.data import open_dataset

        self._ds = open_dataset(str(spec))
        ds = self._ds
        c, h, w = ds.image_shape
        return self.rt.table_from({"kind": _kind(ds), "nClasses": ds.num_classes, "channels": c, "height": h,
                                   "width": w, "nTrain": ds.size("train"), "nVal": ds.size("val")})

    def loader(self, split, batch, workers, seed, source, policy, fill="local"):
        if self._ds is None:
            raise RuntimeError("host.loader: call host.dataset(spec) first")
        train = str(split) == "train"
        ld = self._ds.loader(str(split), batch_size=int(batch), rank=self.rank, world=self.world, seed=int(seed),
                             workers=int(workers), policy=str(policy), source=str(source), shuffle=train,
                             fill=str(fill or "local"))
        self._batch = int(batch)
        return LuaLoader(self.rt, ld)

    def epoch_start(self, epoch, n_epochs, n_iters):
        self._bar.start(int(epoch), int(n_epochs), int(n_iters))

    def progress(self, n, total, loss, top1, wait):
        if not self.quiet:
            self._bar.update(int(n), int(total), float(loss), float(top1), float(wait),
                                  int(n) * self._batch * self.world)

    def log(self, record):
        rec = {str(k): (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in record.items()}
        self.records.append(rec)
        if self.rank != 0:
            return
        os.makedirs(self.save_dir, exist_ok=True)
        with open(os.path.join(self.save_dir, "log.jsonl"), "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
        if not self.quiet:
            print("epoch %s  train loss %.4f  val top-1 %.2f%%  top-5 %.2f%%  %.0f img/s  %.1f s" % (
                rec.get("epoch"), rec.get("train_loss") or float("nan"), rec.get("val_top1") or 0.0,
                rec.get("val_top5") or 0.0, rec.get("images_per_s") or 0.0, rec.get("seconds") or 0.0),
                file=sys.stderr, flush=True)
        plot_log(os.path.join(self.save_dir, "log.jsonl"), self.save_dir)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def plot_log(log_path, out_dir):
    """loss.svg, accuracy.svg and time.svg (per-epoch time breakdown) from a run's log.jsonl."""
    from run.svgplot import line_plot, stacked_bars

    recs = [r for r in read_log(log_path) if r.get("epoch", 0) >= 1]
    if not recs:
        return
    ep = [r["epoch"] for r in recs]
    line_plot({"train": list(zip(ep, [r.get("train_loss") for r in recs])),
               "val": list(zip(ep, [r.get("val_loss") for r in recs]))},
              os.path.join(out_dir, "loss.svg"), "loss", "epoch", "cross-entropy")
    line_plot({"train top-1": list(zip(ep, [r.get("train_top1") for r in recs])),
               "val top-1": list(zip(ep, [r.get("val_top1") for r in recs])),
               "val top-5": list(zip(ep, [r.get("val_top5") for r in recs]))},
              os.path.join(out_dir, "accuracy.svg"), "accuracy", "epoch", "accuracy", ycap=100, yunit="%")
    parts = {k: [r.get("time_" + k) or 0.0 for r in recs] for k in ("data", "compute", "allreduce", "update")}
    parts["validation"] = [r.get("val_seconds") or 0.0 for r in recs]
    stacked_bars([str(e) for e in ep], parts, os.path.join(out_dir, "time.svg"), "time per epoch", "seconds")


# What a training run writes into its -save folder (lua/luatorch/train/checkpoints.lua, TrainHost.log); *.tmp is a
# checkpoint caught being written (checkpoints.saveAtomic). The plots alone do not make a run.
RUN_RECORD = re.compile(r"(log\.jsonl|latest\.t7|model_best\.t7|model_\d+\.t7|optimState_\d+\.t7)(\.tmp)?\Z")
PLOTS = ("loss.svg", "accuracy.svg", "time.svg")
DEFAULT_SAVE = "checkpoints"  # lua/luatorch/train/opts.lua's -save default


def run_files(save):
    """(records, plots): the names of a run's checkpoints and log in folder `save`, and of its plots."""
    try:
        names = sorted(os.listdir(save))
    except OSError:  # missing, or unreadable (then the run's own save fails, saying why)
        return [], []
    return [n for n in names if RUN_RECORD.match(n)], [n for n in names if n in PLOTS]


def describe_run(save, records):
    """How far the run in `save` got and which file says so: "epoch 2 of 2, log.jsonl"."""
    try:
        if "log.jsonl" in records:
            epochs = [r for r in read_log(os.path.join(save, "log.jsonl")) if r.get("epoch", 0) >= 1]
            if epochs:
                last = epochs[-1]
                total = " of %d" % last["n_epochs"] if last.get("n_epochs") else ""
                return "epoch %d%s, log.jsonl" % (last["epoch"], total)
        if "latest.t7" in records:
            from pytorch_bridge import t7

            return "epoch %d, latest.t7" % t7.load(os.path.join(save, "latest.t7"))["epoch"]
    except Exception:  # noqa: BLE001 -- a damaged file still marks the folder as used: name the files instead
        pass
    return ", ".join(records[:3]) + (", ..." if len(records) > 3 else "")


def check_run_folder(save, resume=None, overwrite=False, delete=True):
    """None if a training run may write into `save`, else why not (one line). A run continuing the run in
    `save` (resume is save) may; a new one may if `save` holds no run's files, or with `overwrite`: then
    those files (and only those) are deleted first, unless not `delete` (a verdict only)."""
    continuing = resume not in (None, "none") and os.path.realpath(save) == os.path.realpath(resume)
    shown = save.rstrip("/") or "/"
    if continuing:
        if overwrite:
            return "--overwrite would delete the run that --resume %s continues; leave out one of them" % shown
        return None
    records, plots = run_files(save)
    if not records:
        return None
    if not overwrite:
        return ("%s/ already holds a run (%s); continue it with --resume %s, pick a new --save, or pass "
                "--overwrite" % (shown, describe_run(save, records), shown))
    if not delete:
        return None
    for name in records + plots:
        try:
            os.remove(os.path.join(save, name))
        except OSError as e:
            return "--overwrite cannot delete %s: %s" % (os.path.join(save, name), e.strerror)
    print("luatorch train: --overwrite: deleted the previous run's %d files in %s/" % (len(records) + len(plots),
                                                                                      shown), file=sys.stderr)
    return None


def _option(argv, name, flag=False):
    """The last value of -name (or --name) in a torch.CmdLine argv; `flag`: a boolean option, bare = true."""
    value = None
    for i, a in enumerate(argv):
        if a in ("-" + name, "--" + name):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            value = (nxt == "true" if nxt in ("true", "false") else True) if flag else nxt
    return value


def _job_verdict(save, resume, overwrite, delete=True):
    """(check_run_folder's verdict, rank), once per job: here, or under an MPI launcher on rank 0, which
    broadcasts it so that every rank ends alike."""
    from run.launch import under_launcher

    if not under_launcher():
        return check_run_folder(save, resume, overwrite, delete), 0
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    verdict = check_run_folder(save, resume, overwrite, delete) if rank == 0 else None
    return MPI.COMM_WORLD.bcast(verdict, root=0), rank


def claim_run_folder(argv):
    """The Lua argv of `luatorch train`, checked before any rank starts: -save defaults to the -resume folder,
    and a new run into a folder that holds another run stops here (SystemExit, one line; nothing touched)
    unless -overwrite. In the process that launches the ranks, or under the user's own MPI launcher on
    rank 0 (_job_verdict). The -overwrite deletion waits for train.main (TrainHost.check_save), after the
    whole command line has been parsed: a mistyped option must not cost the old run."""
    if any(a in ("-h", "-help", "--help") for a in argv):
        return argv
    resume = _option(argv, "resume")
    if _option(argv, "save") is None and resume not in (None, "none"):
        argv = [*argv, "-save", resume]
    if _option(argv, "testOnly") == "true":  # writes no checkpoint
        return argv
    verdict, rank = _job_verdict(_option(argv, "save") or DEFAULT_SAVE, resume, _option(argv, "overwrite", flag=True),
                                 delete=False)
    if verdict:
        raise SystemExit(("luatorch train: " + verdict) if rank == 0 else 1)
    return argv


def world_position():
    """(rank, world size): from MPI when started by a launcher, else (0, 1) without touching MPI."""
    from run.launch import under_launcher

    if under_launcher():
        from pytorch_bridge import mpi

        comm = mpi.world()
        return comm.rank(), comm.size()
    return 0, 1


def preload(rt):
    """Make `require 'luatorch.host'` in rt create the host on first use (luatorch th scripts)."""
    def load(*_):
        rank, world = world_position()
        return TrainHost(rt, rank, world).install()

    # require only takes Lua functions as loaders: wrap the Python callable
    rt.globals.package.preload["luatorch.host"] = rt.eval("function(f) return function(...) return f(...) end end")(load)
