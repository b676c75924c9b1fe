"""cutorch methods that ran staged and now run on the device: the result-first forms of the reductions
(lua/cutorch/gpu_math.lua: torch.sum(r, x, d), torch.max(values, indices, x, d), values:max(x, d), ...), cross
(lua/cutorch/gpu_matrix.lua: the device's cmul and cadd on the three slices) and histc (native/cuda/histc.cu through
native/src/cuda_ops_histc.c: per-block counts, then their sums); and bmm/baddbmm as one strided batched cuBLAS call
(lt_cuops_baddbmm) where the batch is equally strided.

Like tests/test_cutorch_gpu.py these need the GPU backend and skip without it; in CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs this file on the emulated driver. Oracles: numpy
on the same values, and the CPU methods (in double where rounding could differ) for results and errors; every call
that should run on the device must (cutorch.hostFallbacks() stays empty)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import LAYOUTS, fallbacks, gpu, to_device, to_host, view_of  # noqa: F401 (fixtures)

DTYPE = {"Cuda": np.float32, "CudaDouble": np.float64, "CudaLong": np.int64, "CudaInt": np.int32,
         "CudaByte": np.uint8}


def values(rng, name, shape, low=-50, high=50):
    if np.dtype(DTYPE[name]).kind == "f":
        return (rng.standard_normal(shape) * 3).astype(DTYPE[name])
    if name == "CudaByte":
        low, high = 0, 255
    return rng.integers(low, high, shape, endpoint=True).astype(DTYPE[name])


def tol(name):
    return {"Cuda": 2e-5, "CudaDouble": 1e-12}.get(name, 0)


# ----------------------------------------------------------------------------- result-first reductions

@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaLong"])
def test_sum_prod_mean_into_a_given_result(gpu, rng, layout, name):
    """torch.op(r, x, d) and r:op(x, d) for sum, prod and mean (Float, Double), on every layout of x, into a fresh
    result, one of another shape (resized) and a strided view of the right shape (written in place, its other
    elements kept)."""
    rt = gpu
    x = values(rng, name, (7, 10), -3, 3)
    xv = view_of(x, layout)
    view = rt.eval(LAYOUTS[layout])
    ops = [("sum", np.sum), ("prod", np.prod)] + ([("mean", np.mean)] if name != "CudaLong" else [])
    for op, ref in ops:
        for dim in (1, 2):
            want = ref(xv.astype(np.float64), axis=dim - 1, keepdims=True)
            got = rt.eval("""function(view, t, op, dim)
               local x = view(t)
               local r1, r2 = x.new(), x.new(3, 4):fill(9)
               local size = x:size()
               size[dim] = 1
               -- a strided view of the result's shape inside a bigger tensor filled with 7s
               local big = x.new(size[2], 3 * size[1]):fill(7)
               local r3 = big:narrow(2, 2, size[1]):t()
               local same = torch[op](r1, x, dim) == r1 and r2[op](r2, x, dim) == r2
               torch[op](r3, x, dim)
               return {r1, r2, r3, big, same}
            end""")(view, to_device(rt, x, name), op, dim)
            for k in (1, 2, 3):
                np.testing.assert_allclose(to_host(rt, got[k]), want, rtol=tol(name) * 10, atol=tol(name) * 10,
                                           err_msg="%s(%d) form %d" % (op, dim, k))
            big = to_host(rt, got[4])
            assert (big[:, 0] == 7).all() and (big[:, want.shape[0] + 1:] == 7).all() and got[5] is True
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaLong", "CudaInt"])
def test_max_min_into_given_values_and_indices(gpu, rng, layout, name):
    """torch.max(values, indices, x, d), values:max(indices, x, d), values:max(x, d) (new indices) and the same of
    min, on every layout; ties (integers) take the first position, as numpy's argmax."""
    rt = gpu
    x = values(rng, name, (7, 10), -4, 4)
    xv = view_of(x, layout)
    view = rt.eval(LAYOUTS[layout])
    for op in ("max", "min"):
        for dim in (1, 2):
            got = rt.eval("""function(view, t, op, dim)
               local x = view(t)
               local v1, i1 = x.new(), torch.CudaLongTensor()
               local v2, i2 = x.new(2, 2), torch.CudaLongTensor(5)
               local v3 = x.new()
               local a, b = torch[op](v1, i1, x, dim)
               local c, d = v2[op](v2, i2, x, dim)
               local e, i3 = v3[op](v3, x, dim)
               return {v1, i1, v2, i2, v3, i3, a == v1 and b == i1 and c == v2 and d == i2 and e == v3,
                       torch.type(i3)}
            end""")(view, to_device(rt, x, name), op, dim)
            want = (np.max if op == "max" else np.min)(xv, axis=dim - 1, keepdims=True)
            arg = np.expand_dims((np.argmax if op == "max" else np.argmin)(xv, axis=dim - 1), dim - 1) + 1
            for k in (1, 3, 5):
                np.testing.assert_array_equal(to_host(rt, got[k]), want, err_msg="%s(%d) values %d" % (op, dim, k))
                np.testing.assert_array_equal(to_host(rt, got[k + 1]), arg, err_msg="%s(%d) indices %d" % (op, dim, k))
            assert got[7] is True and got[8] == "torch.CudaLongTensor"
    assert fallbacks(rt) == {}


