"""cunn's GPU versions without cuDNN (lua/cunn/gpu_volumetric.lua, and the composed VolumetricMaxPooling of
lua/cunn/gpu_more_modules.lua): nn's volumetric convolutions (full and dilated too) and average pooling, the temporal
and depthwise convolutions, and the dilated volumetric max pooling, composed of cutorch's device methods.

They run where cuDNN is not used: every test here sets LUATORCH_CUDNN=0 before cudnn loads (cunn loads it on the
first GPU call), so cudnn's GPU versions fall back to these. Oracle: the same module on the CPU in double, on the same
weights, inputs and gradients; results to 1e-10, nothing staged, and cuDNN not used (cudnn.isAvailable() false, the
emulated libcudnn's pooling calls unchanged). Runs on the emulated driver in CI (the `gpu` fixture of
test_cutorch_gpu.py skips without the GPU backend)."""
import re

import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cudnn_gpu import cudnn_calls
from test_cutorch_gpu import fallbacks, gpu  # noqa: F401  (the fixture)
from test_cutorch_gpu_cunn_modules import INDEX_INPUT

TOL = dict(rtol=1e-10, atol=1e-10)


@pytest.fixture
def nocudnn(gpu, monkeypatch):
    """The GPU runtime with cuDNN off as LUATORCH_CUDNN=0 turns it off (read when cudnn loads)."""
    monkeypatch.setenv("LUATORCH_CUDNN", "0")
    gpu.execute("require 'cunn'")
    assert not gpu.eval("package.loaded.cudnn ~= nil")
    return gpu


# forward, backward and accGradParameters (scale 0.37 onto nonzero gradients) of a module on the CPU in double and
# on the GPU in double, on the same input (a view that is not contiguous where `noncontiguous`: every other cell of
# the last dimension) and gradOutput; returns {cpu, gpu} of {output, gradInput, gradWeight, gradBias, indices}
ON_BOTH = """function(x, g, ctor, noncontiguous)
   local cpu = load('return ' .. ctor)():double()
   if cpu.gradWeight then cpu.gradWeight:normal() end
   if cpu.gradBias then cpu.gradBias:normal() end
   local dev = cpu:clone():type('torch.CudaDoubleTensor')
   local out = {}
   for k, m in ipairs {cpu, dev} do
      local T = k == 1 and 'torch.DoubleTensor' or 'torch.CudaDoubleTensor'
      local input = x:type(T)
      if noncontiguous then input = input:unfold(input:dim(), 1, 2):select(input:dim() + 1, 1) end
      assert(input:isContiguous() == not noncontiguous)
      local y = m:forward(input)
      local gi = m:updateGradInput(input, g:type(T))
      m:accGradParameters(input, g:type(T), 0.37)
      local function host(t) return t and t:double():clone() or false end
      out[k] = {host(y), host(gi), host(m.gradWeight), host(m.gradBias), host(m.indices)}
   end
   return out
end"""

