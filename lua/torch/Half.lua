-- torch.HalfTensor: half-precision (IEEE binary16) tensors, as Torch7 had them
-- on the CPU: geometry and views, copy to and from every type (round to
-- nearest even, through float), fill, conversions (:half() on every tensor
-- and storage, :float()/:double()/... on Half) and serialization — and no
-- math: a HalfTensor has no add, sum, ...; convert it first (x:float():sum()).
-- The elements are uint16_t bits; reading one gives a Lua number.
--
-- Also here: the tensor methods Torch7 defined for every type that the other
-- files do not define: :half(), :real() (the default type) and :cdata().
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local M = torch._tensorMethods
local ty = torch._halfType
local halfToFloat, floatToHalf = C.lt_half_to_float, C.lt_float_to_half

-- ---------------------------------------------------------------- every tensor type

function M.half(self) return M.type(self, 'torch.HalfTensor') end
function M.real(self) return M.type(self, torch.getdefaulttensortype()) end
-- the C struct (lt_tensor *), for FFI code (Torch7: THTensor *)
function M.cdata(self) return ffi.cast('lt_tensor *', ffi.cast('void *', self)) end
torch._installTensorMethods()

-- ---------------------------------------------------------------- the HalfTensor class

ffi.cdef 'typedef struct THHalfTensor { lt_tensor _c; } THHalfTensor;'
local mt = {}

-- Methods that never read elements as numbers work unchanged on half bits.
local geometry = {
   'dim', 'nDimension', 'size', 'stride', 'nElement', 'numel', 'storage', 'storageOffset', 'data', 'cdata',
   'isContiguous', 'isSameSizeAs', 'isSize', 'isSetTo', 'resize', 'resizeAs', 'set', 'clone', 'contiguous',
   'copy', 'fill', 'zero', 'narrow', 'sub', 'transpose', 't', 'unfold', 'squeeze', 'expand', 'expandAs', 'view',
   'viewAs', 'type', 'typeAs', 'permute', 'split', 'chunk', 'elementSize', 'half', 'real', 'repeatTensor',
}
for _, name in ipairs(geometry) do mt[name] = M[name] end
-- the converters (:float(), :cuda(), :cudaLong(), ...) looked up when called: cutorch defines its own on require
for _, other in ipairs(torch._types) do
   local name = other.cuda and 'cuda' .. (other.hostName == 'Float' and '' or other.hostName) or other.name:lower()
   mt[name] = function(...)
      if not M[name] then error(name .. ": require 'cutorch' first", 2) end
      return M[name](...)
   end
end

local newTensor = torch._newTensor

function mt.select(self, dim, index)
   local r = M.select(self, dim, index)
   if type(r) == 'number' then return halfToFloat(r) end  -- a 1-D select is the element
   return r
end

function mt.totable(self) return M.totable(M.float(self)) end

function mt.elementSize() return ty.elemsize end

-- t[i] (a select, or the element of a 1-D tensor), t[LongStorage{i, j, ...}] (the element)
-- offsets from the first element, checked as for every tensor type (Tensor.lua)
local elementOffset = torch._elementOffset

local function element(self, off) return ffi.cast(ty.ptr, self._c.storage.data) + self._c.offset + off end

local ffimt = {}
function ffimt.__index(self, k)
   local m = mt[k]
   if m ~= nil then return m end
   if type(k) == 'number' then
      if self._c.ndim == 0 then error('index: empty tensor', 2) end
      if k < 0 then k = tonumber(self._c.size[0]) + k + 1 end
      return mt.select(self, 1, k)
   end
   if torch.isStorage(k) then return halfToFloat(element(self, elementOffset(self, k))[0]) end
   if type(k) == 'table' or torch.isTensor(k) then
      error('torch.HalfTensor: indexing with a table or tensor is not supported; convert with :float()', 2)
   end
   return nil
end

function ffimt.__newindex(self, k, v)
   if torch.isStorage(k) then
      element(self, elementOffset(self, k))[0] = floatToHalf(v)
      return
   end
   if type(k) ~= 'number' then error('cannot set field ' .. tostring(k) .. ' of a torch.HalfTensor', 2) end
   local c = self._c
   if c.ndim == 0 then error('index: empty tensor', 2) end
   if k < 0 then k = tonumber(c.size[0]) + k + 1 end
   if c.ndim == 1 and type(v) == 'number' then
      if k < 1 or k > c.size[0] or k ~= math.floor(k) then
         error(string.format('index %s out of range (size %d)', tostring(k), tonumber(c.size[0])), 2)
      end
      element(self, (k - 1) * c.stride[0])[0] = floatToHalf(v)
      return
   end
   local slice = M.select(self, 1, k)
   if type(v) == 'number' then M.fill(slice, v) else M.copy(slice, v) end
end

function ffimt.__len(self) return M.size(self) end

function ffimt.__tostring(self)
   local f = M.float(self)
   local s = torch._tensorToString and torch._tensorToString(f)
             or string.format('[torch.FloatTensor of size %s]', table.concat(M.size(f):totable(), 'x'))
   return (s:gsub('torch%.FloatTensor', 'torch.HalfTensor'))
end

-- No built-in operators (no Half math), but one a program sets on the class
-- (test.lua defines torch.HalfTensor:__sub) is used, as for the other types.
for _, op in ipairs {'__add', '__sub', '__mul', '__div', '__unm', '__mod', '__pow'} do
   ffimt[op] = function(a, b)
      local f = rawget(mt, op)
      if not f then error('torch.HalfTensor has no ' .. op .. ' (no Half math: convert with :float() first)', 2) end
      return f(a, b)
   end
end

local Handle = ffi.metatype('THHalfTensor', ffimt)
torch._tensorHandles[ty.id] = Handle
torch._registerCType(Handle, ty.tensorname)
torch._tensorCTypes[tonumber(Handle)] = true

-- HalfTensor(), (sizes...), (LongStorage sizes), (HalfTensor), (HalfStorage [, offset, sizes, strides]),
-- (nested table of numbers)
local function ctor(...)
   local t = newTensor(ty.id)
   local a = ...
   if a == nil then return t end
   if type(a) == 'number' or torch.typename(a) == 'torch.LongStorage' then
      if select('#', ...) > 1 and torch.typename(a) == 'torch.LongStorage' then
         error('torch.HalfTensor(sizes, strides): make it with :set(storage, offset, sizes, strides)', 2)
      end
      return M.resize(t, ...)
   end
   if torch.isTensor(a) then
      if torch.typename(a) ~= ty.tensorname then
         error('torch.HalfTensor: cannot view a ' .. torch.typename(a) .. ' (use :half() to convert)', 2)
      end
      return M.set(t, a)
   end
   if torch.isStorage(a) then return M.set(t, ...) end
   if type(a) == 'table' then
      local f = torch.FloatTensor(a)
      return M.copy(M.resizeAs(t, f), f)
   end
   error('torch.HalfTensor: expected sizes, a LongStorage, a HalfTensor, a HalfStorage or a table, got '
         .. torch.type(a), 2)
end

torch._newclass(ty.tensorname, mt, ctor)
mt.new = ctor
mt.__factory = function() return newTensor(ty.id) end
mt._ty = ty
