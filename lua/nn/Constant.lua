-- nn.Constant(value, nInputDim): outputs `value` (number or tensor) whatever the
-- input; with an input of more than nInputDim dims, one copy per sample.
local Constant, parent = torch.class('nn.Constant', 'nn.Module')

function Constant:__init(value, nInputDim)
   if torch.type(value) == 'number' then value = torch.Tensor{value} end
   if not torch.isTensor(value) then error('nn.Constant(value, nInputDim): value must be a number or a tensor') end
   self.value = value
   self.nInputDim = nInputDim
   parent.__init(self)
end

function Constant:updateOutput(input)
   if self.nInputDim and input:dim() > self.nInputDim then
      local vsize = self.value:size():totable()
      self.output:resize(input:size(1), table.unpack(vsize))
      self.output:copy(self.value:view(1, table.unpack(vsize)):expandAs(self.output))
   else
      self.output:resize(self.value:size()):copy(self.value)
   end
   return self.output
end

function Constant:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(input):zero()
   return self.gradInput
end
