-- nngraph.JustTable: x -> {x} (nngraph.nest of a one-element list).
local JustTable = torch.class('nngraph.JustTable', 'nn.Module')

function JustTable:__init()
   self.output = {}
end

function JustTable:updateOutput(input)
   self.output[1] = input
   return self.output
end

function JustTable:updateGradInput(input, gradOutput)
   self.gradInput = gradOutput[1]
   return self.gradInput
end
