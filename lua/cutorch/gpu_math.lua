-- The tensor math of cutorch's GPU backend that runs on the device: our kernels (native/cuda) through
-- lt_cuops (native/src/cuda_ops.c), and cuBLAS for addmm/mm.
--
-- Each function takes a method's arguments (self first) and returns true and the method's results when it
-- ran them on the device, or false when this form of the call is not one it handles (a host tensor
-- among the operands, operands on two devices, a type or argument form it does not take): the caller
-- then runs the method staged (gpu.lua), which also gives Torch7's errors for bad arguments.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(cutorch, deviceTensor)
   local D = {}

   local FLOAT = {[C.LT_CUDA_FLOAT] = true, [C.LT_CUDA_DOUBLE] = true, [C.LT_CUDA_HALF] = true}
   -- the pointwise operations the kernels also define for integer types
   local INTEGER_OK = {adds = true, muls = true, clamp = true, cadd = true, cmul = true}

   local function live(t) return deviceTensor(t) and t._c.storage ~= nil end
   local function isNum(v) return type(v) == 'number' end
   local function isT(v) return torch.isTensor(v) end

   -- the kernel launcher and copies of a device tensor's device (cunn's GPU modules use it too)
   local function opsOf(t)
      local o = C.lt_cuda_storage_ops(t._c.storage.device)
      if o == nil then check(-1, 4) end
      return o
   end
   cutorch._deviceOps = opsOf

   -- r (a device tensor, possibly empty) gets x's shape; true if r, x and the others are on one device.
   local function prepare(r, x, ...)
      if not deviceTensor(r) or not deviceTensor(x) then return false end
      local ty = x._c.type
      if x._c.storage == nil then   -- empty: nothing to compute, r only takes the (empty) shape
         if r._c.type ~= ty then return false end
         for i = 1, select('#', ...) do
            local y = select(i, ...)
            if not deviceTensor(y) or y._c.type ~= ty or M.nElement(y) ~= 0 then return false end
         end
         if r ~= x then M.resizeAs(r, x) end
         return true
      end
      if r._c.type ~= ty then return false end
      local n = M.nElement(x)
      for i = 1, select('#', ...) do
         local y = select(i, ...)
         if not live(y) or y._c.type ~= ty or M.nElement(y) ~= n then return false end
      end
      if r ~= x and (r._c.storage == nil or not M.isSameSizeAs(r, x)) then M.resizeAs(r, x) end
      local dev = x._c.storage.device
      if n > 0 and r._c.storage.device ~= dev then return false end
      for i = 1, select('#', ...) do
         if select(i, ...)._c.storage.device ~= dev then return false end
      end
      return true
   end

   -- r = op(x[, y[, z]]; a, b) on the device
   local function pointwise(op, r, x, y, z, a, b)
      if not (FLOAT[x and isT(x) and x._c.type] or INTEGER_OK[op]) then return false end
      local ok
      if z then ok = prepare(r, x, y, z) elseif y then ok = prepare(r, x, y) else ok = prepare(r, x) end
      if not ok then return false end
      if M.nElement(x) > 0 then
         check(C.lt_cuops_pointwise(opsOf(x), nil, op, r._c, x._c, y and y._c or nil, z and z._c or nil, a or 0,
                                    b or 0), 4)
      end
      return true, r
   end

   -- add and csub: (v) (y) (v, y) (x, v) (x, y) (x, v, y), sign -1 for csub
   local function addLike(sign)
      return function(self, a, b, c, extra)
         if extra ~= nil then return false end
         if isNum(a) and b == nil then return pointwise('adds', self, self, nil, nil, sign * a) end
         if isT(a) and b == nil then return pointwise('cadd', self, self, a, nil, sign) end
         if isNum(a) and isT(b) and c == nil then return pointwise('cadd', self, self, b, nil, sign * a) end
         if isT(a) and isNum(b) and c == nil then return pointwise('adds', self, a, nil, nil, sign * b) end
         if isT(a) and isT(b) and c == nil then return pointwise('cadd', self, a, b, nil, sign) end
         if isT(a) and isNum(b) and isT(c) then return pointwise('cadd', self, a, c, nil, sign * b) end
         return false
      end
   end
   D.add = addLike(1)
   D.csub = addLike(-1)

   -- mul, div, pow by a number: (v) (x, v)
   for name, op in pairs {mul = 'muls', div = 'divs', pow = 'pows'} do
      D[name] = function(self, a, b, extra)
         if extra ~= nil then return false end
         if isNum(a) and b == nil then return pointwise(op, self, self, nil, nil, a) end
         if isT(a) and isNum(b) then return pointwise(op, self, a, nil, nil, b) end
         return false
      end
   end

   -- cmul, cdiv: (y) (x, y)
   for name, op in pairs {cmul = 'cmul', cdiv = 'cdiv'} do
      D[name] = function(self, a, b, extra)
         if extra ~= nil then return false end
         if isT(a) and b == nil then return pointwise(op, self, self, a) end
         if isT(a) and isT(b) then return pointwise(op, self, a, b) end
         return false
      end
   end

   -- addcmul, addcdiv: (y, z) (v, y, z) (x, y, z) (x, v, y, z)
   for name, op in pairs {addcmul = 'addcmul', addcdiv = 'addcdiv'} do
      D[name] = function(self, a, b, c, d, extra)
         if extra ~= nil then return false end
         if isT(a) and isT(b) and c == nil then return pointwise(op, self, self, a, b, 1) end
         if isNum(a) and isT(b) and isT(c) and d == nil then return pointwise(op, self, self, b, c, a) end
         if isT(a) and isT(b) and isT(c) and d == nil then return pointwise(op, self, a, b, c, 1) end
         if isT(a) and isNum(b) and isT(c) and isT(d) then return pointwise(op, self, a, c, d, b) end
         return false
      end
   end

   -- unary functions: () in place, (x) into self
   for _, name in ipairs {'sqrt', 'rsqrt', 'exp', 'log', 'abs', 'neg', 'sign', 'tanh', 'sigmoid'} do
      D[name] = function(self, a, extra)
         if extra ~= nil then return false end
         if a == nil then return pointwise(name, self, self) end
         if isT(a) then return pointwise(name, self, a) end
         return false
      end
   end

   D.clamp = function(self, a, b, c, extra)
      if extra ~= nil then return false end
      if isNum(a) and isNum(b) and c == nil then return pointwise('clamp', self, self, nil, nil, a, b) end
      if isT(a) and isNum(b) and isNum(c) then return pointwise('clamp', self, a, nil, nil, b, c) end
      return false
   end

   -- ------------------------------------------------------------ reductions

   local result = ffi.new('double[1]')

   -- sum prod mean max min: () -> a number; (dim) -> a new tensor with dim of size 1 (max and min: and the
   -- 1-based indices, a CudaLongTensor). Result first, as Torch7's (and so torch.sum(r, x, dim), which is
   -- r:sum(x, dim)): r:sum(x, dim) into r; values:max(indices, x, dim) into both; values:max(x, dim) into values
   -- and new indices. max and min of two tensors are cmax and cmin. mean of integers runs staged (the CPU's
   -- integer division).
   local function sameStorage(a, b) return a._c.storage ~= nil and a._c.storage == b._c.storage end

   -- op along dim of x into out (and ind, for max and min; nil: a new one): true, out[, ind], or false
   local function alongDim(op, out, ind, x, dim)
      if not live(x) or not isNum(dim) or dim < 1 or dim > x._c.ndim or dim ~= math.floor(dim) then return false end
      local minmax = op == 'max' or op == 'min'
      if minmax and x:size(dim) == 0 then return false end
      out = out or x.new()
      if minmax then ind = ind or torch.CudaLongTensor() end
      if not deviceTensor(out) or out._c.type ~= x._c.type then return false end
      if ind and (ind._c.type ~= C.LT_CUDA_LONG or not deviceTensor(ind)) then return false end
      -- a result over x's memory would be written while x is read: the CPU's order decides, staged
      if sameStorage(out, x) or (ind and sameStorage(ind, x)) then return false end
      local size = M.size(x)
      size[dim] = 1
      local dev = x._c.storage.device
      for _, r in ipairs {out, ind} do
         if not (r._c.storage ~= nil and M.isSize(r, size)) then M.resize(r, size) end
         if r._c.storage.device ~= dev then return false end
      end
      check(C.lt_cuops_reduce_dim(opsOf(x), nil, op, out._c, ind and ind._c or nil, x._c, dim - 1), 4)
      if ind then return true, out, ind end
      return true, out
   end

   for _, op in ipairs {'sum', 'prod', 'mean'} do
      D[op] = function(self, a, b, extra)
         if extra ~= nil or (op == 'mean' and not FLOAT[self._c.type]) then return false end
         if isT(a) then return alongDim(op, self, nil, a, b) end
         if b ~= nil or not live(self) then return false end
         if a ~= nil then return alongDim(op, nil, nil, self, a) end
         if M.nElement(self) == 0 and op == 'mean' then return false end
         check(C.lt_cuops_reduce(opsOf(self), nil, op, self._c, 0, result), 3)
         return true, result[0]
      end
   end

   for op, pairwise in pairs {max = 'cmax', min = 'cmin'} do
      D[op] = function(self, a, b, c, extra)
         if extra ~= nil then return false end
         if a == nil then
            if not live(self) or M.nElement(self) == 0 then return false end
            check(C.lt_cuops_reduce(opsOf(self), nil, op, self._c, 0, result), 3)
            return true, result[0]
         end
         if isNum(a) then
            if b ~= nil then return false end
            return alongDim(op, nil, nil, self, a)
         end
         if not isT(a) then return false end
         if isT(b) and c ~= nil then return alongDim(op, self, a, b, c) end
         if isNum(b) then
            if c ~= nil then return false end
            return alongDim(op, self, nil, a, b)
         end
         -- (y) and (x, y): the CPU's max is then torch.cmax with the same arguments
         if b == nil then return true, torch[pairwise](self, a) end
         return true, torch[pairwise](self, a, b)
      end
   end

   -- norm: (p) over all elements, default 2
   D.norm = function(self, p, extra)
      if extra ~= nil or not live(self) or not FLOAT[self._c.type] then return false end
      if p ~= nil and not isNum(p) then return false end
      check(C.lt_cuops_reduce(opsOf(self), nil, 'norm', self._c, p or 2, result), 3)
      return true, result[0]
   end

   -- ------------------------------------------------------------ matrix products (cuBLAS)

   local GEMM = {[C.LT_CUDA_FLOAT] = true, [C.LT_CUDA_DOUBLE] = true, [C.LT_CUDA_HALF] = true}   -- (half: GemmEx)

   local function addmm(self, beta, m, alpha, a, b)
      if not (live(m) and live(a) and live(b) and deviceTensor(self)) or not GEMM[m._c.type] then return false end
      local ty = m._c.type
      if a._c.type ~= ty or b._c.type ~= ty or self._c.type ~= ty then return false end
      if a._c.ndim ~= 2 or b._c.ndim ~= 2 or m._c.ndim ~= 2 then return false end
      local rows, cols = a:size(1), b:size(2)
      if a:size(2) ~= b:size(1) or m:size(1) ~= rows or m:size(2) ~= cols then return false end
      if self ~= m then
         if not (self._c.storage ~= nil and self:isSize(m:size())) then M.resizeAs(self, m) end
         if beta ~= 0 then M.copy(self, m) end
      end
      local dev = m._c.storage.device
      for _, t in ipairs {self, a, b} do
         if t._c.storage ~= nil and t._c.storage.device ~= dev then return false end
      end
      check(C.lt_cuops_addmm(opsOf(m), nil, self._c, beta, self._c, alpha, a._c, b._c), 4)
      return true, self
   end

   -- Torch7's argument forms of addmm, addmv and addr: [v1,] [M,] [v2,] x, y, where M defaults to self and a
   -- lone number before x and y is v2 (nn.Linear's gradWeight:addmm(scale, gradOutput:t(), input)). Returns
   -- beta, M, alpha, x, y; nil for a form it does not take (then the method runs staged).
   local function productForm(self, a, b, c, d, e, extra)
      if extra ~= nil then return nil end
      if isT(a) and isT(b) and c == nil then return 1, self, 1, a, b end
      if isNum(a) and isT(b) and isT(c) and d == nil then return 1, self, a, b, c end
      if isT(a) and isT(b) and isT(c) and d == nil then return 1, a, 1, b, c end
      if isNum(a) and isNum(b) and isT(c) and isT(d) and e == nil then return a, self, b, c, d end
      if isNum(a) and isT(b) and isNum(c) and isT(d) and isT(e) then return a, b, c, d, e end
      return nil
   end

   D.addmm = function(self, ...)
      local beta, m, alpha, x, y = productForm(self, ...)
      if not beta then return false end
      return addmm(self, beta, m, alpha, x, y)
   end

   -- matrix-vector and outer products as matrix products of (n x 1) and (1 x n) views
   local function column(t) return t:view(t:size(1), 1) end
   D.addmv = function(self, ...)
      local beta, m, alpha, mat, vec = productForm(self, ...)
      if not beta or not (live(mat) and live(vec) and live(m)) or vec._c.ndim ~= 1 or m._c.ndim ~= 1 then
         return false
      end
      if self ~= m then
         if not (self._c.storage ~= nil and self:isSameSizeAs(m)) then M.resizeAs(self, m) end
         if beta ~= 0 then M.copy(self, m) end
      end
      if self._c.ndim ~= 1 or not M.isContiguous(self) then return false end
      vec = M.contiguous(vec)
      local out = column(self)
      local done = addmm(out, beta, out, alpha, mat, column(vec))
      return done and true, self
   end
   D.addr = function(self, ...)
      local beta, m, alpha, x, y = productForm(self, ...)
      if not beta or not (live(x) and live(y)) or x._c.ndim ~= 1 or y._c.ndim ~= 1 then return false end
      x, y = M.contiguous(x), M.contiguous(y)   -- strided vectors (a matrix's column): a device copy
      return addmm(self, beta, m, alpha, column(x), y:view(1, y:size(1)))
   end

   D.ger = function(self, x, y, extra)
      if extra ~= nil or not (live(x) and live(y)) or x._c.ndim ~= 1 or y._c.ndim ~= 1 then return false end
      if not deviceTensor(self) or self._c.type ~= x._c.type then return false end
      if not (self._c.storage ~= nil and self._c.ndim == 2 and self:size(1) == x:size(1) and self:size(2) == y:size(1)) then
         M.resize(self, x:size(1), y:size(1))
      end
      return D.addr(self, 0, self, 1, x, y)
   end

   D.mm = function(self, a, b, extra)
      if extra ~= nil or not (live(a) and live(b)) or a._c.ndim ~= 2 or b._c.ndim ~= 2 then return false end
      if not deviceTensor(self) or self._c.type ~= a._c.type then return false end
      if not (self._c.storage ~= nil and self._c.ndim == 2 and self:size(1) == a:size(1) and self:size(2) == b:size(2)) then
         M.resize(self, a:size(1), b:size(2))
      end
      return addmm(self, 0, self, 1, a, b)
   end

   D.mv = function(self, mat, vec, extra)
      if extra ~= nil or not (live(mat) and live(vec)) or mat._c.ndim ~= 2 or vec._c.ndim ~= 1 then return false end
      if not deviceTensor(self) or self._c.type ~= mat._c.type then return false end
      vec = M.contiguous(vec)
      if not (self._c.storage ~= nil and self._c.ndim == 1 and self:size(1) == mat:size(1)) then
         M.resize(self, mat:size(1))
      end
      if not M.isContiguous(self) then return false end
      local out = column(self)
      local done = addmm(out, 0, out, 1, mat, column(vec))
      return done and true, self
   end

   -- Batched products: baddbmm r[i] = beta M[i] + alpha a[i] b[i], addbmm r = beta M + alpha sum_i a[i] b[i],
   -- bmm r[i] = a[i] b[i]. baddbmm and bmm are one strided batched cuBLAS call where every operand's entries lie
   -- alike, equally spaced (lt_cuops_baddbmm), else, as addbmm, one cuBLAS product per batch entry. A result sharing
   -- memory with a factor runs staged (each entry's product would read what an earlier one wrote).
   local function batchedFactors(self, a, b)
      if not (live(a) and live(b) and deviceTensor(self)) or a._c.ndim ~= 3 or b._c.ndim ~= 3 then return nil end
      local nb = a:size(1)
      if nb == 0 or b:size(1) ~= nb or a:size(3) ~= b:size(2) then return nil end
      if self._c.storage ~= nil and (self._c.storage == a._c.storage or self._c.storage == b._c.storage) then
         return nil
      end
      return nb
   end
   local function intoResult(self, beta, m)
      if self ~= m then
         if not (self._c.storage ~= nil and self:isSameSizeAs(m)) then M.resizeAs(self, m) end
         if beta ~= 0 then M.copy(self, m) end
      end
   end
   D.baddbmm = function(self, ...)
      local beta, m, alpha, a, b = productForm(self, ...)
      if not beta or not live(m) then return false end
      local nb = batchedFactors(self, a, b)
      if not nb or m._c.ndim ~= 3 or m:size(1) ~= nb or m:size(2) ~= a:size(2) or m:size(3) ~= b:size(3) then
         return false
      end
      intoResult(self, beta, m)
      local dev = m._c.storage.device
      if self._c.storage.device == dev and a._c.storage.device == dev and b._c.storage.device == dev then
         local rc = C.lt_cuops_baddbmm(opsOf(m), nil, self._c, beta, alpha, a._c, b._c)
         if rc == 0 then return true, self end
         if rc < 0 then check(rc, 3) end
      end
      for i = 1, nb do
         local r = M.select(self, 1, i)
         if not addmm(r, beta, r, alpha, M.select(a, 1, i), M.select(b, 1, i)) then return false end
      end
      return true, self
   end
   D.addbmm = function(self, ...)
      local beta, m, alpha, a, b = productForm(self, ...)
      if not beta or not live(m) then return false end
      local nb = batchedFactors(self, a, b)
      if not nb or m._c.ndim ~= 2 or m:size(1) ~= a:size(2) or m:size(2) ~= b:size(3) then return false end
      intoResult(self, beta, m)
      for i = 1, nb do
         if not addmm(self, i == 1 and beta or 1, self, alpha, M.select(a, 1, i), M.select(b, 1, i)) then
            return false
         end
      end
      return true, self
   end
   D.bmm = function(self, a, b, extra)
      if extra ~= nil or not batchedFactors(self, a, b) or self._c.type ~= a._c.type then return false end
      if not (self._c.storage ~= nil and self._c.ndim == 3 and self:size(1) == a:size(1) and self:size(2) == a:size(2)
              and self:size(3) == b:size(3)) then
         M.resize(self, a:size(1), a:size(2), b:size(3))
      end
      return D.baddbmm(self, 0, self, 1, a, b)
   end

   -- dot: the sum of squares when both are one tensor (MSECriterion's), else the sum of a product
   D.dot = function(self, other, extra)
      if extra ~= nil or not (live(self) and live(other)) or not FLOAT[self._c.type] then return false end
      if other._c.type ~= self._c.type or M.nElement(other) ~= M.nElement(self) then return false end
      if other ~= self then
         local product = self.new()
         if not pointwise('cmul', product, self, other) then return false end
         return D.sum(product)
      end
      check(C.lt_cuops_reduce(opsOf(self), nil, 'sumsq', self._c, 0, result), 3)
      return true, result[0]
   end

   -- equal: same type and size, and every element equal (a NaN is not), through the device's eq and all
   D.equal = function(self, other, extra)
      if extra ~= nil or not live(self) or not isT(other) then return false end
      if self._c.type ~= other._c.type or not M.isSameSizeAs(self, other) then return true, false end
      if not live(other) or other._c.storage.device ~= self._c.storage.device then return false end
      return true, self:eq(other):all()
   end

   -- diag([k]) and r:diag(x, [k]): a matrix's k-th diagonal copied out of a strided view of it, or a vector laid
   -- along the k-th diagonal of a zeroed square matrix (copies on the device)
   D.diag = function(self, a, b, extra)
      local r, x, k
      if isT(a) then r, x, k = self, a, b else x, k = self, a end
      if extra ~= nil or (k ~= nil and not isNum(k)) or not live(x) then return false end
      k = k or 0
      if k ~= math.floor(k) then return false end
      if r and (not deviceTensor(r) or r._c.type ~= x._c.type or (r._c.storage ~= nil and r._c.storage == x._c.storage)) then
         return false
      end
      local function strided(base, offset, n, stride)
         return base.new():set(base:storage(), base:storageOffset() + offset, torch.LongStorage{n},
                               torch.LongStorage{stride})
      end
      if x._c.ndim == 2 then
         local n = k >= 0 and math.min(x:size(1), x:size(2) - k) or math.min(x:size(1) + k, x:size(2))
         if n <= 0 then return false end
         local view = strided(x, k >= 0 and k * x:stride(2) or -k * x:stride(1), n, x:stride(1) + x:stride(2))
         r = r or x.new()
         M.resize(r, n)
         M.copy(r, view)
         return true, r
      elseif x._c.ndim == 1 then
         local n = x:size(1) + math.abs(k)
         r = r or x.new()
         M.resize(r, n, n)
         if not M.isContiguous(r) then return false end
         M.zero(r)
         M.copy(strided(r, k >= 0 and k or -k * n, x:size(1), n + 1), x)
         return true, r
      end
      return false
   end

   -- totable: the values of a host copy in the host type
   D.totable = function(self)
      if not live(self) then return false end
      return true, M.totable(M.type(self, 'torch.' .. torch._typesById[self._c.type].hostName .. 'Tensor'))
   end

   -- ------------------------------------------------------------ operators: new results

   D.__add = function(a, b)
      if isNum(a) then a, b = b, a end
      if not live(a) then return false end
      return D.add(a.new(), a, b)
   end
   D.__sub = function(a, b)
      if not live(a) then return false end
      if isNum(b) then return D.add(a.new(), a, -b) end
      if isT(b) then return D.add(a.new(), a, -1, b) end
      return false
   end
   D.__mul = function(a, b)
      if isNum(a) then a, b = b, a end
      if not live(a) then return false end
      if isNum(b) then return D.mul(a.new(), a, b) end
      if isT(b) and a._c.ndim == 2 and b._c.ndim == 2 then return D.mm(a.new(), a, b) end
      return false
   end
   D.__div = function(a, b)
      if not (live(a) and isNum(b)) then return false end
      return D.div(a.new(), a, b)
   end
   D.__unm = function(a)
      if not live(a) then return false end
      return D.mul(a.new(), a, -1)
   end

   -- uniform([a, b]), normal([mean, std]), bernoulli([p]) with numbers: the Philox stream of cutorch.manualSeed
   -- (nn.Dropout's), two draws per element, any type and layout (a Generator or a tensor of probabilities: staged).
   -- check2(a, b) may raise the CPU's error, or return false to run the call staged.
   local function randomFill(kind, da, db, check2)
      return function(self, a, b, extra)
         if not live(self) or extra ~= nil or (a ~= nil and not isNum(a)) or (b ~= nil and not isNum(b)) then
            return false
         end
         a, b = a == nil and da or a, b == nil and db or b
         if check2 and check2(a, b) == false then return false end
         local n = M.nElement(self)
         local seed, offset = cutorch._philoxDraws(2 * n)
         check(C.lt_cuops_random(opsOf(self), nil, self._c, kind, a, b, seed, offset), 3)
         return true, self
      end
   end
   D.uniform = randomFill(0, 0, 1)
   D.normal = randomFill(1, 0, 1, function(_, std)
      if not (std > 0) then error(string.format('standard deviation must be strictly positive (got %g)', std), 4) end
   end)
   D.bernoulli = randomFill(2, 0.5, 0, function(p)
      if not (p >= 0 and p <= 1) then error(string.format('bernoulli: p must be >= 0 and <= 1 (got %g)', p), 4) end
   end)

   -- Torch7's functions of two tensors with an optional result first and an option last (cross, conv2, ...):
   -- self:f(y [, option]) or self:f(x, y [, option]) as true, r (nil: a new result), x, y, option; false for more
   -- arguments
   local function resultFirstPair(self, a, b, c, extra)
      if isT(b) then return extra == nil, self, a, b, c end
      return extra == nil and c == nil, nil, self, a, b
   end

   -- The other families of device methods, one file each (lua/cutorch/gpu_<family>.lua: a function of D and
   -- these helpers that adds its methods to D).
   local H = {live = live, isNum = isNum, isT = isT, opsOf = opsOf, prepare = prepare, pointwise = pointwise,
              FLOAT = FLOAT, deviceTensor = deviceTensor, cutorch = cutorch,
              randomFill = randomFill, resultFirstPair = resultFirstPair}
   for _, family in ipairs {'compare', 'sort', 'index', 'masked', 'matrix', 'multinomial', 'conv'} do
      require('cutorch.gpu_' .. family)(D, H)
   end

   return D
end
