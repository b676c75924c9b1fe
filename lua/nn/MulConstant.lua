-- nn.MulConstant(c, inplace): multiply by a constant.
local MulConstant, parent = torch.class('nn.MulConstant', 'nn.Module')

function MulConstant:__init(constant_scalar, ip)
   parent.__init(self)
   assert(type(constant_scalar) == 'number', 'input is not scalar!')
   self.constant_scalar = constant_scalar
   self.inplace = ip or false
end

function MulConstant:updateOutput(input)
   if self.inplace then
      input:mul(self.constant_scalar)
      self.output:set(input)
   else
      self.output:resizeAs(input):copy(input):mul(self.constant_scalar)
   end
   return self.output
end

function MulConstant:updateGradInput(input, gradOutput)
   if self.gradInput then
      if self.inplace then
         gradOutput:mul(self.constant_scalar)
         self.gradInput:set(gradOutput)
         input:div(self.constant_scalar)  -- restore the input
      else
         self.gradInput:resizeAs(gradOutput):copy(gradOutput):mul(self.constant_scalar)
      end
      return self.gradInput
   end
end
