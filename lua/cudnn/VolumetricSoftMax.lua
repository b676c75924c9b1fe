-- cudnn.VolumetricSoftMax(fast=false): SoftMax over the feature planes at every voxel of a
-- C x T x H x W or N x C x T x H x W input. As cudnn.torch, the work is done by a child
-- cudnn.SpatialSoftMax (field `ssm`) on the input with T and H folded into one dimension.
local VSM, parent = torch.class('cudnn.VolumetricSoftMax', 'nn.Module')

function VSM:__init(fast)
   parent.__init(self)
   self.ssm = cudnn.SpatialSoftMax(fast)
end

local function fold(self, t)
   local d = t:dim()
   if d ~= 4 and d ~= 5 then
      error(string.format('%s: input should be a 3-D volume (4D tensor) or a batch of them (5D), got %dD',
                          torch.type(self), d), 3)
   end
   t = t:contiguous()
   local s = t:size():totable()
   s[d - 2] = s[d - 2] * s[d - 1]
   table.remove(s, d - 1)
   return t:view(torch.LongStorage(s))
end

function VSM:updateOutput(input)
   self.ssm:updateOutput(fold(self, input))
   self.output = self.ssm.output:view(input:size())
   return self.output
end

function VSM:updateGradInput(input, gradOutput)
   self.ssm:updateGradInput(fold(self, input), fold(self, gradOutput))
   self.gradInput = self.ssm.gradInput:view(input:size())
   return self.gradInput
end

cudnn._withoutDescriptors(VSM, parent)

function VSM:clearState()
   self.ssm:clearState()
   return parent.clearState(self)
end

VSM.__tostring__ = cudnn._plainName
