-- nn.DataParallelTable (Torch7 cunn), with CPU workers as the "GPUs" (or GPUs, below).
--
--   local dpt = nn.DataParallelTable(1 [, flattenParams [, useNCCL]])
--   dpt:add(net, {1, 2})            -- or dpt:add(net, 1); dpt:add(other, 2) (only the first module is kept)
--   dpt:threads(function() ... end) -- optional: one worker thread + LuaJIT state per device
--
-- Torch7's semantics are kept: the input (and gradOutput) is split along
-- `dimension` with sliceRange (the extra samples go to the first replicas),
-- outputs are concatenated on replica 1's side, the criterion runs there,
-- backward sums every replica's gradients into replica 1 and zeroes the
-- others, and replica 1's parameters are copied to the others lazily at the
-- next forward (needsSync). BatchNorm statistics stay per replica. Only
-- get(1) exists; parameters()/getParameters() are replica 1's.
-- The optimized one-job-per-device path is dpt:forwardBackward (see
-- DataParallelOptimized.lua).
-- On cutorch's GPU backend, with a replica of Cuda type, the "GPUs" are GPUs:
-- replica i lives on device gpuAssignments[i] (made there, run there: the
-- serial impl switches device per replica, each worker thread sets its own),
-- slices and parameters move between devices by the driver's peer copies, and
-- output, gradInput and the reduced gradients are on gpuAssignments[1]. With
-- useNCCL (and flattenParams) and a GPU per replica, NCCL's reduce and
-- broadcast move the flat gradients and parameters instead (cuda_nccl.c).
local DataParallelTable, parent = torch.class('nn.DataParallelTable', 'nn.Container')

local Impls = {}
assert(loadfile(package.searchpath('cunn.DataParallelImpls', package.path)))(Impls)
DataParallelTable.__version = 3

function DataParallelTable:__init(dimension, flattenParams, useNCCL)
   parent.__init(self)
   if not dimension then error('must specify a dimension!') end
   self.typeStr = 'torch.FloatTensor'
   self.dimension = dimension
   self.modules = {}
   self.gpuAssignments = {}
   self.inputGpu = {}
   self.gradOutputGpu = {}
   self.outputGpu = {}
   self.gradInputGpu = {}
   self.flattenedParams = nil
   self.flattenParams = flattenParams or false
   self.needsSync = false
   self.impl = Impls.Basic(self)
   if useNCCL then
      assert(self.flattenParams, 'cannot use nccl without flattenParams')
   end
   -- NCCL reduces and broadcasts the flat gradients and parameters where the replicas are on distinct GPUs
   -- and libnccl loads (see _nccl); elsewhere the table's own reduction does
   self.usenccl = useNCCL and true or false
end

