"""Torch7 behaviours of the torch package found missing or wrong by Torch7's
own test.lua (issue 10), checked against NumPy on fresh random inputs (seed
printed), with results written into non-contiguous views where Torch7 allows
it: sequences into views, squeeze and 1-D select returning numbers, storage
handle equality, isTypeOf patterns, sort/median/mode forms, Generator
serialization, elementSize, shifts and bitwise ops, lerp, diag/eye/tril/triu/
trace/cross/histc/bhistc/renorm, permute/repeatTensor/split/chunk/expand
result forms, the alias multinomial sampler, heap tracking and tic/toc."""
import math
import os

import numpy as np
import pytest

from pytorch_bridge import LuaError
from lt_oracle import DTYPES, FLOATS, INTS, N, T, TYPE_NAMES, call, empty, is_float, layouts, rand

UNSIGNED = {np.dtype(np.uint8): np.uint8, np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16,
            np.dtype(np.int32): np.uint32, np.dtype(np.int64): np.uint64}


def tname(dtype):
    return "torch.%sTensor" % TYPE_NAMES[np.dtype(dtype)]


def framed(rng, shape, dtype):
    """(big, view): a view of `shape` in the middle of a random bigger array,
    non-contiguous, so writes outside it show up in `big`."""
    big = rand(rng, tuple(2 * n + 3 for n in shape), dtype)
    sl = tuple(slice(1, 1 + 2 * n, 2) for n in shape)
    return big, big[sl], sl


def assert_only_view_changed(before, after, sl):
    mask = np.ones(before.shape, bool)
    mask[sl] = False
    np.testing.assert_array_equal(after[mask], before[mask])


# ---------------------------------------------------------------- sequences into views

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sequences_fill_a_view_of_the_right_count_in_row_major_order(rt, rng, dtype):
    n = 12
    for shape in ((3, 4), (2, 6), (12,), (2, 3, 2)):
        cases = [
            ("r:range(a, b, c)", (1.5, 1.5 + 2 * (n - 1), 2.0), 1.5 + 2 * np.arange(n)),
            ("r:linspace(a, b, c)", (-1.0, 4.0, n), np.linspace(-1.0, 4.0, n)),
            ("r:logspace(a, b, c)", (0.0, 2.0, n), 10.0 ** np.linspace(0.0, 2.0, n)),
        ]
        for body, args, want in cases:
            big, view, sl = framed(rng, shape, dtype)
            before = big.copy()
            r = T(rt, view)
            got = call(rt, "local r = ...; local a, b, c = select(2, ...); return " + body, r, *args)
            assert call(rt, "return a == b", got, r)
            assert tuple(N(rt, r).shape) == shape  # kept its shape and strides (TH checks nElement)
            np.testing.assert_allclose(view.reshape(-1, order="C"), want.astype(dtype), rtol=1e-6)
            assert_only_view_changed(before, big, sl)


def test_sequences_from_test_lua_and_other_results(rt):
    # Torch7's test: a 2x2 narrow of a 2x3 filled through its strides
    for body, want in (("y:range(0, 3)", [[0, 0, 1], [0, 2, 3]]),
                       ("y:linspace(0, 3, 4)", [[0, 0, 1], [0, 2, 3]]),
                       ("y:logspace(0, 3, 4)", [[0, 1, 10], [0, 100, 1000]])):
        got = call(rt, "local x = torch.zeros(2, 3); local y = x:narrow(2, 2, 2); %s; return x" % body)
        np.testing.assert_array_equal(N(rt, got), want)
    # integer range into a transposed view
    base = np.zeros((4, 3), np.int32)
    call(rt, "a:range(-5, 6)", T(rt, base.T))
    np.testing.assert_array_equal(base.T.reshape(-1), np.arange(-5, 7))
    # a result of another element count becomes 1-D
    got = call(rt, "local r = torch.Tensor(2, 2); r:range(1, 5); return r")
    np.testing.assert_array_equal(N(rt, got), [1, 2, 3, 4, 5])
    got = call(rt, "return torch.linspace(torch.FloatTensor(), 0, 1, 5)")
    np.testing.assert_allclose(N(rt, got), np.linspace(0, 1, 5, dtype=np.float32))


# ---------------------------------------------------------------- numbers for one element

