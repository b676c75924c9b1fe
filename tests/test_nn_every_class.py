"""Every class registered under `nn.` (found by walking the `nn` table, so a new class is covered
without editing this file) goes through: construction, forward and backward on a small input,
`torch.save` (binary; ascii too), `torch.load` in a *fresh* Runtime, and the pure-Python reader.

For each class:
  - the loaded object has the same class and the same fields, with equal values (tensors
    element-wise, numbers, strings, booleans, nested tables and modules; shared references
    stay shared) as the object that was saved, and no field holds a raw cdata handle;
  - the loaded module's forward (criterion: loss) equals the original's, under the same seed;
  - `tostring` survives the round trip;
  - pytorch_bridge.t7 reads the binary file into the same fields, and every class named in
    the file is an `nn.` class we register (Torch7's names).

A class that cannot be built without arguments needs an entry in CASES (Lua, below); the test
fails for one that has none, so no class is skipped silently.

With Torch7's nn at hand (the bare git repository in $NN_GIT, or ../.mirror/torch+nn/repo beside
the checkout; else those tests skip), more checks read its source: each of its module and
criterion classes is registered here; its own constructor (run here on our parent classes)
builds, from the same arguments and seed, an object equal to ours field by field; where its
code is pure Lua, its forward/backward (and clearState) leave the same public fields as ours;
its own __tostring__ run on our objects gives our text; an object holding only the fields
Torch7's code ever sets (as a Torch7 file would) loads and runs here; and a file of ours read
into Torch7's class runs Torch7's forward/backward to our results. Also: the real Torch7-written
files in ../shared/testdata/t7 load, and the nn modules inside them hold the file's fields and
run; regression tests for the fidelity fixes (Unsqueeze, Min, Bottle, SelectTable, Profile's
torch.Timer, CosineEmbeddingCriterion, the branching containers' text)."""
import math
import os
import re
import subprocess

import numpy as np
import pytest

from pytorch_bridge import Runtime, t7

TESTS = os.path.dirname(os.path.abspath(__file__))
TORCH_CLASSES = {"torch.Timer"}  # torch classes an nn object may hold (nn.Profile's timer)

