-- nn.VolumetricMaxPooling(kT, kW, kH, dT=kT, dW=kW, dH=kH, padT=0, padW=0, padH=0);
-- :ceil() / :floor() (default). (C, T, H, W) or (N, C, T, H, W) inputs.
-- indices keep Torch7's packed layout (see lt_nn_pooling.h); nn.VolumetricMaxUnpooling reads them.
local VolumetricMaxPooling, parent = torch.class('nn.VolumetricMaxPooling', 'nn.Module')
local C = torch.C
local check = torch._check

VolumetricMaxPooling.__version = 2

function VolumetricMaxPooling:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self)
   self.kT = kT
   self.kH = kH
   self.kW = kW
   self.dT = dT or kT
   self.dW = dW or kW
   self.dH = dH or kH
   self.padT = padT or 0
   self.padW = padW or 0
   self.padH = padH or 0
   self.ceil_mode = false
   self.indices = torch.LongTensor()
end

function VolumetricMaxPooling:ceil()
   self.ceil_mode = true
   return self
end

function VolumetricMaxPooling:floor()
   self.ceil_mode = false
   return self
end

-- the dilation of this module (1 for plain max pooling)
function VolumetricMaxPooling:_dilation()
   return self.dilationT or 1, self.dilationW or 1, self.dilationH or 1
end

function VolumetricMaxPooling:updateOutput(input)
   local dims = input:dim()
   self.itime = input:size(dims - 2)
   self.iheight = input:size(dims - 1)
   self.iwidth = input:size(dims)
   self.indices = nn.utils.indicesFor(input, self.indices)
   local dilT, dilW, dilH = self:_dilation()
   check(C.lt_nn_VolumetricDilatedMaxPooling_updateOutput(input._c, self.output._c, self.indices._c, self.kT,
         self.kW, self.kH, self.dT, self.dW, self.dH, self.padT, self.padW, self.padH, dilT, dilW, dilH,
         self.ceil_mode and 1 or 0), 2)
   return self.output
end

function VolumetricMaxPooling:updateGradInput(input, gradOutput)
   local dilT, dilW, dilH = self:_dilation()
   check(C.lt_nn_VolumetricDilatedMaxPooling_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.indices._c, self.kT, self.kW, self.kH, self.dT, self.dW, self.dH, self.padT, self.padW, self.padH,
         dilT, dilW, dilH, self.ceil_mode and 1 or 0), 2)
   return self.gradInput
end

-- older name of clearState
function VolumetricMaxPooling:empty()
   self:clearState()
end

function VolumetricMaxPooling:clearState()
   if self.indices then self.indices:set() end
   return parent.clearState(self)
end

-- files written before ceil mode existed
function VolumetricMaxPooling:read(file, version)
   parent.read(self, file)
   if version < 2 then self.ceil_mode = false end
end

-- 'nn.VolumetricMaxPooling(2x2x2, 2,2,2)', pads only when non-zero
function VolumetricMaxPooling:__tostring__()
   local s = string.format('%s(%dx%dx%d, %d,%d,%d', torch.type(self), self.kT, self.kW, self.kH, self.dT, self.dW,
                           self.dH)
   if (self.padT or self.padW or self.padH) and (self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0) then
      s = s .. ', ' .. self.padT .. ',' .. self.padW .. ',' .. self.padH
   end
   return s .. ')'
end
