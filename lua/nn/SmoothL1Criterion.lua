-- nn.SmoothL1Criterion(sizeAverage=true): with z = x - y, the sum of 0.5 z^2 where
-- |z| < 1 and |z| - 0.5 elsewhere; divided by n when sizeAverage.
local SmoothL1Criterion, parent = torch.class('nn.SmoothL1Criterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function SmoothL1Criterion:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

function SmoothL1Criterion:updateOutput(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_SMOOTHL1, input, target)
end

function SmoothL1Criterion:updateGradInput(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_SMOOTHL1, input, target)
end
