-- `cudnn` class names for Torch7 programs and models, running on luatorch's CPU kernels.
--
-- fb.resnet.torch and many saved models use cudnn.* modules. Each class (one file each, as
-- cudnn.torch) is a subclass of its nn counterpart with cudnn.torch's constructor arguments and
-- defaults (convolution padH defaults to 0, pooling strides default to the kernel size, average
-- pooling counts the padding, ...), so such programs and models build, load from .t7 files, run and
-- save back under the same class names. On the CPU, what only tuned cuDNN on a GPU (algorithm search,
-- workspace sizes, handles, math types) is accepted and ignored: see the settings below.
-- As cudnn.torch did, it loads cunn (and so cutorch) where cutorch takes a GPU: its classes then run on the GPU
-- versions of their nn parents (cunn/gpu.lua), and cudnn.SpatialConvolution on cuDNN itself where libcudnn
-- loads, honouring benchmark, fastest, setMode and the workspace budget (cudnn/gpu.lua). On a machine without one it leaves cutorch to the program, so
-- that cudnn.RNN's tensors follow the default tensor type until the program requires cutorch.
require 'nn'
if package.loaded.cutorch or torch._cutorchTriesGpu() then require 'cunn' end

cudnn = cudnn or {}
local cudnn = cudnn

local include = torch._includer('cudnn')
cudnn._include = include

-- ---------------------------------------------------------------- settings (accepted, ignored)

-- Which cuDNN release the model code should believe it has: fb.resnet.torch drops convolution
-- biases for >= 4000.
cudnn.version = 5105
-- Algorithm choice and workspace sizing: every value is kept for programs that read it back; none
-- changes what the CPU kernels compute; on a GPU, cudnn/gpu.lua reads benchmark, fastest and
-- maxWorkspaceGPUMemPercent.
cudnn.benchmark = false
cudnn.fastest = false
cudnn.verbose = false
cudnn.useFindEx = false
cudnn.initialWorkspaceBytes = 1024
cudnn.reservedGPUBytes = 1024 * 1024
cudnn.maxWorkspaceGPUMemPercent = 95

local function noop() end
function cudnn.getHandle() return nil end
cudnn.reset = noop
cudnn.configureMath = noop
cudnn.setSharedWorkspaceSize = noop
cudnn.adjustSharedWorkspaceSize = noop
cudnn.setNextWorkspaceSize = noop
function cudnn.getSharedWorkspace() return nil, 0 end
-- cuDNN's data type for each Cuda tensor type, and the math type configureMath would pick: names
-- only, the CPU kernels compute in the tensor's own type
cudnn.typemap = {['torch.CudaHalfTensor'] = 'CUDNN_DATA_HALF', ['torch.CudaTensor'] = 'CUDNN_DATA_FLOAT',
                 ['torch.CudaDoubleTensor'] = 'CUDNN_DATA_DOUBLE'}
function cudnn.configmap(tensorType)
   return tensorType == 'torch.CudaDoubleTensor' and 'CUDNN_DATA_DOUBLE' or 'CUDNN_DATA_FLOAT'
end

-- cudnn.C (the FFI-loaded library) and the calls that made descriptors for it: there is no cuDNN
-- library here, so a program that calls cuDNN itself gets one clear line.
local function noLibrary(what)
   error(what .. ': luatorch has no cuDNN library (the cudnn modules run on its CPU kernels)', 3)
end
cudnn.C = setmetatable({}, {__index = function(_, name) noLibrary('cudnn.C.' .. tostring(name)) end})
for _, name in ipairs {'call', 'errcheck', 'toDescriptor', 'createDescriptors', 'setConvolutionDescriptor',
                       'setFilterDescriptor'} do
   cudnn[name] = function() noLibrary('cudnn.' .. name) end
end

-- cudnn.find: the algorithm finder; its switches and reset exist, nothing is searched.
cudnn.find = cudnn.find or {verbose = false, verboseError = true, verboseFallback = true}
cudnn.find.reset = noop
cudnn.find.resetAlgorithmCache = noop
function cudnn.find.get() return cudnn.find end
package.loaded['cudnn.find'] = cudnn.find
package.loaded['cudnn.env'] = cudnn

-- ---------------------------------------------------------------- helpers of the class files

