-- nn.SpatialDilatedConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=padW,
-- dilationW=1, dilationH=1): a SpatialConvolution whose taps are dilation pixels apart.
-- Output size floor((in + 2*pad - (dilation*(k-1)+1)) / d) + 1.
local SpatialDilatedConvolution, parent = torch.class('nn.SpatialDilatedConvolution', 'nn.SpatialConvolution')
local C = torch.C
local check = torch._check

function SpatialDilatedConvolution:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH, dilationW,
                                          dilationH)
   parent.__init(self, nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH)
   self.dilationW = dilationW or 1
   self.dilationH = dilationH or 1
end

local function buffers(self)
   self.finput = self.finput or self.weight.new()
   self.fgradInput = self.fgradInput or self.weight.new()
end

function SpatialDilatedConvolution:updateOutput(input)
   buffers(self)
   check(C.lt_nn_SpatialDilatedConvolution_updateOutput(input._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.finput._c, self.kW, self.kH, self.dW, self.dH,
         self.padW, self.padH, self.dilationW, self.dilationH), 2)
   return self.output
end

function SpatialDilatedConvolution:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   buffers(self)
   check(C.lt_nn_SpatialDilatedConvolution_updateGradInput(input._c, gradOutput._c, self.gradInput._c,
         self.weight._c, self.finput._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH,
         self.dilationW, self.dilationH), 2)
   return self.gradInput
end

function SpatialDilatedConvolution:accGradParameters(input, gradOutput, scale)
   buffers(self)
   check(C.lt_nn_SpatialDilatedConvolution_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.finput._c, self.kW, self.kH, self.dW, self.dH,
         self.padW, self.padH, self.dilationW, self.dilationH, scale or 1), 2)
end

function SpatialDilatedConvolution:__tostring__()
   local s = string.format('%s(%d -> %d, %dx%d', torch.type(self), self.nInputPlane, self.nOutputPlane,
                           self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. string.format(', %d,%d', self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. ', ' .. self.padW .. ',' .. self.padH end
   s = s .. ', ' .. self.dilationW .. ',' .. self.dilationH
   return s .. (self.bias and ')' or ') without bias')
end
