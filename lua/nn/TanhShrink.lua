-- nn.TanhShrink: y = x - tanh(x) (one fused kernel).
local TanhShrink, parent = torch.class('nn.TanhShrink', 'nn.Module')
local C = torch.C
local check = torch._check
local OP = C.LT_PW_TANHSHRINK -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

-- Torch7 kept an nn.Tanh in the field `tanh`; it stays for the .t7 layout.
function TanhShrink:__init()
   parent.__init(self)
   self.tanh = nn.Tanh()
end

function TanhShrink:updateOutput(input)
   check(C.lt_nn_pointwise_updateOutput(OP, input._c, self.output._c, 0, 0, 0), 2)
   return self.output
end

function TanhShrink:updateGradInput(input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(OP, input._c, gradOutput._c, self.gradInput._c, 0, 0, 0), 2)
   return self.gradInput
end
