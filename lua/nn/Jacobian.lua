-- nn.Jacobian: finite-difference checks of a module's derivatives (nn's test.lua uses them).
-- Jacobians are (number of elements of the variable) x (number of output elements), in the
-- default tensor type. forward* perturb a variable (the input or a parameter tensor) in place and
-- differentiate numerically; backward* build the same matrix from unit gradOutputs.
nn.Jacobian = {}
local Jacobian = nn.Jacobian

-- A flat view of t sharing its storage (perturbing it perturbs t).
function Jacobian._flat(t, what)
   if not t:isContiguous() then error('nn.Jacobian: the ' .. what .. ' must be contiguous', 3) end
   return t:view(t:nElement())
end

-- Fill t with values drawn uniformly from [minval, maxval] (defaults -2, 2).
function Jacobian._randomize(t, minval, maxval)
   minval = minval or -2
   maxval = maxval or 2
   t:copy(torch.rand(t:nElement()):mul(maxval - minval):add(minval))
end

-- Calls visit(column, gradOutput) once per output element, gradOutput being the unit vector there.
local function eachUnitGradOutput(module, input, visit)
   module:forward(input)
   local gradOutput = module.output.new():resizeAs(module.output):zero()
   local g = gradOutput:view(gradOutput:nElement())
   for i = 1, g:nElement() do
      g:zero()
      g[i] = 1
      visit(i, gradOutput)
   end
   return g:nElement()
end

-- An nrows x nOutput matrix whose column i is pick(gradInput) after back-propagating the unit
-- gradOutput i (parameter gradients zeroed, then accumulated, before each pick).
function Jacobian._analytic(module, input, nrows, pick)
   local jacobian = torch.Tensor(nrows, module:forward(input):nElement()):zero()
   eachUnitGradOutput(module, input, function(i, gradOutput)
      module:zeroGradParameters()
      local gradInput = module:updateGradInput(input, gradOutput)
      module:accGradParameters(input, gradOutput)
      jacobian:select(2, i):copy(pick(gradInput))
   end)
   return jacobian
end

-- d(output)/d(param) by back-propagation; param defaults to the input (then dparam is gradInput).
function Jacobian.backward(module, input, param, dparam)
   if param == nil then
      return Jacobian._analytic(module, input, input:nElement(), function(gradInput) return gradInput end)
   end
   return Jacobian._analytic(module, input, param:nElement(), function() return dparam end)
end

-- The parameter values after one accUpdateGradParameters(lr = 1) step per unit gradOutput,
-- restarting each time from the original parameters.
function Jacobian.backwardUpdate(module, input, param)
   local jacobian = torch.Tensor(param:nElement(), module:forward(input):nElement()):zero()
   local params = module:parameters()
   local saved = {}
   for j = 1, #params do saved[j] = params[j]:clone() end
   local function restore() for j = 1, #params do params[j]:copy(saved[j]) end end
   eachUnitGradOutput(module, input, function(i, gradOutput)
      restore()
      module:updateGradInput(input, gradOutput)
      module:accUpdateGradParameters(input, gradOutput, 1)
      jacobian:select(2, i):copy(param)
   end)
   restore()
   return jacobian
end

-- d(output)/d(v) by central differences (step perturbation), v a 1-D tensor whose elements are
-- the variable (it may be a strided view into the input).
function Jacobian._numerical(module, input, v, perturbation)
   local jacobian = torch.Tensor(v:nElement(), module:forward(input):nElement())
   local below, above = torch.Tensor(jacobian:size(2)), torch.Tensor(jacobian:size(2))
   for i = 1, v:nElement() do
      local x = v[i]
      v[i] = x - perturbation
      below:copy(module:forward(input))
      v[i] = x + perturbation
      above:copy(module:forward(input))
      v[i] = x
      jacobian:select(1, i):copy(above:add(-1, below):div(2 * perturbation))
   end
   return jacobian
end

