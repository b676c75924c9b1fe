"""nn.DataParallelTable (require 'cunn'): the Torch7 baseline (Basic and Threads impls) and the
optimized forwardBackward, checked against the same module run without DPT (the oracle)."""
import pytest

from pytorch_bridge import LuaError

# A model with every kind of layer the checks need: parameters, a ReLU, and a
# BatchNormalization (exact in evaluate mode, per-replica statistics in training).
HELPERS = r"""
require 'cunn'
H = {}
function H.model(ty, seed)
  torch.manualSeed(seed)
  local m = nn.Sequential():add(nn.Linear(5, 8)):add(nn.BatchNormalization(8)):add(nn.ReLU())
             :add(nn.Linear(8, 6)):add(nn.ReLU()):add(nn.Linear(6, 3))
  m:type(ty)
  -- non-trivial BN statistics so that evaluate mode is not an identity
  local bn = m.modules[2]
  bn.running_mean:uniform(-1, 1); bn.running_var:uniform(0.5, 2)
  return m
end
function H.gpus(D) local t = {} for i = 1, D do t[i] = i end return t end
function H.maxdiff(a, b) return (a:double() - b:double()):abs():max() end
function H.dpt(net, D, mode, impl)
  local dpt = nn.DataParallelTable(1, impl == 'optimized'):add(net, H.gpus(D))
  if mode == 'threads' then dpt:threads(function() end) end
  if impl then dpt:implementation(impl) end
  return dpt
end
"""


def run(rt, code):
    rt.execute(HELPERS)
    return rt.execute(code)


# Worker states take a while to start on a loaded 2-core box: the default set
# runs the threaded impl on fewer (D, B) pairs, the slow set on all of them.
FULL = ("{1, 2, 3}", "{1, 2, 5, 7}")
QUICK_THREADS = ("{2, 3}", "{2, 7}")
CASES = [("basic", FULL), ("threads", QUICK_THREADS),
         pytest.param("threads", FULL, marks=pytest.mark.slow, id="threads-full")]


@pytest.mark.parametrize("mode,sizes", CASES)
@pytest.mark.parametrize("ty,tol", [("torch.FloatTensor", 2e-5), ("torch.DoubleTensor", 1e-12)])
def test_baseline_matches_single_device(rt, mode, sizes, ty, tol):
    err = run(rt, r"""
    local mode, ty = ...
    local worst = 0
    for _, D in ipairs(DS) do
      for _, B in ipairs(BS) do
        local ref = H.model(ty, D * 10 + B)
        ref:evaluate()
        local dpt = H.dpt(ref:clone(), D, mode)
        dpt:evaluate()
        for it = 1, 2 do
          local x = torch.randn(B, 5):type(ty)
          local go = torch.randn(B, 3):type(ty)
          ref:zeroGradParameters(); dpt:zeroGradParameters()
          local ro = ref:forward(x):clone()
          local rgi = ref:backward(x, go):clone()
          local o = dpt:forward(x)
          local gi = dpt:backward(x, go)
          local _, rg = ref:parameters()
          local _, g = dpt:parameters()
          worst = math.max(worst, H.maxdiff(o, ro), H.maxdiff(gi, rgi))
          for j = 1, #rg do worst = math.max(worst, H.maxdiff(g[j], rg[j])) end
          -- an update on replica 1 reaches the others at the next forward (needsSync)
          assert(dpt.needsSync or D == 1 or B == 1)
          dpt:updateParameters(0.05); ref:updateParameters(0.05)
        end
        dpt.impl:close()
      end
    end
    return worst
    """.replace("local mode, ty = ...", "local mode, ty = '%s', '%s'" % (mode, ty))
       .replace("ipairs(DS)", "ipairs" + sizes[0]).replace("ipairs(BS)", "ipairs" + sizes[1]))
    assert err < tol


def test_slice_range_gives_extras_to_first_replicas(rt):
    out = run(rt, r"""
    local dpt = nn.DataParallelTable(1)
    local s = {}
    for i = 1, 4 do local a, n = dpt:_sliceRange(10, i, 4); s[#s + 1] = a .. ':' .. n end
    return table.concat(s, ' ')""")
    assert out == "1:3 4:3 7:2 9:2"


