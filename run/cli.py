"""The `luatorch` command: the commands are COMMANDS (and BENCHMARKS for `luatorch bench NAME`), and
`luatorch --help` is written from those tables, so it lists every command there is."""
import argparse
import difflib
import sys

PROG = "luatorch"

# name: (module, function, what it does)
COMMANDS = {
    "train": ("run.train", "main", "fb.resnet.torch-style training, data-parallel over MPI ranks x devices"),
    "th": ("run.th", "main", "Torch7's th: run a Lua script (-e CODE, -l PACKAGE), or a REPL"),
    "demo": ("run.th", "demo", "a short tour of the torch package"),
    "bench": ("run.cli", "bench", "benchmarks, measured side by side in one run (NAME below)"),
    "pack": ("run.pack", "main", "pack a data set into checksummed shards (--verify OUT rechecks them)"),
    "synth-data": ("run.pack", "synth_main", "write an ImageNet-like folder of JPEGs"),
    "data": ("run.data_cmd", "main", "the in-memory data store's segments in /dev/shm: list, clean"),
    "cluster": ("run.cluster", "main", "emulated hosts, netns + veth + tc (root): up, down, status, exec, speed"),
    "simulate": ("run.simulate", "main", "SimGrid SMPI: allreduce (ours vs the MPI libraries') or train (the paper's iteration at scale)"),
    "cuda": ("run.cuda_cmd", "main", "the GPU path: CUDA libraries and devices found (info), NVRTC pre-compile of every kernel (compile)"),
    "display": ("run.display_server", "main", "the browser display server of Torch7's display package (display.image/plot)"),
    "programs": ("run.programs", "main", "run a real Torch7 program (fb.resnet.torch, char-rnn, dcgan.torch, pix2pix, ...) from a git copy, on data made here"),
}

# name: (module, what it measures); each module's main(argv) has its own --help
BENCHMARKS = {
    "gemm": ("run.bench_gemm", "sgemm GFLOP/s, ours vs NumPy"),
    "tensor": ("run.bench_tensor", "add/mul/sum, gesv/svd/inverse, conv2, ours vs NumPy/SciPy"),
    "conv": ("run.bench_conv", "ResNet-50 convolutions forward+backward, ours vs PyTorch"),
    "nn": ("run.bench_nn", "nn's heavy layers (full/3-D/dilated conv, LRN, LookupTable) forward+backward vs PyTorch"),
    "model": ("run.bench_model", "training step images/s of the paper's models, ours vs PyTorch eager"),
    "overhead": ("run.bench_overhead", "framework cost per module call and per iteration, Lua vs Python"),
    "allreduce": ("run.bench_allreduce", "our allreduce algorithms vs the MPI library's (--np N, --cluster)"),
    "dpt": ("run.bench_dpt", "nn.DataParallelTable: Torch7's baseline vs the optimized one"),
    "data": ("run.bench_data", "in-memory vs per-file loader: images/s and data wait"),
    "train": ("run.bench_train", "the paper's three optimizations on and off, weak scaling over ranks"),
    "cuda": ("run.bench_cuda", "on a GPU: our kernels' launch cost and bandwidth, PyTorch CUDA's training step"),
}


def usage_error(prog, message):
    """A mistake on the command line: one line naming it, exit status 2. Under an MPI launcher only the
    first rank says it (every rank has the same thing to say)."""
    from run.launch import launcher_rank

    if launcher_rank() in (None, 0):
        print("%s: %s" % (prog, message), file=sys.stderr)
    raise SystemExit(2)


def suggestion(word, choices):
    """' (did you mean X?)' for the choice closest to word, or ''."""
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return " (did you mean %s?)" % lowered[close[0]] if close else ""


def at_least(low, kind=int):
    """A converter (an argparse type) for a number >= low, whose error says what was given."""
    def convert(text):
        try:
            value = kind(text)
        except (TypeError, ValueError):
            value = None
        if value is None or value != value or value < low:
            raise argparse.ArgumentTypeError("must be %s >= %s (got %s)" % (
                "an integer" if kind is int else "a number", low, text))
        return value
    return convert


def version():
    from importlib import metadata

    try:
        return metadata.version("luatorch")
    except metadata.PackageNotFoundError:
        return "unknown (not installed: no package metadata)"


def usage():
    names = {n: n + " NAME" if n == "bench" else n for n in COMMANDS}
    width = max(len(n) for n in names.values()) + 2
    lines = ["usage: luatorch COMMAND [options]   (luatorch COMMAND --help: the command's options)", "", "commands:"]
    for name, (_, _, what) in COMMANDS.items():
        lines.append("  %-*s %s" % (width, names[name], what))
        if name == "bench":
            lines += bench_list(indent=6)
    lines += ["", "options:", "  %-*s %s" % (width, "--version", "the installed version"),
              "  %-*s %s" % (width, "--help", "this list")]
    return "\n".join(lines)


def bench_list(indent=2):
    width = max(len(n) for n in BENCHMARKS) + 2
    return ["%s%-*s %s" % (" " * indent, width, n, what) for n, (_, what) in BENCHMARKS.items()]


def bench(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print("\n".join(["usage: luatorch bench NAME [options]   (luatorch bench NAME --help: its options)", "",
                         *bench_list()]))
        return 0 if argv else 2
    what = argv[0]
    if what not in BENCHMARKS:
        usage_error("luatorch bench", "unknown benchmark %r%s; one of %s" % (
            what, suggestion(what, BENCHMARKS), ", ".join(BENCHMARKS)))
    return __import__(BENCHMARKS[what][0], fromlist=["main"]).main(argv[1:])


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        print("luatorch %s" % version())
        return 0
    if argv[0] not in COMMANDS:
        usage_error(PROG, "unknown command %r%s; see luatorch --help" % (argv[0], suggestion(argv[0], COMMANDS)))
    from run.launch import under_launcher

    if under_launcher():  # before any command loads mpi4py: this picks the MPI of the launcher that started us
        import pytorch_bridge.mpi  # noqa: F401
    module, function = COMMANDS[argv[0]][:2]
    return getattr(__import__(module, fromlist=[function]), function)(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
