-- nn.Sum(dimension, nInputDims, sizeAverage, squeeze): the sum (or mean) over `dimension`.
-- A negative dimension counts from the end; squeeze (default true) drops the summed dim.
local Sum, parent = torch.class('nn.Sum', 'nn.Module')

function Sum:__init(dimension, nInputDims, sizeAverage, squeeze)
   parent.__init(self)
   self.dimension = dimension or 1
   self.nInputDims = nInputDims
   self.sizeAverage = sizeAverage or false
   if squeeze ~= nil then
      assert(type(squeeze) == 'boolean', 'squeeze has to be true/false')
      self.squeeze = squeeze
   else
      self.squeeze = true
   end
end

function Sum:_getPositiveDimension(input)
   local dim = self.dimension
   if dim < 0 then
      dim = input:dim() + dim + 1
   elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
      dim = dim + 1
   end
   assert(input:dim() >= dim, 'dimension exceeds input dimensions')
   return dim
end

function Sum:updateOutput(input)
   local dim = self:_getPositiveDimension(input)
   if type(self.output) == 'number' then self.output = input.new() end
   self.output:sum(input, dim)
   if self.sizeAverage then self.output:div(input:size(dim)) end
   if self.squeeze and self.output:nDimension() > 1 then
      self.output:set(self.output:select(dim, 1))
   end
   return self.output
end

function Sum:updateGradInput(input, gradOutput)
   local dim = self:_getPositiveDimension(input)
   -- gradOutput with the summed dim put back (size 1), expanded over it
   local size = input:size()
   size[dim] = 1
   local g = gradOutput
   if not g:isContiguous() then
      self._gradOutput = self._gradOutput or gradOutput.new()
      self._gradOutput:resizeAs(gradOutput):copy(gradOutput)
      g = self._gradOutput
   end
   g = g:view(size)
   self.gradInput:resizeAs(input):copy(g:expandAs(input))
   if self.sizeAverage then self.gradInput:div(input:size(dim)) end
   return self.gradInput
end

function Sum:clearState()
   nn.utils.clear(self, '_gradOutput')
   return parent.clearState(self)
end
