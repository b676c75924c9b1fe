-- nn.Add(inputSize, scalar=false): y = x + b with a learned bias of inputSize
-- elements (one element when scalar), added to every sample of a batch.
local Add, parent = torch.class('nn.Add', 'nn.Module')

function Add:__init(inputSize, scalar)
   parent.__init(self)
   local size = scalar and 1 or inputSize
   self.scalar = scalar
   self.bias = torch.Tensor(size)
   self.gradBias = torch.Tensor(size)
   self._ones = torch.Tensor{1}
   self:reset()
end

function Add:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.bias:size(1))
   end
   self.bias:uniform(-stdv, stdv)
end

function Add:_ensureOnes(n)
   if self._ones:nElement() ~= n then self._ones:resize(n):fill(1) end
end

function Add:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if self.scalar then
      self.output:add(self.bias[1])
   elseif input:isSameSizeAs(self.bias) then
      self.output:add(self.bias)
   else
      local n = input:size(1)
      self:_ensureOnes(n)
      self.output:view(n, -1):addr(1, self._ones, self.bias:view(-1))
   end
   return self.output
end

function Add:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   return self.gradInput
end

function Add:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   if self.gradBias:size(1) == 1 then
      self.gradBias[1] = self.gradBias[1] + scale * gradOutput:sum()
   elseif input:isSameSizeAs(self.bias) then
      self.gradBias:add(scale, gradOutput)
   else
      local n = input:size(1)
      self:_ensureOnes(n)
      self.gradBias:view(-1):addmv(scale, gradOutput:contiguous():view(n, -1):t(), self._ones)
   end
end
