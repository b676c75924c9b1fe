"""cutorch's maskedSelect and maskedCopy on the device (lua/cutorch/gpu_masked.lua, native/src/cuda_ops_masked.c,
native/cuda/masked.cu): a compaction over the Byte mask (per-block counts, a one-block scan, a scatter); and the
random fills random, exponential, cauchy, logNormal and geometric (native/cuda/dropout.cu's lt_random).

Like tests/test_cutorch_gpu.py these need the GPU backend and skip without it; in CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs this file on the emulated driver (2
multiprocessors: 16 blocks of 256 threads, so the 10,000-element cases take several blocks of several tiles
each). Oracles: numpy's boolean indexing on the same values (row-major, as Torch7's), the CPU methods for shapes
and errors, and the distributions' moments and quantiles; every call that should run on the device must
(cutorch.hostFallbacks() stays empty)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import LAYOUTS, fallbacks, gpu, to_device, to_host, two_gpus, view_of  # noqa: F401 (fixtures)

# Cuda type -> (numpy type of its values, Cuda type its test values are made in)
TYPES = {"Cuda": (np.float32, "Cuda"), "CudaDouble": (np.float64, "CudaDouble"), "CudaLong": (np.int64, "CudaLong"),
         "CudaInt": (np.int32, "CudaInt"), "CudaShort": (np.int16, "CudaInt"), "CudaChar": (np.int8, "CudaInt"),
         "CudaByte": (np.uint8, "CudaByte")}


def values(rng, dtype, shape):
    """Distinct-enough values of dtype (NaN among the floating ones: it must be carried like any value)."""
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
        x[rng.random(shape) < 0.05] = np.nan
        return x
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -10 ** 6), min(info.max, 10 ** 6), shape, endpoint=True).astype(dtype)


def device(rt, array, name):
    """A torch.<name>Tensor with array's values (made through a type the helpers know, then converted)."""
    made = to_device(rt, array, TYPES[name][1])
    return rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(made, name)


def byte_mask(rt, m):
    return to_device(rt, np.asarray(m, np.uint8), "CudaByte")


def host_mask(rt, m):
    return rt.from_numpy(np.ascontiguousarray(m, np.uint8))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(TYPES))
def test_masked_select_in_every_form(gpu, rng, layout, name):
    """x:maskedSelect(m), torch.maskedSelect(x, m), res:maskedSelect(x, m) and torch.maskedSelect(res, x, m), with a
    device mask of x's shape, a host ByteTensor mask, a 1-D mask of the same element count and a transposed mask."""
    rt = gpu
    dtype = TYPES[name][0]
    x = values(rng, dtype, (7, 10))
    xv = view_of(x, layout)
    m1 = rng.random(xv.shape) < 0.4
    m2 = rng.random(xv.size) < 0.5
    m3 = rng.random(xv.T.shape) < 0.6
    got = rt.eval("""function(view, t, m1, hm, m2, m3)
       local x = view(t)
       local res = x.new(5, 2):fill(7)          -- resized to the count
       local res2 = x.new()
       return {x:maskedSelect(m1), torch.maskedSelect(x, hm), res:maskedSelect(x, m2),
               torch.maskedSelect(res2, x, m3:t()), res, res2, x:maskedSelect(m1):dim(), torch.type(res)}
    end""")(rt.eval(LAYOUTS[layout]), device(rt, x, name), byte_mask(rt, m1), host_mask(rt, m1), byte_mask(rt, m2),
            byte_mask(rt, m3))
    want = [xv[m1], xv[m1], xv.ravel()[m2], xv[m3.T], xv.ravel()[m2], xv[m3.T]]
    for k, w in enumerate(want, 1):
        np.testing.assert_array_equal(to_host(rt, got[k]), w, err_msg="form %d" % k)
    assert got[7] == 1 and got[8] == "torch.%sTensor" % name
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("density", [0.0, 0.02, 0.5, 1.0, "first", "last", "ends of chunks"])
def test_masked_select_across_blocks_and_tiles(gpu, rng, density):
    """97 x 131 elements (several blocks of several 256-element tiles): sparse, dense, full and empty masks, and single
    set elements at the start, the end and the chunk boundaries; a strided source."""
    rt = gpu
    x = rng.standard_normal((97, 262))
    xv = x[:, ::2]
    if density == "first":
        m = np.zeros(xv.shape, bool)
        m.flat[0] = True
    elif density == "last":
        m = np.zeros(xv.shape, bool)
        m.flat[-1] = True
    elif density == "ends of chunks":   # every 256th element and its neighbours: tile and chunk edges
        m = np.zeros(xv.size, bool)
        for d in (-1, 0, 1):
            m[np.arange(256 + d, xv.size, 256)] = True
        m = m.reshape(xv.shape)
    else:
        m = rng.random(xv.shape) < density
    got = rt.eval("""function(t, m)
       local x = t:unfold(2, 1, 2):select(3, 1)
       local r = x:maskedSelect(m)
       return {r, r:nElement(), r:dim(), x:double():maskedSelect(m:byte()):dim()}
    end""")(to_device(rt, x, "CudaDouble"), byte_mask(rt, m))
    np.testing.assert_array_equal(to_host(rt, got[1]) if got[2] else np.zeros(0), xv[m])
    assert got[2] == m.sum() and got[3] == got[4]   # an empty result has the CPU's dimensions too
    assert fallbacks(rt) == {}


