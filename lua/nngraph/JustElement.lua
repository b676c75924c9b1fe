-- nngraph.JustElement: {x} -> x (what node:split(1) inserts).
local JustElement = torch.class('nngraph.JustElement', 'nn.Module')

function JustElement:__init()
   self.gradInput = {}
end

function JustElement:updateOutput(input)
   if type(input) ~= 'table' or #input ~= 1 then
      error('nngraph.JustElement: expected a table of exactly one element, got ' ..
            (type(input) == 'table' and (#input .. ' elements') or torch.type(input)), 2)
   end
   self.output = input[1]
   return self.output
end

function JustElement:updateGradInput(input, gradOutput)
   self.gradInput[1] = gradOutput
   return self.gradInput
end
