-- nn.WeightedMSECriterion(w): MSECriterion against the target scaled element-wise
-- by w (w has input's shape, or one frame's shape for a batch): sum (x - w .* y)^2.
local WeightedMSECriterion, parent = torch.class('nn.WeightedMSECriterion', 'nn.MSECriterion')

function WeightedMSECriterion:__init(w)
   parent.__init(self)
   self.weight = w:clone()
end

local function weightedTarget(self, input, target)
   self.buffer = self.buffer or input.new()
   self.buffer:resizeAs(input):copy(target)
   if input:dim() - 1 == self.weight:dim() then
      self.buffer:cmul(nn.utils.addSingletonDimension(self.weight, 1):expandAs(input))
   else
      self.buffer:cmul(self.weight:viewAs(input))
   end
   return self.buffer
end

function WeightedMSECriterion:updateOutput(input, target)
   return parent.updateOutput(self, input, weightedTarget(self, input, target))
end

function WeightedMSECriterion:updateGradInput(input, target)
   return parent.updateGradInput(self, input, weightedTarget(self, input, target))
end
