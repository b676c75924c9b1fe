"""The optnet package (lua/optnet): memory sharing for nn networks.

Oracles: a clone of each network taken before optimizeMemory and never optimized (its
forward/backward results, compared bit for bit on fresh random inputs), storage counts
and byte counts worked out by hand for a plain Sequential, and the user's input
tensor compared with a numpy copy of it."""
import numpy as np
import pytest

PRELUDE = r"""
require 'nn'
require 'nngraph'
optnet = require 'optnet'

models = {}

function models.sequential()
   local net = nn.Sequential()
   net:add(nn.Linear(10, 30)):add(nn.ReLU()):add(nn.Linear(30, 20)):add(nn.Tanh()):add(nn.Linear(20, 5))
   return net, {10}
end

-- two residual blocks: ConcatTable{conv branch, Identity} -> CAddTable -> ReLU
function models.resnet()
   local function block(n)
      local branch = nn.Sequential()
      branch:add(nn.SpatialConvolution(n, n, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(n))
      branch:add(nn.ReLU(true)):add(nn.SpatialConvolution(n, n, 3, 3, 1, 1, 1, 1))
      branch:add(nn.SpatialBatchNormalization(n))
      return nn.Sequential():add(nn.ConcatTable():add(branch):add(nn.Identity()))
                            :add(nn.CAddTable(true)):add(nn.ReLU(true))
   end
   local net = nn.Sequential()
   net:add(nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(4)):add(nn.ReLU())
   net:add(block(4)):add(block(4))
   net:add(nn.SpatialAveragePooling(8, 8)):add(nn.View(4):setNumInputDims(3)):add(nn.Linear(4, 3))
   return net, {3, 8, 8}
end

-- an inception-like nn.Concat of four branches, twice
function models.googlenet()
   local function inception(nIn, a, b, c, d)
      local cat = nn.Concat(2)
      cat:add(nn.Sequential():add(nn.SpatialConvolution(nIn, a, 1, 1)):add(nn.ReLU(true)))
      cat:add(nn.Sequential():add(nn.SpatialConvolution(nIn, b, 1, 1)):add(nn.ReLU(true))
                             :add(nn.SpatialConvolution(b, b, 3, 3, 1, 1, 1, 1)):add(nn.ReLU(true)))
      cat:add(nn.Sequential():add(nn.SpatialConvolution(nIn, c, 1, 1)):add(nn.ReLU(true))
                             :add(nn.SpatialConvolution(c, c, 5, 5, 1, 1, 2, 2)):add(nn.ReLU(true)))
      cat:add(nn.Sequential():add(nn.SpatialMaxPooling(3, 3, 1, 1, 1, 1))
                             :add(nn.SpatialConvolution(nIn, d, 1, 1)):add(nn.ReLU(true)))
      return cat, a + b + c + d
   end
   local net = nn.Sequential()
   net:add(nn.SpatialConvolution(3, 6, 3, 3, 1, 1, 1, 1)):add(nn.ReLU())
   local i1, n1 = inception(6, 2, 3, 2, 2)
   local i2, n2 = inception(n1, 3, 2, 2, 3)
   net:add(i1):add(i2):add(nn.SpatialMaxPooling(2, 2, 2, 2))
   net:add(nn.View(n2 * 4 * 4):setNumInputDims(3)):add(nn.Linear(n2 * 4 * 4, 5)):add(nn.LogSoftMax())
   return net, {3, 8, 8}
end

-- an nngraph gModule: a node read by two others, and a two-input sum
function models.gmodule()
   local x = nn.Identity()()
   local h = nn.ReLU()(nn.Linear(6, 8)(x))
   local a = nn.Tanh()(nn.Linear(8, 8)(h))
   local b = nn.Sigmoid()(nn.Linear(8, 8)(h))
   local s = nn.CAddTable()({a, b})
   local y = nn.Linear(8, 4)(nn.ReLU()(nn.CMulTable()({s, h})))
   return nn.gModule({x}, {y}), {6}
end

-- dcgan.torch's generator (SpatialFullConvolution + BatchNorm + ReLU(true), Tanh), smaller
function models.dcgan()
   local nz, ngf, nc = 8, 4, 3
   local net = nn.Sequential()
   net:add(nn.SpatialFullConvolution(nz, ngf * 4, 4, 4))
   net:add(nn.SpatialBatchNormalization(ngf * 4)):add(nn.ReLU(true))
   net:add(nn.SpatialFullConvolution(ngf * 4, ngf * 2, 4, 4, 2, 2, 1, 1))
   net:add(nn.SpatialBatchNormalization(ngf * 2)):add(nn.ReLU(true))
   net:add(nn.SpatialFullConvolution(ngf * 2, ngf, 4, 4, 2, 2, 1, 1))
   net:add(nn.SpatialBatchNormalization(ngf)):add(nn.ReLU(true))
   net:add(nn.SpatialFullConvolution(ngf, nc, 4, 4, 2, 2, 1, 1)):add(nn.Tanh())
   return net, {nz, 1, 1}
end

-- a fresh network (weights from `seed`) in training or evaluation mode, and its clone
function prepared(name, seed, train)
   torch.manualSeed(seed)
   local net = models[name]()
   if train then net:training() else net:evaluate() end
   return net, net:clone()
end

-- distinct storages of the leaves' outputs (or of another tensor field)
function storageCount(net, field)
   local seen, n = {}, 0
   for _, m in ipairs(net:listModules()) do
      local t = m[field or 'output']
      if not m.modules and torch.isTensor(t) and t:storage() then
         local k = torch.pointer(t:storage())
         if not seen[k] then seen[k] = true; n = n + 1 end
      end
   end
   return n
end

function flatGrads(net)
   local _, g = net:parameters()
   local parts = {}
   for i, t in ipairs(g) do parts[i] = t:view(-1) end
   return torch.cat(parts)
end
"""

