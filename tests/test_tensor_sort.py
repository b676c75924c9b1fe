"""sort, topk, kthvalue, median, cumsum, cumprod against NumPy on all seven
types, every dimension, transposed / narrowed / expanded inputs, result
tensors given, ties (stable: original order kept) and NaN (sorted above all
numbers, as TH)."""
import time

import numpy as np
import pytest

from lt_oracle import DTYPES, N, T, call, empty, is_float, layouts, lua, rand
from pytorch_bridge import LuaError


def with_ties(rng, shape, dtype):
    """Values with many ties; floats also get NaNs."""
    x = rand(rng, shape, dtype, *((0, 4) if not is_float(dtype) else (None, None)))
    if is_float(dtype):
        x = np.round(x * 2) / 2
        x[rng.random(shape) < 0.1] = np.nan
    return x.astype(dtype)


def order(row, desc):
    """The stable order: NaN above every number, ties by original index."""
    nan = np.isnan(row) if row.dtype.kind == "f" else np.zeros(row.shape, bool)
    vals = np.where(nan, 0, row).astype(np.float64)
    idx = np.arange(len(row))
    if desc:
        return np.lexsort((idx, -vals, ~nan))
    return np.lexsort((idx, vals, nan))


def along(x, dim, fn):
    """Apply fn(row) -> (values, indices) to every 1-D slice along dim (0-based)."""
    xm = np.moveaxis(x, dim, -1)
    rows = xm.reshape(-1, xm.shape[-1])
    vs, ids = zip(*(fn(r) for r in rows)) if len(rows) else ([], [])
    k = len(vs[0])
    shape = xm.shape[:-1] + (k,)
    return (np.moveaxis(np.array(vs, dtype=x.dtype).reshape(shape), -1, dim),
            np.moveaxis(np.array(ids, dtype=np.int64).reshape(shape), -1, dim))


def same(got, want):
    np.testing.assert_array_equal(got, want)  # NaN == NaN here


# ---------------------------------------------------------------- sort


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_all_dims_layouts_and_directions(rt, rng, dtype):
    x = with_ties(rng, (5, 7, 6), dtype)
    x[:] = x[:1]  # constant along dim 1: the expanded layout exists
    x2 = with_ties(rng, (5, 7, 6), dtype)
    f = lua(rt, "local v, i = torch.sort(a, b, c); return v, i, torch.typename(i)")
    for arr in (x, x2):
        for ln, xv in layouts(rng, arr):
            for dim in range(3):
                for desc in (False, True):
                    v, i, tn = rt.call(f, T(rt, xv), dim + 1, desc)
                    assert tn == "torch.LongTensor"
                    wv, wi = along(arr, dim, lambda r: (r[order(r, desc)], order(r, desc) + 1))
                    same(N(rt, v), wv)
                    same(N(rt, i), wi)
            np.testing.assert_array_equal(xv, arr)  # input untouched


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8])
def test_sort_forms(rt, rng, dtype):
    x = with_ties(rng, (4, 9), dtype)
    asc = along(x, 1, lambda r: (r[order(r, False)], order(r, False) + 1))
    desc0 = along(x, 0, lambda r: (r[order(r, True)], order(r, True) + 1))
    for code, want in [
        ("return torch.sort(a)", asc),               # default: last dimension, ascending
        ("return a:sort()", asc),
        ("return a:sort(2, false)", asc),
        ("return a:sort(1, true)", desc0),
        ("return torch.sort(a, 1, true)", desc0),
    ]:
        v, i = call(rt, code, T(rt, x))
        same(N(rt, v), want[0])
        same(N(rt, i), want[1])
    # result tensors given (resized, returned); values may also be given alone
    rv, ri = empty(rt, x.dtype), empty(rt, np.int64)
    v, i = call(rt, "local v, i = torch.sort(a, b, c, 1, true); assert(v == a and i == b); return v, i", rv, ri, T(rt, x))
    same(N(rt, v), desc0[0])
    same(N(rt, i), desc0[1])
    v, i = call(rt, "return torch.sort(a, b)", empty(rt, x.dtype), T(rt, x))
    same(N(rt, v), asc[0])
    v, i = call(rt, "return torch.sort(a, b)", empty(rt, np.int64), T(rt, x))
    same(N(rt, i), asc[1])
    # in place: values written over the input (a transposed view)
    xt = np.ascontiguousarray(x.T).T
    call(rt, "torch.sort(a, b, a, 2)", T(rt, xt), empty(rt, np.int64))
    same(xt, asc[0])