CASES = {
    # ctor, input shape (of the contiguous tensor: the last dimension is halved for a noncontiguous view), noncontiguous
    "volumetric conv, batch, padding, strides, overlapping windows":
        ("nn.VolumetricConvolution(2, 3, 3, 2, 3, 1, 2, 1, 1, 0, 1)", (2, 2, 5, 6, 5), False),
    "volumetric conv, one volume, gapped windows (stride > kernel)":
        ("nn.VolumetricConvolution(3, 2, 2, 1, 2, 3, 2, 3)", (3, 7, 6, 8), False),
    "volumetric conv, noncontiguous input, no bias":
        ("nn.VolumetricConvolution(2, 4, 1, 2, 2, 1, 1, 2, 0, 1, 1):noBias()", (2, 2, 3, 4, 10), True),
    "volumetric dilated conv": ("nn.VolumetricDilatedConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1, 1, 0, 2, 1, 2)",
                                (2, 2, 6, 7, 8), False),
    "cudnn volumetric conv": ("cudnn.VolumetricConvolution(2, 2, 3, 3, 3, 2, 2, 2, 1, 1, 1)", (1, 2, 5, 6, 7), False),
    "volumetric full conv, batch, adjT": ("nn.VolumetricFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 0, 0)",
                                         (2, 2, 3, 4, 3), False),
    "volumetric full conv, one volume, gapped, adjW adjH, noncontiguous":
        ("nn.VolumetricFullConvolution(3, 2, 2, 1, 2, 1, 3, 3, 0, 0, 1, 0, 2, 1)", (3, 3, 4, 10), True),
    "cudnn volumetric full conv, no bias": ("cudnn.VolumetricFullConvolution(2, 2, 2, 2, 2, 2, 2, 2):noBias()",
                                            (2, 2, 2, 3, 2), False),
    "temporal conv, batch, stride 2": ("nn.TemporalConvolution(5, 4, 3, 2)", (2, 9, 5), False),
    "temporal conv, one sequence, gapped (stride 3 > kW 2)": ("nn.TemporalConvolution(3, 2, 2, 3)", (8, 3), False),
    "temporal conv, noncontiguous": ("nn.TemporalConvolution(3, 4, 3)", (2, 7, 6), True),
    "cudnn temporal conv, padded": ("cudnn.TemporalConvolution(4, 3, 3, 1, 2)", (2, 6, 4), False),
    "depthwise conv, batch, padding": ("nn.SpatialDepthWiseConvolution(3, 2, 3, 2, 2, 1, 1, 0)", (2, 3, 7, 6), False),
    "depthwise conv, one image, gapped (dW 3 > kW 2)": ("nn.SpatialDepthWiseConvolution(4, 3, 2, 3, 3, 2, 0, 1)",
                                                        (4, 8, 9), False),
    "depthwise conv, noncontiguous, no bias": ("nn.SpatialDepthWiseConvolution(2, 1, 3, 3):noBias()",
                                               (3, 2, 5, 10), True),
    "average pooling, one volume, overlapping in T": ("nn.VolumetricAveragePooling(2, 2, 2, 1, 2, 2)", (3, 4, 6, 6),
                                                      False),
    "average pooling, batch, gapped and overlapping": ("nn.VolumetricAveragePooling(2, 3, 2, 3, 2, 1)",
                                                       (2, 2, 7, 8, 9), False),
    "average pooling, noncontiguous": ("nn.VolumetricAveragePooling(2, 2, 3)", (2, 3, 5, 6, 14), True),
    "cudnn average pooling, padding, ceil mode": ("cudnn.VolumetricAveragePooling(2, 2, 3, 2, 2, 2, 1, 1, 1):ceil()",
                                                  (2, 2, 5, 6, 7), False),
    "dilated max pooling, batch, padding": ("nn.VolumetricDilatedMaxPooling(2, 3, 2, 1, 2, 2, 1, 1, 1, 2, 2, 3)",
                                            (2, 2, 7, 8, 9), False),
    "dilated max pooling, ceil mode, gapped": ("nn.VolumetricDilatedMaxPooling(2, 2, 2, 3, 2, 3, 1, 1, 1, 2, 1, 2)"
                                               ":ceil()", (2, 5, 6, 8), False),
    "dilated max pooling, noncontiguous": ("nn.VolumetricDilatedMaxPooling(3, 2, 2, 1, 1, 1, 0, 0, 0, 1, 2, 2)",
                                           (2, 6, 5, 12), True),
    "max pooling, padding, ceil mode": ("nn.VolumetricMaxPooling(3, 2, 2, 2, 1, 2, 1, 1, 1):ceil()", (2, 5, 6, 7),
                                        False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_modules_without_cudnn_against_the_cpu_in_double(nocudnn, rng, case):
    """Each module's forward, backward and accGradParameters (a scale onto nonzero gradients) on the GPU, cuDNN off,
    against the same module on the CPU in double: batch and single inputs, odd sizes, strides, padding, dilation,
    ceil mode, windows that overlap and windows with gaps, a noncontiguous input, the cudnn subclasses (through
    their nn parents); the max pooling's indices too (ties: the first maximum wins); nothing staged, cuDNN unused."""
    rt = nocudnn
    ctor, shape, noncontiguous = CASES[case]
    if ctor.startswith("cudnn."):
        rt.execute("require 'cudnn'")   # (nn's modules load it on their first GPU call)
    x = rng.standard_normal(shape)
    if "MaxPooling" in ctor:
        x = np.round(x * 2) / 2   # ties
    size = rt.eval("""function(x, ctor, noncontiguous)
       if noncontiguous then x = x:unfold(x:dim(), 1, 2):select(x:dim() + 1, 1) end
       return load('return ' .. ctor)():double():forward(x):size():totable()
    end""")(rt.from_numpy(x), ctor, noncontiguous)
    g = rng.standard_normal(list(size.values()))
    pooled = cudnn_calls("Pooling")
    out = rt.eval(ON_BOTH)(rt.from_numpy(x), rt.from_numpy(g), ctor, noncontiguous)
    for i, what in ((1, "output"), (2, "gradInput"), (3, "gradWeight"), (4, "gradBias"), (5, "indices")):
        if out[1][i] is False:
            assert out[2][i] is False, what
            continue
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, **TOL)
    assert rt.eval("package.loaded.cudnn ~= nil and not cudnn.isAvailable()")
    assert cudnn_calls("Pooling") == pooled
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape,mixed", [
    ("nn.VolumetricDilatedMaxPooling(2, 2, 1, 3, 1, 1, 0, 0, 0, 1, 2, 1):ceil()", (2, 3, 4, 5), True),  # past the end
    ("nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2, 2):ceil()", (2, 1, 3, 1), False),  # straddling
])
def test_max_pooling_windows_without_a_cell_of_the_volume(nocudnn, rng, ctor, shape, mixed):
    """Ceil mode places a last window past the end; a dilated window may straddle a short side: such windows hold
    no cell of the volume, named 0xFFFFFF in the indices, -inf in the output, and take no gradient, as on the CPU."""
    rt = nocudnn
    x = rng.standard_normal(shape)
    size = rt.eval("function(x, ctor) return load('return ' .. ctor)():double():forward(x):size():totable() end")(
        rt.from_numpy(x), ctor)
    g = rng.standard_normal(list(size.values()))
    out = rt.eval(ON_BOTH)(rt.from_numpy(x), rt.from_numpy(g), ctor, False)
    indices = rt.to_numpy(out[1][5])
    assert np.any(indices == 0xFFFFFF) and np.any(indices != 0xFFFFFF) == mixed
    for i, what in ((1, "output"), (2, "gradInput"), (5, "indices")):
        np.testing.assert_array_equal(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what)
    assert fallbacks(rt) == {}


