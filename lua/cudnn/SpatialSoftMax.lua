-- cudnn.SpatialSoftMax(fast=false): SoftMax over the feature planes at every position of a
-- C, N x C, C x H x W or N x C x H x W input (nn.SpatialSoftMax's kernels).
--
-- The whole cudnn softmax family runs through softmaxForward/softmaxBackward below, which read
-- cudnn.torch's two fields: `mode` ('CUDNN_SOFTMAX_MODE_CHANNEL': over dimension 1 of C x H x W and
-- 2 of N x C x H x W; 'CUDNN_SOFTMAX_MODE_INSTANCE': over everything but the batch dimension) and
-- `algorithm` ('CUDNN_SOFTMAX_LOG' gives the log-softmax; 'CUDNN_SOFTMAX_FAST' and '..._ACCURATE'
-- both give the accurate, max-subtracted softmax here).
local C = torch.C
local check = torch._check

local SSM, parent = torch.class('cudnn.SpatialSoftMax', 'nn.SpatialSoftMax')

function SSM:__init(fast)
   parent.__init(self)
   self.algorithm = fast and 'CUDNN_SOFTMAX_FAST' or 'CUDNN_SOFTMAX_ACCURATE'
end

-- The view of t whose rows (or planes) the nn kernels normalize as `mode` wants.
local function kernelView(mode, t)
   local d = t:dim()
   if mode ~= 'CUDNN_SOFTMAX_MODE_INSTANCE' or d <= 2 then return t end
   t = t:contiguous()
   if d == 3 then return t:view(t:nElement()) end   -- one C x H x W image
   return t:view(t:size(1), t:nElement() / t:size(1))
end

-- The kernels: nn's host ones here; cudnn/gpu.lua gives tensors in GPU memory the device ones.
cudnn._softmaxKernel = {
   forward = function(log, x, output)
      return (log and C.lt_nn_LogSoftMax_updateOutput or C.lt_nn_SoftMax_updateOutput)(x._c, output._c)
   end,
   backward = function(log, x, g, gradInput, y)
      return (log and C.lt_nn_LogSoftMax_updateGradInput or C.lt_nn_SoftMax_updateGradInput)(x._c, g._c,
                                                                                             gradInput._c, y._c)
   end,
}

function cudnn._softmaxForward(self, input)
   local x = kernelView(self.mode, input)
   check(cudnn._softmaxKernel.forward(self.algorithm == 'CUDNN_SOFTMAX_LOG', x, self.output), 3)
   if not rawequal(x, input) then self.output = self.output:view(input:size()) end
   return self.output
end

function cudnn._softmaxBackward(self, input, gradOutput)
   if not self.gradInput then return end
   local x, g = kernelView(self.mode, input), kernelView(self.mode, gradOutput)
   local y = not rawequal(x, input) and self.output:view(x:size()) or self.output
   check(cudnn._softmaxKernel.backward(self.algorithm == 'CUDNN_SOFTMAX_LOG', x, g, self.gradInput, y), 3)
   if not rawequal(x, input) then self.gradInput = self.gradInput:view(input:size()) end
   return self.gradInput
end

-- Gives a softmax class its forward/backward with `mode` (and `algorithm` when given) fixed at
-- every call, as cudnn.torch's classes set them in updateOutput; nil keeps the module's own.
function cudnn._softmaxClass(class, parent, mode, algorithm)
   function class:updateOutput(input)
      self.mode = mode or self.mode or 'CUDNN_SOFTMAX_MODE_CHANNEL'
      self.algorithm = algorithm or self.algorithm or 'CUDNN_SOFTMAX_ACCURATE'  -- converted from nn
      return cudnn._softmaxForward(self, input)
   end
   function class:updateGradInput(input, gradOutput)
      return cudnn._softmaxBackward(self, input, gradOutput)
   end
   class.__tostring__ = cudnn._plainName
   cudnn._withoutDescriptors(class, parent)
end

cudnn._softmaxClass(SSM, parent)
