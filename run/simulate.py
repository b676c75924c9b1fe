"""`luatorch simulate allreduce`: our allreduce algorithms and the MPI libraries' own, on a simulated
platform (SimGrid's SMPI), OSU style like `luatorch bench allreduce`.

    luatorch simulate allreduce --platform emulated-4h-1l --np 4 --sizes 1M,25M \\
        --algorithms multicolor,ring,rhd,tree,mpi:mpich,mpi:ompi [--json out.json]

Our collectives (native/collectives) are compiled with smpicc -DLTC_SIMULATOR: the same algorithms
without the communication and watchdog threads, waiting in MPI_Waitany. Each rank is a simulated
process placed on the platform's hosts in order (--ranks-per-host, default as few as fit); the
times are simulated. Algorithms: ours (multicolor, multicolor_ring, ring, rhd, tree, auto), mpi (SMPI's
default MPI_Allreduce), mpi:ompi / mpi:mpich / mpi:mvapich2 / mpi:impi (SMPI's copies of those
libraries' selectors) and mpi:<name> (one of SMPI's allreduce algorithms forced, e.g. mpi:rab_rdb,
mpi:lr, mpi:ompi_ring_segmented). One simulation per MPI setting.

Sizes whose buffers fit in --verify-mib (ranks x 3 x size) run on real random data and every result
is checked against SMPI's own MPI_Allreduce of the same data (`correct`); larger ones use SMPI's
shared malloc (no data, little memory; `correct` is null). Platforms: a SimGrid XML file, or a name
from run/platforms/ (--list).
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from run.bench_allreduce import human, parse_size, print_report, write

PLATFORM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "platforms")
from pytorch_bridge.mpi import NATIVE  # the source checkout's native/, or its installed copy
COLLECTIVES = os.path.join(NATIVE, "collectives")
DRIVER = os.path.join(COLLECTIVES, "sim", "smpi_allreduce.c")
OURS = ("auto", "mpi", "ring", "rhd", "tree", "multicolor", "multicolor_ring")
SELECTORS = ("ompi", "mpich", "mvapich2", "impi", "default")
CFLAGS = ["-O3", "-march=native", "-std=gnu11", "-Wall", "-DLTC_SIMULATOR"]
DEFAULT_SIZES = "1M,8M,26214400,102228128"
DEFAULT_ALGORITHMS = "multicolor,multicolor_ring,ring,rhd,tree,mpi:mpich,mpi:ompi"
# Our schedule blocks in MPI_Waitany and polls nothing; SMPI's smpi/test would charge simulated time for
# every MPI_Test made anywhere (a model of polling loops), so none is billed for polling nobody does.
BASE_CFG = ["smpi/test:0"]
# --network-only (simulate train's setting; shared-malloc sizes): the simulated time is the network's.
# - No host time between MPI calls: with the reductions skipped, what SMPI would benchmark there is our
#   schedule's bookkeeping on this loaded host plus the simulator's own cache misses; it moved the
#   simulated times of sizes <= 8 MB by 10-40 % from run to run, is not charged to SMPI's own algorithms,
#   and costs a simulated execution per MPI call.
# - Every send rendezvous (no eager copy below 64 KiB): SimGrid 3.32 keeps the eager ("detached") sends of
#   all ranks on one list that it walks at the end of each of them, so a 256-rank run of pipelines spent 98 %
#   of its time there; InfiniBand MPIs switch to rendezvous at 8-16 KiB anyway.
# docs/results/paper-scale.md, "Simulation cost": how much each moves the simulated times.
NETWORK_ONLY_CFG = ["smpi/simulate-computation:no", "smpi/send-is-detached-thresh:0"]


class SimulateError(RuntimeError):
    pass


def fail(message):
    print("luatorch simulate: %s" % message, file=sys.stderr)
    raise SystemExit(2)


# ---------------------------------------------------------------- tools

def smpi_tools():
    """(smpicc, smpirun) or a SimulateError that says how to get them."""
    cc, run = shutil.which("smpicc"), shutil.which("smpirun")
    if not cc or not run:
        raise SimulateError("SimGrid's smpicc/smpirun are not on PATH; install them "
                            "(Debian: apt-get install libsimgrid-dev simgrid)")
    return cc, run


def cache_dir():
    base = os.environ.get("LUATORCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "luatorch")
    return os.path.join(base, "smpi")


def build_driver():
    """Compile (once, cached by sources and flags) the SMPI driver with our collectives; its path."""
    cc, _ = smpi_tools()
    srcs = sorted(os.path.join(COLLECTIVES, f) for f in os.listdir(COLLECTIVES) if f.endswith(".c")) + [DRIVER]
    heads = [os.path.join(COLLECTIVES, f) for f in sorted(os.listdir(COLLECTIVES)) if f.endswith(".h")]
    h = hashlib.sha256(" ".join(CFLAGS).encode())
    for path in srcs + heads + [os.path.join(NATIVE, "include", "lt_coll.h")]:
        with open(path, "rb") as f:
            h.update(path.encode() + b"\0" + f.read())
    d = os.path.join(cache_dir(), h.hexdigest()[:16])
    exe = os.path.join(d, "smpi_allreduce")
    if os.path.exists(exe):
        return exe
    os.makedirs(d, exist_ok=True)
    tmp = exe + ".%d.tmp" % os.getpid()
    cmd = [cc, *CFLAGS, "-I", os.path.join(NATIVE, "include"), *srcs, "-o", tmp, "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SimulateError("building the SMPI driver failed: %s\n%s" % (" ".join(cmd), r.stderr.strip()))
    os.replace(tmp, exe)
    return exe


# ------------------------------------------------------------- platforms

def platform_names():
    return sorted(f[:-4] for f in os.listdir(PLATFORM_DIR) if f.endswith(".xml"))


def platform_path(name):
    if os.path.isfile(name):
        return os.path.abspath(name)
    path = os.path.join(PLATFORM_DIR, name + ".xml")
    if os.path.isfile(path):
        return path
    raise SimulateError("no platform %r: give a SimGrid XML file or one of %s" % (name, ", ".join(platform_names())))


def parse_bandwidth(text):
    """SimGrid bandwidth ('125MBps', '1Gbps', '12.5GBps') in bytes per second."""
    units = [("GBps", 1e9), ("MBps", 1e6), ("kBps", 1e3), ("Bps", 1), ("Gbps", 1e9 / 8), ("Mbps", 1e6 / 8),
             ("kbps", 1e3 / 8), ("bps", 1 / 8)]
    for unit, mult in units:
        if text.endswith(unit):
            return float(text[: -len(unit)]) * mult
    return float(text)


def expand_radical(radical):
    out = []
    for part in radical.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def platform_info(path):
    """Hosts in order and, for a cluster, the per-host link bandwidth per direction (bytes/s)."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise SimulateError("platform %s does not parse: %s" % (path, e))
    hosts, link_bw = [], None
    for el in root.iter():
        if el.tag == "cluster":
            hosts += ["%s%d%s" % (el.get("prefix", ""), i, el.get("suffix", "")) for i in expand_radical(el.get("radical"))]
            if link_bw is None and el.get("bw"):
                link_bw = parse_bandwidth(el.get("bw"))
        elif el.tag == "host":
            hosts.append(el.get("id"))
        elif el.tag == "prop" and el.get("id") == "luatorch/link-bw" and link_bw is None:
            # a zone of <host>s, <link>s and <route>s names its per-host link limit (for busbw's % of link)
            link_bw = parse_bandwidth(el.get("value", ""))
    if not hosts:
        raise SimulateError("platform %s has no hosts (a <cluster> or <host> element)" % path)
    return {"hosts": hosts, "link_Bps": link_bw}