# Lua: per-class construction and inputs. Each entry is a function returning
# (module, input) for a module, (criterion, input, target) for a criterion.
CASES = r"""
local R = torch.randn
local function long(t) return torch.LongTensor(t) end
local function pos(...) return torch.rand(...):add(0.5) end
local C = {}
C.Add = function() return nn.Add(5), R(3, 5) end
C.AddConstant = function() return nn.AddConstant(1.5), R(3, 5) end
C.BCECriterion = function()
   return nn.BCECriterion(), torch.rand(3, 5):mul(0.8):add(0.1), torch.rand(3, 5):gt(0.5):double()
end
C.BatchNormalization = function() return nn.BatchNormalization(5), R(4, 5) end
C.Bilinear = function() return nn.Bilinear(4, 3, 2), {R(3, 4), R(3, 3)} end
C.Bottle = function() return nn.Bottle(nn.Linear(5, 2)), R(2, 3, 5) end
C.CAdd = function() return nn.CAdd(5), R(3, 5) end
C.CMul = function() return nn.CMul(5), R(3, 5) end
C.CAddTable = function() return nn.CAddTable(), {R(3, 5), R(3, 5)} end
C.CSubTable = function() return nn.CSubTable(), {R(3, 5), R(3, 5)} end
C.CMulTable = function() return nn.CMulTable(), {R(3, 5), R(3, 5)} end
C.CDivTable = function() return nn.CDivTable(), {R(3, 5), pos(3, 5)} end
C.CMaxTable = function() return nn.CMaxTable(), {R(3, 5), R(3, 5)} end
C.CMinTable = function() return nn.CMinTable(), {R(3, 5), R(3, 5)} end
C.CAddTensorTable = function() return nn.CAddTensorTable(), {R(5), {R(5), R(5)}} end
C.CReLU = function() return nn.CReLU(1), R(3, 5) end
C.ClassNLLCriterion = function() return nn.ClassNLLCriterion(), R(3, 5), torch.Tensor{1, 3, 5} end
C.CrossEntropyCriterion = function() return nn.CrossEntropyCriterion(), R(3, 5), torch.Tensor{2, 5, 1} end
C.ClassSimplexCriterion = function() return nn.ClassSimplexCriterion(5), R(3, 5), torch.Tensor{1, 3, 5} end
C.Collapse = function() return nn.Collapse(2), R(3, 4, 2) end
C.Concat = function() return nn.Concat(2):add(nn.Linear(5, 2)):add(nn.Linear(5, 3)), R(3, 5) end
C.ConcatTable = function() return nn.ConcatTable():add(nn.Linear(5, 2)):add(nn.Tanh()), R(3, 5) end
C.Constant = function() return nn.Constant(2.5), R(3, 5) end
C.Cosine = function() return nn.Cosine(5, 2), R(3, 5) end
C.CosineDistance = function() return nn.CosineDistance(), {R(3, 5), R(3, 5)} end
C.CosineEmbeddingCriterion = function()
   return nn.CosineEmbeddingCriterion(0.2), {R(3, 5), R(3, 5)}, torch.Tensor{1, -1, 1}
end
C.CriterionTable = function() return nn.CriterionTable(nn.MSECriterion()), {R(3, 5), R(3, 5)} end
C.Decorator = function() return nn.Decorator(nn.Linear(5, 2)), R(3, 5) end
C.DepthConcat = function() return nn.DepthConcat(2):add(nn.Linear(5, 2)):add(nn.Linear(5, 3)), R(3, 5) end
C.DistanceRatioCriterion = function() return nn.DistanceRatioCriterion(true), {R(3, 5), R(3, 5)} end
C.DontCast = function() return nn.DontCast(nn.Linear(5, 2)), R(3, 5) end
C.DotProduct = function() return nn.DotProduct(), {R(3, 5), R(3, 5)} end
C.Euclidean = function() return nn.Euclidean(5, 2), R(3, 5) end
C.FeatureLPPooling = function() return nn.FeatureLPPooling(2, 1, 2, true), R(3, 5) end
C.FlattenTable = function() return nn.FlattenTable(), {R(2), {R(3), {R(1)}}} end
C.GPU = function() return nn.GPU(nn.Linear(5, 2), 1), R(3, 5) end
C.GatedLinearUnit = function() return nn.GatedLinearUnit(), R(3, 6) end
C.Index = function() return nn.Index(1), {R(5, 3), long{1, 3, 2}} end
C.IndexLinear = function() return nn.IndexLinear(10, 3), {{long{1, 4, 7}, long{2, 10}}, {R(3), R(2)}} end
C.JoinTable = function() return nn.JoinTable(2), {R(3, 2), R(3, 4)} end
C.Kmeans = function() return nn.Kmeans(4, 5), R(6, 5) end
C.L1HingeEmbeddingCriterion = function() return nn.L1HingeEmbeddingCriterion(1), {R(5), R(5)}, -1 end
C.L1Penalty = function() return nn.L1Penalty(0.1), R(3, 5) end
C.LayerNormalization = function() return nn.LayerNormalization(5), R(3, 5) end
C.Linear = function() return nn.Linear(5, 2), R(3, 5) end
C.LinearWeightNorm = function() return nn.LinearWeightNorm(5, 2), R(3, 5) end
C.Log = function() return nn.Log(), pos(3, 5) end
C.LookupTable = function() return nn.LookupTable(10, 3), long{{1, 2, 3}, {4, 5, 10}} end
C.MM = function() return nn.MM(), {R(3, 4), R(4, 2)} end
C.MV = function() return nn.MV(), {R(3, 4), R(4)} end
C.MapTable = function() return nn.MapTable(nn.Linear(5, 2)), {R(3, 5), R(1, 5)} end
C.MarginRankingCriterion = function() return nn.MarginRankingCriterion(0.5), {R(3), R(3)}, torch.Tensor{1, -1, 1} end
C.MaskedSelect = function() return nn.MaskedSelect(), {R(3, 5), torch.rand(3, 5):gt(0.5)} end
C.Maxout = function() return nn.Maxout(5, 2, 3), R(3, 5) end
C.MixtureTable = function()
   return nn.MixtureTable(), {nn.SoftMax():forward(R(3, 2)):clone(), {R(3, 5), R(3, 5)}}
end
C.ModuleCriterion = function() return nn.ModuleCriterion(nn.MSECriterion(), nn.Tanh()), R(3, 5), R(3, 5) end
C.MulConstant = function() return nn.MulConstant(2), R(3, 5) end
C.MultiCriterion = function()
   return nn.MultiCriterion():add(nn.MSECriterion()):add(nn.AbsCriterion(), 0.5), R(3, 5), R(3, 5)
end
C.MultiLabelMarginCriterion = function()
   return nn.MultiLabelMarginCriterion(), R(2, 5), torch.Tensor{{3, 1, 0, 0, 0}, {5, 0, 0, 0, 0}}
end
C.MultiMarginCriterion = function() return nn.MultiMarginCriterion(), R(3, 5), torch.Tensor{1, 3, 5} end
C.NaN = function() return nn.NaN(nn.Linear(5, 2)), R(3, 5) end
C.Narrow = function() return nn.Narrow(2, 2, 3), R(3, 5) end
C.NarrowTable = function() return nn.NarrowTable(1, 2), {R(3), R(2), R(4)} end
C.Normalize = function() return nn.Normalize(2), R(3, 5) end
C.OneHot = function() return nn.OneHot(5), long{1, 3, 5} end
C.Padding = function() return nn.Padding(2, 1), R(3, 5) end
C.PairwiseDistance = function() return nn.PairwiseDistance(2), {R(3, 5), R(3, 5)} end
C.Parallel = function() return nn.Parallel(1, 1):add(nn.Linear(5, 2)):add(nn.Linear(5, 3)), R(2, 5) end
C.ParallelCriterion = function()
   return nn.ParallelCriterion():add(nn.MSECriterion()):add(nn.AbsCriterion(), 0.5), {R(3, 5), R(2)}, {R(3, 5), R(2)}
end
C.ParallelTable = function() return nn.ParallelTable():add(nn.Linear(5, 2)):add(nn.Tanh()), {R(3, 5), R(2)} end
C.PartialLinear = function() return nn.PartialLinear(5, 4), R(3, 5) end
C.PixelShuffle = function() return nn.PixelShuffle(2), R(1, 8, 2, 3) end
C.Power = function() return nn.Power(2), R(3, 5) end
C.Profile = function() return nn.Profile(nn.Linear(5, 2), 1e9), R(3, 5) end
C.Replicate = function() return nn.Replicate(3, 1), R(3, 5) end
C.Reshape = function() return nn.Reshape(5, 3), R(3, 5) end
C.Select = function() return nn.Select(2, 3), R(3, 5) end
C.SelectTable = function() return nn.SelectTable(2), {R(3), R(2)} end
C.Sequential = function() return nn.Sequential():add(nn.Linear(5, 4)):add(nn.Tanh()), R(3, 5) end
C.SparseLinear = function() return nn.SparseLinear(10, 3), torch.Tensor{{1, 0.5}, {4, -1}, {10, 2}} end
C.SpatialAdaptiveAveragePooling = function() return nn.SpatialAdaptiveAveragePooling(2, 2), R(2, 3, 5, 4) end
C.SpatialAdaptiveMaxPooling = function() return nn.SpatialAdaptiveMaxPooling(2, 2), R(2, 3, 5, 4) end
C.SpatialAutoCropMSECriterion = function() return nn.SpatialAutoCropMSECriterion(), R(2, 3, 3, 3), R(2, 3, 5, 5) end
C.SpatialAveragePooling = function() return nn.SpatialAveragePooling(2, 2), R(2, 3, 5, 4) end
C.SpatialBatchNormalization = function() return nn.SpatialBatchNormalization(3), R(2, 3, 4, 4) end
C.SpatialClassNLLCriterion = function()
   return nn.SpatialClassNLLCriterion(), R(2, 3, 4, 4), torch.Tensor(2, 4, 4):random(1, 3)
end
C.SpatialContrastiveNormalization = function()
   return nn.SpatialContrastiveNormalization(3, torch.ones(3, 3)), R(3, 5, 5)
end
C.SpatialDivisiveNormalization = function() return nn.SpatialDivisiveNormalization(3, torch.ones(3, 3)), R(3, 5, 5) end
C.SpatialSubtractiveNormalization = function()
   return nn.SpatialSubtractiveNormalization(3, torch.ones(3, 3)), R(3, 5, 5)
end
C.SpatialConvolution = function() return nn.SpatialConvolution(3, 2, 3, 3), R(2, 3, 5, 4) end
C.SpatialConvolutionMM = function() return nn.SpatialConvolutionMM(3, 2, 3, 3), R(2, 3, 5, 4) end
C.SpatialConvolutionLocal = function() return nn.SpatialConvolutionLocal(3, 2, 5, 4, 3, 3), R(2, 3, 4, 5) end
C.SpatialConvolutionMap = function() return nn.SpatialConvolutionMap(nn.tables.full(3, 2), 3, 3), R(3, 5, 4) end
C.SpatialFullConvolutionMap = function() return nn.SpatialFullConvolutionMap(nn.tables.full(3, 2), 3, 3), R(3, 4, 4) end
C.SpatialCrossMapLRN = function() return nn.SpatialCrossMapLRN(3), R(2, 4, 3, 3) end
C.SpatialDepthWiseConvolution = function() return nn.SpatialDepthWiseConvolution(3, 2, 3, 3), R(2, 3, 5, 4) end
C.SpatialDilatedConvolution = function()
   return nn.SpatialDilatedConvolution(3, 2, 3, 3, 1, 1, 0, 0, 2, 2), R(2, 3, 7, 6)
end
C.SpatialDilatedMaxPooling = function() return nn.SpatialDilatedMaxPooling(2, 2, 1, 1, 0, 0, 2, 2), R(2, 3, 6, 6) end
C.SpatialDropout = function() return nn.SpatialDropout(0.5), R(2, 3, 4, 4) end
C.SpatialFractionalMaxPooling = function() return nn.SpatialFractionalMaxPooling(2, 2, 3, 3), R(2, 3, 7, 7) end
C.SpatialFullConvolution = function() return nn.SpatialFullConvolution(3, 2, 3, 3), R(2, 3, 4, 4) end
C.SpatialLPPooling = function() return nn.SpatialLPPooling(3, 2, 2, 2), R(3, 4, 4) end
C.SpatialLogSoftMax = function() return nn.SpatialLogSoftMax(), R(2, 3, 4, 4) end
C.SpatialSoftMax = function() return nn.SpatialSoftMax(), R(2, 3, 4, 4) end
C.SpatialMaxPooling = function() return nn.SpatialMaxPooling(2, 2), R(2, 3, 5, 4) end
C.SpatialMaxUnpooling = function()
   local p = nn.SpatialMaxPooling(2, 2)
   return nn.SpatialMaxUnpooling(p), p:forward(R(2, 3, 4, 4)):clone()
end
C.SpatialReflectionPadding = function() return nn.SpatialReflectionPadding(1, 1, 1, 1), R(2, 3, 4, 4) end
C.SpatialReplicationPadding = function() return nn.SpatialReplicationPadding(1, 1, 1, 1), R(2, 3, 4, 4) end
C.SpatialZeroPadding = function() return nn.SpatialZeroPadding(1, 1, 1, 1), R(2, 3, 4, 4) end
C.SpatialSubSampling = function() return nn.SpatialSubSampling(3, 2, 2), R(3, 5, 4) end
C.SpatialUpSamplingBilinear = function() return nn.SpatialUpSamplingBilinear(2), R(2, 3, 3, 3) end
C.SpatialUpSamplingNearest = function() return nn.SpatialUpSamplingNearest(2), R(2, 3, 3, 3) end
C.SplitTable = function() return nn.SplitTable(2), R(3, 5) end
C.Squeeze = function() return nn.Squeeze(), R(3, 1, 5) end
C.TemporalConvolution = function() return nn.TemporalConvolution(5, 4, 3), R(2, 6, 5) end
C.TemporalDynamicKMaxPooling = function() return nn.TemporalDynamicKMaxPooling(2), R(6, 5) end
C.TemporalMaxPooling = function() return nn.TemporalMaxPooling(2), R(6, 5) end
C.TemporalRowConvolution = function() return nn.TemporalRowConvolution(5, 3), R(2, 6, 5) end
C.TemporalSubSampling = function() return nn.TemporalSubSampling(5, 2), R(6, 5) end
C.Transpose = function() return nn.Transpose({1, 2}), R(3, 5) end
C.Unsqueeze = function() return nn.Unsqueeze(2), R(3, 5) end
C.UpSampling = function() return nn.UpSampling(2, 'nearest'), R(2, 3, 3, 3) end
C.View = function() return nn.View(5, 3), R(3, 5) end
C.VolumetricAveragePooling = function() return nn.VolumetricAveragePooling(2, 2, 2), R(2, 3, 4, 4, 4) end
C.VolumetricBatchNormalization = function() return nn.VolumetricBatchNormalization(3), R(2, 3, 2, 3, 3) end
C.VolumetricConvolution = function() return nn.VolumetricConvolution(3, 2, 2, 2, 2), R(2, 3, 4, 4, 4) end
C.VolumetricDilatedConvolution = function()
   return nn.VolumetricDilatedConvolution(3, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2), R(2, 3, 5, 5, 5)
end
C.VolumetricFullConvolution = function() return nn.VolumetricFullConvolution(3, 2, 2, 2, 2), R(2, 3, 3, 3, 3) end
C.VolumetricDilatedMaxPooling = function()
   return nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2), R(2, 3, 5, 5, 5)
end
C.VolumetricDropout = function() return nn.VolumetricDropout(0.5), R(2, 3, 2, 3, 3) end
C.VolumetricFractionalMaxPooling = function()
   return nn.VolumetricFractionalMaxPooling(2, 2, 2, 2, 2, 2), R(2, 3, 5, 5, 5)
end
C.VolumetricMaxPooling = function() return nn.VolumetricMaxPooling(2, 2, 2), R(2, 3, 4, 4, 4) end
C.VolumetricMaxUnpooling = function()
   local p = nn.VolumetricMaxPooling(2, 2, 2)
   return nn.VolumetricMaxUnpooling(p), p:forward(R(2, 3, 4, 4, 4)):clone()
end
C.VolumetricReplicationPadding = function()
   return nn.VolumetricReplicationPadding(1, 1, 1, 1, 1, 1), R(2, 3, 2, 2, 2)
end
C.WeightNorm = function() return nn.WeightNorm(nn.Linear(5, 2)), R(3, 5) end
C.WeightedEuclidean = function() return nn.WeightedEuclidean(5, 2), R(3, 5) end
C.WeightedMSECriterion = function() return nn.WeightedMSECriterion(torch.rand(3, 5)), R(3, 5), R(3, 5) end
C.ZipTable = function() return nn.ZipTable(), {{R(2), R(3)}, {R(1), R(4)}} end
C.ZipTableOneToMany = function() return nn.ZipTableOneToMany(), {R(2), {R(3), R(1)}} end
return C
"""

