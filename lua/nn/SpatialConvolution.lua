-- nn.SpatialConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=padW):
-- Torch7's im2col + GEMM convolution ("MM"); weight (nOut, nIn, kH, kW).
local SpatialConvolution, parent = torch.class('nn.SpatialConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialConvolution:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH)
   parent.__init(self)
   dW = dW or 1
   dH = dH or 1
   self.nInputPlane = nInputPlane
   self.nOutputPlane = nOutputPlane
   self.kW = kW
   self.kH = kH
   self.dW = dW
   self.dH = dH
   self.padW = padW or 0
   self.padH = padH or self.padW
   self.weight = torch.Tensor(nOutputPlane, nInputPlane, kH, kW)
   self.bias = torch.Tensor(nOutputPlane)
   self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane, kH, kW)
   self.gradBias = torch.Tensor(nOutputPlane)
   self:reset()
end

SpatialConvolution.noBias = nn.Linear.noBias   -- drops bias and gradBias, as Linear's

-- U(-1/sqrt(kW*kH*nIn), +) for weight and bias; reset(stdv) uses stdv*sqrt(3).
function SpatialConvolution:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.kW * self.kH * self.nInputPlane)
   end
   self.weight:uniform(-stdv, stdv)
   if self.bias then self.bias:uniform(-stdv, stdv) end
end

local function buffers(self, input)
   self.finput = self.finput or input.new()
   self.fgradInput = self.fgradInput or input.new()
   -- files from before padW/padH existed (Torch7 kept this fix-up too)
   self.padW = self.padW or self.padding or 0
   self.padH = self.padH or self.padding or 0
end

local function checkInput(self, input)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then
      error(string.format('3D or 4D (batch mode) tensor expected for input, but got: %dD tensor', d), 3)
   end
   local planes = input:size(d - 2)
   if planes ~= self.nInputPlane then
      error(string.format('input has %d channels, but %s expects %d (size %s)', planes, torch.type(self),
                          self.nInputPlane, table.concat(input:size():totable(), 'x')), 3)
   end
end

function SpatialConvolution:updateOutput(input)
   checkInput(self, input)
   buffers(self, input)
   check(C.lt_nn_SpatialConvolutionMM_updateOutput(input._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.finput._c, self.fgradInput._c,
         self.kW, self.kH, self.dW, self.dH, self.padW, self.padH), 2)
   return self.output
end

function SpatialConvolution:updateGradInput(input, gradOutput)
   if self.gradInput then
      buffers(self, input)
      check(C.lt_nn_SpatialConvolutionMM_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
            self.weight._c, self.finput._c, self.fgradInput._c,
            self.kW, self.kH, self.dW, self.dH, self.padW, self.padH), 2)
      return self.gradInput
   end
end

function SpatialConvolution:accGradParameters(input, gradOutput, scale)
   buffers(self, input)
   check(C.lt_nn_SpatialConvolutionMM_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.finput._c, self.fgradInput._c,
         self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, scale or 1), 2)
end

function SpatialConvolution:type(type, tensorCache)
   if self.finput then self.finput = torch.Tensor() end
   if self.fgradInput then self.fgradInput = torch.Tensor() end
   return parent.type(self, type, tensorCache)
end

function SpatialConvolution:__tostring__()
   local s = string.format('%s(%d -> %d, %dx%d', torch.type(self), self.nInputPlane, self.nOutputPlane,
                           self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. string.format(', %d,%d', self.dW, self.dH)
   end
   if (self.padW or self.padH) and (self.padW ~= 0 or self.padH ~= 0) then
      s = s .. ', ' .. self.padW .. ',' .. self.padH
   end
   return s .. (self.bias and ')' or ') without bias')
end

function SpatialConvolution:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end
