-- nn.AddConstant(c, inplace=false): y = x + c; c a number, or a vector added to
-- each row of a 1-D/2-D input (its last dim must match).
local AddConstant, parent = torch.class('nn.AddConstant', 'nn.Module')

function AddConstant:__init(constant_scalar, ip)
   parent.__init(self)
   self.constant_scalar = constant_scalar
   self.inplace = ip or false
   if ip and type(ip) ~= 'boolean' then error('nn.AddConstant: in-place flag must be boolean') end
end

function AddConstant:_addend(input)
   local c = self.constant_scalar
   if type(c) == 'number' then return c end
   if not (torch.isTensor(c) and input:nDimension() <= 2 and input:size(input:nDimension()) == c:size(1)) then
      error('nn.AddConstant: the constant is neither a number nor a vector matching the last dim of the input')
   end
   if input:nDimension() == 2 then return c:view(1, c:size(1)):expand(input:size(1), c:size(1)) end
   return c
end

function AddConstant:updateOutput(input)
   local c = self:_addend(input)
   if self.inplace then
      input:add(c)
      self.output:set(input)
   else
      self.output:resizeAs(input):copy(input):add(c)
   end
   return self.output
end

function AddConstant:updateGradInput(input, gradOutput)
   if self.inplace then
      self.gradInput:set(gradOutput)
      -- restore the input
      local c = self:_addend(input)
      if type(c) == 'number' then input:add(-c) else input:add(-1, c) end
   else
      self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   end
   return self.gradInput
end