def test_sort_1d_odd_sizes_and_empty(rt, rng):
    for n in (1, 2, 3, 25, 26, 100, 1001):
        for dtype in (np.float32, np.int64, np.int8):
            x = with_ties(rng, (n,), dtype)
            v, i = call(rt, "return torch.sort(a)", T(rt, x))
            same(N(rt, v), x[order(x, False)])
            same(N(rt, i), order(x, False) + 1)
    v, i = call(rt, "return torch.sort(torch.FloatTensor())")
    assert call(rt, "return a:dim(), b:dim()", v, i) == (0, 0)


def test_sort_large_is_n_log_n(rt, rng):
    """3e5 elements, also presorted / reversed / constant inputs: a quadratic
    algorithm would take minutes, the bounds leave room for a loaded machine."""
    n = 300_000
    x = rng.standard_normal(n)
    for arr in (x, np.sort(x), np.sort(x)[::-1].copy(), np.zeros(n)):
        t0 = time.perf_counter()
        v, i = call(rt, "return torch.sort(a)", T(rt, arr))
        assert time.perf_counter() - t0 < 3.0
        same(N(rt, i), np.argsort(arr, kind="stable") + 1)
        t0 = time.perf_counter()
        v, i = call(rt, "return torch.kthvalue(a, %d)" % (n // 2), T(rt, arr))
        assert time.perf_counter() - t0 < 3.0
        assert N(rt, v)[0] == np.sort(arr)[n // 2 - 1]
        assert N(rt, i)[0] == np.argsort(arr, kind="stable")[n // 2 - 1] + 1


def test_sort_many_slices_in_parallel(rt, rng):
    """Enough elements for the OpenMP path (one buffer per thread)."""
    for dtype in (np.float32, np.int16):
        x = with_ties(rng, (300, 211), dtype)
        for dim in (0, 1):
            v, i = call(rt, "return torch.sort(a, b, true)", T(rt, x), dim + 1)
            wv, wi = along(x, dim, lambda r: (r[order(r, True)], order(r, True) + 1))
            same(N(rt, v), wv)
            same(N(rt, i), wi)
            v, i = call(rt, "return torch.topk(a, 5, b, true, true)", T(rt, x), dim + 1)
            same(N(rt, i), np.take(wi, range(5), axis=dim))


# ---------------------------------------------------------------- topk / kthvalue / median


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk(rt, rng, dtype):
    x = with_ties(rng, (6, 11), dtype)
    f = lua(rt, "return torch.topk(a, b, c, d, e)")
    for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
        for dim in (0, 1):
            n = x.shape[dim]
            for k in (1, 3, n):
                for largest in (False, True):
                    wv, wi = along(x, dim, lambda r: (r[order(r, largest)[:k]], order(r, largest)[:k] + 1))
                    v, i = rt.call(f, T(rt, xv), k, dim + 1, largest, True)
                    same(N(rt, v), wv)
                    same(N(rt, i), wi)
                    # unsorted: the same set; values agree with their indices
                    v, i = rt.call(f, T(rt, xv), k, dim + 1, largest, False)
                    gv, gi = N(rt, v), N(rt, i)
                    same(np.sort(gi, axis=dim), np.sort(wi, axis=dim))
                    same(gv, np.take_along_axis(x, gi - 1, axis=dim))


def test_topk_forms_and_defaults(rt, rng):
    x = rng.standard_normal((3, 8))
    sorted_idx = np.argsort(x, axis=1, kind="stable")
    v, i = call(rt, "return torch.topk(a)", T(rt, x))        # k = 1, last dim, smallest
    same(N(rt, i), sorted_idx[:, :1] + 1)
    v, i = call(rt, "return a:topk(3, 2, true, true)", T(rt, x))
    same(N(rt, i), np.argsort(-x, axis=1, kind="stable")[:, :3] + 1)
    same(N(rt, v), -np.sort(-x, axis=1)[:, :3])
    rv, ri = empty(rt, np.float64), empty(rt, np.int64)
    v, i = call(rt, "local v, i = torch.topk(a, b, c, 2, 1, false, true); assert(v == a and i == b); return v, i",
                rv, ri, T(rt, x))
    same(N(rt, i), np.argsort(x, axis=0, kind="stable")[:2] + 1)
    with pytest.raises(LuaError, match="out of range"):
        call(rt, "return torch.topk(a, 9)", T(rt, x))
    with pytest.raises(LuaError, match="dimension 3 out of range"):
        call(rt, "return torch.topk(a, 1, 3)", T(rt, x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_kthvalue_and_median(rt, rng, dtype):
    x = with_ties(rng, (5, 8, 3), dtype)
    f = lua(rt, "return torch.kthvalue(a, b, c)")
    for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
        for dim in range(3):
            n = x.shape[dim]
            for k in sorted({1, (n + 1) // 2, n}):
                wv, wi = along(x, dim, lambda r: (r[order(r, False)[k - 1:k]], order(r, False)[k - 1:k] + 1))
                v, i = rt.call(f, T(rt, xv), k, dim + 1)
                same(N(rt, v), wv)  # the reduced dimension is kept with size 1 (Torch7)
                same(N(rt, i), wi)
            m = (n + 1) // 2
            v, i = call(rt, "return a:median(b)", T(rt, xv), dim + 1)
            wv, wi = along(x, dim, lambda r: (r[order(r, False)[m - 1:m]], order(r, False)[m - 1:m] + 1))
            same(N(rt, v), wv)
            same(N(rt, i), wi)
    # no dimension: along the last one, as Torch7's torch.median(x) (no medianall)
    m = (x.shape[2] + 1) // 2
    wv, wi = along(x, 2, lambda r: (r[order(r, False)[m - 1:m]], order(r, False)[m - 1:m] + 1))
    for form in ("torch.median(a)", "a:median()"):
        v, i = call(rt, "return " + form, T(rt, np.ascontiguousarray(x.T).T))
        same(N(rt, v), wv)
        same(N(rt, i), wi)
    v, i = call(rt, "return a:kthvalue(2)", T(rt, x))  # default: last dimension
    assert N(rt, v).shape == (5, 8, 1)
    with pytest.raises(LuaError, match="out of range"):
        call(rt, "return a:kthvalue(0)", T(rt, x))
    with pytest.raises(LuaError, match="out of range"):
        call(rt, "return a:kthvalue(4)", T(rt, x))


# ---------------------------------------------------------------- scans


def scan_oracle(x, dim, prod):
    if is_float(x.dtype):
        acc = np.cumprod if prod else np.cumsum
        return acc(x.astype(np.float64), axis=dim).astype(x.dtype)
    acc = np.cumprod if prod else np.cumsum
    return acc(x.astype(np.int64), axis=dim).astype(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_cumprod(rt, rng, dtype):
    x = rand(rng, (4, 5, 6), dtype)
    x[:] = x[:1]
    if is_float(dtype):
        x = (x * 0.5 + 1).astype(dtype)  # products stay moderate
    for name, prod in (("cumsum", False), ("cumprod", True)):
        f = lua(rt, "return torch.%s(a, b)" % name)
        for ln, xv in layouts(rng, x):
            for dim in range(3):
                # exact: accumulated in double / int64 as TH's accreal, then cast
                same(N(rt, rt.call(f, T(rt, xv), dim + 1)), scan_oracle(x, dim, prod))
        want1 = scan_oracle(x, 0, prod)
        same(N(rt, call(rt, "return torch.%s(a)" % name, T(rt, x))), want1)  # Torch7 default: dim 1
        same(N(rt, call(rt, "return a:%s()" % name, T(rt, x))), want1)
        same(N(rt, call(rt, "return a:%s(3)" % name, T(rt, x))), scan_oracle(x, 2, prod))
        r = empty(rt, dtype)
        same(N(rt, call(rt, "local r = torch.%s(a, b, 2); assert(r == a); return r" % name, r, T(rt, x))),
             scan_oracle(x, 1, prod))
        same(N(rt, call(rt, "return a:%s(b, 2)" % name, empty(rt, dtype), T(rt, x))), scan_oracle(x, 1, prod))
        # in place on a transposed view
        xt = np.ascontiguousarray(np.transpose(x)).transpose()
        call(rt, "torch.%s(a, a, 2)" % name, T(rt, xt))
        same(xt, scan_oracle(x, 1, prod))


def test_cumsum_wraps_and_float32_accumulates_in_double(rt, rng):
    x = np.full(300, 100, np.int8)
    same(N(rt, call(rt, "return torch.cumsum(a)", T(rt, x))), np.cumsum(x.astype(np.int64)).astype(np.int8))
    y = (rng.random(100000) * 1000).astype(np.float32)
    got = N(rt, call(rt, "return torch.cumsum(a)", T(rt, y)))
    same(got, np.cumsum(y.astype(np.float64)).astype(np.float32))
    assert not np.array_equal(got, np.cumsum(y))  # a float accumulator would drift


def test_errors(rt):
    with pytest.raises(LuaError, match="dimension 3 out of range of 2D tensor"):
        call(rt, "return torch.sort(torch.Tensor(2, 3), 3)")
    with pytest.raises(LuaError, match="dimension 0 out of range"):
        call(rt, "return torch.cumsum(torch.Tensor(2, 3), 0)")
    with pytest.raises(LuaError, match="indices must be a LongTensor"):
        call(rt, "return torch.sort(torch.Tensor(2), torch.IntTensor(), torch.Tensor(2))")
    with pytest.raises(LuaError, match="descending must be a boolean"):
        call(rt, "return torch.sort(torch.Tensor(2), 1, 1)")
    with pytest.raises(LuaError, match="result must be a DoubleTensor"):
        call(rt, "return torch.cumsum(torch.FloatTensor(), torch.Tensor(2))")
