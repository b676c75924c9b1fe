-- cudnn.SoftMax(fast=false): SoftMax over each sample, its features taken all together (cuDNN's
-- instance mode): as nn.SoftMax for 1-D and 2-D inputs, but over all of C x H x W for a 3-D image
-- or each image of a 4-D batch (nn.SoftMax normalizes each pixel there).
local SoftMax, parent = torch.class('cudnn.SoftMax', 'nn.SoftMax')

function SoftMax:__init(fast)
   parent.__init(self)
   self.algorithm = fast and 'CUDNN_SOFTMAX_FAST' or 'CUDNN_SOFTMAX_ACCURATE'
end

cudnn._softmaxClass(SoftMax, parent, 'CUDNN_SOFTMAX_MODE_INSTANCE')