def test_max_min_of_two_tensors_are_cmax_and_cmin(gpu, rng):
    """torch.max(x, y) and r:max(x, y) are cmax (min: cmin), as the CPU's."""
    rt = gpu
    x, y = rng.standard_normal((2, 5, 6))
    got = rt.eval("""function(x, y)
       local r = x.new()
       return {torch.max(x, y), r:min(x, y), r, x:max(y)}
    end""")(to_device(rt, x, "CudaDouble"), to_device(rt, y, "CudaDouble"))
    np.testing.assert_array_equal(to_host(rt, got[1]), np.maximum(x, y))
    np.testing.assert_array_equal(to_host(rt, got[2]), np.minimum(x, y))
    np.testing.assert_array_equal(to_host(rt, got[3]), np.minimum(x, y))
    np.testing.assert_array_equal(to_host(rt, got[4]), np.maximum(x, y))
    assert fallbacks(rt) == {}


def test_result_first_reductions_keep_the_cpus_errors_and_aliasing(gpu, rng):
    """A dimension out of range or not an integer, a result of another type and a mean of integers give the CPU's
    errors (they run staged); a result in the input's storage runs staged too, with the CPU's values."""
    rt = gpu
    x = rng.standard_normal((4, 6))
    # {C} is Cuda on the device and empty on the host
    for code in ["torch.sum(r, x, 3)", "torch.max(r, torch.{C}LongTensor(), x, 0)",
                 "torch.sum(torch.{C}LongTensor(), x, 1)", "torch.mean(torch.{C}IntTensor(), x:int(), 1)",
                 "r:min(torch.{C}LongTensor(), x, 1.5)"]:
        errors = []
        for conv, prefix in (("cudaDouble", "Cuda"), ("double", "")):
            fn = rt.eval("""function(x) local x = x:%s() local r = x.new()
               local ok, e = pcall(function() return %s end) return e end""" % (conv, code.format(C=prefix)))
            errors.append(fn(rt.from_numpy(x)))
        assert errors[0] is not None, code
        assert errors[0].split(": ", 1)[1].replace("Cuda", "") == errors[1].split(": ", 1)[1], code
    # the result in the input's storage (rows 5 and 6 of the tensor whose rows 1-4 are x): staged, right values
    both = to_device(rt, np.concatenate([x, np.zeros((2, 6))]), "CudaDouble")
    rt.eval("function(b) torch.sum(b:narrow(1, 5, 1), b:narrow(1, 1, 4), 1) "
            "b:narrow(1, 6, 1):max(torch.CudaLongTensor(), b:narrow(1, 1, 4), 1) end")(both)
    np.testing.assert_allclose(to_host(rt, both), np.concatenate([x, x.sum(0, keepdims=True), x.max(0, keepdims=True)]),
                               rtol=1e-12)
    # a result over elements of other slices (r[j] is x's row 2, column 2j): what the CPU's slice order gives
    overlap = rt.eval("""function(t)
       local x = t:narrow(2, 1, 6)
       local r = t.new():set(t:storage(), t:storageOffset() + t:stride(1), torch.LongStorage{1, 6},
                             torch.LongStorage{t:stride(1), 2})
       torch.sum(r, x, 1)
       return t
    end""")
    wide = rng.standard_normal((4, 12))
    np.testing.assert_array_equal(to_host(rt, overlap(to_device(rt, wide, "CudaDouble"))),
                                  rt.to_numpy(overlap(rt.from_numpy(wide.copy()))))
    assert set(fallbacks(rt)) <= {"torch.CudaDoubleTensor:sum", "torch.CudaDoubleTensor:max",
                                  "torch.CudaLongTensor:sum", "torch.CudaDoubleTensor:min", "torch.CudaIntTensor:mean"}


