"""Host tests of native/cuda's nn kernels for SoftMax, BatchNormalization and spatial max/average pooling, in the
SIMT emulator (tests/simt_emulator.py), against PyTorch on the CPU in float64 (an independent implementation).

Fresh random inputs each run (the seed is printed on failure), odd shapes, outputs poisoned with NaN so that an
element not written shows, several launch geometries (grids smaller than the work: the grid-stride loops).
Tolerances, relative to the size of the terms that make a result (a result can cancel to near zero):
  Double 1e-12, Float 2e-5, Half 4e-3 (the half rounding of inputs and outputs).
Max-pooling indices (1-based plane positions) and the gathering backward passes of max pooling are exact.
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


# ----------------------------------------------------------------------------- BatchNormalization
# small ones, and ones where each thread walks several values: S above the block (qi = 0), below it (S = 25: 7
# past the next sample), S = 1 (a whole block of samples per step)
BN_SHAPES = [(5, 3), (2, 4, 3, 5), (7, 1, 1, 1), (3, 2, 2, 3, 4), (33, 5), (4, 37, 1, 1), (3, 4, 7, 11),
             (9, 2, 5, 5), (300, 3), (2, 3, 2, 9, 10)]


def bn_case(rng, t, shape):
    x = rounded(t, rng.standard_normal(shape) * 2 + rng.uniform(-3, 3, (1, shape[1]) + (1,) * (len(shape) - 2)))
    C = shape[1]
    return x, {k: rounded(t, v) for k, v in dict(
        weight=rng.uniform(0.2, 1.5, C), bias=rng.standard_normal(C), rm=rng.standard_normal(C) * 0.5,
        rv=rng.uniform(0.5, 2.0, C), gw=rng.standard_normal(C), gb=rng.standard_normal(C)).items()}


def nsc(shape):
    N, C = shape[:2]
    return N, C, int(np.prod(shape[2:], dtype=np.int64))


# The chunk kernels (batchnorm.cu) take the host's P chunks per feature; these launch them as the host layer does,
# with partials poisoned with NaN (a partial not written shows), for P from one chunk to more chunks than values
# (empty chunks), grids smaller and larger than C*P, and several block sizes.
def acc_np(t):
    return np.float64 if t == "Double" else np.float32


def bn_train_forward(lib, t, x, w, b, rm, rv, P, grid, block, momentum, eps):
    N, C, S = nsc(x.shape)
    out = np.full_like(x, np.nan)
    sm, ss = np.full(C, np.nan, NP[t]), np.full(C, np.nan, NP[t])
    part = np.full(2 * C * P, np.nan, acc_np(t))
    lib.launch("lt_batchnorm_stats_%s" % t, grid, block, ptr(part), ptr(x), q(N), q(C), q(S), q(P))
    lib.launch("lt_batchnorm_fwd_train_%s" % t, grid, block, ptr(out), ptr(sm), ptr(ss), ptr(rm), ptr(rv),
               ptr(part), ptr(x), ptr(w), ptr(b), q(N), q(C), q(S), q(P), acc(t, momentum), acc(t, eps))
    return out, sm, ss


def bn_backward(lib, t, x, go, gi, gw, gb, w, mean, std, P, grid, block, train, scale, eps):
    """grad_sums (where the host launches it: training, or parameter gradients), then bwd."""
    N, C, S = nsc(x.shape)
    part = None
    if train or gw is not None or gb is not None:
        part = np.full(2 * C * P, np.nan, acc_np(t))
        lib.launch("lt_batchnorm_grad_sums_%s" % t, grid, block, ptr(part), ptr(x), ptr(go), ptr(mean), q(N), q(C),
                   q(S), q(P))
    lib.launch("lt_batchnorm_bwd_%s" % t, grid, block, ptr(gi), ptr(gw), ptr(gb), ptr(part), ptr(x), ptr(go), ptr(w),
               ptr(mean), ptr(std), q(N), q(C), q(S), q(P), ctypes.c_int(1 if train else 0), acc(t, scale),
               acc(t, eps))


def bn_launches(j, shape):
    """(P, grid, block) of case j: one chunk, a few, more chunks than values; grids below and above C*P."""
    N, C, S = nsc(shape)
    P = (1, 3, N * S + 2 if N * S < 64 else 50, 2)[j % 4]
    grid = max(1, (C * P) // 2) if j % 2 else C * P + 3
    return P, grid, (32, 64, 128)[j % 3]


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_training_forward_and_backward(simt, rng, t, affine):
    lib = simt.get("batchnorm")
    tol = TOL[t]
    momentum, eps, scale = 0.1, 1e-5, 0.5
    for j, shape in enumerate(BN_SHAPES):
        x, p = bn_case(rng, t, shape)
        N, C, S = nsc(shape)
        n = N * S
        w, b = (p["weight"], p["bias"]) if affine else (None, None)
        rm, rv = p["rm"].copy(), p["rv"].copy()
        P, grid, block = bn_launches(j, shape)
        out, sm, ss = bn_train_forward(lib, t, x, w, b, rm, rv, P, grid, block, momentum, eps)
        trm, trv = t64(p["rm"]), t64(p["rv"])
        xs = t64(x).requires_grad_()
        ws = t64(w).requires_grad_() if affine else None
        bs = t64(b).requires_grad_() if affine else None
        y = F.batch_norm(xs, trm, trv, ws, bs, training=True, momentum=momentum, eps=eps)
        what = "batchnorm train %s %s affine=%s P=%d grid=%d block=%d" % (t, shape, affine, P, grid, block)
        x64 = x.astype(np.float64)
        axes = (0,) + tuple(range(2, len(shape)))
        mean, var = x64.mean(axes), x64.var(axes)
        invstd = 1 / np.sqrt(var + eps)
        assert_bound(sm, mean, tol * (np.abs(x64).mean(axes) + 1e-3), what + " save_mean")
        assert_bound(ss, invstd, tol * invstd * 4, what + " save_std")
        assert_bound(rm, trm.numpy(), tol * (np.abs(trm.numpy()) + np.abs(mean) + 1e-3), what + " running_mean")
        assert_bound(rv, trv.numpy(), tol * (np.abs(trv.numpy()) + 4 * var + 1e-3), what + " running_var")
        wv = w.astype(np.float64) if affine else np.ones(C)
        bshape = (1, C) + (1,) * (len(shape) - 2)
        ymag = (np.abs(x64) + np.abs(mean).reshape(bshape)) * (invstd * wv).reshape(bshape) + \
            (np.abs(b.astype(np.float64)).reshape(bshape) if affine else 0)
        assert_bound(out, y.detach().numpy(), 4 * tol * ymag + 1e-300, what + " output")
        # backward: gradInput, and gradWeight/gradBias accumulated with scale onto their values
        go = rounded(t, rng.standard_normal(shape))
        y.backward(t64(go))
        gi = np.full_like(x, np.nan)
        gw, gb = p["gw"].copy(), p["gb"].copy()
        bn_backward(lib, t, x, go, gi, gw if affine else None, gb if affine else None, w, sm, ss, P, grid, block,
                    True, scale, eps)
        g64 = go.astype(np.float64)
        xhat = np.abs(x64 - mean.reshape(bshape)) * invstd.reshape(bshape)
        dy_terms = np.abs(g64) + (np.abs(g64).sum(axes) / n).reshape(bshape) + \
            xhat * ((np.abs(g64) * xhat).sum(axes) / n).reshape(bshape)
        assert_bound(gi, xs.grad.numpy(), 8 * tol * dy_terms * (invstd * wv).reshape(bshape) + 1e-300,
                     what + " gradInput")
        if affine:
            gw_ref = p["gw"].astype(np.float64) + scale * ws.grad.numpy()
            gb_ref = p["gb"].astype(np.float64) + scale * bs.grad.numpy()
            assert_bound(gw, gw_ref, 4 * tol * (np.abs(p["gw"]) + scale * (np.abs(g64) * xhat).sum(axes)), what + " gw")
            assert_bound(gb, gb_ref, 4 * tol * (np.abs(p["gb"]) + scale * np.abs(g64).sum(axes)), what + " gb")


@pytest.mark.parametrize("t", FLOATS)
def test_batchnorm_evaluation_forward_and_backward(simt, rng, t):
    lib = simt.get("batchnorm")
    tol = TOL[t]
    eps, scale = 1e-3, 2.0
    for j, shape in enumerate(BN_SHAPES):
        x, p = bn_case(rng, t, shape)
        N, C, S = nsc(shape)
        out = np.full_like(x, np.nan)
        P, grid, block = bn_launches(j + 1, shape)
        lib.launch("lt_batchnorm_fwd_eval_%s" % t, grid, block + 5, ptr(out), ptr(x), ptr(p["weight"]),
                   ptr(p["bias"]), ptr(p["rm"]), ptr(p["rv"]), q(N), q(C), q(S), q(P), acc(t, eps))
        xs, ws, bs = (t64(v).requires_grad_() for v in (x, p["weight"], p["bias"]))
        y = F.batch_norm(xs, t64(p["rm"]), t64(p["rv"]), ws, bs, training=False, eps=eps)
        what = "batchnorm eval %s %s" % (t, shape)
        bshape = (1, C) + (1,) * (len(shape) - 2)
        invstd = 1 / np.sqrt(p["rv"].astype(np.float64) + eps)
        a = (invstd * p["weight"]).reshape(bshape)
        x64, m64 = x.astype(np.float64), p["rm"].astype(np.float64).reshape(bshape)
        assert_bound(out, y.detach().numpy(), 4 * tol * ((np.abs(x64) + np.abs(m64)) * a + np.abs(
            p["bias"].astype(np.float64)).reshape(bshape)), what)
        go = rounded(t, rng.standard_normal(shape))
        y.backward(t64(go))
        gi, gw, gb = np.full_like(x, np.nan), p["gw"].copy(), p["gb"].copy()
        # without gradInput first (accGradParameters), then gradInput alone (updateGradInput: no sums)
        P, grid, block = bn_launches(j, shape)
        bn_backward(lib, t, x, go, None, gw, gb, p["weight"], p["rm"], p["rv"], P, grid, block, False, scale, eps)
        bn_backward(lib, t, x, go, gi, None, None, p["weight"], p["rm"], p["rv"], P, max(1, grid - 1), 32, False,
                    scale, eps)
        g64 = go.astype(np.float64)
        axes = (0,) + tuple(range(2, len(shape)))
        assert_bound(gi, xs.grad.numpy(), 4 * tol * np.abs(g64) * a, what + " gradInput")
        terms = (np.abs(g64) * np.abs(x64 - m64)).sum(axes) * invstd
        assert_bound(gw, p["gw"] + scale * ws.grad.numpy(), 4 * tol * (np.abs(p["gw"]) + scale * terms), what + " gw")
        assert_bound(gb, p["gb"] + scale * bs.grad.numpy(),
                     4 * tol * (np.abs(p["gb"]) + scale * np.abs(g64).sum(axes)), what + " gb")


def test_batchnorm_statistics_do_not_depend_on_the_grid_or_block_count(simt, rng):
    """The partials are combined in chunk order by every block, so the grid (which blocks take which chunks) does
    not change a bit of the result; a feature's statistics come out the same in every block that normalizes it."""
    lib = simt.get("batchnorm")
    x = rounded("Float", rng.standard_normal((6, 3, 5, 7)) * 3 + 1)
    w, b = rounded("Float", rng.uniform(0.5, 1.5, 3)), rounded("Float", rng.standard_normal(3))
    results = []
    for grid in (1, 4, 13, 40):
        rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
        out, sm, ss = bn_train_forward(lib, "Float", x, w, b, rm, rv, 13, grid, 64, 0.1, 1e-5)
        results.append((out, sm, ss, rm, rv))
    for r in results[1:]:
        for got, first in zip(r, results[0]):
            np.testing.assert_array_equal(got, first)


