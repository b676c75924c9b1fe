-- nn.SoftMarginCriterion(): sum log(1 + exp(-y x)) for targets y = 1 or -1; / n when sizeAverage.
local SoftMarginCriterion, parent = torch.class('nn.SoftMarginCriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function SoftMarginCriterion:__init()
   parent.__init(self)
   self.sizeAverage = true
end

function SoftMarginCriterion:updateOutput(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_SOFTMARGIN, input, target)
end

function SoftMarginCriterion:updateGradInput(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_SOFTMARGIN, input, target)
end
