-- torch.<Type>Storage: an FFI handle (struct TH<Type>Storage { lt_storage *_c; })
-- on a reference-counted C storage. Several handles (and tensors, and numpy
-- views) may share one storage. Handles are cdata, like Torch7's userdata:
-- type() is not 'table', and `#s` gives the size.
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

local release_fn = ffi.cast('void(*)(void*)', C.lt_storage_release)
local floatToHalf = C.lt_float_to_half

-- Element writes: Half storages hold binary16 bits (reads: ty.numberAt, utils.lua).
local function identity(v) return v end

local function fileExists(path)
   local f = io.open(path, 'rb')
   if f then f:close() end
   return f ~= nil
end

-- A storage in GPU memory (LT_STORAGE_DEVICE of lt_cuda_storage.h): no host address for its elements.
local function onDevice(s) return bit.band(s._c.flags, 8) ~= 0 end
torch._storageOnDevice = onDevice
local elementBuf = ffi.new('double[1]')

local storageTypes = torch._allTypes

for _, ty in ipairs(storageTypes) do
   local mt = {}       -- the class table (torch.getmetatable(name)): methods
   local methods = {}
   local ptrtype = ty.ptr
   local toElement = ty.half and floatToHalf or identity
   local numberAt = ty.numberAt
   local name = ty.storagename
   local hostName = 'torch.' .. (ty.hostName or ty.name) .. 'Storage'   -- a Cuda type's host counterpart
   local handleName = 'TH' .. ty.name .. 'Storage'
   ffi.cdef(string.format('typedef struct %s { lt_storage *_c; } %s;', handleName, handleName))
   local ffimt = {}    -- the FFI metatable (locked once metatype'd)
   local Handle = ffi.metatype(handleName, ffimt)
   torch._registerCType(Handle, name)
   torch._storageCTypes[tonumber(Handle)] = true

   -- Wrap a C storage pointer we own one reference to.
   local function wrap(ptr)
      return ffi.gc(Handle(ptr), C.lt_storage_release_ref)
   end

   local function new(size)
      local p = C.lt_storage_new(ty.id, size or 0)
      if p == nil then error(ffi.string(C.lt_errmsg()), 3) end
      return wrap(p)
   end

   local function ctor(a, b, c, d)
      if a == nil then return new(0) end
      -- Storage(filename [, shared [, size [, sharedMem]]]): a memory-mapped file. A single
      -- string that names no file makes a Byte/Char storage of its bytes (a luatorch extension).
      if type(a) == 'string' and (b ~= nil or not (ty.name == 'Byte' or ty.name == 'Char') or fileExists(a)) then
         if c ~= nil and (type(c) ~= 'number' or c < 0 or c ~= math.floor(c)) then
            error(name .. '(filename, shared, size): size must be a non-negative integer', 2)
         end
         local p = C.lt_storage_new_mapped(ty.id, a, b and 1 or 0, d and 1 or 0, c or 0)
         if p == nil then error(name .. ': ' .. ffi.string(C.lt_errmsg()), 2) end
         return wrap(p)
      end
      if type(a) == 'number' then
         if a < 0 or a ~= math.floor(a) then error(name .. ': invalid size ' .. tostring(a), 2) end
         return new(a)
      end
      if torch.isStorage(a) then
         -- Storage(storage, offset=1, size=rest): a view of another storage's memory,
         -- which keeps the other storage alive.
         if torch.typename(a) ~= name then error(name .. ': storage of the same type expected', 2) end
         local offset = (b or 1) - 1
         local n = c or (tonumber(a._c.size) - offset)
         if offset < 0 or n < 0 or offset + n > tonumber(a._c.size) then
            error(name .. ': view out of range of the storage', 2)
         end
         C.lt_storage_retain(a._c)
         local p = C.lt_storage_new_foreign(ty.id, ffi.cast(ptrtype, a._c.data) + offset, n,
                                            release_fn, a._c)
         p.flags = C.LT_STORAGE_MAPPED + C.LT_STORAGE_FOREIGN
         return wrap(p)
      end
      if type(a) == 'table' and ty.hostName then
         local s = new(#a)   -- GPU memory (cutorch's GPU backend): the values through a host storage
         if onDevice(s) then return methods.copy(s, torch.getmetatable(hostName).__constructor(a)) end
      end
      if type(a) == 'table' then
         local s = new(#a)
         local d = ffi.cast(ptrtype, s._c.data)
         for i = 1, #a do
            local v = a[i]
            if type(v) ~= 'number' then error(name .. ': table of numbers expected', 2) end
            d[i - 1] = toElement(v)
         end
         return s
      end
      if type(a) == 'string' and (ty.name == 'Byte' or ty.name == 'Char') then
         local s = new(#a)
         ffi.copy(s._c.data, a, #a)
         return s
      end
      error(name .. ': invalid arguments: expected [size | table | storage [offset [size]] | '
            .. 'filename [shared [size [sharedMem]]]]', 2)
   end

   torch._newclass(name, mt, ctor)
   mt.new = ctor   -- Torch7's s.new(n), as t.new(...) for tensors
   mt.__factory = function() return new(0) end
   mt._wrap = wrap
   mt._ty = ty

   -- GPU memory (cutorch's GPU backend): elements go through the driver, tables through a host copy
   local function host(self) return onDevice(self) and methods.type(self, hostName) or self end

   function methods.size(self) return tonumber(self._c.size) end
   function methods.data(self) return ffi.cast(ptrtype, self._c.data) end
   function methods.cdata(self) return self._c end
   function methods.elementSize() return ty.elemsize end

   function methods.resize(self, n)
      if type(n) ~= 'number' or n < 0 then error('resize: non-negative size expected', 2) end
      check(C.lt_storage_resize(self._c, n), 2)
      return self
   end

   function methods.fill(self, v)
      check(C.lt_storage_fill(self._c, v), 2)
      return self
   end

   function methods.zero(self) return methods.fill(self, 0) end

   function methods.copy(self, src)
      if torch.isStorage(src) then
         if src._c.size ~= self._c.size then
            error(string.format('copy: storage sizes do not match (%d and %d)',
                                tonumber(self._c.size), tonumber(src._c.size)), 2)
         end
         check(C.lt_storage_copy(self._c, 0, src._c, 0, src._c.size), 2)
      elseif type(src) == 'table' then
         if #src ~= self:size() then error('copy: table size does not match storage size', 2) end
         if onDevice(self) then return methods.copy(self, torch.getmetatable(hostName).__constructor(src)) end
         local d = ffi.cast(ptrtype, self._c.data)
         for i = 1, #src do d[i - 1] = toElement(src[i]) end
      else
         error('copy: storage or table expected', 2)
      end
      return self
   end

   function methods.totable(self)
      if onDevice(self) then return host(self):totable() end
      local t, d = {}, ffi.cast(ptrtype, self._c.data)
      for i = 0, tonumber(self._c.size) - 1 do t[i + 1] = numberAt(d, i) end
      return t
   end

   function methods.string(self)
      if ty.name ~= 'Byte' and ty.name ~= 'Char' then error('string: only for Byte and Char storages', 2) end
      if onDevice(self) then return host(self):string() end
      return ffi.string(self._c.data, self._c.size)
   end

   function methods.type(self, tname)
      if tname == nil then return name end
      if tname == name then return self end
      local target = torch.getmetatable(tname)
      if not target then error('type: unknown storage type ' .. tostring(tname), 2) end
      local out = target.__constructor(self:size())
      check(C.lt_storage_copy(out._c, 0, self._c, 0, self._c.size), 2)
      return out
   end

   for _, other in ipairs(storageTypes) do
      methods[other.name:lower()] = function(self) return methods.type(self, other.storagename) end
   end

   function methods.isSharedWith(self, other)
      return torch.isStorage(other) and self._c == other._c
   end

   for k, v in pairs(methods) do mt[k] = v end

   ffimt.__index = function(self, k)
      local m = mt[k]
      if m ~= nil then return m end
      if type(k) == 'number' then
         local c = self._c
         if k < 1 or k > c.size or k ~= math.floor(k) then
            error(string.format('index %s out of bounds for a storage of size %d', tostring(k), tonumber(c.size)), 2)
         end
         if onDevice(self) then
            check(C.lt_cuda_storage_get(c, k - 1, elementBuf), 2)
            return elementBuf[0]
         end
         return numberAt(c.data, k - 1)
      end
      return nil
   end

   ffimt.__newindex = function(self, k, v)
      if type(k) == 'number' then
         local c = self._c
         if k < 1 or k > c.size or k ~= math.floor(k) then
            error(string.format('index %s out of bounds for a storage of size %d', tostring(k), tonumber(c.size)), 2)
         end
         if onDevice(self) then return check(C.lt_cuda_storage_set(c, k - 1, v), 2) end
         ffi.cast(ptrtype, c.data)[k - 1] = toElement(v)
      else
         error(string.format('cannot set field %s of a %s', tostring(k), name), 2)
      end
   end

   ffimt.__len = function(self) return tonumber(self._c.size) end

   -- Handles on one C storage are equal, as Torch7's userdata on one
   -- THStorage were (t:storage() == t:storage()).
   ffimt.__eq = function(a, b)
      return torch.isStorage(a) and torch.isStorage(b) and a._c == b._c
   end

   ffimt.__tostring = function(self)
      local n = self:size()
      local lines = {}
      if n > 0 then
         -- Half prints through a float copy
         local t = torch.Tensor and (ty.half and torch.FloatTensor(self:float()) or torch[ty.name .. 'Tensor'](self))
         if t and torch._formatVector then
            lines[1] = torch._formatVector(t)
         else
            for i = 1, n do lines[#lines + 1] = ' ' .. tostring(self[i]) end
            lines = {table.concat(lines, '\n')}
         end
      end
      lines[#lines + 1] = string.format('[%s of size %d]', name, n)
      return table.concat(lines, '\n') .. '\n'
   end
   -- Torch7's classes expose their printer as a method too: s:__tostring__()
   mt.__tostring__ = ffimt.__tostring
end

-- Torch7 exposes the same constructors under the default-type alias
-- torch.Storage, set by torch.setdefaulttensortype.
