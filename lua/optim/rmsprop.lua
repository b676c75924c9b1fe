-- optim.rmsprop(opfunc, x, config, state): RMSprop (Tieleman & Hinton 2012).
--
-- m <- alpha m + (1-alpha) g^2;  x <- x - lr * g / (sqrt(m) + epsilon)
-- config: learningRate (1e-2), alpha (0.99), epsilon (1e-8), weightDecay (0), initialMean (0: the value m
-- starts at). state (defaults to config): m, tmp (holds sqrt(m) + epsilon).
-- Returns x (updated in place) and {f(x) before the update}.
function optim.rmsprop(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-2
   local alpha = config.alpha or 0.99
   local epsilon = config.epsilon or 1e-8
   local wd = config.weightDecay or 0

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   if not state.m then
      state.m = x.new():resizeAs(dfdx):fill(config.initialMean or 0)
      state.tmp = x.new():resizeAs(dfdx)
   end
   state.m:mul(alpha):addcmul(1 - alpha, dfdx, dfdx)
   state.tmp:sqrt(state.m):add(epsilon)
   x:addcdiv(-lr, dfdx, state.tmp)
   return x, {fx}
end