def test_full_convolution_with_a_target_and_float_types(nocudnn, rng):
    """nn.VolumetricFullConvolution given {input, target} (adj from the target's size; the target's gradient zeros),
    and the modules in float (CudaTensor against FloatTensor, to float precision); nothing staged."""
    rt = nocudnn
    x = rng.standard_normal((2, 2, 3, 3, 4))
    r = rt.eval("""function(x)
       local cpu = nn.VolumetricFullConvolution(2, 3, 3, 3, 3, 2, 2, 2, 1, 1, 1):double()
       local dev = cpu:clone():type('torch.CudaDoubleTensor')
       local target = torch.zeros(2, 3, 6, 6, 8)
       local y, yd = cpu:forward({x, target}), dev:forward({x:cudaDouble(), target:cudaDouble()})
       local g = torch.randn(y:size())
       local gi = cpu:backward({x, target}, g, 0.5)
       local gid = dev:backward({x:cudaDouble(), target:cudaDouble()}, g:cudaDouble(), 0.5)
       local diff = {y:size(5) == 8, (yd:double() - y):abs():max(), (gid[1]:double() - gi[1]):abs():max(),
                     gid[2]:double():abs():max(), (dev.gradWeight:double() - cpu.gradWeight):abs():max()}
       -- float
       for _, ctor in ipairs {'nn.VolumetricConvolution(2, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1)',
                              'nn.SpatialDepthWiseConvolution(2, 2, 3, 3)', 'nn.TemporalConvolution(4, 3, 2)',
                              'nn.VolumetricAveragePooling(2, 2, 2)'} do
          local m = load('return ' .. ctor)():float()
          local md = m:clone():cuda()
          local input = ctor:find('Temporal') and torch.randn(2, 5, 4) or ctor:find('Spatial') and torch.randn(2, 2, 5, 6)
                        or torch.randn(2, 2, 4, 5, 6)
          local yf, ydf = m:forward(input:float()), md:forward(input:cuda())
          local gf = torch.randn(yf:size()):float()
          local gif, gidf = m:backward(input:float(), gf), md:backward(input:cuda(), gf:cuda())
          diff[#diff + 1] = math.max((ydf:float() - yf):abs():max(), (gidf:float() - gif):abs():max(),
                                     m.gradWeight and (md.gradWeight:float() - m.gradWeight):abs():max() or 0)
          diff[#diff + 1] = torch.type(ydf) == 'torch.CudaTensor'
       end
       return diff
    end""")(rt.from_numpy(x))
    r = list(r.values())
    assert r[0] is True
    assert max(r[1:5]) < 1e-10, r
    floats = r[5:]
    assert all(floats[i + 1] is True for i in range(0, len(floats), 2))
    assert max(floats[0::2]) < 1e-4, floats
    assert fallbacks(rt) == {}