MODELS = ["sequential", "resnet", "googlenet", "gmodule", "dcgan"]


@pytest.fixture
def lua(rt):
    rt.execute(PRELUDE)
    return rt


def run(rt, code, *args):
    """Runs a Lua chunk with arguments (its `...`) and returns what it returns."""
    return rt.call(rt.execute("return function(...)\n" + code + "\nend"), *args)


def fresh(rt, rng, shape, batch):
    return rt.from_numpy(rng.standard_normal((batch,) + tuple(shape)))


def shape_of(rt, name):
    sizes = rt.execute("local _, s = models.%s(); return s" % name)
    return [int(sizes[i + 1]) for i in range(len(sizes))]


def arr(rt, t):
    return np.array(rt.to_numpy(t))


@pytest.mark.parametrize("name", MODELS)
def test_inference_outputs_identical_and_memory_drops(lua, rng, name):
    rt = lua
    shape = shape_of(rt, name)
    setup = run(rt, """
        local name, sample = ...
        local net, reference = prepared(name, %d, false)
        net:forward(sample)
        local before = optnet.countUsedMemory(net)
        local storagesBefore = storageCount(net)
        optnet.optimizeMemory(net, sample)
        net:forward(sample)
        local after = optnet.countUsedMemory(net)
        return {net = net, reference = reference, before = before, after = after,
                storagesBefore = storagesBefore, storagesAfter = storageCount(net)}
    """ % int(rng.integers(1 << 30)), name, fresh(rt, rng, shape, 4))
    # more, and fewer, outputs storages than before cannot both hold for one network
    assert setup.storagesAfter < setup.storagesBefore
    assert setup.after.outputs < setup.before.outputs
    assert setup.after.total_size < setup.before.total_size
    forward = rt.eval("function(net, x) return net:forward(x):clone() end")
    for batch in (4, 4, 7, 2):
        x = fresh(rt, rng, shape, batch)
        got = arr(rt, rt.call(forward, setup.net, x))
        want = arr(rt, rt.call(forward, setup.reference, x))
        assert got.shape == want.shape
        assert np.array_equal(got, want), (name, batch, np.max(np.abs(got - want)))


