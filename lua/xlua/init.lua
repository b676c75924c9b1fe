-- xlua: Torch7's helper package (the global `xlua`, which Torch7 scripts
-- `require 'xlua'`): progress bars, safe requires, printing, argument
-- unpacking, small table and string helpers.
--
--   xlua.progress(i, n)            a progress bar with ETA, redrawn in place (ends with a newline at n)
--   xlua.require(name)             the module, or false (and a warning) when it cannot be loaded
--   xlua.installed(name)           whether require would find it, and where
--   xlua.print(x, ...) / xprint    tables printed field by field
--   xlua.formatTime(seconds)       '1h2m', '3s120ms', ...
--   xlua.error(msg [, domain [, usage]]) / xerror, xlua.trycatch(try, catch)
--   xlua.unpack(args, fname, desc, {arg=, type=, help=, default=, req=}, ...) -> named args table, values...
--   xlua.unpack_class(obj, args, ...), xlua.usage(...), xlua.usage_module(module, name, desc)
--   xlua.table2string(t [, newline]), xlua.log(file [, append]), xlua.envparams(defaults)
--   xlua.clear(name), xlua.clearall(), xlua.who()
--   table.splice(t, start, n), table.prune(t [, hash [, merge]]), string.split(s, pat), string.tosymbol(s)
-- Not provided: xlua.OptionParser and xlua.Profiler (use torch.CmdLine and torch.Timer).
require 'torch'
local sys = require 'sys'

local xlua = rawget(_G, 'xlua') or {}
_G.xlua = xlua

-- globals present when xlua loaded: xlua.clearall keeps them
local protected = {}
for k in pairs(_G) do protected[k] = true end

-- ---------------------------------------------------------------- printing

local function short(s)
   s = s:gsub('\n', '\\n')
   if #s > 40 then return s:sub(1, 40) .. ' ... ' end
   return s
end

