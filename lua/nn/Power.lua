-- nn.Power(p): y = x^p, dy/dx = p x^(p-1).
local Power, parent = torch.class('nn.Power', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_POWER -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function Power:__init(p)
   parent.__init(self)
   if type(p) ~= 'number' then error('nn.Power(power): the power must be a number') end
   self.pow = p
end

function Power:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.pow, 0, 0), 2)
   return self.output
end

function Power:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, self.pow, 0, 0), 2)
   return self.gradInput
end
