-- nn.Mean(dimension, nInputDims, squeeze): the mean over `dimension` (a Sum that divides).
local Mean, parent = torch.class('nn.Mean', 'nn.Sum')

function Mean:__init(dimension, nInputDims, squeeze)
   parent.__init(self, dimension, nInputDims, true, squeeze)
end
