-- cudnn.BGRU(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- a bidirectional GRU; see cudnn/RNN.lua.
local BGRU, parent = torch.class('cudnn.BGRU', 'cudnn.RNN')

function BGRU:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self, inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   self.bidirectional = 'CUDNN_BIDIRECTIONAL'
   self.numDirections = 2
   self.mode = 'CUDNN_GRU'
   self:reset()
end