-- d(output)/d(param) by central differences (step perturbation, default 1e-6); param defaults
-- to the input.
function Jacobian.forward(module, input, param, perturbation)
   return Jacobian._numerical(module, input, Jacobian._flat(param or input, 'perturbed tensor'), perturbation or 1e-6)
end

-- What backwardUpdate should give: param - d(output)/d(param), numerically.
function Jacobian.forwardUpdate(module, input, param, perturbation)
   local jacobian = Jacobian.forward(module, input, param, perturbation)
   local p = Jacobian._flat(param, 'perturbed tensor')
   for i = 1, p:nElement() do
      jacobian:select(1, i):mul(-1):add(p[i])
   end
   return jacobian
end

-- max |numerical - back-propagated| Jacobian w.r.t. the input, the input drawn in [minval, maxval].
function Jacobian.testJacobian(module, input, minval, maxval, perturbation)
   Jacobian._randomize(input, minval, maxval)
   local numerical = Jacobian.forward(module, input, input, perturbation)
   local analytic = Jacobian.backward(module, input)
   return (numerical - analytic):abs():max()
end

-- The same w.r.t. a parameter tensor param whose gradient is dparam.
function Jacobian.testJacobianParameters(module, input, param, dparam, minval, maxval, perturbation)
   Jacobian._randomize(input, minval, maxval)
   Jacobian._randomize(param, minval, maxval)
   local analytic = Jacobian.backward(module, input, param, dparam)
   local numerical = Jacobian.forward(module, input, param, perturbation)
   return (numerical - analytic):abs():max()
end

-- The same for accUpdateGradParameters.
function Jacobian.testJacobianUpdateParameters(module, input, param, minval, maxval, perturbation)
   Jacobian._randomize(input, minval, maxval)
   Jacobian._randomize(param, minval, maxval)
   local analytic = Jacobian.backwardUpdate(module, input, param)
   local numerical = Jacobian.forwardUpdate(module, input, param, perturbation)
   return (numerical - analytic):abs():max()
end

-- Serialization check: results of the module before, and of its copy written (after clearState)
-- and read back. Returns the max forward and backward differences.
function Jacobian.testIO(module, input, minval, maxval)
   minval = minval or -2
   maxval = maxval or 2
   local inputCopy = input:clone()
   module:forward(input)
   local gradOutput = module.output:clone()
   Jacobian._randomize(gradOutput, minval, maxval)
   local gradOutputCopy = gradOutput:clone()
   module:zeroGradParameters()
   module:updateGradInput(input, gradOutput)
   module:accGradParameters(input, gradOutput)
   local out1, gin1 = module.output:clone(), module.gradInput:clone()

   local filename = os.tmpname()
   assert(module == module:clearState(), 'clearState did not return self')
   local f = torch.DiskFile(filename, 'w'):binary()
   f:writeObject(module)
   f:close()
   f = torch.DiskFile(filename):binary()
   local m = f:readObject()
   f:close()
   os.remove(filename)
   m:forward(inputCopy)
   m:zeroGradParameters()
   m:updateGradInput(inputCopy, gradOutputCopy)
   m:accGradParameters(inputCopy, gradOutputCopy)

   local errb = gin1:nElement() == 0 and 0 or (gin1 - m.gradInput):abs():max()
   return (out1 - m.output):abs():max(), errb
end

