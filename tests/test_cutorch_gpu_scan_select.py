"""Scans by blocks and the selection for topk/kthvalue/median on cutorch's GPU backend (native/cuda/scan.cu's
lt_scan_totals/lt_scan_chunks, native/cuda/sort.cu's lt_select, chosen on the host by native/src/cuda_ops_index.c
and native/src/cuda_ops_sort.c).

The host picks a kernel by shape; LT_CUDA_SCAN=thread|block and LT_CUDA_SELECT=sort|select force one, so each test
runs both on the same values. Oracles: our CPU methods on a host copy (the same type: integers exact, wrapping in
64 bits; in double for the floating types), numpy's stable argsort for the CPU's (value, index) order, and for
topk with sorted=false on the selection its documented order (the k positions in index order), which also shows
that the selection ran. Float results of the block scan differ from the CPU's sequential order by double rounding
only: they must be within one ulp of the output type of the CPU's (a lost or doubled carry is off by far more)."""
import numpy as np
import pytest

from test_cutorch_gpu import fallbacks, gpu, to_device, to_host  # noqa: F401
from test_cutorch_gpu_sort import same, sorted_by, stable_order

HOST = {"Cuda": np.float32, "CudaDouble": np.float64, "CudaLong": np.int64, "CudaInt": np.int32,
        "CudaByte": np.uint8}
HOST_NAME = {"Cuda": "Float", "CudaDouble": "Double", "CudaLong": "Long", "CudaInt": "Int", "CudaByte": "Byte"}
SCAN_LAYOUTS = {   # (a base array's shape, the Lua view, the numpy view)
    "contiguous": ("function(t) return t end", lambda a: a),
    "transposed": ("function(t) return t:t() end", lambda a: a.T),
    "narrowed": ("function(t) return t:narrow(2, 3, t:size(2) - 5) end", lambda a: a[:, 2:a.shape[1] - 3]),
}


@pytest.fixture
def force(monkeypatch):
    """force(var, value): the host reads the choice at each call (getenv)"""
    def set_(var, value):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    return set_


def scan_values(rng, shape, cuda_name, prod):
    if HOST[cuda_name] in (np.float32, np.float64):
        if prod:   # factors near 1 keep long products in range
            return 1 + rng.uniform(-0.02, 0.02, shape)
        return rng.standard_normal(shape) * 100
    if cuda_name == "CudaLong":   # sums past 2^63 wrap
        return rng.integers(-2 ** 62, 2 ** 62, shape, dtype=np.int64)
    if cuda_name == "CudaByte":
        return rng.integers(0, 256, shape)
    return rng.integers(-2 ** 31, 2 ** 31, shape)


def host_copy(rt, t, name):
    return rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(t, name)


def check_scan(got, want, cuda_name, what, size):
    """size: the sum (product) of |x| up to each element; the double accumulations of two orders differ by at
    most about n eps_double times it; then one ulp of the output type for the rounding at the store"""
    if HOST[cuda_name] in (np.float32, np.float64):
        n = want.size
        tol = np.spacing(np.abs(want).astype(HOST[cuda_name])).astype(np.float64) + 2.0 ** -53 * 4 * n * size
        bad = ~(np.abs(got.astype(np.float64) - want) <= tol)
        assert not bad.any(), "%s: %d differ, first %r vs %r" % (what, bad.sum(), got[bad][:3], want[bad][:3])
    else:
        same(got, want)


@pytest.mark.parametrize("cuda_name, layout", [("Cuda", "contiguous"), ("Cuda", "transposed"), ("Cuda", "narrowed"),
                                               ("CudaDouble", "narrowed"), ("CudaLong", "transposed"),
                                               ("CudaInt", "contiguous"), ("CudaByte", "transposed")])
