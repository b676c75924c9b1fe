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


UNARY = {"floor": np.floor, "ceil": np.ceil, "round": lambda x: np.trunc(x + np.copysign(0.5, x)), "trunc": np.trunc,
         "frac": lambda x: x - np.trunc(x), "cinv": lambda x: 1 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
         "log1p": np.log1p, "expm1": np.expm1}
EXACT = {"floor", "ceil", "round", "trunc", "frac", "cinv"}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "narrowed"])
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_more_unary_functions(gpu, rng, layout, name):
    rt = gpu
    dtype = TYPES[name][0]
    view = rt.eval(LAYOUTS[layout])
    x = rng.uniform(-0.99, 0.99, (6, 11)) * rng.choice([1, 4], (6, 11))
    x[0, :6] = [0.5, -0.5, 2.5, -2.5, 1.5, np.nan]      # halves round away from zero; NaN stays NaN
    x = x.astype(dtype)
    xv = view_of(x, layout)
    run = rt.eval("""function(t, f)
       local a = t:clone()
       local r = t.new(2)
       r[f](r, t)                                   -- (x) into self
       local copy = t:clone()
       copy[f](copy)                                -- () in place
       return {r, copy, torch[f](t)}
    end""")
    t = view(device(rt, x, name))
    for f, ref in UNARY.items():
        sub = xv if f not in ("log1p",) else np.abs(xv)
        src = t if f != "log1p" else rt.eval("function(t) return t:clone():abs() end")(t)
        with np.errstate(invalid="ignore", divide="ignore"):
            want = ref(sub.astype(np.float64))
        r = run(src, f)
        for k in (1, 2, 3):
            got = to_host(rt, r[k])
            if f in EXACT:
                np.testing.assert_array_equal(got, want.astype(dtype), err_msg="%s form %d" % (f, k))
            else:
                tol = 4 * np.finfo(dtype).eps
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg="%s form %d" % (f, k))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaInt", "CudaLong", "CudaChar"])
def test_fmod_and_remainder_keep_torch7s_signs(gpu, rng, name):
    rt = gpu
    dtype = TYPES[name][0]
    floating = np.dtype(dtype).kind == "f"
    x = (rng.uniform(-9, 9, (5, 8)) if floating else rng.integers(-9, 10, (5, 8))).astype(dtype)
    y = (rng.uniform(0.5, 3, (5, 8)) * rng.choice([-1, 1], (5, 8)) if floating
         else rng.integers(1, 4, (5, 8)) * rng.choice([-1, 1], (5, 8))).astype(dtype)
    x[0, :4] = [6, -6, 7, -7]
    y[0, :4] = [3, 3, -2, 2]
    got = rt.eval("""function(a, b, v)
       local r = a.new()
       r:fmod(a, v)
       local s = a:clone():remainder(v)
       local u = torch.remainder(a, -v)
       local out = {r, s, u}
       if a:type():match('Double') or a:type() == 'torch.CudaTensor' then
          out[4] = torch.cfmod(a, b)
          out[5] = a:clone():cremainder(b)
          out[6] = torch.cmod(a, b)
       end
       return out
    end""")(device(rt, x, name), device(rt, y, name), 2.5 if floating else 3)
    v = 2.5 if floating else 3
    want = [np.fmod(x, v), x - v * np.floor(x / v) if floating else np.mod(x, v),
            x - (-v) * np.floor(x / -v) if floating else np.mod(x, -v)]
    if floating:
        want += [np.fmod(x, y), x - y * np.floor(x / y), np.fmod(x, y)]
    for k, w in enumerate(want, 1):
        got_k = to_host(rt, got[k])
        if floating:
            np.testing.assert_allclose(got_k, w.astype(dtype), rtol=0, atol=4 * np.finfo(dtype).eps * 9,
                                       err_msg="form %d" % k)
            assert (np.sign(got_k[got_k != 0]) == np.sign({1: x, 4: x, 6: x}.get(k, y if k == 5 else
                    np.full_like(x, v if k == 2 else -v))[got_k != 0])).all(), k
        else:
            np.testing.assert_array_equal(got_k, w.astype(dtype), err_msg="form %d" % k)
    assert fallbacks(rt) == {}


