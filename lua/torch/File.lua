-- torch.File: Torch7's THFile primitives (binary and ascii encodings of
-- bytes, chars, shorts, ints, longs, floats, doubles and strings) and the
-- object layer (writeObject/readObject: the .t7 format, File.lua in torch7).
--
-- Subclasses (torch.DiskFile, torch.MemoryFile) give byte access through
--   _rawread(ptr, n) -> bytes read     _rawwrite(ptr_or_string, n)
--   _getc() -> byte or nil             _ungetc()
--   _seek(pos)   _flush()   _close()
-- and keep self._pos (0-based byte offset) and self._len (total bytes).
--
-- Reading never trusts a length from the data: every count is checked
-- against the bytes left before anything is allocated, and errors name the
-- byte offset ("t7: at byte 123: expected a type tag (0..8), got 77").
local torch = ...
local ffi = require 'ffi'

local File = torch.class('torch.File')

-- ---------------------------------------------------------------- primitives

-- Element kinds: C type, size in the file, ascii format, storage class.
local kinds = {}
for _, k in ipairs {
   {'Byte', 'uint8_t', 1, '%d'}, {'Char', 'int8_t', 1, '%d'}, {'Short', 'int16_t', 2, '%d'},
   {'Int', 'int32_t', 4, '%d'}, {'Long', 'int64_t', 8, nil}, {'Float', 'float', 4, '%.9g'},
   {'Double', 'double', 8, '%.17g'}, {'Half', 'uint16_t', 2, '%.9g'},
} do
   kinds[k[1]] = {name = k[1], ctype = k[2], size = k[3], fmt = k[4], ptr = ffi.typeof(k[2] .. '*'),
                  raw = k[3] == 1, float = k[1] == 'Float' or k[1] == 'Double',
                  what = (k[1] == 'Int' or k[1] == 'Long' or k[1] == 'Short') and ('an ' .. k[1]:lower())
                     or ('a ' .. k[1]:lower())}
