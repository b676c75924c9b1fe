-- The index family on the device (native/cuda/index.cu through native/src/cuda_ops_index.c): index, indexCopy,
-- indexAdd, indexFill, gather, scatter, scatterAdd. Each returns false for a form it does not take (then the
-- method runs staged, which also gives Torch7's errors for bad arguments).
--   index*: the index vector (a LongTensor, or a CudaLongTensor read to the host: a synchronizing copy of its n
--   int64) is checked on the host (an out-of-range index is the CPU kernel's error) and uploaded as row lists.
--   gather/scatter: the index (a CudaLongTensor; a LongTensor is uploaded) is checked by a kernel whose verdict
--   is read back; when an index is out of range nothing is written and the call runs staged, which names it.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(D, H)
   local live, isNum, isT, opsOf, deviceTensor, cutorch = H.live, H.isNum, H.isT, H.opsOf, H.deviceTensor, H.cutorch
   local bad = ffi.new('int[1]')

   local function validDim(dim, t)
      return isNum(dim) and dim == math.floor(dim) and dim >= 1 and dim <= t._c.ndim
   end

   -- the index vector in host memory (a 1-D LongTensor with elements), or nil
   local function hostVector(idx)
      if not isT(idx) or idx._c.ndim ~= 1 then return nil end
      if idx._c.type == C.LT_LONG then return idx end
      if idx._c.type == C.LT_CUDA_LONG and live(idx) then return M.long(idx) end
      return nil
   end

   -- the index on the device (a CudaLongTensor on t's device), or nil
   local function deviceIndex(idx, t)
      if not isT(idx) then return nil end
      if idx._c.type == C.LT_LONG and idx._c.storage ~= nil then
         idx = cutorch.withDevice(t._c.storage.device + 1, function() return M.type(idx, 'torch.CudaLongTensor') end)
      end
      if idx._c.type ~= C.LT_CUDA_LONG or not live(idx) or idx._c.storage.device ~= t._c.storage.device then
         return nil
      end
      return idx
   end

   local function onDeviceOf(t, x) return x._c.storage == nil or x._c.storage.device == t._c.storage.device end
   local function sameStorage(a, b) return a._c.storage ~= nil and a._c.storage == b._c.storage end

   -- r gets size (Torch7's resize: a tensor that has it already keeps its strides)
   local function resizeTo(r, size)
      if not (r._c.storage ~= nil and M.isSize(r, size)) then M.resize(r, size) end
   end

   -- index and gather: (dim, idx) on self into a new tensor, or (src, dim, idx) into self; res, src, dim, idx
   -- when both are device tensors of one type and dim is one of src's, else nil
   local function selectForm(self, a, b, c, extra)
      local res, src, dim, idx = self, a, b, c
      if not isT(a) then
         if c ~= nil then return nil end
         res, src, dim, idx = self.new(), self, a, b
      elseif extra ~= nil then
         return nil
      end
      if not (deviceTensor(res) and live(src)) or res._c.type ~= src._c.type or not validDim(dim, src) then
         return nil
      end
      return res, src, dim, idx
   end

   -- index: (dim, idx) -> a new tensor; (src, dim, idx) into self
   D.index = function(self, a, b, c, extra)
      local res, src, dim, idx = selectForm(self, a, b, c, extra)
      if not res then return false end
      local hidx = hostVector(idx)
      if not hidx or M.nElement(hidx) == 0 or sameStorage(res, src) or (isT(idx) and sameStorage(res, idx)) then
         return false
      end
      local size = M.size(src)
      size[dim] = M.nElement(hidx)
      resizeTo(res, size)
      if not onDeviceOf(src, res) then return false end
      check(C.lt_cuops_index_select(opsOf(src), nil, res._c, src._c, dim - 1, hidx._c), 3)
      return true, res
   end

   local function indexCopyAdd(add)
      return function(self, dim, idx, src, extra)
         if extra ~= nil or not (live(self) and live(src)) or src._c.type ~= self._c.type then return false end
         if not (validDim(dim, self) and validDim(dim, src)) or not onDeviceOf(self, src) then return false end
         local hidx = hostVector(idx)
         if not hidx or M.nElement(hidx) ~= src:size(dim) or M.nElement(hidx) == 0 then return false end
         if M.nElement(self) / self:size(dim) ~= M.nElement(src) / src:size(dim) then return false end
         if sameStorage(self, src) then src = M.clone(src) end
         check(C.lt_cuops_index_copy(opsOf(self), nil, self._c, dim - 1, hidx._c, src._c, add), 3)
         return true, self
      end
   end
   D.indexCopy = indexCopyAdd(0)
   D.indexAdd = indexCopyAdd(1)

   D.indexFill = function(self, dim, idx, value, extra)
      if extra ~= nil or not live(self) or not isNum(value) or not validDim(dim, self) then return false end
      local hidx = hostVector(idx)
      if not hidx then return false end
      check(C.lt_cuops_index_fill(opsOf(self), nil, self._c, dim - 1, hidx._c, value), 3)
      return true, self
   end

   -- index has t's dimensions and sizes but along dim
   local function fits(t, index, dim)
      if index._c.ndim ~= t._c.ndim then return false end
      for d = 1, t._c.ndim do
         if d ~= dim and index:size(d) ~= t:size(d) then return false end
      end
      return true
   end

   -- gather: (dim, idx) -> a new tensor; (src, dim, idx) into self
   D.gather = function(self, a, b, c, extra)
      local res, src, dim, idx = selectForm(self, a, b, c, extra)
      if not res then return false end
      local didx = deviceIndex(idx, src)
      if not didx or not fits(src, didx, dim) or sameStorage(res, src) or sameStorage(res, didx) then return false end
      resizeTo(res, M.size(didx))
      if not onDeviceOf(src, res) then return false end
      check(C.lt_cuops_gather(opsOf(src), nil, res._c, src._c, dim - 1, didx._c, bad), 3)
      if bad[0] ~= 0 then return false end
      return true, res
   end

   local function scatterLike(add)
      return function(self, dim, idx, src, extra)
         if extra ~= nil or not live(self) or not validDim(dim, self) then return false end
         if not (isNum(src) and not add) then
            if not (live(src) and src._c.type == self._c.type and onDeviceOf(self, src)) then return false end
         end
         local didx = deviceIndex(idx, self)
         if not didx or not fits(self, didx, dim) then return false end
         if isT(src) then
            if not fits(self, src, dim) or src:size(dim) < didx:size(dim) then return false end
            if sameStorage(self, src) then src = M.clone(src) end
         end
         if sameStorage(self, didx) then didx = M.clone(didx) end
         check(C.lt_cuops_scatter(opsOf(self), nil, self._c, dim - 1, didx._c, isT(src) and src._c or nil,
                                  add and 1 or 0, isNum(src) and src or 0, bad), 3)
         if bad[0] ~= 0 then return false end
         return true, self
      end
   end
   D.scatter = scatterLike(false)
   D.scatterAdd = scatterLike(true)

   -- ------------------------------------------------------------ norm, var, std, dist, renorm (stats.cu)

   local FLOAT2 = {[C.LT_CUDA_FLOAT] = true, [C.LT_CUDA_DOUBLE] = true}
   local whole = ffi.new('double[1]')

   -- op over all elements (a number), or along dim into res (a new tensor when res is nil)
   local function stat(op, res, x, dim, p, biased)
      if not (live(x) and FLOAT2[x._c.type]) then return false end
      if dim == nil then
         check(C.lt_cuops_stat(opsOf(x), nil, op, nil, x._c, -1, p, biased and 1 or 0, whole), 4)
         return true, whole[0]
      end
      if not validDim(dim, x) then return false end
      res = res or x.new()
      if not deviceTensor(res) or res._c.type ~= x._c.type then return false end
      local size = M.size(x)
      size[dim] = 1
      resizeTo(res, size)
      if not onDeviceOf(x, res) then return false end
      check(C.lt_cuops_stat(opsOf(x), nil, op, res._c, x._c, dim - 1, p, biased and 1 or 0, whole), 4)
      return true, res
   end

   -- var, std: ([biased]) -> a number; (dim [, biased]) -> a new tensor; (x, dim [, biased]) into self
   for _, op in ipairs {'var', 'std'} do
      D[op] = function(self, a, b, c, extra)
         if extra ~= nil then return false end
         if a == nil or type(a) == 'boolean' then
            if b ~= nil then return false end
            return stat(op, nil, self, nil, 0, a)
         end
         if isT(a) then
            if c ~= nil and type(c) ~= 'boolean' then return false end
            return stat(op, self, a, b, 0, c)
         end
         if c ~= nil or (b ~= nil and type(b) ~= 'boolean') then return false end
         return stat(op, nil, self, a, 0, b)
      end
   end

   -- norm: ([p]) over all elements (gpu_math's); (p, dim) -> a new tensor; (x, p, dim) into self
   local normAll = D.norm
   D.norm = function(self, a, b, c, extra)
      if extra ~= nil then return false end
      if isT(a) then
         if not (b == nil or isNum(b)) or not isNum(c) then return false end
         return stat('norm', self, a, c, b or 2, false)
      end
      if b == nil then return normAll(self, a, c) end
      if c ~= nil or not (a == nil or isNum(a)) or not isNum(b) then return false end
      return stat('norm', nil, self, b, a or 2, false)
   end

   -- dist(other [, p]): the p-norm of self - other, in double
   D.dist = function(self, other, p, extra)
      if extra ~= nil or (p ~= nil and not isNum(p)) or not (live(self) and live(other)) then return false end
      if other._c.type ~= self._c.type or M.nElement(other) ~= M.nElement(self) then return false end
      local diff = self.new()
      if not D.add(diff, self, -1, other) then return false end
      return stat('norm', nil, diff, nil, p or 2, false)
   end

   -- renorm: (p, dim, maxnorm) in place; (x, p, dim, maxnorm) into self
   D.renorm = function(self, a, b, c, d, extra)
      local x = self
      if isT(a) then x, a, b, c, d = a, b, c, d, nil end
      if extra ~= nil or d ~= nil or not (isNum(a) and isNum(c) and live(x) and FLOAT2[x._c.type]) then
         return false
      end
      if not (a > 0) or x._c.ndim < 2 or not validDim(b, x) or not deviceTensor(self) or self._c.type ~= x._c.type then
         return false
      end
      if self ~= x then
         if not (self._c.storage ~= nil and M.isSameSizeAs(self, x)) then M.resizeAs(self, x) end
         if not onDeviceOf(x, self) then return false end
      end
      check(C.lt_cuops_renorm(opsOf(x), nil, self._c, x._c, b - 1, a, c), 3)
      return true, self
   end

   -- ------------------------------------------------------------ cumsum, cumprod (scan.cu)

   -- ([dim = 1]) -> a new tensor; (x [, dim = 1]) into self
   for prod, op in pairs {[0] = 'cumsum', [1] = 'cumprod'} do
      D[op] = function(self, a, b, extra)
         local res, x, dim = self.new(), self, a
         if isT(a) then res, x, dim = self, a, b elseif b ~= nil then return false end
         dim = dim == nil and 1 or dim
         if extra ~= nil or not (live(x) and deviceTensor(res)) or res._c.type ~= x._c.type or not validDim(dim, x) then
            return false
         end
         if res ~= x then
            if not (res._c.storage ~= nil and M.isSameSizeAs(res, x)) then M.resizeAs(res, x) end
            if not onDeviceOf(x, res) then return false end
         end
         check(C.lt_cuops_scan(opsOf(x), nil, res._c, x._c, dim - 1, prod), 3)
         return true, res
      end
   end

   -- ------------------------------------------------------------ trace, all, any

   -- trace: the sum of a matrix's diagonal (a strided view of it, summed by gpu_math's device sum)
   D.trace = function(self, extra)
      if extra ~= nil or not live(self) or self._c.ndim ~= 2 then return false end
      local n = math.min(self:size(1), self:size(2))
      if n == 0 then return false end
      local diag = self.new():set(M.storage(self), M.storageOffset(self), torch.LongStorage {n},
                                  torch.LongStorage {self:stride(1) + self:stride(2)})
      return D.sum(diag)
   end

   -- all, any: from the count of non-zero elements (norm 0 in double; other types than Float and Double are
   -- converted to CudaDouble on the device first, which keeps zero and non-zero apart)
   for any, op in pairs {[0] = 'all', [1] = 'any'} do
      D[op] = function(self, extra)
         if extra ~= nil or not live(self) then return false end
         local x = FLOAT2[self._c.type] and self or cutorch.withDevice(self._c.storage.device + 1, function()
            return M.type(self, 'torch.CudaDoubleTensor')
         end)
         local done, count = stat('norm', nil, x, nil, 0, false)
         if not done then return false end
         if any == 1 then return true, count > 0 end
         return true, count == M.nElement(self)
      end
   end

   -- ------------------------------------------------------------ nonzero

   -- () -> a new CudaLongTensor of 1-based coordinates, one row per non-zero element in row-major order;
   -- (src) into self (a CudaLongTensor). The count is read back first (the result's size).
   local count = ffi.new('int64_t[1]')
   D.nonzero = function(self, src, extra)
      local res, x = self, src
      if src == nil then res, x = torch.CudaLongTensor(), self end
      if extra ~= nil or not (live(x) and deviceTensor(res)) or res._c.type ~= C.LT_CUDA_LONG then return false end
      if x._c.ndim > 8 or sameStorage(res, x) then return false end
      local ops = opsOf(x)
      check(C.lt_cuops_nonzero_count(ops, nil, x._c, count), 3)
      local n = tonumber(count[0])
      if n == 0 then   -- the CPU kernel leaves a fresh result empty
         if res._c.ndim ~= 0 then return false end
         return true, res
      end
      if not (res._c.storage ~= nil and res._c.ndim == 2 and res:size(1) == n and res:size(2) == x._c.ndim
              and M.isContiguous(res)) then
         cutorch.withDevice(x._c.storage.device + 1, function() M.resize(res, n, x._c.ndim) end)
      end
      if not (M.isContiguous(res) and onDeviceOf(x, res)) then return false end
      check(C.lt_cuops_nonzero(ops, nil, res._c, x._c), 3)
      return true, res
   end
end
