-- cutorch's comparisons (eq ne lt le gt ge), cmax/cmin, fmod/remainder/cfmod/cremainder, cpow, pow(v, x),
-- atan2, lerp, the unary functions floor ... expm1, tril/triu and maskedFill on the device (native/cuda/compare.cu through
-- native/src/cuda_ops_compare.c). Each returns true and the method's results when it ran on the device, or false
-- for a form it does not take (the call then runs staged, which also gives Torch7's errors).
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(D, H)
   local live, isNum, isT, opsOf, prepare = H.live, H.isNum, H.isT, H.opsOf, H.prepare
   local deviceTensor = H.deviceTensor
   local CUDA_BYTE = C.LT_CUDA_BYTE

   local function sameDevice(t, dev) return t._c.storage == nil or t._c.storage.device == dev end

   -- a device tensor without elements (its storage may be NULL)
   local function empty(t) return deviceTensor(t) and M.nElement(t) == 0 end

   -- a, then a number or a tensor of a's type and element count on a's device (or both without elements)
   local function operands(a, b)
      if empty(a) then return isNum(b) or (empty(b) and b._c.type == a._c.type) end
      if not live(a) then return false end
      if isNum(b) then return true end
      return live(b) and b._c.type == a._c.type and M.nElement(b) == M.nElement(a)
         and b._c.storage.device == a._c.storage.device
   end

   -- eq ne lt le gt ge: (b) -> a new CudaByteTensor mask of self's shape; (a, b) -> into self, a CudaByteTensor
   -- or a tensor of another Cuda type that gets the mask's 0/1 values (Torch7's result-first forms)
   for name, op in pairs {eq = C.LT_CMP_EQ, ne = C.LT_CMP_NE, lt = C.LT_CMP_LT, le = C.LT_CMP_LE, gt = C.LT_CMP_GT,
                          ge = C.LT_CMP_GE} do
      D[name] = function(r, a, b, extra)
         if extra ~= nil then return false end
         if b == nil then r, a, b = nil, r, a end
         if not operands(a, b) or (r ~= nil and not deviceTensor(r)) then return false end
         local mask = (r ~= nil and r._c.type == CUDA_BYTE) and r or torch.CudaByteTensor()
         if not (mask._c.storage ~= nil and M.isSameSizeAs(mask, a)) then M.resizeAs(mask, a) end
         local dev = a._c.storage ~= nil and a._c.storage.device or mask._c.storage ~= nil and mask._c.storage.device
         if dev and not sameDevice(mask, dev) then return false end
         if r ~= nil and r ~= mask then
            if not (r._c.storage ~= nil and M.isSameSizeAs(r, a)) then M.resizeAs(r, a) end
            if dev and not sameDevice(r, dev) then return false end
         end
         if M.nElement(a) > 0 then
            check(C.lt_cuops_compare(opsOf(a), nil, op, mask._c, a._c, isT(b) and b._c or nil,
                                     isNum(b) and b or 0), 3)
         end
         if r ~= nil and r ~= mask then
            M.copy(r, mask)
            return true, r
         end
         return true, mask
      end
   end

   -- the integer types' ranges: a divisor converts to the type (wrapping) before Torch7 checks it for zero
   local RANGE = {[C.LT_CUDA_BYTE] = {0, 255}, [C.LT_CUDA_CHAR] = {-128, 127}, [C.LT_CUDA_SHORT] = {-32768, 32767},
                  [C.LT_CUDA_INT] = {-2 ^ 31, 2 ^ 31 - 1}, [C.LT_CUDA_LONG] = {-2 ^ 53, 2 ^ 53}}

   -- self = f(x, y) for op (lt_binop) with y a tensor or a number; false for what runs staged
   local function binary(op, self, x, y)
      if not isT(x) or not (isNum(y) or isT(y)) then return false end
      local range = RANGE[x._c.type]
      if range and op == C.LT_OP_ATAN2 then return false end
      if range and (op == C.LT_OP_FMOD or op == C.LT_OP_REMAINDER) then
         if isT(y) then return false end   -- a zero divisor must raise Torch7's error
         local v = y < 0 and math.ceil(y) or math.floor(y)
         if v == 0 or v < range[1] or v > range[2] then return false end
      end
      if empty(x) and deviceTensor(self) and self._c.type == x._c.type and (isNum(y) or empty(y) and
                                                                            y._c.type == x._c.type) then
         M.resizeAs(self, x)
         return true, self
      end
      if isT(y) then
         if not prepare(self, x, y) then return false end
      elseif not prepare(self, x) then
         return false
      end
      if M.nElement(x) > 0 then
         check(C.lt_cuops_binop(opsOf(x), nil, op, self._c, x._c, isT(y) and y._c or nil, isNum(y) and y or 0), 4)
      end
      return true, self
   end

   -- Torch7's forms: (y) in place and (x, y) into self, y a tensor (tensor), a number (number) or either (both)
   local function binaryMethod(op, takes)
      return function(self, a, b, extra)
         if extra ~= nil then return false end
         local x, y = a, b
         if b == nil then x, y = self, a end
         if (takes == 'tensor' and not isT(y)) or (takes == 'number' and not isNum(y)) then return false end
         return binary(op, self, x, y)
      end
   end
   D.cmax = binaryMethod(C.LT_OP_MAX, 'both')
   D.cmin = binaryMethod(C.LT_OP_MIN, 'both')
   D.fmod = binaryMethod(C.LT_OP_FMOD, 'number')
   D.mod = D.fmod
   D.remainder = binaryMethod(C.LT_OP_REMAINDER, 'number')
   D.cfmod = binaryMethod(C.LT_OP_FMOD, 'tensor')
   D.cmod = D.cfmod
   D.cremainder = binaryMethod(C.LT_OP_REMAINDER, 'tensor')
   D.cpow = binaryMethod(C.LT_OP_POW, 'tensor')
   D.atan2 = binaryMethod(C.LT_OP_ATAN2, 'tensor')

   -- pow(v, x): v ^ x (torch.pow(v, x)); pow's other forms as gpu_math has them
   local pow = D.pow
   D.pow = function(self, a, b, extra)
      if extra == nil and isNum(a) and isT(b) then return binary(C.LT_OP_TPOW, self, b, a) end
      return pow(self, a, b, extra)
   end

   -- more unary functions (Float and Double): () in place, (x) into self
   for _, name in ipairs {'log1p', 'floor', 'ceil', 'round', 'trunc', 'frac', 'cinv', 'sin', 'cos', 'tan', 'asin',
                          'acos', 'atan', 'sinh', 'cosh', 'expm1'} do
      local op = C['LT_UN_' .. name:upper()]
      D[name] = function(self, a, extra)
         if extra ~= nil then return false end
         local x = a == nil and self or a
         if not isT(x) or not H.FLOAT[x._c.type] or not prepare(self, x) then return false end
         if M.nElement(x) > 0 then check(C.lt_cuops_unop(opsOf(x), nil, op, self._c, x._c), 3) end
         return true, self
      end
   end

   -- lerp: (y, w) in place, (x, y, w) into self: x + w (y - x), Float and Double
   D.lerp = function(self, a, b, c, extra)
      if extra ~= nil then return false end
      local x, y, w = a, b, c
      if c == nil then x, y, w = self, a, b end
      if not (isT(x) and isT(y) and isNum(w)) or not H.FLOAT[x._c.type] or not prepare(self, x, y) then
         return false
      end
      if M.nElement(x) > 0 then check(C.lt_cuops_lerp(opsOf(x), nil, self._c, x._c, y._c, w), 3) end
      return true, self
   end

   -- tril, triu: ([k]) -> a new matrix, (x [, k]) into self; k an integer, 0 by default
   for name, upper in pairs {tril = 0, triu = 1} do
      D[name] = function(self, a, b, extra)
         if extra ~= nil then return false end
         local r, x, k = self, a, b
         if not isT(a) then r, x, k = self.new(), self, a end
         k = k == nil and 0 or k
         if not isNum(k) or k ~= math.floor(k) or not isT(x) or x._c.ndim ~= 2 or not prepare(r, x) then
            return false
         end
         if M.nElement(x) > 0 then check(C.lt_cuops_tri(opsOf(x), nil, r._c, x._c, k, upper), 3) end
         return true, r
      end
   end

   -- maskedFill(mask, v): a CudaByteTensor mask on self's device, or a host ByteTensor (copied there); any
   -- non-zero mask element sets (the staged path refuses masks with values other than 0 and 1)
   D.maskedFill = function(self, mask, value, extra)
      if extra ~= nil or not isNum(value) or not isT(mask) then return false end
      local byteMask = mask._c.type == C.LT_BYTE or mask._c.type == CUDA_BYTE
      if empty(self) and byteMask and M.nElement(mask) == 0 then return true, self end
      if not live(self) then return false end
      if M.nElement(mask) ~= M.nElement(self) then return false end
      local dev = self._c.storage.device
      if mask._c.type == C.LT_BYTE then
         if M.nElement(self) == 0 then return true, self end
         if dev + 1 ~= H.cutorch.getDevice() then return false end
         mask = M.type(mask, 'torch.CudaByteTensor')
      elseif mask._c.type ~= CUDA_BYTE or not live(mask) or mask._c.storage.device ~= dev then
         return false
      end
      if M.nElement(self) > 0 then check(C.lt_cuops_masked_fill(opsOf(self), nil, self._c, mask._c, value), 3) end
      return true, self
   end
end
