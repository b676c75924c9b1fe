-- nn.CAddTensorTable: input {v, {a, b, ...}} -> {a + v, b + v, ...}.
local CAddTensorTable, parent = torch.class('nn.CAddTensorTable', 'nn.Module')

function CAddTensorTable:__init()
   parent.__init(self)
   self.gradInput = {}
end

function CAddTensorTable:updateOutput(input)
   local v, list = input[1], input[2]
   local out = {}
   for i = 1, #list do out[i] = v.new():resizeAs(v):copy(list[i]):add(v) end
   self.output = out
   return self.output
end

function CAddTensorTable:updateGradInput(input, gradOutput)
   local v, list = input[1], input[2]
   self.gradInput[1] = self.gradInput[1] or v.new()
   self.gradInput[1]:resizeAs(v):copy(gradOutput[1])
   for i = 2, #list do self.gradInput[1]:add(gradOutput[i]) end
   local g = self.gradInput[2] or {}
   for i = 1, #list do
      g[i] = g[i] or v.new()
      g[i]:resizeAs(v):copy(gradOutput[i])
   end
   for i = #list + 1, #g do g[i] = nil end
   self.gradInput[2] = g
   return self.gradInput
end
