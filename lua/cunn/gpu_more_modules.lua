-- cunn on cutorch's GPU backend, continued (loaded by cunn/gpu.lua): nn's fractional max poolings, the volumetric
-- max unpooling and the two sparse linear layers (IndexLinear, SparseLinear), composed of cutorch's device methods
-- (gather, scatterAdd, index, indexAdd, max over a dimension, cumsum, sort). Their host kernels keep refusing GPU
-- memory; GPU inputs reach the versions below first.
local ffi = require 'ffi'

return function(onDevice)

local function onGPU(t) return torch.isTensor(t) and torch._onDevice(t) end

local function shapeOf(t)   -- as the host kernels name a shape: [2 x 3 x 4]
   return '[' .. table.concat(t:size():totable(), ' x ') .. ']'
end

-- 0, 1, ..., n - 1 in a new tensor of like's type (a running sum of ones: range has no device version)
local function counting(like, n)
   return like.new():cumsum(like.new(n):fill(1), 1):add(-1)
end

-- x rounded to the tensor type's precision, as the host kernels compute their scalars in `real`
local float1 = ffi.new('float[1]')
local function inPrecisionOf(t, x)
   if torch.type(t) == 'torch.CudaDoubleTensor' then return x end
   float1[0] = x
   return float1[0]
end

-- ---------------------------------------------------------------- fractional max pooling

