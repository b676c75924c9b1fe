-- What `luatorch th` gives a script before it runs, as Torch7's th (trepl) did:
-- the globals torch, paths, sys and xlua; penlight's modules as globals on
-- first use (`require 'pl'`) and the string % operator of pl.text when
-- penlight is installed; and th's require: require './name' loads name(.lua)
-- or name/init.lua next to the calling file, and a module that require cannot
-- find is looked for there too (a program's own modules load wherever it is run
-- from).
--
-- Returns {explain = function(message)}: the message a script's error ends
-- with, made clear where it can be (a class luatorch's nn does not have).
require 'torch'
for _, name in ipairs {'paths', 'sys', 'xlua'} do require(name) end

if package.searchpath('pl.import_into', package.path) and pcall(require, 'pl') then
   local ok, text = pcall(require, 'pl.text')
   if ok and type(text) == 'table' and text.format_operator then text.format_operator() end
end

local plainRequire = require

-- The folder of the Lua file `level` levels up the stack ('.' for a chunk that is not a file).
local function callerFolder(level)
   local info = debug.getinfo(level + 1, 'S')
   local source = info and info.source or ''
   if source:sub(1, 1) == '@' and paths.filep(source:sub(2)) then return paths.dirname(source:sub(2)) end
   return '.'
end

local function loadRelative(folder, name)
   local base = paths.concat(folder, name)
   for _, file in ipairs {base .. '.lua', base, paths.concat(base, 'init.lua')} do
      if paths.filep(file) then return true, dofile(file) end
   end
   for _, ext in ipairs {'.t7', '.th', '.net'} do
      local file = base:match('%' .. ext .. '$') and base or base .. ext
      if paths.filep(file) then
         if ext == '.net' then plainRequire 'nn' end
         return true, torch.load(file)
      end
   end
   return false
end

function require(name)
   if type(name) == 'string' and name:sub(1, 1) == '.' then
      local folder = callerFolder(2)
      local found, result = loadRelative(folder, name)
      if found then return result end
      error(string.format("module '%s' not found next to %s (looked for %s.lua, %s/init.lua)", name,
                          paths.concat(folder), name, name), 2)
   end
   local ok, result = pcall(plainRequire, name)
   if ok then return result end
   if type(name) == 'string' and tostring(result):match("^module '[^']*' not found") then
      local found, loaded = loadRelative(callerFolder(2), (name:gsub('%.', '/')))
      if found then return loaded end
      error(result, 2)   -- at the line of the require, as require's own message
   end
   error(result, 0)      -- an error inside the module, with its own position
end

local M = {}

-- nn answers nil for a class it lacks, as Torch7's did (programs test `if
-- nn.SpatialConvolutionMM then` or write `nn.X or nn.Y`, so nn cannot raise
-- there); when using one ends the program, the message says what happened.
-- `source`: the chunk name of the raising function ('@' + the full file name,
-- which the message may shorten to '...end/of/name.lua').
function M.explain(message, source)
   message = tostring(message)
   local file, line, name = message:match("^(.-):(%d+): attempt to call field '(%u[%w_]*)' %(a nil value%)$")
   if not file then
      file, line, name = message:match("^(.-):(%d+): attempt to index field '(%u[%w_]*)' %(a nil value%)$")
   end
   local nn = rawget(_G, 'nn')
   if not file or type(nn) ~= 'table' or rawget(nn, name) ~= nil then return message end
   local full = file
   if type(source) == 'string' and source:sub(1, 1) == '@' then
      local tail = file:match('^%.%.%.(.*)$') or file
      if source:sub(-#tail) == tail then full = source:sub(2) end
   end
   local ok, text = pcall(function()
      local n = 0
      for l in io.lines(full) do
         n = n + 1
         if n == tonumber(line) then return l end
      end
   end)
   if not ok or type(text) ~= 'string' or not text:find('nn%.' .. name .. '%f[^%w_]') then return message end
   local classes = {}
   for k, v in pairs(nn) do
      if type(k) == 'string' and k:match('^%u') and torch.getmetatable('nn.' .. k) then classes[#classes + 1] = k end
   end
   table.sort(classes)
   return string.format("%s:%s: nn.%s: no such class in luatorch's nn (it has %s)", file, line, name,
                        table.concat(classes, ', '))
end

return M
