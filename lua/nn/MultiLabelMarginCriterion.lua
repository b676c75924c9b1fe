-- nn.MultiLabelMarginCriterion(): multi-class multi-label hinge loss. Each target
-- row lists the frame's 1-based classes, ended by the first 0:
--   sum_{j in targets, i not in targets} max(0, 1 - x[j] + x[i]) / dim, / nframe when sizeAverage.
local MultiLabelMarginCriterion, parent = torch.class('nn.MultiLabelMarginCriterion', 'nn.Criterion')
local C = torch.C
local check = torch._check
local kernels = nn._criterionKernels
local loss = kernels.loss

function MultiLabelMarginCriterion:__init()
   parent.__init(self)
   self.sizeAverage = true
   self.isTarget = torch.Tensor()
end

local function isTargetFor(self, input)
   if torch.typename(self.isTarget) ~= input:type() then self.isTarget = input.new() end
   return self.isTarget
end

function MultiLabelMarginCriterion:updateOutput(input, target)
   local t = kernels.longTarget(self, '_target', target)
   if torch.typename(self.output_tensor) ~= input:type() then self.output_tensor = input.new(1) end
   check(C.lt_nn_MultiLabelMarginCriterion_updateOutput(input._c, t._c, self.output_tensor._c,
         isTargetFor(self, input)._c, self.sizeAverage and 1 or 0, loss), 2)
   self.output = loss[0]   -- output_tensor[1]'s value, without reading a device tensor back
   return self.output
end

function MultiLabelMarginCriterion:updateGradInput(input, target)
   local t = kernels.longTarget(self, '_target', target)
   check(C.lt_nn_MultiLabelMarginCriterion_updateGradInput(input._c, t._c, self.gradInput._c,
         isTargetFor(self, input)._c, self.sizeAverage and 1 or 0), 2)
   return self.gradInput
end
