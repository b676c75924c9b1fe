-- nn.GatedLinearUnit(dim=last): splits the input in halves a, b along dim and
-- outputs a .* sigmoid(b) (Dauphin et al. 2016); dim must have an even size.
local GatedLinearUnit, parent = torch.class('nn.GatedLinearUnit', 'nn.Module')
local C = torch.C
local check = torch._check
local SIGMOID = C.LT_PW_SIGMOID -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function GatedLinearUnit:__init(dim)
   parent.__init(self)
   self.dim = dim
end

local function halves(self, t, dim)
   local n = t:size(dim)
   if n % 2 ~= 0 then
      error(string.format('nn.GatedLinearUnit: dim %d of the input has odd size %d (it must split in halves)', dim, n))
   end
   return t:narrow(dim, 1, n / 2), t:narrow(dim, n / 2 + 1, n / 2)
end

function GatedLinearUnit:updateOutput(input)
   local dim = self.dim or input:dim()
   local a, b = halves(self, input, dim)
   self._gate = self._gate or input.new()
   check(C.lt_nn_pointwise_updateOutput(SIGMOID, b._c, self._gate._c, 0, 0, 0), 2)
   self.output:resizeAs(a):cmul(a, self._gate)
   return self.output
end

-- da = dy .* s, db = dy .* a .* s (1 - s), s = sigmoid(b).
function GatedLinearUnit:updateGradInput(input, gradOutput)
   local dim = self.dim or input:dim()
   local a, b = halves(self, input, dim)
   self.gradInput:resizeAs(input)
   local ga, gb = halves(self, self.gradInput, dim)
   ga:cmul(gradOutput, self._gate)
   check(C.lt_nn_pointwise_updateGradInput(SIGMOID, self._gate._c, gradOutput._c, gb._c, 0, 0, 0), 2)
   gb:cmul(a)
   return self.gradInput
end

function GatedLinearUnit:clearState()
   nn.utils.clear(self, '_gate')
   return parent.clearState(self)
end
