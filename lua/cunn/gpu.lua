-- cunn on cutorch's GPU backend: nn's layers whose inputs are in GPU memory.
--
-- Installed by `require 'cunn'` when cutorch.backend is 'gpu', as Torch7's cunn gave nn's modules their CUDA
-- code. Modules written with tensor methods (nn.Linear: addmm, addmv, addr; MSECriterion: add, dot; the
-- containers and shape modules) need nothing here: cutorch's device methods carry them. The modules below
-- call host kernels on CPU tensors; on GPU tensors they run our device kernels (native/cuda through lt_cuops)
-- or compositions of cutorch's device methods. Every other module with a host kernel refuses GPU memory by
-- name (native/src/nn_internal.h) until it has its GPU version.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

local function onGPU(t) return torch.isTensor(t) and torch._onDevice(t) end

local opsOf = cutorch._deviceOps

-- The module's tensors a kernel of it reads or writes besides its arguments.
local OPERANDS = {'weight', 'bias', 'gradWeight', 'gradBias', 'running_mean', 'running_var', 'output', 'gradInput'}

-- As THCUNN's assertSameGPU: a kernel runs on one device and cannot reach another's memory, so operands on
-- two GPUs are an error that names them (not a fault inside the kernel).
local function sameDevice(self, name, ...)
   local first, firstWhat
   local function see(t, what)
      if not onGPU(t) then return end
      local d = t._c.storage.device
      if first == nil then
         first, firstWhat = d, what
      elseif d ~= first then
         error(string.format('%s:%s: its tensors are on different GPUs (%s on GPU %d, %s on GPU %d): move them to ' ..
                             'one (with that device current, :cuda() or :copy())', torch.type(self), name,
                             firstWhat, first + 1, what, d + 1), 4)
      end
   end
   for i = 1, select('#', ...) do see(select(i, ...), i == 1 and 'input' or 'argument ' .. i) end
   for _, k in ipairs(OPERANDS) do see(self[k], k) end
   return first
end

