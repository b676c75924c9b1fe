-- cudnn.VolumetricConvolution(nInputPlane, nOutputPlane, kT, kW, kH, dT=1, dW=1, dH=1, padT=0,
-- padW=padT, padH=padW): nn.VolumetricConvolution under cudnn.torch's name (cudnn.torch kept nn's
-- constructor, padding defaults included).
local Conv, parent = torch.class('cudnn.VolumetricConvolution', 'nn.VolumetricConvolution')
cudnn._convolutionModes(Conv)
cudnn._withoutDescriptors(Conv, parent)
