"""native/cuda/conv.cu in the SIMT emulator (tests/cuda_host), without a GPU: im2col against PyTorch's
F.unfold, col2im against F.fold (the scatter-add adjoint, which our kernel computes as a gather), and the bias
kernels against NumPy; fresh random geometries (strides, padding, dilation, odd sizes), outputs poisoned with
NaN so that an element not written shows."""
import ctypes

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

NP = {"Float": np.float32, "Double": np.float64, "Half": np.float16}
C_SCALAR = {"Float": ctypes.c_float, "Double": ctypes.c_double, "Half": ctypes.c_float}   # (Half: A is float)


def ptr(a):
    return ctypes.c_void_p(a.__array_interface__["data"][0])


def geometries(rng, n):
    out = []
    while len(out) < n:
        C = int(rng.integers(1, 5))
        kH, kW = (int(v) for v in rng.integers(1, 5, 2))
        dH, dW = (int(v) for v in rng.integers(1, 4, 2))
        padH, padW = (int(v) for v in rng.integers(0, 3, 2))
        dilH, dilW = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
        H, W = (int(v) for v in rng.integers(1, 14, 2))
        oH = (H + 2 * padH - (dilH * (kH - 1) + 1)) // dH + 1
        oW = (W + 2 * padW - (dilW * (kW - 1) + 1)) // dW + 1
        if oH >= 1 and oW >= 1:
            out.append(dict(C=C, H=H, W=W, kH=kH, kW=kW, padH=padH, padW=padW, dH=dH, dW=dW, dilH=dilH, dilW=dilW,
                            oH=oH, oW=oW))
    out.append(dict(C=3, H=1, W=1, kH=3, kW=3, padH=1, padW=1, dH=1, dW=1, dilH=1, dilW=1, oH=1, oW=1))
    return out


def sizes(g):
    keys = ("C", "H", "W", "kH", "kW", "padH", "padW", "dH", "dW", "dilH", "dilW", "oH", "oW")
    return [ctypes.c_int64(g[k]) for k in keys]


def torch_geometry(g):
    return dict(kernel_size=(g["kH"], g["kW"]), dilation=(g["dilH"], g["dilW"]), padding=(g["padH"], g["padW"]),
                stride=(g["dH"], g["dW"]))


@pytest.mark.parametrize("t", ["Float", "Double"])
def test_im2col_is_torch_unfold_and_col2im_is_torch_fold(simt, rng, t):
    lib = simt.get("conv")
    for i, g in enumerate(geometries(rng, 10)):
        grid, block = (1, 2, 5)[i % 3], (32, 64, 96)[i % 3]   # the grid-stride loop under several geometries
        im = rng.standard_normal((g["C"], g["H"], g["W"])).astype(NP[t])
        K, P = g["C"] * g["kH"] * g["kW"], g["oH"] * g["oW"]
        col = np.full((K, P), np.nan, NP[t])
        lib.launch("lt_im2col_%s" % t, grid, block, ptr(col), ptr(im), *sizes(g))
        ref = F.unfold(torch.from_numpy(im)[None], **torch_geometry(g))[0].numpy()
        np.testing.assert_array_equal(col, ref, err_msg="im2col %s %s" % (t, g))   # copies: exact

        c = rng.standard_normal((K, P)).astype(NP[t])
        back = np.full(im.shape, np.nan, NP[t])
        lib.launch("lt_col2im_%s" % t, grid, block, ptr(back), ptr(c), *sizes(g))
        ref = F.fold(torch.from_numpy(c.astype(np.float64))[None], output_size=(g["H"], g["W"]),
                     **torch_geometry(g))[0].numpy()
        # each pixel sums at most kH*kW taps: a bound of that many roundings of the terms' magnitude
        mag = F.fold(torch.from_numpy(np.abs(c).astype(np.float64))[None], output_size=(g["H"], g["W"]),
                     **torch_geometry(g))[0].numpy()
        eps = np.finfo(NP[t]).eps
        assert np.all(np.abs(back - ref) <= (g["kH"] * g["kW"] + 1) * eps * mag), "col2im %s %s" % (t, g)


