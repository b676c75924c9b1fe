-- cudnn.BLSTM(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- a bidirectional LSTM; see cudnn/RNN.lua.
local BLSTM, parent = torch.class('cudnn.BLSTM', 'cudnn.RNN')

function BLSTM:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self, inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   self.bidirectional = 'CUDNN_BIDIRECTIONAL'
   self.numDirections = 2
   self.mode = 'CUDNN_LSTM'
   self:reset()
end
