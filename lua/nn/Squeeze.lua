-- nn.Squeeze(dim, numInputDims): removes singleton dimensions (all, or only `dim`).
-- With numInputDims, an input with more dimensions has a batch dimension in front.
local Squeeze, parent = torch.class('nn.Squeeze', 'nn.Module')

function Squeeze:__init(dim, numInputDims)
   parent.__init(self)
   self.dim = dim
   self:setNumInputDims(numInputDims)
end

function Squeeze:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

function Squeeze:updateOutput(input)
   assert(input and torch.isTensor(input), 'Squeeze only works on tensors')
   local dim = self.dim
   local addone = false
   if self.numInputDims and input:dim() == self.numInputDims + 1 then
      if dim then
         dim = dim + 1
      elseif input:size(1) == 1 then
         addone = true  -- keep a batch of one
      end
   end
   self.output:set(dim and input:squeeze(dim) or input:squeeze())
   if addone then nn.utils.addSingletonDimension(self.output, self.output, 1) end
   return self.output
end

function Squeeze:updateGradInput(input, gradOutput)
   assert(input and torch.isTensor(input), 'Squeeze only works on tensors')
   assert(gradOutput:nElement() == input:nElement())
   self.gradInput:set(gradOutput:contiguous():view(input:size()))
   return self.gradInput
end