def test_constructor_and_add_forms(rt):
    out = run(rt, r"""
    assert(not pcall(nn.DataParallelTable))          -- must specify a dimension!
    local d = nn.DataParallelTable(1)
    local a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    d:add(a, 1); d:add(b, 2)                          -- legacy form: only the first module is kept
    assert(d:get(1) == a and d:get(2) == nil and #d.gpuAssignments == 2)
    local e = nn.DataParallelTable(1):add(a, {1, 2, 3})
    assert(not pcall(e.add, e, b, {1}))               -- the table form only once
    return tostring(e):match('^DataParallelTable: 3 x') ~= nil""")
    assert out is True


@pytest.mark.parametrize("mode", ["basic", "threads"])
def test_batchnorm_training_statistics_are_per_replica(rt, mode):
    err = run(rt, r"""
    local ref = H.model('torch.DoubleTensor', 3)
    local dpt = H.dpt(ref:clone(), 2, '%s')
    dpt:training()
    local x = torch.randn(7, 5)
    local out = dpt:forward(x)
    -- replica 1 saw samples 1..4, replica 2 samples 5..7, each normalized by its own batch
    local r1, r2 = ref:clone(), ref:clone()
    r1:training(); r2:training()
    local o1 = r1:forward(x:narrow(1, 1, 4))
    local o2 = r2:forward(x:narrow(1, 5, 3))
    local bn = dpt:get(1).modules[2]
    local e = math.max(H.maxdiff(out:narrow(1, 1, 4), o1), H.maxdiff(out:narrow(1, 5, 3), o2),
                       H.maxdiff(bn.running_mean, r1.modules[2].running_mean),
                       H.maxdiff(bn.running_var, r1.modules[2].running_var))
    dpt.impl:close()
    return e""" % mode)
    assert err < 1e-12


@pytest.mark.parametrize("mode", ["basic", "threads"])
def test_gradinput_nil_is_honoured(rt, mode):
    out = run(rt, r"""
    local dpt = H.dpt(H.model('torch.FloatTensor', 1), 2, '%s')
    dpt.gradInput = nil
    local x = torch.randn(4, 5):float()
    dpt:forward(x)
    local gi = dpt:backward(x, torch.randn(4, 3):float())
    dpt.impl:close()
    return gi == nil and dpt.gradInput == nil""" % mode)
    assert out is True


@pytest.mark.parametrize("mode,sizes", CASES)
@pytest.mark.parametrize("ty,tol", [("torch.FloatTensor", 2e-5), ("torch.DoubleTensor", 1e-12)])
def test_optimized_matches_single_device_and_baseline(rt, mode, sizes, ty, tol):
    err = run(rt, r"""
    local mode, ty = '%s', '%s'
    local worst = 0
    for _, D in ipairs(DS) do
      for _, B in ipairs(BS) do
        local ref = H.model(ty, D + B)
        ref:evaluate()
        local opt = H.dpt(ref:clone(), D, mode, 'optimized')
        local base = H.dpt(ref:clone(), D, mode, 'baseline')
        opt:evaluate(); base:evaluate()
        local rp, rg = ref:getParameters()
        local op, og = opt:getParameters()
        local bp, bg = base:getParameters()
        local crit = nn.CrossEntropyCriterion():type(ty)
        for it = 1, 3 do
          local x = torch.randn(B, 5):type(ty)
          local y = torch.LongTensor(B):random(1, 3)
          rg:zero(); opt:zeroGradParameters(); base:zeroGradParameters()
          local ro = ref:forward(x)
          local rl = crit:forward(ro, y)
          ref:backward(x, crit:backward(ro, y))
          local ol, oo = opt:forwardBackward(x, y, crit)
          local bl, bo = base:forwardBackward(x, y, crit)
          worst = math.max(worst, math.abs(ol - rl), math.abs(bl - rl), H.maxdiff(oo, ro), H.maxdiff(bo, ro),
                           H.maxdiff(og, rg), H.maxdiff(bg, rg), H.maxdiff(opt.gradInput, ref.gradInput))
          -- the optimizer step on replica 1's flat parameters
          rp:add(-0.1, rg); op:add(-0.1, og); bp:add(-0.1, bg)
        end
        opt.impl:close(); base.impl:close()
      end
    end
    return worst""".replace("ipairs(DS)", "ipairs" + sizes[0]).replace("ipairs(BS)", "ipairs" + sizes[1])
              % (mode, ty))
    assert err < tol


