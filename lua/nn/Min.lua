-- nn.Min(dimension, nInputDims): the minimum over `dimension` (dropped from the output);
-- the gradient goes to the position of the minimum.
-- A Module of its own, as in Torch7 (so torch.isTypeOf(nn.Min(), 'nn.Max') is false), sharing
-- nn.Max's methods: both have nn.Module as parent.
local Min = torch.class('nn.Min', 'nn.Module')

for _, name in ipairs {'__init', '_getPositiveDimension', '_lazyInit', '_reduce', 'updateGradInput', 'type',
                       'clearState'} do
   Min[name] = nn.Max[name]
end

function Min:updateOutput(input)
   return self:_reduce(input, 'min')
end
