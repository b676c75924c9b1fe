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
import re
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
    from run.launch import launcher, mpi_family, project_root

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
    root = project_root()
    with tempfile.TemporaryDirectory(prefix="luatorch-ranks-") as pids:
        e = {**os.environ, **env, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
             "LUATORCH_PIDS_DIR": pids}
        proc = subprocess.Popen(full, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        seen = set()
        relays = [threading.Thread(target=_relay, args=(src, dst, seen))
                  for src, dst in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))]
        for t in relays:
            t.start()
        code = proc.wait()
        for t in relays:
            t.join()
        if code != 0:
            _name_failed_ranks(pids, seen, code)
    return code


def _relay(src, dst, seen):
    """Copy the launcher's output through, noting the process ids it reports."""
    for line in src:
        dst.write(line)
        dst.flush()
        seen.update(int(m) for m in re.findall(r"\bPID (\d+)", line, re.IGNORECASE))


def _name_failed_ranks(pids_dir, seen, code):
    """The launcher names dead processes by PID; say which ranks they were."""
    ranks = {}
    for name in os.listdir(pids_dir):
        with open(os.path.join(pids_dir, name)) as f:
            ranks[int(f.read().strip() or -1)] = int(name)
    named = ["rank %d (pid %d)" % (ranks[p], p) for p in sorted(seen) if p in ranks]
    if named:
        print("luatorch train: %s ended abnormally; the job stopped (exit %d)" % (", ".join(named), code),
              file=sys.stderr)
    else:
        print("luatorch train: the job stopped (exit %d); ranks and pids: %s" % (
            code, ", ".join("%d:%d" % (r, p) for p, r in sorted(ranks.items(), key=lambda kv: kv[1]))),
            file=sys.stderr)


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
