"""dot, addmm, addmv, addr, mm, mv, bmm, baddbmm, addbmm and tensor * tensor
against NumPy, on all seven types, every Torch7 call form, transposed /
narrowed / expanded operands and results, odd shapes, aliasing and errors."""
import itertools

import numpy as np
import pytest

from lt_oracle import DTYPES, FLOATS, N, T, assert_close, call, empty, is_float, layouts, lua, rand, wrap_int
from pytorch_bridge import LuaError


def product_oracle(beta, M, alpha, prod, dtype):
    """beta * M + alpha * prod, computed in float64 or int64 (then wrapped)."""
    if is_float(dtype):
        out = alpha * prod
        if M is not None and beta != 0:
            out = out + beta * M.astype(np.float64)
        return out
    out = int(alpha) * prod.astype(np.int64)
    if M is not None and beta != 0:
        out = out + int(beta) * M.astype(np.int64)
    return wrap_int(out, dtype)


def mm64(a, b, dtype):
    big = np.float64 if is_float(dtype) else np.int64
    return a.astype(big) @ b.astype(big)


def check(got, want, dtype):
    assert_close(got, want, dtype, scale=max(1.0, float(np.abs(np.asarray(want, np.float64)).max(initial=0))))


# ---------------------------------------------------------------- addmm forms


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmm_every_form(rt, rng, dtype):
    n, k, m = 4, 6, 3
    a, b, M0 = rand(rng, (n, k), dtype), rand(rng, (k, m), dtype), rand(rng, (n, m), dtype)
    v1, v2 = (2, 3) if not is_float(dtype) else (0.5, -1.5)
    p = mm64(a, b, dtype)
    forms = [
        ("return torch.addmm(a, b, c)", (M0, a, b), 1, 1),
        ("return torch.addmm(%r, a, b, c)" % v1, (M0, a, b), v1, 1),
        ("return torch.addmm(a, %r, b, c)" % v2, (M0, a, b), 1, v2),
        ("return torch.addmm(%r, a, %r, b, c)" % (v1, v2), (M0, a, b), v1, v2),
    ]
    for code, args, e1, e2 in forms:
        ts = [T(rt, x.copy()) for x in args]
        r = call(rt, code, *ts)
        check(N(rt, r), product_oracle(e1, M0, e2, p, dtype), dtype)
        np.testing.assert_array_equal(N(rt, ts[0]), M0)  # M is not modified
    # result-tensor forms: res is resized and written, M untouched
    for code, e1, e2 in [
        ("torch.addmm(a, b, c, d); return a", 1, 1),
        ("torch.addmm(a, %r, b, %r, c, d); return a" % (v1, v2), v1, v2),
        ("torch.addmm(a, %r, b, c, d); return a" % v1, v1, 1),
        ("torch.addmm(a, b, %r, c, d); return a" % v2, 1, v2),
        ("return a:addmm(b, c, d)", 1, 1),
        ("return a:addmm(%r, b, %r, c, d)" % (v1, v2), v1, v2),
        ("return a:addmm(%r, b, c, d)" % v1, v1, 1),
        ("return a:addmm(b, %r, c, d)" % v2, 1, v2),
    ]:
        tres, tM = empty(rt, dtype), T(rt, M0.copy())
        out = call(rt, "local r = (function() " + code + " end)(); assert(r == a); return a", tres, tM, T(rt, a), T(rt, b))
        check(N(rt, out), product_oracle(e1, M0, e2, p, dtype), dtype)
        np.testing.assert_array_equal(N(rt, tM), M0)
    # in-place forms: M is the result
    for code, e1, e2 in [
        ("return a:addmm(b, c)", 1, 1),
        ("return a:addmm(%r, b, c)" % v2, 1, v2),  # a lone number is v2 (gradWeight:addmm(scale, x, y))
        ("return a:addmm(%r, %r, b, c)" % (v1, v2), v1, v2),
    ]:
        Mc = M0.copy()
        tM = T(rt, Mc)
        r = call(rt, code, tM, T(rt, a), T(rt, b))
        check(Mc, product_oracle(e1, M0, e2, p, dtype), dtype)
        check(N(rt, r), Mc, dtype)
    # mm forms
    check(N(rt, call(rt, "return torch.mm(a, b)", T(rt, a), T(rt, b))), p, dtype)
    res = np.full((n, m), 7, dtype)
    tres = T(rt, res)
    r = call(rt, "torch.mm(a, b, c); return a", tres, T(rt, a), T(rt, b))
    check(N(rt, r), product_oracle(0, None, 1, p, dtype), dtype)
    r = call(rt, "return a:mm(b, c)", empty(rt, dtype), T(rt, a), T(rt, b))
    check(N(rt, r), product_oracle(0, None, 1, p, dtype), dtype)


