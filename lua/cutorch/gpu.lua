-- cutorch's GPU backend: the Cuda types in GPU memory.
--
-- Installed by cutorch/init.lua when it selects the GPU (see there). From then on every storage of a Cuda
-- type is made in the current device's memory (native/src/cuda_storage.c: one caching allocator, the
-- device's default stream), and the Cuda tensor classes get methods of their own:
--   * geometry (size, view, narrow, transpose, ...) as on the CPU: it never touches the elements;
--   * copy, fill, zero, clone, type conversions, :float()/:cuda(): the C core moves the bytes between
--     host and device and converts on the device;
--   * the math the training step and optim use (pointwise with scalars and tensors, addcmul/addcdiv,
--     unary functions, whole and per-dimension reductions, addmm/mm over cuBLAS): our kernels of
--     native/cuda, through lt_cuops;
--   * every other method runs staged: the storages of its tensor arguments are copied to host memory,
--     the CPU method runs there, and what it wrote goes back to the device. Correct, slow, and counted
--     (cutorch.hostFallbacks()); the first staged call of each method says so on stderr once, and
--     LUATORCH_CUDA_FALLBACK=error makes them errors instead.
-- nn's host kernels refuse tensors in GPU memory by name (nn_need in native/src/nn_internal.h).
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local onDevice = torch._onDevice

