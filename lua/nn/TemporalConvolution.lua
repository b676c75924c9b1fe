-- nn.TemporalConvolution(inputFrameSize, outputFrameSize, kW, dW=1): 1-D convolution over a
-- sequence of frames, input (nFrames, inputFrameSize) or (N, nFrames, inputFrameSize);
-- weight (outputFrameSize, kW*inputFrameSize), the kW frames of a window concatenated.
local TemporalConvolution, parent = torch.class('nn.TemporalConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function TemporalConvolution:__init(inputFrameSize, outputFrameSize, kW, dW)
   parent.__init(self)
   self.inputFrameSize = inputFrameSize
   self.outputFrameSize = outputFrameSize
   self.kW = kW
   self.dW = dW or 1
   self.weight = torch.Tensor(outputFrameSize, inputFrameSize * kW)
   self.bias = torch.Tensor(outputFrameSize)
   self.gradWeight = torch.Tensor(outputFrameSize, inputFrameSize * kW)
   self.gradBias = torch.Tensor(outputFrameSize)
   self:reset()
end

-- U(-1/sqrt(kW*inputFrameSize), +); reset(stdv) uses stdv*sqrt(3).
function TemporalConvolution:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.kW * self.inputFrameSize)
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
end

function TemporalConvolution:updateOutput(input)
   check(C.lt_nn_TemporalConvolution_updateOutput(input._c, self.output._c, self.weight._c, self.bias._c,
         self.kW, self.dW, self.inputFrameSize, self.outputFrameSize), 2)
   return self.output
end

function TemporalConvolution:updateGradInput(input, gradOutput)
   if self.gradInput then
      check(C.lt_nn_TemporalConvolution_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.weight._c, self.kW, self.dW), 2)
      return self.gradInput
   end
end

function TemporalConvolution:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_TemporalConvolution_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.kW, self.dW, scale or 1), 2)
end

-- Shared weights need no accumulation: update them in place with -lr times the gradient.
function TemporalConvolution:sharedAccUpdateGradParameters(input, gradOutput, lr)
   nn.Module.accUpdateGradParameters(self, input, gradOutput, lr)
end
