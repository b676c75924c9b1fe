-- cudnn.ClippedReLU(ceiling, inplace=false): y = min(max(x, 0), ceiling), nn.HardTanh(0, ceiling)'s kernels.
local Clipped, parent = torch.class('cudnn.ClippedReLU', 'nn.HardTanh')

function Clipped:__init(ceiling, inplace)
   if not ceiling then error('cudnn.ClippedReLU: no ceiling was given (cudnn.ClippedReLU(ceiling, inplace))', 2) end
   parent.__init(self, 0, ceiling, inplace or false)
   self.ceiling = ceiling
end

-- files written by cudnn.torch carry only ceiling and inplace
local function fillFields(self)
   self.min_val, self.max_val = 0, self.ceiling
   self.inplace = self.inplace or false
end

function Clipped:updateOutput(input)
   fillFields(self)
   return parent.updateOutput(self, input)
end

function Clipped:updateGradInput(input, gradOutput)
   fillFields(self)
   return parent.updateGradInput(self, input, gradOutput)
end

Clipped.__tostring__ = cudnn._plainName
cudnn._withoutDescriptors(Clipped, parent)
