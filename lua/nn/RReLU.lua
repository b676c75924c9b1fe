-- nn.RReLU(l=1/8, u=1/3, inplace=false): randomized leaky ReLU (Xu et al. 2015).
-- Training: each x <= 0 gets its own slope drawn from U(l, u), kept in `noise`
-- (1 where x > 0) for the backward; evaluation: the fixed slope (l+u)/2.
local RReLU, parent = torch.class('nn.RReLU', 'nn.Module')
local C = torch.C
local check = torch._check
local LEAKY = C.LT_PW_LEAKYRELU -- the op of lt_nn_pointwise_* (lt_nn_pointwise.h)

function RReLU:__init(l, u, ip)
   parent.__init(self)
   self.lower = l or 1 / 8
   self.upper = u or 1 / 3
   if not (self.lower <= self.upper and self.lower >= 0) then
      error(string.format('nn.RReLU(l, u): need 0 <= l <= u, got l=%g, u=%g', self.lower, self.upper))
   end
   self.noise = torch.Tensor()
   self.train = true
   self.inplace = ip or false
end

local function random_slopes(self)
   return self.train and self.upper - self.lower > 1e-6
end

function RReLU:updateOutput(input)
   local ip = self.inplace and 1 or 0
   if random_slopes(self) then
      self.noise:resizeAs(input):uniform(self.lower, self.upper)
      self.noise:maskedFill(input:gt(0), 1)
      if self.inplace then
         input:cmul(self.noise)
         self.output:set(input)
      else
         self.output:resizeAs(input):copy(input):cmul(self.noise)
      end
   else
      local slope = self.train and self.lower or (self.lower + self.upper) / 2
      check(C.lt_nn_pointwise_updateOutput(LEAKY, input._c, self.output._c, slope, 0, ip), 2)
   end
   return self.output
end

-- In place, input holds the outputs: their sign still tells the branch (slopes >= 0).
function RReLU:updateGradInput(input, gradOutput)
   if random_slopes(self) then
      if self.inplace then
         gradOutput:cmul(self.noise)
         self.gradInput:set(gradOutput)
      else
         self.gradInput:resizeAs(gradOutput):copy(gradOutput):cmul(self.noise)
      end
   else
      local slope = self.train and self.lower or (self.lower + self.upper) / 2
      check(C.lt_nn_pointwise_updateGradInput(LEAKY, input._c, gradOutput._c, self.gradInput._c, slope, 0,
                                               self.inplace and 1 or 0), 2)
   end
   return self.gradInput
end

function RReLU:__tostring__()
   return string.format('%s (l:%f, u:%f)', torch.type(self), self.lower, self.upper)
end

function RReLU:clearState()
   nn.utils.clear(self, 'noise')
   return parent.clearState(self)
end
