"""torch.cat of device tensors on cutorch's GPU backend: the inputs' slabs filled in one batched launch (cutorch's
catArray), whatever their layouts, dimensions and sizes; torch.cat of two inputs, or of inputs on another GPU, copies
one by one. Oracles: numpy's concatenate of the same values, and the CPU's torch.cat. Runs on a GPU, and in CI on the
emulated driver (test_cutorch_gpu.py's last test)."""
import numpy as np
import pytest

from test_cutorch_gpu import fallbacks, gpu  # noqa: F401  (the fixture)

# the launches of a cat into a result of the right size already (a new result's memory is zero-filled first: a launch)
CAT = """function(dim, ...)
   local list = {...}
   local r = torch.cat(list, dim):fill(0 / 0)
   local before = cutorch.deviceCallCounts()
   torch.cat(r, list, dim)
   local after = cutorch.deviceCallCounts()
   return r:double(), after.launches - before.launches
end"""


def device_inputs(rt, arrays, layouts):
    """Each array as a CudaTensor in its layout: 'c' contiguous, 't' the transpose of a contiguous tensor,
    'n' a narrowed view with a step, 'e' expanded from one slice along the first dimension."""
    make = rt.eval("""function(x, layout)
       local d = x:cuda()
       if layout == 't' and d:dim() >= 2 then
          return d:transpose(1, d:dim()):contiguous():transpose(1, d:dim())
       elseif layout == 'n' then
          local big = torch.CudaTensor(d:size(1) * 2 + 1, unpack(d:size():totable(), 2)):fill(0 / 0)
          local v = big:narrow(1, 2, d:size(1) * 2 - 1)
          v = v:unfold(1, 1, 2):select(v:dim() + 1, 1)
          v:copy(d)
          return v
       elseif layout == 'e' then
          return d:narrow(1, 1, 1):expand(d:size())
       end
       return d
    end""")
    out = []
    for x, lay in zip(arrays, layouts):
        if lay == "e":
            x[...] = x[:1]
        out.append(make(rt.from_numpy(np.ascontiguousarray(x)), lay))
    return out


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_cat_of_many_device_tensors_is_one_launch(gpu, rng, dim):
    rt = gpu
    k = int(rng.integers(3, 9))
    shape = [int(v) for v in rng.integers(1, 6, 3)]
    arrays, layouts = [], []
    for _ in range(k):
        s = list(shape)
        s[dim - 1] = int(rng.integers(0, 7))   # 0: an input with nothing along the cat dimension
        arrays.append(rng.standard_normal(s))
        layouts.append("ctne"[int(rng.integers(4))] if s[dim - 1] > 0 else "c")
    inputs = device_inputs(rt, arrays, layouts)
    r, launches = rt.eval(CAT)(dim, *inputs)
    want = np.concatenate(arrays, axis=dim - 1).astype(np.float32)
    np.testing.assert_array_equal(rt.to_numpy(r), want)
    filled = sum(a.size > 0 for a in arrays)   # three or more inputs with elements: one launch; fewer, one each
    assert launches == (1 if filled >= 3 else filled), (layouts, [a.shape for a in arrays], launches)
    assert fallbacks(rt) == {}


def test_cat_keeps_torch7s_rules_for_other_dimensions_and_empty_inputs(gpu, rng):
    """Torch7's catArray: an input with fewer dimensions counts as one with trailing sizes 1, an empty tensor is
    skipped, the default dimension is the last; every element type. The CPU's torch.cat is the oracle."""
    rt = gpu
    check = rt.eval("""function(a, b, c, ty)
       local cpu = torch.cat({a:type(ty), torch.Tensor():type(ty), b:type(ty), c:type(ty)}, 2)
       local cty = ty == 'torch.FloatTensor' and 'torch.CudaTensor' or (ty:gsub('torch%.', 'torch.Cuda'))
       local dev = torch.cat({a:type(cty), torch.Tensor():type(cty), b:type(cty), c:type(cty)}, 2)
       return cpu:double(), dev:double()
    end""")
    a, b, c = rng.integers(-9, 9, (4, 3)), rng.integers(-9, 9, 4), rng.integers(-9, 9, (4, 2))
    for ty in ("torch.FloatTensor", "torch.DoubleTensor", "torch.IntTensor", "torch.ByteTensor"):
        cpu, dev = check(*(rt.from_numpy(x.astype(np.float64)) for x in (a, b, c)), ty)
        np.testing.assert_array_equal(rt.to_numpy(dev), rt.to_numpy(cpu))
    last = rt.eval("function(x, y, z) return torch.cat({x:cuda(), y:cuda(), z:cuda()}):double() end")
    x, y, z = rng.standard_normal((2, 3)), rng.standard_normal((2, 1)), rng.standard_normal((2, 4))
    np.testing.assert_array_equal(rt.to_numpy(last(*(rt.from_numpy(v) for v in (x, y, z)))),
                                  np.concatenate([x, y, z], 1).astype(np.float32))


def test_cat_of_half_and_long_moves_bits(gpu, rng):
    """The batched copy moves elements as bits: half values (NaN, -0, subnormals) and longs beyond 2^53 arrive
    exactly."""
    rt = gpu
    bits = rng.integers(0, 2 ** 16, (5, 7)).astype(np.uint16)
    halves = bits.view(np.float16)
    r = rt.eval("""function(x)
       local h = x:cudaHalf()
       return torch.cat({h:narrow(1, 1, 2), h:narrow(1, 3, 1), h:narrow(1, 4, 2)}, 1):float()
    end""")(rt.from_numpy(halves.astype(np.float32)))
    got = rt.to_numpy(r).astype(np.float16)
    want = halves.astype(np.float32).astype(np.float16)   # what survives the float round trip into and out of half
    assert np.array_equal(got.view(np.uint16)[~np.isnan(got)], want.view(np.uint16)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    big = rng.integers(2 ** 53, 2 ** 62, 6)
    r = rt.eval("""function(x)
       local l = x:cudaLong()
       return torch.cat({l:narrow(1, 1, 1), l:narrow(1, 2, 3), l:narrow(1, 5, 2)}, 1):long()
    end""")(rt.from_numpy(big))
    assert rt.to_numpy(r).tolist() == big.tolist()


def test_cat_of_two_or_across_gpus_copies_one_by_one(gpu, rng):
    rt = gpu
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((1, 3))
    r, launches = rt.eval(CAT)(1, *device_inputs(rt, [x, y], "cc"))
    np.testing.assert_array_equal(rt.to_numpy(r), np.concatenate([x, y]).astype(np.float32))
    assert launches == 2
    if rt.eval("cutorch.getDeviceCount()") < 2:
        return
    try:
        r = rt.eval("""function(a, b, c)
           local on2 = a:cuda()
           cutorch.setDevice(2)
           local res = torch.cat({on2, b:cuda(), c:cuda()}, 1)
           local dev = res:getDevice()
           cutorch.setDevice(1)
           return res:double(), dev
        end""")(*(rt.from_numpy(v) for v in (x, y, x)))
    finally:
        rt.execute("cutorch.setDevice(1)")
    np.testing.assert_array_equal(rt.to_numpy(r[0]), np.concatenate([x, y, x]).astype(np.float32))
    assert r[1] == 2   # made on the current GPU, as cutorch's result was
