"""`luatorch train`: fb.resnet.torch-style training in Lua, data-parallel over MPI ranks.

    luatorch train                                   # built-in Fashion-MNIST, small ResNet, a few minutes
    luatorch train --np 4 --devices 2 --model resnet --depth 20 --dataset DIR --epochs 10
    mpiexec -n 4 luatorch train --dataset DIR ...    # under your own launcher (mpirun, mpiexec, srun)

Options (the fb.resnet.torch single-dash spellings are accepted as well):
    --model NAME|FILE.t7   -netType      resnet | googlenet_bn | a Torch7 model file (bare or DPT-wrapped)
    --dataset builtin|PATH -data         built-in Fashion-MNIST, a packed set, or an image folder
    --np N                               launch N ranks with the MPI library's launcher (1: no MPI)
    --devices D            -nGPU         DataParallelTable devices per rank (CPU workers)
    --epochs E             -nEpochs
    --batch-size B         -batchSize    global batch over all ranks and devices
    --lr LR                -LR
    --allreduce ALG        -allreduce    multicolor | ring | rhd | tree | mpi | auto
    --dpt KIND             -dpt          baseline | optimized
    --data memory|files    -dataSource
    --save DIR             -save         checkpoints, log.jsonl and plots
    --resume DIR           -resume
    --depth N, --seed S, --workers W     -depth, -manualSeed, -nThreads
Everything else fb.resnet.torch's opts.lua knows (-momentum, -weightDecay, -retrain, -resetClassifier,
-nClasses, -testOnly, ...) plus -lrScaling linear, -warmupEpochs 5, -schedule goyal: `luatorch train -help`.
"""
import os
import select
import subprocess
import sys
import tempfile
import threading

LONG = {
    "--model": "-netType", "--dataset": "-data", "--devices": "-nGPU", "--epochs": "-nEpochs",
    "--batch-size": "-batchSize", "--lr": "-LR", "--allreduce": "-allreduce", "--dpt": "-dpt",
    "--data": "-dataSource", "--save": "-save", "--resume": "-resume", "--depth": "-depth",
    "--seed": "-manualSeed", "--workers": "-nThreads", "--max-iters": "-maxIters", "--val-iters": "-valIters",
    "--timeout": "-timeout",
}


def translate(argv):
    """(fb-style argv for Lua, launcher options) from our command line."""
    out, launch = [], {"np": 1, "hostfile": None, "threads": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        key, eq, val = a.partition("=")
        if key in ("--np", "--hostfile", "--threads"):
            if not eq:
                if i + 1 >= len(argv):
                    raise SystemExit("luatorch train: %s needs a value" % key)
                val = argv[i + 1]
                i += 1
            launch[key[2:]] = int(val) if key in ("--np", "--threads") else val
        elif key in LONG:
            if not eq:
                if i + 1 >= len(argv):
                    raise SystemExit("luatorch train: %s needs a value" % key)
                val = argv[i + 1]
                i += 1
            out += [LONG[key], val]
        elif a in ("-h", "--help") and not out:
            print(__doc__.strip())
            raise SystemExit(0)
        else:
            out.append(a)
        i += 1
    return out, launch


def launch(argv, launch_opts):
    """Start N ranks of this command under the MPI launcher and wait for them."""
    from run.launch import child_env, launcher, mpi_family

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
    full += [sys.executable, "-m", "run.train", *argv]
    with tempfile.TemporaryDirectory(prefix="luatorch-ranks-") as pids:
        e = child_env(**env, LUATORCH_PIDS_DIR=pids)
        proc = subprocess.Popen(full, env=e)
        watch = RankWatch(pids)
        watch.start()
        code = proc.wait()
        watch.stop()
        if code != 0:
            print("luatorch train: the job stopped (exit %d); %s" % (code, watch.verdict()), file=sys.stderr)
    return code


class RankWatch(threading.Thread):
    """Watches the ranks' processes (pids from files the ranks write) through pidfds, which become
    readable the moment a process ends: when a job fails, the launcher can say which rank ended first
    (MPI launchers name only PIDs, or nothing, and kill the others right after)."""

    def __init__(self, pids_dir):
        super().__init__(daemon=True)
        self.pids_dir = pids_dir
        self.pids, self.fds, self.first_dead = {}, {}, None
        self._halt = threading.Event()

    def _register(self, poller):
        for name in os.listdir(self.pids_dir):
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
                for fd in [fd for fd, r in self.fds.items() if r in ended]:
                    poller.unregister(fd)
        finally:
            for fd in self.fds:
                os.close(fd)

    def stop(self):
        self._halt.set()
        self.join()

    def verdict(self):
        if self.first_dead:
            return "rank %s ended first (%s)" % (", ".join(map(str, self.first_dead)),
                                                ", ".join("pid %d" % self.pids[r] for r in self.first_dead))
        return "ranks and pids: %s" % ", ".join("%d:%d" % kv for kv in sorted(self.pids.items()))


def run_rank(lua_argv, threads=None):
    """One rank: a LuaJIT state, the host, and train.main."""
    from pytorch_bridge import LuaError, Runtime
    from pytorch_bridge.host import TrainHost, world_position

    rank, world = world_position()
    if os.environ.get("LUATORCH_PIDS_DIR"):  # for the launcher's message if this rank dies
        with open(os.path.join(os.environ["LUATORCH_PIDS_DIR"], str(rank)), "w") as f:
            f.write(str(os.getpid()))
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // max(1, _local_ranks(world)))
    rt = Runtime(threads=threads)
    host = TrainHost(rt, rank, world).install()
    rt.require("train")
    args = rt.table_from(list(lua_argv))
    try:
        rt.call(rt.eval("function(a, h) return require('train').main(a, h) end"), args, host)
    except LuaError as err:
        print("luatorch train (rank %d): %s" % (rank, err.lua_message), file=sys.stderr)
        if os.environ.get("LUATORCH_TRACEBACK"):
            print(err.lua_traceback, file=sys.stderr)
        return 1
    return 0


def _local_ranks(world):
    for v in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"):
        if v in os.environ:
            return int(os.environ[v])
    return world


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    lua_argv, launch_opts = translate(argv)
    from run.launch import under_launcher

    if launch_opts["np"] > 1 and not under_launcher():
        child = [a for a in argv]
        # the children must not launch again: drop --np
        for i, a in enumerate(list(child)):
            if a.startswith("--np"):
                del child[i:i + (1 if "=" in a else 2)]
                break
        return launch(child, launch_opts)
    code = run_rank(lua_argv, launch_opts["threads"])
    if under_launcher() and code != 0:
        # one rank failed: end the job instead of leaving the others in a collective
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
