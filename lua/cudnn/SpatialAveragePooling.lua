-- cudnn.SpatialAveragePooling(kW, kH, dW=kW, dH=kH, padW=0, padH=0): unlike nn's, the strides
-- default to the kernel size, and the padding always counts in the divisor (cuDNN's
-- count-include-pad mode; cudnn.torch had no exclude-pad mode and no sum pooling).
local Avg, parent = torch.class('cudnn.SpatialAveragePooling', 'nn.SpatialAveragePooling')

function Avg:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self, kW, kH, dW or kW, dH or kH, padW or 0, padH or 0)
   self.ceil_mode = false
   self.count_include_pad = true
end

function Avg:setCountExcludePad()
   error('cudnn.SpatialAveragePooling always counts the padding: use nn.SpatialAveragePooling to exclude it', 2)
end

local function checkMode(self)
   if self.ceil_mode == nil then   -- files written before ceil mode and padding existed
      self.ceil_mode, self.padW, self.padH = false, 0, 0
   end
   if self.divide == false then
      error('cudnn.SpatialAveragePooling: divide = false (sum pooling) is not supported; '
            .. 'use nn.SpatialAveragePooling', 3)
   end
   self.count_include_pad = true
end

function Avg:updateOutput(input)
   checkMode(self)
   return parent.updateOutput(self, input)
end

function Avg:updateGradInput(input, gradOutput)
   checkMode(self)
   return parent.updateGradInput(self, input, gradOutput)
end

cudnn._withoutDescriptors(Avg, parent)
