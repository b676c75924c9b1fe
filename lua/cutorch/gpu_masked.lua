-- cutorch's maskedSelect and maskedCopy on the device (native/cuda/masked.cu through native/src/cuda_ops_masked.c):
-- a compaction over the Byte mask; and the random fills beyond uniform, normal and bernoulli (random, exponential,
-- cauchy, logNormal, geometric: dropout.cu's lt_random). Each returns true and the method's results when it ran on
-- the device, or false for a form it does not take (the call then runs staged, which also gives Torch7's errors:
-- masks of another type or element count, mask values above 1, a source too small, bad parameters).
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(D, H)
   local live, isT, opsOf, deviceTensor = H.live, H.isT, H.opsOf, H.deviceTensor
   local CUDA_BYTE = C.LT_CUDA_BYTE

   local function device(t) return t._c.storage ~= nil and t._c.storage.device or nil end
   local function sameStorage(a, b) return a._c.storage ~= nil and a._c.storage == b._c.storage end

   -- mask as a CudaByteTensor on device dev (a host ByteTensor is copied there: cutorch takes those too), or nil
   local function deviceMask(mask, dev)
      if mask._c.type == C.LT_BYTE then
         if dev + 1 ~= H.cutorch.getDevice() then return nil end
         return M.type(mask, 'torch.CudaByteTensor')
      end
      if mask._c.type == CUDA_BYTE and live(mask) and device(mask) == dev then return mask end
   end

   -- the mask's set elements and the number of its elements above 1, read back from the device
   local counts = ffi.new('int64_t[2]')
   local function maskCount(mask)
      check(C.lt_cuops_mask_count(opsOf(mask), nil, mask._c, counts, counts + 1), 4)
      return tonumber(counts[0]), tonumber(counts[1])
   end

   local function isByteMask(mask) return mask._c.type == C.LT_BYTE or mask._c.type == CUDA_BYTE end

   -- (mask) -> a new 1-D tensor of self's type; (x, mask) into self: x's elements where the mask is set, in
   -- row-major order. The result's size is the mask's count, read back before the result is resized.
   D.maskedSelect = function(self, a, b, extra)
      if extra ~= nil then return false end
      local res, x, mask = self, a, b
      if b == nil then res, x, mask = nil, self, a end
      if not (isT(x) and isT(mask) and deviceTensor(x)) or (res ~= nil and not deviceTensor(res))
         or not isByteMask(mask) or (res ~= nil and res._c.type ~= x._c.type)
         or M.nElement(mask) ~= M.nElement(x) then
         return false
      end
      if M.nElement(x) == 0 then
         res = res or x.new()
         M.resize(res, 0)
         return true, res
      end
      if not live(x) then return false end
      local dev = device(x)
      mask = deviceMask(mask, dev)
      if mask == nil then return false end
      local ones, above = maskCount(mask)
      if above > 0 then return false end
      -- a result sharing storage with an operand gets its values through a fresh tensor, as the CPU's
      local into = (res == nil or sameStorage(res, x) or sameStorage(res, mask)) and x.new() or res
      if not (into._c.ndim == 1 and into._c.size[0] == ones and into._c.storage ~= nil) then M.resize(into, ones) end
      if ones > 0 then
         if device(into) ~= dev then return false end
         check(C.lt_cuops_masked_select(opsOf(x), nil, into._c, x._c, mask._c), 3)
      end
      if res ~= nil and into ~= res then
         if not (res._c.ndim == 1 and res._c.size[0] == ones and res._c.storage ~= nil) then M.resize(res, ones) end
         M.copy(res, into)
      end
      return true, res or into
   end

   -- maskedCopy(mask, src): self's elements where the mask is set (row-major) take src's first elements in order
   D.maskedCopy = function(self, mask, src, extra)
      if extra ~= nil or not (isT(mask) and isT(src) and deviceTensor(self) and deviceTensor(src))
         or not isByteMask(mask) or src._c.type ~= self._c.type or M.nElement(mask) ~= M.nElement(self) then
         return false
      end
      if M.nElement(self) == 0 then return true, self end
      if not live(self) then return false end
      local dev = device(self)
      mask = deviceMask(mask, dev)
      if mask == nil then return false end
      local ones, above = maskCount(mask)
      if above > 0 or M.nElement(src) < ones then return false end
      if ones == 0 then return true, self end
      if device(src) ~= dev then return false end
      -- operands sharing self's storage are read from copies (the kernels read them while self is written)
      if sameStorage(src, self) then src = M.clone(src) end
      if sameStorage(mask, self) then mask = M.clone(mask) end
      check(C.lt_cuops_masked_copy(opsOf(self), nil, self._c, mask._c, src._c), 3)
      return true, self
   end

   -- ------------------------------------------------------------ random fills on cutorch's Philox stream

   local isNum, randomFill = H.isNum, H.randomFill
   local function number(v) return isNum(v) and v == v end
   D.exponential = randomFill(3, nil, 0, function(lambda) return number(lambda) end)
   D.cauchy = randomFill(4, 0, 1)
   D.logNormal = randomFill(5, 1, 2, function(_, std) return number(std) and std > 0 end)
   -- cutorch's geometric(p): p the success probability, P(x > k) = (1 - p)^k, mean 1/p (THC's ceil(log(u) /
   -- log(1 - p))), where Torch7's CPU geometric(p) has P(x > k) = p^k, the kernel's form: so the kernel gets 1 - p
   local geometric = randomFill(6, nil, 0, function(q) return number(q) and q > 0 and q < 1 end)
   D.geometric = function(self, p, ...)
      if not number(p) then return false end
      return geometric(self, 1 - p, ...)
   end

   -- random(): [0, top] with the CPU's top per type (one 32-bit draw: Long and Double get [0, 2^32 - 1]);
   -- random(b): [1, b]; random(a, b): [a, b]; the bounds truncated to integers as the CPU's int64 arguments
   local TOP = {[C.LT_CUDA_BYTE] = 255, [C.LT_CUDA_CHAR] = 127, [C.LT_CUDA_SHORT] = 32767,
                [C.LT_CUDA_INT] = 2 ^ 31 - 1, [C.LT_CUDA_LONG] = 2 ^ 32 - 1, [C.LT_CUDA_FLOAT] = 2 ^ 24,
                [C.LT_CUDA_DOUBLE] = 2 ^ 32 - 1}
   local integers = randomFill(7)
   local function trunc(v) return v < 0 and math.ceil(v) or math.floor(v) end
   D.random = function(self, a, b, extra)
      if extra ~= nil or not live(self) or not TOP[self._c.type] then return false end
      if a == nil then
         a, b = 0, TOP[self._c.type]
      elseif b == nil then
         if not (number(a) and a > 0) then return false end
         a, b = 1, a
      end
      if not (number(a) and number(b)) or b < a or math.abs(a) >= 2 ^ 63 or math.abs(b) >= 2 ^ 63 then
         return false
      end
      return integers(self, trunc(a), trunc(b))
   end
end
