-- cudnn.LogSoftMax(): LogSoftMax over each sample, its features taken all together (instance mode,
-- see cudnn.SoftMax).
local LogSoftMax, parent = torch.class('cudnn.LogSoftMax', 'nn.LogSoftMax')

function LogSoftMax:__init(fast)
   parent.__init(self)
   self.algorithm = fast and 'CUDNN_SOFTMAX_FAST' or 'CUDNN_SOFTMAX_ACCURATE'
end

cudnn._softmaxClass(LogSoftMax, parent, 'CUDNN_SOFTMAX_MODE_INSTANCE', 'CUDNN_SOFTMAX_LOG')
