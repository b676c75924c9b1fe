-- nn.ReLU6(inplace=false): y = min(max(x, 0), 6) (the HardTanh kernel on [0, 6]).
local ReLU6, parent = torch.class('nn.ReLU6', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_HARDTANH -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function ReLU6:__init(inplace)
   parent.__init(self)
   if inplace ~= nil and type(inplace) ~= 'boolean' then error('nn.ReLU6: in-place flag must be boolean') end
   self.inplace = inplace or false
end

function ReLU6:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 6, self.inplace and 1 or 0), 2)
   return self.output
end

function ReLU6:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 6,
                                            self.inplace and 1 or 0), 2)
   return self.gradInput
end
