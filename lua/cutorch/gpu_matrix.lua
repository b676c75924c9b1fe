-- TensorMath's matrix functions cross and histc on the device. Each returns true and the method's results when it
-- ran on the device, or false for a form it does not take (the call then runs staged, which also gives Torch7's
-- errors: sizes that differ, no dimension of size 3, a bad dimension or number of bins, integer histograms).
--   cross: composed of the device's cmul and cadd on the three slices along the dimension (each product rounded
--   to the element type before the difference).
--   histc: native/cuda/histc.cu through lt_cuops_histc (per-block counts, then their sums into the result); the
--   data's range (min == max) from the device's min and max.
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(D, H)
   local live, isNum, isT, opsOf, deviceTensor, pointwise = H.live, H.isNum, H.isT, H.opsOf, H.deviceTensor,
                                                             H.pointwise

   local function sameDevice(a, b) return a._c.storage == nil or a._c.storage.device == b._c.storage.device end

   -- ------------------------------------------------------------ cross

   -- (y [, dim]) -> a new tensor; (x, y [, dim]) into self. dim defaults to the first dimension of size 3.
   D.cross = function(self, ...)
      local fits, r, x, y, dim = H.resultFirstPair(self, ...)
      if not fits or not (live(x) and isT(y) and live(y)) or x._c.type == C.LT_CUDA_HALF then return false end
      if y._c.type ~= x._c.type or not M.isSameSizeAs(x, y) or not sameDevice(y, x) then return false end
      if dim == nil then
         for d = 1, x._c.ndim do
            if x:size(d) == 3 then dim = d break end
         end
      end
      if not (isNum(dim) and dim == math.floor(dim) and dim >= 1 and dim <= x._c.ndim and x:size(dim) == 3) then
         return false
      end
      r = r or x.new()
      if not deviceTensor(r) or r._c.type ~= x._c.type then return false end
      -- the three components first, into new tensors: r may be x or y, whose slices they read
      local function slice(t, i) return M.narrow(t, dim, i, 1) end
      local parts, other = {}, x.new()
      for i = 1, 3 do
         local j, k = i % 3 + 1, (i + 1) % 3 + 1
         parts[i] = x.new()
         local done = pointwise('cmul', parts[i], slice(x, j), slice(y, k))
                      and pointwise('cmul', other, slice(x, k), slice(y, j))
                      and pointwise('cadd', parts[i], parts[i], other, nil, -1)
         if not done then return false end
      end
      if not (r._c.storage ~= nil and M.isSameSizeAs(r, x)) then M.resizeAs(r, x) end
      if not sameDevice(r, x) then return false end
      for i = 1, 3 do M.copy(slice(r, i), parts[i]) end
      return true, r
   end

   -- ------------------------------------------------------------ histc

   -- the number v as the element type holds it (the CPU kernel converts its bounds first)
   local ROUNDED = {[C.LT_CUDA_FLOAT] = function(v) return tonumber(ffi.cast('float', v)) end,
                    [C.LT_CUDA_DOUBLE] = function(v) return v end}

   -- ([nbins = 100 [, min = 0 [, max = 0]]]) -> a new tensor; (x [, nbins [, min [, max]]]) into self. min == max
   -- (as the element type) counts over the data's range, widened by 1 on each side when that is one value.
   D.histc = function(self, a, b, c, d, extra)
      local r, x, nbins, lo, hi = self, a, b, c, d
      if not isT(a) then
         if d ~= nil then return false end
         r, x, nbins, lo, hi = nil, self, a, b, c
      elseif extra ~= nil then
         return false
      end
      nbins = nbins == nil and 100 or nbins
      if not live(x) or not ROUNDED[x._c.type] or not (isNum(nbins) and nbins == math.floor(nbins) and nbins >= 1)
         or (lo ~= nil and not isNum(lo)) or (hi ~= nil and not isNum(hi)) then
         return false
      end
      -- (the staged call would see two host tensors there and miss this error of the CPU's)
      if r == x then error('histc: the result cannot be the input tensor', 3) end
      r = r or x.new()
      if not deviceTensor(r) or r._c.type ~= x._c.type or (r._c.storage ~= nil and r._c.storage == x._c.storage) then
         return false
      end
      local rounded = ROUNDED[x._c.type]
      local mn, mx = rounded(lo or 0), rounded(hi or 0)
      if mn == mx then
         if M.nElement(x) > 0 then
            local done
            done, mn = D.min(x)
            if not done then return false end
            done, mx = D.max(x)
            if not done then return false end
         end
         if mn == mx then mn, mx = rounded(mn - 1), rounded(mx + 1) end
      end
      if not (r._c.storage ~= nil and r._c.ndim == 1 and r:size(1) == nbins) then M.resize(r, nbins) end
      if not sameDevice(r, x) then return false end
      check(C.lt_cuops_histc(opsOf(x), nil, r._c, x._c, nbins, mn, mx), 3)
      return true, r
   end
end