function DataParallelTable:add(module, gpus)
   if type(gpus) == 'number' then
      if #self.modules == 0 then table.insert(self.modules, module) end
      table.insert(self.gpuAssignments, gpus)
      return self
   end
   assert(torch.type(gpus) == 'table' and #gpus >= 1, 'table of GPU IDs required')
   assert(#self.modules == 0, 'add should only be called once with a table of GPU assignments')
   self.modules[1] = module
   self.gpuAssignments = gpus
   return self
end

-- The devices of the replicas (cutorch numbering) when they are GPUs: cutorch's GPU backend and a replica 1
-- of Cuda type; nil when the replicas are CPU workers. Checks the assignments against the machine.
function DataParallelTable:_devices()
   local ct = package.loaded.cutorch
   if not (ct and ct.backend == 'gpu') then return nil end
   local m = self.modules[1]
   local params = m and m:parameters()
   local ty = params and params[1] and torch.type(params[1]) or self.typeStr
   if not tostring(ty):match('^torch%.Cuda') then return nil end
   local n = ct.getDeviceCount()
   for i, g in ipairs(self.gpuAssignments) do
      if type(g) ~= 'number' or g < 1 or g > n or g ~= math.floor(g) then
         error(string.format('DataParallelTable: replica %d is assigned GPU %s, but this machine has %d GPU%s',
                             i, tostring(g), n, n == 1 and '' or 's'), 0)
      end
   end
   -- replica 1 is the module itself, which the caller's optimizer holds: it cannot move, so it must be there
   local first = self.gpuAssignments[1]
   if params and params[1] and params[1]:getDevice() ~= first then
      error(string.format('DataParallelTable: the module is on GPU %d but its first assignment is GPU %d: make ' ..
                          'the module with cutorch.setDevice(%d), or list GPU %d first', params[1]:getDevice(),
                          first, first, params[1]:getDevice()), 0)
   end
   return self.gpuAssignments
end

-- fn(...) with device d current (cutorch.withDevice), or just fn(...) when d is nil.
local function runOn(d, fn, ...)
   if not d then return fn(...) end
   local args = table.pack(...)
   return cutorch.withDevice(d, function() return fn(unpack(args, 1, args.n)) end)
end
DataParallelTable._runOn = runOn

-- t:zero() with t's GPU current (cutorch's math takes only the current device's tensors).
local function zeroOnItsDevice(t)
   local d = t.getDevice and t:getDevice() or 0
   runOn(d > 0 and d or nil, t.zero, t)
end
DataParallelTable._zeroOnItsDevice = zeroOnItsDevice

-- fn(...) on replica 1's device (the output's, gradInput's and the reduced gradients').
function DataParallelTable:_onFirstDevice(fn, ...)
   local gpus = self:_devices()
   return runOn(gpus and gpus[1], fn, ...)
end

function DataParallelTable:threads(initFunc, syncCopies)
   assert(not self.impl.__threads, 'threads already initialized')
   self.impl:close()
   self.impl = Impls.Threads(self, initFunc, syncCopies)
   -- replicas made by the previous impl are gone
   self:_replicasChanged()
   return self
end

function DataParallelTable:__tostring__()
   return 'DataParallelTable: ' .. #self.gpuAssignments .. ' x ' .. tostring(self.modules[1])
end

function DataParallelTable:get(index)
   return self.modules[index]
end

-- sliceRange(nElem, idx, splits): start and size of slice idx (1-based);
-- the first nElem % splits slices get one extra element.
function DataParallelTable:_sliceRange(nElem, idx, splits)
   local eltsPerMod = math.floor(nElem / splits)
   local numExtra = nElem - eltsPerMod * splits
   if idx <= numExtra then
      local rangeStart = (idx - 1) * (eltsPerMod + 1) + 1
      return rangeStart, eltsPerMod + 1
   end
   local rangeStart = numExtra * (eltsPerMod + 1) + (idx - 1 - numExtra) * eltsPerMod + 1
   return rangeStart, eltsPerMod
end
DataParallelTable.sliceRange = DataParallelTable._sliceRange

-- The first tensor with a dimension (an empty one in a table of inputs, as cunn's tests give, says nothing of the
-- batch), depth first; nil when there is none.
local function batchTensor(x)
   if torch.isTensor(x) then return x:dim() > 0 and x or nil end
   for _, v in ipairs(x) do
      local t = batchTensor(v)
      if t then return t end
   end
end

-- Copy each replica's slice of src into dst[i] (tables recursively); returns
-- how many replicas got a non-empty slice.
function DataParallelTable:_distribute(dst, src)
   local n = #self.gpuAssignments
   local t = batchTensor(src)
   local total = t and t:size(self.dimension) or 0
   local used = math.min(n, total)
   -- as cunn's, replicas holding Cuda tensors get their inputs on the "device": a host float tensor
   -- (fb.resnet.torch feeds pinned FloatTensors) is copied into the replicas' type
   local params = self.modules[1] and self.modules[1]:parameters()
   local replicaType = params and params[1] and torch.type(params[1])
   local onDevice = replicaType and replicaType:match('^torch%.Cuda') and torch.getmetatable(replicaType)
   local function slice(d, s, i)
      if torch.isTensor(s) and s:dim() == 0 then   -- an empty tensor: each replica gets an empty one
         return d and torch.isTensor(d) and torch.type(d) == torch.type(s) and d:resize(0) or s.new()
      end
      if torch.isTensor(s) then
         local start, len = self:_sliceRange(s:size(self.dimension), i, n)
         local want = s
         if onDevice and not torch.type(s):match('^torch%.Cuda') and (torch.type(s) == 'torch.FloatTensor' or
            torch.type(s) == 'torch.DoubleTensor' or torch.type(s) == 'torch.HalfTensor') then
            want = onDevice
         end
         d = d and torch.isTensor(d) and torch.type(d) == torch.type(want) and
             (not d.getDevice or d:getDevice() == cutorch.getDevice()) and d or want.new()
         d:resize(s:narrow(self.dimension, start, len):size()):copy(s:narrow(self.dimension, start, len))
         return d
      end
      d = type(d) == 'table' and d or {}
      for k = 1, #s do d[k] = slice(d[k], s[k], i) end
      for k = #s + 1, #d do d[k] = nil end
      return d
   end
   local gpus = self:_devices()
   for i = 1, used do dst[i] = runOn(gpus and gpus[i], slice, dst[i], src, i) end
   for i = used + 1, #dst do dst[i] = nil end
   return used
end

-- Concatenate the replica results along `dimension` into dst (tables recursively).
function DataParallelTable:_concat(dst, srcs)
   local function cat(d, parts)
      local p1 = parts[1]
      if p1 == nil then return d end   -- the replicas returned nothing (a module without gradInput)
      if torch.isTensor(p1) then
         -- the parts with elements (a replica's slice of an empty input is empty, as cunn's sumSizes skipped)
         local filled = {}
         for i = 1, #parts do if parts[i]:nElement() > 0 then filled[#filled + 1] = parts[i] end end
         d = torch.isTensor(d) and torch.type(d) == torch.type(p1) and d or p1.new()
         if #filled == 0 then return d:resize(0) end
         local size = filled[1]:size()
         local total = 0
         for i = 1, #filled do total = total + filled[i]:size(self.dimension) end
         size[self.dimension] = total
         d:resize(size)
         local off = 1
         for i = 1, #filled do
            local s = filled[i]:size(self.dimension)
            d:narrow(self.dimension, off, s):copy(filled[i])
            off = off + s
         end
         return d
      end
      d = type(d) == 'table' and d or {}
      for k = 1, #p1 do
         local sub = {}
         for i = 1, #parts do sub[i] = parts[i][k] end
         d[k] = cat(d[k], sub)
      end
      return d
   end
   return self:_onFirstDevice(cat, dst, srcs)
end

-- ---------------------------------------------------------------- timing

-- dpt:timing(true) starts accumulating seconds per phase (sync, distribute,
-- forward, backward, concat, reduce, criterion, ...); dpt:timing() returns
-- the totals and resets them.
local ffi = require 'ffi'
local ts = ffi.new('lt_timer_timespec')
local function clock()
   ffi.C.lt_timer_clock_gettime(1, ts)
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
DataParallelTable._clock = clock

function DataParallelTable:timing(on)
   if on ~= nil then
      self._times = on and {} or nil
      return self
   end
   local t = self._times or {}
   if self._times then self._times = {} end
   return t
end

-- add the time since t0 to phase `name`; returns the current time
function DataParallelTable:_tick(name, t0)
   local now = clock()
   local times = self._times
   if times and t0 then times[name] = (times[name] or 0) + (now - t0) end
   return now
end

-- ---------------------------------------------------------------- parameters

-- Every replica's {params, gradParams} lists (tensors shared with the workers).
function DataParallelTable:_replicaParams()
   if not self._params then
      self._params = self.impl:exec(function(m) local w, g = m:parameters(); return {w or {}, g or {}} end)
   end
   return self._params
end

local function sharesOneStorage(list)
   if #list == 0 then return false end
   local s = list[1]:storage()
   for i = 2, #list do if not list[i]:storage():isSharedWith(s) then return false end end
   return true
end

-- A flat view over [first param, end of last param] when they already share
-- one storage (keeps an outer getParameters valid), else getParameters().
local function flatten(m)
   local w, g = m:parameters()
   w, g = w or {}, g or {}
   if sharesOneStorage(w) and sharesOneStorage(g) then
      local function span(list)
         local first, last = list[1], list[#list]
         local n = last:storageOffset() + last:nElement() - first:storageOffset()
         return list[1].new(first:storage(), first:storageOffset(), n)
      end
      return {span(w), span(g)}
   end
   local p, dp = m:getParameters()
   return {p, dp}
end
DataParallelTable._flatten = flatten

function DataParallelTable:flattenParameters()
   self._othersZero = false
   -- replica 1 on this side (its storages are the ones the optimizer holds)
   local flat1 = self:_onFirstDevice(flatten, self.modules[1])
   self.impl:replicaOneChanged()
   local flat = self.impl:exec(function(m, i, f)
      if i == 1 then return false end
      return f(m)
   end, nil, flatten)
   flat[1] = flat1
   self.flattenedParams = flat
   self.flattenParams = true
   self._params = nil
   self.needsSync = true
end

function DataParallelTable:getParameters()
   self:flattenParameters()
   return self.flattenedParams[1][1], self.flattenedParams[1][2]
end

function DataParallelTable:hasFlattenedParameters()
   if not self.flattenedParams then return false end
   local w = self.modules[1]:parameters()
   if not w or #w == 0 then return true end
   local s = self.flattenedParams[1][1]:storage()
   for i = 1, #w do if not w[i]:storage():isSharedWith(s) then return false end end
   return true
end

function DataParallelTable:parameters()
   return self.modules[1]:parameters()
end

-- ---------------------------------------------------------------- NCCL


-- The NCCL communicators over the replicas' GPUs (one lt_nccl), or nil where NCCL does not apply: not
-- asked for (useNCCL), not on GPUs, parameters not flattened, a GPU used twice, or libnccl missing (said once,
-- in Torch7's words, and the table's own reduction runs).
function DataParallelTable:_nccl()
   if not (self.usenccl and self.flattenedParams) then return nil end
   local gpus = self:_devices()
   if not gpus or #gpus < 2 then return nil end
   local key = table.concat(gpus, ',')
   if self._ncclKey == key then return self._ncclComm end
   local devices, seen, why = ffi.new('int[?]', #gpus), {}, nil
   for i, g in ipairs(gpus) do
      devices[i - 1] = g - 1
      if seen[g] then why = 'GPU ' .. g .. ' is assigned twice, and NCCL takes one communicator per GPU' end
      seen[g] = true
   end
   local c = not why and torch.C.lt_nccl_new(#gpus, devices) or nil
   if c == nil then
      print('warning: could not load nccl, falling back to default communication (' ..
            (why or ffi.string(torch.C.lt_errmsg())) .. ')')
      self._ncclComm = nil
   else
      self._ncclComm = ffi.gc(c, torch.C.lt_nccl_free)
   end
   self._ncclKey = key
   return self._ncclComm
end

-- NCCL's reduce (which = 'reduce': every replica's flat gradient summed into replica 1's) or broadcast
-- ('bcast': replica 1's flat parameters into the others'), over all replicas; true when NCCL did it.
function DataParallelTable:_ncclFlat(which)
   local comm = self:_nccl()
   local f = self.flattenedParams
   if not comm or #f ~= #self.gpuAssignments then return false end   -- every replica flattened
   local slot = which == 'reduce' and 2 or 1
   local n = #self.gpuAssignments
   local buffers = ffi.new('void*[?]', n)
   for k = 1, n do buffers[k - 1] = torch.C.lt_tensor_data(f[k][slot]._c) end
   local t = f[1][slot]
   local fn = which == 'reduce' and torch.C.lt_nccl_reduce or torch.C.lt_nccl_bcast
   torch._check(fn(comm, t._c.type, buffers, t:nElement()), 3)
   return true
end

-- Copy replica 1's parameters to the others (serially, as Torch7's _broadcast; NCCL's broadcast with useNCCL).
function DataParallelTable:syncParameters()
   if self:_ncclFlat('bcast') then
      self.needsSync = false
      return
   end
   if self.flattenedParams then
      local f = self.flattenedParams
      for k = 2, #f do f[k][1]:copy(f[1][1]) end
   else
      local p = self:_replicaParams()
      for k = 2, #p do
         for j = 1, #p[1][1] do p[k][1][j]:copy(p[1][1][j]) end
      end
   end
   self.needsSync = false
end

-- Torch7's _reduce: a star gather-add of every replica's gradients into
-- replica 1 through one scratch buffer, then the others are zeroed.
function DataParallelTable:_reduceGradients()
   return self:_onFirstDevice(self._reduceGradientsHere, self)
end

function DataParallelTable:_reduceGradientsHere()
   if self:_ncclFlat('reduce') then
      for k = 2, #self.flattenedParams do zeroOnItsDevice(self.flattenedParams[k][2]) end
      return
   end
   local grads = {}
   if self.flattenedParams then
      for k, f in ipairs(self.flattenedParams) do grads[k] = {f[2]} end
   else
      for k, p in ipairs(self:_replicaParams()) do grads[k] = p[2] end
   end
   for k = 2, #grads do
      for j, src in ipairs(grads[k]) do
         local b = self.buffer
         if not b or torch.type(b) ~= torch.type(src) or (b.getDevice and b:getDevice() ~= grads[1][j]:getDevice()) then
            self.buffer = src.new()
         end
         self.buffer:resizeAs(src):copy(src)
         grads[1][j]:add(self.buffer)
      end
   end
   for k = 2, #grads do
      for _, g in ipairs(grads[k]) do zeroOnItsDevice(g) end
   end
end

function DataParallelTable:_prepare()
   if self.flattenParams and not self:hasFlattenedParameters() then self:flattenParameters() end
   local t = self:_tick()
   if self.needsSync then self:syncParameters() end
   self:_tick('sync', t)
end

-- ---------------------------------------------------------------- forward / backward

function DataParallelTable:updateOutput(input)
   self:_prepare()
   local t = self:_tick()
   local used = self:_distribute(self.inputGpu, input)
   t = self:_tick('distribute', t)
   self.maxUsedGpu = used
   local inputs = self.inputGpu
   self.outputGpu = self.impl:exec(function(m, i) return m:updateOutput(inputs[i]) end, used)
   t = self:_tick('forward', t)
   self.output = self:_concat(self.output, self.outputGpu)
   self:_tick('concat', t)
   return self.output
end

function DataParallelTable:__backward(method, input, gradOutput, scale)
   local used = self.maxUsedGpu or #self.gpuAssignments
   local inputs = self.inputGpu
   local t = self:_tick()
   if method == 'backward' or method == 'updateGradInput' then
      self:_distribute(self.gradOutputGpu, gradOutput)
      t = self:_tick('distribute', t)
      local gradOutputs = self.gradOutputGpu
      self.gradInputGpu = self.impl:exec(function(m, i)
         return m[method](m, inputs[i], gradOutputs[i], scale)
      end, used)
      t = self:_tick('backward', t)
      if self.gradInput then self.gradInput = self:_concat(self.gradInput, self.gradInputGpu) end
      t = self:_tick('concat', t)
   end
   if method == 'accGradParameters' then
      local gradOutputs = self.gradOutputGpu
      self:_distribute(gradOutputs, gradOutput)
      self.impl:exec(function(m, i) m:accGradParameters(inputs[i], gradOutputs[i], scale) end, used)
   end
   self._othersZero = false
   if method == 'backward' or method == 'accGradParameters' then
      self:_reduceGradients()
      self:_tick('reduce', t)
      self.needsSync = true
   end
   return self.gradInput
end

function DataParallelTable:backward(input, gradOutput, scale)
   return self:__backward('backward', input, gradOutput, scale)
end

function DataParallelTable:updateGradInput(input, gradOutput)
   return self:__backward('updateGradInput', input, gradOutput)
end

function DataParallelTable:accGradParameters(input, gradOutput, scale)
   self:__backward('accGradParameters', input, gradOutput, scale)
end

function DataParallelTable:accUpdateGradParameters()
   error('accUpdateGradParameters not supported for DataParallelTable.')
end

function DataParallelTable:share()
   error('Share not supported for DataParallelTable')
end

function DataParallelTable:clone(...)
   assert(select('#', ...) == 0, 'Sharing not supported for DataParallelTable')
   return parent.clone(self)
end

function DataParallelTable:zeroGradParameters()
   if self.flattenedParams then
      -- after an optimized step the other replicas' gradients are already zero
      local n = self._othersZero and 1 or #self.flattenedParams
      for k = 1, n do zeroOnItsDevice(self.flattenedParams[k][2]) end
   else
      self.impl:exec(function(m) m:zeroGradParameters() end)
   end
end

function DataParallelTable:updateParameters(learningRate)
   self.modules[1]:updateParameters(learningRate)
   self:syncParameters()
end

function DataParallelTable:reset(stdv)
   self.modules[1]:reset(stdv)
   self:syncParameters()
end

function DataParallelTable:training()
   parent.training(self)
   self.impl:exec(function(m) m:training() end)
end

function DataParallelTable:evaluate()
   parent.evaluate(self)
   self.impl:exec(function(m) m:evaluate() end)
end

function DataParallelTable:clearState()
   self.impl:exec(function(m) if m.clearState then m:clearState() end end)
   self.inputGpu, self.gradOutputGpu, self.outputGpu, self.gradInputGpu = {}, {}, {}, {}
   self.buffer = nil
   return parent.clearState(self)
end

function DataParallelTable:apply(callback)
   parent.apply(self, callback)
   self:_replicasChanged()
end

-- The replicas must be re-cloned from replica 1 (type, apply, load).
function DataParallelTable:_replicasChanged()
   self.impl:applyChanges()
   self._params = nil
   -- re-flattened at the next forward
   self.flattenedParams = nil
end

-- CPU "devices": Float and Double; without cutorch, the Cuda names of legacy code map to them.
local typeMap = {['torch.CudaTensor'] = 'torch.FloatTensor', ['torch.CudaHalfTensor'] = 'torch.FloatTensor',
                 ['torch.CudaDoubleTensor'] = 'torch.DoubleTensor', ['torch.FloatTensor'] = 'torch.FloatTensor',
                 ['torch.DoubleTensor'] = 'torch.DoubleTensor'}

function DataParallelTable:type(typeStr, tensorCache)
   if not typeStr then return self.typeStr end
   -- with cutorch loaded the Cuda types are real types (host memory on its CPU backend): kept as given; on its GPU
   -- backend half too (fb.resnet.torch's -precision half), and a host type refused; float on the CPU backend
   local ct = package.loaded.cutorch
   local gpu = type(ct) == 'table' and ct.backend == 'gpu'
   local t
   if gpu then   -- replicas on GPUs: the Cuda types only, as cunn's
      t = (typeStr == 'torch.CudaTensor' or typeStr == 'torch.CudaDoubleTensor' or typeStr == 'torch.CudaHalfTensor')
          and typeStr or nil
      if not t then
         error('DataParallelTable supports only torch.CudaHalfTensor or torch.CudaDoubleTensor or torch.CudaTensor ' ..
               'types (got ' .. tostring(typeStr) .. ')', 2)
      end
   else
      t = (torch._cudaEnabled and (typeStr == 'torch.CudaTensor' or typeStr == 'torch.CudaDoubleTensor'))
          and typeStr or typeMap[typeStr]
      if not t then error('DataParallelTable supports only torch.FloatTensor or torch.DoubleTensor types', 2) end
   end
   self.typeStr = t
   if self.modules[1] then self.modules[1]:type(t, tensorCache) end
   for _, key in ipairs {'output', 'gradInput'} do
      if torch.isTensor(self[key]) then self[key] = torch.getmetatable(t).__constructor() end
   end
   self.inputGpu, self.gradOutputGpu, self.outputGpu, self.gradInputGpu = {}, {}, {}, {}
   self.buffer = nil
   self:_replicasChanged()
   return self
end

-- ---------------------------------------------------------------- serialization

function DataParallelTable:__write(file)
   file:writeObject(self.gpuAssignments)
   local obj = {}
   for k, v in pairs(self) do obj[k] = v end
   if self.flattenedParams then obj.flattenedParams = {self.flattenedParams[1]} end
   obj.inputGpu, obj.gradOutputGpu, obj.outputGpu, obj.gradInputGpu = {}, {}, {}, {}
   -- run-time state: buffers, replica handles, bucket hooks
   for _, k in ipairs {'buffer', '_params', '_opt', '_bucketHook', '_bucketWait', '_bucketHandles', 'maxUsedGpu',
                       '_times', '_othersZero', '_ncclComm', '_ncclKey'} do
      obj[k] = nil
   end
   file:writeObject(obj)
   -- keeps you honest (Torch7): replicas equal replica 1 after a save
   if self.needsSync and (self.flattenedParams or self.impl.modules or self.impl.replicasReady) then
      self:syncParameters()
   end
end

function DataParallelTable:__read(file, version)
   if version < 2 then
      local var = file:readObject()
      for k, v in pairs(var) do self[k] = v end
      self.impl = self.impl or Impls.Basic(self)
      return
   end
   local gpus = file:readObject()
   if DataParallelTable.deserializeNGPUs then
      gpus = {}
      for i = 1, DataParallelTable.deserializeNGPUs do gpus[i] = i end
   end
   local var = file:readObject()
   for k, v in pairs(var) do self[k] = v end
   self.gpuAssignments = gpus
   self.impl = self.impl or Impls.Basic(self)
   self.impl.dpt = self
   -- replicas > 1 do not exist yet: they are cloned (and flattened) lazily
   if self.flattenedParams then self.flattenedParams = nil end
   self._params = nil
   self.needsSync = false
end

DataParallelTable._Impls = Impls
assert(loadfile(package.searchpath('cunn.DataParallelOptimized', package.path)))(DataParallelTable)
