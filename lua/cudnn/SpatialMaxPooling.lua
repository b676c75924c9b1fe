-- cudnn.SpatialMaxPooling(kW, kH, dW=kW, dH=kH, padW=0, padH=0); :ceil() / :floor() (default).
local Max, parent = torch.class('cudnn.SpatialMaxPooling', 'nn.SpatialMaxPooling')

function Max:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self, kW, kH, dW or kW, dH or kH, padW or 0, padH or 0)
   self.ceil_mode = false
end

cudnn._withoutDescriptors(Max, parent)
