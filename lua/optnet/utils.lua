-- Helpers shared by optnet's files: walking the tensors held (possibly in nested
-- tables) by a module field, naming where each one sits, and cloning results.
local utils = {}

-- The key of a tensor's storage: equal for every tensor on the same memory.
function utils.storageKey(t)
   local s = t:storage()
   return s and torch.pointer(s) or nil
end

-- Calls fn(tensor, path) for each tensor in x (a tensor or a nested table of them);
-- path is the list of keys leading to it from x.
local function eachTensor(x, fn, path, seen)
   path = path or {}
   if torch.isTensor(x) then
      fn(x, path)
   elseif type(x) == 'table' and not torch.typename(x) then
      seen = seen or {}
      if seen[x] then return end
      seen[x] = true
      for k, v in pairs(x) do
         local sub = {unpack(path)}
         sub[#sub + 1] = k
         eachTensor(v, fn, sub, seen)
      end
   end
end
utils.eachTensor = eachTensor

-- The storage keys used by x (a tensor or nested table), as a set.
function utils.storageKeys(x)
   local keys = {}
   eachTensor(x, function(t)
      local k = utils.storageKey(t)
      if k then keys[k] = t end
   end)
   return keys
end

-- Follows `path` (a list of keys) from `root`; nil when it no longer leads anywhere.
function utils.follow(root, path)
   local x = root
   for _, k in ipairs(path) do
      if type(x) ~= 'table' then return nil end
      x = x[k]
   end
   return x
end

-- A copy of a tensor or nested table of tensors, with memory of its own.
function utils.recursiveClone(x)
   return (nn.utils.recursiveCopy(nil, x))
end

-- The tensor fields of a module other than output and gradInput (parameters and buffers).
function utils.stateTensors(m)
   local r = {}
   for k, v in pairs(m) do
      if torch.isTensor(v) and k ~= 'output' and k ~= 'gradInput' then r[k] = v end
   end
   return r
end

-- Each module of net once, in apply order (a module held twice is visited once).
function utils.modules(net)
   local list, seen = {}, {}
   net:apply(function(m)
      if not seen[m] then seen[m] = true; list[#list + 1] = m end
   end)
   return list
end

return utils
