"""The `luatorch` command.

    luatorch th [script.lua args... | -e CODE | (REPL)]   Torch7's `th`
    luatorch demo                                          a short tour of the torch package
    luatorch train [--np N] [--devices D] [--model ...]    fb.resnet.torch-style data-parallel training
    luatorch bench gemm|tensor [--json PATH] ...           side-by-side benchmarks vs NumPy
    luatorch bench allreduce [--np N] [--algorithms ...]   allreduce algorithms vs MPI_Allreduce (OSU style)
    luatorch bench allreduce --cluster [--np N]            ... across the emulated cluster's hosts
    luatorch cluster up|down|status|exec|speed             emulated hosts: netns + veth + tc (root)
    luatorch bench data --data PACKED --files FOLDER       in-memory vs per-file loader (images/s, data wait)
    luatorch pack SRC OUT | pack --verify OUT              pack a data set into checksummed shards
    luatorch synth-data OUT --images N --classes K         an ImageNet-like folder of JPEGs
    luatorch bench dpt [--devices 1,2] [--json PATH]       DataParallelTable: Torch7 baseline vs optimized
"""
import argparse
import sys


def _bench(argv):
    parser = argparse.ArgumentParser(prog="luatorch bench", description="Benchmarks, measured side by side in one run.")
    parser.add_argument("what", choices=sorted(BENCHMARKS), help="which benchmark")
    args, rest = parser.parse_known_args(argv)
    module = __import__(BENCHMARKS[args.what], fromlist=["main"])
    return module.main(rest)


BENCHMARKS = {
    "allreduce": "run.bench_allreduce",
    "gemm": "run.bench_gemm",
    "tensor": "run.bench_tensor",
    "conv": "run.bench_conv",
    "model": "run.bench_model",
    "overhead": "run.bench_overhead",
    "train": "run.bench_train",
    "data": "run.bench_data",
    "dpt": "run.bench_dpt",
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "th": lambda rest: __import__("run.th", fromlist=["main"]).main(rest),
        "demo": lambda rest: __import__("run.th", fromlist=["main"]).demo(rest),
        "bench": _bench,
        "cluster": lambda rest: __import__("run.cluster", fromlist=["main"]).main(rest),
        "train": lambda rest: __import__("run.train", fromlist=["main"]).main(rest),
        "pack": lambda rest: __import__("run.pack", fromlist=["main"]).main(rest),
        "synth-data": lambda rest: __import__("run.pack", fromlist=["main"]).synth_main(rest),
    }
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in commands:
        print(__doc__.strip())
        if argv and argv[0] not in ("-h", "--help"):
            print("\nluatorch: unknown command %r" % argv[0], file=sys.stderr)
            return 2
        return 0
    return commands[argv[0]](argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
