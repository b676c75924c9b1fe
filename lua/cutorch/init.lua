-- `cutorch`: Torch7's cutorch API, on a GPU when there is one (lua/cutorch/gpu.lua), else over host memory.
--
-- LUATORCH_CUTORCH chooses: 'gpu' takes the GPU backend (a CUDA device and NVRTC, pip install
-- 'luatorch[cuda]') or fails saying why; 'cpu' the CPU backend; 'auto', the default, takes the GPU backend when
-- the driver shows a device and the backend starts, else the CPU backend (saying once on stderr why a present
-- GPU was not taken). cutorch.backend says which it is. The rest of this comment is the CPU backend; gpu.lua says what changes on a GPU.
--
-- torch.CudaTensor and the other Cuda types are real tensor types of their
-- own (ids 8..15 in the C core, see native/include/lt_core.h): they print,
-- save and load under cutorch's class names, refuse to mix with CPU tensors
-- in math as cutorch did, and convert with :cuda() / :float() / :type(). Their
-- elements live in host memory and every kernel runs the CPU code, in the
-- element type of the name (CudaTensor is float32, as on a GPU).
--
-- "Devices" are numbered 1..n; n is LUATORCH_CUDA_DEVICES if set, else the
-- number of cores. The current device is per thread (per LuaJIT state, as each
-- DataParallelTable worker has its own); streams and BLAS handles are
-- accepted and do nothing, since every operation completes before it returns.
-- A real CUDA backend keeps this API and gives the same types device memory.
require 'torch'
local ffi = require 'ffi'

cutorch = cutorch or {}
local cutorch = cutorch
if cutorch._loaded then return cutorch end
cutorch._loaded = true

-- ---------------------------------------------------------------- the types

for name, class in pairs(torch._cudaClasses) do rawset(torch, name, class) end
torch._cudaEnabled = true