# a bad call on the CPU module and on the GPU module: their error messages (without the location)
ERRORS_ON_BOTH = """function(ctor, shape, gshape, method)
   local msgs = {}
   for k, T in ipairs {'torch.DoubleTensor', 'torch.CudaDoubleTensor'} do
      local m = load('return ' .. ctor)():type(T)
      local x = torch.randn(torch.LongStorage(shape)):type(T)
      local ok, err
      if method == 'updateOutput' then
         ok, err = pcall(m.updateOutput, m, x)
      else
         ok, err = pcall(m[method], m, x, torch.randn(torch.LongStorage(gshape)):type(T))
      end
      msgs[k] = ok and 'no error' or tostring(err)
   end
   return msgs
end"""

ERRORS = [
    ("nn.VolumetricConvolution(2, 3, 2, 2, 2)", (3, 3, 3, 3), None, "updateOutput"),          # planes
    ("nn.VolumetricConvolution(2, 3, 2, 2, 2)", (2, 3, 3), None, "updateOutput"),             # rank
    ("nn.VolumetricConvolution(2, 3, 3, 3, 3)", (2, 2, 4, 4), None, "updateOutput"),          # too small
    ("nn.VolumetricConvolution(2, 3, 2, 2, 2)", (2, 3, 3, 3), (3, 2, 2, 3), "updateGradInput"),
    ("nn.VolumetricConvolution(2, 3, 2, 2, 2)", (2, 3, 3, 3), (3, 2, 2, 3), "accGradParameters"),
    ("nn.VolumetricFullConvolution(2, 3, 2, 2, 2)", (3, 3, 3, 3), None, "updateOutput"),
    ("nn.VolumetricFullConvolution(2, 3, 2, 2, 2)", (2, 3, 3, 3), (3, 4, 4, 3), "updateGradInput"),
    ("nn.TemporalConvolution(4, 3, 3)", (5, 3), None, "updateOutput"),                        # frame size
    ("nn.TemporalConvolution(4, 3, 3)", (2, 4), None, "updateOutput"),                        # too short
    ("nn.TemporalConvolution(4, 3, 3)", (5, 4), (3, 4), "updateGradInput"),
    ("nn.SpatialDepthWiseConvolution(2, 3, 3, 3)", (3, 5, 5), None, "updateOutput"),
    ("nn.SpatialDepthWiseConvolution(2, 3, 3, 3)", (2, 2, 5), None, "updateOutput"),
    ("nn.SpatialDepthWiseConvolution(2, 3, 3, 3)", (2, 5, 5), (6, 3, 2), "updateGradInput"),
    ("nn.VolumetricAveragePooling(2, 2, 2)", (2, 3, 3), None, "updateOutput"),
    ("nn.VolumetricAveragePooling(3, 3, 3)", (2, 2, 4, 4), None, "updateOutput"),
    ("nn.VolumetricAveragePooling(2, 2, 2)", (2, 4, 4, 4), (2, 2, 2, 3), "updateGradInput"),
    ("nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 0, 0, 0, 3, 3, 3)", (2, 3, 3, 3), None, "updateOutput"),
    ("nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2)", (2, 4, 4, 4), (2, 2, 2, 3),
     "updateGradInput"),
]


