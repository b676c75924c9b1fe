-- nn.Max(dimension, nInputDims): the maximum over `dimension` (dropped from the output);
-- the gradient goes to the position of the maximum.
local Max, parent = torch.class('nn.Max', 'nn.Module')

function Max:__init(dimension, nInputDims)
   parent.__init(self)
   self.dimension = dimension or 1
   self.nInputDims = nInputDims
end

function Max:_getPositiveDimension(input)
   local dim = self.dimension
   if dim < 0 then
      dim = input:dim() + dim + 1
   elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
      dim = dim + 1
   end
   return dim
end

function Max:_lazyInit()
   self._output = self._output or self.output.new()
   if not self._indices or torch.type(self._indices) ~= 'torch.LongTensor' then
      self._indices = torch.LongTensor()
   end
end

-- Shared with nn.Min: `reduce` is 'max' or 'min'.
function Max:_reduce(input, reduce)
   self:_lazyInit()
   local dim = self:_getPositiveDimension(input)
   torch[reduce](self._output, self._indices, input, dim)
   if input:dim() > 1 then
      self.output:set(self._output:select(dim, 1))
   else
      self.output:set(self._output)
   end
   return self.output
end

function Max:updateOutput(input)
   return self:_reduce(input, 'max')
end

function Max:updateGradInput(input, gradOutput)
   self:_lazyInit()
   local dim = self:_getPositiveDimension(input)
   local g = input:dim() > 1 and nn.utils.addSingletonDimension(gradOutput, dim) or gradOutput
   self.gradInput:resizeAs(input):zero():scatter(dim, self._indices, g)
   return self.gradInput
end

function Max:type(type, tensorCache)
   -- the indices stay a LongTensor whatever the type
   if type == 'torch.CudaTensor' then
      parent.type(self, type, tensorCache)
   else
      local indices = self._indices
      self._indices = nil
      parent.type(self, type, tensorCache)
      self._indices = indices and indices:long() or nil
   end
   return self
end

function Max:clearState()
   nn.utils.clear(self, '_indices', '_output')
   return parent.clearState(self)
end
