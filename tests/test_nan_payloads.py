"""NaNs with a payload reach Lua as numbers.

LuaJIT NaN-tags its values: a double whose high word is 0xFFF90000 or more is not a number to it (nil, a
pointer, ...), and its FFI does not canonicalize doubles read from memory or returned by C. Torch7 pushed
numbers with lua_pushnumber, which canonicalizes NaN, so every element read, scalar result and callback
argument was a number. The elements here are written as int32 words through a MemoryFile and read back as
Float/Double/Half (Torch7's way of reinterpreting bytes); numpy's view of the same words is the oracle for
what each element is, and a tensor holding the canonical NaN (0/0) is the oracle for the method sweep.
"""
import math
import struct

import numpy as np
import pytest

# Bit patterns. BAD: not numbers to LuaJIT once read through the FFI (a float converts to a double keeping
# sign and payload). SAFE: NaNs LuaJIT reads as numbers, and non-NaN neighbours that must keep their value.
FLOAT_BAD = [0xFFFFFFFF, 0xFFC80000, 0xFFFFD123, 0xFF880001]
FLOAT_SAFE = [0xFFC00000, 0x7FC00000, 0x7FFFFFFF, 0xFF800001, 0xFFC7FFFF, 0xFF800000, 0x7F800000, 0xFF7FFFFF,
              0x3FC00000]
DOUBLE_BAD = [0xFFFFFFFFFFFFFFFF, 0xFFF9000000000000, 0xFFFD000000001234, 0xFFFFFFFFE0000000]
# 0xFFF1...: a signalling NaN LuaJIT reads as a number, but quieted by arithmetic it becomes 0xFFF9...
DOUBLE_SAFE = [0xFFF8000000000000, 0x7FF8000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFF1000000000000,
               0xFFF0000000000001, 0xFFF0000000000000, 0x7FF0000000000000, 0xFFEFFFFFFFFFFFFF,
               0x3FF8000000000000]
HALF_BAD = [0xFFFF, 0xFC40, 0xFE40, 0xFC41]
HALF_SAFE = [0xFE00, 0x7E00, 0xFC01, 0xFC00, 0x7C00, 0x3E00]

CASES = ([("Float", b) for b in FLOAT_BAD + FLOAT_SAFE] + [("Double", b) for b in DOUBLE_BAD + DOUBLE_SAFE])
BAD_CASES = [("Float", b) for b in FLOAT_BAD] + [("Double", b) for b in DOUBLE_BAD]
IDS = ["%s-%x" % c for c in CASES]
BAD_IDS = ["%s-%x" % c for c in BAD_CASES]

HELPERS = r"""
NP = {}
-- a <kind>Storage of n elements, each with these bits (int32 words, low word first), through a MemoryFile
function NP.storage(kind, words, n)
   local f = torch.MemoryFile():binary()
   for _ = 1, n do
      for _, w in ipairs(words) do f:writeInt(w >= 2^31 and w - 2^32 or w) end
   end
   f:seek(1)
   local s = f['read' .. kind](f, n)
   f:close()
   return s
end
-- what Lua sees: the type for anything but a number, 'nan' for a NaN, else the value. A value that
-- prints as a NaN but equals itself is one LuaJIT does not treat as a number (high word 0xFFF90000).
function NP.describe(v)
   local ty = type(v)
   if ty ~= 'number' then return ty end
   if v ~= v then return 'nan' end
   local text = string.format('%.17g', v)
   return text:find('nan') and 'a NaN equal to itself' or text
end
-- the type shape of a call's results, for the sweep: numbers are 'number', tensors their type name
function NP.shape(v, depth)
   local ty = type(v)
   if ty == 'table' and not torch.isTensor(v) and (depth or 0) < 2 then
      local parts = {}
      for i = 1, math.min(#v, 8) do parts[i] = NP.shape(v[i], (depth or 0) + 1) end
      return '{' .. table.concat(parts, ',') .. '}'
   end
   if ty == 'number' then return v ~= v and 'number:nan' or 'number' end
   if torch.isTensor(v) or torch.isStorage(v) then return torch.type(v) end
   return ty
end
"""


def words_of(kind, bits):
    if kind == "Double":
        return [bits & 0xFFFFFFFF, bits >> 32]
    if kind == "Half":
        return [bits]
    return [bits]


