-- torch.<Type>Tensor: construction, geometry and views.
--
-- A tensor is an FFI handle, struct TH<Type>Tensor { lt_tensor _c; }: the
-- embedded C struct holds the storage pointer (retained), a 0-based offset,
-- sizes and strides. Handles are cdata like Torch7's userdata (type(t) is not
-- 'table', which nn relies on; `#t` is the size). All seven types share the
-- methods in torch._tensorMethods, copied into each type's class table so
-- that every type is its own Torch7 class. Method families in other files
-- (TensorMath, TensorIndex, ...) add to torch._tensorMethods and call
-- torch._installTensorMethods() again; operators go in torch._tensorOps.
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

local M = {}                 -- methods shared by all tensor types
torch._tensorMethods = M
local tensorMTs = {}         -- lt_type id -> class table (methods)
torch._tensorMTs = tensorMTs
local handles = {}           -- lt_type id -> handle ctype
torch._tensorHandles = handles  -- Half.lua registers HalfTensor's handle here
local ops = {}               -- metamethods (__add, __sub, __mul, __div, __unm), filled by TensorMath
torch._tensorOps = ops

local sizebuf = ffi.new('int64_t[16]')
local stridebuf = ffi.new('int64_t[16]')

local function mtOf(t) return tensorMTs[t._c.type] end

-- A new empty tensor of lt_type id.
local function newTensor(typeid)
   local t = ffi.gc(handles[typeid](), C.lt_tensor_free_ref)
   t._c.type = typeid
   return t
end
torch._newTensor = newTensor

local function typeOfTensor(t) return torch._typesById[t._c.type] end

