-- torch.CmdLine: Torch7's command-line parser, as training scripts use it.
--
--   local cmd = torch.CmdLine()
--   cmd:text('Options:')
--   cmd:option('-LR', 0.1, 'learning rate')       -- value converted to the default's type (or the 4th argument's)
--   cmd:option('-nesterov', false, 'a flag')      -- boolean: the bare option flips the default
--   cmd:argument('-data', 'data folder')          -- positional, required
--   local opt = cmd:parse(arg)                    -- {LR = 0.1, nesterov = false, data = ...}
--   cmd:log('run.log', opt)                       -- print goes to the screen and the file from here on
--
-- Torch7's layout: cmd.options['-LR'] = {key, default, help, type}, cmd.arguments a list of {key, help, type}.
-- `-help`/`-h`/`--help` prints the usage and exits 0; a bad command line (an unknown option, a missing value or
-- argument, a value not of the option's type) prints the message and the usage and exits 1 (cmd:error), as
-- Torch7's did. Two additions that take only what Torch7 refused: `--name` for an option defined as `-name`, and
-- `true`/`false` after a boolean option setting it.
local torch = ...

local CmdLine = torch.class('torch.CmdLine')

-- the key without its leading dashes: what parse's result is indexed by
local function bare(key)
   return (key:match('^%-*(.*)$'))
end

function CmdLine:__init(argseparator, keyseparator)
   self.argseparator = argseparator or ','
   self.keyseparator = keyseparator or '='
   self.options = {}
   self.arguments = {}
   self.helplines = {}
   self.dateformat = nil
   self.silentio = false
end

function CmdLine:text(txt)
   txt = txt or ''
   assert(type(txt) == 'string', 'CmdLine:text expects a string')
   self.helplines[#self.helplines + 1] = txt
end

function CmdLine:option(key, default, help, kind)
   if default == nil then error('option ' .. tostring(key) .. ' has no default value', 2) end
   kind = kind or type(default)
   if type(default) ~= kind then error('option ' .. key .. ' has wrong default type value', 2) end
   local o = {key = key, default = default, help = help, type = kind}
   self.options[key] = o
   self.helplines[#self.helplines + 1] = o
end

function CmdLine:argument(key, help, kind)
   local a = {key = key, help = help, type = kind}
   self.arguments[#self.arguments + 1] = a
   self.helplines[#self.helplines + 1] = a
end

-- print's lines without the screen (with cmd:log)
function CmdLine:silent()
   self.silentio = true
end

-- each line cmd:log writes starts with the date in `format` (os.date's), then `[name]: `
function CmdLine:addTime(name, format)
   format = format or '%Y-%m-%d %H:%M:%S'
   if type(format) ~= 'string' then error('Argument has to be string', 2) end
   self.dateformat = format .. (name ~= nil and ('[' .. name .. ']: ') or '')
end

function CmdLine:default()
   local params = {}
   for key, o in pairs(self.options) do params[bare(key)] = o.default end
   return params
end

-- The usage text (what help writes).
function CmdLine:helpText(arg)
   local out = {'Usage: ' .. ((arg and arg[0]) and (tostring(arg[0]) .. ' ') or '') .. '[options]'}
   for _, a in ipairs(self.arguments) do out[1] = out[1] .. ' <' .. bare(a.key) .. '>' end
   local width = 0   -- the widest option or argument name, for the help's column
   for _, h in ipairs(self.helplines) do
      if type(h) == 'table' then
         local shown = self.options[h.key] == h and h.key or ('<' .. bare(h.key) .. '>')
         width = math.max(width, #shown)
      end
   end
   for _, h in ipairs(self.helplines) do
      if type(h) == 'table' then
         local isOption = self.options[h.key] == h
         local shown = isOption and h.key or ('<' .. bare(h.key) .. '>')
         local line = '  ' .. shown .. string.rep(' ', width - #shown)
         if h.help then line = line .. ' ' .. h.help end
         if isOption then line = line .. ' [' .. tostring(h.default) .. ']' end
         out[#out + 1] = line
      else
         out[#out + 1] = h
      end
   end
   return table.concat(out, '\n') .. '\n'
end

function CmdLine:help(arg)
   io.write(self:helpText(arg))
end

function CmdLine:error(msg)
   print('')
   io.stderr:write(msg)
   print('')
   self:help()
   os.exit(1)
end

-- the option an argv entry names: `-name` as defined, or `--name` for `-name`
function CmdLine:_optionOf(word)
   if type(word) ~= 'string' then return nil end
   return self.options[word] or (word:match('^%-%-') and self.options[word:sub(2)]) or nil
end

function CmdLine:parse(arg)
   arg = arg or {}
   local params = self:default()
   local nArgument, i = 0, 1
   while i <= #arg do
      local word = arg[i]
      if word == '-help' or word == '-h' or word == '--help' then
         self:help(arg)
         os.exit(0)
      end
      local o = self:_optionOf(word)
      if o then
         local key = bare(o.key)
         if o.type == 'boolean' then
            local nextv = arg[i + 1]
            if nextv == 'true' or nextv == 'false' then
               params[key] = nextv == 'true'
               i = i + 2
            else
               params[key] = not o.default
               i = i + 1
            end
         else
            local value = arg[i + 1]
            if value == nil then self:error('missing argument for option ' .. word) end
            if o.type == 'number' then
               value = tonumber(value)
            elseif o.type ~= 'string' then
               self:error('unknown required option type ' .. o.type)
            end
            if value == nil then self:error('invalid type for option ' .. word .. ' (should be ' .. o.type .. ')') end
            params[key] = value
            i = i + 2
         end
      else
         nArgument = nArgument + 1
         local a = self.arguments[nArgument]
         if not a then
            if type(word) == 'string' and word:match('^%-%-?[%a_]') then self:error('unknown option ' .. word) end
            self:error('invalid argument: ' .. tostring(word))
         end
         if a.type and type(word) ~= a.type then
            self:error('invalid argument type for argument ' .. a.key .. ' (should be ' .. a.type .. ')')
         end
         params[bare(a.key)] = word
         i = i + 1
      end
   end
   if nArgument ~= #self.arguments then self:error('not enough arguments') end
   return params
end

-- "prefix,arg=v,...,opt=v,..." of the arguments and of the options that differ from their defaults (sorted;
-- booleans as t/f), for run folder names; `ignore[k]` true leaves k out, false keeps it even at its default.
function CmdLine:string(prefix, params, ignore)
   ignore = ignore or {}
   prefix = prefix or ''
   local arguments, options = {}, {}
   for k, v in pairs(params) do
      local o = self.options['-' .. k]
      if ignore[k] then
         print('-- ignore option ' .. k)
      elseif o then
         if v ~= o.default or ignore[k] == false then
            if type(v) == 'boolean' then v = v and 't' or 'f' end
            options[#options + 1] = k .. self.keyseparator .. tostring(v)
         end
      else
         local at
         for j, a in ipairs(self.arguments) do if bare(a.key) == k then at = j end end
         if at then
            arguments[at] = k .. self.keyseparator .. tostring(v)
         else
            print('WARNING: unknown option/argument: ' .. k .. ' IGNORING for DIRECTORY NAME')
         end
      end
   end
   table.sort(options)
   local parts = {}
   for j = 1, #self.arguments do if arguments[j] then parts[#parts + 1] = arguments[j] end end
   for _, s in ipairs(options) do parts[#parts + 1] = s end
   local str = table.concat(parts, self.argseparator)
   if str == '' then return prefix end
   return prefix .. self.argseparator .. str
end

-- From here on print writes its lines to `file` (a path, or an open file) too, each flushed, with the date when
-- addTime was called, and to the screen unless silent; first the start time and the params.
local screenPrint
function CmdLine:log(file, params)
   local f = io.type(file) == 'file' and file or assert(io.open(file, 'w'))
   screenPrint = screenPrint or print
   local cmd = self
   print = function(...)   -- luacheck: ignore (Torch7 replaced the global print)
      if not cmd.silentio then screenPrint(...) end
      local parts = {}
      if cmd.dateformat then parts[#parts + 1] = os.date(cmd.dateformat) end
      for j = 1, select('#', ...) do parts[#parts + 1] = tostring((select(j, ...))) end
      parts[#parts + 1] = '\n'
      f:write(table.concat(parts, ' '))
      f:flush()
   end
   print('[program started on ' .. os.date() .. ']')
   print('[command line arguments]')
   for k, v in pairs(params or {}) do print(k, v) end
   print('[----------------------]')
end

return CmdLine
