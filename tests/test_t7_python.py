"""pytorch_bridge.t7, the pure-Python .t7 reader/writer: real Torch7 files,
round trips with the Lua side and with PyPI torchfile, hostile input."""
import os

import numpy as np
import pytest

import t7_cases as cases
from pytorch_bridge import t7

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
TNAME = {np.uint8: "Byte", np.int8: "Char", np.int16: "Short", np.int32: "Int", np.int64: "Long",
         np.float32: "Float", np.float64: "Double"}


def random_array(rng, dtype, shape):
    if np.issubdtype(dtype, np.floating):
        return (rng.standard_normal(shape) * 1e3).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def real_path(name):
    cases.real(name)
    return os.path.join(cases.T7_DIR, name)


def test_real_files():
    assert t7.load(real_path("hello=123.t7")) == {"hello": 123}
    d = t7.load(real_path("doubletensor.t7"))
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, [[1, 2, 3], [4, 5, 6.9]])
    f = t7.load(real_path("floattensor.t7"))
    assert f.dtype == np.float32 and f.shape == (2, 3, 4)
    assert abs(float(f.astype(np.float64).sum()) - 12.97241666913) < 1e-6
    assert t7.load(real_path("list_table.t7")) == ["hello", "world", "third item", 123]
    assert t7.load(real_path("map_table1.t7")) == {0: "zero", 1: "hello", 2: "world", 3: "third item", 4: 123}
    assert t7.load(real_path("map_table2.t7")) == {1: "hello", 2: "world", 3: "third item", 4: 123,
                                                   "a": "non number key"}
    c = t7.load(real_path("custom_class.t7"))
    assert isinstance(c, t7.TorchObject) and c.typename == "Blah" and c.fields == {} and c.version == 1
    r = t7.load(real_path("recursive_class.t7"))
    assert r.typename == "A" and r.a is r
    kv = t7.load(real_path("recursive_kv_table.t7"))
    (k, v), = kv.items()
    assert k is kv and v is kv
    assert t7.load(real_path("tds_vec.t7")) == [123, 456]
    assert t7.load(real_path("tds_hash.t7")) == {1: 2, 2: 3, 10: 11}
    node = t7.load(real_path("nngraph_node.t7"))
    assert node.typename == "nngraph.Node" and "children" in node.fields
    g = t7.load(real_path("gmodule_with_linear_identity.t7"))
    assert g.typename == "nn.gModule"
    mods = {m.typename: m for m in g.modules}
    assert sorted(m.typename for m in g.modules) == ["nn.CAddTable", "nn.Identity", "nn.Identity", "nn.Linear"]
    lin = mods["nn.Linear"]
    assert lin.weight.shape == (2, 1) and lin.weight.dtype == np.float64 and lin.bias.shape == (2,)
    fn = t7.load(real_path("function_upvals.t7"), trusted=True)
    assert isinstance(fn, t7.LuaFunction) and fn.dumped.startswith(b"\x1bLJ\x01")
    assert fn.upvalues == [{"name": "asdf", "value": 123}]


@pytest.mark.parametrize("name", [n for n in cases.BYTE_EXACT if not n.startswith("tds")]
                         + ["map_table1.t7", "map_table2.t7", "nngraph_node.t7", "gmodule_with_linear_identity.t7",
                            "function_upvals.t7"])
def test_real_files_resave_byte_exact(name):
    # dicts keep the file's order, so even multi-key tables re-save exactly
    data = cases.real(name)
    assert t7.dumps(t7.loads(data, trusted=True)) == data


def test_python_to_lua(rt, rng, tmp_path):
    arrays = {TNAME[dt]: random_array(rng, dt, (3, 4, 5)) for dt in DTYPES}
    base = random_array(rng, np.float32, (6, 7))
    obj = {
        "arrays": arrays,
        "views": {"t": base.T, "narrow": base[1:4, 2:6], "row": base[2], "step": base[::2, 1::3]},
        "base": base,
        "nested": [1, 2.5, "three", b"\xff\x00bytes", True, False, {"deep": [[]]}],
        "empty": np.zeros((0,), np.int32),
    }
    path = str(tmp_path / "py.t7")
    t7.save(path, obj)
    check = rt.eval("""function(p)
        local o = torch.load(p)
        local r = {}
        for name, t in pairs(o.arrays) do r[name] = t end
        r.shared = o.views.t:storage():isSharedWith(o.base:storage()) and
                   o.views.narrow:storage():isSharedWith(o.base:storage())
        r.nested3 = o.nested[3]
        r.nested7 = #o.nested[7].deep
        r.emptydim = o.empty:dim()
        r.views = o.views
        return r
    end""")
    r = rt.call(check, path)
    for name, a in arrays.items():
        t = r[name]
        assert rt.eval("torch.typename")(t) == "torch.%sTensor" % name
        np.testing.assert_array_equal(rt.to_numpy(t), a)
    assert r["shared"] is True
    assert r["nested3"] == "three" and r["nested7"] == 1 and r["emptydim"] == 0
    for key in ("t", "narrow", "row", "step"):
        np.testing.assert_array_equal(rt.to_numpy(r["views"][key]), obj["views"][key])


