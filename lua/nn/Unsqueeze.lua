-- nn.Unsqueeze(pos, numInputDims): inserts a singleton dimension at `pos`
-- (shifted past the leading batch dims when the input has more than numInputDims).
local Unsqueeze, parent = torch.class('nn.Unsqueeze', 'nn.Module')

function Unsqueeze:__init(pos, numInputDims)
   parent.__init(self)
   self.pos = pos or error('nn.Unsqueeze(pos, numInputDims): pos is required')
   self:setNumInputDims(numInputDims)
end

function Unsqueeze:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

function Unsqueeze:updateOutput(input)
   local actual = self.pos
   if self.numInputDims then
      if input:dim() < self.numInputDims then
         error(string.format('nn.Unsqueeze: the input has %d dims, fewer than numInputDims (%d)',
                             input:dim(), self.numInputDims))
      end
      actual = actual + input:dim() - self.numInputDims  -- skip the batch dims
   end
   if actual < 1 or actual > input:dim() + 1 then
      error(string.format('nn.Unsqueeze: position %d is out of range for a %dD input', actual, input:dim()))
   end
   nn.utils.addSingletonDimension(self.output, input, actual)
   return self.output
end

function Unsqueeze:updateGradInput(input, gradOutput)
   assert(input:nElement() == gradOutput:nElement())
   self.gradInput:view(gradOutput, input:size())
   return self.gradInput
end

function Unsqueeze:__tostring__()
   return torch.type(self) .. '(dim ' .. self.pos .. ')'
end
