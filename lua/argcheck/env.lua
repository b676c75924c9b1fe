-- argcheck.env: how argcheck names the type of a value and decides whether a
-- value is of a type named in a rule. Replace env.istype before building
-- checkers to plug in another class system; checkers already built keep the
-- function they were built with.
--
--   env.type(obj)              torch class name, metatable __typename, or type(obj)
--   env.istype(obj, typename)  true when obj is typename, a torch subclass of it,
--                              or matches it as a Lua pattern ('torch.*Tensor')
local env = {}

-- The class name carried by a value: torch's name for it, else the
-- __typename of its metatable (user classes outside torch).
local function className(obj)
   local th = rawget(_G, 'torch')
   local name = th and th.typename and th.typename(obj)
   if name then return name end
   local mt = getmetatable(obj)
   if type(mt) == 'table' and type(rawget(mt, '__typename')) == 'string' then
      return rawget(mt, '__typename')
   end
end

function env.type(obj)
   return className(obj) or type(obj)
end

function env.istype(obj, wanted)
   local name = className(obj)
   if not name then return type(obj) == wanted end
   local th = rawget(_G, 'torch')
   -- torch.isTypeOf knows parent classes and Torch7's pattern names: a plain
   -- name must be the whole class name ('torch.Long' is not a LongTensor),
   -- a pattern may match part of it ('torch.*Tensor', '.*Long')
   if th and th.isTypeOf and th.getmetatable and th.getmetatable(name) then
      return th.isTypeOf(obj, wanted)
   end
   -- as in Torch7, a class instance is not also a plain 'table'
   return name == wanted
end

return env
