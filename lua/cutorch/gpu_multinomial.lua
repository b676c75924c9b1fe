-- Torch7's multinomial on the device, with cutorch's argument forms: prob:multinomial(n [, replacement]) and
-- torch.multinomial(prob, n [, replacement]) -> a new CudaLongTensor (cutorch's result type); res:multinomial(prob,
-- n [, replacement]) and torch.multinomial(res, prob, n [, replacement]) into res, a CudaLongTensor. prob: 1-D (n
-- draws) or 2-D (a row of n draws per distribution), Float or Double, non-negative, each row with a positive sum.
-- The draws come from cutorch's Philox stream (cutorch.manualSeed), so they cannot be the CPU generator's:
--   with replacement: uniform draws searched in each row's running sums, in double (native/cuda/multinomial.cu);
--   without: the n smallest of E_k / p_k per row (E_k exponential draws), in increasing order, which are the
--   successive draws that each remove the category drawn (Efraimidis and Spirakis); zero probabilities give
--   infinite keys and are never drawn.
-- A generator argument, a host result, and probabilities the CPU refuses (negative or NaN entries, a row summing to
-- 0 or infinity, fewer non-zero entries than draws without replacement) run staged (the CPU's errors).
local C = torch.C
local check = torch._check
local M = torch._tensorMethods

return function(D, H)
   local live, isNum, isT, opsOf, deviceTensor, cutorch = H.live, H.isNum, H.isT, H.opsOf, H.deviceTensor, H.cutorch
   local PROBABILITIES = {[C.LT_CUDA_FLOAT] = true, [C.LT_CUDA_DOUBLE] = true}

   -- a new CudaDouble tensor of the given sizes on x's device
   local function doublesOn(x, ...)
      local sizes = {...}
      return cutorch.withDevice(x._c.storage.device + 1, function() return torch.CudaDoubleTensor(unpack(sizes)) end)
   end

   D.multinomial = function(self, a, b, c, d, extra)
      local res, prob, n, replacement = self, a, b, c
      if not isT(a) then
         if d ~= nil then return false end
         res, prob, n, replacement = nil, self, a, b
      elseif extra ~= nil or d ~= nil then
         return false
      end
      if not live(prob) or not PROBABILITIES[prob._c.type] or (prob._c.ndim ~= 1 and prob._c.ndim ~= 2) then
         return false
      end
      if not (isNum(n) and n == math.floor(n) and n >= 1) then return false end
      if replacement ~= nil and type(replacement) ~= 'boolean' then return false end
      local ncat = prob:size(prob._c.ndim)
      if ncat == 0 or (not replacement and n > ncat) then return false end
      if res ~= nil and (res._c.type ~= C.LT_CUDA_LONG or not deviceTensor(res)) then return false end
      local rows = prob._c.ndim == 1 and 1 or prob:size(1)
      if rows == 0 then return false end
      -- the probabilities in double, one row per distribution (a copy: prob is left as it is)
      local p = doublesOn(prob, rows, ncat)
      M.copy(p, prob)
      local lowest = select(2, D.min(p))
      if not (lowest >= 0) then return false end
      local drawn
      if replacement then
         local _, cum = D.cumsum(p.new(), p, 2)
         local totals = cum:select(2, ncat)
         local _, smallest = D.min(totals)
         local _, largest = D.max(totals)
         if not (smallest > 0 and largest < math.huge) then return false end
         local u = doublesOn(prob, rows, n)
         D.uniform(u)
         drawn = torch.CudaLongTensor()
         cutorch.withDevice(prob._c.storage.device + 1, function() M.resize(drawn, rows, n) end)
         check(C.lt_cuops_multinomial_search(opsOf(p), nil, drawn._c, cum._c, u._c), 3)
      else
         local keys = doublesOn(prob, rows, ncat)
         D.exponential(keys, 1)
         D.cdiv(keys, keys, p)
         local _, values, indices = D.topk(keys, n, 2, false, true)
         local _, last = D.max(values)
         if not (last < math.huge) then return false end   -- fewer non-zero probabilities than draws
         drawn = indices
      end
      if prob._c.ndim == 1 then drawn = drawn:view(n) end
      if res == nil then return true, drawn end
      if not (res._c.storage ~= nil and M.isSameSizeAs(res, drawn)) then M.resizeAs(res, drawn) end
      if res._c.storage.device ~= drawn._c.storage.device then return false end
      M.copy(res, drawn)
      return true, res
   end
end
