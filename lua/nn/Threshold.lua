-- nn.Threshold(th=1e-6, v=0, inplace=false): y = x > th ? x : v (strict >).
local Threshold, parent = torch.class('nn.Threshold', 'nn.Module')

function Threshold:__init(th, v, ip)
   parent.__init(self)
   self.threshold = th or 1e-6
   self.val = v or 0
   if th and type(th) ~= 'number' then error('nn.Threshold(threshold, value)') end
   self.inplace = ip or false
   if ip and type(ip) ~= 'boolean' then error('in-place flag must be boolean') end
   self:validateParameters()
end

function Threshold:validateParameters()
   self.inplace = self.inplace or false
   if self.inplace and self.val > self.threshold then
      error('in-place processing requires value (' .. self.val .. ') not exceed threshold (' .. self.threshold .. ')')
   end
end

local C = torch.C
local hasKernels = torch._hasC('lt_nn_threshold_forward')

-- The kernels run over the raw elements; in-place mode overwrites the input
-- (forward) and gradOutput (backward), as THNN did.
function Threshold:updateOutput(input)
   self:validateParameters()
   if self.inplace then
      self.output:set(input)
   else
      self.output:resizeAs(input)
   end
   if hasKernels then
      torch._check(C.lt_nn_threshold_forward(input._c, self.output._c, self.threshold, self.val), 2)
   else
      self.output:copy(input):maskedFill(input:le(self.threshold), self.val)
   end
   return self.output
end

function Threshold:updateGradInput(input, gradOutput)
   self:validateParameters()
   if self.inplace then
      self.gradInput:set(gradOutput)
   else
      self.gradInput:resizeAs(gradOutput)
   end
   if hasKernels then
      torch._check(C.lt_nn_threshold_backward(input._c, gradOutput._c, self.gradInput._c, self.threshold), 2)
   else
      self.gradInput:copy(gradOutput):maskedFill(input:le(self.threshold), 0)
   end
   return self.gradInput
end

function Threshold:__tostring__()
   return torch.type(self) .. string.format('(%g, %g%s)', self.threshold, self.val, self.inplace and ', inplace' or '')
end
