-- nn.L1Cost(): the L1 norm of the input, sum |x| (no target); gradInput = sign(x).
local L1Cost, parent = torch.class('nn.L1Cost', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function L1Cost:__init()
   parent.__init(self)
end

-- (the kernel takes a target; L1Cost's is the input itself, never read)
function L1Cost:updateOutput(input)
   return kernels.pointwiseOutput(self, C.LT_CRIT_L1COST, input, input)
end

function L1Cost:updateGradInput(input)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_L1COST, input, input)
end

function L1Cost:clearState()
   if self.output_tensor then self.output_tensor:set() end
   return nn.utils.clear(self, 'gradInput')
end