# Lua: the walk over classes (side A builds and saves, side B loads and compares) and `describe`,
# which flattens an object into {path = text} with sorted keys, so two runtimes (and the Python
# reader) can be compared whatever their table order.
HARNESS = r"""
local CASES = ...
local H = {}

function H.classes()
   local names = {}
   for name, ctor in pairs(nn) do
      if type(ctor) == 'table' and torch.getmetatable('nn.' .. name) then
         local blank = torch.factory('nn.' .. name)()
         if torch.isTypeOf(blank, 'nn.Module') or torch.isTypeOf(blank, 'nn.Criterion') then
            names[#names + 1] = name
         end
      end
   end
   table.sort(names)
   return names
end

local function num(v)
   if v ~= v then return 'nan' end
   return string.format('%.17g', v)
end

local function tensorText(t)
   local name = torch.typename(t):match('^torch%.(%a+)Tensor$') or torch.typename(t):match('^torch%.(%a+)Storage$')
   if torch.isStorage(t) then t = torch[name .. 'Tensor'](t) end
   if t:nElement() == 0 then return 'T:' .. name .. ':empty' end
   local sizes, vals = {}, {}
   for d = 1, t:dim() do sizes[d] = t:size(d) end
   local flat = t:contiguous():view(-1)
   for i = 1, flat:nElement() do vals[i] = num(flat[i]) end
   return 'T:' .. name .. ':' .. table.concat(sizes, 'x') .. ':' .. table.concat(vals, ',')
end

-- {path = text}; a table or object seen before is written as a reference to its first path.
function H.describe(obj)
   local out, seen = {}, {}
   local function walk(v, path)
      local tv = type(v)
      if torch.isTensor(v) or torch.isStorage(v) then out[path] = tensorText(v)
      elseif tv == 'cdata' or tv == 'userdata' then out[path] = 'RAW:' .. tostring(v)
      elseif tv == 'number' then out[path] = 'n:' .. num(v)
      elseif tv == 'string' then out[path] = 's:' .. v
      elseif tv == 'boolean' then out[path] = 'b:' .. tostring(v)
      elseif tv == 'function' then out[path] = 'function'
      elseif tv == 'table' then
         if seen[v] then out[path] = 'ref:' .. seen[v]; return end
         seen[v] = path
         local cls = torch.typename(v)
         out[path] = cls and ('obj:' .. cls) or 'table'
         local keys = {}
         for k in pairs(v) do keys[#keys + 1] = k end
         table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
         for _, k in ipairs(keys) do walk(v[k], path .. '.' .. tostring(k)) end
      else out[path] = tv end
   end
   walk(obj, '')
   return out
end

local function gradLike(y)
   if torch.isTensor(y) then return y.new(y:size()):copy(torch.randn(y:size())) end
   if type(y) == 'number' then return 1 end
   local g = {}
   for k, v in pairs(y) do g[k] = gradLike(v) end
   return g
end

local function clone(x)
   if torch.isTensor(x) then return x:clone() end
   if type(x) ~= 'table' then return x end
   local c = {}
   for k, v in pairs(x) do c[k] = clone(v) end
   return c
end

H.clone = clone

local function isCriterion(m) return torch.isTypeOf(m, 'nn.Criterion') end

-- (module or criterion, input, target) from the Lua expression `expr`, else CASES, else no arguments.
function H.build(name, expr)
   if expr then return assert(loadstring('return ' .. expr, '=' .. expr))() end
   if CASES[name] then return CASES[name]() end
   local built, m = pcall(nn[name])
   if not built then error('has no entry in CASES and cannot be built without arguments: ' .. tostring(m), 0) end
   return m, torch.randn(3, 5), isCriterion(m) and torch.randn(3, 5) or nil
end

function H.run(m, x, target)
   if isCriterion(m) then
      m:forward(x, target)
      m:backward(x, target)
   else
      local y = m:forward(x)
      m:backward(x, gradLike(y))
   end
end

-- Side A: build, forward/backward, save (binary, then ascii), then the reference forward.
-- Returns {stage = where it failed, err = message} or {fields = describe(m), text = tostring(m)}.
function H.saveOne(name, dir, seed)
   local res = {}
   local ok, err = pcall(function()
      torch.manualSeed(seed)
      res.stage = 'build'
      local m, x, target = H.build(name)
      res.stage = 'forward/backward'
      H.run(m, x, target)
      res.stage = 'tostring'
      res.text = tostring(m)
      res.stage = 'describe'
      res.fields = H.describe(m)
      res.stage = 'save'
      torch.save(dir .. '/' .. name .. '.t7', m)
      torch.save(dir .. '/' .. name .. '.ascii.t7', m, 'ascii')
      torch.save(dir .. '/' .. name .. '.input.t7', {x = x, target = target})
      res.stage = 'reference forward'
      torch.manualSeed(seed + 1)
      res.output = H.describe(clone(isCriterion(m) and {m:forward(x, target)} or m:forward(x)))
      res.stage = nil
   end)
   if not ok then res.err = tostring(err) end
   return res
end

-- Side B, in a fresh Runtime: load one file, describe it, run it again under the same seed.
function H.loadOne(name, path, dir, seed)
   local res = {}
   local ok, err = pcall(function()
      res.stage = 'load'
      local m = torch.load(path, path:match('%.ascii%.t7$') and 'ascii' or 'binary')
      res.class = torch.type(m)
      res.fields = H.describe(m)
      res.text = tostring(m)
      res.stage = 'forward after load'
      local io = torch.load(dir .. '/' .. name .. '.input.t7')
      torch.manualSeed(seed + 1)
      res.output = H.describe(clone(isCriterion(m) and {m:forward(io.x, io.target)} or m:forward(io.x)))
      res.stage = nil
   end)
   if not ok then res.err = tostring(err) end
   return res
end

return H
"""


