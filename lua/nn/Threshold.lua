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
local check = torch._check

-- The kernels run over the raw elements; in-place mode overwrites the input
-- (forward) and gradOutput (backward), as THNN did.
function Threshold:updateOutput(input)
   self:validateParameters()
   check(C.lt_nn_Threshold_updateOutput(input._c, self.output._c, self.threshold, self.val,
         self.inplace and 1 or 0), 2)
   return self.output
end

function Threshold:updateGradInput(input, gradOutput)
   self:validateParameters()
   check(C.lt_nn_Threshold_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.threshold,
         self.val, self.inplace and 1 or 0), 2)
   return self.gradInput
end
