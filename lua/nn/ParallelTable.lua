-- nn.ParallelTable: child i is applied to input[i]; the output is the table of outputs.
local ParallelTable, parent = torch.class('nn.ParallelTable', 'nn.Container')

function ParallelTable:__init()
   parent.__init(self)
   self.modules = {}
   self.output = {}
   self.gradInput = {}
end

function ParallelTable:updateOutput(input)
   for i = 1, #self.modules do
      self.output[i] = self:rethrowErrors(self.modules[i], i, 'updateOutput', input[i])
   end
   return self.output
end

function ParallelTable:updateGradInput(input, gradOutput)
   for i, module in ipairs(self.modules) do
      self.gradInput[i] = self:rethrowErrors(module, i, 'updateGradInput', input[i], gradOutput[i])
   end
   return self.gradInput
end

function ParallelTable:accGradParameters(input, gradOutput, scale)
   for i, module in ipairs(self.modules) do
      self:rethrowErrors(module, i, 'accGradParameters', input[i], gradOutput[i], scale or 1)
   end
end

function ParallelTable:backward(input, gradOutput, scale)
   for i, module in ipairs(self.modules) do
      self.gradInput[i] = self:rethrowErrors(module, i, 'backward', input[i], gradOutput[i], scale or 1)
   end
   return self.gradInput
end

function ParallelTable:accUpdateGradParameters(input, gradOutput, lr)
   for i, module in ipairs(self.modules) do
      self:rethrowErrors(module, i, 'accUpdateGradParameters', input[i], gradOutput[i], lr)
   end
end

function ParallelTable:__tostring__()
   return nn._branchesToString(self, torch.type(self))
end
