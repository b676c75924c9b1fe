"""cunn's GPU versions of nn's last modules with host kernels (lua/cunn/gpu_more_modules.lua): the fractional max
poolings, VolumetricMaxUnpooling (and the VolumetricMaxPooling that keeps its indices for it), SparseLinear and
IndexLinear, composed of cutorch's device methods.

Oracle: the same module on the CPU in double, on the same weights, inputs and (for the fractional poolings) random
samples; results compared to 1e-12, and nothing may run staged. Runs on the emulated driver in CI (the `gpu` fixture
of test_cutorch_gpu.py skips without the GPU backend)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import fallbacks, gpu  # noqa: F401  (the fixture)

TOL = dict(rtol=1e-12, atol=1e-13)

# forward / backward of a fractional max pooling on both sides, the GPU module given the CPU module's samples;
# returns {cpu, gpu} of {output, indices, gradInput, randomSamples}, the GPU module, and the GPU module back in double
FRACTIONAL_ON_BOTH = """function(x, g, ctor, ty)
   local cpu = load('return ' .. ctor)():type(ty == 'torch.CudaTensor' and 'torch.FloatTensor' or 'torch.DoubleTensor')
   local dev = cpu:clone():type(ty)
   local out = {}
   for k, m in ipairs {cpu, dev} do
      local input = k == 1 and x:type(cpu.output:type()) or x:type(ty)
      local grad = k == 1 and g:type(cpu.output:type()) or g:type(ty)
      if k == 2 then m.randomSamples = cpu.randomSamples:type(ty) end
      m:fixPoolingRegions()
      for pass = 1, 2 do   -- the second pass reuses the fixed regions (and the module's buffers)
         m:forward(input)
         m:backward(input, grad)
      end
      out[k] = {m.output:double(), m.indices:double(), m.gradInput:double(), m.randomSamples:double()}
   end
   return out, dev, dev:clone():double()
end"""


@pytest.mark.parametrize("ctor,shape", [
    ("nn.SpatialFractionalMaxPooling(2, 3, 4, 3)", (2, 3, 9, 8)),            # batch, fixed output size
    ("nn.SpatialFractionalMaxPooling(3, 2, 0.5, 0.7)", (3, 11, 10)),          # one sample, ratios
    ("nn.SpatialFractionalMaxPooling(2, 2, 1, 5)", (2, 7, 6)),                # one window across a side
    ("nn.VolumetricFractionalMaxPooling(2, 2, 3, 3, 4, 2)", (2, 2, 7, 8, 6)),  # batch (H, W, T)
    ("nn.VolumetricFractionalMaxPooling(3, 2, 2, 0.5, 0.6, 0.7)", (3, 6, 7, 9)),
])
@pytest.mark.parametrize("ty", ["torch.CudaDoubleTensor", "torch.CudaTensor"])
def test_fractional_max_pooling_on_the_gpu_against_the_cpu(gpu, rng, ctor, shape, ty):
    """Spatial and volumetric fractional max pooling, batch and not, fixed output sizes and ratios, odd sizes:
    output, indices and gradInput (overlapping windows add up) against the CPU module on the same samples, in double
    and in float (the window starts are computed in the input's precision), with ties (the first maximum wins) and a
    NaN (it wins its windows); two passes with fixed regions; nothing staged; the module converted back with
    :double() holds the same state."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = np.round(rng.standard_normal(shape) * 2) / 2
    x.reshape(-1)[5] = np.nan
    cpu_out = rt.eval("function(x, ctor) local m = load('return ' .. ctor)() return m:forward(x) end")(
        rt.from_numpy(x), ctor)
    g = rng.standard_normal(rt.to_numpy(cpu_out).shape)
    out, dev, back = rt.eval(FRACTIONAL_ON_BOTH)(rt.from_numpy(x), rt.from_numpy(g), ctor, ty)
    for i, what in ((1, "output"), (2, "indices"), (3, "gradInput"), (4, "randomSamples")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, equal_nan=True,
                                   **TOL)
    assert rt.eval("function(m) return torch.type(m.indices) end")(dev) == "torch.CudaLongTensor"
    np.testing.assert_array_equal(rt.to_numpy(rt.eval("function(m) return m.output end")(back)),
                                  rt.to_numpy(out[2][1]))
    assert fallbacks(rt) == {}


def test_fractional_max_pooling_draws_its_samples_on_the_device(gpu):
    """Without fixed samples a GPU module draws them with cutorch's generator (a CudaDoubleTensor in [0, 1)), anew
    every forward, and keeps them after fixPoolingRegions; its output is the CPU module's on those samples; the
    host kernel's errors for a pool too large and a wrong gradOutput."""
    rt = gpu
    rt.execute("require 'cunn'")
    r = rt.eval("""function()
       local m = nn.SpatialFractionalMaxPooling(2, 2, 3, 3):type('torch.CudaDoubleTensor')
       local x = torch.randn(2, 7, 7)
       m:forward(x:cudaDouble())
       local first = m.randomSamples:clone()
       m:forward(x:cudaDouble())
       local second = m.randomSamples:clone()
       m:fixPoolingRegions()
       m:forward(x:cudaDouble())
       local cpu = nn.SpatialFractionalMaxPooling(2, 2, 3, 3):double()
       cpu.randomSamples = m.randomSamples:double()
       cpu:fixPoolingRegions()
       return torch.type(first), first:double(), (second - first):abs():max(), (m.randomSamples - second):abs():max(),
              (cpu:forward(x) - m.output:double()):abs():max()
    end""")()
    assert r[0] == "torch.CudaDoubleTensor"
    u = rt.to_numpy(r[1])
    assert u.shape == (1, 2, 2) and np.all((u >= 0) & (u < 1))
    assert r[2] > 0 and r[3] == 0 and r[4] == 0
    with pytest.raises(LuaError, match=r"SpatialFractionalMaxPooling_updateOutput: poolSizeW \(4\) too large "
                                       r"relative to input width \(6\)"):
        rt.execute("nn.SpatialFractionalMaxPooling(4, 2, 3, 2):cuda():forward(torch.CudaTensor(2, 6, 6):zero())")
    with pytest.raises(LuaError, match=r"VolumetricFractionalMaxPooling_updateGradInput: gradOutput \[2 x 2 x 2 x 3\] "
                                       r"does not match the expected size \(2 x 2 x 2 per plane\)"):
        rt.execute("local m = nn.VolumetricFractionalMaxPooling(2, 2, 2, 2, 2, 2):cuda() "
                   "local x = torch.CudaTensor(2, 5, 5, 5):uniform() m:forward(x) "
                   "m:backward(x, torch.CudaTensor(2, 2, 2, 3):zero())")
    assert fallbacks(rt) == {}


# SparseLinear on both sides: a batch (a table of samples with repeated columns), trained for two steps with the
# sparse updates (one recorded input) and then the dense ones (two inputs accumulated)
SPARSE_ON_BOTH = """function(samples, gos, legacy, weightDecay, seed)
   torch.manualSeed(seed)
   local cpu = nn.SparseLinear(13, 6, true):double()
   cpu.weightDecay = weightDecay
   local dev = cpu:clone():type('torch.CudaDoubleTensor')
   local out = {}
   for k, m in ipairs {cpu, dev} do
      local function on(t) return k == 1 and t:clone() or t:cudaDouble() end
      local input
      if legacy then input = on(samples[1]) elseif #samples == 1 then input = on(samples[1]) else
         input = {}
         for i, s in ipairs(samples) do input[i] = on(s) end
      end
      local res = {}
      local function keep(t) res[#res + 1] = t:double():clone() end
      local go = on(gos[1])
      m:zeroGradParameters()
      keep(m:forward(input))
      local gi = m:backward(input, go, 0.5)
      if legacy then keep(gi) else keep(gi[1]) end
      keep(m.gradWeight) keep(m.gradBias)
      m:updateParameters(0.1)             -- one recorded input: the columns it used
      keep(m.weight) keep(m.bias)
      m:zeroGradParameters()
      keep(m.gradWeight)
      m:forward(input)
      m:accGradParameters(input, go, 2)
      m:forward(input)
      m:accGradParameters(input, on(gos[2]), 1)
      m:updateParameters(0.05)            -- accumulated twice: the dense update
      keep(m.weight) keep(m.bias)
      out[k] = res
   end
   return out, dev:clone():double()
end"""


@pytest.mark.parametrize("form", ["batch", "one sample", "legacy"])
@pytest.mark.parametrize("weight_decay", [0, 0.1])
def test_sparse_linear_on_the_gpu_against_the_cpu_in_double(gpu, rng, form, weight_decay):
    """nn.SparseLinear with its weight in GPU memory, on a batch of samples (columns repeated across samples), one sample, and the legacy (batch x nnz x 2) tensor: output, the dense gradInput, gradWeight
    and gradBias with a scale and weight decay, the sparse updateParameters and zeroGradParameters of one recorded
    input, then two accumulations and the dense update, against the CPU module in double; nothing staged; the module
    converted back with :double() holds the CPU module's weights."""
    rt = gpu
    rt.execute("require 'cunn'")
    counts = {"batch": [4, 7, 1, 3], "one sample": [5], "legacy": [4, 4, 4]}[form]
    samples = []
    for n in counts:
        s = np.empty((n, 2))
        s[:, 0] = rng.choice(np.arange(1, 14), n, replace=False)
        s[:, 1] = rng.standard_normal(n)
        samples.append(s)
    if form == "legacy":
        samples = [np.stack(samples)]
    nout = 1 if form == "one sample" else len(counts)
    gos = [rng.standard_normal((nout, 6)) for _ in range(2)]
    if form == "one sample":
        gos = [g[0] for g in gos]
    tables = rt.eval("function(...) return {...} end")
    out, back = rt.eval(SPARSE_ON_BOTH)(tables(*[rt.from_numpy(s) for s in samples]),
                                        tables(*[rt.from_numpy(g) for g in gos]), form == "legacy", weight_decay,
                                        int(rng.integers(1, 1 << 30)))
    names = ["output", "gradInput", "gradWeight", "gradBias", "weight (sparse step)", "bias (sparse step)",
             "gradWeight (sparse zero)", "weight (dense step)", "bias (dense step)"]
    for i, what in enumerate(names, 1):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, **TOL)
    np.testing.assert_array_equal(rt.to_numpy(rt.eval("function(m) return m.weight end")(back)),
                                  rt.to_numpy(out[2][8]))
    assert fallbacks(rt) == {}
    with pytest.raises(LuaError, match=r"SparseLinear_updateOutput: column 14 out of range \[1, 13\]"):
        rt.execute("nn.SparseLinear(13, 2):cuda():forward({torch.CudaTensor{{1, 1}, {2, 1}}, "
                   "torch.CudaTensor{{3, 2}, {14, 1}}})")


# IndexLinear on both sides: forward, backward (the dense gradInput), two accumulations and updateParameters,
# zeroGradParameters, accUpdateGradParameters
# IndexLinear's input on one side (on: that side's copy of a tensor, a LongTensor's when long) in the given form
INDEX_INPUT = """function(keys, values, form, on, side)
   if form == 'flat' then
      local sizes = torch.LongTensor(#keys)
      for i = 1, #keys do sizes[i] = keys[i]:nElement() end
      return {on(torch.cat(keys), true), on(torch.cat(values)), side == 1 and sizes or sizes:cudaLong()}
   elseif form == 'one sample' then
      return {on(keys[1], true), on(values[1])}
   end
   local input = {{}, {}}
   for i = 1, #keys do input[1][i], input[2][i] = on(keys[i], true), on(values[i]) end
   return input
end"""

INDEX_ON_BOTH = """function(keys, values, gos, form, weightDecay, offset, seed)
   torch.manualSeed(seed)
   local cpu = nn.IndexLinear(12, 5, true, offset):double()
   cpu:reset()
   cpu.weightDecay = weightDecay
   local dev = cpu:clone():type('torch.CudaDoubleTensor')
   local out = {}
   for k, m in ipairs {cpu, dev} do
      local function on(t, long) if long then return k == 1 and t:long() or t:cudaLong() end
                                 return k == 1 and t:clone() or t:cudaDouble() end
      local input = (%s)(keys, values, form, on, k)
      local res = {}
      local function keep(t) res[#res + 1] = t:double():clone() end
      keep(m:forward(input))
      local gi = m:backward(input, on(gos[1]), 0.5)
      keep(form == 'batch' and gi[2][1] or gi[2])
      keep(m.running.gradWeight[1]) keep(m.gradBias)
      m:forward(input)
      m:accGradParameters(input, on(gos[2]), 2)
      m:updateParameters(0.1)             -- two recorded accumulations, their key rows concatenated
      keep(m.weight) keep(m.bias)
      m:zeroGradParameters()
      m:forward(input)
      m:accGradParameters(input, on(gos[1]), 1)
      m:updateParameters(0.2)             -- one
      keep(m.weight) keep(m.bias)
      m:accUpdateGradParameters(input, on(gos[2]), 0.3)
      keep(m.weight) keep(m.bias)
      out[k] = res
   end
   return out, dev:clone():double()
end""" % INDEX_INPUT


@pytest.mark.parametrize("form", ["batch", "one sample", "flat"])
@pytest.mark.parametrize("weight_decay", [0, 0.1])
def test_index_linear_on_the_gpu_against_the_cpu_in_double(gpu, rng, form, weight_decay):
    """nn.IndexLinear with its weight in GPU memory, on a batch of {keys, values} tables (keys repeated within and
    across samples, a sample without keys), one sample, and the flat {keys, values, sizes} form, a keysOffset:
    output, the dense gradInput, the sparse gradWeight rows and gradBias, updateParameters over two and over one
    recorded accumulations, accUpdateGradParameters, with and without weight decay (a row named several times
    decays once per name, in key order), against the CPU module in double; nothing staged; the module converted
    back with :double() holds the CPU module's weights."""
    rt = gpu
    rt.execute("require 'cunn'")
    offset = 3   # keys in [-2, 9]
    counts = {"batch": [4, 0, 6, 1], "one sample": [7], "flat": [3, 5, 2]}[form]
    keys = [rng.integers(-2, 10, n) for n in counts]
    keys[-1][0] = keys[0][0] if counts[0] else keys[-1][0]   # a key in two samples
    if counts[0] > 1:
        keys[0][1] = keys[0][0]                               # and twice in one
    values = [rng.standard_normal(n) for n in counts]
    nout = 1 if form == "one sample" else len(counts)
    gos = [rng.standard_normal((nout, 5)) for _ in range(2)]
    if form == "one sample":
        gos = [g[0] for g in gos]
    tables = rt.eval("function(...) return {...} end")
    to_lua = lambda a: rt.from_numpy(np.asarray(a, dtype=np.float64)) if len(a) else rt.eval("torch.DoubleTensor()")
    out, back = rt.eval(INDEX_ON_BOTH)(tables(*[to_lua(k) for k in keys]), tables(*[to_lua(v) for v in values]),
                                       tables(*[rt.from_numpy(g) for g in gos]), form, weight_decay, offset,
                                       int(rng.integers(1, 1 << 30)))
    names = ["output", "gradInput", "gradWeight rows", "gradBias", "weight (two accumulations)", "bias (two)",
             "weight (one)", "bias (one)", "weight (accUpdate)", "bias (accUpdate)"]
    for i, what in enumerate(names, 1):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, **TOL)
    np.testing.assert_array_equal(rt.to_numpy(rt.eval("function(m) return m.weight end")(back)),
                                  rt.to_numpy(out[2][9]))
    assert fallbacks(rt) == {}


