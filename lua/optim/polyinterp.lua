-- optim.polyinterp(points, xminBound, xmaxBound): where the polynomial interpolating N points
-- (x, f(x), f'(x)) has its minimum, as minFunc's polyinterp does; used by optim.lswolfe.
--
-- points is an N x 3 tensor of rows {x, f, g}. With two points and no bounds the closed form for the cubic's
-- minimiser is used, clipped to the two x (their mean when the cubic has no real minimiser); that case
-- returns the position only. Otherwise the polynomial of degree 2N-1 matching every f and g is fitted (least
-- squares), and among the bounds, the given x and the real critical points inside [xminBound, xmaxBound]
-- (defaults: the smallest and largest x) the one with the lowest value wins; returns it and that value
-- (the middle of the bounds and math.huge when none qualifies).

-- coefficients highest degree first; value of the polynomial at a number
local function polyval(coeffs, at)
   local v = 0
   for i = 1, #coeffs do v = v * at + coeffs[i] end
   return v
end

-- the roots {re, im} of the polynomial with coefficients c (highest degree first)
local function roots(c)
   local coeffs = {}
   for i = 1, #c do coeffs[i] = math.abs(c[i]) < 1e-12 and 0 or c[i] end
   local first = 1
   while first <= #coeffs and coeffs[first] == 0 do first = first + 1 end
   if first > #coeffs then return {} end
   local last = #coeffs
   local zeroRoots = 0
   while coeffs[last] == 0 do last, zeroRoots = last - 1, zeroRoots + 1 end
   local p = {}
   for i = first, last do p[#p + 1] = coeffs[i] end

   local found = {}
   local degree = #p - 1
   if degree == 1 then
      found[1] = {-p[2] / p[1], 0}
   elseif degree > 1 then
      -- eigenvalues of the companion matrix
      local companion = torch.DoubleTensor(degree, degree):zero()
      for j = 1, degree do companion[1][j] = -p[j + 1] / p[1] end
      for i = 2, degree do companion[i][i - 1] = 1 end
      local e = torch.eig(companion, 'N')
      for i = 1, degree do found[i] = {e[i][1], e[i][2]} end
   end
   for _ = 1, zeroRoots do found[#found + 1] = {0, 0} end
   return found
end

local function cubicMinimizer(x1, f1, g1, x2, f2, g2)
   -- (x1, f1, g1) is the point with the smaller x
   local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
   local d2 = math.sqrt(d1 * d1 - g1 * g2)
   if d2 ~= d2 then return (x1 + x2) / 2 end
   local t = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
   return math.min(math.max(t, x1), x2)
end

function optim.polyinterp(points, xminBound, xmaxBound)
   local n = points:size(1)
   local px, pf, pg = {}, {}, {}
   for i = 1, n do px[i], pf[i], pg[i] = points[i][1], points[i][2], points[i][3] end

   if n == 2 and xminBound == nil and xmaxBound == nil then
      local lo, hi = 1, 2
      if px[2] < px[1] then lo, hi = 2, 1 end
      return cubicMinimizer(px[lo], pf[lo], pg[lo], px[hi], pf[hi], pg[hi])
   end

   local order = 2 * n - 1
   local xmin, xmax = math.huge, -math.huge
   for i = 1, n do xmin, xmax = math.min(xmin, px[i]), math.max(xmax, px[i]) end
   xminBound = xminBound or xmin
   xmaxBound = xmaxBound or xmax

   -- one equation per value and per derivative, unknowns: the coefficients, highest degree first
   local A = torch.DoubleTensor(2 * n, order + 1):zero()
   local b = torch.DoubleTensor(2 * n, 1):zero()
   for i = 1, n do
      for j = 0, order do A[i][order - j + 1] = px[i] ^ j end
      b[i][1] = pf[i]
      for j = 1, order do A[n + i][j] = (order - j + 1) * px[i] ^ (order - j) end
      b[n + i][1] = pg[i]
   end
   local solution = torch.gels(b, A)
   local coeffs = {}
   for i = 1, order + 1 do
      local c = solution[i][1]
      coeffs[i] = math.abs(c) <= 1e-12 and 0 or c
   end

   local derivative, finite = {}, true
   for i = 1, order do
      derivative[i] = coeffs[i] * (order - i + 1)
      if derivative[i] ~= derivative[i] or derivative[i] == math.huge then finite = false end
   end

   local candidates = {xminBound, xmaxBound}
   for i = 1, n do candidates[#candidates + 1] = px[i] end
   if finite then
      for _, r in ipairs(roots(derivative)) do
         if r[2] == 0 then candidates[#candidates + 1] = r[1] end
      end
   end

   local minPos, fmin = (xminBound + xmaxBound) / 2, math.huge
   for _, c in ipairs(candidates) do
      if c >= xminBound and c <= xmaxBound then
         local fc = polyval(coeffs, c)
         if fc < fmin then minPos, fmin = c, fc end
      end
   end
   return minPos, fmin
end
