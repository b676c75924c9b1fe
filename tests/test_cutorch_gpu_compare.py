"""cutorch's comparisons (eq ne lt le gt ge), cmax/cmin and maskedFill on the device (lua/cutorch/gpu_compare.lua,
native/src/cuda_ops_compare.c, native/cuda/compare.cu).

Like tests/test_cutorch_gpu.py these need the GPU backend and skip without it; in CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs this file on the emulated driver. Oracles: numpy
on the same values (the number converted to the element type first, as Torch7 does), and the CPU methods on host
copies; every call must run on the device (cutorch.hostFallbacks() stays empty)."""
import numpy as np
import pytest

from test_cutorch_gpu import LAYOUTS, fallbacks, gpu, to_device, to_host, view_of  # noqa: F401 (gpu: a fixture)

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}
# Cuda type -> (numpy type of its values, Cuda type its test values are made in)
TYPES = {"Cuda": (np.float32, "Cuda"), "CudaDouble": (np.float64, "CudaDouble"), "CudaLong": (np.int64, "CudaLong"),
         "CudaInt": (np.int32, "CudaInt"), "CudaShort": (np.int16, "CudaInt"), "CudaChar": (np.int8, "CudaInt"),
         "CudaByte": (np.uint8, "CudaByte")}


def values(rng, dtype, shape):
    """Few distinct values (ties between the operands and with the numbers), NaN in the floating types."""
    if np.dtype(dtype).kind == "f":
        x = rng.integers(-3, 4, shape).astype(dtype) / 2
        x[rng.random(shape) < 0.1] = np.nan
        return x
    lo = 0 if dtype == np.uint8 else -4
    return rng.integers(lo, 5, shape).astype(dtype)


def device(rt, array, name):
    """A torch.<name>Tensor with array's values (made through a type the helpers know, then converted)."""
    made = to_device(rt, array, TYPES[name][1])
    return rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(made, name)


def as_type(v, dtype):
    """Torch7's conversion of a number to the element type: integers truncate, then wrap."""
    if np.dtype(dtype).kind == "f":
        return dtype(v)
    return np.array(int(np.trunc(v))).astype(dtype)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(TYPES))
def test_comparisons_with_numbers_and_tensors_in_every_form(gpu, rng, layout, name):
    rt = gpu
    dtype = TYPES[name][0]
    view = rt.eval(LAYOUTS[layout])
    x, y = values(rng, dtype, (7, 9)), values(rng, dtype, (7, 9))
    a, b = view(device(rt, x, name)), view(device(rt, y, name))
    xv, yv = view_of(x, layout), view_of(y, layout)
    number = {np.uint8: -1, np.int8: 2.7, np.int16: -2.5}.get(dtype, 0.5)  # Byte's -1 is 255; 2.7 is 2
    run = rt.eval("""function(a, b, v, op)
       local r1, r2 = a[op](a, v), torch[op](a, b)
       local r3 = torch.CudaByteTensor(3):fill(7)
       r3[op](r3, a, v)
       local r4 = a.new(2):fill(9)
       torch[op](r4, a, b)
       local r5 = torch.CudaLongTensor(5)
       r5[op](r5, a, v)
       return {r1, r2, r3, r4, r5, r1:type(), r2:type(), r4:type(), r5:type()}
    end""")
    for op, f in CMP.items():
        with np.errstate(invalid="ignore"):
            want_v, want_t = f(xv, as_type(number, dtype)), f(xv, yv)
        r = run(a, b, number, op)
        assert (r[6], r[7], r[8], r[9]) == ("torch.CudaByteTensor", "torch.CudaByteTensor", "torch.%sTensor" % name,
                                            "torch.CudaLongTensor"), op
        for k, want in ((1, want_v), (2, want_t), (3, want_v), (4, want_t), (5, want_v)):
            got = to_host(rt, r[k])
            assert got.shape == want.shape, (op, k)
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg="%s form %d" % (op, k))
    assert fallbacks(rt) == {}


