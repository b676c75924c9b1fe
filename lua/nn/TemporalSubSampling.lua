-- nn.TemporalSubSampling(inputFrameSize, kW, dW=1): per feature, weight * (sum of the kW frames
-- of a window) + bias; input (nFrames, inputFrameSize).
local TemporalSubSampling, parent = torch.class('nn.TemporalSubSampling', 'nn.Module')
local C = torch.C
local check = torch._check

function TemporalSubSampling:__init(inputFrameSize, kW, dW)
   parent.__init(self)
   self.inputFrameSize = inputFrameSize
   self.kW = kW
   self.dW = dW or 1
   self.weight = torch.Tensor(inputFrameSize)
   self.bias = torch.Tensor(inputFrameSize)
   self.gradWeight = torch.Tensor(inputFrameSize)
   self.gradBias = torch.Tensor(inputFrameSize)
   self:reset()
end

-- U(-1/sqrt(kW), +); reset(stdv) uses stdv*sqrt(3).
function TemporalSubSampling:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.kW)
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
end

function TemporalSubSampling:updateOutput(input)
   check(C.lt_nn_TemporalSubSampling_updateOutput(input._c, self.output._c, self.weight._c, self.bias._c,
         self.kW, self.dW, self.inputFrameSize), 2)
   return self.output
end

function TemporalSubSampling:updateGradInput(input, gradOutput)
   if self.gradInput then
      check(C.lt_nn_TemporalSubSampling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.weight._c, self.kW, self.dW), 2)
      return self.gradInput
   end
end

function TemporalSubSampling:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_TemporalSubSampling_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.kW, self.dW, scale or 1), 2)
end
