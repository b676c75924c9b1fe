"""torch.HalfTensor / torch.HalfStorage against numpy's float16: conversions in both directions
(round to nearest even, subnormals, overflow, inf/nan), copies to and from every type on
contiguous and strided tensors, storages, serialization, and that Half has no math (Torch7 CPU)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError

TYPES = {"Byte": np.uint8, "Char": np.int8, "Short": np.int16, "Int": np.int32, "Long": np.int64,
         "Float": np.float32, "Double": np.float64}


def half(a):
    """numpy's float16 rounding (overflow to inf is what is tested, not a warning)."""
    with np.errstate(over="ignore"):
        return np.asarray(a).astype(np.float16)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float16).view(np.uint16)


def assert_same_halves(got, want):
    """Bit-identical float16 arrays, where a nan only has to meet a nan."""
    got, want = np.asarray(got, np.float16), np.asarray(want, np.float16)
    assert got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def hard_floats(rng, n=4000):
    """float32 values across the half range and beyond, with exact ties between adjacent halves."""
    mags = 10.0 ** rng.uniform(-9, 6, n)
    vals = (rng.choice([-1, 1], n) * mags).astype(np.float32)
    h = rng.integers(0, 0x7bff, 500, dtype=np.uint16).view(np.float16)
    ties = ((h.astype(np.float32) + np.nextafter(h, np.float16(np.inf)).astype(np.float32)) / 2).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 70000, 6.1035156e-5,
                         6.0e-5, 5.9604645e-8, 2.9802322e-8, 2.99e-8, 1e-10, -3.0e-6, 1.0, 2049.0, 2051.0],
                        np.float32)
    return np.concatenate([vals, ties, -ties, specials])


def test_float_to_half_rounds_like_numpy(rt, rng):
    vals = hard_floats(rng)
    t = rt.from_numpy(vals)
    assert_same_halves(rt.to_numpy(rt.call(rt.eval("function(t) return t:half() end"), t)), half(vals))


def test_strided_copies_both_ways(rt, rng):
    vals = hard_floats(rng)[:3000].reshape(50, 60)
    f = rt.from_numpy(vals)
    # a transposed (non-contiguous) source, and a transposed half destination
    h = rt.call(rt.eval("function(f) return f:t():half() end"), f)
    assert_same_halves(rt.to_numpy(h), half(vals.T))
    dst = rt.call(rt.eval("function(f) local d = torch.HalfTensor(60, 50):t(); d:copy(f); return d end"), f)
    assert_same_halves(rt.to_numpy(dst), half(vals))
    back = rt.call(rt.eval("function(h) local d = torch.DoubleTensor(50, 60):t(); d:copy(h); return d:t() end"), h)
    np.testing.assert_array_equal(np.isnan(rt.to_numpy(back)), np.isnan(vals))
    ok = ~np.isnan(vals)
    np.testing.assert_array_equal(rt.to_numpy(back)[ok], half(vals).astype(np.float64)[ok])


def test_half_to_float_is_exact_for_every_bit_pattern(rt):
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    h = rt.from_numpy(halves.copy())
    assert rt.eval("torch.type")(h) == "torch.HalfTensor"
    for name, dtype in (("float", np.float32), ("double", np.float64)):
        got = rt.to_numpy(rt.call(rt.eval("function(h, m) return h[m](h) end"), h, name))
        want = halves.astype(dtype)
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan], want[~nan])
        np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("name", list(TYPES))
def test_copy_to_and_from_every_type(rt, rng, name):
    dtype = TYPES[name]
    if np.issubdtype(dtype, np.integer):
        lo, hi = (0, 250) if dtype == np.uint8 else (-120, 120)
        vals = rng.integers(lo, hi, (7, 9)).astype(dtype)
    else:
        vals = (rng.standard_normal((7, 9)) * 300).astype(dtype)
    t = rt.from_numpy(vals)
    h = rt.call(rt.eval("function(t) return t:half() end"), t)
    # Torch7 converts through float (a double is rounded to float first)
    want = half(vals.astype(np.float32))
    assert_same_halves(rt.to_numpy(h), want)
    back = rt.call(rt.eval("function(h, n) return h:type('torch.' .. n .. 'Tensor') end"), h, name)
    np.testing.assert_array_equal(rt.to_numpy(back), want.astype(dtype))


