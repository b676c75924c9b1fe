-- nn.Sqrt(b=0): y = sqrt(x); the backward reads the output (0 where y == 0).
-- `eps` keeps b, as in Torch7, whose kernel never applied it: files from there give the same results.
local Sqrt, parent = torch.class('nn.Sqrt', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_SQRT -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Sqrt:__init(b)
   parent.__init(self)
   self.eps = b or 0
end

function Sqrt:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function Sqrt:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
