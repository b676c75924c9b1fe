-- nn.VolumetricDropout(p=0.5, stochasticInference=false): drops whole feature maps of a (N, C, D, H, W) or
-- (C, D, H, W) input with probability p in training (not rescaled); in evaluation the input is scaled by 1 - p,
-- as Torch7. SpatialDropout's methods over three spatial dimensions (a class of its own, as in Torch7).
local VolumetricDropout = torch.class('nn.VolumetricDropout', 'nn.Module')

for _, name in ipairs {'__init', 'updateOutput', 'updateGradInput', 'setp', '__tostring__', 'clearState'} do
   VolumetricDropout[name] = nn.SpatialDropout[name]
end
VolumetricDropout._dims, VolumetricDropout._layout = 3, '(N, C, D, H, W)'
