-- nn.SparseLinear(inputSize, outputSize, doGradInput=false): a Linear on sparse
-- inputs. A sample is an (nnz, 2) tensor of {column (1-based), value}; a batch
-- is a table of them (or, the legacy form, a (batch, nnz, 2) tensor). After one
-- forward/backward, zeroGradParameters and updateParameters touch only the
-- weight columns that sample used. gradInput (doGradInput) is dense, in the
-- same {column, value} form over all inputSize columns.
local SparseLinear, parent = torch.class('nn.SparseLinear', 'nn.Module')

local C = torch.C
local check = torch._check

-- sparseUpdate states: no input recorded, one (sparse updates apply), several accumulated
local NO_LAST_INPUT, ONE_LAST_INPUT, ACC_MULTIPLE_TIMES = 0, 1, 2

function SparseLinear:__init(inputSize, outputSize, doGradInput)
   parent.__init(self)
   self.weightDecay = 0
   self.doGradInput = doGradInput or false
   self.weight = torch.Tensor(outputSize, inputSize):zero()
   self.bias = torch.Tensor(outputSize):zero()
   self.gradWeight = torch.Tensor(outputSize, inputSize):zero()
   self.gradBias = torch.Tensor(outputSize):zero()
   assert(type(self.doGradInput) == 'boolean', 'nn.SparseLinear: doGradInput must be a boolean')
   self.lastInput = nil
   self.sparseUpdate = NO_LAST_INPUT
   self.formatted_input = nil
   self.gradInput = {}
   self.output:resize(outputSize)
   self:reset()
end

function SparseLinear:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.weight:size(2))
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv):mul(0.000001)
end

-- samples (a table), batchMode, legacyMode
function SparseLinear:reshapeInput(input)
   if torch.type(input) == 'table' then return input, true, false end
   if input:dim() == 2 then return {input}, false, false end
   return input, true, true
end

-- self.formatted_input: (total nnz, 3) rows {sample, column, value}.
function SparseLinear:_format(samples, legacy)
   local n = legacy and samples:size(1) or #samples
   local total = 0
   for i = 1, n do total = total + samples[i]:size(1) end
   self.formatted_input = self.formatted_input or self.weight.new()
   local f = self.formatted_input:resize(total, 3)
   local at = 1
   for i = 1, n do
      local s = samples[i]
      local rows = f:narrow(1, at, s:size(1))
      rows:select(2, 1):fill(i)
      rows:narrow(2, 2, 2):copy(s)
      at = at + s:size(1)
   end
   return n
end

function SparseLinear:updateOutput(input)
   if self.sparseUpdate == ONE_LAST_INPUT then self.sparseUpdate = ACC_MULTIPLE_TIMES end
   local samples, batchMode, legacyMode = self:reshapeInput(input)
   self.legacyMode = legacyMode
   local n = legacyMode and samples:size(1) or #samples
   if n == 0 then
      self.output:resize(self.bias:size(1)):copy(self.bias)
      return self.output
   end
   self:_format(samples, legacyMode)
   self:_sparseOutput(n)
   if not batchMode then self.output = self.output[1] end
   return self.output
end

function SparseLinear:accGradParameters(input, gradOutput, scale)
   local samples, batchMode, legacyMode = self:reshapeInput(input)
   self.legacyMode = legacyMode
   self.lastInput = self.lastInput or gradOutput.new()
   if self.sparseUpdate == NO_LAST_INPUT then
      self.lastInput:resizeAs(self.formatted_input):copy(self.formatted_input)
      self.sparseUpdate = ONE_LAST_INPUT
   elseif self.sparseUpdate == ONE_LAST_INPUT then
      self.sparseUpdate = ACC_MULTIPLE_TIMES
   end
   if not batchMode then gradOutput = gradOutput:view(1, gradOutput:nElement()) end
   self:_sparseGradients(gradOutput, scale or 1)
end

-- The kernels on self.formatted_input (cunn gives them GPU versions): output (n x outputSize) = bias + the
-- entries times weight; gradWeight and gradBias accumulate gradOutput's (n x outputSize) products.
function SparseLinear:_sparseOutput(n)
   check(C.lt_nn_SparseLinear_updateOutput(self.formatted_input._c, self.output._c, self.weight._c,
         self.bias._c, n), 3)
end

function SparseLinear:_sparseGradients(gradOutput, scale)
   check(C.lt_nn_SparseLinear_accGradParameters(self.formatted_input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.weight._c, self.weightDecay or 0, scale), 3)
end

function SparseLinear:updateGradInput(input, gradOutput)
   if self.legacyMode then
      if torch.type(self.gradInput) ~= torch.type(gradOutput) then self.gradInput = gradOutput.new() end
      self.gradInput:resizeAs(input)
   else
      self.gradInput = {}
   end
   if self.doGradInput then
      local nIn = self.weight:size(2)
      local go = gradOutput:dim() == 1 and gradOutput:view(1, gradOutput:nElement()) or gradOutput
      local gi = torch.mm(go, self.weight)                         -- (samples, nIn)
      if self.legacyMode then
         self.gradInput:resize(gi:size(1), nIn, 2)
         self.gradInput:select(3, 1):copy(torch.range(1, nIn):view(1, nIn):expand(gi:size(1), nIn))
         self.gradInput:select(3, 2):copy(gi)
      else
         local columns = torch.range(1, nIn)   -- copied in (a Cuda gradInput's range would run staged)
         for i = 1, gi:size(1) do
            self.gradInput[i] = gradOutput.new(nIn, 2)
            self.gradInput[i]:select(2, 2):copy(gi[i])
            self.gradInput[i]:select(2, 1):copy(columns)
         end
      end
   end
   return self.gradInput
end

-- The (long) weight columns the recorded input used, each once.
function SparseLinear:_lastColumns()
   local used = torch.ByteTensor(self.weight:size(2)):zero()
   used:indexFill(1, self.lastInput:select(2, 2):long(), 1)
   return used:nonzero():view(-1)
end

function SparseLinear:updateParameters(learningRate)
   if self.lastInput and self.sparseUpdate == ONE_LAST_INPUT then
      local cols = self:_lastColumns()
      local w = self.weight:index(2, cols)
      w:add(-learningRate, self.gradWeight:index(2, cols))
      self.weight:indexCopy(2, cols, w)
      self.bias:add(-learningRate, self.gradBias)
   else
      parent.updateParameters(self, learningRate)
   end
end

function SparseLinear:zeroGradParameters()
   if self.lastInput and self.sparseUpdate == ONE_LAST_INPUT then
      self.gradWeight:indexFill(2, self:_lastColumns(), 0)
      self.gradBias:zero()
   else
      parent.zeroGradParameters(self)
   end
   self.sparseUpdate = NO_LAST_INPUT
end

function SparseLinear:clearState()
   if self.lastInput then self.lastInput:set() end
   return parent.clearState(self)
end