def test_scans_by_blocks_and_by_threads_match_the_cpu(gpu, rng, force, cuda_name, layout):
    rt = gpu
    lua_view, np_view = SCAN_LAYOUTS[layout]
    view = rt.eval(lua_view)
    forms = {"method": "function(x, op, d) return x[op](x, d) end",
             "result first": "function(x, op, d) local r = x.new() r[op](r, x, d) return r end"}
    for prod in (False, True):
        op = "cumprod" if prod else "cumsum"
        # 3 long slices along dim 2 (12 chunks each); dim 1: many short slices (forcing blocks on those is slow
        # on the emulator: a block per 3 elements)
        x = scan_values(rng, (3, 3001), cuda_name, prod)
        d = view(to_device(rt, x, cuda_name))
        h = view(host_copy(rt, to_device(rt, x, cuda_name), HOST_NAME[cuda_name]))
        xv = np_view(x)
        long_dim = 1 if layout == "transposed" else 2
        for dim in (long_dim, 3 - long_dim):
            hd = rt.eval("function(h, op, d) return h:double()[op](h:double(), d) end")(h, op, dim)
            habs = rt.eval("function(h, op, d) local a = torch.abs(h:double()) return a[op](a, d) end")(h, op, dim)
            hs = rt.eval("function(h, op, d) return h[op](h, d) end")(h, op, dim)
            want = rt.to_numpy(hd) if HOST[cuda_name] in (np.float32, np.float64) else rt.to_numpy(hs)
            for choice in ("thread", "block", None) if dim == long_dim else ("thread", None):
                force("LT_CUDA_SCAN", choice)
                for form, src in forms.items():
                    got = to_host(rt, rt.eval(src)(d, op, dim))
                    assert got.shape == xv.shape
                    check_scan(got, want, cuda_name, "%s %s dim %d %s %s" % (op, layout, dim, choice, form),
                               rt.to_numpy(habs))
        force("LT_CUDA_SCAN", None)
        if cuda_name == "CudaLong" and not prod:   # the wrap-around, from numpy
            want = np.cumsum(xv.astype(np.uint64), axis=long_dim - 1).astype(np.int64)
            same(to_host(rt, rt.eval(forms["method"])(d, op, long_dim)), want)
    # 40 slices of 300: by blocks (2 chunks per slice), the default; result first into a transposed result
    x = scan_values(rng, (40, 300), cuda_name, False)
    d = to_device(rt, x, cuda_name)
    got = rt.eval("function(x) local r = x.new(x:size(2), x:size(1)):t() torch.cumsum(r, x, 2) return r end")(d)
    want = rt.to_numpy(rt.eval("function(t) local h = t:double() return h:cumsum(2) end")(d))
    if HOST[cuda_name] in (np.float32, np.float64):
        check_scan(to_host(rt, got), want, cuda_name, "40 x 300", np.cumsum(np.abs(x.astype(np.float64)), 1))
    else:
        same(to_host(rt, got), rt.to_numpy(rt.eval("function(t, n) local h = t:type('torch.' .. n .. 'Tensor') "
                                                   "return h:cumsum(2) end")(d, HOST_NAME[cuda_name])))
    assert fallbacks(rt) == {}


def test_block_scans_in_place_zeros_nan_and_inf(gpu, rng, force):
    rt = gpu
    force("LT_CUDA_SCAN", "block")
    n = 5000
    x = 1 + rng.uniform(-0.01, 0.01, (2, n))
    x[0, 700] = 0.0         # products are 0 from here on
    x[1, 1000] = np.inf     # products are inf, then NaN after the 0
    x[1, 3000] = 0.0
    y = rng.standard_normal((2, n))
    y[0, 2500] = np.nan     # sums are NaN from here on
    y[1, 4000] = -np.inf
    for cuda_name in ("Cuda", "CudaDouble"):
        for op, v in (("cumprod", x), ("cumsum", y)):
            d = to_device(rt, v, cuda_name)
            got = to_host(rt, rt.eval("function(x, op) x[op](x, x, 2) return x end")(d, op))   # in place
            h = rt.eval("function(t, op) local h = t:double() return h[op](h, 2) end")(to_device(rt, v, cuda_name), op)
            want = rt.to_numpy(h)
            assert np.array_equal(np.isnan(got), np.isnan(want)), (cuda_name, op)
            assert np.array_equal(np.isinf(got), np.isinf(want)), (cuda_name, op)
            assert np.array_equal(got == 0, want == 0), (cuda_name, op)
            fin = np.isfinite(want)
            size = np.abs(np.cumprod(np.abs(v), 1) if op == "cumprod" else np.cumsum(np.abs(v), 1))
            check_scan(got[fin], want[fin], cuda_name, op, size[fin])
    # integer products with a zero: exact
    z = rng.integers(-3, 4, (1, 4000))
    z[0, 10] = 0
    got = to_host(rt, rt.eval("function(x) return x:cumprod(2) end")(to_device(rt, z, "CudaLong")))
    same(got, np.cumprod(z, 1))
    assert fallbacks(rt) == {}


# ----------------------------------------------------------------------------- selection
def select_values(rng, shape, cuda_name):
    """many ties; NaN, inf, -inf, 0 and -0 for the floating types; wide and negative integers"""
    x = rng.integers(-40, 40, shape).astype(np.float64)
    if HOST[cuda_name] in (np.float32, np.float64):
        x[rng.random(shape) < 0.05] = np.nan
        x[rng.random(shape) < 0.02] = np.inf
        x[rng.random(shape) < 0.02] = -np.inf
        x[rng.random(shape) < 0.05] = -0.0
        x[rng.random(shape) < 0.3] += 0.25
    elif cuda_name == "CudaLong":
        x = x * 2 ** 50
    elif cuda_name == "CudaInt":
        x = x * 2 ** 24
    return x.astype(HOST[cuda_name])


def same_values(got, x, pos, axis):
    """got are x's elements at the 1-based positions pos, -0 and 0 told apart"""
    want = sorted_by(x, pos, axis)
    same(got, want)
    if got.dtype.kind == "f":
        same(np.signbit(got), np.signbit(want))


SELECT_TYPES = ["Cuda", "CudaDouble", "CudaLong", "CudaInt"]


