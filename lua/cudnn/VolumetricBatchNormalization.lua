-- cudnn.VolumetricBatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true) on N x C x T x H x W inputs.
local VBN, parent = torch.class('cudnn.VolumetricBatchNormalization', 'nn.VolumetricBatchNormalization')
VBN.mode = 'CUDNN_BATCHNORM_SPATIAL'
VBN.__version = 2
cudnn._batchNormalization(VBN, parent, 'cudnn.VolumetricBatchNormalization')
