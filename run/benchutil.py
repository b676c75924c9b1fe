"""Shared helpers for the `luatorch bench` programs: timing, thread control, output."""
import json
import os
import statistics
import time


def time_calls(fn, repeat, warmup=1):
    """Wall-clock seconds of each of `repeat` calls of fn() after `warmup` calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def interleaved(fns, repeat, warmup=1):
    """Time several functions alternately (a, b, a, b, ...) so that machine noise hits
    them alike; returns one list of seconds per function."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    out = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            out[i].append(time.perf_counter() - t0)
    return out


def median(xs):
    return statistics.median(xs)


class numpy_threads:
    """Limit NumPy's BLAS threads (threadpoolctl) inside a with-block."""

    def __init__(self, n):
        self.n = n
        self.ctl = None

    def __enter__(self):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return self
        self.ctl = threadpool_limits(limits=self.n)
        return self

    def __exit__(self, *exc):
        if self.ctl is not None:
            self.ctl.restore_original_limits()


def write_json(path, records):
    if not path:
        return
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        json.dump(records, f, indent=2)
        f.write("\n")
    print("wrote %s" % path)


def print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).rjust(w) for h, w in zip(headers, widths))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(r, widths)))


TORCH_HINT = ("pip install 'luatorch[bench]' (for PyTorch's CPU-only build, a few hundred MB instead of several GB "
              "of CUDA libraries, first: pip install torch --index-url https://download.pytorch.org/whl/cpu)")


def require_torch(prog):
    """PyTorch, the oracle some benchmarks compare against; a one-line exit naming the extra when absent."""
    try:
        import torch
    except ImportError as e:
        raise SystemExit("%s: needs PyTorch as the side-by-side reference (%s); install it with %s"
                         % (prog, e, TORCH_HINT)) from None
    return torch
