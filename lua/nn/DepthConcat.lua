-- nn.DepthConcat(dim): Concat that zero-pads smaller children's outputs, centred.
local DepthConcat, parent = torch.class('nn.DepthConcat', 'nn.Concat')

DepthConcat._padded = true

-- The window of the output where a child's output goes: every
-- non-concatenated dim is centred with start = floor((max - size) / 2) + 1.
function DepthConcat:windowNarrow(output, currentOutput, offset)
   local window = output:narrow(self.dimension, offset, currentOutput:size(self.dimension))
   for dim = 1, self.outputSize:size() do
      local size = currentOutput:size(dim)
      if dim ~= self.dimension and self.outputSize[dim] ~= size then
         local start = math.floor((self.outputSize[dim] - size) / 2) + 1
         window = window:narrow(dim, start, size)
      end
   end
   return window
end
DepthConcat._window = DepthConcat.windowNarrow

function DepthConcat:_growSize(childOutput)
   parent._growSize(self, childOutput)
   for dim = 1, self.outputSize:size() do
      if dim ~= self.dimension then
         self.outputSize[dim] = math.max(self.outputSize[dim], childOutput:size(dim))
      end
   end
end
