"""Fuzzing both .t7 readers: mutated files (bit flips, byte changes,
truncation, insertion, deletion, huge length fields) must either load or
raise a clean error naming a byte offset — never crash, hang or allocate
without bound. The Lua side runs its loop inside Lua (one Runtime) and
refuses functions (LuaJIT does not verify bytecode)."""
import os
import struct
import time

import numpy as np
import pytest

import t7_cases as cases
from pytorch_bridge import t7

N_MUTANTS = 12000

# A corpus written by the Lua side: every tensor type, views, shared
# storages, nested tables with cycles, classes, tds; binary and ascii.
CORPUS_LUA = r"""
local tds = require 'tds'
local out = {}
local function add(obj)
   -- as ByteTensors: lupa would decode Lua strings as UTF-8
   for _, fmt in ipairs {'binary', 'ascii'} do
      out[#out + 1] = {torch.ByteTensor(torch.ByteStorage(torch.serialize(obj, fmt))), fmt}
   end
end
local base = torch.DoubleTensor(3, 4)
for i = 1, 3 do for j = 1, 4 do base[i][j] = i * 10 + j + 0.5 end end
for _, tn in ipairs {'Byte', 'Char', 'Short', 'Int', 'Long', 'Float', 'Double'} do
   add(base[tn:lower()](base))
end
add({base, base:t(), base:narrow(2, 2, 2), base:storage(), n = 1, s = 'str'})
local t = {1, 2, {3, {4, x = 'y'}}, flag = true}
t.me = t
t[t[3]] = t
add(t)
torch.class('fuzz.Obj')
local o = torch.factory('fuzz.Obj')()
o.weight = torch.FloatTensor(2, 3):fill(0.25)
o.child = torch.factory('fuzz.Obj')()
o.child.parent = o
add({o, o, tds.Vec({1, 'two', o}), tds.Hash({a = 1, [2] = base})})
add(torch.LongTensor({{1, -2}, {3, 4}}):t())
return out
"""


def lua_corpus(rt, fmt=None):
    """[(bytes, format)] written by the Lua side."""
    res = rt.execute(CORPUS_LUA)
    out = [(rt.to_numpy(res[i + 1][1]).tobytes(), res[i + 1][2]) for i in range(len(res))]
    return [c for c in out if fmt is None or c[1] == fmt]


def real_corpus():
    if cases.T7_DIR is None:
        return []
    return [cases.real(n) for n in sorted(os.listdir(cases.T7_DIR)) if n.endswith(".t7")]


HUGE = [0x7FFFFFFF, -1, -0x80000000, 0x40000000, 0x10000, 17, 0]


