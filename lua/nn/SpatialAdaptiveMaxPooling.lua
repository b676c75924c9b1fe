-- nn.SpatialAdaptiveMaxPooling(W, H): max pooling to a fixed W x H output
-- whatever the input size; output cell o of n covers input rows
-- [floor(o*in/n), ceil((o+1)*in/n)). indices: Torch7's (2, [N,] C, H, W)
-- LongTensor (row, column of each maximum, 1-based within its window).
local SpatialAdaptiveMaxPooling, parent = torch.class('nn.SpatialAdaptiveMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialAdaptiveMaxPooling:__init(W, H)
   parent.__init(self)
   self.W = W
   self.H = H
end

function SpatialAdaptiveMaxPooling:updateOutput(input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   check(C.lt_nn_SpatialAdaptiveMaxPooling_updateOutput(input._c, self.output._c, self.indices._c, self.W,
         self.H), 2)
   return self.output
end

function SpatialAdaptiveMaxPooling:updateGradInput(input, gradOutput)
   check(C.lt_nn_SpatialAdaptiveMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.indices._c), 2)
   return self.gradInput
end

-- older name of clearState
function SpatialAdaptiveMaxPooling:empty()
   self:clearState()
end

function SpatialAdaptiveMaxPooling:clearState()
   if self.indices then self.indices:set() end
   return parent.clearState(self)
end
