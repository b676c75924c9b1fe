"""cutorch's sort family on the device (lua/cutorch/gpu_sort.lua, native/src/cuda_ops_sort.c, native/cuda/sort.cu):
sort, topk, kthvalue, median and mode along a dimension, without the staged path.

Oracles: numpy's stable argsort (kind='stable') on the same values, and our CPU torch methods on a host copy in
double. The order is the CPU's: stable (ties by index in both directions), NaN after every number ascending and
before every number descending. Inputs are fresh random values with many ties (small integers) and NaNs, in the
layouts of test_cutorch_gpu.LAYOUTS; slices longer than one tile (2048) go through the merge passes."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import LAYOUTS, fallbacks, gpu, to_device, to_host, view_of  # noqa: F401

HOST = {"Cuda": np.float32, "CudaDouble": np.float64, "CudaLong": np.int64, "CudaInt": np.int32,
        "CudaByte": np.uint8}
FAMILY = ("sort", "topk", "kthvalue", "median", "mode")


def staged(rt):
    return {k: v for k, v in fallbacks(rt).items() if any(f in k for f in FAMILY)}


def ties(rng, shape, cuda_name, nan=0.15):
    """small integers (many ties), NaN in a share of the places for the float types"""
    x = rng.integers(0, 5, shape).astype(np.float64)
    if HOST[cuda_name] in (np.float32, np.float64):
        x[rng.random(shape) < nan] = np.nan
        x[rng.random(shape) < 0.2] += 0.5
    return x.astype(HOST[cuda_name])


def stable_order(x, axis, desc):
    """1-based positions that sort x along axis in the CPU's order, from numpy's stable argsort"""
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    if not desc:
        order = np.argsort(x, axis=-1, kind="stable")   # NaN last, in index order
    else:
        # stable on -x puts the NaNs last, in index order: rotate them to the front
        order = np.argsort(-x, axis=-1, kind="stable")
        nans = np.isnan(np.take_along_axis(x, order, -1))
        order = np.stack([np.concatenate([o[m], o[~m]]) for o, m in
                          zip(order.reshape(-1, x.shape[-1]), nans.reshape(-1, x.shape[-1]))]).reshape(order.shape)
    return np.moveaxis(order, -1, axis) + 1


def sorted_by(x, pos, axis):
    return np.take_along_axis(np.asarray(x), pos - 1, axis)


def same(got, want):
    np.testing.assert_array_equal(got, want)   # NaN equal to NaN, dtypes compared by value


def host_double(rt, t):
    return rt.eval("function(t) return t:double() end")(t)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("cuda_name", ["Cuda", "CudaLong"])
def test_sort_matches_numpys_stable_argsort_in_every_layout(gpu, rng, layout, cuda_name):
    rt = gpu
    x = ties(rng, (9, 7), cuda_name)
    t = rt.eval(LAYOUTS[layout])(to_device(rt, x, cuda_name))
    xv = view_of(x, layout)
    sort = rt.eval("function(t, ...) local v, i = t:sort(...) return {v, i} end")
    for args, axis, desc in [((), 1, False), ((1,), 0, False), ((2, True), 1, True), ((1, True), 0, True),
                             ((True,), 1, True)]:
        v, i = sort(t, *args).values()
        assert rt.eval("function(v, i) return v:type() .. ' ' .. i:type() end")(v, i) == \
            "torch.%sTensor torch.CudaLongTensor" % cuda_name
        want = stable_order(xv, axis, desc)
        same(to_host(rt, i), want)
        same(to_host(rt, v), sorted_by(xv, want, axis))
    assert staged(rt) == {}


@pytest.mark.parametrize("cuda_name", sorted(HOST))
def test_sort_of_every_type_with_ties_and_nan(gpu, rng, cuda_name):
    rt = gpu
    x = ties(rng, (3, 33), cuda_name, nan=0.3)
    if cuda_name == "CudaLong":
        x = x * (2 ** 40) - 2 ** 41   # beyond 32 bits, negative
    t = to_device(rt, x, cuda_name)
    for desc in (False, True):
        v, i = rt.eval("function(t, d) local v, i = t:sort(2, d) return {v, i} end")(t, desc).values()
        want = stable_order(x, 1, desc)
        same(to_host(rt, i), want)
        same(to_host(rt, v), sorted_by(x, want, 1))
    assert staged(rt) == {}


def test_slices_longer_than_a_tile_are_merged(gpu, rng):
    rt = gpu
    # 3 tiles (two merge passes, the last run shorter), along a dimension of stride 2
    for cuda_name, desc in (("Cuda", False), ("Cuda", True), ("CudaLong", True)):
        x = ties(rng, (4100, 2), cuda_name)
        x[:, 1] = rng.integers(-10 ** 6, 10 ** 6, 4100)
        t = to_device(rt, x, cuda_name)
        v, i = rt.eval("function(t, d) local v, i = t:sort(1, d) return {v, i} end")(t, desc).values()
        want = stable_order(x, 0, desc)
        same(to_host(rt, i), want)
        same(to_host(rt, v), sorted_by(x, want, 0))
    # 5 tiles: an unpaired run in the first pass; the 3 largest and the median along it
    y = ties(rng, (1, 9000), "CudaDouble", nan=0.01)
    u = to_device(rt, y, "CudaDouble")
    v, i = rt.eval("function(t) local v, i = t:topk(3, 2, true, true) return {v, i} end")(u).values()
    want = stable_order(y, 1, True)[:, :3]
    same(to_host(rt, i), want)
    same(to_host(rt, v), sorted_by(y, want, 1))
    v, i = rt.eval("function(t) local v, i = t:median() return {v, i} end")(u).values()
    want = stable_order(y, 1, False)[:, 4499:4500]
    same(to_host(rt, i), want)
    same(to_host(rt, v), sorted_by(y, want, 1))
    assert staged(rt) == {}


def test_results_first_functional_forms_and_the_input_as_its_own_result(gpu, rng):
    rt = gpu
    x = ties(rng, (5, 6), "CudaDouble")
    want = stable_order(x, 0, True)
    t = to_device(rt, x, "CudaDouble")
    # torch.sort(values, indices, x, dim, desc) into given results of another layout (kept: same size)
    got = rt.eval("""function(t)
       local v, i = torch.CudaDoubleTensor(6, 5):t(), torch.CudaLongTensor(6, 5):t()
       local rv, ri = torch.sort(v, i, t, 1, true)
       assert(rv == v and ri == i and v:stride(1) == 1)
       return {v, i}
    end""")(t).values()
    v, i = got
    same(to_host(rt, i), want)
    same(to_host(rt, v), sorted_by(x, want, 0))
    # values:sort(x, ...) and indices:sort(x, ...), one result given; torch.sort(x, ...) and torch.topk(...)
    v, i, i2, v2, i3 = rt.eval("""function(t)
       local v, i = torch.CudaDoubleTensor(), torch.CudaLongTensor()
       local a, b = v:sort(t, 1, true)
       local c, d = i:sort(t, 1, true)
       assert(a == v and d == i)
       local e, f = torch.sort(t, 1, true)
       return {v, b, i, e, f}
    end""")(t).values()
    for vv, ii in ((v, i), (v2, i2), (v2, i3)):
        same(to_host(rt, ii), want)
        same(to_host(rt, vv), sorted_by(x, want, 0))
    # the input as its own values result: sorted in place
    i = rt.eval("function(t) local i = torch.CudaLongTensor() local a, b = torch.sort(t, i, t, 1, true) "
                "assert(a == t) return i end")(t)
    same(to_host(rt, t), sorted_by(x, want, 0))
    same(to_host(rt, i), want)
    # an empty tensor sorts to empty results
    assert rt.eval("function() local v, i = torch.CudaTensor():sort() return v:dim() + i:dim() + v:nElement() end")() == 0
    assert staged(rt) == {}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_topk_against_numpy_and_the_cpu(gpu, rng, layout):
    rt = gpu
    x = ties(rng, (8, 11), "Cuda")
    t = rt.eval(LAYOUTS[layout])(to_device(rt, x, "Cuda"))
    xv = view_of(x, layout)
    topk = rt.eval("function(t, ...) local v, i = t:topk(...) return {v, i} end")
    cpu = rt.eval("function(t, ...) local v, i = t:double():topk(...) return {v, i} end")
    n = xv.shape[1]
    for args, k, largest, is_sorted in [((), 1, False, False), ((3,), 3, False, False), ((3, 2, True, True), 3, True, True),
                                        ((n, 2, False, True), n, False, True), ((2, 2, True), 2, True, False)]:
        v, i = topk(t, *args).values()
        want = stable_order(xv, 1, largest)[:, :k]
        cv, ci = cpu(t, *args).values()
        gi, gv = to_host(rt, i), to_host(rt, v)
        assert gi.shape == (xv.shape[0], k) and gv.shape == (xv.shape[0], k)
        if is_sorted:
            same(gi, want)
            same(gv, sorted_by(xv, want, 1))
            same(gi, rt.to_numpy(ci))
            same(gv.astype(np.float64), rt.to_numpy(cv))
        else:   # Torch7 leaves the order open: the same k positions, each with its value
            same(np.sort(gi, 1), np.sort(want, 1))
            same(np.sort(gi, 1), np.sort(rt.to_numpy(ci), 1))
            same(gv, sorted_by(xv, gi, 1))
    # along dim 1 with results given
    v, i = rt.eval("function(t) local v, i = torch.CudaTensor(), torch.CudaLongTensor() "
                   "torch.topk(v, i, t, 2, 1, true, true) return {v, i} end")(t).values()
    want = stable_order(xv, 0, True)[:2]
    same(to_host(rt, i), want)
    same(to_host(rt, v), sorted_by(xv, want, 0))
    assert staged(rt) == {}
    # k beyond the slice: the staged path's error
    rt.eval("function(t) sortInput = t:contiguous():view(8, 11) end")(t)
    with pytest.raises(LuaError, match=r"topk: selected number k \(12\) out of range"):
        rt.execute("sortInput:topk(12)")
    assert staged(rt) == {"torch.CudaTensor:topk": 1}


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_kthvalue_median_and_mode_against_numpy_and_the_cpu(gpu, rng, layout):
    rt = gpu
    x = ties(rng, (10, 7), "Cuda")
    x[0] = np.nan                      # a slice of NaNs only
    x[1, :6] = [3, 1, 3, 1, 2, 2]      # three values twice: the smallest wins the mode, its last position
    t = rt.eval(LAYOUTS[layout])(to_device(rt, x, "Cuda"))
    xv = view_of(x, layout)
    call = rt.eval("function(t, name, ...) local v, i = t[name](t, ...) return {v, i} end")
    cpu = rt.eval("function(t, name, ...) local d = t:double() local v, i = d[name](d, ...) return {v, i} end")
    for name, args, axis in [("kthvalue", (1,), 1), ("kthvalue", (4,), 1), ("kthvalue", (7,), 1),
                             ("kthvalue", (2, 1), 0), ("median", (), 1), ("median", (1,), 0), ("mode", (), 1),
                             ("mode", (1,), 0)]:
        v, i = call(t, name, *args).values()
        gv, gi = to_host(rt, v), to_host(rt, i)
        cv, ci = cpu(t, name, *args).values()
        same(gi, rt.to_numpy(ci))
        same(gv.astype(np.float64), rt.to_numpy(cv))
        shape = list(xv.shape)
        shape[axis] = 1
        assert list(gi.shape) == shape and list(gv.shape) == shape
        if name == "mode":
            continue
        n = xv.shape[axis]
        k = args[0] if name == "kthvalue" else (n + 1) // 2
        want = np.take(stable_order(xv, axis, False), [k - 1], axis)
        same(gi, want)
        same(gv, sorted_by(xv, want, axis))
    # mode from counts, on the slices without NaN
    v, i = call(t, "mode").values()
    gv, gi = to_host(rt, v)[:, 0], to_host(rt, i)[:, 0]
    for r in range(xv.shape[0]):
        row = xv[r]
        if np.isnan(row).any():
            continue
        vals, counts = np.unique(row, return_counts=True)
        m = vals[np.argmax(counts)]    # the first (smallest) of the most frequent
        assert gv[r] == m and gi[r] == np.nonzero(row == m)[0][-1] + 1
    assert staged(rt) == {}
