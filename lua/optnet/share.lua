-- Giving storages whose lives do not overlap the same memory.
--
-- The candidates (outputs in inference, gradInputs in training) are taken in the
-- order they are born. Each joins a pool (one per tensor type) whose current
-- holder died before the candidate was born, the pool closest to it in size;
-- otherwise it opens a new pool. Greedy colouring of intervals taken by start,
-- which uses as few pools as any assignment can.
--
-- A pool of several storages keeps its largest one; every output / gradInput
-- tensor on another member is set onto it with its own offset, sizes and strides.
-- Each such tensor's place (field and keys) is noted in module.__optnetShared so
-- that removeOptimization can give it memory of its own again, even after the
-- network was saved and loaded.
local utils = require 'optnet.utils'

local share = {}

-- The pools for the storages of `live` that accept(key, info) picks.
function share.plan(live, accept)
   local list = {}
   for key, s in pairs(live.storages) do
      if s.def and s.use and accept(key, s) then list[#list + 1] = {key = key, info = s} end
   end
   table.sort(list, function(x, y)
      if x.info.def ~= y.info.def then return x.info.def < y.info.def end
      return x.info.order < y.info.order
   end)
   local pools = {}
   for _, c in ipairs(list) do
      local s = c.info
      local kind = torch.typename(s.sample)
      local size = s.storage:size()
      local best, gap
      for _, p in ipairs(pools) do
         if p.kind == kind and p.free < s.def then
            local g = math.abs(p.size - size)
            if not best or g < gap then best, gap = p, g end
         end
      end
      if not best then
         best = {kind = kind, size = 0, members = {}}
         pools[#pools + 1] = best
      end
      best.members[#best.members + 1] = c
      best.free = s.use
      if size >= best.size then best.size, best.keeper = size, s.storage end
   end
   return pools
end

local fields = {'output', 'gradInput'}

-- Points every module tensor on a pooled storage at its pool's keeper.
function share.apply(net, pools)
   local target = {}
   for _, p in ipairs(pools) do
      if #p.members > 1 then
         for _, c in ipairs(p.members) do target[c.key] = p.keeper end
      end
   end
   local moved = 0
   for _, m in ipairs(utils.modules(net)) do
      for _, field in ipairs(fields) do
         utils.eachTensor(m[field], function(t, path)
            local key = utils.storageKey(t)
            local keeper = key and target[key]
            if keeper and key ~= torch.pointer(keeper) then
               if t:nElement() > 0 then
                  t:set(keeper, t:storageOffset(), t:size(), t:stride())
               else
                  t:set(keeper, 1, torch.LongStorage())
               end
               moved = moved + 1
            end
            if keeper then
               local place = {field, unpack(path)}
               m.__optnetShared = m.__optnetShared or {}
               table.insert(m.__optnetShared, place)
            end
         end)
      end
   end
   return moved
end

return share
