-- nn.L1HingeEmbeddingCriterion(margin=1): for a pair {x1, x2} and y = 1 or -1,
-- d = ||x1 - x2||_1 when y = 1, max(0, margin - d) when y = -1.
local L1HingeEmbeddingCriterion, parent = torch.class('nn.L1HingeEmbeddingCriterion', 'nn.Criterion')

function L1HingeEmbeddingCriterion:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

function L1HingeEmbeddingCriterion:updateOutput(input, y)
   self.output = input[1]:dist(input[2], 1)
   if y == -1 then self.output = math.max(0, self.margin - self.output) end
   return self.output
end

function L1HingeEmbeddingCriterion:updateGradInput(input, y)
   local g1, g2 = self.gradInput[1], self.gradInput[2]
   g1:resizeAs(input[1]):copy(input[1]):add(-1, input[2])
   local dist = g1:norm(1)
   -- the L1 norm's subgradient; at a tie (x1 = x2) Torch7 picks a random side
   g1:apply(function(v)
      if v > 0 then return 1 elseif v < 0 then return -1 end
      return 2 * torch.random(2) - 3
   end)
   if y == -1 then
      if dist > self.margin then g1:zero() else g1:mul(-1) end
   end
   g2:resizeAs(input[2]):zero():add(-1, g1)
   return self.gradInput
end
