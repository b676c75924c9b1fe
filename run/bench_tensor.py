"""`luatorch bench tensor`: element-wise add, multiply and a full sum on float32
tensors, and LAPACK / convolution on float64 (Torch7's default type), through
the Lua API against NumPy/SciPy:

    r:add(a, b), r:cmul(a, b), a:sum()   vs  np.add(a, b, out=r), np.multiply(a, b, out=r), a.sum()
    torch.gesv(B, A)  (A 512 x 512, B 512 x 16)  vs  np.linalg.solve(A, B)
    torch.svd(A)      (512 x 512, thin)          vs  np.linalg.svd(A, full_matrices=False)
    torch.inverse(A)  (512 x 512)                vs  np.linalg.inv(A)
    torch.conv2(x, k) (512 x 512 by 15 x 15)     vs  scipy.signal.convolve2d(x, k, 'valid')

    luatorch bench tensor [--size 16777216] [--matrix 512] [--image 512] [--kernel 15]
                          [--threads 1,2] [--repeat 9] [--json PATH]

Each call is timed from Python around one call of a Lua function that runs
the operation once (the lupa call costs microseconds, against milliseconds of
work), alternating ours and the reference in rounds so machine noise hits both
alike; the median is reported. Our thread count is set with torch.setnumthreads;
NumPy's ufuncs and sum run on one thread whatever the setting, its LAPACK
(bundled OpenBLAS) on as many as threadpoolctl allows (when installed).

The conv2 reference is SciPy's direct convolution when SciPy is installed (it
is not a luatorch dependency): the same sum of products per output, on one
thread. Without SciPy it is a NumPy FFT convolution (np.fft.rfft2), a
different and for big kernels cheaper algorithm; the `reference` column says
which one ran. np.linalg.svd calls LAPACK's divide-and-conquer gesdd, ours
gesvd as Torch7 did.

JSON: a list of records {op, n, threads, ours_ms, numpy_ms, ratio, reference}
with ratio = ours_ms / numpy_ms (numpy_ms is the reference's time).
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


def conv_reference():
    """(name, f(x, k)) computing the valid 2-D convolution torch.conv2 does."""
    try:
        from scipy.signal import convolve2d
    except ImportError:
        def fft_valid(x, k):
            shape = (x.shape[0] + k.shape[0] - 1, x.shape[1] + k.shape[1] - 1)
            full = np.fft.irfft2(np.fft.rfft2(x, shape) * np.fft.rfft2(k, shape), shape)
            return full[k.shape[0] - 1:x.shape[0], k.shape[1] - 1:x.shape[1]]
        return "numpy rfft2 (FFT)", fft_valid
    return "scipy.signal.convolve2d", lambda x, k: convolve2d(x, k, "valid")


def measure_linalg(n, image, kernel, threads, repeat):
    """gesv, svd and inverse of an n x n float64 matrix, conv2 of image^2 by kernel^2."""
    rt = Runtime(threads=threads)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
    B = rng.standard_normal((n, 16))
    x, k = rng.standard_normal((image, image)), rng.standard_normal((kernel, kernel))
    tA, tB, tx, tk = rt.from_numpy(A), rt.from_numpy(B), rt.from_numpy(x), rt.from_numpy(k)
    call = rt.call
    lua_gesv = rt.eval("function(b, a) return (torch.gesv(b, a)) end")
    lua_svd = rt.eval("function(a) local u, s, v = torch.svd(a); return s end")
    lua_inv = rt.eval("function(a) return torch.inverse(a) end")
    lua_conv = rt.eval("function(x, k) return torch.conv2(x, k) end")
    conv_name, conv_ref = conv_reference()
    cases = [
        ("gesv", n, lambda: call(lua_gesv, tB, tA), lambda: np.linalg.solve(A, B), "np.linalg.solve"),
        ("svd", n, lambda: call(lua_svd, tA), lambda: np.linalg.svd(A, full_matrices=False), "np.linalg.svd"),
        ("inverse", n, lambda: call(lua_inv, tA), lambda: np.linalg.inv(A), "np.linalg.inv"),
        ("conv2", image, lambda: call(lua_conv, tx, tk), lambda: conv_ref(x, k), conv_name),
    ]
    records = []
    with numpy_threads(threads):
        for op, size, ours, theirs, ref_name in cases:
            t_ours, t_ref = interleaved([ours, theirs], repeat, warmup=1)
            # both computed the same thing
            got, want = rt.to_numpy(ours()), theirs()
            if op == "svd":
                want = want[1]
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8 * max(1.0, float(np.abs(want).max())))
            ours_ms, ref_ms = median(t_ours) * 1e3, median(t_ref) * 1e3
            records.append({"op": op, "n": size, "threads": threads, "ours_ms": round(ours_ms, 3),
                            "numpy_ms": round(ref_ms, 3), "ratio": round(ours_ms / ref_ms, 3),
                            "reference": ref_name})
    return records


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench tensor", description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=16 * 1024 * 1024, help="float32 elements (default 16M)")
    p.add_argument("--matrix", type=int, default=512, help="gesv/svd/inverse matrix side (default 512)")
    p.add_argument("--image", type=int, default=512, help="conv2 image side (default 512)")
    p.add_argument("--kernel", type=int, default=15, help="conv2 kernel side (default 15)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--json", help="write the records as JSON here")
    args = p.parse_args(argv)
    records = []
    for t in args.threads.split(","):
        records += [dict(r, reference="numpy") for r in measure(args.size, int(t), args.repeat)]
        records += measure_linalg(args.matrix, args.image, args.kernel, int(t), args.repeat)
    print_table(["op", "n", "threads", "ours ms", "reference ms", "ratio", "reference"],
                [[r["op"], r["n"], r["threads"], r["ours_ms"], r["numpy_ms"], r["ratio"], r["reference"]]
                 for r in records])
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
