-- class: Torch's small object system for plain Lua tables (the `class` rock, torch/class), which programs such
-- as CycleGAN build their models and data loaders on. Independent of torch.class: no torch type, no
-- serialization hooks, nothing global.
--
--   local A = class('A')            -- or class.new('A'); a constructor table to put methods in
--   local B, A_methods = class('B', 'A')
--   function B:__init(x) A.__init(self, x) end
--   local b = B(1)                  -- or B.new(1): a table whose metatable is B's
--   class.type(b) == 'B'; class.istype(b, 'A') == true; class.factory('B') (no __init); class.metatable('B')
--
-- Each class is one metatable holding its methods, with __index pointing at itself; a child's metatable is its
-- parent's, so lookups walk up the chain. What class() returns is a stand-in for that metatable: reading and
-- writing it reach the metatable, calling it makes an instance. ffi ctypes can be registered as a class
-- (class.new(name, parent, ctype)) so that class.type names cdata of that type.
local class = {}

local metatables = {}   -- name -> the class's metatable
local descendants = {}  -- name -> set of the names that are it or inherit from it
local ctypeNames = {}   -- ffi ctype id -> class name

local function constructor(mt)
   return setmetatable({}, {
      __index = mt,
      __newindex = mt,
      __metatable = mt,
      __call = function(_, ...) return mt.new(...) end,
   })
end

function class.new(name, parentName, ctype)
   if type(name) ~= 'string' then
      error("class.new: a class name (string) expected, got " .. type(name), 2)
   end
   if parentName ~= nil and type(parentName) ~= 'string' then
      error("class.new: the parent's name must be a string, got " .. type(parentName), 2)
   end
   if metatables[name] then error(string.format('class <%s> already exists', name), 2) end
   local parent = parentName and metatables[parentName]
   if parentName and not parent then error(string.format('parent class <%s> does not exist', parentName), 2) end
   if ctype ~= nil then
      local id = tonumber(ctype)
      if not id then error('class.new: an ffi ctype expected as the third argument', 2) end
      if ctypeNames[id] then
         error(string.format('ctype <%s> already considered as <%s>', tostring(ctype), ctypeNames[id]), 2)
      end
      ctypeNames[id] = name
   end

   local mt = {__typename = name}
   mt.__index = mt
   mt.__factory = function() return setmetatable({}, mt) end
   mt.__init = function() end   -- (its own, even under a parent: a child calls the parent's __init itself)
   mt.new = function(...)
      local self = mt.__factory()
      self:__init(...)
      return self
   end
   metatables[name] = mt
   descendants[name] = {[name] = true}
   if parent then
      setmetatable(mt, parent)
      local up = parent
      while up do   -- every ancestor counts the new class among its kind
         descendants[rawget(up, '__typename')][name] = true
         up = getmetatable(up)
      end
      return constructor(mt), parent
   end
   return constructor(mt)
end

function class.factory(name)
   local mt = metatables[name]
   if not mt then error(string.format('unknown class <%s>', tostring(name)), 2) end
   return mt.__factory()
end

function class.metatable(name)
   return metatables[name]
end

-- the class name of a value made by this package (or of a registered ctype), else nil
local function nameOf(obj)
   local kind = type(obj)
   if kind == 'cdata' then
      return ctypeNames[tonumber(require('ffi').typeof(obj))]
   elseif kind == 'table' or kind == 'userdata' then
      local mt = getmetatable(obj)
      if type(mt) == 'table' then return rawget(mt, '__typename') end
   end
end

function class.type(obj)
   return nameOf(obj) or type(obj)
end

function class.istype(obj, typename)
   local name = nameOf(obj)
   if not name then return type(obj) == typename end
   local kind = descendants[typename]
   if kind then return kind[name] or false end
   return name == typename   -- a __typename of another type system
end

-- argcheck's rules name these classes too (a B where an A is asked for), as with the original package
do
   local ok, env = pcall(require, 'argcheck.env')
   if ok then
      local previous = env.istype
      env.istype = function(obj, typename)
         local name = nameOf(obj)
         if name and metatables[name] then return class.istype(obj, typename) end
         return previous(obj, typename)
      end
   end
end

return setmetatable(class, {__call = function(self, ...) return self.new(...) end})
