-- nn.SpatialLogSoftMax: LogSoftMax over the feature planes at every spatial position of a
-- C x H x W or N x C x H x W input (the LogSoftMax kernel handles these shapes).
local SpatialLogSoftMax, parent = torch.class('nn.SpatialLogSoftMax', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialLogSoftMax:updateOutput(input)
   check(C.lt_nn_LogSoftMax_updateOutput(input._c, self.output._c), 2)
   return self.output
end

function SpatialLogSoftMax:updateGradInput(input, gradOutput)
   check(C.lt_nn_LogSoftMax_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.output._c), 2)
   return self.gradInput
end
