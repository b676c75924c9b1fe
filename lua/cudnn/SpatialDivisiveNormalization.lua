-- cudnn.SpatialDivisiveNormalization(size=5, alpha=1e-4, beta=0.75, K=2): the cross-channel
-- normalization y = x * (K + alpha/size * sum of x^2 over `size` neighbouring channels)^-beta,
-- i.e. nn.SpatialCrossMapLRN(size, alpha, beta, K). cudnn.torch's class took these LRN parameters
-- and named the cross-channel mode, but its forward called functions that did not exist, so it
-- never ran there; this is that reading of it. (nn.SpatialDivisiveNormalization is a different,
-- spatial-kernel layer with other arguments.)
local DN, parent = torch.class('cudnn.SpatialDivisiveNormalization', 'nn.Module')
local LRN = nn.SpatialCrossMapLRN

function DN:__init(size, alpha, beta, K)
   parent.__init(self)
   self.size = size or 5
   self.alpha = alpha or 1e-4
   self.beta = beta or 0.75
   self.K = K or 2
   cudnn._checkLRN('cudnn.SpatialDivisiveNormalization', self.size, self.K, self.beta)
end

-- Runs an nn.SpatialCrossMapLRN method on this module, whose constant is K rather than k.
local function asLRN(self, fn, ...)
   self.k = self.K
   local ok, res = pcall(fn, self, ...)
   self.k = nil
   if not ok then error(res, 0) end
   return res
end

function DN:updateOutput(input)
   return asLRN(self, LRN.updateOutput, input)
end

function DN:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   return asLRN(self, LRN.updateGradInput, input, gradOutput)
end

function DN:clearState()
   nn.utils.clear(self, 'scale', '_gradOutput')
   cudnn._clearDesc(self)
   return parent.clearState(self)
end

function DN:write(file)
   cudnn._clearDesc(self)
   return parent.write(self, file)
end
DN.clearDesc = cudnn._clearDesc
