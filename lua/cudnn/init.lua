-- `cudnn` class names for legacy Torch7 models, running on luatorch's CPU kernels.
--
-- fb.resnet.torch and many saved models use cudnn.* modules. Each class here
-- is a subclass of its nn counterpart with cudnn.torch's constructor defaults
-- (convolution padH defaults to 0, pooling stride defaults to the kernel
-- size, average pooling counts the padding), so such models build, load from
-- .t7 files, run and save back under the same class names.
require 'nn'

cudnn = cudnn or {}
local cudnn = cudnn

-- Which cuDNN release the model code should believe it has: fb.resnet.torch
-- drops convolution biases for >= 4000.
cudnn.version = 5105
cudnn.benchmark = false
cudnn.fastest = false
cudnn.verbose = false

function cudnn.getHandle() return nil end
function cudnn.reset() end

-- FFI descriptors and workspaces that cudnn.torch kept on modules; never saved.
local descriptorFields = {'iDesc', 'oDesc', 'weightDesc', 'biasDesc', 'convDesc', 'poolDesc', 'sDesc',
                          'iSize', 'oSize', 'extraBuffer', 'extraBufferSizeInBytes', 'fwdAlgType',
                          'bwdDataAlgType', 'bwdFilterAlgType', 'output_offset', 'input_offset', 'weight_offset',
                          'nDim', '_gradOutput', 'activDesc', 'mode_t', 'scaleT'}

local function clearDesc(self)
   for _, f in ipairs(descriptorFields) do
      if type(self[f]) == 'cdata' then self[f] = nil end
   end
   self.iDesc, self.oDesc, self.weightDesc, self.biasDesc, self.convDesc, self.poolDesc = nil, nil, nil, nil, nil, nil
   return self
end

local function writeWithoutDesc(parentWrite)
   return function(self, file)
      clearDesc(self)
      return parentWrite(self, file)
   end
end

-- ---------------------------------------------------------------- convolution

local Conv, ConvParent = torch.class('cudnn.SpatialConvolution', 'nn.SpatialConvolution')

function Conv:__init(nInputPlane, nOutputPlane, kW, kH, dW, dH, padW, padH, groups)
   groups = groups or 1
   if groups ~= 1 then error('cudnn.SpatialConvolution: groups > 1 is not supported by luatorch', 2) end
   ConvParent.__init(self, nInputPlane, nOutputPlane, kW, kH, dW, dH, padW or 0, padH or 0)
   self.groups = groups
end

function Conv:setMode(fmode, bdmode, bwmode)
   self.fmode, self.bdmode, self.bwmode = fmode, bdmode, bwmode
   return self
end

function Conv:resetMode()
   self.fmode, self.bdmode, self.bwmode = nil, nil, nil
   return self
end

function Conv:fastest(mode)
   self.fastest_mode = mode == nil and true or mode
   return self
end

function Conv:resetWeightDescriptors() return self end
Conv.clearDesc = clearDesc
Conv.write = writeWithoutDesc(nn.Module.write)

function Conv:updateOutput(input)
   self.groups = self.groups or 1
   return ConvParent.updateOutput(self, input)
end

-- ---------------------------------------------------------------- activations

local ReLU, ReLUParent = torch.class('cudnn.ReLU', 'nn.ReLU')

function ReLU:__init(inplace)
   ReLUParent.__init(self, inplace)
end

-- cudnn.torch's ReLU had no threshold/val fields: supply them for loaded files.
function ReLU:updateOutput(input)
   self.threshold, self.val = self.threshold or 0, self.val or 0
   self.inplace = self.inplace or false
   return ReLUParent.updateOutput(self, input)
end

function ReLU:updateGradInput(input, gradOutput)
   self.threshold, self.val = self.threshold or 0, self.val or 0
   self.inplace = self.inplace or false
   return ReLUParent.updateGradInput(self, input, gradOutput)
end
ReLU.clearDesc = clearDesc
ReLU.write = writeWithoutDesc(nn.Module.write)

-- ---------------------------------------------------------------- pooling

local Max, MaxParent = torch.class('cudnn.SpatialMaxPooling', 'nn.SpatialMaxPooling')

function Max:__init(kW, kH, dW, dH, padW, padH)
   MaxParent.__init(self, kW, kH, dW or kW, dH or kH, padW or 0, padH or 0)
end
Max.clearDesc = clearDesc
Max.write = writeWithoutDesc(nn.Module.write)

local Avg, AvgParent = torch.class('cudnn.SpatialAveragePooling', 'nn.SpatialAveragePooling')