def write_hostfile(hosts, np, per_host, path):
    """Rank r on host r // per_host (blocks of per_host consecutive ranks)."""
    if np > len(hosts) * per_host:
        raise SimulateError("%d ranks do not fit on %d hosts x %d ranks per host" % (np, len(hosts), per_host))
    with open(path, "w") as f:
        f.write("".join(hosts[r // per_host] + "\n" for r in range(np)))


# ------------------------------------------------------------- launches

def mpi_setting(algorithm):
    """The smpirun --cfg that makes SMPI's MPI_Allreduce the one this label names."""
    name = algorithm[4:]
    if not name:
        raise SimulateError("empty built-in algorithm name in %r" % algorithm)
    return ["smpi/coll-selector:" + name] if name in SELECTORS else ["smpi/allreduce:" + name]


def launch_plan(algorithms):
    """[(label of each algorithm as the driver runs it, --cfg list)]: ours together, one per mpi:X."""
    ours = [a for a in algorithms if not a.startswith("mpi:")]
    for a in ours:
        if a not in OURS:
            raise SimulateError("unknown algorithm %r: one of %s, mpi:<selector> (%s) or mpi:<SMPI algorithm>"
                                % (a, ", ".join(OURS), ", ".join(SELECTORS)))
    plan = [(ours, [])] if ours else []
    plan += [([a], mpi_setting(a)) for a in algorithms if a.startswith("mpi:")]
    return plan


def launch_cfg(cfg, verify, args):
    """Every --cfg of one smpirun: ours, the algorithm's (cfg), then the user's."""
    network_only = args.network_only and not verify
    return (BASE_CFG + ["smpi/shared-malloc:" + ("off" if verify else "global")]
            + (NETWORK_ONLY_CFG if network_only else []) + cfg + args.cfg)


def simulate(exe, platform, hostfile, np, sizes, labels, cfgs, verify, args):
    """One smpirun with the --cfg settings `cfgs` (launch_cfg); the driver's raw records (one per size and
    algorithm)."""
    _, smpirun = smpi_tools()
    driver_algs = ["mpi" if a.startswith("mpi:") else a for a in labels]
    cmd = [smpirun, "-np", str(np), "-platform", platform, "-hostfile", hostfile,
           *["--cfg=" + c for c in cfgs], exe, "--sizes", ",".join(map(str, sizes)),
           "--algorithms", ",".join(driver_algs), "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--dtype", args.dtype, "--colors", str(args.colors), "--chunk", str(args.chunk)]
    cmd += ["--verify"] if verify else []
    cmd += ["--no-check"] if args.no_check else []
    env = dict(os.environ)
    if (args.skip_reductions or args.network_only) and not verify:
        env["LTC_SIM_REDUCE"] = "skip"   # native/collectives/coll_sched.c, under LTC_SIMULATOR
    if not args.quiet:
        print("# " + ("LTC_SIM_REDUCE=skip " if "LTC_SIM_REDUCE" in env else "") + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    raws = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or len(raws) != len(sizes) * len(labels):
        errors = [ln for ln in r.stderr.splitlines() if "/INFO]" not in ln]
        raise SimulateError("the simulation failed (exit %d): %s\n%s" % (r.returncode, " ".join(cmd),
                                                                       "\n".join(errors[-15:])))
    for raw in raws:
        raw["algorithm"] = labels[driver_algs.index(raw["algorithm"])]
    return raws


def record(raw, info, platform_name, cfg):
    """A record with the fields of `luatorch bench allreduce`'s, from the driver's simulated times."""
    us = raw["times_us"]
    p, nbytes = raw["ranks"], raw["bytes"]
    med = statistics.median(us)
    algbw = nbytes / (med * 1e-6) / 1e9
    rec = {"algorithm": raw["algorithm"], "ranks": p, "bytes": nbytes, "dtype": raw["dtype"],
           "time_us_median": med, "time_us_min": min(us), "time_us_max": max(us),
           "time_us_avg": sum(us) / len(us), "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (p - 1) / p,
           "correct": raw["correct"], "iters": len(us), "launches": 1, "time_us_median_per_launch": [med],
           "library": raw["library"],
           "simulated": True, "platform": platform_name, "smpi_cfg": cfg}
    if info["link_Bps"]:
        rec["link_limit_GBps"] = info["link_Bps"] / 1e9
        rec["busbw_pct_of_link"] = 100 * rec["busbw_GBps"] / rec["link_limit_GBps"]
    return rec


def run_allreduce(args):
    algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not algorithms or not sizes:
        raise SimulateError("--algorithms and --sizes need at least one entry each")
    plan = launch_plan(algorithms)
    platform = platform_path(args.platform)
    info = platform_info(platform)
    hosts = info["hosts"]
    per_host = args.ranks_per_host or -(-args.np // len(hosts))
    exe = build_driver()
    limit = args.verify_mib * (1 << 20)
    verified = [s for s in sizes if 3 * s * args.np <= limit]
    shared = [s for s in sizes if s not in verified]
    name = os.path.splitext(os.path.basename(platform))[0]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        hostfile = os.path.join(tmp, "hosts")
        write_hostfile(hosts, args.np, per_host, hostfile)
        for labels, cfg in plan:
            for group, verify in ((verified, True), (shared, False)):
                if group:
                    cfgs = launch_cfg(cfg, verify, args)
                    for raw in simulate(exe, platform, hostfile, args.np, group, labels, cfgs, verify, args):
                        records.append(record(raw, info, name, cfgs))
    order = {a: i for i, a in enumerate(algorithms)}
    records.sort(key=lambda r: (r["bytes"], order[r["algorithm"]]))
    return records


def compare(records, paths, aliases, min_bytes):
    """Markdown table: simulated vs measured median time for every (algorithm, size >= min_bytes) found in
    both; a measured record of several files is the median of theirs. aliases: {simulated: measured label}."""
    measured = {}
    for path in paths:
        try:
            with open(path) as f:
                rows = json.load(f)
        except (OSError, ValueError) as e:
            raise SimulateError("cannot read measurements %s: %s" % (path, e))
        for m in rows:
            measured.setdefault((m["algorithm"], m["ranks"], m["bytes"]), []).append(m["time_us_median"])
    lines = ["| size | simulated | measured as | simulated ms | measured ms | difference |", "|---|---|---|---|---|---|"]
    diffs, ours_logs = [], []
    for r in records:
        label = aliases.get(r["algorithm"], r["algorithm"])
        got = measured.get((label, r["ranks"], r["bytes"]))
        if r["bytes"] < min_bytes or not got:
            continue
        meas = statistics.median(got)
        diff = 100 * (r["time_us_median"] / meas - 1)
        diffs.append(abs(diff))
        if not r["algorithm"].startswith("mpi"):
            ours_logs.append(math.log(meas / r["time_us_median"]))
        lines.append("| %s | %s | %s | %.1f | %.1f%s | %+.1f%% |" % (
            human(r["bytes"]), r["algorithm"], label, r["time_us_median"] / 1e3, meas / 1e3,
            "" if len(got) == 1 else " (median of %d runs: %s)" % (len(got), ", ".join("%.1f" % (x / 1e3) for x in got)),
            diff))
    if not diffs:
        raise SimulateError("nothing to compare: no measured record with the same algorithm, ranks and size")
    lines.append("")
    lines.append("%d of %d within 15%%" % (sum(d <= 15 for d in diffs), len(diffs)))
    if ours_logs:
        # at bandwidth-bound sizes time ~ 1/bw-factor: dividing the platform's factor by this ratio fits ours
        ratio = math.exp(sum(ours_logs) / len(ours_logs))
        lines.append("fit over our algorithms (%d points): measured/simulated = %.3f (geometric mean); a bandwidth "
                     "factor of the platform's / %.3f fits them" % (len(ours_logs), ratio, ratio))
    return "\n".join(lines)


def parse_aliases(text):
    out = {}
    for pair in filter(None, (x.strip() for x in (text or "").split(","))):
        sim, sep, meas = pair.partition("=")
        if not sep or not sim or not meas:
            raise SimulateError("--compare-as takes SIMULATED=MEASURED pairs, e.g. mpi:mpich=mpi (got %r)" % pair)
        out[sim] = meas
    return out


def parser():
    from run.cli import at_least

    ap = argparse.ArgumentParser(prog="luatorch simulate allreduce", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", default="emulated-4h-1l", help="SimGrid XML file or a name from run/platforms")
    ap.add_argument("--np", type=at_least(2), default=4, help="simulated ranks")
    ap.add_argument("--ranks-per-host", type=at_least(0), default=0, help="0: as few per host as fit")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="bytes, comma-separated (suffixes K, M)")
    ap.add_argument("--algorithms", default=DEFAULT_ALGORITHMS, help="comma-separated (see above)")
    ap.add_argument("--iters", type=at_least(1), default=3, help="timed iterations per size")
    ap.add_argument("--warmup", type=at_least(0), default=1, help="untimed iterations first")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--colors", type=at_least(0), default=0, help="multicolor: colors (0: model)")
    ap.add_argument("--chunk", type=at_least(0), default=0, help="chunk bytes of the pipelined algorithms (0: model)")
    ap.add_argument("--no-check", action="store_true", help="skip the per-call agreement check (as bench allreduce)")
    ap.add_argument("--verify-mib", type=at_least(0), default=512,
                    help="real data and a checked result while ranks x 3 x size fits in this many MiB")
    ap.add_argument("--cfg", action="append", default=[], help="extra smpirun --cfg=NAME:VALUE (repeatable)")
    ap.add_argument("--skip-reductions", action="store_true",
                    help="sizes on shared malloc: our reductions are not computed and cost no time (as SMPI's "
                         "own algorithms' reductions cost no simulated time); a large simulation runs faster")
    ap.add_argument("--network-only", action="store_true",
                    help="sizes on shared malloc: --skip-reductions, no host time between MPI calls simulated and "
                         "every send rendezvous (%s): the time is the network's, and 256 ranks simulate in about a "
                         "minute instead of hours" % " ".join("--cfg=" + c for c in NETWORK_ONLY_CFG))
    ap.add_argument("--json", default=None, help="write the records here")
    ap.add_argument("--compare", action="append", default=[],
                    help="a bench allreduce JSON (repeatable): print simulated vs measured for sizes >= 1 MiB")
    ap.add_argument("--compare-as", default="", help="SIM=MEASURED label pairs, e.g. mpi:mpich=mpi,mpi:lr=mpi:ring")
    ap.add_argument("--list", action="store_true", help="list the platforms in run/platforms")
    ap.add_argument("--quiet", action="store_true")
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: luatorch simulate allreduce|train [options]   (luatorch simulate allreduce --help, "
              "luatorch simulate train --help)")
        return 0 if argv else 2
    if argv[0] == "train":
        from run import simulate_train
        return simulate_train.main(argv[1:])
    if argv[0] != "allreduce":
        fail("unknown simulation %r: allreduce or train" % argv[0])
    args = parser().parse_args(argv[1:])
    if args.list:
        print("\n".join(platform_names()))
        return 0
    try:
        aliases = parse_aliases(args.compare_as)
        records = run_allreduce(args)
        print_report(records)
        write(args.json, records)
        if args.compare:
            print("\n" + compare(records, args.compare, aliases, 1 << 20))
    except SimulateError as e:
        fail(e)
    return 0 if all(r["correct"] is not False for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
