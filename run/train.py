"""`luatorch train`: fb.resnet.torch-style training in Lua, data-parallel over MPI ranks.

    luatorch train                                   # built-in Fashion-MNIST, small ResNet, a few minutes
    luatorch train --np 4 --devices 2 --model resnet --depth 20 --dataset DIR --epochs 10
    mpiexec -n 4 luatorch train --dataset DIR ...    # under your own launcher (mpirun, mpiexec, srun)

Options (the fb.resnet.torch single-dash spellings are accepted as well):
    --model NAME|FILE.t7   -netType      resnet | googlenet_bn | a Torch7 model file (bare or DPT-wrapped)
    --dataset builtin|PATH -data         built-in Fashion-MNIST, a packed set, or an image folder
    --np N                               launch N ranks with the MPI library's launcher (1: no MPI)
    --devices D            -nGPU         DataParallelTable devices per rank (GPUs where cutorch has them, else CPU workers)
    --epochs E             -nEpochs
    --batch-size B         -batchSize    global batch over all ranks and devices (a multiple of the ranks)
    --lr LR                -LR
    --allreduce ALG        -allreduce    multicolor | ring | rhd | tree | mpi | auto
    --dpt KIND             -dpt          baseline | optimized
    --data memory|files    -dataSource
    --save DIR             -save         checkpoints, log.jsonl and plots (default: the --resume DIR, else checkpoints)
    --resume DIR           -resume       continue the run in DIR
    --overwrite            -overwrite    delete the run already in --save (its files only) and start afresh
    --trust-model          -trustModel   let the model/checkpoint files run the Lua functions they hold
    --depth N, --seed S, --workers W     -depth, -manualSeed, -nThreads
    --max-iters N, --val-iters N         -maxIters, -valIters: cut each epoch / validation pass at N iterations
    --timeout S            -timeout      seconds a collective waits for a peer before every rank stops
    --hostfile FILE, --threads T         the launcher's host file; compute threads per rank
Everything else fb.resnet.torch's opts.lua knows (-momentum, -weightDecay, -retrain, -resetClassifier,
-nClasses, -testOnly, ...) plus -lrScaling linear, -warmupEpochs 5, -schedule goyal: `luatorch train -help`.
Every value is checked before any rank starts. Ctrl-C stops every rank at the end of the iteration and says
what was kept; --resume continues from the last checkpoint.
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading

from run.cli import at_least, suggestion, usage_error

PROG = "luatorch train"

LONG = {
    "--model": "netType", "--dataset": "data", "--devices": "nGPU", "--epochs": "nEpochs",
    "--batch-size": "batchSize", "--lr": "LR", "--allreduce": "allreduce", "--dpt": "dpt",
    "--data": "dataSource", "--save": "save", "--resume": "resume", "--depth": "depth",
    "--seed": "manualSeed", "--workers": "nThreads", "--max-iters": "maxIters", "--val-iters": "valIters",
    "--timeout": "timeout", "--trust-model": "trustModel",
}


def _existing_file(text):
    if not os.path.isfile(text):
        raise ValueError("must be an existing file (no such file: %s)" % text)
    return text


# Options of the launcher (not of the Lua training): name -> converter
LAUNCH = {"--np": at_least(1), "--threads": at_least(1), "--hostfile": _existing_file}


class Options:
    """lua/luatorch/train/opts.lua seen from Python: the option names and defaults, its -help, and its check of the
    values (the one table of what each option accepts), in a LuaJIT state of its own."""

    def __init__(self):
        from pytorch_bridge import Runtime

        self.rt = Runtime()
        self.opts = self.rt.require("luatorch.train.opts")
        self.cmd = self.rt.call(self.opts.cmd)
        self.defaults = {str(k).lstrip("-"): o.default for k, o in self.cmd.options.items()}

    def help(self):
        return self.rt.eval("function(cmd, prog) return cmd:helpText({[0] = prog}) end")(self.cmd, PROG).rstrip("\n")

    def check(self, values, world=None, kind=None):
        """None, or (option, what is wrong with its value)."""
        return self.rt.call(self.opts.check, self.rt.table_from(values), world, kind)


def _name(spelling, options):
    """The Lua option a spelling stands for (--batch-size, -batchSize, --batchSize: batchSize), a LAUNCH
    spelling itself, or None."""
    if spelling in LAUNCH:
        return spelling
    if spelling in LONG:
        return LONG[spelling]
    m = re.fullmatch(r"--?([A-Za-z_][\w.]*)", spelling)
    return m.group(1) if m and m.group(1) in options.defaults else None


def _unknown(spelling, options):
    known = [*LONG, *LAUNCH, *("-" + k for k in options.defaults), "--help"]
    return "unknown option %s%s; see %s --help" % (spelling, suggestion(spelling, known), PROG)


def parse(argv, options):
    """Our command line -> (fb-style argv for Lua, {option: value as given}, {option: spelling used}, launcher
    options). A mistake ends the command with one line (exit 2)."""
    lua_argv, values, spelled = [], {}, {}
    launch = {"np": 1, "hostfile": None, "threads": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        spelling, eq, value = arg.partition("=")
        name = _name(spelling, options)
        if name is None:
            if arg.startswith("-") and len(arg) > 1 and not re.fullmatch(r"-[\d.]+", arg):
                usage_error(PROG, _unknown(spelling, options))
            usage_error(PROG, "unexpected argument %r (options come as --name value); see %s --help" % (arg, PROG))
        if not eq:
            if isinstance(options.defaults.get(name), bool):  # a flag: bare means true (torch.CmdLine)
                value = "true"
                if i < len(argv) and argv[i] in ("true", "false"):
                    value = argv[i]
                    i += 1
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                usage_error(PROG, "%s needs a value" % spelling)
        if name in LAUNCH:
            try:
                launch[name[2:]] = LAUNCH[name](value)
            except (ValueError, argparse.ArgumentTypeError) as err:
                usage_error(PROG, "%s %s" % (spelling, err))
        else:
            values[name], spelled[name] = value, spelling
            lua_argv += ["-" + name, value]
    return lua_argv, values, spelled, launch


def _data_kind(path):
    """imagenet/cifar10/... of the data: 'mnist' for the built-in set (Fashion-MNIST, or its MNIST-type
    fallbacks: pytorch_bridge.data.builtin), a packed set's from its manifest; None for a source folder
    (known once it is packed, and checked then)."""
    if path == "builtin":
        return "mnist"
    try:
        with open(os.path.join(path, "manifest.json")) as f:
            return json.load(f).get("kind")
    except (OSError, ValueError, AttributeError):
        return None


def check(options, values, spelled, world):
    bad = options.check(values, world, _data_kind(values.get("data", "builtin")))
    if bad:
        usage_error(PROG, "%s %s" % (spelled.get(bad[0], "-" + bad[0]), bad[1]))


def _save_folder(lua_argv, options):
    saves = [lua_argv[i + 1] for i in range(0, len(lua_argv) - 1, 2) if lua_argv[i] == "-save"]
    return saves[-1] if saves else options.defaults["save"]


# ------------------------------------------------------------------ Ctrl-C

def interrupted_line(save, where=None, note=""):
    """The line a Ctrl-C ends a run with: where it stopped, and what it kept (the run folder's latest.t7)."""
    kept = "nothing kept yet (a checkpoint is written after each epoch)"
    if save:  # None: stopped before the command line was read
        from pytorch_bridge import t7

        try:
            latest = t7.load(os.path.join(save, "latest.t7"))
            kept = "kept %s (epoch %d); continue with --resume %s" % (os.path.join(save, latest["modelFile"]),
                                                                      latest["epoch"], save)
        except (OSError, ValueError, KeyError, TypeError):  # none yet (or a damaged one: as good as none)
            pass
    return "%s: interrupted %s%s; %s" % (PROG, where or "before training started", note, kept)


def _make_host_class():
    from pytorch_bridge.host import TrainHost

    class RankHost(TrainHost):
        """The host of one rank, which knows where training is (for the line a Ctrl-C ends with) and stops
        every rank at the same point. With several ranks, a rank that left on its own would leave the others
        waiting in a collective, and the ranks need not be at the same place when the signal comes (one
        saving a checkpoint, another already in the next epoch). So once training has begun, Ctrl-C (SIGINT)
        is only noted, and the ranks agree (one 8-byte allreduce) whether any of them was interrupted after
        each iteration and at each epoch's start, points every rank passes in the same order."""

        def __init__(self, rt, rank, world):
            super().__init__(rt, rank, world)
            self.epoch = self.iteration = self.iterations = 0
            self.training = self.interrupted = False

        def epoch_start(self, epoch, n_epochs, n_iters):
            self.epoch, self.iteration, self.iterations, self.training = int(epoch), 0, int(n_iters), True
            self._stop_if_any_rank_was_interrupted()
            super().epoch_start(epoch, n_epochs, n_iters)

        def progress(self, n, total, loss, top1, wait):
            super().progress(n, total, loss, top1, wait)
            self.iteration, self.iterations = int(n), int(total)
            self.training = self.iteration < self.iterations
            self._stop_if_any_rank_was_interrupted()

        def _stop_if_any_rank_was_interrupted(self):
            stop = self.interrupted
            if self.world > 1:
                import numpy as np

                from pytorch_bridge import mpi

                flag = np.array([1.0 if stop else 0.0])
                mpi.allreduce(flag, algorithm="mpi")
                stop = flag[0] > 0
            if stop:
                self.interrupted = True
                raise KeyboardInterrupt

        def on_signal(self, signum, frame):
            self.interrupted = True
            if self.world == 1 or not self.epoch:
                raise KeyboardInterrupt  # one rank, or before training: no peer waits at an agreed point

        def where(self):
            if not self.epoch:
                return None
            if self.training and not self.iteration:
                return "at the start of epoch %d" % self.epoch
            if self.training:
                return "at epoch %d, iteration %d of %d" % (self.epoch, self.iteration, self.iterations)
            return "after the training iterations of epoch %d (validating or saving)" % self.epoch

    return RankHost


# ------------------------------------------------------------------ launching

def launch(child_argv, launch_opts, save, grace):
    """Start N ranks of this command under the MPI launcher and wait for them."""
    from run.launch import child_env, launcher, mpi_family, python_module

    family = mpi_family()
    cmd, env = launcher(family)
    if not cmd:
        raise SystemExit("luatorch train: --np needs mpiexec/mpirun (none found for the MPI mpi4py loads)")
    full = [cmd, "-n", str(launch_opts["np"])]
    if family != "openmpi":
        # let survivors of a dead rank reach their collective timeout (which names the rank they
        # wait for) rather than be killed at once
        full.append("-disable-auto-cleanup")
    if launch_opts["hostfile"]:
        full += ["--hostfile" if family == "openmpi" else "-f", launch_opts["hostfile"]]
    full += python_module("run.train", *child_argv)
    with tempfile.TemporaryDirectory(prefix="luatorch-ranks-") as pids:
        e = child_env(**env, LUATORCH_PIDS_DIR=pids)
        # the job in a process group of its own: a Ctrl-C reaches this process only, which passes it to the
        # ranks (they stop together and rank 0 says where) instead of to the MPI launcher, which kills them
        group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
        proc = subprocess.Popen(full, env=e, **group)
        watch = RankWatch(pids)
        stopper = JobStopper(proc, watch, grace)
        watch.on_failure = stopper.end_after_failure
        watch.start()
        previous = {s: signal.signal(s, stopper.on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            code = proc.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            stopper.cancel()
            watch.stop()
    if code != 0:
        _release_segments(watch.pids.values())
    if stopper.failed:
        print("luatorch train: %s; ended the other ranks%s. The checkpoints written so far are kept%s."
              % (stopper.failed, " (killed after %g s)" % DEAD_RANK_GRACE if stopper.late else "",
                 " in %s (--resume continues from the last complete one)" % save if save else ""),
              file=sys.stderr)
        return code if code not in (0, None) else 1
    if stopper.stopped:
        if code != 130:  # the ranks did not get to say it themselves
            late = " (the ranks did not stop within %g s and were killed)" % grace if stopper.late else ""
            print(interrupted_line(save, note=late), file=sys.stderr)
        return 130
    if code != 0:
        print("luatorch train: the job stopped (exit %d); %s" % (code, watch.verdict()), file=sys.stderr)
    return code


def _release_segments(pids):
    """After a failed job: the shared-memory data segments its ranks made and nobody holds any more. An MPI
    launcher SIGKILLs the other ranks when one dies, and a SIGKILLed process cleans up nothing."""
    from pytorch_bridge.data.store import clean_segments

    try:
        freed = clean_segments(created_by=list(pids))
    except OSError:
        return
    if freed:
        print("luatorch train: released %d shared-memory segment(s) the ranks left (%.1f MB)"
              % (len(freed), sum(s.nbytes or 0 for s in freed) / 1e6), file=sys.stderr)


# After one rank died, the others get SIGTERM and this long to go before SIGKILL: a rank waiting in a
# collective runs no Python signal handler until the collective returns, so this is short.
DEAD_RANK_GRACE = 1.0


class JobStopper:
    """Ctrl-C (or SIGTERM, SIGHUP) while a launched job runs: passed on to the ranks as SIGINT; the job is
    killed at a second one, after `grace` seconds, or at once when no rank has started yet. A rank that
    died (see RankWatch) ends the others at once: SIGTERM, then SIGKILL after DEAD_RANK_GRACE."""

    def __init__(self, proc, watch, grace):
        self.proc, self.watch, self.grace = proc, watch, grace
        self.stopped = self.late = False
        self.failed = None   # what happened to the rank that died first
        self._timer = None

    def end_after_failure(self, what):
        if self.failed or self.stopped:
            return
        self.failed = what
        for pid in self.watch.alive():
            _signal(pid, signal.SIGTERM)
        self._timer = threading.Timer(DEAD_RANK_GRACE, self.kill, kwargs={"late": True})
        self._timer.daemon = True
        self._timer.start()

    def on_signal(self, signum, frame):
        ranks = self.watch.alive()
        if self.stopped or not ranks:
            self.stopped = True
            return self.kill()
        self.stopped = True
        for pid in ranks:
            _signal(pid, signal.SIGINT)
        self._timer = threading.Timer(self.grace, self.kill, kwargs={"late": True})
        self._timer.daemon = True
        self._timer.start()

    def kill(self, late=False):
        self.late = late
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in self.watch.alive():
            _signal(pid, signal.SIGKILL)

    def cancel(self):
        if self._timer:
            self._timer.cancel()


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:  # gone meanwhile
        pass


def record_exit(code):
    """A rank's exit status, for the launcher (RankWatch): a rank that ends without one died."""
    where = os.environ.get("LUATORCH_PIDS_DIR")
    rank = os.environ.get("LUATORCH_RANK_ID")
    if not where or rank is None:
        return
    try:
        with open(os.path.join(where, rank + ".exit"), "w") as f:
            f.write(str(code))
    except OSError:
        pass


class RankWatch(threading.Thread):
    """Watches the ranks' processes (pids from files the ranks write) through pidfds, which become
    readable the moment a process ends: the launcher can say which rank ended first and how (MPI
    launchers name only PIDs, or nothing), and end the job at once: a rank that ends without having
    written its exit status (killed, crashed) or with a failing one calls on_failure(description)."""

    def __init__(self, pids_dir):
        super().__init__(daemon=True)
        self.pids_dir = pids_dir
        self.pids, self.fds, self.ended, self.first_dead = {}, {}, set(), None
        self.on_failure = None
        self._halt = threading.Event()

    def _exit_status(self, rank):
        try:
            with open(os.path.join(self.pids_dir, "%d.exit" % rank)) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def how_it_ended(self, rank):
        """None for a clean end (exit 0, or 130 after Ctrl-C), else a description of the failure. A
        rank that failed by itself records its status before it calls MPI_Abort, which kills the others
        without one: that rank is named as the cause."""
        code = self._exit_status(rank)
        if code in (0, 130):
            return None
        for other in sorted(self.pids):
            c = self._exit_status(other)
            if c not in (None, 0, 130):
                return "rank %d (pid %d) exited with status %d" % (other, self.pids[other], c)
        return "rank %d (pid %d) died without an exit status (killed by a signal, or crashed)" % (
            rank, self.pids[rank])

    def _register(self, poller):
        for name in os.listdir(self.pids_dir):
            if not name.isdigit():
                continue
            rank = int(name)
            if rank in self.pids:
                continue
            try:
                with open(os.path.join(self.pids_dir, name)) as f:
                    pid = int(f.read().strip())
                fd = os.pidfd_open(pid)
            except (OSError, ValueError):
                continue
            self.pids[rank], self.fds[fd] = pid, rank
            poller.register(fd, select.POLLIN)

    def run(self):
        poller = select.poll()
        try:
            while not self._halt.is_set():
                self._register(poller)
                ended = sorted(self.fds[fd] for fd, _ in poller.poll(100))
                if ended and self.first_dead is None and len(ended) < len(self.pids):
                    self.first_dead = ended
                self.ended.update(ended)
                for rank in ended:
                    what = self.how_it_ended(rank)
                    if what and self.on_failure:
                        self.on_failure(what)
                for fd in [fd for fd, r in self.fds.items() if r in ended]:
                    poller.unregister(fd)
        finally:
            for fd in self.fds:
                os.close(fd)

    def stop(self):
        self._halt.set()
        self.join()

    def alive(self):
        """The pids of the ranks that have started and not ended."""
        return [pid for rank, pid in list(self.pids.items()) if rank not in self.ended]

    def verdict(self):
        if self.first_dead:
            return "rank %s ended first (%s)" % (", ".join(map(str, self.first_dead)),
                                                ", ".join("pid %d" % self.pids[r] for r in self.first_dead))
        if not self.pids:
            return "no rank had started (see the messages above)"
        return "ranks and pids: %s" % ", ".join("%d:%d" % kv for kv in sorted(self.pids.items()))


# ------------------------------------------------------------------ one rank

def _register_rank(rank):
    """This rank's pid in the launcher's folder (LUATORCH_PIDS_DIR), so that the launcher can name the rank if it
    dies; once is enough."""
    where = os.environ.get("LUATORCH_PIDS_DIR")
    if not where or os.environ.get("LUATORCH_RANK_ID") == str(rank):
        return
    os.environ["LUATORCH_RANK_ID"] = str(rank)
    with open(os.path.join(where, str(rank)), "w") as f:
        f.write(str(os.getpid()))


def run_rank(lua_argv, threads=None):
    """One rank: a LuaJIT state, the host, and train.main. Returns the exit status (130: interrupted)."""
    from pytorch_bridge import LuaError, Runtime
    from pytorch_bridge.data.signals import redeliver_lost_interrupts
    from pytorch_bridge.host import world_position
    from pytorch_bridge.mpi import MPIError

    try:
        rank, world = world_position()
    except MPIError as err:  # an MPI that does not belong to the launcher, ...
        from run.launch import launcher_rank

        if launcher_rank() in (None, 0):
            print(str(err), file=sys.stderr)
        raise SystemExit(1)  # not through main's MPI_Abort: there is no common world to end
    tasks = int(os.environ.get("SLURM_STEP_NUM_TASKS", "1") or 1)
    if world == 1 and tasks > 1:
        # srun without the MPI's PMI: every task would train alone, each thinking it is the whole job
        if os.environ.get("SLURM_PROCID", "0") == "0":
            print("luatorch train: srun started %d tasks, but MPI sees a world of 1 in each: give srun the "
                  "MPI's PMI (--mpi=pmi2 for MPICH, the mpich wheel's; --mpi=pmix for Open MPI)" % tasks,
                  file=sys.stderr)
        raise SystemExit(2)
    _register_rank(rank)   # (for the launcher's message if this rank dies)
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // max(1, _local_ranks(world)))
    rt = Runtime(threads=threads)
    host = _make_host_class()(rt, rank, world).install()
    previous = signal.signal(signal.SIGINT, host.on_signal)
    previous_hook = redeliver_lost_interrupts()
    try:
        rt.require("luatorch.train")
        args = rt.table_from(list(lua_argv))
        rt.call(rt.eval("function(a, h) return require('luatorch.train').main(a, h) end"), args, host)
    except (LuaError, KeyboardInterrupt) as err:
        if host.interrupted or isinstance(err, KeyboardInterrupt):
            if rank == 0:
                print(("\n" if sys.stderr.isatty() else "") + interrupted_line(host.save_dir, host.where()),
                      file=sys.stderr)
            return 130
        message = err.lua_message or "an error in the Python side (LUATORCH_TRACEBACK=1 shows where)"
        print("luatorch train (rank %d): %s" % (rank, message), file=sys.stderr)
        if os.environ.get("LUATORCH_TRACEBACK"):
            print(err.lua_traceback, file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
    return 0


def _local_ranks(world):
    """How many ranks share this host: from MPI (a shared-memory split of the world, right under any
    launcher: mpiexec, mpirun, srun), else the launchers' variables, else all of them."""
    from pytorch_bridge.data.store import LOCAL_RANK_VARS, local_rank

    mpi = sys.modules.get("mpi4py.MPI")
    if (mpi is not None and mpi.Is_initialized()) or any(v in os.environ for v in LOCAL_RANK_VARS):
        return local_rank()[1]
    return world


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    from run.launch import launcher_rank, under_launcher

    # a rank registers first, before the imports and MPI's start, which take seconds on a loaded machine: one that
    # dies meanwhile is named too (the launcher's rank variable; MPI's own rank in run_rank where there is none)
    if under_launcher() and launcher_rank() is not None:
        _register_rank(launcher_rank())
    # before anything loads mpi4py: importing pytorch_bridge.mpi picks the MPI of the launcher that started us
    from pytorch_bridge import mpi  # noqa: F401

    save = None
    try:
        options = Options()
        if "-help" in argv:
            print(options.help())
            return 0
        lua_argv, values, spelled, launch_opts = parse(argv, options)
        world = None if under_launcher() else launch_opts["np"]  # under a launcher: known once MPI starts
        check(options, values, spelled, world)
        from pytorch_bridge.host import claim_run_folder

        lua_argv = claim_run_folder(lua_argv)  # before any rank starts: a new run must not mix into an old one
        save = _save_folder(lua_argv, options)
        if world and world > 1:
            child = lua_argv + (["--threads", str(launch_opts["threads"])] if launch_opts["threads"] else [])
            grace = float(values.get("timeout", options.defaults["timeout"])) + 10
            return launch(child, launch_opts, save, grace)
        code = run_rank(lua_argv, launch_opts["threads"])
        record_exit(code)
    except KeyboardInterrupt:  # before the training started (or while the launcher was starting)
        if launcher_rank() in (None, 0):
            print(interrupted_line(save), file=sys.stderr)
        return 130
    if under_launcher() and code not in (0, 130):
        # one rank failed: end the job instead of leaving the others in a collective (after Ctrl-C, every
        # rank stopped at the same point and ends by itself)
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