return function(cutorch)
   check(C.lt_cuda_storage_enable(), 2)
   local nDevices
   do
      local n = ffi.new('int[1]')
      check(C.lt_cuda_device_count(n))
      nDevices = n[0]
   end

   -- ------------------------------------------------------------ devices (cutorch numbers them from 1)

   local function checkDevice(fname, d)
      if type(d) ~= 'number' or d ~= math.floor(d) or d < 1 or d > nDevices then
         error(string.format('%s: device %s is out of range: this machine has %d GPU%s', fname, tostring(d),
                             nDevices, nDevices == 1 and '' or 's'), 3)
      end
   end

   cutorch.backend = 'gpu'
   function cutorch.getDeviceCount() return nDevices end
   function cutorch.getDevice() return C.lt_cuda_storage_device() + 1 end
   function cutorch.setDevice(d)
      checkDevice('cutorch.setDevice', d)
      check(C.lt_cuda_storage_set_device(d - 1), 2)
   end
   function cutorch.withDevice(d, fn)
      local previous = cutorch.getDevice()
      cutorch.setDevice(d)
      local results = table.pack(pcall(fn))
      cutorch.setDevice(previous)
      if not results[1] then error(results[2], 0) end
      return table.unpack(results, 2, results.n)
   end

   function cutorch.getMemoryUsage(d)
      d = d or cutorch.getDevice()
      checkDevice('cutorch.getMemoryUsage', d)
      local free, total = ffi.new('int64_t[1]'), ffi.new('int64_t[1]')
      check(C.lt_cuda_mem_info(d - 1, free, total), 2)
      return tonumber(free[0]), tonumber(total[0])
   end

   function cutorch.getDeviceProperties(d)
      checkDevice('cutorch.getDeviceProperties', d)
      local p = ffi.new('lt_cuda_device_props')
      check(C.lt_cuda_device_properties(d - 1, p), 2)
      local free = cutorch.getMemoryUsage(d)
      return {name = ffi.string(p.name), totalGlobalMem = tonumber(p.total_memory), freeGlobalMem = free,
              major = p.major, minor = p.minor, multiProcessorCount = p.multiprocessors, warpSize = p.warp_size,
              maxThreadsPerBlock = p.max_threads_per_block, sharedMemPerBlock = tonumber(p.shared_memory_per_block),
              clockRate = p.clock_khz, memoryClockRate = p.memory_clock_khz, memoryBusWidth = p.memory_bus_width,
              l2CacheSize = p.l2_cache_bytes, integrated = p.integrated, pciBusID = p.pci_bus_id,
              canMapHostMemory = 1, computeMode = 0, deviceOverlap = 1}
   end

   function cutorch.getDriverVersion() return C.lt_cuda_version(C.LT_CUDA_DRIVER) end
   function cutorch.getRuntimeVersion() return C.lt_cuda_version(C.LT_CUDA_RUNTIME) end
   function cutorch.isCachingAllocatorEnabled() return true end
   function cutorch.synchronize() check(C.lt_cuda_storage_synchronize(cutorch.getDevice() - 1), 2) end
   function cutorch.synchronizeAll() check(C.lt_cuda_storage_synchronize(-1), 2) end

   -- Streams (native/src/cuda_stream.c): 0 is each device's legacy default stream, 1..n those reserved, created
   -- non-blocking as cutorch's; the current one is per thread and holds on every device. Kernels, copies, cuBLAS,
   -- cuDNN and new storages go to it. Waits are events: the host does not wait.
   local function streamNumber(fn, s, level)
      if type(s) ~= 'number' or s % 1 ~= 0 then
         error(string.format('%s: a stream number expected, got %s', fn, type(s) == 'number' and s or type(s)),
               level + 1)
      end
      return s
   end
   function cutorch.reserveStreams(n)
      check(C.lt_cuda_stream_reserve(streamNumber('cutorch.reserveStreams', n or 0, 2)), 2)
   end
   function cutorch.getNumStreams() return C.lt_cuda_stream_count() end
   function cutorch.setStream(s) check(C.lt_cuda_stream_set(streamNumber('cutorch.setStream', s, 2)), 2) end
   function cutorch.getStream() return C.lt_cuda_stream_current() end
   function cutorch.setDefaultStream() C.lt_cuda_stream_set(0) end
   function cutorch.streamSynchronize(s)
      s = s == nil and cutorch.getStream() or streamNumber('cutorch.streamSynchronize', s, 2)
      check(C.lt_cuda_stream_synchronize(cutorch.getDevice() - 1, s), 2)
   end
   -- stream `waiting` of device `wd` waits for each stream of `waited` ({s, ...}) of device `d`
   local function waitFor(fn, wd, waiting, d, waited)
      streamNumber(fn, waiting, 3)
      if type(waited) ~= 'table' then error(fn .. ': a table of streams to wait for expected', 3) end
      for _, s in ipairs(waited) do
         if d ~= wd or s ~= waiting then check(C.lt_cuda_stream_wait(wd - 1, waiting, d - 1, streamNumber(fn, s, 3)), 3) end
      end
   end
   function cutorch.streamWaitFor(waiting, waited)
      local d = cutorch.getDevice()
      waitFor('cutorch.streamWaitFor', d, waiting, d, waited)
   end
   -- waited: {[device] = {streams}}
   function cutorch.streamWaitForMultiDevice(device, waiting, waited)
      checkDevice('cutorch.streamWaitForMultiDevice', device)
      for d, streams in pairs(waited) do
         checkDevice('cutorch.streamWaitForMultiDevice', d)
         waitFor('cutorch.streamWaitForMultiDevice', device, waiting, d, streams)
      end
   end
   -- every stream of the list waits for all the others' work so far
   function cutorch.streamBarrier(streams)
      local d = cutorch.getDevice()
      for _, s in ipairs(streams) do waitFor('cutorch.streamBarrier', d, s, d, streams) end
   end
   -- streams: {[device] = {streams}}; every (device, stream) waits for all the others
   function cutorch.streamBarrierMultiDevice(streams)
      for wd, ws in pairs(streams) do
         checkDevice('cutorch.streamBarrierMultiDevice', wd)
         for _, w in ipairs(ws) do
            for d, list in pairs(streams) do waitFor('cutorch.streamBarrierMultiDevice', wd, w, d, list) end
         end
      end
   end
   function cutorch.getPeerToPeerAccess() return false end

   -- cutorch._sleep(cycles): the current stream busy for that many of the device's clock cycles (a kernel of one
   -- thread); the host does not wait. cutorch's own tests hold copies back with it.
   function cutorch._sleep(cycles)
      if type(cycles) ~= 'number' then error('cutorch._sleep: a number of cycles expected', 2) end
      local ops = C.lt_cuda_storage_ops(cutorch.getDevice() - 1)
      if ops == nil then check(-1, 2) end
      check(C.lt_cuops_sleep(ops, nil, cycles), 2)
   end

   -- cutorch.Event(): a point in the current stream's work, recorded when made; event:waitOn() makes the current
   -- stream (of the current device) wait for it, without the host waiting.
   local Event = torch.class('cutorch.Event')
   function Event:__init()
      local p = ffi.new('void*[1]')
      local d = cutorch.getDevice() - 1
      check(C.lt_cuda_event_new(d, p), 2)
      self._event = ffi.gc(p[0], C.lt_cuda_event_free)
      check(C.lt_cuda_event_record(self._event, C.lt_cuda_stream_current()), 2)
   end
   function Event:waitOn()
      check(C.lt_cuda_event_wait(self._event, cutorch.getDevice() - 1, C.lt_cuda_stream_current()), 2)
   end

   -- Pinned host tensors: FloatTensor and the like over cuMemHostAlloc'ed memory (not resizable beyond their
   -- size), and copyAsync between them and device tensors, queued on the current stream without waiting
   -- (native/src/cuda_pinned.c); read a device-to-host copy's result after cutorch.synchronize(). Other pairs
   -- copy synchronously.
   for _, name in ipairs(cutorch._hostTensorTypes) do
      cutorch['createCudaHost' .. name .. 'Tensor'] = function(...)
         local size = cutorch._hostTensorSize(...)
         local n = size:size() > 0 and 1 or 0
         for i = 1, size:size() do n = n * size[i] end
         local p = C.lt_cuda_pinned_storage_new(C['LT_' .. name:upper()], n)
         if p == nil then check(-1, 2) end
         local storage = torch.getmetatable('torch.' .. name .. 'Storage')._wrap(p)
         -- (an empty one has its empty pinned storage too, as cutorch's)
         return torch[name .. 'Tensor']():set(storage, 1, size)
      end
   end
   cutorch.createCudaHostTensor = cutorch.createCudaHostFloatTensor
   local function copyAsync(self, src)
      local rc = C.lt_cuda_copy_async(self._c, src._c)
      if rc == 1 then return self:copy(src) end
      check(rc, 2)
      return self
   end
   for _, name in ipairs(cutorch._copyAsyncTypes) do
      local mt = torch.getmetatable('torch.' .. name .. 'Tensor')
      if mt then mt.copyAsync = copyAsync end
   end

   -- The caching allocator's counters for a device: bytes allocated, reserved, cached, and its peaks.
   function cutorch.getAllocatorStats(d)
      d = d or cutorch.getDevice()
      checkDevice('cutorch.getAllocatorStats', d)
      local s = ffi.new('lt_cuda_alloc_stats')
      check(C.lt_cuda_alloc_stats_get(C.lt_cuda_storage_allocator(), d - 1, s), 2)
      local out = {}
      for _, k in ipairs {'allocated_bytes', 'requested_bytes', 'reserved_bytes', 'pending_bytes', 'cached_bytes',
                          'peak_allocated_bytes', 'peak_reserved_bytes', 'active_blocks', 'segments', 'allocs',
                          'frees', 'cache_hits', 'backend_mallocs', 'backend_frees'} do
         out[k] = tonumber(s[k])
      end
      return out
   end
   -- the device blocks no tensor holds, and the pinned host blocks no tensor holds and no copy still uses
   function cutorch.emptyCache()
      check(C.lt_cuda_alloc_empty_cache(C.lt_cuda_storage_allocator(), -1), 2)
      check(C.lt_cuda_pinned_empty_cache(), 2)
   end

   -- The seed and counter of each device's Philox4x32-10 stream (the random fills, nn.Dropout's masks,
   -- lua/cunn/gpu.lua), per Lua state, as cutorch kept a generator per device: manualSeed, seed, initialSeed and the
   -- RNG state are the current device's; manualSeedAll and seedAll set every device's.
   local philox = {}
   for d = 1, nDevices do philox[d] = {seed = torch.initialSeed(), offset = 0} end
   local function generator() return philox[cutorch.getDevice()] end
   local function seedNumber(fn, s)
      if type(s) ~= 'number' or s % 1 ~= 0 then error(fn .. ': an integer seed expected', 3) end
      return s
   end
   function cutorch.manualSeed(s)
      local g = generator()
      g.seed, g.offset = seedNumber('cutorch.manualSeed', s), 0
   end
   function cutorch.manualSeedAll(s)
      seedNumber('cutorch.manualSeedAll', s)
      for d = 1, nDevices do philox[d].seed, philox[d].offset = s, 0 end
   end
   function cutorch.initialSeed() return generator().seed end
   function cutorch.seed()
      cutorch.manualSeed(torch.random())
      return generator().seed
   end
   function cutorch.seedAll()
      cutorch.manualSeedAll(torch.random())
      return generator().seed
   end
   -- the current device's generator as a ByteTensor (its seed and counter, 8 bytes each), and back
   function cutorch.getRNGState()
      local g = generator()
      local state = torch.ByteTensor(16)
      local p = ffi.cast('int64_t*', state:data())
      p[0], p[1] = g.seed, g.offset
      return state
   end
   function cutorch.setRNGState(state)
      if torch.type(state) ~= 'torch.ByteTensor' or state:nElement() ~= 16 then
         error('cutorch.setRNGState: a ByteTensor of 16 elements (from cutorch.getRNGState) expected', 2)
      end
      local p = ffi.cast('int64_t*', state:contiguous():data())
      local g = generator()
      g.seed, g.offset = tonumber(p[0]), tonumber(p[1])
   end
   -- seed and first counter for n more draws of the current device's stream
   function cutorch._philoxDraws(n)
      local g = generator()
      local offset = g.offset
      g.offset = g.offset + n
      return g.seed, offset
   end

   -- A tensor or storage is on the device its memory is on.
   for _, ty in ipairs(torch._allTypes) do
      if ty.cuda then
         -- (0 for a tensor without memory, as cutorch's)
         rawset(torch.getmetatable(ty.tensorname), 'getDevice', function(t)
            local s = t._c.storage
            return (s ~= nil and onDevice(t)) and s.device + 1 or 0
         end)
         rawset(torch.getmetatable(ty.storagename), 'getDevice', function(s)
            return torch._storageOnDevice(s) and s._c.device + 1 or 0
         end)
      end
   end

   -- ------------------------------------------------------------ staged methods

   local fallbacks = {}      -- method name -> staged calls
   local warned = {}
   local fallbackMode = os.getenv('LUATORCH_CUDA_FALLBACK') or 'warn'
   if fallbackMode ~= 'warn' and fallbackMode ~= 'quiet' and fallbackMode ~= 'error' then
      error('LUATORCH_CUDA_FALLBACK must be warn, quiet or error, got "' .. fallbackMode .. '"', 0)
   end
   -- 'warn' (the default: one line on stderr per method, the first time), 'quiet', or 'error'
   function cutorch.setHostFallback(mode)
      if mode ~= 'warn' and mode ~= 'quiet' and mode ~= 'error' then
         error("cutorch.setHostFallback: 'warn', 'quiet' or 'error' expected, got " .. tostring(mode), 2)
      end
      fallbackMode = mode
   end
   function cutorch.hostFallbacks()
      local out = {}
      for k, v in pairs(fallbacks) do out[k] = v end
      return out
   end
   -- What the process asked of its GPUs so far (lt_cuda.h says what each count is): kernel launches, cuBLAS/cuDNN/
   -- NCCL operations, host waits (synchronizations, copies that wait), host<->device copies, cuMemAlloc calls.
   -- Differences over a training step show launches per step, hidden synchronizations, allocations per step.
   function cutorch.deviceCallCounts()
      local out = {}
      for i, name in ipairs(cutorch._deviceCallCountNames) do out[name] = tonumber(C.lt_cuda_counted(i - 1)) end
      return out
   end

   local cudaType = {}
   for _, ty in ipairs(torch._types) do if ty.cuda then cudaType[ty.id] = true end end

   -- A Cuda tensor that lives (or, empty, would live) in device memory.
   local function deviceTensor(x)
      return torch.isTensor(x) and cudaType[x._c.type] and (x._c.storage == nil or onDevice(x))
   end
   -- 'data' when one of them holds device memory, 'empty' when the device tensors among them hold none (a CPU
   -- method that resizes one would still write into the device memory it gets), else nil
   local function anyDevice(...)
      local found
      local function see(x)
         if deviceTensor(x) then found = (x._c.storage ~= nil or found == 'data') and 'data' or 'empty' end
      end
      for i = 1, select('#', ...) do
         local x = select(i, ...)
         see(x)
         if type(x) == 'table' and not torch.isTensor(x) then
            for _, y in pairs(x) do see(y) end
         end
      end
      return found
   end

   local depth = 0   -- staged calls in progress on this Lua state: inner ones run as they are
   local function key(s) return tostring(ffi.cast('uintptr_t', s)) end

   -- fn(...) with the device tensors among its arguments (and one level into table arguments) replaced by
   -- host copies of their whole storages (aliasing kept); afterwards each storage's host copy goes back,
   -- arguments take the geometry the call gave their copies, and results are mapped back to the device.
   local function runStaged(name, fn, ...)
      -- device storage key -> {dev, host}; host storage key -> the same entry; {device tensor, host tensor}
      local mirrors, ofHost, pairsOf, hostOf = {}, {}, {}, {}
      -- (one host tensor per device tensor object, so that a tensor given twice is one tensor to the CPU method,
      -- whose "the result cannot be the input" checks see it)
      local function toHost(x)
         if not deviceTensor(x) then return x end
         if hostOf[x] then return hostOf[x] end
         local c = x._c
         local m = torch._newTensor(c.type)
         if c.storage ~= nil then
            local k = key(c.storage)
            local e = mirrors[k]
            if not e then
               local host = C.lt_storage_new(c.type, c.storage.size)
               if host == nil then check(-1, 4) end
               e = {dev = c.storage, host = host}
               mirrors[k], ofHost[key(host)] = e, e
               check(C.lt_storage_copy(host, 0, c.storage, 0, c.storage.size), 4)
            end
            check(C.lt_tensor_set_storage(m._c, e.host, c.offset, c.ndim, c.size, c.stride), 4)
         end
         pairsOf[#pairsOf + 1] = {x, m}
         hostOf[x] = m
         return m
      end
      -- host memory for every Cuda storage made from here until the call's results go back
      C.lt_cuda_storage_host_scope(1)
      local n = select('#', ...)
      local args = {...}
      local mirrored, why = pcall(torch._mapArguments, args, n, toHost)
      if not mirrored then
         C.lt_cuda_storage_host_scope(-1)
         for _, e in pairs(mirrors) do C.lt_storage_release(e.host) end
         error(why, 0)
      end
      depth = depth + 1
      local results = table.pack(pcall(fn, unpack(args, 1, n)))
      C.lt_cuda_storage_host_scope(-1)
      depth = depth - 1
      local function cleanup()
         for _, e in pairs(mirrors) do C.lt_storage_release(e.host) end
      end
      if not results[1] then
         cleanup()
         error(results[2], 0)
      end
      -- the host copies go back (a storage the call resized is resized on the device first)
      for _, e in pairs(mirrors) do
         if e.host.size ~= e.dev.size then check(C.lt_storage_resize(e.dev, e.host.size), 3) end
         check(C.lt_storage_copy(e.dev, 0, e.host, 0, e.host.size), 3)
      end
      -- set device tensor d to host tensor h's geometry over the device storage h's memory stands for
      local function place(d, h)
         local hc = h._c
         if hc.storage == nil then
            C.lt_tensor_clear(d._c)
            return d
         end
         -- an argument's storage stays its own (a view stays a view of its base)
         local e = ofHost[key(hc.storage)] or mirrors[key(hc.storage)]
         local s, made = e and e.dev or nil, false
         if not s then   -- memory the call made: a new device storage with its contents
            s, made = C.lt_storage_new(hc.type, hc.storage.size), true
            if s == nil then check(-1, 4) end
            mirrors[key(hc.storage)] = {dev = s, host = hc.storage}
            C.lt_storage_retain(hc.storage)   -- released with the mirrors
            check(C.lt_storage_copy(s, 0, hc.storage, 0, hc.storage.size), 4)
         end
         check(C.lt_tensor_set_storage(d._c, s, hc.offset, hc.ndim, hc.size, hc.stride), 4)
         if made then C.lt_storage_release(s) end   -- d holds it now (and any later result on it)
         return d
      end
      local byHost = {}
      for _, p in ipairs(pairsOf) do
         place(p[1], p[2])
         byHost[p[2]] = p[1]
      end
      local function back(r)
         if torch.isTensor(r) and cudaType[r._c.type] then
            return byHost[r] or place(torch._newTensor(r._c.type), r)
         end
         if type(r) == 'table' and not torch.isTensor(r) and getmetatable(r) == nil then
            for k, v in pairs(r) do r[k] = back(v) end
         end
         return r
      end
      for i = 2, results.n do results[i] = back(results[i]) end
      cleanup()
      return unpack(results, 2, results.n)
   end

   -- a call of `name` about to run on the host: refused in the error mode, else counted (and said once)
   local function noteStaged(name, level)
      if fallbackMode == 'error' then
         error(string.format("%s has no GPU kernel yet (LUATORCH_CUDA_FALLBACK=error; unset it to run it "
                             .. "staged through host memory)", name), level + 1)
      end
      fallbacks[name] = (fallbacks[name] or 0) + 1
      if fallbackMode == 'warn' and not warned[name] then
         warned[name] = true
         io.stderr:write(string.format("cutorch: %s has no GPU kernel yet: it runs on the CPU, through host "
                                       .. "copies of its tensors' storages (cutorch.hostFallbacks() counts "
                                       .. "these; LUATORCH_CUDA_FALLBACK=quiet or error)\n", name))
      end
   end

   -- A program may make a Cuda type the default (torch.setdefaulttensortype): functions that make their
   -- results of the default type (torch.range(1, 4), torch.zeros(3)) then run staged too.
   local cudaDefault = false
   local setDefault = torch.setdefaulttensortype
   function torch.setdefaulttensortype(name)
      setDefault(name)
      cudaDefault = name:match('^torch%.Cuda') ~= nil
   end
   torch.setdefaulttensortype(torch.getdefaulttensortype())

   -- (a call whose device tensors hold no memory yet runs staged too, but copies no device data: not counted)
   local function staged(name, fn)
      return function(...)
         if depth > 0 then return fn(...) end
         local found = anyDevice(...)
         if not (cudaDefault or found) then return fn(...) end
         if cudaDefault or found == 'data' then noteStaged(name, 2) end
         return runStaged(name, fn, ...)
      end
   end
   cutorch._staged = staged

   -- ------------------------------------------------------------ the methods

   local device = require('cutorch.gpu_math')(cutorch, deviceTensor)

   -- Methods that never read or write elements, or do it only through the C core's copy, fill and resize
   -- (which handle device memory themselves).
   local direct = {}
   for name in ([[cdata clone contiguous copy data dim elementSize expand expandAs fill isContiguous
                  isSameSizeAs isSetTo isSize isTensor nDimension nElement narrow numel permute resize resizeAs
                  select set size squeeze storage storageOffset stride sub t transpose type typeAs unfold view
                  viewAs zero split chunk unsqueeze byte char short int long float double half cuda cudaDouble
                  cudaByte cudaChar cudaShort cudaInt cudaLong cudaHalf new getDevice cat repeatTensor zeros ones]]):gmatch('%S+') do
      direct[name] = true
   end
   -- a method that tries its device version fast (outside staged calls), then fallback where fast says no
   local function deviceFirst(fast, fallback)
      return function(...)
         if depth == 0 then
            local r = table.pack(fast(...))
            if r[1] then return unpack(r, 2, r.n) end
         end
         return fallback(...)
      end
   end
   -- cutorch's math ran only on the current device's tensors (THCTensor_checkGPU): a device tensor of another GPU
   -- among the arguments (one level into tables) is refused with THC's message, before anything runs. Copies,
   -- views and resizes (`direct` but fill and zero) take any device, as cutorch's did.
   local currentDevice = C.lt_cuda_storage_device
   local function otherGpu(x, dev)
      return deviceTensor(x) and x._c.storage ~= nil and x._c.storage.device ~= dev
   end
   local function sameGpu(fn)
      return function(...)
         local dev = currentDevice()
         for i = 1, select('#', ...) do
            local x = select(i, ...)
            if otherGpu(x, dev) then error('arguments are located on different GPUs', 2) end
            if type(x) == 'table' and not torch.isTensor(x) then
               for _, y in pairs(x) do
                  if otherGpu(y, dev) then error('arguments are located on different GPUs', 2) end
               end
            end
         end
         return fn(...)
      end
   end
   for _, ty in ipairs(torch._types) do
      if ty.cuda then
         local overrides = {}
         for name, fn in pairs(M) do
            if not direct[name] then
               local fallback = staged('torch.' .. ty.name .. 'Tensor:' .. name, fn)
               overrides[name] = sameGpu(device[name] and deviceFirst(device[name], fallback) or fallback)
            end
         end
         -- (fill and zero write through the C core, as copies do, but cutorch checked their tensor's GPU)
         overrides.fill, overrides.zero = sameGpu(M.fill), sameGpu(M.zero)
         torch._tensorOverrides[ty.id] = overrides
      end
   end
   torch._installTensorMethods()

   -- CudaHalfTensor's math runs on float copies of its operands (lua/torch/Half.lua): four launches and a float
   -- tensor per operand. The device versions whose kernels have Half instantiations (computing in float, rounding
   -- once to half, so the same values) serve half operands directly; other forms still go through float.
   -- (A device-method set of their own, whose operands may be half; the other classes' keep refusing half.)
   local halfMT, halfType = torch.getmetatable('torch.CudaHalfTensor'), torch._cudaHalfType.id
   local halfDevice = require('cutorch.gpu_math')(cutorch, function(x)
      return deviceTensor(x) or (torch.isTensor(x) and x._c.type == halfType and (x._c.storage == nil or onDevice(x)))
   end)
   for name in ([[add csub mul div pow cmul cdiv addcmul addcdiv sqrt rsqrt exp log abs neg sign tanh sigmoid
                  clamp sum prod mean max min norm addmm mm addmv mv addr ger]]):gmatch('%S+') do
      local fast, throughFloat = halfDevice[name], rawget(halfMT, name)
      assert(fast and throughFloat, name)
      halfMT[name] = sameGpu(deviceFirst(fast, throughFloat))
   end

   -- The pointwise functional forms and the matrix products (torch.add(r, x, y), torch.exp(x), torch.mm(a, b), ...)
   -- call their result's method (torch._throughMethods): device versions where there are. Those that are their
   -- method (torch.sum(x, 1) is x:sum(1); torch.max, torch.norm, ...) call their first argument's method, so a
   -- tensor in GPU memory gets the device version. The other functional forms run staged (their C calls take host
   -- memory); the operators have device versions for + - * / and unary minus; printing prints a host copy.
   for name, fn in pairs(torch) do
      if type(fn) == 'function' and M[name] and not direct[name] and not torch._throughMethods[name] then
         local fallback = staged('torch.' .. name, fn)
         if rawequal(fn, M[name]) then torch._throughMethod(name, fallback) else torch[name] = fallback end
      end
   end
   for name, fn in pairs(torch._tensorOps) do
      torch._tensorOps[name] = device[name] and function(a, b)
         if depth == 0 and (deviceTensor(a) or deviceTensor(b)) then
            local done, r = device[name](a, b)
            if done then return r end
         end
         return staged('tensor ' .. name, fn)(a, b)
      end or staged('tensor ' .. name, fn)
   end
   if torch._tensorToString then torch._tensorToString = staged('tostring', torch._tensorToString) end
   -- The functions of the torch package that are no tensor method but run C on their tensor arguments (LAPACK,
   -- the alias sampler, the random constructors' result-first forms) run staged too: they crashed on device
   -- memory until 2026-12-05, since the loop above only sees methods.
   for _, name in ipairs {'gesv', 'gels', 'trtrs', 'symeig', 'eig', 'svd', 'inverse', 'potrf', 'potrs', 'potri',
                          'pstrf', 'qr', 'geqrf', 'orgqr', 'ormqr', 'multinomialAliasSetup', 'multinomialAlias'} do
      if torch[name] then torch[name] = staged('torch.' .. name, torch[name]) end
   end
   -- cutorch's alias tables: for device probabilities J is a CudaLongTensor of 0-based aliases (the CPU's are
   -- 1-based); the draws are 1-based on both
   local aliasSetup, aliasDraw = torch.multinomialAliasSetup, torch.multinomialAlias
   function torch.multinomialAliasSetup(probs, state)
      if not deviceTensor(probs) then return aliasSetup(probs, state) end
      local r = aliasSetup(probs, state)   -- (staged: the tables it fills are copies of state)
      state = state or {}
      state[1] = (torch.type(r[1]) == 'torch.CudaLongTensor' and r[1] or r[1]:cudaLong()):add(-1)
      state[2] = r[2]
      return state
   end
   function torch.multinomialAlias(output, state, gen)
      if type(state) == 'table' and deviceTensor(state[1]) then state = {state[1] + 1, state[2]} end
      return aliasDraw(output, state, gen)
   end
   -- torch.rand/randn/randperm into a device result (given first, or made of the default type when a program
   -- set that to a Cuda one) draw on the host, from torch's generator, into a host tensor that is then copied
   -- in (even an empty result: staging would not see it)
   for _, name in ipairs {'rand', 'randn', 'randperm'} do
      local fn = torch[name]
      torch[name] = function(a, ...)
         if depth > 0 then return fn(a, ...) end
         local r, args
         if torch.isTensor(a) then
            if not deviceTensor(a) then return fn(a, ...) end
            r, args = a, table.pack(...)
         else
            if not cudaDefault then return fn(a, ...) end
            r, args = torch.Tensor(), table.pack(a, ...)
         end
         noteStaged('torch.' .. name, 2)
         local ty = torch._typesById[r._c.type]
         local host = fn(torch[ty.hostName .. 'Tensor'](), unpack(args, 1, args.n))
         return r:resize(host:size()):copy(host)
      end
   end
end