# ----------------------------------------------------------------------------- cross

@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaLong", "CudaInt", "CudaByte"])
def test_cross_in_every_form(gpu, rng, layout, name):
    """x:cross(y), torch.cross(x, y), torch.cross(r, x, y, dim) and r:cross(x, y) with the default dimension (the
    first of size 3, also of a 3 x 3 matrix) and a given one, on every layout, into a new result, a resized one, and
    x itself."""
    rt = gpu
    x, y = values(rng, name, (2, 7, 10), -20, 20)
    # the views' shapes: (7, 10) -> contiguous (7, 10), transposed (10, 7), narrowed (7, 7), strided (4, 10);
    # make a dimension of size 3 by narrowing the other one
    xv, yv = view_of(x, layout), view_of(y, layout)
    view = rt.eval(LAYOUTS[layout])
    got = rt.eval("""function(view, a, b)
       local x = view(a):narrow(2, 2, 3)
       local y = view(b):narrow(2, 1, 3)
       local r, r2 = x.new(), x.new(3, 3)
       local xc = x:clone()
       torch.cross(r, x, y, 2)
       r2:cross(x, y)
       local same = torch.cross(xc, xc, y) == xc
       return {x:cross(y), torch.cross(x, y, 2), r, r2, xc, same, x:t():cross(y:t()), torch.cross(y:t(), x:t(), 1),
               x:narrow(1, 2, 3):cross(y:narrow(1, 2, 3))}
    end""")(view, to_device(rt, x, name), to_device(rt, y, name))
    a, b = xv[:, 1:4], yv[:, 0:3]
    with np.errstate(over="ignore"):
        wide = np.int64 if name == "CudaByte" else DTYPE[name]   # Byte wraps around 256 as the CPU's
        want = np.cross(a.astype(wide), b.astype(wide), axis=1).astype(DTYPE[name])
    assert 3 not in xv.shape   # so the default dimension is the narrowed one (of size 3)
    square = np.cross(a[1:4].astype(wide), b[1:4].astype(wide), axis=0).astype(DTYPE[name])   # 3 x 3: dim 1
    for k, w in [(1, want), (2, want), (3, want), (4, want), (5, want), (7, want.T), (8, -want.T), (9, square)]:
        if np.dtype(DTYPE[name]).kind == "f":
            np.testing.assert_allclose(to_host(rt, got[k]), w, rtol=tol(name), atol=tol(name) * 50,
                                       err_msg="form %d" % k)
        else:
            np.testing.assert_array_equal(to_host(rt, got[k]), w.astype(DTYPE[name]), err_msg="form %d" % k)
    assert got[6] is True
    assert fallbacks(rt) == {}


def test_cross_of_float_against_the_cpu_in_double(gpu, rng):
    """Float cross of large values across many slices: within a few float roundings of the products (cancellation
    included) of the CPU's DoubleTensor cross on the same values."""
    rt = gpu
    x, y = (rng.standard_normal((2, 3, 257)) * 1e3).astype(np.float32)
    got = rt.eval("function(x, y) return x:cross(y) end")(to_device(rt, x, "Cuda"), to_device(rt, y, "Cuda"))
    want = rt.to_numpy(rt.eval("function(x, y) return x:double():cross(y:double()) end")(rt.from_numpy(x),
                                                                                      rt.from_numpy(y)))
    scale = np.abs(x).max(0) * np.abs(y).max(0) * 2
    assert (np.abs(to_host(rt, got) - want) <= 4 * np.finfo(np.float32).eps * scale).all()
    assert fallbacks(rt) == {}


def test_cross_keeps_the_cpus_errors(gpu, rng):
    """Sizes that differ, no dimension of size 3, a dimension of another size: the CPU's messages (staged)."""
    rt = gpu
    for code in ["torch.cross(x.new(3, 4), x.new(3, 5))", "torch.cross(x.new(2, 4), x.new(2, 4))",
                 "torch.cross(x.new(3, 4), x.new(3, 4), 2)"]:
        msgs = [rt.eval("function(x) local ok, e = pcall(function() return %s end) return e end" % code)(
            rt.eval("torch.%s()" % t)) for t in ("CudaTensor", "FloatTensor")]
        assert msgs[0] is not None and msgs[0].split(": ", 1)[1] == msgs[1].split(": ", 1)[1], code


# ----------------------------------------------------------------------------- histc