def test_sequential_storage_count_by_hand(lua, rng):
    # Linear(10,30) ReLU Linear(30,20) Tanh Linear(20,5), batch 4, inplace on:
    # Linear1 -> A (120 numbers); ReLU in place -> A; Linear3 -> B (80) (A is its input);
    # Tanh -> A again (A was last read by Linear3); Linear5 -> B (last read by Tanh).
    # Two storages: 120 + 80 doubles = 1600 bytes of outputs. Before: 5 storages, 420 doubles.
    res = run(lua, """
        local x = ...
        local net = models.sequential()
        net:forward(x)
        local before = optnet.countUsedMemory(net)
        local n0 = storageCount(net)
        optnet.optimizeMemory(net, x)
        net:forward(x)
        local out = {}
        for i, m in ipairs(net.modules) do out[i] = torch.pointer(m.output:storage()) end
        return {n0 = n0, n1 = storageCount(net), before = before.outputs, after = optnet.countUsedMemory(net).outputs,
                same = {out[1] == out[2], out[1] == out[4], out[3] == out[5], out[1] ~= out[3]},
                relu = net.modules[2].inplace}
    """, fresh(lua, rng, [10], 4))
    assert (res.n0, res.n1) == (5, 2)
    assert (res.before, res.after) == (420 * 8, 200 * 8)
    assert list(res.same.values()) == [True] * 4
    assert res.relu is True


def test_sequential_without_inplace_still_two_storages(lua, rng):
    # inplace=false: Linear1 A, ReLU B, Linear3 A, Tanh B, Linear5 A: 2 storages, ReLU not in place
    res = run(lua, """
        local x = ...
        local net = models.sequential()
        optnet.optimizeMemory(net, x, {inplace = false})
        net:forward(x)
        local p = {}
        for i, m in ipairs(net.modules) do p[i] = torch.pointer(m.output:storage()) end
        return {n = storageCount(net), relu = net.modules[2].inplace,
                pattern = {p[1] == p[3], p[3] == p[5], p[2] == p[4], p[1] ~= p[2]}}
    """, fresh(lua, rng, [10], 4))
    assert res.n == 2 and res.relu is False
    assert list(res.pattern.values()) == [True] * 4


@pytest.mark.parametrize("name", MODELS)
def test_remove_optimization_restores_storages_and_results(lua, rng, name):
    rt = lua
    shape = shape_of(rt, name)
    x = fresh(rt, rng, shape, 3)
    res = run(rt, """
        local name, x, sample = ...
        local net, reference = prepared(name, 7, true)
        net:forward(sample)
        local n0 = storageCount(net)
        local gw0 = net:parameters()
        optnet.optimizeMemory(net, sample)
        local blocked = not pcall(function() net:backward(x, net:forward(x)) end)
        local n1 = storageCount(net)
        optnet.removeOptimization(net)
        local y = net:forward(x):clone()
        local yr = reference:forward(x):clone()
        local go = y:clone():uniform()
        net:zeroGradParameters(); reference:zeroGradParameters()
        local gi = net:backward(x, go):clone()
        local gir = reference:backward(x, go):clone()
        return {n0 = n0, n1 = n1, n2 = storageCount(net), blocked = blocked, y = y, yr = yr, gi = gi, gir = gir,
                g = flatGrads(net), gr = flatGrads(reference), flag = net.__memoryOptimized == nil}
    """, name, x, fresh(rt, rng, shape, 3))
    assert res.blocked and res.flag
    assert res.n1 < res.n0 and res.n2 == res.n0
    for a, b in ((res.y, res.yr), (res.gi, res.gir), (res.g, res.gr)):
        assert np.array_equal(arr(rt, a), arr(rt, b))


