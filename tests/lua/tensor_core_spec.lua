-- Core Tensor/Storage semantics (construction, geometry, views).
local spec = require 'spec'
local T = {}

function T.default_type_is_double()
   spec.eq(torch.getdefaulttensortype(), 'torch.DoubleTensor')
   spec.eq(torch.typename(torch.Tensor()), 'torch.DoubleTensor')
   torch.setdefaulttensortype('torch.FloatTensor')
   spec.eq(torch.typename(torch.Tensor(2)), 'torch.FloatTensor')
   spec.eq(torch.typename(torch.Storage(2)), 'torch.FloatStorage')
end

function T.longstorage_sizes_constructor()
   local t = torch.DoubleTensor(torch.LongStorage{2, 3})
   spec.eq(t:dim(), 2)
   spec.eq(t:size(2), 3)
   local u = torch.FloatTensor(torch.LongStorage{2, 3}, torch.LongStorage{1, 2})
   spec.eq(u:stride(1), 1)
   spec.eq(u:stride(2), 2)
   spec.eq(u:storage():size(), 6)
   -- for a LongTensor a LongStorage is the storage form, as Torch7
   local l = torch.LongTensor(torch.LongStorage{4, 5, 6})
   spec.eq(l:dim(), 1)
   spec.eq(l[3], 6)
end

function T.zero_size_ends_dimensions()
   spec.eq(torch.Tensor(0):dim(), 0)
   spec.eq(torch.Tensor(3, 0):dim(), 1)
   spec.eq(torch.Tensor():nElement(), 0)
end

function T.views_share_storage()
   local t = torch.FloatTensor(4, 5):zero()
   local n = t:narrow(2, 2, 3)
   n:fill(1)
   spec.eq(t[1][2], 1)
   spec.eq(t[1][1], 0)
   spec.eq(n:isContiguous(), false)
   local s = t:select(1, 2)
   spec.eq(s:dim(), 1)
   spec.eq(s:size(1), 5)
   spec.eq(t:storageOffset(), 1)
   spec.eq(s:storageOffset(), 6)
   spec.eq(torch.pointer(t:storage()), torch.pointer(n:storage()))
end

function T.table_constructor_and_indexing()
   local t = torch.DoubleTensor({{1, 2, 3}, {4, 5, 6}})
   spec.eq(t:size(1), 2)
   spec.eq(t[2][3], 6)
   t[2][3] = 9
   spec.eq(t:t()[3][2], 9)
   spec.eq(t[-1][1], 4)
   spec.raises(function() return torch.Tensor({{1, 2}, {3}}) end, 'inconsistent table sizes')
end

function T.longstorage_element_index()
   local t = torch.IntTensor({{1, 2, 3}, {4, 5, 6}}):t()
   spec.eq(t[torch.LongStorage{3, 2}], 6)
   t[torch.LongStorage{1, 2}] = 40
   spec.eq(t[1][2], 40)
   spec.raises(function() return t[torch.LongStorage{4, 1}] end, 'out of range')
   spec.raises(function() return t[torch.LongStorage{1}] end, '1 indices for a 2D tensor')
end

function T.expand_and_view()
   local t = torch.Tensor({1, 2, 3}):view(3, 1)
   local e = t:expand(3, 4)
   spec.eq(e:stride(2), 0)
   spec.eq(e[3][4], 3)
   local v = torch.Tensor(2, 6):view(3, -1)
   spec.eq(v:size(2), 4)
   spec.raises(function() torch.Tensor(2, 3):t():view(6) end, 'not contiguous')
   spec.raises(function() torch.Tensor(2, 3):view(4) end, 'size mismatch')
end

function T.unfold_like_torch7()
   local t = torch.Tensor({1, 2, 3, 4, 5, 6, 7})
   local u = t:unfold(1, 2, 2)
   spec.eq(u:size(1), 3)
   spec.eq(u:size(2), 2)
   spec.eq(u[3][2], 6)
end

function T.copy_between_types()
   local d = torch.DoubleTensor({1.7, -2.2, 300})
   local i = torch.IntTensor(3):copy(d)
   spec.eq(i[1], 1)
   spec.eq(i[2], -2)
   local b = torch.ByteTensor(3):copy(torch.IntTensor({1, 2, 255}))
   spec.eq(b[3], 255)
   spec.raises(function() torch.FloatTensor(2):copy(torch.FloatTensor(3)) end, 'inconsistent tensor size')
end

function T.storage_basics()
   local s = torch.LongStorage({3, 4, 5})
   spec.eq(#s, 3)
   spec.eq(s[2], 4)
   s[2] = 7
   spec.eq(s:totable()[2], 7)
   spec.raises(function() return s[4] end, 'out of bounds')
   local v = torch.LongStorage(s, 2, 2)
   v[1] = 11
   spec.eq(s[2], 11)
end

function T.classes()
   local A = torch.class('specns.A')
   function A:__init(x) self.x = x end
   local B, parent = torch.class('specns.B', 'specns.A')
   function B:__init(x) parent.__init(self, x * 2) end
   local b = specns.B(3)
   spec.eq(b.x, 6)
   spec.eq(torch.typename(b), 'specns.B')
   spec.eq(torch.isTypeOf(b, 'specns.A'), true)
   spec.eq(torch.isTypeOf(b, specns.A), true)
   spec.eq(torch.isTypeOf(specns.A(1), 'specns.B'), false)
   local raw = torch.factory('specns.B')()
   spec.eq(raw.x, nil)
   spec.eq(torch.typename(raw), 'specns.B')
end

function T.class_metamethods_forward_to_methods()
   local C = torch.class('specns.Callable')
   function C:__call__(x) return x * 2 end
   function C:__tostring__() return 'callable!' end
   local c, d = specns.Callable(), specns.Callable()
   spec.eq(c(21), 42)
   spec.eq(tostring(c), 'callable!')
   spec.eq(c == c, true)
   spec.eq(c == d, false)
   local P = torch.class('specns.Plain')
   spec.eq(tostring(specns.Plain()), 'specns.Plain')
   spec.raises(function() return specns.Plain()() end, 'attempt to call')
end

function T.unknown_class_placeholder_gives_way()
   local ph = torch._unknownclass('specns.Later')
   local obj = ph.__factory()
   spec.eq(torch.typename(obj), 'specns.Later')
   local Later = torch.class('specns.Later')
   spec.eq(torch.typename(specns.Later()), 'specns.Later')
   spec.raises(function() torch.class('specns.Later') end, 'already assigned')
end

function T.file_positions_start_at_one()
   local f = torch.MemoryFile('rw'):binary()
   spec.eq(f:position(), 1)
   f:writeInt(7)
   spec.eq(f:position(), 5)
   f:seek(1)
   spec.eq(f:readInt(), 7)
   spec.raises(function() f:seek(0) end, 'positions start at 1')
end

return T
