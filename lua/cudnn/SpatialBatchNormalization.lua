-- cudnn.SpatialBatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true) on N x C x H x W inputs.
local SBN, parent = torch.class('cudnn.SpatialBatchNormalization', 'nn.SpatialBatchNormalization')
SBN.mode = 'CUDNN_BATCHNORM_SPATIAL'
SBN.__version = 2
cudnn._batchNormalization(SBN, parent, 'cudnn.SpatialBatchNormalization')
