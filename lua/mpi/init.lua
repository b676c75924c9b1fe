-- mpi: collectives on Torch tensors across the ranks of an MPI job, in the
-- style of TorchMPI.
--
--   local mpi = require 'mpi'
--   mpi.rank(), mpi.size(), mpi.barrier()
--   mpi.allreduce(t [, {algorithm='auto'|'mpi'|'ring'|'rhd'|'tree'|'multicolor'|'multicolor_ring',
--                       colors=, chunk=}])             -- in place, sum; returns t
--   local h = mpi.iallreduce(t [, opts]); ...; mpi.wait(h)
--   mpi.broadcast(t, root)                             -- root is 0-based, like mpi.rank()
--   mpi.cudaAware()        -- true/false and why: whether device tensors go to MPI without host staging
--   mpi.stagingStats()     -- how device tensors went to MPI so far (staged, or direct)
--
-- Tensors in GPU memory (cutorch's GPU backend). An MPI library that is not CUDA-aware reads host memory
-- only: a device tensor is copied to a pinned host buffer, reduced there by the algorithm asked for, and
-- copied back ("staged"). A CUDA-aware one (mpi.cudaAware(): the library's own run-time query, MPICH's
-- MPIX_GPU_query_support or Open MPI's MPIX_Query_cuda_support, MVAPICH2's MV2_USE_CUDA=1, or the override
-- LUATORCH_MPI_CUDA_AWARE=auto|0|1; the same answer on every rank, see pytorch_bridge.mpi) gets the device
-- pointer itself for the algorithms that are the library's own: 'mpi' (MPI_Allreduce, blocking and through
-- the communication thread for iallreduce) and broadcast (MPI_Bcast); and 'auto' means 'mpi' for device
-- tensors then, since the library reduces device memory its own way (NCCL/UCX/GPU kernels) while our
-- algorithms reduce with host loops. An algorithm asked for by name ('ring', 'rhd', 'tree', 'multicolor',
-- 'multicolor_ring') keeps staging, so that it never runs a host loop over device memory. Before the
-- pointer goes to MPI the current stream of the tensor's device is synchronized: MPI reads the memory when
-- it is called and knows nothing of the work still queued for it; what MPI writes is in place when the
-- call (or wait) returns. A non-contiguous device tensor goes through a contiguous copy on its device.
-- With a CUDA-aware MPI all ranks must pass device tensors to the same 'auto' collective, or all host
-- tensors (the agreement check raises 'ranks disagree on the algorithm' otherwise); cutorch's CPU backend
-- (no device memory) changes nothing.
--
-- The C library is the one pytorch_bridge.mpi builds for the MPI that mpi4py
-- loaded; Python hands over its path, the declarations (the text of
-- native/include/lt_coll.h, the same that cffi reads) and its context on
-- MPI_COMM_WORLD, so Lua and Python calls share one communicator, one
-- communication thread and one order of operations.
local ffi = require 'ffi'
local torch = require 'torch'

local cfg = package.loaded['mpi.config']
if not cfg then
   if type(python) ~= 'table' or not python.eval then
      error("mpi: start Lua through pytorch_bridge (luatorch th, Runtime) under mpiexec, " ..
            "or set package.loaded['mpi.config'] = {path=, cdef=, ctx= [, cudaAware=, cudaAwareReason=]}", 2)
   end
   local path, cdef, ctx, aware, reason =
      python.eval('__import__("pytorch_bridge.mpi", fromlist=["mpi"]).lua_config()')
   cfg = {path = path, cdef = cdef, ctx = ctx, cudaAware = aware, cudaAwareReason = reason}
end

ffi.cdef(cfg.cdef)
local C = ffi.load(cfg.path)
local ctx = ffi.cast('ltc_ctx *', ffi.cast('uintptr_t', cfg.ctx))

local mpi = {C = C}

local function check(rc, level)
   if rc ~= 0 then error(ffi.string(C.ltc_errmsg()), (level or 1) + 1) end
end

function mpi.rank() return C.ltc_rank(ctx) end
function mpi.size() return C.ltc_size(ctx) end
function mpi.barrier() check(C.ltc_barrier(ctx), 2) end
function mpi.library() return ffi.string(C.ltc_library(ctx)) end
function mpi.setTimeout(seconds) C.ltc_set_timeout(ctx, seconds) end

local cudaAware = cfg.cudaAware == true
function mpi.cudaAware() return cudaAware, cfg.cudaAwareReason or 'not told (mpi.config)' end

-- Float and Double, and cutorch's Cuda and CudaDouble (their host types': the C side sees host memory)
local T = torch._types
local dtypes = {[T.Float.id] = C.LTC_FLOAT, [T.Double.id] = C.LTC_DOUBLE}
if T.Cuda then dtypes[T.Cuda.id], dtypes[T.CudaDouble.id] = C.LTC_FLOAT, C.LTC_DOUBLE end

-- Staging of device tensors: the C side works on host memory (this MPI is not taken to read device memory), so
-- a tensor in GPU memory goes through a host copy. With cutorch's GPU backend that copy is page-locked memory
-- (the GPU copies to and from it directly, at full bus speed) from a pool per element type: a collective takes
-- the smallest free buffer that holds its tensor, or allocates one, and gives it back when its result is
-- copied back (at the end of a blocking call, at wait for iallreduce). A training loop's gradient buckets thus
-- stage in buffers allocated in its first step and reused after, however many are in flight at once.
local pool, pooled = {}, {buffers = 0, bytes = 0, reuses = 0, pageable = 0, direct = 0}