def test_comparisons_agree_with_the_cpu_methods_and_keep_their_edge_cases(gpu, rng):
    rt = gpu
    # a tensor of another shape with the same element count, in place on a Byte tensor, NaN and infinities, and
    # tensors without elements
    x = rng.standard_normal((4, 6))
    x[0, :3] = [np.nan, np.inf, -np.inf]
    y = rng.standard_normal(24)
    y[1] = np.inf
    y[5] = x.reshape(-1)[5]
    got = rt.eval("""function(a, b)
       local out = {}
       for _, op in ipairs {'eq', 'ne', 'lt', 'le', 'gt', 'ge'} do
          local d = a[op](a, b):double()
          local h = a:double()[op](a:double(), b:double()):double()
          out[#out + 1] = d:add(-1, h):abs():sum()
       end
       local c = b:view(6, 4):t()                   -- operands of one shape and different layouts
       out[#out + 1] = a:lt(c):double():add(-1, a:double():lt(c:double()):double()):abs():sum()
       out[#out + 1] = a:clone():cmax(c):ne(a:clone():cmax(c:contiguous())):sum()
       local m = a:gt(0)
       m:le(m, 0)                                   -- in place on the mask itself
       out[#out + 1] = m:double():add(-1, a:double():gt(0):le(0):double()):abs():sum()
       local e = torch.CudaTensor()
       out[#out + 1] = e:gt(0):nElement() + e:eq(e):nElement() + torch.ge(e, 1):dim()
       out[#out + 1] = e:gt(0):type()
       return out
    end""")(to_device(rt, x, "CudaDouble"), to_device(rt, y, "CudaDouble"))
    assert list(got.values()) == [0] * 10 + ["torch.CudaByteTensor"]
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaLong", "CudaByte", "CudaChar"])
def test_cmax_and_cmin_with_tensors_and_numbers(gpu, rng, layout, name):
    rt = gpu
    dtype = TYPES[name][0]
    view = rt.eval(LAYOUTS[layout])
    x, y = values(rng, dtype, (8, 7)), values(rng, dtype, (8, 7))
    xv, yv = view_of(x, layout), view_of(y, layout)
    number = {np.uint8: 2.9, np.int8: -1.5}.get(dtype, 0.25)
    run = rt.eval("""function(a, b, v, op)
       local r1 = a:clone()[op](a:clone(), b)         -- (y) in place
       local r2 = a:clone()
       r2[op](r2, v)                                  -- (v) in place
       local r3 = a.new()
       r3[op](r3, a, b)                               -- (x, y) into self
       local r4 = a.new(3)
       r4[op](r4, a, v)                               -- (x, v) into self
       local r5 = torch[op](a, b)
       local r6 = a:clone()
       local w = r6:t():t()
       r6[op](r6, w, v)                               -- self as the first operand through another view
       return {r1, r2, r3, r4, r5, r6, r5:type(), a}
    end""")
    for op, f in (("cmax", lambda p, q: np.where(p > q, p, q)), ("cmin", lambda p, q: np.where(p < q, p, q))):
        a, b = view(device(rt, x, name)), view(device(rt, y, name))
        r = run(a, b, number, op)
        n = as_type(number, dtype)
        with np.errstate(invalid="ignore"):
            wants = [f(xv, yv), f(xv, n), f(xv, yv), f(xv, n), f(xv, yv), f(xv, n)]
        for k, want in enumerate(wants, 1):
            np.testing.assert_array_equal(to_host(rt, r[k]), want.astype(dtype), err_msg="%s form %d" % (op, k))
        assert r[7] == "torch.%sTensor" % name
        np.testing.assert_array_equal(to_host(rt, r[8]), xv)  # the source is not written
    assert fallbacks(rt) == {}


def test_cmax_and_cmin_keep_torch7s_nan_rule(gpu):
    rt = gpu
    nan = np.nan
    x = np.array([nan, 1, nan, -2, 0], np.float32)
    y = np.array([1, nan, nan, 3, -0.5], np.float32)
    got = rt.eval("""function(a, b)
       return {a:clone():cmax(b), a:clone():cmin(b), a:clone():cmax(0), torch.cmin(b, 0.5)}
    end""")(to_device(rt, x, "Cuda"), to_device(rt, y, "Cuda"))
    # the first operand wins only when its comparison holds: NaN there gives the other one
    np.testing.assert_array_equal(to_host(rt, got[1]), [1, nan, nan, 3, 0])
    np.testing.assert_array_equal(to_host(rt, got[2]), [1, nan, nan, -2, -0.5])
    np.testing.assert_array_equal(to_host(rt, got[3]), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(to_host(rt, got[4]), [0.5, 0.5, 0.5, 0.5, -0.5])
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaInt", "CudaByte"])
def test_masked_fill_with_device_and_host_masks(gpu, rng, layout, name):
    rt = gpu
    dtype = TYPES[name][0]
    view = rt.eval(LAYOUTS[layout])
    x = values(rng, dtype, (6, 9))
    xv = view_of(x, layout)
    m1 = rng.random(xv.shape) < 0.4
    m2 = rng.random(xv.size) < 0.5          # another shape, the same element count
    m3 = rng.random(xv.T.shape) < 0.3       # a transposed device mask
    host_mask = rt.from_numpy(m1.astype(np.uint8))
    got = rt.eval("""function(t, hm, m2, m3, v)
       local a = t:clone()
       local b = t:clone()
       a:maskedFill(hm:cudaByte(), v)                 -- device mask
       b:maskedFill(hm, v - 1)                        -- host ByteTensor mask
       local c = t:clone():maskedFill(m2, v)          -- a 1-D mask of the same count
       local d = t:clone():maskedFill(m3:t(), 3)      -- a transposed mask
       return {a, b, c, d, t}
    end""")(view(device(rt, x, name)), host_mask, to_device(rt, m2.astype(np.uint8), "CudaByte"),
            to_device(rt, m3.astype(np.uint8), "CudaByte"), 2)
    want = [np.where(m1, 2, xv), np.where(m1, 1, xv), np.where(m2.reshape(xv.shape), 2, xv),
            np.where(m3.T, 3, xv), xv]
    for k, w in enumerate(want, 1):
        np.testing.assert_array_equal(to_host(rt, got[k]), w.astype(dtype), err_msg="form %d" % k)
    # the filled view's base keeps its other elements
    base = rt.eval("function(t, hm, v) local base = t:clone(); view(base):maskedFill(hm:cudaByte(), v) return base end"
                   .replace("view(base)", "(%s)(base)" % LAYOUTS[layout]))(device(rt, x, name), host_mask, 5)
    want_base = x.copy()
    target = view_of(want_base, layout)
    target[m1] = 5
    np.testing.assert_array_equal(to_host(rt, base), want_base)
    assert fallbacks(rt) == {}


def test_masked_fill_with_a_comparison_mask_matches_the_cpu(gpu, rng):
    rt = gpu
    x = rng.standard_normal((5, 33))
    got = rt.eval("""function(t)
       local d = t:clone():maskedFill(t:lt(0), 0)
       local h = t:double():maskedFill(t:double():lt(0), 0)
       local e = torch.CudaDoubleTensor():maskedFill(torch.CudaByteTensor(), 1)
       return {d:double():add(-1, h):abs():max(), e:nElement()}
    end""")(to_device(rt, x, "CudaDouble"))
    assert list(got.values()) == [0, 0]
    assert fallbacks(rt) == {}