def test_masked_select_edge_cases(gpu, rng):
    """Empty tensors, results sharing storage with the source or the mask (the CPU's take through a copy),
    torch.maskedFill, and what runs staged with Torch7's errors: masks with values above 1, of another element count
    or type."""
    rt = gpu
    x = rng.standard_normal((5, 6)).astype(np.float32)
    m = rng.random((5, 6)) < 0.5
    got = rt.eval("""function(t, m)
       local e = torch.CudaTensor():maskedSelect(torch.CudaByteTensor())
       local a = t:clone()
       a:maskedSelect(a, m)                      -- the result is the source
       local mm = m:clone()
       mm:maskedSelect(mm, mm)                   -- the mask selects itself
       local f = torch.maskedFill(t:clone(), m, 3)   -- the functional form of compare's maskedFill, on the device too
       return {e:nElement(), e:dim(), torch.FloatTensor():maskedSelect(torch.ByteTensor()):dim(), a, mm, f}
    end""")(to_device(rt, x, "Cuda"), byte_mask(rt, m))
    assert got[1] == 0 and got[2] == got[3]
    np.testing.assert_array_equal(to_host(rt, got[4]), x[m])
    np.testing.assert_array_equal(to_host(rt, got[5]), np.ones(m.sum(), np.uint8))
    np.testing.assert_array_equal(to_host(rt, got[6]), np.where(m, 3, x))
    assert fallbacks(rt) == {}
    bad = np.where(m, 2, 0)
    with pytest.raises(LuaError, match="Mask tensor can take 0 and 1 values only"):
        rt.call(rt.eval("function(t, m) return t:maskedSelect(m) end"), to_device(rt, x, "Cuda"), byte_mask(rt, bad))
    with pytest.raises(LuaError, match="inconsistent tensor size"):
        rt.call(rt.eval("function(t, m) return t:maskedSelect(m) end"), to_device(rt, x, "Cuda"),
                byte_mask(rt, m.ravel()[:7]))
    with pytest.raises(LuaError, match="ByteTensor mask expected"):
        rt.call(rt.eval("function(t) return t:maskedSelect(t) end"), to_device(rt, x, "Cuda"))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble", "CudaLong", "CudaChar", "CudaByte"])