-- Replace class's method `name` by gpu(self, ...) when its first tensor argument is in GPU memory. Half tensors
-- (torch.CudaHalfTensor) go to gpu through float (cunn/half.lua) unless options.half says gpu has half kernels,
-- or to the method the class had before when options.halfToPrevious (cudnn's, for what cuDNN does not take).
cunn._deviceDispatch = cunn._deviceDispatch or setmetatable({}, {__mode = 'k'})
local HALF = C.LT_CUDA_HALF
local function onDevice(class, name, gpu, options)
   local host = class[name]
   local what = class.__typename .. '.' .. name
   local halfKernels = options and options.half
   local halfToPrevious = options and options.halfToPrevious
   local function run(self, input, ...)
      if halfKernels then return gpu(self, input, ...) end
      if halfToPrevious and input._c.type == HALF then return host(self, input, ...) end
      return cunn._halfThroughFloat(what, self, gpu, input, ...)
   end
   local dispatch = function(self, input, ...)
      if onGPU(input) then
         -- with the operands' GPU current, so that the outputs and buffers the method makes are on it
         local device = sameDevice(self, name, input, ...)
         if device == C.lt_cuda_storage_device() then return run(self, input, ...) end
         local n, args = select('#', ...), {...}
         return cutorch.withDevice(device + 1, function() return run(self, input, unpack(args, 1, n)) end)
      end
      return host(self, input, ...)
   end
   cunn._deviceDispatch[dispatch] = true
   class[name] = dispatch
end
-- cudnn's GPU versions (cudnn/gpu.lua) dispatch the same way
cunn._onDevice = onDevice
-- the options of a GPU version that takes half tensors itself: kernels with a half instantiation (computing in
-- float), or compositions of tensor methods (a CudaHalfTensor's compute in float)
local HALF_KERNELS = {half = true}

-- ---------------------------------------------------------------- Threshold (and ReLU)

-- nn_pointwise.cu's threshold op (Float, Double, Half), one launch each way, any layout: y = x > th ? x : v; the
-- gradient passes where the input, or in place the output, is above th (nn.Threshold keeps v <= th in place).
onDevice(nn.Threshold, 'updateOutput', function(self, input)
   check(C.lt_nn_pointwise_updateOutput(C.LT_PW_THRESHOLD, input._c, self.output._c, self.threshold, self.val,
                                        self.inplace and 1 or 0), 2)
   return self.output
end, HALF_KERNELS)
onDevice(nn.Threshold, 'updateGradInput', function(self, input, gradOutput)
   check(C.lt_nn_pointwise_updateGradInput(C.LT_PW_THRESHOLD, input._c, gradOutput._c, self.gradInput._c,
                                           self.threshold, self.val, self.inplace and 1 or 0), 2)
   return self.gradInput
end, HALF_KERNELS)

-- ---------------------------------------------------------------- Tanh, Sigmoid

onDevice(nn.Tanh, 'updateOutput', function(self, input)
   self.output:tanh(input)
   return self.output
end, HALF_KERNELS)
onDevice(nn.Tanh, 'updateGradInput', function(self, input, gradOutput)
   -- g (1 - y^2) = g - g y^2
   self.gradInput:cmul(self.output, self.output)
   self.gradInput:addcmul(gradOutput, -1, gradOutput, self.gradInput)
   return self.gradInput
end, HALF_KERNELS)

onDevice(nn.Sigmoid, 'updateOutput', function(self, input)
   self.output:sigmoid(input)
   return self.output
end, HALF_KERNELS)
onDevice(nn.Sigmoid, 'updateGradInput', function(self, input, gradOutput)
   -- g y (1 - y)
   self.gradInput:mul(self.output, -1):add(1):cmul(self.output):cmul(gradOutput)
   return self.gradInput
end, HALF_KERNELS)

-- nn's other elementwise activations call lt_nn_pointwise_* themselves, which takes device tensors (its kernels,
-- nn_pointwise.cu, have Half instantiations computing in float): half stays half, no float copies (cunn/half.lua)
cunn._halfOnGPU = cunn._halfOnGPU or {}
for _, name in ipairs {'Abs', 'ELU', 'Exp', 'HardShrink', 'HardTanh', 'LeakyReLU', 'Log', 'LogSigmoid', 'Power',
                       'ReLU6', 'SoftPlus', 'SoftShrink', 'SoftSign', 'Sqrt', 'Square', 'TanhShrink'} do
   cunn._halfOnGPU['nn.' .. name] = true
end

-- nn's modules whose C kernels send device tensors to these native/cuda kernels, which have Half instantiations
-- too (computing in float, each result rounded once; a criterion's loss summed in double and written into its
-- half output through float, as THCUNN's half loss): half stays half, no float copies
for _, name in ipairs {'SpatialCrossMapLRN',                                                    -- lrn.cu
                       'SpatialZeroPadding', 'SpatialReflectionPadding', 'SpatialReplicationPadding',
                       'VolumetricReplicationPadding', 'SpatialUpSamplingNearest', 'SpatialUpSamplingBilinear',
                       'UpSampling',                                                            -- gather_map.cu
                       'SpatialAdaptiveAveragePooling', 'SpatialAdaptiveMaxPooling',            -- adaptive_pooling.cu
                       'AbsCriterion', 'SmoothL1Criterion', 'DistKLDivCriterion', 'MarginCriterion',
                       'SoftMarginCriterion', 'BCECriterion', 'L1Cost', 'HingeEmbeddingCriterion',
                       'MultiMarginCriterion', 'MultiLabelMarginCriterion',                     -- nn_criterion.cu
                       'SpatialMaxUnpooling', 'SpatialDilatedMaxPooling', 'TemporalMaxPooling'} do   -- pooling.cu
   cunn._halfOnGPU['nn.' .. name] = true
end

-- MSECriterion: nn's composes tensor methods (a difference, then its dot product); here nn_criterion.cu's kernels
-- (LT_CRIT_MSE): the squares summed in double, one launch each way, and in half the loss the float one's rounded
-- once (a half composition would round the difference first).
local criterionKernels = nn._criterionKernels
onDevice(nn.MSECriterion, 'updateOutput', function(self, input, target)
   return criterionKernels.pointwiseOutput(self, C.LT_CRIT_MSE, input, target)
end, HALF_KERNELS)
onDevice(nn.MSECriterion, 'updateGradInput', function(self, input, target)
   return criterionKernels.pointwiseGradInput(self, C.LT_CRIT_MSE, input, target)
end, HALF_KERNELS)

-- ---------------------------------------------------------------- LogSoftMax, SoftMax, SoftMin, ClassNLLCriterion

-- The device (Log)SoftMax (log true) of x into output, and its backward into gradInput from gradOutput g and the
-- output y; the status code. Also cudnn's softmaxes where cuDNN does not run them (cudnn/gpu.lua).
function cunn._deviceSoftmaxForward(log, x, output)
   x = x:contiguous()
   output:resizeAs(x)
   return (log and C.lt_cuops_logsoftmax_forward or C.lt_cuops_softmax_forward)(opsOf(x), nil, output._c, x._c)
end
function cunn._deviceSoftmaxBackward(log, x, g, gradInput, y)
   g = g:contiguous()
   gradInput:resizeAs(y)
   return (log and C.lt_cuops_logsoftmax_backward or C.lt_cuops_softmax_backward)(opsOf(x), nil, gradInput._c, g._c,
                                                                                 y._c)
end

-- The (Log)SoftMax modules over the feature dimension (the spatial ones are the same kernels on 3-D/4-D input).
local function softmaxOnDevice(class, log)
   onDevice(class, 'updateOutput', function(self, input)
      check(cunn._deviceSoftmaxForward(log, input, self.output), 2)
      return self.output
   end, HALF_KERNELS)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      check(cunn._deviceSoftmaxBackward(log, input, gradOutput, self.gradInput, self.output), 2)
      return self.gradInput
   end, HALF_KERNELS)
end
for _, class in ipairs {nn.LogSoftMax, nn.SpatialLogSoftMax} do softmaxOnDevice(class, true) end
for _, class in ipairs {nn.SoftMax, nn.SpatialSoftMax} do softmaxOnDevice(class, false) end

-- SoftMin: the SoftMax of -x, its gradient negated (as the CPU module computes it). In half the negations are exact,
-- so the softmax's Half kernels give the float module's results rounded once: no float copies.
onDevice(nn.SoftMin, 'updateOutput', function(self, input)
   self.mininput = self.mininput and self.mininput:type() == input:type() and self.mininput or input.new()
   self.mininput:resizeAs(input):mul(input, -1)
   self.output:resizeAs(input)
   check(C.lt_cuops_softmax_forward(opsOf(input), nil, self.output._c, self.mininput._c), 2)
   return self.output
end, HALF_KERNELS)
onDevice(nn.SoftMin, 'updateGradInput', function(self, input, gradOutput)
   gradOutput = gradOutput:contiguous()
   self.gradInput:resizeAs(input)
   check(C.lt_cuops_softmax_backward(opsOf(input), nil, self.gradInput._c, gradOutput._c, self.output._c), 2)
   self.gradInput:mul(-1)
   return self.gradInput
end, HALF_KERNELS)

-- cutorch's ClassNLLCriterion takes targets of any Cuda type (or a number): the kernels take a CudaLongTensor.
local function deviceTarget(self, target) return self:_longTarget(target, 'torch.CudaLongTensor') end
local function deviceWeights(self, input)
   if not self.weights then return nil end
   if not onGPU(self.weights) then self.weights = self.weights:type(input:type()) end
   return self.weights._c
end
local loss, totalWeight = ffi.new('double[1]'), ffi.new('double[1]')
onDevice(nn.ClassNLLCriterion, 'updateOutput', function(self, input, target)
   local t = deviceTarget(self, target)
   check(C.lt_cuops_classnll_forward(opsOf(input), nil, input._c, t._c, deviceWeights(self, input),
                                     self.sizeAverage and 1 or 0, self.ignoreIndex, loss, totalWeight), 2)
   self.output, self._gpuTotalWeight = loss[0], totalWeight[0]
   -- half (the kernels' Half instantiation sums in float): the loss rounded to half, as THCUNN's half output was
   if input._c.type == HALF then self.output = tonumber(C.lt_half_to_float(C.lt_float_to_half(self.output))) end
   return self.output, self._gpuTotalWeight
end, HALF_KERNELS)
onDevice(nn.ClassNLLCriterion, 'updateGradInput', function(self, input, target)
   local t = deviceTarget(self, target)
   if not self._gpuTotalWeight then self:updateOutput(input, target) end
   self.gradInput:resizeAs(input)
   check(C.lt_cuops_classnll_backward(opsOf(input), nil, self.gradInput._c, t._c, deviceWeights(self, input),
                                      self.sizeAverage and 1 or 0, self.ignoreIndex, self._gpuTotalWeight), 2)
   return self.gradInput
end, HALF_KERNELS)

-- SpatialClassNLLCriterion: the ClassNLLCriterion kernels over the N*H*W pixels as rows, the N x C x H x W input
-- laid out as (N*H*W) x C by a device copy of its N x H x W x C permutation, the target as N*H*W classes; the
-- gradient comes back in the input's layout. With sizeAverage both divide by the summed weights of all the
-- pixels, as the CPU kernel does. Half runs the kernels' Half instantiation (the copies are exact).
local function pixelRows(self, input, target, fn)
   local function sz(t) return table.concat(t:size():totable(), 'x') end
   if input:dim() ~= 4 then
      error(string.format('%s: only batches of spatial inputs (4D tensors N x C x H x W) are supported, got %s',
                          fn, sz(input)), 3)
   end
   local N, Cl, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
   if not torch.isTensor(target) or target:dim() ~= 3 or target:size(1) ~= N or target:size(2) ~= H or
      target:size(3) ~= W then
      error(string.format('%s: target should be N x H x W for input N x C x H x W (got input %s, target %s)', fn,
                          sz(input), torch.isTensor(target) and sz(target) or torch.type(target)), 3)
   end
   self._gpuRows = self._gpuRows or input.new()
   self._gpuRows:resize(N, H, W, Cl):copy(input:permute(1, 3, 4, 2))
   if torch.type(self._gpuTarget) ~= 'torch.CudaLongTensor' then self._gpuTarget = torch.CudaLongTensor() end
   self._gpuTarget:resize(N, H, W):copy(target)
   return self._gpuRows:view(N * H * W, Cl), self._gpuTarget:view(N * H * W)
end
-- the row kernels name a "sample": here that is a pixel, counted n, h, w from 1
local function pixelCheck(fn, rc)
   if rc ~= 0 then
      local msg = ffi.string(C.lt_errmsg()):gsub('^cuda ClassNLLCriterion %a+: ', '')
      error(fn .. ': ' .. msg:gsub('of sample (%d+)', 'of pixel %1 (counted n, h, w)'), 3)
   end
end
onDevice(nn.SpatialClassNLLCriterion, 'updateOutput', function(self, input, target)
   local fn = 'SpatialClassNLLCriterion_updateOutput'
   local rows, t = pixelRows(self, input, target, fn)
   pixelCheck(fn, C.lt_cuops_classnll_forward(opsOf(input), nil, rows._c, t._c, deviceWeights(self, input),
                                              self.sizeAverage and 1 or 0, -100, loss, totalWeight))
   self.output, self._gpuTotalWeight = loss[0], totalWeight[0]
   -- half: summed in float by the Half kernel, rounded to half as ClassNLLCriterion's
   if input._c.type == HALF then self.output = tonumber(C.lt_half_to_float(C.lt_float_to_half(self.output))) end
   return self.output, self._gpuTotalWeight
end, HALF_KERNELS)
onDevice(nn.SpatialClassNLLCriterion, 'updateGradInput', function(self, input, target)
   local fn = 'SpatialClassNLLCriterion_updateGradInput'
   if not self._gpuTotalWeight then self:updateOutput(input, target) end
   local rows, t = pixelRows(self, input, target, fn)
   self._gpuGradRows = self._gpuGradRows or input.new()
   self._gpuGradRows:resizeAs(rows)
   pixelCheck(fn, C.lt_cuops_classnll_backward(opsOf(input), nil, self._gpuGradRows._c, t._c,
                                               deviceWeights(self, input), self.sizeAverage and 1 or 0, -100,
                                               self._gpuTotalWeight))
   local N, Cl, H, W = input:size(1), input:size(2), input:size(3), input:size(4)
   self.gradInput:resizeAs(input):copy(self._gpuGradRows:view(N, H, W, Cl):permute(1, 4, 2, 3))
   return self.gradInput
end, HALF_KERNELS)

-- ---------------------------------------------------------------- LookupTable

-- With its weight in GPU memory (the indices may be in host or GPU memory, of any integer or float type, read on
-- the host as the CPU kernel reads them): the rows gathered on the device, the gradient summed per row without
-- atomics (scaleGradByFreq and paddingValue as on the CPU), max-norm renormalization of the rows named.
-- A half weight runs the kernels' Half instantiations (gather_map.cu's map and rows, in float): no float copies.
cunn._halfOnGPU['nn.LookupTable'] = true
local function lookupOnDevice(name, gpu)
   local host = nn.LookupTable[name]
   nn.LookupTable[name] = function(self, input, ...)
      if onGPU(self.weight) then return gpu(self, input, ...) end
      return host(self, input, ...)
   end
end
lookupOnDevice('updateOutput', function(self, input)
   self:backCompatibility()
   if input:dim() ~= 1 and input:dim() ~= 2 then
      error('nn.LookupTable: input must be a vector or matrix of indices, got ' .. input:dim() .. ' dimensions', 2)
   end
   if self.maxNorm then
      check(C.lt_cuda_nn_lookup_renorm(input._c, self.weight._c, self.maxNorm, self.normType or 2), 2)
   end
   if not onGPU(self.output) or self.output:type() ~= self.weight:type() then self.output = self.weight.new() end
   check(C.lt_cuda_nn_lookup_forward(input._c, self.weight._c, self.output._c), 2)
   if input:dim() == 2 then self.output = self.output:view(input:size(1), input:size(2), self.weight:size(2)) end
   return self.output
end)
lookupOnDevice('accGradParameters', function(self, input, gradOutput, scale)
   check(C.lt_cuda_nn_lookup_acc(input._c, gradOutput._c, self.gradWeight._c, self.shouldScaleGradByFreq and 1 or 0,
                                 self.paddingValue or 0, scale or 1), 2)
end)

-- ---------------------------------------------------------------- Normalize

-- Each row divided by its p-norm, (sum |x|^p + eps)^(1/p) (max |x| + eps for p = inf), and the CPU kernel's
-- gradient: nn_pointwise.cu's lt_normalize_* kernels, a block per row, one launch each way (a composition of
-- device methods took 6-12 and in half rounded at each). The row norms are kept in self.norm.
onDevice(nn.Normalize, 'updateOutput', function(self, input)
   self.norm = self.norm and onGPU(self.norm) and self.norm:type() == input:type() and self.norm or input.new()
   check(C.lt_cuda_nn_normalize(input._c, nil, self.output._c, self.norm._c, self.p, self.eps), 2)
   return self.output
end, HALF_KERNELS)
onDevice(nn.Normalize, 'updateGradInput', function(self, input, gradOutput)
   check(C.lt_cuda_nn_normalize(input._c, gradOutput._c, self.gradInput._c, self.norm._c, self.p, self.eps), 2)
   return self.gradInput
end, HALF_KERNELS)

