-- nn.MaskedSelect: input {t, mask (ByteTensor)} -> the 1D tensor of t's elements where mask is 1.
local MaskedSelect, parent = torch.class('nn.MaskedSelect', 'nn.Module')

function MaskedSelect:__init()
   parent.__init(self)
   self._maskIndices = torch.LongTensor()
   self._maskIndexBuffer = torch.LongTensor()
   self._maskIndexBufferCPU = torch.FloatTensor()
   self._gradBuffer = torch.Tensor()
   self._gradMask = torch.ByteTensor()
end

function MaskedSelect:updateOutput(input)
   self.output:maskedSelect(input[1], input[2])
   return self.output
end

function MaskedSelect:updateGradInput(input, gradOutput)
   local t, mask = input[1], input[2]
   self._gradBuffer = self._gradBuffer:typeAs(t)
   self._gradBuffer:resizeAs(t):zero()
   self._gradBuffer:maskedCopy(mask, gradOutput)
   self._gradMask:resizeAs(mask):zero()
   self.gradInput = {self._gradBuffer, self._gradMask}
   return self.gradInput
end

function MaskedSelect:accGradParameters(input, gradOutput, scale)
end

-- The index buffers stay Long, the mask buffer Byte, whatever the module's type.
local KEEP = {'_maskIndices', '_maskIndexBuffer', '_maskIndexBufferCPU', '_gradMask'}

function MaskedSelect:type(type, tensorCache)
   if not type then return self._type end
   local kept = {}
   for _, k in ipairs(KEEP) do kept[k], self[k] = self[k], nil end
   parent.type(self, type, tensorCache)
   for _, k in ipairs(KEEP) do self[k] = kept[k] end
   if torch.type(self.gradInput) == 'table' then self.gradInput[2] = self._gradMask end
   return self
end

function MaskedSelect:clearState()
   return nn.utils.clear(self, {'output', 'gradInput', '_maskIndexBuffer', '_maskIndexBufferCPU',
                                '_maskIndices', '_gradBuffer', '_gradMask'})
end