-- A tensor whose storage is GPU memory (cutorch's GPU backend: LT_STORAGE_DEVICE of lt_cuda_storage.h)
-- has no host address for its elements: single elements go through the driver.
local STORAGE_DEVICE = 8
local function onDevice(t)
   local s = t._c.storage
   return s ~= nil and bit.band(s.flags, STORAGE_DEVICE) ~= 0
end
torch._onDevice = onDevice
local elementBuf = ffi.new('double[1]')

-- The element at 0-based element offset off from the tensor's first, as a Lua number; and its assignment.
local function elementAt(t, off)
   if onDevice(t) then
      check(C.lt_cuda_storage_get(t._c.storage, t._c.offset + off, elementBuf), 3)
      return elementBuf[0]
   end
   return typeOfTensor(t).numberAt(C.lt_tensor_data(t._c), off)
end
local function setElementAt(t, off, v)
   if onDevice(t) then return check(C.lt_cuda_storage_set(t._c.storage, t._c.offset + off, v), 3) end
   ffi.cast(typeOfTensor(t).ptr, C.lt_tensor_data(t._c))[off] = v
end

local function isTensorArg(x) return torch.isTensor(x) end

-- Read sizes given as numbers (varargs) or one LongStorage/table into sizebuf; returns n.
local function readSizes(fname, ...)
   local a = ...
   -- src[base + 1 .. base + n] are the sizes
   local src, base, n = nil, 0, 0
   if torch.isStorage(a) then
      src, n = a, a:size()
   elseif torch.isTensor(a) then
      local c = a:contiguous()
      src, base, n = c:storage(), c:storageOffset() - 1, c:nElement()
   elseif type(a) == 'table' then
      src, n = a, #a
   else
      src, n = {...}, select('#', ...)
   end
   if n > 16 then error(fname .. ': at most 16 dimensions are supported', 3) end
   for i = 1, n do
      local v = src[base + i]
      if type(v) ~= 'number' then
         error(string.format('%s: sizes must be numbers or a LongStorage (argument %d is %s)', fname, i, type(v)), 3)
      end
      sizebuf[i - 1] = v
   end
   return n
end
torch._readSizes = readSizes

local function longStorageOf(arr, n)
   local s = torch.LongStorage(n)
   local d = s:data()
   for i = 0, n - 1 do d[i] = arr[i] end
   return s
end

local function checkdim(t, d, fname, level)
   local nd = t._c.ndim
   if type(d) ~= 'number' or d < 1 or d > nd or d ~= math.floor(d) then
      error(string.format('%s: dimension %s out of range of %dD tensor', fname, tostring(d), nd), (level or 2) + 1)
   end
   return d - 1
end
torch._checkdim = checkdim

-- ---------------------------------------------------------------- construction

local fillFromTable
function fillFromTable(t, tbl)
   -- nested Lua tables -> sizes, then values in row-major order
   local sizes, probe = {}, tbl
   while type(probe) == 'table' do
      sizes[#sizes + 1] = #probe
      probe = probe[1]
   end
   local n = #sizes
   for i = 1, n do sizebuf[i - 1] = sizes[i] end
   check(C.lt_tensor_resize(t._c, n, sizebuf), 3)
   if n == 0 or sizes[1] == 0 then return t end
   if C.lt_tensor_is_device(t._c) ~= 0 then   -- GPU memory: the values go through a host tensor and a copy
      local host = fillFromTable(newTensor(torch._types[typeOfTensor(t).hostName].id), tbl)
      check(C.lt_tensor_copy(t._c, host._c), 3)
      return t
   end
   local d = ffi.cast(typeOfTensor(t).ptr, C.lt_tensor_data(t._c))
   local pos = 0
   local function walk(x, depth)
      if depth > n then
         if type(x) ~= 'number' then error('torch.Tensor: table of numbers expected', 5) end
         d[pos] = x
         pos = pos + 1
         return
      end
      if type(x) ~= 'table' or #x ~= sizes[depth] then
         error('torch.Tensor: inconsistent table sizes (not a rectangular nested table)', 5)
      end
      for i = 1, #x do walk(x[i], depth + 1) end
   end
   walk(tbl, 1)
   return t
end

local function makeConstructor(ty)
   return function(...)
      local t = newTensor(ty.id)
      local nargs = select('#', ...)
      if nargs == 0 then return t end
      local a, b = ...
      if type(a) == 'number' then
         local n = readSizes(ty.tensorname, ...)
         check(C.lt_tensor_resize(t._c, n, sizebuf), 2)
         return t
      end
      if torch.isTensor(a) then
         if a._c.type ~= ty.id then
            error(string.format('%s: cannot view a %s (use :type() to convert)', ty.tensorname, torch.typename(a)), 2)
         end
         check(C.lt_tensor_set(t._c, a._c), 2)
         return t
      end
      -- a storage of the tensor's own type is the storage form (Torch7 tries it
      -- first); any other LongStorage gives the sizes [and strides]
      if torch.isStorage(a) and a._c.type == ty.id then
         M.set(t, ...)
         return t
      end
      if torch.typename(a) == 'torch.LongStorage' then
         local n = readSizes(ty.tensorname, a)
         if b ~= nil then
            if torch.typename(b) ~= 'torch.LongStorage' or b:size() ~= n then
               error(ty.tensorname .. ': strides must be a LongStorage as long as the sizes', 2)
            end
            local st = ffi.new('int64_t[16]')
            for i = 1, n do st[i - 1] = b[i] end
            local total = 1
            for i = 0, n - 1 do total = total + (sizebuf[i] - 1) * st[i] end
            local s = torch.getmetatable(ty.storagename).__constructor(n > 0 and tonumber(total) or 0)
            check(C.lt_tensor_set_storage(t._c, s._c, 0, n, sizebuf, st), 2)
         else
            check(C.lt_tensor_resize(t._c, n, sizebuf), 2)
         end
         return t
      end
      if type(a) == 'table' then
         return fillFromTable(t, a)
      end
      error(ty.tensorname .. ': invalid arguments (expected sizes, LongStorage, table, storage [offset sizes strides] or tensor)', 2)
   end
end

-- ---------------------------------------------------------------- geometry

function M.dim(self) return self._c.ndim end
M.nDimension = M.dim

function M.size(self, d)
   local c = self._c
   if d == nil then return longStorageOf(c.size, c.ndim) end
   return tonumber(c.size[checkdim(self, d, 'size')])
end

function M.stride(self, d)
   local c = self._c
   if d == nil then return longStorageOf(c.stride, c.ndim) end
   return tonumber(c.stride[checkdim(self, d, 'stride')])
end

function M.nElement(self) return tonumber(C.lt_tensor_nelement(self._c)) end
M.numel = M.nElement

function M.elementSize(self) return typeOfTensor(self).elemsize end

-- Torch7's alias torch.Tensor.isTensor (here on every tensor type).
function M.isTensor(x) return torch.isTensor(x) end

function M.storage(self)
   local s = self._c.storage
   if s == nil then return nil end
   C.lt_storage_retain(s)
   return torch.getmetatable(typeOfTensor(self).storagename)._wrap(s)
end

function M.storageOffset(self) return tonumber(self._c.offset) + 1 end

function M.data(self)
   return ffi.cast(typeOfTensor(self).ptr, C.lt_tensor_data(self._c))
end

function M.isContiguous(self) return C.lt_tensor_is_contiguous(self._c) ~= 0 end

function M.isSameSizeAs(self, other) return C.lt_tensor_is_same_size(self._c, other._c) ~= 0 end

function M.isSize(self, sizes)
   local n = readSizes('isSize', sizes)
   local c = self._c
   if n ~= c.ndim then return false end
   for i = 0, n - 1 do if c.size[i] ~= sizebuf[i] then return false end end
   return true
end

function M.isSetTo(self, other)
   local a, b = self._c, other._c
   if a.storage == nil or a.storage ~= b.storage or a.offset ~= b.offset or a.ndim ~= b.ndim then return false end
   for i = 0, a.ndim - 1 do
      if a.size[i] ~= b.size[i] or a.stride[i] ~= b.stride[i] then return false end
   end
   return true
end


function M.resize(self, ...)
   local n = readSizes('resize', ...)
   check(C.lt_tensor_resize(self._c, n, sizebuf), 2)
   return self
end

function M.resizeAs(self, other)
   local c = other._c
   check(C.lt_tensor_resize(self._c, c.ndim, c.size), 2)
   return self
end

-- set(), set(tensor), set(storage [, offset [, sizes [, strides]]]),
-- set(storage, offset, size1, stride1, size2, stride2, ...)
function M.set(self, src, offset, ...)
   if src == nil then
      C.lt_tensor_clear(self._c)
      return self
   end
   if torch.isTensor(src) then
      check(C.lt_tensor_set(self._c, src._c), 2)
      return self
   end
   if not torch.isStorage(src) then error('set: tensor or storage expected', 2) end
   if src._c.type ~= self._c.type then
      error(string.format('set: a %s cannot use a %s', torch.typename(self), torch.typename(src)), 2)
   end
   offset = (offset or 1) - 1
   local a = ...
   local n
   local strides = nil
   if a == nil then
      -- the rest of the storage as a 1-D tensor (0-D when nothing is left)
      n = 1
      sizebuf[0] = tonumber(src._c.size) - offset
   elseif type(a) == 'number' then
      -- interleaved size, stride pairs
      local args = {...}
      n = 0
      for i = 1, #args, 2 do
         sizebuf[n] = args[i]
         stridebuf[n] = args[i + 1] or -1
         n = n + 1
      end
      strides = stridebuf
      for i = 0, n - 1 do
         if stridebuf[i] < 0 then strides = nil end
      end
   else
      n = readSizes('set', a)
      local st = select(2, ...)
      if st ~= nil then
         local src2 = torch.isStorage(st) and st or nil
         if not src2 then error('set: strides must be a LongStorage', 2) end
         if src2:size() ~= n then error('set: sizes and strides have different lengths', 2) end
         for i = 1, n do stridebuf[i - 1] = src2[i] end
         strides = stridebuf
      end
   end
   check(C.lt_tensor_set_storage(self._c, src._c, offset, n, sizebuf, strides), 2)
   return self
end

function M.clone(self)
   local t = newTensor(self._c.type)
   check(C.lt_tensor_resize(t._c, self._c.ndim, self._c.size), 2)
   check(C.lt_tensor_copy(t._c, self._c), 2)
   return t
end

function M.contiguous(self)
   if C.lt_tensor_is_contiguous(self._c) ~= 0 then return self end
   return M.clone(self)
end

function M.copy(self, src)
   if not torch.isTensor(src) then error('copy: tensor expected, got ' .. torch.type(src), 2) end
   check(C.lt_tensor_copy(self._c, src._c), 2)
   return self
end

function M.fill(self, v)
   if type(v) ~= 'number' then error('fill: number expected', 2) end
   check(C.lt_tensor_fill(self._c, v), 2)
   return self
end

function M.zero(self) return M.fill(self, 0) end

-- Copy a freshly computed tensor into `result` (resized like it, keeping
-- result's strides when the size is already right); returns result.
local function moveInto(t, result)
   M.resizeAs(result, t)
   return M.copy(result, t)
end

-- A view of self with the same storage (a new Lua handle).
local function alias(self)
   local t = newTensor(self._c.type)
   check(C.lt_tensor_set(t._c, self._c), 3)
   return t
end
torch._alias = alias

function M.narrow(self, dim, index, size)
   local d = checkdim(self, dim, 'narrow')
   local c = self._c
   if type(index) ~= 'number' or type(size) ~= 'number' or index < 1 or size < 1 or index - 1 + size > c.size[d] then
      error(string.format('narrow: out of range (dimension %d of size %d, index %s, size %s)', dim,
                          tonumber(c.size[d]), tostring(index), tostring(size)), 2)
   end
   local t = alias(self)
   t._c.offset = c.offset + (index - 1) * c.stride[d]
   t._c.size[d] = size
   return t
end

-- Torch7's select: drops dimension `dim`; on a 1-D tensor it is the number at
-- `index`, whatever `dim` says (Torch7 read the element without looking at
-- the dimension, and Torch7 code such as its own test.lua relies on it).
function M.select(self, dim, index)
   local c = self._c
   if c.ndim == 1 then
      if type(dim) ~= 'number' then checkdim(self, dim, 'select') end
      if type(index) ~= 'number' or index < 1 or index > c.size[0] or index ~= math.floor(index) then
         error(string.format('select: index %s out of range (1D tensor of size %d)', tostring(index),
                             tonumber(c.size[0])), 2)
      end
      return elementAt(self, (index - 1) * c.stride[0])
   end
   local d = checkdim(self, dim, 'select')
   if type(index) ~= 'number' or index < 1 or index > c.size[d] or index ~= math.floor(index) then
      error(string.format('select: index %s out of range (dimension %d of size %d)', tostring(index), dim,
                          tonumber(c.size[d])), 2)
   end
   local t = alias(self)
   local tc = t._c
   tc.offset = c.offset + (index - 1) * c.stride[d]
   for i = d, c.ndim - 2 do
      tc.size[i] = c.size[i + 1]
      tc.stride[i] = c.stride[i + 1]
   end
   tc.ndim = c.ndim - 1
   return t
end

-- sub(d1start, d1end [, d2start, d2end ...]); negative indices count from the end.
function M.sub(self, ...)
   local args = {...}
   local c = self._c
   if #args % 2 ~= 0 or #args / 2 > c.ndim then error('sub: pairs of (start, end) indices expected', 2) end
   local t = self
   for k = 1, #args, 2 do
      local d = (k + 1) / 2
      local n = tonumber(c.size[d - 1])
      local s, e = args[k], args[k + 1]
      if s < 0 then s = n + s + 1 end
      if e < 0 then e = n + e + 1 end
      if s < 1 or e > n or s > e + 1 then
         error(string.format('sub: out of range (dimension %d of size %d, %d to %d)', d, n, args[k], args[k + 1]), 2)
      end
      t = M.narrow(t, d, s, e - s + 1)
   end
   if t == self then t = alias(self) end
   return t
end

function M.transpose(self, d1, d2)
   local a = checkdim(self, d1, 'transpose')
   local b = checkdim(self, d2, 'transpose')
   local t = alias(self)
   local c = t._c
   c.size[a], c.size[b] = c.size[b], c.size[a]
   c.stride[a], c.stride[b] = c.stride[b], c.stride[a]
   return t
end

function M.t(self)
   if self._c.ndim ~= 2 then error('t: tensor must have 2 dimensions (use transpose for other tensors)', 2) end
   return M.transpose(self, 1, 2)
end

function M.unfold(self, dim, size, step)
   local c = self._c
   local d = c.ndim == 0 and 0 or checkdim(self, dim, 'unfold')
   local n = c.ndim == 0 and 1 or tonumber(c.size[d])
   if size > n then error(string.format('unfold: size %d is larger than dimension %d (%d)', size, dim, n), 2) end
   if step <= 0 then error('unfold: step must be positive', 2) end
   if c.ndim >= 16 then error('unfold: too many dimensions', 2) end
   local t = alias(self)
   local tc = t._c
   tc.ndim = c.ndim + 1
   tc.size[c.ndim] = size
   tc.stride[c.ndim] = c.ndim == 0 and 1 or c.stride[d]
   if c.ndim > 0 then
      tc.size[d] = math.floor((n - size) / step) + 1
      tc.stride[d] = step * c.stride[d]
   end
   return t
end

-- squeeze([dim]) returns a view without the size-1 dimensions (or without
-- dimension dim if it has size 1); r:squeeze(src [, dim]) sets r to it.
-- As in Torch7, a one-element result is returned as the number when no
-- dimension was given, or when dim was given and the source was already 1-D.
function M.squeeze(self, a, b)
   local src, dim, t = self, a, nil
   if isTensorArg(a) then
      src, dim = a, b
      t = self
      check(C.lt_tensor_set(t._c, src._c), 2)
   else
      t = alias(self)
   end
   local c = t._c
   local srcdims = c.ndim
   if dim ~= nil then
      local d = checkdim(src, dim, 'squeeze')
      if c.size[d] == 1 and c.ndim > 1 then
         for i = d, c.ndim - 2 do c.size[i] = c.size[i + 1]; c.stride[i] = c.stride[i + 1] end
         c.ndim = c.ndim - 1
      end
   else
      local n = 0
      for i = 0, c.ndim - 1 do
         if c.size[i] ~= 1 then
            c.size[n] = c.size[i]; c.stride[n] = c.stride[i]; n = n + 1
         end
      end
      if n == 0 and c.ndim > 0 then
         -- all ones: Torch7 keeps one dimension of size 1
         c.size[0] = 1; c.stride[0] = 1; n = 1
      end
      c.ndim = n
   end
   if c.ndim == 1 and c.size[0] == 1 and (dim == nil or srcdims == 1) then
      return t[1]  -- through the handle, which reads the element as a number for every type
   end
   return t
end

-- expand(sizes...): singleton dimensions become stride-0 repeats; extra
-- leading sizes add stride-0 dimensions. result:expand(src, sizes...) sets
-- result to that view of src (Torch7's result form).
function M.expand(self, ...)
   if isTensorArg((...)) then
      local src = ...
      return M.set(self, M.expand(src, select(2, ...)))
   end
   local n = readSizes('expand', ...)
   local c = self._c
   if n < c.ndim then
      error(string.format('expand: the number of sizes (%d) must be at least the tensor dimension (%d)', n, c.ndim), 2)
   end
   local t = alias(self)
   local tc = t._c
   local shift = n - c.ndim
   for i = n - 1, 0, -1 do
      local want = sizebuf[i]
      local j = i - shift
      if j >= 0 then
         local have = c.size[j]
         if have == want then
            tc.size[i] = have; tc.stride[i] = c.stride[j]
         elseif have == 1 then
            tc.size[i] = want; tc.stride[i] = 0
         else
            error(string.format('expand: cannot expand dimension %d of size %d to %d (only singleton dimensions expand)',
                                j + 1, tonumber(have), tonumber(want)), 2)
         end
      else
         tc.size[i] = want; tc.stride[i] = 0
      end
   end
   tc.ndim = n
   return t
end

-- expandAs(template); result:expandAs(src, template).
function M.expandAs(self, other, template)
   if template ~= nil then return M.set(self, M.expand(other, template:size())) end
   return M.expand(self, other:size())
end

-- permute(p1, ..., pn): a view whose dimension i is self's dimension p_i.
function M.permute(self, ...)
   local perm = {...}
   local c = self._c
   local nd = c.ndim
   if #perm ~= nd then
      error(string.format('permute: %d dimensions given for a %dD tensor', #perm, nd), 2)
   end
   local seen = {}
   for i = 1, nd do
      local p = perm[i]
      if type(p) ~= 'number' or p < 1 or p > nd or p ~= math.floor(p) or seen[p] then
         error('permute: invalid permutation (each dimension 1..' .. nd .. ' exactly once)', 2)
      end
      seen[p] = true
   end
   local t = alias(self)
   local tc = t._c
   for i = 1, nd do
      tc.size[i - 1] = c.size[perm[i] - 1]
      tc.stride[i - 1] = c.stride[perm[i] - 1]
   end
   return t
end

-- repeatTensor(reps...): a new tensor holding self tiled reps[i] times along
-- dimension i (more reps than dimensions add leading ones);
-- result:repeatTensor(src, reps...) fills result.
function M.repeatTensor(self, ...)
   if isTensorArg((...)) then
      local src = ...
      return moveInto(M.repeatTensor(src, select(2, ...)), self)
   end
   local n = readSizes('repeatTensor', ...)
   local c = self._c
   if n < c.ndim then
      error(string.format('repeatTensor: %d repetitions given for a %dD tensor (at least one per dimension)', n,
                          c.ndim), 2)
   end
   if c.ndim == 0 then error('repeatTensor: cannot repeat an empty tensor', 2) end
   local reps, sizes = {}, {}
   local shift = n - c.ndim
   for i = 1, n do
      reps[i] = tonumber(sizebuf[i - 1])
      if reps[i] < 1 or reps[i] ~= math.floor(reps[i]) then
         error('repeatTensor: repetitions must be positive integers, got ' .. tostring(reps[i]), 2)
      end
      sizes[i] = i > shift and tonumber(c.size[i - shift - 1]) or 1
   end
   local out = newTensor(c.type)
   for i = 1, n do sizebuf[i - 1] = sizes[i] * reps[i] end
   check(C.lt_tensor_resize(out._c, n, sizebuf), 2)
   -- the block of out that holds copy k (0-based) along dimension i, with
   -- dimensions before i already tiled in full and those after not yet
   local function block(i, k)
      local b = out
      for j = i, n do b = M.narrow(b, j, (j == i and k or 0) * sizes[j] + 1, sizes[j]) end
      return b
   end
   M.copy(block(1, 0), M.view(M.contiguous(self), torch.LongStorage(sizes)))
   for i = 1, n do
      local first = block(i, 0)
      for k = 1, reps[i] - 1 do M.copy(block(i, k), first) end
   end
   return out
end

-- split(size [, dim = 1]): views of consecutive pieces of `size` along dim (the
-- last one shorter); chunk(n [, dim]) cuts into n pieces of ceil(size / n).
-- torch.split(result, x, ...) and torch.chunk(result, x, ...) fill the table result.
local function splitInto(result, t, size, dim, fname)
   if type(size) ~= 'number' or size < 1 then error(fname .. ': the piece size must be a positive number', 3) end
   dim = dim or 1
   local n = M.size(t, dim)
   for k in pairs(result) do result[k] = nil end
   local start = 1
   while start <= n do
      local len = math.min(size, n - start + 1)
      result[#result + 1] = M.narrow(t, dim, start, len)
      start = start + len
   end
   return result
end

function M.split(self, a, b, c)
   if type(self) == 'table' then return splitInto(self, a, b, c, 'split') end
   return splitInto({}, self, a, b, 'split')
end

function M.chunk(self, a, b, c)
   local result, t, n, dim = {}, self, a, b
   if type(self) == 'table' then result, t, n, dim = self, a, b, c end
   if type(n) ~= 'number' or n < 1 then error('chunk: the number of chunks must be a positive number', 2) end
   return splitInto(result, t, math.ceil(M.size(t, dim or 1) / n), dim, 'chunk')
end

-- view(sizes...) or result:view(src, sizes...). One size may be -1.
function M.view(self, src, ...)
   if not torch.isTensor(src) then
      return M.view(newTensor(self._c.type), self, src, ...)
   end
   local result = self
   local n = readSizes('view', ...)
   local total = C.lt_tensor_nelement(src._c)
   local infer, known = -1, 1
   for i = 0, n - 1 do
      if sizebuf[i] == -1 then
         if infer >= 0 then error('view: only one dimension can be inferred (-1)', 2) end
         infer = i
      else
         known = known * sizebuf[i]
      end
   end
   if infer >= 0 then
      if known == 0 or total % known ~= 0 then error('view: cannot infer the -1 dimension (size mismatch)', 2) end
      sizebuf[infer] = total / known
      known = total
   end
   if known ~= total then
      error(string.format('view: size mismatch (viewing %d elements as %d)', tonumber(total), tonumber(known)), 2)
   end
   if C.lt_tensor_is_contiguous(src._c) == 0 then
      error('view: the tensor is not contiguous (call :contiguous() first)', 2)
   end
   if src._c.storage == nil then
      check(C.lt_tensor_resize(result._c, n, sizebuf), 2)
      return result
   end
   check(C.lt_tensor_set_storage(result._c, src._c.storage, src._c.offset, n, sizebuf, nil), 2)
   return result
end

function M.viewAs(self, src, template)
   if template == nil then return M.view(self, src:size()) end
   return M.view(self, src, template:size())
end

function M.type(self, tname)
   -- torch.Tensor.type(x) of something that is no tensor: its torch.typename, as Torch7's (nil for a number)
   if tname == nil and not torch.isTensor(self) then return torch.typename(self) end
   local ty = typeOfTensor(self)
   if tname == nil then return ty.tensorname end
   if tname == ty.tensorname then return self end
   local mt = torch.getmetatable(tname)
   if not mt or not tname:match('^torch%.%a+Tensor$') then
      error('type: unknown tensor type ' .. tostring(tname), 2)
   end
   local out = mt.__constructor()
   check(C.lt_tensor_resize(out._c, self._c.ndim, self._c.size), 2)
   check(C.lt_tensor_copy(out._c, self._c), 2)
   return out
end

function M.typeAs(self, other) return M.type(self, other:type()) end

for _, ty in ipairs(torch._types) do
   -- t:float(), t:long(), ...; cutorch's t:cuda(), t:cudaLong(), ... are added by `require 'cutorch'`
   if not ty.cuda then M[ty.name:lower()] = function(self) return M.type(self, ty.tensorname) end end
end
M.cuda = function() error("cuda: require 'cutorch' first (luatorch's cutorch runs on the CPU)", 2) end

function M.totable(self)
   local c = self._c
   if c.ndim == 0 then return {} end
   if c.ndim == 1 then
      local d, st, out, numberAt = M.data(self), tonumber(c.stride[0]), {}, typeOfTensor(self).numberAt
      for i = 0, tonumber(c.size[0]) - 1 do out[i + 1] = numberAt(d, i * st) end
      return out
   end
   local out = {}
   for i = 1, tonumber(c.size[0]) do out[i] = M.totable(M.select(self, 1, i)) end
   return out
end

-- Lua-function element loops (Torch7's apply/map/map2).
local function elementLoop(tensors, fn)
   local n = M.nElement(tensors[1])
   for _, t in ipairs(tensors) do
      if M.nElement(t) ~= n then error('inconsistent tensor size', 3) end
   end
   local conts, datas = {}, {}
   for i, t in ipairs(tensors) do
      conts[i] = M.contiguous(t)
      datas[i] = M.data(conts[i])
   end
   fn(n, datas)
   for i, t in ipairs(tensors) do
      if conts[i] ~= t then M.copy(t, conts[i]) end
   end
end

function M.apply(self, func)
   local numberAt = typeOfTensor(self).numberAt
   elementLoop({self}, function(n, d)
      local a = d[1]
      for i = 0, n - 1 do
         local r = func(numberAt(a, i))
         if r ~= nil then a[i] = r end
      end
   end)
   return self
end

function M.map(self, other, func)
   local na, nb = typeOfTensor(self).numberAt, typeOfTensor(other).numberAt
   elementLoop({self, other}, function(n, d)
      local a, b = d[1], d[2]
      for i = 0, n - 1 do
         local r = func(na(a, i), nb(b, i))
         if r ~= nil then a[i] = r end
      end
   end)
   return self
end

function M.map2(self, t1, t2, func)
   local na, nb, nc = typeOfTensor(self).numberAt, typeOfTensor(t1).numberAt, typeOfTensor(t2).numberAt
   elementLoop({self, t1, t2}, function(n, d)
      local a, b, c = d[1], d[2], d[3]
      for i = 0, n - 1 do
         local r = func(na(a, i), nb(b, i), nc(c, i))
         if r ~= nil then a[i] = r end
      end
   end)
   return self
end

-- ---------------------------------------------------------------- metatables

-- Number indexing: t[i] on a 1-D tensor is the number, else a select.
-- Table indexing (t[{...}]) is installed by TensorIndex.lua as torch._indexTable.
-- t[LongStorage{i, j, ...}]: the element at a full 1-based index (Torch7).
local function elementOffset(self, idx)
   local c = self._c
   if idx:size() ~= c.ndim then
      error(string.format('index: %d indices for a %dD tensor', idx:size(), c.ndim), 3)
   end
   local off = 0
   for d = 0, c.ndim - 1 do
      local i = idx[d + 1]
      if i < 1 or i > c.size[d] then
         error(string.format('index %d out of range for dimension %d of size %d', i, d + 1, tonumber(c.size[d])), 3)
      end
      off = off + (i - 1) * c.stride[d]
   end
   return off
end
torch._elementOffset = elementOffset   -- HalfTensor's indexing (Half.lua)
torch._elementAt, torch._setElementAt = elementAt, setElementAt   -- t[{i, j}] (TensorIndex.lua)

local function indexGet(self, k)
   if torch.isStorage(k) then
      return elementAt(self, elementOffset(self, k))
   end
   if type(k) == 'number' then
      local c = self._c
      if c.ndim == 0 then error('index: empty tensor', 2) end
      if k < 0 then k = tonumber(c.size[0]) + k + 1 end
      return M.select(self, 1, k)
   end
   local ix = torch._indexTable
   if ix and (type(k) == 'table' or torch.isTensor(k)) then return ix(self, k) end
   return nil
end

local function indexSet(self, k, v)
   if torch.isStorage(k) then
      setElementAt(self, elementOffset(self, k), v)
      return
   end
   if type(k) == 'number' then
      local c = self._c
      if c.ndim == 0 then error('index: empty tensor', 2) end
      if k < 0 then k = tonumber(c.size[0]) + k + 1 end
      if c.ndim == 1 then
         if k < 1 or k > c.size[0] or k ~= math.floor(k) then
            error(string.format('index %s out of range (size %d)', tostring(k), tonumber(c.size[0])), 2)
         end
         if type(v) ~= 'number' then error('assigning a non-number to a tensor element', 2) end
         setElementAt(self, (k - 1) * c.stride[0], v)
         return
      end
      local slice = M.select(self, 1, k)
      if type(v) == 'number' then M.fill(slice, v) else M.copy(slice, v) end
      return
   end
   local ix = torch._newindexTable
   if ix and (type(k) == 'table' or torch.isTensor(k)) then return ix(self, k, v) end
   error('cannot set field ' .. tostring(k) .. ' of a ' .. torch.typename(self), 2)
end

-- Per-type replacements of shared methods (cutorch's GPU backend gives its Cuda types their own), which
-- win over M whenever the methods are installed again.
local overrides = {}         -- lt_type id -> {name = function}
torch._tensorOverrides = overrides

function torch._installTensorMethods()
   for id, mt in pairs(tensorMTs) do
      for k, v in pairs(M) do rawset(mt, k, v) end
      for k, v in pairs(overrides[id] or {}) do rawset(mt, k, v) end
   end
end

-- Operators: a metamethod set on a tensor class (function
-- torch.DoubleTensor:__sub(o) ... end, as Torch7 code may do, its class
-- table being the userdata metatable) wins over the built-in one in `ops`.
local function classOperator(x, name)
   if not torch.isTensor(x) then return nil end
   local mt = tensorMTs[x._c.type]
   return mt and rawget(mt, name)
end

local function opForward(name)
   return function(a, b)
      local f = classOperator(a, name) or classOperator(b, name) or ops[name]
      if not f then error('tensor operator ' .. name .. ' is not available', 2) end
      return f(a, b)
   end
end

for _, ty in ipairs(torch._types) do
   local mt = {}
   tensorMTs[ty.id] = mt
   local handleName = 'TH' .. ty.name .. 'Tensor'
   ffi.cdef(string.format('typedef struct %s { lt_tensor _c; } %s;', handleName, handleName))
   -- The FFI metatable is locked once metatype'd, so it only forwards: methods
   -- are looked up in the (mutable) class table mt, operators in `ops`.
   local ffimt = {
      __index = function(self, k)
         local m = mt[k]
         if m ~= nil then return m end
         return indexGet(self, k)
      end,
      __newindex = indexSet,
      __len = function(self) return M.size(self) end,
      __tostring = function(self)
         if torch._tensorToString then return torch._tensorToString(self) end
         return string.format('[%s of size %s]', ty.tensorname, table.concat(M.size(self):totable(), 'x'))
      end,
      __add = opForward('__add'), __sub = opForward('__sub'), __mul = opForward('__mul'),
      __div = opForward('__div'), __unm = opForward('__unm'), __mod = opForward('__mod'),
      __pow = opForward('__pow'),
   }
   local Handle = ffi.metatype(handleName, ffimt)
   handles[ty.id] = Handle
   torch._registerCType(Handle, ty.tensorname)
   torch._tensorCTypes[tonumber(Handle)] = true
   local ctor = makeConstructor(ty)
   torch._newclass(ty.tensorname, mt, ctor)
   -- Torch7's tensor.new is the type's constructor: x.new() is an empty tensor
   -- of x's type, x:new() a tensor sharing x.
   mt.new = ctor
   mt.__factory = function() return newTensor(ty.id) end
   mt._ty = ty
end
torch._installTensorMethods()

-- ---------------------------------------------------------------- defaults

local defaultType = 'torch.DoubleTensor'

function torch.setdefaulttensortype(name)
   local mt = torch.getmetatable(name)
   if not mt or not name:match('^torch%.%a+Tensor$') then
      error('torch.setdefaulttensortype: unknown tensor type ' .. tostring(name), 2)
   end
   defaultType = name
   torch.Tensor = mt.__constructor
   torch.Storage = torch.getmetatable(name:gsub('Tensor$', 'Storage')).__constructor
end

function torch.getdefaulttensortype() return defaultType end

-- torch.<fn>(tensor, ...) forms of the view methods.
for _, fname in ipairs {'narrow', 'select', 'sub', 'transpose', 't', 'unfold', 'squeeze', 'clone', 'contiguous',
                        'isContiguous', 'nElement', 'numel', 'totable', 'isSameSizeAs', 'isSetTo', 'isSize',
                        'typeAs'} do
   torch[fname] = torch[fname] or function(t, ...) return t[fname](t, ...) end
end
-- These take Torch7's optional result (a tensor, or a table for split and
-- chunk) first, so the method is the function.
for _, fname in ipairs {'view', 'viewAs', 'expand', 'expandAs', 'repeatTensor', 'permute', 'split', 'chunk'} do
   local f = M[fname]
   torch[fname] = function(...) return f(...) end
end
