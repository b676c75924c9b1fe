-- torch.MemoryFile([mode = 'rw']) or torch.MemoryFile(charStorage, [mode]):
-- a torch.File over a CharStorage. As in Torch7 the storage holds the
-- contents plus a terminating NUL: a given storage must end with 0, and
-- :storage() returns the contents followed by one NUL.
local torch = ...
local ffi = require 'ffi'
local C = torch.C

local MemoryFile, File = torch.class('torch.MemoryFile', 'torch.File')

local modes = {r = {true, false}, w = {false, true}, rw = {true, true}}

function MemoryFile:__init(a, b)
   local storage, mode
   if torch.isStorage(a) then
      storage, mode = a, b
   else
      mode = a
   end
   mode = mode or 'rw'
   local m = modes[mode]
   if not m then error("torch.MemoryFile: file mode should be 'r', 'w' or 'rw'", 3) end
   if storage then
      if torch.typename(storage) ~= 'torch.CharStorage' then
         error('torch.MemoryFile: CharStorage expected', 3)
      end
      local n = storage:size()
      if n == 0 or ffi.cast('char*', storage._c.data)[n - 1] ~= 0 then
         error('torch.MemoryFile: provided CharStorage must be terminated by 0', 3)
      end
   else
      storage = torch.CharStorage(1)
   end
   File._initFile(self, m[1], m[2])
   self._storage = storage
   self._len = storage:size() - 1
end

local function data(self) return ffi.cast('uint8_t*', self._storage._c.data) end

-- Room for n more bytes at the position (plus the NUL), growing by doubling.
local function reserve(self, n)
   local need = self._pos + n + 1
   local have = tonumber(self._storage._c.size)
   if need > have then
      local cap = math.max(need, have * 2, 64)
      torch._check(C.lt_storage_resize(self._storage._c, cap), 3)
   end
end

function MemoryFile:_rawread(ptr, n)
   local left = self._len - self._pos
   if n > left then n = left end
   if n > 0 then ffi.copy(ptr, data(self) + self._pos, n) end
   self._pos = self._pos + n
   return n
end

function MemoryFile:_rawwrite(src, n)
   if n == 0 then return 0 end
   reserve(self, n)
   ffi.copy(data(self) + self._pos, src, n)
   self._pos = self._pos + n
   if self._pos > self._len then self._len = self._pos end
   return n
end

function MemoryFile:_getc()
   if self._pos >= self._len then return nil end
   local c = data(self)[self._pos]
   self._pos = self._pos + 1
   return c
end

function MemoryFile:_ungetc() self._pos = self._pos - 1 end
function MemoryFile:_seek() end
function MemoryFile:_flush() end
function MemoryFile:_close() end

-- The contents followed by a NUL, as a CharStorage (shared with the file).
function MemoryFile:storage()
   if not self._open then error('storage: attempt to use a closed file', 2) end
   torch._check(C.lt_storage_resize(self._storage._c, self._len + 1), 2)
   data(self)[self._len] = 0
   return self._storage
end
