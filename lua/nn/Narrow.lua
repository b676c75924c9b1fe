-- nn.Narrow(dimension, offset, length): input:narrow(dimension, offset, length).
-- A negative dimension counts from the end.
local Narrow, parent = torch.class('nn.Narrow', 'nn.Module')

function Narrow:__init(dimension, offset, length)
   parent.__init(self)
   self.dimension = dimension
   self.index = offset
   self.length = length or 1
   if not dimension or not offset then error('nn.Narrow(dimension, offset, length)') end
end

-- A negative length counts from the end; a negative offset (Torch7's rule) takes the window
-- from the start, dropping `length` elements at the end.
function Narrow:_resolve(input)
   local dim = self.dimension < 0 and input:dim() + self.dimension + 1 or self.dimension
   local size = input:size(dim)
   local length = self.length
   if length < 0 then length = size - self.index + length + 2 end
   local index = self.index
   if index < 0 then
      index = 1
      length = size - length
   end
   return dim, index, length
end

function Narrow:updateOutput(input)
   local dim, index, length = self:_resolve(input)
   local window = input:narrow(dim, index, length)
   self.output = self.output:typeAs(window)
   self.output:resizeAs(window):copy(window)
   return self.output
end

function Narrow:updateGradInput(input, gradOutput)
   local dim, index, length = self:_resolve(input)
   self.gradInput = self.gradInput:typeAs(input)
   self.gradInput:resizeAs(input):zero()
   self.gradInput:narrow(dim, index, length):copy(gradOutput)
   return self.gradInput
end
