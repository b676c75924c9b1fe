-- nn.SpatialClassNLLCriterion(weights=nil, sizeAverage=true): ClassNLLCriterion at
-- every pixel of an N x C x H x W input of log-probabilities, with an N x H x W
-- target of 1-based classes; sizeAverage divides by the summed weights of the pixels.
local SpatialClassNLLCriterion, parent = torch.class('nn.SpatialClassNLLCriterion', 'nn.Criterion')
local C = torch.C
local check = torch._check
local kernels = nn._criterionKernels

function SpatialClassNLLCriterion:__init(weights, sizeAverage)
   parent.__init(self)
   if sizeAverage ~= nil then self.sizeAverage = sizeAverage else self.sizeAverage = true end
   if weights then
      assert(weights:dim() == 1, 'weights input should be 1-D Tensor')
      self.weights = weights
   end
   self.output_tensor = torch.zeros(1)
   self.total_weight_tensor = torch.ones(1)
   self.target = torch.zeros(1):long()
end

function SpatialClassNLLCriterion:__len()
   return self.weights and #self.weights or 0
end

local function args(self, input, target)
   if torch.typename(self.output_tensor) ~= input:type() then
      self.output_tensor = input.new(1):zero()
      self.total_weight_tensor = input.new(1):fill(1)
   end
   local t = kernels.longTarget(self, 'target', target)
   local w = self.weights and kernels.asInputType(self, '_weights', self.weights, input)
   return t, w and w._c or nil
end

function SpatialClassNLLCriterion:updateOutput(input, target)
   local t, w = args(self, input, target)
   check(C.lt_nn_SpatialClassNLLCriterion_updateOutput(input._c, t._c, self.output_tensor._c,
         self.sizeAverage and 1 or 0, w, self.total_weight_tensor._c), 2)
   self.output = self.output_tensor[1]
   return self.output, self.total_weight_tensor[1]
end

function SpatialClassNLLCriterion:updateGradInput(input, target)
   local t, w = args(self, input, target)
   check(C.lt_nn_SpatialClassNLLCriterion_updateGradInput(input._c, t._c, self.gradInput._c,
         self.sizeAverage and 1 or 0, w, self.total_weight_tensor._c), 2)
   return self.gradInput
end
