-- nn.SparseJacobian: nn.Jacobian's checks for modules taking sparse input, an nnz x 2 tensor of
-- (index, value) rows: the variable is the value column, perturbed by 1e-6.
nn.SparseJacobian = {}
local SparseJacobian, Jacobian = nn.SparseJacobian, nn.Jacobian
local STEP = 1e-6

local function values(input) return input:select(2, 2) end

function SparseJacobian.backward(module, input, param, dparam)
   if param == nil then
      return Jacobian._analytic(module, input, input:size(1), function(gradInput) return values(gradInput) end)
   end
   return Jacobian._analytic(module, input, param:nElement(), function() return dparam end)
end

function SparseJacobian.forward(module, input, param)
   local v = param and Jacobian._flat(param, 'perturbed tensor') or values(input)
   return Jacobian._numerical(module, input, v, STEP)
end

function SparseJacobian.backwardUpdate(module, input, param)
   return Jacobian.backwardUpdate(module, input, param)
end

function SparseJacobian.forwardUpdate(module, input, param)
   return Jacobian.forwardUpdate(module, input, param, STEP)
end

function SparseJacobian.testJacobian(module, input, minval, maxval)
   Jacobian._randomize(values(input), minval, maxval)
   return (SparseJacobian.forward(module, input) - SparseJacobian.backward(module, input)):abs():max()
end

function SparseJacobian.testJacobianParameters(module, input, param, dparam, minval, maxval)
   Jacobian._randomize(values(input), minval, maxval)
   Jacobian._randomize(param, minval, maxval)
   local analytic = SparseJacobian.backward(module, input, param, dparam)
   return (SparseJacobian.forward(module, input, param) - analytic):abs():max()
end

function SparseJacobian.testJacobianUpdateParameters(module, input, param, minval, maxval)
   Jacobian._randomize(values(input), minval, maxval)
   Jacobian._randomize(param, minval, maxval)
   local analytic = SparseJacobian.backwardUpdate(module, input, param)
   return (SparseJacobian.forwardUpdate(module, input, param) - analytic):abs():max()
end

SparseJacobian.testIO = Jacobian.testIO
SparseJacobian.testAllUpdate = Jacobian.testAllUpdate
