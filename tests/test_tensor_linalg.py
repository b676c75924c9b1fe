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


# ---------------------------------------------------------------- LAPACK
# gesv, trtrs, gels, symeig, eig, svd, inverse, potrf/potrs/potri, pstrf, qr,
# geqrf/orgqr/ormqr on Float and Double, checked against NumPy and against
# their defining properties (A x = B, Q R = A, U S V^T = A, ...) on fresh
# random inputs in contiguous, transposed and narrowed layouts.

LAYOUTS = ("contig", "transposed", "narrowed")


def lapack_tol(dtype):
    return 2e-3 if np.dtype(dtype) == np.float32 else 1e-9


def near(got, want, dtype, scale=1.0):
    t = lapack_tol(dtype)
    got, want = np.asarray(got), np.asarray(want)
    for part in (np.real, np.imag):
        np.testing.assert_allclose(part(got).astype(np.float64), part(want).astype(np.float64), rtol=t, atol=t * scale)


def well_conditioned(rng, n, dtype):
    return (rng.standard_normal((n, n)) + n * np.eye(n)).astype(dtype)


def spd(rng, n, dtype):
    x = rng.standard_normal((n, n + 2))
    return (x @ x.T + n * np.eye(n)).astype(dtype)


def in_layouts(rng, arr):
    return layouts(rng, arr, LAYOUTS)


def is_colmajor(rt, t):
    return call(rt, "return a:stride(1) == 1 and a:stride(2) == a:size(1)", t)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gesv(rt, rng, dtype):
    n, nrhs = int(rng.integers(2, 12)), int(rng.integers(1, 5))
    A, B = well_conditioned(rng, n, dtype), rng.standard_normal((n, nrhs)).astype(dtype)
    want = np.linalg.solve(A.astype(np.float64), B.astype(np.float64))
    for (_, a), (_, b) in zip(in_layouts(rng, A), in_layouts(rng, B)):
        ta, tb = T(rt, a), T(rt, b)
        x, lu = call(rt, "return torch.gesv(b, a)", ta, tb)
        near(N(rt, x), want, dtype, scale=np.abs(want).max())
        assert is_colmajor(rt, x) and is_colmajor(rt, lu)  # Torch7 hands LAPACK's layout back
        np.testing.assert_array_equal(N(rt, ta), A)  # inputs untouched
        np.testing.assert_array_equal(N(rt, tb), B)
    # result tensors given: written and returned; reused a second time
    got = call(rt, "local tb, ta = a.new(), a.new(); for i = 1, 2 do local x, y = torch.gesv(tb, ta, b, c);"
                   " assert(x == tb and y == ta) end; return tb", T(rt, A), T(rt, B), T(rt, A))
    near(N(rt, got), want, dtype, scale=np.abs(want).max())
    # in place: torch.gesv(b, a, b, a) leaves x in b
    got = call(rt, "local bb, aa = a:clone(), b:clone(); torch.gesv(bb, aa, bb, aa); return bb", T(rt, B), T(rt, A))
    near(N(rt, got), want, dtype, scale=np.abs(want).max())
    # a vector b is one column
    got = N(rt, call(rt, "return (torch.gesv(a, b))", T(rt, B[:, 0].copy()), T(rt, A)))
    assert got.shape == (n, 1)
    near(got[:, 0], want[:, 0], dtype, scale=np.abs(want).max())


@pytest.mark.parametrize("dtype", FLOATS)
def test_trtrs(rt, rng, dtype):
    n = int(rng.integers(2, 10))
    A, B = well_conditioned(rng, n, dtype), rng.standard_normal((n, 3)).astype(dtype)
    for uplo in "UL":
        for trans in "NT":
            for diag in "NU":
                tri = np.triu(A) if uplo == "U" else np.tril(A)
                tri = tri.astype(np.float64)
                if diag == "U":
                    np.fill_diagonal(tri, 1)
                op = tri.T if trans == "T" else tri
                want = np.linalg.solve(op, B.astype(np.float64))
                _, a = in_layouts(rng, A)[int(rng.integers(3))]
                got = call(rt, "return (torch.trtrs(b, a, c, d, e))", T(rt, a), T(rt, B), uplo, trans, diag)
                near(N(rt, got), want, dtype, scale=np.abs(want).max())
    # the defaults are 'U', 'N', 'N'
    got = call(rt, "return (torch.trtrs(b, a))", T(rt, A), T(rt, B))
    near(N(rt, got), np.linalg.solve(np.triu(A).astype(np.float64), B), dtype, scale=10)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(9, 4), (4, 4), (3, 7)])
