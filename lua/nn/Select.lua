-- nn.Select(dimension, index): input:select(dimension, index); negatives count from the end.
local Select, parent = torch.class('nn.Select', 'nn.Module')

function Select:__init(dimension, index)
   parent.__init(self)
   self.dimension = dimension
   self.index = index
end

function Select:_resolve(input)
   local dim = self.dimension < 0 and input:dim() + self.dimension + 1 or self.dimension
   local index = self.index < 0 and input:size(dim) + self.index + 1 or self.index
   return dim, index
end

function Select:updateOutput(input)
   local dim, index = self:_resolve(input)
   self.output:resizeAs(input:select(dim, index)):copy(input:select(dim, index))
   return self.output
end

function Select:updateGradInput(input, gradOutput)
   local dim, index = self:_resolve(input)
   self.gradInput:resizeAs(input):zero()
   self.gradInput:select(dim, index):copy(gradOutput)
   return self.gradInput
end
