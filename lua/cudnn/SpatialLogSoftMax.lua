-- cudnn.SpatialLogSoftMax(): LogSoftMax over the feature planes at every position (channel mode).
local SLSM, parent = torch.class('cudnn.SpatialLogSoftMax', 'nn.SpatialLogSoftMax')

function SLSM:__init()
   parent.__init(self)
   self.mode = 'CUDNN_SOFTMAX_MODE_CHANNEL'
   self.algorithm = 'CUDNN_SOFTMAX_LOG'
end

cudnn._softmaxClass(SLSM, parent, nil, 'CUDNN_SOFTMAX_LOG')
