-- nn.ConcatTable: every child sees the same input; the output is the table of outputs.
local ConcatTable, parent = torch.class('nn.ConcatTable', 'nn.Container')

function ConcatTable:__init()
   parent.__init(self)
   self.modules = {}
   self.output = {}
end

function ConcatTable:updateOutput(input)
   for i = 1, #self.modules do
      self.output[i] = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
   end
   for i = #self.modules + 1, #self.output do self.output[i] = nil end
   return self.output
end

-- gradInput = sum over children of their gradInputs (tensors or nested tables).
local function accumulate(self, i, gradInput, childGrad)
   if i == 1 then
      return nn.utils.recursiveCopy(gradInput, childGrad)
   end
   return nn.utils.recursiveAdd(gradInput, childGrad)
end

function ConcatTable:_backwardEach(method, input, gradOutput, scale)
   for i, module in ipairs(self.modules) do
      local g = self:rethrowErrors(module, i, method, input, gradOutput[i], scale)
      if g then self.gradInput = accumulate(self, i, self.gradInput, g) end
   end
   if type(input) == 'table' and type(self.gradInput) == 'table' then
      for k = #input + 1, #self.gradInput do self.gradInput[k] = nil end  -- a shorter input than before
   end
   return self.gradInput
end

function ConcatTable:updateGradInput(input, gradOutput)
   return self:_backwardEach('updateGradInput', input, gradOutput)
end

function ConcatTable:backward(input, gradOutput, scale)
   return self:_backwardEach('backward', input, gradOutput, scale or 1)
end

function ConcatTable:accGradParameters(input, gradOutput, scale)
   for i, module in ipairs(self.modules) do
      self:rethrowErrors(module, i, 'accGradParameters', input, gradOutput[i], scale or 1)
   end
end

function ConcatTable:accUpdateGradParameters(input, gradOutput, lr)
   for i, module in ipairs(self.modules) do
      self:rethrowErrors(module, i, 'accUpdateGradParameters', input, gradOutput[i], lr)
   end
end

function ConcatTable:zeroGradParameters()
   for _, module in ipairs(self.modules) do module:zeroGradParameters() end
end

function ConcatTable:__tostring__()
   return nn._branchesToString(self, torch.type(self))
end
