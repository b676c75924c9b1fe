-- conv2, xcorr2, conv3, xcorr3 with Torch7's forms:
--   torch.conv2([res,] x, k, ['V'|'F'])   x:conv2(k, ['V'|'F'])   res:conv2(x, k, ['V'|'F'])
-- x and k are H x W and kH x kW (one map), P x H x W and P x kH x kW (plane
-- by plane) or P x H x W and O x P x kH x kW (O maps, each summed over the P
-- planes); conv3/xcorr3 add a depth dimension. 'V' (valid, the default)
-- keeps the outputs where the kernel fits inside the input, 'F' (full) every
-- output the kernel touches. conv flips the kernel, xcorr does not.
local torch = ...
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local isTensor = torch.isTensor

local function convFunction(name, ndim, correlation)
   local usage = string.format("[res,] input, kernel, ['V'|'F']")
   torch[name] = function(a, b, c, d)
      local r, x, k, mode
      if isTensor(c) then r, x, k, mode = a, b, c, d else x, k, mode = a, b, c end
      if not (isTensor(x) and isTensor(k) and (r == nil or isTensor(r))) then
         error(string.format('%s: invalid arguments (expected %s)', name, usage), 2)
      end
      if mode ~= nil and mode ~= 'V' and mode ~= 'F' then
         error(string.format("%s: the mode should be 'V' (valid) or 'F' (full), got %s", name, tostring(mode)), 2)
      end
      r = r or torch._newTensor(x._c.type)
      check(C.lt_conv(r._c, x._c, k._c, ndim, mode or 'V', correlation), 2)
      return r
   end
   -- the method is the function (x:conv2(k) is torch.conv2(x, k)), which lets cutorch's GPU backend route the
   -- functional form to its first tensor's method (torch._throughMethod)
   M[name] = torch[name]
end

convFunction('conv2', 2, 0)
convFunction('xcorr2', 2, 1)
convFunction('conv3', 3, 0)
convFunction('xcorr3', 3, 1)

torch._installTensorMethods()
