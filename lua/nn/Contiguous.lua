-- nn.Contiguous(): the input itself when it is contiguous, else a contiguous copy
-- (and the same for the gradient).
local Contiguous, parent = torch.class('nn.Contiguous', 'nn.Module')

local function contiguousInto(buffer, src)
   if src:isContiguous() then return buffer:set(src) end
   -- never copy into a view of the tensor being copied
   if buffer:storage() == src:storage() then buffer:set() end
   return buffer:resizeAs(src):copy(src)
end

function Contiguous:updateOutput(input)
   contiguousInto(self.output, input)
   return self.output
end

function Contiguous:updateGradInput(input, gradOutput)
   contiguousInto(self.gradInput, gradOutput)
   return self.gradInput
end
