-- cudnn.VolumetricLogSoftMax(): LogSoftMax over the feature planes at every voxel; its child
-- `ssm` is a cudnn.SpatialSoftMax switched to the log algorithm, as in cudnn.torch.
local VLSM, parent = torch.class('cudnn.VolumetricLogSoftMax', 'cudnn.VolumetricSoftMax')

function VLSM:__init(fast)
   parent.__init(self, fast)
   self.ssm.mode = 'CUDNN_SOFTMAX_MODE_CHANNEL'
   self.ssm.algorithm = 'CUDNN_SOFTMAX_LOG'
end
