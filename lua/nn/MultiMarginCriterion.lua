-- nn.MultiMarginCriterion(p=1, weights=nil, margin=1): multi-class hinge loss of
-- scores x against a 1-based class target t:
--   sum_{i ~= t} w[t] max(0, margin - x[t] + x[i])^p / dim, / nframe when sizeAverage.
local MultiMarginCriterion, parent = torch.class('nn.MultiMarginCriterion', 'nn.Criterion')
local C = torch.C
local check = torch._check
local kernels = nn._criterionKernels
local loss = kernels.loss

function MultiMarginCriterion:__init(p, weights, margin)
   assert(p == nil or p == 1 or p == 2, 'only p=1 and p=2 supported')
   self.p = p or 1
   self.margin = margin or 1.0
   parent.__init(self)
   self.sizeAverage = true
   if weights then
      assert(weights:dim() == 1, 'weights input should be 1-D Tensor')
      self.weights = weights
   end
end

local function args(self, input, target)
   local t = kernels.longTarget(self, 'target_tensor', target)
   local w = self.weights and kernels.asInputType(self, '_weights', self.weights, input)
   return t, w and w._c or nil
end

function MultiMarginCriterion:updateOutput(input, target)
   local t, w = args(self, input, target)
   if torch.typename(self.output_tensor) ~= input:type() then self.output_tensor = input.new(1) end
   check(C.lt_nn_MultiMarginCriterion_updateOutput(input._c, t._c, self.output_tensor._c,
         self.sizeAverage and 1 or 0, self.p or 1, w, self.margin, loss), 2)
   self.output = loss[0]   -- output_tensor[1]'s value, without reading a device tensor back
   return self.output
end

function MultiMarginCriterion:updateGradInput(input, target)
   local t, w = args(self, input, target)
   check(C.lt_nn_MultiMarginCriterion_updateGradInput(input._c, t._c, self.gradInput._c,
         self.sizeAverage and 1 or 0, self.p or 1, w, self.margin), 2)
   return self.gradInput
end
