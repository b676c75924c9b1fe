"""Functions in .t7 files written by a standard Torch7 install on LuaJIT 2.1: bytecode version 2 without the
FR2 (GC64) flag, which this GC64 VM cannot run. Like LuaJIT 2.0 dumps, they are compiled again from their
source when the dump names it, else loaded as stubs that raise when called; re-saving keeps their bytes."""
import pytest

from pytorch_bridge import LuaError

# `foreign(src, strip)`: the bytes of a file holding src's function, with the FR2 flag of its dump flipped:
# what the other kind of LuaJIT 2.1 build writes
FOREIGN = r"""
local function foreign(src, strip)
   local bytes = torch.serialize(loadstring(src)())
   local at = assert(bytes:find('\27LJ\2', 1, true), 'no LuaJIT 2.1 dump in the file')
   local flags = bytes:byte(at + 4)
   if strip then flags = bit.bor(flags, 2) end   -- BCDUMP_F_STRIP: no chunk name, so no source to compile
   return bytes:sub(1, at + 3) .. string.char(bit.bxor(flags, 8)) .. bytes:sub(at + 5)
end
local SRC = "local base = 41\nreturn function(x) return x + base end"
-- the dump inside file bytes (its int32 length stands just before it)
local function dumpOf(bytes)
   local at = assert(bytes:find('\27LJ', 1, true))
   local b1, b2, b3, b4 = bytes:byte(at - 4, at - 1)
   return bytes:sub(at, at + b1 + 256 * (b2 + 256 * (b3 + 256 * b4)) - 1)
end
"""


def run(rt, body):
    return rt.execute(FOREIGN + body)


def test_luajit21_without_gc64_is_compiled_again_from_source(rt):
    value, same_bytes = run(rt, """
        local data = foreign(SRC, false)
        local f = torch.deserialize(data)
        return f(1), dumpOf(torch.serialize(f)) == dumpOf(data)""")
    assert value == 42      # the upvalue `base` came back from the file too
    assert same_bytes       # a re-save writes the foreign bytecode as it was


def test_luajit21_without_gc64_and_no_source_is_a_stub(rt):
    ok, msg, same_bytes = run(rt, """
        local data = foreign(SRC, true)
        local f = torch.deserialize(data)
        local ok, msg = pcall(f, 1)
        return ok, msg, dumpOf(torch.serialize(f)) == dumpOf(data)""")
    assert not ok and "LuaJIT 2.1 bytecode of a build without GC64" in msg, msg
    assert same_bytes


def test_foreign_bytecode_refused_when_functions_are_off(rt):
    with pytest.raises(LuaError, match="reading functions is disabled"):
        run(rt, "return torch.deserialize(foreign(SRC, false), 'binary', true, {functions = false})")
