-- nn.WeightedEuclidean(inputSize, outputSize): y_j = || c_j .* (x - w_j) ||,
-- templates w_j = weight[:, j], diagonal scales c_j = diagCov[:, j] (ones at reset).
local WeightedEuclidean, parent = torch.class('nn.WeightedEuclidean', 'nn.Module')

function WeightedEuclidean:__init(inputSize, outputSize)
   parent.__init(self)
   self.weight = torch.Tensor(inputSize, outputSize)
   self.gradWeight = torch.Tensor(inputSize, outputSize)
   self.diagCov = torch.Tensor(inputSize, outputSize)
   self.gradDiagCov = torch.Tensor(inputSize, outputSize)
   -- as Torch7, fastBackward is left unset: backward recomputes the forward unless a user sets it
   self:reset()
end

function WeightedEuclidean:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.weight:size(1))
   self.weight:uniform(-stdv, stdv)
   self.diagCov:fill(1)
   return self
end

-- self._repeat (B, I, O) = x - w_j; self._repeat3 = c_j .* (x - w_j).
function WeightedEuclidean:updateOutput(input)
   local I, O = self.weight:size(1), self.weight:size(2)
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error('nn.WeightedEuclidean: 1D or 2D input expected, got ' .. input:dim() .. 'D')
   end
   local batch = input:dim() == 2 and input or input:contiguous():view(1, input:nElement())
   if batch:size(2) ~= I then
      error(string.format('nn.WeightedEuclidean: input has %d features, expected %d', batch:size(2), I))
   end
   local B = batch:size(1)
   self._repeat = self._repeat or self.output.new()
   self._repeat3 = self._repeat3 or self.output.new()
   self._repeat:resize(B, I, O):copy(batch:contiguous():view(B, I, 1):expand(B, I, O))
   self._repeat:add(-1, self.weight:view(1, I, O):expand(B, I, O))
   self._repeat3:cmul(self._repeat, self.diagCov:view(1, I, O):expand(B, I, O))
   self.output:norm(self._repeat3, 2, 2)
   if input:dim() == 1 then self.output:resize(O) else self.output:resize(B, O) end
   return self.output
end

-- self._div (B, O) = gradOutput / y (0 where y is 0).
function WeightedEuclidean:_outputScale(input, gradOutput)
   if not self.fastBackward or not self._repeat then self:updateOutput(input) end
   local B, O = self._repeat:size(1), self._repeat:size(3)
   self._div = self._div or self.output.new()
   self._div:resize(B, O):copy(self.output:view(B, O)):add(1e-7)
   self._div:cdiv(gradOutput:contiguous():view(B, O), self._div)
   self._div:maskedFill(self.output:view(B, O):eq(0), 0)
   return self._div:view(B, 1, O):expand(self._repeat:size())
end

-- d y_j / d x = c_j^2 .* (x - w_j) / y_j
function WeightedEuclidean:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local div = self:_outputScale(input, gradOutput)
   local I, O = self.weight:size(1), self.weight:size(2)
   self._repeat2 = self._repeat2 or self.output.new()
   self._repeat2:cmul(self._repeat3, self.diagCov:view(1, I, O):expand(self._repeat:size())):cmul(div)
   self.gradInput:sum(self._repeat2, 3)
   self.gradInput:resizeAs(input)
   return self.gradInput
end

-- d y_j / d w_j = -c_j^2 .* (x - w_j) / y_j;  d y_j / d c_j = c_j .* (x - w_j)^2 / y_j
function WeightedEuclidean:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local div = self:_outputScale(input, gradOutput)
   local I, O = self.weight:size(1), self.weight:size(2)
   local shape = self._repeat:size()
   self._repeat2 = self._repeat2 or self.output.new()
   self._sum = self._sum or self.output.new()
   self._repeat2:cmul(self._repeat3, self.diagCov:view(1, I, O):expand(shape)):cmul(div)
   self._sum:sum(self._repeat2, 1)
   self.gradWeight:add(-scale, self._sum:view(I, O))
   self._repeat2:cmul(self._repeat3, self._repeat):cmul(div)
   self._sum:sum(self._repeat2, 1)
   self.gradDiagCov:add(scale, self._sum:view(I, O))
end

function WeightedEuclidean:parameters()
   return {self.weight, self.diagCov}, {self.gradWeight, self.gradDiagCov}
end

function WeightedEuclidean:accUpdateGradParameters(input, gradOutput, lr)
   local gradWeight, gradDiagCov = self.gradWeight, self.gradDiagCov
   self.gradWeight, self.gradDiagCov = self.weight, self.diagCov
   self:accGradParameters(input, gradOutput, -lr)
   self.gradWeight, self.gradDiagCov = gradWeight, gradDiagCov
end

function WeightedEuclidean:type(type, tensorCache)
   if type then self:clearState() end
   return parent.type(self, type, tensorCache)
end

function WeightedEuclidean:clearState()
   nn.utils.clear(self, {'_input', '_output', '_gradOutput', '_weight', '_div', '_sum', '_expand', '_expand2',
                         '_expand3', '_expand4', '_repeat', '_repeat2', '_repeat3'})
   return parent.clearState(self)
end
