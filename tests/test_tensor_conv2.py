"""torch.conv2 / xcorr2 / conv3 / xcorr3 against a NumPy oracle (sliding
windows; SciPy is not a dependency): every Torch7 form (one map, plane by
plane, output planes x input planes), 'V' and 'F', the result tensor first and
the method forms, all seven types, non-contiguous inputs and results, odd
shapes; conv(x, k) == xcorr(x, flip(k)) bit for bit, results independent of
the thread count, and the errors."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from lt_oracle import DTYPES, FLOATS, N, T, call, empty, is_float, lua, rand, wrap_int
from pytorch_bridge import LuaError


def correlate_valid(x, k):
    """Valid n-D cross-correlation, in float64 / int64."""
    big = np.float64 if is_float(x.dtype) else np.int64
    win = sliding_window_view(x.astype(big), k.shape)
    return np.tensordot(win, k.astype(big), axes=(tuple(range(x.ndim, 2 * x.ndim)), tuple(range(k.ndim))))


def oracle(x, k, full, conv):
    """One map: conv flips the kernel; full correlates the zero-padded input."""
    if conv:
        k = k[(slice(None, None, -1),) * k.ndim]
    if full:
        x = np.pad(x, [(n - 1, n - 1) for n in k.shape])
    return correlate_valid(x, k)


def oracle_form(x, k, nd, full, conv):
    if x.ndim == nd:
        return oracle(x, k, full, conv)
    if k.ndim == nd + 1:  # plane by plane
        return np.stack([oracle(x[p], k[p], full, conv) for p in range(x.shape[0])])
    return np.stack([sum(oracle(x[p], k[o, p], full, conv) for p in range(x.shape[0])) for o in range(k.shape[0])])


def check(got, want, dtype):
    if is_float(dtype):
        scale = max(1.0, float(np.abs(want).max()))
        tol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(got, wrap_int(want, dtype))


def strided(rng, arr, how):
    """arr's values in a transposed or narrowed (every other element) layout."""
    if how == "transposed":
        return np.transpose(np.ascontiguousarray(np.transpose(arr)).copy())
    if how == "narrowed":
        big = rand(rng, tuple(2 * n + 1 for n in arr.shape), arr.dtype)
        view = big[tuple(slice(1, None, 2) for _ in arr.shape)]
        view[...] = arr
        return view
    return np.ascontiguousarray(arr).copy()


OPS = {"conv2": (2, True), "xcorr2": (2, False), "conv3": (3, True), "xcorr3": (3, False)}


