-- Job/result serialization between thread states (torch/threads' default
-- 'threads.serialize'): a deep copy through the .t7 object layer, closures
-- with their upvalues. Package tables (anything in package.loaded, e.g. an
-- upvalue `local nn = require 'nn'`) are not copied: they are written as
-- their name and re-required on the other side.
local torch = require 'torch'
local ffi = require 'ffi'

local MARK = '__threads_package'

local function packageNames()
   local names = {}
   for name, v in pairs(package.loaded) do
      if type(v) == 'table' then names[v] = name end
   end
   names[_G] = '_G'
   return names
end

local function restore(v, seen)
   local ty = type(v)
   if ty == 'table' then
      local name = rawget(v, MARK)
      if name then return name == '_G' and _G or require(name) end
      if seen[v] then return v end
      seen[v] = true
      for k, x in pairs(v) do
         if type(x) == 'table' or type(x) == 'function' then
            local y = restore(x, seen)
            if y ~= x then rawset(v, k, y) end
         end
      end
   elseif ty == 'function' then
      if seen[v] then return v end
      seen[v] = true
      local i = 1
      while true do
         local name, x = debug.getupvalue(v, i)
         if not name then break end
         if type(x) == 'table' or type(x) == 'function' then
            local y = restore(x, seen)
            if y ~= x then debug.setupvalue(v, i, y) end
         end
         i = i + 1
      end
   end
   return v
end

local M = {}

-- A serializer {save = obj -> string, load = string -> obj}; `around(fn)` (optional)
-- runs fn with the state's storage read/write methods swapped (sharedserialize).
function M.make(around)
   around = around or function(fn, ...) return fn(...) end
   local S = {}
   function S.save(obj)
      local names = packageNames()
      local function hook(o)
         local n = type(o) == 'table' and names[o]
         if n then return {[MARK] = n} end
         return o
      end
      return around(function()
         local f = torch.MemoryFile()
         f:binary()
         local ok, err = pcall(f.writeObject, f, obj, nil, hook)
         if not ok then f:close(); error(err, 0) end
         local s = f:storage()
         local str = ffi.string(s._c.data, s:size() - 1)
         f:close()
         return str
      end)
   end
   function S.load(str)
      return around(function()
         return restore(torch.deserialize(str, 'binary'), {})
      end)
   end
   return S
end

local default = M.make()
M.save, M.load = default.save, default.load
return M