-- ---------------------------------------------------------------- Dropout

-- The mask from the device's Philox4x32-10 stream (cutorch.manualSeed), so it differs from the CPU's draws.
onDevice(nn.Dropout, 'updateOutput', function(self, input)
   if self.inplace then self.output:set(input) else self.output:resizeAs(input) end
   if self.p > 0 and (self.train or self.stochastic_inference) then
      self.noise = onGPU(self.noise) and self.noise or input.new()
      self.noise:resizeAs(input)
      local seed, offset = cutorch._philoxDraws(input:nElement())
      check(C.lt_cuops_dropout_forward(opsOf(input), nil, self.output._c, input._c, self.noise._c, self.p,
                                       self.v2 and 0 or 1, seed, offset), 2)
   else
      if not self.inplace then self.output:copy(input) end
      if self.p > 0 and not self.v2 then self.output:mul(1 - self.p) end
   end
   return self.output
end)
onDevice(nn.Dropout, 'updateGradInput', function(self, input, gradOutput)
   if self.inplace then self.gradInput:set(gradOutput) else self.gradInput:resizeAs(gradOutput) end
   if self.train and self.p > 0 then
      check(C.lt_cuops_dropout_backward(opsOf(gradOutput), nil, self.gradInput._c, gradOutput._c, self.noise._c), 2)
   else
      if not self.inplace then self.gradInput:copy(gradOutput) end
      if self.p > 0 and not self.v2 then self.gradInput:mul(1 - self.p) end
   end
   return self.gradInput
end)

