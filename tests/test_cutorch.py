"""cutorch on a machine without a GPU: torch.CudaTensor and the other Cuda types are real types of
their own over host memory. Checked against numpy on random inputs (contiguous and not), and for
what a cutorch program meets: the types appear only after `require 'cutorch'`, do not mix with CPU
tensors in math, give Cuda index and mask results, save and load under cutorch's class names (and
as CPU types when cutorch is not loaded), and carry nn modules, criterions and DataParallelTable."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pytorch_bridge import LuaError, t7

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_TYPES = {"CudaByte": np.uint8, "CudaChar": np.int8, "CudaShort": np.int16, "CudaInt": np.int32,
              "CudaLong": np.int64, "Cuda": np.float32, "CudaDouble": np.float64}


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    """These are the CPU backend's tests, on a GPU machine too (test_cutorch_gpu.py has the GPU's)."""
    monkeypatch.setenv("LUATORCH_CUTORCH", "cpu")


@pytest.fixture
def cu(rt):
    rt.execute("require 'cutorch'")
    assert rt.eval("cutorch.backend") == "cpu"
    return rt


def lua_tensor(rt, array, tname):
    """A torch.<tname>Tensor holding `array` (made through a DoubleTensor, as a program would)."""
    t = rt.from_numpy(np.ascontiguousarray(array, dtype=np.float64))
    return rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(t, tname)


def test_types_appear_with_cutorch_only(rt):
    assert rt.eval("torch.CudaTensor == nil and torch.CudaLongTensor == nil and cutorch == nil")
    with pytest.raises(LuaError, match="require 'cutorch'"):
        rt.execute("torch.FloatTensor(2):cuda()")
    rt.execute("require 'cutorch'")
    names = rt.eval("""(function()
       local out = {}
       for _, n in ipairs {'CudaByte', 'CudaChar', 'CudaShort', 'CudaInt', 'CudaLong', 'Cuda', 'CudaDouble'} do
          out[#out + 1] = torch.typename(torch[n .. 'Tensor'](2)) .. ' ' .. torch.typename(torch[n .. 'Storage'](2))
       end
       return table.concat(out, ',') end)()""")
    assert names.split(",") == ["torch.%sTensor torch.%sStorage" % (n, n) for n in CUDA_TYPES]


@pytest.mark.parametrize("tname", sorted(CUDA_TYPES))
def test_elements_are_the_host_types(cu, rng, tname):
    dtype = CUDA_TYPES[tname]
    a = rng.integers(0, 100, (5, 7)).astype(dtype)
    t = lua_tensor(cu, a, tname)
    assert cu.eval("function(t) return torch.typename(t) end")(t) == "torch.%sTensor" % tname
    np.testing.assert_array_equal(cu.to_numpy(t), a)
    assert cu.to_numpy(t).dtype == dtype
    # a non-contiguous view and a clone keep the type
    v = cu.eval("function(t) return t:t():clone() end")(t)
    assert cu.eval("function(t) return torch.typename(t) end")(v) == "torch.%sTensor" % tname
    np.testing.assert_array_equal(cu.to_numpy(v), a.T)


def test_float_math_matches_numpy(cu, rng):
    a, b = rng.standard_normal((6, 9)), rng.standard_normal((9, 4))
    f = cu.eval("""function(a, b)
       local A, B = a:cuda(), b:cuda()
       local At = A:t():contiguous():t()          -- non-contiguous, same values
       return torch.mm(At, B), torch.cmul(A, A):add(2, A), A:sum(2), torch.exp(A:narrow(2, 2, 5)),
              torch.type(torch.mm(At, B))
    end""")
    mm, poly, rowsum, ex, ty = f(cu.from_numpy(a), cu.from_numpy(b))
    assert ty == "torch.CudaTensor"
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(cu.to_numpy(mm), a32 @ b32, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cu.to_numpy(poly), a32 * a32 + 2 * a32, rtol=1e-6)
    # a row's sum may cancel to near 0: its float rounding is bounded by n eps times the sum of |terms|
    bound = a32.shape[1] * np.finfo(np.float32).eps * np.abs(a32).sum(1)
    assert np.all(np.abs(cu.to_numpy(rowsum)[:, 0] - a32.sum(1)) <= bound)
    np.testing.assert_allclose(cu.to_numpy(ex), np.exp(a32[:, 1:6]), rtol=1e-6)


def test_index_and_mask_results_are_cuda_types(cu, rng):
    a = rng.standard_normal((5, 8))
    f = cu.eval("""function(a)
       local A = a:cuda()
       local vals, idx = A:max(2)
       local svals, sidx = A:sort(2)
       local mask = A:gt(0)
       return torch.type(idx), torch.type(sidx), torch.type(mask), idx:double(), sidx:double(), mask:double(),
              torch.type(A:nonzero())
    end""")
    ti, tsi, tm, idx, sidx, mask, tnz = f(cu.from_numpy(a))
    assert (ti, tsi, tm, tnz) == ("torch.CudaLongTensor", "torch.CudaLongTensor", "torch.CudaByteTensor",
                                  "torch.CudaLongTensor")
    a32 = a.astype(np.float32)
    np.testing.assert_array_equal(cu.to_numpy(idx)[:, 0], a32.argmax(1) + 1)
    np.testing.assert_array_equal(cu.to_numpy(sidx), np.argsort(a32, 1, kind="stable") + 1)
    np.testing.assert_array_equal(cu.to_numpy(mask), (a32 > 0).astype(np.float64))


def test_indices_of_cuda_types_and_long(cu, rng):
    src = rng.standard_normal((6, 4))
    pick = rng.integers(1, 7, 5)
    f = cu.eval("""function(src, pick)
       local S = src:cuda()
       local byLong = S:index(1, pick:long())
       local byCudaLong = S:index(1, pick:cudaLong())
       -- cutorch took a CudaTensor of indices too (nn's OneHot scatters with one)
       local oh = torch.CudaTensor(pick:size(1), 7):zero():scatter(2, pick:cuda():view(-1, 1), 1)
       return byLong, byCudaLong, oh, torch.type(byLong)
    end""")
    by_long, by_cuda_long, onehot, ty = f(cu.from_numpy(src), cu.from_numpy(pick.astype(np.float64)))
    assert ty == "torch.CudaTensor"
    want = src.astype(np.float32)[pick - 1]
    np.testing.assert_array_equal(cu.to_numpy(by_long), want)
    np.testing.assert_array_equal(cu.to_numpy(by_cuda_long), want)
    np.testing.assert_array_equal(cu.to_numpy(onehot), np.eye(7, dtype=np.float32)[pick - 1])


def test_cuda_and_cpu_tensors_do_not_mix_in_math(cu):
    with pytest.raises(LuaError, match="CudaTensor, got FloatTensor"):
        cu.execute("torch.CudaTensor(3):fill(1):add(torch.FloatTensor(3):fill(1))")
    with pytest.raises(LuaError, match="CudaTensor"):
        cu.execute("torch.mm(torch.CudaTensor(2, 2), torch.FloatTensor(2, 2))")
    # copies between the two are how data moves, as in cutorch
    assert cu.eval("torch.CudaTensor(3):copy(torch.FloatTensor(3):fill(2)):sum()") == 6


def test_save_load_keeps_cutorch_class_names(cu, rng, tmp_path):
    a = rng.standard_normal((3, 5))
    path = str(tmp_path / "cuda.t7")
    cu.eval("function(a, p) torch.save(p, {w = a:cuda(), i = a:cudaLong(), d = a:cudaDouble()}) end")(
        cu.from_numpy(a), path)
    raw = open(path, "rb").read()
    for name in (b"torch.CudaTensor", b"torch.CudaStorage", b"torch.CudaLongTensor", b"torch.CudaDoubleStorage"):
        assert name in raw
    assert b"torch.FloatTensor" not in raw
    back = cu.eval("function(p) local o = torch.load(p); return torch.type(o.w), torch.type(o.i), o.w end")(path)
    assert back[:2] == ("torch.CudaTensor", "torch.CudaLongTensor")
    np.testing.assert_array_equal(cu.to_numpy(back[2]), a.astype(np.float32))
    # the pure-Python reader reads them as the host element types
    obj = t7.load(path)
    got = {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}
    assert got["w"].dtype == np.float32 and got["i"].dtype == np.int64 and got["d"].dtype == np.float64
    np.testing.assert_array_equal(got["w"], a.astype(np.float32))


def test_without_cutorch_cuda_files_load_as_cpu_types(cu, tmp_path):
    from pytorch_bridge import Runtime
    path = str(tmp_path / "m.t7")
    cu.eval("function(p) torch.save(p, torch.CudaTensor(2, 3):fill(1.5)) end")(path)
    fresh = Runtime()
    ty, s = fresh.eval("function(p) local t = torch.load(p); return torch.type(t), t:sum() end")(path)
    assert (ty, s) == ("torch.FloatTensor", 9.0)


def test_devices(tmp_path):
    script = tmp_path / "dev.lua"
    script.write_text("""
require 'cutorch'
print(cutorch.getDeviceCount(), cutorch.getDevice())
cutorch.setDevice(3)
local inner = cutorch.withDevice(2, function() return cutorch.getDevice() end)
print(inner, cutorch.getDevice())
local ok = pcall(cutorch.withDevice, 1, function() error('boom') end)
print(ok, cutorch.getDevice())
local free, total = cutorch.getMemoryUsage(1)
print(free > 0 and total >= free, cutorch.getDeviceProperties(2).name)
cutorch.reserveStreams(2); cutorch.setStream(2); cutorch.synchronize()
print(cutorch.getStream(), cutorch.getNumStreams())
print(pcall(cutorch.setDevice, 5))
""")
    env = dict(os.environ, LUATORCH_CUDA_DEVICES="4")
    r = subprocess.run([sys.executable, "-m", "run.cli", "th", str(script)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == ["4", "1"]
    assert lines[1].split("\t") == ["2", "3"]
    assert lines[2].split("\t") == ["false", "3"]
    assert lines[3].split("\t") == ["true", "luatorch CPU device 2"]
    assert lines[4].split("\t") == ["2", "2"]
    assert lines[5].startswith("false") and "device 5 is out of range" in lines[5] and "LUATORCH_CUDA_DEVICES" in lines[5]


def test_nn_on_cuda_types_matches_float(cu, rng):
    """A conv net and its criterion converted with :cuda() compute what the FloatTensor one does."""
    x = rng.standard_normal((3, 2, 7, 7))
    f = cu.eval("""function(x)
       require 'cunn'
       torch.manualSeed(5)
       local net = nn.Sequential():add(nn.SpatialConvolution(2, 4, 3, 3, 1, 1, 1, 1))
          :add(nn.SpatialBatchNormalization(4)):add(nn.ReLU(true)):add(nn.SpatialMaxPooling(2, 2, 2, 2))
          :add(nn.View(4 * 3 * 3)):add(nn.Linear(36, 5)):add(nn.LogSoftMax())
       local crit = nn.ClassNLLCriterion()
       local y = torch.LongTensor{1, 4, 5}
       local function run(n, c, input, target)
          local out = n:forward(input)
          local loss = c:forward(out, target)
          n:zeroGradParameters()
          n:backward(input, c:backward(out, target))
          local _, g = n:getParameters()
          return out:double(), loss, g:double(), torch.type(out), torch.type(g)
       end
       local fo, fl, fg = run(net:clone():float(), crit:clone():float(), x:float(), y)
       -- targets as cunn programs give them: a CudaTensor of class numbers
       local co, cl, cg, tout, tg = run(net:clone():cuda(), crit:clone():cuda(), x:cuda(), y:cuda())
       return (fo - co):abs():max(), math.abs(fl - cl), (fg - cg):abs():max(), tout, tg
    end""")
    dout, dloss, dgrad, tout, tg = f(cu.from_numpy(x))
    assert (tout, tg) == ("torch.CudaTensor", "torch.CudaTensor")
    # the same kernels; where a pass's algorithm is picked by timing on first use (oneDNN or im2col), the
    # first call and the later ones can differ in the last float32 bit
    assert dout <= 1e-5 and dloss <= 1e-5 and dgrad <= 1e-5


def test_data_parallel_table_over_cuda_types(cu, rng):
    x = rng.standard_normal((4, 5))
    f = cu.eval("""function(x)
       require 'cunn'
       torch.manualSeed(1)
       local net = nn.Sequential():add(nn.Linear(5, 3)):add(nn.Tanh()):cuda()
       local ref = net:forward(x:cuda()):clone()
       local dpt = nn.DataParallelTable(1, true, true):add(net:clone(), {1, 2})
          :threads(function() require 'cunn' end):cuda()
       local out = dpt:forward(x:cuda())
       dpt:backward(x:cuda(), out:clone():fill(1))
       local _, g = dpt:getParameters()
       return torch.type(out), (out - ref):abs():max(), torch.type(g), g:norm()
    end""")
    tout, diff, tg, gnorm = f(cu.from_numpy(x))
    assert (tout, tg) == ("torch.CudaTensor", "torch.CudaTensor")
    # a 2-row slice and the 4-row batch may take different sgemm kernels (oneDNN picks by shape): last bits
    assert diff <= 1e-6 and gnorm > 0


def test_the_cpu_backend_counts_no_device_calls(rt):
    """cutorch.deviceCallCounts (what the GPU backend asked of its GPUs: tests/test_cutorch_gpu_step_counts.py) is
    all zeros on the CPU backend, whatever its Cuda tensors do."""
    rt.execute("require 'cutorch'")
    if rt.eval("cutorch.backend") == "gpu":
        pytest.skip("the GPU backend is on")
    rt.execute("x = torch.CudaTensor(4):fill(1); y = x:sum(); z = torch.mm(x:view(2, 2), x:view(2, 2))")
    counts = rt.eval("cutorch.deviceCallCounts()")
    assert {k: counts[k] for k in ("launches", "libraryOps", "hostWaits", "hostCopies", "deviceAllocs")} == \
        dict.fromkeys(("launches", "libraryOps", "hostWaits", "hostCopies", "deviceAllocs"), 0)


def test_cunn_gives_modules_cuda_double_and_half_converters(cu, rng):
    """require 'cunn' adds module:cudaDouble() and module:cudaHalf() (cunn's THCUNN.lua did); their outputs are the
    double module's, exactly in CudaDouble and to half's rounding in CudaHalf."""
    rt = cu
    x = rng.standard_normal((4, 3))
    r = rt.eval("""function(x)
        require 'cunn'
        torch.manualSeed(2)
        local m = nn.Sequential():add(nn.Linear(3, 5)):add(nn.Tanh()):double()
        local want = m:forward(x):clone()
        local d = m:clone():cudaDouble()
        local h = m:clone():cudaHalf()
        return d:type(), h:type(), d.modules[1].weight:type(), want, d:forward(x:cudaDouble()):double(),
               h:forward(x:cudaHalf()):double()
    end""")(rt.from_numpy(x))
    assert tuple(r[:3]) == ("torch.CudaDoubleTensor", "torch.CudaHalfTensor", "torch.CudaDoubleTensor")
    want = rt.to_numpy(r[3])
    np.testing.assert_array_equal(rt.to_numpy(r[4]), want)
    np.testing.assert_allclose(rt.to_numpy(r[5]), want, atol=3e-3)


def test_a_tensor_without_memory_is_on_device_0(cu):
    """cutorch's getDevice: 0 for a tensor that holds no memory yet, the current device once it does (on the CPU
    backend every device shares host memory)."""
    rt = cu
    assert tuple(rt.eval("""function()
        local t = torch.CudaTensor()
        local before = t:getDevice()
        return before, t:resize(3):getDevice()
    end""")()) == (0, 1)
