-- nn.ClassSimplexCriterion(nClasses): MSECriterion between the input and the
-- target class's vertex of a regular simplex (nClasses vertices, unit norm,
-- centred at 0, embedded in nClasses dimensions). Target: a class number or a
-- 1-D tensor of classes for a batch.
local ClassSimplexCriterion, parent = torch.class('nn.ClassSimplexCriterion', 'nn.MSECriterion')

-- the n + 1 vertices (rows) of a regular simplex in R^n, centred at the origin, unit norm
local function simplexVertices(n)
   local v = torch.zeros(n + 1, n)
   for k = 1, n do
      -- the k-th vertex's last non-zero coordinate makes its norm 1 ...
      local rest = k > 1 and v[{{k}, {1, k - 1}}]:norm() or 0
      v[k][k] = math.sqrt(1 - rest * rest)
      -- ... and the later vertices share one k-th coordinate so that all pairs have dot -1/n
      v[{{k + 1, n + 1}, {k}}]:fill((v[k][k] ^ 2 - 1 - 1 / n) / v[k][k])
   end
   return v
end

function ClassSimplexCriterion:__init(nClasses)
   parent.__init(self)
   assert(nClasses and nClasses > 1 and nClasses == math.floor(nClasses),
          'Required positive integer argument nClasses > 1')
   self.nClasses = nClasses
   -- one dimension more than the simplex needs (it trains better, per Torch7)
   local v = simplexVertices(nClasses - 1)
   self.simplex = torch.cat(v, torch.zeros(v:size(1), nClasses - v:size(2)), 2)
   self._target = torch.Tensor(nClasses)
end

local function embedTarget(self, target)
   if torch.type(target) == 'number' then
      self._target:resize(self.nClasses):copy(self.simplex[target])
   elseif torch.isTensor(target) then
      assert(target:dim() == 1, 'ClassSimplexCriterion: target must be a number or a 1-D tensor of classes')
      self._target:resize(target:size(1), self.nClasses)
      for i = 1, target:size(1) do self._target[i]:copy(self.simplex[target[i]]) end
   end
   return self._target
end

function ClassSimplexCriterion:updateOutput(input, target)
   local t = embedTarget(self, target)
   assert(input:nElement() == t:nElement(), 'ClassSimplexCriterion: input should have nClasses columns')
   return parent.updateOutput(self, input, nn._criterionKernels.asInputType(self, '_typedTarget', t, input))
end

-- (uses the target embedded by the last updateOutput, as Torch7)
function ClassSimplexCriterion:updateGradInput(input, target)
   local t = self._target
   assert(input:nElement() == t:nElement(), 'ClassSimplexCriterion: input should have nClasses columns')
   return parent.updateGradInput(self, input, nn._criterionKernels.asInputType(self, '_typedTarget', t, input))
end

-- scores of each class: the input's dot product with every vertex
function ClassSimplexCriterion:getPredictions(input)
   if input:dim() == 1 then input = input:view(1, -1) end
   return torch.mm(input, self.simplex:t())
end

function ClassSimplexCriterion:getTopPrediction(input)
   local scores = self:getPredictions(input)
   local _, best = scores:max(scores:nDimension())
   return best:view(-1)
end
