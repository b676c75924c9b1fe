-- nn.LogSigmoid: y = -log(1 + exp(-x)), computed without overflow on either side.
local LogSigmoid, parent = torch.class('nn.LogSigmoid', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_LOGSIGMOID -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function LogSigmoid:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function LogSigmoid:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end

-- Torch7 kept a scratch `buffer`; files saved there may carry it.
function LogSigmoid:clearState()
   nn.utils.clear(self, 'buffer')
   return parent.clearState(self)
end
