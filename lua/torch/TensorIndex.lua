-- Indexing: index/indexCopy/indexAdd/indexFill, gather/scatter, masked ops,
-- nonzero, cat/split/chunk, and Torch7's t[...] indexing (torch._indexTable /
-- torch._newindexTable, called by Tensor.lua for table and tensor keys).
-- The kernels are in native/src/index*.c; this file checks arguments and
-- picks between Torch7's argument forms.
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local newTensor = torch._newTensor
local alias = torch._alias

local LONG, BYTE = C.LT_LONG, C.LT_BYTE

local function tname(x)
   return torch.typename(x) or type(x)
end

local function checkTensor(x, fname, what, level)
   if not torch.isTensor(x) then
      error(string.format('%s: %s expected, got %s', fname, what or 'tensor', tname(x)), level + 1)
   end
end

local function checkSameType(t, x, fname, what, level)
   checkTensor(x, fname, what, level + 1)
   if x._c.type ~= t._c.type then
      error(string.format('%s: %s must be a %s (got %s)', fname, what, torch.typename(t), tname(x)), level + 1)
   end
end

local CUDA_LONG, CUDA_BYTE = C.LT_CUDA_LONG, C.LT_CUDA_BYTE
local function isCuda(t) return t._c.type >= C.LT_CUDA_BYTE end