@pytest.mark.parametrize("ctor,shape,gshape,method", ERRORS)
def test_errors_are_the_host_kernels(nocudnn, ctor, shape, gshape, method):
    """A wrong rank, plane count or frame size, an input too small for the window, a gradOutput of the wrong shape:
    the GPU version raises the host kernel's message."""
    rt = nocudnn
    msgs = rt.eval(ERRORS_ON_BOTH)(ctor, rt.eval("function(...) return {...} end")(*shape),
                                   gshape and rt.eval("function(...) return {...} end")(*gshape), method)
    cpu, dev = (re.sub(r"^[^ ]*:\d+: ", "", msgs[k]) for k in (1, 2))
    assert cpu != "no error" and dev == cpu


def test_layers_that_were_cudnn_only_run_where_cudnn_is_off(gpu):
    """With cudnn.enabled = false (as where libcudnn is missing) nn's volumetric layers, its temporal and depthwise
    convolutions and cudnn's volumetric max pooling run on our composed versions instead of being refused."""
    rt = gpu
    rt.execute("require 'cunn' require 'cudnn' cudnn.enabled = false")
    for ctor, shape in (("nn.VolumetricConvolution(2, 3, 3, 3, 3)", "1, 2, 4, 5, 5"),
                        ("nn.TemporalConvolution(5, 4, 3)", "2, 5, 5"),
                        ("nn.SpatialDepthWiseConvolution(2, 3, 3, 3)", "1, 2, 5, 5"),
                        ("cudnn.VolumetricMaxPooling(2, 2, 2)", "1, 2, 4, 5, 5"),
                        ("nn.VolumetricFullConvolution(2, 3, 3, 3, 3)", "1, 2, 4, 5, 5")):
        n = rt.eval("function() return %s:cuda():forward(torch.CudaTensor(%s):fill(1)):nElement() end" % (ctor, shape))()
        assert n > 0, ctor
    rt.execute("cudnn.enabled = true")
    assert fallbacks(rt) == {}


