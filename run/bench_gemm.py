"""`luatorch bench gemm`: float32 GEMM through luatorch (Lua `r:mm(a, b)` -> C ->
OpenBLAS) against NumPy's `a @ b`, measured alternately in one run.

    luatorch bench gemm [--n 1024] [--threads 1,2] [--repeat 7] [--json PATH]

JSON: the headline run (the largest thread count) with keys n, threads,
ours_gflops, numpy_gflops, ratio (ours / numpy; the goal is >= 0.9), and
`runs`, the records of every thread count.
"""
import argparse

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import interleaved, median, numpy_threads, print_table, write_json


def measure(n, threads, repeat):
    rt = Runtime(threads=threads)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    ta, tb, tc = rt.from_numpy(a), rt.from_numpy(b), rt.from_numpy(c)
    ours = rt.eval("function(r, a, b) r:mm(a, b) end")
    call = rt.call

    def run_ours():
        call(ours, tc, ta, tb)

    def run_numpy():
        np.matmul(a, b, out=c)

    with numpy_threads(threads):
        t_ours, t_np = interleaved([run_ours, run_numpy], repeat, warmup=2)
    # both computed the same product: check it (catches a wrong transpose flag)
    call(ours, tc, ta, tb)
    ref = a @ b
    err = float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))
    flop = 2.0 * n ** 3
    ours_gf, np_gf = flop / median(t_ours) / 1e9, flop / median(t_np) / 1e9
    return {"n": n, "threads": threads, "ours_gflops": round(ours_gf, 1), "numpy_gflops": round(np_gf, 1),
            "ratio": round(ours_gf / np_gf, 3), "max_rel_error": err}


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", help="write the records as JSON here")
    args = p.parse_args(argv)
    records = [measure(args.n, int(t), args.repeat) for t in args.threads.split(",")]
    print_table(["n", "threads", "ours GFLOP/s", "numpy GFLOP/s", "ratio"],
                [[r["n"], r["threads"], r["ours_gflops"], r["numpy_gflops"], r["ratio"]] for r in records])
    headline = dict(max(records, key=lambda r: r["threads"]))
    headline["runs"] = records
    write_json(args.json, headline)
    return 0