@pytest.mark.parametrize("mode,D", [("basic", 1), ("basic", 2), ("basic", 3), ("threads", 2),
                                    pytest.param("threads", 1, marks=pytest.mark.slow),
                                    pytest.param("threads", 3, marks=pytest.mark.slow)])
def test_bucket_hook_sees_each_element_once_when_final(rt, mode, D):
    out = run(rt, r"""
    local mode, D = '%s', %d
    local ref = H.model('torch.DoubleTensor', 5)
    ref:evaluate()
    local dpt = H.dpt(ref:clone(), D, mode, 'optimized')
    dpt:evaluate()
    local seen
    dpt:onGradientBucket(function(offset, count, view)
      seen[#seen + 1] = {offset, count, view:clone()}
      return #seen
    end, {size = 20, wait = function(h) end})
    local crit = nn.CrossEntropyCriterion():double()
    local rp, rg = ref:getParameters()
    local p, g = dpt:getParameters()
    local worst, nb = 0, 0
    for it = 1, 2 do
      seen = {}
      local x, y = torch.randn(7, 5), torch.LongTensor(7):random(1, 3)
      g:zero(); rg:zero()
      dpt:forwardBackward(x, y, crit)
      dpt:waitGradients()
      local o = ref:forward(x); crit:forward(o, y); ref:backward(x, crit:backward(o, y))
      local cover = torch.zeros(g:nElement())
      for _, s in ipairs(seen) do
        cover:narrow(1, s[1], s[2]):add(1)
        -- the value the hook saw is the final, summed gradient
        worst = math.max(worst, H.maxdiff(s[3], g:narrow(1, s[1], s[2])))
      end
      assert(cover:min() == 1 and cover:max() == 1, 'every element exactly once')
      worst = math.max(worst, H.maxdiff(g, rg))
      nb = #seen
    end
    dpt.impl:close()
    return worst, nb""" % (mode, D))
    worst, nb = out
    assert worst < 1e-12
    assert nb > 1   # the model is cut into several buckets


def test_optimized_error_in_a_device_propagates_without_hang(rt):
    out = run(rt, r"""
    local net = nn.Sequential():add(nn.Linear(5, 3))
    net:double()
    local dpt = nn.DataParallelTable(1, true):add(net, {1, 2}):threads():implementation('optimized')
    local crit = nn.MSECriterion():double()
    -- wrong input width: both devices fail in forward
    local ok, err = pcall(dpt.forwardBackward, dpt, torch.randn(4, 6), torch.randn(4, 3), crit)
    assert(not ok and tostring(err):find('thread'), tostring(err))
    -- and the next call works
    local l = dpt:forwardBackward(torch.randn(4, 5), torch.randn(4, 3), crit)
    dpt.impl:close()
    return type(l)""")
    assert out == "number"


def test_baseline_error_in_worker_names_the_thread(rt):
    with pytest.raises(LuaError, match=r"\[thread \d callback\]"):
        run(rt, r"""
        local dpt = nn.DataParallelTable(1):add(nn.Linear(5, 3), {1, 2}):threads()
        local ok, err = pcall(dpt.forward, dpt, torch.randn(4, 7))
        dpt.impl:close()
        error(err, 0)""")


