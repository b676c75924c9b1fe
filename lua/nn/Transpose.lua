-- nn.Transpose({d1, d2}, {d3, d4}, ...): swaps the dimension pairs in order.
-- numInputDims (field) shifts the pairs when the input has a batch dimension in front.
local Transpose, parent = torch.class('nn.Transpose', 'nn.Module')

function Transpose:__init(...)
   parent.__init(self)
   self.permutations = {...}
   self.numInputDims = nil
end

function Transpose:setNumInputDims(numInputDims)
   self.numInputDims = numInputDims
   return self
end

local function apply(self, t, reverse)
   local shift = (self.numInputDims and t:dim() > self.numInputDims) and t:dim() - self.numInputDims or 0
   local n = #self.permutations
   for k = 1, n do
      local p = self.permutations[reverse and n - k + 1 or k]
      t = t:transpose(p[1] + shift, p[2] + shift)
   end
   return t
end

function Transpose:updateOutput(input)
   self.output:set(apply(self, input, false))
   return self.output
end

function Transpose:updateGradInput(input, gradOutput)
   self.gradInput:set(apply(self, gradOutput, true))
   return self.gradInput
end
