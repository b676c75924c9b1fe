-- nn.SpatialSoftMax: SoftMax over the feature planes at every spatial position of a
-- C x H x W or N x C x H x W input (the SoftMax kernel handles these shapes).
local SpatialSoftMax, parent = torch.class('nn.SpatialSoftMax', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialSoftMax:updateOutput(input)
   check(C.lt_nn_SoftMax_updateOutput(input._c, self.output._c), 2)
   return self.output
end

function SpatialSoftMax:updateGradInput(input, gradOutput)
   check(C.lt_nn_SoftMax_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.output._c), 2)
   return self.gradInput
end
