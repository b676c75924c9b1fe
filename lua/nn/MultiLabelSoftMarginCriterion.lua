-- nn.MultiLabelSoftMarginCriterion(weights=nil, sizeAverage=true): per-label
-- logistic loss of scores x against 0/1 targets t (BCE of sigmoid(x), computed
-- stably): sum w (log(1 + exp(-|x|)) + max(x, 0) - t x), / n when sizeAverage;
-- weights (1-D, one per label) scale each column of a batch.
local MultiLabelSoftMarginCriterion, parent = torch.class('nn.MultiLabelSoftMarginCriterion', 'nn.Criterion')

function MultiLabelSoftMarginCriterion:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights ~= nil then
      assert(weights:dim() == 1, 'weights input should be 1-D Tensor')
      self.weights = weights
   end
   self.sigmoid = nn.Sigmoid()
end

local function weightsFor(self, target)
   local w = self.weights
   if w ~= nil and target:dim() ~= 1 then w = w:view(1, target:size(2)):expandAs(target) end
   return w
end

function MultiLabelSoftMarginCriterion:updateOutput(input, target)
   local w = weightsFor(self, target)
   self.sigmoid:updateOutput(input)
   self._buffer1 = self._buffer1 or input.new()
   self._buffer2 = self._buffer2 or input.new()
   local loss, relu = self._buffer2, self._buffer1
   loss:resizeAs(input):copy(input):abs():mul(-1):exp():log1p()       -- log(1 + exp(-|x|))
   relu:resizeAs(input):copy(input):cmax(0)
   loss:add(relu):addcmul(-1, target:viewAs(input), input)             -- + max(x, 0) - t x
   if w ~= nil then loss:cmul(w) end
   self.output = loss:sum()
   if self.sizeAverage then self.output = self.output / input:nElement() end
   return self.output
end

function MultiLabelSoftMarginCriterion:updateGradInput(input, target)
   local w = weightsFor(self, target)
   self.gradInput:resizeAs(input):copy(self.sigmoid.output):add(-1, target:viewAs(input))
   if w ~= nil then self.gradInput:cmul(w) end
   if self.sizeAverage then self.gradInput:div(input:nElement()) end
   return self.gradInput
end
