-- nn.HardShrink(lambda=0.5): y = |x|>lambda?x:0; the gradient passes where |x| > lambda.
local HardShrink, parent = torch.class('nn.HardShrink', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_HARDSHRINK -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function HardShrink:__init(lam)
   parent.__init(self)
   self.lambda = lam or 0.5
end

function HardShrink:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.lambda, 0, 0), 2)
   return self.output
end

function HardShrink:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, self.lambda, 0, 0), 2)
   return self.gradInput
end