def mutate(data, rng):
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 7))
        n = len(b)
        if n == 0:
            b += bytes(rng.integers(0, 256, size=4, dtype=np.uint8))
            continue
        i = int(rng.integers(0, n))
        if op == 0:  # bit flip
            b[i] ^= 1 << int(rng.integers(0, 8))
        elif op == 1:  # byte change
            b[i] = int(rng.integers(0, 256))
        elif op == 2:  # truncation
            del b[i:]
        elif op == 3:  # insertion
            b[i:i] = bytes(rng.integers(0, 256, size=int(rng.integers(1, 9)), dtype=np.uint8))
        elif op == 4:  # deletion
            del b[i:i + int(rng.integers(1, 9))]
        elif op == 5 and n >= 4:  # a huge (or negative) int32 length at an aligned spot
            j = (i // 4) * 4
            if j + 4 <= n:
                b[j:j + 4] = struct.pack("<i", HUGE[int(rng.integers(0, len(HUGE)))])
        elif op == 6 and n >= 8:  # a huge int64 (sizes, strides, storage sizes)
            j = (i // 4) * 4
            if j + 8 <= n:
                b[j:j + 8] = struct.pack("<q", [1 << 62, -5, 1 << 40, 0x7FFFFFFFFFFFFFFF][int(rng.integers(0, 4))])
    return bytes(b)


def mutants(corpus, rng, n):
    return [mutate(corpus[int(rng.integers(0, len(corpus)))], rng) for _ in range(n)]


FUZZ_LUA = r"""
return function(inputs, fmts)
   local bad, loaded, failed, worst = {}, 0, 0, 0
   local clock = os.clock
   for i = 1, #inputs do
      local t0 = clock()
      local ok, err = pcall(torch.deserialize, inputs[i], fmts[i], true, {functions = false})
      local dt = clock() - t0
      if dt > worst then worst = dt end
      if ok then
         loaded = loaded + 1
      else
         failed = failed + 1
         local msg = tostring(err)
         if not msg:find('at byte %d+') then
            bad[#bad + 1] = i .. ': ' .. msg:sub(1, 300)
         end
      end
   end
   return loaded, failed, worst, table.concat(bad, '\n')
end
"""


@pytest.mark.slow
def test_fuzz_lua_reader(rt, rng):
    items = lua_corpus(rt) + [(c, "binary") for c in real_corpus()]
    corpus = [c for c, _ in items]
    fmts = [f for _, f in items]
    fuzz = rt.execute(FUZZ_LUA)
    total_loaded = total_failed = 0
    worst = 0.0
    t0 = time.time()
    for _ in range(N_MUTANTS // 2000):
        idx = [int(rng.integers(0, len(corpus))) for _ in range(2000)]
        inputs = [mutate(corpus[i], rng) for i in idx]
        loaded, failed, w, bad = rt.call(fuzz, rt.table(*inputs), rt.table(*[fmts[i] for i in idx]))
        assert not bad, "errors without a byte offset:\n" + bad
        total_loaded += loaded
        total_failed += failed
        worst = max(worst, w)
    elapsed = time.time() - t0
    print("lua fuzz: %d loaded, %d refused, %.1f s, slowest input %.3f s" % (total_loaded, total_failed,
                                                                             elapsed, worst))
    assert total_loaded + total_failed >= 10000
    assert total_failed > 1000 and total_loaded > 100  # the mutations exercise both outcomes
    assert worst < 2.0


@pytest.mark.slow
def test_fuzz_python_reader(rt, rng):
    corpus = [c for c, _ in lua_corpus(rt, "binary")] + real_corpus()
    loaded = failed = 0
    worst = 0.0
    t0 = time.time()
    for data in mutants(corpus, rng, N_MUTANTS):
        s = time.time()
        try:
            t7.loads(data)
            loaded += 1
        except t7.T7Error as e:
            assert "at byte" in str(e), str(e)
            failed += 1
        worst = max(worst, time.time() - s)
    elapsed = time.time() - t0
    print("python fuzz: %d loaded, %d refused, %.1f s, slowest input %.3f s" % (loaded, failed, elapsed, worst))
    assert loaded + failed >= 10000
    assert failed > 1000 and loaded > 100
    assert worst < 2.0


def test_fuzz_smoke(rt, rng):
    """A few hundred mutants of each reader in the default (fast) run."""
    corpus = [c for c, _ in lua_corpus(rt, "binary")] + real_corpus()
    inputs = mutants(corpus, rng, 300)
    fuzz = rt.execute(FUZZ_LUA)
    _, _, _, bad = rt.call(fuzz, rt.table(*inputs), rt.table(*["binary"] * len(inputs)))
    assert not bad, bad
    for data in inputs:
        try:
            t7.loads(data)
        except t7.T7Error as e:
            assert "at byte" in str(e)


@pytest.mark.slow
def test_fuzz_luajit20_functions(rt, rng):
    """Mutated Torch7 function files with functions allowed: their LuaJIT 2.0
    bytecode is never loaded (this VM reads only version 2), only its chunk
    name and prototype headers are parsed to recompile the source; keep the
    version byte at 1 so that no mutant reaches LuaJIT's loader."""
    corpus = [c for c in real_corpus() if c[:4] == b"\x08\x00\x00\x00"]
    if not corpus:
        pytest.skip("no function files")
    fuzz = rt.execute(FUZZ_LUA.replace("{functions = false}", "{functions = true}"))
    inputs = []
    for _ in range(3000):
        m = bytearray(mutate(corpus[int(rng.integers(0, len(corpus)))], rng))
        if len(m) > 15 and m[12:15] == b"\x1bLJ":
            m[15] = 1
        elif len(m) > 15:
            m[12:16] = b"\x1bLJ\x01"
        inputs.append(bytes(m))
    loaded, failed, worst, bad = rt.call(fuzz, rt.table(*inputs), rt.table(*["binary"] * len(inputs)))
    assert not bad, bad
    assert loaded + failed == 3000 and worst < 2.0
