-- optim.adadelta(opfunc, x, config, state): ADADELTA (Zeiler 2012, arXiv:1212.5701); no learning rate.
--
-- paramVariance <- rho * paramVariance + (1 - rho) * g^2
-- delta         <- sqrt(accDelta + eps) / sqrt(paramVariance + eps) * g;   x <- x - delta
-- accDelta      <- rho * accDelta + (1 - rho) * delta^2
-- config: rho (0.9), eps (1e-6), weightDecay (0).
-- state (defaults to config): evalCounter, paramVariance, paramStd, delta, accDelta.
-- Returns x (updated in place) and {f(x) before the update}.
function optim.adadelta(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local rho = config.rho or 0.9
   local eps = config.eps or 1e-6
   local wd = config.weightDecay or 0
   state.evalCounter = state.evalCounter or 0

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   if not state.paramVariance then
      state.paramVariance = x.new():resizeAs(dfdx):zero()
      state.paramStd = x.new():resizeAs(dfdx):zero()
      state.delta = x.new():resizeAs(dfdx):zero()
      state.accDelta = x.new():resizeAs(dfdx):zero()
   end
   local var, std, delta, acc = state.paramVariance, state.paramStd, state.delta, state.accDelta
   var:mul(rho):addcmul(1 - rho, dfdx, dfdx)
   std:resizeAs(var):copy(var):add(eps):sqrt()
   delta:resizeAs(var):copy(acc):add(eps):sqrt():cdiv(std):cmul(dfdx)
   x:add(-1, delta)
   acc:mul(rho):addcmul(1 - rho, delta, delta)

   state.evalCounter = state.evalCounter + 1
   return x, {fx}
end
