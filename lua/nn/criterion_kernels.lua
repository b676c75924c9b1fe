-- Shared calls into the C criterion kernels (nn_criterion_*.c) for the
-- criterion classes; not a class of its own.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

local kernels = {}
nn._criterionKernels = kernels

-- A tensor of input's type holding `t` (t itself when it already is one).
function kernels.asInputType(self, field, t, input)
   if torch.typename(t) == input:type() then return t end
   if torch.typename(self[field]) ~= input:type() then self[field] = input.new() end
   return self[field]:resize(t:size()):copy(t)
end

-- The element-wise criterions: `kind` is one of C.LT_CRIT_*, weights (optional)
-- have as many elements as input, param is the margin where there is one;
-- sizeAverage defaults to self.sizeAverage.
local function average(self, sizeAverage)
   if sizeAverage == nil then sizeAverage = self.sizeAverage end
   return sizeAverage and 1 or 0
end

-- where the C entry points hand back a loss as a number (the value their one-element output holds)
kernels.loss = ffi.new('double[1]')
local loss = kernels.loss
function kernels.pointwiseOutput(self, kind, input, target, weights, param, sizeAverage)
   target = kernels.asInputType(self, '_target', target, input)
   if torch.typename(self.output_tensor) ~= input:type() then self.output_tensor = input.new(1) end
   check(C.lt_nn_PointwiseCriterion_updateOutput(kind, input._c, target._c, self.output_tensor._c,
         average(self, sizeAverage), weights and weights._c or nil, param or 0, loss), 3)
   -- output_tensor[1]'s value, without reading a device tensor back (a wait on the GPU)
   self.output = loss[0]
   return self.output
end

function kernels.pointwiseGradInput(self, kind, input, target, weights, param, sizeAverage)
   target = kernels.asInputType(self, '_target', target, input)
   check(C.lt_nn_PointwiseCriterion_updateGradInput(kind, input._c, target._c, self.gradInput._c,
         average(self, sizeAverage), weights and weights._c or nil, param or 0), 3)
   return self.gradInput
end

-- A LongTensor holding `target` (a number or a tensor of any type), kept in self[field].
function kernels.longTarget(self, field, target)
   if torch.typename(target) == 'torch.LongTensor' then return target end
   -- (the buffer changes type when the criterion is converted, e.g. by :float())
   if torch.typename(self[field]) ~= 'torch.LongTensor' then self[field] = torch.LongTensor() end
   if type(target) == 'number' then
      self[field]:resize(1)[1] = target
   else
      self[field]:resize(target:size()):copy(target)
   end
   return self[field]
end

return kernels