def test_masked_copy_in_every_form(gpu, rng, layout, name):
    """t:maskedCopy(m, src) and torch.maskedCopy(t, m, src) into views (the base keeps its other elements): a source
    larger than the count (its first elements are taken, row-major), a transposed source, a host mask, a 1-D mask."""
    rt = gpu
    dtype = TYPES[name][0]
    x = values(rng, dtype, (7, 10))
    xv = view_of(x, layout)
    m1 = rng.random(xv.shape) < 0.5
    m2 = rng.random(xv.size) < 0.3
    src = values(rng, dtype, (9, 11))
    got = rt.eval("""function(view, t, s, m1, hm, m2)
       local a, b, c = t:clone(), t:clone(), t:clone()
       view(a):maskedCopy(m1, s)
       torch.maskedCopy(view(b), hm, s:t())
       local v = view(c)
       return {a, b, c, rawequal(v:maskedCopy(m2, s), v)}
    end""")(rt.eval(LAYOUTS[layout]), device(rt, x, name), device(rt, src, name), byte_mask(rt, m1),
            host_mask(rt, m1), byte_mask(rt, m2))
    for k, (m, s) in enumerate([(m1, src), (m1, src.T), (m2.reshape(xv.shape), src)], 1):
        want = x.copy()
        view_of(want, layout)[m] = s.ravel()[:m.sum()]
        np.testing.assert_array_equal(to_host(rt, got[k]), want, err_msg="form %d" % k)
    assert got[4] is True
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("density", [0.03, 0.5, 1.0])
def test_masked_copy_across_blocks_and_tiles(gpu, rng, density):
    """97 x 131 elements into a transposed tensor from a source of exactly the count (its last element used) and
    from a strided one."""
    rt = gpu
    x = rng.standard_normal((131, 97)).astype(np.float32)
    m = rng.random((97, 131)) < density
    k = int(m.sum())
    src = rng.standard_normal(2 * k + 2).astype(np.float32)
    got = rt.eval("""function(t, m, s, k)
       local a, b = t:clone(), t:clone()
       a:t():maskedCopy(m, s:narrow(1, 1, k))
       b:t():maskedCopy(m, s:unfold(1, 1, 2):select(2, 1))
       return {a, b}
    end""")(to_device(rt, x, "Cuda"), byte_mask(rt, m), to_device(rt, src, "Cuda"), k)
    for j, s in enumerate([src[:k], src[::2]], 1):
        want = x.copy()
        want.T[m] = s[:k]
        np.testing.assert_array_equal(to_host(rt, got[j]), want, err_msg="source %d" % j)
    assert fallbacks(rt) == {}


def test_masked_copy_edge_cases(gpu, rng):
    """A source that is the tensor itself or a view of it (read as it was), a mask that is the tensor, an empty mask
    count, empty tensors; staged with Torch7's errors: a source smaller than the count, mask values above 1."""
    rt = gpu
    x = rng.standard_normal((6, 8))
    m = rng.random((6, 8)) < 0.5
    b = rng.integers(0, 2, (4, 9)).astype(np.uint8)
    got = rt.eval("""function(t, m, b)
       local a = t:clone()
       a:maskedCopy(m, a)                       -- src is self
       local c = t:clone()
       c:maskedCopy(m, c:t())                   -- src a transposed view of self
       local bb = b:clone()
       bb:maskedCopy(bb, torch.CudaByteTensor(40):fill(5))   -- the mask is self
       local z = t:clone():maskedCopy(m:clone():zero(), torch.CudaDoubleTensor())
       local e = torch.CudaDoubleTensor():maskedCopy(torch.CudaByteTensor(), torch.CudaDoubleTensor())
       return {a, c, bb, z, e:nElement()}
    end""")(to_device(rt, x, "CudaDouble"), byte_mask(rt, m), byte_mask(rt, b))
    for k, s in enumerate([x, x.T], 1):
        want = x.copy()
        want[m] = s.ravel()[:m.sum()]
        np.testing.assert_array_equal(to_host(rt, got[k]), want, err_msg="form %d" % k)
    np.testing.assert_array_equal(to_host(rt, got[3]), np.where(b == 1, 5, b))
    np.testing.assert_array_equal(to_host(rt, got[4]), x)
    assert got[5] == 0
    assert fallbacks(rt) == {}
    with pytest.raises(LuaError, match="Number of elements of src"):
        rt.call(rt.eval("function(t, m) return t:maskedCopy(m, torch.CudaDoubleTensor(2)) end"),
                to_device(rt, x, "CudaDouble"), byte_mask(rt, np.ones((6, 8))))
    with pytest.raises(LuaError, match="Mask tensor can take 0 and 1 values only"):
        rt.call(rt.eval("function(t, m) return t:maskedCopy(m, t) end"), to_device(rt, x, "CudaDouble"),
                byte_mask(rt, np.full((6, 8), 3)))