-- cudnn.torch's FFI descriptors (its clearDesc dropped them before saving: a cdata value can never
-- be written to a .t7 file), and fields that held FFI data in some of its versions.
local descriptors = {'iDesc', 'oDesc', 'weightDesc', 'biasDesc', 'convDesc', 'poolDesc', 'sDesc', 'LRNDesc',
                     'DivisiveNormDesc', 'oDescForBias', 'activDesc'}
local sometimesFFI = {'iSize', 'oSize', 'extraBuffer', 'extraBufferSizeInBytes', 'fwdAlgType', 'bwdDataAlgType',
                      'bwdFilterAlgType', 'output_offset', 'input_offset', 'weight_offset', '_gradOutput',
                      'mode_t', 'scaleT'}

function cudnn._clearDesc(self)
   for _, f in ipairs(descriptors) do self[f] = nil end
   for _, f in ipairs(sometimesFFI) do
      if type(rawget(self, f)) == 'cdata' then self[f] = nil end
   end
   return self
end

-- Gives `class` (a subclass of `parent`) cudnn.torch's clearDesc, a write that saves no descriptor,
-- and a clearState that drops them too.
function cudnn._withoutDescriptors(class, parent)
   class.clearDesc = cudnn._clearDesc
   function class:write(file)
      cudnn._clearDesc(self)
      return parent.write(self, file)
   end
   function class:clearState()
      cudnn._clearDesc(self)
      return parent.clearState(self)
   end
end

-- The printed form of cudnn.torch's classes that derived from nn.Module directly: the class name.
function cudnn._plainName(self) return torch.type(self) end

-- ---------------------------------------------------------------- the classes

-- convolutions
include 'SpatialConvolution'
include 'SpatialFullConvolution'
include 'VolumetricConvolution'
include 'VolumetricFullConvolution'
include 'TemporalConvolution'
-- pooling
include 'SpatialMaxPooling'
include 'SpatialAveragePooling'
include 'VolumetricMaxPooling'
include 'VolumetricAveragePooling'
-- pointwise
include 'Pointwise'
include 'ReLU'
include 'ClippedReLU'
include 'Tanh'
include 'Sigmoid'
-- softmax family
include 'SpatialSoftMax'
include 'SpatialLogSoftMax'
include 'SoftMax'
include 'LogSoftMax'
include 'VolumetricSoftMax'
include 'VolumetricLogSoftMax'
-- normalization
include 'SpatialCrossMapLRN'
include 'SpatialDivisiveNormalization'
include 'BatchNormalization'
include 'SpatialBatchNormalization'
include 'VolumetricBatchNormalization'
-- criterions
include 'SpatialCrossEntropyCriterion'
include 'VolumetricCrossEntropyCriterion'
-- luatorch's extra names (not in cudnn.torch; kept for programs written against earlier luatorch)
include 'extras'

-- family rnn: the recurrent modules (one file each)
for _, name in ipairs {'RNN', 'RNNReLU', 'RNNTanh', 'LSTM', 'GRU', 'BLSTM', 'BGRU'} do include(name) end
-- end of family rnn

include 'functional'
include 'convert'

-- torch.CudaHalfTensor for the classes here that call kernels themselves (cunn/half.lua: through float), before
-- the GPU versions below are installed over them. On the GPU backend the softmaxes run their device kernels, which
-- take half (cudnn/gpu.lua's cudnn._softmaxKernel).
if package.loaded.cunn and cunn._halfWrap and not cudnn._half then
   cudnn._half = true
   local softmaxes = {'SoftMax', 'LogSoftMax', 'SpatialSoftMax', 'SpatialLogSoftMax', 'VolumetricSoftMax',
                      'VolumetricLogSoftMax'}
   for _, name in ipairs(softmaxes) do cunn._halfOnGPU['cudnn.' .. name] = true end
   cunn._halfWrap('cudnn', softmaxes)
   cunn._halfWrap('cudnn', {'Tanh', 'Sigmoid', 'RNN'})
end

-- on cutorch's GPU backend: the convolutions on cuDNN itself (once per Lua state)
if package.loaded.cutorch and cutorch.backend == 'gpu' and package.loaded.cunn and not cudnn._gpu then
   cudnn._gpu = true
   include 'gpu'
end

return cudnn
