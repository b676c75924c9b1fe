-- nn.IndexLinear(inputSize, outputSize, doGradInput=false, keysOffset=0, weight, bias, normalize=false):
-- a linear layer on sparse features given as {keys, values}: one sample
-- {LongTensor keys, Tensor values}, a batch {{keys1, keys2, ...}, {values1, ...}}
-- or the flat batch {keys, values, sizes} (all samples' keys concatenated, sizes
-- their counts). Key k reads weight row k + keysOffset (1-based), so keys run over
-- [1 - keysOffset, inputSize - keysOffset] (as Torch7's code does; its doc
-- gives the offset the other sign). weight is (inputSize, normalize + outputSize),
-- transposed from Linear's; with normalize its first 4 columns are per-feature
-- {max |value| seen in training, its inverse, update scale, value bias}.
-- Gradients stay sparse: each accGradParameters records the rows of its keys
-- in `running`, updateParameters applies them all, zeroGradParameters forgets
-- them. Fields, defaults and the .t7 layout are Torch7's.
local IndexLinear, parent = torch.class('nn.IndexLinear', 'nn.Module')

local C = torch.C
local check = torch._check

-- the normalization statistics columns of weight
local NORM_COLS = 4

function IndexLinear:__init(inputSize, outputSize, doGradInput, keysOffset, weight, bias, normalize)
   parent.__init(self)
   self.normalize = normalize and NORM_COLS or 0
   -- a given weight is used as is (it may be large and shared); then it sets the sizes
   if weight then
      inputSize, outputSize = weight:size(1), weight:size(2) - self.normalize
   elseif type(inputSize) ~= 'number' or type(outputSize) ~= 'number' or inputSize < 1 or outputSize < 1 then
      error('nn.IndexLinear(inputSize, outputSize, ...): give positive sizes (or a weight)', 2)
   end
   -- zeros: Torch7's constructor does not reset them
   self.weight = weight or torch.Tensor(inputSize, outputSize + self.normalize):zero()
   self.bias = bias or torch.Tensor(outputSize):zero()
   self.inputSize = inputSize
   self.outputSize = outputSize
   -- filled by accGradParameters with one row per key (never inputSize rows)
   self.gradWeight = torch.Tensor()
   self.gradBias = torch.Tensor(outputSize):zero()
   self.gradWeightBuffer = torch.Tensor()
   self.valuesBuffer = torch.Tensor()
   self.normalizedValues = torch.Tensor()
   -- keys and gradWeight rows of each accGradParameters since zeroGradParameters
   self.running = {cumSumSizes = {}, keys = {}, gradWeight = {}, counter = 1}
   self.sizesCache = {}
   self.cumSumSizesCache = {}
   self.weightDecay = 0
   self.doGradInput = doGradInput or false
   -- what the kernels add to a 1-based key to get a 0-based row
   self.offset = keysOffset and keysOffset - 1 or -1
end

function IndexLinear:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.weight:size(2))
   end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv):mul(0.000001)
   if self.normalize and self.normalize > 0 then
      self.weight:narrow(2, 1, self.normalize):zero()
   end
   return self
end