def lua_runtime():
    rt = Runtime(extra_path=[os.path.join(TESTS, "lua")])
    rt.require("nn")
    run = rt.eval("function(src, name, arg) return assert(loadstring(src, name))(arg) end")
    return rt, rt.call(run, HARNESS, "=every_class", rt.execute(CASES, "=every_class_cases"))


def registered_classes():
    _, H = lua_runtime()
    names = H.classes()
    return [str(names[i + 1]) for i in range(len(names))]


CLASSES = registered_classes()


def to_dict(tbl):
    return {str(k): (str(v) if not isinstance(v, (int, float)) else v) for k, v in tbl.items()} if tbl else {}


def plain(res):
    """A Lua result table as a Python dict (fields/output flattened to {path: text})."""
    out = {}
    for k, v in res.items():
        out[str(k)] = to_dict(v) if k in ("fields", "output") else v
    return out


@pytest.fixture(scope="module")
def seed():
    return int.from_bytes(os.urandom(3), "little")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, seed):
    """Side A: every class built, run and saved (one Runtime for all)."""
    d = tmp_path_factory.mktemp("every_class")
    print("torch.manualSeed", seed)
    _, H = lua_runtime()
    return d, {name: plain(H.saveOne(name, str(d), seed)) for name in CLASSES}


@pytest.fixture(scope="module")
def loaded(saved, seed):
    """Side B: a fresh Runtime loads every file written by side A."""
    d, results = saved
    _, H = lua_runtime()
    out = {}
    for name in CLASSES:
        if "err" in results[name]:
            continue
        for kind in ("binary", "ascii"):
            path = str(d / (name + (".t7" if kind == "binary" else ".ascii.t7")))
            out[name, kind] = plain(H.loadOne(name, path, str(d), seed))
    return out


def test_covers_every_class():
    print("nn classes covered:", len(CLASSES))
    # the base classes and a sample of each family: the walk found the registry, not a subset
    for name in ("Module", "Criterion", "Container", "Sequential", "Linear", "MSECriterion",
                 "SpatialConvolution", "VolumetricMaxUnpooling", "ZipTableOneToMany"):
        assert name in CLASSES
    assert len(CLASSES) >= 185


def test_case_table_names_are_classes():
    # a typo in CASES would leave the real class on the no-argument path, unnoticed
    rt, _ = lua_runtime()
    keys = rt.execute(CASES, "=every_class_cases")
    stale = sorted(str(k) for k in keys.keys() if str(k) not in CLASSES)
    assert not stale, "CASES entries that are not registered nn classes: %s" % stale


# ---------------------------------------------------------------- the pure-Python reader side

def py_num(v):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return "%.17g" % v


def py_describe(obj):
    """pytorch_bridge.t7's view of a file, in the same {path: text} form as the Lua describe."""
    out, seen = {}, {}

    def walk(v, path):
        if isinstance(v, np.ndarray):
            name = t7._TYPE_OF_DTYPE[v.dtype]
            if v.size == 0:
                out[path] = "T:%s:empty" % name
            else:
                sizes = "x".join(str(s) for s in v.shape)
                out[path] = "T:%s:%s:%s" % (name, sizes, ",".join(py_num(float(e)) for e in v.ravel()))
        elif isinstance(v, bool):
            out[path] = "b:" + ("true" if v else "false")
        elif isinstance(v, (int, float)):
            out[path] = "n:" + py_num(v)
        elif isinstance(v, (str, bytes)):
            out[path] = "s:" + (v if isinstance(v, str) else v.decode("latin-1"))
        elif isinstance(v, t7.LuaFunction):
            out[path] = "function"
        elif isinstance(v, (t7.TorchObject, dict, list)):
            if id(v) in seen:
                out[path] = "ref:" + seen[id(v)]
                return
            seen[id(v)] = path
            if isinstance(v, t7.TorchObject):
                out[path] = "obj:" + v.typename
                items = v.fields.items()
            elif isinstance(v, list):
                out[path] = "table"
                items = ((i + 1, e) for i, e in enumerate(v))
            else:
                out[path] = "table"
                items = v.items()
            for k, e in sorted(items, key=lambda kv: str(kv[0])):
                walk(e, path + "." + str(k))
        else:
            out[path] = type(v).__name__
    walk(obj, "")
    return out


# Fields a class leaves out of its file and rebuilds when read (as its Torch7 original does):
# compared neither with the file nor after loading (a path ending in "." keeps the field itself,
# drops what it holds). WeightNorm recomputes its weight from v and g; a torch.Timer is written as
# its class name alone and read as a new timer.
REBUILT_ON_READ = {
    "WeightNorm": (".weight", ".gradWeight", ".modules.1.weight", ".modules.1.gradWeight", "._w"),
    "Profile": (".timer.",),
}


def under(path, prefixes):
    return any(path.startswith(d) if d.endswith(".") else (path == d or path.startswith(d + "."))
               for d in prefixes)


def without(fields, name):
    drop = REBUILT_ON_READ.get(name, ())
    return {p: v for p, v in fields.items() if not under(p, drop)}


def diff(a, b, limit=8):
    keys = sorted(set(a) | set(b))
    bad = [(k, a.get(k, "<missing>")[:80], b.get(k, "<missing>")[:80]) for k in keys if a.get(k) != b.get(k)]
    return bad[:limit]


