-- cudnn.VolumetricMaxPooling(kT, kW, kH, dT=kT, dW=kW, dH=kH, padT=0, padW=0, padH=0);
-- :ceil() / :floor() (default).
local Max, parent = torch.class('cudnn.VolumetricMaxPooling', 'nn.VolumetricMaxPooling')

function Max:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self, kT, kW, kH, dT or kT, dW or kW, dH or kH, padT or 0, padW or 0, padH or 0)
   self.ceil_mode = false
end

-- cudnn.torch's 3-D pooling printed its class name only
Max.__tostring__ = cudnn._plainName
cudnn._withoutDescriptors(Max, parent)