function Avg:__init(kW, kH, dW, dH, padW, padH)
   AvgParent.__init(self, kW, kH, dW or kW, dH or kH, padW or 0, padH or 0)
   self.count_include_pad = true  -- cuDNN's average pooling always counts padding
end

function Avg:setCountExcludePad()
   error('cudnn.SpatialAveragePooling counts padding only (use nn.SpatialAveragePooling)', 2)
end
Avg.clearDesc = clearDesc
Avg.write = writeWithoutDesc(nn.Module.write)

-- ---------------------------------------------------------------- batch norm, softmax

local BN = torch.class('cudnn.BatchNormalization', 'nn.BatchNormalization')
BN.__version = 2
BN.clearDesc = clearDesc
BN.write = writeWithoutDesc(nn.Module.write)

local SBN = torch.class('cudnn.SpatialBatchNormalization', 'nn.SpatialBatchNormalization')
SBN.__version = 2
SBN.nDim = 4
SBN.clearDesc = clearDesc
SBN.write = writeWithoutDesc(nn.Module.write)

local SoftMax = torch.class('cudnn.SoftMax', 'nn.SoftMax')
SoftMax.clearDesc = clearDesc
local LogSoftMax = torch.class('cudnn.LogSoftMax', 'nn.LogSoftMax')
LogSoftMax.clearDesc = clearDesc

-- ---------------------------------------------------------------- the other cudnn.torch modules

-- cudnn.X as a subclass of nn.X (when luatorch has nn.X) whose constructor takes cudnn.torch's
-- arguments; init maps them onto the nn constructor (default: passed through unchanged).
local function cudnnSubclass(name, init)
   if not nn[name] then return nil end
   local class, parent = torch.class('cudnn.' .. name, 'nn.' .. name)
   function class:__init(...)
      if init then init(self, parent, ...) else parent.__init(self, ...) end
   end
   class.clearDesc = clearDesc
   class.write = writeWithoutDesc(nn.Module.write)
   return class
end

for _, name in ipairs {'SpatialFullConvolution', 'SpatialDilatedConvolution', 'VolumetricConvolution',
                       'VolumetricFullConvolution', 'VolumetricDilatedConvolution', 'SpatialCrossMapLRN',
                       'VolumetricBatchNormalization', 'SpatialSoftMax', 'SpatialLogSoftMax', 'Dropout'} do
   cudnnSubclass(name)
end

-- cudnn.Tanh(inplace) / cudnn.Sigmoid(inplace): the flag is kept; the CPU kernels write a new output.
for _, name in ipairs {'Tanh', 'Sigmoid'} do
   cudnnSubclass(name, function(self, parent, inplace)
      parent.__init(self)
      self.inplace = inplace or false
   end)
end

-- cudnn.ClippedReLU(ceiling, inplace): min(max(x, 0), ceiling).
if nn.HardTanh then
   local Clipped, ClippedParent = torch.class('cudnn.ClippedReLU', 'nn.HardTanh')
   function Clipped:__init(ceiling, inplace)
      assert(ceiling, 'No ceiling was given to ClippedReLU')
      ClippedParent.__init(self, 0, ceiling, inplace)
      self.ceiling = ceiling
      self.inplace = inplace or false
   end
   Clipped.clearDesc = clearDesc
   Clipped.write = writeWithoutDesc(nn.Module.write)
end

