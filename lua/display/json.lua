-- JSON text of a Lua value, for display's commands (the original client used lua-cjson, which the distro does
-- not carry). Tables whose keys are exactly 1..n become arrays (an empty table an empty object, as cjson did);
-- other tables objects with string keys. Numbers that JSON cannot hold (NaN, infinities) become null, which a
-- browser's JSON.parse accepts and a plot skips.
local json = {}

local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r',
                 ['\t'] = '\\t'}
local function quote(s)
   return '"' .. s:gsub('[%c"\\]', function(c)
      return escapes[c] or string.format('\\u%04x', c:byte())
   end) .. '"'
end

local function arrayLength(t)
   local n = 0
   for k in pairs(t) do
      if type(k) ~= 'number' or k < 1 or k % 1 ~= 0 then return nil end
      n = math.max(n, k)
   end
   return n > 0 and n or nil
end

local encode
local function encodeTable(t, out, seen)
   if seen[t] then error('display: a table that contains itself cannot be sent', 0) end
   seen[t] = true
   local n = arrayLength(t)
   if n then
      out[#out + 1] = '['
      for i = 1, n do
         if i > 1 then out[#out + 1] = ',' end
         encode(t[i], out, seen)
      end
      out[#out + 1] = ']'
   else
      out[#out + 1] = '{'
      local first = true
      for k, v in pairs(t) do
         if type(v) ~= 'function' then
            if not first then out[#out + 1] = ',' end
            first = false
            out[#out + 1] = quote(tostring(k))
            out[#out + 1] = ':'
            encode(v, out, seen)
         end
      end
      out[#out + 1] = '}'
   end
   seen[t] = nil
end

function encode(v, out, seen)
   local kind = type(v)
   if kind == 'string' then out[#out + 1] = quote(v)
   elseif kind == 'number' then
      if v ~= v or v == math.huge or v == -math.huge then out[#out + 1] = 'null'
      elseif v % 1 == 0 and math.abs(v) < 2^53 then out[#out + 1] = string.format('%d', v)
      else out[#out + 1] = string.format('%.17g', v) end
   elseif kind == 'boolean' then out[#out + 1] = tostring(v)
   elseif v == nil then out[#out + 1] = 'null'
   elseif kind == 'table' then encodeTable(v, out, seen)
   else error('display: cannot send a ' .. kind .. ' as JSON', 0) end
end

function json.encode(v)
   local out = {}
   encode(v, out, {})
   return table.concat(out)
end

return json
