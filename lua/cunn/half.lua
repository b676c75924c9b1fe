-- torch.CudaHalfTensor for nn's modules with kernels of their own, as cunn's THCUNN had a half version of each:
-- computed in float, stored in half.
--
-- Modules written with tensor methods (nn.Linear, the containers, the shape modules) need nothing: a
-- CudaHalfTensor's methods compute in float and round to half (lua/torch/Half.lua). A module whose methods call a
-- kernel (C on the host, CUDA on the GPU) that takes Float and Double only runs that method here *through float*:
-- every half storage among its arguments and its fields (one level into tables) gets one float copy on the same
-- device (views of one storage stay views of one copy, so in-place modules and aliasing behave), the method runs
-- on those, then every copy is rounded back into its half storage (resized if the method resized it) and each half
-- tensor takes its float stand-in's geometry; float tensors the method made become half tensors. So the module
-- computes in float and keeps its state in half, as THCUNN's half kernels did. GPU versions with half kernels of
-- their own (cunn/gpu.lua's onDevice(..., {half = true})) skip this; `cunn.halfThroughFloat()` counts the calls
-- that took it, per class and method.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

local HALF = C.LT_CUDA_HALF
local function isHalf(x) return torch.isTensor(x) and x._c.type == HALF end
local function plainTable(x) return type(x) == 'table' and not torch.isTensor(x) and getmetatable(x) == nil end

-- nn's modules whose methods call kernels (their files call torch.C, or a helper of such a file;
-- tests/test_cutorch_gpu_half_nn.py keeps this list equal to that set)
local KERNEL_CLASSES = [[
Abs AbsCriterion BCECriterion BatchNormalization ClassNLLCriterion DistKLDivCriterion ELU Exp FeatureLPPooling
GatedLinearUnit HardShrink HardTanh HingeEmbeddingCriterion IndexLinear L1Cost LeakyReLU Log LogSigmoid LogSoftMax
LookupTable MarginCriterion MultiLabelMarginCriterion MultiMarginCriterion Normalize PReLU Power RReLU ReLU6 Sigmoid
SmoothL1Criterion SoftMarginCriterion SoftMax SoftMin SoftPlus SoftShrink SoftSign SparseLinear
SpatialAdaptiveAveragePooling SpatialAdaptiveMaxPooling SpatialAveragePooling SpatialClassNLLCriterion
SpatialConvolution SpatialConvolutionLocal SpatialConvolutionMap SpatialCrossMapLRN SpatialDepthWiseConvolution
SpatialDilatedConvolution SpatialDilatedMaxPooling SpatialFractionalMaxPooling SpatialFullConvolution
SpatialFullConvolutionMap
SpatialLogSoftMax SpatialMaxPooling SpatialMaxUnpooling SpatialReflectionPadding SpatialReplicationPadding
SpatialSoftMax SpatialSubSampling SpatialUpSamplingBilinear SpatialUpSamplingNearest SpatialZeroPadding Sqrt Square
Tanh TanhShrink TemporalConvolution TemporalMaxPooling TemporalRowConvolution TemporalSubSampling Threshold
UpSampling VolumetricAveragePooling VolumetricConvolution VolumetricFractionalMaxPooling VolumetricFullConvolution
VolumetricMaxPooling VolumetricMaxUnpooling VolumetricReplicationPadding
]]
cunn._halfKernelClasses = {}
for name in KERNEL_CLASSES:gmatch('%S+') do cunn._halfKernelClasses[#cunn._halfKernelClasses + 1] = name end

-- the methods of a module that may reach a kernel
local METHODS = {'forward', 'backward', 'updateOutput', 'updateGradInput', 'accGradParameters', 'accUpdateGradParameters',
                 'updateParameters', 'zeroGradParameters'}

local counts = {}
function cunn.halfThroughFloat()
   local c = {}
   for k, v in pairs(counts) do c[k] = v end
   return c
end

local function anyHalf(n, ...)
   for i = 1, n do
      local a = select(i, ...)
      if isHalf(a) then return a end
      if plainTable(a) then
         for _, v in pairs(a) do if isHalf(v) then return v end end
      end
   end
end

local function key(s) return tostring(ffi.cast('uintptr_t', s)) end

-- fn(self, ...) on float stand-ins of the half tensors among the arguments and self's fields (see the top)
local function runInFloatHere(self, fn, n, ...)
   local mirrors, ofFloat = {}, {}     -- half storage key / float storage key -> {half =, float =}
   local floatOf, halfOf, order = {}, {}, {}
   local function toFloat(x)
      if not isHalf(x) then return x end
      if floatOf[x] then return floatOf[x] end
      local c = x._c
      local f = torch._newTensor(C.LT_CUDA_FLOAT)
      if c.storage ~= nil then
         local e = mirrors[key(c.storage)]
         if not e then
            local s = C.lt_storage_new(C.LT_CUDA_FLOAT, c.storage.size)
            if s == nil then check(-1, 4) end
            e = {half = c.storage, float = s}
            mirrors[key(c.storage)], ofFloat[key(s)] = e, e
            check(C.lt_storage_copy(s, 0, c.storage, 0, c.storage.size), 4)
         end
         check(C.lt_tensor_set_storage(f._c, e.float, c.offset, c.ndim, c.size, c.stride), 4)
      end
      floatOf[x], halfOf[f] = f, x
      order[#order + 1] = x
      return f
   end
   -- self's fields, and tables of tensors one level deep in them
   local copies, keep = {}, {}
   local mapped, why = pcall(function()
      for k, v in pairs(self) do
         if torch.isTensor(v) then keep[v] = true end
         if isHalf(v) then
            self[k] = toFloat(v)
         elseif plainTable(v) and anyHalf(1, v) then
            local copy = {}
            for kk, vv in pairs(v) do copy[kk] = toFloat(vv) end
            copies[k] = {v, copy}
            self[k] = copy
         end
      end
   end)
   local args = mapped and torch._mapArguments({...}, n, toFloat)
   local results = mapped and table.pack(pcall(fn, self, unpack(args, 1, n))) or {false, why, n = 2}
   -- every float copy rounded back into its half storage (on an error too: the module keeps half state)
   for _, e in pairs(mirrors) do
      if e.float.size ~= e.half.size then check(C.lt_storage_resize(e.half, e.float.size), 3) end
      check(C.lt_storage_copy(e.half, 0, e.float, 0, e.float.size), 3)
   end
   -- half tensor h takes float tensor f's geometry, over the half storage f's storage stands for (a new half
   -- storage with f's values when the method made f's)
   local function place(h, f)
      local fc = f._c
      if fc.storage == nil then
         C.lt_tensor_clear(h._c)
         return h
      end
      local e = ofFloat[key(fc.storage)]
      if not e then
         local s = C.lt_storage_new(HALF, fc.storage.size)
         if s == nil then check(-1, 4) end
         check(C.lt_storage_copy(s, 0, fc.storage, 0, fc.storage.size), 4)
         e = {half = s}
         ofFloat[key(fc.storage)] = e
         check(C.lt_tensor_set_storage(h._c, s, fc.offset, fc.ndim, fc.size, fc.stride), 4)
         C.lt_storage_release(s)   -- h holds it (and any later tensor placed on it)
         return h
      end
      check(C.lt_tensor_set_storage(h._c, e.half, fc.offset, fc.ndim, fc.size, fc.stride), 4)
      return h
   end
   for _, h in ipairs(order) do place(h, floatOf[h]) end
   -- a float tensor back to the half tensor it stands for, or a new half tensor (one per float tensor)
   local function back(x)
      if not torch.isTensor(x) or x._c.type ~= C.LT_CUDA_FLOAT or keep[x] then return x end
      if not halfOf[x] then halfOf[x] = place(torch._newTensor(HALF), x) end
      return halfOf[x]
   end
   local function backTable(t, into)
      into = into or t
      if into ~= t then
         for kk in pairs(into) do into[kk] = nil end
      end
      for kk, vv in pairs(t) do into[kk] = back(vv) end
      return into
   end
   for k, v in pairs(self) do
      local c = copies[k]
      if c and v == c[2] then
         self[k] = backTable(v, c[1])   -- the field's own table keeps its identity
      elseif plainTable(v) then
         backTable(v)
      else
         self[k] = back(v)
      end
   end
   for _, e in pairs(mirrors) do C.lt_storage_release(e.float) end
   if not results[1] then error(results[2], 0) end
   for i = 2, results.n do
      local r = results[i]
      if plainTable(r) then backTable(r) else results[i] = back(r) end
   end
   return unpack(results, 2, results.n)
end

-- runInFloatHere with the device of the first half tensor current, so that the float copies and whatever the
-- method makes are on it
local function runInFloat(self, fn, n, ...)
   local h = anyHalf(n, ...) or (isHalf(self.weight) and self.weight) or self.output
   local dev = h and h:getDevice() or cutorch.getDevice()
   if dev == cutorch.getDevice() then return runInFloatHere(self, fn, n, ...) end
   local args = table.pack(...)
   return cutorch.withDevice(dev, function() return runInFloatHere(self, fn, n, unpack(args, 1, n)) end)
end

-- fn(self, ...) itself, or through float when a half tensor is among its arguments or is the module's weight or
-- output; what = the class and method, for the counts
function cunn._halfThroughFloat(what, self, fn, ...)
   local n = select('#', ...)
   -- (a module given indices, as LookupTable, shows half in its weight)
   if not (anyHalf(n, ...) or isHalf(self.weight) or isHalf(self.output)) then return fn(self, ...) end
   counts[what] = (counts[what] or 0) + 1
   local results = table.pack(runInFloat(self, fn, n, ...))
   -- a criterion's loss rounded to half, as THCUNN's half criterions wrote theirs into a half tensor
   if type(results[1]) == 'number' and torch.isTypeOf(self, 'nn.Criterion') then
      results[1] = tonumber(C.lt_half_to_float(C.lt_float_to_half(results[1])))
      if type(self.output) == 'number' then self.output = results[1] end
   end
   return unpack(results, 1, results.n)
end

-- The kernel classes' methods take half through float, and so does every nn class that borrowed one of those
-- methods (nn.SpatialConvolutionMM runs nn.SpatialConvolution's). On the GPU backend a method that cunn's onDevice
-- installed decides itself (it knows whether its GPU version has half kernels), also when cudnn installs one later.
local deviceDispatch = cunn._deviceDispatch or setmetatable({}, {__mode = 'k'})
cunn._deviceDispatch = deviceDispatch
cunn._halfOnGPU = cunn._halfOnGPU or {}
local wrapperOf = {}   -- a kernel method -> its wrapper (one for every class that holds the method)

-- wrap the METHODS that package's classes `names` define themselves (prefix: 'nn', 'cudnn'); a class named in
-- cunn._halfOnGPU takes half below its public methods on the GPU backend and is left alone there
function cunn._halfWrap(prefix, names)
   for _, name in ipairs(names) do
      local full = prefix .. '.' .. name
      local class = assert(torch.getmetatable(full), full)
      for _, method in ipairs(METHODS) do
         local inner = rawget(class, method)
         if inner and not deviceDispatch[inner] and not wrapperOf[inner] then
            local what = full .. '.' .. method
            wrapperOf[inner] = function(self, ...) return cunn._halfThroughFloat(what, self, inner, ...) end
         end
         if wrapperOf[inner] and not (cutorch.backend == 'gpu' and cunn._halfOnGPU[full]) then
            rawset(class, method, wrapperOf[inner])
         end
      end
   end
end
cunn._halfWrap('nn', cunn._halfKernelClasses)
-- the nn classes that borrowed a kernel method
for short, constructor in pairs(nn) do
   local class = type(constructor) == 'table' and torch.getmetatable('nn.' .. short)
   if class and not (cutorch.backend == 'gpu' and cunn._halfOnGPU['nn.' .. short]) then
      for _, method in ipairs(METHODS) do
         local w = wrapperOf[rawget(class, method)]
         if w then rawset(class, method, w) end
      end
   end
end