@pytest.mark.parametrize("name", CLASSES)
def test_class(name, saved, loaded):
    d, results = saved
    res = results[name]
    raw = [p for p, v in res.get("fields", {}).items() if v.startswith("RAW:")]
    assert not raw, "nn.%s holds raw cdata fields (they cannot be saved): %s" % (name, raw)
    assert "err" not in res, "nn.%s failed at %s: %s" % (name, res.get("stage"), res.get("err"))
    fields = without(res["fields"], name)
    assert fields[""] == "obj:nn." + name

    for kind in ("binary", "ascii"):
        back = loaded[name, kind]
        assert "err" not in back, "nn.%s (%s file) failed at %s: %s" % (name, kind, back.get("stage"), back.get("err"))
        assert back["class"] == "nn." + name
        got = without(back["fields"], name)
        assert got == fields, "nn.%s (%s): fields changed by the round trip (path, saved, loaded): %s" % (
            name, kind, diff(fields, got))
        assert back["text"] == res["text"], "tostring changed by the round trip"
        assert back["output"] == res["output"], "nn.%s (%s): forward (criterion: loss) after load differs: %s" % (
            name, kind, diff(res["output"], back["output"]))

    # the binary file as the Python reader (and so Torch7's layout) sees it
    obj = t7.load(str(d / (name + ".t7")), trusted=True)  # our own files
    assert isinstance(obj, t7.TorchObject) and obj.typename == "nn." + name
    seen = without(py_describe(obj), name)
    assert seen == fields, "nn.%s: the Python reader sees other fields (path, Lua, Python): %s" % (
        name, diff(fields, seen))
    classes = {v[4:] for v in seen.values() if v.startswith("obj:")}
    # nn's own classes, or torch's (Profile keeps a torch.Timer, as Torch7's does)
    foreign = sorted(c for c in classes if not ((c.startswith("nn.") and c[3:] in CLASSES) or c in TORCH_CLASSES))
    assert not foreign, "classes in the file that are neither nn classes nor torch's: %s" % foreign


# ---------------------------------------------------------------- fidelity fixes (each failed before)

def run_lua(rt, code, *args):
    return rt.call(rt.eval("function(...) %s end" % code), *args)


def test_unsqueeze_first_input_fixes_num_input_dims(tmp_path):
    # Torch7 keeps the first input's dim as numInputDims: a later input with one more dim is a batch
    rt, _ = lua_runtime()
    path = str(tmp_path / "u.t7")
    first, later, kept = run_lua(rt, """
        local m = nn.Unsqueeze(2)
        local a = m:forward(torch.randn(3, 5)):size():totable()
        torch.save(..., m)
        local b = m:forward(torch.randn(4, 3, 5)):size():totable()
        return table.concat(a, 'x'), table.concat(b, 'x'), torch.load(...).numInputDims""", path)
    assert (first, later, kept) == ("3x1x5", "4x3x1x5", 2)


def test_min_is_not_a_max():
    rt, _ = lua_runtime()
    is_max, is_module, out = run_lua(rt, """
        local m = nn.Min(2)
        local y = m:forward(torch.Tensor{{3, 1, 2}, {0, 5, -1}})
        local g = m:backward(torch.Tensor{{3, 1, 2}, {0, 5, -1}}, torch.Tensor{10, 20})
        return torch.isTypeOf(m, 'nn.Max'), torch.isTypeOf(m, 'nn.Module'),
               table.concat(y:totable(), ',') .. ';' .. table.concat(g:view(-1):totable(), ',')""")
    assert (is_max, is_module, out) == (False, True, "1,-1;0,10,0,0,0,20")


def test_bottle_keeps_the_folded_shapes():
    # Torch7's Bottle keeps the shapes its module sees (its backward views by them), so a file
    # saved after a forward holds those
    rt, _ = lua_runtime()
    shapes = run_lua(rt, """
        local m = nn.Bottle(nn.Linear(5, 2))
        local x = torch.randn(2, 3, 5)
        m:forward(x)
        m:backward(x, torch.randn(2, 3, 2))
        return table.concat(m.inShape:totable(), 'x') .. ' ' .. table.concat(m.outShape:totable(), 'x')""")
    assert shapes == "6x5 6x2"


def test_select_table_clear_state_keeps_the_kind_of_output():
    # Torch7 clears SelectTable as Identity: a selected tensor becomes an empty tensor, a table {}
    rt, _ = lua_runtime()
    kinds = run_lua(rt, """
        local m = nn.SelectTable(1)
        m:forward({torch.randn(2), torch.randn(3)})
        m:clearState()
        local a = torch.type(m.output) .. ':' .. m.output:nElement()
        m:forward({{torch.randn(2)}, torch.randn(3)})
        m:clearState()
        return a .. ' ' .. torch.type(m.output) .. ':' .. #m.output""")
    assert kinds == "torch.DoubleTensor:0 table:0"


def test_a_timer_is_written_as_its_class_name_alone(tmp_path):
    # Torch7's nn writes a torch.Timer (nn.Profile holds one) with no field table and reads it
    # back as a new timer: a table {timer = <torch.Timer>, after = 5} in that layout
    import t7_cases as b
    head = b.i32(3, 1) + b.i32(2)
    timer = b.i32(2) + b.s("timer") + b.torch_head(2, "torch.Timer")
    after = b.i32(2) + b.s("after") + b.i32(1) + b.f64(5)
    data = head + timer + after
    path = tmp_path / "timer.t7"
    path.write_bytes(data)
    rt, _ = lua_runtime()
    loaded = run_lua(rt, "local o = torch.load(...); return torch.type(o.timer), o.after, o.timer:time().real >= 0",
                     str(path))
    assert loaded == ("torch.Timer", 5, True)
    got = t7.load(str(path), trusted=True)
    assert got["after"] == 5 and got["timer"].typename == "torch.Timer" and not got["timer"].fields
    assert t7.dumps(got) == data
    # and ours writes nn.Profile's timer so
    run_lua(rt, "torch.save(..., {timer = torch.Timer(), after = 5})", str(path))
    assert path.read_bytes() in (data, head + after + timer)  # either key order


def test_cosine_embedding_keeps_the_buffer_torch7_makes_with_its_others():
    # Torch7 makes _idx only together with `buffer`: with `buffer` in a file and no _idx, its
    # forward fails
    rt, _ = lua_runtime()
    assert run_lua(rt, """local c = nn.CosineEmbeddingCriterion()
        c:forward({torch.randn(3, 4), torch.randn(3, 4)}, torch.Tensor{1, -1, 1})
        return torch.type(c.buffer) .. ' ' .. torch.type(c._idx)""") == "torch.DoubleTensor torch.ByteTensor"


def test_branching_containers_print_as_torch7():
    rt, _ = lua_runtime()
    for build, name in [("nn.ConcatTable()", "nn.ConcatTable"), ("nn.Concat(2)", "nn.Concat"),
                        ("nn.DepthConcat(2)", "nn.DepthConcat"), ("nn.ParallelTable()", "nn.ParallelTable"),
                        ("nn.Parallel(1, 1)", "nn.Parallel")]:
        text = run_lua(rt, "return tostring(%s:add(nn.Identity()):add(nn.Tanh()))" % build)
        assert text == (name + " {\n  input\n    |`-> (1): nn.Identity\n     `-> (2): nn.Tanh\n"
                        "     ... -> output\n}"), text


def test_sequential_prints_its_own_name_for_subclasses_as_torch7():
    # Torch7's Sequential:__tostring__ writes 'nn.Sequential' whatever the subclass
    rt, _ = lua_runtime()
    assert run_lua(rt, "return tostring(nn.LayerNormalization(3, 0, 1e-5, false))").startswith("nn.Sequential {\n")


