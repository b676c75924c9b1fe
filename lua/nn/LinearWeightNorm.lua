-- nn.LinearWeightNorm(inputSize, outputSize, bias=true, eps=1e-16): a Linear whose
-- weight rows are w_i = g_i * v_i / ||v_i|| (Salimans & Kingma's weight
-- normalization); the parameters are v (outputSize, inputSize), g (outputSize, 1)
-- and bias. weight holds the current w (rebuilt by every training forward).
local LinearWeightNorm, parent = torch.class('nn.LinearWeightNorm', 'nn.Linear')

function LinearWeightNorm:__init(inputSize, outputSize, bias, eps)
   nn.Module.__init(self)   -- not Linear's: the parameters differ
   bias = (bias == nil) and true or bias
   self.eps = eps or 1e-16
   self.outputSize = outputSize
   self.inputSize = inputSize
   self.v = torch.Tensor(outputSize, inputSize)
   self.gradV = torch.Tensor(outputSize, inputSize)
   self.weight = torch.Tensor(outputSize, inputSize)
   self.g = torch.Tensor(outputSize, 1)
   self.gradG = torch.Tensor(outputSize, 1)
   self.norm = torch.Tensor(outputSize, 1)
   self.scale = torch.Tensor(outputSize, 1)
   if bias then
      self.bias = torch.Tensor(outputSize)
      self.gradBias = torch.Tensor(outputSize)
   end
   self:reset()
end

function LinearWeightNorm:evaluate()
   if self.train ~= false then self:updateWeightMatrix() end
   parent.evaluate(self)
end

-- g = ||w_i||, v = w: the same function as the plain weight matrix.
function LinearWeightNorm:initFromWeight(weight)
   weight = weight or self.weight
   self.g:norm(weight, 2, 2):clamp(self.eps, math.huge)
   self.v:copy(weight)
   return self
end

function LinearWeightNorm.fromLinear(linear)
   local module = nn.LinearWeightNorm(linear.weight:size(2), linear.weight:size(1), torch.isTensor(linear.bias))
   module.weight:copy(linear.weight)
   module:initFromWeight()
   if linear.bias then module.bias:copy(linear.bias) end
   return module
end

function LinearWeightNorm:toLinear()
   self:updateWeightMatrix()
   local module = nn.Linear(self.inputSize, self.outputSize, torch.isTensor(self.bias))
   module.weight:copy(self.weight)
   if self.bias then module.bias:copy(self.bias) end
   return module
end

function LinearWeightNorm:parameters()
   if self.bias then
      return {self.v, self.g, self.bias}, {self.gradV, self.gradG, self.gradBias}
   end
   return {self.v, self.g}, {self.gradV, self.gradG}
end

function LinearWeightNorm:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.inputSize)
   self.weight:uniform(-stdv, stdv)
   self:initFromWeight()
   if self.bias then self.bias:uniform(-stdv, stdv) end
end

-- norm = ||v_i|| (at least eps), scale = g / norm, weight = v .* scale
function LinearWeightNorm:updateWeightMatrix()
   if self.norm:dim() == 0 then self.norm:resizeAs(self.g) end
   if self.scale:dim() == 0 then self.scale:resizeAs(self.g) end
   if self.weight:dim() == 0 then self.weight:resizeAs(self.v) end
   self.norm:norm(self.v, 2, 2):clamp(self.eps, math.huge)
   self.scale:cdiv(self.g, self.norm)
   self.weight:cmul(self.v, self.scale:expandAs(self.v))
end

function LinearWeightNorm:updateOutput(input)
   if self.train ~= false then self:updateWeightMatrix() end
   return parent.updateOutput(self, input)
end

-- With D = dL/dw of this call: dL/dg_i = <D_i, v_i> / ||v_i||,
-- dL/dv_i = scale_i D_i - scale_i (dL/dg_i / ||v_i||) v_i.
function LinearWeightNorm:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   self._gradW = self._gradW or self.v.new()
   self._gradG = self._gradG or self.g.new()
   local D = self._gradW:resizeAs(self.v):zero()
   if input:dim() == 1 then
      D:addr(scale, gradOutput, input)
      if self.bias then self.gradBias:add(scale, gradOutput) end
   elseif input:dim() == 2 then
      D:addmm(scale, gradOutput:t(), input)
      if self.bias then
         self:updateAddBuffer(input)
         self.gradBias:addmv(scale, gradOutput:t(), self.addBuffer)
      end
   end
   local norm, s = self.norm:expandAs(self.v), self.scale:expandAs(self.v)
   self.weight:cmul(D, self.v):cdiv(norm)
   self._gradG:sum(self.weight, 2)
   self.gradG:add(self._gradG)
   self.gradV:addcmul(1, D, s)
   self.weight:cmul(self.v, s):cdiv(norm):cmul(self._gradG:expandAs(self.v))
   self.gradV:add(-1, self.weight)
   -- weight served as a buffer above: rebuild it
   self.weight:cmul(self.v, s)
end

function LinearWeightNorm:defaultAccUpdateGradParameters(input, gradOutput, lr)
   local gradV, gradG, gradBias = self.gradV, self.gradG, self.gradBias
   self.gradV, self.gradG, self.gradBias = self.v, self.g, self.bias
   self:accGradParameters(input, gradOutput, -lr)
   self.gradV, self.gradG, self.gradBias = gradV, gradG, gradBias
end
LinearWeightNorm.accUpdateGradParameters = LinearWeightNorm.defaultAccUpdateGradParameters

function LinearWeightNorm:clearState()
   nn.utils.clear(self, 'weight', 'norm', 'scale', '_gradW', '_gradG')
   return parent.clearState(self)
end

function LinearWeightNorm:__tostring__()
   return torch.type(self) .. string.format('(%d -> %d)', self.inputSize, self.outputSize) ..
          (self.bias == nil and ' without bias' or '')
end
