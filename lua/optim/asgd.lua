-- optim.asgd(opfunc, x, config, state): averaged SGD in the style of Bottou's sgd-2.0.
--
-- Each call: x <- (1 - lambda*eta_t) x - eta_t * df/dx, then the running average ax moves towards x by mu_t
-- (ax is x itself while mu_t == 1, i.e. until t exceeds t0). Afterwards eta_t = eta0 / (1 + lambda*eta0*t)^alpha
-- and mu_t = 1 / max(1, t - t0).
-- config (defaults are written back into config): eta0 (1e-4), lambda (1e-4), alpha (0.75), t0 (1e6).
-- state (defaults to config): eta_t, mu_t, t, ax (the averaged x), tmp (scratch).
-- Returns x (updated in place), {f(x) before the update}, ax.
function optim.asgd(opfunc, x, config, state)
   config = config or {}
   state = state or config
   config.eta0 = config.eta0 or 1e-4
   config.lambda = config.lambda or 1e-4
   config.alpha = config.alpha or 0.75
   config.t0 = config.t0 or 1e6
   state.eta_t = state.eta_t or config.eta0
   state.mu_t = state.mu_t or 1
   state.t = state.t or 0

   local fx, dfdx = opfunc(x)

   local eta = state.eta_t
   x:mul(1 - config.lambda * eta):add(-eta, dfdx)

   if not state.ax then
      state.ax = x.new():resizeAs(x):zero()
      state.tmp = x.new():resizeAs(x)
   end
   if state.mu_t == 1 then
      state.ax:copy(x)
   else
      state.tmp:copy(x):add(-1, state.ax)
      state.ax:add(state.mu_t, state.tmp)
   end

   state.t = state.t + 1
   state.eta_t = config.eta0 / (1 + config.lambda * config.eta0 * state.t) ^ config.alpha
   state.mu_t = 1 / math.max(1, state.t - config.t0)
   return x, {fx}, state.ax
end
