-- cudnn.Sigmoid(inplace=false): y = 1 / (1 + exp(-x)).
local Sigmoid, parent = torch.class('cudnn.Sigmoid', 'nn.Sigmoid')
cudnn._pointwise(Sigmoid, parent, torch.C.LT_PW_SIGMOID)
