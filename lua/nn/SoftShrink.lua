-- nn.SoftShrink(lambda=0.5): y = x>lambda?x-lambda:x<-lambda?x+lambda:0; the gradient passes where |x| > lambda.
local SoftShrink, parent = torch.class('nn.SoftShrink', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_SOFTSHRINK -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function SoftShrink:__init(lam)
   parent.__init(self)
   self.lambda = lam or 0.5
end

function SoftShrink:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.lambda, 0, 0), 2)
   return self.output
end

function SoftShrink:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, self.lambda, 0, 0), 2)
   return self.gradInput
end
