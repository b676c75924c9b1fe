-- nn.DistKLDivCriterion(): the Kullback-Leibler divergence of target
-- probabilities y from log-probabilities x: sum y (log y - x) over y > 0; / n when sizeAverage.
local DistKLDivCriterion, parent = torch.class('nn.DistKLDivCriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function DistKLDivCriterion:__init()
   parent.__init(self)
   self.sizeAverage = true
end

local function checkSameSize(input, target)
   if not input:isSameSizeAs(target) then
      error('DistKLDivCriterion: input and target should have the same size', 3)
   end
end

function DistKLDivCriterion:updateOutput(input, target)
   checkSameSize(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_DISTKLDIV, input, target)
end

function DistKLDivCriterion:updateGradInput(input, target)
   checkSameSize(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_DISTKLDIV, input, target)
end
