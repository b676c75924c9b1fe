-- nn.CAdd(size...): y = x + b with a learned tensor b of the given size (or a
-- LongStorage), broadcast as nn.CMul broadcasts its weight.
local CAdd, parent = torch.class('nn.CAdd', 'nn.Module')

function CAdd:__init(...)
   parent.__init(self)
   self.size = nn._pointwise_size_of(...)
   self.bias = torch.Tensor(self.size)
   self.gradBias = torch.Tensor(self.size)
   self.output:resize(self.size)
   self:reset()
end

function CAdd:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.bias:nElement())
   end
   self.bias:uniform(-stdv, stdv)
end

function CAdd:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if input:nElement() == self.bias:nElement() then
      self.output:view(-1):add(self.bias:contiguous():view(-1))
   elseif self.bias:dim() == input:dim() then
      self.output:add(self.bias:expandAs(self.output))
   else
      local out = self.output:view(input:size(1), -1)
      out:add(self.bias:view(1, -1):expandAs(out))
   end
   return self.output
end

function CAdd:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   return self.gradInput
end

function CAdd:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if self.bias:nElement() == gradOutput:nElement() then
      self.gradBias:view(-1):add(scale, gradOutput:contiguous():view(-1))
   elseif self.bias:dim() == gradOutput:dim() then
      local s = gradOutput
      for i = 1, self.bias:dim() do
         if self.bias:size(i) ~= gradOutput:size(i) then s = s:sum(i) end
      end
      self.gradBias:add(scale, s)
   else
      self.gradBias:view(1, -1):add(scale, gradOutput:contiguous():view(input:size(1), -1):sum(1))
   end
end

function CAdd:type(type, tensorCache)
   if type then self:clearState() end
   return parent.type(self, type, tensorCache)
end

function CAdd:clearState()
   nn.utils.clear(self, {'_gradBias', '_expand', '_output', '_bias', '_repeat'})
   return parent.clearState(self)
end
