-- optim.cg(opfunc, x, config, state): nonlinear conjugate gradients (Polak-Ribiere directions) with the
-- line search of Carl Rasmussen's minimize.m (quadratic/cubic extrapolation and interpolation under the
-- Wolfe-Powell conditions). It runs until the evaluation budget is spent or a line search fails.
--
-- config: maxIter (20: evaluations allowed inside one line search), maxEval (1.25 * maxIter: all the
-- evaluations of this call), rho (0.01) and sig (0.5) (the Wolfe-Powell constants), int (0.1: do not land
-- closer than this fraction to the bracket's ends), ext (3.0: extrapolate at most this many times the
-- current step), ratio (100: largest growth of the initial step from one search to the next).
-- state (defaults to config): the buffers df0, df1, df2, df3, x0, s, reused when present.
-- Returns x (updated in place), the table of f values (the start, then after each successful line search)
-- and the number of evaluations.
function optim.cg(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local RHO = config.rho or 0.01
   local SIG = config.sig or 0.5
   local INT = config.int or 0.1
   local EXT = config.ext or 3.0
   local maxIter = config.maxIter or 20
   local ratio = config.ratio or 100
   local maxEval = config.maxEval or maxIter * 1.25

   local function buffer(name)
      local b = state[name] or x.new()
      b:resizeAs(x)
      return b
   end
   local df0, df1, df2, df3 = buffer('df0'), buffer('df1'), buffer('df2'), buffer('df3')
   local s, x0 = buffer('s'), buffer('x0')

   local nEval = 0
   local function evaluate()
      local f, g = opfunc(x)
      nEval = nEval + 1
      return f, g
   end

   local f1, g = evaluate()
   df1:copy(g)
   local fhist = {f1}

   s:copy(df1):mul(-1)            -- steepest descent to start
   local d1 = -s:dot(s)           -- slope along s
   local z1 = 1 / (1 - d1)        -- first step size

   while nEval < math.abs(maxEval) do
      -- remember where this line search starts, to come back if it fails
      x0:copy(x)
      local f0 = f1
      df0:copy(df1)

      x:add(z1, s)
      local f2
      f2, g = evaluate()
      df2:copy(g)
      local d2 = df2:dot(s)
      local f3, d3, z3 = f1, d1, -z1   -- the third point starts as the first
      local budget = math.min(maxIter, maxEval - nEval)
      local found = false
      local limit = -1                 -- no upper bracket yet

      while true do
         -- interpolate back while the point is too high or its slope too steep
         while (f2 > f1 + z1 * RHO * d1 or d2 > -SIG * d1) and budget > 0 do
            limit = z1
            local z2
            if f2 > f1 then
               z2 = z3 - (0.5 * d3 * z3 * z3) / (d3 * z3 + f2 - f3)           -- quadratic fit
            else
               local A = 6 * (f2 - f3) / z3 + 3 * (d2 + d3)                    -- cubic fit
               local B = 3 * (f3 - f2) - z3 * (d3 + 2 * d2)
               z2 = (math.sqrt(B * B - A * d2 * z3 * z3) - B) / A
            end
            if z2 ~= z2 or z2 == math.huge or z2 == -math.huge then
               z2 = z3 / 2                                                     -- bisect when the fit fails
            end
            z2 = math.max(math.min(z2, INT * z3), (1 - INT) * z3)
            z1 = z1 + z2
            x:add(z2, s)
            f2, g = evaluate()
            df2:copy(g)
            budget = budget - 1
            d2 = df2:dot(s)
            z3 = z3 - z2
         end

         if f2 > f1 + z1 * RHO * d1 or d2 > -SIG * d1 then
            break                      -- out of budget on a bad point: failure
         elseif d2 > SIG * d1 then
            found = true               -- both Wolfe-Powell conditions hold
            break
         elseif budget == 0 then
            break
         end

         -- extrapolate with a cubic, kept within the bracket and the extrapolation limit
         local A = 6 * (f2 - f3) / z3 + 3 * (d2 + d3)
         local B = 3 * (f3 - f2) - z3 * (d3 + 2 * d2)
         local z2 = -d2 * z3 * z3 / (B + math.sqrt(B * B - A * d2 * z3 * z3))
         local bracketed = limit > -0.5
         if z2 ~= z2 or z2 == math.huge or z2 == -math.huge or z2 < 0 then
            z2 = bracketed and (limit - z1) / 2 or z1 * (EXT - 1)
         elseif bracketed and z2 + z1 > limit then
            z2 = (limit - z1) / 2
         elseif not bracketed and z2 + z1 > z1 * EXT then
            z2 = z1 * (EXT - 1)
         elseif z2 < -z3 * INT then
            z2 = -z3 * INT
         elseif bracketed and z2 < (limit - z1) * (1 - INT) then
            z2 = (limit - z1) * (1 - INT)
         end
         f3, d3, z3 = f2, d2, -z2
         z1 = z1 + z2
         x:add(z2, s)
         f2, g = evaluate()
         df2:copy(g)
         budget = budget - 1
         d2 = df2:dot(s)
      end

      if not found then
         -- back to the start of the failed search; Torch7 stops at the first failure (its
         -- "already failed" flag starts as 0, which Lua counts as true), so this does too
         x:copy(x0)
         df1:copy(df0)
         break
      end

      f1 = f2
      fhist[#fhist + 1] = f1
      -- Polak-Ribiere: s <- beta * s - g_new
      local beta = (df2:dot(df2) - df2:dot(df1)) / df1:dot(df1)
      s:mul(beta):add(-1, df2)
      local previous = df1:clone()
      df1:copy(df2)
      df2:copy(previous)
      d2 = df1:dot(s)
      if d2 > 0 then
         -- not a descent direction: restart from steepest descent
         s:copy(df1):mul(-1)
         d2 = -s:dot(s)
      end
      z1 = z1 * math.min(ratio, d1 / (d2 - 1e-320))
      d1 = d2
   end

   state.df0, state.df1, state.df2, state.df3 = df0, df1, df2, df3
   state.x0, state.s = x0, s
   return x, fhist, nEval
end
