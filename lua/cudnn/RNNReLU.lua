-- cudnn.RNNReLU(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- a plain recurrent network, h = max(0, W x + bW + R h' + bR); see cudnn/RNN.lua.
local RNNReLU, parent = torch.class('cudnn.RNNReLU', 'cudnn.RNN')

function RNNReLU:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self, inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   self.mode = 'CUDNN_RNN_RELU'
   self:reset()
end
