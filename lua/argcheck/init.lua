-- argcheck: Torch7's function-argument checker. `argcheck{rules..., options}`
-- returns a function that checks its arguments against the rules and returns
-- them (defaults filled in), or raises one error carrying the usage text.
--
-- A rule is a table:
--   name      the argument's name (required; a first rule named 'self' makes a method)
--   type      a Lua type, a torch class name (subclasses fit) or a Lua pattern such
--             as 'torch.*Tensor'; without it any non-nil value fits
--   default   value used when the argument is missing (or given as nil)
--   defaulta  name of another argument whose value is used when this one is missing
--   defaultf  function called (no arguments) for the value when missing
--   opt       the argument may be missing and is then nil
--   check     function(value) -> boolean, tested after the type
--   help/doc  text for the usage message
-- Options (fields of the same table):
--   help/doc  text shown first in the usage message (@ARGT in it: the argument list
--             goes there instead; @ARGP: the names, as 'x, [msg]')
--   pack      return (or pass to call) one table {name = value}
--   nonamed   refuse the named form f{x=..}; noordered refuses f(x, ..)
--   quiet     return false, usage instead of raising; true, values... on success
--   call      function called with the checked values; its results are returned
--   overload  an earlier argcheck function: the result accepts its forms too
--             (the new rules are tried first); ambiguous forms are an error
--             unless force=true. chain is accepted as an old name for overload
--   debug     ignored (Torch7 printed its generated code)
--
-- Arguments are accepted in order (optional ones may be left out, or passed as
-- nil) or as one table of named fields; for a method, self then that table.
local env = require 'argcheck.env'

-- the rule sets behind each function argcheck made (for overload)
local built = setmetatable({}, {__mode = 'k'})

local function isOptional(rule)
   return rule.opt or rule.default ~= nil or rule.defaulta ~= nil or rule.defaultf ~= nil
end

local function fits(rule, value, istype)
   if rule.type and not istype(value, rule.type) then return false end
   if rule.check and not rule.check(value) then return false end
   return true
end

-- Try to place args[i..n] on rules[j..]: each argument either fills the
-- current rule or the rule is skipped when optional. Filling is tried first.
local function placeOrdered(rules, istype, args, n, i, j, values)
   if j > #rules then return i > n end
   local rule = rules[j]
   local optional = isOptional(rule)
   if i <= n then
      local value = args[i]
      if (value == nil and optional) or (value ~= nil and fits(rule, value, istype)) then
         values[j] = value
         if placeOrdered(rules, istype, args, n, i + 1, j + 1, values) then return true end
         values[j] = nil
      end
   end
   return optional and placeOrdered(rules, istype, args, n, i, j + 1, values)
end

-- rules[first..] from the fields of one table; every field must name a rule
local function placeNamed(rules, istype, fields, first, values)
   local used = 0
   for j = first, #rules do
      local rule = rules[j]
      local value = fields[rule.name]
      if value == nil then
         if not isOptional(rule) then return false end
      elseif fits(rule, value, istype) then
         values[j] = value
         used = used + 1
      else
         return false
      end
   end
   local count = 0
   for _ in pairs(fields) do count = count + 1 end
   return count == used
end

local function isPlainTable(value)
   return type(value) == 'table' and env.type(value) == 'table'
end

-- the values for one rule set, or nil when the arguments do not fit it
local function match(set, istype, args, n)
   local rules = set.rules
   if not set.noordered then
      local values = {}
      if placeOrdered(rules, istype, args, n, 1, 1, values) then return values end
   end
   if not set.nonamed then
      if n == 1 and isPlainTable(args[1]) then
         local values = {}
         if placeNamed(rules, istype, args[1], 1, values) then return values end
      end
      if set.method and n == 2 and args[1] ~= nil and fits(rules[1], args[1], istype)
         and isPlainTable(args[2]) then
         local values = {args[1]}
         if placeNamed(rules, istype, args[2], 2, values) then return values end
      end
   end
end

local function fillDefaults(set, values)
   for j, rule in ipairs(set.rules) do
      if values[j] == nil then
         if rule.defaulta ~= nil then
            values[j] = values[set.index[rule.defaulta]]
         elseif rule.defaultf ~= nil then
            values[j] = rule.defaultf()
         elseif rule.default ~= nil then
            values[j] = rule.default
         end
      end
   end
end

local function describeDefault(rule)
   if rule.defaulta ~= nil then return 'default: the value of ' .. rule.defaulta end
   if rule.defaultf ~= nil then return 'default: computed' end
   if rule.default ~= nil then
      local kind = type(rule.default)
      if kind == 'string' or kind == 'number' or kind == 'boolean' then
         return 'default: ' .. tostring(rule.default)
      end
      return 'has a default'
   end
   if rule.opt then return 'optional' end
end

