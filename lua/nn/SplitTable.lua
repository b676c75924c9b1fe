-- nn.SplitTable(dimension, nInputDims): the slices of the input along `dimension`, as a table.
local SplitTable, parent = torch.class('nn.SplitTable', 'nn.Module')

function SplitTable:__init(dimension, nInputDims)
   parent.__init(self)
   self.dimension = dimension
   self.nInputDims = nInputDims
end

function SplitTable:_getPositiveDimension(input)
   local dim = self.dimension
   if dim < 0 then
      dim = input:dim() + dim + 1
   elseif self.nInputDims and input:dim() == self.nInputDims + 1 then
      dim = dim + 1
   end
   return dim
end

function SplitTable:updateOutput(input)
   local dim = self:_getPositiveDimension(input)
   local n = input:size(dim)
   if type(self.output) ~= 'table' then self.output = {} end
   for i = 1, n do self.output[i] = input:select(dim, i) end
   for i = n + 1, #self.output do self.output[i] = nil end
   return self.output
end

function SplitTable:updateGradInput(input, gradOutput)
   local dim = self:_getPositiveDimension(input)
   if self.gradInput then
      self.gradInput:resizeAs(input)
      for i = 1, input:size(dim) do
         self.gradInput:select(dim, i):copy(gradOutput[i])
      end
   end
   return self.gradInput
end
