-- nn.AbsCriterion(sizeAverage=true): sum |x - y|, divided by n when sizeAverage.
local AbsCriterion, parent = torch.class('nn.AbsCriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function AbsCriterion:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

function AbsCriterion:updateOutput(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_ABS, input, target)
end

function AbsCriterion:updateGradInput(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_ABS, input, target)
end
