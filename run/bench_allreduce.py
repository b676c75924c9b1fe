"""`luatorch bench allreduce`: allreduce algorithms side by side, OSU style.

    mpiexec -n 4 luatorch bench allreduce [options]        # under your launcher
    luatorch bench allreduce --np 4 [--launches 3] ...     # launches itself
    luatorch bench allreduce --cluster [--nodes 4 --links 2 --rate 1gbit] ...
                                                           # across the emulated hosts (run/cluster.py)

Per size and algorithm: warm-up iterations, then for every iteration a
barrier, one timed allreduce, and the maximum of that iteration's time over
the ranks (OSU methodology). Prints time avg/min/max/median in microseconds,
algbw = bytes/time and busbw = algbw * 2(p-1)/p, and whether the result
matched MPI_Allreduce's (checked in every run on fresh random data).

Algorithms: ours (multicolor, multicolor_ring, ring, rhd, tree), auto, mpi
(the library's MPI_Allreduce) and, with --np, the library's built-in
algorithms forced one per launch: mpi:<name> (see --list), or mpi:all.
--calibrate measures ours and mpi at this rank count and caches the best per
size for auto (pytorch_bridge.mpi.calibration_path).

--cluster launches one rank per emulated host (luatorch cluster up; with
--nodes/--links/--rate it brings one up for the run and takes it down
after), over TCP on the emulated links only, and reports busbw also as a
share of the hosts' emulated link limit (links x rate per direction).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

DEFAULT_SIZES = [8 * 4 ** i for i in range(13)] + [26214400, 102228128]   # 8 B .. 128 MiB, DDP bucket, ResNet-50
DEFAULT_ALGORITHMS = "multicolor,multicolor_ring,ring,rhd,tree,mpi,auto"
CALIBRATE_ALGORITHMS = ["mpi", "multicolor", "ring", "rhd"]

# How to force each built-in algorithm (environment of the launch).
MPICH_FORCED = {name: {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": name}
                for name in ["recursive_doubling", "reduce_scatter_allgather", "ring", "tree", "recexch",
                             "k_reduce_scatter_allgather", "recursive_multiplying"]}
OMPI_FORCED = {name: {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_allreduce_algorithm": str(i),
                      **({"OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize": "65536"} if i == 5 else {})}
               for i, name in enumerate(["basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                                         "segmented_ring", "rabenseifner"], start=1)}



def parse_size(s):
    s = s.strip().upper()
    for suffix, mult in (("KIB", 1024), ("MIB", 1 << 20), ("GIB", 1 << 30), ("K", 1024), ("M", 1 << 20), ("B", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mult)
    return int(s)


def parser():
    from run.cli import at_least

    ap = argparse.ArgumentParser(prog="luatorch bench allreduce", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--algorithms", default=DEFAULT_ALGORITHMS,
                    help="comma-separated; mpi:<name> forces a built-in one (needs --np), mpi:all all of them")
    ap.add_argument("--sizes", default=None, help="bytes, comma-separated (suffixes K, M; default 8 B..128 MiB x4 "
                    "plus 26214400 and 102228128)")
    ap.add_argument("--iters", type=at_least(0), default=0, help="timed iterations per size (default: by size)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--colors", type=at_least(0), default=0, help="multicolor: colors (0: model)")
    ap.add_argument("--chunk", type=at_least(0), default=0, help="chunk bytes of the pipelined algorithms (0: model)")
    ap.add_argument("--json", default=None, help="write the records here")
    ap.add_argument("--np", type=at_least(0), default=0, help="launch N ranks with the MPI that mpi4py loads")
    ap.add_argument("--launches", type=at_least(1), default=1, help="with --np: repeat, report medians over launches")
    ap.add_argument("--calibrate", action="store_true", help="measure and cache auto's table, then exit")
    ap.add_argument("--rounds", type=at_least(1), default=3,
                    help="with --calibrate: interleaved rounds per size (medians)")
    ap.add_argument("--list", action="store_true", help="list the forcible built-in algorithms")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the per-call agreement check (count/type) in every algorithm, mpi included")
    ap.add_argument("--cluster", action="store_true", help="run across the emulated cluster's hosts (--np: ranks, "
                    "default one per host)")
    ap.add_argument("--nodes", type=at_least(0), default=0, help="with --cluster: bring up this many hosts for the run")
    ap.add_argument("--links", type=at_least(1), default=1, help="with --cluster --nodes: links per host")
    ap.add_argument("--rate", default="1gbit", help="with --cluster --nodes: rate per link and direction")
    ap.add_argument("--quiet", action="store_true")
    return ap


def default_iters(nbytes, cluster=False):
    if cluster:   # emulated links are ~10x slower than shared memory: keep a launch to minutes
        return 50 if nbytes <= 65536 else 10 if nbytes <= 1 << 20 else 5 if nbytes <= 32 << 20 else 3
    return 200 if nbytes <= 65536 else 40 if nbytes <= 1 << 20 else 10 if nbytes <= 32 << 20 else 5


# ------------------------------------------------------------------ one run

def measure(comm, world, algorithm, nbytes, dtype, iters, colors, chunk, np, cluster=False):
    """OSU loop for one algorithm and size; returns the record (rank 0) or None."""
    from mpi4py import MPI

    p, r = comm.Get_size(), comm.Get_rank()
    n = max(1, nbytes // np.dtype(dtype).itemsize)
    rng = np.random.default_rng(1000 + r)
    x = rng.standard_normal(n).astype(dtype)
    buf = x.copy()
    name = "mpi" if algorithm.startswith("mpi:") else algorithm

    def once():
        world.allreduce(buf, algorithm=name, colors=colors, chunk=chunk)

    # correctness first, on fresh random data, against MPI_Allreduce
    ref = np.empty_like(x)
    comm.Allreduce(x, ref, op=MPI.SUM)
    once()
    tol = (1e-5 if dtype == "float32" else 1e-12) * p
    ok = bool(np.allclose(buf, ref, rtol=tol, atol=tol))
    correct = comm.allreduce(ok, op=MPI.LAND)
    iters = iters or default_iters(nbytes, cluster)
    skip = 1 if iters <= 3 else max(2, iters // 10)
    times = np.empty(iters)
    for i in range(skip + iters):
        if nbytes <= 1 << 20:   # fresh input (large sizes only grow by p per call, harmless)
            buf[:] = x
        comm.Barrier()
        t0 = MPI.Wtime()
        once()
        t1 = MPI.Wtime()
        if i >= skip:
            times[i - skip] = t1 - t0
    worst = np.empty_like(times)
    comm.Allreduce(times, worst, op=MPI.MAX)   # per iteration, the slowest rank
    if r != 0:
        return None
    us = worst * 1e6
    med = float(np.median(us))
    actual = n * np.dtype(dtype).itemsize
    algbw = actual / (med * 1e-6) / 1e9
    return {"algorithm": algorithm, "ranks": p, "bytes": actual, "dtype": dtype,
            "time_us_median": med, "time_us_min": float(us.min()), "time_us_max": float(us.max()),
            "time_us_avg": float(us.mean()), "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (p - 1) / p,
            "correct": bool(correct), "iters": int(iters), "library": world.library}


def run_here(args, algorithms, sizes):
    import numpy as np
    from mpi4py import MPI

    from pytorch_bridge import mpi

    comm = MPI.COMM_WORLD
    world = mpi.world()
    if args.no_check:
        mpi.lib().ltc_set_check(world.ctx, 0)
    forced_label = os.environ.get("LUATORCH_BENCH_FORCED")
    records = []
    for nbytes in sizes:
        for alg in algorithms:
            label = alg
            if alg.startswith("mpi:"):
                if forced_label != alg:
                    if comm.Get_rank() == 0 and nbytes == sizes[0]:
                        print("skipping %s: forced built-in algorithms need --np (one launch each)" % alg)
                    continue
            rec = measure(comm, world, label, nbytes, args.dtype, args.iters, args.colors, args.chunk, np, args.cluster)
            if rec:
                if alg == "auto":
                    rec["auto_choice"] = world.choose(rec["bytes"])[0]
                records.append(rec)
                if not args.quiet:
                    print("%12d  %-28s %12.1f us  %8.3f GB/s  %s" % (
                        rec["bytes"], label, rec["time_us_median"], rec["busbw_GBps"],
                        "ok" if rec["correct"] else "WRONG"), flush=True)
    return records


# -------------------------------------------------------------- calibration

def calibrate(args):
    """Measure ours and mpi per size at this rank count; cache the table auto reads."""
    import numpy as np
    from mpi4py import MPI

    from pytorch_bridge import mpi

    comm = MPI.COMM_WORLD
    world = mpi.world()
    world.set_table([])   # measure the algorithms themselves, not a previous table's auto
    sizes = [8 * 4 ** i for i in range(13)]
    rounds = max(1, args.rounds)
    best, recs = [], []
    for nbytes in sizes:
        times = {alg: [] for alg in CALIBRATE_ALGORITHMS}
        for _ in range(rounds):   # interleaved, so a burst of load hits every algorithm alike
            for alg in CALIBRATE_ALGORITHMS:
                rec = measure(comm, world, alg, nbytes, "float32", default_iters(nbytes, args.cluster), 0, 0, np)
                if rec:
                    times[alg].append(rec["time_us_median"])
                    recs.append(rec)
        if comm.Get_rank() == 0:
            alg = pick_best(times)
            best.append((nbytes, alg, 2 if alg.startswith("multicolor") else 0))
            print("%12d  best %-16s %s" % (nbytes, alg, "  ".join(
                "%s=%.0f" % (k, statistics.median(v)) for k, v in times.items())), flush=True)
    if comm.Get_rank() == 0:
        model = fit_model(recs, comm.Get_size())
        path = mpi.calibration_path(world)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump({"library": world.library, "ranks": comm.Get_size(), "model": model, "table": best,
                       "records": recs}, f, indent=1)
        os.replace(path + ".tmp", path)
        print("alpha %.3g s, beta %.3g s/B, gamma %.3g s/B; wrote %s" % (*model, path))
    comm.Barrier()
    mpi.load_calibration(world)


def pick_best(times, margin=0.9):
    """times: {algorithm: [median us per round]}. The library's own unless another
    is clearly and repeatably faster: its median at most `margin` of mpi's and
    its slowest round faster than mpi's fastest (under load, with millisecond
    noise on microsecond operations, 'faster in every round' alone still let
    chance wins through)."""
    mpi_t = times["mpi"]
    ok = {a: statistics.median(t) for a, t in times.items()
          if a != "mpi" and statistics.median(t) <= margin * statistics.median(mpi_t) and max(t) < min(mpi_t)}
    return min(ok, key=ok.get) if ok else "mpi"


def fit_model(recs, p):
    """alpha, beta, gamma from the measurements: alpha from mpi's smallest
    size over its ~2 log p steps; from the ring's large sizes the slope b =
    (p-1)/p (2 beta + gamma); gamma from a timed local vector add."""
    import time

    import numpy as np

    small = [r["time_us_median"] for r in recs if r["algorithm"] == "mpi" and r["bytes"] <= 64]
    alpha = (min(small) * 1e-6 / max(1, 2 * math.ceil(math.log2(max(p, 2))))) if small else 3e-6
    a, b = np.ones(1 << 21, np.float32), np.ones(1 << 21, np.float32)
    t0 = time.perf_counter()
    for _ in range(5):
        np.add(a, b, out=a)
    gamma = (time.perf_counter() - t0) / 5 / a.nbytes
    big = [(r["bytes"], r["time_us_median"] * 1e-6) for r in recs if r["algorithm"] == "ring" and r["bytes"] >= 1 << 20]
    if len(big) >= 2 and p > 1:
        xs, ys = zip(*big)
        slope = np.polyfit(xs, ys, 1)[0]
        beta = max(1e-12, (slope * p / (p - 1) - gamma) / 2)
    else:
        beta = 0.2e-9
    return [float(alpha), float(beta), float(gamma)]


# ---------------------------------------------------------------- launching

from run.launch import (LAUNCH_ENV_VARS, child_env, launcher, mpi_family, project_root, python_module,  # noqa: E402
                        shown)


def forced_table(family):
    return OMPI_FORCED if family == "openmpi" else MPICH_FORCED


def launch_prefix(args, family):
    """(argv up to the program, environment) of one launch of args.np ranks."""
    if args.cluster:
        from run import cluster

        return cluster.mpi_launch(family, args.np)
    cmd, env = launcher(family)
    if not cmd:
        raise SystemExit("luatorch bench allreduce: no launcher found for %s" % family)
    return [cmd, "-n", str(args.np)], env


def launch_all(args, argv, algorithms):
    """--np: one launch for ours + mpi, one per forced built-in; repeated --launches times."""
    family = mpi_family()
    prefix, env = launch_prefix(args, family)
    forced = forced_table(family)
    plain = [a for a in algorithms if not a.startswith("mpi:")]
    runs = [(",".join(plain), {})] if plain else []
    for a in algorithms:
        if a.startswith("mpi:"):
            name = a[4:]
            if name not in forced:
                raise SystemExit("unknown built-in algorithm %s for %s (one of %s)" % (a, family, ", ".join(forced)))
            runs.append((a, {**forced[name], "LUATORCH_BENCH_FORCED": a}))
    strip = {"--np", "--launches", "--json", "--algorithms", "--nodes", "--links", "--rate"}   # with values
    child_argv, skip = [], False
    for x in argv:
        if skip:
            skip = False
            continue
        key = x.split("=")[0]
        if key in strip:
            skip = "=" not in x
            continue
        child_argv.append(x)
    root = project_root()
    all_records = []
    for launch in range(args.launches):
        for algs, extra in runs:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
                out = tf.name
            full = [*prefix, *python_module("run.bench_allreduce", *child_argv, "--algorithms", algs, "--json", out)]
            e = child_env(**env, **extra)
            print("# launch %d/%d: %s%s" % (launch + 1, args.launches,
                  " ".join("%s=%s" % kv for kv in extra.items() if kv[0] != "LUATORCH_BENCH_FORCED"),
                  " " + " ".join(full[:len(prefix)]) + " ... --algorithms " + algs), flush=True)
            r = subprocess.run(full, env=e, cwd=root)
            if r.returncode != 0:
                raise SystemExit("launch failed (%d): %s" % (r.returncode, shown(full)))
            with open(out) as f:
                for rec in json.load(f):
                    rec["launch"] = launch
                    rec.update(args.link_info)
                    all_records.append(rec)
            os.unlink(out)
    return combine(all_records)


def combine(records):
    """Median over launches of each (algorithm, ranks, bytes) time."""
    groups = {}
    for r in records:
        groups.setdefault((r["algorithm"], r["ranks"], r["bytes"], r["dtype"]), []).append(r)
    out = []
    for (alg, p, nbytes, dtype), rs in groups.items():
        med = statistics.median(r["time_us_median"] for r in rs)
        algbw = nbytes / (med * 1e-6) / 1e9
        rec = {"algorithm": alg, "ranks": p, "bytes": nbytes, "dtype": dtype, "time_us_median": med,
               "time_us_min": min(r["time_us_min"] for r in rs), "time_us_max": max(r["time_us_max"] for r in rs),
               "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (p - 1) / p,
               "correct": all(r["correct"] for r in rs), "launches": len(rs),
               "time_us_median_per_launch": [r["time_us_median"] for r in rs], "library": rs[0]["library"]}
        for key in ("auto_choice",) + LINK_KEYS:
            if key in rs[0]:
                rec[key] = rs[0][key]
        if "link_limit_GBps" in rec:
            rec["busbw_pct_of_link"] = 100 * rec["busbw_GBps"] / rec["link_limit_GBps"]
        out.append(rec)
    order = {a: i for i, a in enumerate(dict.fromkeys(r["algorithm"] for r in records))}
    out.sort(key=lambda r: (r["bytes"], order[r["algorithm"]]))
    return out


LINK_KEYS = ("cluster_nodes", "cluster_links", "link_rate", "link_limit_GBps")


def cluster_info(args):
    """With --cluster: bring the cluster up if asked, default --np, the link facts for the records."""
    from run import cluster

    if args.nodes:
        cluster.up(args.nodes, args.links, args.rate)
    st = cluster.current()
    args.np = args.np or st["nodes"]
    # one rank per host: each host sends and receives at most links x rate
    return {"cluster_nodes": st["nodes"], "cluster_links": st["links"], "link_rate": st["rate"],
            "link_limit_GBps": st["links"] * st["rate_bits"] / 8 / 1e9}


def print_report(records):
    by_size = {}
    for r in records:
        by_size.setdefault(r["bytes"], []).append(r)
    for nbytes, rs in sorted(by_size.items()):
        print("\n%d bytes (%s), %d ranks, %s" % (nbytes, human(nbytes), rs[0]["ranks"], rs[0]["dtype"]))
        print("  %-30s %12s %12s %12s %10s %10s %8s %s" % ("algorithm", "median us", "min us", "max us",
                                                            "algbw GB/s", "busbw GB/s", "% link", "correct"))
        for r in rs:
            name = r["algorithm"] + (" (%s)" % r["auto_choice"] if "auto_choice" in r else "")
            pct = "%.0f%%" % r["busbw_pct_of_link"] if "busbw_pct_of_link" in r else "-"
            print("  %-30s %12.1f %12.1f %12.1f %10.3f %10.3f %8s %s" % (
                name, r["time_us_median"], r["time_us_min"], r["time_us_max"], r["algbw_GBps"], r["busbw_GBps"],
                pct, {True: "yes", False: "NO"}.get(r["correct"], "-")))   # None: not checked (simulate's shared malloc)


def human(n):
    for unit, m in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1024)):
        if n >= m:
            return "%.4g %s" % (n / m, unit)
    return "%d B" % n


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    if args.list:
        fam = mpi_family()
        print("%s built-in allreduce algorithms: %s" % (fam, ", ".join("mpi:" + k for k in forced_table(fam))))
        return 0
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if "mpi:all" in algorithms:
        i = algorithms.index("mpi:all")
        algorithms[i:i + 1] = ["mpi:" + k for k in forced_table(mpi_family())]
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else DEFAULT_SIZES
    under_launcher = any(v in os.environ for v in LAUNCH_ENV_VARS)
    args.link_info = {}
    if args.cluster and not under_launcher:
        args.link_info = cluster_info(args)
    try:
        if args.np and not under_launcher:
            if args.calibrate:
                prefix, env = launch_prefix(args, mpi_family())
                root = project_root()
                e = child_env(**env)
                extra = ["--rounds", str(args.rounds)] + (["--cluster"] if args.cluster else [])
                return subprocess.run([*prefix, *python_module("run.bench_allreduce", "--calibrate", *extra)],
                                      env=e, cwd=root).returncode
            records = launch_all(args, argv, algorithms)
            print_report(records)
            write(args.json, records)
            return 0 if all(r["correct"] for r in records) else 1
    finally:
        if args.cluster and args.nodes and not under_launcher:
            from run import cluster

            cluster.down()
    if args.calibrate:
        calibrate(args)
        return 0
    records = run_here(args, algorithms, sizes)
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_rank() == 0:
        if not os.environ.get("LUATORCH_BENCH_FORCED") and not args.quiet:
            print_report(records)
        write(args.json, records)
    return 0 if all(r["correct"] for r in records) else 1


def write(path, records):
    if path:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w") as f:
            json.dump(records, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
