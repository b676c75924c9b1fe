-- cudnn.RNNTanh(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- a plain recurrent network, h = tanh(W x + bW + R h' + bR); see cudnn/RNN.lua.
local RNNTanh, parent = torch.class('cudnn.RNNTanh', 'cudnn.RNN')

function RNNTanh:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self, inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   self.mode = 'CUDNN_RNN_TANH'
   self:reset()
end
