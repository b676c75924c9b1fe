-- nn.Parallel(inputDimension, outputDimension): child i gets input:select(inputDimension, i);
-- the outputs are concatenated along outputDimension.
local Parallel, parent = torch.class('nn.Parallel', 'nn.Container')

function Parallel:__init(inputDimension, outputDimension)
   parent.__init(self)
   self.modules = {}
   self.inputDimension = inputDimension
   self.outputDimension = outputDimension
end

function Parallel:updateOutput(input)
   local nModule = input:size(self.inputDimension)
   local outputs = {}
   self.totalOutputSize = self.totalOutputSize or torch.LongStorage()
   local total = self.totalOutputSize
   for i = 1, nModule do
      local out = self:rethrowErrors(self.modules[i], i, 'updateOutput', input:select(self.inputDimension, i))
      outputs[i] = out
      if i == 1 then
         total:resize(out:dim()):copy(out:size())
      else
         total[self.outputDimension] = total[self.outputDimension] + out:size(self.outputDimension)
      end
   end
   self.output:resize(total)
   local offset = 1
   for i = 1, nModule do
      local n = outputs[i]:size(self.outputDimension)
      self.output:narrow(self.outputDimension, offset, n):copy(outputs[i])
      offset = offset + n
   end
   return self.output
end

-- Runs `method` of each child on its slices; updateGradInput/backward fill gradInput.
local function eachChild(self, method, input, gradOutput, scale)
   local fillGrad = method == 'updateGradInput' or method == 'backward'
   if fillGrad then self.gradInput:resizeAs(input) end
   local offset = 1
   for i = 1, input:size(self.inputDimension) do
      local module = self.modules[i]
      local n = module.output:size(self.outputDimension)
      local g = gradOutput:narrow(self.outputDimension, offset, n)
      local r = self:rethrowErrors(module, i, method, input:select(self.inputDimension, i), g, scale)
      if fillGrad then self.gradInput:select(self.inputDimension, i):copy(r) end
      offset = offset + n
   end
end

function Parallel:updateGradInput(input, gradOutput)
   eachChild(self, 'updateGradInput', input, gradOutput)
   return self.gradInput
end

function Parallel:accGradParameters(input, gradOutput, scale)
   eachChild(self, 'accGradParameters', input, gradOutput, scale or 1)
end

function Parallel:backward(input, gradOutput, scale)
   eachChild(self, 'backward', input, gradOutput, scale or 1)
   return self.gradInput
end

function Parallel:accUpdateGradParameters(input, gradOutput, lr)
   eachChild(self, 'accUpdateGradParameters', input, gradOutput, lr)
end

function Parallel:__tostring__()
   return nn._branchesToString(self, torch.type(self))
end
