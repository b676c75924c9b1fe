-- nn.Tanh: y = tanh(x); the backward reads the output (1 - y^2).
local Tanh, parent = torch.class('nn.Tanh', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_TANH -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Tanh:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Tanh:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
