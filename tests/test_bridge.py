"""Python <-> Lua bridge: zero-copy views both ways, lifetimes, errors."""
import gc
import signal

import numpy as np
import pytest

from pytorch_bridge import LuaError, native

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
NAMES = ["Byte", "Char", "Short", "Int", "Long", "Float", "Double"]


def random_array(rng, dtype, shape):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype,name", list(zip(DTYPES, NAMES)))
def test_from_numpy_is_a_view(rt, rng, dtype, name):
    a = random_array(rng, dtype, (3, 5))
    t = rt.from_numpy(a)
    assert rt.call(rt.eval("torch.typename"), t) == "torch.%sTensor" % name
    get = rt.eval("function(t, i, j) return t[i][j] end")
    assert get(t, 2, 4) == a[1, 3]
    a[1, 3] = 7
    assert get(t, 2, 4) == 7
    rt.call(rt.eval("function(t) t[1][1] = 9 end"), t)
    assert a[0, 0] == 9


def test_from_numpy_strided_and_views(rt, rng):
    base = rng.standard_normal((6, 8))
    a = base[::2, 1::3]  # non-contiguous, positive strides
    t = rt.from_numpy(a)
    size = rt.eval("function(t) return t:size(1), t:size(2), t:stride(1), t:stride(2), t:isContiguous() end")
    assert size(t) == (3, 3, 16, 3, False)
    back = rt.to_numpy(t)
    np.testing.assert_array_equal(back, a)
    back[2, 2] = 42.0
    assert base[4, 7] == 42.0


def test_from_numpy_rejects_bad_arrays(rt):
    with pytest.raises(ValueError, match="read-only"):
        a = np.zeros(3)
        a.flags.writeable = False
        rt.from_numpy(a)
    with pytest.raises(ValueError, match="negative or unaligned strides"):
        rt.from_numpy(np.zeros(5)[::-1])
    with pytest.raises(TypeError, match="no torch tensor type"):
        rt.from_numpy(np.zeros(3, np.complex64))
    with pytest.raises(TypeError, match="numpy.ndarray expected"):
        rt.from_numpy([1, 2, 3])


def test_lua_keeps_numpy_owner_alive(rt):
    before = native.live_foreign_owners()
    a = np.arange(1000, dtype=np.float32)
    rt.globals.t = rt.from_numpy(a)
    del a
    gc.collect()
    assert native.live_foreign_owners() == before + 1
    assert rt.eval("t[1000]") == 999.0
    rt.execute("t = nil; collectgarbage(); collectgarbage()")
    assert native.live_foreign_owners() == before


def test_ctrl_c_during_lua_collection_reaches_python(rt, sigint_default):
    """A SIGINT that arrives while Lua runs and is handled when Lua's collector frees a numpy-owned storage
    still raises KeyboardInterrupt in the caller: no Python code runs inside the collector, where an
    exception could only be printed and dropped (a Ctrl-C in `luatorch train` was once lost this way)."""
    before = native.live_foreign_owners()
    rt.globals.t = rt.from_numpy(np.arange(10.0))
    code = ("local ffi = require 'ffi'; pcall(ffi.cdef, 'int raise(int sig);'); "
            "t = nil; ffi.C.raise(%d); collectgarbage(); collectgarbage()" % signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        rt.execute(code)
        for _ in range(100):   # Python handles the pending signal at its next bytecode
            pass
    assert native.live_foreign_owners() == before


def test_numpy_view_keeps_storage_alive_and_pinned(rt):
    rt.execute("t = torch.FloatTensor(4, 4):fill(3)")
    v = rt.to_numpy(rt.globals.t)
    with pytest.raises(LuaError, match="numpy views of it are alive"):
        rt.execute("t:resize(100)")
    rt.execute("t = nil; collectgarbage(); collectgarbage()")
    assert v.sum() == 48  # the view still reads valid memory
    rt.execute("u = torch.FloatTensor(2)")
    w = rt.to_numpy(rt.globals.u)
    del w
    gc.collect()
    rt.execute("u:resize(1000)")  # no views left: resize is allowed again
    assert rt.eval("u:nElement()") == 1000


def test_to_numpy_of_transposed_tensor(rt):
    t = rt.eval("torch.DoubleTensor({{1, 2, 3}, {4, 5, 6}}):t()")
    a = rt.to_numpy(t)
    np.testing.assert_array_equal(a, [[1, 4], [2, 5], [3, 6]])
    assert rt.to_numpy(rt.eval("torch.IntTensor()")).shape == (0,)


def test_lua_errors_carry_message_and_traceback(rt):
    with pytest.raises(LuaError) as info:
        rt.execute("local function inner() error('deep failure') end\nlocal function outer() inner() end\nouter()",
                   "=errtest")
    e = info.value
    assert "deep failure" in e.lua_message
    assert "errtest:1" in e.lua_message
    assert "stack traceback" in e.lua_traceback
    assert "outer" in e.lua_traceback
    with pytest.raises(LuaError, match="inconsistent tensor size"):
        rt.execute("torch.FloatTensor(3):copy(torch.FloatTensor(4))")


def test_runtimes_are_independent(rt):
    from pytorch_bridge import Runtime

    other = Runtime()
    rt.execute("x = 1")
    assert other.eval("x") is None
    other.execute("torch.setdefaulttensortype('torch.FloatTensor')")
    assert rt.eval("torch.getdefaulttensortype()") == "torch.DoubleTensor"
