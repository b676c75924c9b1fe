-- nn.SpatialUpSamplingNearest(scale): nearest-neighbour upsampling of the last two dimensions of a
-- 3-D or 4-D input by an integer scale (oH = H * scale, oW = W * scale).
local SpatialUpSamplingNearest, parent = torch.class('nn.SpatialUpSamplingNearest', 'nn.Module')
local C = torch.C
local check = torch._check

-- Shared by the upsampling classes: an integer scale of at least 1.
function nn._checkUpsamplingScale(scale)
   if type(scale) ~= 'number' or scale < 1 then error('scale_factor must be greater than 1', 3) end
   if math.floor(scale) ~= scale then error('scale_factor must be integer', 3) end
end

function SpatialUpSamplingNearest:__init(scale)
   parent.__init(self)
   nn._checkUpsamplingScale(scale)
   self.scale_factor = scale
   self.inputSize = torch.LongStorage(4)
   self.outputSize = torch.LongStorage(4)
end

function SpatialUpSamplingNearest:updateOutput(input)
   if input:dim() ~= 3 and input:dim() ~= 4 then
      error('SpatialUpSamplingNearest only support 3D or 4D tensors', 2)
   end
   for i = 1, input:dim() do
      self.inputSize[i] = input:size(i)
      self.outputSize[i] = input:size(i) * (i >= input:dim() - 1 and self.scale_factor or 1)
   end
   check(C.lt_nn_UpSamplingNearest_updateOutput(input._c, self.output._c, 2, self.scale_factor), 2)
   return self.output
end

function SpatialUpSamplingNearest:updateGradInput(input, gradOutput)
   check(C.lt_nn_UpSamplingNearest_updateGradInput(input._c, gradOutput._c, self.gradInput._c, 2,
         self.scale_factor), 2)
   return self.gradInput
end
