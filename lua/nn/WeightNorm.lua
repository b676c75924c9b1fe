-- nn.WeightNorm(module, outputDim=1): reparameterizes module.weight as
-- w = g * v / ||v|| per slice along outputDim (Salimans & Kingma). v is the
-- weight with outputDim moved first, flattened to (nOut, rest); g is (nOut).
-- The module keeps its weight (rebuilt by each training forward) and bias.
local WeightNorm, parent = torch.class('nn.WeightNorm', 'nn.Decorator')

function WeightNorm:__init(module, outputDim)
   parent.__init(self, module)
   assert(module.weight, 'nn.WeightNorm: the module has no weight to normalize')
   if module.bias then
      self.bias = module.bias
      self.gradBias = module.gradBias
   end
   self.gradWeight = module.gradWeight
   self.weight = module.weight
   self.outputDim = outputDim or 1
   self.otherDims = 1
   for i = 1, self.weight:dim() do
      if i ~= self.outputDim then self.otherDims = self.otherDims * self.weight:size(i) end
   end
   self.viewIn = torch.LongStorage({self.weight:size(self.outputDim), self.otherDims})
   -- the weight's shape with outputDim moved to the front
   self.viewOut = self.weight:size()
   self.weightSize = self.weight:size()
   for i = self.outputDim - 1, 1, -1 do
      self.viewOut[i], self.viewOut[i + 1] = self.viewOut[i + 1], self.viewOut[i]
   end
   self.v = torch.Tensor(self.viewIn[1], self.viewIn[2])
   self.g = torch.Tensor(self.viewIn[1])
   self._norm = torch.Tensor(self.viewIn[1])
   self._scale = torch.Tensor(self.viewIn[1])
   self.gradG = torch.Tensor(self.viewIn[1]):zero()
   self.gradV = torch.Tensor(self.viewIn)
   self:resetInit()
end

-- outputDim first / back in place (views).
function WeightNorm:permuteIn(t)
   for i = self.outputDim - 1, 1, -1 do t = t:transpose(i, i + 1) end
   return t
end

function WeightNorm:permuteOut(t)
   for i = 1, self.outputDim - 1 do t = t:transpose(i, i + 1) end
   return t
end

-- v ~ N(0, 2 / fan-in), g = ||v|| (so w = v at first), bias 0.
function WeightNorm:resetInit(inputSize, outputSize)
   self.v:normal(0, math.sqrt(2 / self.viewIn[2]))
   self.g:norm(self.v, 2, 2)
   if self.bias then self.bias:zero() end
end

function WeightNorm:evaluate()
   if self.train ~= false then
      self:updateWeight()
      parent.evaluate(self)
   end
end

-- _norm = sqrt(||v_i||^2 + 1e-4), _scale = g / _norm, weight = permuteOut(v .* _scale)
function WeightNorm:updateWeight()
   self._norm:norm(self.v, 2, 2):pow(2):add(10e-5):sqrt()
   self._scale:copy(self.g):cdiv(self._norm)
   self._w = self._w or self.v.new()
   self._w:resizeAs(self.v):cmul(self.v, self._scale:view(self.viewIn[1], 1):expandAs(self.v))
   self.weight:copy(self:permuteOut(self._w:view(self.viewOut)))
end

function WeightNorm:updateOutput(input)
   if self.train ~= false then self:updateWeight() end
   self.output:set(self.modules[1]:updateOutput(input))
   return self.output
end

function WeightNorm:updateGradInput(input, gradOutput)
   self.gradInput:set(self.modules[1]:updateGradInput(input, gradOutput))
   return self.gradInput
end

-- The module's gradWeight D of this call gives dL/dg_i = <D_i, v_i> / _norm_i and
-- dL/dv_i = _scale_i (D_i - (dL/dg_i / _norm_i) v_i); both are accumulated.
function WeightNorm:accGradParameters(input, gradOutput, scale)
   self._gw = self._gw or self.gradWeight.new()
   self._gw:resizeAs(self.gradWeight):copy(self.gradWeight)
   self.gradWeight:zero()
   self.modules[1]:accGradParameters(input, gradOutput, scale or 1)
   local n = self.viewIn[1]
   local D = self._w or self.v.new()
   self._w = D
   D:resizeAs(self.v):copy(self:permuteIn(self.gradWeight))      -- (nOut, rest)
   self._dg = self._dg or self.g.new()
   self._t = self._t or self.v.new()
   self._t:cmul(D, self.v)
   self._dg:sum(self._t, 2)
   self._dg:resize(n):cdiv(self._norm)
   self.gradG:add(self._dg)
   self._t:copy(self.v):cmul(self._dg:cdiv(self._norm):view(n, 1):expandAs(self.v))
   D:add(-1, self._t):cmul(self._scale:view(n, 1):expandAs(D))
   self.gradV:add(D)
   self.gradWeight:add(self._gw)
end

-- v and g are not the module's weight: update through the gradients.
function WeightNorm:accUpdateGradParameters(input, gradOutput, lr)
   self:zeroGradParameters()
   self:accGradParameters(input, gradOutput, 1)
   self:updateParameters(lr)
end

function WeightNorm:zeroGradParameters()
   self.modules[1]:zeroGradParameters()
   self.gradV:zero()
   self.gradG:zero()
end

function WeightNorm:updateParameters(lr)
   self.modules[1]:updateParameters(lr)
   self.g:add(-lr, self.gradG)
   self.v:add(-lr, self.gradV)
end

function WeightNorm:parameters()
   if self.bias then return {self.v, self.g, self.bias}, {self.gradV, self.gradG, self.gradBias} end
   return {self.v, self.g}, {self.gradV, self.gradG}
end

function WeightNorm:clearState()
   nn.utils.clear(self, '_w', '_gw', '_dg', '_t')
   return parent.clearState(self)
end

-- The weight is a function of v and g: files hold neither the module's weight
-- nor its gradWeight (as Torch7's), reading rebuilds them.
function WeightNorm:write(file)
   local m = self.modules[1]
   local weight, gradWeight = m.weight, m.gradWeight
   self.weight, self.gradWeight, m.weight, m.gradWeight = nil, nil, nil, nil
   self.weightSize = self.weightSize or weight:size()
   parent.write(self, file)
   m.weight, m.gradWeight, self.weight, self.gradWeight = weight, gradWeight, weight, gradWeight
end

function WeightNorm:read(file)
   parent.read(self, file)
   if not self.weight then
      local m = self.modules[1]
      m.weight = self.v.new(self.weightSize)
      m.gradWeight = self.v.new(self.weightSize):zero()
      self.weight, self.gradWeight = m.weight, m.gradWeight
      self:updateWeight()
   end
end
