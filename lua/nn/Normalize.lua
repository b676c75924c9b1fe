-- nn.Normalize(p, eps=1e-10): each row of a 1-D or 2-D input divided by its
-- p-norm (p = math.huge: the max norm); `norm` keeps the row norms.
local Normalize, parent = torch.class('nn.Normalize', 'nn.Module')
local C = torch.C
local check = torch._check

function Normalize:__init(p, eps)
   parent.__init(self)
   if type(p) ~= 'number' or not (p > 0) then error('nn.Normalize(p, eps): p must be a number > 0') end
   self.p = p
   self.eps = eps or 1e-10
end

function Normalize:updateOutput(input)
   self.norm = self.norm or input.new()
   check(C.lt_nn_Normalize_updateOutput(input._c, self.output._c, self.norm._c, self.p, self.eps), 2)
   return self.output
end

function Normalize:updateGradInput(input, gradOutput)
   check(C.lt_nn_Normalize_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.norm._c, self.p,
                                           self.eps), 2)
   return self.gradInput
end

function Normalize:__tostring__()
   local fmt = self.p % 1 == 0 and '%s(%d)' or '%s(%f)'
   return string.format(fmt, torch.type(self), self.p)
end

function Normalize:clearState()
   nn.utils.clear(self, {'_output', '_indices', '_gradInput', 'buffer', 'norm', 'normp', 'cross'})
   return parent.clearState(self)
end
