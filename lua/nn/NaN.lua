-- nn.NaN(module, id=next number): a Decorator that raises an error naming the
-- module as soon as a NaN appears in its output, gradInput or parameter
-- gradients (and says whether the input, parameters or gradOutput had one).
local NaN, parent = torch.class('nn.NaN', 'nn.Decorator')

local idseq = 0
function NaN.newId()
   idseq = idseq + 1
   return idseq
end

function NaN:__init(module, id)
   parent.__init(self, module)
   self.id = id or NaN.newId()
end

-- A NaN anywhere makes the sum NaN (and NaN is the one value unequal to itself).
function NaN:recursiveIsNaN(x)
   if torch.type(x) == 'table' then
      for _, v in pairs(x) do
         if self:recursiveIsNaN(v) then return true end
      end
      return false
   end
   if torch.isTensor(x) then
      local s = x:sum()
      return s ~= s
   end
   return type(x) == 'number' and x ~= x
end

function NaN:_fail(where)
   error(string.format('NaN found in %s of module :\n%s', where, self:__tostring__()))
end

function NaN:updateOutput(input)
   self.output = self.modules[1]:updateOutput(input)
   if self:recursiveIsNaN(self.output) then
      if self:recursiveIsNaN(input) then self:_fail('input') end
      if self:recursiveIsNaN(self:parameters()) then self:_fail('parameters') end
      self:_fail('output')
   end
   return self.output
end

function NaN:updateGradInput(input, gradOutput)
   self.gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   if self:recursiveIsNaN(self.gradInput) then
      if self:recursiveIsNaN(gradOutput) then self:_fail('gradOutput') end
      self:_fail('gradInput')
   end
   return self.gradInput
end

function NaN:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(input, gradOutput, scale)
   local _, gradParams = self:parameters()
   if self:recursiveIsNaN(gradParams) then self:_fail('gradParameters') end
end

function NaN:__tostring__()
   local m = self.modules[1]
   return torch.type(self) .. '(' .. self.id .. ') @ ' .. (m.__tostring__ and m:__tostring__() or torch.type(m))
end