-- one line per rule: name (bracketed when it may be left out), type, help, default
local function argumentLines(set)
   local lines = {}
   local width = 0
   for _, rule in ipairs(set.rules) do
      width = math.max(width, #rule.name + 2)
   end
   for _, rule in ipairs(set.rules) do
      local name = isOptional(rule) and '[' .. rule.name .. ']' or rule.name
      local notes = {}
      notes[#notes + 1] = rule.help or rule.doc
      notes[#notes + 1] = describeDefault(rule)
      lines[#lines + 1] = string.format('  %-' .. width .. 's : %s%s', name, rule.type or 'any',
         #notes > 0 and ('  -- ' .. table.concat(notes, '; ')) or '')
   end
   return table.concat(lines, '\n')
end

-- 'x, [msg]': the argument names, optional ones bracketed
local function signature(set)
   local names = {}
   for j, rule in ipairs(set.rules) do
      names[j] = isOptional(rule) and '[' .. rule.name .. ']' or rule.name
   end
   return table.concat(names, ', ')
end

-- the text shown when a call does not fit one rule set; a help text may place
-- the argument list itself with @ARGT and the signature with @ARGP
local function usageOf(set)
   local help = set.help
   if help then
      help = help:gsub('^%s*\n', ''):gsub('%s+$', '')
      if help:find('@ARG[TP]') then
         return (help:gsub('@ARGT', function() return argumentLines(set) end)
                     :gsub('@ARGP', function() return signature(set) end))
      end
   end
   local forms = {}
   if not set.noordered then forms[#forms + 1] = 'in this order' end
   if not set.nonamed then forms[#forms + 1] = 'as a table of named fields' end
   local heading = 'arguments (' .. table.concat(forms, ', or ') .. '):'
   return (help and help .. '\n' or '') .. heading .. '\n' .. argumentLines(set)
end

local function usageOfAll(sets)
   local parts = {}
   for k = #sets, 1, -1 do parts[#parts + 1] = usageOf(sets[k]) end
   return table.concat(parts, '\n\nor\n\n')
end

local function describeCall(n, ...)
   local kinds = {}
   for i = 1, n do kinds[i] = env.type((select(i, ...))) end
   return '(' .. table.concat(kinds, ', ') .. ')'
end

-- ordered forms a rule set accepts, as type lists ('any' for untyped rules);
-- nil when there are too many to list
local function orderedForms(set)
   local optionalCount = 0
   for _, rule in ipairs(set.rules) do
      if isOptional(rule) then optionalCount = optionalCount + 1 end
   end
   if set.noordered or optionalCount > 12 then return nil end
   local forms = {}
   local function walk(j, prefix)
      local rule = set.rules[j]
      if not rule then forms[table.concat(prefix, ',')] = true return end
      prefix[#prefix + 1] = rule.type or 'any'
      walk(j + 1, prefix)
      prefix[#prefix] = nil
      if isOptional(rule) then walk(j + 1, prefix) end
   end
   walk(1, {})
   return forms
end

local function checkNotAmbiguous(new, earlier)
   local mine = orderedForms(new)
   if not mine then return end
   for _, set in ipairs(earlier) do
      local theirs = orderedForms(set)
      for form in pairs(theirs or {}) do
         if mine[form] then
            error(string.format('argcheck: these rules accept (%s) like an overloaded earlier set; '
               .. 'pass force=true to let the new rules win', form), 3)
         end
      end
   end
end

local function newSet(spec)
   local set = {rules = {}, index = {}, help = spec.help or spec.doc, pack = spec.pack,
                nonamed = spec.nonamed, noordered = spec.noordered, call = spec.call}
   for j, rule in ipairs(spec) do
      if type(rule) ~= 'table' or type(rule.name) ~= 'string' then
         error(string.format('argcheck: rule %d must be a table with a string name', j), 3)
      end
      if set.index[rule.name] then
         error(string.format('argcheck: two rules are named %q', rule.name), 3)
      end
      set.rules[j] = rule
      set.index[rule.name] = j
   end
   for _, rule in ipairs(set.rules) do
      if rule.defaulta ~= nil and not set.index[rule.defaulta] then
         error(string.format('argcheck: rule %q has defaulta=%q, which names no rule',
            rule.name, tostring(rule.defaulta)), 3)
      end
   end
   set.method = set.rules[1] ~= nil and set.rules[1].name == 'self'
   if set.call ~= nil and type(set.call) ~= 'function' then
      error('argcheck: call must be a function', 3)
   end
   return set
end

local function deliver(set, values, quiet)
   fillDefaults(set, values)
   local count = #set.rules
   if set.pack then
      local packed = {}
      for j, rule in ipairs(set.rules) do packed[rule.name] = values[j] end
      if set.call then return set.call(packed) end
      if quiet then return true, packed end
      return packed
   end
   if set.call then return set.call(unpack(values, 1, count)) end
   if quiet then return true, unpack(values, 1, count) end
   return unpack(values, 1, count)
end

local function argcheck(spec)
   if type(spec) ~= 'table' then
      error('argcheck: expects one table of rules, argcheck{{name=..., type=...}, ...}', 2)
   end
   local previous = spec.overload or spec.chain
   local earlier = {}
   if previous ~= nil then
      earlier = built[previous]
      if not earlier then
         error('argcheck: overload must be a function made by argcheck', 2)
      end
   end
   local set = newSet(spec)
   if spec.overload ~= nil and not spec.force then checkNotAmbiguous(set, earlier) end
   -- earlier sets first, the newest last: calls try the newest first
   local sets = {}
   for k, s in ipairs(earlier) do sets[k] = s end
   sets[#sets + 1] = set
   local istype = env.istype
   local quiet = spec.quiet

   local function checker(...)
      local n = select('#', ...)
      local args = {...}
      for k = #sets, 1, -1 do
         local values = match(sets[k], istype, args, n)
         if values then return deliver(sets[k], values, quiet) end
      end
      local usage = usageOfAll(sets)
      if quiet then return false, usage end
      error(string.format('%s\ninvalid arguments %s', usage, describeCall(n, ...)), 2)
   end
   built[checker] = sets
   return checker
end

return argcheck
