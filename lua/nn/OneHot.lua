-- nn.OneHot(outputSize): indices (a number, or a tensor of any shape) ->
-- one-hot rows along a new last dimension of outputSize.
local OneHot, parent = torch.class('nn.OneHot', 'nn.Module')

function OneHot:__init(outputSize)
   parent.__init(self)
   self.outputSize = outputSize
end

function OneHot:updateOutput(input)
   local size
   if type(input) == 'number' then
      self._single = self._single or torch.LongTensor():resize(1)
      self._single[1] = input
      input = self._single
      size = {}
   else
      size = input:size():totable()
   end
   size[#size + 1] = self.outputSize
   self.output:resize(table.unpack(size)):zero()
   size[#size] = 1
   -- scatter wants Long indices
   local index = input
   if torch.type(input) ~= 'torch.LongTensor' or not input:isContiguous() then
      self._input = self._input or torch.LongTensor()
      index = self._input:resize(input:size()):copy(input)
   end
   self.output:scatter(self.output:dim(), index:view(table.unpack(size)), 1)
   return self.output
end

-- Indices have no gradient (0 for a number input).
function OneHot:updateGradInput(input, gradOutput)
   if type(input) == 'number' then return 0 end
   self.gradInput:resize(input:size()):zero()
   return self.gradInput
end

function OneHot:clearState()
   self._single = nil
   self._input = nil
end

function OneHot:type(type, typecache)
   self:clearState()
   return parent.type(self, type, typecache)
end
