-- nn.ZipTableOneToMany: {v, {a, b, c}} -> {{v, a}, {v, b}, {v, c}}; v's gradient is the sum.
local ZipTableOneToMany, parent = torch.class('nn.ZipTableOneToMany', 'nn.Module')

function ZipTableOneToMany:__init()
   parent.__init(self)
   self.output = {}
   self.gradInput = {}
   self.gradInputEl = torch.Tensor()
end

function ZipTableOneToMany:updateOutput(input)
   assert(#input == 2, 'input must be table of element and table')
   local el, list = input[1], input[2]
   self.output = {}
   for i = 1, #list do self.output[i] = {el, list[i]} end
   return self.output
end

function ZipTableOneToMany:updateGradInput(input, gradOutput)
   assert(#input == 2, 'input must be table of element and table')
   local el, list = input[1], input[2]
   assert(#gradOutput == #list, 'gradOutput should have one entry per element of input[2]')
   self.gradInputEl = self.gradInputEl:typeAs(el)
   self.gradInputEl:resizeAs(el):zero()
   local gradList = {}
   for i = 1, #list do
      self.gradInputEl:add(gradOutput[i][1])
      gradList[i] = gradOutput[i][2]
   end
   self.gradInput = {self.gradInputEl, gradList}
   return self.gradInput
end

function ZipTableOneToMany:clearState()
   self.gradInputEl:set()
   self.output = {}
   self.gradInput = {}
   return self
end
