-- optim.checkgrad(opfunc, x, eps): compare opfunc's gradient with central finite differences.
--
-- x is a 1-D tensor; each element is moved by +-eps (default 1e-7) and put back. Returns
-- diff = |dC - dC_est| / |dC + dC_est| (should be near 0), the analytic gradient dC (reshaped like x) and
-- the estimate dC_est.
function optim.checkgrad(opfunc, x, eps)
   eps = eps or 1e-7
   local _, dC = opfunc(x)
   dC = dC:clone():resize(x:size())   -- a copy: the later evaluations may overwrite the buffer
   -- the objective may return its value as a 1-element tensor (maybe the same one every call)
   local function value()
      local v = opfunc(x)
      if torch.isTensor(v) then v = v:view(-1)[1] end
      return v
   end

   local dC_est = dC.new():resizeAs(dC)
   for i = 1, dC:size(1) do
      local saved = x[i]
      x[i] = saved + eps
      local fPlus = value()
      x[i] = x[i] - 2 * eps        -- from x + eps, as Torch7 steps (saved - eps may round differently)
      local fMinus = value()
      x[i] = saved
      dC_est[i] = (fPlus - fMinus) / (2 * eps)
   end

   local diff = torch.norm(dC - dC_est) / torch.norm(dC + dC_est)
   return diff, dC, dC_est
end
