-- nn.CMinTable: the elementwise minimum of a table of tensors; the gradient goes to the
-- first input holding the minimum.
local CMinTable, parent = torch.class('nn.CMinTable', 'nn.Module')

function CMinTable:__init()
   parent.__init(self)
   self.gradInput = {}
   self.minIdx = torch.Tensor()
   self.mask = torch.Tensor()
   self.minVals = torch.Tensor()
   self.gradMaxVals = torch.Tensor()
end

function CMinTable:updateOutput(input)
   return nn.CMaxTable._pick(self, self.minIdx, input, function(a, b) return a:lt(b) end)
end

function CMinTable:updateGradInput(input, gradOutput)
   return nn.CMaxTable._route(self, self.minIdx, input, gradOutput)
end

function CMinTable:clearState()
   self.gradInput = {}
   return nn.utils.clear(self, 'output', 'minIdx', 'mask', 'minVals', 'gradMaxVals')
end
