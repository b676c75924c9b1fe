-- nn.Sigmoid: y = 1/(1+exp(-x)); the backward reads the output (y(1-y)).
local Sigmoid, parent = torch.class('nn.Sigmoid', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_SIGMOID -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Sigmoid:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Sigmoid:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