def histc_oracle(v, nbins, lo, hi):
    """numpy's counts by the CPU kernel's formula, in v's type: bin (v - lo) / (hi - lo) * nbins truncated, v = hi in
    the last bin, values outside [lo, hi] (and NaN) nowhere; lo == hi means the data's range (widened by 1 when it
    is one value; a NaN in the data counts nothing)."""
    t = v.dtype.type
    v = v.ravel()
    lo, hi = t(lo), t(hi)
    if lo == hi:
        if v.size and np.isnan(v).any():
            return np.zeros(nbins)
        lo, hi = (v.min(), v.max()) if v.size else (lo, hi)
        if lo == hi:
            lo, hi = t(lo - t(1)), t(hi + t(1))
    inside = v[(v >= lo) & (v <= hi)]
    bins = ((inside - lo) / (hi - lo) * t(nbins)).astype(np.int64)
    return np.bincount(np.minimum(bins, nbins - 1), minlength=nbins).astype(np.float64)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_histc_in_every_form(gpu, rng, layout, name):
    """x:histc(), x:histc(nbins), x:histc(nbins, min, max), torch.histc(x, ...), r:histc(x, ...) and torch.histc(r, x,
    ...) on every layout of 23 x 41 values, with the data's range and given ranges that leave values out; bins fewer
    and more than a block's threads; the value max itself in the last bin; a strided result written in place;
    against the CPU kernel's formula in numpy and the CPU method."""
    rt = gpu
    x = (rng.standard_normal((23, 41)) * 2).astype(DTYPE[name])
    x[3, 5], x[4, 6] = 1.5, -1.0   # exactly the max and min of a given range below
    xv = view_of(x, layout)
    view = rt.eval(LAYOUTS[layout])
    forms = [("x:histc()", 100, 0, 0), ("x:histc(7)", 7, 0, 0), ("torch.histc(x, 300, -1, 1.5)", 300, -1, 1.5),
             ("r:histc(x, 1, -0.5, 1)", 1, -0.5, 1), ("torch.histc(r, x, 33, -10, 10)", 33, -10, 10),
             ("torch.histc(x, 5, 2, 2)", 5, 0, 0)]   # min == max: the data's range
    for code, nbins, lo, hi in forms:
        # the same call on the device and on the host (the CPU's result)
        run = rt.eval("""function(view, t)
           local x, r = view(t), t.new(3):fill(5)
           return {%s, r}
        end""" % code)
        got, cpu = run(view, to_device(rt, x, name)), run(view, rt.from_numpy(x))
        want = histc_oracle(xv, nbins, lo, hi)
        np.testing.assert_array_equal(to_host(rt, got[1]), want, err_msg=code)
        np.testing.assert_array_equal(rt.to_numpy(cpu[1]), want, err_msg=code + " (the CPU's)")
        assert want.sum() > 50, code
        if "(r" in code or "r:" in code:
            np.testing.assert_array_equal(to_host(rt, got[2]), want, err_msg=code + " into r")
    # into a strided vector of the right size: written in place
    got = rt.eval("""function(view, t)
       local big = t.new(20):fill(-1)
       local r = big:narrow(1, 2, 18):unfold(1, 1, 2):select(2, 1)   -- 9 elements, stride 2
       r:histc(view(t), 9, -2, 2)
       return big
    end""")(view, to_device(rt, x, name))
    big = to_host(rt, got)
    np.testing.assert_array_equal(big[1:19:2], histc_oracle(xv, 9, -2, 2))
    assert (big[0::2] == -1).all() and big[19] == -1
    assert fallbacks(rt) == {}


