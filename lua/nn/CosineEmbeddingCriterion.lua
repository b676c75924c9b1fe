-- nn.CosineEmbeddingCriterion(margin=0): for pairs {x1, x2} (vectors or batches of
-- rows) and y = 1 or -1 per pair: 1 - cos(x1, x2) when y = 1,
-- max(0, cos(x1, x2) - margin) when y = -1; summed, / batch when sizeAverage.
local CosineEmbeddingCriterion, parent = torch.class('nn.CosineEmbeddingCriterion', 'nn.Criterion')

local EPS = 1e-12  -- keeps the norms of zero rows from dividing by 0

function CosineEmbeddingCriterion:__init(margin)
   parent.__init(self)
   self.margin = margin or 0
   self.gradInput = {torch.Tensor(), torch.Tensor()}
   self.sizeAverage = true
end

local function pairRows(self, input, y)
   local a, b = input[1], input[2]
   if type(y) == 'number' then
      self._y = torch.typename(self._y) == a:type() and self._y or a.new(1)
      self._y[1] = y
      y = self._y
   end
   if a:dim() == 1 then a, b = a:view(1, -1), b:view(1, -1) end
   return a, b, y:contiguous():view(-1)
end

function CosineEmbeddingCriterion:updateOutput(input, y)
   local a, b, yv = pairRows(self, input, y)
   self.buffer = self.buffer or a.new()
   -- unused here, but Torch7's code makes it together with `buffer` (and only when that is
   -- missing): a file of ours needs it to run in Torch7
   self._idx = self._idx or (a:type():find('Cuda') and a.new() or torch.ByteTensor())
   self.w1 = (self.w1 or a.new()):sum(self.buffer:cmul(a, b), 2)                    -- a . b
   self.w22 = (self.w22 or a.new()):sum(self.buffer:cmul(a, a), 2):add(EPS):pow(-1)  -- 1 / |a|^2
   self.w32 = (self.w32 or a.new()):sum(self.buffer:cmul(b, b), 2):add(EPS):pow(-1)  -- 1 / |b|^2
   self.w = (self.w or a.new()):resizeAs(self.w22):copy(self.w22):cmul(self.w32):sqrt()  -- 1 / (|a| |b|)
   local cos = (self._cos or a.new()):cmul(self.w1, self.w):view(-1)
   self._cos = cos
   self._outputs = (self._outputs or a.new()):resizeAs(cos)
   local n = cos:size(1)
   for i = 1, n do
      local c = cos[i]
      self._outputs[i] = yv[i] == 1 and 1 - c or (yv[i] == -1 and math.max(0, c - self.margin) or 0)
   end
   self.output = self._outputs:sum()
   if self.sizeAverage then self.output = self.output / n end
   return self.output
end

-- d cos / d a = (b - (a . b) a / |a|^2) / (|a| |b|), and symmetrically for b
function CosineEmbeddingCriterion:updateGradInput(input, y)
   local a, b, yv = pairRows(self, input, y)
   local ga, gb = self.gradInput[1], self.gradInput[2]
   ga:resizeAs(a):copy(b):addcmul(-1, torch.cmul(self.w1, self.w22):expandAs(a), a):cmul(self.w:expandAs(a))
   gb:resizeAs(b):copy(a):addcmul(-1, torch.cmul(self.w1, self.w32):expandAs(b), b):cmul(self.w:expandAs(b))
   local n = a:size(1)
   for i = 1, n do
      -- the loss's slope in cos: -1 for y = 1, 1 for an active y = -1 pair, else 0
      local s = 0
      if yv[i] == 1 then s = -1 elseif yv[i] == -1 and self._outputs[i] > 0 then s = 1 end
      ga[i]:mul(s)
      gb[i]:mul(s)
   end
   if self.sizeAverage then
      ga:div(n)
      gb:div(n)
   end
   if input[1]:dim() == 1 then
      ga:resize(a:size(2))
      gb:resize(b:size(2))
   end
   return self.gradInput
end