-- A LongTensor for keys and sizes (cutorch's CudaLongTensor on a Cuda module, where there is one, and on a
-- module in GPU memory: cunn's GPU version reads its keys there).
function IndexLinear:longTensor(...)
   if (self:type() == 'torch.CudaTensor' or torch._onDevice(self.weight)) and torch.CudaLongTensor then
      return torch.CudaLongTensor(...)
   end
   return torch.LongTensor(...)
end

local function fail(msg) error('nn.IndexLinear: ' .. msg, 0) end

-- The input's parts: flat {keys, values, sizes} (sizes a LongTensor) or a
-- list of keys tensors and a list of values tensors. Sets isFlat / noBatch.
function IndexLinear:reshapeInput(input)
   if torch.type(input) ~= 'table' or (#input ~= 2 and #input ~= 3) then
      fail('input must be {keys, values}, {{keys1, ...}, {values1, ...}} or {keys, values, sizes}')
   end
   if #input == 3 then
      local keys, values, sizes = input[1], input[2], input[3]
      if not (torch.isTensor(keys) and torch.isTensor(values)) then fail('flat input {keys, values, sizes} needs tensors') end
      if keys:dim() > 1 then fail('flat keys must be a 1-D tensor') end
      if keys:nElement() ~= values:nElement() then
         fail(string.format('%d keys but %d values: keys and values should be of same size', keys:nElement(),
                            values:nElement()))
      end
      if not torch.isTensor(sizes) then sizes = torch.LongTensor{sizes} end
      self.isFlat, self.noBatch = true, false
      return keys, values, sizes
   end
   local keys, values = input[1], input[2]
   if torch.isTensor(keys) and torch.isTensor(values) then
      keys, values = {keys}, {values}
      self.isFlat, self.noBatch = false, true
   elseif torch.type(keys) == 'table' and torch.type(values) == 'table' then
      self.isFlat, self.noBatch = false, false
   else
      fail('input must be {keys, values}, {{keys1, ...}, {values1, ...}} or {keys, values, sizes}')
   end
   if #keys ~= #values then fail(string.format('%d keys tensors but %d values tensors', #keys, #values)) end
   for i = 1, #keys do
      local k, v = keys[i], values[i]
      -- (a sample without keys may come as an empty tensor of no dimension)
      if not (torch.isTensor(k) and torch.isTensor(v)) or k:dim() > 1 or v:dim() > 1 then
         fail(string.format('sample %d: keys and values should be 1-D tensors', i))
      end
      if k:nElement() ~= v:nElement() then
         fail(string.format('sample %d has %d keys but %d values', i, k:nElement(), v:nElement()))
      end
   end
   return keys, values
end

-- self.keys / self.values (contiguous, concatenated over the batch), self.sizes, self.cumSumSizes.
function IndexLinear:flattenInputs(input)
   local keys, values, sizes = self:reshapeInput(input)
   local counter = self.running.counter
   self.running.keys[counter] = self.running.keys[counter] or self:longTensor()
   self.keys = self.running.keys[counter]
   self.values = self.values or self.weight.new()
   if self.isFlat then
      self.keys:resize(keys:nElement()):copy(keys)
      self.values:resize(values:nElement()):copy(values)
      if torch.type(sizes) ~= torch.type(self.keys) or not sizes:isContiguous() then
         sizes = self:longTensor(sizes:nElement()):copy(sizes)
      end
      self.sizes = sizes
      self.cumSumSizes = self.cumSumSizes or self.sizes.new()
      self.cumSumSizes:cumsum(self.sizes:view(-1))
   else
      self.lkeys, self.lvalues = keys, values
      local n = #keys
      self.sizesCache[1] = self.sizesCache[1] or torch.LongTensor()
      self.cumSumSizesCache[1] = self.cumSumSizesCache[1] or torch.LongTensor()
      self.sizes = self.sizesCache[1]:resize(n)
      self.cumSumSizes = self.cumSumSizesCache[1]:resize(n)
      local total = 0
      for i = 1, n do
         self.sizes[i] = keys[i]:nElement()
         total = total + keys[i]:nElement()
      end
      self.keys:resize(total)
      self.values:resize(total)
      local at = 1
      for i = 1, n do
         local len = keys[i]:nElement()
         if len > 0 then
            self.keys:narrow(1, at, len):copy(keys[i])
            self.values:narrow(1, at, len):copy(values[i])
         end
         at = at + len
      end
      if n > 0 then self.cumSumSizes:cumsum(self.sizes) end
   end
   self.running.cumSumSizes[counter] = self.cumSumSizes
end

function IndexLinear:updateOutput(input)
   self:flattenInputs(input)
   check(C.lt_nn_IndexLinear_updateOutput(self.keys._c, self.offset, self.values._c, self.sizes._c,
         self.cumSumSizes._c, self.output._c, self.weight._c, self.bias._c, self.normalizedValues._c,
         self.train and 1 or 0), 2)
   if self.noBatch then self.output:resize(self.output:size(2)) end
   return self.output
end

-- the values the weights saw: normalized ones under max-normalization
function IndexLinear:_usedValues()
   return self.normalize > 0 and self.normalizedValues or self.values
end

function IndexLinear:accGradParameters(input, gradOutput, scale)
   local counter = self.running.counter
   self.running.gradWeight[counter] = self.running.gradWeight[counter] or self.weight.new()
   check(C.lt_nn_IndexLinear_accGradParameters(self.keys._c, self.offset, self:_usedValues()._c, self.sizes._c,
         self.cumSumSizes._c, gradOutput._c, self.running.gradWeight[counter]._c, self.gradBias._c,
         self.weight._c, self.bias._c, scale or 1), 2)
   self.running.counter = counter + 1
end

function IndexLinear:accUpdateGradParameters(input, gradOutput, lr)
   check(C.lt_nn_IndexLinear_accUpdateGradParameters(self.keys._c, self.offset, self:_usedValues()._c,
         self.sizes._c, self.cumSumSizes._c, gradOutput._c, self.weight._c, self.bias._c,
         self.weightDecay or 0, lr or 1), 2)
end

-- Dense, as Torch7's: every sample gets all inputSize keys and gradOutput * weight^T.
function IndexLinear:updateGradInput(input, gradOutput)
   self.gradInput = {}
   if not self.doGradInput then return self.gradInput end
   if self.normalize > 0 then
      error('nn.IndexLinear: updateGradInput is not implemented in max-normalize mode (make it with doGradInput false)', 0)
   end
   local nIn = self.weight:size(1)
   local go = gradOutput:dim() == 1 and gradOutput:contiguous():view(1, gradOutput:nElement()) or gradOutput
   local gi = torch.mm(go, self.weight:t())
   -- the keys that name rows 1..nIn
   local keys = self:longTensor(nIn):copy(torch.range(1, nIn)):add(-1 - self.offset)   -- (range: a host one)
   if self.isFlat then
      self.gradInput[1] = keys:view(1, nIn):expand(gi:size(1), nIn):clone()
      self.gradInput[2] = gi
   elseif self.noBatch then
      self.gradInput = {keys, gi[1]}
   else
      self.gradInput[1], self.gradInput[2] = {}, {}
      for i = 1, gi:size(1) do
         self.gradInput[1][i] = keys:clone()
         self.gradInput[2][i] = gi[i]:clone()
      end
   end
   return self.gradInput
end

-- Apply every recorded accGradParameters (their key rows concatenated) and gradBias.
function IndexLinear:updateParameters(lr)
   if not lr then error('nn.IndexLinear:updateParameters(learningRate): give a learning rate', 0) end
   local counter = self.running.counter
   if counter <= 1 then return end
   if counter == 2 then
      self.updateKeys = self.running.keys[1]
      self.gradWeight = self.running.gradWeight[1]
   else
      local total, cols = 0, self.outputSize * (self.normalize > 0 and 2 or 1)
      for i = 1, counter - 1 do total = total + self.running.keys[i]:nElement() end
      self.updateKeysBuffer = self.updateKeysBuffer or self:longTensor()
      self.updateKeysBuffer:resize(total)
      self.gradWeightBuffer:resize(total, cols)
      local at = 1
      for i = 1, counter - 1 do
         local n = self.running.keys[i]:nElement()
         if n > 0 then
            self.updateKeysBuffer:narrow(1, at, n):copy(self.running.keys[i])
            self.gradWeightBuffer:narrow(1, at, n):copy(self.running.gradWeight[i])
         end
         at = at + n
      end
      self.updateKeys = self.updateKeysBuffer
      self.gradWeight = self.gradWeightBuffer
   end
   self:_applyUpdates(lr)
end

-- gradBias and the gradWeight rows of self.updateKeys, applied (cunn gives it a GPU version)
function IndexLinear:_applyUpdates(lr)
   check(C.lt_nn_IndexLinear_updateParameters(self.gradWeight._c, self.gradBias._c, self.weight._c, self.bias._c,
         self.updateKeys._c, self.offset, self.weightDecay or 0, lr), 3)
end

function IndexLinear:zeroGradParameters()
   self.gradBias:zero()
   self.running.counter = 1
end

function IndexLinear:parameters()
   return {self.weight, self.bias}, {self.running, self.gradBias}
end

-- kept as they are by type(): the fields of keys and sizes (LongTensors), and the last input's tables
local KEPT_FIELDS = {'keys', 'sizes', 'cumSumSizes', 'updateKeys', 'updateKeysBuffer', 'sizesCache',
                     'cumSumSizesCache', 'lkeys', 'lvalues'}

function IndexLinear:type(type, tensorCache)
   if not type then return parent.type(self) end
   local kept = {}
   for _, name in ipairs(KEPT_FIELDS) do kept[name], self[name] = self[name], nil end
   local runKeys, runSums = self.running.keys, self.running.cumSumSizes
   self.running.keys, self.running.cumSumSizes = {}, {}
   parent.type(self, type, tensorCache)
   for _, name in ipairs(KEPT_FIELDS) do self[name] = kept[name] end
   self.running.keys, self.running.cumSumSizes = runKeys, runSums
   return self
end

function IndexLinear:clearState()
   self.running.keys = {}
   self.running.gradWeight = {}
   self.running.cumSumSizes = {}
   -- the recorded gradients are gone with them
   self.running.counter = 1
   self.keys = nil
   self.zerokeys = nil
   self.updateKeys = nil
   self.values = nil
   self.sizes = nil
   self.cumSumSizes = nil
   self.lkeys = {}
   self.lvalues = {}
   self.gradWeightBuffer = self.gradWeightBuffer.new()
   self.valuesBuffer = self.valuesBuffer.new()
   self.normalizedValues = self.normalizedValues.new()
   self.updateKeysBuffer = nil
   self.gradWeight = self.gradWeight.new()
   return parent.clearState(self)
end
