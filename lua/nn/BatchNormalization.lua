-- nn.BatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true) on (N, C)
-- inputs; nn.SpatialBatchNormalization is the same on (N, C, H, W).
-- Train: batch mean and biased variance normalize; running_var is updated
-- with the unbiased variance. A batch of one sample in train mode uses the
-- running statistics, as Torch7 did. reset(): weight ~ U(0, 1), bias 0.
local BN, parent = torch.class('nn.BatchNormalization', 'nn.Module')
local C = torch.C
local check = torch._check

BN.__version = 2
BN.nDim = 2  -- expected input dimension

function BN:__init(nOutput, eps, momentum, affine)
   parent.__init(self)
   assert(nOutput and type(nOutput) == 'number', 'Missing argument #1: dimensionality of input. ')
   assert(nOutput ~= 0, 'To set affine=false call BatchNormalization(nOutput,  eps, momentum, false) ')
   if affine ~= nil then
      assert(type(affine) == 'boolean', 'affine has to be true/false')
      self.affine = affine
   else
      self.affine = true
   end
   self.eps = eps or 1e-5
   self.train = true
   self.momentum = momentum or 0.1
   self.running_mean = torch.zeros(nOutput)
   self.running_var = torch.ones(nOutput)
   if self.affine then
      self.weight = torch.Tensor(nOutput)
      self.bias = torch.Tensor(nOutput)
      self.gradWeight = torch.Tensor(nOutput)
      self.gradBias = torch.Tensor(nOutput)
      self:reset()
   end
end

function BN:reset()
   if self.weight then self.weight:uniform() end
   if self.bias then self.bias:zero() end
   self.running_mean:zero()
   self.running_var:fill(1)
end

-- In evaluate mode a single sample (one dimension short) is accepted, as Torch7.
function BN:checkInputDim(input)
   local nDim, iDim = self.nDim, input:dim()
   if iDim ~= nDim and not (iDim == nDim - 1 and self.train == false) then
      error(string.format('only mini-batch supported (%dD tensor), got %dD tensor instead', nDim, iDim), 3)
   end
   local featDim = iDim == nDim - 1 and 1 or 2
   if input:size(featDim) ~= self.running_mean:nElement() then
      error(string.format('got %d-feature tensor, expected %d', input:size(featDim), self.running_mean:nElement()), 3)
   end
end

-- A single evaluate-mode sample seen as a batch of one (a view, no copy).
local function asBatch(self, t)
   if t and self.train == false and t:dim() == self.nDim - 1 then
      return nn.utils.addSingletonDimension(t, 1)
   end
   return t
end

local function opt(t) return t and t._c or nil end

-- Torch7 used batch statistics only for batches of more than one sample.
local function useBatchStats(self, input)
   return self.train ~= false and input:size(1) > 1
end

-- for cunn's GPU version (lua/cunn/gpu.lua), which follows the same rules
BN._asBatch, BN._useBatchStats = asBatch, useBatchStats

function BN:updateOutput(input)
   self:checkInputDim(input)
   input = asBatch(self, input)
   self.output:resizeAs(input)
   -- (sized as the running statistics even where the batch's are not computed, as Torch7's)
   self.save_mean = (self.save_mean or input.new()):resizeAs(self.running_mean)
   self.save_std = (self.save_std or input.new()):resizeAs(self.running_var)
   check(C.lt_nn_BatchNormalization_updateOutput(input._c, self.output._c, opt(self.weight), opt(self.bias),
         self.running_mean._c, self.running_var._c, self.save_mean._c, self.save_std._c,
         useBatchStats(self, input) and 1 or 0, self.momentum, self.eps), 2)
   return self.output
end

local function backward(self, input, gradOutput, scale, gradInput, gradWeight, gradBias)
   self:checkInputDim(input)
   input, gradOutput = asBatch(self, input), asBatch(self, gradOutput)
   if gradOutput:dim() ~= input:dim() or gradOutput:nElement() ~= input:nElement() then
      error('gradOutput and input must have the same size', 3)
   end
   scale = scale or 1
   if gradInput then gradInput:resizeAs(gradOutput) end
   check(C.lt_nn_BatchNormalization_backward(input._c, gradOutput._c, opt(gradInput), opt(gradWeight),
         opt(gradBias), opt(self.weight), self.running_mean._c, self.running_var._c, opt(self.save_mean),
         opt(self.save_std), useBatchStats(self, input) and 1 or 0, scale, self.eps), 3)
   return self.gradInput
end

function BN:backward(input, gradOutput, scale)
   return backward(self, input, gradOutput, scale, self.gradInput, self.gradWeight, self.gradBias)
end

function BN:updateGradInput(input, gradOutput)
   return backward(self, input, gradOutput, 1, self.gradInput)
end

function BN:accGradParameters(input, gradOutput, scale)
   return backward(self, input, gradOutput, scale, nil, self.gradWeight, self.gradBias)
end

-- Files written before version 2 stored running_std = 1/sqrt(var + eps).
function BN:read(file, version)
   parent.read(self, file)
   if version and version < 2 and self.running_std then
      self.running_var = self.running_std:pow(-2):add(-self.eps)
      self.running_std = nil
   end
end

function BN:clearState()
   nn.utils.clear(self, {'output', 'gradInput', 'save_mean', 'save_std'})
   return self
end

function BN:__tostring__()
   return string.format('%s (%dD) (%d)', torch.type(self), self.nDim, self.running_mean:nElement())
end
