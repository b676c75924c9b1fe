-- nn.VolumetricBatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true):
-- BatchNormalization over the channels of (N, C, T, H, W) inputs.
local VBN, parent = torch.class('nn.VolumetricBatchNormalization', 'nn.BatchNormalization')

VBN.__version = 2
VBN.nDim = 5
