-- Reader of protobuf's text format, as Caffe writes its .prototxt net definitions.
--
-- No schema is used: a message becomes a Lua table mapping each field name to the list of its
-- values in file order (so a repeated field and a field given once look alike; callers take the
-- last value of a singular field, as protobuf does). A value is a nested message (table), or the
-- token's text: strings unquoted and unescaped, numbers and enum names as written.
local M = {}

local function fail(src, line, msg)
   error(string.format('loadcaffe: %s:%d: %s', src.name, line, msg), 0)
end

local escapes = {n = '\n', t = '\t', r = '\r', a = '\a', b = '\b', f = '\f', v = '\v',
                 ['\\'] = '\\', ["'"] = "'", ['"'] = '"', ['?'] = '?'}

-- Splits the text into tokens {kind, text, line}; kind is 'name', 'number', 'string' or the
-- punctuation character itself.
local function tokenize(text, name)
   local src = {name = name}
   local tokens, pos, line, n = {}, 1, 1, #text
   while pos <= n do
      local c = text:sub(pos, pos)
      if c == '\n' then
         line = line + 1; pos = pos + 1
      elseif c:match('%s') then
         pos = pos + 1
      elseif c == '#' then                      -- comment to the end of the line
         local e = text:find('\n', pos, true)
         pos = e or n + 1
      elseif c:match('[%a_]') then
         local word = text:match('^[%w_]+', pos)
         tokens[#tokens + 1] = {'name', word, line}
         pos = pos + #word
      elseif c:match('%d') or ((c == '-' or c == '+' or c == '.') and text:sub(pos + 1, pos + 1):match('[%w%.]')) then
         local num = text:match('^[%-%+]?[%w%.]*', pos)
         -- an exponent's sign is not matched by [%w.]: take it and its digits
         if num:match('[eE]$') and not num:match('^[%-%+]?0[xX]') then
            local tail = text:match('^[%-%+]%d+', pos + #num)
            if tail then num = num .. tail end
         end
         tokens[#tokens + 1] = {'number', num, line}
         pos = pos + #num
      elseif c == '"' or c == "'" then
         local parts, i = {}, pos + 1
         while true do
            local ch = text:sub(i, i)
            if ch == '' or ch == '\n' then fail(src, line, 'unterminated string') end
            if ch == c then break end
            if ch == '\\' then
               local e = text:sub(i + 1, i + 1)
               if escapes[e] then
                  parts[#parts + 1] = escapes[e]; i = i + 2
               elseif e == 'x' or e == 'X' then
                  local hex = text:match('^%x%x?', i + 2)
                  if not hex then fail(src, line, 'bad \\x escape in a string') end
                  parts[#parts + 1] = string.char(tonumber(hex, 16)); i = i + 2 + #hex
               elseif e:match('[0-7]') then
                  local oct = text:match('^[0-7][0-7]?[0-7]?', i + 1)
                  parts[#parts + 1] = string.char(tonumber(oct, 8) % 256); i = i + 1 + #oct
               else
                  fail(src, line, 'unknown escape \\' .. e .. ' in a string')
               end
            else
               parts[#parts + 1] = ch; i = i + 1
            end
         end
         tokens[#tokens + 1] = {'string', table.concat(parts), line}
         pos = i + 1
      elseif c:match('[{}<>%[%]:,;/%.]') then
         tokens[#tokens + 1] = {c, c, line}
         pos = pos + 1
      else
         fail(src, line, string.format("unexpected character '%s'", c))
      end
   end
   tokens[#tokens + 1] = {'eof', 'end of file', line}
   return tokens, src
end

-- Parses the text of one message (the file's top level) into the table form described above.
function M.parse(text, name)
   local tokens, src = tokenize(text, name or 'prototxt')
   local i = 1
   local function peek() return tokens[i] end
   local function take() local t = tokens[i]; i = i + 1; return t end
   local function expect(kind)
      local t = take()
      if t[1] ~= kind then fail(src, t[3], string.format("expected '%s', found '%s'", kind, t[2])) end
      return t
   end

   local message
   local function scalar()
      local t = take()
      if t[1] == 'string' then
         -- adjacent strings are one value ("ab" "cd" == "abcd")
         local s = t[2]
         while peek()[1] == 'string' do s = s .. take()[2] end
         return s
      elseif t[1] == 'number' or t[1] == 'name' then
         return t[2]
      end
      fail(src, t[3], string.format("expected a value, found '%s'", t[2]))
   end
   local function value(isMessage)
      local t = peek()
      if t[1] == '{' or t[1] == '<' then
         take()
         return message(t[1] == '{' and '}' or '>')
      elseif isMessage then
         fail(src, t[3], string.format("expected '{' after a field without ':', found '%s'", t[2]))
      end
      return scalar()
   end

   function message(closing)
      local msg = {}
      while true do
         local t = take()
         if t[1] == (closing or 'eof') then return msg end
         local field
         if t[1] == 'name' then
            field = t[2]
         elseif t[1] == '[' then                -- [extension.name] or [type.url/Name]
            local parts = {}
            while peek()[1] ~= ']' do
               if peek()[1] == 'eof' then fail(src, t[3], 'unterminated [extension] name') end
               parts[#parts + 1] = take()[2]
            end
            take()
            field = '[' .. table.concat(parts) .. ']'
         elseif t[1] == 'eof' then
            fail(src, t[3], string.format("missing '%s' at the end of the file", closing))
         else
            fail(src, t[3], string.format("expected a field name, found '%s'", t[2]))
         end
         local colon = peek()[1] == ':'
         if colon then take() end
         local values = msg[field]
         if not values then values = {}; msg[field] = values end
         if colon and peek()[1] == '[' then     -- field: [v1, v2, ...]
            take()
            if peek()[1] ~= ']' then
               repeat
                  values[#values + 1] = value(false)
                  local sep = take()
                  if sep[1] ~= ',' and sep[1] ~= ']' then
                     fail(src, sep[3], string.format("expected ',' or ']' in a list, found '%s'", sep[2]))
                  end
               until sep[1] == ']'
            else
               take()
            end
         else
            values[#values + 1] = value(not colon)
         end
         if peek()[1] == ',' or peek()[1] == ';' then take() end
      end
   end

   return message(nil)
end

function M.parseFile(path)
   local f, err = io.open(path, 'rb')
   if not f then error(string.format("loadcaffe: cannot open the prototxt '%s' (%s)", path, err), 0) end
   local text = f:read('*a')
   f:close()
   return M.parse(text, path)
end

-- Helpers over the table form.

-- the values of a field (empty when absent)
function M.all(msg, field)
   return (msg and msg[field]) or {}
end

-- the last value of a field, or `default`
function M.one(msg, field, default)
   local v = msg and msg[field]
   if v and #v > 0 then return v[#v] end
   return default
end

-- a numeric field, or `default`
function M.number(msg, field, default)
   local v = M.one(msg, field)
   if v == nil then return default end
   local x = tonumber(v)
   if x == nil then
      local lower = tostring(v):lower()
      if lower == 'inf' or lower == 'infinity' then x = math.huge
      elseif lower == '-inf' or lower == '-infinity' then x = -math.huge
      elseif lower == 'nan' then x = 0 / 0
      elseif lower:match('^[%-%+]?[%d%.]+e?[%-%+]?%d*f$') then x = tonumber(lower:sub(1, -2))
      end
   end
   if x == nil then error(string.format("loadcaffe: field '%s' is '%s', not a number", field, tostring(v)), 0) end
   return x
end

function M.bool(msg, field, default)
   local v = M.one(msg, field)
   if v == nil then return default end
   if v == 'true' or v == 'True' or v == 't' or v == '1' then return true end
   if v == 'false' or v == 'False' or v == 'f' or v == '0' then return false end
   error(string.format("loadcaffe: field '%s' is '%s', not true or false", field, tostring(v)), 0)
end

return M
