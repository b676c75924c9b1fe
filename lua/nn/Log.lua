-- nn.Log: y = log(x).
local Log, parent = torch.class('nn.Log', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_LOG -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Log:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Log:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
