-- optim.sgd(opfunc, x, config, state): Torch7's SGD, with its order of operations.
--
-- config: learningRate (1e-3), learningRateDecay (0), weightDecay (0),
-- weightDecays (per-parameter tensor), momentum (0), dampening (= momentum),
-- nesterov (false), learningRates (per-parameter tensor).
-- state (defaults to config): evalCounter, dfdx (the momentum buffer),
-- decayParameters, deltaParameters.
-- Returns x (updated in place) and {f(x)} evaluated before the update.
function optim.sgd(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local lr = config.learningRate or 1e-3
   local lrd = config.learningRateDecay or 0
   local wd = config.weightDecay or 0
   local mom = config.momentum or 0
   local damp = config.dampening or mom
   local nesterov = config.nesterov or false
   local lrs = config.learningRates
   local wds = config.weightDecays
   state.evalCounter = state.evalCounter or 0
   assert(not nesterov or (mom > 0 and damp == 0), 'Nesterov momentum requires a momentum and zero dampening')

   local fx, dfdx = opfunc(x)

   -- weight decay joins the gradient before momentum
   if wd ~= 0 then
      dfdx:add(wd, x)
   elseif wds then
      state.decayParameters = state.decayParameters or torch.Tensor():typeAs(x):resizeAs(dfdx)
      state.decayParameters:copy(wds):cmul(x)
      dfdx:add(state.decayParameters)
   end

   if mom ~= 0 then
      if not state.dfdx then
         -- the first step starts the buffer at the gradient itself (no dampening)
         state.dfdx = torch.Tensor():typeAs(dfdx):resizeAs(dfdx):copy(dfdx)
      else
         state.dfdx:mul(mom):add(1 - damp, dfdx)
      end
      if nesterov then
         dfdx:add(mom, state.dfdx)
      else
         dfdx = state.dfdx
      end
   end

   local clr = lr / (1 + state.evalCounter * lrd)

   if lrs then
      state.deltaParameters = state.deltaParameters or torch.Tensor():typeAs(x):resizeAs(dfdx)
      state.deltaParameters:copy(lrs):cmul(dfdx)
      x:add(-clr, state.deltaParameters)
   else
      x:add(-clr, dfdx)
   end

   state.evalCounter = state.evalCounter + 1
   return x, {fx}
end