@pytest.mark.parametrize("name", MODELS)
def test_training_mode_gradients_identical(lua, rng, name):
    rt = lua
    shape = shape_of(rt, name)
    setup = run(rt, """
        local name, sample = ...
        local net, reference = prepared(name, 11, true)
        net:forward(sample); net:backward(sample, net.output:clone())
        local before = optnet.countUsedMemory(net)
        reference:forward(sample); reference:backward(sample, reference.output:clone())
        optnet.optimizeMemory(net, sample, {mode = 'training'})
        net:forward(sample); net:backward(sample, net.output:clone())
        reference:forward(sample); reference:backward(sample, reference.output:clone())
        return {net = net, reference = reference, before = before, after = optnet.countUsedMemory(net)}
    """, name, fresh(rt, rng, shape, 4))
    assert setup.after.gradInputs < setup.before.gradInputs
    assert setup.after.outputs <= setup.before.outputs  # in-place ReLUs only: outputs are not shared
    step = rt.eval("""function(net, x, go)
        net:zeroGradParameters()
        local y = net:forward(x):clone()
        local gi = net:backward(x, go):clone()
        return {y = y, gi = gi, g = flatGrads(net), rm = net:get(2).running_mean and net:get(2).running_mean:clone()}
    end""")
    for batch in (4, 5):
        x = fresh(rt, rng, shape, batch)
        # the output's shape for this batch, from a forward of both (each BatchNorm's running
        # statistics move the same way in both)
        probe = rt.eval("function(a, b, x) a:forward(x); return b:forward(x) end")
        out_shape = arr(rt, rt.call(probe, setup.net, setup.reference, x)).shape
        go = rt.from_numpy(rng.standard_normal(out_shape))
        got, want = rt.call(step, setup.net, x, go), rt.call(step, setup.reference, x, go)
        for key in ("y", "gi", "g"):
            a, b = arr(rt, got[key]), arr(rt, want[key])
            assert np.array_equal(a, b), (name, batch, key, np.max(np.abs(a - b)))
        if want.rm is not None:
            assert np.array_equal(arr(rt, got.rm), arr(rt, want.rm))


def test_inplace_only_where_safe(lua, rng):
    # ReLU feeding a ConcatTable with an Identity branch: in place it would overwrite what the
    # Identity passes on; the first ReLU reads the caller's input, which must stay untouched.
    x_np = rng.standard_normal((3, 5))
    x = lua.from_numpy(x_np.copy())
    res = run(lua, """
        local x = ...
        local net = nn.Sequential():add(nn.ReLU())
        local mid = nn.ReLU()
        net:add(nn.Linear(5, 5)):add(mid)
        net:add(nn.ConcatTable():add(nn.Sequential():add(nn.ReLU()):add(nn.MulConstant(2))):add(nn.Identity()))
        net:add(nn.CAddTable()):add(nn.Tanh())
        local reference = net:clone()
        optnet.optimizeMemory(net, x)
        return {y = net:forward(x):clone(), yr = reference:forward(x):clone(), first = net:get(1).inplace,
                mid = mid.inplace, branch = net:get(4):get(1):get(1).inplace, mul = net:get(4):get(1):get(2).inplace}
    """, x)
    assert np.array_equal(arr(lua, res.y), arr(lua, res.yr))
    assert np.array_equal(lua.to_numpy(x), x_np)
    assert res.first is False  # reads the caller's input
    assert res.mid is True     # the Linear's output is read by it alone
    assert res.branch is False  # the Identity branch still needs what it reads
    assert res.mul is True     # the branch's ReLU output is read by MulConstant alone


def test_training_inplace_keeps_producers_that_need_their_output(lua, rng):
    # Tanh's backward reads its output: a ReLU after it must not overwrite it in training
    res = run(lua, """
        local x = ...
        local net = nn.Sequential():add(nn.Linear(4, 6)):add(nn.Tanh()):add(nn.ReLU())
                                   :add(nn.Linear(6, 6)):add(nn.ReLU()):add(nn.Linear(6, 2))
        optnet.optimizeMemory(net, x, {mode = 'training'})
        return {afterTanh = net:get(3).inplace, afterLinear = net:get(5).inplace}
    """, fresh(lua, rng, [4], 3))
    assert res.afterTanh is False and res.afterLinear is True


def test_remove_grad_params_and_back(lua, rng):
    res = run(lua, """
        local x = ...
        local net = models.sequential()
        local w, g = net:getParameters()
        local n = g:nElement()
        optnet.optimizeMemory(net, x)
        local emptied = net:get(1).gradWeight:nElement() == 0
        local refused = not pcall(function() net:getParameters() end)
        optnet.removeOptimization(net)
        local w2, g2 = net:getParameters()
        -- one flat buffer again, shared by every gradWeight/gradBias as before
        local shared = torch.pointer(net:get(1).gradWeight:storage()) == torch.pointer(net:get(5).gradBias:storage())
        return {emptied = emptied, refused = refused, n = n, n2 = g2:nElement(), shared = shared}
    """, fresh(lua, rng, [10], 2))
    assert res.emptied and res.refused and res.shared
    assert res.n == res.n2


