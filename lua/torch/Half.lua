-- torch.HalfTensor: half-precision (IEEE binary16) tensors, as Torch7 had them
-- on the CPU: geometry and views, copy to and from every type (round to
-- nearest even, through float), fill, conversions (:half() on every tensor
-- and storage, :float()/:double()/... on Half) and serialization — and no
-- math: a HalfTensor has no add, sum, ...; convert it first (x:float():sum()).
-- The elements are uint16_t bits; reading one gives a Lua number.
--
-- cutorch's torch.CudaHalfTensor is the same class shape (public once `require
-- 'cutorch'` has run) with math: each method of torch.CudaTensor runs on float
-- copies of its half operands and what it writes or returns is rounded back to
-- half, as cutorch's kernels computed half in float and stored half. In GPU
-- memory on cutorch's GPU backend (the conversions are device copies), in host
-- memory on its CPU backend.
--
-- Also here: the tensor methods Torch7 defined for every type that the other
-- files do not define: :half(), :real() (the default type) and :cdata().
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local M = torch._tensorMethods
local check = torch._check
local floatToHalf = C.lt_float_to_half

-- ---------------------------------------------------------------- every tensor type

function M.half(self) return M.type(self, 'torch.HalfTensor') end
function M.real(self) return M.type(self, torch.getdefaulttensortype()) end
-- the C struct (lt_tensor *), for FFI code (Torch7: THTensor *)
function M.cdata(self) return ffi.cast('lt_tensor *', ffi.cast('void *', self)) end
torch._installTensorMethods()

-- ---------------------------------------------------------------- the half classes

local newTensor = torch._newTensor
-- offsets from the first element, checked as for every tensor type (Tensor.lua)
local elementOffset = torch._elementOffset
local onDevice = torch._onDevice

-- Methods that never read elements as numbers work unchanged on half bits.
local geometry = {
   'dim', 'nDimension', 'size', 'stride', 'nElement', 'numel', 'storage', 'storageOffset', 'data', 'cdata',
   'isContiguous', 'isSameSizeAs', 'isSize', 'isSetTo', 'resize', 'resizeAs', 'set', 'clone', 'contiguous',
   'copy', 'fill', 'zero', 'narrow', 'sub', 'transpose', 't', 'unfold', 'squeeze', 'expand', 'expandAs', 'view',
   'viewAs', 'type', 'typeAs', 'permute', 'split', 'chunk', 'elementSize', 'half', 'real', 'repeatTensor',
   'unsqueeze',
}
local isGeometry = {}
for _, name in ipairs(geometry) do isGeometry[name] = true end

-- the converters' names (:float(), :cuda(), :cudaLong(), :cudaHalf(), ...)
local converters = {'cudaHalf'}
for _, other in ipairs(torch._types) do
   converters[#converters + 1] = other.cuda and 'cuda' .. (other.hostName == 'Float' and '' or other.hostName)
                                 or other.name:lower()
end

-- The math of a CudaHalfTensor: torch.CudaTensor's method `name` (looked up when called, so that cutorch's
-- device versions serve) on float copies of the half tensors among the arguments (one level into tables). The
-- method's own result tensor is self when it returns self (in-place and result-first forms): only then is self
-- written back; other float results become half tensors, results of other types stay as they are. A
-- torch.CudaTensor argument is refused, as cutorch refused to mix the two.
-- Index and mask tensors (CudaLongTensor, CudaByteTensor) are a half method's only other tensor arguments: a
-- tensor of another real type is refused by name, as cutorch refused to mix types (the float method would
-- otherwise see two CudaTensors, or name CudaTensor in its error).
local function refuseOtherReals(x, ty, name, level)
   local other = torch._typesById[x._c.type]
   if other and not other.integer and other.id ~= ty.id then
      if other.tensorname == 'torch.CudaTensor' then
         error(string.format('%s:%s: a torch.CudaTensor among torch.CudaHalfTensor arguments (convert it with '
                             .. ':cudaHalf(), or the others with :cuda())', ty.tensorname, name), level)
      end
      error(string.format('%s:%s: torch.CudaHalfTensor expected, got %s', ty.tensorname, name, other.tensorname),
            level)
   end
end

local function throughFloat(ty, name)
   local floatName = 'torch.CudaTensor'
   return function(self, ...)
      local copies = {}     -- float copy -> the half tensor it stands for
      local function toFloat(x)
         if not torch.isTensor(x) then return x end
         if x._c.type == ty.id then
            local f = M.type(x, floatName)
            copies[f] = x
            return f
         end
         -- (bernoulli's probabilities may be of another real type, as cutorch's bernoulli_FloatTensor/DoubleTensor)
         if name ~= 'bernoulli' then refuseOtherReals(x, ty, name, 5) end
         return x
      end
      local n = select('#', ...)
      local args = torch._mapArguments({...}, n, toFloat)
      local fself = toFloat(self)
      local method = torch.getmetatable(floatName)[name]
      if not method then error(string.format('%s has no method %s', ty.tensorname, name), 2) end
      local r = table.pack(method(fself, unpack(args, 1, n)))
      local written = {}
      local function back(x)
         if not torch.isTensor(x) then
            if type(x) == 'table' and getmetatable(x) == nil then
               for k, v in pairs(x) do x[k] = back(v) end
            end
            return x
         end
         local h = copies[x]
         if h then
            if not written[h] then
               if not M.isSameSizeAs(h, x) then M.resize(h, M.size(x)) end
               M.copy(h, x)
               written[h] = true
            end
            return h
         end
         if torch.typename(x) == floatName then return M.type(x, ty.tensorname) end
         return x
      end
      for i = 1, r.n do r[i] = back(r[i]) end
      return unpack(r, 1, r.n)
   end
end

local function halfClass(ty, withMath)
   local mt = {}
   local handleName = 'TH' .. ty.name .. 'Tensor'
   ffi.cdef(string.format('typedef struct %s { lt_tensor _c; } %s;', handleName, handleName))

   for _, name in ipairs(geometry) do mt[name] = M[name] end
   -- the converters looked up when called: cutorch defines its own on require
   for _, name in ipairs(converters) do
      mt[name] = function(...)
         if not M[name] then error(name .. ": require 'cutorch' first", 2) end
         return M[name](...)
      end
   end
   if withMath then
      for name in pairs(M) do
         if not isGeometry[name] and mt[name] == nil then mt[name] = throughFloat(ty, name) end
      end
   end

   local elementRead = torch._elementAt   -- as every type's (Tensor.lua): half bits read as numbers
   local function elementWrite(self, off, v)
      if onDevice(self) then return check(C.lt_cuda_storage_set(self._c.storage, self._c.offset + off, v), 3) end
      ffi.cast(ty.ptr, self._c.storage.data)[self._c.offset + off] = floatToHalf(v)
   end

   function mt.select(self, dim, index)
      local r = M.select(self, dim, index)
      if type(r) == 'number' then   -- a 1-D select is the element
         return elementRead(self, (index < 0 and tonumber(self._c.size[0]) + index or index - 1)
                                  * tonumber(self._c.stride[0]))
      end
      return r
   end

   function mt.totable(self) return M.totable(M.float(self)) end

   function mt.elementSize() return ty.elemsize end

   -- t[{i, {a, b}, {}, ...}]: the element when every dimension is given a number, else the view (numbers select,
   -- {a, b} narrows, {} or a missing entry keeps the dimension; negative positions count from the end)
   local function tableView(self, k)
      local c = self._c
      if #k > c.ndim then error(string.format('index: %d indices for a %d-dimensional tensor', #k, c.ndim), 3) end
      local off, sizes, strides = tonumber(c.offset), {}, {}
      for d = 1, c.ndim do
         local e, size, stride = k[d], tonumber(c.size[d - 1]), tonumber(c.stride[d - 1])
         local function position(p)
            if type(p) ~= 'number' or p ~= math.floor(p) then error('index: numbers or {first, last} expected', 4) end
            if p < 0 then p = size + p + 1 end
            if p < 1 or p > size then
               error(string.format('index %d out of range (dimension %d has size %d)', p, d, size), 4)
            end
            return p
         end
         if type(e) == 'number' then
            off = off + (position(e) - 1) * stride
         elseif e == nil or (type(e) == 'table' and #e == 0) then
            sizes[#sizes + 1], strides[#strides + 1] = size, stride
         elseif type(e) == 'table' then
            local a = position(e[1])
            local b = position(e[2] or e[1])
            if b < a then error(string.format('index: empty range {%d, %d} in dimension %d', a, b, d), 3) end
            off = off + (a - 1) * stride
            sizes[#sizes + 1], strides[#strides + 1] = b - a + 1, stride
         else
            error('index: numbers or {first, last} expected, got ' .. type(e), 3)
         end
      end
      if #sizes == 0 then return nil, off - tonumber(c.offset) end
      local v = newTensor(ty.id)
      return M.set(v, M.storage(self), off + 1, torch.LongStorage(sizes), torch.LongStorage(strides))
   end

   -- t[i] (a select, or the element of a 1-D tensor), t[LongStorage{i, j, ...}] (the element)
   local ffimt = {}
   function ffimt.__index(self, k)
      local m = mt[k]
      if m ~= nil then return m end
      if withMath and M[k] then   -- a method added to every type after this file ran (cutorch's, conv2, ...)
         mt[k] = throughFloat(ty, k)
         return mt[k]
      end
      if type(k) == 'number' then
         if self._c.ndim == 0 then error('index: empty tensor', 2) end
         if k < 0 then k = tonumber(self._c.size[0]) + k + 1 end
         return mt.select(self, 1, k)
      end
      if torch.isStorage(k) then return elementRead(self, elementOffset(self, k)) end
      if withMath and type(k) == 'table' then
         local view, off = tableView(self, k)
         if view then return view end
         return elementRead(self, off)
      end
      if withMath and torch.isTensor(k) then   -- a mask or index tensor: through float
         local r = M.type(self, 'torch.CudaTensor')[k]
         return torch.isTensor(r) and M.type(r, ty.tensorname) or r
      end
      if type(k) == 'table' or torch.isTensor(k) then
         error(ty.tensorname .. ': indexing with a table or tensor is not supported; convert with :float()', 2)
      end
      return nil
   end

   function ffimt.__newindex(self, k, v)
      if torch.isStorage(k) then return elementWrite(self, elementOffset(self, k), v) end
      if withMath and type(k) == 'table' then
         local view, off = tableView(self, k)
         if not view then return elementWrite(self, off, v) end
         if type(v) == 'number' then M.fill(view, v) else M.copy(view, v) end
         return
      end
      if withMath and torch.isTensor(k) then   -- a mask or index tensor: through float, written back
         local f = M.type(self, 'torch.CudaTensor')
         f[k] = torch.isTensor(v) and v._c.type == ty.id and M.type(v, 'torch.CudaTensor') or v
         M.copy(self, f)
         return
      end
      if type(k) ~= 'number' then error('cannot set field ' .. tostring(k) .. ' of a ' .. ty.tensorname, 2) end
      local c = self._c
      if c.ndim == 0 then error('index: empty tensor', 2) end
      if k < 0 then k = tonumber(c.size[0]) + k + 1 end
      if c.ndim == 1 and type(v) == 'number' then
         if k < 1 or k > c.size[0] or k ~= math.floor(k) then
            error(string.format('index %s out of range (size %d)', tostring(k), tonumber(c.size[0])), 2)
         end
         return elementWrite(self, (k - 1) * tonumber(c.stride[0]), v)
      end
      local slice = M.select(self, 1, k)
      if type(v) == 'number' then M.fill(slice, v) else M.copy(slice, v) end
   end

   function ffimt.__len(self) return M.size(self) end

   function ffimt.__tostring(self)
      local f = M.float(self)
      local s = torch._tensorToString and torch._tensorToString(f)
                or string.format('[torch.FloatTensor of size %s]', table.concat(M.size(f):totable(), 'x'))
      return (s:gsub('torch%.FloatTensor', ty.tensorname))
   end

   -- Operators: one a program sets on the class (test.lua defines torch.HalfTensor:__sub) wins; else
   -- CudaHalfTensor's run through float, and HalfTensor has none (no Half math).
   for _, op in ipairs {'__add', '__sub', '__mul', '__div', '__unm', '__mod', '__pow'} do
      local viaFloat = withMath and function(a, b)
         local f = torch._tensorOps[op]
         local function float(x)
            if not torch.isTensor(x) then return x end
            refuseOtherReals(x, ty, op, 4)
            return x._c.type == ty.id and M.type(x, 'torch.CudaTensor') or x
         end
         local r = f(float(a), float(b))
         return torch.isTensor(r) and torch.typename(r) == 'torch.CudaTensor' and M.type(r, ty.tensorname) or r
      end
      ffimt[op] = function(a, b)
         local f = rawget(mt, op) or viaFloat
         if not f then
            error(ty.tensorname .. ' has no ' .. op .. ' (no Half math: convert with :float() first)', 2)
         end
         return f(a, b)
      end
   end

   local Handle = ffi.metatype(handleName, ffimt)
   torch._tensorHandles[ty.id] = Handle
   torch._registerCType(Handle, ty.tensorname)
   torch._tensorCTypes[tonumber(Handle)] = true

   -- (), (sizes...), (LongStorage sizes), (a tensor of this type), (a storage of it [, offset, sizes, strides]),
   -- (nested table of numbers)
   local function ctor(...)
      local t = newTensor(ty.id)
      local a = ...
      if a == nil then return t end
      if type(a) == 'number' or torch.typename(a) == 'torch.LongStorage' then
         if select('#', ...) > 1 and torch.typename(a) == 'torch.LongStorage' then
            error(ty.tensorname .. '(sizes, strides): make it with :set(storage, offset, sizes, strides)', 2)
         end
         return M.resize(t, ...)
      end
      if torch.isTensor(a) then
         if torch.typename(a) ~= ty.tensorname then
            error(ty.tensorname .. ': cannot view a ' .. torch.typename(a) .. ' (use :' ..
                  (withMath and 'cudaHalf' or 'half') .. '() to convert)', 2)
         end
         return M.set(t, a)
      end
      if torch.isStorage(a) then return M.set(t, ...) end
      if type(a) == 'table' then
         local f = torch.FloatTensor(a)
         return M.copy(M.resizeAs(t, f), f)
      end
      error(ty.tensorname .. ': expected sizes, a LongStorage, a tensor or storage of its type, or a table, got '
            .. torch.type(a), 2)
   end

   torch._newclass(ty.tensorname, mt, ctor)
   mt.new = ctor
   mt.__factory = function() return newTensor(ty.id) end
   mt._ty = ty
   return mt
end

halfClass(torch._halfType, false)
halfClass(torch._cudaHalfType, true)
-- torch.CudaHalf* are public once `require 'cutorch'` has run (torch/init.lua)
