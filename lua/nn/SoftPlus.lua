-- nn.SoftPlus(beta=1): y = log(1 + exp(beta*x)) / beta, linear above beta*x > threshold (20)
-- where exp would lose precision; the backward reads the output.
local SoftPlus, parent = torch.class('nn.SoftPlus', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_SOFTPLUS -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function SoftPlus:__init(beta)
   parent.__init(self)
   self.beta = beta or 1
   self.threshold = 20
end

function SoftPlus:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.beta, self.threshold, 0), 2)
   return self.output
end

function SoftPlus:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, self.beta,
                                            self.threshold, 0), 2)
   return self.gradInput
end