def test_count_used_memory_fields(lua, rng):
    res = run(lua, """
        local x = ...
        local net = nn.Sequential():add(nn.Linear(3, 4)):add(nn.ReLU(true))
        net:forward(x)
        return optnet.countUsedMemory(net)
    """, fresh(lua, rng, [3], 2))
    # Linear: weight 12 + bias 4 + gradWeight 12 + gradBias 4 = 32 doubles of params;
    # the ReLU's output is the Linear's storage (8 doubles), counted once; the Linear's one
    # buffer is its column of ones, one per sample (2 doubles)
    assert res.params == 32 * 8 and res.outputs == 8 * 8 and res.gradInputs == 0 and res.buffers == 2 * 8
    assert res.total_size == (32 + 8 + 2) * 8


def test_already_optimized_is_left_alone(lua, rng):
    res = run(lua, """
        local x = ...
        local net = models.sequential()
        optnet.optimizeMemory(net, x)
        optnet.optimizeMemory(net, x, {mode = 'training'})
        return net.__memoryOptimized
    """, fresh(lua, rng, [10], 2))
    assert res == "inference"


def test_dcgan_generate_sample_then_larger_noise(lua, rng):
    # dcgan.torch's generate.lua optimizes on a small sample, then generates from noise of
    # another batch and another spatial size (imsize > 1 gives larger images)
    res = run(lua, """
        local sample, noise = ...
        local net, reference = prepared('dcgan', 5, false)
        optnet.optimizeMemory(net, sample)
        return {y = net:forward(noise):clone(), yr = reference:forward(noise):clone()}
    """, fresh(lua, rng, [8, 1, 1], 2), fresh(lua, rng, [8, 3, 3], 5))
    y, yr = arr(lua, res.y), arr(lua, res.yr)
    assert y.shape == (5, 3, 48, 48) and np.array_equal(y, yr)


def test_saved_optimized_network_loads_and_unoptimizes(lua, rng, tmp_path):
    path = str(tmp_path / "net.t7")
    res = run(lua, """
        local x, path = ...
        local net, reference = prepared('resnet', 9, false)
        optnet.optimizeMemory(net, x)
        local n = storageCount(net)
        torch.save(path, net)
        local loaded = torch.load(path)
        local kept = storageCount(loaded) == n
        local y = loaded:forward(x):clone()
        local blocked = not pcall(function() loaded:backward(x, y) end)
        optnet.removeOptimization(loaded)
        loaded:forward(x)
        local _, g = loaded:getParameters()
        local _, gr = reference:getParameters()
        return {y = y, yr = reference:forward(x):clone(), kept = kept, blocked = blocked,
                n = g:nElement(), nr = gr:nElement(), distinct = storageCount(loaded) > n}
    """, fresh(lua, rng, [3, 8, 8], 2), path)
    assert res.kept and res.blocked and res.distinct and res.n == res.nr
    assert np.array_equal(arr(lua, res.y), arr(lua, res.yr))


def test_graphgen_nodes_edges_and_storage_ids(lua, rng):
    # Linear, a residual block (ConcatTable{Linear, ReLU(true) | Identity}, CAddTable), a Concat of
    # two Linears, Tanh. Nodes: Input, Linear, Linear, ReLU, CAddTable, Linear, Linear, Concat, Tanh,
    # Output = 10 (the Identity and the containers that only pass tables make none); edges: 11
    # (the chain, Linear1 -> CAddTable through the Identity, CAddTable -> both Concat branches, both
    # -> Concat). Storages: 8 (the in-place ReLU shares its Linear's). After optimizeMemory: 5 --
    # the input; Linear1's, reused by the Concat; the branch Linear's, reused by ReLU, Linear(4->3)
    # and Tanh; CAddTable's; Linear(4->2)'s (CAddTable's output is alive until the Concat returns).
    res = run(lua, """
        local x = ...
        local generateGraph = require 'optnet.graphgen'
        local block = nn.Sequential():add(nn.ConcatTable():add(nn.Sequential():add(nn.Linear(4, 4))
                         :add(nn.ReLU(true))):add(nn.Identity())):add(nn.CAddTable())
        local net = nn.Sequential():add(nn.Linear(4, 4)):add(block)
                       :add(nn.Concat(2):add(nn.Linear(4, 3)):add(nn.Linear(4, 2))):add(nn.Tanh())
        local function ids(g)
           local seen, n = {}, 0
           for _, node in ipairs(g.nodes) do
              local id = tostring(node.data):match('Storage id: (%d+)')
              if id and not seen[id] then seen[id] = true; n = n + 1 end
           end
           return n
        end
        local g = generateGraph(net, x, {addOutputNode = true,
                                         nodeData = function(text, t) return text .. ' n=' .. t:nElement() end})
        local before = {nodes = #g.nodes, edges = #g.edges, ids = ids(g), dot = g:todot('t')}
        optnet.optimizeMemory(net, x)
        return {before = before, after = ids(generateGraph(net, x))}
    """, fresh(lua, rng, [4], 2))
    assert (res.before.nodes, res.before.edges, res.before.ids, res.after) == (10, 11, 8, 5)
    assert "nn.Concat" in res.before.dot and "Storage id: 7 n=10" in res.before.dot
    assert "nn.Identity" not in res.before.dot