local function takePinned(host, n)
   local free = pool[host] or {}
   pool[host] = free
   local best
   for i, b in ipairs(free) do
      if b:nElement() >= n and (not best or b:nElement() < free[best]:nElement()) then best = i end
   end
   if best then
      pooled.reuses = pooled.reuses + 1
      return table.remove(free, best)
   end
   local b = cutorch['createCudaHost' .. host .. 'Tensor'](n)
   pooled.buffers, pooled.bytes = pooled.buffers + 1, pooled.bytes + n * b:elementSize()
   return b
end

-- How the collectives staged device tensors so far: pinned buffers allocated (and their bytes), stagings that
-- reused a free one, and stagings in pageable memory (no pinned memory to be had: cutorch's CPU fallback); and
-- direct: the collectives that handed device memory to a CUDA-aware MPI without staging.
function mpi.stagingStats()
   local out = {}
   for k, v in pairs(pooled) do out[k] = v end
   return out
end

-- The contiguous host-memory tensor the C side works on: t itself, or a copy to be written back into t (t not
-- contiguous, or in GPU memory), and the pool buffer holding that copy (give it back with release).
local function hostWork(t)
   if torch._onDevice(t) then
      local ty = torch._typesById[t._c.type]
      local host, n = ty.hostName or ty.name, t:nElement()
      if n > 0 and cutorch and cutorch['createCudaHost' .. host .. 'Tensor'] then
         local buf = takePinned(host, n)
         return buf:narrow(1, 1, n):view(t:size()):copy(t), {host = host, buf = buf}
      end
      pooled.pageable = pooled.pageable + 1
      return torch.getmetatable('torch.' .. host .. 'Tensor').new():resize(t:size()):copy(t)
   end
   return t:isContiguous() and t or t:contiguous()
end

-- Whether t goes to MPI as device memory: a CUDA-aware MPI and one of its own algorithms (see the header).
local function goesDirect(t, alg)
   return cudaAware and (alg == C.LTC_MPI or alg == C.LTC_AUTO) and torch._onDevice(t)
end

-- The device tensor MPI works on: t, or a contiguous copy on t's device to be written back into t; with the
-- work queued for it on the current stream done, since MPI reads the memory when called. level: the caller's
-- caller, for errors.
local function deviceWork(t, level)
   local device = t:getDevice()
   local work = t:isContiguous() and t or cutorch.withDevice(device, function() return t:contiguous() end)
   torch._check(torch.C.lt_cuda_stream_synchronize(device - 1, cutorch.getStream()), level + 1)
   pooled.direct = pooled.direct + 1
   return work
end

-- the result back into t, and the staging buffer back to its pool
local function release(t, work, staging)
   if work ~= t then t:copy(work) end
   if staging then table.insert(pool[staging.host], staging.buf) end
end

-- The tensor the C side works on (see hostWork), its staging buffer, its element type and the options as C
-- values.
local function prepare(fname, t, opts)
   if not torch.isTensor(t) then error(fname .. ': a Tensor expected, got ' .. torch.type(t), 3) end
   local dt = dtypes[t._c.type]
   if not dt then
      error(fname .. ': a FloatTensor or DoubleTensor (or CudaTensor, CudaDoubleTensor) expected, got ' ..
            torch.typename(t), 3)
   end
   opts = opts or {}
   local alg = C.ltc_algorithm_id(opts.algorithm or 'auto')
   if alg < 0 then error(fname .. ": unknown algorithm '" .. tostring(opts.algorithm) .. "'", 3) end
   local work, staging
   if goesDirect(t, alg) then
      work, alg = deviceWork(t, 3), C.LTC_MPI
   else
      work, staging = hostWork(t)
   end
   local data = work:nElement() > 0 and torch.C.lt_tensor_data(work._c) or nil
   return work, staging, data, work:nElement(), dt, alg, opts.colors or 0, opts.chunk or 0
end

function mpi.allreduce(t, opts)
   local work, staging, data, n, dt, alg, colors, chunk = prepare('allreduce', t, opts)
   local rc = C.ltc_allreduce(ctx, nil, data, n, dt, alg, colors, chunk)
   release(t, rc == 0 and work or t, staging)
   check(rc, 2)
   return t
end

function mpi.iallreduce(t, opts)
   local work, staging, data, n, dt, alg, colors, chunk = prepare('iallreduce', t, opts)
   local req = ffi.new('ltc_req *[1]')
   local rc = C.ltc_iallreduce(ctx, nil, data, n, dt, alg, colors, chunk, req)
   if rc ~= 0 then release(t, t, staging) end
   check(rc, 2)
   -- the handle keeps the tensors alive until wait
   return {req = req[0], tensor = t, work = work, staging = staging}
end

function mpi.test(h)
   if h.req == nil then return true end
   local done = ffi.new('int[1]')
   check(C.ltc_test(h.req, done), 2)
   return done[0] ~= 0
end

function mpi.wait(h)
   if h.req ~= nil then
      local req = h.req
      h.req = nil
      local rc = C.ltc_wait(req)
      release(h.tensor, rc == 0 and h.work or h.tensor, h.staging)
      check(rc, 2)
   end
   return h.tensor
end

function mpi.broadcast(t, root)
   if not torch.isTensor(t) then error('broadcast: a Tensor expected, got ' .. torch.type(t), 2) end
   root = root or 0
   local work, staging
   if goesDirect(t, C.LTC_MPI) then work = deviceWork(t, 2) else work, staging = hostWork(t) end
   local nbytes = work:nElement() * torch._typesById[work._c.type].elemsize
   local data = nbytes > 0 and torch.C.lt_tensor_data(work._c) or nil
   local rc = C.ltc_broadcast(ctx, data, nbytes, root)
   release(t, rc == 0 and work or t, staging)
   check(rc, 2)
   return t
end

return mpi
