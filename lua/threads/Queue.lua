-- threads.Queue: torch/threads' bounded job queue, shared between states.
--
--   local q = threads.Queue(N [, serialization])   -- a new queue of N slots
--   local q2 = threads.Queue(q:id() [, serialization])  -- the same queue, in another state
--   q:addjob(callback, ...)     -- waits while the queue is full
--   local r1, r2 = q:dojob()    -- waits for a job, runs callback(...) here, returns its results
--   q.isempty, q.isfull (1 or 0), q.size; q:retain(), q:free()
--
-- The jobs are byte strings in C (native/src/threads.c), a closure with its arguments serialized by the
-- serialization module (threads.serialize by default; threads.sharedserialize shares tensors).
local ffi = require 'ffi'
local torch = require 'torch'
local C = torch.C

local Queue = {}
local methods = {}

local msgp, lenp = ffi.new('char*[1]'), ffi.new('int64_t[1]')

local function attach(ptr, owned, sername)
   local q = {ptr = ptr, serialize = sername or 'threads.serialize'}
   if owned then q.ptr = ffi.gc(ptr, C.lt_queue_release) end
   return setmetatable(q, Queue)
end

Queue.__index = function(self, k)
   if k == 'isempty' then return C.lt_queue_count(rawget(self, 'ptr')) == 0 and 1 or 0 end
   if k == 'isfull' then
      local p = rawget(self, 'ptr')
      return C.lt_queue_count(p) == C.lt_queue_size(p) and 1 or 0
   end
   if k == 'size' then return tonumber(C.lt_queue_size(rawget(self, 'ptr'))) end
   return methods[k]
end

function methods:id() return tonumber(ffi.cast('uintptr_t', self.ptr)) end

function methods:addjob(callback, ...)
   if type(callback) ~= 'function' then error('threads.Queue: addjob: function callback expected', 2) end
   local ser = require(self.serialize)
   local data = ser.save({fn = callback, args = {n = select('#', ...), ...}})
   if C.lt_queue_push(self.ptr, data, #data, -1) ~= 0 then error('threads.Queue: addjob: out of memory', 2) end
end

function methods:dojob()
   C.lt_queue_pop(self.ptr, msgp, lenp, -1)
   local data = ffi.string(msgp[0], lenp[0])
   C.lt_queue_msg_free(msgp[0])
   local job = require(self.serialize).load(data)
   return job.fn(unpack(job.args, 1, job.args.n))
end

-- torch/threads' explicit reference counting (a queue handle also releases its reference when collected)
function methods:retain() C.lt_queue_retain(self.ptr) end
function methods:free()
   if self.ptr == nil then return end
   ffi.gc(self.ptr, nil)
   C.lt_queue_release(self.ptr)
   self.ptr = nil
end

return setmetatable({}, {__call = function(_, n, sername)
   if type(n) ~= 'number' or n < 1 or n ~= math.floor(n) then
      error('threads.Queue: a size (>= 1) or the id of a queue expected', 2)
   end
   if n > 2 ^ 31 then -- an id: attach to the queue another state made
      local p = ffi.cast('void*', ffi.cast('uintptr_t', n))
      C.lt_queue_retain(p)
      return attach(p, true, sername)
   end
   local p = C.lt_queue_new(n)
   if p == nil then error('threads.Queue: out of memory', 2) end
   return attach(p, true, sername)
end})