def test_index_linear_errors_on_the_gpu(gpu):
    """A key out of range is named as on the CPU (max-normalization: test_cutorch_gpu_volumetric.py)."""
    rt = gpu
    rt.execute("require 'cunn'")
    with pytest.raises(LuaError, match=r"IndexLinear_updateOutput: key 11 is out of range: keys must be in "
                                       r"\[1, 10\] \(inputSize 10, keysOffset 0\)"):
        rt.execute("nn.IndexLinear(10, 2):cuda():forward({torch.CudaLongTensor{3, 11, 12}, torch.CudaTensor(3):zero()})")


# a VolumetricMaxPooling -> VolumetricMaxUnpooling pair (or the pooling alone, keeping its indices) on both sides
VOLUMETRIC_PAIR_ON_BOTH = """function(x, g, args, ceil, pair)
   local pool = nn.VolumetricMaxPooling(table.unpack(args))
   if ceil then pool:ceil() end
   local net = pair and nn.Sequential():add(pool):add(nn.VolumetricMaxUnpooling(pool)) or pool
   nn.VolumetricMaxUnpooling.readPoolings[pool] = true   -- (the pooling alone keeps them as for an unpooling)
   net:double()
   local dev = net:clone():type('torch.CudaDoubleTensor')
   if not pair then nn.VolumetricMaxUnpooling.readPoolings[dev] = true end   -- (a clone of a pair registers itself)
   local out = {}
   for k, m in ipairs {net, dev} do
      local input = k == 1 and x:clone() or x:cudaDouble()
      local grad = k == 1 and g:clone() or g:cudaDouble()
      local p = pair and m.modules[1] or m
      for pass = 1, 2 do
         m:forward(input)
         m:backward(input, grad)
      end
      out[k] = {m.output:double(), m.gradInput:double(), p.output:double(), p.indices:double()}
   end
   return out, dev
end"""


