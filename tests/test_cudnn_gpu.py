"""The cudnn.* modules on cuDNN itself (lua/cudnn/gpu.lua): SpatialConvolution and batch normalization
(native/src/cuda_cudnn.c); pooling, activations and the softmax family (native/src/cuda_cudnn_layers.c).

Two kinds of test:
- cuDNN's descriptor and shape logic against the real libcudnn where its wheel is installed (no GPU needed:
  descriptors and output sizes work without a device; the tests skip where libcudnn is absent).
- The convolutions through cuDNN on cutorch's GPU backend, against the CPU module in double. They skip without
  the backend and cuDNN; on a GPU machine .ci/gpu-check runs them, and in CI the last test runs them in a process
  whose driver, cuBLAS and cuDNN are tests/cuda_host's emulations (emulated_cudnn.c: cuDNN's argument checks,
  a catalogue of algorithms with workspace needs, Find*Ex, batch norm's saved statistics checked against the batch,
  and the arithmetic as plain loops in double) with
  two devices and guarded device memory."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import MODULE_ON_BOTH, fallbacks

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATED = os.environ.get("LUATORCH_CUDA_CUDNN", "").endswith("libcudnn_emulated.so")


def conv_params(ffi, kW, kH, dW, dH, padW, padH, dilW=1, dilH=1, groups=1, T=None):
    """T: (kT, dT, padT, dilT) of a 3-D convolution"""
    kT, dT, padT, dilT = T or (1, 1, 0, 1)
    return ffi.new("lt_cudnn_conv *", dict(kW=kW, kH=kH, dW=dW, dH=dH, padW=padW, padH=padH, dilW=dilW, dilH=dilH,
                                          groups=groups, mode=0, algo=[-1, -1, -1], tf32=0, workspace_limit=-1,
                                          dims=3 if T else 2, kT=kT, dT=dT, padT=padT, dilT=dilT))


@pytest.fixture
def cudnn_library(rt):
    """The C layer with libcudnn loaded (the real one, or the emulation in its emulated run)."""
    from pytorch_bridge.native import ffi, lib

    if lib.lt_cudnn_available() != 0:
        pytest.skip("cuDNN is not installed: %s" % ffi.string(lib.lt_errmsg()).decode())
    return lib, ffi


def test_output_sizes_from_cudnns_descriptors_match_nns_formula(cudnn_library, rng):
    """For random 2-D and 3-D geometries (groups, stride, padding, dilation, Float and Double), the output size
    cuDNN's own descriptors give equals nn's: floor((H + 2 pad - (dil (k - 1) + 1)) / stride) + 1."""
    lib, ffi = cudnn_library
    out = ffi.new("int64_t[5]")
    for _ in range(300):
        groups = int(rng.choice([1, 1, 2, 3, 4]))
        C, K = groups * int(rng.integers(1, 5)), groups * int(rng.integers(1, 5))
        kH, kW = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        dH, dW = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        dilH, dilW = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        padH, padW = int(rng.integers(0, kH)), int(rng.integers(0, kW))
        H = int(rng.integers(dilH * (kH - 1) + 1, 40)) - 2 * padH
        W = int(rng.integers(dilW * (kW - 1) + 1, 40)) - 2 * padW
        H, W = max(H, 1), max(W, 1)
        N = int(rng.integers(1, 9))
        oH = (H + 2 * padH - (dilH * (kH - 1) + 1)) // dH + 1
        oW = (W + 2 * padW - (dilW * (kW - 1) + 1)) // dW + 1
        if oH < 1 or oW < 1:
            continue
        dtype = lib.LT_FLOAT if rng.random() < 0.5 else lib.LT_DOUBLE
        if rng.random() < 0.5:   # 2-D
            c = conv_params(ffi, kW, kH, dW, dH, padW, padH, dilW, dilH, groups)
            rc = lib.lt_cudnn_conv_output_size(c, dtype, [N, C, H, W], K, out)
            want = [N, K, oH, oW]
        else:   # 3-D, T drawn as H was
            kT, dT, dilT = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
            padT = int(rng.integers(0, kT))
            T = max(int(rng.integers(dilT * (kT - 1) + 1, 12)) - 2 * padT, 1)
            oT = (T + 2 * padT - (dilT * (kT - 1) + 1)) // dT + 1
            if oT < 1:
                continue
            c = conv_params(ffi, kW, kH, dW, dH, padW, padH, dilW, dilH, groups, T=(kT, dT, padT, dilT))
            rc = lib.lt_cudnn_conv_output_size(c, dtype, [N, C, T, H, W], K, out)
            want = [N, K, oT, oH, oW]
        assert rc == 0, ffi.string(lib.lt_errmsg())
        assert list(out)[:len(want)] == want, (N, C, H, W, K, kH, kW, dH, dW, padH, padW, dilH, dilW, groups)


def test_cudnn_refuses_bad_geometries_by_name(cudnn_library):
    lib, ffi = cudnn_library
    out = ffi.new("int64_t[4]")
    # a kernel wider than the padded input: cuDNN's own refusal, named
    assert lib.lt_cudnn_conv_output_size(conv_params(ffi, 5, 5, 1, 1, 0, 0), lib.LT_FLOAT, [1, 3, 4, 4], 2, out) != 0
    assert "CUDNN_STATUS_BAD_PARAM" in ffi.string(lib.lt_errmsg()).decode()
    # planes that groups do not divide, and a zero stride: ours, before any descriptor
    assert lib.lt_cudnn_conv_output_size(conv_params(ffi, 1, 1, 1, 1, 0, 0, groups=2), lib.LT_FLOAT,
                                           [1, 3, 4, 4], 2, out) != 0
    assert "3 input and 2 output planes in 2 groups" in ffi.string(lib.lt_errmsg()).decode()
    assert lib.lt_cudnn_conv_output_size(conv_params(ffi, 1, 1, 0, 1, 0, 0), lib.LT_FLOAT, [1, 3, 4, 4], 2, out) != 0
    assert "stride" in ffi.string(lib.lt_errmsg()).decode()


# ----------------------------------------------------------------------------- on a GPU (or the emulated one)

@pytest.fixture
def gpu(rt):
    rt.execute("require 'cutorch'")
    if rt.eval("cutorch.backend") != "gpu":
        pytest.skip("cutorch's GPU backend is not on (LUATORCH_CUTORCH=gpu on a GPU machine; the last test of this "
                    "file runs these on the emulated driver)")
    rt.execute("require 'cunn' require 'cudnn' cutorch.setHostFallback('quiet')")
    if not rt.eval("cudnn.isAvailable()"):
        pytest.skip("cuDNN is not installed")
    return rt


CONVOLUTIONS = {
    "3x3 pad 1": ("cudnn.SpatialConvolution(3, 5, 3, 3, 1, 1, 1, 1)", (2, 3, 7, 6)),
    "1x1 stride 2": ("cudnn.SpatialConvolution(4, 6, 1, 1, 2, 2)", (2, 4, 9, 9)),
    "7x7 stride 2 without bias": ("cudnn.SpatialConvolution(3, 4, 7, 7, 2, 2, 3, 3):noBias()", (2, 3, 15, 13)),
    "2 groups, uneven": ("cudnn.SpatialConvolution(4, 6, 3, 2, 2, 1, 1, 0, 2)", (3, 4, 8, 7)),
    "depthwise": ("cudnn.SpatialConvolution(4, 4, 3, 3, 1, 1, 1, 1, 4)", (2, 4, 6, 6)),
    "one image": ("cudnn.SpatialConvolution(3, 2, 3, 2, 1, 2, 0, 1)", (3, 6, 7)),
    "a noncontiguous input": ("cudnn.SpatialConvolution(3, 2, 2, 2)", (2, 3, 6, 5)),
    # the full (transposed) convolution, on the plans of the convolution it is the adjoint of
    "full, 3x3 stride 2 adj 1": ("cudnn.SpatialFullConvolution(3, 4, 3, 3, 2, 2, 1, 1, 1, 1)", (2, 3, 5, 4)),
    "full, 4x4 stride 2 without bias": ("cudnn.SpatialFullConvolution(2, 3, 4, 4, 2, 2, 1, 1):noBias()", (2, 2, 4, 5)),
    "full, one image": ("cudnn.SpatialFullConvolution(3, 2, 3, 2, 1, 2, 0, 1)", (3, 5, 6)),
    "full, a noncontiguous input": ("cudnn.SpatialFullConvolution(2, 3, 3, 3, 2, 1, 1, 0, 1, 0)", (2, 2, 4, 6)),
    # a sequence (N x) T x F: inputFrameSize, outputFrameSize, kH, dH, padH
    "temporal": ("cudnn.TemporalConvolution(5, 4, 3)", (2, 9, 5)),
    "temporal strided and padded, one sequence": ("cudnn.TemporalConvolution(3, 2, 2, 2, 1)", (7, 3)),
    "temporal, a noncontiguous input": ("cudnn.TemporalConvolution(4, 3, 3, 1, 2)", (2, 6, 4)),
    # 3-D: (nIn, nOut, kT, kW, kH, dT, dW, dH, padT, padW, padH(, adjT, adjW, adjH))
    "volumetric 3x3x3 pad 1": ("cudnn.VolumetricConvolution(2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1)", (2, 2, 4, 5, 5)),
    "volumetric strided, one volume": ("cudnn.VolumetricConvolution(2, 2, 2, 3, 2, 3, 1, 2, 1, 0, 1)", (2, 5, 6, 7)),
    "volumetric, a noncontiguous input": ("cudnn.VolumetricConvolution(2, 2, 1, 2, 2):noBias()", (2, 2, 3, 4, 5)),
    "volumetric full, strided with adj": ("cudnn.VolumetricFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 0, 0)",
                                          (2, 2, 3, 4, 3)),
}
MODES = {
    "heuristics": "",
    "benchmark": "cudnn.benchmark = true",
    "fastest": "m:fastest()",
    "setMode": "m:setMode('CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM', 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_1', "
               "'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1')",
}
# what the emulated library's catalogue makes each mode choose (forward, backward data, backward filter)
EMULATED_CHOICE = {"heuristics": [1, 1, 1], "benchmark": [2, 0, 3], "fastest": [1, 1, 1], "setMode": [0, 1, 1]}

@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_cudnn_convolutions_against_the_cpu_in_double(gpu, rng, name, mode):
    """Output, gradInput, and gradWeight/gradBias accumulated twice (scales 0.5 and 1) onto nonzero buffers, as
    the CPU module computes them in double, with the algorithms each mode chooses; nothing staged."""
    rt = gpu
    ctor, shape = CONVOLUTIONS[name]
    x = rng.standard_normal(shape)
    run = rt.eval(MODULE_ON_BOTH % ctor)
    out, device_input, module = run(rt.from_numpy(x), "noncontiguous" in name, int(rng.integers(1, 1 << 30)),
                            MODES[mode])
    for i, what in ((1, "output"), (2, "gradInput"), (3, "gradWeight"), (4, "gradBias")):
        cpu, dev = rt.to_numpy(out[1][i]), rt.to_numpy(out[2][i])
        assert cpu.shape == dev.shape, (what, cpu.shape, dev.shape)
        np.testing.assert_allclose(dev, cpu, rtol=1e-11, atol=1e-11, err_msg="%s, %s: %s" % (name, mode, what))
    chosen = list(rt.eval("""function(m, input)
       local a = cudnn.algorithmsOf(m, input)
       return {a.forward.algorithm, a.backwardData.algorithm, a.backwardFilter.algorithm}
    end""")(module, device_input).values())
    assert all(a >= 0 for a in chosen), chosen
    if mode == "setMode":
        assert chosen == [0, 1, 1]
    if EMULATED:
        assert chosen == EMULATED_CHOICE[mode], chosen
    assert fallbacks(rt) == {}


def test_full_convolution_given_its_target_size(gpu, rng):
    """{input, target}: adj from the target's size, the target's gradient zero; on cuDNN, as on the CPU in double."""
    rt = gpu
    x, t = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 2, 8, 10))
    run = rt.eval("""function(x, t)
       torch.manualSeed(7)
       local cpu = cudnn.SpatialFullConvolution(3, 2, 3, 3, 2, 2, 1, 1):double()
       local m = cpu:clone():type('torch.CudaDoubleTensor')
       local r = {}
       for k, mod in ipairs {cpu, m} do
          local input = k == 1 and {x, t} or {x:cudaDouble(), t:cudaDouble()}
          local y = mod:forward(input)
          local g = torch.ones(y:size()):double()
          local gi = mod:backward(input, k == 1 and g or g:cudaDouble())
          r[k] = {y:double():clone(), gi[1]:double():clone(), gi[2]:double():clone(), mod.gradWeight:double():clone()}
       end
       return r, cudnn.algorithmsOf(m, {x:cudaDouble(), t:cudaDouble()}) ~= nil
    end""")
    r, on_cudnn = run(rt.from_numpy(x), rt.from_numpy(t))
    assert on_cudnn
    assert tuple(rt.to_numpy(r[2][1]).shape) == (2, 2, 8, 10)
    for i in (1, 2, 3, 4):
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-11, atol=1e-11)
    assert not rt.to_numpy(r[2][3]).any()


def test_float_convolutions_use_float32_math_unless_tf32_is_allowed(gpu, rng):
    """CudaTensor convolutions against the CPU module in float64: within float32's rounding with FMA math (the
    default, as Torch7 computed), and still close (TF32's ~1e-3) with cudnn.allowTF32."""
    rt = gpu
    x = rng.standard_normal((4, 8, 10, 10))
    run = rt.eval("""function(x, tf32)
       cudnn.allowTF32 = tf32
       torch.manualSeed(3)
       local cpu = cudnn.SpatialConvolution(8, 16, 3, 3, 1, 1, 1, 1):double()
       local m = cpu:clone():cuda()
       local y = m:forward(x:cuda()):double()
       return {cpu:forward(x), y}
    end""")
    for tf32, tol in ((False, 2e-5), (True, 2e-2)):
        ref, got = (rt.to_numpy(t) for t in run(rt.from_numpy(x), tf32).values())
        assert np.max(np.abs(got - ref)) <= tol * np.max(np.abs(ref)), tf32


def test_the_workspace_limit_and_fastest(gpu, rng):
    """With cudnn.maxWorkspaceGPUMemPercent so small that the limit is 0 bytes, the heuristics take algorithms
    that need no workspace; fastest ignores the limit (in the emulation: the ones that need some)."""
    rt = gpu
    x = rng.standard_normal((2, 3, 8, 8))
    run = rt.eval("""function(x, fastest)
       cudnn.maxWorkspaceGPUMemPercent = 1e-12
       local m = cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1):cuda()
       if fastest then m:fastest() end
       local input = x:cuda()
       m:backward(input, m:forward(input):clone():fill(1))
       local a = cudnn.algorithmsOf(m, input)
       return {a.forward.workspace, a.backwardData.workspace, a.backwardFilter.workspace,
               a.forward.algorithm, a.backwardData.algorithm, a.backwardFilter.algorithm}
    end""")
    limited = list(run(rt.from_numpy(x), False).values())
    assert limited[:3] == [0, 0, 0], limited
    if EMULATED:
        assert limited[3:] == [0, 0, 0]
        fastest = list(run(rt.from_numpy(x), True).values())
        assert fastest[3:] == [1, 1, 1] and min(fastest[:3]) > 0, fastest


def test_set_mode_names_and_reset(gpu):
    rt = gpu
    rt.execute("m = cudnn.SpatialConvolution(2, 2, 3, 3):cuda() input = torch.CudaTensor(1, 2, 5, 5):fill(1)")
    with pytest.raises(LuaError, match="no forward algorithm named 'CUDNN_FAST'"):
        rt.execute("m:setMode('CUDNN_FAST') m:forward(input)")
    # DIRECT has never had an implementation in cuDNN: refused by cuDNN itself, saying which algorithm
    with pytest.raises(LuaError, match="algorithm 3, as set by setMode"):
        rt.execute("m:setMode('CUDNN_CONVOLUTION_FWD_ALGO_DIRECT') m:forward(input)")
    rt.execute("m:resetMode() m:forward(input)")
    assert rt.eval("cudnn.algorithmsOf(m, input) ~= nil")
    rt.execute("cudnn.reset()")
    assert rt.eval("cudnn.algorithmsOf(m, input) == nil")


def test_errors_name_the_problem(gpu):
    rt = gpu
    with pytest.raises(LuaError, match="input has 5 planes, expected 3"):
        rt.execute("cudnn.SpatialConvolution(3, 4, 3, 3):cuda():forward(torch.CudaTensor(2, 5, 5, 5))")
    with pytest.raises(LuaError, match="Output size is too small"):
        rt.execute("cudnn.SpatialConvolution(3, 4, 5, 5):cuda():forward(torch.CudaTensor(3, 4, 4))")
    with pytest.raises(LuaError, match="weight must be a Double tensor like the input, not Float"):
        rt.execute("cudnn.SpatialConvolution(1, 1, 1, 1):cuda():forward(torch.CudaDoubleTensor(1, 2, 2))")
    with pytest.raises(LuaError, match="weight should be nOutputPlane x nInputPlane/2 x 3 x 3"):
        rt.execute("m = cudnn.SpatialConvolution(4, 4, 3, 3, 1, 1, 0, 0, 2):cuda() m.weight = torch.CudaTensor(4, 2, 2, 3) "
                   "m:forward(torch.CudaTensor(1, 4, 5, 5))")


def test_data_parallel_table_over_two_gpus_with_cudnn(gpu, rng):
    """Worker threads on two GPUs each run cuDNN with their own handle: the table's output and summed gradients
    equal one CPU module's over the whole batch."""
    rt = gpu
    if rt.eval("cutorch.getDeviceCount()") < 2:
        pytest.skip("one GPU")
    x = rng.standard_normal((4, 3, 6, 6))
    run = rt.eval("""function(x)
       torch.manualSeed(5)
       local cpu = nn.Sequential():add(cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.View(4 * 36))
       cpu:double()
       local dpt = nn.DataParallelTable(1, true, true):add(cpu:clone():type('torch.CudaDoubleTensor'), {1, 2})
       dpt:threads(function() require 'cudnn' end)
       local y = cpu:forward(x)
       local g = torch.randn(y:size()):double()
       cpu:zeroGradParameters() dpt:zeroGradParameters()
       cpu:backward(x, g)
       local gy = dpt:forward(x:cudaDouble())
       dpt:backward(x:cudaDouble(), g:cudaDouble())
       local _, gw = cpu:parameters()
       local _, dgw = dpt:get(1):parameters()
       local r = {y, gy:double(), gw[1], dgw[1]:double(), gw[2], dgw[2]:double()}
       dpt.impl:close()
       return r
    end""")
    r = run(rt.from_numpy(x))
    for i in (1, 3, 5):
        np.testing.assert_allclose(rt.to_numpy(r[i + 1]), rt.to_numpy(r[i]), rtol=1e-11, atol=1e-11)


BATCH_NORMS = {
    "spatial": ("cudnn.SpatialBatchNormalization(5)", (4, 5, 3, 6)),
    "spatial, momentum and eps": ("cudnn.SpatialBatchNormalization(3, 1e-3, 0.3)", (2, 3, 5, 5)),
    "1-D": ("cudnn.BatchNormalization(6)", (7, 6)),
    "volumetric": ("cudnn.VolumetricBatchNormalization(3)", (2, 3, 2, 4, 3)),
    "spatial, a noncontiguous input": ("cudnn.SpatialBatchNormalization(4)", (3, 4, 5, 6)),
}


@pytest.mark.parametrize("name", sorted(BATCH_NORMS))
def test_cudnn_batch_normalization_against_the_cpu_in_double(gpu, rng, name):
    """Two training steps (output, gradInput, gradWeight/gradBias accumulated with scales 0.5 then 1 through
    backward and through updateGradInput + accGradParameters, the running statistics), then evaluation (output,
    and a backward pass from the running statistics), as the CPU module computes them in double."""
    rt = gpu
    ctor, shape = BATCH_NORMS[name]
    x = rng.standard_normal(shape) * 2 + 0.5
    run = rt.eval("""function(x, noncontiguous, seed)
       torch.manualSeed(seed)
       local cpu = %s:double()
       cpu.weight:uniform(0.5, 1.5) cpu.bias:uniform(-1, 1)
       local m = cpu:clone():type('torch.CudaDoubleTensor')
       local out = {}
       for k, mod in ipairs {cpu, m} do
          local input = k == 1 and x:clone() or x:cudaDouble()
          if noncontiguous then
             local d = input:dim()
             input = input:transpose(d - 1, d):clone():transpose(d - 1, d)
          end
          torch.manualSeed(seed)
          local r = {}
          local function keep(t) r[#r + 1] = t:double():clone() end   -- :double() of a DoubleTensor is itself
          mod:training()
          mod.gradWeight:fill(0.25) mod.gradBias:fill(-0.5)
          local y = mod:forward(input)
          local g = torch.randn(y:size()):double()
          local grad = k == 1 and g or g:cudaDouble()
          keep(y)
          keep(mod:backward(input, grad, 0.5))
          keep(mod:forward(input * 0.5))
          keep(mod:updateGradInput(input * 0.5, grad))
          mod:accGradParameters(input * 0.5, grad, 1)
          keep(mod.gradWeight)
          keep(mod.gradBias)
          keep(mod.running_mean)
          keep(mod.running_var)
          mod:evaluate()
          keep(mod:forward(input))
          keep(mod:backward(input, grad))
          out[k] = r
       end
       return out
    end""" % ctor)
    out = run(rt.from_numpy(x), "noncontiguous" in name, int(rng.integers(1, 1 << 30)))
    names = ["output", "gradInput", "second output", "second gradInput", "gradWeight", "gradBias", "running_mean",
             "running_var", "evaluation output", "evaluation gradInput"]
    for i, what in enumerate(names, 1):
        cpu, dev = rt.to_numpy(out[1][i]), rt.to_numpy(out[2][i])
        assert cpu.shape == dev.shape, (what, cpu.shape, dev.shape)
        np.testing.assert_allclose(dev, cpu, rtol=1e-10, atol=1e-10, err_msg="%s: %s" % (name, what))
    assert fallbacks(rt) == {}


def test_cudnn_batch_normalization_in_float(gpu, rng):
    rt = gpu
    x = rng.standard_normal((8, 4, 5, 5))
    run = rt.eval("""function(x)
       local cpu = cudnn.SpatialBatchNormalization(4):double()
       local m = cpu:clone():cuda()
       local g = torch.randn(8, 4, 5, 5):double()
       return {cpu:forward(x), m:forward(x:cuda()):double(), cpu:backward(x, g), m:backward(x:cuda(), g:cuda()):double(),
               cpu.running_var, m.running_var:double()}
    end""")
    r = [rt.to_numpy(t) for t in run(rt.from_numpy(x)).values()]
    for i in (0, 2, 4):
        np.testing.assert_allclose(r[i + 1], r[i], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- pooling, activations, softmax

def cudnn_calls(kind):
    """How often the emulated libcudnn has run cudnn<kind>Forward and cudnn<kind>Backward (None outside the
    emulation): proof that cuDNN, not our kernels, computed a layer."""
    if not EMULATED:
        return None
    import ctypes

    f = ctypes.CDLL(os.environ["LUATORCH_CUDA_CUDNN"]).emu_cudnn_calls   # the copy the C layer loaded
    f.restype, f.argtypes = ctypes.c_long, [ctypes.c_char_p]
    return [f(("cudnn%s%s" % (kind, way)).encode()) for way in ("Forward", "Backward")]


def test_pooling_output_sizes_from_cudnns_descriptors_match_nns_floor_mode(cudnn_library, rng):
    """2-D and 3-D windows, strides and paddings up to half the window: cuDNN's own descriptors give nn's
    floor((n + 2 pad - k) / stride) + 1 in every pooled dimension (no GPU needed)."""
    lib, ffi = cudnn_library
    out = ffi.new("int64_t[5]")
    for _ in range(300):
        dims = int(rng.choice([2, 3]))
        k = [int(v) for v in rng.integers(1, 6, dims)]
        s = [int(v) for v in rng.integers(1, 4, dims)]
        pad = [int(rng.integers(0, kk // 2 + 1)) for kk in k]
        n = [int(rng.integers(max(1, kk - 2 * pp), 30)) for kk, pp in zip(k, pad)]
        sizes = [int(rng.integers(1, 5)), int(rng.integers(1, 9))] + n
        mode = int(rng.integers(0, 3))
        p = ffi.new("lt_cudnn_pool *", dict(dims=dims, mode=mode, window=k + [0] * (3 - dims),
                                           pad=pad + [0] * (3 - dims), stride=s + [0] * (3 - dims)))
        dtype = lib.LT_FLOAT if rng.random() < 0.5 else lib.LT_DOUBLE
        assert lib.lt_cudnn_pooling_output_size(p, dtype, sizes, out) == 0, ffi.string(lib.lt_errmsg())
        want = sizes[:2] + [(nn + 2 * pp - kk) // ss + 1 for nn, kk, pp, ss in zip(n, k, pad, s)]
        assert list(out)[:dims + 2] == want, (sizes, k, s, pad, mode)
    # a window larger than the padded input: refused, by cuDNN's name for it
    p = ffi.new("lt_cudnn_pool *", dict(dims=2, mode=0, window=[5, 5, 0], pad=[0, 0, 0], stride=[1, 1, 0]))
    assert lib.lt_cudnn_pooling_output_size(p, lib.LT_FLOAT, [1, 1, 3, 3], out) != 0
    assert "CUDNN_STATUS_BAD_PARAM" in ffi.string(lib.lt_errmsg()).decode()


LAYERS = {   # constructor, input shape, the cuDNN functions that must compute it
    "max pooling 3x3, stride 2, pad 1": ("cudnn.SpatialMaxPooling(3, 3, 2, 2, 1, 1)", (2, 3, 9, 8), "Pooling"),
    "max pooling of one image": ("cudnn.SpatialMaxPooling(2, 2)", (3, 7, 6), "Pooling"),
    "average pooling with padding": ("cudnn.SpatialAveragePooling(3, 2, 2, 1, 1, 1)", (2, 4, 7, 9), "Pooling"),
    "global average pooling": ("cudnn.SpatialAveragePooling(7, 7, 1, 1)", (2, 5, 7, 7), "Pooling"),
    "volumetric max pooling": ("cudnn.VolumetricMaxPooling(2, 3, 3, 1, 2, 2, 1, 1, 1)", (2, 2, 5, 7, 6), "Pooling"),
    "volumetric max pooling of one volume": ("cudnn.VolumetricMaxPooling(2, 2, 2)", (3, 4, 6, 6), "Pooling"),
    "volumetric average pooling with padding": ("cudnn.VolumetricAveragePooling(2, 3, 3, 1, 2, 2, 1, 1, 1)",
                                                (1, 2, 4, 7, 6), "Pooling"),
    "relu": ("cudnn.ReLU()", (3, 4, 5), "Activation"),
    "relu in place": ("cudnn.ReLU(true)", (2, 3, 4, 4), "Activation"),
    "clipped relu": ("cudnn.ClippedReLU(0.7)", (4, 9), "Activation"),
    "clipped relu in place": ("cudnn.ClippedReLU(0.7, true)", (4, 9), "Activation"),
    "tanh": ("cudnn.Tanh()", (5, 7), "Activation"),
    "sigmoid in place": ("cudnn.Sigmoid(true)", (2, 3, 5), "Activation"),
    "softmax": ("cudnn.SoftMax()", (4, 10), "Softmax"),
    "softmax over whole images": ("cudnn.SoftMax()", (2, 3, 4, 5), "Softmax"),
    "fast softmax": ("cudnn.SoftMax(true)", (3, 6), "Softmax"),
    "log-softmax": ("cudnn.LogSoftMax()", (4, 10), "Softmax"),
    "log-softmax of one vector": ("cudnn.LogSoftMax()", (10,), "Softmax"),
    "spatial softmax": ("cudnn.SpatialSoftMax()", (2, 4, 3, 5), "Softmax"),
    "spatial softmax of one image": ("cudnn.SpatialSoftMax()", (4, 3, 5), "Softmax"),
    "spatial log-softmax": ("cudnn.SpatialLogSoftMax()", (2, 4, 3, 5), "Softmax"),
    "volumetric softmax": ("cudnn.VolumetricSoftMax()", (2, 3, 2, 4, 3), "Softmax"),
}


@pytest.mark.parametrize("name,layout", [(n, lay) for n in sorted(LAYERS) for lay in ("contiguous", "transposed")
                                         if lay == "contiguous" or len(LAYERS[n][1]) > 1])   # a vector has no transpose
def test_cudnn_layers_against_the_cpu_in_double(gpu, rng, name, layout):
    """Output and gradInput of cudnn's pooling, activations and softmax family as the CPU module computes them in
    double, computed by cuDNN (the emulation counts its calls) with nothing staged; in-place modules given a
    noncontiguous input run on our kernels instead, with the same result."""
    rt = gpu
    ctor, shape, kind = LAYERS[name]
    transposed = layout == "transposed"
    x = rng.standard_normal(shape)
    before = cudnn_calls(kind)
    out, _, _ = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), transposed, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        cpu, dev = rt.to_numpy(out[1][i]), rt.to_numpy(out[2][i])
        assert cpu.shape == dev.shape, (what, cpu.shape, dev.shape)
        np.testing.assert_allclose(dev, cpu, rtol=1e-12, atol=1e-12, err_msg="%s, %s: %s" % (name, layout, what))
    after = cudnn_calls(kind)
    if before is not None:
        ran = [a - b for a, b in zip(after, before)]
        assert ran == ([0, 0] if transposed and "in place" in name else [1, 1]), (name, layout, ran)
    assert fallbacks(rt) == {}


def test_cudnn_layers_in_float(gpu, rng):
    """CudaTensor (float32) pooling, ReLU and log-softmax against the CPU modules in double, within float's
    rounding."""
    rt = gpu
    x = rng.standard_normal((4, 3, 8, 8))
    run = rt.eval("""function(x)
       local r = {}
       for _, cpu in ipairs {cudnn.SpatialMaxPooling(3, 3, 2, 2, 1, 1), cudnn.SpatialAveragePooling(2, 2),
                             cudnn.ReLU(), cudnn.SpatialLogSoftMax()} do
          cpu:double()
          local m = cpu:clone():cuda()
          local y = cpu:forward(x)
          local g = torch.randn(y:size()):double()
          r[#r + 1] = {y, m:forward(x:cuda()):double(), cpu:backward(x, g), m:backward(x:cuda(), g:cuda()):double()}
       end
       return r
    end""")
    for case in run(rt.from_numpy(x)).values():
        ref, got, gref, ggot = (rt.to_numpy(case[i]) for i in (1, 2, 3, 4))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ggot, gref, rtol=1e-5, atol=1e-5)


def test_cudnn_layers_outside_cudnns_semantics_run_on_our_kernels(gpu, rng):
    """Ceil mode, sum pooling and a thresholded ReLU are not cuDNN's functions: our kernels (or nn's error) answer,
    as without cuDNN; NaNs pass through max pooling (as nn's CPU kernel lets them) and cudnn.ReLU (as cuDNN's
    NaN-propagating activation does)."""
    rt = gpu
    before = cudnn_calls("Pooling")
    x = rng.standard_normal((2, 3, 7, 7))
    run = rt.eval("""function(x)
       local cpu = cudnn.SpatialMaxPooling(2, 2, 2, 2):ceil():double()
       local m = cpu:clone():type('torch.CudaDoubleTensor')
       return {cpu:forward(x), m:forward(x:cudaDouble()):double()}
    end""")
    ref, got = (rt.to_numpy(t) for t in run(rt.from_numpy(x)).values())
    assert ref.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(got, ref)
    if before is not None:
        assert cudnn_calls("Pooling") == before
    with pytest.raises(LuaError, match="pad should be smaller than half of kernel size"):
        rt.execute("cudnn.SpatialMaxPooling(2, 2, 1, 1, 2, 2):cuda():forward(torch.CudaTensor(1, 1, 5, 5))")
    with pytest.raises(LuaError, match="sum pooling"):
        rt.execute("m = cudnn.SpatialAveragePooling(2, 2):cuda() m.divide = false "
                   "m:forward(torch.CudaTensor(1, 1, 4, 4))")
    nan = rt.eval("""function()
       local x = torch.randn(1, 1, 4, 4) x[1][1][2][3] = 0/0
       local pooled = cudnn.SpatialMaxPooling(2, 2):cuda():forward(x:cuda()):double()
       local relu = cudnn.ReLU():cuda():forward(x:cuda()):double()
       local cpu = cudnn.SpatialMaxPooling(2, 2):double():forward(x)
       return {pooled, cpu, relu}
    end""")()
    pooled, cpu, relu = (rt.to_numpy(t) for t in nan.values())
    np.testing.assert_array_equal(np.isnan(pooled), np.isnan(cpu))
    assert np.isnan(pooled[0, 0, 0, 1]) and np.isnan(relu[0, 0, 1, 2])


NN_THROUGH_CUDNN = {   # nn's classes that cunn hands to cuDNN where it is used: constructor, input shape, cuDNN's
    # kind (the emulation counts the pooling calls; the convolutions' are not counted)
    "nn.VolumetricConvolution(2, 3, 3, 2, 3, 1, 2, 1, 1, 0, 1)": ((2, 2, 5, 6, 5), None),
    "nn.TemporalConvolution(5, 4, 3, 2)": ((2, 9, 5), None),
    "nn.TemporalConvolution(3, 2, 2)": ((7, 3), None),
    "nn.VolumetricFullConvolution(2, 3, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 0, 0)": ((2, 2, 3, 4, 3), None),
    "nn.VolumetricMaxPooling(2, 3, 3, 1, 2, 2, 1, 1, 1)": ((2, 2, 5, 7, 6), "Pooling"),
    "nn.VolumetricAveragePooling(2, 2, 2, 1, 2, 2)": ((3, 4, 6, 6), "Pooling"),
    "nn.SpatialDepthWiseConvolution(3, 2, 3, 2, 2, 1, 1, 0)": ((2, 3, 7, 6), None),
    "nn.SpatialDepthWiseConvolution(4, 3, 2, 3, 1, 2, 0, 1)": ((4, 5, 8), None),
    "nn.SpatialDepthWiseConvolution(2, 1, 3, 3):noBias()": ((3, 2, 5, 5), None),
}


@pytest.mark.parametrize("ctor", sorted(NN_THROUGH_CUDNN))
def test_nns_volumetric_layers_run_on_cudnn_after_require_cunn_alone(rt, rng, ctor):
    """A program that requires cunn only: nn's volumetric convolution and poolings, its temporal and depthwise
    convolutions, in GPU memory load cudnn on first use and run on cuDNN (its calls counted in the emulation), output, gradInput and parameter gradients as the CPU
    module's in double (a 2-D gradOutput given transposed); nothing staged."""
    rt.execute("require 'cutorch'")
    if rt.eval("cutorch.backend") != "gpu":
        pytest.skip("cutorch's GPU backend is not on (the last test of this file runs these on the emulated driver)")
    rt.execute("require 'cunn' cutorch.setHostFallback('quiet')")
    assert not rt.eval("package.loaded.cudnn ~= nil")
    shape, kind = NN_THROUGH_CUDNN[ctor]
    x, seed = rng.standard_normal(shape), int(rng.integers(1, 1 << 30))
    before = cudnn_calls(kind) if kind else None
    r = rt.eval("""function(x, seed)
       torch.manualSeed(seed)
       local cpu = %s:double()
       local dev = cpu:clone():type('torch.CudaDoubleTensor')
       local out = {}
       for k, m in ipairs {cpu, dev} do
          local input = k == 1 and x or x:type('torch.CudaDoubleTensor')
          local y = m:forward(input)
          torch.manualSeed(seed + 1)
          local go
          if y:dim() == 2 then   -- (a transposed gradOutput: one sequence's came as a view it could not take)
             go = torch.DoubleTensor(y:size(2), y:size(1)):normal()
             if k == 2 then go = go:type('torch.CudaDoubleTensor') end
             go = go:t()
          else
             go = torch.DoubleTensor(y:size()):normal()
             if k == 2 then go = go:type('torch.CudaDoubleTensor') end
          end
          local gi = m:backward(input, go, 0.5)
          out[k] = {y:double():clone(), gi:double():clone(), m.gradWeight and m.gradWeight:double():clone() or false,
                    m.gradBias and m.gradBias:double():clone() or false}
       end
       return out
    end""" % ctor)(rt.from_numpy(x), seed)
    assert rt.eval("package.loaded.cudnn ~= nil")
    for i, what in ((1, "output"), (2, "gradInput"), (3, "gradWeight"), (4, "gradBias")):
        if r[1][i] is False:
            continue
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-11, atol=1e-12, err_msg=what)
    if before is not None:
        after = cudnn_calls(kind)
        assert [a - b for a, b in zip(after, before)] == [1, 1], (before, after)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor", ["cudnn.RNNReLU(3, 4, 2)", "cudnn.RNNTanh(3, 4, 1)", "cudnn.LSTM(3, 4, 2)",
                                  "cudnn.GRU(3, 5, 2)", "cudnn.BLSTM(3, 4, 1)", "cudnn.BGRU(4, 3, 2)"])
def test_recurrent_modules_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor):
    """cudnn's recurrent modules with their tensors in GPU memory (the matrix products on cuBLAS, each step's cell
    composed of device methods): output, final states, gradInput, the initial states' gradients and the weight
    gradient against the same module on the CPU in double, from given initial states; nothing staged. (Before,
    their host kernels read GPU memory: a crash.)"""
    rt = gpu
    rt.execute("require 'cudnn'")
    x = rng.standard_normal((5, 3, int(ctor.split("(")[1].split(",")[0])))
    r = rt.eval("""function(x, seed)
       torch.manualSeed(seed)
       local cpu = %s:double()
       local dev = cpu:clone():type('torch.CudaDoubleTensor')
       local out = {}
       for k, m in ipairs {cpu, dev} do
          local T = k == 1 and 'torch.DoubleTensor' or 'torch.CudaDoubleTensor'
          torch.manualSeed(seed + 1)
          local states = m.numLayers * (m.bidirectional == 'CUDNN_BIDIRECTIONAL' and 2 or 1)
          m.hiddenInput = torch.randn(states, x:size(2), m.hiddenSize):type(T)
          if m.mode == 'CUDNN_LSTM' then m.cellInput = torch.randn(states, x:size(2), m.hiddenSize):type(T) end
          local input = x:type(T)
          local y = m:forward(input)
          local gy = torch.randn(y:size()):type(T)
          m:zeroGradParameters()
          local gi = m:backward(input, gy)
          out[k] = {y:double(), m.hiddenOutput:double(), gi:double(), m.gradHiddenInput:double(),
                    m.gradWeight:double(), m.cellOutput and m.cellOutput:double() or false,
                    m.gradCellInput and m.gradCellInput:double() or false}
       end
       return out
    end""" % ctor)(rt.from_numpy(x), int(rng.integers(1, 1 << 30)))
    names = ["output", "hiddenOutput", "gradInput", "gradHiddenInput", "gradWeight", "cellOutput", "gradCellInput"]
    for i, what in enumerate(names, 1):
        if r[1][i] is False:
            continue
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-10, atol=1e-12, err_msg=what)
    assert fallbacks(rt) == {}


