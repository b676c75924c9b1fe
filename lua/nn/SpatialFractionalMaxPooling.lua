-- nn.SpatialFractionalMaxPooling(poolSizeW, poolSizeH, outW, outH) or
-- (poolSizeW, poolSizeH, ratioW, ratioH) with ratios in (0, 1): Graham's
-- fractional max pooling: poolSizeW x poolSizeH windows at pseudo-random
-- starts, drawn again every forward from self.randomSamples ([N,] C, 2
-- uniforms) unless :fixPoolingRegions() keeps them.
local SpatialFractionalMaxPooling, parent = torch.class('nn.SpatialFractionalMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialFractionalMaxPooling:__init(poolSizeW, poolSizeH, arg1, arg2)
   parent.__init(self)
   assert(poolSizeW >= 2)
   assert(poolSizeH >= 2)
   self.poolSizeW = poolSizeW
   self.poolSizeH = poolSizeH
   self.randomSamples = nil
   self.newRandomPool = false
   if arg1 >= 1 and arg2 >= 1 then
      self.outW = arg1
      self.outH = arg2
   else
      self.ratioW = arg1
      self.ratioH = arg2
      assert(self.ratioW > 0 and self.ratioW < 1)
      assert(self.ratioH > 0 and self.ratioH < 1)
   end
end

-- ([N,] C, 2): one sample for the width and one for the height of every plane
function SpatialFractionalMaxPooling:getBufferSize_(input)
   if input:nDimension() == 3 then
      return torch.LongStorage({1, input:size(1), 2})
   elseif input:nDimension() == 4 then
      return torch.LongStorage({input:size(1), input:size(2), 2})
   end
   error('input must be dim 3 or 4', 3)
end

function SpatialFractionalMaxPooling:initSampleBuffer_(input)
   local size = self:getBufferSize_(input)
   if self.randomSamples == nil or torch.type(self.randomSamples) ~= torch.type(input) then
      self.randomSamples = input.new():resize(size):uniform()
   elseif self.randomSamples:size(1) ~= size[1] or self.randomSamples:size(2) ~= size[2] then
      self.randomSamples:resize(size):uniform()
   elseif not self.newRandomPool then
      self.randomSamples:uniform()
   end
end

function SpatialFractionalMaxPooling:getOutputSizes_(input)
   local outW, outH = self.outW, self.outH
   if self.ratioW ~= nil and self.ratioH ~= nil then
      local d = input:nDimension()
      if d ~= 3 and d ~= 4 then error('input must be dim 3 or 4', 3) end
      outW = math.floor(input:size(d) * self.ratioW)
      outH = math.floor(input:size(d - 1) * self.ratioH)
      assert(outW > 0, 'reduction ratio or input width too small')
      assert(outH > 0, 'reduction ratio or input height too small')
   else
      assert(outW ~= nil and outH ~= nil)
   end
   return outW, outH
end

-- val (default true): keep the current pooling regions for the next forwards
function SpatialFractionalMaxPooling:fixPoolingRegions(val)
   if val == nil then val = true end
   self.newRandomPool = val
   return self
end

function SpatialFractionalMaxPooling:updateOutput(input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   self:initSampleBuffer_(input)
   local outW, outH = self:getOutputSizes_(input)
   check(C.lt_nn_SpatialFractionalMaxPooling_updateOutput(input._c, self.output._c, outW, outH, self.poolSizeW,
         self.poolSizeH, self.indices._c, self.randomSamples._c), 2)
   return self.output
end

function SpatialFractionalMaxPooling:updateGradInput(input, gradOutput)
   assert(self.randomSamples ~= nil, 'must call updateOutput/forward first')
   local outW, outH = self:getOutputSizes_(input)
   check(C.lt_nn_SpatialFractionalMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, outW, outH,
         self.poolSizeW, self.poolSizeH, self.indices._c), 2)
   return self.gradInput
end

-- older name of clearState
function SpatialFractionalMaxPooling:empty()
   self:clearState()
end

function SpatialFractionalMaxPooling:clearState()
   self.indices = nil
   self.randomSamples = nil
   return parent.clearState(self)
end

function SpatialFractionalMaxPooling:__tostring__()
   return string.format('%s(%dx%d, %d,%d)', torch.type(self), self.outW and self.outW or self.ratioW,
                        self.outH and self.outH or self.ratioH, self.poolSizeW, self.poolSizeH)
end
