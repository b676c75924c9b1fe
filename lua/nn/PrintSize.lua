-- nn.PrintSize(prefix='PrintSize'): identity that prints the size of what passes
-- through it (input forward, gradOutput backward).
local PrintSize, parent = torch.class('nn.PrintSize', 'nn.Module')

function PrintSize:__init(prefix)
   parent.__init(self)
   self.prefix = prefix or 'PrintSize'
end

local function sizeOf(x)
   if torch.type(x) == 'table' then return x end
   if x == nil then return 'missing size' end
   return x:size()
end

function PrintSize:updateOutput(input)
   self.output = input
   print(self.prefix .. ':input\n', sizeOf(input))
   return self.output
end

function PrintSize:updateGradInput(input, gradOutput)
   print(self.prefix .. ':gradOutput\n', sizeOf(gradOutput))
   self.gradInput = gradOutput
   return self.gradInput
end