def test_gels(rt, rng, dtype, shape):
    """Least squares for tall A, the minimum-norm solution for wide A (both what lstsq gives)."""
    m, n = shape
    A = rng.standard_normal(shape).astype(dtype)
    B = rng.standard_normal((m, 2)).astype(dtype)
    want = np.linalg.lstsq(A.astype(np.float64), B.astype(np.float64), rcond=None)[0]
    for (_, a), (_, b) in zip(in_layouts(rng, A), in_layouts(rng, B)):
        x = N(rt, call(rt, "return (torch.gels(b, a))", T(rt, a), T(rt, b)))
        assert x.shape == (n, 2)
        near(x, want, dtype, scale=np.abs(want).max())
    got = call(rt, "local bb, aa = a:clone(), b:clone(); torch.gels(bb, aa, bb, aa); return bb", T(rt, B), T(rt, A))
    near(N(rt, got), want, dtype, scale=np.abs(want).max())


@pytest.mark.parametrize("dtype", FLOATS)
def test_symeig(rt, rng, dtype):
    n = int(rng.integers(2, 12))
    S = spd(rng, n, dtype) - n * np.eye(n, dtype=dtype)
    want = np.linalg.eigvalsh(S.astype(np.float64))
    scale = np.abs(want).max()
    e = N(rt, call(rt, "return (torch.symeig(a))", T(rt, S.copy())))  # 'N': eigenvalues only
    near(e, want, dtype, scale=scale)
    for _, s in in_layouts(rng, S):
        e, v = call(rt, "return torch.symeig(a, 'V')", T(rt, s))
        e, v = N(rt, e), N(rt, v)
        near(e, want, dtype, scale=scale)
        near(S.astype(np.float64) @ v, v * e, dtype, scale=scale)  # A v = v diag(e)
        near(v.T @ v, np.eye(n), dtype)
    # 'L' reads only the lower triangle: garbage above it changes nothing
    G = np.tril(S) + np.triu(rng.standard_normal((n, n)), 1).astype(dtype)
    e = N(rt, call(rt, "return (torch.symeig(a, 'N', 'L'))", T(rt, G)))
    near(e, want, dtype, scale=scale)
    # results given, non-contiguous: written through their views
    got = call(rt, "local e = torch.zeros(c, 2):select(2, 2):typeAs(a); local v = a.new(c, 2, c):zero()[{{}, 2, {}}];"
                   " torch.symeig(e, v, a, 'V'); return torch.dist(v * torch.diag(e) * v:t(), a)", T(rt, S), None, n)
    assert got <= lapack_tol(dtype) * scale * n


def complex_eigs(e):
    return np.sort_complex(e[:, 0].astype(np.float64) + 1j * e[:, 1].astype(np.float64))


@pytest.mark.parametrize("dtype", FLOATS)
def test_eig(rt, rng, dtype):
    n = int(rng.integers(3, 10))
    A = rng.standard_normal((n, n)).astype(dtype)
    want = np.sort_complex(np.linalg.eigvals(A.astype(np.float64)))
    scale = np.abs(want).max()
    for _, a in in_layouts(rng, A):
        e, v = call(rt, "return torch.eig(a, 'V')", T(rt, a))
        e, v = N(rt, e), N(rt, v).astype(np.float64)
        assert e.shape == (n, 2)
        near(np.sort(complex_eigs(e).real), np.sort(want.real), dtype, scale=scale)
        near(np.sort(np.abs(complex_eigs(e).imag)), np.sort(np.abs(want.imag)), dtype, scale=scale)
        # A v = lambda v; a complex pair (w, conj w) shares the columns (re, im) as LAPACK packs them
        j = 0
        while j < n:
            lam = e[j, 0] + 1j * e[j, 1]
            vec = v[:, j] + (1j * v[:, j + 1] if e[j, 1] != 0 else 0)
            near(A.astype(np.float64) @ vec, lam * vec, dtype, scale=scale)
            j += 2 if e[j, 1] != 0 else 1
    e = N(rt, call(rt, "return (torch.eig(a))", T(rt, A)))
    near(np.sort(e[:, 0]), np.sort(want.real), dtype, scale=scale)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7, 4), (5, 5), (3, 8)])
