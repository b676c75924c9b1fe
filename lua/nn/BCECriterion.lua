-- nn.BCECriterion(weights=nil, sizeAverage=true): binary cross-entropy of
-- probabilities x in [0, 1] against targets y:
--   -sum w (y log(x) + (1 - y) log(1 - x)), divided by n when sizeAverage;
-- weights (1-D, one per column) scale each column of a batch.
local BCECriterion, parent = torch.class('nn.BCECriterion', 'nn.Criterion')
local C = torch.C
local kernels = nn._criterionKernels

function BCECriterion:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights ~= nil then
      assert(weights:dim() == 1, 'weights input should be 1-D Tensor')
      self.weights = weights
   end
end

function BCECriterion:__len()
   return self.weights and #self.weights or 0
end

-- the weights spread over target's shape (one weight per column of a batch)
local function weightsFor(self, input, target)
   local w = self.weights
   if w == nil then return nil end
   if input:nElement() ~= target:nElement() then
      error(string.format('BCECriterion: input and target size mismatch (%d vs %d elements)',
                          input:nElement(), target:nElement()), 3)
   end
   if target:dim() ~= 1 then w = w:view(1, target:size(2)):expandAs(target) end
   return kernels.asInputType(self, '_weights', w, input)
end

function BCECriterion:updateOutput(input, target)
   return kernels.pointwiseOutput(self, C.LT_CRIT_BCE, input, target, weightsFor(self, input, target))
end

function BCECriterion:updateGradInput(input, target)
   return kernels.pointwiseGradInput(self, C.LT_CRIT_BCE, input, target, weightsFor(self, input, target))
end
