"""TensorMath against NumPy: pointwise ops, comparisons, reductions, operators
and constructors, over the seven element types and several memory layouts
(contiguous, transposed, narrowed, expanded with stride 0), odd shapes and
empty tensors. Inputs are fresh random numbers every run (seed printed)."""
import math
import warnings

import numpy as np
import pytest

from pytorch_bridge import LuaError

DTYPES = {
    "Byte": np.uint8, "Char": np.int8, "Short": np.int16, "Int": np.int32,
    "Long": np.int64, "Float": np.float32, "Double": np.float64,
}
ALL = list(DTYPES)
INTS = ["Byte", "Char", "Short", "Int", "Long"]
FLOATS = ["Float", "Double"]
LAYOUTS = ["contig", "transposed", "narrowed", "expanded"]
SHAPES = [(7, 13), (3, 1, 5), (1,), (300, 301)]

_FNS = {}


def lua(rt, body):
    """A Lua function(...) with `body` (cached per runtime)."""
    key = (id(rt), body)
    if key not in _FNS:
        _FNS[key] = rt.execute("return function(...) local a, b, c, d, e = ... " + body + " end")
    return _FNS[key]


def run(rt, body, *args):
    return rt.call(lua(rt, body), *args)


def rand(rng, tname, shape, lo=-100, hi=100):
    dtype = DTYPES[tname]
    if tname in FLOATS:
        return (rng.standard_normal(shape) * 3).astype(dtype)
    if tname == "Byte":
        lo = max(lo, 0)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def nonzero(rng, tname, shape):
    a = rand(rng, tname, shape)
    a[a == 0] = 1
    return a


def make(rt, arr, layout):
    """A tensor with arr's values in the given memory layout, and the array of
    the values it holds (expanded layouts repeat arr's first slice)."""
    arr = np.asarray(arr)
    if layout == "contig" or arr.ndim == 0:
        base = np.ascontiguousarray(arr).copy()
        return rt.from_numpy(base), base
    if layout == "transposed":
        if arr.ndim == 1:  # a stride-2 view
            big = np.zeros(2 * arr.shape[0], arr.dtype)
            view = big[::2]
        else:
            view = np.swapaxes(np.zeros(np.swapaxes(arr, 0, -1).shape, arr.dtype), 0, -1)
        view[...] = arr
        return rt.from_numpy(view), view
    if layout == "narrowed":
        big = np.zeros(arr.shape[:-1] + (arr.shape[-1] + 3,), arr.dtype)
        view = big[..., 1:1 + arr.shape[-1]]
        view[...] = arr
        return rt.from_numpy(view), view
    if layout == "expanded":
        small = np.ascontiguousarray(arr[:1]).copy()
        t = run(rt, "return a:expand(torch.LongStorage(b))", rt.from_numpy(small), rt.table(*arr.shape))
        return t, np.broadcast_to(small, arr.shape)
    raise ValueError(layout)


def np_of(rt, t):
    return np.array(rt.to_numpy(t))


