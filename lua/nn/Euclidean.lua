-- nn.Euclidean(inputSize, outputSize): y_j = || x - w_j ||, the templates w_j
-- are the columns of weight (inputSize, outputSize). 1-D or 2-D (batch) input.
local Euclidean, parent = torch.class('nn.Euclidean', 'nn.Module')

function Euclidean:__init(inputSize, outputSize)
   parent.__init(self)
   self.weight = torch.Tensor(inputSize, outputSize)
   self.gradWeight = torch.Tensor(inputSize, outputSize)
   self.gradInput:resize(inputSize)
   self.output:resize(outputSize)
   -- true: updateGradInput reuses the forward's differences (call forward first)
   self.fastBackward = true
   self:reset()
end

function Euclidean:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.weight:size(1))
   self.weight:uniform(-stdv, stdv)
   return self
end

-- input (B, I) -> self._repeat (B, I, O) holding x - w_j for every j.
function Euclidean:_differences(input)
   local I, O = self.weight:size(1), self.weight:size(2)
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error('nn.Euclidean: 1D or 2D input expected, got ' .. input:dim() .. 'D')
   end
   local batch = input:dim() == 2 and input or input:contiguous():view(1, input:nElement())
   if batch:size(2) ~= I then
      error(string.format('nn.Euclidean: input has %d features, expected %d', batch:size(2), I))
   end
   local B = batch:size(1)
   self._repeat = self._repeat or self.output.new()
   self._repeat:resize(B, I, O):copy(batch:contiguous():view(B, I, 1):expand(B, I, O))
   self._repeat:add(-1, self.weight:view(1, I, O):expand(B, I, O))
   return self._repeat, B, I, O
end

function Euclidean:updateOutput(input)
   local diff, B, I, O = self:_differences(input)
   self.output:norm(diff, 2, 2)
   if input:dim() == 1 then self.output:resize(O) else self.output:resize(B, O) end
   return self.output
end

-- d y_j / d x = (x - w_j) / y_j; self._repeat2 (B, I, O) keeps the per-template terms.
function Euclidean:_scaledDifferences(input, gradOutput)
   if not self.fastBackward or not self._repeat then self:updateOutput(input) end
   local B, I, O = self._repeat:size(1), self._repeat:size(2), self._repeat:size(3)
   self._div = self._div or self.output.new()
   self._div:resize(B, O):copy(self.output:view(B, O)):add(1e-7)
   self._div:cdiv(gradOutput:contiguous():view(B, O), self._div)
   self._repeat2 = self._repeat2 or self.output.new()
   self._repeat2:cmul(self._repeat, self._div:view(B, 1, O):expand(B, I, O))
   return self._repeat2, B, I, O
end

function Euclidean:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local terms = self:_scaledDifferences(input, gradOutput)
   self.gradInput:sum(terms, 3)
   self.gradInput:resizeAs(input)
   return self.gradInput
end

function Euclidean:accGradParameters(input, gradOutput, scale)
   local terms = self:_scaledDifferences(input, gradOutput)
   self._sum = self._sum or self.output.new()
   self._sum:sum(terms, 1)
   self.gradWeight:add(-(scale or 1), self._sum:viewAs(self.gradWeight))
end

function Euclidean:type(type, tensorCache)
   if type then self:clearState() end
   return parent.type(self, type, tensorCache)
end

function Euclidean:clearState()
   nn.utils.clear(self, {'_input', '_output', '_gradOutput', '_weight', '_div', '_sum', '_expand', '_expand2',
                         '_expand3', '_repeat', '_repeat2'})
   return parent.clearState(self)
end