def test_svd(rt, rng, dtype, shape):
    m, n = shape
    k = min(m, n)
    A = rng.standard_normal(shape).astype(dtype)
    want = np.linalg.svd(A.astype(np.float64), compute_uv=False)
    for _, a in in_layouts(rng, A):
        u, s, v = (N(rt, x).astype(np.float64) for x in call(rt, "return torch.svd(a)", T(rt, a)))
        assert u.shape == (m, k) and s.shape == (k,) and v.shape == (n, k)
        near(s, want, dtype, scale=want.max())
        near(u @ np.diag(s) @ v.T, A, dtype, scale=want.max())
        near(u.T @ u, np.eye(k), dtype)
        near(v.T @ v, np.eye(k), dtype)
    u, s, v = (N(rt, x).astype(np.float64) for x in call(rt, "return torch.svd(a, 'A')", T(rt, A)))
    assert u.shape == (m, m) and v.shape == (n, n)
    near(u.T @ u, np.eye(m), dtype)
    near(v.T @ v, np.eye(n), dtype)
    near(u[:, :k] @ np.diag(s) @ v[:, :k].T, A, dtype, scale=want.max())
    # results given and reused: the same values
    same = call(rt, "local u, s, v = torch.svd(a); local uu, ss, vv = a.new(), a.new(), a.new();"
                    " for i = 1, 2 do torch.svd(uu, ss, vv, a) end;"
                    " return (u - uu):abs():max() + (s - ss):abs():max() + (v - vv):abs():max()", T(rt, A))
    assert same == 0


@pytest.mark.parametrize("dtype", FLOATS)
def test_inverse(rt, rng, dtype):
    n = int(rng.integers(2, 12))
    A = well_conditioned(rng, n, dtype)
    want = np.linalg.inv(A.astype(np.float64))
    for _, a in in_layouts(rng, A):
        inv = call(rt, "return torch.inverse(a)", T(rt, a))
        assert is_colmajor(rt, inv) or n == 1
        near(N(rt, inv), want, dtype, scale=np.abs(want).max())
    got = call(rt, "local r = a.new(c, c); torch.inverse(r, a); torch.inverse(r, a); return r", T(rt, A), None, n)
    near(N(rt, got), want, dtype, scale=np.abs(want).max())
    with pytest.raises(LuaError, match=r"inverse: the matrix is singular: U\(2,2\) of its LU factorization is "
                                       r"exactly zero"):
        call(rt, "return torch.inverse(a)", T(rt, np.array([[1, 2], [2, 4]], dtype)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_cholesky_family(rt, rng, dtype):
    n = int(rng.integers(2, 12))
    A = spd(rng, n, dtype)
    L = np.linalg.cholesky(A.astype(np.float64))
    scale = np.abs(A).max()
    for _, a in in_layouts(rng, A):
        U = N(rt, call(rt, "return torch.potrf(a)", T(rt, a)))  # 'U' by default
        near(U, L.T, dtype, scale=np.abs(L).max())
        np.testing.assert_array_equal(np.tril(U, -1), 0)
        Lg = N(rt, call(rt, "return torch.potrf(a, 'L')", T(rt, a)))
        near(Lg, L, dtype, scale=np.abs(L).max())
        np.testing.assert_array_equal(np.triu(Lg, 1), 0)
    B = rng.standard_normal((n, 3)).astype(dtype)
    inv = np.linalg.inv(A.astype(np.float64))
    for uplo in "UL":
        x = call(rt, "local c = torch.potrf(a, d); return torch.potrs(b, c, d)", T(rt, A), T(rt, B), None, uplo)
        near(A.astype(np.float64) @ N(rt, x), B, dtype, scale=np.abs(B).max())
        got = N(rt, call(rt, "return torch.potri(torch.potrf(a, b), b)", T(rt, A), uplo))
        near(got, inv, dtype, scale=np.abs(inv).max())  # the whole symmetric inverse
    # not positive definite: the order of the failing leading minor
    bad = np.eye(4, dtype=dtype)
    bad[2, 2] = -1
    with pytest.raises(LuaError, match="potrf: the matrix is not positive definite: its leading minor of order 3 "
                                       "is not positive"):
        call(rt, "return torch.potrf(a)", T(rt, bad))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pstrf(rt, rng, dtype):
    n = int(rng.integers(2, 10))
    A = spd(rng, n, dtype)
    for uplo in (None, "U", "L"):
        for given in (False, True):
            if given:
                code = "local u, p = a.new(), torch.IntTensor(); local u2, p2 = torch.pstrf(u, p, a%s);" \
                       " assert(u2 == u and p2 == p); return u, p"
            else:
                code = "return torch.pstrf(a%s)"
            f, piv = call(rt, code % (", '%s'" % uplo if uplo else ""), T(rt, A))
            assert call(rt, "return torch.type(a)", piv) == "torch.IntTensor"
            f, piv = N(rt, f).astype(np.float64), N(rt, piv)
            assert sorted(piv) == list(range(1, n + 1))  # a 1-based permutation
            P = A.astype(np.float64)[np.ix_(piv - 1, piv - 1)]
            near(f @ f.T if uplo == "L" else f.T @ f, P, dtype, scale=np.abs(A).max())
            tri = np.triu(f, 1) if uplo == "L" else np.tril(f, -1)
            np.testing.assert_array_equal(tri, 0)
    # a rank-2 positive semidefinite matrix with a tolerance above its tiny pivots
    x = rng.standard_normal((n + 2, 2)).astype(dtype)
    low = x @ x.T
    with pytest.raises(LuaError, match=r"pstrf: the matrix is rank deficient or not positive semidefinite "
                                       r"\(rank 2 of %d" % (n + 2)):
        call(rt, "return torch.pstrf(a, 'U', 1e-3)", T(rt, low))
    with pytest.raises(LuaError, match="pstrf: the pivots go to an IntTensor, got a LongTensor"):
        call(rt, "return torch.pstrf(a.new(), torch.LongTensor(), a)", T(rt, A))


def canonical(q, r):
    """QR is unique up to the signs of R's rows."""
    d = np.sign(np.diag(r))
    d[d == 0] = 1
    return q * d, r * d[:, None]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(9, 4), (5, 5), (3, 8), (1, 6), (6, 1)])
