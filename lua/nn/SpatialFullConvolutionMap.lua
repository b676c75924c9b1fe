-- nn.SpatialFullConvolutionMap(connTable, kW, kH, dW=1, dH=1): the transposed counterpart of
-- nn.SpatialConvolutionMap (same connTable, weight nk x kH x kW, bias per output plane);
-- output size (in - 1)*d + k.
local SpatialFullConvolutionMap, parent = torch.class('nn.SpatialFullConvolutionMap', 'nn.Module')

function SpatialFullConvolutionMap:__init(conMatrix, kW, kH, dW, dH)
   parent.__init(self)
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.connTable = conMatrix
   self.nInputPlane = self.connTable:select(2, 1):max()
   self.nOutputPlane = self.connTable:select(2, 2):max()
   self.weight = torch.Tensor(self.connTable:size(1), kH, kW)
   self.gradWeight = torch.Tensor(self.connTable:size(1), kH, kW)
   self.bias = torch.Tensor(self.nOutputPlane)
   self.gradBias = torch.Tensor(self.nOutputPlane)
   self:reset()
end

SpatialFullConvolutionMap.reset = nn._mapReset

function SpatialFullConvolutionMap:updateOutput(input)
   return nn._mapUpdateOutput(self, input, 1)
end

function SpatialFullConvolutionMap:updateGradInput(input, gradOutput)
   if self.gradInput then return nn._mapUpdateGradInput(self, input, gradOutput, 1) end
end

function SpatialFullConvolutionMap:accGradParameters(input, gradOutput, scale)
   nn._mapAccGradParameters(self, input, gradOutput, scale, 1)
end