def test_batchnorm_constant_feature_without_eps_gives_zero_invstd(simt):
    """The CPU kernel's rule: a feature of zero variance with eps 0 gets invstd 0 (not inf), output = bias."""
    lib = simt.get("batchnorm")
    x = np.array([[1.0, 3.0], [1.0, 5.0], [1.0, 4.0]])
    b = np.array([0.25, 0.0])
    for P in (1, 2, 5):
        out, sm, ss = bn_train_forward(lib, "Double", x, None, b, None, None, P, 3, 32, 0.1, 0.0)
        assert ss[0] == 0 and sm[0] == 1.0
        np.testing.assert_array_equal(out[:, 0], 0.25)
        np.testing.assert_allclose(out[:, 1], (x[:, 1] - 4) / np.sqrt(2 / 3), rtol=1e-14)


def test_batchnorm_without_values_reads_nothing_and_gives_the_cpu_kernels_statistics(simt):
    """N*S = 0 (a zero-size spatial dimension, S = 0): every chunk is empty and no element is read; the statistics
    are the CPU kernel's (nn_batchnorm.c): mean 0, and var/n = 0/0 makes save_std NaN."""
    lib = simt.get("batchnorm")
    x = np.zeros((2, 3, 0), np.float64)
    rm, rv = np.zeros(3), np.ones(3)
    out, sm, ss = bn_train_forward(lib, "Double", x, None, None, rm, rv, 2, 4, 32, 0.1, 0.25)
    np.testing.assert_array_equal(sm, 0)
    assert np.isnan(ss).all()


