-- nn.Identity: output is the input itself, gradInput the gradOutput itself.
local Identity, parent = torch.class('nn.Identity', 'nn.Module')

function Identity:updateOutput(input)
   self.output = input
   return self.output
end

function Identity:updateGradInput(input, gradOutput)
   self.gradInput = gradOutput
   return self.gradInput
end

function Identity:clearState()
   -- replace rather than empty: output/gradInput are other modules' tensors
   for _, f in ipairs {'output', 'gradInput'} do
      local v = self[f]
      if torch.isTensor(v) then self[f] = v.new() elseif type(v) == 'table' then self[f] = {} else self[f] = nil end
   end
   return self
end