-- ---------------------------------------------------------------- RReLU

-- In training with random slopes: one launch draws each element's slope from the Philox stream exactly as the
-- uniform fill nn's module calls would (the same draws, rounded as a float fill), keeps the noise and multiplies
-- (dropout.cu's lt_rrelu_fwd); the backward is Dropout's gradOut * noise. So a float module's results are those of
-- nn's composition, and a half module with the same seed draws the float module's slopes and gives its output
-- rounded once (a half fill would round the slopes first). The fixed-slope path is nn's (a pointwise kernel).
do
   local host = {updateOutput = nn.RReLU.updateOutput, updateGradInput = nn.RReLU.updateGradInput}
   local function randomSlopes(self) return self.train and self.upper - self.lower > 1e-6 end
   onDevice(nn.RReLU, 'updateOutput', function(self, input)
      if not randomSlopes(self) then return host.updateOutput(self, input) end
      self.noise = onGPU(self.noise) and self.noise:type() == input:type() and self.noise or input.new()
      self.noise:resizeAs(input)
      if self.inplace then self.output:set(input) else self.output:resizeAs(input) end
      local seed, offset = cutorch._philoxDraws(2 * input:nElement())
      check(C.lt_cuops_rrelu_forward(opsOf(input), nil, self.output._c, input._c, self.noise._c, self.lower,
                                     self.upper, seed, offset), 2)
      return self.output
   end, HALF_KERNELS)
   onDevice(nn.RReLU, 'updateGradInput', function(self, input, gradOutput)
      if not randomSlopes(self) then return host.updateGradInput(self, input, gradOutput) end
      if self.inplace then self.gradInput:set(gradOutput) else self.gradInput:resizeAs(gradOutput) end
      check(C.lt_cuops_dropout_backward(opsOf(gradOutput), nil, self.gradInput._c, gradOutput._c, self.noise._c), 2)
      return self.gradInput
   end, HALF_KERNELS)
end

-- ---------------------------------------------------------------- convolutions: im2col + cuBLAS

-- SpatialConvolution, SpatialConvolutionMM (its own copies of the methods), SpatialDilatedConvolution, and the
-- cudnn.* convolutions through their nn parents: per sample, columns and a GEMM (lt_cuops_conv2d_*), as Torch7's
-- cunn computed SpatialConvolutionMM. No finput/fgradInput buffers: the columns are allocator scratch.
local function convOutputSize(self, input)
   local d = input:dim()
   if d ~= 3 and d ~= 4 then
      error(string.format('3D or 4D (batch mode) tensor expected for input, but got: %dD tensor', d), 3)
   end
   local dilW, dilH = self.dilationW or 1, self.dilationH or 1
   local oH = math.floor((input:size(d - 1) + 2 * self.padH - (dilH * (self.kH - 1) + 1)) / self.dH) + 1
   local oW = math.floor((input:size(d) + 2 * self.padW - (dilW * (self.kW - 1) + 1)) / self.dW) + 1
   if d == 4 then return input:size(1), self.nOutputPlane, math.max(oH, 0), math.max(oW, 0) end
   return self.nOutputPlane, math.max(oH, 0), math.max(oW, 0)
end
cunn._convOutputSize = convOutputSize
local function convGeometry(self)
   self.padW = self.padW or self.padding or 0   -- files from before padW/padH existed
   self.padH = self.padH or self.padding or 0
   return self.kW, self.kH, self.dW, self.dH, self.padW, self.padH, self.dilationW or 1, self.dilationH or 1
end
local function onDeviceConvolution(class)
   onDevice(class, 'updateOutput', function(self, input)
      self.output:resize(convOutputSize(self, input))
      check(C.lt_cuops_conv2d_forward(opsOf(input), nil, input._c, self.output._c, self.weight._c,
                                      self.bias and self.bias._c or nil, convGeometry(self)), 2)
      return self.output
   end, HALF_KERNELS)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      self.gradInput:resizeAs(input)
      check(C.lt_cuops_conv2d_backward_data(opsOf(input), nil, input._c, gradOutput._c, self.gradInput._c,
                                            self.weight._c, convGeometry(self)), 2)
      return self.gradInput
   end, HALF_KERNELS)
   onDevice(class, 'accGradParameters', function(self, input, gradOutput, scale)
      local kW, kH, dW, dH, padW, padH, dilW, dilH = convGeometry(self)
      check(C.lt_cuops_conv2d_backward_params(opsOf(input), nil, input._c, gradOutput._c, self.gradWeight._c,
                                              self.gradBias and self.gradBias._c or nil, kW, kH, dW, dH, padW,
                                              padH, dilW, dilH, scale or 1), 2)
   end, HALF_KERNELS)
end
onDeviceConvolution(nn.SpatialConvolution)
onDeviceConvolution(nn.SpatialConvolutionMM)
onDeviceConvolution(nn.SpatialDilatedConvolution)

