-- The optimized DataParallelTable path: one job per device per iteration.
--
--   loss, output = dpt:forwardBackward(input, target, criterion [, scale])
--
-- does forward, criterion and backward for the whole batch. With
-- dpt:implementation('optimized') (or nn.DataParallelTable(dim, flat, nccl,
-- {implementation = 'optimized'})) each worker, in one job:
--   1. copies replica 1's flat parameters into its own if they changed (the
--      lazy sync, done in parallel instead of serially on the main thread);
--   2. narrows its slice of the shared input/target directly (no copies);
--   3. runs forward, its own copy of the criterion and backward. Its loss and
--      gradOutput are scaled by n_i / N when the criterion averages
--      (sizeAverage, the default), so the sum over devices of the losses and
--      of the gradients equals the criterion over the whole batch, exactly
--      as the baseline (criterion on the concatenated output);
--   4. writes its output/gradInput slices straight into dpt.output /
--      dpt.gradInput (shared storages);
--   5. reduces: after a barrier, worker i sums chunk i of every replica's
--      flat gradient into replica 1's (and zeroes the others' chunk).
-- With a bucket hook (dpt:onGradientBucket) step 5 is per bucket instead:
-- the flat gradient is cut at top-level module boundaries into buckets of at
-- least opts.size elements; when the last device finishes the backward of
-- the layers a bucket covers, that device sums the bucket over replicas and
-- the main thread calls hook(offset, count, view) for it (offset 1-based in
-- the flat gradient, view = its narrow), e.g. to start mpi.iallreduce while
-- the backward of earlier layers is still running; dpt:waitGradients()
-- waits for what the hooks returned. On GPUs the hook runs with a stream of
-- its own current on the first GPU (the highest reserved one, reserved if
-- none is), made to wait for an event recorded right after the bucket's sum:
-- its staging copies wait for that sum alone, not for the backward kernels
-- the devices queued after it.
-- On GPUs with useNCCL (a GPU per replica, no bucket hook), steps 1 and 5 are
-- NCCL's broadcast and reduce of the flat parameters and gradients, started by
-- the main thread around the devices' jobs.
-- dpt:implementation('baseline') makes forwardBackward the Torch7 sequence
-- (forward, criterion on replica 1's side, backward, star reduction).
local DataParallelTable = ...

function DataParallelTable:implementation(name)
   if name == nil then return self._implementation or 'baseline' end
   assert(name == 'baseline' or name == 'optimized', "implementation: 'baseline' or 'optimized' expected")
   self._implementation = name
   if name == 'optimized' then self.flattenParams = true end
   return self
end

-- hook(offset, count, view) -> handle; opts.size (elements per bucket, default 2^20),
-- opts.wait(handle) used by waitGradients.
function DataParallelTable:onGradientBucket(hook, opts)
   opts = opts or {}
   self._bucketHook = hook
   self._bucketSize = opts.size or 2 ^ 20
   self._bucketWait = opts.wait
   self._opt = nil
   return self
end

-- Sum the gradients across MPI ranks bucket by bucket, overlapped with the backward.
function DataParallelTable:allreduceGradients(mpi, opts)
   opts = opts or {}
   return self:onGradientBucket(function(_, _, view) return mpi.iallreduce(view, opts.mpi) end,
                                {size = opts.size, wait = mpi.wait})
end

function DataParallelTable:waitGradients()
   local pending = self._bucketHandles or {}
   self._bucketHandles = {}
   if self._bucketWait then
      for _, h in ipairs(pending) do self._bucketWait(h) end
   end
end

-- Buckets over replica 1's flat gradient: {offset (0-based), count, firstChild},
-- ascending; cut at the top-level children of a Sequential.
local function makeBuckets(dpt, size)
   local m = dpt.modules[1]
   local total = dpt.flattenedParams[1][2]:nElement()
   local base = dpt.flattenedParams[1][2]:storageOffset()
   if torch.type(m) ~= 'nn.Sequential' then return {{0, total, 1}} end
   local starts = {}   -- child index -> first flat element of its parameters
   for j, child in ipairs(m.modules) do
      local w = child:parameters()
      if w and #w > 0 then
         local lo = math.huge
         for _, t in ipairs(w) do lo = math.min(lo, t:storageOffset() - base) end
         starts[#starts + 1] = {j, lo}
      end
   end
   local buckets, hi = {}, total
   for k = #starts, 1, -1 do
      local j, lo = starts[k][1], starts[k][2]
      if hi - lo >= size or k == 1 then
         if k == 1 then lo = 0 end
         table.insert(buckets, 1, {lo, hi - lo, j})
         hi = lo
      end
   end
   return buckets
end

-- The per-device job (runs in worker i, or serially in the Basic impl):
-- it must not use locals of this file (it is sent as bytecode).
local function deviceJob(m, i, a)
   local ffi = require 'ffi'
   local C = torch.C
   local used, dim = a.used, a.dim
   local barrier = a.barrier and ffi.cast('void*', a.barrier)
   local chan = a.chan and ffi.cast('void*', a.chan)
   local gpus = a.gpus   -- the replicas' devices when they are GPUs (else nil: host memory)
   local ty = a.grads[1]._c.type   -- a host type, or a Cuda type in host memory (cutorch on the CPU)
   local elem = ty % 8 == C.LT_FLOAT and 4 or 8
   local function ptr(t) return ffi.cast('char*', t._c.storage.data) + tonumber(t._c.offset) * elem end

   -- elements [from, to) of every replica's flat gradient summed into replica 1's, the others zeroed
   local function sumRange(from, to)
      if to <= from then return end
      if not gpus then
         local srcs = ffi.new('void*[?]', used)
         for k = 1, used do srcs[k - 1] = ptr(a.grads[k]) end
         C.lt_sum_buffers(ty, ptr(a.grads[1]), srcs, used, from, to, 1)
         return
      end
      -- on GPUs: each other replica's range comes over to replica 1's device (a peer copy into this
      -- worker's buffer there) and is added by a kernel there
      local n = to - from
      local g1 = a.grads[1]:narrow(1, from + 1, n)
      for k = 2, used do
         local gk = a.grads[k]:narrow(1, from + 1, n)
         if gpus[k] == gpus[1] then
            cutorch.withDevice(gpus[1], function() g1:add(gk) end)
         else
            local buf = cutorch.withDevice(gpus[1], function()
               local b = _G.dptPeerBuffer
               if not b or torch.type(b) ~= torch.type(g1) or b:getDevice() ~= gpus[1] then
                  b = g1.new()
                  _G.dptPeerBuffer = b
               end
               if b:nElement() < n then b:resize(n) end
               return b:narrow(1, 1, n)
            end)
            buf:copy(gk)
            cutorch.withDevice(gpus[1], function() g1:add(buf) end)
         end
         cutorch.withDevice(gpus[k], function() gk:zero() end)   -- (cutorch's math: the current GPU's tensors)
      end
   end

   -- x on this replica's device, in its type for host Float/Double (as the baseline's slices)
   local function here(x, slot)
      if not (gpus and torch.isTensor(x)) then return x end
      local want = torch.type(x)
      if not want:match('^torch%.Cuda') then
         if want ~= 'torch.FloatTensor' and want ~= 'torch.DoubleTensor' then return x end
         want = torch.type(a.grads[1])
      elseif x:getDevice() == gpus[i] then
         return x
      end
      _G[slot] = _G[slot] or {}
      local b = _G[slot][i]
      if not b or torch.type(b) ~= want or b:getDevice() ~= gpus[i] then
         b = torch.getmetatable(want).new()
         _G[slot][i] = b
      end
      return b:resize(x:size()):copy(x)
   end

   local ts = ffi.new('lt_timer_timespec')
   local function clock()
      ffi.C.lt_timer_clock_gettime(1, ts)
      return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
   end
   local times = {}
   local function body()
      -- on GPUs, the caller's stream: after the copies it queued for this device there
      if a.stream and C.lt_cuda_stream_set(a.stream) ~= 0 then error(ffi.string(C.lt_errmsg()), 0) end
      local t0 = clock()
      if a.phase == 'reduce' then
         local P = a.grads[1]:nElement()
         local c = math.ceil(P / used)
         sumRange((i - 1) * c, math.min(P, i * c))
         times.reduce = clock() - t0
         return nil, nil, times
      end
      local N = a.N
      local per = math.floor(N / a.D)
      local extra = N - per * a.D
      local start, len
      if i <= extra then start, len = (i - 1) * (per + 1) + 1, per + 1
      else start, len = extra * (per + 1) + (i - 1 - extra) * per + 1, per end
      local x = here(a.input:narrow(dim, start, len), 'dptInput')
      local y = torch.isTensor(a.target) and here(a.target:narrow(dim, start, len), 'dptTarget') or a.target
      -- per replica: the serial impl runs every replica in one Lua state
      _G.dptCriterion = _G.dptCriterion or {}
      if a.crit then _G.dptCriterion[i] = a.crit:clone() end
      local crit = _G.dptCriterion[i]
      if a.sync and i > 1 then a.params[i]:copy(a.params[1]) end
      local t1 = clock()
      times.sync = t1 - t0
      local out = m:forward(x)
      local avg = crit.sizeAverage
      if avg == nil and crit.nll then avg = crit.nll.sizeAverage end
      local w = (avg ~= false) and len / N or 1
      local loss = crit:forward(out, y) * w
      local go = crit:backward(out, y)
      if w ~= 1 then go:mul(w) end
      -- backward, child by child for a Sequential so finished buckets can be reduced early
      local buckets = a.buckets
      local nextB = buckets and #buckets or 0
      local counts = buckets and ffi.cast('int64_t*', a.counts._c.storage.data)
      local function finish(b)
         if C.lt_atomic_add(counts + (b - 1), 1) == used then
            local bk = buckets[b]
            sumRange(bk[1], bk[1] + bk[2])
            -- on GPUs: the point on replica 1's device where the sum is done, for the hook's stream to wait for
            if a.events and C.lt_cuda_event_record(ffi.cast('void*', a.events[b]), C.lt_cuda_stream_current()) ~= 0 then
               error(ffi.string(C.lt_errmsg()), 0)
            end
            C.lt_chan_push(chan, b)
         end
      end
      if buckets and torch.type(m) == 'nn.Sequential' then
         local mods = m.modules
         local cur = go
         for j = #mods, 1, -1 do
            cur = mods[j]:backward(j > 1 and mods[j - 1].output or x, cur, a.scale)
            while nextB >= 1 and buckets[nextB][3] >= j do finish(nextB); nextB = nextB - 1 end
         end
         m.gradInput = cur
      else
         m:backward(x, go, a.scale)
      end
      while nextB >= 1 do finish(nextB); nextB = nextB - 1 end
      if a.gradInput then a.gradInput:narrow(dim, start, len):copy(m.gradInput) end
      local outRet
      if a.output then a.output:narrow(dim, start, len):copy(out) else outRet = out end
      local t2 = clock()
      times.fb = t2 - t1
      if barrier and not buckets then
         if C.lt_barrier_wait(barrier) ~= 0 then return nil, nil, nil end
         local t3 = clock()
         times.wait = t3 - t2
         local P = a.grads[1]:nElement()
         local c = math.ceil(P / used)
         sumRange((i - 1) * c, math.min(P, i * c))
         times.reduce = clock() - t3
      end
      return loss, outRet, times
   end

   local res = {pcall(body)}
   if not res[1] then
      -- let the other devices and the main thread stop waiting, then fail
      if barrier then C.lt_barrier_abort(barrier) end
      if chan then C.lt_chan_push(chan, -1) end
      error(res[2], 0)
   end
   return res[2], res[3], res[4]
end

local ffi = require 'ffi'
local C = torch.C

local function addr(p) return tonumber(ffi.cast('uintptr_t', p)) end

-- Synchronization objects for `used` devices (recreated after an abort).
function DataParallelTable:_optState(used)
   local o = self._opt
   if o and o.used == used and not o.aborted then return o end
   if o then self:_freeOpt() end
   o = {used = used}
   o.barrier = ffi.gc(C.lt_barrier_new(used), C.lt_barrier_free)
   o.chan = ffi.gc(C.lt_chan_new(), C.lt_chan_free)
   o.critSent = {}
   self._opt = o
   return o
end

function DataParallelTable:_freeOpt()
   self._opt = nil
end

function DataParallelTable:forwardBackward(input, target, criterion, scale)
   if self:implementation() == 'baseline' then
      local output = self:forward(input)
      local t = self:_tick()
      local loss = criterion:forward(output, target)
      local gradOutput = criterion:backward(output, target)
      self:_tick('criterion', t)
      self:backward(input, gradOutput, scale)
      if self._bucketHook then
         local g = self.flattenedParams and self.flattenedParams[1][2]
         if not g then
            local _, gp = self.modules[1]:parameters()
            assert(gp and #gp == 1, 'onGradientBucket needs flattened parameters (flattenParams=true)')
            g = gp[1]
         end
         self._bucketHandles = self._bucketHandles or {}
         table.insert(self._bucketHandles, self._bucketHook(1, g:nElement(), g))
      end
      return loss, output
   end
   return self:_forwardBackwardOptimized(input, target, criterion, scale)
end

function DataParallelTable:_forwardBackwardOptimized(input, target, criterion, scale)
   -- the main side's tensors (output, gradInput) on replica 1's device
   return self:_onFirstDevice(self._forwardBackwardOptimizedHere, self, input, target, criterion, scale)
end

function DataParallelTable:_forwardBackwardOptimizedHere(input, target, criterion, scale)
   self.flattenParams = true
   if not self:hasFlattenedParameters() then self:flattenParameters() end
   local D = #self.gpuAssignments
   local dim = self.dimension
   local N = input:size(dim)
   local used = math.min(D, N)
   local o = self:_optState(used)
   local hook = self._bucketHook
   if hook and not o.buckets then
      o.buckets = makeBuckets(self, self._bucketSize)
      o.counts = torch.LongTensor(#o.buckets)
   end
   local gpus = self:_devices()
   if hook and gpus and not o.events then
      -- an event per bucket on the first GPU, and the hooks' stream there
      o.events, o.eventAddrs = {}, {}
      for b = 1, #o.buckets do
         local p = ffi.new('void*[1]')
         if C.lt_cuda_event_new(gpus[1] - 1, p) ~= 0 then error(ffi.string(C.lt_errmsg()), 2) end
         o.events[b] = ffi.gc(p[0], C.lt_cuda_event_free)
         o.eventAddrs[b] = addr(p[0])
      end
      if cutorch.getNumStreams() == 0 then cutorch.reserveStreams(1) end
      o.hookStream = cutorch.getNumStreams()
   end
   if o.counts then o.counts:zero() end
   local params, grads = {}, {}
   for k, f in ipairs(self.flattenedParams) do params[k], grads[k] = f[1], f[2] end
   -- outputs go straight into self.output when its shape is known from the last call
   local outShape = o.outShape
   local output
   if outShape then
      outShape[dim] = N
      self.output = torch.isTensor(self.output) and torch.type(self.output) == o.outType and self.output
                    or torch.getmetatable(o.outType).__constructor()
      output = self.output:resize(torch.LongStorage(outShape))
   end
   if self.gradInput then
      self.gradInput = torch.isTensor(self.gradInput) and torch.type(self.gradInput) == torch.type(input)
                       and self.gradInput or input.new()
      self.gradInput:resizeAs(input)
   end
   -- with NCCL (useNCCL, replicas on distinct GPUs, every replica busy): its broadcast before and its reduce
   -- after the devices' jobs replace the in-job parameter copies and the chunked sum (buckets keep theirs)
   local nccl = not hook and used == D and self:_nccl() ~= nil
   if nccl and self.needsSync then
      self:_ncclFlat('bcast')
      self.needsSync = false
   end
   local base = {input = input, target = target, dim = dim, N = N, D = D, used = used, scale = scale or 1,
                 sync = self.needsSync, params = params, grads = grads, output = output,
                 gradInput = self.gradInput, buckets = hook and o.buckets or nil, counts = hook and o.counts or nil,
                 chan = hook and addr(o.chan) or nil, phase = 'fb', gpus = gpus,
                 events = hook and o.eventAddrs or nil, stream = gpus and cutorch.getStream() or nil}
   local threaded = self.impl.post ~= nil
   if threaded and not hook and not nccl then base.barrier = addr(o.barrier) end
   local losses, outs, wtimes = {}, {}, {}
   -- device i's arguments: a plain copy of base (the serializer writes plain
   -- fields), plus the criterion when that worker has not got this one yet
   local function argsFor(i)
      local a = {}
      for k, v in pairs(base) do a[k] = v end
      if o.critSent[i] ~= criterion then a.crit = criterion; o.critSent[i] = criterion end
      return a
   end
   local handles = self._bucketHandles or {}
   self._bucketHandles = handles
   local function runHooks()
      local g1 = grads[1]
      local v = ffi.new('int64_t[1]')
      for _ = 1, #o.buckets do
         C.lt_chan_pop(o.chan, v, -1)
         local b = tonumber(v[0])
         if b < 0 then return false end
         local bk = o.buckets[b]
         local view = g1:narrow(1, bk[1] + 1, bk[2])
         if o.events then
            local before = cutorch.getStream()
            cutorch.setStream(o.hookStream)
            local ok, h = pcall(function()
               if C.lt_cuda_event_wait(o.events[b], gpus[1] - 1, o.hookStream) ~= 0 then
                  error(ffi.string(C.lt_errmsg()), 0)
               end
               return hook(bk[1] + 1, bk[2], view)
            end)
            cutorch.setStream(before)
            if not ok then error(h, 0) end
            handles[#handles + 1] = h
         else
            handles[#handles + 1] = hook(bk[1] + 1, bk[2], view)
         end
      end
      return true
   end
   local function dispatch()
      if threaded then
         local pool = self.impl:_setup()
         for i = 1, used do
            pool:addjob(i, function(f, idx, args) return f(_G.module, idx, args) end,
                        function(loss, out, tm) losses[i], outs[i], wtimes[i] = loss, out, tm end, deviceJob, i, argsFor(i))
         end
         local ok = true
         if hook then ok = runHooks() end
         pool:synchronize()
         if not ok then error('forwardBackward: a device failed', 0) end
      else
         local rets = self.impl:exec(function(m, i) return {deviceJob(m, i, argsFor(i))} end, used)
         for i = 1, used do losses[i], outs[i], wtimes[i] = rets[i][1], rets[i][2], rets[i][3] end
         if hook then
            runHooks()
         elseif not nccl then
            base.phase = 'reduce'
            local red = self.impl:exec(function(m, i) return select(3, deviceJob(m, i, base)) end, used)
            for i = 1, used do wtimes[i].reduce = red[i].reduce end
         end
      end
   end
   self._othersZero = false
   local ok, err = pcall(function()
      dispatch()
      if nccl then
         self:_ncclFlat('reduce')
         for k = 2, D do nn.DataParallelTable._zeroOnItsDevice(grads[k]) end
      end
   end)
   if not ok then
      -- the barrier and channel may hold this call's leftovers: new ones next time
      o.aborted = true
      error(err, 0)
   end
   local loss = 0
   for i = 1, used do loss = loss + losses[i] end
   if self._times then
      -- the slowest device's phases (they run side by side)
      local worst = {}
      for i = 1, used do
         for k, v in pairs(wtimes[i] or {}) do worst[k] = math.max(worst[k] or 0, v) end
      end
      for k, v in pairs(worst) do self._times['device_' .. k] = (self._times['device_' .. k] or 0) + v end
   end
   if not output then
      self.output = self:_concat(self.output, outs)
      local sz = self.output:size():totable()
      o.outShape, o.outType = sz, torch.type(self.output)
   end
   criterion.output = loss
   self.needsSync = true
   -- every chunk or bucket of replicas 2..D was summed into replica 1 and zeroed
   self._othersZero = true
   return loss, self.output
end
