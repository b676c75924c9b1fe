-- nn.SpatialSubtractiveNormalization(nInputPlane=1, kernel=9x9 ones): subtracts
-- from every pixel the weighted local mean over all planes (kernel 2-D, or 1-D
-- applied separably along W then H), the kernel normalized to sum 1/nInputPlane;
-- near the borders the mean is divided by the kernel mass inside the image
-- (self.coef). Torch7's fields (meanestimator, subtractor, divider, coef) are kept
-- so .t7 files match.
local SpatialSubtractiveNormalization, parent = torch.class('nn.SpatialSubtractiveNormalization', 'nn.Module')

-- Checks an averaging kernel for the Spatial*Normalization classes: 1-D or 2-D, odd sizes.
function SpatialSubtractiveNormalization._checkKernel(kernel, who)
   local kdim = kernel:nDimension()
   if kdim ~= 2 and kdim ~= 1 then
      error('<' .. who .. '> averaging kernel must be 2D or 1D', 3)
   end
   if kernel:size(1) % 2 == 0 or (kdim == 2 and kernel:size(2) % 2 == 0) then
      error('<' .. who .. '> averaging kernel must have ODD dimensions', 3)
   end
end

-- A Sequential giving, replicated on every plane, the kernel-weighted sum of all
-- planes around each pixel (zero padding keeps the size): ZeroPadding, then one
-- SpatialConvolution (2-D kernel) or a per-plane horizontal SpatialConvolutionMap
-- and a vertical SpatialConvolution (1-D kernel), then Replicate.
function SpatialSubtractiveNormalization._localSum(nInputPlane, kernel)
   local kH = kernel:size(1)
   local kW = kernel:nDimension() == 2 and kernel:size(2) or kH
   local padH, padW = math.floor(kH / 2), math.floor(kW / 2)
   local seq = nn.Sequential()
   seq:add(nn.SpatialZeroPadding(padW, padW, padH, padH))
   if kernel:nDimension() == 2 then
      local conv = nn.SpatialConvolution(nInputPlane, 1, kW, kH)
      for i = 1, nInputPlane do conv.weight[1][i]:copy(kernel) end
      conv.bias:zero()
      seq:add(conv)
   else
      local horizontal = nn.SpatialConvolutionMap(nn.tables.oneToOne(nInputPlane), kH, 1)
      local vertical = nn.SpatialConvolution(nInputPlane, 1, 1, kH)
      for i = 1, nInputPlane do
         horizontal.weight[i]:copy(kernel)
         vertical.weight[1][i]:copy(kernel)
      end
      horizontal.bias:zero()
      vertical.bias:zero()
      seq:add(horizontal)
      seq:add(vertical)
   end
   seq:add(nn.Replicate(nInputPlane, 1, 3))
   return seq
end

-- The estimator's response to an image of ones, for border correction: (C, H, W), or
-- expanded to the batch of a 4-D input (a view, no copy).
function SpatialSubtractiveNormalization._borderCoef(self, estimator, input)
   self.ones = self.ones or input.new()
   self._coef = self._coef or input.new()
   local sample = input:dim() == 4 and input[1] or input
   self.ones:resizeAs(sample):fill(1)
   local coef = estimator:updateOutput(self.ones)
   self._coef:resizeAs(coef):copy(coef)
   if input:dim() == 4 then
      local size = self._coef:size():totable()
      table.insert(size, 1, input:size(1))
      return self._coef:view(1, table.unpack(self._coef:size():totable())):expand(table.unpack(size))
   end
   return self._coef
end

function SpatialSubtractiveNormalization:__init(nInputPlane, kernel)
   parent.__init(self)
   self.nInputPlane = nInputPlane or 1
   self.kernel = kernel or torch.Tensor(9, 9):fill(1)
   self._checkKernel(self.kernel, 'SpatialSubtractiveNormalization')
   self.kernel:div(self.kernel:sum() * self.nInputPlane)
   self.meanestimator = self._localSum(self.nInputPlane, self.kernel)
   self.subtractor = nn.CSubTable()
   self.divider = nn.CDivTable()
   self.coef = torch.Tensor(1, 1, 1)
end

function SpatialSubtractiveNormalization:updateOutput(input)
   if not self._inpsz or not input:isSize(self._inpsz) then
      self._inpsz = input:size()
      self.coef = self:_borderCoef(self.meanestimator, input)
   end
   self.localsums = self.meanestimator:updateOutput(input)
   self.adjustedsums = self.divider:updateOutput{self.localsums, self.coef}
   self.output = self.subtractor:updateOutput{input, self.adjustedsums}
   return self.output
end

function SpatialSubtractiveNormalization:updateGradInput(input, gradOutput)
   self.gradInput:resizeAs(input):zero()
   local gradSub = self.subtractor:updateGradInput({input, self.adjustedsums}, gradOutput)
   local gradDiv = self.divider:updateGradInput({self.localsums, self.coef}, gradSub[2])
   self.gradInput:add(self.meanestimator:updateGradInput(input, gradDiv[1]))
   self.gradInput:add(gradSub[1])
   return self.gradInput
end

function SpatialSubtractiveNormalization:clearState()
   self._inpsz = nil
   if self.ones then self.ones:set() end
   if self._coef then self._coef:set() end
   self.meanestimator:clearState()
   return parent.clearState(self)
end
