-- Round trips of the .t7 object layer in Lua: every tensor type, views,
-- shared storages, cycles, classes with hooks, functions, both encodings,
-- referenced on and off, and the torch.File primitives.
local spec = require 'spec'
local T = {}

local formats = {'binary', 'ascii'}
local typeNames = {'Byte', 'Char', 'Short', 'Int', 'Long', 'Float', 'Double'}

-- random values that every type can hold exactly
local function randomTensor(tname, ...)
   local t = torch[tname .. 'Tensor'](...)
   local d, n = t:data(), t:nElement()
   local lo, hi = 0, 100
   if tname == 'Char' or tname == 'Short' or tname == 'Int' or tname == 'Long' then lo = -100 end
   for i = 0, n - 1 do
      if tname == 'Float' or tname == 'Double' then
         d[i] = (math.random() - 0.5) * 10 ^ math.random(-30, 30)
      else
         d[i] = math.random(lo, hi)
      end
   end
   if tname == 'Long' and n > 0 then d[0] = -9007199254740993LL end  -- beyond 2^53
   if tname == 'Int' and n > 1 then d[1] = -2147483648 end
   return t
end

local function sameTensor(a, b, msg)
   spec.eq(torch.typename(b), torch.typename(a), msg)
   spec.eq(b:dim(), a:dim(), msg)
   for d = 1, a:dim() do spec.eq(b:size(d), a:size(d), msg) end
   local x, y = a:contiguous(), b:contiguous()
   local dx, dy = x:data(), y:data()
   for i = 0, a:nElement() - 1 do
      if dx[i] ~= dy[i] then
         error(string.format('%s: element %d differs: %s vs %s', msg or '', i + 1, tostring(dx[i]), tostring(dy[i])), 2)
      end
   end
end

local function roundtrip(obj, fmt, referenced)
   return torch.deserialize(torch.serialize(obj, fmt, referenced), fmt, referenced)
end

function T.all_types_both_formats()
   for _, fmt in ipairs(formats) do
      for _, tn in ipairs(typeNames) do
         for _, ref in ipairs {true, false} do
            local a = randomTensor(tn, 3, 4, 5)
            local b = roundtrip(a, fmt, ref)
            sameTensor(a, b, fmt .. ' ' .. tn)
            spec.eq(b:storage():size(), 60)
            local s = roundtrip(a:storage(), fmt, ref)
            spec.eq(torch.typename(s), 'torch.' .. tn .. 'Storage')
            spec.eq(s:size(), 60)
            spec.eq(s[60], a:storage()[60])
         end
      end
   end
end

function T.float_specials()
   for _, fmt in ipairs(formats) do
      local a = torch.DoubleTensor({1 / 0, -1 / 0, 0 / 0, 0.1, -0.0, 5e-324, 1.7976931348623157e308})
      local b = roundtrip(a, fmt)
      spec.eq(b[1], 1 / 0); spec.eq(b[2], -1 / 0); assert(b[3] ~= b[3], 'nan')
      spec.eq(b[4], 0.1); spec.eq(b[6], 5e-324); spec.eq(b[7], 1.7976931348623157e308)
      local f = roundtrip(torch.FloatTensor({0.1, 3.4028234663852886e38, 1e-45}), fmt)
      spec.eq(f[1], torch.FloatTensor({0.1})[1]); spec.eq(f[2], 3.4028234663852886e38)
      spec.eq(f[3], torch.FloatTensor({1e-45})[1])
   end
end

function T.views_write_the_whole_storage()
   for _, fmt in ipairs(formats) do
      for _, tn in ipairs(typeNames) do
         local base = randomTensor(tn, 6, 7)
         local views = {base:t(), base:narrow(2, 3, 4), base:select(1, 2), base:sub(2, 5, 2, 6):t(),
                        base:narrow(1, 2, 1):expand(5, 7)}
         for i, v in ipairs(views) do
            local w = roundtrip(v, fmt)
            sameTensor(v, w, fmt .. ' view ' .. i)
            spec.eq(w:storage():size(), 42, 'whole storage')
            spec.eq(w:storageOffset(), v:storageOffset())
            for d = 1, v:dim() do spec.eq(w:stride(d), v:stride(d)) end
         end
      end
   end