def test_save_load_round_trip(rt, tmp_path):
    err = run(rt, r"""
    local path = '%s'
    local ref = H.model('torch.FloatTensor', 9)
    ref:evaluate()
    local dpt = H.dpt(ref:clone(), 2, 'threads')
    dpt:evaluate()
    local x = torch.randn(5, 5):float()
    local o = dpt:forward(x):clone()
    torch.save(path, dpt)
    dpt.impl:close()
    local f = torch.DiskFile(path, 'r'):binary()
    f:readInt(); f:readInt()
    local version = f:readString('*l')
    local back = torch.load(path)
    assert(torch.type(back) == 'nn.DataParallelTable' and torch.type(back.impl) == 'nn.DataParallelTable.Threads')
    assert(#back.gpuAssignments == 2 and back.impl.__threads == nil)
    local e = H.maxdiff(back:forward(x), o)
    back.impl:close()
    -- DataParallelTable.deserializeNGPUs overrides the saved device list
    nn.DataParallelTable.deserializeNGPUs = 3
    local three = torch.load(path)
    nn.DataParallelTable.deserializeNGPUs = nil
    assert(#three.gpuAssignments == 3)
    e = math.max(e, H.maxdiff(three:forward(x), o))
    three.impl:close()
    return e""" % (tmp_path / "dpt.t7"))
    assert err < 1e-6


def test_file_is_written_as_version_3(rt, tmp_path):
    path = tmp_path / "d.t7"
    run(rt, "torch.save('%s', nn.DataParallelTable(1):add(nn.Linear(2, 2), {1, 2}))" % path)
    data = path.read_bytes()
    # tag 4 (torch object), index 1, "V 3", class name, then gpuAssignments (a table: tag 3)
    assert data[:8] == bytes([4, 0, 0, 0, 1, 0, 0, 0])
    assert data[8:15] == b"\x03\x00\x00\x00V 3"
    name = b"nn.DataParallelTable"
    assert data[15:19 + len(name)] == len(name).to_bytes(4, "little") + name
    assert data[19 + len(name):23 + len(name)] == bytes([3, 0, 0, 0])


def test_legacy_v3_stream_loads_and_get1_works(rt):
    # Written by hand in the layout Torch7's DataParallelTable:__write produced
    # (gpuAssignments, then the field table with a Cuda typeStr and a Basic impl).
    err = run(rt, r"""
    local net = H.model('torch.FloatTensor', 4)
    net:evaluate()
    local legacy = setmetatable({}, torch.getmetatable('nn.DataParallelTable'))
    local impl = setmetatable({}, torch.getmetatable('nn.DataParallelTable.Basic'))
    impl.dpt = legacy
    legacy.__write = function(self, file)
      file:writeObject({1, 2})
      file:writeObject({typeStr = 'torch.CudaTensor', dimension = 1, modules = {net}, gpuAssignments = {1, 2},
                        inputGpu = {}, gradOutputGpu = {}, outputGpu = {}, gradInputGpu = {},
                        flattenParams = false, usenccl = false, needsSync = false, impl = impl,
                        output = torch.FloatTensor(), gradInput = torch.FloatTensor(), train = false})
    end
    local f = torch.MemoryFile():binary()
    f:writeObject(legacy)
    local s = f:storage():string()
    f:close()
    local back = torch.deserialize(s:sub(1, #s - 1))
    assert(torch.type(back) == 'nn.DataParallelTable')
    -- fb.resnet.torch unwraps a saved DPT with model:get(1)
    local inner = back:get(1)
    assert(torch.type(inner) == 'nn.Sequential')
    local x = torch.randn(3, 5):float()
    local want = net:forward(x):clone()
    local e = math.max(H.maxdiff(inner:forward(x), want), H.maxdiff(back:forward(x), want))
    -- cunn loads cutorch, whose types are real (host memory here): a Cuda type is kept
    back:type('torch.CudaDoubleTensor')
    assert(back:get(1).modules[1].weight:type() == 'torch.CudaDoubleTensor')
    return e""")
    assert err < 1e-6


