-- optim.cmaes(opfunc, x, config, state): CMA-ES, the covariance matrix adaptation evolution strategy
-- (Hansen; after the "barecmaes2" reference code), derivative free: opfunc's gradient is ignored.
--
-- Each iteration samples popsize candidates from N(mean, sigma^2 C) (shaped like x for opfunc), moves the
-- mean to the weighted mean of the best half, and adapts sigma and C along their evolution paths.
-- Options are read from state (which defaults to config): sigma (initial step size, needed), maxEval
-- (1e3 * N^2), ftarget (stop once the best value is at most this), popsize (4 + floor(3 ln N)),
-- verb_disp (0: quiet; k: a progress line every k iterations), min_iterations (1).
-- It also stops when the spread of the values in one generation is below 1e-12, when sigma * max(D) < 1e-11,
-- or when C's condition (max(D)/min(D)) exceeds 1e7. x is not changed.
-- Returns the best point found (flat, N elements), the table of values (f(x), then each generation's best,
-- then the best of all) and the number of evaluations.
function optim.cmaes(opfunc, x, config, state)
   local xtype = torch.type(x)
   if xtype ~= 'torch.DoubleTensor' and xtype ~= 'torch.FloatTensor' then
      error('optim.cmaes: x must be a torch.DoubleTensor or torch.FloatTensor (got ' .. xtype .. ')', 2)
   end
   config = config or {}
   state = state or config
   local xmean = x:clone():view(-1)
   local N = xmean:size(1)
   local sigma = tonumber(state.sigma)
   if not sigma then error('optim.cmaes: state.sigma (the initial step size) is required', 2) end
   local ftarget = state.ftarget
   local maxEval = tonumber(state.maxEval) or 1e3 * N ^ 2
   local verb_disp = state.verb_disp or 0
   local min_iterations = state.min_iterations or 1
   local lambda = state.popsize or 4 + math.floor(3 * math.log(N))

   -- recombination weights of the best mu candidates (mu may be fractional, as in Torch7: it enters the
   -- weights' formula as it is and counts floor(mu) parents)
   local mu = lambda / 2
   local nParents = math.floor(mu)
   local w = torch.DoubleTensor(nParents)
   for i = 1, nParents do w[i] = math.log(mu + 0.5) - math.log(i) end
   w:div(w:sum())
   local mueff = w:sum() ^ 2 / torch.cmul(w, w):sum()
   local weights = w:typeAs(x)

   -- adaptation constants
   local cc = (4 + mueff / N) / (N + 4 + 2 * mueff / N)
   local cs = (mueff + 2) / (N + mueff + 5)
   local c1 = 2 / ((N + 1.3) ^ 2 + mueff)
   local cmu = math.min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((N + 2) ^ 2 + mueff))
   local damps = 2 * mueff / lambda + 0.3 + cs

   local pc = x.new(N):zero()
   local ps = x.new(N):zero()
   local B = torch.eye(N):typeAs(x)
   local D = x.new(N):fill(1)
   local C = torch.eye(N):typeAs(x)
   local invsqrtC = torch.eye(N):typeAs(x)
   local candidates = x.new(lambda, N)
   local fitvals = x.new(lambda)
   local eigeneval, counteval = 0, 0
   local fhist = {(opfunc(x))}
   local bestX, bestF, bestAt = nil, nil, 0

   local function sample()
      -- refresh B, D and C^-1/2 only every so often: the decomposition is O(N^3)
      if counteval - eigeneval > lambda / (c1 + cmu) / N / 10 then
         eigeneval = counteval
         C = torch.triu(C) + torch.triu(C, 1):t()
         local evals, evecs = torch.symeig(C, 'V')
         D, B = torch.sqrt(evals), evecs
         invsqrtC = B * torch.diag(torch.pow(D, -1)) * B:t()
      end
      -- (the arithmetic below keeps Torch7's order of operations: C starts as the identity, whose
      -- eigenvectors are degenerate, so rounding differences would change every later sample)
      for k = 1, lambda do
         local z = D:clone():normal(0, 1):cmul(D)
         candidates[k]:copy(torch.add(xmean, (B * z) * sigma))
      end
   end

   local function update()
      counteval = counteval + lambda
      local xold = xmean:clone()
      local order
      fitvals, order = torch.sort(fitvals)
      local parents = candidates:index(1, order[{{1, nParents}}])
      fhist[#fhist + 1] = fitvals[1]
      if bestF == nil or fitvals[1] < bestF then
         bestX, bestF, bestAt = parents[1]:clone(), fitvals[1], counteval
      end

      xmean:zero():addmv(parents:t(), weights)

      -- evolution paths
      local y = xmean - xold
      local z = invsqrtC * y
      ps = ps - ps * cs + z * ((cs * (2 - cs) * mueff) ^ 0.5 / sigma)
      local psNorm2 = torch.cmul(ps, ps):sum()
      local hsig = (psNorm2 / (1 - (1 - cs) ^ (2 * counteval / lambda)) / N < 2 + 4 / (N + 1)) and 1 or 0
      pc = pc - pc * cc + y * ((cc * (2 - cc) * mueff) ^ 0.5 / sigma) * hsig

      -- covariance: rank-one update from pc, rank-mu update from the parents' steps
      local c1a = c1 - (1 - hsig ^ 2) * c1 * cc * (2 - cc)
      local steps = parents - xold:view(1, N):expand(nParents, N)
      local d, w, p = {}, {}, {}
      for k = 1, nParents do
         w[k], d[k] = weights[k], {}
         for i = 1, N do d[k][i] = steps[k][i] end
      end
      for i = 1, N do p[i] = pc[i] end
      local sigma2 = sigma ^ 2
      for i = 1, N do
         local row = C[i]
         for j = 1, N do
            local rankMu = 0
            for k = 1, nParents do rankMu = rankMu + w[k] * d[k][i] * d[k][j] end
            local cij = row[j]
            row[j] = cij + ((-c1a - cmu) * cij + c1 * p[i] * p[j] + cmu * (rankMu / sigma2))
         end
      end

      -- step size, at most a factor exp(0.6) per generation
      sigma = sigma * math.exp(math.min(0.6, (cs / damps) * (psNorm2 / N - 1) / 2))
   end

   local function stopReasons()
      local why = {}
      if counteval > 0 then
         if counteval >= maxEval then why.evals = maxEval end
         if ftarget ~= nil and fitvals:nElement() > 0 and fitvals[1] <= ftarget then why.ftarget = ftarget end
         if D:max() > 1e7 * D:min() then why.condition = 1e7 end
         if fitvals:nElement() > 1 and fitvals[fitvals:nElement()] - fitvals[1] < 1e-12 then why.tolfun = 1e-12 end
         if sigma * D:max() < 1e-11 then why.tolx = 1e-11 end
      end
      return why
   end

   local function report()
      if verb_disp <= 0 then return end
      local generation = counteval / lambda
      if generation == 1 or generation % (10 * verb_disp) == 0 then
         print('evals:   axis-ratio  max(std)  f-value')
      end
      if generation <= 2 or generation % verb_disp == 0 then
         print(string.format('%6d: %8.1f %9.1e  %s', counteval, D:max() / D:min(),
            sigma * math.sqrt(torch.diag(C):max()), tostring(fitvals[1])))
      end
   end

   local iteration = 0
   while next(stopReasons()) == nil or iteration < min_iterations do
      iteration = iteration + 1
      sample()
      for i = 1, lambda do
         fitvals[i] = (opfunc(candidates[i]:viewAs(x)))
      end
      update()
      report()
   end

   if verb_disp > 0 then
      for k, v in pairs(stopReasons()) do print('optim.cmaes stopped: ' .. k .. ' = ' .. tostring(v)) end
      print('best f = ' .. tostring(bestF) .. ' after ' .. bestAt .. ' evaluations (' .. iteration .. ' iterations)')
   end
   fhist[#fhist + 1] = bestF
   return bestX, fhist, counteval
end
