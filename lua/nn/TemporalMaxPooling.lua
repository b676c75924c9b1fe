-- nn.TemporalMaxPooling(kW, dW=kW): max over kW consecutive frames of
-- (T, F) / (N, T, F) sequences; indices hold the 0-based frame of each
-- maximum within its window (Torch7's layout).
local TemporalMaxPooling, parent = torch.class('nn.TemporalMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function TemporalMaxPooling:__init(kW, dW)
   parent.__init(self)
   self.kW = kW
   self.dW = dW or kW
end

function TemporalMaxPooling:updateOutput(input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   check(C.lt_nn_TemporalMaxPooling_updateOutput(input._c, self.output._c, self.indices._c, self.kW, self.dW), 2)
   return self.output
end

function TemporalMaxPooling:updateGradInput(input, gradOutput)
   if self.gradInput then
      check(C.lt_nn_TemporalMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.indices._c,
            self.kW, self.dW), 2)
      return self.gradInput
   end
end

-- older name of clearState
function TemporalMaxPooling:empty()
   self:clearState()
end

function TemporalMaxPooling:clearState()
   if self.indices then self.indices:set() end
   return parent.clearState(self)
end
