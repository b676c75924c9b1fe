"""The Lua side of .t7 serialization against real Torch7-written files, an
independent reader (PyPI torchfile), and hostile input. Round trips inside
Lua are in tests/lua/serialization_spec.lua."""
import os

import numpy as np
import pytest

import t7_cases as cases
from pytorch_bridge import LuaError

torchfile = pytest.importorskip("torchfile")

TYPES = {"Byte": np.uint8, "Char": np.int8, "Short": np.int16, "Int": np.int32, "Long": np.int64,
         "Float": np.float32, "Double": np.float64}


def t7path(name):
    cases.real(name)  # skips when the data is absent
    return os.path.join(cases.T7_DIR, name)


def lua_bytes(rt, fn, *args):
    """Call a Lua function that returns a (binary) string; give it as bytes."""
    wrap = rt.eval("function(f, ...) local s = f(...); return torch.ByteTensor(torch.ByteStorage(s)), #s end")
    t, n = rt.call(wrap, fn, *args)
    return rt.to_numpy(t).tobytes() if n else b""


RESAVE = "function(p) return torch.serialize(torch.load(p)) end"


def test_real_files_values(rt):
    check = rt.eval("""function(dir)
       local spec = require 'spec'
       local function L(n) return torch.load(dir .. '/' .. n) end
       spec.eq(L('hello=123.t7').hello, 123)
       local d = L('doubletensor.t7')
       spec.eq(torch.typename(d), 'torch.DoubleTensor')
       spec.tensorEq(d, torch.DoubleTensor({{1, 2, 3}, {4, 5, 6.9}}))
       local f = L('floattensor.t7')
       spec.eq(torch.typename(f), 'torch.FloatTensor')
       spec.eq(f:dim(), 3); spec.eq(f:size(1), 2); spec.eq(f:size(2), 3); spec.eq(f:size(3), 4)
       local sum = 0
       for i = 0, 23 do sum = sum + f:storage()[i + 1] end
       spec.near(sum, 12.97241666913, 1e-9)
       local l = L('list_table.t7')
       spec.eq(#l, 4); spec.eq(l[1], 'hello'); spec.eq(l[3], 'third item'); spec.eq(l[4], 123)
       local m1 = L('map_table1.t7')
       spec.eq(m1[0], 'zero'); spec.eq(m1[2], 'world'); spec.eq(m1[4], 123)
       local m2 = L('map_table2.t7')
       spec.eq(m2.a, 'non number key'); spec.eq(m2[1], 'hello'); spec.eq(#m2, 4)
       local c = L('custom_class.t7')
       spec.eq(torch.typename(c), 'Blah'); spec.eq(next(c), nil)
       local r = L('recursive_class.t7')
       spec.eq(torch.typename(r), 'A'); assert(r.a == r, 'obj.a == obj')
       local kv = L('recursive_kv_table.t7')
       local k, v = next(kv)
       assert(k == kv and v == kv and next(kv, k) == nil, 'key and value are the table itself')
       local vec = L('tds_vec.t7')
       spec.eq(torch.typename(vec), 'tds.Vec'); spec.eq(#vec, 2); spec.eq(vec[1], 123); spec.eq(vec[2], 456)
       local h = L('tds_hash.t7')
       spec.eq(torch.typename(h), 'tds.Hash'); spec.eq(#h, 3)
       spec.eq(h[1], 2); spec.eq(h[2], 3); spec.eq(h[10], 11)
       local n = 0
       for key, val in h:pairs() do n = n + 1; spec.eq(val, key + 1) end
       spec.eq(n, 3)
       local node = L('nngraph_node.t7')
       spec.eq(torch.typename(node), 'nngraph.Node')
       assert(node.data and node.children, 'node fields')
       local g = L('gmodule_with_linear_identity.t7')
       spec.eq(torch.typename(g), 'nn.gModule')
       local names, linear = {}, nil
       for _, mod in ipairs(g.modules) do
          names[#names + 1] = torch.typename(mod)
          if torch.typename(mod) == 'nn.Linear' then linear = mod end
       end
       table.sort(names)
       spec.eq(table.concat(names, ','), 'nn.CAddTable,nn.Identity,nn.Identity,nn.Linear')
       spec.eq(torch.typename(linear.weight), 'torch.DoubleTensor')
       spec.eq(linear.weight:size(1), 2); spec.eq(linear.weight:size(2), 1)
       spec.eq(linear.bias:size(1), 2)
       assert(g.innode and g.outnode, 'graph nodes')
       -- Torch7's functions are LuaJIT 2.0 bytecode, which LuaJIT 2.1 cannot
       -- load: they are compiled again from the source their dump names
       local fn = L('function.t7')
       spec.eq(fn(3, 4), 6)   -- function(a,b) return a+b-1 end
       local up = L('function_upvals.t7')
       spec.eq(up(), 124)     -- local asdf = 123; function f() return asdf+1 end
       spec.eq(debug.getupvalue(up, 1), 'asdf')
    end""")
    rt.call(check, cases.T7_DIR or t7path("hello=123.t7"))


