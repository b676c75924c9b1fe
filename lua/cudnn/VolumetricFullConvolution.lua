-- cudnn.VolumetricFullConvolution(nInputPlane, nOutputPlane, kT, kW, kH, dT=1, dW=1, dH=1, padT=0,
-- padW=0, padH=0, adjT=0, adjW=0, adjH=0): nn.VolumetricFullConvolution under cudnn.torch's name.
local Full, parent = torch.class('cudnn.VolumetricFullConvolution', 'nn.VolumetricFullConvolution')
cudnn._convolutionModes(Full)
cudnn._withoutDescriptors(Full, parent)
