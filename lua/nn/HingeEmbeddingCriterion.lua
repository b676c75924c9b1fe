-- nn.HingeEmbeddingCriterion(margin=1): for targets y = 1 or -1 (a tensor like
-- input, or one number), the sum of x where y = 1 and max(0, margin - x) where
-- y = -1; divided by n when sizeAverage.
local HingeEmbeddingCriterion, parent = torch.class('nn.HingeEmbeddingCriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function HingeEmbeddingCriterion:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.sizeAverage = true
end

-- a number target applies to every element
local function targetFor(self, input, y)
   if torch.isTensor(y) then return y end
   if torch.typename(self.ty) ~= input:type() then self.ty = input.new() end
   return self.ty:resizeAs(input):fill(y)
end

-- (Torch7 treats a nil sizeAverage as true here)
function HingeEmbeddingCriterion:updateOutput(input, y)
   return kernels.pointwiseOutput(self, C.LT_CRIT_HINGE, input, targetFor(self, input, y), nil, self.margin,
                                  self.sizeAverage ~= false)
end

function HingeEmbeddingCriterion:updateGradInput(input, y)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_HINGE, input, targetFor(self, input, y), nil, self.margin,
                                     self.sizeAverage ~= false)
end
