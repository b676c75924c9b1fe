-- Element-type table and small torch.* utilities shared by the other files.
local torch = ...
local ffi = require 'ffi'
local C = torch.C

-- One entry per element type, in lt_type order. `name` is Torch7's type
-- prefix (torch.<name>Tensor, torch.<name>Storage).
torch._types = {
   {name = 'Byte',   ctype = 'uint8_t', id = C.LT_BYTE,   integer = true},
   {name = 'Char',   ctype = 'int8_t',  id = C.LT_CHAR,   integer = true},
   {name = 'Short',  ctype = 'int16_t', id = C.LT_SHORT,  integer = true},
   {name = 'Int',    ctype = 'int32_t', id = C.LT_INT,    integer = true},
   {name = 'Long',   ctype = 'int64_t', id = C.LT_LONG,   integer = true},
   {name = 'Float',  ctype = 'float',   id = C.LT_FLOAT,  integer = false},
   {name = 'Double', ctype = 'double',  id = C.LT_DOUBLE, integer = false},
}
for _, ty in ipairs(torch._types) do
   ty.ptr = ffi.typeof(ty.ctype .. '*')
   ty.tensorname = 'torch.' .. ty.name .. 'Tensor'
   ty.storagename = 'torch.' .. ty.name .. 'Storage'
   ty.elemsize = ffi.sizeof(ty.ctype)
   torch._types[ty.name] = ty
end
-- lt_type id -> entry (ids are 0-based)
torch._typesById = {}
for _, ty in ipairs(torch._types) do torch._typesById[ty.id] = ty end

-- Raise the native library's last error message as a Lua error at `level`.
function torch._check(rc, level)
   if rc ~= 0 then error(ffi.string(C.lt_errmsg()), (level or 1) + 1) end
end

local function addressof(obj)
   local s = tostring(obj):match('0x%x+')
   return s and tonumber(s)
end

-- torch.pointer: a number identifying the object. Tensors and storages give
-- their C struct address, so two Lua handles on one storage compare equal
-- (serialization keys shared storages this way, as Torch7 did).
function torch.pointer(obj)
   if type(obj) == 'cdata' then
      if torch.isStorage(obj) then return tonumber(ffi.cast('uintptr_t', obj._c)) end
      return tonumber(ffi.cast('uintptr_t', ffi.cast('void*', obj)))
   end
   return addressof(obj)
end

function torch.setnumthreads(n)
   n = tonumber(n)
   if not n or n < 1 then error('torch.setnumthreads: positive number expected', 2) end
   C.lt_set_num_threads(math.floor(n))
end

function torch.getnumthreads()
   return C.lt_get_num_threads()
end

-- ctype id -> true, filled by Storage.lua and Tensor.lua
torch._storageCTypes = {}
torch._tensorCTypes = {}

function torch.isStorage(obj)
   return type(obj) == 'cdata' and torch._storageCTypes[tonumber(ffi.typeof(obj))] == true
end

function torch.isTensor(obj)
   return type(obj) == 'cdata' and torch._tensorCTypes[tonumber(ffi.typeof(obj))] == true
end

-- Torch7's torch.include(package, file): run a file of a package.
function torch.include(pkg, file)
   local path = assert(package.searchpath(pkg .. '.' .. file:gsub('%.lua$', ''), package.path),
                       'torch.include: cannot find ' .. pkg .. '/' .. file)
   return dofile(path)
end

-- Whether the native library declares and exports `name` (indexing a missing
-- FFI symbol raises, so probe it protected).
function torch._hasC(name)
   local ok, f = pcall(function() return C[name] end)
   return ok and f ~= nil
end
