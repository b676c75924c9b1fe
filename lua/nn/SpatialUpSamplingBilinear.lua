-- nn.SpatialUpSamplingBilinear(scale) or ({oheight=, owidth=}): bilinear upsampling (aligned corners)
-- of the last two dimensions of a 3-D or 4-D input, to H * scale x W * scale or the given size.
local SpatialUpSamplingBilinear, parent = torch.class('nn.SpatialUpSamplingBilinear', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialUpSamplingBilinear:__init(params)
   parent.__init(self)
   if torch.type(params) == 'table' then
      self.owidth, self.oheight = params.owidth, params.oheight
   else
      nn._checkUpsamplingScale(params)
      self.scale_factor = params
   end
   self.inputSize = torch.LongStorage(4)
   self.outputSize = torch.LongStorage(4)
end

function SpatialUpSamplingBilinear:setSize(input)
   local xdim, ydim = input:dim(), input:dim() - 1
   for i = 1, input:dim() do
      self.inputSize[i] = input:size(i)
      self.outputSize[i] = input:size(i)
   end
   if self.scale_factor ~= nil then
      self.outputSize[ydim] = self.outputSize[ydim] * self.scale_factor
      self.outputSize[xdim] = self.outputSize[xdim] * self.scale_factor
   else
      self.outputSize[ydim] = self.oheight
      self.outputSize[xdim] = self.owidth
   end
end

local function checkDim(input)
   if input:dim() ~= 3 and input:dim() ~= 4 then
      error('SpatialUpSamplingBilinear only supports 3D or 4D tensors', 3)
   end
end

function SpatialUpSamplingBilinear:updateOutput(input)
   checkDim(input)
   self:setSize(input)
   local d = input:dim()
   check(C.lt_nn_UpSamplingLinear_updateOutput(input._c, self.output._c, 2, 1, self.outputSize[d - 1],
         self.outputSize[d]), 2)
   return self.output
end

function SpatialUpSamplingBilinear:updateGradInput(input, gradOutput)
   checkDim(input)
   if input:dim() ~= gradOutput:dim() then error('Input and gradOutput should be of same dimension', 2) end
   self:setSize(input)
   local d = input:dim()
   check(C.lt_nn_UpSamplingLinear_updateGradInput(input._c, gradOutput._c, self.gradInput._c, 2, 1,
         self.outputSize[d - 1], self.outputSize[d]), 2)
   return self.gradInput
end

function SpatialUpSamplingBilinear:__tostring__()
   if self.scale_factor ~= nil then
      return string.format('%s(%d)', torch.type(self), self.scale_factor)
   end
   return string.format('%s(%d, %d)', torch.type(self), self.oheight, self.owidth)
end

function SpatialUpSamplingBilinear:clearState()
   nn.utils.clear(self, '_input', '_gradOutput')
   return parent.clearState(self)
end
