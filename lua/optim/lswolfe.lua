-- optim.lswolfe(opfunc, x, t, d, f, g, gtd, options): a line search for a step along d that satisfies the
-- strong Wolfe conditions (as in minFunc): bracket the step by extrapolation, then zoom into the bracket with
-- cubic interpolation (optim.polyinterp).
--
-- x, f, g: the start and its value and gradient; t: the first step to try; gtd: g . d (< 0).
-- options: c1 (1e-4: sufficient decrease), c2 (0.9: curvature), tolX (1e-9: smallest bracket progress),
-- maxIter (20: evaluations after the first), verbose (false).
-- Returns f, g at the chosen point, x (moved there in place), the step t, and the number of evaluations.
function optim.lswolfe(opfunc, x, t, d, f, g, gtd, options)
   options = options or {}
   local c1 = options.c1 or 1e-4
   local c2 = options.c2 or 0.9
   local tolX = options.tolX or 1e-9
   local maxIter = options.maxIter or 20
   local verbose = options.verbose or false

   local xStart = x:clone()
   local nEval = 0
   local function tryStep(step)
      x:copy(xStart):add(step, d)
      local fNew, gNew = opfunc(x)
      nEval = nEval + 1
      return fNew, gNew:clone(), gNew:dot(d)
   end

   local fNew, gNew, gtdNew = tryStep(t)

   -- bracket: a list of steps with their f and g (one entry once the conditions already hold)
   local bracket, bracketF, bracketG
   local done = false
   local iter = 0
   local tPrev, fPrev, gPrev, gtdPrev = 0, f, g:clone(), gtd
   while iter < maxIter do
      if fNew > f + c1 * t * gtd or (iter > 1 and fNew >= fPrev) then
         bracket, bracketF, bracketG = {tPrev, t}, {fPrev, fNew}, {gPrev, gNew}
         break
      elseif math.abs(gtdNew) <= -c2 * gtd then
         bracket, bracketF, bracketG = {t}, {fNew}, {gNew}
         done = true
         break
      elseif gtdNew >= 0 then
         bracket, bracketF, bracketG = {tPrev, t}, {fPrev, fNew}, {gPrev, gNew}
         break
      end
      -- still going down: extrapolate, at least 1% past t and at most 10 t
      local tOld = tPrev
      tPrev = t
      local pts = torch.DoubleTensor{{tOld, fPrev, gtdPrev}, {t, fNew, gtdNew}}
      t = optim.polyinterp(pts, t + 0.01 * (t - tOld), t * 10)
      fPrev, gPrev, gtdPrev = fNew, gNew, gtdNew
      fNew, gNew, gtdNew = tryStep(t)
      iter = iter + 1
   end
   if iter == maxIter then
      bracket, bracketF, bracketG = {0, t}, {f, fNew}, {g:clone(), gNew}
   end

   -- zoom until the conditions hold or the bracket stops shrinking
   local insufficientProgress = false
   while not done and iter < maxIter do
      local lo = bracketF[2] < bracketF[1] and 2 or 1
      local hi = 3 - lo
      local fLo = bracketF[lo]
      local pts = torch.DoubleTensor{{bracket[1], bracketF[1], bracketG[1]:dot(d)},
                                     {bracket[2], bracketF[2], bracketG[2]:dot(d)}}
      t = optim.polyinterp(pts)

      -- keep away from the ends of the bracket when progress is slow
      local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
      if math.min(bmax - t, t - bmin) / (bmax - bmin) < 0.1 then
         if insufficientProgress or t >= bmax or t <= bmin then
            if math.abs(t - bmax) < math.abs(t - bmin) then
               t = bmax - 0.1 * (bmax - bmin)
            else
               t = bmin + 0.1 * (bmax - bmin)
            end
            insufficientProgress = false
         else
            insufficientProgress = true
         end
      else
         insufficientProgress = false
      end

      fNew, gNew, gtdNew = tryStep(t)
      iter = iter + 1
      if fNew > f + c1 * t * gtd or fNew >= fLo then
         bracket[hi], bracketF[hi], bracketG[hi] = t, fNew, gNew
      else
         if math.abs(gtdNew) <= -c2 * gtd then
            done = true
         elseif gtdNew * (bracket[hi] - bracket[lo]) >= 0 then
            bracket[hi], bracketF[hi], bracketG[hi] = bracket[lo], bracketF[lo], bracketG[lo]
         end
         bracket[lo], bracketF[lo], bracketG[lo] = t, fNew, gNew
      end
      if not done and math.abs((bracket[1] - bracket[2]) * gtdNew) < tolX then
         break
      end
   end
   if iter == maxIter and verbose then
      print('<optim.lswolfe> stopped after maxIter = ' .. maxIter .. ' steps')
   end

   -- the lowest point of the bracket
   local best = 1
   if #bracket == 2 and bracketF[2] < bracketF[1] then best = 2 end
   t = bracket[best]
   x:copy(xStart):add(t, d)
   return bracketF[best], bracketG[best], x, t, nEval
end