-- 3-D pooling: strides default to the kernel size, as cudnn.torch.
cudnnSubclass('VolumetricMaxPooling', function(self, parent, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   parent.__init(self, kT, kW, kH, dT or kT, dW or kW, dH or kH, padT or 0, padW or 0, padH or 0)
end)
cudnnSubclass('VolumetricAveragePooling', function(self, parent, kT, kW, kH, dT, dW, dH, padT, padW, padH)
   if (padT or 0) ~= 0 or (padW or 0) ~= 0 or (padH or 0) ~= 0 then
      error('cudnn.VolumetricAveragePooling: padding is not supported by luatorch (nn.VolumetricAveragePooling has none)', 3)
   end
   parent.__init(self, kT, kW, kH, dT or kT, dW or kW, dH or kH)
   self.padT, self.padW, self.padH = 0, 0, 0
end)

-- cudnn.TemporalConvolution(inputFrameSize, outputFrameSize, kH, dH=1, padH=0): nn.TemporalConvolution
-- with padH zero frames added at both ends of the sequence. The fields are cudnn.torch's (the
-- temporal kernel/stride are kH/dH, kW = inputFrameSize, as in its spatial-convolution view).
if nn.TemporalConvolution then
   local TC, TCParent = torch.class('cudnn.TemporalConvolution', 'nn.TemporalConvolution')

   function TC:__init(inputFrameSize, outputFrameSize, kH, dH, padH)
      TCParent.__init(self, inputFrameSize, outputFrameSize, kH, dH)
      self.kH, self.dH, self.padH = kH, dH or 1, padH or 0
      self.kW, self.dW, self.padW = inputFrameSize, 1, 0
      self.nInputPlane, self.nOutputPlane = 1, outputFrameSize
   end

   -- The input with padH zero frames before and after (the input itself when padH is 0).
   local function padded(self, input)
      if self.padH == 0 then return input end
      local tdim = input:dim() - 1
      local size = input:size():totable()
      size[tdim] = size[tdim] + 2 * self.padH
      self._paddedInput = self._paddedInput or input.new()
      self._paddedInput:resize(torch.LongStorage(size)):zero()
      self._paddedInput:narrow(tdim, self.padH + 1, input:size(tdim)):copy(input)
      return self._paddedInput
   end

   -- Runs an nn.TemporalConvolution method with its own meaning of kW / dW.
   local function asNN(self, fn, ...)
      local kW, dW = self.kW, self.dW
      self.kW, self.dW = self.kH, self.dH
      local ok, res = pcall(fn, self, ...)
      self.kW, self.dW = kW, dW
      if not ok then error(res, 0) end
      return res
   end

   function TC:updateOutput(input)
      return asNN(self, TCParent.updateOutput, padded(self, input))
   end

   function TC:updateGradInput(input, gradOutput)
      if not self.gradInput then return end
      if self.padH == 0 then return asNN(self, TCParent.updateGradInput, input, gradOutput) end
      local gradInput = self.gradInput
      self.gradInput = self._paddedGradInput or input.new()
      asNN(self, TCParent.updateGradInput, padded(self, input), gradOutput)
      self._paddedGradInput = self.gradInput
      local tdim = input:dim() - 1
      self.gradInput = gradInput:resizeAs(input):copy(self._paddedGradInput:narrow(tdim, self.padH + 1, input:size(tdim)))
      return self.gradInput
   end

   function TC:accGradParameters(input, gradOutput, scale)
      return asNN(self, TCParent.accGradParameters, padded(self, input), gradOutput, scale)
   end

   function TC:clearState()
      nn.utils.clear(self, '_paddedInput', '_paddedGradInput')
      return TCParent.clearState(self)
   end

   function TC:__tostring__()
      return string.format('%s(%d -> %d, %d, %d, %d)', torch.type(self), self.inputFrameSize,
                           self.outputFrameSize, self.kH, self.dH, self.padH)
   end

   TC.clearDesc = clearDesc
   TC.write = writeWithoutDesc(nn.Module.write)
end

-- cudnn.VolumetricSoftMax / VolumetricLogSoftMax: over the classes (dimension 2 of 5-D (N, C, D, H, W),
-- 1 of 4-D (C, D, H, W)) at every voxel: D and H are folded into one dimension for the spatial kernels.
local function foldDepth(t)
   t = t:contiguous()
   local s = t:size():totable()
   local d = #s - 2  -- the depth dimension
   if #s ~= 4 and #s ~= 5 then error('4D or 5D input expected, got ' .. #s .. 'D', 4) end
   s[d] = s[d] * s[d + 1]
   table.remove(s, d + 1)
   return t:view(torch.LongStorage(s))
end

for name, parentName in pairs {VolumetricSoftMax = 'SoftMax', VolumetricLogSoftMax = 'LogSoftMax'} do
   if nn[parentName] then
      local class, parent = torch.class('cudnn.' .. name, 'nn.' .. parentName)
      function class:updateOutput(input)
         parent.updateOutput(self, foldDepth(input))
         self.output = self.output:view(input:size())
         return self.output
      end
      function class:updateGradInput(input, gradOutput)
         local output = self.output
         self.output = foldDepth(output)
         parent.updateGradInput(self, foldDepth(input), foldDepth(gradOutput))
         self.output = output
         self.gradInput = self.gradInput:view(input:size())
         return self.gradInput
      end
      class.clearDesc = clearDesc
   end
end