def test_cutorch_converters_on_half_tensors(rt, rng):
    """h:cuda(), h:cudaDouble(), h:cudaLong() (an fp16 checkpoint moved to the Cuda types) once cutorch is loaded: the
    converters are cutorch's, not the stub in place before it loaded, which asked to require cutorch."""
    x = half(rng.standard_normal(7) * 100)
    h = rt.eval("function(x) return x:half() end")(rt.from_numpy(x.astype(np.float32)))
    with pytest.raises(LuaError, match="require 'cutorch' first"):
        rt.execute("torch.HalfTensor(2):cuda()")
    rt.execute("require 'cutorch'")
    for method, typename, dtype in [("cuda", "torch.CudaTensor", np.float32),
                                    ("cudaDouble", "torch.CudaDoubleTensor", np.float64),
                                    ("cudaLong", "torch.CudaLongTensor", np.int64)]:
        r = rt.eval("function(h) local c = h:%s() return {torch.type(c), c:double()} end" % method)(h)
        assert r[1] == typename
        np.testing.assert_array_equal(rt.to_numpy(r[2]), x.astype(np.float64).astype(dtype).astype(np.float64))


def test_storage_elements_tables_and_views(rt):
    rt.execute("""
        local s = torch.HalfStorage{1, 2.5, -0.1, 1e5}
        assert(s:elementSize() == 2 and torch.HalfStorage.elementSize() == 2)
        assert(s[1] == 1 and s[2] == 2.5 and s[4] == math.huge, 'table constructor converts')
        assert(math.abs(s[3] + 0.1) < 1e-4 and s[3] ~= -0.1, 'read back rounded to half')
        s[1] = 3.25
        assert(s[1] == 3.25)
        local f = s:float()
        assert(torch.type(f) == 'torch.FloatStorage' and f[2] == 2.5)
        assert(torch.type(torch.DoubleStorage{0.5}:half()) == 'torch.HalfStorage')
        local t = torch.HalfTensor(s, 2, torch.LongStorage{2})
        assert(t:nElement() == 2 and t[1] == 2.5, 'a tensor on a half storage')
        t[2] = 7
        assert(s[3] == 7, 'views share memory')
        s:fill(0.5)
        assert(s:totable()[4] == 0.5)
        assert(tostring(torch.HalfTensor(2, 3):zero()):find('[torch.HalfTensor of size 2x3]', 1, true))
    """)


@pytest.mark.parametrize("mode", ["binary", "ascii"])
def test_serialization_round_trip(rt, rng, mode):
    vals = hard_floats(rng)[:600].reshape(20, 30)
    f = rt.from_numpy(vals)
    back = rt.call(rt.eval("""function(f, mode)
        local h = f:half():t()                      -- a view: the whole storage is written
        local file = torch.MemoryFile()
        file[mode](file)
        file:writeObject(h)
        file:seek(1)
        local r = file:readObject()
        assert(torch.type(r) == 'torch.HalfTensor' and r:isSameSizeAs(h))
        return r:contiguous()
    end"""), f, mode)
    assert_same_halves(rt.to_numpy(back), half(vals.T))


def test_half_has_geometry_but_no_math(rt):
    rt.execute("""
        local h = torch.randn(4, 6):half()
        assert(h:narrow(1, 2, 2):isSameSizeAs(h:sub(2, 3)))
        assert(h:select(2, 3):dim() == 1 and not h:t():isContiguous())
        local c = h:clone(); h:zero()
        assert(c:float():abs():sum() > 0, 'clone copies')
        assert(h.add == nil and h.sum == nil and h.apply == nil, 'no math on HalfTensor (as Torch7 on the CPU)')
        local ok, err = pcall(function() return h:sum() end)
        assert(not ok and err:find("method 'sum'"), err)
    """)


def test_numpy_float16_views_share_memory(rt):
    a = np.array([[1.0, 2.0], [3.0, 4.5]], np.float16)
    t = rt.from_numpy(a)
    rt.call(rt.eval("function(t) t[1][2] = -8 end"), t)
    assert a[0, 1] == -8
    v = rt.to_numpy(t)
    assert v.dtype == np.float16
    v[1, 1] = 0.25
    assert rt.call(rt.eval("function(t) return t[2][2] end"), t) == 0.25


def test_half_errors_are_clear(rt):
    with pytest.raises(LuaError, match="cannot view a torch.FloatTensor"):
        rt.execute("torch.HalfTensor(torch.FloatTensor(2))")
    with pytest.raises(LuaError, match="indexing with a table"):
        rt.execute("local h = torch.HalfTensor(2, 2); return h[{1, 2}]")
