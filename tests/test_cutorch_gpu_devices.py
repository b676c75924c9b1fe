"""Several GPUs on cutorch's GPU backend, as cutorch's and cunn's own tests ask for them: a generator per device,
math refused on another GPU's tensors (THC's rule), tensors without memory on device 0, and nn.GPU (a module on one
GPU, its input and output on others). Oracles: the same module on the CPU in double, numpy. The tests of two GPUs
skip on a machine with one; in CI test_cutorch_gpu.py's last test runs this file on the emulated driver with two."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import gpu, to_host  # noqa: F401  (the fixture)


def _lua(rt, src):
    return rt.eval("function(...) local ffi = require 'ffi' " + src + " end")


def test_each_device_has_its_generator(gpu):
    """manualSeedAll gives every device the same stream; manualSeed only the current one's; getRNGState and
    setRNGState save and restore the current device's stream (the draws and the seed)."""
    rt = gpu
    ndev = rt.eval("cutorch.getDeviceCount()")
    r = _lua(rt, """
        local ndev = ...
        local function draw() return torch.CudaTensor(6):uniform():float():totable() end
        cutorch.manualSeedAll(5)
        local first = {}
        for d = 1, ndev do cutorch.setDevice(d); first[d] = draw() end
        cutorch.setDevice(1)
        local state = cutorch.getRNGState()
        local a = draw()
        cutorch.manualSeed(99)
        cutorch.setRNGState(state)
        local b = draw()
        local seedBack = cutorch.initialSeed()
        local other
        if ndev > 1 then
           cutorch.manualSeedAll(5)
           cutorch.manualSeed(7)            -- device 1 only
           cutorch.setDevice(2)
           other = draw()
           cutorch.setDevice(1)
        end
        return first, a, b, seedBack, other""")(ndev)
    first, a, b, seed_back, other = r
    first = [list(first[d].values()) for d in range(1, ndev + 1)]
    assert all(f == first[0] for f in first)
    assert list(a.values()) == list(b.values()) and seed_back == 5
    if ndev > 1:
        assert list(other.values()) == first[0]
    with pytest.raises(LuaError, match="16 elements"):
        rt.execute("cutorch.setRNGState(torch.ByteTensor(3))")


def test_math_on_another_gpus_tensor_is_refused_as_cutorch_did(gpu):
    rt = gpu
    if rt.eval("cutorch.getDeviceCount()") < 2:
        pytest.skip("needs two GPUs")
    rt.execute("x = torch.CudaTensor(4):fill(2); cutorch.setDevice(2)")
    try:
        for call in ("x:add(1)", "x:sum()", "torch.CudaTensor(4):cmul(x)", "x:sort()", "torch.add(x, 1)", "x:fill(1)",
                     "x:zero()"):
            with pytest.raises(LuaError, match="arguments are located on different GPUs"):
                rt.execute(call)
        # copies, views and resizes take any device, as cutorch's
        y = rt.eval("torch.CudaTensor(4):copy(x:narrow(1, 1, 4))")
        assert rt.eval("function(y) return y:getDevice() end")(y) == 2
        np.testing.assert_array_equal(to_host(rt, y), np.full(4, 2, np.float32))
    finally:
        rt.execute("cutorch.setDevice(1)")
    assert rt.eval("x:sum()") == 8


def test_device_tensors_without_memory_report_device_0_and_stage_their_results(gpu):
    rt = gpu
    r = _lua(rt, """
        local t = torch.CudaTensor()
        local before = t:getDevice()
        local x = torch.CudaTensor()
        x:range(1, 7, 3)                      -- a CPU method resizing an empty device tensor: staged
        return before, t:resize(2):getDevice(), x:float():totable()""")()
    assert r[0] == 0 and r[1] == 1 and list(r[2].values()) == [1, 4, 7]


def test_nn_gpu_runs_its_module_on_one_gpu_and_hands_results_back_on_others(gpu, rng, tmp_path):
    """nn.GPU(Linear, 2, 1) on CudaDoubleTensor: parameters and the module's buffers on GPU 2, the output on GPU 1,
    the gradInput on the input's GPU, the caller's device unchanged; output and gradients equal the CPU module's in
    double; a file written and read back keeps the module on GPU 2 (Torch7's layout: {type, device}, then the
    fields)."""
    rt = gpu
    if rt.eval("cutorch.getDeviceCount()") < 2:
        pytest.skip("needs two GPUs")
    rt.execute("require 'cunn'")
    x = rt.from_numpy(rng.standard_normal((5, 3)))
    dy = rt.from_numpy(rng.standard_normal((5, 4)))
    r = _lua(rt, """
        local x, dy, path = ...
        torch.manualSeed(4)
        local cpu = nn.Linear(3, 4):double()
        local lin = cpu:clone()
        local g = nn.GPU(lin, 2, 1):type('torch.CudaDoubleTensor')
        local devices = {lin.weight:getDevice(), lin.bias:getDevice()}
        local y = g:forward(x:cudaDouble())
        g:zeroGradParameters()
        local dx = g:backward(x:cudaDouble(), dy:cudaDouble())
        devices[3], devices[4], devices[5] = lin.output:getDevice(), y:getDevice(), dx:getDevice()
        devices[6], devices[7] = g._input:getDevice(), cutorch.getDevice()
        local cy = cpu:forward(x)
        cpu:zeroGradParameters()
        local cdx = cpu:backward(x, dy)
        torch.save(path, g)
        local g2 = torch.load(path)
        local y2 = g2:forward(x:cudaDouble())
        devices[8], devices[9] = g2.modules[1].weight:getDevice(), y2:getDevice()
        return devices, y:double(), cy, dx:double(), cdx, lin.gradWeight:double(), cpu.gradWeight, y2:double(),
               tostring(g)""")(x, dy, str(tmp_path / "gpu.t7"))
    devices = list(r[0].values())
    assert devices == [2, 2, 2, 1, 1, 2, 1, 2, 1]
    for ours, oracle in ((r[1], r[2]), (r[3], r[4]), (r[5], r[6]), (r[7], r[2])):
        np.testing.assert_allclose(rt.to_numpy(ours), rt.to_numpy(oracle), rtol=1e-12, atol=1e-12)
    assert r[8].startswith("nn.GPU(2) @ nn.Linear(3 -> 4)")
