-- optim.rprop(opfunc, x, config, state): resilient propagation (Riedmiller & Braun 1993), the plain variant.
--
-- Per element: where the gradient kept its sign since the last step the step size grows by etaplus, where it
-- flipped it shrinks by etaminus (and that element does not move this time, its remembered gradient becomes
-- 0), else it stays; step sizes are clipped to [stepsizemin, stepsizemax]; x <- x - sign(g) * stepsize.
-- config: stepsize (0.1, the initial step), etaplus (1.2), etaminus (0.5), stepsizemax (50),
-- stepsizemin (1e-6), niter (1: evaluations per call).
-- state (defaults to config): delta (the last gradient used), stepsize (per-element tensor), sign, and the
-- masks psign, nsign, zsign, dminmax.
-- Returns x (updated in place) and the table of the niter values f(x), each before its update.
function optim.rprop(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local stepsize = config.stepsize or 0.1
   local etaplus = config.etaplus or 1.2
   local etaminus = config.etaminus or 0.5
   local stepsizemax = config.stepsizemax or 50.0
   local stepsizemin = config.stepsizemin or 1e-6
   local niter = config.niter or 1

   local fs = {}
   for _ = 1, niter do
      local fx, dfdx = opfunc(x)

      if not state.delta then
         state.delta = dfdx.new(dfdx:size()):zero()
         -- with state == config the per-element tensor replaces the initial number, as in Torch7
         state.stepsize = dfdx.new(dfdx:size()):fill(stepsize)
         state.sign = dfdx.new(dfdx:size())
         state.psign = torch.ByteTensor(dfdx:size())
         state.nsign = torch.ByteTensor(dfdx:size())
         state.zsign = torch.ByteTensor(dfdx:size())
         state.dminmax = torch.ByteTensor(dfdx:size())
      end
      local sign, steps = state.sign, state.stepsize

      -- agreement of this gradient with the last one: +1, -1 or 0 per element
      torch.cmul(sign, dfdx, state.delta)
      torch.sign(sign, sign)
      torch.gt(state.psign, sign, 0)
      torch.lt(state.nsign, sign, 0)
      torch.eq(state.zsign, sign, 0)

      -- the factor each step size is scaled by
      sign[state.psign] = etaplus
      sign[state.nsign] = etaminus
      sign[state.zsign] = 1
      steps:cmul(sign)
      torch.gt(state.dminmax, steps, stepsizemax)
      steps[state.dminmax] = stepsizemax
      torch.lt(state.dminmax, steps, stepsizemin)
      steps[state.dminmax] = stepsizemin

      -- a sign flip: hold that element still and forget its gradient
      dfdx[state.nsign] = 0
      torch.sign(sign, dfdx)
      x:addcmul(-1, sign, steps)
      state.delta:copy(dfdx)

      fs[#fs + 1] = fx
   end
   return x, fs
end
