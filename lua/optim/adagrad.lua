-- optim.adagrad(opfunc, x, config, state): AdaGrad (Duchi et al. 2011).
--
-- paramVariance accumulates g^2; x <- x - clr * g / (sqrt(paramVariance) + 1e-10),
-- clr = learningRate / (1 + evalCounter * learningRateDecay).
-- config: learningRate (1e-3), learningRateDecay (0), weightDecay (0).
-- state (defaults to config): evalCounter, paramVariance, paramStd (holds sqrt(paramVariance) + 1e-10).
-- Returns x (updated in place) and {f(x) before the update}.
function optim.adagrad(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-3
   local lrd = config.learningRateDecay or 0
   local wd = config.weightDecay or 0
   state.evalCounter = state.evalCounter or 0

   local fx, dfdx = opfunc(x)
   if wd ~= 0 then dfdx:add(wd, x) end

   local clr = lr / (1 + state.evalCounter * lrd)

   if not state.paramVariance then
      state.paramVariance = x.new():resizeAs(dfdx):zero()
      state.paramStd = x.new():resizeAs(dfdx)
   end
   state.paramVariance:addcmul(1, dfdx, dfdx)
   state.paramStd:resizeAs(state.paramVariance):copy(state.paramVariance):sqrt():add(1e-10)
   x:addcdiv(-clr, dfdx, state.paramStd)

   state.evalCounter = state.evalCounter + 1
   return x, {fx}
end
