-- nn.SoftMin: softmax of -x; gradInput = -(softmax backward at -x).
local SoftMin, parent = torch.class('nn.SoftMin', 'nn.Module')
local C = torch.C
local check = torch._check

function SoftMin:updateOutput(input)
   self.mininput = self.mininput or input.new()
   self.mininput:resizeAs(input):copy(input):mul(-1)
   check(C.lt_nn_SoftMax_updateOutput(self.mininput._c, self.output._c), 2)
   return self.output
end

function SoftMin:updateGradInput(input, gradOutput)
   self.mininput = self.mininput or input.new()
   self.mininput:resizeAs(input):copy(input):mul(-1)
   check(C.lt_nn_SoftMax_updateGradInput(self.mininput._c, gradOutput._c, self.gradInput._c, self.output._c), 2)
   self.gradInput:mul(-1)
   return self.gradInput
end

function SoftMin:clearState()
   nn.utils.clear(self, 'mininput')
   return parent.clearState(self)
end
