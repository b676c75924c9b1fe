-- nn.VolumetricDilatedMaxPooling(kT, kW, kH, dT, dW, dH, padT=0, padW=0, padH=0,
-- dilationT=1, dilationW=1, dilationH=1): VolumetricMaxPooling with taps
-- `dilation` voxels apart.
local VolumetricDilatedMaxPooling, parent = torch.class('nn.VolumetricDilatedMaxPooling', 'nn.VolumetricMaxPooling')

function VolumetricDilatedMaxPooling:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH, dilationT, dilationW,
                                            dilationH)
   parent.__init(self, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   self.dilationT = dilationT or 1
   self.dilationW = dilationW or 1
   self.dilationH = dilationH or 1
end

function VolumetricDilatedMaxPooling:__tostring__()
   local s = parent.__tostring__(self)
   return s:sub(1, -2) .. ', ' .. self.dilationT .. ',' .. self.dilationW .. ',' .. self.dilationH .. ')'
end