@pytest.mark.parametrize("build", ["nn.Threshold(0.5, 2)", "nn.PixelShuffle(3)", "nn.SpatialUpSamplingNearest(2)"])
def test_classes_without_torch7_tostring_print_their_type(build):
    rt, _ = lua_runtime()
    assert run_lua(rt, "return tostring(%s)" % build) == build.split("(")[0]


# ---------------------------------------------------------------- against Torch7's own source, when present

def torch7_nn_sources():
    """{ClassName: Lua source} of Torch7's nn (a bare git repository: $NN_GIT, or
    ../.mirror/torch+nn/repo beside the checkout); skips when there is none."""
    git_dir = os.environ.get("NN_GIT") or os.path.join(TESTS, "..", "..", ".mirror", "torch+nn", "repo")
    try:
        names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "--name-only", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no Torch7 nn git repository (set NN_GIT to one)")
    names = [n for n in names if n.endswith(".lua")]
    batch = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "--batch"], check=True, capture_output=True,
                           input="".join("HEAD:%s\n" % n for n in names).encode()).stdout
    out, pos = {}, 0
    for n in names:
        header_end = batch.index(b"\n", pos)
        size = int(batch[pos:header_end].split()[2])
        out[n[:-4]] = batch[header_end + 1:header_end + 1 + size].decode("utf-8", "replace")
        pos = header_end + 1 + size + 1
    return out


def torch7_parent(src, name):
    m = re.search(r"torch\.class\(\s*['\"]nn\.%s['\"]\s*,\s*['\"]nn\.(\w+)['\"]" % name, src)
    return m.group(1) if m else None


def torch7_tostring(sources, name):
    """The body of the __tostring__ that Torch7's nn.<name> has (its own or inherited), or None."""
    while name in sources:
        m = re.search(r"^function\s+\w+:__tostring__\s*\(\s*\)\s*\n(.*?)^end", sources[name], re.S | re.M)
        if m:
            return m.group(1)
        name = torch7_parent(sources[name], name)
    return None


def torch7_assigned_fields(sources, name):
    """Every field name Torch7's code for nn.<name> (and its parents) assigns anywhere."""
    fields = set()
    while name in sources:
        fields |= set(re.findall(r"\bself\.(\w+)\s*=(?!=)", sources[name]))
        name = torch7_parent(sources[name], name)
    return fields | torch7_assigned_fields_base(sources)


def torch7_assigned_fields_base(sources):
    return set(re.findall(r"\bself\.(\w+)\s*=(?!=)", sources.get("Module", "") + sources.get("Criterion", "")))


PROBE = r"""
local H = ...
local function build(name, expr)
   torch.manualSeed(7)
   return H.build(name, expr)
end
local run = H.run
local P = {}
-- tostring(ours) and what Torch7's __tostring__ body returns on our object (or its error)
function P.tostrings(name, body)
   local m, x, target = build(name)
   run(m, x, target)
   local f = assert(loadstring('local self = ...\n' .. body, '=torch7 ' .. name .. ':__tostring__'))
   local ok, theirs = pcall(f, m)
   return tostring(m), ok, tostring(theirs)
end
-- A Torch7-shaped object: our fields that Torch7 never assigns are dropped, then it goes
-- through a file and must still run (forward/backward), fresh and after a first run.
function P.torch7Shaped(name, known, path)
   local dropped = {}
   for _, ran in ipairs {false, true} do
      local m, x, target = build(name)
      if ran then run(m, x, target) end
      for k in pairs(m) do if not known[k] then dropped[k] = true; m[k] = nil end end
      torch.save(path, m)
      run(torch.load(path), x, target)
   end
   local names = {}
   for k in pairs(dropped) do names[#names + 1] = k end
   table.sort(names)
   return table.concat(names, ',')
end
-- Torch7's class for nn.<name>, from its source, loaded (once) as t7shadow.<name>; its parents ours.
local shadows = {}
local function shadow(name, src)
   if shadows[name] then return shadows[name] end
   local renamed = src:gsub("torch%.class%(%s*(['\"])nn%." .. name .. "%1", "torch.class(%1t7shadow." .. name .. "%1")
   -- some files require Torch7's C binding at load time; constructors do not call it
   package.loaded['nn.THNN'] = package.loaded['nn.THNN'] or {}
   local tables = nn.tables  -- SpatialConvolutionMap's file redefines them
   assert(loadstring(renamed, '=torch7 ' .. name .. '.lua'))()
   nn.tables = tables
   shadows[name] = t7shadow[name]
   return shadows[name]
end
-- nn.<name> made twice from the same arguments and seed, with our class and with Torch7's,
-- up to `stage`: 'build', 'run' (then forward/backward under one seed) or 'clear' (then
-- clearState too). Returns the two describes, or nil and why.
function P.bothWays(name, src, stage, expr)
   local ours = rawget(nn, name)
   local function make(ctor)
      rawset(nn, name, ctor)  -- the CASES entry (or expr) builds whichever class nn.<name> is now
      local ok, m, x, target = pcall(build, name, expr)
      if ok and stage ~= 'build' then
         torch.manualSeed(8)
         local okRun, err = pcall(function()
            run(m, x, target)
            if stage == 'clear' and m.clearState then m:clearState() end  -- criterions have none
         end)
         ok, m = okRun, okRun and m or err
      end
      rawset(nn, name, ours)
      if not ok then return nil, tostring(m) end
      return H.describe(m)
   end
   local a, whyA = make(ours)
   local b, whyB = make(shadow(name, src))
   return a, b, whyA, whyB
end
-- Largest |a - b| over two outputs (tensors, numbers, nested tables), or an error if their
-- structure or sizes differ.
local function maxDiff(a, b, path)
   path = path or 'output'
   if torch.isTensor(a) and torch.isTensor(b) then
      if a:nElement() ~= b:nElement() or (a:nElement() > 0 and not a:isSameSizeAs(b)) then
         error(path .. ': sizes differ', 0)
      end
      return a:nElement() == 0 and 0 or (a:double() - b:double()):abs():max()
   elseif type(a) == 'number' and type(b) == 'number' then return math.abs(a - b)
   elseif type(a) == 'table' and type(b) == 'table' and not torch.isTensor(a) and not torch.isTensor(b) then
      local worst = 0
      for k, v in pairs(a) do worst = math.max(worst, maxDiff(v, b[k], path .. '.' .. tostring(k))) end
      for k in pairs(b) do if a[k] == nil then error(path .. '.' .. tostring(k) .. ': only in one', 0) end end
      return worst
   end
   error(path .. ': ' .. torch.type(a) .. ' vs ' .. torch.type(b), 0)
end
-- Our file as Torch7 would read it: its fields under Torch7's class (the class name in the file
-- picks the metatable, as torch.load does), then Torch7's forward/backward against ours.
function P.torch7RunsOurFile(name, src, path)
   local m, x, target = build(name)
   run(m, x, target)
   torch.save(path, m)
   local function again(asTorch7)
      local loaded = torch.load(path)
      if asTorch7 then torch.setmetatable(loaded, 't7shadow.' .. name) end
      torch.manualSeed(9)
      local y, g
      if torch.isTypeOf(loaded, 'nn.Criterion') or torch.typename(loaded):find('Criterion') then
         y = loaded:forward(x, target)
         g = loaded:backward(x, target)
      else
         y = loaded:forward(x)
         g = loaded:backward(x, H.clone(y))
      end
      return {H.clone(y), H.clone(g)}
   end
   shadow(name, src)
   local ours = again(false)
   return maxDiff(ours, again(true))
end
return P
"""


