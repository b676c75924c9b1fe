-- nn.SpatialConvolutionLocal(nInputPlane, nOutputPlane, iW, iH, kW, kH, dW=1, dH=1, padW=0, padH=padW):
-- a convolution with its own kernels at every output position (for a fixed iW x iH image).
-- weight (oH, oW, nOutputPlane, nInputPlane, kH, kW), bias (nOutputPlane, oH, oW), as Torch7.
local SpatialConvolutionLocal, parent = torch.class('nn.SpatialConvolutionLocal', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialConvolutionLocal:__init(nInputPlane, nOutputPlane, iW, iH, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   self.nInputPlane = nInputPlane
   self.nOutputPlane = nOutputPlane
   self.kW = kW
   self.kH = kH
   self.iW = iW
   self.iH = iH
   self.dW = dW or 1
   self.dH = dH or 1
   self.padW = padW or 0
   self.padH = padH or self.padW
   self.oW = math.floor((self.padW * 2 + iW - self.kW) / self.dW) + 1
   self.oH = math.floor((self.padH * 2 + iH - self.kH) / self.dH) + 1
   if self.oW < 1 or self.oH < 1 then
      error(string.format('nn.SpatialConvolutionLocal: illegal configuration: the output would be %dx%d '
                          .. '(input %dx%d, kernel %dx%d, stride %d,%d, padding %d,%d)', self.oW, self.oH,
                          iW, iH, kW, kH, self.dW, self.dH, self.padW, self.padH), 2)
   end
   self.weight = torch.Tensor(self.oH, self.oW, nOutputPlane, nInputPlane, kH, kW)
   self.bias = torch.Tensor(nOutputPlane, self.oH, self.oW)
   self.gradWeight = torch.Tensor():resizeAs(self.weight)
   self.gradBias = torch.Tensor():resizeAs(self.bias)
   self:reset()
end

-- U(-1/sqrt(kW*kH*nIn), +) for weight and bias; reset(stdv) uses stdv*sqrt(3).
function SpatialConvolutionLocal:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.kW * self.kH * self.nInputPlane)
   end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
end

local function checkSize(self, what, t, planes, h, w)
   local d = t:dim()
   if (d ~= 3 and d ~= 4) or t:size(d - 2) ~= planes or t:size(d - 1) ~= h or t:size(d) ~= w then
      error(string.format('%s: %s of size %s, expected %s%dx%dx%d', torch.type(self), what,
                          table.concat(t:size():totable(), 'x'), d == 4 and 'batchsize x ' or '', planes, h, w), 3)
   end
end

SpatialConvolutionLocal._checkSize = checkSize   -- cunn's GPU version checks the same

function SpatialConvolutionLocal:updateOutput(input)
   checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
   check(C.lt_nn_SpatialConvolutionLocal_updateOutput(input._c, self.output._c, self.weight._c, self.bias._c,
         self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.iW, self.iH, self.oW, self.oH), 2)
   return self.output
end

function SpatialConvolutionLocal:updateGradInput(input, gradOutput)
   checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
   checkSize(self, 'gradOutput', gradOutput, self.nOutputPlane, self.oH, self.oW)
   if not self.gradInput then return end
   check(C.lt_nn_SpatialConvolutionLocal_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.weight._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.iW, self.iH,
         self.oW, self.oH), 2)
   return self.gradInput
end

function SpatialConvolutionLocal:accGradParameters(input, gradOutput, scale)
   checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
   checkSize(self, 'gradOutput', gradOutput, self.nOutputPlane, self.oH, self.oW)
   check(C.lt_nn_SpatialConvolutionLocal_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.iW, self.iH,
         self.oW, self.oH, scale or 1), 2)
end

function SpatialConvolutionLocal:type(type, tensorCache)
   self.finput = self.finput and torch.Tensor()
   self.fgradInput = self.fgradInput and torch.Tensor()
   return parent.type(self, type, tensorCache)
end

function SpatialConvolutionLocal:__tostring__()
   local s = string.format('%s(%d -> %d, %dx%d, %dx%d', torch.type(self), self.nInputPlane, self.nOutputPlane,
                           self.iW, self.iH, self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. string.format(', %d,%d', self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. ', ' .. self.padW .. ',' .. self.padH end
   return s .. ')'
end

function SpatialConvolutionLocal:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end
