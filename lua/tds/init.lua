-- tds: Torch7's "data structures" package, the part checkpoints use:
-- tds.Vec (a growable array) and tds.Hash (a map), with Torch7-compatible
-- serialization (version 0; Vec: long n, then n objects; Hash: long n,
-- then n key/value object pairs).
--
-- The objects are full userdata (as the real tds's are cdata), so that `#v`
-- works: LuaJIT does not honour __len on tables. Contents live in Lua
-- tables in a weak side table keyed by the object. Iterate with
-- v:ipairs() / h:pairs() (or pairs()/ipairs() where LuaJIT has 5.2
-- compatibility, through __pairs/__ipairs).
local torch = require 'torch'

local tds = {}

local contents = setmetatable({}, {__mode = 'k'})   -- object -> {n = count, items = {...}}

local function box(self)
   local b = contents[self]
   if not b then error('tds: not a tds object', 3) end
   return b
end

local function makeClass(name, methods, index, newindex, length)
   local mt = {}
   for k, v in pairs(methods) do mt[k] = v end
   local function new()
      local u = newproxy(false)
      debug.setmetatable(u, mt)
      contents[u] = {n = 0, items = {}}
      return u
   end
   torch._newclass(name, mt, function(...)
      local self = new()
      self:__init(...)
      return self
   end, nil, tds)
   -- the class table is the userdata metatable: methods first, then contents
   mt.__index = function(self, k)
      local m = mt[k]
      if m ~= nil then return m end
      return index(self, k)
   end
   mt.__newindex = newindex
   mt.__len = length
   mt.__tostring = function(self) return self:__tostring__() end
   mt.__pairs = function(self) return self:pairs() end
   mt.__ipairs = function(self) return self:ipairs() end
   mt.__factory = function() return new() end
   mt.__version = 0
   return mt
end

-- ---------------------------------------------------------------- tds.Vec

local Vec = {}

function Vec:__init(...)
   local n = select('#', ...)
   local a = ...
   if n == 1 and type(a) == 'table' and not torch.typename(a) then
      for i = 1, #a do self[i] = a[i] end
   else
      for i = 1, n do self[i] = select(i, ...) end
   end
end

local function vecIndex(self, k)
   if type(k) ~= 'number' then return nil end
   local b = box(self)
   if k < 1 or k > b.n or k ~= math.floor(k) then return nil end
   return b.items[k]
end

local function vecNewindex(self, k, v)
   local b = box(self)
   if type(k) ~= 'number' or k < 1 or k > b.n + 1 or k ~= math.floor(k) then
      error(string.format('tds.Vec: index %s out of range (size %d; assign at 1..%d)', tostring(k), b.n, b.n + 1), 2)
   end
   b.items[k] = v
   if k == b.n + 1 then b.n = k end
end

function Vec:insert(i, v)
   local b = box(self)
   if v == nil then i, v = b.n + 1, i end
   if type(i) ~= 'number' or i < 1 or i > b.n + 1 then error('tds.Vec.insert: index out of range', 2) end
   for j = b.n, i, -1 do b.items[j + 1] = b.items[j] end
   b.items[i] = v
   b.n = b.n + 1
   return self
end

function Vec:remove(i)
   local b = box(self)
   i = i or b.n
   if type(i) ~= 'number' or i < 1 or i > b.n then error('tds.Vec.remove: index out of range', 2) end
   local v = b.items[i]
   for j = i, b.n - 1 do b.items[j] = b.items[j + 1] end
   b.items[b.n] = nil
   b.n = b.n - 1
   return v
end

function Vec:resize(n)
   local b = box(self)
   if type(n) ~= 'number' or n < 0 then error('tds.Vec.resize: non-negative size expected', 2) end
   for j = n + 1, b.n do b.items[j] = nil end
   b.n = n
   return self
end

function Vec:clear() return self:resize(0) end

function Vec:sort(cmp)
   local b = box(self)
   local t = {}
   for i = 1, b.n do t[i] = b.items[i] end
   table.sort(t, cmp)
   for i = 1, b.n do b.items[i] = t[i] end
   return self
end

function Vec:concat(sep, i, j)
   local b = box(self)
   return table.concat(b.items, sep or '', i or 1, j or b.n)
end

function Vec:ipairs()
   local b = box(self)
   local i = 0
   return function()
      i = i + 1
      if i <= b.n then return i, b.items[i] end
   end, self, 0
end
Vec.iter = Vec.ipairs

function Vec:totable()
   local b, t = box(self), {}
   for i = 1, b.n do t[i] = b.items[i] end
   return t
end

function Vec:__tostring__()
   local b = box(self)
   local parts = {}
   for i = 1, math.min(b.n, 20) do parts[i] = tostring(b.items[i]) end
   if b.n > 20 then parts[#parts + 1] = '...' end
   return string.format('tds.Vec[%d]{%s}', b.n, table.concat(parts, ', '))
end

function Vec:__write(f)
   local b = box(self)
   f:writeLong(b.n)
   for i = 1, b.n do f:writeObject(b.items[i]) end
end

-- Counts come from the file: each element takes at least a type tag, so a
-- count beyond the bytes left is refused before the loop.
local function readCount(f, per, what)
   local at = f:_offset()
   local n = f:readLong()
   local left = f._len - f._pos
   local minBytes = f:isBinary() and 4 * per or 2 * per
   if n < 0 or n ~= math.floor(n) or n * minBytes > left then
      error(string.format('t7: at byte %d: expected the size of a %s, got %.0f with %d bytes left', at, what, n,
                          left), 0)
   end
   return n
end

function Vec:__read(f)
   local b = box(self)
   local n = readCount(f, 1, 'tds.Vec')
   for i = 1, n do b.items[i] = f:readObject() end
   b.n = n
end

makeClass('tds.Vec', Vec, vecIndex, vecNewindex, function(self) return box(self).n end)

-- ---------------------------------------------------------------- tds.Hash

local Hash = {}

function Hash:__init(tbl)
   if tbl ~= nil then
      if type(tbl) ~= 'table' then error('tds.Hash: table expected', 3) end
      for k, v in pairs(tbl) do self[k] = v end
   end
end

local function hashIndex(self, k)
   return box(self).items[k]
end

local function hashNewindex(self, k, v)
   if k == nil or k ~= k then error('tds.Hash: invalid key (nil or NaN)', 2) end
   local b = box(self)
   local had = b.items[k] ~= nil
   if v == nil then
      if had then b.n = b.n - 1 end
   elseif not had then
      b.n = b.n + 1
   end
   b.items[k] = v
end

function Hash:pairs()
   return next, box(self).items, nil
end
Hash.iter = Hash.pairs

function Hash:clear()
   local b = box(self)
   b.items, b.n = {}, 0
   return self
end

function Hash:totable()
   local t = {}
   for k, v in pairs(box(self).items) do t[k] = v end
   return t
end

function Hash:__tostring__()
   return string.format('tds.Hash[%d]', box(self).n)
end

function Hash:__write(f)
   local b = box(self)
   f:writeLong(b.n)
   for k, v in pairs(b.items) do
      f:writeObject(k)
      f:writeObject(v)
   end
end

function Hash:__read(f)
   local n = readCount(f, 2, 'tds.Hash')
   for _ = 1, n do
      local at = f:_offset()
      local k = f:readObject()
      local v = f:readObject()
      if k == nil or k ~= k then error(string.format('t7: at byte %d: expected a tds.Hash key, got nil or NaN', at), 0) end
      hashNewindex(self, k, v)
   end
end

makeClass('tds.Hash', Hash, hashIndex, hashNewindex, function(self) return box(self).n end)

-- interpreted, as the object reader in torch/File.lua (a LuaJIT trace crash)
jit.off(Vec.__read)
jit.off(Hash.__read)

return tds