-- SpatialFullConvolution (and cudnn's, its subclass): the adjoint of a plain convolution of its output, through
-- the same columns and GEMMs (lt_cuops_full_conv2d_*); the module's own code picks x and adj ({input, target}).
local function fullOutputSize(self, x, adjW, adjH)
   local d = x:dim()
   if d ~= 3 and d ~= 4 then
      error(string.format('3D or 4D (batch mode) tensor expected for input, but got: %dD tensor', d), 4)
   end
   local oH = (x:size(d - 1) - 1) * self.dH - 2 * self.padH + self.kH + adjH
   local oW = (x:size(d) - 1) * self.dW - 2 * self.padW + self.kW + adjW
   if d == 4 then return x:size(1), self.nOutputPlane, math.max(oH, 0), math.max(oW, 0) end
   return self.nOutputPlane, math.max(oH, 0), math.max(oW, 0)
end
cunn._halfOnGPU['nn.SpatialFullConvolution'] = true   -- its updateOutput, ... reach these with half tensors
onDevice(nn.SpatialFullConvolution, '_forward', function(self, x, adjW, adjH)
   self.output:resize(fullOutputSize(self, x, adjW, adjH))
   check(C.lt_cuops_full_conv2d_forward(opsOf(x), nil, x._c, self.output._c, self.weight._c,
                                        self.bias and self.bias._c or nil, self.kW, self.kH, self.dW, self.dH,
                                        self.padW, self.padH, adjW, adjH), 3)
end, HALF_KERNELS)
onDevice(nn.SpatialFullConvolution, '_backwardData', function(self, x, gradOutput, adjW, adjH)
   self.gradInput:resizeAs(x)
   check(C.lt_cuops_full_conv2d_backward_data(opsOf(x), nil, x._c, gradOutput._c, self.gradInput._c,
                                              self.weight._c, self.kW, self.kH, self.dW, self.dH, self.padW,
                                              self.padH, adjW, adjH), 3)
end, HALF_KERNELS)
onDevice(nn.SpatialFullConvolution, '_backwardParams', function(self, x, gradOutput, adjW, adjH, scale)
   check(C.lt_cuops_full_conv2d_backward_params(opsOf(x), nil, x._c, gradOutput._c, self.gradWeight._c,
                                                self.gradBias and self.gradBias._c or nil, self.kW, self.kH,
                                                self.dW, self.dH, self.padW, self.padH, adjW, adjH, scale), 3)
end, HALF_KERNELS)

-- ---------------------------------------------------------------- BatchNormalization (and its subclasses)

-- nn.BatchNormalization's rules (a single sample in evaluation seen as a batch of one; batch statistics only for
-- batches of more than one sample); every tensor of the module on the device, of the input's type (:cuda()).
local BN = nn.BatchNormalization
local function opt(t) return t and t._c or nil end

