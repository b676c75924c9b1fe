"""Helpers for NumPy-oracle tests: dtypes, random inputs and memory layouts.

layouts() gives the same logical array in several memory layouts (contiguous,
transposed, narrowed out of a bigger array, stride-0 expanded), all writable,
so a tensor made with rt.from_numpy() views them without copying.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
FLOATS = [np.float32, np.float64]
INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]


TYPE_NAMES = {np.dtype(np.uint8): "Byte", np.dtype(np.int8): "Char", np.dtype(np.int16): "Short",
              np.dtype(np.int32): "Int", np.dtype(np.int64): "Long", np.dtype(np.float32): "Float",
              np.dtype(np.float64): "Double"}


def empty(rt, dtype):
    """A new empty Lua tensor of dtype's type (resizable, unlike numpy-backed ones)."""
    return rt.eval("torch.%sTensor()" % TYPE_NAMES[np.dtype(dtype)])


def lua(rt, body):
    """A Lua function of (...) running `body`, with the arguments as locals a..g."""
    return rt.eval("function(...) local a, b, c, d, e, f, g = ... %s end" % body)


def call(rt, body, *args):
    return rt.call(lua(rt, body), *args)


def T(rt, arr):
    """A tensor viewing arr (zero copy)."""
    return rt.from_numpy(arr)


def N(rt, t):
    """A numpy copy of tensor t."""
    return rt.to_numpy(t).copy()


def is_float(dtype):
    return np.dtype(dtype).kind == "f"


def rand(rng, shape, dtype, lo=None, hi=None):
    """Random values: small integers for integer types (products stay exact
    in int64), normals for floats."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if lo is None:
        lo, hi = (0, 6) if dtype.kind == "u" else (-5, 6)
    return rng.integers(lo, hi, size=shape).astype(dtype)


def layouts(rng, arr, kinds=("contig", "transposed", "narrowed", "expanded")):
    """(name, view) pairs holding arr's values in different layouts. 'transposed'
    reverses the dimension order in memory; 'expanded' is only produced when arr
    is constant along its first dimension (callers make it so)."""
    out = []
    for kind in kinds:
        if kind == "contig":
            out.append((kind, np.ascontiguousarray(arr).copy()))
        elif kind == "transposed" and arr.ndim >= 2:
            base = np.ascontiguousarray(np.transpose(arr)).copy()
            out.append((kind, np.transpose(base)))
        elif kind == "narrowed":
            big_shape = tuple(n * 2 + 3 for n in arr.shape)
            big = rand(rng, big_shape, arr.dtype)
            sl = tuple(slice(1, 1 + 2 * n, 2) if i == arr.ndim - 1 else slice(2, 2 + n) for i, n in enumerate(arr.shape))
            big[sl] = arr
            out.append((kind, big[sl]))
        elif kind == "expanded" and arr.shape[0] > 1 and (arr == arr[:1]).all():
            row = np.ascontiguousarray(arr[:1]).copy()
            v = as_strided(row, shape=arr.shape, strides=(0,) + row.strides[1:], writeable=True)
            out.append((kind, v))
    return out


def assert_close(got, want, dtype, scale=1.0):
    """Exact for integer types; relative tolerance for floats (float32 sums in float)."""
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if is_float(dtype):
        tol = 2e-4 if np.dtype(dtype) == np.float32 else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(got, np.asarray(want).astype(dtype))


def wrap_int(x, dtype):
    """int64 oracle results cast like C: wrap to the element type."""
    return np.asarray(x).astype(np.int64).astype(dtype)


# Philox4x32-10 (Salmon et al., SC11) and the dropout keep rule of native/cuda/philox.cuh, in NumPy
M32 = np.uint64(0xFFFFFFFF)


def philox_np(c, k):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit words (an independent reference)."""
    c0, c1, c2, c3 = [np.asarray(v, np.uint64) for v in c]
    k0, k1 = [np.asarray(v, np.uint64) for v in k]
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & M32
            k1 = (k1 + np.uint64(0xBB67AE85)) & M32
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def dropout_draws(seed, offset, n):
    e = np.uint64(offset) + np.arange(n, dtype=np.uint64)
    blk = e >> np.uint64(2)
    z = np.zeros(n, np.uint64)
    words = philox_np((blk & M32, blk >> np.uint64(32), z, z),
                      (np.uint64(seed) & M32, np.uint64(seed) >> np.uint64(32)))
    lane = (e & np.uint64(3)).astype(np.int64)
    return np.choose(lane, words)


def dropout_threshold(p):
    q = 1.0 - p
    if not q > 0:
        return 0
    if q >= 1:
        return 1 << 32
    return int(q * 4294967296.0)