# ---------------------------------------------------------------- layouts


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int16])
def test_addmm_layouts(rt, rng, dtype):
    """Every layout of M, mat1, mat2 and of the result (written in place)."""
    n, k, m = 17, 33, 5
    a, b, M0 = rand(rng, (n, k), dtype), rand(rng, (k, m), dtype), rand(rng, (n, m), dtype)
    a[:] = a[:1]  # constant along dim 1 so that the expanded layout exists
    p = mm64(a, b, dtype)
    v1, v2 = (2, -1) if not is_float(dtype) else (0.25, 2.0)
    want = product_oracle(v1, M0, v2, p, dtype)
    f_inplace = lua(rt, "return a:addmm(%r, %r, b, c)" % (v1, v2))
    f_res = lua(rt, "return a:addmm(%r, b, %r, c, d)" % (v1, v2))
    for (an, av), (bn, bv) in itertools.product(layouts(rng, a), layouts(rng, b)):
        for rn, rv in layouts(rng, M0, kinds=("contig", "transposed", "narrowed")):
            tr = T(rt, rv)
            r = rt.call(f_inplace, tr, T(rt, av), T(rt, bv))
            check(rv, want, dtype)  # written through the view
            assert rt.call(rt.eval("function(x, y) return x == y end"), r, tr), (an, bn, rn)
        # a separate result in every writable layout, M in another
        for (rn, rv), (mn, mv) in itertools.product(layouts(rng, np.zeros_like(M0), ("contig", "transposed", "narrowed")),
                                                    layouts(rng, M0, ("contig", "transposed"))):
            rt.call(f_res, T(rt, rv), T(rt, mv), T(rt, av), T(rt, bv))
            check(rv, want, dtype)
            np.testing.assert_array_equal(mv, M0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 7, 1), (1, 1, 9), (8, 1, 1), (1, 5, 6), (6, 5, 1), (3, 1, 4)])
def test_mm_odd_shapes(rt, rng, dtype, shape):
    n, k, m = shape
    a, b = rand(rng, (n, k), dtype), rand(rng, (k, m), dtype)
    f = lua(rt, "return torch.mm(a, b)")
    for (an, av), (bn, bv) in itertools.product(layouts(rng, a, ("contig", "transposed", "narrowed")),
                                                layouts(rng, b, ("contig", "transposed", "narrowed"))):
        check(N(rt, rt.call(f, T(rt, av), T(rt, bv))), product_oracle(0, None, 1, mm64(a, b, dtype), dtype), dtype)
    # a transposed result of odd shape
    rv = np.zeros((m, n), dtype).T
    call(rt, "a:mm(b, c)", T(rt, rv), T(rt, a), T(rt, b))
    check(rv, product_oracle(0, None, 1, mm64(a, b, dtype), dtype), dtype)


def test_mm_large_float_matches_numpy(rt, rng):
    a = rng.standard_normal((130, 257))
    b = rng.standard_normal((257, 66))
    got = N(rt, call(rt, "return torch.mm(a:t(), b:t())", T(rt, a.T.copy()), T(rt, b.T.copy())))
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-10)


