-- nn.JoinTable(dimension, nInputDims): concatenates a table of tensors along `dimension`.
-- With nInputDims, a batch dimension in front shifts `dimension` by one; a negative
-- dimension counts from the end.
local JoinTable, parent = torch.class('nn.JoinTable', 'nn.Module')

function JoinTable:__init(dimension, nInputDims)
   parent.__init(self)
   self.size = torch.LongStorage()
   self.dimension = dimension
   self.gradInput = {}
   self.nInputDims = nInputDims
end

function JoinTable:_getPositiveDimension(input)
   local dim = self.dimension
   if dim < 0 then
      dim = input[1]:dim() + dim + 1
   elseif self.nInputDims and input[1]:dim() == self.nInputDims + 1 then
      dim = dim + 1
   end
   return dim
end

function JoinTable:updateOutput(input)
   local dim = self:_getPositiveDimension(input)
   local total = 0
   for i = 1, #input do
      local t = input[i]
      if i == 1 then self.size:resize(t:dim()):copy(t:size()) end
      total = total + t:size(dim)
   end
   self.size[dim] = total
   self.output:resize(self.size)
   local offset = 1
   for i = 1, #input do
      local n = input[i]:size(dim)
      self.output:narrow(dim, offset, n):copy(input[i])
      offset = offset + n
   end
   return self.output
end

function JoinTable:updateGradInput(input, gradOutput)
   local dim = self:_getPositiveDimension(input)
   local offset = 1
   for i = 1, #input do
      local n = input[i]:size(dim)
      self.gradInput[i] = self.gradInput[i] or input[i].new()
      self.gradInput[i]:resizeAs(input[i]):copy(gradOutput:narrow(dim, offset, n))
      offset = offset + n
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end

function JoinTable:type(type, tensorCache)
   self.gradInput = {}
   return parent.type(self, type, tensorCache)
end
