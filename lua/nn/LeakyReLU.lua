-- nn.LeakyReLU(negval=0.01, inplace=false): y = x > 0 ? x : negval*x.
-- A boolean first argument is the in-place flag; a negative slope cannot run
-- in place (the sign of the output would no longer tell the branch).
local LeakyReLU, parent = torch.class('nn.LeakyReLU', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_LEAKYRELU -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function LeakyReLU:__init(negval, ip)
   parent.__init(self)
   if type(negval) == 'boolean' then
      negval, ip = nil, negval
   end
   self.negval = negval or 1 / 100
   self.inplace = ip or false
   if self.negval < 0 then self.inplace = false end
end

function LeakyReLU:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.negval, 0, self.inplace and 1 or 0), 2)
   return self.output
end

function LeakyReLU:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, self.negval, 0,
                                            self.inplace and 1 or 0), 2)
   return self.gradInput
end

function LeakyReLU:__tostring__()
   return torch.type(self) .. string.format('(%g)', self.negval)
end
