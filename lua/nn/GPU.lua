-- nn.GPU(module, device, outdevice=device): runs `module` on a GPU in Torch7.
-- luatorch has no CUDA tensors, so this keeps Torch7's fields (device,
-- outdevice, modules) and file layout and behaves as a plain wrapper: every call
-- goes to the module on the CPU.
local GPU, parent = torch.class('nn.GPU', 'nn.Container')

function GPU:__init(module, device, outdevice)
   parent.__init(self)
   assert(torch.type(device) == 'number', 'nn.GPU(module, device[, outdevice]): device must be a number')
   assert(torch.isTypeOf(module, 'nn.Module'), 'nn.GPU(module, device): module must be an nn.Module')
   self.device = device
   self.outdevice = outdevice or device
   self.modules[1] = module
end

function GPU:setDevice(device)
   self.device = device or self.device
   return self
end

function GPU:updateOutput(input)
   self.output = self.modules[1]:updateOutput(input)
   return self.output
end

function GPU:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   return self.gradInput
end

function GPU:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(input, gradOutput, scale)
end

function GPU:type(type, typecache)
   if type and type:find('torch%.Cuda.*Tensor') then
      error('nn.GPU: ' .. type .. ' is not available in luatorch (no CUDA); keep the module on the CPU')
   end
   self.output, self.gradInput, self._input, self._gradOutput = nil, nil, nil, nil
   parent.type(self, type, typecache)
   return self
end

function GPU:clearState()
   nn.utils.clear(self, 'output', 'gradInput')
   self._input, self._gradOutput = nil, nil
   return parent.clearState(self)
end

function GPU:__tostring__()
   local inner = self.modules[1].__tostring__ and tostring(self.modules[1]) or torch.type(self.modules[1])
   return torch.type(self) .. '(' .. self.device .. ') @ ' .. inner
end