@pytest.mark.parametrize("args,ceil,pair,shape", [
    ((2, 2, 3), False, True, (2, 3, 5, 7, 9)),                    # batch; sizes not multiples of the kernel
    ((3, 2, 2, 3, 2, 2, 1, 1, 1), False, True, (3, 7, 6, 5)),     # padding
    ((2, 3, 2), True, True, (2, 5, 7, 5)),                         # ceil mode
    ((2, 2, 2, 3, 1, 2), True, False, (2, 6, 5, 7)),              # the pooling alone: overlaps, a window past the end
])
def test_volumetric_max_unpooling_on_the_gpu_against_the_cpu_in_double(gpu, rng, args, ceil, pair, shape):
    """nn.VolumetricMaxUnpooling after its nn.VolumetricMaxPooling, both in GPU memory (the pooling keeps its
    indices on the GPU for the unpooling, in Torch7's packed layout): the unpooled output, the gradInput through
    both, the pooled output and the indices, against the CPU modules in double, with padding, ceil mode, ties (the
    first maximum wins) and a NaN, twice; and the pooling alone with overlapping windows (gradients add up) and a
    last window past the volume (no index); nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = np.round(rng.standard_normal(shape) * 2) / 2
    x.reshape(-1)[3] = np.nan
    size = rt.eval("""function(x, args, ceil)
       local m = nn.VolumetricMaxPooling(table.unpack(args)) if ceil then m:ceil() end
       return m:forward(x):size():totable() end""")
    pooled = list(size(rt.from_numpy(x), rt.eval("function(...) return {...} end")(*args), ceil).values())
    g = rng.standard_normal(shape if pair else pooled)
    out, dev = rt.eval(VOLUMETRIC_PAIR_ON_BOTH)(rt.from_numpy(x), rt.from_numpy(g),
                                                rt.eval("function(...) return {...} end")(*args), ceil, pair)
    for i, what in ((1, "output"), (2, "gradInput"), (3, "pooled output"), (4, "indices")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, equal_nan=True,
                                   **TOL)
    if not pair:
        assert np.any(rt.to_numpy(out[1][4]) == 0xFFFFFF)   # the case has a window without cells
    assert fallbacks(rt) == {}


def test_volumetric_max_unpooling_names_missing_indices_on_the_gpu(gpu):
    """A pooling that ran on the GPU without keeping its indices (a module from before its unpooling existed) is
    named, and keeps them from then on; an index outside the volume is the host kernel's error."""
    rt = gpu
    rt.execute("require 'cunn'")
    with pytest.raises(LuaError, match="kept no indices for this input on the GPU"):
        rt.execute("""pool = nn.VolumetricMaxPooling(2, 2, 2):cuda()
                      unpool = nn.VolumetricMaxUnpooling(pool):cuda()
                      nn.VolumetricMaxUnpooling.readPoolings[pool] = nil
                      x = torch.CudaTensor(2, 4, 4, 4):uniform()
                      pool:forward(x:double():cuda())   -- (on cuDNN)
                      pool.itime = 4                     -- (as a pooling that ran before on the CPU)
                      unpool:forward(pool.output)""")
    rt.execute("assert(unpool:forward(pool:forward(x)):nElement() == 128)")
    with pytest.raises(LuaError, match="VolumetricMaxUnpooling_updateOutput: indices hold a position outside the "
                                       "output volume"):
        rt.execute("pool.indices:fill(5) unpool:forward(pool.output)")
    assert fallbacks(rt) == {}


def test_volumetric_max_pooling_runs_composed_where_cudnn_is_off(gpu, rng):
    """Without cuDNN nn.VolumetricMaxPooling (undilated) runs cunn's composed version instead of refusing GPU memory:
    output, indices and gradInput are the CPU module's; nothing staged."""
    rt = gpu
    rt.execute("require 'cunn' require 'cudnn' cudnn.enabled = false")
    x = rng.standard_normal((2, 3, 5, 6, 7))
    r = rt.eval("""function(x)
       local cpu = nn.VolumetricMaxPooling(2, 3, 2, 2, 2, 1, 1, 1, 0):double()
       local dev = cpu:clone():type('torch.CudaDoubleTensor')
       local y, yd = cpu:forward(x), dev:forward(x:cudaDouble())
       local g = torch.randn(y:size())
       local gi, gid = cpu:backward(x, g), dev:backward(x:cudaDouble(), g:cudaDouble())
       return {(yd:double() - y):abs():max(), (dev.indices:long() - cpu.indices):abs():max(),
               (gid:double() - gi):abs():max()}
    end""")(rt.from_numpy(x))
    rt.execute("cudnn.enabled = true")
    assert list(r.values()) == [0, 0, 0]
    assert fallbacks(rt) == {}