def assert_same(got, want, rtol=0.0, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def tdiv(a, b):
    """C's truncating integer division, as TH."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.abs(a64) // np.abs(b64)
    return (q * np.sign(a64) * np.sign(b64)).astype(a.dtype)


def shape_for(layout, i):
    return SHAPES[i % len(SHAPES)] if layout != "expanded" else (5, 7)


# ---------------------------------------------------------------- tensor (op) tensor

BINARY = {
    "add": ("torch.add(a, b)", lambda a, b: a + b),
    "csub": ("torch.csub(a, b)", lambda a, b: a - b),
    "cmul": ("torch.cmul(a, b)", lambda a, b: a * b),
    "cdiv": ("torch.cdiv(a, b)", None),
    "cmax": ("torch.cmax(a, b)", np.maximum),
    "cmin": ("torch.cmin(a, b)", np.minimum),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", ALL)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary(shared_rt, rng, op, tname, layout):
    rt = shared_rt
    shape = shape_for(layout, ALL.index(tname) + list(BINARY).index(op))
    a = rand(rng, tname, shape)
    b = nonzero(rng, tname, shape) if op == "cdiv" else rand(rng, tname, shape)
    ta, na = make(rt, a, layout)
    tb, nb = make(rt, b, "contig" if layout == "expanded" else layout)
    code, fn = BINARY[op]
    with np.errstate(over="ignore", divide="ignore"):
        want = (na / nb).astype(na.dtype) if op == "cdiv" and tname in FLOATS else (
            tdiv(na, nb) if op == "cdiv" else fn(na, nb))
    got = np_of(rt, run(rt, "return " + code, ta, tb))
    assert_same(got, want.astype(DTYPES[tname]))


# ---------------------------------------------------------------- tensor (op) number

def scalar_cases(tname):
    v = 3 if tname in INTS else 0.75
    lo = 0 if tname == "Byte" else -2
    cases = {
        "add": ("torch.add(a, %r)" % v, lambda x: x + v),
        "csub": ("torch.csub(a, %r)" % v, lambda x: x - v),
        "mul": ("torch.mul(a, %r)" % v, lambda x: x * v),
        "cmax": ("torch.cmax(a, %r)" % v, lambda x: np.maximum(x, v)),
        "cmin": ("torch.cmin(a, %r)" % v, lambda x: np.minimum(x, v)),
        "clamp": ("torch.clamp(a, %d, %r)" % (lo, v), lambda x: np.clip(x, lo, v)),
        "fmod": ("torch.fmod(a, %r)" % v, lambda x: np.fmod(x, v)),
        "remainder": ("torch.remainder(a, %r)" % v, lambda x: np.remainder(x, v)),
    }
    if tname in INTS:
        cases["div"] = ("torch.div(a, 3)", lambda x: tdiv(x, np.full_like(x, 3)))
        cases["pow"] = ("torch.pow(a, 3)", lambda x: x.astype(np.int64) ** 3)
    else:
        cases["div"] = ("torch.div(a, 0.75)", lambda x: x / x.dtype.type(0.75))
        cases["pow"] = ("torch.pow(torch.abs(a), 1.5)", lambda x: np.abs(x) ** x.dtype.type(1.5))
        cases["tpow"] = ("torch.pow(1.5, a)", lambda x: x.dtype.type(1.5) ** x)
    return cases


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", ALL)
def test_scalar_ops(shared_rt, rng, tname, layout):
    rt = shared_rt
    for i, (op, (code, fn)) in enumerate(scalar_cases(tname).items()):
        shape = shape_for(layout, i)
        a = rand(rng, tname, shape, -12, 12) if op == "pow" else rand(rng, tname, shape)
        ta, na = make(rt, a, layout)
        with np.errstate(over="ignore"):
            want = fn(na.copy()).astype(DTYPES[tname])
        got = np_of(rt, run(rt, "return " + code, ta))
        exact = tname in INTS or op not in ("pow", "tpow", "remainder")
        assert_same(got, want, *((0, 0) if exact else (2e-6, 1e-6))), op


def test_scalar_converted_to_element_type(shared_rt):
    # TH converts the number to the tensor's type first: IntTensor:add(2.7) adds 2.
    got = run(shared_rt, "return torch.IntTensor({1, 5, -7}):add(2.7):mul(1.9):totable()")
    assert list(got.values()) == [3, 7, -5]
    got = run(shared_rt, "return torch.ByteTensor({1, 5, 250}):add(10):totable()")
    assert list(got.values()) == [11, 15, 4]  # wraps like uint8
    got = run(shared_rt, "return torch.ByteTensor({1, 5, 250}):csub(2):totable()")
    assert list(got.values()) == [255, 3, 248]


def test_integer_division_by_zero_raises(shared_rt):
    with pytest.raises(LuaError, match="division by zero"):
        run(shared_rt, "return torch.IntTensor({1, 2}):div(0)")
    with pytest.raises(LuaError, match="division by zero"):
        run(shared_rt, "return torch.LongTensor({1, 2}):cdiv(torch.LongTensor({1, 0}))")
    got = run(shared_rt, "return torch.LongTensor({-9223372036854775807 - 1, 7}):div(-1):totable()")
    assert got[2] == -7
    # float division by zero is IEEE
    got = run(shared_rt, "return torch.DoubleTensor({1, -1}):div(0):totable()")
    assert list(got.values()) == [math.inf, -math.inf]


# ---------------------------------------------------------------- unary

FLOAT_UNARY = {
    "sqrt": (np.sqrt, lambda x: np.abs(x)), "rsqrt": (lambda x: 1 / np.sqrt(x), lambda x: np.abs(x) + 0.1),
    "exp": (np.exp, None), "log": (np.log, lambda x: np.abs(x) + 0.01), "log1p": (np.log1p, np.abs),
    "tanh": (np.tanh, None), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "floor": (np.floor, None), "ceil": (np.ceil, None), "trunc": (np.trunc, None),
    "round": (lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)), None),
    "abs": (np.abs, None), "neg": (np.negative, None), "sign": (np.sign, None),
    "frac": (lambda x: x - np.trunc(x), None), "cinv": (lambda x: 1 / x, None),
    "sin": (np.sin, None), "cos": (np.cos, None), "atan": (np.arctan, None), "expm1": (np.expm1, None),
}
EXACT_UNARY = {"floor", "ceil", "trunc", "round", "abs", "neg", "sign", "frac"}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("op", list(FLOAT_UNARY))
def test_float_unary(shared_rt, rng, op, tname, layout):
    rt = shared_rt
    fn, domain = FLOAT_UNARY[op]
    a = rand(rng, tname, shape_for(layout, len(op)))
    if domain:
        a = domain(a).astype(a.dtype)
    ta, na = make(rt, a, layout)
    want = fn(na).astype(a.dtype)
    got = np_of(rt, run(rt, "return torch.%s(a)" % op, ta))
    if op in EXACT_UNARY:
        assert_same(got, want)
    else:
        assert_same(got, want, *((3e-6, 1e-6) if tname == "Float" else (1e-13, 1e-14)))


@pytest.mark.parametrize("tname", INTS)
def test_integer_unary(shared_rt, rng, tname):
    rt = shared_rt
    a = rand(rng, tname, (7, 13))
    ta, _ = make(rt, a, "transposed")
    for op, fn in (("abs", np.abs), ("neg", np.negative), ("sign", np.sign)):
        with np.errstate(over="ignore"):
            want = fn(a).astype(a.dtype)
        assert_same(np_of(rt, run(rt, "return torch.%s(a)" % op, ta)), want)
    for op in ("sqrt", "exp", "log", "tanh", "sigmoid", "floor", "round"):
        with pytest.raises(LuaError, match="only defined for FloatTensor and DoubleTensor"):
            run(rt, "return a:%s()" % op, ta)


def test_round_halves_away_from_zero(shared_rt):
    got = run(shared_rt, "return torch.DoubleTensor({0.5, 1.5, 2.5, -0.5, -2.5, 2.4999}):round():totable()")
    assert list(got.values()) == [1, 2, 3, -1, -3, 2]


# ---------------------------------------------------------------- addcmul / addcdiv

@pytest.mark.parametrize("tname", ALL)
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc(shared_rt, rng, op, tname):
    rt = shared_rt
    shape = (7, 13) if tname != "Float" else (300, 301)
    x, t1 = rand(rng, tname, shape, -10, 10), rand(rng, tname, shape, -10, 10)
    t2 = nonzero(rng, tname, shape) if op == "addcdiv" else rand(rng, tname, shape, -10, 10)
    tx, nx = make(rt, x, "narrowed")
    nx = nx.copy()  # tx is updated in place below
    t1t, n1 = make(rt, t1, "transposed")
    t2t, n2 = make(rt, t2, "contig")
    v = 2 if tname in INTS else 0.5
    got = np_of(rt, run(rt, "return torch.%s(a, %r, b, c)" % (op, v), tx, t1t, t2t))
    with np.errstate(over="ignore"):
        if tname in INTS:
            p = v * n1.astype(np.int64)
            want = nx + (p * n2 if op == "addcmul" else tdiv(p, n2.astype(np.int64)))
        else:
            want = nx + (v * n1 * n2 if op == "addcmul" else v * n1 / n2)
    tol = (0, 0) if tname in INTS else ((2e-6, 1e-5) if tname == "Float" else (1e-14, 1e-13))
    assert_same(got, want.astype(DTYPES[tname]), *tol)
    # the in-place method form with the default value 1 returns self
    same = run(rt, "local r = a:%s(b, c); return torch.pointer(r) == torch.pointer(a)" % op, tx, t1t, t2t)
    assert same
    with np.errstate(over="ignore"):
        if tname in INTS:
            p = n1.astype(np.int64)
            want2 = nx + (p * n2 if op == "addcmul" else tdiv(p, n2.astype(np.int64)))
        else:
            want2 = nx + (n1 * n2 if op == "addcmul" else n1 / n2)
    assert_same(np_of(rt, tx), want2.astype(DTYPES[tname]), *tol)


# ---------------------------------------------------------------- call forms

def test_add_call_forms(rt, rng):
    a, b = rng.standard_normal(6), rng.standard_normal(6)
    ta, tb = rt.from_numpy(a.copy()), rt.from_numpy(b.copy())
    forms = {
        "return torch.add(a, 2)": a + 2,
        "return torch.add(a, b)": a + b,
        "return torch.add(a, 3, b)": a + 3 * b,
        "local r = torch.DoubleTensor(); torch.add(r, a, 2); return r": a + 2,
        "local r = torch.DoubleTensor(); torch.add(r, a, b); return r": a + b,
        "local r = torch.DoubleTensor(); local s = torch.add(r, a, 3, b); assert(s == r); return r": a + 3 * b,
        "local r = torch.DoubleTensor(); local s = r:add(a, b); assert(s == r); return r": a + b,
        "local r = torch.DoubleTensor(); r:add(a, 3, b); return r": a + 3 * b,
        "local r = torch.DoubleTensor(); r:add(a, 2); return r": a + 2,
        "local r = a:clone(); local s = r:add(2); assert(s == r); return r": a + 2,
        "local r = a:clone(); r:add(b); return r": a + b,
        "local r = a:clone(); r:add(3, b); return r": a + 3 * b,
        "local r = a:clone(); r:csub(b); return r": a - b,
        "local r = a:clone(); r:csub(3, b); return r": a - 3 * b,
        "local r = a:clone(); r:csub(2); return r": a - 2,
        "return torch.csub(a, 3, b)": a - 3 * b,
        "local r = a:clone(); r:mul(3); return r": a * 3,
        "local r = torch.DoubleTensor(); r:mul(a, 3); return r": a * 3,
        "return torch.mul(a, 3)": a * 3,
        "local r = a:clone(); r:div(3); return r": a / 3,
        "local r = a:clone(); r:cmul(b); return r": a * b,
        "local r = torch.DoubleTensor(); r:cmul(a, b); return r": a * b,
        "return torch.cmul(a, b)": a * b,
        "local r = a:clone(); r:cdiv(b); return r": a / b,
        "local r = a:clone():abs(); r:sqrt(); return r": np.sqrt(np.abs(a)),
        "local r = torch.DoubleTensor(); r:sqrt(torch.abs(a)); return r": np.sqrt(np.abs(a)),
        "local r = torch.DoubleTensor(); torch.exp(r, a); return r": np.exp(a),
        "local r = a:clone(); r:clamp(-0.5, 0.5); return r": np.clip(a, -0.5, 0.5),
        "local r = torch.DoubleTensor(); r:clamp(a, -0.5, 0.5); return r": np.clip(a, -0.5, 0.5),
        "local r = a:clone(); r:pow(2); return r": a ** 2,
        "local r = torch.DoubleTensor(); r:pow(2, a); return r": 2.0 ** a,
        "return torch.pow(2, a)": 2.0 ** a,
        "local r = a:clone(); r:cmax(b); return r": np.maximum(a, b),
        "local r = a:clone(); r:cmax(0.1); return r": np.maximum(a, 0.1),
        "local r = torch.DoubleTensor(); r:cmin(a, b); return r": np.minimum(a, b),
        "return torch.cmin(a, 0.1)": np.minimum(a, 0.1),
        "return torch.max(a, b)": np.maximum(a, b),
        "local r = a:clone(); r:addcmul(2, a, b); return r": a + 2 * a * b,
        "local r = torch.DoubleTensor(); r:addcdiv(a, 2, a, b); return r": a + 2 * a / b,
        "local r = torch.DoubleTensor(); torch.addcmul(r, a, a, b); return r": a + a * b,
        "local r = a:clone(); r:neg(); return r": -a,
    }
    for code, want in forms.items():
        got = np_of(rt, run(rt, code, ta, tb))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15, err_msg=code)
    # the sources were never modified
    np.testing.assert_array_equal(np_of(rt, ta), a)
    np.testing.assert_array_equal(np_of(rt, tb), b)


def test_number_forms(shared_rt):
    got = run(shared_rt, "return torch.sqrt(16), torch.abs(-3), torch.pow(2, 10), torch.floor(-1.5)")
    assert got == (4, 3, 1024, -2)


def test_noncontiguous_result_keeps_strides(rt, rng):
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    base = np.zeros((4, 6))
    r = rt.from_numpy(base)
    run(rt, "local r = a:t(); torch.add(r, b, c); assert(not r:isContiguous())", r, rt.from_numpy(a), rt.from_numpy(b))
    np.testing.assert_array_equal(base.T, a + b)
    run(rt, "local r = a:t(); r:sqrt(torch.abs(b)); torch.gt(torch.ByteTensor(4, 6):t(), b, 0)", r, rt.from_numpy(a))
    np.testing.assert_array_equal(base.T, np.sqrt(np.abs(a)))


def test_equal_counts_different_shapes_pair_in_row_major_order(shared_rt, rng):
    # Torch7 pairs elements in row-major order when only the counts agree,
    # whatever the memory layout of each operand
    rt = shared_rt
    x, y = rng.standard_normal((2, 3)), rng.standard_normal(6)
    got = run(rt, "return torch.add(a:t(), b), torch.cmul(b, a:t()), torch.lt(a:t(), b)", rt.from_numpy(x),
              rt.from_numpy(y))
    np.testing.assert_array_equal(np_of(rt, got[0]), x.T + y.reshape(3, 2))
    np.testing.assert_array_equal(np_of(rt, got[1]), y * x.T.ravel())
    np.testing.assert_array_equal(np_of(rt, got[2]), (x.T < y.reshape(3, 2)).astype(np.uint8))


BAD_CALLS = [
    (r"add: inconsistent tensor size.*\[2 x 3\].*\[4\].*6 and 4", "torch.add(torch.zeros(2, 3), torch.zeros(4))"),
    ("cmul: inconsistent tensor size", "torch.zeros(3):cmul(torch.zeros(4))"),
    ("addcmul: inconsistent tensor size", "torch.zeros(3):addcmul(torch.zeros(3), torch.zeros(2))"),
    ("eq: inconsistent tensor size", "torch.eq(torch.zeros(3), torch.zeros(2))"),
    ("must be a FloatTensor, got DoubleTensor", "torch.FloatTensor(3):zero():add(torch.DoubleTensor(3):zero())"),
    ("invalid arguments: DoubleTensor string", "torch.zeros(3):add('x')"),
    ("expected arguments", "torch.clamp(torch.zeros(3), 1)"),
    ("dimension 0 out of range of 1D tensor", "torch.zeros(3):max(0)"),
]


@pytest.mark.parametrize("pattern,code", BAD_CALLS)
def test_bad_calls_raise(shared_rt, pattern, code):
    with pytest.raises(LuaError, match=pattern):
        run(shared_rt, "return " + code)


def test_equal_counts_are_enough(shared_rt):
    rt = shared_rt
    # equal element counts are enough (Torch7): the result takes the first shape
    got = run(rt, "return torch.add(torch.ones(2, 3), torch.ones(6)):size():totable()")
    assert list(got.values()) == [2, 3]


def test_empty_tensors(shared_rt):
    rt = shared_rt
    got = run(rt, "local e = torch.FloatTensor(); local r = torch.add(e, e); "
                  "return r:nElement(), e:sum(), e:prod(), torch.exp(e):dim(), torch.eq(e, 0):nElement(), "
                  "e:all(), e:any()")
    assert got == (0, 0, 1, 0, 0, True, False)
    with pytest.raises(LuaError, match="empty"):
        run(rt, "return torch.FloatTensor():max()")


# ---------------------------------------------------------------- comparisons

CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
       "ge": np.greater_equal}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", ALL)
def test_comparisons(shared_rt, rng, tname, layout):
    rt = shared_rt
    for i, (op, fn) in enumerate(CMP.items()):
        shape = shape_for(layout, i)
        a, b = rand(rng, tname, shape, -3, 3), rand(rng, tname, shape, -3, 3)
        ta, na = make(rt, a, layout)
        tb, nb = make(rt, b, "transposed" if layout != "contig" else "contig")
        got = run(rt, "return torch.%s(a, b), a:%s(1), torch.typename(a:%s(b))" % (op, op, op), ta, tb)
        assert got[2] == "torch.ByteTensor"
        assert_same(np_of(rt, got[0]), fn(na, nb).astype(np.uint8))
        assert_same(np_of(rt, got[1]), fn(na, 1).astype(np.uint8))
        # result-first forms into a ByteTensor and into a tensor of the source type
        got = run(rt, "local r = torch.ByteTensor(); local s = r:%s(a, b); assert(s == r); "
                      "local q = a:clone():zero(); torch.%s(q, a, b); return r, q" % (op, op), ta, tb)
        assert_same(np_of(rt, got[0]), fn(na, nb).astype(np.uint8))
        assert_same(np_of(rt, got[1]), fn(na, nb).astype(DTYPES[tname]))


def test_compare_number_converted(shared_rt):
    # TH compares with the number converted to the element type: 2.7 -> 2 on IntTensor
    got = run(shared_rt, "return torch.IntTensor({1, 2, 3}):lt(2.7):totable()")
    assert list(got.values()) == [1, 0, 0]


def test_all_any(shared_rt):
    got = run(shared_rt, "local m = torch.ByteTensor({{1, 1}, {1, 0}}); "
                         "return m:all(), m:any(), m:t():narrow(2, 1, 1):all(), torch.ByteTensor(3):zero():any(), "
                         "torch.gt(torch.ones(5), 0):all(), torch.eq(torch.range(1, 5), 3):any()")
    assert got == (False, True, True, False, True, True)


# ---------------------------------------------------------------- reductions

def np_reduce(x, op, axis, tname, p=2, biased=False):
    float = tname in FLOATS
    acc = x.astype(np.float64 if float else np.int64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # var of one element: NaN, as ours
        if op == "sum":
            return acc.sum(axis=axis, keepdims=axis is not None)
        if op == "prod":
            return acc.prod(axis=axis, keepdims=axis is not None)
        if op == "mean":
            return acc.mean(axis=axis, keepdims=axis is not None)
        if op in ("var", "std"):
            f = np.var if op == "var" else np.std
            return f(acc, axis=axis, ddof=0 if biased else 1, keepdims=axis is not None)
        if op == "norm":
            k = axis is not None
            if p == 0:
                return (acc != 0).sum(axis=axis, keepdims=k).astype(np.float64)
            if p == math.inf:
                return np.abs(acc).max(axis=axis, keepdims=k)
            return (np.abs(acc) ** p).sum(axis=axis, keepdims=k) ** (1.0 / p)
    raise ValueError(op)


REDUCTIONS = ["sum", "prod", "mean", "var", "std", "norm"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", ALL)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions(shared_rt, rng, op, tname, layout):
    rt = shared_rt
    if op in ("mean", "var", "std", "norm") and tname in INTS:
        with pytest.raises(LuaError, match="only defined for FloatTensor and DoubleTensor"):
            run(rt, "return a:%s()" % op, rt.from_numpy(rand(rng, tname, (3, 4))))
        return
    shape = shape_for(layout, REDUCTIONS.index(op) + ALL.index(tname))
    if op == "prod":
        a = (1 + 0.05 * rng.standard_normal(shape)).astype(DTYPES[tname]) if tname in FLOATS else \
            rand(rng, tname, shape, -3, 4)
    else:
        a = rand(rng, tname, shape)
    ta, na = make(rt, a, layout)
    float = tname in FLOATS
    extra = "" if op in ("sum", "prod", "mean") else ("3" if op == "norm" else "true")
    # the whole tensor: a number
    got = run(rt, "return a:%s(%s)" % (op, extra), ta)
    want = np_reduce(na, op, None, tname, p=3, biased=True)
    if float:
        assert got == pytest.approx(float_(want), rel=1e-9, abs=1e-9)
    else:
        assert got == float_(want)
    # along each dimension: a tensor keeping that dimension with size 1
    for d in range(len(shape)):
        if op == "norm":
            code, p, biased = "return a:norm(3, %d)" % (d + 1), 3, False
        elif op in ("var", "std"):
            code, p, biased = "return a:%s(%d, %s)" % (op, d + 1, "true" if d % 2 else "false"), 2, d % 2 == 1
        else:
            code, p, biased = "return a:%s(%d)" % (op, d + 1), 2, False
        got = np_of(rt, run(rt, code, ta))
        want = np_reduce(na, op, d, tname, p=p, biased=biased)
        if float:
            tol = (2e-6, 1e-5) if tname == "Float" else (1e-11, 1e-12)
            assert_same(got, want.astype(DTYPES[tname]), *tol)
        else:
            assert_same(got, want.astype(DTYPES[tname]))


def float_(x):
    return float(np.asarray(x).item())


@pytest.mark.parametrize("p", [0, 1, 2, 2.5, math.inf])
def test_norm_exponents(shared_rt, rng, p):
    a = rng.standard_normal((9, 11))
    a[a < -1] = 0
    ta = shared_rt.from_numpy(a)
    got = run(shared_rt, "return a:norm(b), a:norm(b, 2)", ta, p)
    assert got[0] == pytest.approx(float_(np_reduce(a, "norm", None, "Double", p=p)), rel=1e-12)
    assert_same(np_of(shared_rt, got[1]), np_reduce(a, "norm", 1, "Double", p=p), 1e-12, 1e-12)
    assert run(shared_rt, "return a:norm()", ta) == pytest.approx(np.linalg.norm(a), rel=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tname", ALL)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(shared_rt, rng, op, tname, layout):
    rt = shared_rt
    shape = shape_for(layout, ALL.index(tname))
    a = rand(rng, tname, shape, -5, 5)  # small range: ties, where the first index wins
    ta, na = make(rt, a, layout)
    got = run(rt, "return a:%s()" % op, ta)
    assert got == float_(na.max() if op == "max" else na.min())
    arg = np.argmax if op == "max" else np.argmin
    for d in range(len(shape)):
        vals, idx = run(rt, "local v, i = a:%s(%d); return v, i, torch.typename(i)" % (op, d + 1), ta)[:2]
        want = na.max(axis=d, keepdims=True) if op == "max" else na.min(axis=d, keepdims=True)
        assert_same(np_of(rt, vals), want)
        assert_same(np_of(rt, idx), np.expand_dims(arg(na, axis=d), d).astype(np.int64) + 1)
    # result-first form
    got = run(rt, "local v, i = a:clone(), torch.LongTensor(); local v2, i2 = torch.%s(v, i, a, 1); "
                  "assert(v2 == v and i2 == i); return v, i" % op, ta)
    assert_same(np_of(rt, got[1]), np.expand_dims(arg(na, axis=0), 0).astype(np.int64) + 1)


def test_max_nan(shared_rt):
    got = run(shared_rt, "local t = torch.DoubleTensor({{1, 0/0, 3}, {4, 5, 0/0}}); "
                         "local v, i = t:max(2); return t:max(), v[1][1], i[1][1], i[2][1], t:min()")
    assert math.isnan(got[0]) and math.isnan(got[1]) and math.isnan(got[4])
    assert got[2:4] == (2, 3)


def test_reduction_forms(shared_rt, rng):
    rt = shared_rt
    a = rng.standard_normal((4, 5))
    ta = rt.from_numpy(a)
    got = run(rt, "local r = torch.DoubleTensor(); local s = torch.sum(r, a, 2); assert(s == r); "
                  "local q = torch.DoubleTensor(); q:mean(a, 1); "
                  "return r, torch.sum(a, 1), q, torch.std(a), torch.var(a, 1, true), torch.prod(a)", ta)
    np.testing.assert_allclose(np_of(rt, got[0]), a.sum(1, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(np_of(rt, got[1]), a.sum(0, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(np_of(rt, got[2]), a.mean(0, keepdims=True), rtol=1e-13)
    assert got[3] == pytest.approx(a.std(ddof=1), rel=1e-12)
    np.testing.assert_allclose(np_of(rt, got[4]), a.var(0, keepdims=True), rtol=1e-12)
    assert got[5] == pytest.approx(a.prod(), rel=1e-12)
    got = run(rt, "local r, q = torch.DoubleTensor(), torch.DoubleTensor(); local s = r:std(a, 2, true); "
                  "assert(s == r); assert(torch.norm(q, a, 1, 1) == q); return r, q, torch.var(a, 2), a:norm(1)", ta)
    np.testing.assert_allclose(np_of(rt, got[0]), a.std(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(np_of(rt, got[1]), np.abs(a).sum(0, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(np_of(rt, got[2]), a.var(1, ddof=1, keepdims=True), rtol=1e-12)
    assert got[3] == pytest.approx(np.abs(a).sum(), rel=1e-13)
    # x:sum(dim) leaves x alone and keeps the dimension; 1-D gives size 1
    assert run(rt, "return torch.range(1, 4):sum(1):size(1), torch.range(1, 4):sum(1)[1]") == (1, 10)
    with pytest.raises(LuaError, match="dimension 3 out of range of 2D tensor"):
        run(rt, "return a:sum(3)", ta)
    # a single element: unbiased var is NaN (0/0), biased is 0
    got = run(rt, "return torch.DoubleTensor({3}):var(), torch.DoubleTensor({3}):var(true)")
    assert math.isnan(got[0]) and got[1] == 0


@pytest.mark.parametrize("tname", FLOATS)
@pytest.mark.parametrize("layout", ["contig", "transposed"])
def test_sum_and_prod_along_a_dim_fold_in_order(shared_rt, rng, tname, layout):
    """x:sum(d), x:prod(d) and x:mean(d) fold each slice first to last in TH's accreal (double), as Torch7 did:
    Torch7's own test compares y:prod(d) bit for bit with a loop of cmuls. The oracle is that fold in Python
    floats (double), element by element; a SIMD reduction (several partial products combined at the end) gives
    other bits for most rows of 5 or more."""
    rt = shared_rt
    a = rng.uniform(0.1, 1.0, (6, 9, 37)).astype(DTYPES[tname])
    t = rt.from_numpy(a)
    if layout == "transposed":
        t = run(rt, "return a:transpose(1, 3)", t)
        a = np.swapaxes(a, 0, 2)
    for d in range(3):
        got = run(rt, "return a:sum(%d), a:prod(%d), a:mean(%d)" % (d + 1, d + 1, d + 1), t)
        moved = np.moveaxis(a.astype(np.float64), d, -1)
        s = np.empty(moved.shape[:-1])
        p = np.empty(moved.shape[:-1])
        for idx in np.ndindex(*moved.shape[:-1]):
            acc_s, acc_p = 0.0, 1.0
            for x in moved[idx]:
                acc_s += float(x)
                acc_p *= float(x)
            s[idx], p[idx] = acc_s, acc_p
        n = moved.shape[-1]
        for k, (want, what) in enumerate(((s, "sum"), (p, "prod"), (s / n, "mean"))):
            want = np.expand_dims(want, d).astype(DTYPES[tname])
            np.testing.assert_array_equal(np_of(rt, got[k]), want, err_msg="%s along dim %d" % (what, d + 1))


def test_reduction_outer_dims_large(shared_rt, rng):
    # 3-D reductions on every dimension of a transposed tensor (strided runs)
    rt = shared_rt
    a = rng.standard_normal((40, 30, 50)).astype(np.float32)
    ta = run(rt, "return a:transpose(1, 3)", rt.from_numpy(a))
    na = np.swapaxes(a, 0, 2)
    for d in range(3):
        got = run(rt, "return a:sum(%d), a:max(%d)" % (d + 1, d + 1), ta)
        np.testing.assert_allclose(np_of(rt, got[0]), na.astype(np.float64).sum(d, keepdims=True), rtol=2e-6,
                                   atol=1e-5)
        assert_same(np_of(rt, got[1]), na.max(d, keepdims=True))


def test_dist(shared_rt, rng):
    a, b = rng.standard_normal(10), rng.standard_normal(10)
    got = run(shared_rt, "return torch.dist(a, b), a:dist(b, 1)", shared_rt.from_numpy(a), shared_rt.from_numpy(b))
    assert got[0] == pytest.approx(np.linalg.norm(a - b), rel=1e-12)
    assert got[1] == pytest.approx(np.abs(a - b).sum(), rel=1e-12)


# ---------------------------------------------------------------- operators

@pytest.mark.parametrize("tname", ALL)
def test_operators(shared_rt, rng, tname):
    rt = shared_rt
    a, b = rand(rng, tname, (5, 6), 1, 50), rand(rng, tname, (5, 6), 1, 50)
    ta, tb = rt.from_numpy(a.copy()), rt.from_numpy(b.copy())
    got = run(rt, "return a + b, a - b, a + 2, 2 + a, a - 2, 60 - a, a * 3, 3 * a, a / 2, -a, a % 7, "
                  "torch.typename(2 + a)", ta, tb)
    T = a.dtype.type
    with np.errstate(over="ignore"):
        wants = [a + b, a - b, a + T(2), T(2) + a, a - T(2), T(60) - a, a * T(3), T(3) * a,
                 a / T(2) if tname in FLOATS else tdiv(a, np.full_like(a, 2)), -a,
                 np.remainder(a, T(7))]
    for g, w in zip(got[:11], wants):
        assert_same(np_of(rt, g), w.astype(a.dtype), *((0, 0) if tname in INTS else (1e-6, 1e-6)))
    assert got[11] == "torch.%sTensor" % tname
    # sources unchanged
    assert_same(np_of(rt, ta), a)
    with pytest.raises(LuaError, match="number expected"):
        run(rt, "return 2 / a", ta)
    with pytest.raises(LuaError, match="expecting two Tensors or one Tensor and one number"):
        run(rt, "return a + 'x'", ta)


def test_tensor_product_operator(shared_rt, rng):
    rt = shared_rt
    if not run(rt, "return torch._tensorMethods.dot ~= nil and torch._tensorMethods.mm ~= nil "
                   "and torch._tensorMethods.mv ~= nil"):
        pytest.skip("dot/mv/mm (TensorLinalg) are not available")
    m, n, v = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(4)
    tm, tn, tv = rt.from_numpy(m), rt.from_numpy(n), rt.from_numpy(v)
    got = run(rt, "return a * b, a * c, c * c", tm, tn, tv)
    np.testing.assert_allclose(np_of(rt, got[0]), m @ n, rtol=1e-12)
    np.testing.assert_allclose(np_of(rt, got[1]), m @ v, rtol=1e-12)
    assert got[2] == pytest.approx(v @ v, rel=1e-12)


def test_tensor_product_dims_error(shared_rt):
    with pytest.raises(LuaError, match="multiplication between 3D and 1D tensors not yet supported"):
        run(shared_rt, "return torch.zeros(2, 2, 2) * torch.zeros(2)")


# ---------------------------------------------------------------- constructors

def test_constructors(rt):
    got = run(rt, "local z = torch.zeros(2, 3); local o = torch.ones(torch.LongStorage({4})); "
                  "return torch.typename(z), z:sum(), z:size(2), o:sum(), torch.FloatTensor():ones(2, 2):sum(), "
                  "torch.typename(torch.FloatTensor():zeros(3))")
    assert got == ("torch.DoubleTensor", 0, 3, 4, 4, "torch.FloatTensor")
    np.testing.assert_allclose(np_of(rt, run(rt, "return torch.linspace(-1, 2, 7)")), np.linspace(-1, 2, 7),
                               rtol=1e-15, atol=1e-15)
    assert run(rt, "return torch.linspace(0, 1):nElement()") == 100
    np.testing.assert_allclose(np_of(rt, run(rt, "return torch.logspace(0, 3, 4)")), [1, 10, 100, 1000], rtol=1e-14)
    np.testing.assert_array_equal(np_of(rt, run(rt, "return torch.range(1, 5)")), [1, 2, 3, 4, 5])
    np.testing.assert_allclose(np_of(rt, run(rt, "return torch.range(0, 1, 0.3)")), [0, 0.3, 0.6, 0.9], rtol=1e-15)
    np.testing.assert_array_equal(np_of(rt, run(rt, "return torch.range(5, 1, -2)")), [5, 3, 1])
    got = run(rt, "local r = torch.IntTensor(); torch.range(r, 0, 10, 3); return r")
    assert_same(np_of(rt, got), np.array([0, 3, 6, 9], np.int32))
    got = run(rt, "local r = torch.FloatTensor(); r:linspace(0, 1, 3); return r")
    assert_same(np_of(rt, got), np.array([0, 0.5, 1], np.float32))
    run(rt, "torch.setdefaulttensortype('torch.FloatTensor')")
    assert run(rt, "return torch.typename(torch.range(1, 3)), torch.typename(torch.ones(2))") == \
        ("torch.FloatTensor", "torch.FloatTensor")
    with pytest.raises(LuaError, match="incoherent with step sign"):
        run(rt, "return torch.range(5, 1)")
    with pytest.raises(LuaError, match="only defined for FloatTensor and DoubleTensor"):
        run(rt, "return torch.IntTensor():linspace(0, 1, 3)")


def test_big_parallel_consistency(rt, rng):
    # past the OpenMP threshold with 1 and 2 threads: same answers
    a = rng.standard_normal((300, 301)).astype(np.float32)
    ta = rt.from_numpy(a)
    results = []
    for n in (1, 2):
        results.append(run(rt, "torch.setnumthreads(b); return a:sum(), a:sum(1), a:sum(2), torch.exp(a), a:max()",
                           ta, n))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(np_of(rt, results[0][k]), np_of(rt, results[1][k]))
    assert results[0][0] == pytest.approx(float(a.astype(np.float64).sum()), rel=1e-12)
    assert results[0][4] == a.max()


@pytest.mark.parametrize("layout", ["transposed", "narrowed", "expanded"])
def test_strided_ranges_split_among_threads(rt, rng, layout):
    # strided views past the OpenMP threshold: each thread seeks into the middle
    # of a run; 1, 2 and 3 threads must all give NumPy's answer
    a = rng.standard_normal((301, 299)).astype(np.float32)
    b = rng.standard_normal((301, 299)).astype(np.float32)
    ta, na = make(rt, a, layout)
    tb, nb = make(rt, b, "narrowed")
    base = np.zeros((299, 301), np.float32)
    tr = rt.from_numpy(base)
    for n in (1, 2, 3):
        got = run(rt, "torch.setnumthreads(d); torch.add(c:t(), a, b); "
                      "return torch.exp(a), torch.gt(a, b), torch.lt(a, 0.5), torch.addcmul(b, a, a)", ta, tb, tr, n)
        assert_same(base.T, na + nb)
        assert_same(np_of(rt, got[0]), np.exp(na), 3e-6, 1e-6)
        assert_same(np_of(rt, got[1]), (na > nb).astype(np.uint8))
        assert_same(np_of(rt, got[2]), (na < np.float32(0.5)).astype(np.uint8))
        assert_same(np_of(rt, got[3]), nb + na * na, 2e-6, 1e-5)
        base[...] = 0


def test_reshape_zero_fill_atan2(shared_rt, rng):
    rt = shared_rt
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    ta, tb = rt.from_numpy(a), rt.from_numpy(b)
    got = run(rt, "local r = torch.DoubleTensor(); local s = torch.reshape(r, a:t(), 3, 8); assert(s == r); "
                  "return a:t():reshape(2, 12), r, torch.atan2(a, b), torch.zero(a:clone()):sum(), "
                  "torch.fill(torch.FloatTensor(3), 2):sum()", ta, tb)
    assert_same(np_of(rt, got[0]), a.T.reshape(2, 12))
    assert_same(np_of(rt, got[1]), a.T.reshape(3, 8))
    assert_same(np_of(rt, got[2]), np.arctan2(a, b), 1e-14, 1e-15)
    assert got[3:] == (0, 6)
    with pytest.raises(LuaError, match="reshape: size mismatch"):
        run(rt, "return a:reshape(5, 5)", ta)
    with pytest.raises(LuaError, match="atan2: only defined for FloatTensor and DoubleTensor"):
        run(rt, "return torch.atan2(torch.IntTensor(2):zero(), torch.IntTensor(2):zero())")
