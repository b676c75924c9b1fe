-- cudnn.SpatialConvolution(nInputPlane, nOutputPlane, kW, kH, dW=1, dH=1, padW=0, padH=0, groups=1):
-- nn.SpatialConvolution whose padH defaults to 0 (not padW) and whose channels may be split into
-- `groups` independent convolutions (weight nOutputPlane x nInputPlane/groups x kH x kW).
local Conv, parent = torch.class('cudnn.SpatialConvolution', 'nn.SpatialConvolution')

-- The algorithm switches of cudnn.torch's convolutions: kept on the module, ignored by the CPU kernels.
function cudnn._convolutionModes(class)
   function class:setMode(fmode, bdmode, bwmode)
      if fmode ~= nil then self.fmode = fmode end
      if bdmode ~= nil then self.bdmode = bdmode end
      if bwmode ~= nil then self.bwmode = bwmode end
      return self
   end
   function class:resetMode()
      self.fmode, self.bdmode, self.bwmode = nil, nil, nil
      return self
   end
   function class:fastest(mode)
      if mode == nil then mode = true end
      self.fastest_mode = mode
      return self
   end
   -- cuDNN filter descriptors follow the weight; there are none to rebuild here
   function class:resetWeightDescriptors() return self end
end
cudnn._convolutionModes(Conv)

function Conv:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH, groups)
   groups = groups or 1
   if nInputPlane % groups ~= 0 or nOutputPlane % groups ~= 0 then
      error(string.format('cudnn.SpatialConvolution: nInputPlane (%d) and nOutputPlane (%d) must be divisible '
                          .. 'by groups (%d)', nInputPlane, nOutputPlane, groups), 2)
   end
   -- the weights are drawn once, in their final shape (no second draw for groups > 1)
   self.reset = function() end
   parent.__init(self, nInputPlane, nOutputPlane, kW, kH, dW, dH, padW or 0, padH or 0)
   self.reset = nil
   self.groups = groups
   if groups > 1 then
      self.weight = torch.Tensor(nOutputPlane, nInputPlane / groups, kH, kW)
      self.gradWeight = torch.Tensor(nOutputPlane, nInputPlane / groups, kH, kW)
   end
   self:reset()
end

-- Buffers of the per-group convolutions, kept off the module so that they are never saved.
local groupBuffers = setmetatable({}, {__mode = 'k'})

-- For group g (1-based) of a grouped convolution: a plain nn.SpatialConvolution sharing this
-- module's weight slice, and the channel dimension of `input`.
local function group(self, g, input)
   local G = self.groups
   local nIn, nOut = self.nInputPlane / G, self.nOutputPlane / G
   local buffers = groupBuffers[self] or {}
   groupBuffers[self] = buffers
   local m = buffers[g]
   if not m or torch.type(m.output) ~= torch.type(input) then
      m = setmetatable({output = input.new(), gradInput = input.new()}, torch.getmetatable('nn.SpatialConvolution'))
      buffers[g] = m
   end
   m.nInputPlane, m.nOutputPlane = nIn, nOut
   m.kW, m.kH, m.dW, m.dH, m.padW, m.padH = self.kW, self.kH, self.dW, self.dH, self.padW, self.padH
   m.weight = self.weight:narrow(1, (g - 1) * nOut + 1, nOut)
   m.gradWeight = self.gradWeight and self.gradWeight:narrow(1, (g - 1) * nOut + 1, nOut)
   m.bias = self.bias and self.bias:narrow(1, (g - 1) * nOut + 1, nOut)
   m.gradBias = self.gradBias and self.gradBias:narrow(1, (g - 1) * nOut + 1, nOut)
   return m, input:dim() - 2
end

-- The channels of group g of t (contiguous, as the kernels want them).
local function slice(t, dim, g, n)
   return t:narrow(dim, (g - 1) * n + 1, n):contiguous()
end

local function checkGroups(self, input)
   self.groups = self.groups or 1   -- files written before groups existed
   local d = input:dim()
   if (d == 3 or d == 4) and input:size(d - 2) ~= self.nInputPlane then
      error(string.format('input has %d channels, but %s expects %d (size %s)', input:size(d - 2),
                          torch.type(self), self.nInputPlane, table.concat(input:size():totable(), 'x')), 3)
   end
end

function Conv:updateOutput(input)
   checkGroups(self, input)
   if self.groups == 1 then return parent.updateOutput(self, input) end
   local nIn, nOut = self.nInputPlane / self.groups, self.nOutputPlane / self.groups
   for g = 1, self.groups do
      local m, cdim = group(self, g, input)
      local out = m:updateOutput(slice(input, cdim, g, nIn))
      if g == 1 then
         local size = out:size():totable()
         size[cdim] = self.nOutputPlane
         self.output:resize(torch.LongStorage(size))
      end
      self.output:narrow(cdim, (g - 1) * nOut + 1, nOut):copy(out)
   end
   return self.output
end

function Conv:updateGradInput(input, gradOutput)
   if not self.gradInput then return end
   checkGroups(self, input)
   if self.groups == 1 then return parent.updateGradInput(self, input, gradOutput) end
   local nIn, nOut = self.nInputPlane / self.groups, self.nOutputPlane / self.groups
   self.gradInput:resizeAs(input)
   for g = 1, self.groups do
      local m, cdim = group(self, g, input)
      local gi = m:updateGradInput(slice(input, cdim, g, nIn), slice(gradOutput, cdim, g, nOut))
      self.gradInput:narrow(cdim, (g - 1) * nIn + 1, nIn):copy(gi)
   end
   return self.gradInput
end

function Conv:accGradParameters(input, gradOutput, scale)
   checkGroups(self, input)
   if self.groups == 1 then return parent.accGradParameters(self, input, gradOutput, scale) end
   local nIn, nOut = self.nInputPlane / self.groups, self.nOutputPlane / self.groups
   for g = 1, self.groups do
      local m, cdim = group(self, g, input)
      m:accGradParameters(slice(input, cdim, g, nIn), slice(gradOutput, cdim, g, nOut), scale)
   end
end

function Conv:type(type, tensorCache)
   groupBuffers[self] = nil
   return parent.type(self, type, tensorCache)
end

cudnn._withoutDescriptors(Conv, parent)

function Conv:clearState()
   groupBuffers[self] = nil
   cudnn._clearDesc(self)
   return parent.clearState(self)
end
