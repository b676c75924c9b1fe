-- nn.SpatialAdaptiveAveragePooling(W, H): average pooling to a fixed W x H
-- output, with the windows of nn.SpatialAdaptiveMaxPooling.
local SpatialAdaptiveAveragePooling, parent = torch.class('nn.SpatialAdaptiveAveragePooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialAdaptiveAveragePooling:__init(W, H)
   parent.__init(self)
   self.W = W
   self.H = H
end

function SpatialAdaptiveAveragePooling:updateOutput(input)
   check(C.lt_nn_SpatialAdaptiveAveragePooling_updateOutput(input._c, self.output._c, self.W, self.H), 2)
   return self.output
end

function SpatialAdaptiveAveragePooling:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialAdaptiveAveragePooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c), 2)
   return self.gradInput
end

-- older name of clearState
function SpatialAdaptiveAveragePooling:empty()
   self:clearState()
end
