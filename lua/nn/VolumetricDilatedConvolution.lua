-- nn.VolumetricDilatedConvolution(nInputPlane, nOutputPlane, kT, kW, kH, dT=1, dW=1, dH=1,
--     padT=0, padW=padT, padH=padW, dilationT=1, dilationW=1, dilationH=1): VolumetricConvolution
-- whose kernel taps are dilation apart.
local VolumetricDilatedConvolution, parent =
   torch.class('nn.VolumetricDilatedConvolution', 'nn.VolumetricConvolution')

function VolumetricDilatedConvolution:__init(nInputPlane, nOutputPlane, kT, kW, kH, dT, dW, dH, padT, padW, padH,
                                             dilationT, dilationW, dilationH)
   parent.__init(self, nInputPlane, nOutputPlane, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   self.dilationT = dilationT or 1
   self.dilationW = dilationW or 1
   self.dilationH = dilationH or 1
end

function VolumetricDilatedConvolution:__tostring__()
   local s = self:_describe() .. ', ' .. self.dilationT .. ',' .. self.dilationW .. ',' .. self.dilationH
   return s .. (self.bias and ')' or ') without bias')
end
