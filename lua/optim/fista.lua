-- optim.FistaLS(f, g, pl, xinit, params): FISTA (Beck & Teboulle 2009) with a backtracking line search on L,
-- for min f(x) + g(x) with f smooth and g not (e.g. an L1 penalty).
--
-- f(x, 'dx') returns f(x) and its gradient, f(x) just the value; g(x) returns g's value; pl(v, L) replaces v in
-- place by argmin_x g(x) + L/2 |x - v|^2 (the proximal step: soft shrinkage by lambda/L for an L1 penalty).
-- The iterates start from zero (xinit only gives the shape and receives the answer).
-- params: L (0.1: 1/step size, left at its last value), Lstep (1.5: factor L grows by while the quadratic
-- model Q is below f), maxiter (50), maxline (20: line-search trials per iteration), errthres (1e-4: stop when
-- f+g changes less), doFistaUpdate (use the momentum step; nil or false: plain ISTA, as in Torch7),
-- verbose (print each trial and keep each iterate in the history). Buffers params.xkm, params.y, params.ply
-- are reused when present.
-- Returns the solution (params.y, also copied into xinit) and the history: one table per iteration with
-- nline, L, F (= f + g), Fply, Gply, Q (and xk, y when verbose).
function optim.FistaLS(f, g, pl, xinit, params)
   params = params or {}
   local L = params.L or 0.1
   local Lstep = params.Lstep or 1.5
   local maxiter = params.maxiter or 50
   local maxline = params.maxline or 20
   local errthres = params.errthres or 1e-4
   local useMomentum = params.doFistaUpdate
   local verbose = params.verbose

   params.xkm = params.xkm or xinit.new()
   params.y = params.y or xinit.new()
   params.ply = params.ply or xinit.new()
   local xk, xkm, y, ply = xinit, params.xkm, params.y, params.ply
   xkm:resizeAs(xk):zero()
   ply:resizeAs(xk):zero()
   y:resizeAs(xk):zero()

   local history = {}
   local tk = 1
   local fval = math.huge
   for iter = 1, maxiter do
      local fy, gfy = f(y, 'dx')

      -- backtracking: grow L until f at the proximal point is below the quadratic model around y
      local fply, Q = 0, 0
      local nline = 0
      while true do
         ply:copy(y):add(-1 / L, gfy)
         pl(ply, L)
         xk:copy(ply)
         fply = f(ply)
         ply:add(-1, y)                                   -- the step taken, ply - y
         Q = fy + gfy:dot(ply) + L / 2 * ply:dot(ply)
         if verbose then
            print(string.format('FistaLS line search %d: L=%g f(p)=%g Q=%g f(y)=%g', nline, L, fply, Q, fy))
         end
         nline = nline + 1
         if fply <= Q then break end
         if nline > maxline then
            -- no acceptable point: back to the previous iterate (with ISTA that is still the zero start:
            -- Torch7 only keeps the previous iterate for the momentum step)
            xk:copy(xkm)
            break
         end
         L = L * Lstep
      end

      if useMomentum then
         local tnext = (1 + math.sqrt(1 + 4 * tk * tk)) / 2
         -- y = xk + (tk - 1) / tnext * (xk - x_previous)
         xkm:add(-1, xk)
         y:copy(xk):add((1 - tk) / tnext, xkm)
         xkm:copy(xk)
         tk = tnext
      else
         y:copy(xk)
         tk = 0
      end

      fply = f(y)
      local gply = g(y)
      if verbose then
         print(string.format('FistaLS iteration %d: F was %g, now %g', iter - 1, fval, fply + gply))
      end
      fval = fply + gply
      local record = {nline = nline, L = L, F = fval, Fply = fply, Gply = gply, Q = Q}
      if verbose then record.xk, record.y = xk:clone(), y:clone() end
      history[iter] = record
      params.L = L

      if (iter > 1 and math.abs(fval - history[iter - 1].F) <= errthres) or iter >= maxiter then
         xinit:copy(y)
         return y, history
      end
   end
   -- maxiter < 1: nothing to do
   xinit:copy(y)
   return y, history
end
