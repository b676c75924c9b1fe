-- nn.MarginRankingCriterion(margin=1): for a pair {x1, x2} of scores and y = 1
-- (x1 should rank higher) or -1: max(0, -y (x1 - x2) + margin). With 1-element
-- inputs y is a number; with batches y is a tensor and the sum is / batch when sizeAverage.
local MarginRankingCriterion, parent = torch.class('nn.MarginRankingCriterion', 'nn.Criterion')

function MarginRankingCriterion:__init(margin)
   parent.__init(self)
   self.margin = margin or 1
   self.gradInput = {torch.Tensor(1), torch.Tensor(1)}
   self.sizeAverage = true
end

function MarginRankingCriterion:updateOutput(input, y)
   if torch.type(y) == 'number' then
      self.output = math.max(0, -y * (input[1][1] - input[2][1]) + self.margin)
      return self.output
   end
   self._output = self._output or input[1].new()
   local h = self._output:resizeAs(input[1]):copy(input[2]):add(-1, input[1])
   h:cmul(y):add(self.margin):cmax(0)
   self.output = h:sum()
   if self.sizeAverage then self.output = self.output / y:size(1) end
   return self.output
end

function MarginRankingCriterion:updateGradInput(input, y)
   local g1, g2 = self.gradInput[1], self.gradInput[2]
   if torch.type(y) == 'number' then
      local active = -y * (input[1][1] - input[2][1]) + self.margin >= 0
      g1:resize(1)[1] = active and -y or 0
      g2:resize(1)[1] = active and y or 0
      return self.gradInput
   end
   self.dist = self.dist or input[1].new()
   self.mask = self.mask or input[1].new()
   local dist = self.dist:resizeAs(input[1]):copy(input[2]):add(-1, input[1]):cmul(y):add(self.margin)
   -- a pair is active where its hinge is >= 0 (Torch7's choice at exactly 0)
   self.mask:resizeAs(dist):copy(dist:ge(0))
   g1:resizeAs(dist):copy(self.mask):cmul(y):mul(-1)
   g2:resizeAs(dist):copy(self.mask):cmul(y)
   if self.sizeAverage then
      g1:div(y:size(1))
      g2:div(y:size(1))
   end
   return self.gradInput
end
