-- nn.SpatialSubSampling(nInputPlane, kW, kH, dW=1, dH=1): per plane, the sum of each kW x kH
-- window times a trainable weight plus a trainable bias (weight and bias: one per plane).
local SpatialSubSampling, parent = torch.class('nn.SpatialSubSampling', 'nn.Module')
local C = torch.C
local check = torch._check

function SpatialSubSampling:__init(nInputPlane, kW, kH, dW, dH)
   parent.__init(self)
   self.nInputPlane = nInputPlane
   self.kW = kW
   self.kH = kH
   self.dW = dW or 1
   self.dH = dH or 1
   self.weight = torch.Tensor(nInputPlane)
   self.bias = torch.Tensor(nInputPlane)
   self.gradWeight = torch.Tensor(nInputPlane)
   self.gradBias = torch.Tensor(nInputPlane)
   self:reset()
end

-- U(-1/sqrt(kW*kH), +) for weight and bias; reset(stdv) uses stdv*sqrt(3).
function SpatialSubSampling:reset(stdv)
   if stdv then
      stdv = stdv * math.sqrt(3)
   else
      stdv = 1 / math.sqrt(self.kW * self.kH)
   end
   self.weight:uniform(-stdv, stdv)
   self.bias:uniform(-stdv, stdv)
end

function SpatialSubSampling:updateOutput(input)
   check(C.lt_nn_SpatialSubSampling_updateOutput(input._c, self.output._c, self.weight._c, self.bias._c,
         self.kW, self.kH, self.dW, self.dH), 2)
   return self.output
end

function SpatialSubSampling:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   check(C.lt_nn_SpatialSubSampling_updateGradInput(input._c, gradOutput._c, self.gradInput._c, self.weight._c,
         self.kW, self.kH, self.dW, self.dH), 2)
   return self.gradInput
end

function SpatialSubSampling:accGradParameters(input, gradOutput, scale)
   check(C.lt_nn_SpatialSubSampling_accGradParameters(input._c, gradOutput._c, self.gradWeight._c,
         self.gradBias._c, self.kW, self.kH, self.dW, self.dH, scale or 1), 2)
end
