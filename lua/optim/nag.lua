-- optim.nag(opfunc, x, config, state): Nesterov's accelerated gradient as in Sutskever et al. (ICML 2013).
--
-- x is first moved along the velocity (x <- x + momentum * v), the gradient is taken there, then both x and
-- the velocity take the step: v <- momentum * v - clr * g, x <- x - clr * g (so x ends at old x + new v).
-- config: learningRate (1e-3), learningRateDecay (0), weightDecay (0), momentum (0.9, must be > 0),
-- learningRates (per-parameter tensor). (Torch7 reads `dampening` but never uses it; so do we.)
-- state (defaults to config): evalCounter, dfdx (the velocity v), deltaParameters.
-- Returns x (updated in place) and {f} evaluated at the look-ahead point.
function optim.nag(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-3
   local lrd = config.learningRateDecay or 0
   local wd = config.weightDecay or 0
   local mom = config.momentum or 0.9
   local lrs = config.learningRates
   state.evalCounter = state.evalCounter or 0
   if mom <= 0 then
      error('optim.nag: config.momentum must be > 0 (got ' .. tostring(mom) .. ')', 2)
   end

   local velocity = state.dfdx
   if velocity then x:add(mom, velocity) end

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   local clr = lr / (1 + state.evalCounter * lrd)

   if velocity then
      velocity:mul(mom)
   else
      velocity = x.new():resizeAs(dfdx):zero()
      state.dfdx = velocity
   end

   local step = dfdx
   if lrs then
      state.deltaParameters = state.deltaParameters or x.new():resizeAs(dfdx)
      step = state.deltaParameters:copy(lrs):cmul(dfdx)
   end
   x:add(-clr, step)
   velocity:add(-clr, step)

   state.evalCounter = state.evalCounter + 1
   return x, {fx}
end