def numpy_value(kind, bits):
    """numpy's reading of the bits: 'nan', or the value as Lua's %.17g prints it."""
    dtype = {"Float": (np.uint32, np.float32), "Double": (np.uint64, np.float64), "Half": (np.uint16, np.float16)}
    v = float(np.array([bits], dtype[kind][0]).view(dtype[kind][1])[0])
    return "nan" if math.isnan(v) else "%.17g" % v


@pytest.fixture(scope="module")
def nrt():
    from pytorch_bridge import Runtime

    rt = Runtime()
    rt.execute(HELPERS)
    return rt


def lua_list(t):
    return [t[i] for i in range(1, len(t) + 1)]


def run(rt, code, kind, bits, n=4):
    """Run `code` (a function body with s, the <kind>Storage of n such elements, and kind) -> a Python list."""
    fn = rt.eval("function(kind, words, n) local s = NP.storage(kind, words, n) local D = NP.describe\n"
                 + code + "\nend")
    return lua_list(rt.call(fn, kind, rt.table_from(words_of(kind, bits)), n))


READS = r"""
local out = {}
local function add(name, v) out[#out + 1] = name .. '=' .. D(v) end
local t = torch[kind .. 'Tensor'](s)
add('s[i]', s[2])
add('t[i]', t[3])
add('t[{i}]', t[{4}])
add('t[LongStorage]', t[torch.LongStorage{1}])
add('t:storage()[i]', t:storage()[1])
add('s:totable()', s:totable()[1])
add('t:totable()', t:totable()[2])
local m = t:view(2, 2)
add('m[{i,j}]', m[{2, 1}])
add('m[i][j]', m[1][2])
add('m:t():totable()', m:t():totable()[2][1])
add('m:select()[i]', m:select(2, 2)[1])
t:clone():apply(function(x) add('apply', x) end)
t:clone():map(t, function(x, y) add('map.a', x); add('map.b', y) end)
t:clone():map2(t, t, function(x, y, z) add('map2.a', x); add('map2.b', y); add('map2.c', z) end)
local f = torch.MemoryFile():binary()
f['write' .. kind](f, s)
f:seek(1)
add('file:read' .. kind .. '()', f['read' .. kind](f))
f:close()
local a = torch.MemoryFile()   -- ascii: the element written as text and read back
a['write' .. kind](a, s)
a:seek(1)
add('ascii', a['read' .. kind](a))
a:close()
return out
"""


@pytest.mark.parametrize("kind,bits", CASES, ids=IDS)
def test_element_reads_are_numbers(nrt, kind, bits):
    want = numpy_value(kind, bits)
    got = run(nrt, READS, kind, bits)
    assert len(got) == 37   # 11 reads, apply 4, map 8, map2 12, binary and ascii files
    bad = [g for g in got if g.split("=", 1)[1] != want]
    assert not bad, "expected %s from every read: %s" % (want, bad)


REDUCTIONS = r"""
local out = {}
local function add(name, v) out[#out + 1] = name .. '=' .. D(v) end
local t = torch[kind .. 'Tensor'](s)
add('sum', t:sum()) add('prod', t:prod()) add('mean', t:mean()) add('max', t:max()) add('min', t:min())
add('var', t:var()) add('std', t:std()) add('norm', t:norm()) add('norm1', t:norm(1)) add('norm3', t:norm(3))
add('dist', t:dist(t:clone():zero())) add('dot', t:dot(t)) add('trace', t:view(2, 2):trace())
add('torch.sum', torch.sum(t)) add('torch.max', torch.max(t))
local v = t[1]
add('t[1] + 1', v + 1) add('-t[1]', -v) add('t[1] * 0', v * 0)
return out
"""


@pytest.mark.parametrize("kind,bits", BAD_CASES + [("Double", 0xFFF1000000000000)],
                         ids=BAD_IDS + ["Double-fff1000000000000"])
def test_reductions_and_arithmetic_give_nan_numbers(nrt, kind, bits):
    got = run(nrt, REDUCTIONS, kind, bits)
    assert len(got) == 18
    bad = [g for g in got if not g.endswith("=nan")]
    assert not bad, bad


