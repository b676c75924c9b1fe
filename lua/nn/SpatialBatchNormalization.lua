-- nn.SpatialBatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true):
-- BatchNormalization over the channels of (N, C, H, W) inputs.
local SBN, parent = torch.class('nn.SpatialBatchNormalization', 'nn.BatchNormalization')

SBN.__version = 2
SBN.nDim = 4
