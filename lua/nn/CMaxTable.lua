-- nn.CMaxTable: the elementwise maximum of a table of tensors; the gradient goes to the
-- first input holding the maximum.
local CMaxTable, parent = torch.class('nn.CMaxTable', 'nn.Module')

function CMaxTable:__init()
   parent.__init(self)
   self.gradInput = {}
   self.maxIdx = torch.Tensor()
   self.mask = torch.Tensor()
   self.maxVals = torch.Tensor()
   self.gradMaxVals = torch.Tensor()
end

-- Shared by CMaxTable and CMinTable: `idx` records the winner's index, `better(a, b)` is
-- a:gt(b) or a:lt(b).
function CMaxTable._pick(self, idx, input, better)
   self.output:resizeAs(input[1]):copy(input[1])
   idx:resizeAs(input[1]):fill(1)
   for i = 2, #input do
      local m = better(input[i], self.output)
      idx:maskedFill(m, i)
      self.output:maskedCopy(m, input[i]:maskedSelect(m))
   end
   return self.output
end

function CMaxTable._route(self, idx, input, gradOutput)
   for i = 1, #input do
      self.gradInput[i] = self.gradInput[i] or input[i].new()
      self.gradInput[i]:resizeAs(input[i]):zero()
      local m = idx:eq(i)
      self.gradInput[i]:maskedCopy(m, gradOutput:maskedSelect(m))
   end
   for i = #input + 1, #self.gradInput do self.gradInput[i] = nil end
   return self.gradInput
end

function CMaxTable:updateOutput(input)
   return self:_pick(self.maxIdx, input, function(a, b) return a:gt(b) end)
end

function CMaxTable:updateGradInput(input, gradOutput)
   return self:_route(self.maxIdx, input, gradOutput)
end

function CMaxTable:clearState()
   self.gradInput = {}
   return nn.utils.clear(self, 'output', 'maxIdx', 'mask', 'maxVals', 'gradMaxVals')
end