@pytest.fixture(scope="module")
def torch7_sources():
    return torch7_nn_sources()


@pytest.fixture(scope="module")
def probe():
    # a Runtime of its own: loading Torch7's class files defines t7shadow.* classes in it
    rt, H = lua_runtime()
    run = rt.eval("function(src, arg) return assert(loadstring(src, '=probe'))(arg) end")
    return rt, rt.call(run, PROBE, H)


def test_tostring_is_torch7s(torch7_sources, probe):
    """Torch7's own __tostring__ (read from its source, run on our object) gives our text; a
    class with none prints its type name, as torch's default does."""
    _, P = probe
    bad, torch7_fails = [], []
    for name in CLASSES:
        if name not in torch7_sources:
            continue
        body = torch7_tostring(torch7_sources, name)
        ours, ok, theirs = P.tostrings(name, body or "return torch.type(self)")
        if not ok:
            torch7_fails.append(name)  # Torch7's own code fails on this object (FeatureLPPooling)
        elif ours != theirs:
            bad.append((name, ours, theirs))
    print("Torch7's __tostring__ raises for:", torch7_fails)
    assert not bad, "tostring differs from Torch7's (class, ours, Torch7's): %s" % bad[:5]


def test_torch7_shaped_objects_load_and_run(torch7_sources, probe, tmp_path):
    """A Torch7 file holds only the fields Torch7's code sets: our code must not need others."""
    rt, P = probe
    failures, stripped = [], {}
    for name in CLASSES:
        if name not in torch7_sources:
            continue
        known = rt.table_from({k: True for k in torch7_assigned_fields(torch7_sources, name)})
        try:
            dropped = P.torch7Shaped(name, known, str(tmp_path / "m.t7"))
        except Exception as e:  # a LuaError: which class, and why
            failures.append((name, str(e).splitlines()[0][:200]))
            continue
        if dropped:
            stripped[name] = dropped
    print("fields only we set (dropped for the check):", stripped)
    assert not failures, failures


# ---------------------------------------------------------------- files written by Torch7 itself

def test_torch7_written_files_still_load(t7_dir):
    rt, H = lua_runtime()
    names = sorted(n for n in os.listdir(t7_dir) if n.endswith(".t7"))
    load = rt.eval("function(p) return torch.type(torch.load(p)) end")
    for name in names:
        load(os.path.join(t7_dir, name))  # a LuaError names the file's byte offset
    assert "gmodule_with_linear_identity.t7" in names


def test_torch7_written_modules_hold_their_fields_and_run(t7_dir):
    # an nngraph gModule saved by Torch7: its nn modules are ours once loaded, with the fields
    # the Python reader sees in the file, and they run
    path = os.path.join(t7_dir, "gmodule_with_linear_identity.t7")
    rt, H = lua_runtime()
    mods = run_lua(rt, "local g = torch.load(...); return g.modules", path)
    in_file = {m.typename: m for m in t7.load(path, trusted=True).modules}
    for i in range(len(mods)):
        m = mods[i + 1]
        tname = rt.eval("torch.type")(m)
        assert rt.eval("function(m) return torch.isTypeOf(m, 'nn.Module') end")(m), tname
        assert without(to_dict(H.describe(m)), tname[3:]) == py_describe(in_file[tname]), tname
    lin = in_file["nn.Linear"]
    y = run_lua(rt, """local g = torch.load(...)
        for _, m in ipairs(g.modules) do
           if torch.type(m) == 'nn.Linear' then return m:forward(torch.Tensor{{2}, {-1}}) end
        end""", path)
    np.testing.assert_allclose(rt.to_numpy(y), np.array([[2.0], [-1.0]]) @ lin.weight.T + lin.bias, rtol=1e-12)


# What may differ between our constructor and Torch7's, and why.
CONSTRUCTOR_DIFFERENCES = {
    # Torch7 stores instance functions updateOutput/updateGradInput for a copy that only shares
    # (they are written into files as bytecode); ours keeps the flag and its methods read it
    "Copy": (".shareOnly", ".updateOutput", ".updateGradInput"),
    "Profile": (".timer",),  # clock readings
    "NaN": (".id",),  # a count of instances made: ours and the Torch7 copy each keep their own
}


def test_constructors_are_torch7s(torch7_sources, probe):
    """Constructor defaults, field names and reset initialisation: our class and Torch7's own
    __init (its source run here on our parents) build the same object from the same arguments
    and seed, every field equal (tensors element-wise, so reset draws the same numbers)."""
    rt, P = probe
    bad = []
    for name in CLASSES:
        if name not in torch7_sources:
            continue
        ours, theirs, why_ours, why_theirs = P.bothWays(name, torch7_sources[name], "build")
        if ours is None or theirs is None:
            bad.append((name, "does not build: %s" % (why_ours or why_theirs).splitlines()[0][:150]))
            continue
        drop = CONSTRUCTOR_DIFFERENCES.get(name, ())
        ours = {p: v for p, v in to_dict(ours).items() if not under(p, drop)}
        theirs = {p: v.replace("obj:t7shadow.", "obj:nn.") for p, v in to_dict(theirs).items() if not under(p, drop)}
        if ours != theirs:
            bad.append((name, diff(ours, theirs, 4)))
    assert not bad, "constructed unlike Torch7 (class, [(path, ours, Torch7's)]): %s" % bad


def test_every_torch7_class_is_ours(torch7_sources):
    """Each module or criterion class Torch7's nn defines (one per file) is registered here."""
    def is_module(name, depth=0):
        if name in ("Module", "Criterion"):
            return True
        parent = torch7_parent(torch7_sources.get(name, ""), name)
        return parent is not None and depth < 20 and is_module(parent, depth + 1)
    theirs = [n for n, src in torch7_sources.items()
              if re.search(r"torch\.class\(\s*['\"]nn\.%s['\"]" % n, src) and is_module(n)]
    assert len(theirs) > 180
    missing = sorted(set(theirs) - set(CLASSES))
    assert not missing, "Torch7 nn classes we do not register: %s" % missing


