-- cudnn.LSTM(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- long short-term memory (gates i, f, g, o); see cudnn/RNN.lua.
local LSTM, parent = torch.class('cudnn.LSTM', 'cudnn.RNN')

function LSTM:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self, inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   self.mode = 'CUDNN_LSTM'
   self:reset()
end
