-- nn.VolumetricAveragePooling(kT, kW, kH, dT=kT, dW=kW, dH=kH): average over
-- kT x kH x kW windows of (C, T, H, W) / (N, C, T, H, W) inputs, no padding.
local VolumetricAveragePooling, parent = torch.class('nn.VolumetricAveragePooling', 'nn.Module')
local C = torch.C
local check = torch._check

function VolumetricAveragePooling:__init(kT, kW, kH, dT, dW, dH)
   parent.__init(self)
   self.kT = kT
   self.kH = kH
   self.kW = kW
   self.dT = dT or kT
   self.dW = dW or kW
   self.dH = dH or kH
end

function VolumetricAveragePooling:updateOutput(input)
   check(C.lt_nn_VolumetricAveragePooling_updateOutput(input._c, self.output._c, self.kT, self.kW, self.kH,
         self.dT, self.dW, self.dH), 2)
   return self.output
end

function VolumetricAveragePooling:updateGradInput(input, gradOutput)
   check(C.lt_nn_VolumetricAveragePooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.kT,
         self.kW, self.kH, self.dT, self.dW, self.dH), 2)
   return self.gradInput
end

-- older name of clearState
function VolumetricAveragePooling:empty()
   return parent.clearState(self)
end

VolumetricAveragePooling.__tostring__ = nn.VolumetricMaxPooling.__tostring__