# nn.IndexLinear with max-normalization on both sides, from the same weights (statistics columns set: a stored max,
# its inverse, an update scale, a value bias; some features never seen); returns {cpu, gpu} of the results in order
NORMALIZED_INDEX_ON_BOTH = """function(keys, values, gos, flat, weightDecay, seed)
   torch.manualSeed(seed)
   local cpu = nn.IndexLinear(12, 5, false, 3, nil, nil, true):double()
   cpu:reset()
   local stats = cpu.weight:narrow(2, 1, 4)
   stats:select(2, 1):uniform(0.2, 1.5)
   stats:select(2, 2):copy(stats:select(2, 1)):pow(-1)
   stats:select(2, 3):uniform(0.5, 1.5)
   stats:select(2, 4):normal(0, 0.1)
   stats:narrow(1, 1, 3):zero()   -- features never seen
   cpu.weightDecay = weightDecay
   local dev = cpu:clone():type('torch.CudaDoubleTensor')
   local scales = torch.rand(12):add(0.5)   -- update scales other than a training forward's 1
   local out = {}
   for k, m in ipairs {cpu, dev} do
      m:training()
      local function on(t, long) if long then return k == 1 and t:long() or t:cudaLong() end
                                 return k == 1 and t:clone() or t:cudaDouble() end
      local input = (%s)(keys, values, flat and 'flat' or 'batch', on, k)
      local res = {}
      local function keep(t) res[#res + 1] = t:double():clone() end
      keep(m:forward(input)) keep(m.normalizedValues) keep(m.weight)
      m:backward(input, on(gos[1]), 0.5)
      keep(m.running.gradWeight[1]) keep(m.gradBias)
      m:forward(input)
      m:accGradParameters(input, on(gos[2]), 2)
      m:updateParameters(0.1)             -- two recorded accumulations, their key rows concatenated
      keep(m.weight) keep(m.bias)
      m:zeroGradParameters()
      m:forward(input)
      m:accGradParameters(input, on(gos[1]), 1)
      m.weight:select(2, 3):cmul(on(scales))
      m:updateParameters(0.2)             -- one
      keep(m.weight) keep(m.bias)
      m:accUpdateGradParameters(input, on(gos[2]), 0.3)
      keep(m.weight) keep(m.bias)
      m:evaluate()                        -- no statistics change; values beyond the max clamp to their sign
      for _, v in ipairs(flat and {input[2]} or input[2]) do v:mul(3) end
      keep(m:forward(input)) keep(m.weight)
      out[k] = res
   end
   return out
end""" % INDEX_INPUT


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("weight_decay", [0, 0.1])
def test_index_linear_max_normalization_against_the_cpu_in_double(gpu, rng, flat, weight_decay):
    """nn.IndexLinear's max-normalization (normalize) with its weight in GPU memory: in training each key first
    raises its feature's stored max (a feature named several times, within and across samples, sees the maxima of
    its earlier names), its value scaled by the inverse plus the feature's value bias; the statistics kept; the
    gradWeight rows {scale·gradOutput, scale·value·gradOutput}; updateParameters over two and one accumulations and
    accUpdateGradParameters, name by name in key order (the value bias moves by the row before each step, the
    update scale weighs step and decay), with and without weight decay; evaluation clamps values beyond the max.
    Against the CPU module in double; nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    counts = [5, 0, 7, 3]
    keys = [rng.integers(-2, 10, n) for n in counts]
    keys[2][:3] = keys[0][0]     # a key three times in one sample, and in another
    keys[3][1] = keys[0][0]
    values = [rng.standard_normal(n) * 1.5 for n in counts]
    gos = [rng.standard_normal((len(counts), 5)) for _ in range(2)]
    tables = rt.eval("function(...) return {...} end")
    to_lua = lambda a: rt.from_numpy(np.asarray(a, dtype=np.float64)) if len(a) else rt.eval("torch.DoubleTensor()")
    out = rt.eval(NORMALIZED_INDEX_ON_BOTH)(tables(*[to_lua(k) for k in keys]), tables(*[to_lua(v) for v in values]),
                                            tables(*[rt.from_numpy(g) for g in gos]), flat, weight_decay,
                                            int(rng.integers(1, 1 << 30)))
    names = ["output", "normalizedValues", "weight (statistics after a forward)", "gradWeight rows", "gradBias",
             "weight (two accumulations)", "bias (two)", "weight (one)", "bias (one)", "weight (accUpdate)",
             "bias (accUpdate)", "output (evaluation)", "weight (evaluation)"]
    for i, what in enumerate(names, 1):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), err_msg=what, **TOL)
    stats = rt.to_numpy(out[1][3])[:, :4]
    assert np.any(stats[:, 2] == 1) and np.any(stats[:, 2] != 1)   # named features' update scale set, others kept
    assert fallbacks(rt) == {}
