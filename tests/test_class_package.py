"""class: Torch's object system for plain Lua tables (`require 'class'`), as CycleGAN uses it for its models and
data loaders. Checked against what its documentation promises: constructors callable and with .new, __init run (and
not by factory), methods inherited along the chain and overridable, type names, istype along the inheritance
(and not across it), refusals of a repeated name and of an unknown parent, ffi ctypes registered as a class, and
argcheck rules that name these classes."""
import pytest

from pytorch_bridge import LuaError


def test_classes_inherit_construct_and_name_themselves(rt):
    got = rt.execute("""
        local class = require 'class'
        local Shape = class('Shape')
        function Shape:__init(name) self.name = name; self.inits = (self.inits or 0) + 1 end
        function Shape:describe() return self.name .. ' with ' .. self:corners() .. ' corners' end
        function Shape:corners() return 0 end
        local Square, parent = class('Square', 'Shape')
        function Square:__init(side) Shape.__init(self, 'square'); self.side = side end
        function Square:corners() return 4 end
        local Cube = class.new('Cube', 'Square')
        local s, q, c = Shape('blob'), Square.new(2), Cube(3)
        local bare = class.factory('Square')
        return {
           s:describe(), q:describe(), c:corners(), q.side, c.side == nil, q.inits,
           class.type(s), class.type(c), class.type({}), class.type(3), class.type('x'),
           class.istype(c, 'Shape'), class.istype(c, 'Square'), class.istype(q, 'Cube'), class.istype(s, 'Square'),
           class.istype(3, 'number'), class.istype({}, 'Shape'), class.istype(q, 'table'),
           parent == class.metatable('Shape'), getmetatable(q) == class.metatable('Square'),
           bare.side == nil and bare.inits == nil, bare:corners(),
           rawget(Square, 'corners') == nil,   -- the constructor table is a stand-in: methods live in the metatable
        }
    """)
    got = [got[i] for i in range(1, 24)]
    # (a class without an __init of its own gets an empty one, not its parent's: the original's rule)
    assert got[:6] == ["blob with 0 corners", "square with 4 corners", 4, 2, True, 1]
    assert got[6:11] == ["Shape", "Cube", "table", "number", "string"]
    assert got[11:18] == [True, True, False, False, True, False, False]
    assert got[18:23] == [True, True, True, 4, True]


def test_class_refuses_a_repeated_name_and_an_unknown_parent(rt):
    rt.execute("class = require 'class'; class('Once')")
    with pytest.raises(LuaError, match="class <Once> already exists"):
        rt.execute("class('Once')")
    with pytest.raises(LuaError, match="parent class <Nowhere> does not exist"):
        rt.execute("class('Orphan', 'Nowhere')")
    with pytest.raises(LuaError, match="unknown class <Never>"):
        rt.execute("class.factory('Never')")
    with pytest.raises(LuaError, match="class name"):
        rt.execute("class(42)")


def test_a_ctype_can_be_a_class(rt):
    got = rt.execute("""
        local ffi = require 'ffi'
        local class = require 'class'
        ffi.cdef 'typedef struct { double x, y; } test_class_point;'
        class.new('Point', nil, ffi.typeof('test_class_point'))
        local p = ffi.new('test_class_point')
        return class.type(p), class.istype(p, 'Point'), class.type(ffi.new('int[2]'))
    """)
    assert tuple(got) == ("Point", True, "cdata")


def test_argcheck_rules_accept_subclasses(rt):
    got = rt.execute("""
        local class = require 'class'
        local argcheck = require 'argcheck'
        local Animal = class('Animal')
        local Dog = class('Dog', 'Animal')
        local Rock = class('Rock')
        local pet = argcheck{{name = 'who', type = 'Animal'}, call = function(who) return class.type(who) end}
        local ok = pcall(pet, Rock())
        return pet(Dog()), pet(Animal()), ok
    """)
    assert tuple(got) == ("Dog", "Animal", False)