# ----------------------------------------------------------------------------- pooling
# (planes as N, C, iH, iW, kH, kW, dH, dW, padH, padW, ceil_mode)
POOL_CASES = [
    ((2, 3, 7, 9), (3, 3, 2, 2, 1, 1), False),
    ((2, 3, 7, 9), (3, 3, 2, 2, 1, 1), True),
    ((1, 2, 8, 8), (2, 2, 2, 2, 0, 0), False),
    ((3, 1, 5, 11), (3, 2, 1, 3, 1, 0), True),
    ((1, 4, 6, 5), (5, 4, 3, 2, 2, 2), True),
    ((2, 2, 10, 3), (4, 3, 3, 1, 2, 1), False),
]


def out_size(i, k, d, pad, ceil_mode):
    """Torch7's rule (native/src/nn_pooling.c): torch's, except that with no padding the last window is kept."""
    span = i + 2 * pad - k
    o = (-(-span // d) if ceil_mode else span // d) + 1
    return o


def pool_geo(shape, kp, ceil_mode):
    N, C, iH, iW = shape
    kH, kW, dH, dW, padH, padW = kp
    oH, oW = out_size(iH, kH, dH, padH, ceil_mode), out_size(iW, kW, dW, padW, ceil_mode)
    if padH or padW:
        oH -= (oH - 1) * dH >= iH + padH
        oW -= (oW - 1) * dW >= iW + padW
    return oH, oW, [q(v) for v in (N * C, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW)]


@pytest.mark.parametrize("t", FLOATS)
def test_max_pooling_forward_and_backward(simt, rng, t):
    lib = simt.get("pooling")
    for j, (shape, kp, ceil_mode) in enumerate(POOL_CASES):
        kH, kW, dH, dW, padH, padW = kp
        x = rounded(t, rng.standard_normal(shape))
        if j == 1:
            x.reshape(-1)[rng.choice(x.size, 5, replace=False)] = np.nan
        oH, oW, geo = pool_geo(shape, kp, ceil_mode)
        out = np.full(shape[:2] + (oH, oW), np.nan, NP[t])
        ind = np.full(out.shape, -7, np.int64)
        lib.launch("lt_maxpool_fwd_%s" % t, *geometry(out.size, 32, 3), ptr(out), ptr(ind), ptr(x), *geo)
        xs = t64(x).requires_grad_()
        y, yi = F.max_pool2d(xs, (kH, kW), (dH, dW), (padH, padW), ceil_mode=ceil_mode, return_indices=True)
        assert y.shape == out.shape, (y.shape, out.shape)
        what = "maxpool %s %s %s ceil=%s" % (t, shape, kp, ceil_mode)
        assert_exact(out.astype(np.float64), y.detach().numpy(), what)
        assert_exact(ind, yi.numpy() + 1, what + " indices")
        go = rounded(t, rng.standard_normal(out.shape))
        y.backward(t64(go))
        gi = np.full_like(x, np.nan)
        lib.launch("lt_maxpool_bwd_%s" % t, *geometry(x.size, 64, 2), ptr(gi), ptr(go), ptr(ind), *geo)
        # the same terms summed: exact in Double; Float/Half round each sum once (in the compute type)
        ref = xs.grad.numpy()
        if t == "Double":
            assert_exact(gi, ref, what + " gradInput")
        else:
            xa = t64(x).requires_grad_()
            F.max_pool2d(xa, (kH, kW), (dH, dW), (padH, padW), ceil_mode=ceil_mode).backward(
                t64(np.abs(go.astype(np.float64))))
            assert_bound(gi, ref, TOL[t] * xa.grad.numpy(), what + " gradInput")


def test_max_pooling_ties_first_nan_last_and_empty_windows(simt):
    """Ties go to the first position in row-major order, the last NaN wins; a window past the image (ceil mode
    without padding, stride > kernel: Torch7 keeps it) gives -inf and index 0, and passes no gradient."""
    lib = simt.get("pooling")
    x = np.array([[[1, 5, 5, 0, 9],
                   [5, 2, np.nan, np.nan, 1]]], np.float64)    # (1 plane, 2 x 5)
    kp = (2, 1, 2, 3, 0, 0)                                       # kH 2, kW 1, dH 2, dW 3
    oH, oW, geo = pool_geo((1, 1, 2, 5), kp, True)
    assert (oH, oW) == (1, 3)                                     # columns 0, 3, and 6 (past the image)
    out, ind = np.full((1, oH, oW), np.nan), np.full((1, oH, oW), -7, np.int64)
    lib.launch("lt_maxpool_fwd_Double", 1, 32, ptr(out), ptr(ind), ptr(x), *geo)
    assert_exact(out[0, 0], [5, np.nan, -np.inf])
    assert_exact(ind[0, 0], [1 + 5, 1 + 8, 0])
    x2 = np.array([[[3, 3], [3, 3]]], np.float64)
    oH, oW, geo2 = pool_geo((1, 1, 2, 2), (2, 2, 2, 2, 0, 0), False)
    out2, ind2 = np.full((1, 1, 1), np.nan), np.zeros((1, 1, 1), np.int64)
    lib.launch("lt_maxpool_fwd_Double", 1, 32, ptr(out2), ptr(ind2), ptr(x2), *geo2)
    assert ind2.item() == 1
    gi = np.full_like(x, np.nan)
    go = np.array([[[2.0, 3.0, 100.0]]])
    lib.launch("lt_maxpool_bwd_Double", 1, 32, ptr(gi), ptr(go), ptr(ind), *geo)
    exp = np.zeros_like(x)
    exp[0, 1, 0], exp[0, 1, 3] = 2.0, 3.0
    assert_exact(gi, exp)


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("include_pad", [1, 0])
def test_average_pooling_forward_and_backward(simt, rng, t, include_pad):
    lib = simt.get("pooling")
    tol = TOL[t]
    for j, (shape, kp, ceil_mode) in enumerate(POOL_CASES):
        kH, kW, dH, dW, padH, padW = kp
        x = rounded(t, rng.standard_normal(shape))
        oH, oW, geo = pool_geo(shape, kp, ceil_mode)
        out = np.full(shape[:2] + (oH, oW), np.nan, NP[t])
        lib.launch("lt_avgpool_fwd_%s" % t, *geometry(out.size, 32, 3), ptr(out), ptr(x), *geo,
                   ctypes.c_int(include_pad))
        xs = t64(x).requires_grad_()
        y = F.avg_pool2d(xs, (kH, kW), (dH, dW), (padH, padW), ceil_mode=ceil_mode,
                         count_include_pad=bool(include_pad))
        assert y.shape == out.shape, (y.shape, out.shape)
        what = "avgpool %s %s %s ceil=%s include_pad=%d" % (t, shape, kp, ceil_mode, include_pad)
        mag = F.avg_pool2d(t64(np.abs(x.astype(np.float64))), (kH, kW), (dH, dW), (padH, padW), ceil_mode=ceil_mode,
                           count_include_pad=bool(include_pad)).numpy()
        assert_bound(out, y.detach().numpy(), 4 * tol * mag, what)
        go = rounded(t, rng.standard_normal(out.shape))
        y.backward(t64(go))
        gi = np.full_like(x, np.nan)
        lib.launch("lt_avgpool_bwd_%s" % t, *geometry(x.size, 64, 2), ptr(gi), ptr(go), *geo,
                   ctypes.c_int(include_pad))
        xa = t64(x).requires_grad_()
        F.avg_pool2d(xa, (kH, kW), (dH, dW), (padH, padW), ceil_mode=ceil_mode,
                     count_include_pad=bool(include_pad)).backward(t64(np.abs(go.astype(np.float64))))
        assert_bound(gi, xs.grad.numpy(), 4 * tol * xa.grad.numpy(), what + " gradInput")