# Other argument forms, for the constructor comparison (CASES has one form per class).
CONSTRUCTOR_VARIANTS = [
    "nn.Linear(4, 3, false)", "nn.Add(4, true)", "nn.Dropout(0.3, true)", "nn.Reshape(5, 3, true)",
    "nn.View(-1, 3)", "nn.BatchNormalization(5, 1e-3, 0.2, false)", "nn.SpatialConvolution(3, 2, 3, 3, 2, 1, 1, 0)",
    "nn.SpatialConvolutionMM(3, 2, 3, 3, 2, 1, 1)", "nn.SpatialMaxPooling(3, 2, 2, 1, 1, 0)",
    "nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1)", "nn.SpatialFractionalMaxPooling(2, 2, 0.5, 0.6)",
    "nn.VolumetricFractionalMaxPooling(2, 2, 2, 0.5, 0.5, 0.7)",
    "nn.SpatialUpSamplingBilinear({oheight = 5, owidth = 7})", "nn.UpSampling(3, 'trilinear')",
    "nn.LookupTable(10, 3, 2, 1.5, 1)", "nn.SpatialZeroPadding(1, 2, 0, 1)", "nn.SpatialReflectionPadding(1)",
    "nn.Threshold(0.5, 0.1, true)", "nn.ReLU(true)", "nn.LeakyReLU(0.2, true)", "nn.ELU(0.5, true)",
    "nn.HardTanh(-2, 3, true)", "nn.Clamp(-1, 1)", "nn.SoftPlus(2, 10)", "nn.PReLU(4)", "nn.RReLU(0.1, 0.2, true)",
    "nn.Normalize(1.5, 1e-6)", "nn.Max(2, 1)", "nn.Min(-1)", "nn.Sum(2, 1, true)", "nn.Mean(1, 2)",
    "nn.JoinTable(1, 2)", "nn.SplitTable(-1, 2)", "nn.Narrow(1, -2, 2)", "nn.Padding(1, -2, 2, -1, 3)",
    "nn.Replicate(4, 2, 1)", "nn.Squeeze(2, 3)", "nn.Unsqueeze(3, 2)", "nn.Transpose({1, 2}, {3, 4})",
    "nn.MulConstant(2, true)", "nn.AddConstant(-1, true)", "nn.Power(0.5)", "nn.Mul()", "nn.CMul(3, 4)",
    "nn.CAdd(1, 4)", "nn.Euclidean(4, 3)", "nn.Cosine(4, 3)", "nn.Bilinear(3, 4, 2, false)",
    "nn.SparseLinear(10, 3, true)", "nn.TemporalConvolution(4, 3, 2, 2)", "nn.TemporalMaxPooling(3, 2)",
    "nn.SpatialCrossMapLRN(5, 0.001, 0.5, 2)", "nn.SpatialDropout(0.2)", "nn.ClassNLLCriterion(torch.ones(5), false)",
    "nn.CrossEntropyCriterion(torch.ones(5))", "nn.MSECriterion(false)", "nn.BCECriterion(torch.ones(5), false)",
    "nn.MultiMarginCriterion(2, torch.ones(5), 0.5)", "nn.MarginCriterion(2)", "nn.HingeEmbeddingCriterion(2)",
    "nn.SmoothL1Criterion(false)", "nn.DistKLDivCriterion()", "nn.CosineEmbeddingCriterion(0.5)",
]


def test_constructor_variants_are_torch7s(torch7_sources, probe):
    """As test_constructors_are_torch7s, for other argument forms (flags, optional sizes, weights)."""
    rt, P = probe
    bad = []
    for expr in CONSTRUCTOR_VARIANTS:
        name = expr[3:expr.index("(")]
        ours, theirs, why_ours, why_theirs = P.bothWays(name, torch7_sources[name], "build", expr)
        if ours is None or theirs is None:
            bad.append((expr, "ours: %s; Torch7's: %s" % (why_ours, why_theirs)))
            continue
        ours = to_dict(ours)
        theirs = {p: v.replace("obj:t7shadow.", "obj:nn.") for p, v in to_dict(theirs).items()}
        if ours != theirs:
            bad.append((expr, diff(ours, theirs, 4)))
    assert not bad, "constructed unlike Torch7 (call, [(path, ours, Torch7's)]): %s" % bad


# Fields whose state after a forward/backward differs from what Torch7's own code leaves, and
# why that cannot matter to a file (fields starting with '_' are private buffers: not compared).
AFTER_RUN_DIFFERENCES = {
    # buffers of Torch7's Lua arithmetic that our kernels do not need (left empty or absent)
    "CMaxTable": (".mask", ".maskByteTensor", ".maxVals", ".gradMaxVals"),
    "CMinTable": (".mask", ".maskByteTensor", ".minVals", ".gradMaxVals"),
    "CosineEmbeddingCriterion": (".buffer",),
    "HingeEmbeddingCriterion": (".buffer", ".output_tensor"),
    "Normalize": (".norm", ".normp", ".cross", ".buffer", ".buffer2"),
    "SoftSign": (".temp", ".tempgrad"),
    "SpatialCrossMapLRN": (".accumRatio", ".paddedRatio"),
    "TanhShrink": (".tanh",),  # Torch7 runs a child nn.Tanh; we compute directly
    "MultiLabelSoftMarginCriterion": (".sigmoid",),  # its child's buffers, flattened in Torch7
    "WeightNorm": (".gradG",),  # Torch7's sum leaves it (n, 1); ours stays (n), as g
    "Profile": (".summedFwdTime", ".summedBwdTime", ".timer"),  # clock readings
    # Torch7 returns the loss and {dX, dY} without storing them (output stays 0, gradInput
    # empty); ours stores them as every criterion does
    "DistanceRatioCriterion": (".output", ".gradInput"),
}


def shape_of(text):
    """A describe entry with tensor values dropped and numbers to 10 digits (the two codes
    may round differently)."""
    if text.startswith("T:") and not text.endswith(":empty"):
        return text.rsplit(":", 1)[0]
    if text.startswith("n:") and text != "n:nan":
        return "n:%.10g" % float(text[2:])
    return text


@pytest.mark.parametrize("stage", ["run", "clear"])
def test_state_after_a_run_is_torch7s(torch7_sources, probe, stage):
    """After forward/backward (and then clearState), an object holds the public fields (of the
    same type and size) that Torch7's own code leaves, where that code can run here (pure Lua:
    no THNN, no FFI). The clear stage is what a file saved after clearState holds."""
    rt, P = probe
    bad, compared = [], 0
    for name in CLASSES:
        src = torch7_sources.get(name)
        if src is None or "ffi" in src:  # Torch7's FFI casts are not for our objects
            continue
        ours, theirs, why_ours, why_theirs = P.bothWays(name, src, stage)
        if ours is None:
            bad.append((name, "does not run: " + why_ours.splitlines()[0][:150]))
            continue
        if theirs is None:
            continue  # Torch7's forward needs its C library
        compared += 1
        drop = AFTER_RUN_DIFFERENCES.get(name, ()) + CONSTRUCTOR_DIFFERENCES.get(name, ())

        def public(fields, rename=False):
            out = {}
            for p, v in to_dict(fields).items():
                if any(part.startswith("_") for part in p.split(".")) or under(p, drop):
                    continue
                out[p] = shape_of(v.replace("obj:t7shadow.", "obj:nn.") if rename else v)
            return out
        a, b = public(ours), public(theirs, True)
        if stage == "clear":
            # clearState may free more than Torch7's (several of its versions forget their
            # parent's, keeping output and gradInput): a tensor we emptied is fine
            for p in [p for p, v in a.items() if v.endswith(":empty") and b.get(p, "").startswith(v[:-5])]:
                del a[p], b[p]
        if a != b:
            bad.append((name, diff(a, b, 4)))
    print("classes compared after stage %s:" % stage, compared)
    assert compared > 50
    assert not bad, "state after a run unlike Torch7's (class, [(path, ours, Torch7's)]): %s" % bad


# Classes whose Torch7 code cannot run our case, and why.
TORCH7_REFUSES = {
    # Torch7's backward wants a target of the input's size, though its forward crops a larger one
    "SpatialAutoCropMSECriterion",
}


def test_torch7_runs_our_files(torch7_sources, probe, tmp_path):
    """A file we save, read as Torch7 reads it (its class from Torch7's source), gives Torch7's
    code what it needs: its forward and backward equal ours. For the classes whose Torch7 code
    is pure Lua (no THNN, no FFI), so that it runs here."""
    rt, P = probe
    bad, compared = [], 0
    for name in CLASSES:
        src = torch7_sources.get(name)
        if src is None or "THNN" in src or "ffi" in src or name in TORCH7_REFUSES:
            continue
        try:
            worst = P.torch7RunsOurFile(name, src, str(tmp_path / "m.t7"))
        except Exception as e:
            bad.append((name, str(e).splitlines()[0][:200]))
            continue
        compared += 1
        if not worst <= 1e-9:
            bad.append((name, "outputs differ by %g" % worst))
    print("classes whose file Torch7's code ran:", compared)
    assert compared > 50
    assert not bad, bad