-- The forward pass's input (as a batch) and whether it uses the batch's statistics, with the output and the saved
-- statistics sized for it (shared with cudnn's batch norm on cuDNN, cudnn/gpu.lua).
local function bnForwardSetup(self, input)
   self:checkInputDim(input)
   input = BN._asBatch(self, input)
   local train = BN._useBatchStats(self, input)
   self.output:resizeAs(input)
   -- (sized per feature even where the batch's statistics are not computed, as Torch7's)
   self.save_mean = (self.save_mean or input.new()):resize(input:size(2))
   self.save_std = (self.save_std or input.new()):resize(input:size(2))
   return input, train
end
cunn._bnForwardSetup = bnForwardSetup

onDevice(BN, 'updateOutput', function(self, input)
   local input, train = bnForwardSetup(self, input)
   check(C.lt_cuops_batchnorm_forward(opsOf(input), nil, self.output._c, input._c, opt(self.weight), opt(self.bias),
         self.running_mean._c, self.running_var._c, self.save_mean._c, self.save_std._c, train and 1 or 0,
         self.momentum, self.eps), 2)
   return self.output
end, HALF_KERNELS)

local function bnBackward(self, input, gradOutput, scale, gradInput, gradWeight, gradBias)
   self:checkInputDim(input)
   input, gradOutput = BN._asBatch(self, input), BN._asBatch(self, gradOutput)
   if gradOutput:dim() ~= input:dim() or gradOutput:nElement() ~= input:nElement() then
      error('gradOutput and input must have the same size', 3)
   end
   if gradInput then gradInput:resizeAs(gradOutput) end
   check(C.lt_cuops_batchnorm_backward(opsOf(input), nil, input._c, gradOutput._c, opt(gradInput), opt(gradWeight),
         opt(gradBias), opt(self.weight), self.running_mean._c, self.running_var._c, opt(self.save_mean),
         opt(self.save_std), BN._useBatchStats(self, input) and 1 or 0, scale or 1, self.eps), 3)
   return self.gradInput
end
onDevice(BN, 'backward', function(self, input, gradOutput, scale)
   return bnBackward(self, input, gradOutput, scale, self.gradInput, self.gradWeight, self.gradBias)
end, HALF_KERNELS)
onDevice(BN, 'updateGradInput', function(self, input, gradOutput)
   return bnBackward(self, input, gradOutput, 1, self.gradInput)
end, HALF_KERNELS)
onDevice(BN, 'accGradParameters', function(self, input, gradOutput, scale)
   return bnBackward(self, input, gradOutput, scale, nil, self.gradWeight, self.gradBias)
end, HALF_KERNELS)

-- ---------------------------------------------------------------- SpatialMaxPooling, SpatialAveragePooling

-- The pooled output's size (the CPU module's rule, lt_nn_SpatialPooling_outputSize), as a LongStorage.
local pooledH, pooledW = ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
local function pooledSize(self, input, name)
   check(C.lt_nn_SpatialPooling_outputSize(name, input._c, self.kW, self.kH, self.dW, self.dH, self.padW or 0,
         self.padH or 0, self.ceil_mode and 1 or 0, pooledH, pooledW), 3)
   local size = input:size():totable()
   size[#size - 1], size[#size] = tonumber(pooledH[0]), tonumber(pooledW[0])
   return torch.LongStorage(size)
end

-- On the device the indices are a CudaLongTensor (the CPU module keeps a LongTensor, which :cuda() converts).
onDevice(nn.SpatialMaxPooling, 'updateOutput', function(self, input)
   self.indices = nn.utils.indicesFor(input, self.indices)
   self.iheight, self.iwidth = input:size(input:dim() - 1), input:size(input:dim())
   local size = pooledSize(self, input, 'cuda SpatialMaxPooling forward')
   self.output:resize(size)
   self.indices:resize(size)
   check(C.lt_cuops_maxpool_forward(opsOf(input), nil, self.output._c, self.indices._c, input._c, self.kW, self.kH,
         self.dW, self.dH, self.padW or 0, self.padH or 0, self.ceil_mode and 1 or 0), 2)
   return self.output
end, HALF_KERNELS)
onDevice(nn.SpatialMaxPooling, 'updateGradInput', function(self, input, gradOutput)
   if self.gradInput then
      self.gradInput:resizeAs(input)
      check(C.lt_cuops_maxpool_backward(opsOf(input), nil, self.gradInput._c, gradOutput._c, self.indices._c,
            input._c, self.kW, self.kH, self.dW, self.dH, self.padW or 0, self.padH or 0, self.ceil_mode and 1 or 0), 2)
      return self.gradInput
   end
end, HALF_KERNELS)

-- Files from before ceil mode and padding: count_include_pad absent means true; divide == false a sum pooling.
local function includePad(self) return self.count_include_pad ~= false and 1 or 0 end
onDevice(nn.SpatialAveragePooling, 'updateOutput', function(self, input)
   self.output:resize(pooledSize(self, input, 'cuda SpatialAveragePooling forward'))
   check(C.lt_cuops_avgpool_forward(opsOf(input), nil, self.output._c, input._c, self.kW, self.kH, self.dW, self.dH,
         self.padW or 0, self.padH or 0, self.ceil_mode and 1 or 0, includePad(self)), 2)
   if self.divide == false then self.output:mul(self.kW * self.kH) end
   return self.output
end, HALF_KERNELS)
onDevice(nn.SpatialAveragePooling, 'updateGradInput', function(self, input, gradOutput)
   if self.gradInput then
      self.gradInput:resizeAs(input)
      check(C.lt_cuops_avgpool_backward(opsOf(input), nil, self.gradInput._c, gradOutput._c, input._c, self.kW,
            self.kH, self.dW, self.dH, self.padW or 0, self.padH or 0, self.ceil_mode and 1 or 0, includePad(self)), 2)
      if self.divide == false then self.gradInput:mul(self.kW * self.kH) end
      return self.gradInput
   end
end, HALF_KERNELS)

-- ---------------------------------------------------------------- SpatialSubSampling, TemporalSubSampling

-- Per plane, weight[c] times each kW x kH window's sum plus bias[c] (pooling.cu's lt_subsample_*: one launch each
-- way, the parameters' gradients a block per plane), computed in float for half and rounded once, where a
-- composition of the average pooling and per-plane arithmetic would round at each step. TemporalSubSampling is the
-- same per feature over windows of kW frames: the sequence (N x) T x F as an N x 1 x T x F image with kW x 1
-- windows, the weight indexed by the column (the feature).
local function subsamplingPlanes(self, input, fn)
   local d = input:dim()
   if (d ~= 3 and d ~= 4) or input:size(d - 2) ~= self.nInputPlane or input:size(d - 1) < self.kH or
      input:size(d) < self.kW then
      error(string.format('%s: a 3D or 4D input of %d planes of at least %d x %d expected, got %s', fn,
                          self.nInputPlane, self.kH, self.kW, table.concat(input:size():totable(), 'x')), 3)
   end
   return d == 3 and nn.utils.addSingletonDimension(input, 1) or input   -- (a view of any layout)
end
local function subsampling(self, pass, image, gradOutput, result, result2, scale)
   local temporal = self.inputFrameSize ~= nil
   local kW, kH, dW, dH = self.kW, self.kH, self.dW, self.dH
   if temporal then kW, kH, dW, dH = 1, self.kW, 1, self.dW end
   check(C.lt_cuda_nn_subsampling(pass, image._c, gradOutput and gradOutput._c, result._c, result2 and result2._c,
                                  self.weight._c, self.bias._c, kW, kH, dW, dH, temporal and 1 or 0, scale or 1), 3)
end
onDevice(nn.SpatialSubSampling, 'updateOutput', function(self, input)
   local image = subsamplingPlanes(self, input, 'SpatialSubSampling_updateOutput')
   subsampling(self, 0, image, nil, self.output)
   if input:dim() == 3 then self.output = self.output:select(1, 1) end
   return self.output
end, HALF_KERNELS)
onDevice(nn.SpatialSubSampling, 'updateGradInput', function(self, input, gradOutput)
   if not self.gradInput then return end
   local image = subsamplingPlanes(self, input, 'SpatialSubSampling_updateGradInput')
   subsampling(self, 1, image, gradOutput, self.gradInput)
   self.gradInput = self.gradInput:viewAs(input)
   return self.gradInput
end, HALF_KERNELS)
onDevice(nn.SpatialSubSampling, 'accGradParameters', function(self, input, gradOutput, scale)
   subsampling(self, 2, subsamplingPlanes(self, input, 'SpatialSubSampling_accGradParameters'), gradOutput,
               self.gradWeight, self.gradBias, scale)
end, HALF_KERNELS)

local function asFrames(self, input, fn)
   local d = input:dim()
   if (d ~= 2 and d ~= 3) or input:size(d) ~= self.inputFrameSize or input:size(d - 1) < self.kW then
      error(string.format('%s: a (N x) T x %d input with T >= %d expected, got %s', fn, self.inputFrameSize, self.kW,
                          table.concat(input:size():totable(), 'x')), 3)
   end
   local x = input:contiguous()
   return d == 2 and x:view(1, 1, x:size(1), x:size(2)) or x:view(x:size(1), 1, x:size(2), x:size(3))
end
local function asInput(t, input)   -- N x 1 x oT x F back to the input's rank
   return input:dim() == 2 and t:view(t:size(3), t:size(4)) or t:view(t:size(1), t:size(3), t:size(4))
end
onDevice(nn.TemporalSubSampling, 'updateOutput', function(self, input)
   subsampling(self, 0, asFrames(self, input, 'TemporalSubSampling_updateOutput'), nil, self.output)
   self.output = asInput(self.output, input)
   return self.output
end, HALF_KERNELS)
onDevice(nn.TemporalSubSampling, 'updateGradInput', function(self, input, gradOutput)
   if not self.gradInput then return end
   subsampling(self, 1, asFrames(self, input, 'TemporalSubSampling_updateGradInput'), gradOutput, self.gradInput)
   self.gradInput = self.gradInput:viewAs(input)
   return self.gradInput
end, HALF_KERNELS)
onDevice(nn.TemporalSubSampling, 'accGradParameters', function(self, input, gradOutput, scale)
   subsampling(self, 2, asFrames(self, input, 'TemporalSubSampling_accGradParameters'), gradOutput, self.gradWeight,
               self.gradBias, scale)
end, HALF_KERNELS)

-- ---------------------------------------------------------------- PReLU

-- nn.PReLU's own methods: its C kernel sends device tensors to nn_pointwise.cu's PReLU kernels (one launch each
-- way; the weight's gradient a block-per-channel sum), which have a Half instantiation computing in float: half
-- stays half, no float copies.
cunn._halfOnGPU['nn.PReLU'] = true

-- ---------------------------------------------------------------- GatedLinearUnit

-- a sigmoid(b) of the input's halves along dim, one launch each way (nn_pointwise.cu's GLU kernels, in float for
-- Half: the float module's results rounded once, where nn's composition would round the gate first). No gate kept.
onDevice(nn.GatedLinearUnit, 'updateOutput', function(self, input)
   check(C.lt_cuda_nn_glu(input._c, nil, self.output._c, (self.dim or input:dim()) - 1), 2)
   return self.output
end, HALF_KERNELS)
onDevice(nn.GatedLinearUnit, 'updateGradInput', function(self, input, gradOutput)
   check(C.lt_cuda_nn_glu(input._c, gradOutput._c, self.gradInput._c, (self.dim or input:dim()) - 1), 2)
   return self.gradInput
end, HALF_KERNELS)

-- ---------------------------------------------------------------- a kernel per output position

-- nn.SpatialConvolutionLocal: conv.cu's lt_convlocal_* (a thread per output: the bias plus the position's kernel
-- over its window in the compute type, rounded once; a thread per input pixel gathering the windows and planes that
-- read it; a thread per weight and bias element summing over the batch: no atomics), one launch each way. The
-- composition of unfolds, copies, bmm and per-tap adds it replaces rounded at each step in half.
do
   local SCL = nn.SpatialConvolutionLocal
   local function image(self, input)   -- (N x) C x H x W as an N x C x H x W view
      return input:dim() == 3 and nn.utils.addSingletonDimension(input, 1) or input
   end
   local function run(self, pass, input, gradOutput, result, result2, scale)
      check(C.lt_cuda_nn_convlocal(pass, image(self, input)._c, gradOutput and gradOutput._c, result._c,
                                   result2 and result2._c, self.weight._c, self.bias._c, self.nOutputPlane, self.kW,
                                   self.kH, self.dW, self.dH, self.padW, self.padH, scale or 1), 3)
   end
   onDevice(SCL, 'updateOutput', function(self, input)
      SCL._checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
      run(self, 0, input, nil, self.output)
      if input:dim() == 3 then self.output = self.output:select(1, 1) end
      return self.output
   end, HALF_KERNELS)
   onDevice(SCL, 'updateGradInput', function(self, input, gradOutput)
      SCL._checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
      SCL._checkSize(self, 'gradOutput', gradOutput, self.nOutputPlane, self.oH, self.oW)
      if not self.gradInput then return end
      run(self, 1, input, gradOutput, self.gradInput)
      self.gradInput = self.gradInput:viewAs(input)
      return self.gradInput
   end, HALF_KERNELS)
   onDevice(SCL, 'accGradParameters', function(self, input, gradOutput, scale)
      SCL._checkSize(self, 'input', input, self.nInputPlane, self.iH, self.iW)
      SCL._checkSize(self, 'gradOutput', gradOutput, self.nOutputPlane, self.oH, self.oW)
      run(self, 2, input, gradOutput, self.gradWeight, self.gradBias, scale)
   end, HALF_KERNELS)
