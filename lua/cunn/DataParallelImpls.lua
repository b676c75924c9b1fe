-- The two ways nn.DataParallelTable runs a closure on every replica
-- (Torch7's cunn names, which appear in saved files):
--   nn.DataParallelTable.Basic    serially on the calling thread; replica 1 is
--                                 dpt.modules[1], the others are its clones;
--                                 with GPUs (dpt:_devices()), each replica is
--                                 made and run with its device current;
--   nn.DataParallelTable.Threads  one worker (pthread + LuaJIT state) per device,
--                                 specific mode, tensors shared by pointer;
--                                 worker i holds its replica in _G.module and,
--                                 with GPUs, keeps its device current.
-- exec(closure, n, ...) runs closure(replica_i, i, ...) for i = 1..n and returns the
-- first results as a table. Closures sent to workers must be serializable:
-- upvalues are plain data, tensors, or package tables.
local Impls = ...
local threads   -- loaded on first use

local BasicImpl = torch.class('nn.DataParallelTable.Basic', Impls)
local ThreadsImpl = torch.class('nn.DataParallelTable.Threads', Impls)

function BasicImpl:__init(dpt)
   self.dpt = dpt
   self.modules = {}
end

function BasicImpl:exec(closure, n, ...)
   local dpt = self.dpt
   n = n or #dpt.gpuAssignments
   self.modules[1] = dpt.modules[1]
   local res = {}
   local gpus = dpt:_devices()
   for i = 1, n do
      if gpus then
         res[i] = dpt._runOn(gpus[i], function(...)
            if not self.modules[i] then self.modules[i] = dpt.modules[1]:clone() end
            return closure(self.modules[i], i, ...)
         end, ...)
      else
         if not self.modules[i] then self.modules[i] = dpt.modules[1]:clone() end
         res[i] = closure(self.modules[i], i, ...)
      end
   end
   return res
end

-- The replicas no longer match replica 1 (type, apply, load): re-clone lazily.
function BasicImpl:applyChanges()
   self.modules = {}
end

-- replica 1 was changed on the main side (flattened): nothing to resend here
function BasicImpl:replicaOneChanged() end

function BasicImpl:close() end

function BasicImpl:__write(file)
   local obj = {}
   for k, v in pairs(self) do if k ~= 'modules' then obj[k] = v end end
   file:writeObject(obj)
end

function BasicImpl:__read(file)
   local obj = file:readObject()
   for k, v in pairs(obj) do self[k] = v end
   self.modules = {}
end

function ThreadsImpl:__init(dpt, initFunc, syncCopies)
   self.dpt = dpt
   self.initFunc = initFunc
   self.syncCopies = syncCopies
end

function ThreadsImpl:_setup()
   if not self.__threads then
      threads = threads or require 'threads'
      local prev = threads.Threads.serialization()
      threads.Threads.serialization('threads.sharedserialize')
      -- the workers load what defines the model's classes here (cudnn.* for fb.resnet.torch models)
      local pkgs = {}
      for _, name in ipairs {'cudnn', 'tds'} do
         if package.loaded[name] then pkgs[#pkgs + 1] = name end
      end
      -- and use the same default tensor type (modules make buffers with torch.Tensor())
      local deftype = torch.getdefaulttensortype()
      local ok, pool = pcall(threads.Threads, #self.dpt.gpuAssignments,
                             function()
                                require 'cunn'
                                for _, p in ipairs(pkgs) do require(p) end
                                torch.setdefaulttensortype(deftype)
                             end,
                             self.initFunc)
      threads.Threads.serialization(prev)
      if not ok then error(pool, 0) end
      pool:specific(true)
      self.__threads = pool
      self.replicasReady = false
   end
   local pool = self.__threads
   if not self.replicasReady then
      -- replica 1 is dpt.modules[1] (its tensors shared with the worker's copy); the others are
      -- clones made in their own worker
      local m1 = self.dpt.modules[1]
      local gpus = self.dpt:_devices()
      for i = 1, #self.dpt.gpuAssignments do
         pool:addjob(i, function(m, idx, gpu)
            -- with GPUs this worker's device stays current: its replica, buffers and kernels are there
            if gpu then cutorch.setDevice(gpu) end
            _G.module = idx == 1 and m or m:clone()
            _G.dptFlat = nil
         end, nil, m1, i, gpus and gpus[i])
         if self.syncCopies then pool:synchronize() end
      end
      pool:synchronize()
      self.replicasReady = true
      self.replicaOneDirty = false
   elseif self.replicaOneDirty then
      pool:addjob(1, function(m) _G.module = m; _G.dptFlat = nil end, nil, self.dpt.modules[1])
      pool:synchronize()
      self.replicaOneDirty = false
   end
   return pool
end

-- On GPUs a worker runs its job on the caller's current stream (cutorch's index, on the worker's device), so
-- that its kernels are ordered after the copies the caller queued for it there. (The jobs go to the workers as
-- bytecode, without upvalues: they set it themselves.)
local function callerStream(dpt)
   return dpt:_devices() and cutorch.getStream() or false
end

function ThreadsImpl:exec(closure, n, ...)
   n = n or #self.dpt.gpuAssignments
   local pool = self:_setup()
   local res = {}
   local s = callerStream(self.dpt)
   for i = 1, n do
      pool:addjob(i, function(c, idx, st, ...) if st then cutorch.setStream(st) end return c(_G.module, idx, ...) end,
                  function(r) res[i] = r end, closure, i, s, ...)
   end
   pool:synchronize()
   return res
end

-- Post closure(replica_i, i, ...) to worker i for i = 1..n without waiting.
function ThreadsImpl:post(closure, n, endcallback, ...)
   local pool = self:_setup()
   local s = callerStream(self.dpt)
   for i = 1, n do
      pool:addjob(i, function(c, idx, st, ...) if st then cutorch.setStream(st) end return c(_G.module, idx, ...) end,
                  function(...) endcallback(i, ...) end, closure, i, s, ...)
   end
   return pool
end

function ThreadsImpl:applyChanges()
   self.replicasReady = false
end

function ThreadsImpl:replicaOneChanged()
   self.replicaOneDirty = true
end

function ThreadsImpl:close()
   if self.__threads then
      local pool = self.__threads
      self.__threads = nil
      pool:terminate()
   end
end

function ThreadsImpl:__write(file)
   local obj = {}
   for k, v in pairs(self) do
      if k ~= '__threads' and k ~= 'replicasReady' and k ~= 'replicaOneDirty' then obj[k] = v end
   end
   file:writeObject(obj)
end

function ThreadsImpl:__read(file)
   local obj = file:readObject()
   for k, v in pairs(obj) do self[k] = v end
end
