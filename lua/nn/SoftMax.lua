-- nn.SoftMax: exp(x - max) / sum over the feature dimension.
local SoftMax, parent = torch.class('nn.SoftMax', 'nn.Module')
local C = torch.C
local check = torch._check

function SoftMax:updateOutput(input)
   check(C.lt_nn_SoftMax_updateOutput(input._c, self.output._c), 2)
   return self.output
end

function SoftMax:updateGradInput(input, gradOutput)
   check(C.lt_nn_SoftMax_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.output._c), 2)
   return self.gradInput
end
