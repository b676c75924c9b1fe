-- nn.SpatialConvolutionMM(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=padW):
-- Torch7's im2col convolution with its weight kept as a (nOut, nIn*kH*kW) matrix. It runs
-- nn.SpatialConvolution's kernel (which takes either weight layout), but is not a subclass of
-- it, as in Torch7.
local SpatialConvolutionMM, parent = torch.class('nn.SpatialConvolutionMM', 'nn.Module')

function SpatialConvolutionMM:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH)
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
   self.bias = torch.Tensor(nOutputPlane)
   self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane * kH * kW)
   self.gradBias = torch.Tensor(nOutputPlane)
   self:reset()
end

-- The same arithmetic, buffers, reset, printing and clearState as nn.SpatialConvolution.
for _, name in ipairs {'noBias', 'reset', 'updateOutput', 'updateGradInput', 'accGradParameters', 'type',
                       '__tostring__', 'clearState'} do
   SpatialConvolutionMM[name] = nn.SpatialConvolution[name]
end