end

function T.shared_storages_stay_shared()
   for _, fmt in ipairs(formats) do
      local a = torch.FloatTensor(4, 5)
      a:fill(1)
      local obj = {a = a, at = a:t(), row = a:select(1, 2), s = a:storage(), again = a}
      local o = roundtrip(obj, fmt)
      assert(o.a:storage():isSharedWith(o.at:storage()), 'a and a:t() share')
      assert(o.a:storage():isSharedWith(o.row:storage()), 'row shares')
      assert(o.a:storage():isSharedWith(o.s), 'storage shares')
      assert(o.again == o.a, 'same tensor object twice is one object')
      o.a[2][3] = 7
      spec.eq(o.at[3][2], 7)
      spec.eq(o.row[3], 7)
      -- referenced off: every occurrence is written in full
      local p = roundtrip(obj, fmt, false)
      assert(not p.a:storage():isSharedWith(p.at:storage()), 'unreferenced copies')
   end
end

function T.empty_tensors()
   for _, fmt in ipairs(formats) do
      local e = roundtrip(torch.DoubleTensor(), fmt)
      spec.eq(e:dim(), 0)
      spec.eq(e:storage(), nil)
      local s = roundtrip(torch.IntStorage(), fmt)
      spec.eq(s:size(), 0)
   end
   -- Torch7's bytes for an empty tensor: ndim 0, offset 1, nil storage
   local bytes = torch.serialize(torch.FloatTensor())
   spec.eq(#bytes, 4 + 4 + 4 + 3 + 4 + 17 + 4 + 8 + 4)
end

function T.tables_cycles_and_identity()
   for _, fmt in ipairs(formats) do
      local t = {1, 2, 'three', x = {y = {z = true}}, [1.5] = false, ['with space'] = -0.25}
      t.self = t
      t[t] = t.x
      t.x.back = t
      local o = roundtrip(t, fmt)
      assert(o.self == o, 'self reference')
      assert(o[o] == o.x, 'table key')
      assert(o.x.back == o)
      spec.eq(o[3], 'three'); spec.eq(o[1.5], false); spec.eq(o['with space'], -0.25)
      assert(o.x.y.z == true)
      -- strings with every byte value, including NUL and newlines
      local all = {}
      for i = 0, 255 do all[#all + 1] = string.char(i) end
      local s = table.concat(all) .. '\n\n'
      spec.eq(roundtrip({s}, fmt)[1], s)
      spec.eq(roundtrip('', fmt), '')
   end
end

function T.classes_default_and_hooks()
   local A = torch.class('serspec.A')
   function A:__init(x) self.x = x; self.inited = true end
   local B = torch.class('serspec.B', 'serspec.A')
   function B:write(f) f:writeObject({payload = self.x * 2}) end
   function B:read(f, version) self.x = f:readObject().payload / 2; self.readVersion = version end
   local C = torch.class('serspec.C')
   C.__version = 3
   function C:__write(f) f:writeInt(#self.items); for _, v in ipairs(self.items) do f:writeDouble(v) end end
   function C:__read(f, version)
      self.items = {}
      for i = 1, f:readInt() do self.items[i] = f:readDouble() end
      self.v = version
   end
   for _, fmt in ipairs(formats) do
      local a = serspec.A(5)
      a.me = a
      local b = serspec.B(21)
      local c = setmetatable({items = {1.5, 2.5}}, torch.getmetatable('serspec.C'))
      local o = roundtrip({a = a, b = b, c = c, b2 = b}, fmt)
      spec.eq(torch.typename(o.a), 'serspec.A')
      spec.eq(o.a.x, 5); assert(o.a.me == o.a)
      spec.eq(torch.typename(o.b), 'serspec.B')
      spec.eq(o.b.x, 21); spec.eq(o.b.readVersion, 1); assert(o.b.inited == nil, 'no __init on load')
      assert(o.b2 == o.b)
      spec.eq(o.c.v, 3); spec.eq(o.c.items[2], 2.5)
      assert(o.a.inited == true)
   end
   -- the version string is "V 1" and "V 3" (integers formatted as integers)
   local s = torch.serialize(serspec.A(1))
   assert(s:find('V 1serspec.A', 1, true) or s:find('V 1\9\0\0\0serspec.A', 1, true), 'V 1')
   assert(torch.serialize(setmetatable({items = {}}, torch.getmetatable('serspec.C'))):find('V 3', 1, true))
end

function T.preversioning_class_name_is_read_with_version_0()
   local C = torch.class('serspec.Old')
   function C:read(f, v) self.v = v; self.n = f:readInt() end
   local m = torch.MemoryFile():binary()
   m:writeInt(4); m:writeInt(1); m:writeInt(#'serspec.Old'); m:writeChar('serspec.Old'); m:writeInt(77)
   m:seek(1)
   local o = m:readObject()
   spec.eq(o.v, 0); spec.eq(o.n, 77)
end

function T.unknown_classes_keep_their_name()
   local m = torch.MemoryFile():binary()
   m:writeInt(4); m:writeInt(1)
   m:writeInt(3); m:writeChar('V 1'); m:writeInt(#'serspec.NoSuchClass'); m:writeChar('serspec.NoSuchClass')
   -- the field table {w = 3}, index 2
   m:writeInt(3); m:writeInt(2); m:writeInt(1)
   m:writeInt(2); m:writeInt(1); m:writeChar('w'); m:writeInt(1); m:writeDouble(3)
   m:seek(1)
   local o = m:readObject()
   spec.eq(torch.typename(o), 'serspec.NoSuchClass')
   spec.eq(o.w, 3)
   local again = torch.deserialize(torch.serialize(o))
   spec.eq(torch.typename(again), 'serspec.NoSuchClass')
   spec.eq(again.w, 3)
end

function T.functions_with_upvalues()
   for _, fmt in ipairs(formats) do
      local counter = 10
      local shared = {hits = 0}
      local function inc(n) counter = counter + n; shared.hits = shared.hits + 1; return counter end
      local function get() return counter end
      local o = roundtrip({inc = inc, get = get, shared = shared, plain = function(a, b) return a * b + 1 end}, fmt)
      spec.eq(o.plain(3, 4), 13)
      spec.eq(o.inc(5), 15)
      -- inc and get shared the upvalue `counter`: still shared after loading
      spec.eq(o.get(), 15)
      spec.eq(o.shared.hits, 1)
      spec.eq(shared.hits, 0)
      local rec
      rec = function(n) if n <= 1 then return 1 end return n * rec(n - 1) end
      local r = roundtrip(rec, fmt)
      spec.eq(r(5), 120)
   end
   -- functions can be refused
   local s = torch.serialize(function() return 1 end)
   spec.raises(function() torch.deserialize(s, 'binary', true, {functions = false}) end,
               'reading functions is disabled')
end

function T.unwritable_objects_raise()
   spec.raises(function() torch.serialize({co = coroutine.create(function() end)}) end, 'Unwritable object <thread>')
   spec.raises(function() torch.serialize(print) end, 'Unwritable object <function>')
end

function T.disk_file_primitives_and_save_load()
   local path = os.tmpname()
   for _, fmt in ipairs(formats) do
      local f = torch.DiskFile(path, 'w')
      f[fmt](f)
      spec.eq(f:isBinary(), fmt == 'binary')
      spec.eq(f:writeInt(-7), 1)
      f:writeShort(torch.ShortStorage({1, -2, 3}))
      f:writeLong(2 ^ 40)
      f:writeByte(255)
      f:writeDouble(1 / 3)
      f:writeFloat(0.5)
      f:writeString('tail')
      f:close()
      assert(not f:isOpen())
      local g = torch.DiskFile(path, 'r')
      g[fmt](g)
      spec.eq(g:readInt(), -7)
      local s = g:readShort(3)
      spec.eq(torch.typename(s), 'torch.ShortStorage'); spec.eq(s[2], -2)
      spec.eq(g:readLong(), 2 ^ 40)
      spec.eq(g:readByte(), 255)
      spec.eq(g:readDouble(), 1 / 3)
      spec.eq(g:readFloat(), 0.5)
      spec.eq(g:readString('*a'), 'tail')
      -- reading past the end: an error naming the offset, or hasError when quiet
      local at = g:position()  -- 1-based, as Torch7; error messages give 0-based byte offsets
      spec.raises(function() g:readInt() end, 'at byte ' .. (at - 1))
      g:quiet()
      g:readInt()
      assert(g:hasError())
      g:clearError()
      assert(not g:hasError())
      g:seek(1)
      spec.eq(g:readInt(), -7)
      g:seekEnd()
      spec.eq(g:position(), at)
      g:close()
      local obj = {t = torch.IntTensor({{1, 2}, {3, 4}}), name = 'x'}
      torch.save(path, obj, fmt)
      local back = torch.load(path, fmt)
      sameTensor(obj.t, back.t); spec.eq(back.name, 'x')
   end
   spec.eq(torch.DiskFile('/nonexistent/dir/file', 'r', true), nil)
   spec.raises(function() torch.DiskFile('/nonexistent/dir/file', 'r') end, 'cannot open')
   spec.raises(function() torch.save(path, 1, 'text') end, 'format must be')
   os.remove(path)
end

function T.rw_disk_file_and_write_errors()
   local path = os.tmpname()
   local f = torch.DiskFile(path, 'rw'):binary()
   f:writeInt(1); f:writeInt(2)
   f:seek(1)
   spec.eq(f:readInt(), 1)
   f:writeInt(5)
   f:seek(5)
   spec.eq(f:readInt(), 5)
   f:close()
   local r = torch.DiskFile(path, 'r')
   spec.raises(function() r:writeInt(1) end, 'read-only')
   r:close()
   spec.raises(function() r:readInt() end, 'closed file')
   os.remove(path)
end

function T.memory_file_storage_is_nul_terminated()
   local m = torch.MemoryFile()
   m:writeString('abc')
   local s = m:storage()
   spec.eq(s:size(), 4)
   spec.eq(s[4], 0)
   spec.raises(function() torch.MemoryFile(torch.CharStorage('abc')) end, 'terminated by 0')
   local r = torch.MemoryFile(torch.CharStorage('12 34\0'), 'r')
   spec.eq(r:readInt(), 12); spec.eq(r:readInt(), 34)
   spec.raises(function() r:writeInt(1) end, 'read-only')
   -- serializeToStorage / deserializeFromStorage
   local st = torch.serializeToStorage({1, 2})
   spec.eq(torch.deserializeFromStorage(st)[2], 2)
end

function T.long_size_4_files()
   local m = torch.MemoryFile():binary():longSize(4)
   m:writeObject(torch.LongTensor({{5, -6, 7}}))
   local s = m:storage():string():sub(1, -2)
   local t = torch.deserialize(s, 'b32')
   spec.eq(t[1][2], -6)
   -- the same bytes read as 8-byte longs are garbage, but still a clean error
   local ok, err = pcall(torch.deserialize, s, 'b64')
   assert(not ok and tostring(err):find('at byte', 1, true), tostring(err))
end

function T.tds_vec_and_hash()
   local tds = require 'tds'
   local v = tds.Vec({1, 'two', {3}})
   spec.eq(#v, 3); spec.eq(v[2], 'two')
   v[4] = 4
   v:insert(1, 0)
   spec.eq(#v, 5); spec.eq(v[1], 0); spec.eq(v:remove(), 4)
   local seen = 0
   for i, x in v:ipairs() do seen = seen + 1; assert(v[i] == x) end
   spec.eq(seen, 4)
   local h = tds.Hash({a = 1})
   h.b = 2; h[3] = v; h.a = nil
   spec.eq(#h, 2)
   for _, fmt in ipairs(formats) do
      local o = roundtrip({h = h, v = v, v2 = v}, fmt)
      spec.eq(torch.typename(o.h), 'tds.Hash')
      spec.eq(#o.h, 2); spec.eq(o.h.b, 2)
      assert(o.h[3] == o.v and o.v == o.v2, 'references inside tds')
      spec.eq(#o.v, 4); spec.eq(o.v[3], 'two'); spec.eq(o.v[4][1], 3)
   end
   spec.raises(function() v[10] = 1 end, 'out of range')
   -- version 0, as the real tds
   assert(torch.serialize(v):find('V 0', 1, true))
end

return T
