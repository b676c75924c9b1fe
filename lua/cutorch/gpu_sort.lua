-- cutorch's sort family on the device (native/cuda/sort.cu through lt_cuops_sort): sort, topk, kthvalue, median
-- and mode, with Torch7's argument forms (lua/torch/TensorSort.lua):
--   x:sort([dim], [descending]), x:sort(true), x:topk([k=1], [dim], [dir=false], [sorted=false]), x:kthvalue(k, [dim]),
--   x:median([dim]), x:mode([dim]), each also with results first: values:sort(indices, x, ...), values:sort(x, ...)
--   or indices:sort(x, ...) (and torch.sort(...) and the others, which call these methods).
-- dim defaults to the last dimension. Results are in the CPU sort's order (stable, NaN after every number
-- ascending and before every number descending), so values and indices match the CPU's exactly; topk with
-- sorted=false returns its k in sorted order, or in index order where the selection runs (Torch7 leaves that
-- order unspecified). Other forms, bad arguments
-- and host operands return false: they run staged, which gives Torch7's errors.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check

return function(D, H)
   local live, isT, isNum, opsOf, deviceTensor = H.live, H.isT, H.isNum, H.opsOf, H.deviceTensor
   local LONG = C.LT_CUDA_LONG

   -- [values, indices,] x, rest... as TensorSort's resultPair: values, indices (each may be nil), x, rest...
   local function resultPair(a, b, c, ...)
      if isT(a) and isT(b) and isT(c) then return a, b, c, ... end
      if isT(a) and isT(b) then
         if a._c.type == b._c.type then return a, nil, b, c, ... end
         if a._c.type == LONG then return nil, a, b, c, ... end
         return nil
      end
      return nil, nil, a, b, c, ...
   end

   -- the 0-based dimension of x that dim names (nil: the last), or nil for a form left to the staged path
   local function dimOf(x, dim)
      local nd = x._c.ndim
      if dim == nil then return nd - 1 end
      if not isNum(dim) or dim < 1 or dim > nd or dim ~= math.floor(dim) then return nil end
      return dim - 1
   end

   local sizes = ffi.new('int64_t[?]', 8)

   -- runs op over x along d into values and indices (given or new, resized to x's shape with d of size count):
   -- true, values, indices; false where the results cannot be the device's (types, devices, values == x
   -- with another shape)
   local function run(op, rv, ri, x, d, count, desc, k)
      if not live(x) or x._c.ndim > 8 then return false end
      rv = rv or x.new()
      ri = ri or torch.CudaLongTensor()
      if not deviceTensor(rv) or rv._c.type ~= x._c.type or ri._c.type ~= LONG or rv == ri or ri == x then
         return false
      end
      local nd = x._c.ndim
      for i = 0, nd - 1 do sizes[i] = i == d and count or x._c.size[i] end
      if rv == x and count ~= tonumber(x._c.size[d]) then return false end
      for _, r in ipairs {rv, ri} do
         if r ~= x then check(C.lt_tensor_resize(r._c, nd, sizes), 4) end
      end
      local dev = x._c.storage.device
      for _, r in ipairs {rv, ri} do
         if r._c.storage ~= nil and r._c.storage.device ~= dev then return false end
      end
      if rv._c.ndim ~= nd or ri._c.ndim ~= nd then return false end   -- a size-0 result
      check(C.lt_cuops_sort(opsOf(x), nil, op, rv._c, ri._c, x._c, d, desc and 1 or 0, k or 0), 4)
      return true, rv, ri
   end

   local function optBool(v) return v == nil or type(v) == 'boolean' end

   D.sort = function(self, ...)
      local rv, ri, x, dim, desc, extra = resultPair(self, ...)
      if not live(x) or extra ~= nil then return false end
      if type(dim) == 'boolean' and desc == nil then dim, desc = nil, dim end
      if not optBool(desc) then return false end
      if x._c.ndim == 0 then   -- an empty tensor sorts to empty results
         rv, ri = rv or x.new(), ri or torch.CudaLongTensor()
         if not deviceTensor(rv) or rv._c.type ~= x._c.type or ri._c.type ~= LONG then return false end
         C.lt_tensor_clear(rv._c)
         C.lt_tensor_clear(ri._c)
         return true, rv, ri
      end
      local d = dimOf(x, dim)
      if not d then return false end
      return run('sort', rv, ri, x, d, tonumber(x._c.size[d]), desc)
   end

   D.topk = function(self, ...)
      local rv, ri, x, k, dim, largest, sorted, extra = resultPair(self, ...)
      if not live(x) or extra ~= nil or x._c.ndim == 0 then return false end
      k = k == nil and 1 or k
      if not isNum(k) or k ~= math.floor(k) or not optBool(largest) or not optBool(sorted) then return false end
      local d = dimOf(x, dim)
      if not d or k < 1 or k > tonumber(x._c.size[d]) then return false end   -- k = 0: staged
      return run(sorted and 'topk' or 'topk_unsorted', rv, ri, x, d, k, largest, k)
   end

   D.kthvalue = function(self, ...)
      local rv, ri, x, k, dim, extra = resultPair(self, ...)
      if not live(x) or extra ~= nil or x._c.ndim == 0 or not isNum(k) or k ~= math.floor(k) then return false end
      local d = dimOf(x, dim)
      if not d or k < 1 or k > tonumber(x._c.size[d]) then return false end
      return run('kthvalue', rv, ri, x, d, 1, false, k)
   end

   -- median (the lower one: the ((n + 1) / 2)-th smallest) and mode: ([dim]), one pair per slice
   local function perSlice(op, kOf)
      return function(self, ...)
         local rv, ri, x, dim, extra = resultPair(self, ...)
         if not live(x) or extra ~= nil or x._c.ndim == 0 then return false end
         local d = dimOf(x, dim)
         if not d or tonumber(x._c.size[d]) < 1 then return false end
         return run(op, rv, ri, x, d, 1, false, kOf(tonumber(x._c.size[d])))
      end
   end
   D.median = perSlice('kthvalue', function(n) return math.floor((n + 1) / 2) end)
   D.mode = perSlice('mode', function() return 0 end)
end
