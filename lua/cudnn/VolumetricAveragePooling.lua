-- cudnn.VolumetricAveragePooling(kT, kW, kH, dT=kT, dW=kW, dH=kH, padT=0, padW=0, padH=0);
-- :ceil() / :floor() (default). The padding counts in the divisor (cuDNN's count-include-pad mode):
-- every window is averaged over its full kT*kH*kW, the padding (and, in ceil mode, the cells past
-- the end) being zeros. nn.VolumetricAveragePooling has no padding, so the padded volume is built here.
local Avg, parent = torch.class('cudnn.VolumetricAveragePooling', 'nn.VolumetricAveragePooling')

function Avg:__init(kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self, kT, kW, kH, dT or kT, dW or kW, dH or kH)
   self.padT, self.padW, self.padH = padT or 0, padW or 0, padH or 0
   self.ceil_mode = false
end

function Avg:ceil()
   self.ceil_mode = true
   return self
end

function Avg:floor()
   self.ceil_mode = false
   return self
end

-- Whether the input must be padded before nn's unpadded kernel sees it.
local function needsPadding(self)
   self.padT, self.padW, self.padH = self.padT or 0, self.padW or 0, self.padH or 0
   return self.ceil_mode or self.padT ~= 0 or self.padW ~= 0 or self.padH ~= 0
end

-- The zero-padded copy of input, and the (T, H, W) dimensions of input.
local function padded(self, input)
   local d = input:dim()
   if d ~= 4 and d ~= 5 then
      error(string.format('%s: 4D or 5D (batch mode) tensor expected for input, but got: %dD tensor',
                          torch.type(self), d), 3)
   end
   local dims = {d - 2, d - 1, d}
   local k = {self.kT, self.kH, self.kW}
   local s = {self.dT, self.dH, self.dW}
   local p = {self.padT, self.padH, self.padW}
   local round = self.ceil_mode and math.ceil or math.floor
   local size = input:size():totable()
   for i, dim in ipairs(dims) do
      local n = size[dim]
      local out = round((n + 2 * p[i] - k[i]) / s[i]) + 1
      if out < 1 then
         error(string.format('%s: input (%s) is too small for the kernel', torch.type(self),
                             table.concat(input:size():totable(), 'x')), 3)
      end
      size[dim] = math.max(n + 2 * p[i], (out - 1) * s[i] + k[i])
   end
   self._paddedInput = self._paddedInput or input.new()
   local buf = self._paddedInput:resize(torch.LongStorage(size)):zero()
   local inner = buf
   for i, dim in ipairs(dims) do inner = inner:narrow(dim, p[i] + 1, input:size(dim)) end
   inner:copy(input)
   return buf, inner
end

function Avg:updateOutput(input)
   if not needsPadding(self) then return parent.updateOutput(self, input) end
   return parent.updateOutput(self, (padded(self, input)))
end

function Avg:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   if not needsPadding(self) then return parent.updateGradInput(self, input, gradOutput) end
   local buf = padded(self, input)
   local gradInput = self.gradInput
   self.gradInput = self._paddedGradInput or input.new()
   parent.updateGradInput(self, buf, gradOutput)
   self._paddedGradInput = self.gradInput
   local inner = self._paddedGradInput
   local d = input:dim()
   for i, p in ipairs {self.padT, self.padH, self.padW} do
      inner = inner:narrow(d - 3 + i, p + 1, input:size(d - 3 + i))
   end
   self.gradInput = gradInput:resizeAs(input):copy(inner)
   return self.gradInput
end

-- cudnn.torch's 3-D pooling printed its class name only
Avg.__tostring__ = cudnn._plainName
cudnn._withoutDescriptors(Avg, parent)

function Avg:clearState()
   nn.utils.clear(self, '_paddedInput', '_paddedGradInput')
   cudnn._clearDesc(self)
   return parent.clearState(self)
end
