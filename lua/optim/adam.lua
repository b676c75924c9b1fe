-- optim.adam(opfunc, x, config, state): Adam (Kingma & Ba, arXiv:1412.6980).
--
-- m <- beta1 m + (1-beta1) g;  v <- beta2 v + (1-beta2) g^2
-- x <- x - clr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon)
-- (epsilon is added to sqrt(v) before the bias correction, as Torch7 does; PyTorch adds it after),
-- clr = learningRate / (1 + t * learningRateDecay) with t counted before this step.
-- config: learningRate (1e-3), learningRateDecay (0), beta1 (0.9), beta2 (0.999), epsilon (1e-8),
-- weightDecay (0). state (defaults to config): t, m, v, denom.
-- Returns x (updated in place) and {f(x) before the update}.
function optim.adam(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-3
   local lrd = config.learningRateDecay or 0
   local beta1 = config.beta1 or 0.9
   local beta2 = config.beta2 or 0.999
   local epsilon = config.epsilon or 1e-8
   local wd = config.weightDecay or 0

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   state.t = state.t or 0
   state.m = state.m or x.new(dfdx:size()):zero()
   state.v = state.v or x.new(dfdx:size()):zero()
   state.denom = state.denom or x.new(dfdx:size()):zero()

   local clr = lr / (1 + state.t * lrd)
   state.t = state.t + 1

   state.m:mul(beta1):add(1 - beta1, dfdx)
   state.v:mul(beta2):addcmul(1 - beta2, dfdx, dfdx)
   state.denom:copy(state.v):sqrt():add(epsilon)

   local stepSize = clr * math.sqrt(1 - beta2 ^ state.t) / (1 - beta1 ^ state.t)
   x:addcdiv(-stepSize, state.m, state.denom)
   return x, {fx}
end
