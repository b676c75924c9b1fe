-- threads.Mutex / threads.Condition (torch/threads names): pthread objects
-- shared across states by address. The creating handle frees them when
-- collected; `threads.Mutex(id)` in another state attaches without owning.
local ffi = require 'ffi'
local torch = require 'torch'
local C = torch.C

local function kind(newfn, freefn, methods)
   local K = {}
   K.__index = K
   for k, v in pairs(methods) do K[k] = v end
   function K:id() return tonumber(ffi.cast('uintptr_t', self.ptr)) end
   function K:free()
      if self.owned and self.ptr ~= nil then
         ffi.gc(self.ptr, nil)
         freefn(self.ptr)
      end
      self.ptr = nil
   end
   return setmetatable(K, {__call = function(_, id)
      if id then return setmetatable({ptr = ffi.cast('void*', ffi.cast('uintptr_t', id))}, K) end
      local p = newfn()
      if p == nil then error('threads: out of memory', 2) end
      return setmetatable({ptr = ffi.gc(p, freefn), owned = true}, K)
   end})
end

local Mutex = kind(C.lt_mutex_new, C.lt_mutex_free, {
   lock = function(self) C.lt_mutex_lock(self.ptr) end,
   unlock = function(self) C.lt_mutex_unlock(self.ptr) end,
})

local Condition = kind(C.lt_cond_new, C.lt_cond_free, {
   -- wait(mutex [, timeout seconds]); returns false on timeout
   wait = function(self, mutex, timeout) return C.lt_cond_wait(self.ptr, mutex.ptr, timeout or -1) == 0 end,
   signal = function(self) C.lt_cond_signal(self.ptr) end,
   broadcast = function(self) C.lt_cond_broadcast(self.ptr) end,
})

return {Mutex = Mutex, Condition = Condition}
