-- nn.SpatialCrossMapLRN(size, alpha=1e-4, beta=0.75, k=1): local response
-- normalization across channels of (C, H, W) / (N, C, H, W) inputs:
-- y = x * (k + alpha/size * sum of x^2 over `size` neighbouring channels)^-beta.
-- self.scale keeps the bracket for the backward pass.
local SpatialCrossMapLRN, parent = torch.class('nn.SpatialCrossMapLRN', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialCrossMapLRN:__init(size, alpha, beta, k)
   parent.__init(self)
   self.size = size
   self.alpha = alpha or 0.0001
   self.beta = beta or 0.75
   self.k = k or 1
end

function SpatialCrossMapLRN:updateOutput(input)
   self.scale = self.scale or input.new()
   check(C.lt_nn_SpatialCrossMapLRN_updateOutput(input._c, self.output._c, self.scale._c, self.size, self.alpha,
         self.beta, self.k), 2)
   return self.output
end

function SpatialCrossMapLRN:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialCrossMapLRN_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.scale._c,
         self.output._c, self.size, self.alpha, self.beta, self.k), 2)
   return self.gradInput
end

function SpatialCrossMapLRN:clearState()
   nn.utils.clear(self, 'scale', 'paddedRatio', 'accumRatio')
   return parent.clearState(self)
end