def test_squeeze_and_select_return_numbers_as_torch7(rt, rng):
    x = rng.standard_normal((3, 4))
    assert call(rt, "return torch.Tensor{5}:squeeze()") == 5
    assert call(rt, "return torch.Tensor(1, 1, 1):fill(2.5):squeeze()") == 2.5
    assert call(rt, "return torch.squeeze(torch.Tensor{7})") == 7
    assert call(rt, "return torch.Tensor{5}:squeeze(1)") == 5  # 1-D source: a number
    got = call(rt, "return torch.Tensor(1, 1):fill(3):squeeze(1)")  # 2-D source: a tensor
    assert N(rt, got).shape == (1,)
    np.testing.assert_array_equal(N(rt, call(rt, "return a:narrow(1, 2, 1):squeeze()", T(rt, x))), x[1])
    r = call(rt, "local r = torch.Tensor(); local o = r:squeeze(a:narrow(2, 3, 1)); return r, o == r", T(rt, x))
    np.testing.assert_array_equal(N(rt, r[0]), x[:, 2])
    assert r[1]
    # 1-D select: the element, whatever the dimension says (test.lua's lua_max relies on it)
    v = x[:, 1].copy()
    for d in (1, 2, 5):
        assert call(rt, "return a:select(b, 3)", T(rt, x[:, 1]), d) == v[2]
    with pytest.raises(LuaError, match="index 4 out of range"):
        call(rt, "return a:select(2, 4)", T(rt, v))
    with pytest.raises(LuaError, match="dimension 3 out of range of 2D"):
        call(rt, "return a:select(3, 1)", T(rt, x))


# ---------------------------------------------------------------- identity and types

def test_storage_handles_of_one_storage_are_equal(rt):
    assert call(rt, "local t = torch.Tensor(3); return t:storage() == t:storage()")
    assert call(rt, "local t = torch.Tensor(3, 4); return t:select(1, 2):storage() == t:t():storage()")
    assert not call(rt, "return torch.Tensor(3):storage() == torch.Tensor(3):storage()")
    assert not call(rt, "return torch.Tensor(3):storage() == torch.Tensor(3)")
    assert not call(rt, "return torch.Tensor(3):storage() == nil")
    # tensors: a handle is its C tensor, so a method returning self gives an equal handle and a new
    # view (a new C tensor in Torch7 too) an unequal one
    assert call(rt, "local t = torch.Tensor(3); return t:fill(1) == t, t == t:narrow(1, 1, 3)") == (True, False)
    assert call(rt, """
        require 'nn'
        local m = nn.Linear(3, 2)
        local p = m:getParameters()
        return m.weight:storage() == m.bias:storage() and m.weight:storage() == p:storage()""")


def test_is_type_of_full_match_unless_pattern(rt):
    cases = {"torch.LongTensor": True, "torch.Long": False, "torch.*Tensor": True, ".*Long": True,
             "torch.IntTensor": False, "Long": False, "LongTensor": False}
    for spec, want in cases.items():
        assert call(rt, "return torch.isTypeOf(torch.LongTensor(), a)", spec) is want, spec
    assert call(rt, "return torch.isTypeOf(torch.LongTensor(), torch.LongTensor)")
    assert not call(rt, "return torch.isTypeOf(torch.LongTensor(), torch.IntTensor)")


def test_element_size_of_tensors_and_storages(rt):
    for dtype in DTYPES:
        name = TYPE_NAMES[np.dtype(dtype)]
        got = call(rt, "return torch.%sTensor():elementSize(), torch.%sStorage():elementSize()" % (name, name))
        assert list(got) == [np.dtype(dtype).itemsize] * 2, name


# ---------------------------------------------------------------- shifts and bitwise operations

