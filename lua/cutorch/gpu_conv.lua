-- Torch7's conv2, xcorr2, conv3 and xcorr3 on the device (lua/torch/TensorConv.lua's forms: x:conv2(k [, mode]),
-- r:conv2(x, k [, mode]) and torch.conv2([r,] x, k [, mode]), 'V' valid or 'F' full), Float and Double, composed of
-- device methods: the input's patches as unfold views copied into a column matrix (im2col; 'F' pads a zeroed copy
-- of the input first), the kernels flipped for a convolution (an index along their reversed elements, the CPU's
-- flip), and one matrix product (mm; bmm for the plane-by-plane form). The three forms of the CPU's:
--   one map:        x H x W,     k kH x kW          -> oH x oW          (conv3/xcorr3: with a depth)
--   plane by plane: x P x H x W, k P x kH x kW      -> P x oH x oW      (output plane p from input plane p)
--   summed planes:  x P x H x W, k O x P x kH x kW  -> O x oH x oW      (output plane o sums all P planes)
-- The sums run in another order than the CPU's, so Float results differ from it by rounding. Other types, other
-- shapes, an input smaller than the kernel in 'V' mode and bad modes run staged (the CPU's results and errors).
local C = torch.C
local M = torch._tensorMethods

return function(D, H)
   local live, isT = H.live, H.isT
   local FLOATS = {[C.LT_CUDA_FLOAT] = true, [C.LT_CUDA_DOUBLE] = true}

   -- reversed[n]: the host index vector n, n - 1, ..., 1 (a convolution's flip of n kernel elements)
   local reversed = setmetatable({}, {__mode = 'v'})
   local function reversedIndex(n)
      local idx = reversed[n]
      if not idx then
         idx = torch.LongTensor(n)
         for i = 1, n do idx[i] = n + 1 - i end
         reversed[n] = idx
      end
      return idx
   end

   local function convolution(nd, correlation)
      return function(self, ...)
         local fits, r, x, k, mode = H.resultFirstPair(self, ...)
         mode = mode == nil and 'V' or mode
         if not (fits and isT(x) and isT(k) and live(x) and live(k)) or (mode ~= 'V' and mode ~= 'F') then
            return false
         end
         local ty = x._c.type
         if not FLOATS[ty] or k._c.type ~= ty or (r ~= nil and (r._c.type ~= ty or not H.deviceTensor(r))) then
            return false
         end
         local dev = x._c.storage.device
         if k._c.storage.device ~= dev then return false end
         local di, dk = x._c.ndim, k._c.ndim
         local form = (di == nd and dk == nd and 'one') or (di == nd + 1 and dk == nd + 1 and 'planes')
                      or (di == nd + 1 and dk == nd + 2 and 'sum')
         if not form then return false end
         local P = form == 'one' and 1 or x:size(1)
         local O = form == 'one' and 1 or k:size(1)
         if (form == 'planes' and O ~= P) or (form == 'sum' and k:size(2) ~= P) then return false end
         -- the spatial sizes, a depth of 1 for the 2-D ones
         local ins, ks, outs, kvol = {}, {}, {}, 1
         for d = 1, 3 do
            local sd = d - (3 - nd)
            ins[d] = sd < 1 and 1 or x:size(di - nd + sd)
            ks[d] = sd < 1 and 1 or k:size(dk - nd + sd)
            if mode == 'V' and ins[d] < ks[d] then return false end
            outs[d] = mode == 'F' and ins[d] + ks[d] - 1 or ins[d] - ks[d] + 1
            kvol = kvol * ks[d]
         end
         local npos = outs[1] * outs[2] * outs[3]

         -- the work on x's device (new tensors go there)
         return H.cutorch.withDevice(dev + 1, function()
            -- the input as P x D x H x W (any layout: copied in row-major order), zero-padded by the kernel's
            -- size - 1 on each side in 'F' mode
            local planes
            if mode == 'F' then
               planes = x.new(P, ins[1] + 2 * (ks[1] - 1), ins[2] + 2 * (ks[2] - 1), ins[3] + 2 * (ks[3] - 1)):zero()
               planes:narrow(2, ks[1], ins[1]):narrow(3, ks[2], ins[2]):narrow(4, ks[3], ins[3]):copy(x)
            else
               planes = x:contiguous():view(P, ins[1], ins[2], ins[3])
            end
            -- columns: P x (kD kH kW) x (oD oH oW), each column a patch
            -- (patches: P x oD x oH x oW x kD x kH x kW views)
            local patches = planes:unfold(2, ks[1], 1):unfold(3, ks[2], 1):unfold(4, ks[3], 1)
            local columns = patches:permute(1, 5, 6, 7, 2, 3, 4):contiguous()
            -- kernels: (O or P) x P' x kvol with P' = P for the summed form, 1 otherwise; flipped for a convolution
            local kernels = k:contiguous():view(O * (form == 'sum' and P or 1), kvol)
            if not correlation then kernels = kernels:index(2, reversedIndex(kvol)) end
            local out
            if form == 'planes' then
               out = x.new():bmm(kernels:view(P, 1, kvol), columns:view(P, kvol, npos))
            else
               out = x.new():mm(kernels:view(O, P * kvol), columns:view(P * kvol, npos))
            end
            local shape = form == 'one' and {} or {O}
            for d = 4 - nd, 3 do shape[#shape + 1] = outs[d] end
            out = out:view(torch.LongStorage(shape))
            if r == nil then return true, out end
            if not (r._c.storage ~= nil and M.isSameSizeAs(r, out)) then M.resizeAs(r, out) end
            if r._c.storage.device ~= dev then return false end
            M.copy(r, out)
            return true, r
         end)
      end
   end

   D.conv2 = convolution(2, false)
   D.xcorr2 = convolution(2, true)
   D.conv3 = convolution(3, false)
   D.xcorr3 = convolution(3, true)
end