def run_op(rt, op, x, k, mode=None):
    code = "return torch.%s(a, b%s)" % (op, ", '%s'" % mode if mode else "")
    return N(rt, call(rt, code, T(rt, x), T(rt, k)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["conv2", "xcorr2"])
@pytest.mark.parametrize("layout", ["contig", "transposed", "narrowed"])
def test_2d_one_map(rt, rng, dtype, op, layout):
    nd, conv = OPS[op]
    h, w = rng.integers(9, 40, size=2)
    kh, kw = rng.integers(1, 9, size=2)
    x, k = rand(rng, (h, w), dtype), rand(rng, (kh, kw), dtype)
    xs, ks = strided(rng, x, layout), strided(rng, k, layout)
    for mode, full in ((None, False), ("V", False), ("F", True)):
        got = run_op(rt, op, xs, ks, mode)
        want = oracle(x, k, full, conv)
        assert got.shape == want.shape
        check(got, want, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["conv3", "xcorr3"])
def test_3d_one_map(rt, rng, dtype, op):
    nd, conv = OPS[op]
    x = rand(rng, tuple(rng.integers(5, 13, size=3)), dtype)
    k = rand(rng, tuple(rng.integers(1, 5, size=3)), dtype)
    for layout in ("contig", "transposed", "narrowed"):
        for mode, full in (("V", False), ("F", True)):
            check(run_op(rt, op, strided(rng, x, layout), strided(rng, k, layout), mode), oracle(x, k, full, conv),
                  dtype)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_plane_forms(rt, rng, op, dtype):
    """P x ... input with P kernels (plane by plane) and with O x P kernels (summed over the planes)."""
    nd, conv = OPS[op]
    P, O = rng.integers(1, 4), rng.integers(1, 4)
    spatial = tuple(rng.integers(6, 14 if nd == 2 else 9, size=nd))
    kspatial = tuple(rng.integers(1, 5, size=nd))
    x = rand(rng, (P,) + spatial, dtype)
    for kshape in [(P,) + kspatial, (O, P) + kspatial]:
        k = rand(rng, kshape, dtype)
        for mode, full in (("V", False), ("F", True)):
            got = run_op(rt, op, strided(rng, x, "narrowed"), k, mode)
            want = oracle_form(x, k, nd, full, conv)
            assert got.shape == want.shape
            check(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_type(rt, rng, dtype):
    """Integer types wrap like their C arithmetic (the int64 oracle, cast)."""
    x, k = rand(rng, (11, 7), dtype), rand(rng, (3, 4), dtype)
    for op in ("conv2", "xcorr2"):
        for mode, full in (("V", False), ("F", True)):
            check(run_op(rt, op, x, k, mode), oracle(x, k, full, OPS[op][1]), dtype)
    x3, k3 = rand(rng, (5, 6, 4), dtype), rand(rng, (2, 3, 2), dtype)
    check(run_op(rt, "conv3", x3, k3, "F"), oracle(x3, k3, True, True), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_is_xcorr_with_flipped_kernel_bitwise(rt, rng, dtype):
    """Torch7's tests compare these with maxdiff == 0; so are a plane of the
    plane-by-plane form and the one-map form."""
    x, k = rand(rng, (33, 29), dtype), rand(rng, (7, 5), dtype)
    flipped = np.ascontiguousarray(k[::-1, ::-1])
    for mode in ("V", "F"):
        np.testing.assert_array_equal(run_op(rt, "conv2", x, k, mode), run_op(rt, "xcorr2", x, flipped, mode))
        planes = run_op(rt, "conv2", np.stack([x, x]), np.stack([k, k]), mode)
        np.testing.assert_array_equal(planes[0], run_op(rt, "conv2", x, k, mode))
        np.testing.assert_array_equal(planes[1], planes[0])
    x3, k3 = rand(rng, (9, 8, 7), dtype), rand(rng, (3, 2, 4), dtype)
    for mode in ("V", "F"):
        np.testing.assert_array_equal(run_op(rt, "conv3", x3, k3, mode),
                                      run_op(rt, "xcorr3", x3, np.ascontiguousarray(k3[::-1, ::-1, ::-1]), mode))
    # xcorr of x with itself at the origin is x . x
    got = call(rt, "return torch.xcorr2(a, a)[1][1] - a:dot(a)", T(rt, x))
    assert abs(got) <= 1e-5 * float(np.sum(x.astype(np.float64) ** 2))


def test_result_and_method_forms(rt, rng):
    x, k = rng.standard_normal((12, 10)), rng.standard_normal((3, 4))
    valid, full = oracle(x, k, False, True), oracle(x, k, True, True)
    tx, tk = T(rt, x), T(rt, k)
    # the result tensor first: resized, written and returned
    r = call(rt, "local r = torch.DoubleTensor(); local o = torch.conv2(r, a, b, 'F'); assert(o == r); return r", tx, tk)
    check(N(rt, r), full, np.float64)
    # a non-contiguous result of the right size keeps its strides
    r = call(rt, "local r = torch.DoubleTensor(7, 10):t(); torch.xcorr2(r, a, b); assert(not r:isContiguous())"
                 "; return r", tx, tk)
    check(N(rt, r), oracle(x, k, False, False), np.float64)
    # methods: x:conv2(k) is torch.conv2(x, k); r:conv2(x, k) writes r
    check(N(rt, call(rt, "return a:conv2(b)", tx, tk)), valid, np.float64)
    check(N(rt, call(rt, "return a:conv2(b, 'F')", tx, tk)), full, np.float64)
    check(N(rt, call(rt, "local r = torch.DoubleTensor(); r:conv2(a, b); return r", tx, tk)), valid, np.float64)
    # the result may be the input itself
    r = call(rt, "local x = a:clone(); torch.conv2(x, x, b, 'F'); return x", tx, tk)
    check(N(rt, r), full, np.float64)
    r = call(rt, "local y = b:clone(); torch.xcorr2(y, a, y); return y", tx, tk)
    check(N(rt, r), oracle(x, k, False, False), np.float64)
    # a FloatTensor in, a FloatTensor out (whatever the default type)
    assert call(rt, "return torch.type(torch.conv2(a:float(), b:float()))", tx, tk) == "torch.FloatTensor"


def test_thread_count_does_not_change_results(rt, rng):
    x, k = rng.standard_normal((3, 90, 70)), rng.standard_normal((2, 3, 9, 8))
    f = lua(rt, "torch.setnumthreads(c); return torch.conv2(a, b, 'F')")
    one = N(rt, rt.call(f, T(rt, x), T(rt, k), 1))
    two = N(rt, rt.call(f, T(rt, x), T(rt, k), 2))
    np.testing.assert_array_equal(one, two)
    check(one, oracle_form(x, k, 2, True, True), np.float64)


def test_errors(rt, rng):
    x, k = T(rt, np.zeros((4, 5))), T(rt, np.zeros((5, 2)))
    with pytest.raises(LuaError, match=r"conv2: in valid mode \('V'\) the input \[4 x 5\] must be at least as large "
                                       r"as the kernel \[5 x 2\]; use 'F'"):
        call(rt, "return torch.conv2(a, b)", x, k)
    assert N(rt, call(rt, "return torch.conv2(a, b, 'F')", x, k)).shape == (8, 6)
    with pytest.raises(LuaError, match=r"xcorr2: the mode should be 'V' \(valid\) or 'F' \(full\), got X"):
        call(rt, "return torch.xcorr2(a, b, 'X')", x, k)
    with pytest.raises(LuaError, match=r"conv3: expected a 3D input with a 3D kernel, 4D with 4D \(plane by plane\) "
                                       r"or 4D with 5D .* got input \[4 x 5\] and kernel \[5 x 2\]"):
        call(rt, "return torch.conv3(a, b)", x, k)
    with pytest.raises(LuaError, match="conv2: the input has 2 planes but the kernel 3"):
        call(rt, "return torch.conv2(a, b)", T(rt, np.zeros((2, 5, 5))), T(rt, np.zeros((3, 2, 2))))
    with pytest.raises(LuaError, match=r"conv2: the kernel \[4 x 3 x 2 x 2\] expects 3 input planes, the input "
                                       r"\[2 x 5 x 5\] has 2"):
        call(rt, "return torch.conv2(a, b)", T(rt, np.zeros((2, 5, 5))), T(rt, np.zeros((4, 3, 2, 2))))
    with pytest.raises(LuaError, match="conv2: expected all tensors to be DoubleTensor, got a FloatTensor"):
        call(rt, "return torch.conv2(a, b)", x, T(rt, np.zeros((2, 2), np.float32)))
    with pytest.raises(LuaError, match=r"conv2: invalid arguments \(expected \[res,\] input, kernel"):
        call(rt, "return torch.conv2(a, 3)", x)
    # the message names the caller's line
    with pytest.raises(LuaError, match=r"\(eval\):1:"):
        call(rt, "local r = torch.conv2(a, b); return r", x, k)
