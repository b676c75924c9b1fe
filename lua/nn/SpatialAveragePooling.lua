-- nn.SpatialAveragePooling(kW, kH, dW=1, dH=1, padW=0, padH=0) — note the stride
-- defaults to 1, unlike max pooling. :ceil(), :setCountIncludePad() (default) /
-- :setCountExcludePad() choose the divisor as Torch7.
local SpatialAveragePooling, parent = torch.class('nn.SpatialAveragePooling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialAveragePooling:__init(kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.padW = padW or 0
   self.padH = padH or 0
   self.ceil_mode = false
   self.count_include_pad = true
   self.divide = true
end

function SpatialAveragePooling:ceil()
   self.ceil_mode = true
   return self
end

function SpatialAveragePooling:floor()
   self.ceil_mode = false
   return self
end

function SpatialAveragePooling:setCountIncludePad()
   self.count_include_pad = true
   return self
end

function SpatialAveragePooling:setCountExcludePad()
   self.count_include_pad = false
   return self
end

-- files written before ceil mode and padding existed
local function backwardCompatible(self)
   if self.ceil_mode == nil then
      self.ceil_mode = false
      self.count_include_pad = true
      self.padH = 0
      self.padW = 0
   end
end

function SpatialAveragePooling:updateOutput(input)
   backwardCompatible(self)
   check(C.lt_nn_SpatialAveragePooling_updateOutput(input._c, self.output._c, self.kW, self.kH, self.dW,
         self.dH, self.padW, self.padH, self.ceil_mode and 1 or 0, self.count_include_pad and 1 or 0), 2)
   -- old files: divide == false meant a sum pooling
   if self.divide == false then self.output:mul(self.kW * self.kH) end
   return self.output
end

function SpatialAveragePooling:updateGradInput(input, gradOutput)
   if self.gradInput then
      check(C.lt_nn_SpatialAveragePooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.ceil_mode and 1 or 0,
            self.count_include_pad and 1 or 0), 2)
      if self.divide == false then self.gradInput:mul(self.kW * self.kH) end
      return self.gradInput
   end
end

-- the same description as max pooling: 'nn.SpatialAveragePooling(3x3, 1,1, 1,1)'
SpatialAveragePooling.__tostring__ = nn.SpatialMaxPooling.__tostring__
