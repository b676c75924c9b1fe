-- nn.VolumetricFullConvolution(nInputPlane, nOutputPlane, kT, kW, kH, dT=1, dW=1, dH=1,
--     padT=0, padW=0, padH=0, adjT=0, adjW=0, adjH=0): transposed 3-D convolution; weight
-- (nIn, nOut, kT, kH, kW); output size (in - 1)*d - 2*pad + k + adj. The input may be a table
-- {input, target}: adj is then chosen so that the output has target's last three sizes.
local VolumetricFullConvolution, parent = torch.class('nn.VolumetricFullConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function VolumetricFullConvolution:__init(nInputPlane, nOutputPlane, kT, kW, kH, dT, dW, dH, padT, padW, padH,
                                          adjT, adjW, adjH)
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
   self.padW = padW or 0
   self.padH = padH or 0
   self.adjT = adjT or 0
   self.adjW = adjW or 0
   self.adjH = adjH or 0
   if self.adjW > self.dW - 1 or self.adjH > self.dH - 1 or self.adjT > self.dT - 1 then
      error(string.format('nn.VolumetricFullConvolution: adjT, adjW, adjH (%d, %d, %d) must be smaller than the '
                          .. 'strides dT, dW, dH (%d, %d, %d)', self.adjT, self.adjW, self.adjH,
                          self.dT, self.dW, self.dH), 2)
   end
   self.weight = torch.Tensor(nInputPlane, nOutputPlane, kT, kH, kW)
   self.gradWeight = torch.Tensor(nInputPlane, nOutputPlane, kT, kH, kW)
   self.bias = torch.Tensor(nOutputPlane)
   self.gradBias = torch.Tensor(nOutputPlane)
   self.ones = torch.Tensor()
   self.finput = torch.Tensor()
   self.fgradInput = torch.Tensor()
   self:reset()
end

-- U(-1/sqrt(kT*kW*kH*nIn), +); reset(stdv) uses stdv*sqrt(3).
function VolumetricFullConvolution:reset(stdv)
   stdv = stdv and stdv * math.sqrt(3) or 1 / math.sqrt(self.kT * self.kW * self.kH * self.nInputPlane)
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
end

VolumetricFullConvolution.noBias = nn.Linear.noBias   -- drops bias and gradBias, as Linear's

-- Files from before adj existed stored the weight as (nOut, nIn, ...) and the padding as pT/pW/pH.
function VolumetricFullConvolution:backCompatibility()
   if not self.adjW then self.weight = self.weight:transpose(1, 2):contiguous() end
   self.padW = self.padW or self.pW
   self.padH = self.padH or self.pH
   self.padT = self.padT or self.pT
   self.adjW = self.adjW or 0
   self.adjH = self.adjH or 0
   self.adjT = self.adjT or 0
   self.finput = self.finput or self.weight.new()
   self.fgradInput = self.fgradInput or self.weight.new()
end

-- The input tensor and the adj to use: from the target's size when input is {input, target}.
local function unpackInput(self, input)
   if torch.type(input) ~= 'table' then return input, self.adjT, self.adjW, self.adjH end
   local target = input[2]
   local d = target:dim()
   local function adj(size, k, pad, stride) return (size + 2 * pad - k) % stride end
   return input[1], adj(target:size(d - 2), self.kT, self.padT, self.dT),
          adj(target:size(d), self.kW, self.padW, self.dW), adj(target:size(d - 1), self.kH, self.padH, self.dH)
end

VolumetricFullConvolution._unpackInput = unpackInput   -- cudnn's GPU version reads the same rule

-- The gradient of a target that only gives a size: zeros of its shape (one element, expanded).
function VolumetricFullConvolution:_zeroLike(target)
   self.zeroScalar = self.zeroScalar or target.new(1):zero()
   self.ones:resize(target:dim()):fill(1)
   return self.zeroScalar:view(table.unpack(self.ones:totable())):expandAs(target)
end

function VolumetricFullConvolution:updateOutput(input)
   self:backCompatibility()
   local x, adjT, adjW, adjH = unpackInput(self, input)
   check(C.lt_nn_VolumetricFullConvolution_updateOutput(x._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.finput._c, self.dT, self.dW, self.dH,
         self.padT, self.padW, self.padH, adjT, adjW, adjH), 2)
   return self.output
end

function VolumetricFullConvolution:updateGradInput(input, gradOutput)
   self:backCompatibility()
   local x, adjT, adjW, adjH = unpackInput(self, input)
   if torch.type(self.gradInput) == 'table' then self.gradInput = self.gradInput[1] end
   check(C.lt_nn_VolumetricFullConvolution_updateGradInput(x._c, gradOutput._c, self.gradInput._c,
         self.weight._c, self.fgradInput._c, self.dT, self.dW, self.dH,
         self.padT, self.padW, self.padH, adjT, adjW, adjH), 2)
   if torch.type(input) == 'table' then self.gradInput = {self.gradInput, self:_zeroLike(input[2])} end
   return self.gradInput
end

function VolumetricFullConvolution:accGradParameters(input, gradOutput, scale)
   self:backCompatibility()
   local x, adjT, adjW, adjH = unpackInput(self, input)
   check(C.lt_nn_VolumetricFullConvolution_accGradParameters(x._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.finput._c, self.dT, self.dW, self.dH,
         self.padT, self.padW, self.padH, adjT, adjW, adjH, scale or 1), 2)
end

function VolumetricFullConvolution:type(type, tensorCache)
   self.finput = torch.Tensor()
   self.fgradInput = torch.Tensor()
   return parent.type(self, type, tensorCache)
end

function VolumetricFullConvolution:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end

function VolumetricFullConvolution:__tostring__()
   local s = nn.VolumetricConvolution._describe(self)   -- name, planes, kernel, strides, pads
   if self.adjT ~= 0 or self.adjW ~= 0 or self.adjH ~= 0 then
      s = s .. ', ' .. self.adjT .. ',' .. self.adjW .. ',' .. self.adjH
   end
   return s .. ')'
end