@pytest.mark.parametrize("cuda_name", SELECT_TYPES)
def test_topk_by_selection_matches_the_sort_and_the_cpu(gpu, rng, force, cuda_name):
    rt = gpu
    n = 4099   # more than a tile (2048): the selection's shapes
    x = select_values(rng, (n, 3), cuda_name)
    t = rt.eval("function(t) return t:t() end")(to_device(rt, x, cuda_name))   # transposed: (3, n), stride 3
    xv = x.T
    topk = rt.eval("function(t, ...) local v, i = t:topk(...) return {v, i} end")
    cpu = rt.eval("function(t, ...) local d = t:double() local v, i = d:topk(...) return {v, i} end")
    # the sort path and the host's own choice once (the emulator is slow), the selection everywhere
    for k in (1, 37, 2048) if cuda_name == "Cuda" else (1, 37):
        for largest in (False, True):
            want = stable_order(xv, 1, largest)[:, :k]
            cv, ci = cpu(t, k, 2, largest, True).values()
            same(want, rt.to_numpy(ci))
            for choice in ("select", "sort", None) if k == 37 else ("select",):
                force("LT_CUDA_SELECT", choice)
                for is_sorted in (True, False):
                    v, i = topk(t, k, 2, largest, is_sorted).values()
                    gi, gv = to_host(rt, i), to_host(rt, v)
                    assert gi.shape == (3, k) and gv.shape == (3, k)
                    if is_sorted or choice == "sort":
                        same(gi, want)
                    else:   # the selection's order: the same k positions, in index order
                        same(gi, np.sort(want, 1))
                    same_values(gv, xv, gi, 1)
                    if is_sorted:
                        same(gv.astype(np.float64), rt.to_numpy(cv))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("cuda_name", SELECT_TYPES)
def test_kthvalue_and_median_by_selection_match_the_sort_and_the_cpu(gpu, rng, force, cuda_name):
    rt = gpu
    n = 2 * 2048 + 77
    x = select_values(rng, (2, n + 6), cuda_name)
    x[1, 3:3 + n // 2] = x[1, 3]   # half the slice one value: the k-th among many ties
    base = to_device(rt, x, cuda_name)
    t = rt.eval("function(t) return t:narrow(2, 4, t:size(2) - 6) end")(base)   # narrowed: an offset
    xv = x[:, 3:n + 3]
    call = rt.eval("function(t, name, ...) local v, i = t[name](t, ...) return {v, i} end")
    given = rt.eval("function(t, k) local v, i = t.new(), torch.CudaLongTensor() "
                    "torch.kthvalue(v, i, t, k, 2) return {v, i} end")
    cpu = rt.eval("function(t, name, ...) local d = t:double() local v, i = d[name](d, ...) return {v, i} end")
    order = stable_order(xv, 1, False)
    for name, args, kth in [("kthvalue", (1,), 1), ("kthvalue", (n,), n), ("kthvalue", (1234, 2), 1234),
                            ("kthvalue", (n // 2 + 3,), n // 2 + 3), ("median", (), (n + 1) // 2),
                            ("median", (2,), (n + 1) // 2)]:
        want = order[:, kth - 1:kth]
        cv, ci = cpu(t, name, *args).values()
        same(want, rt.to_numpy(ci))
        for choice in ("select", "sort", None) if name == "median" else ("select",):
            force("LT_CUDA_SELECT", choice)
            v, i = call(t, name, *args).values()
            gv, gi = to_host(rt, v), to_host(rt, i)
            assert gi.shape == (2, 1) and gv.shape == (2, 1)
            same(gi, want)
            same_values(gv, xv, gi, 1)
            same(gv.astype(np.float64), rt.to_numpy(cv))
    force("LT_CUDA_SELECT", "select")
    v, i = given(t, 77).values()
    same(to_host(rt, i), order[:, 76:77])
    # along dim 1 of the transpose, and a slice of one value only
    flat = np.full((n, 1), 5, HOST[cuda_name])
    v, i = call(to_device(rt, flat, cuda_name), "kthvalue", 300, 1).values()
    same(to_host(rt, i), [[300]])
    same(to_host(rt, v), [[5]])
    if HOST[cuda_name] in (np.float32, np.float64):   # -0 and 0 are one value: the CPU's ties, by index
        zeros = np.where(rng.random((1, 3000)) < 0.5, 0.0, -0.0).astype(HOST[cuda_name])
        z = to_device(rt, zeros, cuda_name)
        order = stable_order(zeros, 1, False)
        for k in (1, 1500, 2999):
            v, i = call(z, "kthvalue", k).values()
            same(to_host(rt, i), order[:, k - 1:k])
            same_values(to_host(rt, v), zeros, to_host(rt, i), 1)
        v, i = call(z, "topk", 5, 2, True, True).values()
        same(to_host(rt, i), [[1, 2, 3, 4, 5]])
        same_values(to_host(rt, v), zeros, to_host(rt, i), 1)
    assert fallbacks(rt) == {}
