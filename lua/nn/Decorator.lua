-- nn.Decorator(module): wraps one module and forwards every call to it; subclasses
-- override what they change.
local Decorator, parent = torch.class('nn.Decorator', 'nn.Container')

function Decorator:__init(module)
   parent.__init(self)
   self.modules[1] = module
end

function Decorator:updateOutput(input)
   self.output = self.modules[1]:updateOutput(input)
   return self.output
end

function Decorator:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   return self.gradInput
end

function Decorator:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(input, gradOutput, scale)
end

function Decorator:accUpdateGradParameters(input, gradOutput, lr)
   self.modules[1]:accUpdateGradParameters(input, gradOutput, lr)
end

function Decorator:sharedAccUpdateGradParameters(input, gradOutput, lr)
   self.modules[1]:sharedAccUpdateGradParameters(input, gradOutput, lr)
end

function Decorator:__tostring__()
   if self.modules[1].__tostring__ then
      return torch.type(self) .. ' @ ' .. tostring(self.modules[1])
   end
   return torch.type(self) .. ' @ ' .. torch.type(self.modules[1])
end

