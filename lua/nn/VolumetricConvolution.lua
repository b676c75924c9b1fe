-- nn.VolumetricConvolution(nInputPlane, nOutputPlane, kT, kW, kH, dT=1, dW=1, dH=1,
--                          padT=0, padW=padT, padH=padW): 3-D convolution (vol2col + GEMM) of
-- (nIn, T, H, W) or (N, nIn, T, H, W) volumes; weight (nOut, nIn, kT, kH, kW).
local VolumetricConvolution, parent = torch.class('nn.VolumetricConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function VolumetricConvolution:__init(nInputPlane, nOutputPlane, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self)
   self.nInputPlane = nInputPlane
   self.nOutputPlane = nOutputPlane
   self.kT = kT
   self.kW = kW
   self.kH = kH
   self.dT = dT or 1
   self.dW = dW or 1
   self.dH = dH or 1
   self.padT = padT or 0
   self.padW = padW or self.padT
   self.padH = padH or self.padW
   self.weight = torch.Tensor(nOutputPlane, nInputPlane, kT, kH, kW)
   self.bias = torch.Tensor(nOutputPlane)
   self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane, kT, kH, kW)
   self.gradBias = torch.Tensor(nOutputPlane)
   self:reset()
end

-- U(-1/sqrt(kT*kW*kH*nIn), +); reset(stdv) uses stdv*sqrt(3).
function VolumetricConvolution:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.kT * self.kW * self.kH * self.nInputPlane)
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
end

VolumetricConvolution.noBias = nn.Linear.noBias   -- drops bias and gradBias, as Linear's

local function buffers(self, input)
   self.finput = self.finput or input.new()
   self.fgradInput = self.fgradInput or input.new()
end

-- The dilation of this layer (VolumetricDilatedConvolution has its own fields).
function VolumetricConvolution:_dilation()
   return self.dilationT or 1, self.dilationW or 1, self.dilationH or 1
end

function VolumetricConvolution:updateOutput(input)
   buffers(self, input)
   local lT, lW, lH = self:_dilation()
   check(C.lt_nn_VolumetricConvolution_updateOutput(input._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.finput._c, self.kT, self.kW, self.kH, self.dT, self.dW, self.dH,
         self.padT, self.padW, self.padH, lT, lW, lH), 2)
   return self.output
end

function VolumetricConvolution:updateGradInput(input, gradOutput)
   if self.gradInput then
      buffers(self, input)
      local lT, lW, lH = self:_dilation()
      check(C.lt_nn_VolumetricConvolution_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.weight._c, self.fgradInput._c, self.kT, self.kW, self.kH, self.dT, self.dW, self.dH,
            self.padT, self.padW, self.padH, lT, lW, lH), 2)
      return self.gradInput
   end
end

function VolumetricConvolution:accGradParameters(input, gradOutput, scale)
   buffers(self, input)
   local lT, lW, lH = self:_dilation()
   check(C.lt_nn_VolumetricConvolution_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.finput._c, self.kT, self.kW, self.kH,
         self.dT, self.dW, self.dH, self.padT, self.padW, self.padH, lT, lW, lH, scale or 1), 2)
end

function VolumetricConvolution:type(type, tensorCache)
   if self.finput then self.finput:set() end
   if self.fgradInput then self.fgradInput:set() end
   return parent.type(self, type, tensorCache)
end

function VolumetricConvolution:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end

-- "name(nIn -> nOut, kTxkWxkH[, dT,dW,dH][, padT,padW,padH]"
function VolumetricConvolution:_describe()
   local s = string.format('%s(%d -> %d, %dx%dx%d', torch.type(self), self.nInputPlane, self.nOutputPlane,
                           self.kT, self.kW, self.kH)
   local padded = self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0
   if self.dT ~= 1 or self.dW ~= 1 or self.dH ~= 1 or padded then
      s = s .. string.format(', %d,%d,%d', self.dT, self.dW, self.dH)
   end
   if padded then s = s .. ', ' .. self.padT .. ',' .. self.padW .. ',' .. self.padH end
   return s
end

function VolumetricConvolution:__tostring__()
   return self:_describe() .. ')'
end