-- The index tensor to pass to the kernels: a LongTensor, or cutorch's
-- CudaLongTensor; a Cuda tensor of another type indexing a Cuda tensor (as
-- cutorch accepted, and nn's OneHot uses) is converted to CudaLongTensor.
local function asIndex(self, idx, fname, level)
   if torch.isTensor(idx) then
      local ty = idx._c.type
      if ty == LONG or ty == CUDA_LONG then return idx end
      if self and isCuda(self) and isCuda(idx) and not torch._typesById[ty].half then
         return M.type(idx, 'torch.CudaLongTensor')
      end
   end
   error(string.format('%s: torch.LongTensor of indices expected, got %s', fname, tname(idx)), level + 1)
end

local function checkMask(mask, fname, level)
   if not torch.isTensor(mask) or (mask._c.type ~= BYTE and mask._c.type ~= CUDA_BYTE) then
      error(string.format('%s: torch.ByteTensor mask expected, got %s', fname, tname(mask)), level + 1)
   end
end

-- 0-based dimension; any number is passed on (the C side names bad ones).
local function cdim(d, fname, level)
   if type(d) ~= 'number' or d ~= math.floor(d) then
      error(string.format('%s: dimension (integer) expected, got %s', fname, tname(d)), level + 1)
   end
   return d - 1
end

local function checkNumber(v, fname, level)
   if type(v) ~= 'number' then error(string.format('%s: number expected, got %s', fname, tname(v)), level + 1) end
end

-- ---------------------------------------------------------------- index ops

-- index and gather: Torch7's optional result first, (res, src, dim, idx), or
-- on src (dim, idx) with a new result of src's type. The result of index has
-- src's size with idx's length along dim; that of gather has idx's size.
local function selectOp(fname, fn)
   return function(self, a, b, c)
      local res, src, dim, idx = self, a, b, c
      if not torch.isTensor(a) then res, src, dim, idx = newTensor(self._c.type), self, a, b end
      checkSameType(res, src, fname, 'source', 2)
      idx = asIndex(src, idx, fname, 2)
      check(fn(res._c, src._c, cdim(dim, fname, 2), idx._c), 2)
      return res
   end
end
M.index = selectOp('index', C.lt_index_select)
M.gather = selectOp('gather', C.lt_gather)

local function indexCopyAdd(fname, fn)
   return function(self, dim, idx, src)
      idx = asIndex(self, idx, fname, 2)
      checkSameType(self, src, fname, 'source', 2)
      check(fn(self._c, cdim(dim, fname, 2), idx._c, src._c), 2)
      return self
   end
end
M.indexCopy = indexCopyAdd('indexCopy', C.lt_index_copy)
M.indexAdd = indexCopyAdd('indexAdd', C.lt_index_add)

function M.indexFill(self, dim, idx, value)
   idx = asIndex(self, idx, 'indexFill', 2)
   checkNumber(value, 'indexFill', 2)
   check(C.lt_index_fill(self._c, cdim(dim, 'indexFill', 2), idx._c, value), 2)
   return self
end

-- t:scatter(dim, idx, src | value)
function M.scatter(self, dim, idx, src)
   idx = asIndex(self, idx, 'scatter', 2)
   local d = cdim(dim, 'scatter', 2)
   if type(src) == 'number' then
      check(C.lt_scatter_fill(self._c, d, idx._c, src), 2)
   else
      checkSameType(self, src, 'scatter', 'source (tensor or number)', 2)
      check(C.lt_scatter(self._c, d, idx._c, src._c, 0), 2)
   end
   return self
end

function M.scatterAdd(self, dim, idx, src)
   idx = asIndex(self, idx, 'scatterAdd', 2)
   checkSameType(self, src, 'scatterAdd', 'source', 2)
   check(C.lt_scatter(self._c, cdim(dim, 'scatterAdd', 2), idx._c, src._c, 1), 2)
   return self
end

-- ---------------------------------------------------------------- masks

-- src:maskedSelect(mask) -> new 1-D tensor; res:maskedSelect(src, mask) -> res.
function M.maskedSelect(self, a, b)
   local res, src, mask
   if b ~= nil then res, src, mask = self, a, b
   else res, src, mask = newTensor(self._c.type), self, a end
   checkSameType(res, src, 'maskedSelect', 'source', 2)
   checkMask(mask, 'maskedSelect', 2)
   check(C.lt_masked_select(res._c, src._c, mask._c), 2)
   return res
end

function M.maskedFill(self, mask, value)
   checkMask(mask, 'maskedFill', 2)
   checkNumber(value, 'maskedFill', 2)
   check(C.lt_masked_fill(self._c, mask._c, value), 2)
   return self
end

function M.maskedCopy(self, mask, src)
   checkMask(mask, 'maskedCopy', 2)
   checkSameType(self, src, 'maskedCopy', 'source', 2)
   check(C.lt_masked_copy(self._c, mask._c, src._c), 2)
   return self
end

-- t:nonzero() -> LongTensor N x t:dim() of 1-based subscripts; res:nonzero(t) -> res.
function M.nonzero(self, src)
   local res = self
   if src == nil then res, src = newTensor(isCuda(self) and CUDA_LONG or LONG), self
   else
      checkTensor(src, 'nonzero', 'tensor', 2)
      asIndex(nil, res, 'nonzero', 2)
   end
   check(C.lt_nonzero(res._c, src._c), 2)
   return res
end

-- ---------------------------------------------------------------- cat

local catbuf = ffi.new('lt_tensor*[?]', 64)
local catcap = 64

-- torch.cat([res,] t1, t2, [dim]) and torch.cat([res,] {t1, t2, ...}, [dim]);
-- dim defaults to the last dimension (Torch7's -1).
function torch.cat(a, b, c, d)
   local res, list, dim
   if type(a) == 'table' then
      list, dim = a, b
   elseif torch.isTensor(a) and type(b) == 'table' then
      res, list, dim = a, b, c
   elseif torch.isTensor(a) and torch.isTensor(b) and torch.isTensor(c) then
      res, list, dim = a, {b, c}, d
   elseif torch.isTensor(a) and torch.isTensor(b) then
      list, dim = {a, b}, c
   else
      error('cat: expected [result,] tensor, tensor, [dim] or [result,] {tensors}, [dim]', 2)
   end
   local n = #list
   if n == 0 then error('cat: invalid number of inputs 0', 2) end
   for i = 1, n do
      checkTensor(list[i], 'cat', 'tensor ' .. i, 2)
   end
   res = res or newTensor(list[1]._c.type)
   if dim == nil then dim = -1 end
   if type(dim) ~= 'number' or dim ~= math.floor(dim) or dim == 0 or dim < -1 then
      error('cat: invalid dimension ' .. tostring(dim), 2)
   end
   if n > catcap then
      catcap = n
      catbuf = ffi.new('lt_tensor*[?]', n)
   end
   for i = 1, n do catbuf[i - 1] = list[i]._c end
   local rc = C.lt_cat(res._c, catbuf, n, dim == -1 and -1 or dim - 1)
   for i = 1, n do catbuf[i - 1] = nil end -- keep no pointers into collectable tensors
   check(rc, 2)
   return res
end
M.cat = torch.cat

-- ---------------------------------------------------------------- split / chunk

-- torch.split([result,] t, size, [dim=1]): views of at most `size` along dim.
function torch.split(result, t, size, dim)
   if type(result) ~= 'table' then
      result, t, size, dim = {}, result, t, size
   else
      for k in pairs(result) do result[k] = nil end
   end
   checkTensor(t, 'split', 'tensor', 2)
   dim = dim or 1
   if type(size) ~= 'number' or size < 1 then error('split: positive split size expected, got ' .. tostring(size), 2) end
   local n = t:size(dim)
   local start = 1
   while start <= n do
      local len = math.min(size, n - start + 1)
      result[#result + 1] = t:narrow(dim, start, len)
      start = start + len
   end
   return result
end

-- torch.chunk([result,] t, n, [dim=1]): n views (fewer when dim is short) of ceil(size/n).
function torch.chunk(result, t, n, dim)
   if type(result) ~= 'table' then result, t, n, dim = {}, result, t, n end
   checkTensor(t, 'chunk', 'tensor', 2)
   dim = dim or 1
   if type(n) ~= 'number' or n < 1 then error('chunk: positive number of chunks expected, got ' .. tostring(n), 2) end
   return torch.split(result, t, math.ceil(t:size(dim) / n), dim)
end
M.split = torch.split
M.chunk = torch.chunk

-- torch.<fn>(t, ...) forms
for _, fname in ipairs {'index', 'indexCopy', 'indexAdd', 'indexFill', 'gather', 'scatter', 'scatterAdd',
                        'maskedSelect', 'maskedFill', 'maskedCopy', 'nonzero'} do
   local f = M[fname]
   torch[fname] = function(t, ...)
      checkTensor(t, fname, 'tensor', 2)
      return f(t, ...)
   end
end
-- These call the method of their first tensor (its result, or the source of the forms without one), so that
-- cutorch's device versions take GPU tensors (torch._throughMethods).
for _, fname in ipairs {'index', 'indexCopy', 'indexAdd', 'indexFill', 'gather', 'scatter', 'scatterAdd',
                        'nonzero', 'maskedSelect', 'maskedFill', 'maskedCopy'} do
   torch._throughMethod(fname, function(t) checkTensor(t, fname, 'tensor', 3) end)
end

-- ---------------------------------------------------------------- t[...]

-- Narrow/select `view` (an alias we own) following the entries of key k.
-- Returns the view, or (nil, number) when all entries were numbers that
-- reached a single element (Torch7 returns the value then), plus, in that
-- case, the element's storage offset.
local function walk(t, k, fname)
   local c0 = t._c
   local ndims = c0.ndim
   if #k > ndims then
      error(string.format('%s: too many indices provided (%d for a %dD tensor)', fname, #k, ndims), 3)
   end
   local v = alias(t)
   local c = v._c
   local cd = 0  -- current dimension of the view
   for i = 1, ndims do
      local e = k[i]
      if e == nil then break end
      local sz = tonumber(c.size[cd])
      if type(e) == 'number' then
         local z = math.floor(e)
         if z < 0 then z = sz + z + 1 end
         if z < 1 or z > sz then
            error(string.format('%s: index %s out of bound (dimension %d of size %d)', fname, tostring(e), i, sz), 3)
         end
         if c.ndim == 1 then
            return nil, c.offset + (z - 1) * c.stride[0]
         end
         c.offset = c.offset + (z - 1) * c.stride[cd]
         for j = cd, c.ndim - 2 do
            c.size[j] = c.size[j + 1]
            c.stride[j] = c.stride[j + 1]
         end
         c.ndim = c.ndim - 1
      elseif type(e) == 'table' then
         local s, en = 1, sz
         if type(e[1]) == 'number' then s = math.floor(e[1]); en = s end
         if s < 0 then s = sz + s + 1 end
         if s < 1 or s > sz then
            error(string.format('%s: start index %s out of bound (dimension %d of size %d)', fname,
                                tostring(e[1]), i, sz), 3)
         end
         if type(e[2]) == 'number' then en = math.floor(e[2]) end
         if en < 0 then en = sz + en + 1 end
         if en < 1 or en > sz then
            error(string.format('%s: end index %s out of bound (dimension %d of size %d)', fname,
                                tostring(e[2]), i, sz), 3)
         end
         if en < s then
            error(string.format('%s: end index must be greater or equal to start index (%d < %d in dimension %d)',
                                fname, en, s, i), 3)
         end
         c.offset = c.offset + (s - 1) * c.stride[cd]
         c.size[cd] = en - s + 1
         cd = cd + 1
      else
         error(string.format('%s: entry %d must be a number or a table, got %s', fname, i, tname(e)), 3)
      end
   end
   return v
end

local function keyError(t, k, level)
   error(string.format('indexing a %s with a %s (expected a table, a ByteTensor mask or a LongTensor of indices)',
                       torch.typename(t), tname(k)), level + 1)
end

function torch._indexTable(t, k)
   if type(k) == 'table' then
      local v, off = walk(t, k, 'index')
      if v then return v end
      return torch._elementAt(t, off - tonumber(t._c.offset))   -- GPU memory reads go through the driver
   end
   local ty = k._c.type
   -- the tensor's own methods: a Cuda tensor's are cutorch's (device versions on the GPU backend)
   if ty == BYTE or ty == CUDA_BYTE then return t:maskedSelect(k) end
   if ty == LONG or ty == CUDA_LONG then return t:index(1, k) end
   keyError(t, k, 2)
end

local function assign(view, v, level)
   if type(v) == 'number' then
      check(C.lt_tensor_fill(view._c, v), level + 1)
   elseif torch.isTensor(v) then
      check(C.lt_tensor_copy(view._c, v._c), level + 1)
   else
      error('expecting number or Tensor, got ' .. tname(v), level + 1)
   end
end

function torch._newindexTable(t, k, v)
   if type(k) == 'table' then
      local view, off = walk(t, k, 'newindex')
      if view then return assign(view, v, 2) end
      if type(v) ~= 'number' then
         error('newindex: a single element takes a number, got ' .. tname(v), 2)
      end
      return torch._setElementAt(t, off - tonumber(t._c.offset), v)
   end
   local ty = k._c.type
   if ty == BYTE or ty == CUDA_BYTE then
      if type(v) == 'number' then return t:maskedFill(k, v) end
      if torch.isTensor(v) and v._c.type == t._c.type then return t:maskedCopy(k, v) end
      error(string.format('newindex: number or %s expected, got %s', torch.typename(t), tname(v)), 2)
   end
   if ty == LONG or ty == CUDA_LONG then
      if type(v) == 'number' then return t:indexFill(1, k, v) end
      if torch.isTensor(v) and v._c.type == t._c.type then return t:indexCopy(1, k, v) end
      error(string.format('newindex: number or %s expected, got %s', torch.typename(t), tname(v)), 2)
   end
   keyError(t, k, 2)
end

torch._installTensorMethods()
