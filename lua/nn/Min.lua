-- nn.Min(dimension, nInputDims): the minimum over `dimension` (dropped from the output);
-- the gradient goes to the position of the minimum.
local Min, parent = torch.class('nn.Min', 'nn.Max')

function Min:__init(dimension, nInputDims)
   parent.__init(self, dimension, nInputDims)
end

function Min:updateOutput(input)
   return self:_reduce(input, 'min')
end
