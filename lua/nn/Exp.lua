-- nn.Exp: y = exp(x).
local Exp, parent = torch.class('nn.Exp', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_EXP -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Exp:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Exp:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