-- nn.SpatialFractionalMaxPooling and nn.VolumetricFractionalMaxPooling over the input seen as (P, V): P planes of
-- V = I1·...·Id values (d = 2: H, W; d = 3: H, W, T). Each dimension's window starts come from the plane's sample
-- u as on the CPU (start_i = floor((i + u)·a) - floor(u·a), a = (in - pool)/(out - 1), the last window at the
-- end, in the input's precision); the flat 1-based positions of every window's values (P, L·W for L outputs of
-- W = K1·...·Kd values) are a sum of broadcast terms; gather reads them, max over each window picks the first
-- maximum (NaN first, as the host kernel), and its position is the index. The backward adds gradOutput at the
-- indices (scatterAdd). Cost: the L·W positions and values, as an im2col.
--
-- The samples: the module draws them with input.new():uniform(), so a GPU module draws from cutorch's generator
-- (as cunn did); a module given randomSamples of the input's type (fixPoolingRegions, or a test) uses them as the
-- CPU module would.
do
   local function starts(u, inSize, outSize, pool)   -- u (P) -> (P, outSize) 0-based starts, a CudaLongTensor
      local p = u:size(1)
      local s = torch.CudaLongTensor(p, outSize)
      s:select(2, outSize):fill(inSize - pool)
      if outSize > 1 then
         local a = inPrecisionOf(u, inPrecisionOf(u, inSize - pool) / inPrecisionOf(u, outSize - 1))
         local i = counting(u, outSize - 1)
         local first = u.new(p, outSize - 1):copy(i:view(1, outSize - 1):expand(p, outSize - 1))
         first:add(u:view(p, 1):expand(p, outSize - 1)):mul(a):floor()
         first:csub(u.new(p, 1):copy(u):mul(a):floor():expand(p, outSize - 1))
         s:narrow(2, 1, outSize - 1):copy(first)
      end
      return s
   end

   -- (P, L·W) flat 1-based positions of the windows' values; ins, outs, pools per dimension (H, W[, T]);
   -- samples (P, d) with dimension k's sample in column d + 1 - k
   local function windowPositions(samples, ins, outs, pools)
      local d, p = #ins, samples:size(1)
      local shape = {p}
      for k = 1, d do shape[1 + k], shape[1 + d + k] = outs[k], pools[k] end
      local full = torch.LongStorage(shape)
      local pos = torch.CudaLongTensor(full):fill(1)
      local stride = 1
      for k = d, 1, -1 do
         local one = {p}
         for j = 2, 2 * d + 1 do one[j] = 1 end
         one[1 + k] = outs[k]
         local s = starts(samples:select(2, d + 1 - k):contiguous(), ins[k], outs[k], pools[k]):mul(stride)
         pos:add(s:view(torch.LongStorage(one)):expand(full))
         for j = 1, 1 + k do one[j] = 1 end
         one[1 + k], one[1 + d + k] = 1, pools[k]
         local offsets = counting(pos, pools[k]):mul(stride)
         pos:add(offsets:view(torch.LongStorage(one)):expand(full))
         stride = stride * ins[k]
      end
      return pos:view(p, -1)
   end

   -- the geometry of input for a module of d dimensions (and pool sizes, where given), or the host kernel's error
   local function geometry(self, input, fn, d, outs, pools, names)
      if input:dim() ~= d + 1 and input:dim() ~= d + 2 then
         if d == 2 then error(string.format('%s: 3D or 4D input tensor expected but got: %s', fn, shapeOf(input)), 3) end
         error(string.format('%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input)), 3)
      end
      local lead = input:dim() - d
      local planes = input:size(lead) * (lead == 2 and input:size(1) or 1)
      local ins = {}
      for k = 1, d do
         ins[k] = input:size(lead + k)
         if pools and (outs[k] < 1 or pools[k] < 1) then
            error(fn .. ': output and pool sizes should be greater than zero', 3)
         elseif pools and outs[k] + pools[k] - 1 >= ins[k] then
            error(string.format(names[k], fn, pools[k], ins[k]), 3)
         end
      end
      return planes, ins
   end

   local function outputShape(input, d, outs)
      local size = input:size()
      for k = 1, d do size[input:dim() - d + k] = outs[k] end
      return size
   end

   local function forward(self, input, fn, d, outs, pools, names)
      local planes, ins = geometry(self, input, fn, d, outs, pools, names)
      if self.randomSamples:nElement() ~= d * planes then
         error(string.format('%s: randomSamples must hold %d samples per plane (%d), got %d', fn, d, d * planes,
                             self.randomSamples:nElement()), 3)
      end
      local pos = windowPositions(self.randomSamples:contiguous():view(planes, d), ins, outs, pools)
      local x = input:contiguous():view(planes, -1)
      local window = 1
      for k = 1, d do window = window * pools[k] end
      local values = x.new():gather(x, 2, pos):view(planes, -1, window)
      local best, at = values:max(3)
      local size = outputShape(input, d, outs)
      self.output:resize(size):copy(best:view(size))
      self.indices:resize(size):copy(pos:view(planes, -1, window):gather(3, at):view(size))
      return self.output
   end

   local function backward(self, input, gradOutput, fn, d, outs)
      local planes = geometry(self, input, fn, d, outs)
      local size = outputShape(input, d, outs)
      if not gradOutput:isSize(size) or torch.type(gradOutput) ~= torch.type(input) then
         if d == 2 then
            error(string.format('%s: gradOutput %s does not match the output size (%d x %d per plane)', fn,
                                shapeOf(gradOutput), outs[1], outs[2]), 3)
         end
         error(string.format('%s: gradOutput %s does not match the expected size (%d x %d x %d per plane)', fn,
                             shapeOf(gradOutput), outs[1], outs[2], outs[3]), 3)
      end
      if torch.type(self.indices) ~= 'torch.CudaLongTensor' or self.indices:nElement() ~= gradOutput:nElement() then
         error(fn .. ': indices must be the LongTensor filled by updateOutput', 3)
      end
      local g = gradOutput:contiguous():view(planes, -1)
      local gi = g.new(planes, input:nElement() / planes):zero()
      gi:scatterAdd(2, self.indices:view(planes, -1), g)
      self.gradInput:resizeAs(input):copy(gi:viewAs(input))
      return self.gradInput
   end

   local SPATIAL_TOO_LARGE = {'%s: poolSizeH (%d) too large relative to input height (%d)',
                              '%s: poolSizeW (%d) too large relative to input width (%d)'}
   local SFMP = nn.SpatialFractionalMaxPooling
   onDevice(SFMP, 'updateOutput', function(self, input)
      self.indices = nn.utils.indicesFor(input, self.indices)
      self:initSampleBuffer_(input)
      local outW, outH = self:getOutputSizes_(input)
      return forward(self, input, 'SpatialFractionalMaxPooling_updateOutput', 2, {outH, outW},
                     {self.poolSizeH, self.poolSizeW}, SPATIAL_TOO_LARGE)
   end)
   onDevice(SFMP, 'updateGradInput', function(self, input, gradOutput)
      assert(self.randomSamples ~= nil, 'must call updateOutput/forward first')
      local outW, outH = self:getOutputSizes_(input)
      return backward(self, input, gradOutput, 'SpatialFractionalMaxPooling_updateGradInput', 2, {outH, outW})
   end)

   local VOLUMETRIC_TOO_LARGE = {}
   for k, name in ipairs {'H', 'W', 'T'} do
      VOLUMETRIC_TOO_LARGE[k] = '%s: poolSize' .. name .. ' (%d) too large relative to input size (%d)'
   end
   local VFMP = nn.VolumetricFractionalMaxPooling
   onDevice(VFMP, 'updateOutput', function(self, input)
      self.indices = nn.utils.indicesFor(input, self.indices)
      self:initSampleBuffer_(input)
      local outT, outW, outH = self:getOutputSizes_(input)
      return forward(self, input, 'VolumetricFractionalMaxPooling_updateOutput', 3, {outH, outW, outT},
                     {self.poolSizeH, self.poolSizeW, self.poolSizeT}, VOLUMETRIC_TOO_LARGE)
   end)
   onDevice(VFMP, 'updateGradInput', function(self, input, gradOutput)
      assert(self.randomSamples ~= nil, 'must call updateOutput/forward first')
      local outT, outW, outH = self:getOutputSizes_(input)
      return backward(self, input, gradOutput, 'VolumetricFractionalMaxPooling_updateGradInput', 3,
                      {outH, outW, outT})
   end)
end

-- ---------------------------------------------------------------- SparseLinear

-- Replace class's method `name` by gpu(self, ...) when the module's tensor self[field] is in GPU memory (methods
-- whose arguments are numbers or tables).
local function onDeviceBy(field, class, name, gpu)
   local host = class[name]
   class[name] = function(self, ...)
      if onGPU(self[field]) then return gpu(self, ...) end
      return host(self, ...)
   end
end

-- nn.SparseLinear's kernels on its (nnz x 3) {sample, column, value} entries: the output is bias plus, for each
-- entry, value times the column of weight, added into its sample's row (index + indexAdd); gradWeight's columns
-- get value times the sample's gradOutput row (index + indexAdd). The entries' sample and column are truncated to
-- integers as by the host kernel's casts, and checked (four reductions; the first bad entry is named from a host
-- copy of the entries, on that error alone).
do
   local SL = nn.SparseLinear
   local function entries(self, fn, nSamples)
      local f, nIn = self.formatted_input, self.weight:size(2)
      local nnz = f:size(1)
      local sample = torch.CudaLongTensor(nnz):copy(f:select(2, 1))
      local column = torch.CudaLongTensor(nnz):copy(f:select(2, 2))
      if sample:min() < 1 or sample:max() > nSamples or column:min() < 1 or column:max() > nIn then
         local e = f:double()
         for i = 1, nnz do
            local s, c = math.modf(e[i][1]), math.modf(e[i][2])
            if s < 1 or s > nSamples then
               error(string.format('%s: sample %d out of range [1, %d]', fn, s, nSamples), 4)
            elseif c < 1 or c > nIn then
               error(string.format('%s: column %d out of range [1, %d]', fn, c, nIn), 4)
            end
         end
      end
      return sample, column, f:select(2, 3)
   end
   onDeviceBy('formatted_input', SL, '_sparseOutput', function(self, n)
      local nOut = self.weight:size(1)
      local sample, column, value = entries(self, 'SparseLinear_updateOutput', n)
      local terms = self.weight:index(2, column)                        -- nOut x nnz
      terms:cmul(value:contiguous():view(1, -1):expandAs(terms))
      self.output:resize(n, nOut):copy(self.bias:view(1, nOut):expand(n, nOut))
      self.output:indexAdd(1, sample, terms:t())
   end)
   onDeviceBy('formatted_input', SL, '_sparseGradients', function(self, gradOutput, scale)
      local fn = 'SparseLinear_accGradParameters'
      local nOut = self.weight:size(1)
      if gradOutput:dim() ~= 2 or gradOutput:size(2) ~= nOut then
         error(string.format('%s: gradOutput must be nSamples x %d', fn, nOut), 3)
      end
      local sample, column, value = entries(self, fn, gradOutput:size(1))
      local terms = gradOutput:index(1, sample)                         -- nnz x nOut
      local scaled = value.new():mul(value, scale)
      terms:cmul(scaled:view(-1, 1):expandAs(terms))
      self.gradWeight:indexAdd(2, column, terms:t())
      self.gradBias:add(scale, gradOutput:sum(1):view(nOut))
      if (self.weightDecay or 0) ~= 0 then self.gradWeight:add(self.weightDecay, self.weight) end
   end)
   -- the weight columns the recorded input used, each once, in order (a CudaLongTensor)
   onDeviceBy('lastInput', SL, '_lastColumns', function(self)
      local columns = torch.CudaLongTensor(self.lastInput:size(1)):copy(self.lastInput:select(2, 2))
      local used = self.weight.new(self.weight:size(2)):zero():indexFill(1, columns, 1)
      return used:nonzero():view(-1)
   end)
end

-- ---------------------------------------------------------------- IndexLinear

-- nn.IndexLinear's kernels on its keys (concatenated over the batch, a CudaLongTensor) and values: key i reads row
-- r_i = key_i + keysOffset + 1 of weight and belongs to sample s_i (from the running sums of the sizes: a mark
-- after each sample's last key, added up). The output is bias plus value times row, added into the sample's row
-- (index + indexAdd); gradWeight gets one row per key (value times the sample's gradOutput row, index). The
-- updates step every key's row in key order, as the host kernels: without weight decay the steps add up
-- (indexAdd); with it a row named c times ends as (1 - wd)^c·row - sum_t (1 - wd)^(c - t)·step_t, and the
-- occurrences' ranks come from a sort of (row, position). Max-normalization: below.
do
   local IL = nn.IndexLinear
   local function firstBad(t, isBad)   -- the first value of t for which isBad holds (host copy, error path)
      local h = t:long()
      for i = 1, h:nElement() do
         if isBad(h[i]) then return h[i] end
      end
   end
   -- the 1-based weight rows of keys, checked as the host kernel does
   local function rowsOf(self, fn, keys)
      local nIn, offset = self.weight:size(1), self.offset
      local rows = torch.CudaLongTensor(keys:nElement()):copy(keys):add(offset + 1)
      if rows:nElement() > 0 and (rows:min() < 1 or rows:max() > nIn) then
         local key = firstBad(keys, function(k) return k + offset < 0 or k + offset >= nIn end)
         error(string.format('%s: key %d is out of range: keys must be in [%d, %d] (inputSize %d, keysOffset %d)',
                             fn, key, -offset, nIn - 1 - offset, nIn, offset + 1), 4)
      end
      return rows
   end
   -- the 1-based sample of every key, the number of samples; sizes checked as the host kernel does
   local function samplesOf(self, fn)
      local nKeys = self.keys:nElement()
      local sizes = torch.CudaLongTensor(self.sizes:nElement()):copy(self.sizes)
      local n = sizes:nElement()
      if n > 0 and sizes:min() < 0 then
         local size = firstBad(sizes, function(v) return v < 0 end)
         local at = 1
         while sizes[at] ~= size do at = at + 1 end
         error(string.format('%s: sample %d has a negative size %d', fn, at, size), 4)
      end
      local total = n > 0 and sizes:sum() or 0
      if total ~= nKeys then
         error(string.format('%s: the sizes add up to %d keys but %d keys were given', fn, total, nKeys), 4)
      end
      if nKeys == 0 then return torch.CudaLongTensor(), n end
      local ends = torch.CudaLongTensor(n):cumsum(sizes, 1):add(1)   -- a mark after each sample's last key
      local marks = torch.CudaLongTensor(nKeys + 1):zero():indexAdd(1, ends, torch.CudaLongTensor(n):fill(1))
      return torch.CudaLongTensor():cumsum(marks:narrow(1, 1, nKeys), 1):add(1), n
   end
   local function gradRows(self, fn, gradOutput, nSamples)   -- gradOutput as nSamples x outputSize, checked
      local nOut = self.outputSize
      if gradOutput:nElement() ~= nSamples * nOut then
         error(string.format('%s: gradOutput must have %d x %d elements, got %d', fn, nSamples, nOut,
                             gradOutput:nElement()), 4)
      end
      return gradOutput:contiguous():view(nSamples, nOut)
   end
   -- the names of rows grouped by row, in key order within a row: order (the sort), sorted (the rows in that
   -- order), first (1 where a row's run starts), run (each sorted name's run), isFirst (first as a mask), starts
   -- and counts (each run's first sorted position and its length), position (1..n)
   local function runsOf(rows)
      local n = rows:nElement()
      local position = torch.CudaLongTensor():cumsum(torch.CudaLongTensor(n):fill(1), 1)
      local _, order = position.new():mul(rows, n + 1):add(position):sort()
      local sorted = rows:index(1, order)
      local first = torch.CudaLongTensor(n):fill(1)
      if n > 1 then first:narrow(1, 2, n - 1):ne(sorted:narrow(1, 2, n - 1), sorted:narrow(1, 1, n - 1)) end
      local run = torch.CudaLongTensor():cumsum(first, 1)
      local isFirst = torch.CudaByteTensor(n):copy(first)
      local starts = position:maskedSelect(isFirst)
      local counts = torch.CudaLongTensor(starts:nElement()):zero():indexAdd(1, run, first.new(n):fill(1))
      return {n = n, position = position, order = order, sorted = sorted, first = first, run = run,
              isFirst = isFirst, starts = starts, counts = counts}
   end
   -- every named row steps in order: row = row - wd·row - step_i (steps: one row per name)
   local function stepRows(weight, rows, steps, wd)
      if rows:nElement() == 0 then return end
      if wd == 0 then
         weight:indexAdd(1, rows, steps:mul(-1))
         return
      end
      local r = runsOf(rows)
      local n, position, run, starts, counts = r.n, r.position, r.run, r.starts, r.counts
      -- later names of the same row: start + count - 1 - position
      local later = starts:index(1, run):add(counts:index(1, run)):add(-1):csub(position)
      local function powers(exponents)   -- (1 - wd)^exponents
         return steps.new(exponents:nElement()):fill(1 - wd):cpow(steps.new(exponents:nElement()):copy(exponents))
      end
      local weights = powers(later)
      local named = r.sorted:maskedSelect(r.isFirst)
      local decay = powers(counts)
      local decayed = weight:index(1, named)
      decayed:cmul(decay:view(-1, 1):expandAs(decayed))
      weight:indexCopy(1, named, decayed)
      local ordered = steps:index(1, r.order)
      ordered:cmul(weights:view(-1, 1):expandAs(ordered))
      weight:indexAdd(1, r.sorted, ordered:mul(-1))
   end
   local function rowsTimes(m, scale)   -- m's rows times the vector scale, in place
      return m:cmul(scale:view(-1, 1):expandAs(m))
   end

   -- Max-normalization (normalize): the first NORM columns of a row are the feature's statistics {max |value|
   -- seen, its inverse, update scale, value bias}, the rest its weights.
   local NORM = 4
   local function valueColumns(self) return self.weight:narrow(2, self.normalize + 1, self.outputSize) end
   local function statistics(self) return self.weight:narrow(2, 1, NORM) end
   local function where(mask, a, b)   -- mask ? a : b for a 0/1 mask (exact: one term is a product by 0)
      return a:clone():cmul(mask):add(b.new():cmul(b, mask.new():mul(mask, -1):add(1)))
   end

   -- The values the keys contribute under max-normalization, as the host kernel's pass in key order: value times
   -- the inverse of the largest |value| its feature has seen (clamped to its sign beyond that max outside
   -- training), plus the feature's value bias. In training each name first raises its feature's max: a name sees the
   -- stored max and the |values| of its feature's names up to itself, a running max per feature over the names
   -- sorted by (row, position) (doubling steps: log2 n launches); the inverse is 1/max where a name raised it, the
   -- stored one otherwise. The features named then keep their last name's max and inverse, and update scale 1.
   local function normalizedValues(self, rows)
      local v, n = self.values, rows:nElement()
      local stats = statistics(self):index(1, rows)                 -- (n, 4), before this pass
      local stored, inverse, bias = stats:select(2, 1), stats:select(2, 2), stats:select(2, 4)
      local magnitude = v.new():abs(v)
      if not self.train then
         local beyond = v.new():gt(magnitude, stored)
         return where(beyond, v.new():sign(v), v.new():cmul(v, inverse)):add(bias)
      end
      local r = runsOf(rows)
      local seen = magnitude:index(1, r.order)                      -- the running max, in sorted order
      local step = 1
      while step < n do
         local same = seen.new(n - step):copy(r.run:narrow(1, step + 1, n - step):eq(r.run:narrow(1, 1, n - step)))
         seen:narrow(1, step + 1, n - step):cmax(seen:narrow(1, 1, n - step):clone():cmul(same))
         step = step * 2
      end
      seen = v.new(n):indexCopy(1, r.order, seen)                   -- in key order
      local raised = v.new():gt(seen, stored)
      local newInverse = where(raised, seen.new(n):fill(1):cdiv(seen:clone():add(raised.new():mul(raised, -1):add(1))),
                               inverse)
      -- the statistics each named feature keeps: those of its last name
      local last = torch.CudaLongTensor(n):fill(1)
      if n > 1 then last:narrow(1, 1, n - 1):copy(r.first:narrow(1, 2, n - 1)) end
      local lastMask = torch.CudaByteTensor(n):copy(last)
      local lastNames = r.order:maskedSelect(lastMask)               -- positions of each feature's last name
      local kept = stats:index(1, lastNames)
      kept:select(2, 1):cmax(seen:index(1, lastNames))
      kept:select(2, 2):copy(newInverse:index(1, lastNames))
      kept:select(2, 3):fill(1)
      statistics(self):indexCopy(1, rows:index(1, lastNames), kept)
      return v.new():cmul(v, newInverse):add(bias)
   end

   -- The max-normalized updates, name by name in key order as the host kernel's: the feature's value bias moves by
   -- -biasScale·s·<gBias_i, row> (the row before this name's step), then the row decays by wd·s and steps by
   -- -stepScale_i·s·g_i (s: the feature's update scale). The i-th names of all features go together (distinct
   -- rows): one round per name of the most named feature.
   local function normalizedSteps(self, rows, gBias, g, stepScale, biasScale, wd)
      local r = runsOf(rows)
      local rank = r.position:clone():csub(r.starts:index(1, r.run))   -- 0-based, in sorted order
      local values, stats = valueColumns(self), statistics(self)
      for round = 0, r.counts:max() - 1 do
         local names = r.order:maskedSelect(torch.CudaByteTensor(r.n):copy(rank:eq(round)))
         local named = rows:index(1, names)
         local row, st = values:index(1, named), stats:index(1, named)
         local s = st:select(2, 3)
         local dot = gBias:index(1, names):cmul(row):sum(2):view(-1)
         st:select(2, 4):csub(dot:cmul(s.new():mul(s, biasScale)))
         if wd ~= 0 then
            local decay = s.new():mul(s, wd)
            row:csub(row:clone():cmul(decay:view(-1, 1):expandAs(row)))
         end
         local steps = stepScale:index(1, names):cmul(s)
         row:csub(rowsTimes(g:index(1, names), steps))
         values:indexCopy(1, named, row)
         stats:indexCopy(1, named, st)
      end
   end

   onDeviceBy('weight', IL, 'updateOutput', function(self, input)
      local fn = 'IndexLinear_updateOutput'
      local k = self.running.keys[self.running.counter]
      if k and torch.type(k) ~= 'torch.CudaLongTensor' then self.running.keys[self.running.counter] = nil end
      self:flattenInputs(input)
      local rows = rowsOf(self, fn, self.keys)
      local samples, n = samplesOf(self, fn)
      local nOut = self.outputSize
      local values = self.values
      if self.normalize > 0 then
         values = rows:nElement() > 0 and normalizedValues(self, rows) or self.values.new()
         self.normalizedValues = self.normalizedValues:typeAs(self.weight):resize(values:nElement()):copy(values)
      end
      self.output:resize(n, nOut):copy(self.bias:view(1, nOut):expand(n, nOut))
      if rows:nElement() > 0 then
         self.output:indexAdd(1, samples, rowsTimes(valueColumns(self):index(1, rows), values))
      end
      if self.noBatch then self.output:resize(self.output:size(2)) end
      return self.output
   end)
   onDeviceBy('weight', IL, 'accGradParameters', function(self, input, gradOutput, scale)
      local fn = 'IndexLinear_accGradParameters'
      scale = scale or 1
      local counter = self.running.counter
      rowsOf(self, fn, self.keys)
      local samples, n = samplesOf(self, fn)
      local g = gradRows(self, fn, gradOutput, n)
      local used = self:_usedValues()
      local gradWeight = self.weight.new()
      local width = self.outputSize * (self.normalize > 0 and 2 or 1)
      if samples:nElement() > 0 then
         local perKey = g:index(1, samples)
         gradWeight = rowsTimes(perKey:clone(), used.new():mul(used, scale))
         if self.normalize > 0 then   -- {scale·gradOutput (the value bias's), scale·value·gradOutput}
            gradWeight = torch.cat(perKey:mul(scale), gradWeight, 2)
         end
      else
         gradWeight:resize(0, width)
      end
      self.running.gradWeight[counter] = gradWeight
      if n > 0 then self.gradBias:add(scale, g:sum(1):view(self.outputSize)) end
      self.running.counter = counter + 1
   end)
   onDeviceBy('weight', IL, 'accUpdateGradParameters', function(self, input, gradOutput, lr)
      local fn = 'IndexLinear_accUpdateGradParameters'
      lr = lr or 1
      local rows = rowsOf(self, fn, self.keys)
      local samples, n = samplesOf(self, fn)
      local g = gradRows(self, fn, gradOutput, n)
      if n > 0 then self.bias:add(-lr, g:sum(1):view(self.outputSize)) end
      if samples:nElement() == 0 then return end
      local used = self:_usedValues()
      if self.normalize > 0 then
         local perKey = g:index(1, samples)
         normalizedSteps(self, rows, perKey, perKey, used.new():mul(used, lr), lr, self.weightDecay or 0)
         return
      end
      local steps = rowsTimes(g:index(1, samples), used.new():mul(used, lr))
      stepRows(self.weight, rows, steps, self.weightDecay or 0)
   end)
   -- (IndexLinear:updateParameters gathers the recorded keys and gradWeight rows, then calls this)
   onDeviceBy('weight', IL, '_applyUpdates', function(self, lr)
      local fn = 'IndexLinear_updateParameters'
      self.bias:add(-lr, self.gradBias)
      local rows = rowsOf(self, fn, self.updateKeys)
      if rows:nElement() == 0 then return end
      local wd = self.weightDecay or 0
      local gw = self.gradWeight:contiguous():view(rows:nElement(), -1)
      if self.normalize > 0 then
         local nOut = self.outputSize
         normalizedSteps(self, rows, gw:narrow(2, 1, nOut), gw:narrow(2, nOut + 1, nOut),
                         gw.new(rows:nElement()):fill(lr), lr, wd)
         return
      end
      stepRows(self.weight, rows, gw:clone():mul(lr), wd)
   end)
end

-- ---------------------------------------------------------------- VolumetricMaxUnpooling

-- nn.VolumetricMaxUnpooling reads its VolumetricMaxPooling's indices (Torch7's layout: the maximum's offset in its
-- window, t | h << 8 | w << 16, 0xFFFFFF for a window with no cell of the volume). On the GPU nn's pooling runs on
-- cuDNN, which keeps none, so a pooling module that an unpooling reads (VolumetricMaxUnpooling.readPoolings) runs
-- composed here instead, as does a dilated one (cuDNN has none) and every one where cuDNN is not used: the input
-- padded with -inf, its windows unfolded (P, L, kT·kH·kW; a dilated window a strided view of its unfolded extent),
-- max over each window, its tap packed. The maximum's place in the volume of every pooled cell (targets) then gives the pooling's
-- backward and the unpooling's forward (scatterAdd), and the unpooling's backward (gather); windows do not overlap
-- in an unpooling pair, and scatterAdd adds up where they do. A window whose in-volume values are all -inf may name
-- a padding cell here where the host kernel names the first of them.
do
   local NONE = 0xFFFFFF
   local VMP, VMU = nn.VolumetricMaxPooling, nn.VolumetricMaxUnpooling
   local NAMES = {'T', 'H', 'W'}
   local function geometryOf(m)   -- kernel, stride, padding, dilation in (T, H, W) order
      local dilT, dilW, dilH = 1, 1, 1
      if m._dilation then dilT, dilW, dilH = m:_dilation() end
      return {m.kT, m.kH, m.kW}, {m.dT, m.dH, m.dW}, {m.padT or 0, m.padH or 0, m.padW or 0}, {dilT, dilH, dilW}
   end
   local function volumeOf(input)   -- planes and the (T, H, W) sizes of a 4-D or 5-D input, or nil
      local d = input:dim()
      if d ~= 4 and d ~= 5 then return nil end
      return input:nElement() / (input:size(d - 2) * input:size(d - 1) * input:size(d)),
             {input:size(d - 2), input:size(d - 1), input:size(d)}
   end
   local function withVolume(input, v)   -- input's size with its last three replaced by v
      local size = input:size()
      for i = 1, 3 do size[input:dim() - 3 + i] = v[i] end
      return size
   end
   -- the pooled sizes as the host kernel computes them, or its error
   local function pooledSizes(self, fn, input)
      local planes, ins = volumeOf(input)
      if not planes then
         error(string.format('%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input)), 4)
      end
      local k, d, pad, dil = geometryOf(self)
      local outs = {}
      for i = 1, 3 do
         if pad[i] < 0 or pad[i] > math.floor(k[i] / 2) then
            error(string.format('%s: pad should be smaller than half of kernel size, but got k%s: %d, pad%s: %d', fn,
                                NAMES[i], k[i], NAMES[i], pad[i]), 4)
         end
         local span = ins[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1
         outs[i] = span < 0 and 0 or (self.ceil_mode and math.ceil(span / d[i]) or math.floor(span / d[i])) + 1
      end
      if pad[1] + pad[2] + pad[3] > 0 then
         for i = 1, 3 do   -- the last window starts inside the volume or its front padding
            if outs[i] > 0 and (outs[i] - 1) * d[i] >= ins[i] + pad[i] then outs[i] = outs[i] - 1 end
         end
      end
      if outs[1] < 1 or outs[2] < 1 or outs[3] < 1 then
         error(string.format('%s: given input size %dx%dx%d per plane, calculated output size %dx%dx%d is too small',
                             fn, ins[1], ins[2], ins[3], outs[1], outs[2], outs[3]), 4)
      end
      return planes, ins, outs
   end

   -- (P, L) 1-based places in the (ins) volume of the maxima that indices (P, L over outs) name, nil where a
   -- window had none (NONE), and a (P, L) 0/1 mask of those that name one, in like's type; an index naming a cell
   -- outside the volume is the host kernel's error
   local function targets(like, indices, planes, ins, outs, d, pad, dil, fn, volume)
      local n = planes * outs[1] * outs[2] * outs[3]
      local packed = like.new(n):copy(indices:view(n))
      local named = like.new(n):ne(packed, NONE)
      local offset = {}                                    -- the offsets in the window: t, h, w
      local rest = like.new(n):copy(packed):cmul(named)    -- (NONE counts as offset 0)
      for i = 1, 3 do
         local shifted = like.new(n):div(rest, 256):floor()
         offset[i] = rest:csub(shifted:clone():mul(256))
         rest = shifted
      end
      local place = like.new(planes, outs[1], outs[2], outs[3]):zero()
      local outside = like.new(n):zero()
      for i = 1, 3 do
         local one = {1, 1, 1, 1}
         one[1 + i] = outs[i]
         local start = counting(like, outs[i]):mul(d[i]):add(-pad[i]):view(torch.LongStorage(one)):expandAs(place)
         local at = like.new(planes, outs[1], outs[2], outs[3]):copy(start):add(dil[i], offset[i]:viewAs(place))
         outside:add(like.new(n):lt(at:view(n), 0)):add(like.new(n):ge(at:view(n), ins[i]))
         place:mul(ins[i]):add(at)
      end
      if outside:cmul(named):sum() > 0 then
         error(string.format('%s: indices hold a position outside the %s volume', fn, volume), 4)
      end
      place = place:view(planes, -1):cmul(named:view(planes, -1)):add(1)   -- NONE -> 1, its value masked off
      return torch.CudaLongTensor(place:size()):copy(place), named:view(planes, -1)
   end

   -- whether window o (0-based) along dimension i holds no cell of the volume: none of its taps o·d - pad + a·dil
   -- falls inside (ceil mode's last window past the end; a dilated window straddling a short side)
   local function emptyWindow(o, i, ins, k, d, pad, dil)
      for a = 0, k[i] - 1 do
         local at = o * d[i] - pad[i] + a * dil[i]
         if at >= 0 and at < ins[i] then return false end
      end
      return true
   end
   onDevice(VMP, 'updateOutput', function(self, input)
      local fn = 'VolumetricDilatedMaxPooling_updateOutput'
      local dims = input:dim()
      local planes, ins, outs = pooledSizes(self, fn, input)
      self.itime, self.iheight, self.iwidth = ins[1], ins[2], ins[3]
      local k, d, pad, dil = geometryOf(self)
      local size, extent = {planes}, {}
      for i = 1, 3 do
         extent[i] = dil[i] * (k[i] - 1) + 1
         size[1 + i] = math.max(ins[i] + 2 * pad[i], (outs[i] - 1) * d[i] + extent[i])
      end
      local padded = input.new(torch.LongStorage(size)):fill(-math.huge)
      padded:narrow(2, pad[1] + 1, ins[1]):narrow(3, pad[2] + 1, ins[2]):narrow(4, pad[3] + 1, ins[3])
            :copy(input:contiguous():view(planes, ins[1], ins[2], ins[3]))
      local windows = padded
      for i = 1, 3 do
         windows = windows:unfold(1 + i, extent[i], d[i])
         if dil[i] > 1 then   -- every dil-th cell of the extent: a strided view of it
            local last = windows:dim()
            windows = windows:unfold(last, 1, dil[i]):select(last + 1, 1)
         end
         windows = windows:narrow(1 + i, 1, outs[i])
      end
      local best, at = windows:contiguous():view(planes, -1, k[1] * k[2] * k[3]):max(3)
      -- the window's 0-based tap m = (t·kH + h)·kW + w, packed as t | h << 8 | w << 16
      local m = input.new(at:nElement()):copy(at):add(-1)
      local w = m.new():fmod(m, k[3])
      local th = m.new():csub(m, w):div(k[3])
      local h = m.new():fmod(th, k[2])
      local t = m.new():csub(th, h):div(k[2])
      local packed = t:add(h:mul(256)):add(w:mul(65536))
      self.indices = nn.utils.indicesFor(input, self.indices)
      self.indices:resize(withVolume(input, outs)):copy(packed)
      for i = 1, 3 do
         for o = 0, outs[i] - 1 do
            if emptyWindow(o, i, ins, k, d, pad, dil) then self.indices:select(dims - 3 + i, o + 1):fill(NONE) end
         end
      end
      self.output:resize(withVolume(input, outs)):copy(best)
      return self.output
   end)
   onDevice(VMP, 'updateGradInput', function(self, input, gradOutput)
      local fn = 'VolumetricDilatedMaxPooling_updateGradInput'
      local planes, ins, outs = pooledSizes(self, fn, input)
      if not gradOutput:isSize(withVolume(input, outs)) then
         error(string.format('%s: gradOutput %s does not match the expected size (%d x %d x %d per plane)', fn,
                             shapeOf(gradOutput), outs[1], outs[2], outs[3]), 3)
      end
      local _, d, pad, dil = geometryOf(self)
      local place, named = targets(input, self.indices, planes, ins, outs, d, pad, dil, fn, 'input')
      local g = gradOutput:contiguous():view(planes, -1):clone():cmul(named)
      self.gradInput:resizeAs(input):zero()
      self.gradInput:view(planes, -1):scatterAdd(2, place, g)
      return self.gradInput
   end)

   -- the unpooling's geometry: its input is the pooled volume, its output the pooling's input volume
   local function unpooling(self, fn, input)
      local planes, outs = volumeOf(input)
      if not planes then
         error(string.format('%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input)), 4)
      end
      local kept = self.pooling.indices
      if self.pooling.itime and not (torch.type(kept) == 'torch.CudaLongTensor' and kept:isSize(input:size())) then
         VMU.readPoolings[self.pooling] = true
         error('nn.VolumetricMaxUnpooling: its VolumetricMaxPooling kept no indices for this input on the GPU '
               .. '(cuDNN keeps none); it keeps them from now on: run its forward again', 4)
      end
      self:setParams()
      local _, d, pad = geometryOf(self)   -- (the host kernel's windows: kernel = stride, undilated)
      return planes, {self.otime, self.oheight, self.owidth}, outs, d, pad
   end
   onDevice(VMU, 'updateOutput', function(self, input)
      local fn = 'VolumetricMaxUnpooling_updateOutput'
      local planes, ins, outs, d, pad = unpooling(self, fn, input)
      local place, named = targets(input, self.indices, planes, ins, outs, d, pad, {1, 1, 1}, fn, 'output')
      local x = input:contiguous():view(planes, -1):clone():cmul(named)
      self.output:resize(withVolume(input, ins)):zero()
      self.output:view(planes, -1):scatterAdd(2, place, x)
      return self.output
   end)
   onDevice(VMU, 'updateGradInput', function(self, input, gradOutput)
      local fn = 'VolumetricMaxUnpooling_updateGradInput'
      local planes, ins, outs, d, pad = unpooling(self, fn, input)
      if not gradOutput:isSize(withVolume(input, ins)) then
         error(string.format('%s: gradOutput %s does not match the expected size (%d x %d x %d per plane)', fn,
                             shapeOf(gradOutput), ins[1], ins[2], ins[3]), 3)
      end
      local place, named = targets(input, self.indices, planes, ins, outs, d, pad, {1, 1, 1}, fn, 'output')
      local g = gradOutput:contiguous():view(planes, -1)
      self.gradInput:resizeAs(input):copy(g.new():gather(g, 2, place):cmul(named):viewAs(input))
      return self.gradInput
   end)
end

end
