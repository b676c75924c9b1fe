-- nn.Copy(intype, outtype, forceCopy=false, dontCast=false): copies the input
-- into an `outtype` tensor and the gradient back into an `intype` one. With
-- the same type on both sides and no forceCopy the tensors are shared, not copied.
local Copy, parent = torch.class('nn.Copy', 'nn.Module')

function Copy:__init(intype, outtype, forceCopy, dontCast)
   intype = intype or torch.Tensor.__typename
   outtype = outtype or torch.Tensor.__typename
   self.dontCast = dontCast
   parent.__init(self)
   self.gradInput = torch.getmetatable(intype).new()
   self.output = torch.getmetatable(outtype).new()
   self.shareOnly = (not forceCopy) and intype == outtype
end

function Copy:updateOutput(input)
   if self.shareOnly then
      self.output:set(input)
      return input
   end
   self.output:resize(input:size()):copy(input)
   return self.output
end

function Copy:updateGradInput(input, gradOutput)
   if self.shareOnly then
      self.gradInput:set(gradOutput)
      return gradOutput
   end
   self.gradInput:resize(gradOutput:size()):copy(gradOutput)
   return self.gradInput
end

-- dontCast: the in/out types were chosen on purpose, :type() keeps them.
function Copy:type(type, tensorCache)
   if type and self.dontCast then return self end
   return parent.type(self, type, tensorCache)
end