def test_c_scalar_results_are_the_positive_quiet_nan(nrt):
    """The C scalar results are canonicalized in C: their bits, read as integers, are 0x7FF8000000000000."""
    fn = nrt.eval(r"""function(kind, words)
       local ffi = require 'ffi'
       local t = torch[kind .. 'Tensor'](NP.storage(kind, words, 4))
       local out, got = ffi.new('double[1]'), {}
       local function bits() return string.format('%016x', ffi.cast('uint64_t*', out)[0]) end
       for op = 0, 7 do
          if torch.C.lt_math_reduce_all(t._c, op, 2, 0, out) == 0 then got[#got + 1] = bits() end
       end
       assert(torch.C.lt_dot(t._c, t._c, out) == 0); got[#got + 1] = bits()
       assert(torch.C.lt_math_trace(t:view(2, 2)._c, out) == 0); got[#got + 1] = bits()
       return got
    end""")
    for kind, bits in BAD_CASES:
        got = lua_list(nrt.call(fn, kind, nrt.table_from(words_of(kind, bits))))
        assert len(got) >= 6
        assert set(got) == {"7ff8000000000000"}, (kind, hex(bits), got)


PRINT = r"""
local t = torch[kind .. 'Tensor'](s)
local out = {tostring(t), tostring(t:view(2, 2)), tostring(t:view(1, 2, 2)), tostring(s), t:view(2, 2):__tostring__()}
return out
"""


@pytest.mark.parametrize("kind,bits", BAD_CASES, ids=BAD_IDS)
def test_printing(nrt, kind, bits):
    got = run(nrt, PRINT, kind, bits)
    assert len(got) == 5
    for text in got:
        assert text.count("nan") == 4, text
    assert "[torch.%sTensor of size 2x2]" % kind in got[1]


CRITERIONS = r"""
require 'nn'
local out = {}
local x = torch[kind .. 'Tensor'](s)
local y = x:clone():fill(0.5)
for _, name in ipairs {'MSECriterion', 'AbsCriterion', 'SmoothL1Criterion', 'DistKLDivCriterion',
                       'SoftMarginCriterion', 'MarginCriterion', 'L1HingeEmbeddingCriterion'} do
   local c = nn[name]():type(torch.type(x))
   if name == 'L1HingeEmbeddingCriterion' then
      out[#out + 1] = name .. '=' .. D(c:forward({x:view(2, 2)[1], x:view(2, 2)[2]}, 1))
   else
      out[#out + 1] = name .. '=' .. D(c:forward(x, y))
   end
end
for _, name in ipairs {'ClassNLLCriterion', 'CrossEntropyCriterion', 'MultiMarginCriterion'} do
   local c = nn[name]():type(torch.type(x))
   out[#out + 1] = name .. '=' .. D(c:forward(x:view(2, 2), torch.LongTensor{1, 2}))
end
return out
"""


@pytest.mark.parametrize("kind,bits", BAD_CASES, ids=BAD_IDS)
def test_criterion_losses_are_nan_numbers(nrt, kind, bits):
    got = run(nrt, CRITERIONS, kind, bits)
    assert len(got) == 10
    # the margin criterions take max(0, margin - x * y) as TH did, which drops a NaN: a number all the same
    bad = [g for g in got if not (g.endswith("=nan") or g in ("MarginCriterion=0", "MultiMarginCriterion=0"))]
    assert not bad, bad


@pytest.mark.parametrize("bits", HALF_BAD + HALF_SAFE, ids=["%x" % b for b in HALF_BAD + HALF_SAFE])
def test_half_reads(nrt, bits):
    want = numpy_value("Half", bits)
    fn = nrt.eval(r"""function(bits)
       local D, out = NP.describe, {}
       local f = torch.MemoryFile():binary()
       for _ = 1, 4 do f:writeShort(bits >= 2^15 and bits - 2^16 or bits) end
       f:seek(1)
       local s = f:readHalf(4)
       f:seek(1)
       out[#out + 1] = D(f:readHalf())
       f:close()
       local t = torch.HalfTensor(s)
       out[#out + 1] = D(s[1]); out[#out + 1] = D(t[2]); out[#out + 1] = D(t[torch.LongStorage{3}])
       out[#out + 1] = D(s:totable()[4]); out[#out + 1] = D(t:totable()[1]); out[#out + 1] = D(t:view(2, 2)[2][2])
       local a = torch.MemoryFile()
       a:writeHalf(s); a:seek(1); out[#out + 1] = D(a:readHalf()); a:close()
       assert(tostring(t):find('[torch.HalfTensor of size 4]', 1, true))
       return out
    end""")
    got = lua_list(nrt.call(fn, bits))
    assert got == [want] * 8


