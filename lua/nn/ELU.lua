-- nn.ELU(alpha=1, inplace=false): y = x <= 0 ? alpha*(exp(x)-1) : x (Clevert et al. 2015);
-- the backward reads the output (dy * (y + alpha) on the negative side).
local ELU, parent = torch.class('nn.ELU', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_ELU -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function ELU:__init(alpha, inplace)
   parent.__init(self)
   self.alpha = alpha or 1
   if type(self.alpha) ~= 'number' then error('nn.ELU(alpha, inplace): alpha must be a number') end
   self.inplace = inplace or false
   if type(self.inplace) ~= 'boolean' then error('nn.ELU(alpha, inplace): in-place flag must be boolean') end
end

function ELU:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.alpha, 0, self.inplace and 1 or 0), 2)
   return self.output
end

function ELU:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, self.output._c, gradOutput._c, self.gradInput._c, self.alpha, 0,
                                            self.inplace and 1 or 0), 2)
   return self.gradInput
end

function ELU:__tostring__()
   return string.format('%s (alpha:%f)', torch.type(self), self.alpha)
end
