-- nn.L1Penalty(l1weight, sizeAverage=false, provideOutput=true): identity in
-- forward; records loss = l1weight * ||x||_1 (divided by nElement with
-- sizeAverage) and adds its gradient l1weight * sign(x) in backward.
local L1Penalty, parent = torch.class('nn.L1Penalty', 'nn.Module')

function L1Penalty:__init(l1weight, sizeAverage, provideOutput)
   parent.__init(self)
   self.l1weight = l1weight
   self.sizeAverage = sizeAverage or false
   if provideOutput == nil then self.provideOutput = true else self.provideOutput = provideOutput end
end

function L1Penalty:_weight(input)
   return self.sizeAverage == true and self.l1weight / input:nElement() or self.l1weight
end

function L1Penalty:updateOutput(input)
   self.loss = self:_weight(input) * input:norm(1)
   self.output = input
   return self.output
end

-- provideOutput == false: the layer is a sink, gradOutput is ignored.
function L1Penalty:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(input):copy(input):sign():mul(self:_weight(input))
   if self.provideOutput == true then self.gradInput:add(gradOutput) end
   return self.gradInput
end
