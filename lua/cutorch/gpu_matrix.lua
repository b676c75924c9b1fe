-- TensorMath's matrix function cross on the device. Each returns true and the method's results when it
-- ran on the device, or false for a form it does not take (the call then runs staged, which also gives Torch7's
-- errors: sizes that differ, no dimension of size 3, a bad dimension).
--   cross: composed of the device's cmul and cadd on the three slices along the dimension (each product rounded
--   to the element type before the difference).
local C = torch.C
local M = torch._tensorMethods

return function(D, H)
   local live, isNum, isT, deviceTensor, pointwise = H.live, H.isNum, H.isT, H.deviceTensor, H.pointwise

   local function sameDevice(a, b) return a._c.storage == nil or a._c.storage.device == b._c.storage.device end

   -- ------------------------------------------------------------ cross

   -- (y [, dim]) -> a new tensor; (x, y [, dim]) into self. dim defaults to the first dimension of size 3.
   D.cross = function(self, a, b, c, extra)
      local r, x, y, dim = self, a, b, c
      if not isT(b) then
         if extra ~= nil or c ~= nil then return false end
         r, x, y, dim = nil, self, a, b
      elseif extra ~= nil then
         return false
      end
      if not (live(x) and isT(y) and live(y)) or x._c.type == C.LT_CUDA_HALF then return false end
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
end
