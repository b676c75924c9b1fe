-- nn.CriterionTable(criterion): a module whose input is {input, target} and whose output is
-- criterion:forward(input, target).
local CriterionTable, parent = torch.class('nn.CriterionTable', 'nn.Module')

function CriterionTable:__init(criterion)
   parent.__init(self)
   self.criterion = criterion
   self.gradInput = {criterion.gradInput}
end

function CriterionTable:updateOutput(input)
   self.output = self.criterion:updateOutput(unpack(input))
   return self.output
end

function CriterionTable:updateGradInput(input, gradOutput)
   self.gradInput[1] = self.criterion:updateGradInput(unpack(input))
   return self.gradInput
end