FUZZ = r"""
-- a random network on (batch x w) inputs built from pieces that share, alias and fan out
local function piece(w, depth)
   local r = torch.random(1, depth > 2 and 6 or 10)
   if r == 1 then return nn.Linear(w, w)
   elseif r == 2 then return nn.ReLU(torch.random(0, 1) == 1)
   elseif r == 3 then return nn.Tanh()
   elseif r == 4 then return nn.Sigmoid()
   elseif r == 5 then return nn.Identity()
   elseif r == 6 then return nn.MulConstant(0.5, torch.random(0, 1) == 1)
   elseif r == 7 then  -- residual: ConcatTable{branch, Identity} + CAddTable
      local branch = nn.Sequential()
      for i = 1, torch.random(1, 3) do branch:add(piece(w, depth + 1)) end
      return nn.Sequential():add(nn.ConcatTable():add(branch):add(nn.Identity())):add(nn.CAddTable())
   elseif r == 8 then  -- Concat of two halves-width branches, back to w by a Linear
      local cat = nn.Concat(2)
      for i = 1, 2 do cat:add(nn.Sequential():add(nn.Linear(w, 3)):add(piece(3, depth + 1))) end
      return nn.Sequential():add(cat):add(nn.Linear(6, w))
   elseif r == 9 then  -- a module used twice (shared weights, one output tensor)
      local lin = nn.Linear(w, w)
      return nn.Sequential():add(lin):add(nn.Tanh()):add(lin)
   else  -- two branches summed in place: both get the same gradient tensor going backward
      local sum = nn.ConcatTable()
      for i = 1, 2 do sum:add(nn.Sequential():add(nn.Linear(w, w)):add(nn.ReLU())) end
      return nn.Sequential():add(sum):add(nn.CAddTable(true))
   end
end
return function(n)
   local net = nn.Sequential():add(nn.Linear(4, 5))
   for i = 1, n do net:add(piece(5, 1)) end
   return net:add(nn.Linear(5, 2))
end
"""


def against_clones(lua, rng, make, mode, trials, batches):
    """Builds `trials` networks with make(), optimizes each on a batch of 3 and checks it against its
    unoptimized clone (output; in training also gradInput and every parameter's gradient) on fresh inputs."""
    step = lua.eval("""function(net, x, go, train)
        local y = net:forward(x):clone()
        if not train then return {y = y} end
        net:zeroGradParameters()
        return {y = y, gi = net:backward(x, go):clone(), g = flatGrads(net)}
    end""")
    optimize = lua.eval("function(net, x, mode) optnet.optimizeMemory(net, x, {mode = mode}) end")
    clone = lua.eval("function(net) return net:clone() end")
    lua.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    for trial in range(trials):
        net = make()
        reference = lua.call(clone, net)
        lua.call(optimize, net, fresh(lua, rng, [4], 3), mode)
        for batch in batches:
            x, go = fresh(lua, rng, [4], batch), fresh(lua, rng, [2], batch)
            got = lua.call(step, net, x, go, mode == "training")
            want = lua.call(step, reference, x, go, mode == "training")
            for key in (("y", "gi", "g") if mode == "training" else ("y",)):
                assert np.array_equal(arr(lua, got[key]), arr(lua, want[key])), (trial, batch, key)


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_random_networks_match_their_clone(lua, rng, mode):
    make = lua.execute(FUZZ)
    against_clones(lua, rng, lambda: lua.call(make, int(rng.integers(2, 9))), mode, 12, (3, 6))