@pytest.mark.parametrize("name", cases.BYTE_EXACT)
def test_real_files_resave_byte_exact(rt, name):
    data = cases.real(name)
    assert lua_bytes(rt, rt.eval(RESAVE), t7path(name)) == data


def test_real_files_load_ascii_resave(rt, tmp_path):
    # every real file re-saved in ascii loads back to the same binary bytes
    fn = rt.eval("""function(p, q)
        local o = torch.load(p)
        torch.save(q, o, 'ascii')
        return torch.serialize(torch.load(q, 'ascii')) == torch.serialize(o)
    end""")
    for name in cases.BYTE_EXACT:
        assert rt.call(fn, t7path(name), str(tmp_path / "a.t7")), name
    # multi-key tables re-save in another pairs() order: compare contents
    check = rt.eval("""function(p, q)
        torch.save(q, torch.load(p), 'ascii')
        local g = torch.load(q, 'ascii')
        for _, m in ipairs(g.modules) do
           if torch.typename(m) == 'nn.Linear' then return m.weight:size(1), m.weight:size(2) end
        end
    end""")
    assert rt.call(check, t7path("gmodule_with_linear_identity.t7"), str(tmp_path / "g.t7")) == (2, 1)


def test_torchfile_reads_what_we_write(rt, tmp_path, rng):
    """Files written by torch.save are read identically by PyPI torchfile."""
    arrays = {}
    for tname, dt in TYPES.items():
        lo, hi = (0, 255) if tname == "Byte" else (-100, 100)
        if np.issubdtype(dt, np.floating):
            a = rng.standard_normal((3, 4, 5)).astype(dt)
        else:
            a = rng.integers(lo, hi, size=(3, 4, 5)).astype(dt)
        arrays[tname] = a
    make = rt.eval("""function(path, arrays, rt_from)
        local obj = {tensors = {}, views = {}, n = 3.5, s = 'str', b = true, list = {10, 20, 30}}
        for name, t in pairs(arrays) do
           obj.tensors[name] = t:clone()
           obj.views[name] = obj.tensors[name]:transpose(1, 3):narrow(2, 2, 3)
        end
        local A = torch.class('tfcheck.Obj')
        local o = torch.factory('tfcheck.Obj')()
        o.w = obj.tensors.Float
        obj.obj = o
        torch.save(path, obj)
    end""")
    lua_arrays = rt.table(**{k: rt.from_numpy(v) for k, v in arrays.items()})
    path = str(tmp_path / "x.t7")
    rt.call(make, path, lua_arrays)
    got = torchfile.load(path)
    for tname, a in arrays.items():
        t = got[b"tensors"][tname.encode()]
        assert t.dtype == a.dtype and t.shape == a.shape
        np.testing.assert_array_equal(t, a)
        v = got[b"views"][tname.encode()]
        np.testing.assert_array_equal(v, a.transpose(2, 1, 0)[:, 1:4, :])
    assert got[b"n"] == 3.5 and got[b"s"] == b"str" and got[b"b"] is True
    assert list(got[b"list"]) == [10, 20, 30]
    assert got[b"obj"]._typename == b"tfcheck.Obj"
    np.testing.assert_array_equal(got[b"obj"][b"w"], arrays["Float"])


def test_torchfile_reads_real_files_like_us(rt, tmp_path):
    # our re-save of each real file reads the same in torchfile as the original
    for name in ["doubletensor.t7", "floattensor.t7", "list_table.t7", "map_table2.t7"]:
        a = torchfile.load(t7path(name))
        p = tmp_path / name
        p.write_bytes(lua_bytes(rt, rt.eval(RESAVE), t7path(name)))
        b = torchfile.load(str(p))
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        elif isinstance(a, dict):
            assert dict(a) == dict(b)
        else:
            assert list(a) == list(b)


@pytest.mark.parametrize("case", cases.hostile_cases(), ids=lambda c: c[0])
def test_hostile_input_lua(rt, case):
    name, data, at, fragment = case
    cases.skip_if_absent(data)
    des = rt.eval("function(s) return torch.deserialize(s) end")
    with pytest.raises(LuaError) as e:
        rt.call(des, data)
    msg = e.value.lua_message
    assert ("at byte %d:" % at) in msg and fragment in msg, msg


def test_hostile_input_disk_file(rt, tmp_path):
    # the same checks through torch.load (DiskFile), and the file is closed after
    p = tmp_path / "bad.t7"
    p.write_bytes(cases.i32(2, 1 << 30) + b"xy")
    with pytest.raises(LuaError, match="at byte 4: expected a string of 1073741824 bytes, but only 2"):
        rt.call(rt.eval("torch.load"), str(p))


