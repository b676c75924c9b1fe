-- nn.Index(dimension): input {t, indices (LongTensor)} -> t:index(dimension, indices).
local Index, parent = torch.class('nn.Index', 'nn.Module')

function Index:__init(dimension)
   parent.__init(self)
   self.dimension = dimension
   self.gradInput = {self.gradInput, self.gradInput.new()}
end

function Index:updateOutput(input)
   self.output:index(input[1], self.dimension, input[2])
   return self.output
end

function Index:updateGradInput(input, gradOutput)
   local g = self.gradInput[1]
   g:resizeAs(input[1]):zero()
   g:indexAdd(self.dimension, input[2], gradOutput)
   self.gradInput[2]:resize(input[2]:size()):zero()  -- indices have no gradient
   return self.gradInput
end

function Index:clearState()
   self.gradInput[1]:set()
   self.gradInput[2]:set()
   self.output:set()
   return self
end