-- t:cuda(), t:cudaLong(), ..., on every tensor type (cutorch's converter names)
local converters = {cuda = 'torch.CudaTensor', cudaDouble = 'torch.CudaDoubleTensor',
                    cudaByte = 'torch.CudaByteTensor', cudaChar = 'torch.CudaCharTensor',
                    cudaShort = 'torch.CudaShortTensor', cudaInt = 'torch.CudaIntTensor',
                    cudaLong = 'torch.CudaLongTensor', cudaHalf = 'torch.CudaHalfTensor'}
for method, typename in pairs(converters) do
   torch._tensorMethods[method] = function(self) return self:type(typename) end
end
torch._installTensorMethods()

-- A Cuda tensor lives on the device that was current when it was made; on
-- the CPU every device shares the host memory, so getDevice reports the current one
-- (0 for a tensor without memory, as cutorch's).
for _, ty in ipairs(torch._allTypes) do
   if ty.cuda then
      local mt = torch.getmetatable(ty.tensorname)
      rawset(mt, 'getDevice', function(t) return t._c.storage ~= nil and cutorch.getDevice() or 0 end)
      rawset(torch.getmetatable(ty.storagename), 'getDevice', function() return cutorch.getDevice() end)
   end
end

-- ---------------------------------------------------------------- devices

local function deviceCount()
   local env = os.getenv('LUATORCH_CUDA_DEVICES')
   if env and env ~= '' then
      local n = tonumber(env)
      if not n or n < 1 or n ~= math.floor(n) then
         error('LUATORCH_CUDA_DEVICES must be a whole number >= 1, got "' .. env .. '"', 0)
      end
      return n
   end
   return math.max(1, torch.getnumthreads())
end
local nDevices = deviceCount()
local currentDevice = 1

local function checkDevice(fname, d)
   if type(d) ~= 'number' or d ~= math.floor(d) or d < 1 or d > nDevices then
      error(string.format('%s: device %s is out of range: this machine shows %d CPU device%s ' ..
                          '(set LUATORCH_CUDA_DEVICES to show more)', fname, tostring(d), nDevices,
                          nDevices == 1 and '' or 's'), 3)
   end
end

function cutorch.getDeviceCount() return nDevices end
function cutorch.getDevice() return currentDevice end
function cutorch.setDevice(d)
   checkDevice('cutorch.setDevice', d)
   currentDevice = d
end

function cutorch.withDevice(d, fn)
   local previous = currentDevice
   cutorch.setDevice(d)
   local results = table.pack(pcall(fn))
   currentDevice = previous
   if not results[1] then error(results[2], 0) end
   return table.unpack(results, 2, results.n)
end

-- Host memory (what the "device" tensors use): MemAvailable and MemTotal in bytes.
local function hostMemory()
   local f = io.open('/proc/meminfo', 'r')
   if not f then return 0, 0 end
   local text = f:read('*a')
   f:close()
   local total = tonumber(text:match('MemTotal:%s*(%d+)')) or 0
   local free = tonumber(text:match('MemAvailable:%s*(%d+)')) or tonumber(text:match('MemFree:%s*(%d+)')) or 0
   return free * 1024, total * 1024
end

function cutorch.getMemoryUsage(d)
   if d ~= nil then checkDevice('cutorch.getMemoryUsage', d) end
   return hostMemory()
end

function cutorch.getDeviceProperties(d)
   checkDevice('cutorch.getDeviceProperties', d)
   local free, total = hostMemory()
   -- major/minor 0: no CUDA compute capability; code that tests for >= 3.5 takes its portable path
   return {name = 'luatorch CPU device ' .. d, totalGlobalMem = total, freeGlobalMem = free, major = 0, minor = 0,
           multiProcessorCount = 1, warpSize = 1, maxThreadsPerBlock = 1, clockRate = 0, integrated = 1,
           canMapHostMemory = 1, computeMode = 0, deviceOverlap = 0, kernelExecTimeoutEnabled = 0,
           memPitch = 0, regsPerBlock = 0, sharedMemPerBlock = 0, textureAlignment = 0, totalConstMem = 0,
           pciBusID = 0, pciDeviceID = d - 1, pciDomainID = 0}
end

function cutorch.getRuntimeVersion() return 0 end
function cutorch.getDriverVersion() return 0 end
function cutorch.deviceReset() end
function cutorch.isCachingAllocatorEnabled() return false end
function cutorch.setHeapTracking() end
function cutorch.isManagedPtr() return false end
function cutorch.isManaged() return false end
-- torch.CudaHalfTensor exists (its math through float, lua/torch/Half.lua); no half instructions are used
cutorch.hasHalf = true
function cutorch.hasHalfInstructions() return false end
function cutorch.hasFastHalfInstructions() return false end

-- Every operation has finished when it returns: nothing to wait for.
function cutorch.synchronize() end
function cutorch.synchronizeAll() end
function cutorch._sleep() end

-- Peer access: all devices share the host memory.
function cutorch.getPeerToPeerAccess() return true end
function cutorch.setPeerToPeerAccess() end
function cutorch.getKernelPeerToPeerAccess() return true end
function cutorch.setKernelPeerToPeerAccess() end

-- Streams and BLAS handles on the CPU backend: numbered as cutorch numbered
-- them (0 is the default stream), and without effect (the GPU backend's
-- streams are in gpu.lua).
local nStreams, currentStream, nBlasHandles, currentBlasHandle = 0, 0, 1, 1
function cutorch.reserveStreams(n) nStreams = math.max(nStreams, n or 0) end
function cutorch.getNumStreams() return nStreams end
function cutorch.setStream(s)
   if type(s) ~= 'number' or s < 0 or s > nStreams then
      error(string.format('cutorch.setStream: stream %s not reserved (reserveStreams(%s) first)', tostring(s),
                          tostring(s)), 2)
   end
   currentStream = s
end
function cutorch.getStream() return currentStream end
function cutorch.setDefaultStream() currentStream = 0 end
function cutorch.streamWaitFor() end
function cutorch.streamWaitForMultiDevice() end
function cutorch.streamBarrier() end
function cutorch.streamBarrierMultiDevice() end
function cutorch.streamSynchronize() end
function cutorch.waitOn() end
function cutorch.reserveBlasHandles(n) nBlasHandles = math.max(nBlasHandles, n or 1) end
function cutorch.getNumBlasHandles() return nBlasHandles end
function cutorch.setBlasHandle(h) currentBlasHandle = h end
function cutorch.getBlasHandle() return currentBlasHandle end

-- One random generator serves every device (the CPU one), so the seeds are torch's.
function cutorch.manualSeed(s) torch.manualSeed(s) end
function cutorch.manualSeedAll(s) torch.manualSeed(s) end
function cutorch.seed() return torch.seed() end
function cutorch.seedAll() return torch.seed() end
function cutorch.initialSeed() return torch.initialSeed() end
function cutorch.getRNGState() return torch.getRNGState() end
function cutorch.setRNGState(s) return torch.setRNGState(s) end

-- cutorch's state pointer, which C extensions took; there is none.
function cutorch.getState() return nil end

-- Staged methods exist on the GPU backend only (gpu.lua): here every method runs on the host anyway.
function cutorch.setHostFallback() end
function cutorch.hostFallbacks() return {} end
-- What the GPU backend asked of its GPUs (gpu.lua); its names in lt_cuda.h's order (LT_CUDA_COUNT_*). None here.
cutorch._deviceCallCountNames = {'launches', 'libraryOps', 'hostWaits', 'hostCopies', 'deviceAllocs'}
function cutorch.deviceCallCounts()
   local out = {}
   for _, name in ipairs(cutorch._deviceCallCountNames) do out[name] = 0 end
   return out
end

-- Pinned ("host") tensors are plain CPU tensors here. Their sizes: numbers, a LongStorage or a table of numbers.
local function sizeOf(...)
   local a = ...
   if a == nil then return torch.LongStorage() end
   if torch.isStorage(a) then return a end
   return torch.LongStorage(type(a) == 'table' and a or {...})
end
cutorch._hostTensorSize = sizeOf
cutorch._hostTensorTypes = {'Float', 'Double', 'Int', 'Long', 'Byte', 'Char', 'Short', 'Half'}
for _, name in ipairs(cutorch._hostTensorTypes) do
   cutorch['createCudaHost' .. name .. 'Tensor'] = function(...) return torch[name .. 'Tensor'](sizeOf(...)) end
end
cutorch.createCudaHostTensor = cutorch.createCudaHostFloatTensor
-- copyAsync is copy (every copy here is synchronous; the GPU backend queues pinned ones)
cutorch._copyAsyncTypes = {'Cuda', 'CudaDouble', 'CudaInt', 'CudaLong', 'CudaByte', 'CudaChar', 'CudaShort', 'CudaHalf',
                           'Float', 'Double', 'Int', 'Long', 'Byte', 'Char', 'Short', 'Half'}
for _, name in ipairs(cutorch._copyAsyncTypes) do
   local mt = torch.getmetatable('torch.' .. name .. 'Tensor')
   if mt and not mt.copyAsync then mt.copyAsync = mt.copy end
end

-- ---------------------------------------------------------------- the backend

cutorch.backend = 'cpu'
local choice = torch._cutorchChoice()
if torch._cutorchTriesGpu() then
   local ok, why = pcall(require('cutorch.gpu'), cutorch)
   if not ok then
      -- a half-started backend (device storages on) cannot fall back: only a refusal before that can
      if choice == 'gpu' or torch.C.lt_cuda_storage_enabled() ~= 0 then
         cutorch._loaded = false
         error("require 'cutorch': the GPU backend does not start (LUATORCH_CUTORCH=" .. choice .. '): ' ..
               tostring(why), 0)
      end
      io.stderr:write("cutorch: a GPU is present but the GPU backend does not start, so the Cuda types are in " ..
                      "host memory (the CPU backend): " .. tostring(why) .. " (LUATORCH_CUTORCH=cpu says so " ..
                      "quietly, LUATORCH_CUTORCH=gpu makes it an error)\n")
   end
end

-- torch.sum(x, 1) and the other functional forms that are their method: x's own method, so that a
-- CudaHalfTensor's (through float) serves them (the GPU backend routes these so already, gpu.lua).
if cutorch.backend == 'cpu' then
   for name, fn in pairs(torch) do
      if type(fn) == 'function' and rawequal(fn, torch._tensorMethods[name]) then torch._throughMethod(name) end
   end
   -- a Cuda tensor's geometric(p) is cutorch's, p the success probability (mean 1/p), as on the GPU backend
   -- (gpu_masked.lua); Torch7's CPU geometric(p) has P(x > k) = p^k
   local geometric = torch._tensorMethods.geometric
   for _, ty in ipairs(torch._types) do
      if ty.cuda then
         torch._tensorOverrides[ty.id] = torch._tensorOverrides[ty.id] or {}
         torch._tensorOverrides[ty.id].geometric = function(self, p, ...)
            return geometric(self, type(p) == 'number' and 1 - p or p, ...)
         end
      end
   end
   torch._installTensorMethods()
end

return cutorch
