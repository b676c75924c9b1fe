-- optim.de(opfunc, x, config): differential evolution ("DE/best/1/bin"), derivative free.
--
-- A population of popsize points is drawn uniformly in [minRegion, maxRegion]^D from a private generator
-- seeded with 1 (so a run is reproducible and leaves torch's global generator alone). Each generation every
-- member i gets a child: element j comes from best + scaleFactor * (pop[r1] - pop[r2]) (r1, r2 distinct and
-- not i) with probability crossoverRate (and always for one random j), else from pop[i]; a child at least as
-- good as its parent replaces it. x itself only gives the dimension.
-- config: popsize (10 * D), scaleFactor and crossoverRate (needed), maxFEs (needed: evaluations in all),
-- maxRegion (30), minRegion (-30).
-- Returns the best point found and the tensor of the maxFEs values f in the order they were evaluated.
function optim.de(opfunc, x, config)
   config = config or {}
   local function needed(name)
      local v = tonumber(config[name])
      if v == nil then error('optim.de: config.' .. name .. ' is required (a number)', 3) end
      return v
   end
   local scaleFactor = needed('scaleFactor')
   local crossoverRate = needed('crossoverRate')
   local maxFEs = needed('maxFEs')
   local D = x:nElement()
   local popsize = config.popsize or 10 * D
   local maxRegion = config.maxRegion or 30
   local minRegion = config.minRegion or -30

   local fx = x.new(maxFEs)
   local pop = x.new(popsize, D)
   local children = x.new(popsize, D)
   local fitness = x.new(popsize)
   local childFitness = x.new(popsize)
   local best = x.new(D)
   local nEval = 0
   local function evaluate(point)
      local f = opfunc(point)
      nEval = nEval + 1
      if nEval <= maxFEs then fx[nEval] = f end
      return f
   end

   local gen = torch.Generator()
   torch.manualSeed(gen, 1)
   pop:uniform(gen, minRegion, maxRegion)
   for i = 1, popsize do fitness[i] = evaluate(pop[i]) end

   -- Torch7 seeds "best" with the member of the *largest* value; kept so runs match Torch7's
   local bestFitness, where = fitness:max(1)
   bestFitness = bestFitness[1]
   best:copy(pop[where[1]])

   while nEval + 1 < maxFEs do
      for i = 1, popsize do
         local r1, r2
         repeat r1 = torch.random(gen, 1, popsize) until r1 ~= i
         repeat r2 = torch.random(gen, 1, popsize) until r2 ~= r1 and r2 ~= i
         local jrand = torch.random(gen, 1, D)
         local child, parent = children[i], pop[i]
         for j = 1, D do
            if torch.uniform(gen, 0, 1) < crossoverRate or i == jrand then
               child[j] = best[j] + scaleFactor * (pop[r1][j] - pop[r2][j])
            else
               child[j] = parent[j]
            end
         end
         childFitness[i] = evaluate(child)
      end
      for i = 1, popsize do
         if childFitness[i] <= fitness[i] then
            pop[i]:copy(children[i])
            fitness[i] = childFitness[i]
            if fitness[i] < bestFitness then
               bestFitness = fitness[i]
               best:copy(children[i])
            end
         end
      end
   end
   return best, fx
end