end
kinds.Int.what = 'an int'
-- Half elements are binary16 bits in memory and in binary files; ascii files
-- hold them as float text (as Torch7's THFile did).
kinds.Half.float, kinds.Half.half = true, true
for name, kind in pairs(kinds) do kind.numberAt = (torch._types[name] or torch._halfType).numberAt end
local floatToHalf = torch.C.lt_float_to_half
File._kinds = kinds

local scratch = ffi.new('uint8_t[8]')
local i32buf = ffi.new('int32_t[1024]')
local i64 = ffi.typeof('int64_t')

-- Defaults as in Torch7: ascii, autoSpacing, not quiet, referenced.
function File:_initFile(readable, writable)
   self._readable = readable
   self._writable = writable
   self._binary = false
   self._autoSpacing = true
   self._quiet = false
   self._hasError = false
   self._referenced = true
   self._longSize = ffi.sizeof('long')
   self._swap = false
   self._open = true
   self._pos = 0
   self._len = 0
   self._depth = 0   -- > 0 inside readObject/writeObject (errors get the "t7:" prefix)
end

function File:_checkOpen(fname)
   if not self._open then error(fname .. ': attempt to use a closed file', 3) end
end

function File:binary() self._binary = true; return self end
function File:ascii() self._binary = false; return self end
function File:isBinary() return self._binary end
function File:isAscii() return not self._binary end
function File:autoSpacing() self._autoSpacing = true; return self end
function File:noAutoSpacing() self._autoSpacing = false; return self end
function File:isAutoSpacing() return self._autoSpacing end
function File:quiet() self._quiet = true; return self end
function File:pedantic() self._quiet = false; return self end
function File:isQuiet() return self._quiet end
function File:hasError() return self._hasError end
function File:clearError() self._hasError = false; return self end
function File:isReadable() return self._readable end
function File:isWritable() return self._writable end
function File:isOpen() return self._open end
function File:referenced(flag) self._referenced = flag ~= false; return self end
function File:isReferenced() return self._referenced end

function File:longSize(n)
   if n ~= nil and n ~= 0 and n ~= 4 and n ~= 8 then error('longSize: 4 or 8 (or 0 for native) expected', 2) end
   self._longSize = (n == nil or n == 0) and ffi.sizeof('long') or n
   return self
end

-- Byte order: files are native (little-endian in practice); big-endian
-- files are read and written with byte swapping.
local littleHost = ffi.abi('le')
function File:nativeEndianEncoding() self._swap = false; return self end
function File:littleEndianEncoding() self._swap = not littleHost; return self end
function File:bigEndianEncoding() self._swap = littleHost; return self end
function File:isLittleEndianCPU() return littleHost end
function File:isBigEndianCPU() return not littleHost end

-- Torch7's Lua API counts file positions from 1 (File.c adds/subtracts 1
-- around THFile's 0-based offsets); nn's clone() relies on f:seek(1).
function File:position()
   self:_checkOpen('position')
   return self._pos + 1
end

-- The 0-based byte offset, for error messages about file contents.
function File:_offset()
   return self._pos
end

function File:seek(pos)
   self:_checkOpen('seek')
   if type(pos) ~= 'number' or pos < 1 or pos ~= math.floor(pos) then
      error('seek: position expected (positions start at 1)', 2)
   end
   local off = pos - 1
   if off > self._len then
      if self._quiet then self._hasError = true; return self end
      error(string.format('unable to seek to position %d (file size %d)', pos, self._len), 2)
   end
   self:_seek(off)
   self._pos = off
   return self
end

function File:seekEnd()
   self:_checkOpen('seekEnd')
   self:_seek(self._len)
   self._pos = self._len
   return self
end

function File:synchronize()
   self:_checkOpen('synchronize')
   self:_flush()
   return self
end

function File:close()
   if self._open then
      self:_close()
      self._open = false
   end
   return self
end

function File:_remaining() return self._len - self._pos end

-- A read error at byte `at`: raised, or recorded when the file is quiet.
function File:_readError(at, msg, level)
   if self._quiet and self._depth == 0 then
      self._hasError = true
      return
   end
   error(string.format('%s at byte %d: %s', self._depth > 0 and 't7:' or 'read error', at, msg), level or 0)
end

local function swapBytes(ptr, n, size)
   local p = ffi.cast('uint8_t*', ptr)
   for i = 0, n - 1 do
      local b = i * size
      for j = 0, size / 2 - 1 do
         p[b + j], p[b + size - 1 - j] = p[b + size - 1 - j], p[b + j]
      end
   end
end

local function int64str(v)
   local s = tostring(i64(v))
   return (s:gsub('LL$', ''))
end

-- Element i of p (a kind.ptr) as ascii text.
local function fmtElem(kind, p, i)
   if kind.name == 'Long' then return int64str(p[i]) end
   local v = kind.numberAt(p, i)
   if kind.float then
      if v ~= v then return 'nan' end
      if v == math.huge then return 'inf' end
      if v == -math.huge then return '-inf' end
   end
   return string.format(kind.fmt, v)
end

-- Write n elements of `kind` from ptr (binary: raw; ascii: Torch7's text).
function File:_writeRaw(kind, ptr, n)
   if n == 0 then return 0 end
   if self._binary then
      if kind.name == 'Long' and self._longSize == 4 then
         local p = ffi.cast('int64_t*', ptr)
         local done = 0
         while done < n do
            local m = math.min(1024, n - done)
            for i = 0, m - 1 do i32buf[i] = p[done + i] end
            if self._swap then swapBytes(i32buf, m, 4) end
            self:_rawwrite(i32buf, m * 4)
            done = done + m
         end
      elseif self._swap and kind.size > 1 then
         local tmp = ffi.new('uint8_t[?]', n * kind.size)
         ffi.copy(tmp, ptr, n * kind.size)
         swapBytes(tmp, n, kind.size)
         self:_rawwrite(tmp, n * kind.size)
      else
         self:_rawwrite(ptr, n * kind.size)
      end
      return n
   end
   if kind.raw then
      self:_rawwrite(ptr, n)
   else
      local p = ffi.cast(kind.ptr, ptr)
      local sep = self._autoSpacing and ' ' or ''
      local done = 0
      while done < n do
         local m = math.min(4096, n - done)
         local parts = {}
         for i = 0, m - 1 do parts[i + 1] = fmtElem(kind, p, done + i) end
         local s = table.concat(parts, sep)
         if done + m < n then s = s .. sep end
         self:_rawwrite(s, #s)
         done = done + m
      end
   end
   if self._autoSpacing then self:_rawwrite('\n', 1) end
   return n
end

local spaceByte = {[32] = true, [9] = true, [10] = true, [11] = true, [12] = true, [13] = true}
local intChars, floatChars = {}, {}
for c in ('0123456789+-'):gmatch('.') do intChars[c:byte()] = true; floatChars[c:byte()] = true end
for c in ('.eEinfatyINFATY'):gmatch('.') do floatChars[c:byte()] = true end

-- The next number token in ascii mode (leading whitespace skipped), or nil.
function File:_scanToken(float)
   local c = self:_getc()
   while c and spaceByte[c] do c = self:_getc() end
   local allowed = float and floatChars or intChars
   local chars = {}
   while c and allowed[c] and #chars < 64 do
      chars[#chars + 1] = string.char(c)
      c = self:_getc()
   end
   if c then self:_ungetc() end
   if #chars == 0 then return nil end
   return table.concat(chars)
end

local function parseInt64(tok)
   local neg, digits = tok:match('^([+-]?)(%d+)$')
   if not digits or #digits > 19 then return nil end
   local v = i64(0)
   for i = 1, #digits do v = v * 10 + (digits:byte(i) - 48) end
   if neg == '-' then v = -v end
   return v
end

local function parseFloat(tok)
   local v = tonumber(tok)
   if v then return v end
   local l = tok:lower()
   if l == 'nan' or l == '-nan' or l == '+nan' then return 0 / 0 end
   if l == 'inf' or l == '+inf' or l == 'infinity' or l == '+infinity' then return math.huge end
   if l == '-inf' or l == '-infinity' then return -math.huge end
   return nil
end

-- Read n elements of `kind` into ptr; returns the count read. Short reads
-- raise (or set hasError when quiet). The caller checked that n is sane.
function File:_readRaw(kind, ptr, n)
   if n == 0 then return 0 end
   local at = self._pos
   if self._binary then
      local esize = (kind.name == 'Long') and self._longSize or kind.size
      local need = n * esize
      if need > self._len - self._pos then
         self:_readError(at, string.format('expected %d %s value%s (%d bytes), got end of file (%d bytes left)',
                                           n, kind.name:lower(), n == 1 and '' or 's', need, self._len - self._pos))
         local got = math.floor((self._len - self._pos) / esize)
         if got > 0 then self:_readRaw(kind, ptr, got) end
         return got
      end
      if kind.name == 'Long' and esize == 4 then
         local p = ffi.cast('int64_t*', ptr)
         local done = 0
         while done < n do
            local m = math.min(1024, n - done)
            self:_rawread(i32buf, m * 4)
            if self._swap then swapBytes(i32buf, m, 4) end
            for i = 0, m - 1 do p[done + i] = i32buf[i] end
            done = done + m
         end
      else
         local got = self:_rawread(ptr, need)
         if got < need then
            self:_readError(at, string.format('expected %d bytes, could read only %d', need, got))
            return math.floor(got / esize)
         end
         if self._swap and esize > 1 then swapBytes(ptr, n, esize) end
      end
      return n
   end
   -- ascii
   if kind.raw then
      if n > self._len - self._pos then
         self:_readError(at, string.format('expected %d chars, got end of file (%d bytes left)', n,
                                           self._len - self._pos))
         return 0
      end
      self:_rawread(ptr, n)
   else
      local p = ffi.cast(kind.ptr, ptr)
      for i = 0, n - 1 do
         local tokAt = self._pos
         local tok = self:_scanToken(kind.float)
         local v
         if tok then
            if kind.half then v = parseFloat(tok); v = v and floatToHalf(v)
            elseif kind.float then v = parseFloat(tok)
            elseif kind.name == 'Long' then v = parseInt64(tok)
            else v = tonumber(tok); if v and v ~= math.floor(v) then v = nil end end
         end
         if v == nil then
            self:_readError(tokAt, string.format('expected %s in ascii, got %s', kind.what,
                                                 tok and ('"' .. tok .. '"') or 'end of file or a non-number'))
            return i
         end
         p[i] = v
      end
   end
   if self._autoSpacing then
      local c = self:_getc()
      if c and c ~= 10 then self:_ungetc() end
   end
   return n
end

-- Public writeX/readX for every kind, in Torch7's forms:
--   writeX(number) | writeX(XStorage)          -> count written
--   readX() -> number | readX(n) -> XStorage | readX(XStorage) -> count read
for name, kind in pairs(kinds) do
   local storageName = 'torch.' .. name .. 'Storage'
   File['write' .. name] = function(self, v)
      self:_checkOpen('write' .. name)
      if not self._writable then error('write' .. name .. ': attempt to write in a read-only file', 2) end
      if type(v) == 'number' or (type(v) == 'cdata' and not torch.isStorage(v)) then
         local p = ffi.cast(kind.ptr, scratch)
         p[0] = kind.half and floatToHalf(v) or v
         return self:_writeRaw(kind, scratch, 1)
      elseif torch.typename(v) == storageName then
         return self:_writeRaw(kind, v._c.data, v:size())
      elseif type(v) == 'string' and kind.raw then
         return self:_writeRaw(kind, ffi.cast('const char*', v), #v)
      end
      error(string.format('write%s: number or %s expected, got %s', name, storageName, torch.type(v)), 2)
   end
   File['read' .. name] = function(self, n)
      self:_checkOpen('read' .. name)
      if not self._readable then error('read' .. name .. ': attempt to read in a write-only file', 2) end
      if n == nil then
         local p = ffi.cast(kind.ptr, scratch)
         p[0] = 0
         if self:_readRaw(kind, scratch, 1) < 1 then return 0 end
         return kind.numberAt(p, 0)
      end
      if type(n) == 'number' then
         if n < 0 or n ~= math.floor(n) then error('read' .. name .. ': non-negative count expected', 2) end
         self:_checkCount(n, kind, self._pos, kind.name:lower() .. ' values')
         local s = torch[name .. 'Storage'](n)
         local got = self:_readRaw(kind, s._c.data, n)
         if got < n then s:resize(got) end
         return s
      end
      if torch.typename(n) == storageName then
         return self:_readRaw(kind, n._c.data, n:size())
      end
      error(string.format('read%s: count or %s expected', name, storageName), 2)
   end
end

-- Refuse a count of n elements that cannot fit in the bytes left (checked
-- before allocating, so hostile sizes cannot make us allocate).
function File:_checkCount(n, kind, at, what)
   local left = self._len - self._pos
   local per = 1
   if self._binary and kind then per = (kind.name == 'Long') and self._longSize or kind.size end
   if n < 0 or n * per > left then
      error(string.format('%s at byte %d: %s %s (%s bytes), but only %d bytes are left',
                          self._depth > 0 and 't7:' or 'read error', at,
                          n < 0 and 'negative count of' or 'count of',
                          string.format('%.0f %s', n, what), string.format('%.0f', n * per), left), 0)
   end
end

-- writeString(str): raw bytes (no length, no newline), as Torch7.
function File:writeString(str)
   self:_checkOpen('writeString')
   if not self._writable then error('writeString: attempt to write in a read-only file', 2) end
   if type(str) ~= 'string' then error('writeString: string expected', 2) end
   self:_rawwrite(str, #str)
   return #str
end

-- readString('*a') reads the rest, '*l' a line (without its newline), or n bytes.
function File:readString(format)
   self:_checkOpen('readString')
   if not self._readable then error('readString: attempt to read in a write-only file', 2) end
   if format == '*a' then
      local n = self._len - self._pos
      local buf = ffi.new('char[?]', math.max(n, 1))
      local got = self:_rawread(buf, n)
      return ffi.string(buf, got)
   elseif format == '*l' then
      local chars = {}
      local c = self:_getc()
      if not c then self._hasError = self._quiet or self._hasError; if not self._quiet then
         error(string.format('read error at byte %d: end of file', self._pos), 2) end; return '' end
      while c and c ~= 10 do
         chars[#chars + 1] = string.char(c)
         c = self:_getc()
      end
      return table.concat(chars)
   elseif type(format) == 'number' then
      self:_checkCount(format, kinds.Char, self._pos, 'chars')
      local buf = ffi.new('char[?]', math.max(format, 1))
      local got = self:_rawread(buf, format)
      return ffi.string(buf, got)
   end
   error('readString: format must be "*a", "*l" or a byte count', 2)
end

-- ---------------------------------------------------------------- object layer

local TYPE_NIL, TYPE_NUMBER, TYPE_STRING, TYPE_TABLE, TYPE_TORCH, TYPE_BOOLEAN = 0, 1, 2, 3, 4, 5
local TYPE_FUNCTION, LEGACY_TYPE_RECUR_FUNCTION, TYPE_RECUR_FUNCTION = 6, 7, 8

-- Bytecode of functions this VM could not load, kept so that re-saving
-- writes the same bytes: stub function -> {dump = string, upvalues = table}.
local foreignFunctions = setmetatable({}, {__mode = 'k'})
torch._t7ForeignFunctions = foreignFunctions

local function classMeta(obj)
   return torch._metaOf(obj) or (type(obj) == 'userdata' and getmetatable(obj)) or nil
end

local function objectVersion(obj)
   local mt = classMeta(obj)
   local v = type(mt) == 'table' and mt.__version
   if v == nil then return 1 end
   return v
end

function File:isWritableObject(object)
   local ty = type(object)
   if object == nil then return TYPE_NIL end
   local tname = torch.typename(object)
   if tname and torch.factory(tname) then return TYPE_TORCH end
   if ty == 'table' then return TYPE_TABLE
   elseif ty == 'number' then return TYPE_NUMBER
   elseif ty == 'string' then return TYPE_STRING
   elseif ty == 'boolean' then return TYPE_BOOLEAN
   elseif ty == 'function' and (foreignFunctions[object] or pcall(string.dump, object)) then
      return TYPE_RECUR_FUNCTION
   end
   return nil
end

local function env(self)
   local e = self._env
   if not e then
      e = {writeObjects = {}, nWrite = 0, readObjects = {}, readTags = {}, nRead = 0,
           upvalueIdToClosure = {}, names = {}}
      self._env = e
   end
   return e
end

-- The reference key of an object: cdata by address (several storage handles
-- share one C storage), everything else by identity.
local function refKey(obj)
   if type(obj) == 'cdata' then return torch.pointer(obj) end
   return obj
end

-- The path of the object being written, as Torch7 names it in errors and
-- warnings: ' at <?>.model.modules.1.weight'. A function's upvalues show by
-- their names (the upvalue list and its indices are left out).
local UPVALUES = '(upvalues)'
local function debugName(e)
   local n = e.names
   if #n == 0 then return '' end
   local parts = {}
   for i = 1, #n do
      if n[i] ~= UPVALUES and n[i - 1] ~= UPVALUES then parts[#parts + 1] = n[i] end
   end
   return ' at ' .. table.concat(parts, '.')
end

local function upvalueId(fn, i)
   if debug.upvalueid then
      local id = debug.upvalueid(fn, i)
      local s = tostring(id):match('0x%x+')
      return s and tonumber(s) or nil
   end
   return nil
end

function File:writeObject(object, debugname, hook)
   self:_checkOpen('writeObject')
   -- references are kept by the object as given, before the hook replaces it (Torch7)
   local original = object
   if hook then object = hook(object) end
   local e = env(self)
   local typeidx = self:isWritableObject(object)
   if not typeidx then
      error(string.format('Unwritable object <%s>%s', type(object), debugName(e)), 2)
   end
   local depth = self._depth
   local names = e.names
   names[depth + 1] = debugname and tostring(debugname) or '<?>'
   self._depth = depth + 1
   if depth > 0 then
      self:_writeObjectBody(object, typeidx, e, hook, original)
   else
      local ok, err = pcall(self._writeObjectBody, self, object, typeidx, e, hook, original)
      if not ok then
         self._depth = 0
         for i = #names, 1, -1 do names[i] = nil end
         error(err, 0)
      end
   end
   names[depth + 1] = nil
   self._depth = depth
end

function File:_writeObjectBody(object, typeidx, e, hook, original)
   self:writeInt(typeidx)
   if typeidx == TYPE_NIL then return
   elseif typeidx == TYPE_NUMBER then self:writeDouble(object); return
   elseif typeidx == TYPE_BOOLEAN then self:writeInt(object and 1 or 0); return
   elseif typeidx == TYPE_STRING then
      self:writeInt(#object)
      self:writeChar(object)
      return
   end
   -- reference-tracked kinds: the index is registered before the body, so
   -- self-references are written as back-references
   if original == nil then original = object end
   local key = refKey(original)
   local index = self._referenced and e.writeObjects[key]
   if index then
      self:writeInt(index)
      return
   end
   index = e.nWrite + 1
   e.nWrite = index
   if self._referenced then e.writeObjects[key] = index end
   if type(key) == 'number' and self._referenced then
      -- keep the handle (and so the C object at that address) alive while writing
      e.keepAlive = e.keepAlive or {}
      e.keepAlive[#e.keepAlive + 1] = original
   end
   self:writeInt(index)
   if typeidx == TYPE_TORCH then
      self:_writeTorchString('V ' .. tostring(objectVersion(object)))
      self:_writeTorchString(torch.typename(object))
      if object.__write then
         object:__write(self)
      elseif object.write then
         object:write(self)
      elseif type(object) == 'table' then
         local var = {}
         for k, v in pairs(object) do
            if self:isWritableObject(v) then
               var[k] = v
            else
               io.stderr:write(string.format('$ Warning: cannot write object field <%s> of <%s>%s\n',
                                             tostring(k), torch.typename(object), debugName(e)))
            end
         end
         self:writeObject(var, torch.typename(object), hook)
      else
         error(string.format('Unwritable object <%s>%s', torch.typename(object), debugName(e)), 0)
      end
   elseif typeidx == TYPE_TABLE then
      local n = 0
      for _ in pairs(object) do n = n + 1 end
      self:writeInt(n)
      -- an upvalue entry {name, id, value}: its value is named after the upvalue
      local upvalueEntry = e.names[self._depth - 1] == UPVALUES and type(rawget(object, 'name')) == 'string'
      for k, v in pairs(object) do
         self:writeObject(k, nil, hook)
         local name = (type(k) == 'string' or type(k) == 'number') and tostring(k) or nil
         if upvalueEntry and k == 'value' then name = object.name end
         self:writeObject(v, name, hook)
      end
   else -- TYPE_RECUR_FUNCTION: bytecode, then the upvalues {name, id, value}
      local foreign = foreignFunctions[object]
      if foreign then
         self:writeInt(#foreign.dump)
         self:writeChar(foreign.dump)
         self:writeObject(foreign.upvalues, UPVALUES, hook)
         return
      end
      local upvalues = {}
      local i = 1
      while true do
         local name, value = debug.getupvalue(object, i)
         if not name then break end
         if name == '_ENV' then value = nil end
         upvalues[i] = {name = name, id = upvalueId(object, i), value = value}
         i = i + 1
      end
      local dumped = string.dump(object)
      self:writeInt(#dumped)
      self:writeChar(dumped)
      self:writeObject(upvalues, UPVALUES, hook)
   end
end

function File:_writeTorchString(s)
   self:writeInt(#s)
   self:writeChar(s)
end

-- ---- reading

local tagNames = {[0] = 'nil', 'number', 'string', 'table', 'torch object', 'boolean', 'function',
                  'function', 'function'}

local MAXDEPTH = 100000

local function t7error(at, fmt, ...)
   error(string.format('t7: at byte %d: ' .. fmt, at, ...), 0)
end
File._t7error = t7error

-- Read an int length and that many chars as a Lua string (checked first).
function File:_readT7String(what)
   local at = self._pos
   local n = self:readInt()
   if n < 0 then t7error(at, 'expected the length of %s, got %d', what, n) end
   if n > self._len - self._pos then
      t7error(at, 'expected %s of %d bytes, but only %d bytes are left', what, n, self._len - self._pos)
   end
   if n == 0 then return '' end
   local buf = ffi.new('char[?]', n)
   self:_readRaw(kinds.Char, buf, n)
   return ffi.string(buf, n)
end

-- Options: functions = false refuses function objects (tags 6..8), which
-- is the only safe way to read untrusted files: LuaJIT does not verify
-- bytecode, and malformed bytecode can crash the VM.
function File:readObject(options)
   self:_checkOpen('readObject')
   if options ~= nil then
      if type(options) ~= 'table' then error('readObject: options table expected', 2) end
      if options.functions ~= nil then self._functions = options.functions ~= false end
   end
   if not self._readable then error('readObject: attempt to read in a write-only file', 2) end
   local depth = self._depth
   if depth > 0 then
      -- nested: no pcall per level (the outermost call handles errors), so
      -- deep graphs do not exhaust the Lua stack
      if depth >= MAXDEPTH then t7error(self._pos, 'objects nested too deeply (more than %d levels)', MAXDEPTH) end
      self._depth = depth + 1
      local res = self:_readObjectBody()
      self._depth = depth
      return res
   end
   self._depth = 1
   local ok, res = pcall(self._readObjectBody, self)
   self._depth = 0
   if not ok then
      if type(res) == 'string' and not res:find('t7: at byte', 1, true) then
         res = string.format('t7: at byte %d: %s', self._pos, res)
      end
      error(res, 0)
   end
   return res
end

function File:_readObjectBody()
   local at = self._pos
   if self._len - self._pos < (self._binary and 4 or 1) then
      t7error(at, 'expected a type tag (0..8), got end of file')
   end
   local typeidx = self:readInt()
   if typeidx == TYPE_NIL then return nil
   elseif typeidx == TYPE_NUMBER then return self:readDouble()
   elseif typeidx == TYPE_BOOLEAN then
      local v = self:readInt()
      if v ~= 0 and v ~= 1 then t7error(at + 4, 'expected a boolean (0 or 1), got %d', v) end
      return v == 1
   elseif typeidx == TYPE_STRING then
      return self:_readT7String('a string')
   elseif typeidx == TYPE_FUNCTION then
      -- legacy (pre-referencing) function: bytecode and a list of upvalue values
      return self:_readFunction(at, nil, true)
   elseif typeidx ~= TYPE_TABLE and typeidx ~= TYPE_TORCH and typeidx ~= TYPE_RECUR_FUNCTION
      and typeidx ~= LEGACY_TYPE_RECUR_FUNCTION then
      t7error(at, 'expected a type tag (0..8), got %d', typeidx)
   end
   local e = env(self)
   local indexAt = self._pos
   local index = self:readInt()
   if self._referenced then
      if index >= 1 and index <= e.nRead then
         local obj = e.readObjects[index]
         local seen = e.readTags[index]
         if seen ~= typeidx and not (seen >= 6 and typeidx >= 6) then
            t7error(indexAt, 'reference index %d names a %s, but the tag says %s', index, tagNames[seen],
                    tagNames[typeidx])
         end
         return obj
      end
      if index ~= e.nRead + 1 then
         t7error(indexAt, 'bad reference index %d (expected 1..%d for an object read before, or %d for a new one)',
                 index, e.nRead, e.nRead + 1)
      end
   elseif index < 1 then
      t7error(indexAt, 'bad reference index %d (expected a positive index)', index)
   end
   if typeidx == TYPE_TABLE then
      local obj = {}
      self:_register(obj, typeidx)
      local nAt = self._pos
      local n = self:readInt()
      -- each key and value takes at least a tag
      local minPair = self._binary and 8 or 4
      if n < 0 or n * minPair > self._len - self._pos then
         t7error(nAt, 'expected a table size (number of key/value pairs), got %d with %d bytes left', n,
                 self._len - self._pos)
      end
      for _ = 1, n do
         local kAt = self._pos
         local k = self:readObject()
         local v = self:readObject()
         if k == nil then t7error(kAt, 'expected a table key, got nil') end
         if k ~= k then t7error(kAt, 'expected a table key, got NaN') end
         obj[k] = v
      end
      return obj
   elseif typeidx == TYPE_TORCH then
      return self:_readTorch(at)
   else
      return self:_readFunction(at, typeidx, false)
   end
end

function File:_register(obj, typeidx)
   local e = self._env
   local index = e.nRead + 1
   e.nRead = index
   if self._referenced then
      e.readObjects[index] = obj
      e.readTags[index] = typeidx
   end
end

-- Packages whose classes are loaded on demand when a file names them,
-- as if the user had required them first (only ours, never arbitrary names).
local autoPackages = {tds = true, nn = true, nngraph = true, graph = true}
-- classes named after another package than the one defining them
local definingPackage = {['nn.gModule'] = 'nngraph', ['nn.ModuleFromCriterion'] = 'nngraph'}

-- cutorch wrote CUDA tensors and storages in the CPU types' layout (sizes, strides,
-- offset; storage data copied to the host). Once `require 'cutorch'` has run, they load
-- as the Cuda types, as in Torch7; before that, a model saved from the GPU loads as
-- the CPU type of the same element (what :float() would have given), which Torch7
-- without cutorch could not do (CudaHalf loads as torch.HalfTensor).
local cudaAliases = {}
for _, t in ipairs {{'', 'Float'}, {'Double', 'Double'}, {'Long', 'Long'}, {'Int', 'Int'}, {'Short', 'Short'},
                    {'Char', 'Char'}, {'Byte', 'Byte'}, {'Half', 'Half'}} do
   cudaAliases['torch.Cuda' .. t[1] .. 'Tensor'] = 'torch.' .. t[2] .. 'Tensor'
   cudaAliases['torch.Cuda' .. t[1] .. 'Storage'] = 'torch.' .. t[2] .. 'Storage'
end

local function classFor(className)
   local mt = torch.getmetatable(not torch._cudaEnabled and cudaAliases[className] or className)
   if mt then return mt end
   local pkg = definingPackage[className] or className:match('^([%w_]+)%.')
   if pkg and autoPackages[pkg] and package.searchpath(pkg, package.path) then
      pcall(require, pkg)
      mt = torch.getmetatable(className)
      if mt then return mt end
   end
   return torch._unknownclass(className)
end

function File:_readTorch(at)
   local vAt = self._pos
   local version = self:_readT7String('a version string ("V n") or class name')
   local versionNumber = tonumber(version:match('^V (.*)$'))
   local className
   if versionNumber then
      className = self:_readT7String('a class name')
   else
      -- a file written before versioning: this was the class name
      if version:match('^V ') then t7error(vAt, 'expected a version string "V <number>", got "%s"', version) end
      className = version
      versionNumber = 0
   end
   if className == '' then t7error(vAt, 'expected a class name, got an empty string') end
   local mt = classFor(className)
   local factory = rawget(mt, '__factory') or mt.__factory
   if not factory then t7error(vAt, 'class %s cannot be created (no factory)', className) end
   local object = factory(self)
   self:_register(object, TYPE_TORCH)
   if object.__read then
      object:__read(self, versionNumber)
   elseif object.read then
      object:read(self, versionNumber)
   elseif type(object) == 'table' then
      local fAt = self._pos
      local var = self:readObject()
      if type(var) ~= 'table' or torch.typename(var) then
         t7error(fAt, 'expected the field table of a %s, got %s', className, torch.type(var))
      end
      for k, v in pairs(var) do object[k] = v end
   else
      t7error(vAt, 'cannot load object class <%s>', className)
   end
   return object
end

local function foreignStub(dump, upvalues, why)
   local stub
   stub = function()
      error('this function was saved as bytecode this LuaJIT cannot load (' .. why .. ')', 2)
   end
   foreignFunctions[stub] = {dump = dump, upvalues = upvalues, stub = true}
   return stub
end

-- Bytecode this VM can load: "\27LJ", version 2 (LuaJIT 2.1), with this VM's
-- frame layout. LuaJIT 2.0 (version 1, what Torch7 wrote), LuaJIT 2.1 built
-- the other way round for GC64 (a standard Torch7 install had it off; the
-- FR2 flag of the dump says which) and PUC Lua bytecode cannot run here.
local DUMP_FR2 = 8   -- BCDUMP_F_FR2: two-slot frames, as LuaJIT's GC64 mode builds them
local ourFR2 = bit.band(string.dump(function() end):byte(5), DUMP_FR2)

local function isForeignLuaJIT(dump)
   if dump:sub(1, 4) == '\27LJ\1' then return true end
   return dump:sub(1, 4) == '\27LJ\2' and #dump >= 5 and bit.band(dump:byte(5), DUMP_FR2) ~= ourFR2
end

local function bytecodeProblem(dump)
   if #dump < 5 then return 'too short to be bytecode' end
   if dump:sub(1, 3) ~= '\27LJ' then
      if dump:sub(1, 4) == '\27Lua' then return 'PUC Lua bytecode' end
      return 'not LuaJIT bytecode'
   end
   local v = dump:byte(4)
   if v ~= 2 then return string.format('LuaJIT bytecode version %d (LuaJIT %s), this VM reads version 2', v,
                                        v == 1 and '2.0' or '?') end
   if isForeignLuaJIT(dump) then
      return ourFR2 ~= 0 and 'LuaJIT 2.1 bytecode of a build without GC64, this VM is a GC64 build'
         or 'LuaJIT 2.1 bytecode of a GC64 build, this VM is built without GC64'
   end
   return nil
end

-- LuaJIT 2.0 functions (what Torch7 saved) cannot be loaded by LuaJIT 2.1,
-- but a dump that was not stripped names its chunk: the source itself (for
-- loadstring) or "@file". When that source is at hand it is compiled again
-- (not run) and the prototype with the same line range, parameter and upvalue
-- counts is cut out of the new dump as a function of its own.
local function uleb(s, pos)
   local v, shift = 0, 0
   while true do
      local b = s:byte(pos)
      if not b then return nil end
      pos = pos + 1
      v = v + bit.band(b, 0x7f) * 2 ^ shift
      if b < 0x80 then return v, pos end
      shift = shift + 7
      if shift > 49 then return nil end
   end
end

local function ulebBytes(v)
   local out = {}
   repeat
      local b = v % 128
      v = math.floor(v / 128)
      out[#out + 1] = string.char(v > 0 and b + 128 or b)
   until v == 0
   return table.concat(out)
end

-- Split a dump: header info and its prototypes {start, stop (inclusive, with the
-- length prefix), numparams, numuv, firstline, numline, children}.
local function parseDump(s)
   if s:sub(1, 3) ~= '\27LJ' then return nil end
   local flags, pos = uleb(s, 5)
   if not flags then return nil end
   local chunk
   if bit.band(flags, 2) == 0 then
      local n
      n, pos = uleb(s, pos)
      if not n then return nil end
      chunk = s:sub(pos, pos + n - 1)
      pos = pos + n
   end
   local headerEnd = pos - 1
   local protos = {}
   while true do
      local len, p = uleb(s, pos)
      if not len or len == 0 then break end
      local start = pos
      local pt = {start = start, stop = p + len - 1}
      local q = p + 4
      pt.numparams, pt.numuv = s:byte(p + 1), s:byte(p + 3)
      local sizekgc, sizekn, sizebc, sizedbg
      sizekgc, q = uleb(s, q); if not q then return nil end
      sizekn, q = uleb(s, q); if not q then return nil end
      sizebc, q = uleb(s, q); if not q then return nil end
      if chunk then
         sizedbg, q = uleb(s, q); if not q then return nil end
         if sizedbg > 0 then
            pt.firstline, q = uleb(s, q); if not q then return nil end
            pt.numline, q = uleb(s, q); if not q then return nil end
         end
      end
      -- count child prototypes among the GC constants
      q = q + sizebc * 4 + pt.numuv * 2
      local children = 0
      for _ = 1, sizekgc do
         local tp
         tp, q = uleb(s, q); if not q then return nil end
         if tp >= 5 then q = q + tp - 5
         elseif tp == 0 then children = children + 1
         elseif tp == 1 then
            local na, nh
            na, q = uleb(s, q); if not q then return nil end
            nh, q = uleb(s, q); if not q then return nil end
            for _ = 1, na + 2 * nh do
               local kt
               kt, q = uleb(s, q); if not q then return nil end
               if kt >= 5 then q = q + kt - 5
               elseif kt == 3 then _, q = uleb(s, q)
               elseif kt == 4 then _, q = uleb(s, q); if q then _, q = uleb(s, q) end end
               if not q then return nil end
            end
         else
            for _ = 1, (tp == 4) and 4 or 2 do _, q = uleb(s, q); if not q then return nil end end
         end
      end
      pt.children = children
      protos[#protos + 1] = pt
      pos = pt.stop + 1
      if pos > #s then return nil end
   end
   return {flags = flags, chunk = chunk, headerEnd = headerEnd, protos = protos}
end

local function recompile(dump)
   local old = parseDump(dump)
   local target = old and old.protos[#old.protos]
   if not target or not old.chunk or not target.firstline then return nil end
   local source = old.chunk
   if source:sub(1, 1) == '=' then return nil end
   if source:sub(1, 1) == '@' then
      local fh = io.open(source:sub(2), 'rb')
      if not fh then return nil end
      source = fh:read('*a')
      fh:close()
   end
   local chunkfn = loadstring(source, old.chunk)
   if not chunkfn then return nil end
   local new = parseDump(string.dump(chunkfn))
   if not new then return nil end
   local s = string.dump(chunkfn)
   -- subtree extents (post-order: a prototype follows its children)
   local stack, found = {}, nil
   for i, pt in ipairs(new.protos) do
      local first = i
      for _ = 1, pt.children do first = table.remove(stack) end
      stack[#stack + 1] = first
      if pt.numparams == target.numparams and pt.numuv == target.numuv and pt.firstline == target.firstline
         and pt.numline == target.numline and i < #new.protos then
         if found then return nil end   -- ambiguous
         found = {first, i}
      end
   end
   if not found then return nil end
   local body = s:sub(new.protos[found[1]].start, new.protos[found[2]].stop)
   local header = s:sub(1, new.headerEnd)
   local fn = loadstring(header .. body .. '\0', old.chunk)
   return fn
end
torch._t7Recompile = recompile

-- Whether files may hold functions when the reader was not told (readObject's
-- functions option): yes, as in Torch7, unless LUATORCH_T7_FUNCTIONS=0 turns
-- bytecode off in this whole process.
local functionsSetting = os.getenv('LUATORCH_T7_FUNCTIONS')
torch._t7FunctionsByDefault = not (functionsSetting == '0' or functionsSetting == 'false' or functionsSetting == 'no')

function File:_readFunction(at, typeidx, legacy)
   if self._functions == false or (self._functions == nil and not torch._t7FunctionsByDefault) then
      t7error(at, 'the file holds a Lua function (code that would run in this process), and reading functions ' ..
                  'is disabled (%s)', self._functions == false and 'functions = false' or 'LUATORCH_T7_FUNCTIONS=0')
   end
   local bAt = self._pos
   local dump = self:_readT7String('function bytecode')
   local problem = bytecodeProblem(dump)
   local func, err
   local foreign = false
   if not problem then
      func, err = loadstring(dump)
      if not func then t7error(bAt, 'cannot load function bytecode: %s', tostring(err)) end
   elseif isForeignLuaJIT(dump) then
      -- Torch7's own functions (LuaJIT 2.0, or 2.1 without GC64): compiled again from their source
      -- when it is at hand, else a stub that raises when called; either way
      -- re-saving writes the original bytes
      foreign = true
      local ok, fn = pcall(recompile, dump)
      func = ok and fn or nil
      if func then
         foreignFunctions[func] = {dump = dump}
      else
         func = foreignStub(dump, nil, problem)
      end
   else
      t7error(bAt, 'cannot load function bytecode: %s', problem)
   end
   if not legacy then self:_register(func, typeidx) end
   local uAt = self._pos
   local upvalues = self:readObject()
   if type(upvalues) ~= 'table' or torch.typename(upvalues) then
      t7error(uAt, 'expected the upvalue table of a function, got %s', torch.type(upvalues))
   end
   if foreign then
      foreignFunctions[func].upvalues = upvalues
      if not foreignFunctions[func].stub then
         -- a recompiled function: its upvalues as saved ({name, value})
         local plain = legacy or typeidx == LEGACY_TYPE_RECUR_FUNCTION   -- upvalues saved as bare values
         for i, uv in ipairs(upvalues) do
            if debug.getupvalue(func, i) then
               if plain then debug.setupvalue(func, i, uv)
               elseif type(uv) == 'table' then debug.setupvalue(func, i, uv.value) end
            end
         end
      end
      return func
   end
   local e = env(self)
   for i, uv in ipairs(upvalues) do
      if not debug.getupvalue(func, i) then
         t7error(uAt, 'function has fewer upvalues than the %d saved', #upvalues)
      end
      if legacy or typeidx == LEGACY_TYPE_RECUR_FUNCTION then
         debug.setupvalue(func, i, uv)
      else
         if type(uv) ~= 'table' then t7error(uAt, 'expected an upvalue {name, id, value}, got %s', type(uv)) end
         if uv.name ~= '_ENV' then debug.setupvalue(func, i, uv.value) end
         -- upvalues shared between saved closures are joined again
         if uv.id ~= nil and debug.upvaluejoin then
            local prev = e.upvalueIdToClosure[uv.id]
            if prev then
               debug.upvaluejoin(func, i, prev[1], prev[2])
            else
               e.upvalueIdToClosure[uv.id] = {func, i}
            end
         end
      end
   end
   return func
end

-- The object reader runs interpreted: lupa's LuaJIT 2.1 crashed (SIGSEGV)
-- in traces through these functions on some mutated files (found by
-- tests/test_t7_fuzz.py; never with the JIT off). They are not hot: bulk
-- data moves in single copies, and the per-object work is small.
for _, fn in ipairs {File.readObject, File._readObjectBody, File._readTorch, File._readFunction,
                     File._register, File._readT7String} do
   jit.off(fn)
end
