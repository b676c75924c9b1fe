-- nn.VolumetricFractionalMaxPooling(poolSizeT, poolSizeW, poolSizeH, outT, outW, outH)
-- or (..., ratioT, ratioW, ratioH) with ratios in (0, 1): fractional max pooling
-- (see nn.SpatialFractionalMaxPooling) in three dimensions. As Torch7, the input
-- is ([N,] C, H, W, T) -- time last -- and self.randomSamples ([N,] C, 3) holds
-- the samples for T, W, H.
local VolumetricFractionalMaxPooling, parent = torch.class('nn.VolumetricFractionalMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function VolumetricFractionalMaxPooling:__init(poolSizeT, poolSizeW, poolSizeH, arg1, arg2, arg3)
   parent.__init(self)
   assert(poolSizeT >= 2)
   assert(poolSizeW >= 2)
   assert(poolSizeH >= 2)
   self.poolSizeT = poolSizeT
   self.poolSizeW = poolSizeW
   self.poolSizeH = poolSizeH
   self.randomSamples = nil
   self.newRandomPool = false
   if arg1 >= 1 and arg2 >= 1 and arg3 >= 1 then
      self.outT = arg1
      self.outW = arg2
      self.outH = arg3
   else
      self.ratioT = arg1
      self.ratioW = arg2
      self.ratioH = arg3
      assert(self.ratioT > 0 and self.ratioT < 1)
      assert(self.ratioW > 0 and self.ratioW < 1)
      assert(self.ratioH > 0 and self.ratioH < 1)
   end
end

function VolumetricFractionalMaxPooling:getBufferSize_(input)
   if input:nDimension() == 4 then
      return torch.LongStorage({1, input:size(1), 3})
   elseif input:nDimension() == 5 then
      return torch.LongStorage({input:size(1), input:size(2), 3})
   end
   error('input must be dim 4 or 5', 3)
end

VolumetricFractionalMaxPooling.initSampleBuffer_ = nn.SpatialFractionalMaxPooling.initSampleBuffer_
VolumetricFractionalMaxPooling.fixPoolingRegions = nn.SpatialFractionalMaxPooling.fixPoolingRegions
VolumetricFractionalMaxPooling.empty = nn.SpatialFractionalMaxPooling.empty
VolumetricFractionalMaxPooling.clearState = nn.SpatialFractionalMaxPooling.clearState

function VolumetricFractionalMaxPooling:getOutputSizes_(input)
   local outT, outW, outH = self.outT, self.outW, self.outH
   if self.ratioW ~= nil and self.ratioH ~= nil then
      local d = input:nDimension()
      if d ~= 4 and d ~= 5 then error('input must be dim 4 or 5', 3) end
      outT = math.floor(input:size(d) * self.ratioT)
      outW = math.floor(input:size(d - 1) * self.ratioW)
      outH = math.floor(input:size(d - 2) * self.ratioH)
      assert(outT > 0, 'reduction ratio or input time too small')
      assert(outW > 0, 'reduction ratio or input width too small')
      assert(outH > 0, 'reduction ratio or input height too small')
   else
      assert(outT ~= nil and outW ~= nil and outH ~= nil)
   end
   return outT, outW, outH
end

function VolumetricFractionalMaxPooling:updateOutput(input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   self:initSampleBuffer_(input)
   local outT, outW, outH = self:getOutputSizes_(input)
   check(C.lt_nn_VolumetricFractionalMaxPooling_updateOutput(input._c, self.output._c, outT, outW, outH,
         self.poolSizeT, self.poolSizeW, self.poolSizeH, self.indices._c, self.randomSamples._c), 2)
   return self.output
end

function VolumetricFractionalMaxPooling:updateGradInput(input, gradOutput)
   assert(self.randomSamples ~= nil, 'must call updateOutput/forward first')
   local outT, outW, outH = self:getOutputSizes_(input)
   check(C.lt_nn_VolumetricFractionalMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, outT,
         outW, outH, self.poolSizeT, self.poolSizeW, self.poolSizeH, self.indices._c), 2)
   return self.gradInput
end

function VolumetricFractionalMaxPooling:__tostring__()
   return string.format('%s(%dx%dx%d, %d,%d,%d)', torch.type(self), self.outT and self.outT or self.ratioT,
                        self.outW and self.outW or self.ratioW, self.outH and self.outH or self.ratioH,
                        self.poolSizeT, self.poolSizeW, self.poolSizeH)
end