def test_cudnn_runs_on_the_current_stream(gpu, rng):
    """With stream 1 current, a cuDNN convolution and batch norm given an input a kernel on stream 1 has just changed
    compute on the changed input, forward and backward (their handle is bound to the current stream, and their
    workspace comes from that stream's blocks); against the CPU modules in double. On the emulated driver, a cuDNN
    call left on the legacy stream would run before stream 1's change (its queue runs only when waited for)."""
    rt = gpu
    x, go = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((2, 4, 6, 6))
    rt.execute("cutorch.reserveStreams(1)")
    try:
        r = rt.eval("""function(x, go)
           torch.manualSeed(3)
           local cpu = nn.Sequential():add(nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1))
                                      :add(nn.SpatialBatchNormalization(4)):double()
           local m = cudnn.convert(cpu:clone(), cudnn):type('torch.CudaDoubleTensor')
           local d, g = torch.CudaDoubleTensor(2, 3, 6, 6):copy(x), torch.CudaDoubleTensor(2, 4, 6, 6):copy(go)
           cutorch.synchronize()
           cutorch.setStream(1)
           d:mul(-1)
           g:mul(0.5)
           local y = m:forward(d):double()
           local gi = m:backward(d, g):double()
           local want = cpu:forward(-x):clone()
           local wantGi = cpu:backward(-x, go * 0.5)
           return {y, want, gi, wantGi, torch.type(m:get(1))}
        end""")(rt.from_numpy(x), rt.from_numpy(go))
    finally:
        rt.execute("cutorch.setStream(0)")
    assert r[5] == "cudnn.SpatialConvolution"
    np.testing.assert_allclose(rt.to_numpy(r[1]), rt.to_numpy(r[2]), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rt.to_numpy(r[3]), rt.to_numpy(r[4]), rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- on the emulated driver

@pytest.mark.slow
def test_cudnn_on_the_emulated_driver_with_guarded_memory(simt, tmp_path):
    """Every test of this file, in a process whose driver, cuBLAS and cuDNN are tests/cuda_host's emulations with
    two devices and guarded device memory; then without libcudnn: nn's volumetric convolution (cudnn loaded by its
    first GPU call) and cudnn.* convolutions run on our own versions, with one line on stderr saying why."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, guard=True)
    env["LUATORCH_CUTORCH"] = "gpu"
    env["LT_EMULATED_CUDA_DEVICES"] = "2"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", os.path.abspath(__file__),
                        "-k", "not emulated_driver"], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(HERE), timeout=1800)
    assert r.returncode == 0 and "skipped" not in r.stdout, r.stdout[-4000:] + r.stderr[-3000:]

    env["LUATORCH_CUDA_CUDNN"] = str(tmp_path / "no-such-libcudnn.so")
    probe = ("require 'cunn' torch.manualSeed(1) local v = nn.VolumetricConvolution(2, 3, 2, 2, 2):double() "
             "local vx = torch.randn(1, 2, 3, 4, 5) local vg = v:clone():type('torch.CudaDoubleTensor') "
             "local dv = (v:forward(vx) - vg:forward(vx:cudaDouble()):double()):abs():max() "
             "require 'cudnn' local m = cudnn.SpatialConvolution(2, 3, 3, 3):double() "
             "local x = torch.randn(2, 2, 5, 5) local g = m:clone():type('torch.CudaDoubleTensor') "
             "local d = (m:forward(x) - g:forward(x:cudaDouble()):double()):abs():max() "
             "g:forward(x:cudaDouble()) io.write('ok ', tostring(d < 1e-12 and dv < 1e-12), ' ', "
             "tostring(cudnn.isAvailable()), '\\n')")
    r = subprocess.run([sys.executable, "-m", "run.cli", "th", "-e", probe], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(HERE), timeout=300)
    assert r.returncode == 0 and "ok true false" in r.stdout, r.stdout + r.stderr
    assert r.stderr.count("cudnn: cuDNN cannot be used") == 1 and "no-such-libcudnn" in r.stderr, r.stderr