def test_qr(rt, rng, dtype, shape):
    m, n = shape
    k = min(m, n)
    A = rng.standard_normal(shape).astype(dtype)
    wq, wr = canonical(*np.linalg.qr(A.astype(np.float64)))
    for _, a in in_layouts(rng, A):
        q, r = (N(rt, x).astype(np.float64) for x in call(rt, "return torch.qr(a)", T(rt, a)))
        assert q.shape == (m, k) and r.shape == (k, n)
        np.testing.assert_array_equal(np.tril(r, -1), 0)
        near(q.T @ q, np.eye(k), dtype)
        near(q @ r, A, dtype, scale=np.abs(A).max())
        cq, cr = canonical(q, r)
        near(cq, wq, dtype)
        near(cr, wr, dtype, scale=np.abs(wr).max())
    # results given
    q = call(rt, "local q, r = a.new(), a.new(); local q2, r2 = torch.qr(q, r, a); assert(q2 == q and r2 == r);"
                 " return q", T(rt, A))
    assert N(rt, q).shape == (m, k)
    # geqrf + orgqr: the reflectors (m x n) and their scales (k), then Q's first columns
    f, tau = call(rt, "local f, t = a.new(), a.new(); local f2, t2 = torch.geqrf(f, t, a); assert(f2 == f and t2 == t);"
                      " return f, t", T(rt, A))
    assert N(rt, f).shape == (m, n) and N(rt, tau).shape == (k,)
    near(np.triu(N(rt, f)[:k]), N(rt, call(rt, "return torch.qr(a)", T(rt, A))[1]), dtype, scale=np.abs(A).max())
    q = N(rt, call(rt, "local g = a.new(); assert(torch.orgqr(g, b, c) == g); return g", T(rt, A), f, tau))[:, :k]
    near(q, N(rt, call(rt, "local q = torch.qr(a); return q", T(rt, A))), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 6), (8, 3)])