def test_integer_divisors_that_raise_run_staged_with_torch7s_error(gpu):
    rt = gpu
    with pytest.raises(Exception, match="division by zero"):
        rt.execute("torch.CudaIntTensor(3):fill(5):fmod(0)")
    # a Byte divisor of 256 is 0 once converted; a tensor divisor may hold zeros: both go staged
    rt.execute("_G.ok = pcall(function() torch.CudaByteTensor(3):fill(5):remainder(256) end)")
    assert rt.eval("_G.ok") is False
    got = rt.eval("torch.CudaIntTensor(3):fill(7):cfmod(torch.CudaIntTensor(3):fill(-2)):totable()")
    assert list(got.values()) == [1, 1, 1]
    assert set(fallbacks(rt)) == {"torch.CudaIntTensor:fmod", "torch.CudaByteTensor:remainder",
                                  "torch.CudaIntTensor:cfmod"}


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_cpow_tpow_atan2_and_lerp(gpu, rng, name):
    rt = gpu
    dtype = TYPES[name][0]
    x = rng.uniform(0.1, 3, (7, 6)).astype(dtype)
    y = rng.uniform(-2, 2, (6, 7)).astype(dtype)  # used transposed: another layout of the same shape
    got = rt.eval("""function(a, b)
       b = b:t()
       local r = a.new()
       r:cpow(a, b)
       local l = a:clone():lerp(b, 0.3)
       return {r, a:clone():cpow(b), torch.pow(1.7, a), torch.pow(a.new(), -0.5, b), torch.atan2(a, b),
               a:clone():atan2(b), l, torch.lerp(a, b, -1.25)}
    end""")(device(rt, x, name), device(rt, y, name))
    yv = y.T.astype(np.float64)
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):   # (-0.5) ** y is NaN for the y that are not integers, as pow's
        want = [xd ** yv, xd ** yv, 1.7 ** xd, (-0.5) ** yv, np.arctan2(xd, yv), np.arctan2(xd, yv),
                xd + dtype(0.3) * (yv - xd), xd + dtype(-1.25) * (yv - xd)]
    for k, w in enumerate(want, 1):
        with np.errstate(invalid="ignore"):
            tol = 8 * np.finfo(dtype).eps
            np.testing.assert_allclose(to_host(rt, got[k]), w, rtol=tol, atol=tol, err_msg="form %d" % k)
    assert fallbacks(rt) == {}


def test_cpow_on_integers_and_the_integer_types_of_cmax(gpu, rng):
    rt = gpu
    x = rng.integers(-3, 4, 20)
    y = rng.integers(0, 4, 20)
    got = rt.eval("function(a, b) return {torch.cpow(a, b), torch.pow(2, b)} end")(
        to_device(rt, x, "CudaLong"), to_device(rt, y, "CudaLong"))
    np.testing.assert_array_equal(to_host(rt, got[1]), x ** y)
    np.testing.assert_array_equal(to_host(rt, got[2]), 2 ** y)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "narrowed", "strided"])
@pytest.mark.parametrize("name", ["Cuda", "CudaLong"])
def test_tril_and_triu_with_diagonals(gpu, rng, layout, name):
    rt = gpu
    dtype = TYPES[name][0]
    view = rt.eval(LAYOUTS[layout])
    x = values(rng, dtype, (7, 10))
    xv = view_of(x, layout)
    run = rt.eval("""function(t, f, k)
       local r = t.new(3, 3)
       r[f](r, t, k)                               -- into self
       local copy = t:clone()
       copy[f](copy, copy, k)                      -- in place
       return {t[f](t, k), r, copy, torch[f](t, k), t}
    end""")
    t = view(device(rt, x, name))
    for f, ref in (("tril", np.tril), ("triu", np.triu)):
        for k in (0, 2, -3, 20):
            r = run(t, f, k)
            for j in (1, 2, 3, 4):
                np.testing.assert_array_equal(to_host(rt, r[j]), ref(xv, k), err_msg="%s k %d form %d" % (f, k, j))
            np.testing.assert_array_equal(to_host(rt, r[5]), xv)
    got = rt.eval("function(t) return {t:tril():type(), torch.triu(t):type()} end")(t)
    assert list(got.values()) == ["torch.%sTensor" % name] * 2
    assert fallbacks(rt) == {}
