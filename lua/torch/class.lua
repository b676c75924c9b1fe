-- torch.class and the type registry (Torch7's luaT layer, in Lua).
--
-- Every class has a metatable `mt` registered under its full name:
--   mt.__typename   full name ('nn.Linear')
--   mt.__index      mt itself (methods), falling back to the parent's mt
--   mt.__factory    creates an empty instance without __init (used by torch.load)
-- The global constructor table (e.g. nn.Linear) is callable: it creates an
-- instance and runs __init; indexing it reads the metatable, so
-- nn.Linear.forward is the method, as in Torch7.
local torch = ...
local ffi = require 'ffi'

local registry = {}       -- typename -> metatable
local constructors = {}   -- typename -> constructor table
local ctypeNames = {}     -- ctype id -> typename, for FFI-backed classes (Tensor, Storage)

torch._registry = registry

-- Tensors and storages are FFI cdata (so that `#t` and type(t) behave as for
-- Torch7's userdata); their class is found from their ctype.
function torch._registerCType(ct, name)
   ctypeNames[tonumber(ct)] = name
end

-- The class metatable of any object (table instance or cdata).
local function metaOf(obj)
   local ty = type(obj)
   if ty == 'cdata' then
      local name = ctypeNames[tonumber(ffi.typeof(obj))]
      return name and registry[name]
   elseif ty == 'table' or ty == 'userdata' then
      return getmetatable(obj)
   end
   return nil
end
torch._metaOf = metaOf

local function splitname(name)
   local pkg, short = name:match('^(.*)%.([^.]+)$')
   return pkg, short or name
end

-- Find (creating as needed) the table for a dotted package path in `root`.
local function packagetable(root, path)
   local t = root
   for part in path:gmatch('[^.]+') do
      local nxt = rawget(t, part)
      if nxt == nil then
         nxt = {}
         rawset(t, part, nxt)
      end
      t = nxt
   end
   return t
end

-- Register a metatable under `name` with its constructor table; used both by
-- torch.class and for the built-in Tensor and Storage types.
function torch._newclass(name, mt, ctor, parentmt, module)
   -- a placeholder made for an unknown class in a loaded file gives way to the real class
   if registry[name] and not rawget(registry[name], '__unknown') then
      error(string.format('class %s has been already assigned', name), 3)
   end
   mt.__typename = name
   if rawget(mt, '__index') == nil then mt.__index = mt end
   if parentmt then
      setmetatable(mt, {__index = parentmt})
      rawset(mt, '__parent', parentmt)
   end
   registry[name] = mt
   local constructor = setmetatable({}, {
      __index = mt,
      __newindex = mt,
      __call = function(_, ...) return ctor(...) end,
      __tostring = function() return name end,
   })
   rawset(mt, '__constructor', constructor)
   constructors[name] = constructor
   local pkg, short = splitname(name)
   if module then
      rawset(module, short, constructor)
   elseif pkg then
      rawset(packagetable(_G, pkg), short, constructor)
   else
      rawset(_G, short, constructor)
   end
   return constructor
end

function torch.class(name, parentName, module)
   if type(name) ~= 'string' then error('torch.class: class name (string) expected', 2) end
   if type(parentName) == 'table' and module == nil then
      module, parentName = parentName, nil
   end
   local parentmt
   if parentName then
      parentmt = registry[parentName]
      if not parentmt then
         error(string.format('torch.class: parent class %s does not exist', parentName), 2)
      end
   end
   local mt = {}
   -- luaT forwarded these metamethods to methods with trailing underscores
   -- (nn.Module's __call__ and __tostring__ are the ones that matter).
   mt.__tostring = function(self)
      local f = self.__tostring__
      if f then return f(self) end
      return torch.typename(self)
   end
   mt.__call = function(self, ...)
      local f = self.__call__
      if not f then error('attempt to call a ' .. torch.typename(self) .. ' object', 2) end
      return f(self, ...)
   end
   for _, op in ipairs {'add', 'sub', 'mul', 'div', 'unm', 'concat', 'eq', 'lt', 'le'} do
      mt['__' .. op] = function(a, b)
         local self = (type(a) == 'table' and a['__' .. op .. '__']) and a or b
         local f = type(self) == 'table' and self['__' .. op .. '__']
         if not f and op == 'eq' then return rawequal(a, b) end
         if not f then error('attempt to perform ' .. op .. ' on a ' .. torch.type(a) .. ' object', 2) end
         return f(a, b)
      end
   end
   local function ctor(...)
      local self = setmetatable({}, mt)
      local init = mt.__init
      if init then init(self, ...) end
      return self
   end
   mt.__factory = function() return setmetatable({}, mt) end
   mt.new = ctor  -- Torch7: Class.new(...) is the constructor too
   torch._newclass(name, mt, ctor, parentmt, module)
   return mt, parentmt
end

-- torch.setmetatable(table, name): make a plain table an instance of a class
-- (no __init runs); returns the table.
function torch.setmetatable(obj, name)
   if type(obj) ~= 'table' then error('torch.setmetatable: table expected, got ' .. type(obj), 2) end
   local mt = registry[name]
   if type(name) ~= 'string' or not mt then
      error('torch.setmetatable: unknown class ' .. tostring(name), 2)
   end
   return setmetatable(obj, mt)
end

function torch.getmetatable(name)
   return registry[name]
end

function torch.typename(obj)
   if type(obj) == 'cdata' then return ctypeNames[tonumber(ffi.typeof(obj))] end
   local mt = getmetatable(obj)
   if type(mt) == 'table' then
      local name = rawget(mt, '__typename')
      if name then return name end
   end
   return nil
end

function torch.type(obj)
   return torch.typename(obj) or type(obj)
end

-- Whether `obj` is an instance of a class (given as name or constructor/metatable), parents included.
function torch.isTypeOf(obj, typeSpec)
   local target
   if type(typeSpec) == 'string' then
      target = registry[typeSpec]
      if not target then
         -- Torch7 also matches a pattern against the type name chain; a match
         -- that is the spec itself must be the whole name ('torch.Long' is
         -- not a LongTensor, 'torch.*Tensor' and '.*Long' are).
         local mt = metaOf(obj)
         while type(mt) == 'table' do
            local tn = rawget(mt, '__typename')
            local m = tn and tn:match(typeSpec)
            if m and (m ~= typeSpec or m == tn) then return true end
            mt = rawget(mt, '__parent')
         end
         return false
      end
   elseif type(typeSpec) == 'table' then
      target = registry[typeSpec.__typename] or typeSpec
   else
      error('torch.isTypeOf: type name or class expected', 2)
   end
   local mt = metaOf(obj)
   while type(mt) == 'table' do
      if mt == target then return true end
      mt = rawget(mt, '__parent')
   end
   return false
end

-- The function that creates an empty instance of a class without __init.
function torch.factory(name)
   local mt = registry[name]
   return mt and mt.__factory
end

function torch.newmetatable(name, parentName, ctor)
   local mt = {}
   torch._newclass(name, mt, ctor or function() return setmetatable({}, mt) end,
                   parentName and registry[parentName])
   mt.__factory = function() return setmetatable({}, mt) end
   return mt
end

function torch.version(obj)
   local mt = metaOf(obj)
   local v = type(mt) == 'table' and mt.__version
   return v or 1
end

-- Classes that legacy files name but that we do not implement load as typed
-- objects holding their fields (nngraph, tds, ...): the reader asks for this.
function torch._unknownclass(name)
   if registry[name] then return registry[name] end
   local mt = {}
   mt.__factory = function() return setmetatable({}, mt) end
   mt.__unknown = true
   local pkg, short = splitname(name)
   local holder = {}  -- not installed in _G: it is a placeholder, not an API
   torch._newclass(name, mt, function() return setmetatable({}, mt) end, nil, holder)
   return mt
end
