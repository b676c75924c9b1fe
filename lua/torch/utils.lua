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
-- cutorch's types: the same element types under cutorch's names (float is
-- plain 'Cuda': torch.CudaTensor, torch.CudaStorage), ids = host id + 8. On a
-- machine without a GPU their elements are host memory and every kernel runs
-- the host type's code; they are in the registry from the start (so the math
-- families install their methods), but torch.Cuda* are only public once
-- `require 'cutorch'` has run, as in Torch7.
for i = 1, 7 do
   local host = torch._types[i]
   torch._types[#torch._types + 1] = {name = host.name == 'Float' and 'Cuda' or 'Cuda' .. host.name,
                                      ctype = host.ctype, id = host.id + C.LT_CUDA_BYTE, integer = host.integer,
                                      cuda = true, hostName = host.name}
end
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

-- torch.HalfStorage / torch.HalfTensor: IEEE binary16 held as uint16_t bits.
-- Not in torch._types, which the math families iterate: as in Torch7 on the
-- CPU, Half has storage, copy, views and serialization, but no math.
torch._halfType = {name = 'Half', ctype = 'uint16_t', id = C.LT_HALF, integer = false, half = true,
                   ptr = ffi.typeof('uint16_t*'), tensorname = 'torch.HalfTensor',
                   storagename = 'torch.HalfStorage', elemsize = 2}
torch._typesById[C.LT_HALF] = torch._halfType
-- cutorch's torch.CudaHalfTensor: binary16 in GPU memory (in host memory on the CPU backend). Not in
-- torch._types either: its math runs through float (lua/torch/Half.lua), as cutorch computed half in float.
torch._cudaHalfType = {name = 'CudaHalf', ctype = 'uint16_t', id = C.LT_CUDA_HALF, integer = false, half = true,
                       cuda = true, hostName = 'Half', ptr = ffi.typeof('uint16_t*'),
                       tensorname = 'torch.CudaHalfTensor', storagename = 'torch.CudaHalfStorage', elemsize = 2}
