"""Tensor construction, geometry and views against NumPy, on fresh random inputs,
all seven element types, contiguous and non-contiguous sources."""
import numpy as np
import pytest

from pytorch_bridge import LuaError

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
NAMES = dict(zip(DTYPES, ["Byte", "Char", "Short", "Int", "Long", "Float", "Double"]))


def rand(rng, dtype, shape):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def layouts(rng, dtype):
    """(name, numpy array) pairs: contiguous, transposed, sliced with steps."""
    a = rand(rng, dtype, (5, 7, 3))
    big = rand(rng, dtype, (10, 9, 6))
    return [("contiguous", a), ("transposed", np.transpose(rand(rng, dtype, (3, 7, 5)), (2, 1, 0))),
            ("strided", big[1::2, 1:8, ::2])]


def lua_fn(rt, src):
    return rt.eval("function(t, ...) " + src + " end")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: NAMES[d])
def test_geometry_matches_numpy(rt, rng, dtype):
    for name, a in layouts(rng, dtype):
        t = rt.from_numpy(a)
        chk = lambda src, ref: np.testing.assert_array_equal(rt.to_numpy(rt.call(lua_fn(rt, "return " + src), t)), ref,
                                                            err_msg="%s %s" % (name, src))
        chk("t:narrow(2, 3, 4)", a[:, 2:6, :])
        chk("t:select(1, 5)", a[4])
        chk("t:select(3, 2)", a[:, :, 1])
        chk("t:sub(2, -2, 1, 3)", a[1:4, 0:3])
        chk("t:transpose(1, 3)", np.swapaxes(a, 0, 2))
        chk("t:select(3, 1):t()", a[:, :, 0].T)
        chk("t:unfold(2, 3, 2)", np.stack([a[:, i:i + 3, :] for i in (0, 2, 4)], axis=1).transpose(0, 1, 3, 2))
        chk("t:clone()", a)
        chk("t:contiguous()", a)
        chk("t:narrow(1, 2, 1):squeeze()", a[1])
        chk("t:narrow(1, 2, 1):squeeze(1)", a[1])
        chk("t:contiguous():view(7, -1)", np.ascontiguousarray(a).reshape(7, -1))
        chk("t:select(3, 1):narrow(2, 1, 1):expand(5, 4)", np.broadcast_to(a[:, 0:1, 0], (5, 4)))
        # torch.Tensor(storage, offset, sizes, strides) over the same storage
        chk("torch.%sTensor(t:storage(), t:storageOffset(), t:size(), t:stride())" % NAMES[dtype], a)
        # clone is a copy, not a view
        c = rt.call(lua_fn(rt, "return t:clone()"), t)
        rt.to_numpy(c)[...] = 0
        assert np.array_equal(rt.to_numpy(t), a)


@pytest.mark.parametrize("src_dtype", DTYPES, ids=lambda d: NAMES[d])
def test_copy_any_type_to_any_type(rt, rng, src_dtype):
    for name, a in layouts(rng, src_dtype):
        t = rt.from_numpy(a)
        for dst in DTYPES:
            out = np.zeros((3, 7, 5), dst).transpose(2, 1, 0)  # non-contiguous destination
            o = rt.from_numpy(out)
            rt.call(lua_fn(rt, "t:copy(...)"), o, t)
            # within the value range used here every conversion is exact (values fit all types
            # except negatives into uint8, which wrap as C casts do)
            np.testing.assert_array_equal(out, a.astype(dst), err_msg="%s %s->%s" % (name, NAMES[src_dtype], NAMES[dst]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: NAMES[d])
def test_fill_zero_on_views(rt, rng, dtype):
    a = rand(rng, dtype, (6, 8))
    ref = a.copy()
    t = rt.from_numpy(a)
    rt.call(lua_fn(rt, "t:narrow(2, 2, 5):t():fill(7); t:select(1, 1):zero()"), t)
    ref[:, 1:6] = 7
    ref[0] = 0
    np.testing.assert_array_equal(a, ref)


def test_resize_keeps_prefix_and_type_conversions(rt):
    r = rt.execute("""
        local t = torch.FloatTensor({{1, 2, 3}, {4, 5, 6}})
        local s = t:storage()
        t:resize(3, 3)
        local d = torch.DoubleTensor(2, 2):fill(2.5)
        return t:storage():size(), t[1][2], torch.typename(d:int()),
               torch.typename(d:type('torch.ByteTensor')), d:type(), d:long()[1][1]
    """)
    assert r == (9, 2.0, "torch.IntTensor", "torch.ByteTensor", "torch.DoubleTensor", 2)


def test_geometry_errors(rt):
    cases = {
        "torch.Tensor(3, 4):narrow(2, 4, 2)": "out of range",
        "torch.Tensor(3, 4):select(3, 1)": "dimension 3 out of range of 2D tensor",
        "torch.Tensor(3, 4):transpose(1, 5)": "out of range",
        "torch.Tensor(3):t()": "2 dimensions",
        "torch.Tensor(3, 4):expand(2, 4)": "cannot expand",
        "torch.Tensor(3, 4):view(5, -1)": "cannot infer",
        "torch.Tensor(3, 4):size(0)": "out of range",
        "torch.FloatTensor(torch.DoubleTensor(2))": "cannot view",
        "torch.FloatTensor(torch.FloatStorage(4), 2, torch.LongStorage{2, 2})": "too small",
        "torch.Tensor(3, 'x')": "sizes must be numbers",
    }
    for code, msg in cases.items():
        with pytest.raises(LuaError) as info:
            rt.execute(code)
        assert msg in info.value.lua_message, (code, info.value.lua_message)
