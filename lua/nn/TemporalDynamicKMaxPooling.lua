-- nn.TemporalDynamicKMaxPooling(minK, factor=0): keeps the k largest frames of
-- each feature of a (T, F) / (N, T, F) sequence, in their original order, with
-- k = max(minK, ceil(factor * T)) (Kalchbrenner et al. 2014's dynamic k-max).
-- self.indices: the kept frames (1-based), sorted.
local TemporalDynamicKMaxPooling, parent = torch.class('nn.TemporalDynamicKMaxPooling', 'nn.Module')

function TemporalDynamicKMaxPooling:__init(minK, factor)
   parent.__init(self)
   self.minK = minK
   self.factor = factor or 0
end

function TemporalDynamicKMaxPooling:updateOutput(input)
   if input:dim() ~= 2 and input:dim() ~= 3 then
      error('nn.TemporalDynamicKMaxPooling: Only 2D or 3D(batch mode) accepted, got ' .. input:dim() .. 'D', 2)
   end
   local seqDim = input:dim() - 1
   local len = input:size(seqDim)
   local k = math.max(self.minK, math.ceil(self.factor * len))
   if len < k then
      error(string.format('nn.TemporalDynamicKMaxPooling: Input sequence length (%d) too small for desired k value (%d)',
                          len, k), 2)
   end
   local _, order = input:sort(seqDim, true)
   -- the k largest, back in sequence order
   self.indices = order:narrow(seqDim, 1, k):sort(seqDim)
   self.output = input:gather(seqDim, self.indices)
   return self.output
end

function TemporalDynamicKMaxPooling:updateGradInput(input, gradOutput)
   if self.gradInput then
      local seqDim = input:dim() - 1
      -- the kept frames are distinct, so a scatter places each gradient
      self.gradInput:resizeAs(input):zero()
      self.gradInput:scatter(seqDim, self.indices, gradOutput)
      return self.gradInput
   end
end

function TemporalDynamicKMaxPooling:clearState()
   nn.utils.clear(self, 'indices')
   return parent.clearState(self)
end