end

-- ---------------------------------------------------------------- FeatureLPPooling

-- nn.FeatureLPPooling over the input seen as (B, F, S): pooling.cu's lt_flp_* kernels (a thread per output, then a
-- thread per input element gathering the windows that hold it: no atomics), one launch each way, in float for half
-- (a composition of pow, add and views rounded at each term). Outputs of 0 pass no gradient, as in the host kernel.
do
   local FLP = nn.FeatureLPPooling
   local function geometry(self, input)
      local lo = self.batch_mode and 2 or 1
      local d = input:dim()
      if d < lo or d > lo + 2 or (input:size(lo) < self.width) then return nil end   -- the host kernel names it
      local b = self.batch_mode and input:size(1) or 1
      local f = input:size(lo)
      local oF = math.floor((f - self.width) / self.stride) + 1
      local size = input:size()
      size[lo] = oF
      return b, f, input:nElement() / (b * f), oF, size
   end
   local function asBFS(input, b, f, sz)   -- a (B, F, S) view (of a contiguous copy where a view cannot be)
      return (input:isContiguous() and input or input:contiguous()):view(b, f, sz)
   end
   local host = {updateOutput = FLP.updateOutput, updateGradInput = FLP.updateGradInput}
   onDevice(FLP, 'updateOutput', function(self, input)
      local b, f, sz, _, size = geometry(self, input)
      if not b then return host.updateOutput(self, input) end
      check(C.lt_cuda_nn_feature_lp(asBFS(input, b, f, sz)._c, nil, nil, self.output._c, self.power, self.width,
                                    self.stride), 2)
      self.output = self.output:view(size)
      return self.output
   end, HALF_KERNELS)
   onDevice(FLP, 'updateGradInput', function(self, input, gradOutput)
      local b, f, sz, oF = geometry(self, input)
      if not b or gradOutput:nElement() ~= b * oF * sz or self.output:nElement() ~= b * oF * sz then
         return host.updateGradInput(self, input, gradOutput)
      end
      check(C.lt_cuda_nn_feature_lp(asBFS(input, b, f, sz)._c, gradOutput._c, self.output._c, self.gradInput._c,
                                    self.power, self.width, self.stride), 2)
      self.gradInput = self.gradInput:viewAs(input)
      return self.gradInput
   end, HALF_KERNELS)
end

-- ---------------------------------------------------------------- TemporalRowConvolution

