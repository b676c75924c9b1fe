-- optim.adamax(opfunc, x, config, state): AdaMax, the infinity-norm variant of Adam (arXiv:1412.6980).
--
-- m <- beta1 m + (1-beta1) g;  u <- max(beta2 u, |g| + epsilon);  x <- x - lr / (1 - beta1^t) * m / u
-- config: learningRate (2e-3), beta1 (0.9), beta2 (0.999), epsilon (1e-38), weightDecay (0).
-- state (defaults to config): t, m, u, max (scratch holding |g| + epsilon).
-- Returns x (updated in place) and {f(x) before the update}.
function optim.adamax(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 0.002
   local beta1 = config.beta1 or 0.9
   local beta2 = config.beta2 or 0.999
   local epsilon = config.epsilon or 1e-38
   local wd = config.weightDecay or 0

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   state.t = (state.t or 0) + 1
   state.m = state.m or x.new(dfdx:size()):zero()
   state.u = state.u or x.new(dfdx:size()):zero()
   state.max = state.max or x.new()
   -- a state saved by Torch7 holds u as 1xN and max as 2xN: same elements, reshaped in place
   state.u:resize(dfdx:size())
   state.max:resize(dfdx:size())

   state.m:mul(beta1):add(1 - beta1, dfdx)
   state.max:copy(dfdx):abs():add(epsilon)
   state.u:mul(beta2):cmax(state.max)

   x:addcdiv(-lr / (1 - beta1 ^ state.t), state.m, state.u)
   return x, {fx}
end
