-- nn.DepthConcat(dim): Concat that zero-pads smaller children's outputs, centred.
local DepthConcat, parent = torch.class('nn.DepthConcat', 'nn.Concat')

-- The window of the output where a child's output of `size` goes: every
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

function DepthConcat:updateOutput(input)
   local outs = {}
   for i = 1, #self.modules do
      local out = self:rethrowErrors(self.modules[i], i, 'updateOutput', input)
      outs[i] = out
      if i == 1 then
         self.outputSize:resize(out:dim()):copy(out:size())
      else
         self.outputSize[self.dimension] = self.outputSize[self.dimension] + out:size(self.dimension)
         for dim = 1, self.outputSize:size() do
            if dim ~= self.dimension then
               self.outputSize[dim] = math.max(self.outputSize[dim], out:size(dim))
            end
         end
      end
   end
   self.output:resize(self.outputSize):zero()
   local offset = 1
   for i = 1, #outs do
      self:windowNarrow(self.output, outs[i], offset):copy(outs[i])
      offset = offset + outs[i]:size(self.dimension)
   end
   return self.output
end

function DepthConcat:_eachSlice(method, input, gradOutput, scale, collect)
   if collect then self.gradInput:resizeAs(input) end
   local offset = 1
   for i, module in ipairs(self.modules) do
      local out = module.output
      local slice = self:windowNarrow(gradOutput, out, offset)
      local g = self:rethrowErrors(module, i, method, input, slice, scale)
      if collect and g then
         if i == 1 then self.gradInput:copy(g) else self.gradInput:add(g) end
      end
      offset = offset + out:size(self.dimension)
   end
   return self.gradInput
end
