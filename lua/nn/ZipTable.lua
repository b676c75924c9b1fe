-- nn.ZipTable: {{a1, a2, ...}, {b1, b2, ...}} -> {{a1, b1}, {a2, b2}, ...}.
local ZipTable, parent = torch.class('nn.ZipTable', 'nn.Module')

function ZipTable:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
end

-- Transposes a table of tables into `dst`.
local function zip(dst, src)
   for i = 1, #src do
      for j = 1, #src[i] do
         dst[j] = dst[j] or {}
         dst[j][i] = src[i][j]
      end
   end
   return dst
end

function ZipTable:updateOutput(inputTable)
   self.output = zip({}, inputTable)
   return self.output
end

function ZipTable:updateGradInput(inputTable, gradOutputTable)
   self.gradInput = zip({}, gradOutputTable)
   return self.gradInput
end
