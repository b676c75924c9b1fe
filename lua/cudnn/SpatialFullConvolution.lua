-- cudnn.SpatialFullConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=0,
-- adjW=0, adjH=0): nn.SpatialFullConvolution under cudnn.torch's name, with its algorithm switches.
local Full, parent = torch.class('cudnn.SpatialFullConvolution', 'nn.SpatialFullConvolution')
cudnn._convolutionModes(Full)
cudnn._withoutDescriptors(Full, parent)

-- files written before adjW/adjH existed
function Full:read(file, version)
   parent.read(self, file, version)
   self.adjW, self.adjH = self.adjW or 0, self.adjH or 0
end
