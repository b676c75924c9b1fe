-- The Lua 5.2 library additions of Torch7's LuaJIT, which was built with
-- LUAJIT_ENABLE_LUA52COMPAT (lupa's LuaJIT is not): table.pack/unpack, rawlen,
-- package.searchers, __pairs/__ipairs, io.write and file:write returning the
-- file, os.execute's three results, debug.setmetatable returning its object,
-- debug.getuservalue/setuservalue. Loaded once per Lua state (torch/init.lua).
-- Not reproducible from Lua (language changes of that build): `goto` as a
-- reserved word, `break` anywhere, __len on tables, __lt/__le on mixed types,
-- coroutine.running()'s second result in the main coroutine.
if rawget(table, 'pack') and rawget(_G, 'rawlen') then return true end  -- already there

table.unpack = table.unpack or unpack
table.pack = table.pack or function(...) return {n = select('#', ...), ...} end

-- # on a table is raw in this LuaJIT (no __len), so it is rawlen
function rawlen(v)
   local t = type(v)
   if t ~= 'table' and t ~= 'string' then
      error("bad argument #1 to 'rawlen' (table or string expected, got " .. t .. ")", 2)
   end
   return #v
end

package.searchers = package.searchers or package.loaders

local rawpairs, rawipairs = pairs, ipairs
local function metamethod(v, name)
   local mt = getmetatable(v)
   return type(mt) == 'table' and rawget(mt, name) or nil
end
function pairs(t)
   local mm = metamethod(t, '__pairs')
   if mm then return mm(t) end
   return rawpairs(t)
end
function ipairs(t)
   local mm = metamethod(t, '__ipairs')
   if mm then return mm(t) end
   return rawipairs(t)
end

-- io.write / file:write return the file (so that writes chain), or nil, message
local rawwrite = io.write
function io.write(...)
   local ok, err = rawwrite(...)
   if not ok then return nil, err end
   return io.output()
end
local fileMethods = debug.getmetatable(io.stdout).__index
local rawfilewrite = fileMethods.write
function fileMethods.write(f, ...)
   local ok, err = rawfilewrite(f, ...)
   if not ok then return nil, err end
   return f
end

-- os.execute(cmd) -> true | nil, 'exit' | 'signal', code (os.execute() -> whether a shell exists)
local rawexecute = os.execute
function os.execute(cmd)
   local status = rawexecute(cmd)
   if cmd == nil then return status ~= 0 end
   local code, how = status, 'exit'
   if status >= 256 or status == 0 then
      code = math.floor(status / 256)          -- a wait status: exit code in the high byte
   else
      code, how = status % 128, 'signal'
   end
   if how == 'exit' and code == 0 then return true, how, code end
   return nil, how, code
end

local rawsetmetatable = debug.setmetatable
function debug.setmetatable(v, mt)
   rawsetmetatable(v, mt)
   return v
end
debug.getuservalue = debug.getuservalue or debug.getfenv
debug.setuservalue = debug.setuservalue or function(u, t)
   debug.setfenv(u, t)
   return u
end

return true
