-- 'threads.sharedserialize': like threads.serialize, but storages (and so
-- tensors, which are written as geometry + storage) cross states by pointer:
-- the writer takes a reference (lt_storage_retain) and the reader adopts it
-- as a new handle over the same memory, so a write on one side is seen on the
-- other. Both sides must be in the same process (they are: threads.Threads).
local torch = require 'torch'
local ffi = require 'ffi'
local C = torch.C

local mts = {}
-- every storage type: half ones too (torch._types leaves Half and CudaHalf out: they have no math of their own)
for _, ty in ipairs(torch._allTypes) do mts[#mts + 1] = torch.getmetatable(ty.storagename) end

local function sharedWrite(self, file)
   C.lt_storage_retain(self._c)
   file:writeDouble(tonumber(ffi.cast('uintptr_t', self._c)))
end

local function sharedRead(self, file)
   local p = ffi.cast('lt_storage*', ffi.cast('uintptr_t', file:readDouble()))
   -- self is a fresh empty storage handle: point it at the shared one (the
   -- handle's finalizer releases whatever _c holds)
   local old = self._c
   self._c = p
   C.lt_storage_release(old)
end

local function around(fn, ...)
   local saved = {}
   for i, mt in ipairs(mts) do
      saved[i] = {mt.write, mt.read}
      mt.write, mt.read = sharedWrite, sharedRead
   end
   local res = {pcall(fn, ...)}
   for i, mt in ipairs(mts) do mt.write, mt.read = saved[i][1], saved[i][2] end
   if not res[1] then error(res[2], 0) end
   return unpack(res, 2, table.maxn(res))
end

return require('threads.serialize').make(around)
