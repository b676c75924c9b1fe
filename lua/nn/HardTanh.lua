-- nn.HardTanh(min_value=-1, max_value=1, inplace=false): y = clamp(x, min, max);
-- the gradient passes only strictly inside (min, max).
local HardTanh, parent = torch.class('nn.HardTanh', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_HARDTANH -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function HardTanh:__init(min_value, max_value, inplace)
   parent.__init(self)
   self.min_val = min_value or -1
   self.max_val = max_value or 1
   self.inplace = inplace or false
   if inplace and type(inplace) ~= 'boolean' then error('nn.HardTanh: in-place flag must be boolean') end
   if not (self.max_val > self.min_val) then
      error(string.format('nn.HardTanh: max_value (%g) must be larger than min_value (%g)', self.max_val,
                          self.min_val))
   end
end

function HardTanh:updateOutput(input)
   self.min_val = self.min_val or -1
   self.max_val = self.max_val or 1
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, self.min_val, self.max_val,
                                         self.inplace and 1 or 0), 2)
   return self.output
end

-- In place, input already holds the clamped values: the mask is the same.
function HardTanh:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, self.min_val,
                                            self.max_val, self.inplace and 1 or 0), 2)
   return self.gradInput
end
