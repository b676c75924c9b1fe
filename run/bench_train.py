"""`luatorch bench train`: training iteration time and its breakdown with the paper's three
optimizations each on and off, and weak scaling over ranks — real `luatorch train` runs, side by side.

    luatorch bench train [--model resnet --depth 8] [--dataset builtin] [--iters 20]
                         [--batch-per-rank 32] [--ranks 1,2,4] [--json PATH] [--svg PATH]
                         [--configs all|paper|scaling] [-- extra luatorch train options]

Every configuration is one `luatorch train` launch (`--np N` under the MPI launcher) running two
epochs of `--iters` iterations each without validation; the second epoch's record is used (the first
warms up allocators, the JIT and the page cache). Per-rank batch is fixed (weak scaling): the global
batch is ranks x batch-per-rank. The breakdown comes from the trainer's own timers on rank 0 (data
wait, forward+backward — which includes the DataParallelTable's device reduction —, allreduce, sgd).

Configurations (`--configs paper`): the baseline (files + mpi allreduce + Torch7 DataParallelTable),
all three optimizations (memory + multicolor + optimized DPT), and each optimization alone switched
off. `--configs scaling`: all optimizations on, at every rank count of `--ranks`.
JSON: a list of records {config, ranks, devices, data, allreduce, dpt, batch_per_rank, global_batch,
iter_ms, data_ms, compute_ms, allreduce_ms, update_ms, images_per_s, weak_scaling_efficiency}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from run.benchutil import print_table, write_json
from run.cli import at_least
from run.launch import child_env, python_module, shown

OPTIMIZED = {"data": "memory", "allreduce": "multicolor", "dpt": "optimized"}
BASELINE = {"data": "files", "allreduce": "mpi", "dpt": "baseline"}


def configurations(which, ranks, devices, files=True):
    """files=False: the data set has no per-image files (built-in, packed from arrays), so the data
    source stays `memory` everywhere and its on/off pair is left out."""
    top = max(ranks)
    base = BASELINE if files else {**BASELINE, "data": "memory"}
    confs = []
    if which in ("paper", "all"):
        confs.append(("baseline", top, base))
        confs.append(("all optimizations", top, OPTIMIZED))
        for key, name in (("data", "without in-memory data"), ("allreduce", "without multi-color allreduce"),
                          ("dpt", "without optimized DPT")):
            if key == "data" and not files:
                continue
            confs.append((name, top, {**OPTIMIZED, key: BASELINE[key]}))
    if which in ("scaling", "all"):
        for n in ranks:
            if not (which == "all" and n == top):
                confs.append(("scaling", n, OPTIMIZED))
    return [(name, n, {**c, "devices": devices}) for name, n, c in confs]


def run_one(args, name, ranks, conf, extra):
    with tempfile.TemporaryDirectory(prefix="luatorch-bench-train-") as save:
        cmd = [*python_module("run.cli"), "train", "--save", save, "--model", args.model,
               "--dataset", args.dataset, "--epochs", "2", "--max-iters", str(args.iters), "-validate", "false",
               "--batch-size", str(args.batch_per_rank * ranks), "--data", conf["data"],
               "--allreduce", conf["allreduce"], "--dpt", conf["dpt"], "--devices", str(conf["devices"]),
               "--workers", str(args.workers), *extra]
        if args.depth:
            cmd += ["--depth", str(args.depth)]
        if ranks > 1:
            cmd += ["--np", str(ranks)]
        env = child_env()
        print("# %s: %d rank(s), %s" % (name, ranks, ", ".join("%s=%s" % kv for kv in conf.items())), flush=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("luatorch bench train: run failed (%d): %s\n%s" % (r.returncode, shown(cmd),
                                                                               r.stderr[-3000:]))
        with open(os.path.join(save, "log.jsonl")) as f:
            rec = [json.loads(line) for line in f][-1]
    n = rec["iterations"]
    return {"config": name, "ranks": ranks, "devices": conf["devices"], "data": conf["data"],
            "allreduce": conf["allreduce"], "dpt": conf["dpt"], "batch_per_rank": args.batch_per_rank,
            "global_batch": args.batch_per_rank * ranks,
            "iter_ms": round(1e3 * rec["train_seconds"] / n, 2),
            "data_ms": round(1e3 * rec["time_data"] / n, 2), "compute_ms": round(1e3 * rec["time_compute"] / n, 2),
            "allreduce_ms": round(1e3 * rec["time_allreduce"] / n, 2),
            "update_ms": round(1e3 * rec["time_update"] / n, 2), "images_per_s": round(rec["images_per_s"], 1)}


def rank_list(text):
    """--ranks 1,2,4: rank counts >= 1."""
    try:
        return [at_least(1)(r) for r in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("must be rank counts >= 1, comma-separated (got %s)" % text) from None


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(prog="luatorch bench train", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet", help="as luatorch train --model")
    p.add_argument("--depth", type=at_least(0), default=8, help="as luatorch train --depth (0: the data's default)")
    p.add_argument("--dataset", default="builtin", help="as luatorch train --dataset")
    p.add_argument("--iters", type=at_least(1), default=20, help="training iterations per epoch (2 epochs per run)")
    p.add_argument("--batch-per-rank", type=at_least(1), default=32)
    p.add_argument("--ranks", type=rank_list, default=[1, 2, 4], help="rank counts, comma-separated (default 1,2,4)")
    p.add_argument("--devices", type=at_least(1), default=1, help="DataParallelTable devices per rank")
    p.add_argument("--workers", type=at_least(0), default=1, help="data loading workers per rank")
    p.add_argument("--configs", default="all", choices=["all", "paper", "scaling"])
    p.add_argument("--json", help="write the records here")
    p.add_argument("--svg", help="stacked-bar plot of the per-iteration breakdown")
    args = p.parse_args(argv)
    ranks = args.ranks
    files = args.dataset != "builtin"
    if not files:
        print("# the built-in set is packed from arrays (no per-image files): in-memory data is on in every run")
    records = [run_one(args, name, n, conf, extra) for name, n, conf in configurations(args.configs, ranks,
                                                                                       args.devices, files)]
    single = [r for r in records if r["ranks"] == 1 and r["data"] == "memory" and r["allreduce"] == "multicolor"
              and r["dpt"] == "optimized"]
    for r in records:
        if single and r["config"] in ("scaling", "all optimizations"):
            r["weak_scaling_efficiency"] = round(r["images_per_s"] / (r["ranks"] * single[0]["images_per_s"]), 3)
    print()
    print_table(["config", "ranks", "iter ms", "data", "fwd+bwd", "allreduce", "update", "img/s", "weak eff."],
                [[r["config"], r["ranks"], r["iter_ms"], r["data_ms"], r["compute_ms"], r["allreduce_ms"],
                  r["update_ms"], r["images_per_s"], r.get("weak_scaling_efficiency", "")] for r in records])
    if args.svg:
        from run.svgplot import stacked_bars

        stacked_bars(["%s/%d" % (r["config"][:18], r["ranks"]) for r in records],
                     {k: [r[k + "_ms"] for r in records] for k in ("data", "compute", "allreduce", "update")},
                     args.svg, "training iteration breakdown (%s, batch %d per rank)" % (args.model,
                                                                                        args.batch_per_rank),
                     "ms per iteration", )
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
