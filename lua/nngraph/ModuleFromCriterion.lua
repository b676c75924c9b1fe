-- nn.ModuleFromCriterion: a criterion as a module taking {prediction, target};
-- its output is a one-element tensor holding the loss. The gradient with respect
-- to the target is zero (criteria give none).
local ModuleFromCriterion = torch.class('nn.ModuleFromCriterion', 'nn.Module')

function ModuleFromCriterion:__init(criterion)
   self.criterion = criterion
   self.output = torch.Tensor(1)
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

function ModuleFromCriterion:updateOutput(input)
   self.output[1] = self.criterion:updateOutput(input[1], input[2])
   return self.output
end

-- The criterion's gradient, scaled by the (one-element) gradOutput, into `into`
-- (a tensor, or a table of tensors when the criterion's prediction is a table).
local function scaledInto(into, grad, scale)
   if torch.isTensor(grad) then
      if not torch.isTensor(into) then into = grad.new() end
      return into:resizeAs(grad):copy(grad):mul(scale)
   end
   if type(into) ~= 'table' then into = {} end
   for i = 1, #grad do into[i] = scaledInto(into[i], grad[i], scale) end
   return into
end

function ModuleFromCriterion:updateGradInput(input, gradOutput)
   local prediction, target = input[1], input[2]
   local grad = self.criterion:updateGradInput(prediction, target)
   self.gradInput[1] = scaledInto(self.gradInput[1], grad, gradOutput[1])
   if not torch.isTensor(self.gradInput[2]) then self.gradInput[2] = target.new() end
   self.gradInput[2]:resizeAs(target):zero()
   return self.gradInput
end