-- Compares the ways of updating the parameter field `weight` (gradient field `gradWeight`):
-- accGradParameters + updateParameters, accUpdateGradParameters, and both with a shared copy.
-- Returns a table of error norms by method.
function Jacobian.testAllUpdate(module, input, weight, gradWeight)
   local lr = torch.uniform(0.1, 1)
   local errors = {}

   local ref = module:clone()
   local w0 = ref[weight]:clone()
   ref:forward(input)
   local gradOutput = torch.rand(ref.output:size())
   ref:zeroGradParameters()
   ref:updateGradInput(input, gradOutput)
   ref:accGradParameters(input, gradOutput)
   ref:updateParameters(lr)
   errors['accGradParameters'] = (w0 - ref[gradWeight] * lr - ref[weight]):norm()

   local direct = module:clone()
   direct:forward(input)
   direct:updateGradInput(input, gradOutput)
   direct:accUpdateGradParameters(input, gradOutput, lr)
   errors['accUpdateGradParameters'] = (direct[weight] - ref[weight]):norm()

   -- two clones sharing `weight` each apply their step to it: the step counts twice. Each phase
   -- runs on both clones before the next one starts.
   local twice = w0 - ref[gradWeight] * (lr * 2)
   local function sharedPair(phases)
      local a, b = module:clone(), module:clone()
      b:share(a, weight)
      for _, phase in ipairs(phases) do phase(a); phase(b) end
      return (twice - a[weight]):norm() + (twice - b[weight]):norm()
   end
   local function fwd(m) m:forward(input) end
   local function bwd(m) m:updateGradInput(input, gradOutput) end
   errors['accGradParameters [shared]'] = sharedPair {fwd, function(m) m:zeroGradParameters() end, bwd,
      function(m) m:accGradParameters(input, gradOutput) end, function(m) m:updateParameters(lr) end}
   errors['accUpdateGradParameters [shared]'] = sharedPair {fwd, bwd,
      function(m) m:accUpdateGradParameters(input, gradOutput, lr) end}
   return errors
end

-- Diagonal Hessian checks (need nn.hessian.enable()). Both sides compute the diagonal of the
-- Hessian of F = sum(output^2) / 2, whose second derivative w.r.t. each output is 1.

-- Through the module's updateDiagHessianInput / accDiagHessianParameters with a diagHessianOutput
-- of ones; returns the field named hessianName ('diagHessianInput', 'diagHessianWeight', ...).
function Jacobian.backwardDiagHessian(module, input, hessianName)
   module:forward(input)
   local ones = module.output.new():resizeAs(module.output):fill(1)
   if module.diagHessianWeight then module.diagHessianWeight:zero() end
   if module.diagHessianBias then module.diagHessianBias:zero() end
   module:updateDiagHessianInput(input, ones)
   module:accDiagHessianParameters(input, ones)
   return module[hessianName]
end

-- For a module linear in its input and parameters, d2F/dx_i^2 = sum_k (dy_k/dx_i)^2: the squared
-- first derivatives from ordinary back-propagation of each unit gradOutput, summed.
function Jacobian.linearModuleDiagHessian(module, input, gradName)
   local diag  -- sized by the first gradient (gradInput may still be empty before it)
   eachUnitGradOutput(module, input, function(_, gradOutput)
      module.gradWeight:zero()
      if module.bias then module.gradBias:zero() end
      module:updateGradInput(input, gradOutput)
      module:accGradParameters(input, gradOutput)
      local g = module[gradName]
      diag = diag or g.new(g:nElement()):zero()
      diag:addcmul(g:view(g:nElement()), g:view(g:nElement()))
   end)
   return diag
end

function Jacobian.testDiagHessian(module, input, gradName, hessianName, minval, maxval)
   Jacobian._randomize(input, minval, maxval)
   module:initDiagHessianParameters()
   local h = Jacobian.backwardDiagHessian(module, input, hessianName)
   local reference = Jacobian.linearModuleDiagHessian(module, input, gradName)
   return (h:view(h:nElement()) - reference):abs():max()
end

function Jacobian.testDiagHessianInput(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradInput', 'diagHessianInput', minval, maxval)
end

function Jacobian.testDiagHessianWeight(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradWeight', 'diagHessianWeight', minval, maxval)
end

function Jacobian.testDiagHessianBias(module, input, minval, maxval)
   return Jacobian.testDiagHessian(module, input, 'gradBias', 'diagHessianBias', minval, maxval)
end
