-- nn.Abs: y = |x|.
local Abs, parent = torch.class('nn.Abs', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_ABS -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Abs:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Abs:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