def test_ormqr(rt, rng, dtype, shape):
    """op(Q) C and C op(Q) with the full m x m Q of geqrf's reflectors."""
    m, n = shape
    A = rng.standard_normal(shape).astype(dtype)
    f, tau = call(rt, "return torch.geqrf(a)", T(rt, A))
    Q = N(rt, call(rt, "return torch.ormqr(a, b, torch.eye(c):typeAs(a))", f, tau, m)).astype(np.float64)
    near(Q.T @ Q, np.eye(m), dtype)
    near(Q[:, :n], N(rt, call(rt, "local q = torch.qr(a); return q", T(rt, A))), dtype)
    C = rng.standard_normal((m, m)).astype(dtype)
    for side, trans, want in [("L", "N", Q @ C), ("R", "N", C @ Q), ("L", "T", Q.T @ C), ("R", "T", C @ Q.T)]:
        for _, c in in_layouts(rng, C):
            got = call(rt, "return torch.ormqr(a, b, c, d, e)", f, tau, T(rt, c), side, trans)
            near(N(rt, got), want, dtype, scale=np.abs(want).max())
    got = call(rt, "local r = a.new(); assert(torch.ormqr(r, a, b, c) == r); return r", f, tau, T(rt, C))
    near(N(rt, got), Q @ C, dtype, scale=np.abs(C).max() * m)
    with pytest.raises(LuaError, match=r"ormqr: the reflectors \(A: \[%d x %d\]\) do not fit C" % (m, n)):
        call(rt, "return torch.ormqr(a, b, c, 'L')", f, tau, T(rt, np.zeros((m + 1, 2), dtype)))


def test_lapack_errors(rt, rng):
    A, B = np.eye(3), np.ones((3, 2))
    with pytest.raises(LuaError, match="gesv: only FloatTensor and DoubleTensor are supported, got a IntTensor"):
        call(rt, "return torch.gesv(a:int(), b:int())", T(rt, B), T(rt, A))
    with pytest.raises(LuaError, match="gesv: expected all tensors to be FloatTensor, got a DoubleTensor"):
        call(rt, "return torch.gesv(a, b:float())", T(rt, B), T(rt, A))
    with pytest.raises(LuaError, match=r"gesv: A should be square, got \[3 x 2\]"):
        call(rt, "return torch.gesv(a, a)", T(rt, B))
    with pytest.raises(LuaError, match=r"gesv: A and B do not match: A is \[3 x 3\], B is \[2 x 3\]"):
        call(rt, "return torch.gesv(a:t(), b)", T(rt, B), T(rt, A))
    with pytest.raises(LuaError, match=r"gesv: A is singular: U\(1,1\)"):
        call(rt, "return torch.gesv(a, b)", T(rt, B), T(rt, np.zeros((3, 3))))
    with pytest.raises(LuaError, match="potrf: uplo should be 'U' or 'L', got 'X'"):
        call(rt, "return torch.potrf(a, 'X')", T(rt, A))
    with pytest.raises(LuaError, match="trtrs: diag should be 'N' or 'U', got 'Q'"):
        call(rt, "return torch.trtrs(b, a, 'U', 'N', 'Q')", T(rt, A), T(rt, B))
    with pytest.raises(LuaError, match=r"svd: invalid arguments: 2 tensors \(expected \[resu, ress, resv,\] a"):
        call(rt, "return torch.svd(a, a)", T(rt, A))
    with pytest.raises(LuaError, match=r"symeig: unexpected argument 3 \(expected"):
        call(rt, "return torch.symeig(a, 'V', 'U', 3)", T(rt, A))
    with pytest.raises(LuaError, match=r"qr: A should be a matrix \(2D\), got \[3\]"):
        call(rt, "return torch.qr(a)", T(rt, np.ones(3)))
    with pytest.raises(LuaError, match=r"orgqr: tau should be a vector of at most 2 elements, got \[3\]"):
        call(rt, "return torch.orgqr(a, b)", T(rt, B), T(rt, np.ones(3)))
    # the message names the caller's line
    with pytest.raises(LuaError, match=r"\(eval\):1:"):
        call(rt, "local x = torch.inverse(a); return x", T(rt, np.zeros((2, 2))))
