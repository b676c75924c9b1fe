-- nn.LogSoftMax: x - max - log(sum(exp(x - max))) over the feature dimension.
local LogSoftMax, parent = torch.class('nn.LogSoftMax', 'nn.Module')
local C = torch.C
local check = torch._check

function LogSoftMax:updateOutput(input)
   check(C.lt_nn_LogSoftMax_updateOutput(input._c, self.output._c), 2)
   return self.output
end

function LogSoftMax:updateGradInput(input, gradOutput)
   check(C.lt_nn_LogSoftMax_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.output._c), 2)
   return self.gradInput
end
