-- Liveness of the tensors a network's passes touch, learnt by running them.
--
-- Every module's updateOutput / updateGradInput / accGradParameters / backward is
-- wrapped (on the instance) for one pass. A clock ticks when a call starts and when
-- it returns; for each storage we keep the tick it was first written (`def`) and the
-- last tick something still needed it (`use`). Two storages whose [def, use]
-- intervals do not meet can live in the same memory.
--
--  * A leaf module reads its input (and, going backward, its gradOutput) until it
--    returns, and writes its output (gradInput) from the moment it is called.
--  * nn.Sequential only hands tensors from one child to the next, so its children's
--    own calls say everything; so does nn.gModule going forward (its nodes receive
--    their parents' outputs by reference). Going backward a gModule also sums the
--    gradients a node receives just before calling its module: each node's received
--    gradients count as read by that node's module calls (updateGradInput and the
--    later accGradParameters, unless it is nn.Module's, which reads nothing), or, for
--    a node without a module, until the gModule returns.
--  * Any other container (Concat, ConcatTable, ParallelTable, MapTable, a user's own)
--    may read its input and its children's results at any time while it runs: they
--    are all kept alive until it returns, and what it makes itself is alive from
--    the moment it is called. That is conservative, never wrong.
local utils = require 'optnet.utils'

local liveness = {}

local methods = {'updateOutput', 'updateGradInput', 'accGradParameters', 'backward'}

local function isChain(m)
   local name = torch.typename(m)
   return name == 'nn.Sequential' or name == 'nn.gModule'
end

-- Runs net forward on input (and, when withBackward, backward on a copy of its
-- output) with every module watched. Returns
--   storages[key] = {storage, sample (a tensor on it), order (of first sight),
--                    def, use, fwdUse (the last use going forward), phase ('forward'
--                    or 'backward': where it was first written), producer (the
--                    module that first wrote it), leafReaders / gradReaders (sets of
--                    the modules that read it as input / as gradOutput)}
--   calls[module] = list of {a, b, method, input, gradOutput, noop}
--   input, gradOutput: the storage keys of the pass's input and of the gradient
--                      it was given.
function liveness.run(net, input, withBackward)
   local clock, seen = 0, 0
   local storages, calls = {}, {}
   local backwardPhase = false

   local function info(t)
      local k = utils.storageKey(t)
      if not k then return nil end
      local s = storages[k]
      if not s then
         seen = seen + 1
         s = {storage = t:storage(), sample = t, order = seen, leafReaders = {}, gradReaders = {}}
         storages[k] = s
      end
      return s, k
   end
   -- `reader`: the leaf module reading x, noted in the storage's reader set `set`.
   local function use(x, tick, reader, set)
      utils.eachTensor(x, function(t)
         local s = info(t)
         if s then
            if not s.use or tick > s.use then s.use = tick end
            if not backwardPhase then s.fwdUse = math.max(s.fwdUse or tick, tick) end
            if reader then s[set][reader] = true end
         end
      end)
   end
   -- Storages nobody wrote yet are born at `a`, the start of the call that hands
   -- them out; a container's result that a child wrote keeps the child's tick.
   local function define(x, a, b, m)
      utils.eachTensor(x, function(t)
         local s = info(t)
         if s then
            if s.def == nil then
               s.def = a
               s.phase = backwardPhase and 'backward' or 'forward'
               s.producer = m
            end
            if not s.use or b > s.use then s.use = b end
            if not backwardPhase then s.fwdUse = math.max(s.fwdUse or b, b) end
         end
      end)
   end

   -- The gradients each node of gModule g received in its backward call [a, b].
   -- (accGradParameters reads only the gradients of nodes with a module.)
   local function nodeGradients(g, method, a, b)
      for _, node in ipairs(g.backwardnodes or {}) do
         local d = node.data
         if d.module then
            local tick
            for _, c in ipairs(calls[d.module] or {}) do
               if c.method ~= 'updateOutput' and not c.noop and c.a > a and c.b < b then
                  tick = math.max(tick or c.b, c.b)
               end
            end
            if tick then use(d.gradOutput, tick, d.module, 'gradReaders') end
         elseif method ~= 'accGradParameters' then
            use(d.gradOutput, b)
         end
      end
   end

   local function watch(method, original)
      return function(self, x, gradOutput, scale)
         clock = clock + 1
         local a = clock
         local r = original(self, x, gradOutput, scale)
         clock = clock + 1
         local b = clock
         local leaf = self.modules == nil
         local chain = not leaf and isChain(self)
         -- nn.Module's own accGradParameters (modules without parameters) reads nothing
         local noop = method == 'accGradParameters' and original == nn.Module.accGradParameters
         if not chain and not noop then
            use(x, b, leaf and self or nil, 'leafReaders')
            if method ~= 'updateOutput' then use(gradOutput, b, self, 'gradReaders') end
         end
         if method == 'updateOutput' then
            define(self.output, a, b, self)
         elseif method ~= 'accGradParameters' then
            define(self.gradInput, a, b, self)
         end
         if method ~= 'updateOutput' and torch.typename(self) == 'nn.gModule' then
            nodeGradients(self, method, a, b)
         end
         if not leaf and not chain then
            for _, child in ipairs(self.modules) do
               use(method == 'updateOutput' and child.output or child.gradInput, b)
            end
         end
         local list = calls[self] or {}
         calls[self] = list
         list[#list + 1] = {a = a, b = b, method = method, input = x, gradOutput = gradOutput, noop = noop}
         return r
      end
   end

   local saved = {}
   for _, m in ipairs(utils.modules(net)) do
      local own = {}
      for _, name in ipairs(methods) do
         own[name] = rawget(m, name)
         m[name] = watch(name, m[name])
      end
      saved[m] = own
   end

   local ok, err = pcall(function()
      local out = net:forward(input)
      clock = clock + 1
      use(out, clock)
      if withBackward then
         backwardPhase = true
         local gradOutput = utils.recursiveClone(out)
         local gi = net:backward(input, gradOutput)
         clock = clock + 1
         use(gi, clock)
         return gradOutput
      end
   end)
   for m, own in pairs(saved) do
      for _, name in ipairs(methods) do m[name] = own[name] end
   end
   if not ok then error(err, 0) end
   local gradOutput = err

   return {storages = storages, calls = calls, input = utils.storageKeys(input),
           gradOutput = gradOutput and utils.storageKeys(gradOutput) or {}}
end

return liveness
