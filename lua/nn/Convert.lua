-- nn.Convert(inputShape='b*', outputShape=inputShape): converts between tensor
-- layouts named by letters, 'b' being the batch axis (added when missing):
-- 'bchw' -> 'chwb' permutes, 'bchw' -> 'bf' flattens each sample, 'b' <-> 'bt',
-- 'bt'/'bf' -> 'b' select. Inputs without the batch axis get one for the
-- conversion. The input is first copied into this module's tensor type.
local Convert, parent = torch.class('nn.Convert', 'nn.Container')

function Convert:__init(inputShape, outputShape)
   if outputShape and not inputShape then
      error('nn.Convert(inputShape, outputShape): outputShape given without inputShape')
   end
   inputShape = inputShape or 'b*'
   outputShape = outputShape or inputShape
   self.inputShape = inputShape:find('b') and inputShape or ('b' .. inputShape)
   self.outputShape = outputShape:find('b') and outputShape or ('b' .. outputShape)
   self.inputBatchDim = self.inputShape:find('b')
   self.outputBatchDim = self.outputShape:find('b')
   if self.inputShape == 'b*' or self.outputShape == 'b*' then
      assert(self.inputShape == 'b*' and self.outputShape == 'b*', "nn.Convert: both or neither shapes must be 'b*'")
      self.nInputDim, self.nOutputDim, self.transposition = -1, -1, true
   else
      self.nInputDim = #self.inputShape
      self.nOutputDim = #self.outputShape
      -- the same letters in another order: a permutation
      if self.nInputDim == self.nOutputDim then
         self.transposition = true
         for i = 1, self.nInputDim do
            if not self.outputShape:find(self.inputShape:sub(i, i), 1, true) then
               self.transposition = false
               break
            end
         end
      end
   end
   parent.__init(self)
end

function Convert:buildConverter(input)
   if self.transposition then
      self.converter = self:transpose(self.outputShape)
   else
      if torch.type(self[self.outputShape]) ~= 'function' then
         error(string.format('nn.Convert: unrecognized conversion of shape %s to %s', self.inputShape,
                             self.outputShape))
      end
      self.converter = self[self.outputShape](self, input)
   end
   assert(torch.isTensor(self.output), 'nn.Convert: expecting a tensor output')
   self.converter:type(torch.type(self.output))
   self.modules[1] = self.converter
end

function Convert:updateOutput(input)
   assert(torch.isTensor(input), 'nn.Convert: expecting a tensor input')
   if not torch.isTypeOf(input, torch.type(self.output)) then
      self._input = self._input or self.output.new()
      self._input:resize(input:size()):copy(input)
      input = self._input
   end
   self.batchMode = true
   if input:dim() < self.nInputDim then
      -- a single sample: add the batch axis
      local size = input:size():totable()
      table.insert(size, self.inputBatchDim, 1)
      self.__input = input:contiguous():view(table.unpack(size))
      input = self.__input
      self.batchMode = false
   end
   if not self.converter then self:buildConverter(input) end
   self.output = self.converter:updateOutput(input)
   if not self.batchMode then
      -- select, not resize: the converter's output may be a strided view
      self.__output = self.output:select(self.outputBatchDim, 1)
      self.output = self.__output
   end
   return self.output
end

function Convert:updateGradInput(input, gradOutput)
   local original = input
   input = self._input or input
   if not self.batchMode then
      input = self.__input
      self.__gradOutput = gradOutput:contiguous():view(self.converter.output:size())
      gradOutput = self.__gradOutput
   end
   local gradInput = self.converter:updateGradInput(input, gradOutput)
   if not self.batchMode then
      self.__gradInput = gradInput:select(self.inputBatchDim, 1)
      gradInput = self.__gradInput
   end
   if self._input then
      -- back to the caller's type
      self._gradInput = self._gradInput or original.new()
      self._gradInput:resize(original:size()):copy(gradInput)
      self.gradInput = self._gradInput
   else
      self.gradInput = gradInput
   end
   return self.gradInput
end

function Convert:accGradParameters(input, gradOutput, scale)
   input = self.batchMode and self.__input or self._input or input
   gradOutput = self.batchMode and self.__gradOutput or gradOutput
   self.converter:accGradParameters(input, gradOutput, scale)
end

function Convert:accUpdateGradParameters(input, gradOutput, lr)
   input = self.batchMode and self.__input or self._input or input
   gradOutput = self.batchMode and self.__gradOutput or gradOutput
   self.converter:accUpdateGradParameters(input, gradOutput, lr)
end

-- to 'bf': batch first, then each sample flattened
function Convert:bf(input)
   local b_pos = self:findAxis('b', self.inputShape)
   local dim = #self.inputShape
   if self.inputShape == 'bt' then error('nn.Convert: conversion of shape bt to bf is not supported') end
   if dim == 1 then return nn.Reshape(1) end
   local m
   if b_pos ~= 1 then m = nn.Transpose({1, b_pos}) end
   if dim > 2 then
      local reshape = nn.Reshape(input:select(b_pos, 1):nElement())
      if m then m = nn.Sequential():add(m):add(reshape) else m = reshape end
   end
   return m or nn.Identity()
end

function Convert:b(input)
   if self.inputShape == 'bt' or self.inputShape == 'tb' then
      return nn.Select(self:findAxis('t'), 1)
   elseif self.inputShape == 'bf' or self.inputShape == 'fb' then
      local f_pos = self:findAxis('f')
      if input:size(f_pos) > 1 then
         error('nn.Convert: cannot convert shape ' .. self.inputShape .. ' to b when there is more than one feature')
      end
      return nn.Select(f_pos, 1)
   end
   error('nn.Convert: cannot convert shape ' .. self.inputShape .. ' to shape b')
end

function Convert:default()
   return nn.Identity()
end

function Convert:bt()
   if self.inputShape == 'b' then return nn.Reshape(1) end
   error("nn.Convert: cannot convert shape '" .. self.inputShape .. "' to bt")
end

-- A sequence of axis swaps taking inputShape to newShape.
function Convert:transpose(newShape)
   if newShape == self.inputShape then return nn.Identity() end
   local current = {}
   for i = 1, #self.inputShape do current[i] = self.inputShape:sub(i, i) end
   local swaps = {}
   for i = 1, #newShape do
      local want = newShape:sub(i, i)
      local j
      for k = 1, #current do if current[k] == want then j = k; break end end
      if i ~= j then
         current[i], current[j] = current[j], current[i]
         swaps[#swaps + 1] = {j, i}
      end
   end
   return nn.Transpose(table.unpack(swaps))
end

function Convert:findAxis(axis_char, shape, silent)
   shape = shape or self.inputShape
   local pos = shape:find(axis_char, 1, true)
   if not silent and not pos then error("nn.Convert: shape '" .. shape .. "' has no axis '" .. axis_char .. "'", 2) end
   return pos
end

function Convert:clearState()
   self._input, self._gradInput, self.__input, self.__output, self.__gradInput, self.__gradOutput =
      nil, nil, nil, nil, nil, nil
end

function Convert:type(type)
   self:clearState()
   return parent.type(self, type)
end
