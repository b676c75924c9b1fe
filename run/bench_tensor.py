"""`luatorch bench tensor`: element-wise add, multiply and a full sum on float32
tensors through the Lua API (`r:add(a, b)`, `r:cmul(a, b)`, `a:sum()`) against
NumPy (`np.add(a, b, out=r)`, `np.multiply(a, b, out=r)`, `a.sum()`).

    luatorch bench tensor [--size 16777216] [--threads 1,2] [--repeat 9] [--json PATH]

Each call is timed from Python around one call of a Lua function that runs
the operation once (the lupa call costs microseconds, against milliseconds of
work), alternating ours and NumPy's so machine noise hits both alike; the
median is reported. Our thread count is set with torch.setnumthreads; NumPy's
ufuncs and sum run on one thread whatever the setting (threadpoolctl, when
installed, only limits its BLAS), so the NumPy column is single-threaded.

JSON: a list of records {op, n, threads, ours_ms, numpy_ms, ratio} with
ratio = ours_ms / numpy_ms (the goal is <= 1.5).
"""
import argparse

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import interleaved, median, numpy_threads, print_table, write_json


def measure(n, threads, repeat):
    rt = Runtime(threads=threads)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    r = np.empty(n, np.float32)
    ta, tb, tr = rt.from_numpy(a), rt.from_numpy(b), rt.from_numpy(r)
    call = rt.call
    lua_add = rt.eval("function(r, a, b) r:add(a, b) end")
    lua_mul = rt.eval("function(r, a, b) r:cmul(a, b) end")
    lua_sum = rt.eval("function(a) return a:sum() end")
    cases = [
        ("add", lambda: call(lua_add, tr, ta, tb), lambda: np.add(a, b, out=r), lambda: a + b),
        ("mul", lambda: call(lua_mul, tr, ta, tb), lambda: np.multiply(a, b, out=r), lambda: a * b),
        ("sum", lambda: call(lua_sum, ta), lambda: a.sum(), None),
    ]
    records = []
    with numpy_threads(threads):
        for op, ours, theirs, ref in cases:
            t_ours, t_np = interleaved([ours, theirs], repeat, warmup=2)
            # both did the same thing
            if ref is not None:
                ours()
                np.testing.assert_array_equal(r, ref())
            else:
                assert abs(ours() - float(a.astype(np.float64).sum())) <= 1e-6 * float(np.abs(a).sum())
            ours_ms, np_ms = median(t_ours) * 1e3, median(t_np) * 1e3
            records.append({"op": op, "n": n, "threads": threads, "ours_ms": round(ours_ms, 3),
                            "numpy_ms": round(np_ms, 3), "ratio": round(ours_ms / np_ms, 3)})
    return records


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench tensor", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=16 * 1024 * 1024, help="float32 elements (default 16M)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--json", help="write the records as JSON here")
    args = p.parse_args(argv)
    records = []
    for t in args.threads.split(","):
        records += measure(args.size, int(t), args.repeat)
    print_table(["op", "n", "threads", "ours ms", "numpy ms", "ratio"],
                [[r["op"], r["n"], r["threads"], r["ours_ms"], r["numpy_ms"], r["ratio"]] for r in records])
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
