-- The cudnn.* modules on cuDNN itself, where cutorch runs on a GPU and libcudnn loads: SpatialConvolution and
-- batch normalization (native/src/cuda_cudnn.c); pooling, ReLU/ClippedReLU/Tanh/Sigmoid and the softmax family
-- (native/src/cuda_cudnn_layers.c).
--
-- As cudnn.torch: groups in the descriptor, an algorithm per pass chosen once per geometry by cuDNN's
-- heuristics within a workspace limit (maxWorkspaceGPUMemPercent of the GPU's memory), without a limit under
-- cudnn.fastest or module:fastest(), by timing every algorithm (Find*Ex) under cudnn.benchmark, or the one
-- module:setMode names. Float convolutions use FMA math (float32 throughout, as Torch7's cuDNN did) unless
-- cudnn.allowTF32 is set, the setting PyTorch's cudnn.allow_tf32 names. Where libcudnn is missing, or
-- LUATORCH_CUDNN=0 / cudnn.enabled = false, the modules run on luatorch's own CUDA kernels (cunn/gpu.lua),
-- saying so once when it is missing.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local opsOf = cutorch._deviceOps

-- These run cuDNN on CudaTensor and CudaDoubleTensor, and the convolutions on CudaHalfTensor too. Other half
-- tensors go to what the class ran before (cunn's GPU versions: half kernels for batch norm, pooling, the
-- activations and the softmaxes; float copies for the rest).
local HALF_TO_PREVIOUS = {halfToPrevious = true}
local HALF_ON_CUDNN = {half = true}   -- the convolutions: cuDNN convolves half data in float (pseudo-half)
local function onDevice(class, name, gpu, options)
   return cunn._onDevice(class, name, gpu, options or HALF_TO_PREVIOUS)
end

cudnn.enabled = os.getenv('LUATORCH_CUDNN') ~= '0'
cudnn.allowTF32 = false

-- cuDNN there or not: asked once per Lua state; the reason printed once per process
local available, why
local function usable()
   if not cudnn.enabled then return false end
   if available == nil then
      available = C.lt_cudnn_available() == 0
      if not available then
         why = ffi.string(C.lt_errmsg())
         if C.lt_cudnn_first_notice() == 1 then
            io.stderr:write(string.format("cudnn: cuDNN cannot be used (%s); cudnn's modules " ..
                                          "run on luatorch's own CUDA kernels (pip install 'luatorch[cuda]' adds cuDNN)\n", why))
         end
      end
   end
   return available
end
cudnn.isAvailable = usable

-- setMode's algorithm names (cudnn.torch took cuDNN's enum names), by pass
local ALGORITHMS = {
   {'CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM', 'CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM',
    'CUDNN_CONVOLUTION_FWD_ALGO_GEMM', 'CUDNN_CONVOLUTION_FWD_ALGO_DIRECT', 'CUDNN_CONVOLUTION_FWD_ALGO_FFT',
    'CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING', 'CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD',
    'CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED'},
   {'CUDNN_CONVOLUTION_BWD_DATA_ALGO_0', 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_1', 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT',
    'CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING', 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD',
    'CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED'},
   {'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0', 'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1',
    'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT', 'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3',
    'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD', 'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED',
    'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING'},
}
cudnn.algorithms = ALGORITHMS

local function algorithmNumber(pass, mode)
   if mode == nil or mode == false then return -1 end
   if type(mode) == 'number' then return mode end
   for i, name in ipairs(ALGORITHMS[pass]) do
      if name == mode then return i - 1 end
   end
   error(string.format("cudnn: setMode: no %s algorithm named '%s' (cuDNN's names: %s)",
                       ({'forward', 'backward data', 'backward filter'})[pass], tostring(mode),
                       table.concat(ALGORITHMS[pass], ', ')), 4)
end

-- cudnn.torch's workspace budget: this share of the GPU's memory
local totals, limits = {}, {}   -- per device: its memory (asked once), and the limit for the current percentage
local function workspaceLimit(device)
   local pct = cudnn.maxWorkspaceGPUMemPercent or 95
   local limit = limits[device]
   if not limit or limit.pct ~= pct then
      if not totals[device] then totals[device] = select(2, cutorch.getMemoryUsage(device + 1)) end
      limit = {pct = pct, bytes = math.floor(totals[device] * pct / 100)}
      limits[device] = limit
   end
   return limit.bytes
end

local params = ffi.new('lt_cudnn_conv')
local function paramsOf(self, input)
   self.padW, self.padH = self.padW or 0, self.padH or 0
   local p = params
   p.kW, p.kH, p.dW, p.dH, p.padW, p.padH = self.kW, self.kH, self.dW, self.dH, self.padW, self.padH
   p.dilW, p.dilH = self.dilationW or 1, self.dilationH or 1
   p.groups = self.groups or 1
   p.mode = cudnn.benchmark and C.LT_CUDNN_BENCHMARK
            or ((self.fastest_mode or cudnn.fastest) and C.LT_CUDNN_FASTEST or C.LT_CUDNN_HEURISTIC)
   p.algo[0] = algorithmNumber(1, self.fmode)
   p.algo[1] = algorithmNumber(2, self.bdmode)
   p.algo[2] = algorithmNumber(3, self.bwmode)
   p.tf32 = cudnn.allowTF32 and 1 or 0
   p.adjW, p.adjH, p.adjT = 0, 0, 0
   if self.kT then   -- the volumetric modules
      self.padT = self.padT or 0
      p.dims, p.kT, p.dT, p.padT, p.dilT = 3, self.kT, self.dT, self.padT, self.dilationT or 1
   else
      p.dims, p.kT, p.dT, p.padT, p.dilT = 2, 1, 1, 0, 1
   end
   p.workspace_limit = workspaceLimit(input._c.storage.device)
   return p
end

-- The output's size: nn's formula for the convolution, or for the full convolution with adj; nil where the input
-- has the wrong rank (cuDNN's side then names the problem)
local function convolutionOutputSize(self, input, full, adj)
   local n = self.kT and 3 or 2
   local d = input:dim()
   if d ~= n + 1 and d ~= n + 2 then return nil end
   local size = input:size():totable()
   local k = self.kT and {self.kT, self.kH, self.kW} or {self.kH, self.kW}
   local s = self.kT and {self.dT, self.dH, self.dW} or {self.dH, self.dW}
   local pad = self.kT and {self.padT or 0, self.padH, self.padW} or {self.padH, self.padW}
   local dil = self.kT and {self.dilationT or 1, self.dilationH or 1, self.dilationW or 1}
               or {self.dilationH or 1, self.dilationW or 1}
   size[d - n] = self.nOutputPlane
   for i = 1, n do
      local x = size[d - n + i]
      local out = full and (x - 1) * s[i] - 2 * pad[i] + k[i] + adj[i]
                  or math.floor((x + 2 * pad[i] - (dil[i] * (k[i] - 1) + 1)) / s[i]) + 1
      if out < 1 then return nil end
      size[d - n + i] = out
   end
   return torch.LongStorage(size)
end

-- cudnn.SpatialConvolution, cudnn.VolumetricConvolution
local function onCudnn(class)
   local host = {updateOutput = class.updateOutput, updateGradInput = class.updateGradInput,
                 accGradParameters = class.accGradParameters}
   onDevice(class, 'updateOutput', function(self, input)
      if not usable() then return host.updateOutput(self, input) end
      local p = paramsOf(self, input)   -- first: it fills in padW/padH of old files
      local size = convolutionOutputSize(self, input)
      if size then self.output:resize(size) end
      check(C.lt_cudnn_conv_forward(opsOf(input), nil, p, input._c, self.output._c,
                                    self.weight._c, self.bias and self.bias._c or nil), 2)
      return self.output
   end, HALF_ON_CUDNN)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      if not usable() then return host.updateGradInput(self, input, gradOutput) end
      self.gradInput:resizeAs(input)
      check(C.lt_cudnn_conv_backward_data(opsOf(input), nil, paramsOf(self, input), input._c, gradOutput._c,
                                          self.gradInput._c, self.weight._c), 2)
      return self.gradInput
   end, HALF_ON_CUDNN)
   onDevice(class, 'accGradParameters', function(self, input, gradOutput, scale)
      if not usable() then return host.accGradParameters(self, input, gradOutput, scale) end
      check(C.lt_cudnn_conv_backward_params(opsOf(input), nil, paramsOf(self, input), input._c, gradOutput._c,
                                            self.gradWeight._c, self.gradBias and self.gradBias._c or nil,
                                            scale or 1), 2)
   end, HALF_ON_CUDNN)
end
onCudnn(cudnn.SpatialConvolution)
onCudnn(cudnn.VolumetricConvolution)

-- cudnn.TemporalConvolution as cudnn.torch ran it: the sequence (N x) T x F as N x 1 x T x F, convolved by the
-- K x 1 x kH x F view of its weight with stride dH and padH zero frames (cuDNN's padding, no padded copy); the
-- N x K x oT x 1 result transposed into nn's N x oT x K. Its fields are already the spatial view's (kW = F);
-- nn.TemporalConvolution's (kW frames of inputFrameSize, stride dW, no padding; the same weight layout) are
-- translated into them by geometryOf.
local function onCudnnTemporal(class, geometryOf)
   local host = {updateOutput = class.updateOutput, updateGradInput = class.updateGradInput,
                 accGradParameters = class.accGradParameters}
   local function onCudnnToo(g, input)
      local d = input:dim()
      return usable() and (d == 2 or d == 3) and input:size(d) == g.kW
             and math.floor((input:size(d - 1) + 2 * g.padH - g.kH) / g.dH) >= 0
   end
   local function asImage(t)   -- (N x) T x F -> N x 1 x T x F
      t = t:contiguous()
      if t:dim() == 2 then return t:view(1, 1, t:size(1), t:size(2)) end
      return t:view(t:size(1), 1, t:size(2), t:size(3))
   end
   local function asPlanes(gradOutput)   -- (N x) oT x K -> N x K x oT x 1, contiguous
      local g = gradOutput:dim() == 2 and nn.utils.addSingletonDimension(gradOutput, 1) or gradOutput   -- (any layout)
      g = g:transpose(2, 3):contiguous()
      return g:view(g:size(1), g:size(2), g:size(3), 1)
   end
   local function filterView(g, w) return w:view(g.nOutputPlane, 1, g.kH, g.kW) end
   onDevice(class, 'updateOutput', function(self, input)
      local g = geometryOf(self)
      if not onCudnnToo(g, input) then return host.updateOutput(self, input) end
      local x = asImage(input)
      local oT = math.floor((x:size(3) + 2 * g.padH - g.kH) / g.dH) + 1
      self._cudnnOutput = self._cudnnOutput or input.new()
      self._cudnnOutput:resize(x:size(1), g.nOutputPlane, oT, 1)
      check(C.lt_cudnn_conv_forward(opsOf(input), nil, paramsOf(g, input), x._c, self._cudnnOutput._c,
                                    filterView(g, self.weight)._c, self.bias and self.bias._c or nil), 2)
      local y = self._cudnnOutput:select(4, 1):transpose(2, 3)
      if input:dim() == 2 then y = y:select(1, 1) end
      self.output:resize(y:size()):copy(y)
      return self.output
   end, HALF_ON_CUDNN)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local g = geometryOf(self)
      if not onCudnnToo(g, input) then return host.updateGradInput(self, input, gradOutput) end
      if not self.gradInput:isContiguous() then self.gradInput = input.new() end
      self.gradInput:resize(input:size())
      check(C.lt_cudnn_conv_backward_data(opsOf(input), nil, paramsOf(g, input), asImage(input)._c,
                                          asPlanes(gradOutput)._c, asImage(self.gradInput)._c,
                                          filterView(g, self.weight)._c), 2)
      return self.gradInput
   end, HALF_ON_CUDNN)
   onDevice(class, 'accGradParameters', function(self, input, gradOutput, scale)
      local g = geometryOf(self)
      if not onCudnnToo(g, input) then return host.accGradParameters(self, input, gradOutput, scale) end
      check(C.lt_cudnn_conv_backward_params(opsOf(input), nil, paramsOf(g, input), asImage(input)._c,
                                            asPlanes(gradOutput)._c, filterView(g, self.gradWeight)._c,
                                            self.gradBias and self.gradBias._c or nil, scale or 1), 2)
   end, HALF_ON_CUDNN)
end
onCudnnTemporal(cudnn.TemporalConvolution, function(self) return self end)
onCudnnTemporal(nn.TemporalConvolution, function(self)
   local g = self._cudnnGeometry or {}
   self._cudnnGeometry = g
   g.kH, g.kW, g.dH, g.dW, g.padH, g.padW = self.kW, self.inputFrameSize, self.dW, 1, 0, 0
   g.nOutputPlane = self.outputFrameSize
   return g
end)

-- The full convolutions, on the plans of the convolutions they are the adjoints of. x: the tensor to convolve,
-- adj {(adjT,) adjH, adjW} (from the target's size when the input is {input, target}).
local function fullParams(self, x, adj)
   local p = paramsOf(self, x)
   if self.kT then p.adjT, p.adjH, p.adjW = adj[1], adj[2], adj[3] else p.adjH, p.adjW = adj[1], adj[2] end
   return p
end
local function fullForward(self, x, adj)
   local size = convolutionOutputSize(self, x, true, adj)
   if size then self.output:resize(size) end
   check(C.lt_cudnn_fullconv_forward(opsOf(x), nil, fullParams(self, x, adj), x._c, self.output._c,
                                     self.weight._c, self.bias and self.bias._c or nil), 3)
end
local function fullBackwardData(self, x, gradOutput, adj, gradInput)
   gradInput:resizeAs(x)
   check(C.lt_cudnn_fullconv_backward_data(opsOf(x), nil, fullParams(self, x, adj), x._c, gradOutput._c,
                                           gradInput._c, self.weight._c), 3)
end
local function fullBackwardParams(self, x, gradOutput, adj, scale)
   check(C.lt_cudnn_fullconv_backward_params(opsOf(x), nil, fullParams(self, x, adj), x._c, gradOutput._c,
                                             self.gradWeight._c, self.gradBias and self.gradBias._c or nil,
                                             scale or 1), 3)
end

-- cudnn.SpatialFullConvolution: nn's module picks x and adj and calls three kernel hooks; these are replaced
do
   local class = cudnn.SpatialFullConvolution
   local host = {_forward = class._forward, _backwardData = class._backwardData,
                 _backwardParams = class._backwardParams}
   onDevice(class, '_forward', function(self, x, adjW, adjH)
      if not usable() then return host._forward(self, x, adjW, adjH) end
      fullForward(self, x, {adjH, adjW})
   end, HALF_ON_CUDNN)
   onDevice(class, '_backwardData', function(self, x, gradOutput, adjW, adjH)
      if not usable() then return host._backwardData(self, x, gradOutput, adjW, adjH) end
      fullBackwardData(self, x, gradOutput, {adjH, adjW}, self.gradInput)
   end, HALF_ON_CUDNN)
   onDevice(class, '_backwardParams', function(self, x, gradOutput, adjW, adjH, scale)
      if not usable() then return host._backwardParams(self, x, gradOutput, adjW, adjH, scale) end
      fullBackwardParams(self, x, gradOutput, {adjH, adjW}, scale)
   end, HALF_ON_CUDNN)
end

-- nn.SpatialDepthWiseConvolution as a grouped convolution on cuDNN, one group per input
-- plane: output plane (i-1)*M + m is input plane i convolved with weight[m][i] (M the depth multiplier,
-- nOutputPlane), so cuDNN's (nInputPlane*M) x 1 x kH x kW filter is the module's weight with its first two
-- axes swapped, and its bias the module's transposed: device copies per call (small), the gradients added back
-- through the swapped views.
do
   local DW = nn.SpatialDepthWiseConvolution
   local host = {updateOutput = DW.updateOutput, updateGradInput = DW.updateGradInput,
                 accGradParameters = DW.accGradParameters}
   local function geometry(self, input)
      if not usable() or (input:dim() ~= 3 and input:dim() ~= 4) or input:size(input:dim() - 2) ~= self.nInputPlane then
         return nil
      end
      if self.padding then self.padW, self.padH, self.padding = self.padding, self.padding, nil end
      local g = self._cudnnGeometry or {}
      self._cudnnGeometry = g
      g.kW, g.kH, g.dW, g.dH, g.padW, g.padH = self.kW, self.kH, self.dW, self.dH, self.padW, self.padH
      g.groups, g.nOutputPlane = self.nInputPlane, self.nInputPlane * self.nOutputPlane
      local oH = math.floor((input:size(input:dim() - 1) + 2 * g.padH - g.kH) / g.dH) + 1
      local oW = math.floor((input:size(input:dim()) + 2 * g.padW - g.kW) / g.dW) + 1
      if oH < 1 or oW < 1 then return nil end   -- the host kernel's error names it
      return g, oH, oW
   end
   local function batch(t)   -- C x H x W -> 1 x C x H x W, contiguous
      t = t:contiguous()
      return t:dim() == 3 and t:view(1, t:size(1), t:size(2), t:size(3)) or t
   end
   -- the module's (M, nIn * kH * kW) parameter as cuDNN's filter order (nIn, M, kH, kW), a view of it
   local function swapped(self, w)
      return w:view(self.nOutputPlane, self.nInputPlane, self.kH, self.kW):transpose(1, 2)
   end
   local function filter(self)
      return swapped(self, self.weight:contiguous()):contiguous():view(self.nInputPlane * self.nOutputPlane, 1,
                                                                         self.kH, self.kW)
   end
   onDevice(DW, 'updateOutput', function(self, input)
      local g, oH, oW = geometry(self, input)
      if not g then return host.updateOutput(self, input) end
      local x = batch(input)
      local bias = self.bias and self.bias:t():contiguous():view(g.nOutputPlane)
      if input:dim() == 3 then self.output:resize(g.nOutputPlane, oH, oW)
      else self.output:resize(x:size(1), g.nOutputPlane, oH, oW) end
      check(C.lt_cudnn_conv_forward(opsOf(input), nil, paramsOf(g, input), x._c, batch(self.output)._c,
                                    filter(self)._c, bias and bias._c or nil), 2)
      return self.output
   end, HALF_ON_CUDNN)
   onDevice(DW, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local g = geometry(self, input)
      if not g then return host.updateGradInput(self, input, gradOutput) end
      if not self.gradInput:isContiguous() then self.gradInput = input.new() end
      self.gradInput:resizeAs(input)
      check(C.lt_cudnn_conv_backward_data(opsOf(input), nil, paramsOf(g, input), batch(input)._c,
                                          batch(gradOutput)._c, batch(self.gradInput)._c, filter(self)._c), 2)
      return self.gradInput
   end, HALF_ON_CUDNN)
   onDevice(DW, 'accGradParameters', function(self, input, gradOutput, scale)
      local g = geometry(self, input)
      if not g then return host.accGradParameters(self, input, gradOutput, scale) end
      local gw = self.weight.new():resize(g.nOutputPlane, 1, self.kH, self.kW):zero()
      local gb = self.gradBias and self.weight.new():resize(g.nOutputPlane):zero()
      check(C.lt_cudnn_conv_backward_params(opsOf(input), nil, paramsOf(g, input), batch(input)._c,
                                            batch(gradOutput)._c, gw._c, gb and gb._c or nil, scale or 1), 2)
      swapped(self, self.gradWeight):add(gw:view(self.nInputPlane, self.nOutputPlane, self.kH, self.kW))
      if gb then self.gradBias:add(gb:view(self.nInputPlane, self.nOutputPlane):t()) end
   end, HALF_ON_CUDNN)
end

-- cudnn.VolumetricFullConvolution (and nn's): its three methods, nn's
-- {input, target} rule (_unpackInput) included
local function onCudnnVolumetricFull(class)
   local VFC = nn.VolumetricFullConvolution
   local host = {updateOutput = class.updateOutput, updateGradInput = class.updateGradInput,
                 accGradParameters = class.accGradParameters}
   local function split(self, input)
      self:backCompatibility()
      local x, adjT, adjW, adjH = VFC._unpackInput(self, input)
      return x, {adjT, adjH, adjW}
   end
   local function onGPU(input)
      return torch._onDevice(torch.type(input) == 'table' and input[1] or input)
   end
   class.updateOutput = function(self, input)
      if not onGPU(input) or not usable() then return host.updateOutput(self, input) end
      local x, adj = split(self, input)
      fullForward(self, x, adj)
      return self.output
   end
   class.updateGradInput = function(self, input, gradOutput)
      if not onGPU(input) or not usable() then return host.updateGradInput(self, input, gradOutput) end
      local x, adj = split(self, input)
      if torch.type(self.gradInput) == 'table' then self.gradInput = self.gradInput[1] end
      fullBackwardData(self, x, gradOutput, adj, self.gradInput)
      if torch.type(input) == 'table' then self.gradInput = {self.gradInput, self:_zeroLike(input[2])} end
      return self.gradInput
   end
   class.accGradParameters = function(self, input, gradOutput, scale)
      if not onGPU(input) or not usable() then return host.accGradParameters(self, input, gradOutput, scale) end
      local x, adj = split(self, input)
      fullBackwardParams(self, x, gradOutput, adj, scale)
   end
end
onCudnnVolumetricFull(cudnn.VolumetricFullConvolution)
onCudnnVolumetricFull(nn.VolumetricFullConvolution)

-- ---------------------------------------------------------------- batch normalization

-- cudnn.BatchNormalization, SpatialBatchNormalization and VolumetricBatchNormalization (affine, as cuDNN's) in
-- cuDNN's spatial mode; nn.BatchNormalization's rules for single samples and evaluation (cunn/gpu.lua). A
-- backward pass in evaluation (running statistics) stays on our kernels: cuDNN's uses the batch's.
local BN = nn.BatchNormalization
local function opt(t) return t and t._c or nil end

local function onCudnnBatchNorm(class)
   local host = {}
   for _, name in ipairs {'updateOutput', 'backward', 'updateGradInput', 'accGradParameters'} do
      host[name] = class[name]
   end
   onDevice(class, 'updateOutput', function(self, input)
      if not usable() or not self.weight or not self.bias then return host.updateOutput(self, input) end
      local input, train = cunn._bnForwardSetup(self, input)
      check(C.lt_cudnn_batchnorm_forward(opsOf(input), nil, self.output._c, input._c, self.weight._c,
            self.bias._c, self.running_mean._c, self.running_var._c, self.save_mean._c, self.save_std._c,
            train and 1 or 0, self.momentum, self.eps), 2)
      return self.output
   end)
   local function backward(name, self, input, gradOutput, scale, gradInput, gradWeight, gradBias)
      self:checkInputDim(input)
      local batch = BN._asBatch(self, input)
      if not usable() or not self.weight or not BN._useBatchStats(self, batch) then
         return host[name](self, input, gradOutput, scale)
      end
      gradOutput = BN._asBatch(self, gradOutput)
      if gradInput then gradInput:resizeAs(gradOutput) end
      check(C.lt_cudnn_batchnorm_backward(opsOf(batch), nil, batch._c, gradOutput._c, opt(gradInput),
            opt(gradWeight), opt(gradBias), self.weight._c, opt(self.save_mean), opt(self.save_std), scale or 1,
            self.eps), 3)
      return self.gradInput
   end
   onDevice(class, 'backward', function(self, input, gradOutput, scale)
      return backward('backward', self, input, gradOutput, scale, self.gradInput, self.gradWeight, self.gradBias)
   end)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      return backward('updateGradInput', self, input, gradOutput, 1, self.gradInput)
   end)
   onDevice(class, 'accGradParameters', function(self, input, gradOutput, scale)
      backward('accGradParameters', self, input, gradOutput, scale, nil, self.gradWeight, self.gradBias)
   end)
end
onCudnnBatchNorm(cudnn.BatchNormalization)
onCudnnBatchNorm(cudnn.SpatialBatchNormalization)
onCudnnBatchNorm(cudnn.VolumetricBatchNormalization)

-- ---------------------------------------------------------------- activations, pooling, softmax

-- cuDNN computes these for CudaTensor and CudaDoubleTensor; cudnn.torch's modules as it ran them. What cuDNN's
-- semantics do not cover (ceil mode, nn's oversized padding errors, in-place on a noncontiguous tensor, more
-- elements than its 32-bit int) runs on our kernels, as without cuDNN.
local function cudnnType(t)
   local ty = torch.type(t)
   return ty == 'torch.CudaTensor' or ty == 'torch.CudaDoubleTensor'
end
local INT_MAX = 2147483647

local function onCudnnActivation(class, mode, coefOf)
   local host = {updateOutput = class.updateOutput, updateGradInput = class.updateGradInput}
   local function hostOnly(self, input, gradOutput)
      return not usable() or not cudnnType(input) or input:nElement() >= INT_MAX or coefOf(self) == nil
             or (self.inplace and not (input:isContiguous() and (not gradOutput or gradOutput:isContiguous())))
   end
   onDevice(class, 'updateOutput', function(self, input)
      if hostOnly(self, input) then return host.updateOutput(self, input) end
      if self.inplace then self.output:set(input) else self.output:resizeAs(input) end
      check(C.lt_cudnn_activation_forward(opsOf(input), nil, mode, coefOf(self), input._c, self.output._c), 2)
      return self.output
   end)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      if hostOnly(self, input, gradOutput) then return host.updateGradInput(self, input, gradOutput) end
      if self.inplace then self.gradInput:set(gradOutput) else self.gradInput:resizeAs(input) end
      check(C.lt_cudnn_activation_backward(opsOf(input), nil, mode, coefOf(self), input._c, self.output._c,
                                           gradOutput._c, self.gradInput._c), 2)
      return self.gradInput
   end)
end
-- the coefficient, or nil where the module's fields ask for what cuDNN's function is not (a thresholded ReLU)
local function noCoef() return 0 end
onCudnnActivation(cudnn.ReLU, C.LT_CUDNN_RELU, function(self)
   if (self.threshold or 0) ~= 0 or (self.val or 0) ~= 0 then return nil end
   return 0
end)
onCudnnActivation(cudnn.ClippedReLU, C.LT_CUDNN_CLIPPED_RELU, function(self)
   if (self.min_val or 0) ~= 0 or (self.max_val and self.max_val ~= self.ceiling) then return nil end
   return self.ceiling
end)
onCudnnActivation(cudnn.Tanh, C.LT_CUDNN_TANH, noCoef)
onCudnnActivation(cudnn.Sigmoid, C.LT_CUDNN_SIGMOID, noCoef)

-- Pooling in cuDNN's floor mode: the window in (T,) H, W order.
local pool = ffi.new('lt_cudnn_pool')
local function poolOf(self, mode, volumetric)
   local p = pool
   p.mode = mode
   if volumetric then
      p.dims = 3
      p.window[0], p.window[1], p.window[2] = self.kT, self.kH, self.kW
      p.stride[0], p.stride[1], p.stride[2] = self.dT, self.dH, self.dW
      p.pad[0], p.pad[1], p.pad[2] = self.padT or 0, self.padH or 0, self.padW or 0
   else
      p.dims = 2
      p.window[0], p.window[1] = self.kH, self.kW
      p.stride[0], p.stride[1] = self.dH, self.dW
      p.pad[0], p.pad[1] = self.padH or 0, self.padW or 0
   end
   return p
end

-- cuDNN's (and nn's floor-mode) pooled size of input, or nil where the host path should answer (and raise
-- nn's errors): ceil mode, padding over half the window, a window larger than the padded input, a wrong rank.
local function pooledSize(p, input)
   local n = p.dims + 2
   local d = input:dim()
   if d ~= n and d ~= n - 1 then return nil end
   local size = input:size():totable()
   for i = 0, p.dims - 1 do
      local dim = d - p.dims + 1 + i
      local k, s, pad = p.window[i], p.stride[i], p.pad[i]
      if pad * 2 > k then return nil end
      local out = math.floor((size[dim] + 2 * pad - k) / s) + 1
      if out < 1 then return nil end
      size[dim] = out
   end
   return torch.LongStorage(size)
end

local function onCudnnPooling(class, modeOf, volumetric)
   local host = {updateOutput = class.updateOutput, updateGradInput = class.updateGradInput}
   local function setup(self, input)
      if not usable() or not cudnnType(input) or self.ceil_mode then return nil end
      local mode = modeOf(self)
      if not mode then return nil end
      local p = poolOf(self, mode, volumetric)
      local size = pooledSize(p, input)
      return size and p, size
   end
   onDevice(class, 'updateOutput', function(self, input)
      local p, size = setup(self, input)
      if not p then return host.updateOutput(self, input) end
      self.output:resize(size)
      check(C.lt_cudnn_pooling_forward(opsOf(input), nil, p, input._c, self.output._c), 2)
      return self.output
   end)
   onDevice(class, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local p = setup(self, input)
      if not p then return host.updateGradInput(self, input, gradOutput) end
      self.gradInput:resizeAs(input)
      check(C.lt_cudnn_pooling_backward(opsOf(input), nil, p, input._c, self.output._c, gradOutput._c,
                                        self.gradInput._c), 2)
      return self.gradInput
   end)
end
local function maxMode() return C.LT_CUDNN_POOL_MAX end
-- cudnn.SpatialAveragePooling always counts the padding; sum pooling (divide = false) is the host's error
local function averageMode(self)
   if self.divide == false then return nil end
   return C.LT_CUDNN_POOL_AVERAGE_INCLUDE_PAD
end
onCudnnPooling(cudnn.SpatialMaxPooling, maxMode, false)
onCudnnPooling(cudnn.SpatialAveragePooling, averageMode, false)
onCudnnPooling(cudnn.VolumetricMaxPooling, maxMode, true)
onCudnnPooling(cudnn.VolumetricAveragePooling, averageMode, true)

-- nn's volumetric convolution and poolings: on the GPU they run on cuDNN as cudnn's subclasses do (nn's max pooling
-- then keeps no indices, as cudnn's does not, unless a VolumetricMaxUnpooling reads them: then, dilated (cuDNN has no
-- dilated pooling) and without cuDNN, cunn's composed version runs it). cunn loads cudnn for them on first use;
-- where cuDNN is not used, these and the temporal, depthwise and full convolutions above run cunn's composed
-- versions (cunn/gpu_volumetric.lua).
local function undilatedMax(self)
   if nn.VolumetricMaxUnpooling.readPoolings[self] then return nil end   -- a VolumetricMaxUnpooling reads them: cunn's composed version keeps them
   if (self.dilationT or 1) ~= 1 or (self.dilationH or 1) ~= 1 or (self.dilationW or 1) ~= 1 then return nil end
   return maxMode()
end
onCudnnPooling(nn.VolumetricMaxPooling, undilatedMax, true)
onCudnnPooling(nn.VolumetricAveragePooling, averageMode, true)
onCudnn(nn.VolumetricConvolution)

-- The softmax family (cudnn/SpatialSoftMax.lua's two functions, which every softmax class calls) with the
-- module's algorithm and mode, 1-D to 4-D inputs.
local SOFTMAX_ALGORITHM = {CUDNN_SOFTMAX_FAST = 0, CUDNN_SOFTMAX_ACCURATE = 1, CUDNN_SOFTMAX_LOG = 2}
local SOFTMAX_MODE = {CUDNN_SOFTMAX_MODE_INSTANCE = 0, CUDNN_SOFTMAX_MODE_CHANNEL = 1}
local hostSoftmax = {forward = cudnn._softmaxForward, backward = cudnn._softmaxBackward}
-- where cuDNN does not run them (no libcudnn, a half tensor, ...), tensors in GPU memory take the device kernels of
-- nn's (Log)SoftMax (Float, Double and Half), as cunn's modules do
local hostKernel = {forward = cudnn._softmaxKernel.forward, backward = cudnn._softmaxKernel.backward}
function cudnn._softmaxKernel.forward(log, x, output)
   if not torch._onDevice(x) then return hostKernel.forward(log, x, output) end
   return cunn._deviceSoftmaxForward(log, x, output)
end
function cudnn._softmaxKernel.backward(log, x, g, gradInput, y)
   if not torch._onDevice(x) then return hostKernel.backward(log, x, g, gradInput, y) end
   return cunn._deviceSoftmaxBackward(log, x, g, gradInput, y)
end
local function softmaxOnCudnn(self, t)
   local d = t:dim()
   return torch._onDevice(t) and usable() and cudnnType(t) and d >= 1 and d <= 4
          and SOFTMAX_ALGORITHM[self.algorithm] and SOFTMAX_MODE[self.mode]
end
function cudnn._softmaxForward(self, input)
   if not softmaxOnCudnn(self, input) then return hostSoftmax.forward(self, input) end
   self.output:resizeAs(input)
   check(C.lt_cudnn_softmax_forward(opsOf(input), nil, SOFTMAX_ALGORITHM[self.algorithm], SOFTMAX_MODE[self.mode],
                                    input._c, self.output._c), 3)
   return self.output
end
function cudnn._softmaxBackward(self, input, gradOutput)
   if not self.gradInput then return end
   if not softmaxOnCudnn(self, input) then return hostSoftmax.backward(self, input, gradOutput) end
   self.gradInput:resizeAs(self.output)
   check(C.lt_cudnn_softmax_backward(opsOf(input), nil, SOFTMAX_ALGORITHM[self.algorithm], SOFTMAX_MODE[self.mode],
                                     self.output._c, gradOutput._c, self.gradInput._c), 3)
   return self.gradInput
end

-- The algorithms and workspace bytes a cudnn convolution chose for this input, {forward, backwardData,
-- backwardFilter} (-1: that pass has not run), as cudnn.verbose printed them; nil before it ran on cuDNN.
-- A full convolution's are those of the convolution it is the adjoint of (from its output to its input), a temporal
-- one's those of its N x 1 x T x F view.
function cudnn.algorithmsOf(self, input)
   local x, planes, sizes = input, self.nOutputPlane, nil
   if torch.isTypeOf(self, 'nn.SpatialFullConvolution') or torch.isTypeOf(self, 'nn.VolumetricFullConvolution') then
      local adj
      if self.kT then
         local adjT, adjW, adjH
         x, adjT, adjW, adjH = nn.VolumetricFullConvolution._unpackInput(self, input)
         adj = {adjT, adjH, adjW}
      else
         local adjW, adjH
         x, adjW, adjH = self:_args(input)
         adj = {adjH, adjW}
      end
      sizes = convolutionOutputSize(self, x, true, adj):totable()   -- the convolution's input: the full one's output
      planes = self.nInputPlane
   elseif torch.isTypeOf(self, 'cudnn.TemporalConvolution') then   -- the N x 1 x T x F view
      sizes = x:size():totable()
      if #sizes == 2 then table.insert(sizes, 1, 1) end
      table.insert(sizes, 2, 1)
   else
      sizes = x:size():totable()
   end
   local n = self.kT and 3 or 2
   if #sizes == n + 1 then table.insert(sizes, 1, 1) end
   local algos, bytes = ffi.new('int[3]'), ffi.new('int64_t[3]')
   if C.lt_cudnn_conv_algorithms(paramsOf(self, x), x._c.storage.device, x._c.type, ffi.new('int64_t[5]', sizes),
                                 planes, algos, bytes) ~= 0 then
      return nil
   end
   local names, out = {'forward', 'backwardData', 'backwardFilter'}, {}
   for i = 1, 3 do
      out[names[i]] = {algorithm = algos[i - 1], name = ALGORITHMS[i][algos[i - 1] + 1],
                       workspace = tonumber(bytes[i - 1])}
   end
   return out
end

-- cudnn.reset: algorithms are chosen again (not while another thread's convolution runs: its plan is freed)
function cudnn.reset()
   C.lt_cudnn_forget_plans()
end
