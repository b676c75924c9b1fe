-- nn.SpatialDivisiveNormalization(nInputPlane=1, kernel=9x9 ones, threshold=1e-4,
-- thresval=threshold): divides every pixel by the local standard deviation over
-- all planes, sqrt(kernel-weighted sum of x^2), border-corrected as in
-- nn.SpatialSubtractiveNormalization and floored by Threshold(threshold, thresval).
-- Torch7's fields (meanestimator, stdestimator, normalizer, divider, thresholder, coef).
local SpatialDivisiveNormalization, parent = torch.class('nn.SpatialDivisiveNormalization', 'nn.Module')
local SSN = nn.SpatialSubtractiveNormalization

function SpatialDivisiveNormalization:__init(nInputPlane, kernel, threshold, thresval)
   parent.__init(self)
   self.nInputPlane = nInputPlane or 1
   self.kernel = kernel or torch.Tensor(9, 9):fill(1)
   self.threshold = threshold or 1e-4
   self.thresval = thresval or threshold or 1e-4
   SSN._checkKernel(self.kernel, 'SpatialDivisiveNormalization')
   -- a separable (1-D) kernel is applied twice: each pass gets sqrt of the plane share
   local planes = self.kernel:nDimension() == 2 and self.nInputPlane or math.sqrt(self.nInputPlane)
   self.kernel:div(self.kernel:sum() * planes)
   self.meanestimator = SSN._localSum(self.nInputPlane, self.kernel)
   self.stdestimator = nn.Sequential():add(nn.Square())
   for _, m in ipairs(SSN._localSum(self.nInputPlane, self.kernel).modules) do self.stdestimator:add(m) end
   self.stdestimator:add(nn.Sqrt())
   self.normalizer = nn.CDivTable()
   self.divider = nn.CDivTable()
   self.thresholder = nn.Threshold(self.threshold, self.thresval)
   self.coef = torch.Tensor(1, 1, 1)
end

function SpatialDivisiveNormalization:updateOutput(input)
   self.localstds = self.stdestimator:updateOutput(input)
   local dim = input:dim()
   if self.localstds:dim() ~= self.coef:dim() or input:size(dim) ~= self.coef:size(dim)
         or input:size(dim - 1) ~= self.coef:size(dim - 1) then
      self.coef = SSN._borderCoef(self, self.meanestimator, input)
   end
   self.adjustedstds = self.divider:updateOutput{self.localstds, self.coef}
   self.thresholdedstds = self.thresholder:updateOutput(self.adjustedstds)
   self.output = self.normalizer:updateOutput{input, self.thresholdedstds}
   return self.output
end

function SpatialDivisiveNormalization:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(input):zero()
   local gradNorm = self.normalizer:updateGradInput({input, self.thresholdedstds}, gradOutput)
   local gradThr = self.thresholder:updateGradInput(self.adjustedstds, gradNorm[2])
   local gradDiv = self.divider:updateGradInput({self.localstds, self.coef}, gradThr)
   self.gradInput:add(self.stdestimator:updateGradInput(input, gradDiv[1]))
   self.gradInput:add(gradNorm[1])
   return self.gradInput
end

function SpatialDivisiveNormalization:clearState()
   if self.ones then self.ones:set() end
   if self._coef then self._coef:set() end
   self.meanestimator:clearState()
   self.stdestimator:clearState()
   return parent.clearState(self)
end