def test_nesting_bomb_lua(rt):
    des = rt.eval("function(s) return torch.deserialize(s) end")
    rt.call(des, cases.nesting_bomb(500))
    with pytest.raises(LuaError, match="t7: at byte"):
        rt.call(des, cases.nesting_bomb(100000))


def test_functions_refused_on_request(rt):
    with pytest.raises(LuaError, match="at byte 0: the file holds a Lua function"):
        rt.call(rt.eval("torch.load"), t7path("function.t7"), "binary", True, rt.table(functions=False))


def test_luajit20_function_without_source_is_a_stub(rt):
    # the chunk name of a LuaJIT 2.0 dump replaced by "=?" (no source): the
    # function loads as a stub that raises when called, and re-saves the same bytes
    data = bytearray(cases.real("function.t7"))
    dump_len = int.from_bytes(data[8:12], "little")
    dump = bytes(data[12:12 + dump_len])
    name_len = 0xAE - 0x80 + (0x01 << 7)   # uleb128 ae 01 = 174
    assert dump[5:7] == b"\xae\x01"
    new_dump = dump[:5] + bytes([2]) + b"=?" + dump[7 + name_len:]
    blob = data[:8] + len(new_dump).to_bytes(4, "little") + new_dump + data[12 + dump_len:]
    fn = rt.eval("""function(s)
        local spec = require 'spec'
        local f = torch.deserialize(s)
        spec.raises(f, 'LuaJIT bytecode version 1')
        return torch.ByteTensor(torch.ByteStorage(torch.serialize(f)))
    end""")
    out = rt.to_numpy(rt.call(fn, bytes(blob))).tobytes()
    assert out == bytes(blob)


def test_saves_of_one_path_from_two_threads_leave_one_whole_file(rt, tmp_path):
    """dcgan.torch's data threads each torch.save the same metadata cache at start-up. Each Lua state orders a
    table's keys its own way (LuaJIT 2.1 seeds its string hash per state), so two writers into one file
    interleave different bytes; saving beside the file and renaming leaves one writer's whole file."""
    path = str(tmp_path / "cache.t7")
    rt.execute("""
        local path = ...
        local threads = require 'threads'
        local pool = threads.Threads(2, function() require 'torch' end)
        broken = 0
        for job = 1, 40 do
           pool:addjob(function()
              local t = {rows = torch.range(1, 20000)}
              for k = 1, 20000 do t['key' .. k] = k end
              torch.save(path, t)
              -- what a reader finds meanwhile (the other thread may be saving): always a whole file
              return pcall(torch.load, path) and 0 or 1
           end, function(failed) broken = broken + failed end)
        end
        pool:synchronize()
        pool:terminate()
    """.replace("...", repr(path)))
    assert rt.eval("broken") == 0
    t = rt.eval("torch.load(%r)" % path)
    assert t["key19999"] == 19999 and rt.eval("torch.load(%r).rows:sum()" % path) == 20000 * 20001 / 2
    assert os.listdir(tmp_path) == ["cache.t7"]   # no temporary file left


def test_a_failed_save_keeps_the_file_that_was_there(rt, tmp_path):
    path = str(tmp_path / "model.t7")
    rt.execute("torch.save(%r, {epoch = 3})" % path)
    os.chmod(path, 0o640)
    with pytest.raises(LuaError, match="userdata|cannot"):
        rt.execute("torch.save(%r, {epoch = 4, handle = io.stdout})" % path)   # a userdata cannot be written
    assert rt.eval("torch.load(%r).epoch" % path) == 3
    assert os.listdir(tmp_path) == ["model.t7"]
    rt.execute("torch.save(%r, {epoch = 5})" % path)
    assert rt.eval("torch.load(%r).epoch" % path) == 5
    assert os.stat(path).st_mode & 0o777 == 0o640   # the replaced file's permissions stay


def test_a_save_through_a_link_writes_the_links_target(rt, tmp_path):
    target = tmp_path / "real.t7"
    link = tmp_path / "latest.t7"
    rt.execute("torch.save(%r, 1)" % str(target))
    link.symlink_to(target)
    hard = tmp_path / "hard.t7"
    os.link(target, hard)
    rt.execute("torch.save(%r, 2)" % str(link))
    assert link.is_symlink() and rt.eval("torch.load(%r)" % str(target)) == 2
    rt.execute("torch.save(%r, 3)" % str(hard))   # a hard link's other name sees the new content too
    assert rt.eval("torch.load(%r)" % str(target)) == 3
    rt.execute("torch.save('/dev/null', {1, 2, 3})")   # not a plain file: written in place
    with pytest.raises(LuaError, match="no_such_dir"):
        rt.execute("torch.save(%r, 1)" % str(tmp_path / "no_such_dir" / "x.t7"))
