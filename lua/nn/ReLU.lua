-- nn.ReLU(inplace=false) = nn.Threshold(0, 0, inplace).
local ReLU, Parent = torch.class('nn.ReLU', 'nn.Threshold')

function ReLU:__init(p)
   Parent.__init(self, 0, 0, p)
end

function ReLU:__tostring__()
   return torch.type(self)
end
