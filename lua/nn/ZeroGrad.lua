-- nn.ZeroGrad: identity forward; the gradient is zero (tables too).
local ZeroGrad, parent = torch.class('nn.ZeroGrad', 'nn.Module')

function ZeroGrad:updateOutput(input)
   self.output:set(input)
   return self.output
end

function ZeroGrad:updateGradInput(input, gradOutput)
   self.gradInput = nn.utils.recursiveResizeAs(self.gradInput, input)
   self.gradInput = nn.utils.recursiveFill(self.gradInput, 0)
   return self.gradInput
end
