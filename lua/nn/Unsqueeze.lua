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
   -- As Torch7: when numInputDims was not given, the first input fixes it (and it is kept,
   -- so it is in saved files); a later input with more dims has that many batch dims.
   self.numInputDims = self.numInputDims or input:dim()
   if input:dim() < self.numInputDims then
      error(string.format('nn.Unsqueeze: the input has %d dims, fewer than numInputDims (%d)',
                          input:dim(), self.numInputDims))
   end
   local actual = self.pos + input:dim() - self.numInputDims  -- skip the batch dims
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
