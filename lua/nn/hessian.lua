-- nn.hessian: diagonal Hessian estimates (LeCun's "Efficient BackProp" rule), experimental as in
-- Torch7 and off until nn.hessian.enable() adds the methods
--   module:updateDiagHessianInput(input, diagHessianOutput) -> module.diagHessianInput
--   module:accDiagHessianParameters(input, diagHessianOutput) -> diagHessianWeight / diagHessianBias
--   module:initDiagHessianParameters()
-- to the classes that support them, and makes parameters() / getParameters() also return the
-- diagonal Hessian tensors. A layer linear in its weights back-propagates the Hessian with squared
-- weights and accumulates it with squared inputs; a pointwise layer multiplies by f'(x)^2.
nn.hessian = {}
local hessian = nn.hessian

local function swap(module, a, b)
   module[a], module[b] = module[b], module[a]
end

-- diagHessianInput = updateGradInput(input, diagHessianOutput) with each weight field in w
-- temporarily replaced by its square (kept in the field named by wsq).
function hessian.updateDiagHessianInput(module, input, diagHessianOutput, w, wsq)
   if #w ~= #wsq then error('nn.hessian: the number of weights differs from the number of weight squares', 2) end
   module.diagHessianInput = module.diagHessianInput or input.new()
   module.diagHessianInput:resizeAs(input):zero()
   local gradInput = module.gradInput
   module.gradInput = module.diagHessianInput
   for i = 1, #w do
      module[wsq[i]] = module[wsq[i]] or module[w[i]].new()
      torch.cmul(module[wsq[i]]:resizeAs(module[w[i]]), module[w[i]], module[w[i]])
      swap(module, w[i], wsq[i])
   end
   module.updateGradInput(module, input, diagHessianOutput)
   for i = 1, #w do swap(module, w[i], wsq[i]) end
   module.gradInput = gradInput
end

-- The Hessian fields hw accumulate accGradParameters(input^2, diagHessianOutput), run with them
-- in place of the gradient fields gw.
function hessian.accDiagHessianParameters(module, input, diagHessianOutput, gw, hw)
   if #gw ~= #hw then error('nn.hessian: the number of gradients differs from the number of hessians', 2) end
   module.inputSq = module.inputSq or input.new()
   torch.cmul(module.inputSq:resizeAs(input), input, input)
   for i = 1, #gw do
      module[hw[i]] = module[hw[i]] or module[gw[i]].new():resizeAs(module[gw[i]])
      swap(module, gw[i], hw[i])
   end
   local output = module.output
   module.output = output.new():resizeAs(output)
   module.forward(module, module.inputSq)
   module.accGradParameters(module, module.inputSq, diagHessianOutput, 1)
   for i = 1, #gw do swap(module, gw[i], hw[i]) end
   module.output = output
end

-- Pointwise f: diagHessianInput = f'(x)^2 * diagHessianOutput.
function hessian.updateDiagHessianInputPointWise(module, input, diagHessianOutput)
   local ones = diagHessianOutput.new():resizeAs(diagHessianOutput):fill(1)
   hessian.updateDiagHessianInput(module, input, ones, {}, {})
   module.diagHessianInput:cmul(module.diagHessianInput):cmul(diagHessianOutput)
end

function hessian.initDiagHessianParameters(module, gw, hw)
   module.diagHessianInput = module.diagHessianInput or module.gradInput.new()
   for i = 1, #gw do module[hw[i]] = module[hw[i]] or module[gw[i]].new():resizeAs(module[gw[i]]) end
end

local GRADS, HESSIANS = {'gradWeight', 'gradBias'}, {'diagHessianWeight', 'diagHessianBias'}

-- Layers linear in their inputs and weights, and the weight fields squared for their input Hessian.
local LINEAR_LAYERS = {
   Linear = {'weight'}, SpatialConvolution = {'weight'}, SpatialConvolutionLocal = {'weight'},
   SpatialFullConvolution = {'weight'}, SpatialConvolutionMap = {'weight', 'bias'},
   SpatialFullConvolutionMap = {'weight'},
}
local POINTWISE = {'Tanh', 'Square', 'Sqrt'}

local function installLinear(class, weights)
   local squares = {}
   for i, name in ipairs(weights) do squares[i] = name .. 'Sq' end
   function class:updateDiagHessianInput(input, diagHessianOutput)
      hessian.updateDiagHessianInput(self, input, diagHessianOutput, weights, squares)
      return self.diagHessianInput
   end
   function class:accDiagHessianParameters(input, diagHessianOutput)
      hessian.accDiagHessianParameters(self, input, diagHessianOutput, GRADS, HESSIANS)
   end
   function class:initDiagHessianParameters()
      hessian.initDiagHessianParameters(self, GRADS, HESSIANS)
   end
end

local enabled = false

function hessian.enable()
   if enabled then return end
   enabled = true

   function nn.Module:updateDiagHessianInput()
      error(torch.typename(self) .. ':updateDiagHessianInput() is undefined', 2)
   end
   function nn.Module.accDiagHessianParameters() end
   function nn.Module.initDiagHessianParameters() end

   function nn.Sequential:initDiagHessianParameters()
      for _, m in ipairs(self.modules) do m:initDiagHessianParameters() end
   end
   -- Backwards through the chain, each module seeing its predecessor's output as input.
   function nn.Sequential:updateDiagHessianInput(input, diagHessianOutput)
      local h = diagHessianOutput
      for i = #self.modules, 1, -1 do
         h = self.modules[i]:updateDiagHessianInput(i > 1 and self.modules[i - 1].output or input, h)
      end
      self.diagHessianInput = h
      return h
   end
   function nn.Sequential:accDiagHessianParameters(input, diagHessianOutput)
      local h = diagHessianOutput
      for i = #self.modules, 1, -1 do
         local m = self.modules[i]
         m:accDiagHessianParameters(i > 1 and self.modules[i - 1].output or input, h)
         h = m.diagHessianInput
      end
   end

   function nn.Criterion:updateDiagHessianInput()
      error(torch.typename(self) .. ':updateDiagHessianInput() is undefined', 2)
   end
   -- (y - t)^2 summed (or averaged): the second derivative is 2 (or 2 / n) everywhere.
   local function mseDiagHessian(self, input)
      self.diagHessianInput = self.diagHessianInput or input.new()
      self.diagHessianInput:resizeAs(input):fill(self.sizeAverage and 2 / input:nElement() or 2)
      return self.diagHessianInput
   end
   if nn.MSECriterion then nn.MSECriterion.updateDiagHessianInput = mseDiagHessian end
   if nn.WeightedMSECriterion then nn.WeightedMSECriterion.updateDiagHessianInput = mseDiagHessian end
   if nn.L1Cost then
      function nn.L1Cost:updateDiagHessianInput(input)
         self.diagHessianInput = self.diagHessianInput or input.new()
         self.diagHessianInput:resizeAs(input):fill(1)
         self.diagHessianInput[torch.eq(input, 0)] = 0
         return self.diagHessianInput
      end
   end

   for name, weights in pairs(LINEAR_LAYERS) do
      if nn[name] then installLinear(nn[name], weights) end
   end
   for _, name in ipairs(POINTWISE) do
      if nn[name] then
         nn[name].updateDiagHessianInput = function(self, input, diagHessianOutput)
            hessian.updateDiagHessianInputPointWise(self, input, diagHessianOutput)
            return self.diagHessianInput
         end
      end
   end
   if nn.TanhShrink then
      -- x - tanh(x): Torch7 adds the tanh part's Hessian to diagHessianOutput
      function nn.TanhShrink:updateDiagHessianInput(input, diagHessianOutput)
         hessian.updateDiagHessianInputPointWise(self.tanh, input, diagHessianOutput)
         self.diagHessianInput = self.diagHessianInput or input.new():resizeAs(input)
         torch.add(self.diagHessianInput, self.tanh.diagHessianInput, diagHessianOutput)
         return self.diagHessianInput
      end
   end
   function nn.Reshape:updateDiagHessianInput(input, diagHessianOutput)
      self.diagHessianInput = self.diagHessianInput or input.new()
      self.diagHessianInput:set(diagHessianOutput:contiguous()):resizeAs(input)
      return self.diagHessianInput
   end

   -- parameters() and getParameters() also hand out the diagonal Hessians.
   function nn.Module:parameters()
      if self.weight and self.bias then
         return {self.weight, self.bias}, {self.gradWeight, self.gradBias},
            {self.diagHessianWeight, self.diagHessianBias}
      elseif self.weight then
         return {self.weight}, {self.gradWeight}, {self.diagHessianWeight}
      elseif self.bias then
         return {self.bias}, {self.gradBias}, {self.diagHessianBias}
      end
   end
   function nn.Module:getParameters()
      local w, gw, hw = self:parameters()
      local flatHessian
      if hw and hw[1] then flatHessian = nn.Module.flatten(hw) end
      return nn.Module.flatten(w), nn.Module.flatten(gw), flatHessian
   end
   function nn.Sequential:parameters()
      local w, gw, hw = {}, {}, {}
      local function append(to, from)
         if torch.type(from) == 'table' then
            for i = 1, #from do append(to, from[i]) end
         else
            to[#to + 1] = from
         end
      end
      for _, m in ipairs(self.modules) do
         local mw, mgw, mhw = m:parameters()
         if mw then
            append(w, mw)
            append(gw, mgw)
            append(hw, mhw)
         end
      end
      return w, gw, hw
   end
end
