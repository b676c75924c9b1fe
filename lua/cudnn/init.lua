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

function cudnn.convert(net, dst, exclusion)
   local toCudnn = dst == cudnn
   local map = {}
   for _, p in ipairs(pairsOfNames) do
      if toCudnn then map[p[1]] = p[2] else map[p[2]] = p[1] end
   end
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
