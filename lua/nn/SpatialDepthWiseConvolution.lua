-- nn.SpatialDepthWiseConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=padW):
-- each input plane i convolved on its own with nOutputPlane kernels (nOutputPlane is the depth
-- multiplier): nInputPlane*nOutputPlane output planes, plane (i-1)*nOutputPlane + m from
-- weight[m][i] and bias[m][i]. weight (nOutputPlane, nInputPlane*kH*kW), bias (nOutputPlane,
-- nInputPlane), as Torch7.
local SpatialDepthWiseConvolution, parent = torch.class('nn.SpatialDepthWiseConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialDepthWiseConvolution:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   self.nInputPlane = nInputPlane
   self.nOutputPlane = nOutputPlane
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.padW = padW or 0
   self.padH = padH or self.padW
   self.weight = torch.Tensor(nOutputPlane, nInputPlane * kH * kW)
   self.bias = torch.Tensor(nOutputPlane, nInputPlane)
   self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane * kH * kW)
   self.gradBias = torch.Tensor(nOutputPlane, nInputPlane)
   self:reset()
end

function SpatialDepthWiseConvolution:updateOutput(input)
   -- files from before padW/padH existed
   if self.padding then
      self.padW, self.padH, self.padding = self.padding, self.padding, nil
   end
   check(C.lt_nn_SpatialDepthWiseConvolution_updateOutput(input._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH), 2)
   return self.output
end

function SpatialDepthWiseConvolution:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   check(C.lt_nn_SpatialDepthWiseConvolution_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.weight._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH), 2)
   return self.gradInput
end

function SpatialDepthWiseConvolution:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_SpatialDepthWiseConvolution_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH,
         scale or 1), 2)
end

-- noBias, reset (U(-1/sqrt(kW*kH*nIn), +)), type, printing and clearState as nn.SpatialConvolution.
for _, name in ipairs {'noBias', 'reset', 'type', '__tostring__', 'clearState'} do
   SpatialDepthWiseConvolution[name] = nn.SpatialConvolution[name]
end
