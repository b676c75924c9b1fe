-- nn.DontCast(module, castin=false, castout=castin, moduleType=nil): a Decorator
-- that :type() never converts. The wrapped module keeps its tensor type
-- (moduleType, read from its output or parameters when not given); with
-- castin the input (and the gradient returned) is converted between the
-- caller's type and the module's, with castout the output (and gradOutput).
local DontCast, parent = torch.class('nn.DontCast', 'nn.Decorator')

-- dst (reused when it already has the type) receives a copy of src, converted to type_str;
-- tables are converted element by element.
local function convertedCopy(dst, src, type_str)
   if torch.type(src) == 'table' then
      dst = torch.type(dst) == 'table' and dst or {}
      for k, v in pairs(src) do dst[k] = convertedCopy(dst[k], v, type_str) end
   elseif torch.isTensor(src) then
      if torch.type(dst) ~= type_str then dst = torch.getmetatable(type_str).new() end
      dst:resize(src:size())
      if src:nElement() > 0 then dst:copy(src) end
   end
   return dst
end

-- The type of the first tensor in a (nested) table, and whether there was one.
local function tensorTypeOf(src)
   if type(src) == 'table' then
      local t, found
      for _, v in pairs(src) do
         t, found = tensorTypeOf(v)
         if found then return t, true end
      end
      return t, found
   end
   return torch.type(src), torch.isTensor(src)
end

function DontCast:__init(module, castin, castout, moduleType)
   parent.__init(self, module)
   self.castin = castin
   self.castout = (castout == nil) and castin or castout
   self.moduleType = moduleType
   if (self.castin or self.castout) and not self.moduleType then
      local t, found = tensorTypeOf(module.output)
      if not found then t, found = tensorTypeOf(module:parameters()) end
      if not found then
         error('nn.DontCast: cannot tell the module\'s tensor type; give it as argument 4 (moduleType)')
      end
      self.moduleType = t
   end
end

function DontCast:_moduleInput(input)
   if self.castin and tensorTypeOf(input) ~= self.moduleType then return self._input end
   return input
end

function DontCast:_moduleGradOutput(gradOutput)
   if self.castout and tensorTypeOf(gradOutput) ~= self.moduleType then return self._gradOutput end
   return gradOutput
end

function DontCast:updateOutput(input)
   if self.castin and tensorTypeOf(input) ~= self.moduleType then
      self._input = convertedCopy(self._input, input, self.moduleType)
      input = self._input
   end
   local output = self.modules[1]:updateOutput(input)
   if self.castout then
      self.output = convertedCopy(self.output, output, tensorTypeOf(self.output))
   else
      self.output = output
   end
   return self.output
end

function DontCast:updateGradInput(input, gradOutput)
   input = self:_moduleInput(input)
   if self.castout and tensorTypeOf(gradOutput) ~= self.moduleType then
      self._gradOutput = convertedCopy(self._gradOutput, gradOutput, self.moduleType)
      gradOutput = self._gradOutput
   end
   local gradInput = self.modules[1]:updateGradInput(input, gradOutput)
   if self.castin then
      self.gradInput = convertedCopy(self.gradInput, gradInput, tensorTypeOf(self.gradInput))
   else
      self.gradInput = gradInput
   end
   return self.gradInput
end

function DontCast:accGradParameters(input, gradOutput, scale)
   self.modules[1]:accGradParameters(self:_moduleInput(input), self:_moduleGradOutput(gradOutput), scale)
end

function DontCast:accUpdateGradParameters(input, gradOutput, lr)
   self.modules[1]:accUpdateGradParameters(self:_moduleInput(input), self:_moduleGradOutput(gradOutput), lr)
end

-- Only what the caller sees changes type: the cast output and gradInput.
function DontCast:type(type)
   if self.castout and tensorTypeOf(self.output) ~= type then
      self.output = convertedCopy(nil, self.output, type)
   end
   if self.castin and tensorTypeOf(self.gradInput) ~= type then
      self.gradInput = convertedCopy(nil, self.gradInput, type)
   end
   return self
end