def shift_oracle(x, s, left):
    dtype = x.dtype
    if is_float(dtype):
        return (x * dtype.type(2) ** s) if left else (x / dtype.type(2) ** s)
    u = x.view(UNSIGNED[dtype]).astype(np.uint64)
    s64 = np.asarray(s).astype(np.int64)
    ok = (s64 >= 0) & (s64 < 64)
    sh = np.where(ok, s64, 0).astype(np.uint64)
    out = np.where(ok, (u << sh) if left else (u >> sh), 0).astype(np.uint64)
    return out.astype(UNSIGNED[dtype]).view(dtype) if dtype.itemsize < 8 else out.view(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_shifts_by_number_and_tensor(rt, rng, dtype):
    dtype = np.dtype(dtype)
    bits = 8 * dtype.itemsize
    x = rand(rng, (6, 7), dtype)
    if not is_float(dtype):  # every bit pattern, negative numbers included
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size=(6, 7), endpoint=True).astype(dtype)
    for left, name in ((True, "lshift"), (False, "rshift")):
        for s in (0, 1, 3, bits - 1) + ((bits, 70) if not is_float(dtype) else ()):
            for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
                got = N(rt, call(rt, "return torch.%s(a, b)" % name, T(rt, xv), s))
                np.testing.assert_array_equal(got, shift_oracle(x, s, left), err_msg="%s %s %s" % (name, s, ln))
            # in place on a column (non-contiguous), as test.lua
            m = x.copy()
            call(rt, "a:narrow(2, 3, 1):%s(b)" % name, T(rt, m), s)
            want = x.copy()
            want[:, 2] = shift_oracle(x[:, 2], s, left)
            np.testing.assert_array_equal(m, want)
        # element-wise counts (the c- forms)
        hi = 40 if is_float(dtype) else bits + 2
        s = rng.integers(0, hi, size=x.shape).astype(dtype)
        for ln, sv in layouts(rng, s, ("contig", "transposed")):
            got = N(rt, call(rt, "return torch.c%s(a, b)" % name, T(rt, x), T(rt, sv)))
            np.testing.assert_array_equal(got, shift_oracle(x, s, left), err_msg=name + ln)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bitwise_operations(rt, rng, dtype):
    x, y = rand(rng, (5, 9), dtype, -1000, 1000), rand(rng, (5, 9), dtype, -1000, 1000)
    v = int(rand(rng, (), dtype, 0, 100)) if not is_float(dtype) else 3
    ops = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}
    for name, fn in ops.items():
        if is_float(dtype):
            with pytest.raises(LuaError, match="%s is only supported for integer type tensors" % name):
                call(rt, "return a:%s(3)" % name, T(rt, x))
            with pytest.raises(LuaError, match="c%s is only supported for integer type tensors" % name):
                call(rt, "return torch.c%s(a, b)" % name, T(rt, x), T(rt, y))
            continue
        for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
            np.testing.assert_array_equal(N(rt, call(rt, "return torch.%s(a, b)" % name, T(rt, xv), v)),
                                          fn(x, np.asarray(v).astype(x.dtype)))
            np.testing.assert_array_equal(N(rt, call(rt, "return torch.c%s(a, b)" % name, T(rt, xv), T(rt, y))),
                                          fn(x, y))
        # r:op(a, b) writes r; x:op(v) is in place
        r = np.zeros(x.shape[::-1], x.dtype).T  # a transposed result keeps its strides
        call(rt, "a:c%s(b, c)" % name, T(rt, r), T(rt, x), T(rt, y))
        np.testing.assert_array_equal(r, fn(x, y))
        m = x.copy()
        call(rt, "a:%s(b)" % name, T(rt, m), v)
        np.testing.assert_array_equal(m, fn(x, np.asarray(v).astype(x.dtype)))
    # xor swap, as test.lua
    t1, t2 = rand(rng, (10, 10), np.int64, 0, 10000), rand(rng, (10, 10), np.int64, 10001, 20000)
    if dtype == np.int64:
        r1, r2 = call(rt, "local t3 = torch.cbitxor(a, b); return torch.cbitxor(t3, b), torch.cbitxor(t3, a)",
                      T(rt, t1), T(rt, t2))
        np.testing.assert_array_equal(N(rt, r1), t1)
        np.testing.assert_array_equal(N(rt, r2), t2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mod_and_cmod_are_fmod(rt, rng, dtype):
    x = rand(rng, (4, 6), dtype, -50, 50)
    y = rand(rng, (4, 6), dtype, 1, 9)
    v = dtype(3) if not is_float(dtype) else dtype(2.5)
    np.testing.assert_array_equal(N(rt, call(rt, "return torch.mod(a, b)", T(rt, x.T), float(v))),
                                  np.fmod(x.T, v).astype(dtype))
    np.testing.assert_array_equal(N(rt, call(rt, "return a:cmod(b)", T(rt, x.copy()), T(rt, y))),
                                  np.fmod(x, y).astype(dtype))


# ---------------------------------------------------------------- lerp, renorm

@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp(rt, rng, dtype):
    a, b = rand(rng, (7, 5), dtype), rand(rng, (7, 5), dtype)
    w = float(rng.random())
    want = a + dtype(w) * (b - a)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for (la, av), (lb, bv) in zip(layouts(rng, a, ("contig", "transposed", "narrowed")),
                                  layouts(rng, b, ("narrowed", "contig", "transposed"))):
        np.testing.assert_allclose(N(rt, call(rt, "return torch.lerp(a, b, c)", T(rt, av), T(rt, bv), w)), want, **tol)
    r = np.zeros((5, 7), dtype).T  # the result keeps its (transposed) strides
    call(rt, "torch.lerp(a, b, c, d)", T(rt, r), T(rt, a), T(rt, b), w)
    np.testing.assert_allclose(r, want, **tol)
    m = a.copy()
    call(rt, "a:lerp(b, c)", T(rt, m), T(rt, b), w)  # in place
    np.testing.assert_allclose(m, want, **tol)
    assert call(rt, "return torch.lerp(2, 10, 0.25)") == 4
    with pytest.raises(LuaError, match="lerp: only defined for FloatTensor and DoubleTensor"):
        call(rt, "return torch.lerp(torch.IntTensor(3), torch.IntTensor(3), 0.5)")


def renorm_oracle(x, p, dim, maxnorm):
    moved = np.moveaxis(x.astype(np.float64), dim, 0)
    norms = (np.abs(moved.reshape(moved.shape[0], -1)) ** p).sum(1) ** (1.0 / p)
    factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * factor.reshape((-1,) + (1,) * (moved.ndim - 1)), 0, dim).astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_renorm(rt, rng, dtype):
    x = rand(rng, (4, 5, 6), dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for p in (1, 2, 3.5):
        for dim in range(3):
            moved = np.moveaxis(x.astype(np.float64), dim, 0).reshape(x.shape[dim], -1)
            norms = np.sort((np.abs(moved) ** p).sum(1) ** (1.0 / p))
            # halfway between two slice norms: some slices scaled, some not, none on the edge
            maxnorm = float(norms[len(norms) // 2 - 1] + norms[len(norms) // 2]) / 2
            want = renorm_oracle(x, p, dim, maxnorm)
            for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
                got = N(rt, call(rt, "return torch.renorm(a, b, c, d)", T(rt, xv), p, dim + 1, maxnorm))
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
            m = x.copy()
            call(rt, "a:renorm(b, c, d)", T(rt, m), p, dim + 1, maxnorm)  # in place
            np.testing.assert_allclose(m, want, rtol=tol, atol=tol)
    with pytest.raises(LuaError, match="renorm: need at least 2 dimensions"):
        call(rt, "return torch.renorm(torch.Tensor(5), 2, 1, 1)")


# ---------------------------------------------------------------- matrices

@pytest.mark.parametrize("dtype", DTYPES)
def test_diag_eye_tril_triu_trace(rt, rng, dtype):
    m = rand(rng, (5, 7), dtype)
    vbig = rand(rng, (12,), dtype)
    v = vbig[::2]  # a strided vector
    for k in (-3, -1, 0, 2, 6, 7):
        for ln, mv in layouts(rng, m, ("contig", "transposed", "narrowed")):
            got = call(rt, "return torch.diag(a, b)", T(rt, mv), k)
            want = np.diagonal(m, k)
            if want.size:
                np.testing.assert_array_equal(N(rt, got), want)
            else:
                assert call(rt, "return a:dim()", got) == 0
            np.testing.assert_array_equal(N(rt, call(rt, "return torch.tril(a, b)", T(rt, mv), k)), np.tril(m, k))
            np.testing.assert_array_equal(N(rt, call(rt, "return a:triu(b)", T(rt, mv), k)), np.triu(m, k))
        np.testing.assert_array_equal(N(rt, call(rt, "return a:diag(b)", T(rt, v), k)), np.diag(v, k))
    # results written through their strides: a transposed result of the right size keeps its layout
    big, view, sl = framed(rng, (5, 7), dtype)
    before = big.copy()
    call(rt, "torch.tril(a, b, 1)", T(rt, view), T(rt, m))
    np.testing.assert_array_equal(view, np.tril(m, 1))
    assert_only_view_changed(before, big, sl)
    big, view, sl = framed(rng, (6, 6), dtype)
    before = big.copy()
    call(rt, "a:diag(b)", T(rt, view), T(rt, v))
    np.testing.assert_array_equal(view, np.diag(v))
    assert_only_view_changed(before, big, sl)
    big, view, sl = framed(rng, (4, 3), dtype)
    before = big.copy()
    call(rt, "a:eye(4, 3)", T(rt, view))
    np.testing.assert_array_equal(view, np.eye(4, 3))
    assert_only_view_changed(before, big, sl)
    # eye with the default type, and square
    np.testing.assert_array_equal(N(rt, call(rt, "return torch.eye(3)")), np.eye(3))
    got = call(rt, "return torch.eye(torch.%sTensor(), 2, 5)" % TYPE_NAMES[np.dtype(dtype)])
    np.testing.assert_array_equal(N(rt, got), np.eye(2, 5, dtype=dtype))
    # trace: TH's accreal (exact int64 for integer types)
    for ln, mv in layouts(rng, m, ("contig", "transposed", "narrowed")):
        got = call(rt, "return a:trace(), torch.trace(a)", T(rt, mv))
        want = np.trace(m.astype(np.float64 if is_float(dtype) else np.int64))
        np.testing.assert_allclose(list(got), [want, want], rtol=1e-6)
    with pytest.raises(LuaError, match="trace: a matrix"):
        call(rt, "return torch.Tensor(3):trace()")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross(rt, rng, dtype):
    a, b = rand(rng, (4, 3, 5), dtype), rand(rng, (4, 3, 5), dtype)
    want = np.cross(a.astype(np.int64) if not is_float(dtype) else a,
                    b.astype(np.int64) if not is_float(dtype) else b, axis=1).astype(dtype)
    for (la, av), (lb, bv) in zip(layouts(rng, a, ("contig", "transposed", "narrowed")),
                                  layouts(rng, b, ("transposed", "narrowed", "contig"))):
        np.testing.assert_allclose(N(rt, call(rt, "return torch.cross(a, b)", T(rt, av), T(rt, bv))), want,
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(N(rt, call(rt, "return a:cross(b, 2)", T(rt, av), T(rt, bv))), want,
                                   rtol=1e-5, atol=1e-5)
    r = np.zeros((5, 3, 4), dtype).transpose(2, 1, 0)  # a non-contiguous result
    call(rt, "torch.cross(a, b, c)", T(rt, r), T(rt, a), T(rt, b))
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)
    m = a.copy()
    call(rt, "torch.cross(a, a, b)", T(rt, m), T(rt, b))  # the result may be an operand
    np.testing.assert_allclose(m, want, rtol=1e-5, atol=1e-5)
    # the first dimension of size 3 by default
    c, d = rand(rng, (3, 3), dtype), rand(rng, (3, 3), dtype)
    w = np.cross(c.astype(np.float64), d.astype(np.float64), axis=0).astype(dtype)
    np.testing.assert_allclose(N(rt, call(rt, "return torch.cross(a, b)", T(rt, c), T(rt, d))), w,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(LuaError, match="no dimension of size 3"):
        call(rt, "return torch.cross(torch.Tensor(2, 4), torch.Tensor(2, 4))")


def histc_oracle(x, nbins, lo, hi):
    x = np.asarray(x)
    if lo == hi:
        lo, hi = x.min(), x.max()
        if lo == hi:
            lo, hi = lo - 1, hi + 1
    lo, hi = x.dtype.type(lo), x.dtype.type(hi)
    inside = x[(x >= lo) & (x <= hi)]
    bins = np.minimum(((inside - lo) / (hi - lo) * x.dtype.type(nbins)).astype(np.int64), nbins - 1)
    return np.bincount(bins, minlength=nbins).astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_and_bhistc(rt, rng, dtype):
    x = (rng.standard_normal((6, 40)) * 3).astype(dtype)
    for nbins, lo, hi in ((10, 0, 0), (7, -2.0, 3.0), (1, 0, 0), (100, -10, 10)):
        want = histc_oracle(x.reshape(-1), nbins, lo, hi)
        for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
            np.testing.assert_array_equal(N(rt, call(rt, "return torch.histc(a, b, c, d)", T(rt, xv), nbins, lo, hi)),
                                          want)
        # bhistc: one histogram per row, over the range of all the data when lo == hi
        if lo == hi:
            lo2, hi2 = float(x.min()), float(x.max())
        else:
            lo2, hi2 = lo, hi
        wantb = np.stack([histc_oracle(row, nbins, lo2, hi2) for row in x])
        for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
            np.testing.assert_array_equal(N(rt, call(rt, "return torch.bhistc(a, b, c, d)", T(rt, xv), nbins, lo, hi)),
                                          wantb)
    # integer data on integer bins: the same as numpy.histogram; defaults nbins = 100, data range
    ints = rng.integers(0, 10, size=200).astype(dtype)
    np.testing.assert_array_equal(N(rt, call(rt, "return torch.histc(a, 10, -0.5, 9.5)", T(rt, ints))),
                                  np.histogram(ints, 10, (-0.5, 9.5))[0].astype(dtype))
    assert N(rt, call(rt, "return a:histc()", T(rt, ints))).shape == (100,)
    # the test.lua cases
    np.testing.assert_array_equal(N(rt, call(rt, "return torch.histc(torch.Tensor{2, 4, 2, 2, 5, 4}, 5, 1, 5)")),
                                  [0, 3, 0, 2, 1])
    # into a view of the right size, through its strides
    big, view, sl = framed(rng, (6, 7), dtype)
    before = big.copy()
    call(rt, "torch.bhistc(a, b, 7, -2, 3)", T(rt, view), T(rt, x))
    np.testing.assert_array_equal(view, np.stack([histc_oracle(row, 7, -2.0, 3.0) for row in x]))
    assert_only_view_changed(before, big, sl)
    with pytest.raises(LuaError, match="bhistc: a 2D tensor"):
        call(rt, "return torch.bhistc(torch.Tensor(5))")
    with pytest.raises(LuaError, match="histc: only defined for FloatTensor and DoubleTensor"):
        call(rt, "return torch.histc(torch.IntTensor(5))")


# ---------------------------------------------------------------- sort, median, mode

def test_sort_descending_with_the_dimension_omitted(rt, rng):
    x = rng.random((9, 11))
    v, i = call(rt, "return torch.sort(a, true)", T(rt, x))
    np.testing.assert_array_equal(N(rt, v), -np.sort(-x, axis=1))
    np.testing.assert_array_equal(N(rt, i), np.argsort(-x, axis=1, kind="stable") + 1)
    v2, i2 = call(rt, "local v, i = torch.Tensor(), torch.LongTensor(); torch.sort(v, i, a, true); return v, i",
                  T(rt, x.T))
    np.testing.assert_array_equal(N(rt, v2), -np.sort(-x.T, axis=1))
    v3 = call(rt, "return (a:sort(true))", T(rt, x))
    np.testing.assert_array_equal(N(rt, v3), N(rt, v))


@pytest.mark.parametrize("dtype", DTYPES)
def test_median_defaults_to_the_last_dimension(rt, rng, dtype):
    for cols in (155, 156):
        x = rand(rng, (7, cols), dtype, -1000, 1000) if not is_float(dtype) else rand(rng, (7, cols), dtype)
        mid = (cols + 1) // 2
        order = np.argsort(x, axis=1, kind="stable")
        want_i = order[:, mid - 1:mid]
        want_v = np.take_along_axis(x, want_i, 1)
        for form in ("torch.median(a)", "a:median()", "torch.median(a, 2)"):
            v, i = call(rt, "return " + form, T(rt, x))
            np.testing.assert_array_equal(N(rt, v), want_v)
            np.testing.assert_array_equal(N(rt, i), want_i + 1)
        v, i = call(rt, "local v, i = torch.%s(), torch.LongTensor(); torch.median(v, i, a); return v, i"
                    % tname(dtype).split(".")[1], T(rt, x))
        np.testing.assert_array_equal(N(rt, v), want_v)


def mode_oracle(x, axis):
    moved = np.moveaxis(x, axis, -1)
    vals = np.empty(moved.shape[:-1], x.dtype)
    idx = np.empty(moved.shape[:-1], np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        row = moved[pos]
        uniq, counts = np.unique(row, return_counts=True)  # ascending: the smallest wins ties
        best = uniq[np.argmax(counts)]
        vals[pos] = best
        idx[pos] = np.nonzero(row == best)[0][-1] + 1  # its last position
    return np.expand_dims(vals, axis), np.expand_dims(idx, axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mode(rt, rng, dtype):
    x = rng.integers(0, 5, size=(4, 6, 9)).astype(dtype)
    for ln, xv in layouts(rng, x, ("contig", "transposed", "narrowed")):
        for dim in range(3):
            v, i = call(rt, "return torch.mode(a, b)", T(rt, xv), dim + 1)
            wv, wi = mode_oracle(x, dim)
            np.testing.assert_array_equal(N(rt, v), wv)
            np.testing.assert_array_equal(N(rt, i), wi)
    v, i = call(rt, "return a:mode()", T(rt, x))  # the last dimension
    wv, wi = mode_oracle(x, 2)
    np.testing.assert_array_equal(N(rt, v), wv)
    np.testing.assert_array_equal(N(rt, i), wi)
    if is_float(dtype):
        got = call(rt, "return (torch.mode(torch.Tensor{{1, 2, 2, 2, 3, 2}, {1.5, 2, 2, 1.5, 1.5, 5}}))")
        np.testing.assert_array_equal(N(rt, got), [[2], [1.5]])


# ---------------------------------------------------------------- views and tiling

def test_permute_repeat_tensor_split_chunk_expand(rt, rng):
    x = rng.standard_normal((2, 3, 4, 5))
    for perm in ((4, 3, 2, 1), (2, 4, 1, 3), (1, 2, 3, 4)):
        for form in ("a:permute(%s)", "torch.permute(a, %s)"):
            got = call(rt, "return " + form % ", ".join(map(str, perm)), T(rt, x))
            np.testing.assert_array_equal(N(rt, got), np.transpose(x, [p - 1 for p in perm]))
    with pytest.raises(LuaError, match="permute: invalid permutation"):
        call(rt, "return a:permute(1, 1, 2, 3)", T(rt, x))
    y = rng.standard_normal((3, 4))
    for ln, yv in layouts(rng, y, ("contig", "transposed", "narrowed")):
        for reps in ((2, 3), (1, 1), (3, 1, 2), (2, 2, 1, 1)):
            got = call(rt, "return a:repeatTensor(%s)" % ", ".join(map(str, reps)), T(rt, yv))
            np.testing.assert_array_equal(N(rt, got), np.tile(y, reps))
            got = call(rt, "return torch.repeatTensor(a, torch.LongStorage{%s})" % ", ".join(map(str, reps)),
                       T(rt, yv))
            np.testing.assert_array_equal(N(rt, got), np.tile(y, reps))
    r = np.zeros((6, 3, 4)).transpose(1, 0, 2)  # result form into a non-contiguous view of the right size
    call(rt, "a:repeatTensor(b, 3, 2, 1)", T(rt, r), T(rt, y))
    np.testing.assert_array_equal(r, np.tile(y, (3, 2, 1)))
    z = rng.standard_normal((7, 4))
    parts = call(rt, "local t = a:split(3); return #t, t[1], t[2], t[3]", T(rt, z))
    assert parts[0] == 3
    for got, want in zip(parts[1:], np.split(z, [3, 6])):
        np.testing.assert_array_equal(N(rt, got), want)
    parts = call(rt, "local r = {9, 9, 9, 9}; torch.split(r, a, 3, 2); return #r, r[1], r[2]", T(rt, z))
    assert parts[0] == 2
    np.testing.assert_array_equal(N(rt, parts[2]), z[:, 3:])
    parts = call(rt, "local t = a:chunk(3, 2); return #t, t[1], t[3]", T(rt, z.T.copy()))
    assert parts[0] == 3
    np.testing.assert_array_equal(N(rt, parts[2]), z.T[:, 6:])
    col = rng.standard_normal((8, 1))
    got = call(rt, "local r = torch.Tensor(); r:expand(a, 8, 5); return r", T(rt, col))
    np.testing.assert_array_equal(N(rt, got), np.broadcast_to(col, (8, 5)))
    got = call(rt, "local r = torch.Tensor(); r:expandAs(a, torch.Tensor(8, 3)); return r", T(rt, col))
    np.testing.assert_array_equal(N(rt, got), np.broadcast_to(col, (8, 3)))
    assert call(rt, "return torch.Tensor.isTensor(torch.Tensor()), torch.isSize(torch.Tensor(2, 3), "
                    "torch.LongStorage{2, 3})") == (True, True)


# ---------------------------------------------------------------- random: alias method, Generator

def alias_distribution(J, q):
    """The distribution a (J, q) table draws from: bin k is kept with q_k and
    otherwise gives its alias J_k (1-based)."""
    K = len(q)
    p = np.asarray(q, np.float64).copy()
    np.add.at(p, np.asarray(J) - 1, 1 - np.asarray(q, np.float64))
    return p / K


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_alias_tables_and_draws(rt, rng, dtype):
    for K in (1, 2, 7, 300):
        probs = rng.random(K).astype(dtype)
        probs[rng.random(K) < 0.2] = 0
        if probs.sum() == 0:
            probs[0] = 1
        J, q = call(rt, "local s = torch.multinomialAliasSetup(a); return s[1], s[2]", T(rt, probs))
        J, q = N(rt, J), N(rt, q)
        assert J.dtype == np.int64 and q.dtype == dtype
        assert J.min() >= 1 and J.max() <= K and q.min() >= 0 and q.max() <= 1
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(alias_distribution(J, q), probs / probs.astype(np.float64).sum(), atol=tol)
    # draws follow the distribution: counts within 5 standard deviations
    probs = np.array([0.05, 0.3, 0.0, 0.15, 0.5], dtype)
    n = 200000
    counts = call(rt, """
        torch.manualSeed(a)
        local s = torch.multinomialAliasSetup(b)
        local out = torch.multinomialAlias(torch.LongTensor(c), s)
        local counts = torch.zeros(b:size(1))
        out:apply(function(k) counts[k] = counts[k] + 1 end)
        return counts""", int(rng.integers(1, 2**31)), T(rt, probs), n)
    counts = N(rt, counts)
    sd = np.sqrt(n * probs * (1 - probs))
    assert counts[2] == 0
    assert np.all(np.abs(counts - n * probs) <= 5 * sd + 1), counts
    # a strided output is filled through its strides; a state table is refilled in place
    big = np.zeros((6, 10), np.int64)
    got = call(rt, """
        local s = {torch.LongTensor(), torch.%s()}
        local s2 = torch.multinomialAliasSetup(b, s)
        assert(s2 == s)
        return torch.multinomialAlias(a, s)""" % tname(dtype).split(".")[1],
               T(rt, big[1:5, 2:9:3]), T(rt, probs))
    assert (big[1:5, 2:9:3] >= 1).all() and (big[1:5, 2:9:3] <= 5).all() and (big[1:5, 2:9:3] != 3).all()
    mask = np.ones(big.shape, bool)
    mask[1:5, 2:9:3] = False
    assert (big[mask] == 0).all()
    # the same seed gives the same draws
    twice = call(rt, """
        local s = torch.multinomialAliasSetup(a)
        torch.manualSeed(7); local x = torch.multinomialAlias(torch.LongTensor(50), s)
        torch.manualSeed(7); local y = torch.multinomialAlias(torch.LongTensor(50), s)
        return x:equal(y)""", T(rt, probs))
    assert twice
    with pytest.raises(LuaError, match="invalid distribution"):
        call(rt, "return torch.multinomialAliasSetup(torch.Tensor{0.5, -0.1})")


def test_generator_serializes_its_state(rt, tmp_path):
    for mode in ("binary", "ascii"):
        same = call(rt, """
            local g = torch.Generator()
            torch.manualSeed(g, 123)
            torch.random(g); torch.normal(g)   -- mid-stream, with a cached normal
            local h = torch.deserialize(torch.serialize(g, a), a)
            local ok = torch.typename(h) == 'torch.Generator'
            for i = 1, 5 do ok = ok and torch.random(g) == torch.random(h) and torch.normal(g) == torch.normal(h) end
            local other = torch.Generator(); torch.manualSeed(other, 124)
            return ok and torch.random(g) ~= torch.random(other)""", mode)
        assert same, mode
    path = str(tmp_path / "gen.t7")
    got = call(rt, """
        local g = torch.Generator(); torch.manualSeed(g, 5)
        torch.save(a, {gen = g, x = torch.rand(g, 3)})
        local want = torch.rand(g, 4)
        local o = torch.load(a)
        return (torch.rand(o.gen, 4) - want):abs():max(), torch.initialSeed(o.gen)""", path)
    assert got == (0, 5)
    with pytest.raises(LuaError, match="invalid generator state"):
        call(rt, """
            local f = torch.MemoryFile()
            f:writeObject(torch.Generator())
            local s = f:storage()
            for i = s:size() - 5048, s:size() - 1 do s[i] = 0 end   -- zero the state bytes
            f:seek(1)
            return f:readObject()""")


def test_heap_tracking_switch_and_tic_toc(rt):
    assert call(rt, "torch.setheaptracking(true); local a = torch._heaptracking; "
                    "torch.setheaptracking(false); return a, torch._heaptracking") == (True, False)
    with pytest.raises(LuaError, match="boolean expected"):
        call(rt, "torch.setheaptracking(1)")
    dt = call(rt, "local t = torch.tic(); local x = 0; for i = 1, 1e6 do x = x + i end; return torch.toc(t)")
    assert 0 <= dt < 5


@pytest.mark.parametrize("name", ["max", "min"])
def test_result_first_max_min_along_a_dimension(rt, rng, name):
    """res:max(src, dim) (Torch7's optional result, as optim's adamax uses it) reduces src along dim into
    res; res:max(a, b) of two tensors stays the elementwise cmax."""
    src = rng.standard_normal((4, 7))
    f = rt.eval("""function(src, name)
       local r1, r2, e = torch.Tensor(), torch.Tensor(), torch.Tensor()
       local _, idx = r1[name](r1, src, 1)
       r2[name](r2, src, 2)
       e[name](e, src, src:clone():mul(-1))
       return r1, idx, r2, e
    end""")
    r1, idx, r2, e = f(rt.from_numpy(src), name)
    red = np.max if name == "max" else np.min
    arg = np.argmax if name == "max" else np.argmin
    np.testing.assert_array_equal(rt.to_numpy(r1), red(src, 0, keepdims=True))
    np.testing.assert_array_equal(rt.to_numpy(idx), arg(src, 0)[None, :] + 1)
    np.testing.assert_array_equal(rt.to_numpy(r2), red(src, 1, keepdims=True))
    np.testing.assert_array_equal(rt.to_numpy(e), (np.maximum if name == "max" else np.minimum)(src, -src))


# ---------------------------------------------------------------- found by cutorch's own test.lua (2026-12-06)
def test_storage_instances_carry_new_and_tensor_type_of_a_non_tensor(rt):
    """s.new(n) is the storage class's constructor, as t.new is the tensor's (cutorch's tests clone storages
    with it); torch.Tensor.type(x) of a number is nil (torch.typename), not an error."""
    for name in ("Float", "Double", "Long", "Byte"):
        r = rt.eval("""function(name)
            local s = torch[name .. 'Storage'](3)
            local t = s.new(5)
            return torch.typename(t), t:size(), torch[name .. 'Storage'].new(2):size()
        end""")(name)
        assert tuple(r) == ("torch.%sStorage" % name, 5, 2)
    assert rt.eval("torch.Tensor.type(5)") is None
    assert rt.eval("torch.Tensor.type('x')") is None
    assert rt.eval("torch.Tensor.type(torch.IntTensor(2))") == "torch.IntTensor"


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_rand_and_randn_as_methods_fill_their_tensor(rt, name):
    """x:rand(sizes) resizes x and fills it, the same draws as torch.rand(x, sizes) from the same seed."""
    a = rt.eval("""function(name)
        torch.manualSeed(17)
        local x = torch.DoubleTensor()
        local r = x[name](x, 3, 4)
        assert(r == x)
        return x
    end""")(name)
    b = rt.eval("function(name) torch.manualSeed(17) return torch[name](torch.DoubleTensor(), 3, 4) end")(name)
    a, b = rt.to_numpy(a), rt.to_numpy(b)
    assert a.shape == (3, 4)
    np.testing.assert_array_equal(a, b)
    if name == "rand":
        assert a.min() >= 0 and a.max() < 1
    assert len(np.unique(a)) == 12