def test_type_and_zero_grad_and_clear_state(rt):
    out = run(rt, r"""
    local dpt = H.dpt(H.model('torch.DoubleTensor', 2), 2, 'threads')
    dpt:float()
    local x = torch.randn(4, 5):float()
    local o = dpt:forward(x)
    dpt:backward(x, torch.randn(4, 3):float())
    dpt:zeroGradParameters()
    local _, g = dpt:parameters()
    local s = 0
    for i = 1, #g do s = s + g[i]:abs():sum() end
    dpt:clearState()
    assert(not pcall(dpt.type, dpt, 'torch.IntTensor'))
    assert(not pcall(dpt.accUpdateGradParameters, dpt))
    local t = torch.type(o)
    dpt.impl:close()
    return t, s""")
    assert out == ("torch.FloatTensor", 0)


def test_allreduce_gradients_wires_iallreduce_and_wait(rt):
    # a stand-in for lua/mpi (one rank): iallreduce gets each bucket's view, wait each handle
    out = run(rt, r"""
    local ref = H.model('torch.DoubleTensor', 6)
    local dpt = H.dpt(ref:clone(), 2, 'basic', 'optimized')
    local started, waited, total = 0, 0, 0
    local fakempi = {
      iallreduce = function(view) started = started + 1; total = total + view:nElement(); return view end,
      wait = function(h) waited = waited + 1 end,
    }
    dpt:allreduceGradients(fakempi, {size = 16})
    local p, g = dpt:getParameters()
    dpt:forwardBackward(torch.randn(5, 5), torch.LongTensor(5):random(1, 3), nn.CrossEntropyCriterion():double())
    dpt:waitGradients()
    return started, waited, total == g:nElement()""")
    started, waited, complete = out
    assert started > 1 and waited == started and complete is True


def test_optimized_with_hook_recovers_after_a_device_error(rt):
    out = run(rt, r"""
    local dpt = H.dpt(H.model('torch.DoubleTensor', 7), 2, 'basic', 'optimized')
    dpt:onGradientBucket(function() end, {size = 8})
    local crit = nn.CrossEntropyCriterion():double()
    assert(not pcall(dpt.forwardBackward, dpt, torch.randn(4, 9), torch.LongTensor(4):fill(1), crit))
    local n = 0
    dpt:onGradientBucket(function() n = n + 1 end, {size = 8})
    dpt:forwardBackward(torch.randn(4, 5), torch.LongTensor(4):fill(1), crit)
    return n""")
    assert out > 1


def test_threaded_workers_load_cudnn_and_the_default_tensor_type(rt):
    # fb.resnet.torch models are cudnn.* modules; the workers must know those classes
    err = run(rt, r"""
    require 'cudnn'
    local old = torch.getdefaulttensortype()
    torch.setdefaulttensortype('torch.FloatTensor')
    local net = nn.Sequential():add(cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(cudnn.ReLU())
                  :add(nn.View(-1):setNumInputDims(3)):add(nn.Linear(4 * 5 * 5, 2))
    net:float()
    local dpt = nn.DataParallelTable(1):add(net:clone(), {1, 2}):threads()
    local x = torch.randn(3, 3, 5, 5):float()
    local e = H.maxdiff(dpt:forward(x), net:forward(x))
    local types = dpt.impl:exec(function() return torch.getdefaulttensortype() end)
    dpt.impl:close()
    torch.setdefaulttensortype(old)
    assert(types[1] == 'torch.FloatTensor' and types[2] == 'torch.FloatTensor')
    return e""")
    assert err < 1e-6


def test_switching_to_threads_after_basic_steps(rt):
    err = run(rt, r"""
    local ref = H.model('torch.DoubleTensor', 8)
    ref:evaluate()
    local dpt = H.dpt(ref:clone(), 2, 'basic')
    dpt:evaluate()
    local x, go = torch.randn(5, 5), torch.randn(5, 3)
    dpt:forward(x); dpt:backward(x, go)
    dpt:threads()
    dpt:evaluate()
    dpt:zeroGradParameters(); ref:zeroGradParameters()
    local e = H.maxdiff(dpt:forward(x), ref:forward(x))
    dpt:backward(x, go); ref:backward(x, go)
    local _, g = dpt:parameters(); local _, rg = ref:parameters()
    for j = 1, #g do e = math.max(e, H.maxdiff(g[j], rg[j])) end
    dpt.impl:close()
    return e""")
    assert err < 1e-12