@pytest.mark.parametrize("threads,blocks", [(32, 4096), (64, 3), (1024, 2)])
def test_masked_select_and_copy_with_other_launch_geometries(gpu, rng, threads, blocks):
    """The device's launch geometry set for the call (its kernel launcher's threads per block and grid cap): one warp
    per block and more blocks than threads (the scan of the block counts then runs in several tiles), few blocks of
    many tiles, blocks of 1024 threads; the results do not change."""
    rt = gpu
    x = rng.standard_normal((83, 131))
    m = rng.random(x.shape) < 0.5
    src = rng.standard_normal(x.size)
    got = rt.eval("""function(t, m, s, threads, blocks)
       local ops = require('ffi').cast('lt_cuops *', cutorch._deviceOps(t))
       local saved = {ops.threads_per_block, ops.max_blocks}
       ops.threads_per_block, ops.max_blocks = threads, blocks
       local ok, a, b = pcall(function() return t:maskedSelect(m), t:clone():maskedCopy(m, s) end)
       ops.threads_per_block, ops.max_blocks = saved[1], saved[2]
       assert(ok, a)
       return {a, b}
    end""")(to_device(rt, x, "CudaDouble"), byte_mask(rt, m), to_device(rt, src, "CudaDouble"), threads, blocks)
    np.testing.assert_array_equal(to_host(rt, got[1]), x[m])
    want = x.copy()
    want[m] = src[:m.sum()]
    np.testing.assert_array_equal(to_host(rt, got[2]), want)
    assert fallbacks(rt) == {}



def test_masked_select_and_copy_on_the_second_gpu(two_gpus, rng):
    """Tensors and masks on GPU 2, with GPU 2 current: the compaction runs there (the new result too); a host mask
    is copied there."""
    rt = two_gpus
    x = rng.standard_normal((9, 40))
    m = rng.random(x.shape) < 0.5
    src = rng.standard_normal(x.size)
    got = rt.eval("""function(x, m, hm, s)
       cutorch.setDevice(2)
       x, m, s = x:clone(), m:clone(), s:clone()
       local r = x:maskedSelect(m)
       local c = x:clone():maskedCopy(hm, s)
       local devices = {x:getDevice(), m:getDevice(), r:getDevice(), c:getDevice()}
       cutorch.setDevice(1)
       return {r, c, devices}
    end""")(to_device(rt, x, "CudaDouble"), byte_mask(rt, m), host_mask(rt, m), to_device(rt, src, "CudaDouble"))
    assert list(got[3].values()) == [2, 2, 2, 2]
    np.testing.assert_array_equal(to_host(rt, got[1]), x[m])
    want = x.copy()
    want[m] = src[:m.sum()]
    np.testing.assert_array_equal(to_host(rt, got[2]), want)
    assert fallbacks(rt) == {}


# ----------------------------------------------------------------------------- random fills


def test_exponential_cauchy_lognormal_and_geometric_fills(gpu):
    """exponential, cauchy, logNormal and geometric on device tensors run on the device from cutorch.manualSeed's
    Philox stream (the same seed repeats the values, the next call differs), in place in a transposed view, through
    the functional forms too; their distributions match (100,000 draws: moments within 5 standard errors, quantiles,
    cutorch's geometric P(x = k) = p (1 - p)^(k - 1): trials to the first success, not the CPU's form)."""
    rt = gpu
    r = rt.eval("""function()
       local n = 100000
       cutorch.manualSeed(7)
       local e = torch.CudaDoubleTensor(n):exponential(2)
       local c = torch.CudaDoubleTensor(n):cauchy(1, 2)
       local l = torch.CudaTensor(n):logNormal(0.5, 0.4)
       local g = torch.CudaLongTensor(n):geometric(0.3)
       cutorch.manualSeed(7)
       local e2 = torch.exponential(torch.CudaDoubleTensor(n), 2)
       local e3 = torch.CudaDoubleTensor(n):exponential(2)
       local base = torch.CudaDoubleTensor(20, 30):fill(-7)
       base:t():narrow(1, 3, 10):geometric(0.5)
       local d = torch.CudaDoubleTensor(n)
       local defaults = {d:clone():cauchy(), torch.logNormal(d:clone())}
       return {e:double(), c:double(), l:double(), g:double(), e2:double(), e3:double(), base:double(),
               defaults[1]:double(), defaults[2]:double()}
    end""")()
    e, c, lg, g, e2, e3, base, c0, l0 = (rt.to_numpy(r[i]) for i in range(1, 10))
    n = e.size
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 5 * 0.5 / np.sqrt(n) and abs(e.std() - 0.5) < 0.01
    q = np.quantile(c, [0.25, 0.5, 0.75])
    assert np.allclose(q, [-1, 1, 3], atol=0.05), q
    assert abs(np.median(c0)) < 0.025 and abs(np.quantile(c0, 0.75) - 1) < 0.03
    assert lg.min() > 0 and abs(np.log(lg).mean() - 0.5) < 5 * 0.4 / np.sqrt(n) and abs(np.log(lg).std() - 0.4) < 0.005
    assert abs(np.log(l0).mean() - 1) < 5 * 2 / np.sqrt(n) and abs(np.log(l0).std() - 2) < 0.03
    assert g.min() == 1 and (g == np.round(g)).all()
    for k, p in ((1, 0.3), (2, 0.21), (3, 0.147)):
        assert abs((g == k).mean() - p) < 5 * np.sqrt(p * (1 - p) / n), k
    np.testing.assert_array_equal(e2, e)
    assert not np.array_equal(e3, e)
    inside = base[:, 2:12]
    assert inside.min() >= 1 and (inside == np.round(inside)).all() and (base[:, :2] == -7).all()
    assert (base[:, 12:] == -7).all()
    assert fallbacks(rt) == {}