@pytest.mark.parametrize("t", ["Float", "Double", "Half"])
def test_bias_gradient_over_runs_of_each_channel(simt, rng, t):
    """The chunked bias gradient: runs that end mid-row and mid-sample, more runs than values (empty runs), blocks
    smaller than a row and larger than several, a grid that strides; partials poisoned with NaN first; against
    float64 sums, with each block's tree sum and the in-order merge as the rounding bound."""
    lib = simt.get("conv")
    acc = np.float64 if t == "Double" else np.float32
    for outer, channels, inner, chunks, block, grid in [(3, 2, 70, 4, 32, 3), (1, 3, 5, 9, 64, 27), (5, 1, 1, 2, 32, 1),
                                                        (2, 4, 300, 7, 128, 5), (4, 3, 33, 5, 32, 15)]:
        x = rng.standard_normal((outer, channels, inner)).astype(NP[t])
        partial = np.full(channels * chunks, np.nan, acc)
        lib.launch("lt_conv_bias_partial_%s" % t, grid, block, ptr(partial), ptr(x), ctypes.c_int64(outer),
                   ctypes.c_int64(channels), ctypes.c_int64(inner), ctypes.c_int64(chunks))
        n = outer * inner
        runs = x.astype(np.float64).transpose(1, 0, 2).reshape(channels, n)
        length = -(-n // chunks)
        want = np.array([[runs[c, k * length:(k + 1) * length].sum() for k in range(chunks)] for c in range(channels)])
        mag = np.array([[np.abs(runs[c, k * length:(k + 1) * length]).sum() for k in range(chunks)]
                        for c in range(channels)])
        eps = np.finfo(acc).eps
        got = partial.reshape(channels, chunks)
        assert np.all(np.abs(got - want) <= (length / block + 12) * eps * mag), (t, outer, channels, inner, chunks)
        g0 = rng.standard_normal(channels).astype(NP[t])
        gb = g0.copy()
        lib.launch("lt_conv_bias_finish_%s" % t, 2, 32, ptr(gb), ptr(partial), ctypes.c_int64(channels),
                   ctypes.c_int64(chunks), C_SCALAR[t](0.5))
        ref = g0.astype(np.float64) + 0.5 * got.astype(np.float64).sum(axis=1)
        bound = (chunks + 2) * eps * (np.abs(g0) + 0.5 * np.abs(got).sum(axis=1))
        if t == "Half":
            bound = bound + np.abs(ref) * np.finfo(np.float16).eps
        assert np.all(np.abs(gb.astype(np.float64) - ref) <= bound), (t, gb, ref)


@pytest.mark.parametrize("t", ["Float", "Double"])
def test_bias_add_and_bias_gradient(simt, rng, t):
    lib = simt.get("conv")
    for outer, channels, inner in [(1, 1, 1), (3, 5, 7), (2, 33, 1), (4, 3, 300), (1, 70, 9)]:
        out0 = rng.standard_normal((outer, channels, inner)).astype(NP[t])
        bias = rng.standard_normal(channels).astype(NP[t])
        out = out0.copy()
        lib.launch("lt_conv_bias_add_%s" % t, 3, 64, ptr(out), ptr(bias), ctypes.c_int64(outer),
                   ctypes.c_int64(channels), ctypes.c_int64(inner))
        np.testing.assert_array_equal(out, out0 + bias[None, :, None])   # one rounded addition each

        g0 = rng.standard_normal(channels).astype(NP[t])
        gb = g0.copy()
        scale = 0.5
        lib.launch("lt_conv_bias_grad_%s" % t, 2, 96, ptr(gb), ptr(out0), ctypes.c_int64(outer),
                   ctypes.c_int64(channels), ctypes.c_int64(inner), C_SCALAR[t](scale))
        x = out0.astype(np.float64)
        ref = g0 + scale * x.sum(axis=(0, 2))
        mag = np.abs(g0) + scale * np.abs(x).sum(axis=(0, 2))
        n = outer * inner
        eps = np.finfo(NP[t]).eps
        assert np.all(np.abs(gb - ref) <= (n / 96 + 12) * eps * mag), (t, outer, channels, inner)
