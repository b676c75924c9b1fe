-- nn.SoftSign: y = x / (1 + |x|).
local SoftSign, parent = torch.class('nn.SoftSign', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_SOFTSIGN -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function SoftSign:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function SoftSign:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end

-- Torch7's SoftSign kept two scratch tensors; files saved there may carry them.
function SoftSign:clearState()
   nn.utils.clear(self, 'temp', 'tempgrad')
   return parent.clearState(self)
end
