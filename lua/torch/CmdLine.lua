-- torch.CmdLine: Torch7's command-line parser, as training scripts use it.
--
--   local cmd = torch.CmdLine()
--   cmd:text('Options:')
--   cmd:option('-LR', 0.1, 'learning rate')       -- value converted to the default's type
--   cmd:option('-nesterov', false, 'a flag')      -- boolean default: the bare option flips it
--   cmd:argument('-data', 'data folder')          -- positional, required
--   local opt = cmd:parse(arg)                    -- {LR = 0.1, nesterov = false, data = ...}
--
-- `-help`/`--help` prints the usage and exits, as Torch7's did. Unknown options and
-- missing arguments are errors naming the option.
local torch = ...

local CmdLine = torch.class('torch.CmdLine')

function CmdLine:__init()
   self.options = {}
   self.arguments = {}
   self.helplines = {}
end

local function strip(name)
   local key = name:match('^%-%-?(.+)$')
   if not key then error('CmdLine: option names start with a dash, got ' .. tostring(name), 3) end
   return key
end

function CmdLine:text(txt)
   self.helplines[#self.helplines + 1] = txt or ''
end

function CmdLine:option(name, default, help)
   local key = strip(name)
   if self.options[key] then error('CmdLine: option ' .. name .. ' defined twice', 2) end
   self.options[key] = {default = default, help = help or '', name = name}
   self.helplines[#self.helplines + 1] = {option = key}
end

function CmdLine:argument(name, help)
   local key = name:match('^%-?%-?(.+)$')
   self.arguments[#self.arguments + 1] = {key = key, help = help or ''}
   self.helplines[#self.helplines + 1] = {argument = key}
end

function CmdLine:help(script)
   local out = {'Usage: ' .. (script or '<script>') .. ' [options]'}
   for _, a in ipairs(self.arguments) do out[1] = out[1] .. ' <' .. a.key .. '>' end
   for _, h in ipairs(self.helplines) do
      if type(h) == 'string' then
         out[#out + 1] = h
      elseif h.option then
         local o = self.options[h.option]
         out[#out + 1] = string.format('  %-24s %s [%s]', o.name, o.help, tostring(o.default))
      else
         for _, a in ipairs(self.arguments) do
            if a.key == h.argument then out[#out + 1] = string.format('  %-24s %s', a.key, a.help) end
         end
      end
   end
   return table.concat(out, '\n')
end

local function convert(key, default, value)
   local kind = type(default)
   if kind == 'number' then
      local n = tonumber(value)
      if not n then error(string.format("CmdLine: option -%s expects a number, got '%s'", key, value), 0) end
      return n
   elseif kind == 'boolean' then
      if value == 'true' then return true elseif value == 'false' then return false end
      error(string.format("CmdLine: option -%s expects true or false, got '%s'", key, value), 0)
   end
   return value
end

-- Parse `arg` (a Torch7 script's arg table, or any list of strings).
function CmdLine:parse(argv)
   argv = argv or {}
   local params, positional = {}, {}
   for key, o in pairs(self.options) do params[key] = o.default end
   local i = 1
   while i <= #argv do
      local a = argv[i]
      if a == '-help' or a == '--help' or a == '-h' then
         print(self:help(argv[0]))
         os.exit(0)
      end
      local key = type(a) == 'string' and a:match('^%-%-?([%a_][%w_%.]*)$')
      if key and self.options[key] then
         local o = self.options[key]
         local nextv = argv[i + 1]
         if type(o.default) == 'boolean' and (nextv == nil or (nextv ~= 'true' and nextv ~= 'false')) then
            params[key] = not o.default
         else
            if nextv == nil then error('CmdLine: option ' .. a .. ' needs a value', 0) end
            params[key] = convert(key, o.default, nextv)
            i = i + 1
         end
      elseif key and tonumber(a) == nil then
         error('CmdLine: unknown option ' .. a .. '\n' .. self:help(argv[0]), 0)
      else
         positional[#positional + 1] = a
      end
      i = i + 1
   end
   for j, spec in ipairs(self.arguments) do
      if positional[j] == nil then error('CmdLine: missing argument <' .. spec.key .. '>', 0) end
      params[spec.key] = positional[j]
   end
   if #positional > #self.arguments then
      error('CmdLine: unexpected argument ' .. tostring(positional[#self.arguments + 1]), 0)
   end
   return params
end

-- "name=value,..." of the params that differ from the defaults (Torch7 used it for run folders).
function CmdLine:string(prefix, params, ignore)
   local keys = {}
   for k in pairs(params) do
      if not (ignore and ignore[k]) and self.options[k] and params[k] ~= self.options[k].default then
         keys[#keys + 1] = k
      end
   end
   table.sort(keys)
   local parts = {prefix}
   for _, k in ipairs(keys) do parts[#parts + 1] = k .. '=' .. tostring(params[k]) end
   return table.concat(parts, ',')
end

return CmdLine
