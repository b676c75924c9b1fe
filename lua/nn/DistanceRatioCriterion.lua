-- nn.DistanceRatioCriterion(sizeAverage=true): the triplet loss of {X, Y}, X the
-- distances between similar samples, Y between dissimilar ones:
--   sum -log(exp(-X) / (exp(-X) + exp(-Y))) = sum X + log(exp(-X) + exp(-Y)),
-- divided by the batch size when sizeAverage.
local DistanceRatioCriterion, parent = torch.class('nn.DistanceRatioCriterion', 'nn.Criterion')

function DistanceRatioCriterion:__init(sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
end

local function checkInput(input)
   assert(#input == 2, 'DistanceRatioCriterion: input must be a table {X, Y} of two distance tensors')
   local X, Y = input[1], input[2]
   assert(X:nElement() == Y:nElement() and X:size(1) == Y:size(1),
          "DistanceRatioCriterion: X and Y distances' sizes don't match")
   return X, Y
end

function DistanceRatioCriterion:updateOutput(input)
   local X, Y = checkInput(input)
   self._expMinusX = (self._expMinusX or X.new()):resizeAs(X):copy(X):mul(-1):exp()
   self._expMinusY = (self._expMinusY or Y.new()):resizeAs(Y):copy(Y):mul(-1):exp()
   self._sumExpMinusXY = (self._sumExpMinusXY or X.new()):resizeAs(X):copy(self._expMinusX):add(self._expMinusY)
   self._logSumExpMinusXY = (self._logSumExpMinusXY or X.new()):resizeAs(X):copy(self._sumExpMinusXY):log()
   self.loss = (self.loss or X.new()):resizeAs(X):copy(X):add(self._logSumExpMinusXY)
   self.output = self.loss:sum()
   if self.sizeAverage then self.output = self.output / X:size(1) end
   return self.output
end

-- dL/dX = 1 - exp(-X) / (exp(-X) + exp(-Y)),  dL/dY = -exp(-Y) / (exp(-X) + exp(-Y))
function DistanceRatioCriterion:updateGradInput(input)
   local X = checkInput(input)
   self.dX = (self.dX or X.new()):resizeAs(X):copy(self._expMinusX):cdiv(self._sumExpMinusXY):mul(-1):add(1)
   self.dY = (self.dY or X.new()):resizeAs(X):copy(self._expMinusY):cdiv(self._sumExpMinusXY):mul(-1)
   if self.sizeAverage then
      self.dX:div(X:size(1))
      self.dY:div(X:size(1))
   end
   self.gradInput = {self.dX, self.dY}
   return self.gradInput
end

function DistanceRatioCriterion:type(type, tensorCache)
   if type then
      for _, k in ipairs {'_expMinusX', '_expMinusY', '_sumExpMinusXY', '_logSumExpMinusXY', 'loss', 'dX', 'dY'} do
         self[k] = nil
      end
   end
   return parent.type(self, type, tensorCache)
end
