-- nn.SpatialFullConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=0, adjW=0, adjH=0):
-- the transposed ("deconvolution") layer; weight (nIn, nOut, kH, kW). Output size
-- (in - 1)*d - 2*pad + k + adj. The input may be {input, target}: adj is then chosen so that the
-- output has the target's spatial size.
local SpatialFullConvolution, parent = torch.class('nn.SpatialFullConvolution', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialFullConvolution:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH, adjW, adjH)
   parent.__init(self)
   self.nInputPlane = nInputPlane
   self.nOutputPlane = nOutputPlane
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.padW = padW or 0
   self.padH = padH or 0
   self.adjW = adjW or 0
   self.adjH = adjH or 0
   if self.adjW > self.dW - 1 or self.adjH > self.dH - 1 then
      error(string.format('nn.SpatialFullConvolution: adjW (%d) and adjH (%d) must be smaller than dW (%d) and '
                          .. 'dH (%d) respectively', self.adjW, self.adjH, self.dW, self.dH), 2)
   end
   self.weight = torch.Tensor(nInputPlane, nOutputPlane, kH, kW)
   self.gradWeight = torch.Tensor(nInputPlane, nOutputPlane, kH, kW)
   self.bias = torch.Tensor(nOutputPlane)
   self.gradBias = torch.Tensor(nOutputPlane)
   self.ones = torch.Tensor()
   self:reset()
end

SpatialFullConvolution.noBias = nn.Linear.noBias   -- drops bias and gradBias, as Linear's

-- U(-1/sqrt(kW*kH*nIn), +) for weight and bias, as SpatialConvolution's
SpatialFullConvolution.reset = nn.SpatialConvolution.reset

-- The tensor to convolve and the adj to use: {input, target} picks adj from the target's size.
function SpatialFullConvolution:_args(input)
   -- files from before adjW/adjH existed
   self.adjW = self.adjW or 0
   self.adjH = self.adjH or 0
   if torch.type(input) ~= 'table' then return input, self.adjW, self.adjH end
   local target = input[2]
   local d = target:dim()
   local adjW = (target:size(d) + 2 * self.padW - self.kW) % self.dW
   local adjH = (target:size(d - 1) + 2 * self.padH - self.kH) % self.dH
   return input[1], adjW, adjH
end

-- The three kernel calls, on the tensor to convolve (cunn's GPU versions replace these, nothing else).
function SpatialFullConvolution:_forward(x, adjW, adjH)
   self.finput = self.finput or x.new()
   self.fgradInput = self.fgradInput or x.new()
   check(C.lt_nn_SpatialFullConvolution_updateOutput(x._c, self.output._c, self.weight._c,
         self.bias and self.bias._c or nil, self.finput._c, self.kW, self.kH, self.dW, self.dH,
         self.padW, self.padH, adjW, adjH), 3)
end

function SpatialFullConvolution:_backwardData(x, gradOutput, adjW, adjH)
   self.finput = self.finput or x.new()
   check(C.lt_nn_SpatialFullConvolution_updateGradInput(x._c, gradOutput._c, self.gradInput._c, self.weight._c,
         self.finput._c, self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, adjW, adjH), 3)
end

function SpatialFullConvolution:_backwardParams(x, gradOutput, adjW, adjH, scale)
   self.finput = self.finput or x.new()
   check(C.lt_nn_SpatialFullConvolution_accGradParameters(x._c, gradOutput._c, self.gradWeight._c,
         self.gradBias and self.gradBias._c or nil, self.finput._c, self.kW, self.kH, self.dW, self.dH,
         self.padW, self.padH, adjW, adjH, scale), 3)
end

function SpatialFullConvolution:updateOutput(input)
   local x, adjW, adjH = self:_args(input)
   self:_forward(x, adjW, adjH)
   return self.output
end

function SpatialFullConvolution:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   local x, adjW, adjH = self:_args(input)
   if torch.type(self.gradInput) == 'table' then self.gradInput = self.gradInput[1] or x.new() end
   self:_backwardData(x, gradOutput, adjW, adjH)
   if torch.type(input) == 'table' then
      -- the target only gives a size: its gradient is zero
      self.zeroScalar = self.zeroScalar or input[2].new(1):zero()
      self.ones:resize(input[2]:dim()):fill(1)
      local zero = self.zeroScalar:view(table.unpack(self.ones:totable())):expandAs(input[2])
      self.gradInput = {self.gradInput, zero}
   end
   return self.gradInput
end

function SpatialFullConvolution:accGradParameters(input, gradOutput, scale)
   local x, adjW, adjH = self:_args(input)
   self:_backwardParams(x, gradOutput, adjW, adjH, scale or 1)
end

function SpatialFullConvolution:type(type, tensorCache)
   self.finput = self.finput and torch.Tensor()
   self.fgradInput = self.fgradInput and torch.Tensor()
   return parent.type(self, type, tensorCache)
end

function SpatialFullConvolution:__tostring__()
   local s = string.format('%s(%d -> %d, %dx%d', torch.type(self), self.nInputPlane, self.nOutputPlane,
                           self.kW, self.kH)
   if self.dW ~= 1 or self.dH ~= 1 or self.padW ~= 0 or self.padH ~= 0 then
      s = s .. string.format(', %d,%d', self.dW, self.dH)
   end
   if self.padW ~= 0 or self.padH ~= 0 then s = s .. ', ' .. self.padW .. ',' .. self.padH end
   if (self.adjW or 0) ~= 0 or (self.adjH or 0) ~= 0 then s = s .. ', ' .. self.adjW .. ',' .. self.adjH end
   return s .. (self.bias and ')' or ') without bias')
end

function SpatialFullConvolution:clearState()
   nn.utils.clear(self, 'finput', 'fgradInput', '_input', '_gradOutput')
   return parent.clearState(self)
end
