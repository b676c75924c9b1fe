-- nn.Reshape(sizes... [, batchMode]): like View but copies non-contiguous input.
local Reshape, parent = torch.class('nn.Reshape', 'nn.Module')

function Reshape:__init(...)
   parent.__init(self)
   local args = {...}
   local n = select('#', ...)
   if n == 0 then error('nn.Reshape: sizes expected') end
   if type(args[n]) == 'boolean' then
      self.batchMode = args[n]
      n = n - 1
   end
   if n == 1 and torch.typename(args[1]) == 'torch.LongStorage' then
      self.size = torch.LongStorage():resize(args[1]:size()):copy(args[1])
   else
      self.size = torch.LongStorage(n)
      for i = 1, n do self.size[i] = args[i] end
   end
   self.nelement = 1
   self.batchsize = torch.LongStorage(#self.size + 1)
   for i = 1, #self.size do
      self.nelement = self.nelement * self.size[i]
      self.batchsize[i + 1] = self.size[i]
   end
end

function Reshape:updateOutput(input)
   if not input:isContiguous() then
      self._input = self._input or input.new()
      self._input:resizeAs(input):copy(input)
      input = self._input
   end
   if self.batchMode == false or
      (self.batchMode == nil and input:nElement() == self.nelement and input:size(1) ~= 1) then
      self.output:view(input, self.size)
   else
      self.batchsize[1] = input:size(1)
      self.output:view(input, self.batchsize)
   end
   return self.output
end

function Reshape:updateGradInput(input, gradOutput)
   if not gradOutput:isContiguous() then
      self._gradOutput = self._gradOutput or gradOutput.new()
      self._gradOutput:resizeAs(gradOutput):copy(gradOutput)
      gradOutput = self._gradOutput
   end
   self.gradInput:viewAs(gradOutput, input)
   return self.gradInput
end

function Reshape:__tostring__()
   return torch.type(self) .. '(' .. table.concat(self.size:totable(), 'x') .. ')'
end

function Reshape:clearState()
   nn.utils.clear(self, '_input', '_gradOutput')
   return parent.clearState(self)
end