-- cudnn.SpatialCrossEntropyCriterion(): log-softmax over the classes of an (N, C, H, W) input, then
-- the negative log-likelihood of the (N, H, W) targets summed over every pixel. As cudnn.torch, the
-- output is that sum and, with sizeAverage (the default), only gradInput is divided by N.
if cudnn.SpatialLogSoftMax and nn.ClassNLLCriterion then
   local SCE, SCEParent = torch.class('cudnn.SpatialCrossEntropyCriterion', 'nn.Criterion')

   function SCE:__init()
      SCEParent.__init(self)
      self.slsm = cudnn.SpatialLogSoftMax()
      self.nll = nn.ClassNLLCriterion()
      self.nll.sizeAverage = false
      self.sizeAverage = true
   end

   local function checkSizes(input, target)
      if input:dim() ~= 4 or target:dim() ~= 3 then
         error('cudnn.SpatialCrossEntropyCriterion: mini-batches only (4D input, 3D target)', 3)
      end
      if input:size(1) ~= target:size(1) or input:size(3) ~= target:size(2) or input:size(4) ~= target:size(3) then
         error('cudnn.SpatialCrossEntropyCriterion: input and target should be of same size', 3)
      end
   end

   -- (N, C, H, W) -> (N*H*W, C): one row of class scores per pixel
   local function pixelsAsRows(t)
      local n, c, h, w = t:size(1), t:size(2), t:size(3), t:size(4)
      return t:permute(1, 3, 4, 2):contiguous():view(n * h * w, c)
   end

   function SCE:updateOutput(input, target)
      checkSizes(input, target)
      self.slsm:updateOutput(input)
      self.output = self.nll:updateOutput(pixelsAsRows(self.slsm.output), target:contiguous():view(-1))
      return self.output
   end

   function SCE:updateGradInput(input, target)
      checkSizes(input, target)
      local g = self.nll:updateGradInput(pixelsAsRows(self.slsm.output), target:contiguous():view(-1))
      local n, c, h, w = input:size(1), input:size(2), input:size(3), input:size(4)
      local gradLogProb = g:view(n, h, w, c):permute(1, 4, 2, 3):contiguous()
      self.gradInput = self.slsm:updateGradInput(input, gradLogProb)
      if self.sizeAverage then self.gradInput:div(n) end
      return self.gradInput
   end

   function SCE:type(type, tensorCache)
      if type then
         self.nll:type(type, tensorCache)
         self.slsm:type(type, tensorCache)
      end
      return SCEParent.type(self, type, tensorCache)
   end
end

-- ---------------------------------------------------------------- convert

-- cudnn.convert(net, cudnn | nn): swap module classes between the two
-- families in place (fields are compatible), as cudnn.convert did.
local pairsOfNames = {
   {'nn.SpatialConvolution', 'cudnn.SpatialConvolution'},
   {'nn.ReLU', 'cudnn.ReLU'},
   {'nn.SpatialMaxPooling', 'cudnn.SpatialMaxPooling'},
   {'nn.SpatialAveragePooling', 'cudnn.SpatialAveragePooling'},
   {'nn.BatchNormalization', 'cudnn.BatchNormalization'},
   {'nn.SpatialBatchNormalization', 'cudnn.SpatialBatchNormalization'},
   {'nn.SoftMax', 'cudnn.SoftMax'},
   {'nn.LogSoftMax', 'cudnn.LogSoftMax'},
}
for _, name in ipairs {'SpatialCrossMapLRN', 'SpatialFullConvolution', 'Tanh', 'Sigmoid', 'VolumetricBatchNormalization',
                       'VolumetricConvolution', 'VolumetricMaxPooling', 'VolumetricAveragePooling'} do
   if cudnn[name] then pairsOfNames[#pairsOfNames + 1] = {'nn.' .. name, 'cudnn.' .. name} end
end

function cudnn.convert(net, dst, exclusion)
   local toCudnn = dst == cudnn
   local map = {}
   for _, p in ipairs(pairsOfNames) do
      if toCudnn then map[p[1]] = p[2] else map[p[2]] = p[1] end
   end
   -- the weight layouts agree, so MM layers become cudnn convolutions too (one way, as cudnn.torch)
   if toCudnn then map['nn.SpatialConvolutionMM'] = 'cudnn.SpatialConvolution' end
   net:apply(function(m)
      if exclusion and exclusion(m) then return end
      local target = map[torch.typename(m)]
      if target then
         if toCudnn and target == 'cudnn.SpatialAveragePooling' and m.count_include_pad == false then return end
         if not toCudnn then clearDesc(m) end
         setmetatable(m, torch.getmetatable(target))
      end
   end)
   return net
end

return cudnn