def test_histc_of_many_blocks_of_many_tiles(gpu, rng):
    """60,000 values (each block's chunk several tiles long) in 700 bins (three rounds of a block's threads), a
    transposed view: every count against the CPU kernel's formula."""
    rt = gpu
    x = rng.standard_normal((150, 400)).astype(np.float32)
    got = rt.eval("function(t) return t:t():histc(700, -2, 2) end")(to_device(rt, x, "Cuda"))
    np.testing.assert_array_equal(to_host(rt, got), histc_oracle(x.T, 700, -2, 2))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_histc_of_one_value_nan_and_empty_data(gpu, rng, name):
    """One value throughout (its range widened by 1: all in the middle bin), a NaN with the data's range (nothing
    counted, as the CPU's) and with a given range (the NaN left out), an empty tensor (zeros), large values whose
    float bins round as the CPU's formula in float, bounds that are one value as floats (the data's range)."""
    rt = gpu
    dt = DTYPE[name]
    nan = rng.standard_normal(50).astype(dt)
    nan[rng.integers(50)] = np.nan
    big = (rng.standard_normal(1000) * 1e7).astype(dt)
    cases = [(np.full(37, 3.25, dt), 5, 0, 0), (nan, 10, 0, 0), (nan, 10, -1, 1), (np.zeros(0, dt), 4, 0, 0),
             (np.zeros(0, dt), 4, -1, 1), (big, 1000, -3e7, 3e7),
             (nan[~np.isnan(nan)], 6, 1, 1 + 1e-9)]   # one bound in float: the data's range (Float only)
    for values_, nbins, lo, hi in cases:
        fn = rt.eval("function(x, n, lo, hi) return x:histc(n, lo, hi) end")
        host = rt.from_numpy(values_) if values_.size else rt.eval("torch.%sTensor()" % name.replace("Cuda", "Float", 1)
                                                                    .replace("FloatDouble", "Double"))
        want = histc_oracle(values_, nbins, lo, hi)
        np.testing.assert_array_equal(to_host(rt, fn(rt.eval("function(h) return h:type('torch.%sTensor') end" % name)(
            host), nbins, lo, hi)), want)
        np.testing.assert_array_equal(rt.to_numpy(fn(host, nbins, lo, hi)), want)
    assert fallbacks(rt) == {}


def test_histc_keeps_the_cpus_errors(gpu):
    """Integer tensors, bins that are not a positive integer, the input as its own result: the CPU's messages."""
    rt = gpu
    for code in ["x:long():histc()", "x:histc(0)", "x:histc(2.5)", "x:histc(x)", "x:histc(3, 'a')"]:
        msgs = [rt.eval("function(x) local ok, e = pcall(function() return %s end) return e end" % code)(
            rt.eval("torch.%s(4):fill(1)" % t)) for t in ("CudaTensor", "FloatTensor")]
        assert msgs[0] is not None, code
        assert msgs[0].split(": ", 1)[1].replace("CudaTensor", "FloatTensor") == msgs[1].split(": ", 1)[1], code


# ----------------------------------------------------------------------------- bmm, baddbmm: strided batched cuBLAS

def cublas_calls():
    """(gemm calls, strided batched gemm calls) of the emulated cuBLAS so far, or None on a real one."""
    import ctypes
    import os
    path = os.environ.get("LUATORCH_CUDA_CUBLAS", "")
    if "emulated" not in path:
        return None
    out = (ctypes.c_longlong * 2)()
    ctypes.CDLL(path).lt_emulated_cublas_calls(out)
    return out[0], out[1]


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_bmm_and_baddbmm_as_one_strided_batched_product(gpu, rng, name):
    """bmm and baddbmm whose operands' entries lie alike, equally spaced (contiguous, transposed entries, a factor
    expanded over the batch, a result whose entries are column-major) are one strided batched cuBLAS call (on the
    emulated cuBLAS: counted); entries gemm cannot read as they lie (every other column) go entry by entry. Against
    numpy."""
    rt = gpu
    a, at, b = rng.standard_normal((5, 3, 4)), rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 4, 6))
    b1, m, wide = rng.standard_normal((4, 6)), rng.standard_normal((5, 3, 6)), rng.standard_normal((5, 3, 8))
    cases = [("torch.bmm(a, b)", a @ b, True),
             ("torch.bmm(at:transpose(2, 3), b)", np.swapaxes(at, 1, 2) @ b, True),
             ("torch.bmm(a, b1:view(1, 4, 6):expand(5, 4, 6))", a @ b1, True),
             ("x.new(5, 6, 3):transpose(2, 3):bmm(a, b)", a @ b, True),
             ("torch.baddbmm(0.5, m, 2, a, b)", 0.5 * m + 2 * (a @ b), True),
             ("m:clone():baddbmm(-1, a, b)", m - a @ b, True),
             ("torch.bmm(wide:unfold(3, 1, 2):select(4, 1), b)", wide[:, :, ::2] @ b, False)]
    for code, want, batched in cases:
        before = cublas_calls()
        got = rt.eval("function(x, a, at, b, b1, m, wide) return %s end" % code)(
            *(to_device(rt, v, name) for v in (a, a, at, b, b1, m, wide)))
        np.testing.assert_allclose(to_host(rt, got), want, rtol=tol(name) * 10, atol=tol(name) * 10, err_msg=code)
        after = cublas_calls()
        if before is not None:
            calls = (after[0] - before[0], after[1] - before[1])
            assert calls == ((0, 1) if batched else (5, 0)), (code, calls)
    assert fallbacks(rt) == {}