def test_beta_zero_ignores_nan(rt, rng):
    """beta = 0 does not read the result (BLAS semantics, as TH's mm)."""
    for dtype in FLOATS:
        a, b = rand(rng, (3, 4), dtype), rand(rng, (4, 2), dtype)
        M = np.full((3, 2), np.nan, dtype)
        r = N(rt, call(rt, "return torch.addmm(0, a, 1, b, c)", T(rt, M), T(rt, a), T(rt, b)))
        check(r, a.astype(np.float64) @ b, dtype)
        call(rt, "a:mm(b, c)", T(rt, M), T(rt, a), T(rt, b))
        check(M, a.astype(np.float64) @ b, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_result_aliasing_an_operand(rt, rng, dtype):
    """x:addmm(x, y), x:mm(x, y), y:mm(x, y): computed through a temporary."""
    x, y = rand(rng, (5, 5), dtype), rand(rng, (5, 5), dtype)
    want = product_oracle(1, x, 1, mm64(x, y, dtype), dtype)
    xc = x.copy()
    call(rt, "local x = a; x:addmm(x, b)", T(rt, xc), T(rt, y))
    check(xc, want, dtype)
    xc = x.copy()
    call(rt, "local x = a; x:mm(x, b)", T(rt, xc), T(rt, y))
    check(xc, product_oracle(0, None, 1, mm64(x, y, dtype), dtype), dtype)
    yc = y.copy()
    call(rt, "b:mm(a, b)", T(rt, x), T(rt, yc))
    check(yc, product_oracle(0, None, 1, mm64(x, y, dtype), dtype), dtype)
    # x:t() as the result while x is an operand
    xc = x.copy()
    call(rt, "a:t():addmm(0, a, 1, a, b)", T(rt, xc), T(rt, y))
    check(xc.T, product_oracle(0, None, 1, mm64(x, y, dtype), dtype), dtype)
    # mv into its own vector
    v = rand(rng, (5,), dtype)
    vc = v.copy()
    call(rt, "b:mv(a, b)", T(rt, x), T(rt, vc))
    check(vc, product_oracle(0, None, 1, mm64(x, v, dtype), dtype), dtype)


# ---------------------------------------------------------------- addmv, addr


@pytest.mark.parametrize("dtype", DTYPES)
def test_addmv_forms_and_layouts(rt, rng, dtype):
    n, k = 7, 9
    mat, vec, t0 = rand(rng, (n, k), dtype), rand(rng, (k,), dtype), rand(rng, (n,), dtype)
    mat[:] = mat[:1]
    v1, v2 = (3, 2) if not is_float(dtype) else (1.5, -0.5)
    p = mm64(mat, vec, dtype)
    check(N(rt, call(rt, "return torch.addmv(a, b, c)", T(rt, t0), T(rt, mat), T(rt, vec))),
          product_oracle(1, t0, 1, p, dtype), dtype)
    check(N(rt, call(rt, "return torch.addmv(%r, a, %r, b, c)" % (v1, v2), T(rt, t0), T(rt, mat), T(rt, vec))),
          product_oracle(v1, t0, v2, p, dtype), dtype)
    check(N(rt, call(rt, "return torch.mv(a, b)", T(rt, mat), T(rt, vec))), product_oracle(0, None, 1, p, dtype), dtype)
    check(N(rt, call(rt, "return a:mv(b, c)", empty(rt, dtype), T(rt, mat), T(rt, vec))),
          product_oracle(0, None, 1, p, dtype), dtype)
    f = lua(rt, "return a:addmv(%r, %r, b, c)" % (v1, v2))
    vec_strided = np.zeros(2 * k, dtype)[::2]
    vec_strided[:] = vec
    vec_exp = np.lib.stride_tricks.as_strided(np.full(1, vec[0], dtype), shape=(k,), strides=(0,), writeable=True)
    for (mn, mv), (vn, vv) in itertools.product(layouts(rng, mat), [("contig", vec), ("strided", vec_strided),
                                                                    ("expanded", vec_exp)]):
        for rn in ("contig", "strided"):
            r = t0.copy() if rn == "contig" else np.zeros(3 * n, dtype)[1::3]
            r[:] = t0
            rt.call(f, T(rt, r), T(rt, mv), T(rt, vv))
            check(r, product_oracle(v1, t0, v2, mm64(mat, vv, dtype), dtype), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_addr(rt, rng, dtype):
    n, m = 6, 4
    x, y, M0 = rand(rng, (n,), dtype), rand(rng, (m,), dtype), rand(rng, (n, m), dtype)
    v1, v2 = (2, 3) if not is_float(dtype) else (0.5, 2.0)
    outer = mm64(x[:, None], y[None, :], dtype)
    check(N(rt, call(rt, "return torch.addr(a, b, c)", T(rt, M0), T(rt, x), T(rt, y))),
          product_oracle(1, M0, 1, outer, dtype), dtype)
    check(N(rt, call(rt, "return torch.addr(%r, a, %r, b, c)" % (v1, v2), T(rt, M0), T(rt, x), T(rt, y))),
          product_oracle(v1, M0, v2, outer, dtype), dtype)
    for rn, rv in layouts(rng, M0, ("contig", "transposed", "narrowed")):
        ys = np.zeros(3 * m, dtype)[::3]
        ys[:] = y
        call(rt, "a:addr(%r, b, c)" % v2, T(rt, rv), T(rt, x), T(rt, ys))  # gradWeight:addr(scale, go, in)
        check(rv, product_oracle(1, M0, v2, outer, dtype), dtype)


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
def test_bmm_baddbmm_addbmm(rt, rng, dtype):
    B, n, k, m = 3, 4, 5, 2
    b1, b2 = rand(rng, (B, n, k), dtype), rand(rng, (B, k, m), dtype)
    t3, t2 = rand(rng, (B, n, m), dtype), rand(rng, (n, m), dtype)
    v1, v2 = (2, -1) if not is_float(dtype) else (0.5, 1.5)
    big = np.float64 if is_float(dtype) else np.int64
    prods = np.matmul(b1.astype(big), b2.astype(big))
    b1t = np.swapaxes(np.ascontiguousarray(np.swapaxes(b1, 1, 2)), 1, 2)  # transposed matrices
    check(N(rt, call(rt, "return torch.bmm(a, b)", T(rt, b1t), T(rt, b2))), product_oracle(0, None, 1, prods, dtype), dtype)
    check(N(rt, call(rt, "return torch.baddbmm(%r, a, %r, b, c)" % (v1, v2), T(rt, t3), T(rt, b1), T(rt, b2))),
          product_oracle(v1, t3, v2, prods, dtype), dtype)
    check(N(rt, call(rt, "return torch.addbmm(%r, a, %r, b, c)" % (v1, v2), T(rt, t2), T(rt, b1t), T(rt, b2))),
          product_oracle(v1, t2, v2, prods.sum(0), dtype), dtype)
    t3c = t3.copy()
    call(rt, "a:baddbmm(b, c)", T(rt, t3c), T(rt, b1), T(rt, b2))
    check(t3c, product_oracle(1, t3, 1, prods, dtype), dtype)
    t2c = t2.copy()
    call(rt, "a:addbmm(%r, b, c)" % v2, T(rt, t2c), T(rt, b1), T(rt, b2))
    check(t2c, product_oracle(1, t2, v2, prods.sum(0), dtype), dtype)
    r = np.zeros((m, n, B), dtype).transpose(2, 1, 0)  # fully transposed result
    call(rt, "a:bmm(b, c)", T(rt, r), T(rt, b1), T(rt, b2))
    check(r, product_oracle(0, None, 1, prods, dtype), dtype)


# ---------------------------------------------------------------- dot and *


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot(rt, rng, dtype):
    for shape in [(1,), (7,), (1000,), (5, 3)]:
        x, y = rand(rng, shape, dtype), rand(rng, shape, dtype)
        want = float((x.astype(np.float64) * y.astype(np.float64)).sum())
        for (xn, xv), (yn, yv) in itertools.product(layouts(rng, x, ("contig", "transposed", "narrowed")),
                                                    layouts(rng, y, ("contig", "narrowed"))):
            got = call(rt, "return torch.dot(a, b), a:dot(b)", T(rt, xv), T(rt, yv))
            for g in got:
                assert isinstance(g, float) or isinstance(g, int)
                if is_float(dtype):
                    assert abs(g - want) <= 1e-4 * max(1, abs(want))
                else:
                    assert g == want
    # equal element counts suffice (TH), shapes may differ
    x, y = rand(rng, (6,), dtype), rand(rng, (2, 3), dtype)
    assert call(rt, "return a:dot(b)", T(rt, x), T(rt, y)) == pytest.approx(
        float((x.astype(np.float64) * y.reshape(-1)).sum()), rel=1e-5)


def test_mul_operator(rt, rng):
    a, b, v, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(4), rng.standard_normal(4)
    np.testing.assert_allclose(N(rt, call(rt, "return a * b", T(rt, a), T(rt, b))), a @ b, rtol=1e-12)
    np.testing.assert_allclose(N(rt, call(rt, "return a * b", T(rt, a), T(rt, v))), a @ v, rtol=1e-12)
    assert call(rt, "return a * b", T(rt, v), T(rt, w)) == pytest.approx(float(v @ w))
    with pytest.raises(LuaError, match="multiplication between 1D and 2D"):
        call(rt, "return a * b", T(rt, v), T(rt, a))


# ---------------------------------------------------------------- errors


def test_errors(rt, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((5, 2))
    with pytest.raises(LuaError, match=r"size mismatch, m1: \[3 x 4\], m2: \[5 x 2\]"):
        call(rt, "return torch.mm(a, b)", T(rt, a), T(rt, b))
    with pytest.raises(LuaError, match=r"size mismatch, t: \[2 x 2\], m1: \[3 x 4\], m2: \[4 x 2\]"):
        call(rt, "return torch.addmm(a, b, c)", T(rt, np.zeros((2, 2))), T(rt, a),
             T(rt, rng.standard_normal((4, 2))))
    with pytest.raises(LuaError, match=r"size mismatch, mat: \[3 x 4\], vec: \[5\]"):
        call(rt, "return torch.mv(a, b)", T(rt, a), T(rt, np.zeros(5)))
    with pytest.raises(LuaError, match="matrices expected, got 1D, 2D"):
        call(rt, "return torch.mm(a, b)", T(rt, np.zeros(4)), T(rt, a))
    with pytest.raises(LuaError, match="matrix and vector expected"):
        call(rt, "return torch.mv(a, b)", T(rt, a), T(rt, a))
    with pytest.raises(LuaError, match=r"size mismatch, t: \[3 x 4\], vec1: \[3\], vec2: \[5\]"):
        call(rt, "return torch.addr(a, b, c)", T(rt, a), T(rt, np.zeros(3)), T(rt, np.zeros(5)))
    with pytest.raises(LuaError, match=r"size mismatch, batch1: \[2 x 3 x 4\], batch2: \[2 x 5 x 1\]"):
        call(rt, "return torch.bmm(a, b)", T(rt, np.zeros((2, 3, 4))), T(rt, np.zeros((2, 5, 1))))
    with pytest.raises(LuaError, match="equal number of batches"):
        call(rt, "return torch.bmm(a, b)", T(rt, np.zeros((2, 3, 4))), T(rt, np.zeros((3, 4, 1))))
    with pytest.raises(LuaError, match="inconsistent tensor size"):
        call(rt, "return torch.dot(a, b)", T(rt, np.zeros(3)), T(rt, np.zeros(4)))
    with pytest.raises(LuaError, match="expected all tensors to be torch.DoubleTensor"):
        call(rt, "return torch.mm(a, b)", T(rt, a), T(rt, np.zeros((4, 2), np.float32)))
    with pytest.raises(LuaError, match="dot: expected both tensors to be"):
        call(rt, "return torch.dot(a, b)", T(rt, np.zeros(3)), T(rt, np.zeros(3, np.float32)))
    with pytest.raises(LuaError, match=r"addmm: invalid arguments \(expected \[res,\] \[v1,\] M"):
        call(rt, "return torch.addmm(a, b)", T(rt, a), T(rt, a))
    with pytest.raises(LuaError, match="addmm: invalid arguments"):
        call(rt, "return a:addmm('x', b, c)", T(rt, a), T(rt, a), T(rt, a))
    # empty operands (0-dim under Torch7's size rules) are refused, not a crash
    with pytest.raises(LuaError, match="matrices expected, got 0D"):
        call(rt, "return torch.mm(torch.DoubleTensor(), a)", T(rt, a))
    # the error names the caller's line (not a tail call: that frame would be gone)
    with pytest.raises(LuaError, match=r"\(eval\):1:"):
        call(rt, "local r = torch.mm(a, b); return r", T(rt, a), T(rt, b))
    with pytest.raises(LuaError, match=r"\(eval\):1:"):
        call(rt, "local r = a:addmm(b, b); return r", T(rt, a), T(rt, b))