RANDOM_TOP = {"CudaByte": 255, "CudaChar": 127, "CudaShort": 32767, "CudaInt": 2 ** 31 - 1, "CudaLong": 2 ** 32 - 1,
              "Cuda": 2 ** 24, "CudaDouble": 2 ** 32 - 1}


@pytest.mark.parametrize("name", sorted(RANDOM_TOP))
def test_random_integers_in_torch7s_ranges(gpu, name):
    """random() in [0, top] (the CPU's top per type: one 32-bit draw, so Long and Double stop at 2^32 - 1, as the host
    fill shows), random(b) in [1, b] and random(a, b) in [a, b] with every value drawn about equally often, bounds
    truncated to integers, a range that wraps in Byte as the CPU's conversion does; torch.random(t, ...) too."""
    rt = gpu
    r = rt.eval("""function(name)
       local n = 60000
       local t = torch[name .. 'Tensor'](n)
       local cpu = torch[(name == 'Cuda' and 'Float' or name:sub(5)) .. 'Tensor'](n):random()
       return {t:clone():random():double(), t:clone():random(6):double(), torch.random(t:clone(), -3, 4.7):double(),
               t:clone():random(2.9, 5):double(), cpu:double()}
    end""")(name)
    full, six, small, trunc, cpu = (rt.to_numpy(r[i]) for i in range(1, 6))
    top = RANDOM_TOP[name]
    assert full.min() >= 0 and full.max() <= top and cpu.max() <= top
    assert full.max() > 0.99 * top and abs(full.mean() / top - 0.5) < 0.01
    n = six.size
    for vals, lo, hi in ((six, 1, 6), (small, -3, 4), (trunc, 2, 5)):
        if name == "CudaByte" and lo < 0:
            vals = np.where(vals > 127, vals - 256, vals)   # -3 wraps to 253 in a Byte tensor
        assert set(np.unique(vals)) == set(range(lo, hi + 1)), (lo, hi)
        for v in range(lo, hi + 1):
            p = 1 / (hi - lo + 1)
            assert abs((vals == v).mean() - p) < 5 * np.sqrt(p * (1 - p) / n), (lo, hi, v)
    assert fallbacks(rt) == {}


def test_random_fills_repeat_from_the_seed_and_refuse_bad_parameters(gpu):
    """The same seed repeats random(a, b); bad parameters give the CPU's errors (those calls run staged)."""
    rt = gpu
    same = rt.eval("""function()
       cutorch.manualSeed(11)
       local a = torch.CudaIntTensor(5000):random(-100, 100)
       cutorch.manualSeed(11)
       local b = torch.CudaIntTensor(5000):random(-100, 100)
       return a:eq(b):min() == 1 and a:ne(torch.CudaIntTensor(5000):random(-100, 100)):max() == 1
    end""")()
    assert same is True
    assert fallbacks(rt) == {}
    for code, msg in [("geometric(1.5)", "geometric: p must be > 0 and < 1"),
                      ("geometric()", "geometric: p"),
                      ("logNormal(1, -1)", "standard deviation must be strictly positive"),
                      ("exponential()", "exponential: lambda"),
                      ("random(5, 2)", "upper bound must be larger than lower bound"),
                      ("random(0)", "upper bound must be strictly positive")]:
        with pytest.raises(LuaError, match=msg):
            rt.execute("torch.CudaTensor(3):" + code)
