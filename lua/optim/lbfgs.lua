-- optim.lbfgs(opfunc, x, config, state): limited-memory BFGS after minFunc, on a 1-D parameter tensor x.
--
-- Without config.lineSearch each iteration moves by a fixed step (learningRate; on the very first iteration
-- min(1, 1/sum|g|) * learningRate), which also suits noisy, stochastic objectives. With one (e.g.
-- optim.lswolfe) that step is only the first one the search tries.
--
-- config: maxIter (20 iterations per call), maxEval (1.25 * maxIter evaluations per call), tolFun (1e-5: stop
-- when sum|g| is below it), tolX (1e-9: stop on a step, a change of f, or a slope g.d above -tolX smaller than
-- it), nCorrection (100: pairs kept), lineSearch (function), lineSearchOptions (its options),
-- learningRate (1), verbose (false).
-- state (defaults to config; it carries the memory from call to call): funcEval, nIter, d, t, old_dirs (the
-- steps s), old_stps (the gradient changes y), Hdiag, g_old, f_old, and the buffers tmp1, dir_bufs, stp_bufs,
-- ro, al.
-- Returns x (updated in place), the table of f values (the start, then after each step) and the number of
-- evaluations made by this call.
function optim.lbfgs(opfunc, x, config, state)
   config = config or {}
   state = state or config
   local maxIter = tonumber(config.maxIter) or 20
   local maxEval = tonumber(config.maxEval) or maxIter * 1.25
   local tolFun = config.tolFun or 1e-5
   local tolX = config.tolX or 1e-9
   local nCorrection = config.nCorrection or 100
   local lineSearch = config.lineSearch
   local lineSearchOpts = config.lineSearchOptions
   local learningRate = config.learningRate or 1
   local say = function() end
   if config.verbose then say = function(...) print('<optim.lbfgs>', ...) end end

   state.funcEval = state.funcEval or 0
   state.nIter = state.nIter or 0

   local f, g = opfunc(x)
   local fhist = {f}
   local nEval = 1
   state.funcEval = state.funcEval + 1
   local p = g:size(1)

   state.tmp1 = state.tmp1 or g.new(g:size()):zero()
   local tmp1 = state.tmp1
   local function absSum(v, scale)
      tmp1:copy(v)
      if scale then tmp1:mul(scale) end
      return tmp1:abs():sum()
   end
   if absSum(g) <= tolFun then
      say('the start is already optimal (sum|g| <= tolFun)')
      return x, fhist, nEval
   end

   if not state.dir_bufs then
      -- a pool of nCorrection + 1 vectors for each of s and y, recycled as the memory shifts
      state.dir_bufs, state.stp_bufs = {}, {}
      local sBlock, yBlock = g.new(nCorrection + 1, p), g.new(nCorrection + 1, p)
      for i = 1, nCorrection + 1 do
         state.dir_bufs[i] = yBlock[i]
         state.stp_bufs[i] = sBlock[i]
      end
   end

   local d, t = state.d, state.t
   local old_dirs, old_stps = state.old_dirs, state.old_stps
   local Hdiag, g_old, f_old = state.Hdiag, state.g_old, state.f_old

   local iter = 0
   while iter < maxIter do
      iter = iter + 1
      state.nIter = state.nIter + 1

      -- the search direction
      if state.nIter == 1 then
         d = g:clone():mul(-1)
         old_dirs, old_stps = {}, {}
         Hdiag = 1
      else
         local y = table.remove(state.dir_bufs)
         local s = table.remove(state.stp_bufs)
         y:add(g, -1, g_old)
         s:mul(d, t)
         local ys = y:dot(s)
         if ys > 1e-10 then
            if #old_dirs == nCorrection then
               -- the memory is full: drop the oldest pair, its vectors go back to the pool
               table.insert(state.dir_bufs, table.remove(old_dirs, 1))
               table.insert(state.stp_bufs, table.remove(old_stps, 1))
            end
            table.insert(old_dirs, s)
            table.insert(old_stps, y)
            Hdiag = ys / y:dot(y)
         else
            -- no curvature information in this pair: skip it
            table.insert(state.dir_bufs, y)
            table.insert(state.stp_bufs, s)
         end

         -- two-loop recursion: d = -H g with the stored pairs
         local k = #old_dirs
         state.ro = state.ro or torch.Tensor(nCorrection)
         state.al = state.al or torch.zeros(nCorrection)
         local ro, al = state.ro, state.al
         for i = 1, k do ro[i] = 1 / old_stps[i]:dot(old_dirs[i]) end
         local q = tmp1
         q:mul(g, -1)
         for i = k, 1, -1 do
            al[i] = old_dirs[i]:dot(q) * ro[i]
            q:add(-al[i], old_stps[i])
         end
         d:mul(q, Hdiag)
         for i = 1, k do
            local be = old_stps[i]:dot(d) * ro[i]
            d:add(al[i] - be, old_dirs[i])
         end
      end
      g_old = g_old or g:clone()
      g_old:copy(g)
      f_old = f

      -- the step along d
      local gtd = g:dot(d)
      if gtd > -tolX then
         say('no descent along the direction (g.d > -tolX)')
         break
      end
      if state.nIter == 1 then
         t = math.min(1, 1 / absSum(g)) * learningRate
      else
         t = learningRate
      end

      local lsEvals = 0
      if type(lineSearch) == 'function' then
         f, g, x, t, lsEvals = lineSearch(opfunc, x, t, d, f, g, gtd, lineSearchOpts)
         fhist[#fhist + 1] = f
      else
         x:add(t, d)
         if iter ~= maxIter then
            -- the last iteration of a call does not evaluate: the next call starts with that
            f, g = opfunc(x)
            lsEvals = 1
            fhist[#fhist + 1] = f
         end
      end
      nEval = nEval + lsEvals
      state.funcEval = state.funcEval + lsEvals

      -- stopping tests
      if iter == maxIter then
         say('reached maxIter')
         break
      end
      if nEval >= maxEval then
         say('reached maxEval')
         break
      end
      if absSum(g) <= tolFun then
         say('optimal (sum|g| <= tolFun)')
         break
      end
      if absSum(d, t) <= tolX then
         say('step below tolX')
         break
      end
      if math.abs(f - f_old) < tolX then
         say('change of f below tolX')
         break
      end
   end

   state.old_dirs, state.old_stps = old_dirs, old_stps
   state.Hdiag, state.g_old, state.f_old = Hdiag, g_old, f_old
   state.t, state.d = t, d
   return x, fhist, nEval
end