def sweep_shapes(rt, kind, words, methods):
    fn = rt.eval(r"""function(kind, words, methods, shape)
       local out = {}
       for _, name in ipairs(methods) do
          local t = torch[kind .. 'Tensor'](NP.storage(kind, words, 4))
          if shape == 2 then t = t:view(2, 2) end
          local r = {pcall(t[name], t)}
          local parts = {}
          if not r[1] then parts[1] = 'error'
          else for i = 2, #r do parts[#parts + 1] = NP.shape(r[i]) end end
          out[#out + 1] = name .. ':' .. table.concat(parts, ' ')
       end
       return out
    end""")
    res = []
    for shape in (1, 2):
        res += lua_list(rt.call(fn, kind, rt.table_from(words), rt.table_from(methods), shape))
    return res


# methods that change reference counts or need a file or a device: not called by the sweep
SWEEP_SKIP = {"free", "retain", "read", "write", "cuda", "apply", "map", "map2"}


@pytest.mark.parametrize("kind", ["Float", "Double"])
def test_every_method_sweep_matches_the_canonical_nan(nrt, kind):
    """Every tensor method called with no extra argument: the results' types with payload NaNs are those with
    0/0 (a number stays a number)."""
    methods = sorted(name for name in lua_list(nrt.eval("""(function(kind)
       local names = {}
       for k, v in pairs(torch.getmetatable('torch.' .. kind .. 'Tensor')) do
          if type(v) == 'function' and type(k) == 'string' and not k:find('^__') then names[#names + 1] = k end
       end
       names[#names + 1] = '__tostring__'
       return names end)('%s')""" % kind)) if name not in SWEEP_SKIP)
    assert len(methods) > 150
    canonical = {"Float": [0xFFC00000], "Double": [0, 0xFFF80000]}[kind]
    want = sweep_shapes(nrt, kind, canonical, methods)
    assert sum("number:nan" in w for w in want) > 15
    for bits in [b for k, b in BAD_CASES if k == kind]:
        got = sweep_shapes(nrt, kind, words_of(kind, bits), methods)
        diff = [(w, g) for w, g in zip(want, got) if w != g]
        assert not diff, (hex(bits), diff)


def test_python_sees_floats(nrt):
    """Lua numbers that lupa hands to Python are floats (NaN), for elements, C scalar results and tensors
    viewing numpy memory that holds payload NaNs."""
    fn = nrt.eval("function(t) return t[1], t:storage()[2], t:sum(), t:max(), t:totable() end")
    for kind, dtype, ints in (("Float", np.float32, np.uint32), ("Double", np.float64, np.uint64)):
        for bits in [b for k, b in BAD_CASES if k == kind]:
            a = np.full(4, bits, ints).view(dtype)
            t = nrt.from_numpy(a)
            e, s, total, mx, table = nrt.call(fn, t)
            values = [e, s, total, mx] + lua_list(table)
            assert all(isinstance(v, float) and math.isnan(v) for v in values), (kind, hex(bits), values)
            # the tensor is a view: the bytes themselves are unchanged by the reads
            assert np.array_equal(a.view(ints), np.full(4, bits, ints))


def test_struct_oracle_agrees_with_numpy():
    """The oracle's own check: the BAD patterns are NaNs with the sign bit set and a payload in the high word
    that LuaJIT's tagging reads as another type (itype >= 0xFFFFFFF2 once widened to double)."""
    for bits in DOUBLE_BAD:
        hi = bits >> 32
        assert math.isnan(struct.unpack("<d", struct.pack("<Q", bits))[0]) and hi >= 0xFFF90000
    widen = np.errstate(invalid="ignore")   # numpy warns when a signalling NaN is quieted
    widen.__enter__()
    for bits in FLOAT_BAD:
        d = np.array([bits], np.uint32).view(np.float32).astype(np.float64).view(np.uint64)[0]
        assert int(d) >> 32 >= 0xFFF90000, hex(bits)
    for bits in FLOAT_SAFE:
        d = np.array([bits], np.uint32).view(np.float32).astype(np.float64).view(np.uint64)[0]
        assert int(d) >> 32 < 0xFFF90000, hex(bits)
    widen.__exit__(None, None, None)
