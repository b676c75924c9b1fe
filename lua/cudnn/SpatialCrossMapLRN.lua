-- cudnn.SpatialCrossMapLRN(size=5, alpha=1e-4, beta=0.75, k=1): nn.SpatialCrossMapLRN within
-- cuDNN's limits (1 <= size <= 16, k >= 1e-5, beta >= 0.01).
local LRN, parent = torch.class('cudnn.SpatialCrossMapLRN', 'nn.SpatialCrossMapLRN')

-- cuDNN's limits on the LRN parameters, checked where cudnn.torch checked them.
function cudnn._checkLRN(name, size, k, beta)
   if size < 1 or size > 16 then error(string.format('%s: size has to be between 1 and 16 (got %s)', name, size), 3) end
   if k < 1e-5 then error(string.format('%s: k has to be at least 1e-5 (got %s)', name, k), 3) end
   if beta < 0.01 then error(string.format('%s: beta has to be at least 0.01 (got %s)', name, beta), 3) end
end

function LRN:__init(size, alpha, beta, k)
   parent.__init(self, size or 5, alpha or 1e-4, beta or 0.75, k or 1)
   cudnn._checkLRN('cudnn.SpatialCrossMapLRN', self.size, self.k, self.beta)
end

-- some files carry the constant as `K`
local function fixK(self)
   if self.K then self.k, self.K = self.K, nil end
end

function LRN:updateOutput(input)
   fixK(self)
   return parent.updateOutput(self, input)
end

function LRN:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   fixK(self)
   return parent.updateGradInput(self, input, gradOutput)
end

LRN.__tostring__ = cudnn._plainName
cudnn._withoutDescriptors(LRN, parent)
