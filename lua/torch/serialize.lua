-- Tensor and Storage payloads of the .t7 format (Torch7's generic/Tensor.c
-- and generic/Storage.c write/read), and torch.save/load/serialize/deserialize.
--
--   Storage: long size, then the raw elements (one bulk copy in binary).
--   Tensor:  int nDimension, long sizes[n], long strides[n],
--            long storageOffset + 1, then writeObject(storage or nil).
-- A view writes its whole storage; storages shared by several tensors are
-- written once (the object layer keys them by their C address).
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local kinds = torch.getmetatable('torch.File')._kinds
local t7error = torch.getmetatable('torch.File')._t7error

local MAXDIM = 16
local geomType = ffi.typeof('int64_t[16]')

for _, ty in ipairs(torch._allTypes) do
   local kind = kinds[ty.hostName or ty.name]   -- cutorch wrote its types' elements as the host type's
   local smt = torch.getmetatable(ty.storagename)
   local tmt = torch.getmetatable(ty.tensorname)

   -- GPU memory (cutorch's GPU backend) is written and read through a host storage of the host type.
   local hostStorage = 'torch.' .. (ty.hostName or ty.name) .. 'Storage'

   function smt.write(self, file)
      local n = tonumber(self._c.size)
      file:writeLong(n)
      local host = torch._storageOnDevice(self) and self:type(hostStorage) or self
      file:_writeRaw(kind, host._c.data, n)
   end

   function smt.read(self, file)
      local at = file:_offset()
      local n = file:readLong()
      if n < 0 or n ~= math.floor(n) then t7error(at, 'expected a storage size, got %.0f', n) end
      file:_checkCount(n, kind, at, ty.name:lower() .. ' elements for a ' .. ty.storagename)
      self:resize(n)
      if torch._storageOnDevice(self) then
         local host = torch.getmetatable(hostStorage).__constructor(n)
         file:_readRaw(kind, host._c.data, n)
         self:copy(host)
      else
         file:_readRaw(kind, self._c.data, n)
      end
   end

   function tmt.write(self, file)
      local c = self._c
      local nd = c.ndim
      file:writeInt(nd)
      file:_writeRaw(kinds.Long, c.size, nd)
      file:_writeRaw(kinds.Long, c.stride, nd)
      file:writeLong(tonumber(c.offset) + 1)
      file:writeObject(self:storage())
   end

   function tmt.read(self, file)
      local at = file:_offset()
      local nd = file:readInt()
      if nd < 0 or nd > MAXDIM then
         t7error(at, 'expected a tensor dimension count (0..%d), got %d', MAXDIM, nd)
      end
      local geomAt = file:_offset()
      -- per call: reading the storage object below may read other tensors
      local sizebuf, stridebuf = geomType(), geomType()
      file:_checkCount(2 * nd + 1, kinds.Long, geomAt, 'longs for tensor sizes, strides and offset')
      file:_readRaw(kinds.Long, sizebuf, nd)
      file:_readRaw(kinds.Long, stridebuf, nd)
      local offAt = file:_offset()
      local offset = file:readLong() - 1
      -- geometry checks use doubles: any value beyond 2^53 is far beyond
      -- what a storage from this file can hold anyway
      for d = 0, nd - 1 do
         local sz, st = tonumber(sizebuf[d]), tonumber(stridebuf[d])
         if sz < 0 then t7error(geomAt, 'expected tensor sizes >= 0, got %.0f in dimension %d', sz, d + 1) end
         if st < 0 then t7error(geomAt, 'expected tensor strides >= 0, got %.0f in dimension %d', st, d + 1) end
      end
      -- Torch7: a size of 0 ends the dimension list (the C side does the same)
      for d = 0, nd - 1 do
         if sizebuf[d] == 0 then nd = d; break end
      end
      local nel, extent = 1, 0
      for d = 0, nd - 1 do
         local sz, st = tonumber(sizebuf[d]), tonumber(stridebuf[d])
         nel = nel * sz
         extent = extent + (sz - 1) * st
      end
      if nd == 0 then nel = 0 end
      if nel * ty.elemsize >= 2 ^ 62 then
         -- only stride-0 views can claim this much; int64 element counts would overflow
         t7error(geomAt, 'tensor of %.0f elements is too large to view', nel)
      end
      if offset < 0 then t7error(offAt, 'expected a storage offset >= 1, got %.0f', offset + 1) end
      local sAt = file:_offset()
      local storage = file:readObject()
      if storage == nil then
         if nel > 0 then
            t7error(sAt, 'expected a %s for a tensor of %.0f elements, got nil', ty.storagename, nel)
         end
         return
      end
      if torch.typename(storage) ~= ty.storagename then
         t7error(sAt, 'expected a %s for a %s, got %s', ty.storagename, ty.tensorname, torch.type(storage))
      end
      local ssize = storage:size()
      if nel > 0 and offset + extent >= ssize then
         t7error(sAt, 'tensor sizes and strides reach element %.0f, but its storage has %d', offset + extent + 1,
                 ssize)
      end
      if offset > ssize then t7error(offAt, 'storage offset %.0f is beyond the storage size %d', offset + 1, ssize) end
      torch._check(C.lt_tensor_set_storage(self._c, storage._c, offset, nd, sizebuf, stridebuf), 2)
   end
end

-- Torch7's storage:string(str) sets a Byte/Char storage from a string.
for _, name in ipairs {'torch.CharStorage', 'torch.ByteStorage'} do
   local mt = torch.getmetatable(name)
   local get = mt.string
   mt.string = function(self, str)
      if str == nil then return get(self) end
      if type(str) ~= 'string' then error('string: string expected', 2) end
      self:resize(#str)
      ffi.copy(self._c.data, str, #str)
      return self
   end
end

-- ---------------------------------------------------------------- save / load

local function checkMode(mode, allowed, fname)
   if mode ~= nil and not allowed[mode] then
      local names = {}
      for k in pairs(allowed) do names[#names + 1] = '"' .. k .. '"' end
      table.sort(names)
      error(string.format('%s: format must be %s (or nil), got %s', fname, table.concat(names, ', '),
                          tostring(mode)), 3)
   end
end

local saveModes = {binary = true, ascii = true}
local loadModes = {binary = true, ascii = true, b32 = true, b64 = true}

local function setMode(file, mode)
   if mode == 'b32' or mode == 'b64' then
      file:binary()
      file:longSize(mode == 'b32' and 4 or 8)
   elseif mode == 'ascii' then
      file:ascii()
   else
      file:binary()
   end
end

-- Run fn(file), closing the file whatever happens.
local function withFile(file, fn)
   local ok, res = pcall(fn, file)
   file:close()
   if not ok then error(res, 0) end
   return res
end

-- torch.save(path, ...) writes a file beside the target and renames it over the target once it is complete, so
-- that a save that fails (an object that cannot be written, a full disk, a killed process) leaves the file that
-- was there, and saves of one path from several threads or processes at once (dcgan.torch's data threads each
-- write the same metadata cache) leave one whole file, never an interleaving. (Torch7 truncated the file and wrote
-- into it; its threads' writes happened to be byte-identical, ours are not: LuaJIT 2.1 seeds each state's string
-- hash, so a table's keys come out in a different order in each.) A symbolic link, a hard-linked file or anything
-- but a plain file is written in place, as Torch7 did, and so is a file whose directory takes no new files.
pcall(ffi.cdef, 'int getpid(void);')
pcall(ffi.cdef, 'int chmod(const char *, unsigned int);')

local function permissionBits(text)   -- lfs's 'rw-r--r--' as mode bits
   local bits = 0
   for i = 1, 9 do
      if text:sub(i, i) ~= '-' then bits = bits + 2 ^ (9 - i) end
   end
   return bits
end

-- the attributes of what is at filename when a save may replace it by renaming (nothing there counts), else nil
local function replaceable(filename)
   local attr = require('lfs').symlinkattributes(filename)
   if attr == nil then return {} end
   if attr.mode == 'file' and attr.nlink == 1 then return attr end
end

local function openForSave(filename)
   local existing = replaceable(filename)
   if existing then
      local alive = {}   -- its address (unique among the process's Lua states while alive) names the file
      local tmp = string.format('%s.%d-%s.tmp', filename, ffi.C.getpid(), tostring(alive):match('0x(%x+)') or '0')
      local ok, file = pcall(torch.DiskFile, tmp, 'w')
      if ok then return file, tmp, existing end
   end
   return torch.DiskFile(filename, 'w')
end

function torch.save(filename, object, mode, referenced)
   checkMode(mode, saveModes, 'torch.save')
   if referenced ~= nil and type(referenced) ~= 'boolean' then
      error('torch.save: referenced must be a boolean', 2)
   end
   local file, tmp, existing = openForSave(filename)
   setMode(file, mode)
   file:referenced(referenced ~= false)
   if not tmp then
      return withFile(file, function(f) f:writeObject(object) end)
   end
   local ok, err = pcall(withFile, file, function(f) f:writeObject(object) end)
   if ok and existing.permissions then ffi.C.chmod(tmp, permissionBits(existing.permissions)) end
   if ok then ok, err = os.rename(tmp, filename) end
   if not ok then
      os.remove(tmp)
      error(err, 0)
   end
end

-- torch.load(filename, [format], [referenced], [options]); options.functions
-- = false refuses functions (LuaJIT bytecode is not verified on load:
-- malformed bytecode from an untrusted file can crash the process).
function torch.load(filename, mode, referenced, options)
   checkMode(mode, loadModes, 'torch.load')
   local file = torch.DiskFile(filename, 'r')
   setMode(file, mode)
   file:referenced(referenced ~= false)
   return withFile(file, function(f) return f:readObject(options or {}) end)
end

function torch.serializeToStorage(object, mode, referenced)
   checkMode(mode, saveModes, 'torch.serialize')
   local f = torch.MemoryFile()
   setMode(f, mode)
   f:referenced(referenced ~= false)
   f:writeObject(object)
   local storage = f:storage()
   storage:resize(storage:size() - 1)   -- drop the NUL
   f:close()
   return storage
end

function torch.serialize(object, mode, referenced)
   return torch.serializeToStorage(object, mode, referenced):string()
end

function torch.deserializeFromStorage(storage, mode, referenced, options)
   checkMode(mode, loadModes, 'torch.deserialize')
   local n = storage:size()
   local copy = torch.CharStorage(n + 1)
   if n > 0 then ffi.copy(copy._c.data, storage._c.data, n) end
   local f = torch.MemoryFile(copy, 'r')
   setMode(f, mode)
   f:referenced(referenced ~= false)
   return withFile(f, function(file) return file:readObject(options or {}) end)
end

function torch.deserialize(str, mode, referenced, options)
   if type(str) ~= 'string' then error('torch.deserialize: string expected', 2) end
   checkMode(mode, loadModes, 'torch.deserialize')
   local copy = torch.CharStorage(#str + 1)
   ffi.copy(copy._c.data, str, #str)
   local f = torch.MemoryFile(copy, 'r')
   setMode(f, mode)
   f:referenced(referenced ~= false)
   return withFile(f, function(file) return file:readObject(options or {}) end)
end
