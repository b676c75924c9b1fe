-- nn.Clamp(min_value, max_value): HardTanh with explicit bounds.
local Clamp, parent = torch.class('nn.Clamp', 'nn.HardTanh')

function Clamp:__init(min_value, max_value)
   parent.__init(self, min_value, max_value)
end
