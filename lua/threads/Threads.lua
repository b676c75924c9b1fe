-- threads.Threads: torch/threads' pool API over threads.c (one pthread and
-- one LuaJIT state per worker).
--
--   local pool = threads.Threads(N, init1, init2, ...)  -- each initK(threadIndex) runs in every worker, in order
--   pool:addjob([id,] callback, endcallback, ...)       -- callback(...) in a worker, endcallback(results) here
--   pool:synchronize(); pool:dojob(); pool:hasjob(); pool:specific(true); pool:terminate()
--   local pool, results = threads.Threads(N, ..., last)  -- results[k]: what `last` returned in a worker
--   pool:acceptsjob([id]); pool:haserror(); pool:isrunning()
--
-- Closures cross states serialized with their upvalues (copies); with
-- Threads.serialization('threads.sharedserialize') tensors and storages are
-- shared by pointer. An error in a job is raised here, at dojob/synchronize,
-- as "[thread i callback] message" followed by the worker's traceback.
local ffi = require 'ffi'
local torch = require 'torch'
local C = torch.C

local Threads = {}
Threads.__index = Threads
local serializationName = 'threads.serialize'

function Threads.serialization(name)
   if name ~= nil then
      assert(type(name) == 'string', 'threads.Threads.serialization: module name expected')
      require(name)
      serializationName = name
   end
   return serializationName
end

local function bootChunk(sername, nthreads)
   return string.format([[
local pool, index = ...
package.path = %q
package.cpath = %q
package.loaded['torch.native_path'] = %q
require('threads.worker')(pool, index, %q, %d)
]], package.path, package.cpath, package.loaded['torch.native_path'] or '', sername, nthreads)
end

local function new(_, N, ...)
   N = tonumber(N)
   if not N or N < 1 or N ~= math.floor(N) then error('threads.Threads: number of threads (>= 1) expected', 2) end
   local self = setmetatable({}, Threads)
   self.N = N
   self.serializationName = serializationName
   self.ser = require(serializationName)
   self.endcallbacks = {}    -- job id -> {endcallback, thread or -1}
   self.jobid = 0
   self.pending = 0
   self.dead = {}
   self.isSpecific = false
   -- each worker's kernels get its share of the cores
   local share = math.max(1, math.floor(torch.getnumthreads() / N))
   local boot = bootChunk(serializationName, share)
   local p = C.lt_pool_new(N, boot, #boot, nil)
   if p == nil then torch._check(-1, 2) end
   self.pool = ffi.gc(p, C.lt_pool_terminate)
   local inits = {...}
   -- what the last init function returned in each worker, as torch/threads gives it back
   local initResults = {}
   if #inits > 0 then
      local ok, err = pcall(function()
         for i = 1, N do
            for k, f in ipairs(inits) do
               local keep = k == #inits and function(...) initResults[#initResults + 1] = {...} end or nil
               self:_post(i, f, keep, i)
            end
         end
         self:synchronize()
      end)
      if not ok then
         -- no half-initialized pool left running
         pcall(self.terminate, self)
         error(err, 2)
      end
   end
   return self, initResults
end
setmetatable(Threads, {__call = new})

function Threads:_post(id, fn, endcallback, ...)
   if not self.pool then error('threads: the pool is terminated', 3) end
   if type(fn) ~= 'function' then error('threads: addjob: callback function expected, got ' .. type(fn), 3) end
   if id ~= -1 and self.dead[id] then error(string.format('threads: thread %d is not running', id), 3) end
   local payload = self.ser.save({fn = fn, args = {n = select('#', ...), ...}})
   self.jobid = self.jobid + 1
   local jid = self.jobid
   torch._check(C.lt_pool_addjob(self.pool, id == -1 and -1 or id - 1, jid, payload, #payload), 3)
   self.endcallbacks[jid] = {endcallback or false, id}
   self.pending = self.pending + 1
   return jid
end

function Threads:addjob(...)
   local id = -1
   local args = {n = select('#', ...), ...}
   local first = 1
   if type(args[1]) == 'number' then
      id = args[1]
      if id < 1 or id > self.N or id ~= math.floor(id) then
         error(string.format('threads: addjob: thread id must be in 1..%d, got %s', self.N, tostring(id)), 2)
      end
      first = 2
   elseif self.isSpecific then
      error('threads: addjob: a thread id is required in specific mode', 2)
   end
   return self:_post(id, args[first], args[first + 1], unpack(args, first + 2, args.n))
end

-- A worker could not start: its addressed jobs will never come back.
function Threads:_workerDied(index, msg)
   self.dead[index] = true
   local ndead = 0
   for _ in pairs(self.dead) do ndead = ndead + 1 end
   for jid, e in pairs(self.endcallbacks) do
      if e[2] == index or ndead == self.N then
         self.endcallbacks[jid] = nil
         self.pending = self.pending - 1
      end
   end
   error(string.format('[thread %d] failed to start: %s', index, msg), 0)
end

-- Run one end-callback (waiting for a result if none is ready).
function Threads:dojob()
   if self.pending == 0 or not self.pool then return end
   local m = C.lt_pool_take_result(self.pool, 1)
   local jid, status, thread = tonumber(m.id), m.status, m.thread + 1
   local data = ffi.string(m.data, m.len)
   C.lt_msg_free(m)
   if status == 2 then return self:_workerDied(thread, data) end
   local e = self.endcallbacks[jid]
   self.endcallbacks[jid] = nil
   self.pending = self.pending - 1
   local res = self.ser.load(data)
   if status == 1 then
      error(string.format('[thread %d callback] %s%s', thread, tostring(res.msg),
                          res.traceback ~= '' and ('\n' .. res.traceback) or ''), 0)
   end
   if e and e[1] then e[1](unpack(res, 1, res.n)) end
end

function Threads:hasjob()
   return self.pending > 0
end

-- The job queues grow as needed, so a job is always accepted.
function Threads:acceptsjob(idx)
   if self.isSpecific and (type(idx) ~= 'number' or idx < 1 or idx > self.N) then
      error(string.format('threads: acceptsjob: thread id in 1..%d expected in specific mode', self.N), 2)
   end
   return self.pool ~= nil
end

-- torch/threads raised job errors at dojob/synchronize long before it dropped
-- this query; nothing is ever left pending as an error.
function Threads:haserror() return false end

function Threads:isrunning() return self.pool ~= nil end

-- Wait for every job and run its end-callback; the first error is raised
-- after all the others have come back, so the pool stays usable.
function Threads:synchronize()
   local firstErr
   while self.pending > 0 do
      local ok, err = pcall(self.dojob, self)
      if not ok and not firstErr then firstErr = err end
   end
   if firstErr then error(firstErr, 0) end
end

function Threads:specific(flag)
   if flag ~= nil then
      self:synchronize()
      self.isSpecific = not not flag
   end
   return self.isSpecific
end

function Threads:terminate()
   if not self.pool then return end
   local ok, err = pcall(self.synchronize, self)
   local p = self.pool
   self.pool = nil
   ffi.gc(p, nil)
   C.lt_pool_terminate(p)
   if not ok then error(err, 0) end
end

return Threads
