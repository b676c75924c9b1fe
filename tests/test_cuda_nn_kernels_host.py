"""Host tests of native/cuda's nn kernels for SoftMax, in the
SIMT emulator (tests/simt_emulator.py), against PyTorch on the CPU in float64 (an independent implementation).

Fresh random inputs each run (the seed is printed on failure), odd shapes, outputs poisoned with NaN so that an
element not written shows, several launch geometries (grids smaller than the work: the grid-stride loops).
Tolerances, relative to the size of the terms that make a result (a result can cancel to near zero):
  Double 1e-12, Float 2e-5, Half 4e-3 (the half rounding of inputs and outputs).
"""
import ctypes

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from simt_emulator import ACC, FLOATS, NP
from test_cuda_kernels_host import ACC_C, assert_bound, assert_exact, geometry, ptr

TOL = {"Double": 1e-12, "Float": 2e-5, "Half": 4e-3}
q = ctypes.c_int64


def acc(t, v):
    return ACC_C[t](v)


def t64(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64).copy())


def rounded(t, a):
    """a as the kernel's element type sees it (and back in float64 for the references)."""
    return np.asarray(a).astype(NP[t])


# ----------------------------------------------------------------------------- SoftMax
@pytest.mark.parametrize("t", FLOATS)
def test_softmax_rows_and_spatial(simt, rng, t):
    lib = simt.get("logsoftmax")
    tol = TOL[t]
    for j, (N, C, inner) in enumerate([(1, 1, 1), (3, 31, 1), (5, 33, 1), (2, 1000, 1), (2, 5, 33), (1, 257, 3),
                                       (4, 1, 7), (2, 64, 65)]):
        x = rounded(t, rng.standard_normal((N, C, inner)) * 4)
        if t != "Half" and N > 1:
            x[1] += 500.0  # fine only with the max subtracted
        ref = F.softmax(t64(x), dim=1).numpy()
        out = np.full_like(x, np.nan)
        if inner == 1:
            grid, block = min(N, 2), (32, 64, 96)[j % 3]
            lib.launch("lt_softmax_fwd_%s" % t, grid, block, ptr(out), ptr(x), q(N), q(C))
        else:
            lib.launch("lt_softmax_spatial_fwd_%s" % t, *geometry(N * inner, 32, 3), ptr(out), ptr(x), q(N), q(C),
                       q(inner))
        what = "softmax %s %s" % (t, (N, C, inner))
        assert_bound(out, ref, tol * np.maximum(ref, 1e-30) + tol * 1e-3, what)
        # backward against autograd at the kernel's own output's input
        go = rounded(t, rng.standard_normal((N, C, inner)))
        xs = t64(x).requires_grad_()
        F.softmax(xs, dim=1).backward(t64(go))
        gref = xs.grad.numpy()
        y = out.astype(np.float64)
        # the output's own rounding, absolute where it is subnormal (Half's below 6e-5)
        y_err = y + 0.5 * float(np.finfo(NP[t]).smallest_subnormal) / TOL[t]
        terms = y_err * (np.abs(go.astype(np.float64)) + (np.abs(go.astype(np.float64)) * y).sum(1, keepdims=True))
        inplace = j % 4 == 3
        gi = go.copy() if inplace else np.full_like(go, np.nan)
        if inner == 1:
            lib.launch("lt_softmax_bwd_%s" % t, min(N, 3), 64, ptr(gi), ptr(gi if inplace else go), ptr(out), q(N),
                       q(C))
        else:
            lib.launch("lt_softmax_spatial_bwd_%s" % t, *geometry(N * inner, 64, 2), ptr(gi),
                       ptr(gi if inplace else go), ptr(out), q(N), q(C), q(inner))
        assert_bound(gi, gref, 4 * tol * terms + 1e-300, what + " backward")


def test_softmax_nan_stays_in_its_row(simt):
    lib = simt.get("logsoftmax")
    x = np.zeros((3, 40), np.float32)
    x[1, 7] = np.nan
    out = np.full_like(x, -1.0)
    lib.launch("lt_softmax_fwd_Float", 2, 32, ptr(out), ptr(x), q(3), q(40))
    assert np.isnan(out[1]).all()
    np.testing.assert_allclose(out[[0, 2]], 1 / 40, rtol=1e-6)
