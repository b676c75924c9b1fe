-- nn.LookupTable(nIndex, nOutput, paddingValue=0, maxNorm=nil, normType=2):
-- output rows are weight[input[i]]; weight is (nIndex, nOutput), N(0, 1) at reset.
local LookupTable, parent = torch.class('nn.LookupTable', 'nn.Module')

LookupTable.__version = 4

local C = torch.C
local check = torch._check

function LookupTable:__init(nIndex, nOutput, paddingValue, maxNorm, normType)
   parent.__init(self)
   self.weight = torch.Tensor(nIndex, nOutput)
   self.gradWeight = torch.Tensor(nIndex, nOutput):zero()
   self.paddingValue = paddingValue or 0
   self.maxNorm = maxNorm or nil
   self.normType = normType or nil
   self:reset()
end

-- Files saved by older Torch7 versions lack these buffers.
function LookupTable:backCompatibility()
   self._count = self._count or torch.IntTensor()
   self._input = self._input or torch.LongTensor()
   if not self.shouldScaleGradByFreq then self.shouldScaleGradByFreq = false end
end

function LookupTable:accUpdateOnly()
   self.gradWeight = nil
   return self
end

function LookupTable:setPadding(paddingValue)
   self.paddingValue = paddingValue
   return self
end

function LookupTable:setMaxNorm(maxNorm)
   self.maxNorm = maxNorm
   return self
end

function LookupTable:setNormType(normType)
   self.normType = normType
   return self
end

function LookupTable:scaleGradByFreq()
   self.shouldScaleGradByFreq = true
   return self
end

function LookupTable:reset(stdv)
   self.weight:normal(0, stdv or 1)
end

-- The kernels read the indices as one contiguous Long vector.
function LookupTable:makeInputContiguous(input)
   if not input:isContiguous() or torch.type(input) ~= torch.type(self._input) then
      self.copiedInput = true
      self._input:resize(input:size()):copy(input)
      return self._input
   end
   self.copiedInput = false
   return input
end

local function flatIndices(input)
   if input:dim() == 1 then return input end
   if input:dim() == 2 then return input:view(-1) end
   error('nn.LookupTable: input must be a vector or matrix of indices, got ' .. input:dim() .. ' dimensions')
end

function LookupTable:updateOutput(input)
   self:backCompatibility()
   self:renorm(input)
   input = self:makeInputContiguous(input)
   self.output:index(self.weight, 1, flatIndices(input))
   if input:dim() == 2 then
      self.output = self.output:view(input:size(1), input:size(2), self.weight:size(2))
   end
   return self.output
end

-- Indices have no gradient: a zero tensor of the input's shape and type.
function LookupTable:updateGradInput(input, gradOutput)
   if torch.type(self.gradInput) ~= torch.type(input) then self.gradInput = input.new() end
   if not self.gradInput:isSameSizeAs(input) then self.gradInput:resizeAs(input):zero() end
   return self.gradInput
end

function LookupTable:accGradParameters(input, gradOutput, scale)
   self:backCompatibility()
   input = flatIndices(self.copiedInput and self._input or input)
   if not input:isContiguous() then input = input:contiguous() end
   check(C.lt_nn_LookupTable_accGradParameters(input._c, gradOutput._c, self.gradWeight._c, self._count._c,
         self.shouldScaleGradByFreq and 1 or 0, self.paddingValue or 0, scale or 1), 2)
end

function LookupTable:renorm(input)
   if not self.maxNorm then return end
   self._input:resize(input:size()):copy(input)
   check(C.lt_nn_LookupTable_renorm(flatIndices(self._input)._c, self.weight._c, self.maxNorm,
         self.normType or 2), 2)
end

function LookupTable:type(type, tensorCache)
   parent.type(self, type, tensorCache)
   -- the index buffers keep their integer types
   self._count = torch.IntTensor()
   self._input = torch.LongTensor()
   return self
end

function LookupTable:clearState()
   nn.utils.clear(self, '_count', '_input')
   return parent.clearState(self)
end

LookupTable.sharedAccUpdateGradParameters = LookupTable.accUpdateGradParameters
