-- cudnn.TemporalConvolution(inputFrameSize, outputFrameSize, kH, dH=1, padH=0): nn.TemporalConvolution
-- with padH zero frames added at both ends of the sequence. The fields are cudnn.torch's (the
-- temporal kernel/stride are kH/dH, kW = inputFrameSize, as in its spatial-convolution view).
local TC, TCParent = torch.class('cudnn.TemporalConvolution', 'nn.TemporalConvolution')

function TC:__init(inputFrameSize, outputFrameSize, kH, dH, padH)
   TCParent.__init(self, inputFrameSize, outputFrameSize, kH, dH)
   self.kH, self.dH, self.padH = kH, dH or 1, padH or 0
   self.kW, self.dW, self.padW = inputFrameSize, 1, 0
   self.nInputPlane, self.nOutputPlane = 1, outputFrameSize
   self.groups = 1
end

cudnn._convolutionModes(TC)

-- The input with padH zero frames before and after (the input itself when padH is 0).
local function padded(self, input)
   if self.padH == 0 then return input end
   local tdim = input:dim() - 1
   local size = input:size():totable()
   size[tdim] = size[tdim] + 2 * self.padH
   self._paddedInput = self._paddedInput or input.new()
   self._paddedInput:resize(torch.LongStorage(size)):zero()
   self._paddedInput:narrow(tdim, self.padH + 1, input:size(tdim)):copy(input)
   return self._paddedInput
end

-- Runs an nn.TemporalConvolution method with its own meaning of kW / dW.
local function asNN(self, fn, ...)
   local kW, dW = self.kW, self.dW
   self.kW, self.dW = self.kH, self.dH
   local ok, res = pcall(fn, self, ...)
   self.kW, self.dW = kW, dW
   if not ok then error(res, 0) end
   return res
end

function TC:updateOutput(input)
   return asNN(self, TCParent.updateOutput, padded(self, input))
end

function TC:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   if self.padH == 0 then return asNN(self, TCParent.updateGradInput, input, gradOutput) end
   local gradInput = self.gradInput
   self.gradInput = self._paddedGradInput or input.new()
   asNN(self, TCParent.updateGradInput, padded(self, input), gradOutput)
   self._paddedGradInput = self.gradInput
   local tdim = input:dim() - 1
   self.gradInput = gradInput:resizeAs(input):copy(self._paddedGradInput:narrow(tdim, self.padH + 1, input:size(tdim)))
   return self.gradInput
end

function TC:accGradParameters(input, gradOutput, scale)
   return asNN(self, TCParent.accGradParameters, padded(self, input), gradOutput, scale)
end

cudnn._withoutDescriptors(TC, TCParent)

function TC:clearState()
   nn.utils.clear(self, '_paddedInput', '_paddedGradInput')
   cudnn._clearDesc(self)
   return TCParent.clearState(self)
end

-- as cudnn.torch's (nn.TemporalConvolution printed no sizes)
TC.__tostring__ = cudnn._plainName