-- nn.TemporalRowConvolution: each feature row has its own kW-tap kernel. conv.cu's lt_rowconv_* on (N, F, T) views
-- of any strides: the output a thread per element (bias plus kW products in the compute type, rounded once), the
-- gradInput gathered over the outputs whose taps read a frame (no atomics), the parameters' gradients a block per
-- feature. One launch each way (the composition of views and addcmuls took kW + 1 and rounded at each tap in half).
do
   local TRC = nn.TemporalRowConvolution
   local host = {updateOutput = TRC.updateOutput, updateGradInput = TRC.updateGradInput,
                 accGradParameters = TRC.accGradParameters}
   local function asNFT(self, t)   -- (N x) T x F, or (N x) F x T with featFirst -> an N x F x T view
      if t:dim() == 2 then t = nn.utils.addSingletonDimension(t, 1) end
      return self.featFirst and t or t:transpose(2, 3)
   end
   local function frames(self, input)   -- the output's frames, nil where the host kernel names the problem
      local d = input:dim()
      if d ~= 2 and d ~= 3 then return nil end
      local f, t = input:size(self.featFirst and d - 1 or d), input:size(self.featFirst and d or d - 1)
      local oT = math.floor((t - self.kW) / self.dW) + 1
      if f ~= self.inputFrameSize or t < self.kW or oT < 1 then return nil end
      return oT
   end
   local function asOutput(self, gradOutput)   -- gradOutput in the output's shape (nil when it cannot be)
      if gradOutput:isSameSizeAs(self.output) then return gradOutput end
      if gradOutput:nElement() == self.output:nElement() then return gradOutput:contiguous():viewAs(self.output) end
   end
   local function run(self, pass, x, y, result, result2, scale)
      check(C.lt_cuda_nn_rowconv(pass, x._c, y._c, result and result._c, result2 and result2._c, self.weight._c,
                                 self.bias and self.bias._c, self.kW, self.dW, scale or 1), 3)
   end
   onDevice(TRC, 'updateOutput', function(self, input)
      local oT = frames(self, input)
      if not oT then return host.updateOutput(self, input) end
      local size = input:size()
      size[input:dim() - (self.featFirst and 0 or 1)] = oT
      self.output:resize(size)
      run(self, 0, asNFT(self, input), asNFT(self, self.output))
      return self.output
   end, HALF_KERNELS)
   onDevice(TRC, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local oT, g = frames(self, input), asOutput(self, gradOutput)
      if not oT or not g then return host.updateGradInput(self, input, gradOutput) end
      self.gradInput:resizeAs(input)
      run(self, 1, asNFT(self, input), asNFT(self, g), asNFT(self, self.gradInput))
      return self.gradInput
   end, HALF_KERNELS)
   onDevice(TRC, 'accGradParameters', function(self, input, gradOutput, scale)
      local oT, g = frames(self, input), asOutput(self, gradOutput)
      if not oT or not g then return host.accGradParameters(self, input, gradOutput, scale) end
      run(self, 2, asNFT(self, input), asNFT(self, g), self.gradWeight, self.gradBias, scale)
   end, HALF_KERNELS)
end

-- ---------------------------------------------------------------- convolutions through a connection table

-- nn.SpatialConvolutionMap and nn.SpatialFullConvolutionMap (the LeNet-era layers of Torch7's tutorials): the
-- dense (full) convolution whose weight holds each connection's kernel at its pair of planes and zeros elsewhere,
-- run by the GPU versions above; the kernels' gradients are read back out of the dense gradient at the same
-- places. Kernels repeated for one pair of planes add up, as in the map. The rows of the flattened dense weight
-- the connections take are worked out on the host once per connection table. In half the dense convolution runs
-- its Half kernels and the rest moves values (the dense weight from zeros, the gradients' rows back) or adds a
-- gradient once, as a half convolution accumulates its own: no float copies.
local function mapDense(self, full)
   local nIn, nOut = self.nInputPlane, self.nOutputPlane
   local d = self._dense
   if not d or torch.type(d.weight) ~= torch.type(self.weight) or d.connTable ~= self.connTable then
      local rng = torch.getRNGState()   -- the dense module's reset must not move the program's random stream
      d = (full and nn.SpatialFullConvolution or nn.SpatialConvolution)(nIn, nOut, self.kW, self.kH, self.dW, self.dH)
      torch.setRNGState(rng)
      d:type(torch.type(self.weight))
      local conn = self.connTable:long()
      local rows = torch.LongTensor(conn:size(1))
      for k = 1, conn:size(1) do
         local i, o = conn[k][1], conn[k][2]
         rows[k] = full and (i - 1) * nOut + o or (o - 1) * nIn + i   -- weight nOut x nIn (full: nIn x nOut)
      end
      d.connTable, d.rows = self.connTable, rows:cudaLong()
      self._dense = d
   end
   local k2 = self.kH * self.kW
   d.weight:zero():view(nIn * nOut, k2):indexAdd(1, d.rows, self.weight:contiguous():view(-1, k2))
   d.bias:copy(self.bias)
   return d
end
for class, full in pairs {[nn.SpatialConvolutionMap] = false, [nn.SpatialFullConvolutionMap] = true} do
   onDevice(class, 'updateOutput', function(self, input)
      self.output = mapDense(self, full):updateOutput(input)
      return self.output
   end, HALF_KERNELS)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      self.gradInput = mapDense(self, full):updateGradInput(input, gradOutput)
      return self.gradInput
   end, HALF_KERNELS)
   onDevice(class, 'accGradParameters', function(self, input, gradOutput, scale)
      local d = mapDense(self, full)
      d.gradWeight:zero()
      d.gradBias:zero()
      d:accGradParameters(input, gradOutput, scale)
      local k2 = self.kH * self.kW
      self.gradWeight:view(-1, k2):add(d.gradWeight:view(-1, k2):index(1, d.rows))
      self.gradBias:add(d.gradBias)
   end, HALF_KERNELS)
end

-- the fractional max poolings, VolumetricMaxUnpooling, IndexLinear and SparseLinear
require('cunn.gpu_more_modules')(onDevice)
-- the volumetric convolutions and average pooling, the temporal and depthwise convolutions without cuDNN
require('cunn.gpu_volumetric')(onDevice)

-- ---------------------------------------------------------------- through cuDNN

-- nn's volumetric convolutions (full too) and poolings, its temporal and depthwise convolutions run on cuDNN on the
-- GPU where it is used (lua/cudnn/gpu.lua installs their GPU versions): the first call with a tensor in GPU memory
-- loads cudnn, then calls the method it installed. Where cuDNN cannot be used (no libcudnn: cudnn says so once on
-- stderr; LUATORCH_CUDNN=0, cudnn.enabled = false) those call back the versions above (gpu_volumetric.lua,
-- gpu_more_modules.lua), as cudnn's spatial convolutions fall back to the im2col path.
for _, class in ipairs {nn.VolumetricConvolution, nn.VolumetricMaxPooling, nn.VolumetricAveragePooling,
                       nn.TemporalConvolution, nn.VolumetricFullConvolution, nn.SpatialDepthWiseConvolution} do
   for _, name in ipairs {'updateOutput', 'updateGradInput', 'accGradParameters'} do
      local host = class[name]
      if host then
         local loader
         loader = function(self, input, ...)
            local x = torch.type(input) == 'table' and input[1] or input   -- a full convolution's {input, target}
            if onGPU(x) and not package.loaded.cudnn then
               require 'cudnn'
               if class[name] ~= loader then return class[name](self, input, ...) end
            end
            return host(self, input, ...)
         end
         class[name] = loader
      end
   end
end
