-- nn.TemporalRowConvolution(inputFrameSize, kW, dW=1, featFirst=false): every feature row of the
-- sequence convolved with its own kernel (weight (inputFrameSize, 1, kW)). Input (nFrames,
-- inputFrameSize) or (N, nFrames, inputFrameSize); featFirst: (inputFrameSize, nFrames) layouts.
local TemporalRowConvolution, parent = torch.class('nn.TemporalRowConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function TemporalRowConvolution:__init(inputFrameSize, kW, dW, featFirst)
   parent.__init(self)
   self.inputFrameSize = inputFrameSize
   self.kW = kW
   self.dW = dW or 1
   self.weight = torch.Tensor(inputFrameSize, 1, kW)
   self.bias = torch.Tensor(inputFrameSize)
   self.gradWeight = torch.Tensor(inputFrameSize, 1, kW)
   self.gradBias = torch.Tensor(inputFrameSize)
   self.featFirst = featFirst and true or false
   self:reset()
end

TemporalRowConvolution.noBias = nn.Linear.noBias   -- drops bias and gradBias, as Linear's

-- U(-1/sqrt(kW*inputFrameSize), +); reset(stdv) uses stdv*sqrt(3).
function TemporalRowConvolution:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.kW * self.inputFrameSize)
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
end

-- Torch7 keeps finput/fgradInput as work buffers; ours need none, but the fields stay for .t7 files.
local function buffers(self, input)
   self.finput = self.finput or input.new()
   self.fgradInput = self.fgradInput or input.new()
end

function TemporalRowConvolution:updateOutput(input)
   buffers(self, input)
   check(C.lt_nn_TemporalRowConvolution_updateOutput(input._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.kW, self.dW, 0, self.featFirst and 1 or 0), 2)
   return self.output
end

function TemporalRowConvolution:updateGradInput(input, gradOutput)
   if self.gradInput then
      buffers(self, input)
      check(C.lt_nn_TemporalRowConvolution_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.weight._c, self.kW, self.dW, 0, self.featFirst and 1 or 0), 2)
      return self.gradInput
   end
end

function TemporalRowConvolution:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_TemporalRowConvolution_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.kW, self.dW, 0, self.featFirst and 1 or 0, scale or 1), 2)
end

function TemporalRowConvolution:type(type, tensorCache)
   if self.finput then self.finput:set() end
   if self.fgradInput then self.fgradInput:set() end
   return parent.type(self, type, tensorCache)
end

function TemporalRowConvolution:__tostring__()
   local s = string.format('%s(%d, %d', torch.type(self), self.inputFrameSize, self.kW)
   if self.dW ~= 1 then s = s .. string.format(', %d', self.dW) end
   if self.padW and self.padW ~= 0 then s = s .. ', ' .. self.padW end
   return s .. (self.bias and ')' or ') without bias')
end

function TemporalRowConvolution:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end
