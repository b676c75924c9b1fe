-- cudnn.Tanh(inplace=false): y = tanh(x).
local Tanh, parent = torch.class('cudnn.Tanh', 'nn.Tanh')
cudnn._pointwise(Tanh, parent, torch.C.LT_PW_TANH)