GRAPH_FUZZ = r"""
-- a random nngraph DAG on (batch x 4) inputs: nodes read earlier nodes, several read the same one
-- (their gradients are summed by the gModule), every node reaches the output
return function()
   local w = 4
   local x = nn.Identity()()
   local nodes, used = {x}, {}
   local function pick(not_this)
      local n = nodes[torch.random(1, #nodes)]
      if n == not_this then n = nn.Identity()(n) else used[n] = true end
      return n
   end
   for i = 1, torch.random(2, 9) do
      local r = torch.random(1, 7)
      local a = pick()
      local n
      if r == 1 then n = nn.Linear(w, w)(a)
      elseif r == 2 then n = nn.ReLU(torch.random(0, 1) == 1)(nn.Linear(w, w)(a))
      elseif r == 3 then n = nn.Tanh()(a)
      elseif r == 4 then n = nn.CAddTable()({a, pick(a)})
      elseif r == 5 then n = nn.Linear(2 * w, w)(nn.JoinTable(2)({a, pick(a)}))
      elseif r == 6 then n = nn.CMulTable()({a, pick(a)})
      else n = nn.ReLU()(a) end
      nodes[#nodes + 1] = n
   end
   local ends = {}
   for _, n in ipairs(nodes) do if not used[n] then ends[#ends + 1] = n end end
   local last = #ends > 1 and nn.CAddTable()(ends) or ends[1]
   return nn.gModule({x}, {nn.Linear(w, 2)(last)})
end
"""


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_random_graphs_match_their_clone(lua, rng, mode):
    make = lua.execute(GRAPH_FUZZ)
    against_clones(lua, rng, lambda: lua.call(make), mode, 15, (3, 5))


def test_bad_input_or_mode_leaves_the_network_as_it_was(lua, rng):
    res = run(lua, """
        local x, wrong = ...
        local net = models.sequential()
        local y = net:forward(x):clone()
        local okInput, errInput = pcall(optnet.optimizeMemory, net, wrong)
        local okMode, errMode = pcall(optnet.optimizeMemory, net, x, {mode = 'train'})
        return {okInput = okInput, okMode = okMode, errMode = errMode, flag = net.__memoryOptimized == nil,
                relu = net:get(2).inplace, same = torch.equal(net:forward(x), y), n = storageCount(net)}
    """, fresh(lua, rng, [10], 3), fresh(lua, rng, [7], 3))
    assert res.okInput is False and res.okMode is False and "'inference' or 'training'" in res.errMode
    assert res.flag and res.relu is False and res.same and res.n == 5


def test_remove_training_optimization_gives_gradinputs_back(lua, rng):
    res = run(lua, """
        local x = ...
        local net, reference = prepared('resnet', 13, true)
        local function gradStorages() return storageCount(net, 'gradInput') end
        local go = net:forward(x):clone():uniform()
        net:backward(x, go); reference:forward(x); reference:backward(x, go)
        local n0 = gradStorages()
        optnet.optimizeMemory(net, x, {mode = 'training'})
        net:forward(x); net:backward(x, go); reference:forward(x); reference:backward(x, go)
        local n1 = gradStorages()
        optnet.removeOptimization(net)
        net:zeroGradParameters(); reference:zeroGradParameters()
        net:forward(x); reference:forward(x)
        local gi, gir = net:backward(x, go):clone(), reference:backward(x, go):clone()
        return {n0 = n0, n1 = n1, n2 = gradStorages(), gi = gi, gir = gir, g = flatGrads(net), gr = flatGrads(reference)}
    """, fresh(lua, rng, [3, 8, 8], 2))
    assert res.n1 < res.n0 and res.n2 == res.n0
    assert np.array_equal(arr(lua, res.gi), arr(lua, res.gir)) and np.array_equal(arr(lua, res.g), arr(lua, res.gr))