function xlua.print(obj, ...)
   if type(obj) == 'table' and not torch.typename(obj) then
      local parts = {}
      for k, v in pairs(obj) do
         parts[#parts + 1] = '[' .. tostring(k) .. '] = ' .. (type(v) == 'userdata' and '<userdata>' or short(tostring(v)))
      end
      io.write('{' .. table.concat(parts, ',\n ') .. '}')
   else
      io.write(tostring(obj))
   end
   if select('#', ...) > 0 then
      io.write('    ')
      print(...)
   else
      io.write('\n')
   end
end
rawset(_G, 'xprint', xlua.print)

local function valueString(v)
   if type(v) == 'string' then return string.format('%q', v):gsub('\\\n', '\\n') end
   if type(v) == 'table' and not torch.typename(v) then return xlua.table2string(v) end
   return tostring(v)
end

local function keyString(k)
   if type(k) == 'string' and k:match('^[_%a][_%w]*$') then return k end
   return '[' .. valueString(k) .. ']'
end

-- A table as Lua-like source: {1,2,key=value} (one entry per line with `newline`).
function xlua.table2string(t, newline)
   local items, seen = {}, {}
   for i, v in ipairs(t) do
      items[#items + 1] = valueString(v)
      seen[i] = true
   end
   local sep = newline and ' : ' or '='
   for k, v in pairs(t) do
      if not seen[k] then items[#items + 1] = keyString(k) .. sep .. valueString(v) end
   end
   if newline then return '{\n   ' .. table.concat(items, '\n   ') .. '\n}' end
   return '{' .. table.concat(items, ',') .. '}'
end

-- Copy everything written with io.write (and print) to `file` as well.
function xlua.log(file, append)
   os.execute('mkdir -p "' .. sys.dirname(file) .. '"')
   local f = assert(io.open(file, append and 'a' or 'w'))
   local write = io.write
   io._write = write
   io.write = function(...)
      write(...)
      for i = 1, select('#', ...) do f:write(tostring((select(i, ...)))) end
      f:flush()
   end
   _G._print = _G.print
   _G.print = function(...)
      local n = select('#', ...)
      for i = 1, n do
         io.write(tostring((select(i, ...))))
         if i < n then io.write('\t') end
      end
      io.write('\n')
   end
end

function xlua.clear(name)
   _G[name] = nil
   collectgarbage()
end

function xlua.clearall()
   for k in pairs(_G) do
      if not protected[k] then
         _G[k] = nil
         package.loaded[k] = nil
      end
   end
   collectgarbage()
end

function xlua.who()
   local libs, vars = {}, {}
   for k, v in pairs(_G) do
      if package.loaded[k] ~= nil and k ~= '_G' then libs[#libs + 1] = k
      elseif not protected[k] then vars[k] = v end
   end
   xlua.print('Global Libs:')
   xlua.print(libs)
   xlua.print('Global Vars:')
   xlua.print(vars)
end

-- ---------------------------------------------------------------- time and progress

-- The two largest units of a duration: '2D3h', '1h20m', '4s250ms', '0ms'.
function xlua.formatTime(seconds)
   local units = {{'D', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}, {'ms', 0.001}}
   local out, used = '', 0
   local rest = seconds
   for _, u in ipairs(units) do
      local n = math.floor(rest / u[2] + 1e-9)
      rest = rest - n * u[2]
      if n > 0 and used < 2 then
         out = out .. n .. u[1]
         used = used + 1
      end
   end
   return out == '' and '0ms' or out
end

do
   local width
   local function terminalWidth()
      if width then return width end
      width = 80
      local ok, ffi = pcall(require, 'ffi')
      pcall(ffi.cdef, 'int isatty(int fd);')
      if ok and pcall(function() return ffi.C.isatty(1) end) and ffi.C.isatty(1) == 1 then
         local p = io.popen('tput cols 2>/dev/null')
         local cols = p and tonumber(p:read('*a'))
         if p then p:close() end
         if cols and cols > 40 then width = math.min(cols, 120) end
      end
      return width
   end

   local bar = nil   -- {timer, start index, start time} while a bar is drawn

   function xlua.progress(current, goal)
      local len = terminalWidth() - 44
      local filled = goal > 0 and math.floor(current * len / goal) or len
      if bar == nil or current < bar.last then
         bar = {timer = torch.Timer(), first = current, last = current}
      end
      bar.last = current
      local elapsed = bar.timer:time().real
      local step = current > bar.first and elapsed / (current - bar.first) or 0
      local cells = {}
      for i = 1, len do cells[i] = i < filled and '=' or (i == filled and '>' or '.') end
      local timing = current < goal and ('ETA: ' .. xlua.formatTime(math.max(0, (goal - current) * step)))
                     or ('Tot: ' .. xlua.formatTime(elapsed))
      io.write(string.format('\r [%s] %d/%d %s | Step: %s  ', table.concat(cells), current, goal, timing,
                             xlua.formatTime(step)))
      if current >= goal then
         io.write('\n')
         bar = nil
      end
      io.flush()
   end
end

-- ---------------------------------------------------------------- errors and packages

function xlua.error(message, domain, usage)
   local c = sys.COLORS
   if domain then message = '<' .. domain .. '> ' .. tostring(message) end
   local text = c.Red .. tostring(message) .. c.none
   if usage then text = text .. '\n' .. tostring(usage) end
   error(text, 2)
end
rawset(_G, 'xerror', xlua.error)

function xlua.trycatch(try, catch)
   local ok, err = pcall(try)
   if not ok then catch(err) end
end

-- Whether `name` is findable by require, and the file (or the search path when not).
function xlua.installed(name)
   if package.loaded[name] ~= nil or package.preload[name] ~= nil then return true, name end
   local path = package.searchpath(name, package.path) or package.searchpath(name, package.cpath)
   if path then return true, path end
   return false, package.path .. ';' .. package.cpath
end

-- require that does not raise: the module, or false after printing why.
function xlua.require(name)
   local ok, mod = pcall(require, name)
   if not ok then
      print(mod)
      print('warning: <' .. tostring(name) .. '> could not be loaded (is it installed?)')
      return false
   end
   return mod
end
rawset(_G, 'xrequire', xlua.require)

-- ---------------------------------------------------------------- argument unpacking

local function defaultString(p)
   if type(p.default) == 'table' then return '  [default = ' .. xlua.table2string(p.default) .. ']' end
   if p.default ~= nil then return '  [default = ' .. tostring(p.default) .. ']' end
   if p.defaulta then return '  [default == ' .. p.defaulta .. ']' end
   return ''
end

-- The help text of a function taking named arguments {arg=, type=, help=, default=, req=}.
function xlua.usage(funcname, description, example, ...)
   local defs = {...}
   if defs[1] and defs[1].tabled then defs = defs[1].tabled end
   local lines = {string.rep('+', 69), funcname}
   if description then lines[#lines + 1] = '\n' .. description end
   lines[#lines + 1] = '\n> usage:'
   lines[#lines + 1] = funcname .. '{'
   for _, p in ipairs(defs) do
      local key = p.req and ('    ' .. tostring(p.arg) .. ' = ' .. tostring(p.type))
                  or ('    [' .. tostring(p.arg) .. ' = ' .. tostring(p.type) .. ']')
      lines[#lines + 1] = key .. string.rep(' ', math.max(1, 40 - #key)) .. '-- ' .. tostring(p.help or '')
                          .. defaultString(p)
   end
   lines[#lines + 1] = '}'
   if example then lines[#lines + 1] = '\n' .. example end
   lines[#lines + 1] = string.rep('+', 69)
   return table.concat(lines, '\n')
end

-- Arguments given positionally or as one table of names, checked against the
-- definitions: returns the table of named values (with .usage), then the values in order.
function xlua.unpack(args, funcname, description, ...)
   local defs = {...}
   local usage = setmetatable({}, {__tostring = function()
      return xlua.usage(funcname, description, nil, {tabled = defs})
   end})
   local given = {}
   if #args == 1 and type(args[1]) == 'table' and #args[1] == 0 and not torch.typename(args[1]) then
      given = args[1]
   else
      for i, def in ipairs(defs) do given[def.arg] = args[i] end
   end
   local out = {usage = usage}
   for i, def in ipairs(defs) do
      local v = given[def.arg]
      if v == nil and def.req then
         print(tostring(usage))
         xlua.error('missing argument: ' .. tostring(def.arg), funcname)
      end
      if v == nil then v = def.default end
      if v == nil and def.defaulta then v = out[def.defaulta] end
      out[def.arg] = v
      out[i] = v
   end
   return out, unpack(out, 1, #defs)
end

function xlua.unpack_class(object, args, funcname, description, ...)
   local named = xlua.unpack(args, funcname, description, ...)
   for k, v in pairs(named) do
      if type(k) ~= 'number' then object[k] = v end
   end
end

function xlua.usage_module(module, name, description)
   local text = 'PACKAGE:\n' .. name .. (description and ('\n\nDESC:\n' .. description) or '')
   local mt = getmetatable(module) or {}
   mt.__tostring = function() return text end
   setmetatable(module, mt)
   return text
end

-- Parameters from the environment: each key of `defaults` read from the
-- variable of that name when set, converted to the default's type.
function xlua.envparams(defaults)
   local out = {}
   for k, v in pairs(defaults) do
      local env = os.getenv(k)
      if env == nil then
         out[k] = v
      elseif type(v) == 'number' then
         out[k] = tonumber(env) or error('xlua.envparams: ' .. k .. '=' .. env .. ' is not a number', 2)
      elseif type(v) == 'boolean' then
         local b = ({['true'] = true, True = true, ['false'] = false, False = false})[env]
         if b == nil then error('xlua.envparams: ' .. k .. '=' .. env .. ' is not true or false', 2) end
         out[k] = b
      else
         out[k] = env
      end
   end
   return out
end

-- ---------------------------------------------------------------- table and string helpers

-- t without the `length` elements from `start` (default 1, 1), and those elements.
function table.splice(t, start, length)
   start, length = start or 1, length or 1
   local kept, removed = {}, {}
   for i, v in ipairs(t) do
      if i >= start and i < start + length then removed[#removed + 1] = v else kept[#kept + 1] = v end
   end
   return kept, removed
end

-- The distinct values of t (by hash(v)); with merge, values of equal hash are merged.
function table.prune(t, hash, merge)
   hash = hash or function(v) return v end
   local byHash = {}
   for _, v in ipairs(t) do
      local h = hash(v)
      if merge and byHash[h] ~= nil then byHash[h] = merge(v, byHash[h]) else byHash[h] = v end
   end
   local out = {}
   for _, v in pairs(byHash) do out[#out + 1] = v end
   return out
end

string.split = sys.split

-- The value a Lua expression names ('nn.Linear' -> the class).
function string.tosymbol(s)
   local f = assert(loadstring('return ' .. s))
   local ok, v = pcall(f)
   if not ok then error(v, 2) end
   if v == nil then error('symbol "' .. s .. '" does not exist', 2) end
   return v
end

return xlua
