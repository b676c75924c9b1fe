-- nn.MSECriterion(sizeAverage=true): sum((x - y)^2), divided by n when sizeAverage.
local MSECriterion, parent = torch.class('nn.MSECriterion', 'nn.Criterion')

function MSECriterion:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function checkSizes(input, target)
   if input:nElement() ~= target:nElement() then
      error(string.format('input and target size mismatch (%d vs %d elements)', input:nElement(), target:nElement()), 3)
   end
end

-- target in input's shape (a non-contiguous target of another shape is copied first)
local function targetAs(input, target)
   if target:isSameSizeAs(input) then return target end
   return target:contiguous():viewAs(input)
end

function MSECriterion:updateOutput(input, target)
   checkSizes(input, target)
   self._diff = self._diff or input.new()
   self._diff:resizeAs(input):copy(input):add(-1, targetAs(input, target))
   local loss = self._diff:dot(self._diff)
   if self.sizeAverage then loss = loss / input:nElement() end
   self.output = loss
   return self.output
end

function MSECriterion:updateGradInput(input, target)
   checkSizes(input, target)
   local norm = self.sizeAverage and 2 / input:nElement() or 2
   self.gradInput:resizeAs(input):copy(input):add(-1, targetAs(input, target)):mul(norm)
   return self.gradInput
end
