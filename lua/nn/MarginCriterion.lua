-- nn.MarginCriterion(margin=1): sum max(0, margin - y x) for targets y = 1 or -1; / n when sizeAverage.
local MarginCriterion, parent = torch.class('nn.MarginCriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function MarginCriterion:__init(margin)
   parent.__init(self)
   self.sizeAverage = true
   self.margin = margin or 1
end

function MarginCriterion:updateOutput(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_MARGIN, input, target, nil, self.margin)
end

function MarginCriterion:updateGradInput(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_MARGIN, input, target, nil, self.margin)
end
