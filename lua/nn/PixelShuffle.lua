-- nn.PixelShuffle(upscaleFactor): (N, C*r*r, H, W) or (C*r*r, H, W) -> (N, C, H*r, W*r), sub-pixel
-- rearrangement (Shi et al. 2016): output (c, h*r + i, w*r + j) is input (c*r*r + i*r + j, h, w).
local PixelShuffle, parent = torch.class('nn.PixelShuffle', 'nn.Module')

function PixelShuffle:__init(upscaleFactor)
   parent.__init(self)
   self.upscaleFactor = upscaleFactor
   self.upscaleFactorSquared = upscaleFactor * upscaleFactor
end

-- Batch size, output channels, input height and width of input (3-D counts as a batch of one).
local function dims(self, input)
   local batched = input:nDimension() == 4
   if not batched and input:nDimension() ~= 3 then
      error('PixelShuffle: 3D or 4D input expected, got ' .. input:nDimension() .. 'D', 3)
   end
   local f = batched and 2 or 1
   local planes = input:size(f)
   if planes % self.upscaleFactorSquared ~= 0 then
      error(string.format('PixelShuffle: %d input channels are not a multiple of upscaleFactor^2 = %d', planes,
            self.upscaleFactorSquared), 3)
   end
   return batched, batched and input:size(1) or 1, planes / self.upscaleFactorSquared, input:size(f + 1),
      input:size(f + 2)
end

function PixelShuffle:updateOutput(input)
   local batched, n, c, h, w = dims(self, input)
   local r = self.upscaleFactor
   self._intermediateShape = self._intermediateShape or torch.LongStorage(6)
   self._outShape = self._outShape or torch.LongStorage()
   self._shuffleOut = self._shuffleOut or input.new()
   local s = self._intermediateShape
   s[1], s[2], s[3], s[4], s[5], s[6] = n, c, r, r, h, w
   if batched then
      self._outShape:resize(4)
      self._outShape[1], self._outShape[2], self._outShape[3], self._outShape[4] = n, c, h * r, w * r
   else
      self._outShape:resize(3)
      self._outShape[1], self._outShape[2], self._outShape[3] = c, h * r, w * r
   end
   -- (n, c, i, j, h, w) read as (n, c, h, i, w, j)
   local split = input:contiguous():view(s)
   self._shuffleOut:resize(n, c, h, r, w, r):copy(split:permute(1, 2, 5, 3, 6, 4))
   self.output = self._shuffleOut:view(self._outShape)
   return self.output
end

function PixelShuffle:updateGradInput(input, gradOutput)
   local _, n, c, h, w = dims(self, input)
   local r = self.upscaleFactor
   self._shuffleIn = self._shuffleIn or input.new()
   local split = gradOutput:contiguous():view(n, c, h, r, w, r)
   self._shuffleIn:resize(n, c, r, r, h, w):copy(split:permute(1, 2, 4, 6, 3, 5))
   self.gradInput = self._shuffleIn:view(input:size())
   return self.gradInput
end

function PixelShuffle:clearState()
   nn.utils.clear(self, {'_intermediateShape', '_outShape', '_shuffleIn', '_shuffleOut'})
   return parent.clearState(self)
end