def test_lua_to_python(rt, tmp_path):
    path = str(tmp_path / "lua.t7")
    rt.call(rt.eval("""function(p)
        local tds = require 'tds'
        local base = torch.FloatTensor(4, 6)
        for i = 1, 4 do for j = 1, 6 do base[i][j] = (i - 1) * 6 + j end end
        torch.class('pyside.Thing')
        local thing = torch.factory('pyside.Thing')()
        thing.w = base:t()
        thing.name = 'thing'
        local obj = {base = base, t = base:t(), col = base:select(2, 3), s = base:storage(), thing = thing,
                     again = thing, vec = tds.Vec({1, 'a'}), hash = tds.Hash({x = 1}),
                     long = torch.LongTensor({2^53, -3}), list = {'a', 'b'}, map = {[0] = 0, 1}}
        obj.long:data()[0] = 9007199254740993LL
        obj.me = obj
        torch.save(p, obj)
    end"""), path)
    o = t7.load(path)
    base = np.arange(1, 25, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(o["base"], base)
    np.testing.assert_array_equal(o["t"], base.T)
    np.testing.assert_array_equal(o["col"], base[:, 2])
    np.testing.assert_array_equal(o["s"], base.ravel())
    # one storage: the arrays share memory
    assert np.shares_memory(o["base"], o["t"]) and np.shares_memory(o["col"], o["s"])
    assert o["thing"] is o["again"] and o["thing"].typename == "pyside.Thing"
    np.testing.assert_array_equal(o["thing"].w, base.T)
    assert o["vec"] == [1, "a"] and o["hash"] == {"x": 1}
    assert o["long"].dtype == np.int64 and int(o["long"][0]) == 2 ** 53 + 1
    assert o["list"] == ["a", "b"] and o["map"] == {0: 0, 1: 1}
    assert o["me"] is o
    # and back: Python re-saves, Lua reads the same structure
    back = str(tmp_path / "back.t7")
    t7.save(back, o)
    ok = rt.eval("""function(p)
        local o = torch.load(p)
        return o.me == o and o.thing == o.again and torch.typename(o.thing) == 'pyside.Thing'
           and o.t:storage():isSharedWith(o.base:storage()) and o.t[3][2] == 9 and o.long[1] == 2^53 + 1
    end""")
    assert rt.call(ok, back) is True


def test_torchfile_reads_python_files(tmp_path, rng):
    torchfile = pytest.importorskip("torchfile")
    obj = {"x": random_array(rng, np.float64, (2, 3)), "i": random_array(rng, np.int32, (5,)),
           "v": random_array(rng, np.int16, (4, 4))[:, 1], "l": [1, 2, 3], "s": "str",
           "o": t7.TorchObject("nn.Linear", {"weight": random_array(rng, np.float32, (2, 3))})}
    path = str(tmp_path / "tf.t7")
    t7.save(path, obj)
    got = torchfile.load(path)
    np.testing.assert_array_equal(got[b"x"], obj["x"])
    np.testing.assert_array_equal(got[b"i"], obj["i"])
    np.testing.assert_array_equal(got[b"v"], obj["v"])
    assert list(got[b"l"]) == [1, 2, 3] and got[b"s"] == b"str"
    assert got[b"o"]._typename == b"nn.Linear"
    np.testing.assert_array_equal(got[b"o"][b"weight"], obj["o"].weight)


def test_long_size_4(rt):
    data = t7.dumps({"a": np.array([[1, -2, 3]], np.int64)}, long_size=4)
    assert t7.loads(data, long_size=4)["a"].tolist() == [[1, -2, 3]]
    fn = rt.eval("function(s) return torch.deserialize(s, 'b32').a[1][2] end")
    assert rt.call(fn, data) == -2
    with pytest.raises(t7.T7Error, match="at byte"):
        t7.loads(data, long_size=8)


def test_options():
    data = cases.real("function.t7")
    with pytest.raises(t7.T7Error, match="at byte 0: the file holds a function"):
        t7.loads(data, functions=False)
    # untrusted by default: refused with the way to say otherwise
    with pytest.raises(t7.T7Error, match="refused: pass trusted=True"):
        t7.loads(data)
    assert isinstance(t7.loads(data, trusted=True), t7.LuaFunction)
    d = t7.loads(cases.real("hello=123.t7"), int_heuristic=False, decode_strings=False)
    assert d == {b"hello": 123.0} and isinstance(d[b"hello"], float)
    assert t7.loads(cases.real("list_table.t7"), list_heuristic=False)[1] == "hello"
    with pytest.raises(TypeError, match="cannot write"):
        t7.dumps({"f": object()})


@pytest.mark.parametrize("case", [c for c in cases.hostile_cases() if not c[0].endswith("(lua)")],
                         ids=lambda c: c[0])
def test_hostile_input_python(case):
    name, data, at, fragment = case
    cases.skip_if_absent(data)
    with pytest.raises(t7.T7Error) as e:
        t7.loads(data, trusted=True)  # trusted: hostile bytecode must still be a clean error
    msg = str(e.value)
    assert ("at byte %d:" % at) in msg and fragment in msg, msg


def test_nesting_bomb_python():
    t7.loads(cases.nesting_bomb(2000))
    with pytest.raises(t7.T7Error, match="nested too deeply"):
        t7.loads(cases.nesting_bomb(100000))


def test_giant_stride0_view_python():
    # sizes whose product numpy cannot represent (stride 0 over one element)
    data = (cases.tensor(1, "torch.DoubleTensor", 2, [1 << 40, 1 << 40], [0, 0], 1)
            + cases.storage(2, "torch.DoubleStorage", 1, cases.f64(7)))
    with pytest.raises(t7.T7Error, match="too large to view"):
        t7.loads(data)
    small = (cases.tensor(1, "torch.DoubleTensor", 2, [3, 4], [0, 0], 1)
             + cases.storage(2, "torch.DoubleStorage", 1, cases.f64(7)))
    assert t7.loads(small).tolist() == [[7.0] * 4] * 3