torch._typesById[C.LT_CUDA_HALF] = torch._cudaHalfType
-- Every element type with storages and serialization: torch._types, then Half and CudaHalf.
torch._allTypes = {unpack(torch._types)}
torch._allTypes[#torch._allTypes + 1] = torch._halfType
torch._allTypes[#torch._allTypes + 1] = torch._cudaHalfType

-- Lua numbers from element memory: ty.numberAt(p, i) is element i (0-based) at pointer p, a Lua number.
-- LuaJIT (GC64) keeps every Lua value in 8 bytes and tells numbers from other types by the high bits: a
-- negative NaN whose high word is 0xFFF90000 or more reads as nil, a string or table pointer, ... Its FFI
-- hands doubles read from memory to Lua unchanged (LuaJIT issue #348), so such bytes (files, all-ones
-- memory, their sums) would not be numbers; Torch7 pushed numbers with lua_pushnumber, which canonicalizes
-- NaN. So the reads look at the bits first and give those NaNs as 0/0 (x86's default NaN, a safe one).
-- Doubles: every negative NaN with a payload in its high word, as quieting a signalling one (0xFFF1...)
-- in arithmetic would make it a bad one. Floats become quiet doubles with the sign and payload kept: all
-- the bad ones come from bits 0xFF880000 and up (binary16: 0xFC40 and up), so one comparison suffices.
assert(ffi.abi('le'), 'luatorch: element reads assume a little-endian machine')
local NAN = 0 / 0
local uint32Ptr, uint16Ptr = ffi.typeof('uint32_t*'), ffi.typeof('uint16_t*')
local doublePtr, floatPtr = ffi.typeof('double*'), ffi.typeof('float*')
local halfToFloat = C.lt_half_to_float

local function doubleAt(p, i)
   if ffi.cast(uint32Ptr, p)[2 * i + 1] > 0xFFF00000 then return NAN end
   return ffi.cast(doublePtr, p)[i]
end
local function floatAt(p, i)
   if ffi.cast(uint32Ptr, p)[i] >= 0xFF880000 then return NAN end
   return ffi.cast(floatPtr, p)[i]
end
-- A binary16 value (its bits) as a Lua number.
function torch._halfNumber(h)
   if h >= 0xFC40 then return NAN end
   return halfToFloat(h)
end
local halfNumber = torch._halfNumber
local function halfAt(p, i) return halfNumber(ffi.cast(uint16Ptr, p)[i]) end

-- Integer elements: one function per C type, each compiled from its own text. Closures of one shared
-- prototype would keep the pointer type an upvalue the JIT does not specialize (t[i] about 1.5x slower).
local integerAt = {}
local function integerReader(ctype)
   integerAt[ctype] = integerAt[ctype] or assert(loadstring(string.format(
      "local ffi = ... return function(p, i) return tonumber(ffi.cast('%s*', p)[i]) end", ctype)))(ffi)
   return integerAt[ctype]
end

for _, ty in ipairs(torch._allTypes) do
   ty.numberAt = ty.half and halfAt or ty.ctype == 'double' and doubleAt or ty.ctype == 'float' and floatAt
      or integerReader(ty.ctype)
end

-- args[1..n], a call's arguments, each replaced by fn(arg), and one level into the plain tables among them (those
-- copied: the caller's tables stay as they were). Staged calls and CudaHalfTensor's math map their tensors so.
function torch._mapArguments(args, n, fn)
   for i = 1, n do
      local a = args[i]
      if type(a) == 'table' and not torch.isTensor(a) then
         local copy = {}
         for k, v in pairs(a) do copy[k] = fn(v) end
         args[i] = copy
      else
         args[i] = fn(a)
      end
   end
   return args
end

-- torch.<name>(x, ...) as x's own method, so that cutorch's device versions take the functional forms of tensors
-- in GPU memory; fn (default: torch.<name> as it was) answers a first argument that is not a tensor (its error, or
-- the plain-number form). torch._throughMethods lists these names (cutorch/gpu.lua leaves them alone).
torch._throughMethods = {}
function torch._throughMethod(name, fn)
   fn = fn or torch[name]
   torch[name] = function(x, ...)
      if torch.isTensor(x) then return x[name](x, ...) end
      return fn(x, ...)
   end
   torch._throughMethods[name] = true
end

-- The element types of index and mask results for a tensor: cutorch gave
-- CudaLongTensor indices and CudaByteTensor masks for Cuda tensors.
function torch._indexTypeFor(t) return t._c.type >= C.LT_CUDA_BYTE and C.LT_CUDA_LONG or C.LT_LONG end
function torch._maskTypeFor(t) return t._c.type >= C.LT_CUDA_BYTE and C.LT_CUDA_BYTE or C.LT_BYTE end

-- A package's `include 'Name'`: runs lua/<pkg>/Name.lua once (classes that
-- several groups of a package list load once), and marks it as loaded so
-- that require '<pkg>.Name', as Torch7's files allowed, finds it.
function torch._includer(pkg)
   local included = {}
   return function(name)
      if included[name] then return end
      local path = package.searchpath(pkg .. '.' .. name, package.path)
      if not path then error(pkg .. ': cannot find module file ' .. pkg .. '/' .. name .. '.lua', 2) end
      dofile(path)
      included[name] = true
      package.loaded[pkg .. '.' .. name] = package.loaded[pkg .. '.' .. name] or true
   end
end

-- Raise the native library's last error message as a Lua error at `level`.
function torch._check(rc, level)
   if rc ~= 0 then error(ffi.string(C.lt_errmsg()), (level or 1) + 1) end
end

-- The address Lua prints for a table, function, thread or userdata, read
-- with its __tostring out of the way (class instances print their type name).
-- LuaJIT's built-in functions print no address ('builtin#29'): they get small
-- numbers of their own, far below any address.
local builtinIds = setmetatable({}, {__mode = 'k'})
local nextBuiltinId = 0
local function addressof(obj)
   local mt = debug.getmetatable(obj)
   local s
   if mt ~= nil and rawget(mt, '__tostring') ~= nil then
      debug.setmetatable(obj, nil)
      local ok, str = pcall(tostring, obj)
      debug.setmetatable(obj, mt)
      s = ok and str or ''
   else
      s = tostring(obj)
   end
   local hex = s:match('0x%x+')
   if hex then return tonumber(hex) end
   if builtinIds[obj] == nil then
      nextBuiltinId = nextBuiltinId + 1
      builtinIds[obj] = nextBuiltinId
   end
   return builtinIds[obj]
end

-- torch.pointer: a number identifying the object. Tensors and storages give
-- their C struct address, so two Lua handles on one storage compare equal
-- (serialization keys shared storages this way, as Torch7 did); other cdata
-- the address they hold; tables, functions, threads and userdata their
-- address; strings the address of their bytes.
local stringAddress = ffi.typeof('const char *')
function torch.pointer(obj)
   local ty = type(obj)
   if ty == 'cdata' then
      if torch.isStorage(obj) then return tonumber(ffi.cast('uintptr_t', obj._c)) end
      return tonumber(ffi.cast('uintptr_t', ffi.cast('void*', obj)))
   elseif ty == 'table' or ty == 'function' or ty == 'thread' or ty == 'userdata' then
      return addressof(obj)
   elseif ty == 'string' then
      return tonumber(ffi.cast('uintptr_t', ffi.cast(stringAddress, obj)))
   end
   error('torch.pointer: Torch object, table, thread, cdata or function expected, got ' .. ty, 2)
end

-- torch.data(x [, asnumber]) / torch.cdata(x [, asnumber]): x:data() (pointer to
-- the first element) and x:cdata() (pointer to the C struct), as FFI pointers
-- or, with asnumber, as an intptr_t.
for _, method in ipairs {'data', 'cdata'} do
   torch[method] = function(obj, asnumber)
      if obj == nil then return nil end
      local p = obj[method](obj)
      if asnumber then return ffi.cast('intptr_t', p) end
      return p
   end
end

function torch.setnumthreads(n)
   n = tonumber(n)
   if not n or n < 1 then error('torch.setnumthreads: positive number expected', 2) end
   C.lt_set_num_threads(math.floor(n))
end

function torch.getnumthreads()
   return C.lt_get_num_threads()
end

-- Torch7's heap tracking made TH's allocator run the Lua garbage collector
-- when C memory grew. Here C memory is released through ffi.gc finalizers
-- and tracked by LuaJIT's own allocation accounting, so the switch is only
-- recorded (torch._heaptracking), as Torch7 code reads it back.
function torch.setheaptracking(enabled)
   if type(enabled) ~= 'boolean' then error('torch.setheaptracking: boolean expected', 2) end
   torch._heaptracking = enabled
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

-- cutorch's backend choice, LUATORCH_CUTORCH: 'auto' (unset or empty), 'gpu' or 'cpu'.
function torch._cutorchChoice()
   local choice = os.getenv('LUATORCH_CUTORCH') or ''
   if choice == '' then choice = 'auto' end
   if choice ~= 'auto' and choice ~= 'gpu' and choice ~= 'cpu' then
      error('LUATORCH_CUTORCH must be auto, gpu or cpu, got "' .. choice .. '"', 0)
   end
   return choice
end

-- Whether `require 'cutorch'` tries the GPU backend: LUATORCH_CUTORCH=gpu, or auto with a device the driver
-- shows (no driver, or no device: the CPU backend, silently).
function torch._cutorchTriesGpu()
   local choice = torch._cutorchChoice()
   if choice ~= 'auto' then return choice == 'gpu' end
   local n = ffi.new('int[1]')
   return C.lt_cuda_device_count(n) == 0 and n[0] > 0
end
