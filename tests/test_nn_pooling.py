"""nn pooling and normalization layers (issue 11, family "pooling") against PyTorch.

Each module runs on configurations drawn at random per run (odd sizes, strides, pads,
batch 1, non-contiguous inputs) and its output and gradInput must equal PyTorch's
float64 result; every class also survives a torch.save / torch.load round trip."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = 1e-10


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def noncontig(rng, x):
    """x itself or, at random, a strided view with the same values."""
    if x.ndim < 2 or rng.random() < 0.5:
        return x
    big = np.empty(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
    big[..., ::2] = x
    return big[..., ::2]


def lua_run(rt, build, x, g, setup=None):
    """Forward/backward of the Lua module built by `build` on x, gradOutput g:
    (module, output, gradInput), both copied. `setup(m, x)` (Lua source or function) runs first."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    m = rt.eval(build)
    fn = rt.eval("""function(m, x, g, setup)
        if setup then setup(m, x) end
        local y = m:forward(x):clone()
        local gi = m:backward(x, g):clone()
        return y, gi
    end""")
    if isinstance(setup, str):
        setup = rt.eval(setup)
    y, gi = rt.call(fn, m, rt.from_numpy(x), rt.from_numpy(g), setup)
    return m, rt.to_numpy(y).copy(), rt.to_numpy(gi).copy()


def reference(fn, x, rng):
    """PyTorch output, gradOutput drawn for it, gradInput."""
    xt = torch.from_numpy(np.ascontiguousarray(x)).requires_grad_(True)
    y = fn(xt)
    g = rng.standard_normal(tuple(y.shape))
    y.backward(torch.from_numpy(g))
    return y.detach().numpy(), g, xt.grad.numpy()


def check(rt, rng, build, x, fn, setup=None, tol=TOL):
    y_ref, g, gi_ref = reference(fn, x, rng)
    m, y, gi = lua_run(rt, build, noncontig(rng, x), noncontig(rng, g), setup)
    assert rel_err(y, y_ref) <= tol, "output of " + build
    assert rel_err(gi, gi_ref) <= tol, "gradInput of " + build
    return m


def image(rng, nd, c=None, lo=4, hi=11):
    """A random (C, H, W) or (N, C, H, W) image (batch 1 sometimes)."""
    shape = [c or int(rng.integers(1, 5)), int(rng.integers(lo, hi)), int(rng.integers(lo, hi))]
    if nd == 4:
        shape.insert(0, int(rng.choice([1, 2, 3])))
    return rng.standard_normal(shape)


def ceil_agrees(ins, ks, ds, pads, dils):
    """Whether ceil mode gives PyTorch's sizes: Torch7 drops a last window that starts
    past the input only when padded, PyTorch always (Torch7's window is then empty)."""
    padded = any(pads)
    for i, k, d, p, dl in zip(ins, ks, ds, pads, dils):
        span = i + 2 * p - dl * (k - 1) - 1
        o = -(-span // d) + 1
        if not padded and (o - 1) * d >= i + p:
            return False
    return True


def batched(fn, x, nd):
    """Apply a batch-only PyTorch function to a sample by adding the batch dimension."""
    return fn(x) if x.dim() == nd else fn(x[None])[0]


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_cross_map_lrn(rt, rng, nd):
    x = image(rng, nd, c=int(rng.integers(1, 9)))
    size = int(rng.choice([1, 3, 5, 4]))
    alpha, beta, k = float(rng.uniform(0.1, 2)), float(rng.uniform(0.3, 1)), float(rng.uniform(0.5, 2))
    m = check(rt, rng, "nn.SpatialCrossMapLRN(%d, %r, %r, %r)" % (size, alpha, beta, k), x,
              lambda t: batched(lambda u: F.local_response_norm(u, size, alpha, beta, k), t, 4))
    assert (m.size, m.alpha, m.beta, m.k) == (size, alpha, beta, k)
    d = rt.eval("nn.SpatialCrossMapLRN(3)")
    assert (d.alpha, d.beta, d.k) == (0.0001, 0.75, 1)


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_adaptive_pooling(rt, rng, nd):
    x = image(rng, nd)
    W, H = int(rng.integers(1, 2 * x.shape[-1])), int(rng.integers(1, 2 * x.shape[-2]))
    m = check(rt, rng, "nn.SpatialAdaptiveMaxPooling(%d, %d)" % (W, H), x,
              lambda t: F.adaptive_max_pool2d(t, (H, W)))
    ind = rt.to_numpy(m.indices)
    assert ind.shape == (2,) + x.shape[:-2] + (H, W)  # Torch7's (row, column) layout
    check(rt, rng, "nn.SpatialAdaptiveAveragePooling(%d, %d)" % (W, H), x,
          lambda t: F.adaptive_avg_pool2d(t, (H, W)))


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_dilated_max_pooling(rt, rng, nd):
    kW, kH = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dW, dH = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padW, padH = int(rng.integers(0, kW // 2 + 1)), int(rng.integers(0, kH // 2 + 1))
    dilW, dilH = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    ceil = bool(rng.integers(2))
    x = image(rng, nd, lo=9, hi=14)
    ceil = ceil and ceil_agrees(x.shape[-2:], (kH, kW), (dH, dW), (padH, padW), (dilH, dilW))
    build = "nn.SpatialDilatedMaxPooling(%d, %d, %d, %d, %d, %d, %d, %d)%s" % (
        kW, kH, dW, dH, padW, padH, dilW, dilH, ":ceil()" if ceil else "")
    m = check(rt, rng, build, x, lambda t: F.max_pool2d(t, (kH, kW), (dH, dW), (padH, padW), (dilH, dilW), ceil))
    assert (m.dilationW, m.dilationH, m.ceil_mode) == (dilW, dilH, ceil)
    s = rt.eval("tostring(nn.SpatialDilatedMaxPooling(3, 3, 2, 2, 1, 1, 2, 2))")
    assert s == "nn.SpatialDilatedMaxPooling(3x3, 2,2, 1,1, 2,2)"


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_max_unpooling(rt, rng, nd):
    kW, kH = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    x = image(rng, nd, lo=6, hi=12)
    x = x[..., : x.shape[-2] // kH * kH, : x.shape[-1] // kW * kW].copy()
    setup = "function(u, x) u.pooling:forward(x) end"
    build = "nn.SpatialMaxUnpooling(nn.SpatialMaxPooling(%d, %d))" % (kW, kH)
    y = F.max_pool2d(torch.from_numpy(x), (kH, kW), return_indices=True)
    pooled, idx = y[0].numpy().copy(), y[1]
    # the unpooling module reads the indices of its pooling module, run on x first
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    u = rt.eval(build)
    rt.call(rt.eval(setup), u, rt.from_numpy(x))
    pt = torch.from_numpy(pooled).requires_grad_(True)
    ref = batched(lambda t: F.max_unpool2d(t, idx if idx.dim() == 4 else idx[None], (kH, kW),
                                           output_size=x.shape[-2:]), pt, 4)
    g = rng.standard_normal(tuple(ref.shape))
    ref.backward(torch.from_numpy(g))
    fn = rt.eval("function(u, p, g) return u:forward(p):clone(), u:backward(p, g):clone() end")
    out, gi = rt.call(fn, u, rt.from_numpy(pooled), rt.from_numpy(noncontig(rng, g)))
    assert rel_err(rt.to_numpy(out), ref.detach().numpy()) <= TOL
    assert rel_err(rt.to_numpy(gi), pt.grad.numpy()) <= TOL


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_fractional_max_pooling(rt, rng, nd):
    pW, pH = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    x = image(rng, nd, lo=7, hi=13)
    iH, iW = x.shape[-2:]
    oW, oH = int(rng.integers(1, iW - pW + 1)), int(rng.integers(1, iH - pH + 1))
    n, c = (x.shape[0] if nd == 4 else 1), x.shape[-3]
    u = rng.uniform(0, 1, (n, c, 2))  # per plane: the sample for W, then for H
    rt.require("nn")
    # the module pools with the same samples as PyTorch: set before its forward, kept by fixPoolingRegions
    setup = rt.call(rt.eval("function(s) return function(m, x) m.randomSamples = s:clone(); "
                            "m:fixPoolingRegions() end end"), rt.from_numpy(u.copy()))
    m = check(rt, rng, "nn.SpatialFractionalMaxPooling(%d, %d, %d, %d)" % (pW, pH, oW, oH), x,
              lambda t: batched(lambda v: F.fractional_max_pool2d(v, (pH, pW), (oH, oW),
                                                                  _random_samples=torch.from_numpy(u)), t, 4),
              setup=setup)
    assert rt.to_numpy(m.indices).min() >= 1
    r = rt.eval("nn.SpatialFractionalMaxPooling(2, 2, 0.5, 0.75)")
    assert (r.ratioW, r.ratioH) == (0.5, 0.75)
    out = rt.call(rt.eval("function(m) return m:forward(torch.randn(2, 3, 8, 8)):size() end"), r)
    assert (out[3], out[4]) == (6, 4)


@pytest.mark.parametrize("nd", [4, 5])
def test_volumetric_fractional_max_pooling(rt, rng, nd):
    pT, pW, pH = (int(v) for v in rng.integers(2, 4, 3))
    x = volume(rng, nd, lo=6, hi=9)  # Torch7's layout: ([N,] C, H, W, T)
    iH, iW, iT = x.shape[-3:]
    oT, oW, oH = (int(rng.integers(1, i - p + 1)) for i, p in ((iT, pT), (iW, pW), (iH, pH)))
    n, c = (x.shape[0] if nd == 5 else 1), x.shape[-4]
    u = rng.uniform(0, 1, (n, c, 3))  # per plane: the samples for T, W, H
    rt.require("nn")
    setup = rt.call(rt.eval("function(s) return function(m, x) m.randomSamples = s:clone(); "
                            "m:fixPoolingRegions() end end"), rt.from_numpy(u.copy()))
    # PyTorch pools its dimensions 2, 3, 4 (here H, W, T) with samples 0, 1, 2
    u_pt = torch.from_numpy(u[..., ::-1].copy())
    check(rt, rng, "nn.VolumetricFractionalMaxPooling(%d, %d, %d, %d, %d, %d)" % (pT, pW, pH, oT, oW, oH), x,
          lambda t: batched(lambda v: F.fractional_max_pool3d(v, (pH, pW, pT), (oH, oW, oT),
                                                              _random_samples=u_pt), t, 5),
          setup=setup)


def volume(rng, nd, lo=5, hi=10):
    shape = [int(rng.integers(1, 4))] + [int(rng.integers(lo, hi)) for _ in range(3)]
    if nd == 5:
        shape.insert(0, int(rng.choice([1, 2])))
    return rng.standard_normal(shape)


@pytest.mark.parametrize("nd", [4, 5])
def test_volumetric_max_pooling(rt, rng, nd):
    k = [int(v) for v in rng.integers(1, 4, 3)]  # T, H, W
    d = [int(v) for v in rng.integers(1, 3, 3)]
    p = [int(rng.integers(0, kk // 2 + 1)) for kk in k]
    dil = [int(v) for v in rng.integers(1, 3, 3)]
    ceil = bool(rng.integers(2))
    x = volume(rng, nd, lo=7, hi=10)
    ceil = ceil and ceil_agrees(x.shape[-3:], k, d, p, dil) and ceil_agrees(x.shape[-3:], k, d, p, (1, 1, 1))
    c = ":ceil()" if ceil else ""
    m = check(rt, rng, "nn.VolumetricMaxPooling(%d,%d,%d, %d,%d,%d, %d,%d,%d)%s" % (
        k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1], c), x,
        lambda t: F.max_pool3d(t, k, d, p, 1, ceil))
    assert rt.to_numpy(m.indices).shape == rt.to_numpy(m.output).shape
    check(rt, rng, "nn.VolumetricDilatedMaxPooling(%d,%d,%d, %d,%d,%d, %d,%d,%d, %d,%d,%d)%s" % (
        k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1], dil[0], dil[2], dil[1], c), x,
        lambda t: F.max_pool3d(t, k, d, p, dil, ceil))
    s = rt.eval("tostring(nn.VolumetricDilatedMaxPooling(2,3,4, 1,1,1, 1,1,2, 1,2,3))")
    assert s == "nn.VolumetricDilatedMaxPooling(2x3x4, 1,1,1, 1,1,2, 1,2,3)"


def test_empty_ceil_window_takes_no_gradient(rt):
    """Torch7's ceil mode without padding can give a last window past the input: its
    output is -inf and backward skips it (no error, no gradient)."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    fn = rt.eval("""function(build, x)
        local m = loadstring('return ' .. build)()
        local y = m:forward(x)
        local gi = m:backward(x, y:clone():fill(1))
        return y:size(y:dim()), y:view(-1)[y:nElement()], gi:sum()
    end""")
    for build, x in (("nn.SpatialDilatedMaxPooling(1, 1, 3, 3):ceil()", "torch.randn(1, 9, 9)"),
                     ("nn.VolumetricMaxPooling(1, 1, 1, 3, 3, 3):ceil()", "torch.randn(1, 9, 9, 9)")):
        size, last, total = rt.call(fn, build, rt.eval(x))
        assert size == 4 and last == -float("inf")
        assert total == (9 if "Spatial" in build else 27)  # the windows inside the input


@pytest.mark.parametrize("nd", [4, 5])
def test_volumetric_average_pooling(rt, rng, nd):
    k = [int(v) for v in rng.integers(1, 4, 3)]
    d = [int(v) for v in rng.integers(1, 4, 3)]
    x = volume(rng, nd)
    check(rt, rng, "nn.VolumetricAveragePooling(%d,%d,%d, %d,%d,%d)" % (k[0], k[2], k[1], d[0], d[2], d[1]), x,
          lambda t: F.avg_pool3d(t, k, d))


def test_volumetric_max_unpooling(rt, rng):
    k = [int(v) for v in rng.integers(1, 3, 3)]
    x = volume(rng, 5, lo=4, hi=7)
    x = x[..., : x.shape[2] // k[0] * k[0], : x.shape[3] // k[1] * k[1], : x.shape[4] // k[2] * k[2]].copy()
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    u = rt.eval("nn.VolumetricMaxUnpooling(nn.VolumetricMaxPooling(%d,%d,%d))" % (k[0], k[2], k[1]))
    rt.call(rt.eval("function(u, x) u.pooling:forward(x) end"), u, rt.from_numpy(x))
    pooled, idx = F.max_pool3d(torch.from_numpy(x), k, return_indices=True)
    pt = pooled.detach().clone().requires_grad_(True)
    ref = F.max_unpool3d(pt, idx, k, output_size=x.shape[-3:])
    g = rng.standard_normal(tuple(ref.shape))
    ref.backward(torch.from_numpy(g))
    fn = rt.eval("function(u, p, g) return u:forward(p):clone(), u:backward(p, g):clone() end")
    out, gi = rt.call(fn, u, rt.from_numpy(pt.detach().numpy().copy()), rt.from_numpy(g))
    assert rel_err(rt.to_numpy(out), ref.detach().numpy()) <= TOL
    assert rel_err(rt.to_numpy(gi), pt.grad.numpy()) <= TOL


@pytest.mark.parametrize("nd", [2, 3])
def test_temporal_max_pooling(rt, rng, nd):
    kW, dW = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    shape = [int(rng.integers(kW, 12)), int(rng.integers(1, 6))]
    if nd == 3:
        shape.insert(0, int(rng.choice([1, 3])))
    x = rng.standard_normal(shape)
    m = check(rt, rng, "nn.TemporalMaxPooling(%d, %d)" % (kW, dW), x,
              lambda t: F.max_pool1d(t.transpose(-1, -2), kW, dW).transpose(-1, -2))
    ind = rt.to_numpy(m.indices)
    assert ind.min() >= 0 and ind.max() < kW  # 0-based offsets within the window, as Torch7


@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_lp_pooling(rt, rng, nd):
    kW, kH = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dW, dH = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    p = int(rng.choice([2, 3]))
    x = np.abs(image(rng, nd)) + 0.1  # p-norms of positive values (PyTorch's lp_pool has no abs either)
    m = check(rt, rng, "nn.SpatialLPPooling(%d, %d, %d, %d, %d, %d)" % (x.shape[-3], p, kW, kH, dW, dH), x,
              lambda t: F.lp_pool2d(t, p, (kH, kW), (dH, dW)))
    kinds = rt.eval("function(m) local t = {} for i, c in ipairs(m.modules) do t[i] = torch.type(c) end "
                    "return table.concat(t, ' ') end")
    assert rt.call(kinds, m) == ("nn.Square nn.SpatialAveragePooling nn.MulConstant nn.Sqrt" if p == 2 else
                                 "nn.Power nn.SpatialAveragePooling nn.MulConstant nn.Power")


def test_layer_normalization(rt, rng):
    # Torch7's construction (Mean(1, 1) + Replicate(c, 1, 1)) lines the mean up with the
    # samples only for a batch of one (for N > 1 its Replicate stacks along dimension 1),
    # and we keep its children as they are, so the reference is taken on (1, c)
    n, c = 1, int(rng.integers(3, 9))  # c = 2 has an all-zero gradInput (two values normalized to +-1)
    bias = float(rng.standard_normal())
    x = rng.standard_normal((n, c))
    # Torch7's form: (x - mean) / sqrt(||x - mean||^2 + eps) * sqrt(c), gain 1, shift `bias`
    def ref(t):
        d = t - t.mean(1, keepdim=True)
        return d / (d.pow(2).sum(1, keepdim=True) + 1e-10).sqrt() * np.sqrt(c) + bias
    check(rt, rng, "nn.LayerNormalization(%d, %r)" % (c, bias), x, ref, tol=1e-9)  # a chain of six modules
    m = rt.eval("nn.LayerNormalization(%d, 0, 1e-10, false)" % c)
    assert rt.eval("function(m) return #m.modules end")(m) == 4


@pytest.mark.parametrize("nd", [2, 3])
def test_temporal_dynamic_k_max_pooling(rt, rng, nd):
    T, Fd = int(rng.integers(3, 10)), int(rng.integers(1, 5))
    minK, factor = int(rng.integers(1, T + 1)), float(rng.uniform(0, 1))
    k = max(minK, int(np.ceil(factor * T)))
    shape = (T, Fd) if nd == 2 else (int(rng.choice([1, 2])), T, Fd)
    x = rng.standard_normal(shape)

    def ref(t):
        idx = t.topk(k, dim=nd - 2).indices.sort(dim=nd - 2).values
        return t.gather(nd - 2, idx)
    m = check(rt, rng, "nn.TemporalDynamicKMaxPooling(%d, %r)" % (minK, factor), x, ref)
    assert (m.minK, m.factor) == (minK, factor)
    with pytest.raises(Exception, match="too small"):
        rt.call(rt.eval("function(x) nn.TemporalDynamicKMaxPooling(%d):forward(x) end" % (T + 1)), rt.from_numpy(x))


@pytest.mark.parametrize("batch", [False, True])
def test_feature_lp_pooling(rt, rng, batch):
    width, stride, p = int(rng.integers(2, 5)), int(rng.integers(1, 4)), float(rng.choice([2, 3]))
    shape = [int(rng.integers(width, 12))] + [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    if batch:
        shape.insert(0, int(rng.choice([1, 3])))
    x = np.abs(rng.standard_normal(shape)) + 0.1
    fd = 1 if batch else 0

    def ref(t):
        win = t.unfold(fd, width, stride)  # (..., oF, ..., width)
        return win.pow(p).sum(-1).pow(1 / p)
    check(rt, rng, "nn.FeatureLPPooling(%d, %d, %r, %s)" % (width, stride, p, "true" if batch else "false"), x, ref)
    assert rt.eval("tostring(nn.FeatureLPPooling(3, 1, 2, true))") == "nn.FeatureLPPooling(w3 s1 power 2 batch 1"


def local_sum(t, k2):
    """Sum over all planes of the k2-weighted neighbourhood (zero padded), on every plane."""
    kh, kw = k2.shape
    w = torch.from_numpy(k2)[None, None].expand(1, t.shape[1], kh, kw)
    s = F.conv2d(F.pad(t, (kw // 2, kw // 2, kh // 2, kh // 2)), w)
    return s.expand(-1, t.shape[1], -1, -1)


def subtractive_ref(t, k2):
    return t - local_sum(t, k2) / local_sum(torch.ones_like(t), k2)


def divisive_ref(t, k2, th, val):
    adj = local_sum(t * t, k2).sqrt() / local_sum(torch.ones_like(t), k2)
    return t / torch.where(adj > th, adj, torch.full_like(adj, val))


def norm_kernel(rng, kdim, c):
    """A random odd kernel (Lua constructor text) and the 2-D kernel Torch7's divisive part uses."""
    # not 1 x 1: the subtractive part would give exact zeros, where sqrt has no gradient
    size = [int(rng.choice([3, 5])) for _ in range(kdim)]
    k = rng.uniform(0.5, 1.5, size)
    lua = "torch.Tensor({%s})" % ",".join(
        "{%s}" % ",".join(repr(v) for v in row) if kdim == 2 else repr(row) for row in k.tolist())
    if kdim == 2:
        k2 = k / (k.sum() * c)
    else:  # separable: applied along W then H, each pass with sqrt of the plane share
        k1 = k / (k.sum() * np.sqrt(c))
        k2 = np.outer(k1, k1)
    return lua, k2


@pytest.mark.parametrize("kdim", [1, 2])
@pytest.mark.parametrize("nd", [3, 4])
def test_spatial_normalizations(rt, rng, kdim, nd):
    x = image(rng, nd, lo=3, hi=9)
    c = x.shape[-3]
    lua, k2 = norm_kernel(rng, kdim, c)
    th = float(rng.uniform(0.05, 0.5))
    batched4 = lambda f: (lambda t: batched(f, t, 4))  # noqa: E731
    check(rt, rng, "nn.SpatialSubtractiveNormalization(%d, %s)" % (c, lua), x,
          batched4(lambda t: subtractive_ref(t, k2)))
    check(rt, rng, "nn.SpatialDivisiveNormalization(%d, %s, %r)" % (c, lua, th), x,
          batched4(lambda t: divisive_ref(t, k2, th, th)))
    m = check(rt, rng, "nn.SpatialContrastiveNormalization(%d, %s, %r, 0.5)" % (c, lua, th), x,
              batched4(lambda t: divisive_ref(subtractive_ref(t, k2), k2, th, 0.5)))
    assert (m.threshold, m.thresval) == (th, 0.5)
    with pytest.raises(Exception, match="ODD dimensions"):
        rt.eval("nn.SpatialSubtractiveNormalization(1, torch.ones(4))")


def test_batch_normalization_evaluate_sample(rt, rng):
    """In evaluate mode a sample one dimension short is normalized as a batch of one."""
    for name, sample_shape in (("BatchNormalization", (5,)), ("SpatialBatchNormalization", (3, 4, 5)),
                               ("VolumetricBatchNormalization", (2, 3, 4, 3))):
        c = sample_shape[0]
        x = rng.standard_normal(sample_shape)
        mean, var = rng.standard_normal(c), rng.uniform(0.5, 2, c)
        w, b = rng.standard_normal(c), rng.standard_normal(c)
        rt.require("nn")
        rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
        m = rt.eval("nn.%s(%d)" % (name, c))
        m.evaluate(m)
        for field, v in (("running_mean", mean), ("running_var", var), ("weight", w), ("bias", b)):
            rt.to_numpy(getattr(m, field))[:] = v
        xt = torch.from_numpy(x[None].copy()).requires_grad_(True)
        ref = F.batch_norm(xt, torch.from_numpy(mean), torch.from_numpy(var), torch.from_numpy(w),
                           torch.from_numpy(b), False, 0.1, 1e-5)
        g = rng.standard_normal(sample_shape)
        ref.backward(torch.from_numpy(g[None]))
        fn = rt.eval("function(m, x, g) return m:forward(x):clone(), m:backward(x, g):clone() end")
        y, gi = rt.call(fn, m, rt.from_numpy(x), rt.from_numpy(g))
        assert rel_err(rt.to_numpy(y).reshape(sample_shape), ref.detach().numpy()[0]) <= TOL, name
        assert rel_err(rt.to_numpy(gi).reshape(sample_shape), xt.grad.numpy()[0]) <= TOL, name
        with pytest.raises(Exception, match="only mini-batch supported"):
            rt.call(rt.eval("function(m, x) m:training(); m:forward(x) end"), m, rt.from_numpy(x))


def test_volumetric_batch_normalization_train(rt, rng):
    x = rng.standard_normal((int(rng.integers(2, 4)), 3, 3, 4, 2))
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    m = rt.eval("nn.VolumetricBatchNormalization(3)")
    w = rt.to_numpy(m.weight).copy()
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    wt = torch.from_numpy(w.copy()).requires_grad_(True)
    ref = F.batch_norm(xt, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), wt,
                       torch.zeros(3, dtype=torch.float64), True, 0.1, 1e-5)
    g = rng.standard_normal(x.shape)
    ref.backward(torch.from_numpy(g))
    fn = rt.eval("function(m, x, g) m:zeroGradParameters(); return m:forward(x):clone(), m:backward(x, g):clone() end")
    y, gi = rt.call(fn, m, rt.from_numpy(x), rt.from_numpy(g))
    assert rel_err(rt.to_numpy(y), ref.detach().numpy()) <= TOL
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= 1e-9
    assert rel_err(rt.to_numpy(m.gradWeight), wt.grad.numpy()) <= 1e-9
    assert rt.eval("tostring(nn.VolumetricBatchNormalization(3))") == "nn.VolumetricBatchNormalization (5D) (3)"


ROUND_TRIP = [
    ("nn.SpatialCrossMapLRN(3, 0.5, 0.6, 2)", (2, 4, 5, 5), ("size", "alpha", "beta", "k")),
    ("nn.SpatialAdaptiveMaxPooling(3, 2)", (2, 3, 7, 5), ("W", "H")),
    ("nn.SpatialAdaptiveAveragePooling(2, 3)", (3, 7, 5), ("W", "H")),
    ("nn.SpatialDilatedMaxPooling(3, 2, 2, 1, 1, 1, 2, 1):ceil()", (2, 9, 9),
     ("kW", "kH", "dW", "dH", "padW", "padH", "dilationW", "dilationH", "ceil_mode")),
    ("nn.VolumetricMaxPooling(2, 2, 2, 1, 1, 1, 1, 1, 1)", (2, 5, 5, 5),
     ("kT", "kW", "kH", "dT", "dW", "dH", "padT", "padW", "padH", "ceil_mode")),
    ("nn.VolumetricDilatedMaxPooling(2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 1, 2)", (1, 2, 6, 6, 6),
     ("dilationT", "dilationW", "dilationH")),
    ("nn.VolumetricAveragePooling(2, 3, 2, 1, 2, 1)", (2, 5, 6, 5), ("kT", "kW", "kH", "dT", "dW", "dH")),
    ("nn.TemporalMaxPooling(3, 2)", (2, 9, 4), ("kW", "dW")),
    ("nn.TemporalDynamicKMaxPooling(3, 0.5)", (2, 9, 4), ("minK", "factor")),
    ("nn.SpatialLPPooling(3, 2, 2, 2)", (3, 6, 6), ("kW", "kH", "dW", "dH")),
    ("nn.LayerNormalization(5, 0.5)", (3, 5), ()),
    ("nn.FeatureLPPooling(3, 2, 2, true)", (2, 9, 3), ("width", "stride", "power", "batch_mode")),
    ("nn.VolumetricBatchNormalization(2)", (2, 2, 3, 3, 3), ("eps", "momentum", "affine", "train")),
    ("nn.SpatialSubtractiveNormalization(2, torch.ones(3))", (2, 5, 6), ("nInputPlane",)),
    ("nn.SpatialDivisiveNormalization(2, torch.ones(3, 5), 0.1)", (2, 2, 5, 6), ("threshold", "thresval")),
    ("nn.SpatialContrastiveNormalization(1)", (1, 10, 9), ("threshold", "thresval")),
    ("nn.SpatialFractionalMaxPooling(2, 2, 3, 4):fixPoolingRegions()", (2, 2, 8, 9),
     ("poolSizeW", "poolSizeH", "outW", "outH", "newRandomPool")),
    ("nn.VolumetricFractionalMaxPooling(2, 2, 2, 0.5, 0.5, 0.5)", (2, 6, 6, 6),
     ("poolSizeT", "ratioT", "ratioW", "ratioH")),
    ("nn.SpatialMaxUnpooling(nn.SpatialMaxPooling(2, 2))", None, ()),
    ("nn.VolumetricMaxUnpooling(nn.VolumetricMaxPooling(2, 2, 2))", None, ()),
]


@pytest.mark.parametrize("build,shape,fields", ROUND_TRIP, ids=[b.split("(")[0] for b, _, _ in ROUND_TRIP])
def test_t7_round_trip(rt, rng, tmp_path, build, shape, fields):
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    path = str(tmp_path / "m.t7")
    if shape is None:  # an unpooling module: its pooling module comes along and still feeds it
        fn = rt.eval("""function(build, path)
            local u = loadstring('return ' .. build)()
            local x = torch.randn(2, 4, 6, 6, 4):narrow(5, 1, u.pooling.kT and 4 or 1):squeeze(5)
            if not u.pooling.kT then x = torch.randn(2, 3, 6, 4) end
            local y = u:forward(u.pooling:forward(x)):clone()
            torch.save(path, u)
            local v = torch.load(path)
            assert(torch.type(v) == torch.type(u) and torch.type(v.pooling) == torch.type(u.pooling))
            assert(tostring(v) == tostring(u), tostring(v))
            local z = v:forward(v.pooling:forward(x))
            return (z - y):abs():max()
        end""")
        assert rt.call(fn, build, path) == 0
        return
    x = rng.standard_normal(shape)
    fn = rt.eval("""function(build, path, x)
        local m = loadstring('return ' .. build)()
        local y = m:forward(x):clone()
        torch.save(path, m)
        local n = torch.load(path)
        assert(torch.type(n) == torch.type(m))
        assert(tostring(n) == tostring(m), tostring(n))
        return n, (n:forward(x) - y):abs():max(), m
    end""")
    n, diff, m = rt.call(fn, build, path, rt.from_numpy(x))
    assert diff == 0
    for f in fields:
        assert getattr(n, f) == getattr(m, f), f
    # clearState empties the buffers and the module still runs
    rt.call(rt.eval("function(n, x) n:clearState(); n:forward(x) end"), n, rt.from_numpy(x))


FLOAT_CASES = [
    ("nn.SpatialCrossMapLRN(3)", (2, 5, 4, 4)),
    ("nn.SpatialAdaptiveMaxPooling(3, 2)", (2, 3, 7, 5)),
    ("nn.SpatialAdaptiveAveragePooling(2, 3)", (3, 7, 5)),
    ("nn.SpatialDilatedMaxPooling(3, 3, 2, 2, 1, 1, 2, 2)", (2, 2, 9, 8)),
    ("nn.VolumetricMaxPooling(2, 2, 2, 1, 1, 1, 1, 1, 1)", (2, 5, 5, 5)),
    ("nn.VolumetricAveragePooling(2, 2, 2)", (1, 2, 4, 6, 4)),
    ("nn.TemporalMaxPooling(3, 2)", (2, 9, 4)),
    ("nn.FeatureLPPooling(3, 1, 2, false)", (7, 3)),
]


@pytest.mark.parametrize("build,shape", FLOAT_CASES, ids=[b.split("(")[0] for b, _ in FLOAT_CASES])
def test_float_matches_double(rt, rng, build, shape):
    """The float kernels give the double result to float precision."""
    x = np.abs(rng.standard_normal(shape)) + 0.1
    g = None
    res = {}
    for ttype, dtype in (("torch.DoubleTensor", np.float64), ("torch.FloatTensor", np.float32)):
        rt.require("nn")
        rt.execute("torch.setdefaulttensortype('%s')" % ttype)
        m = rt.eval(build)
        y = rt.to_numpy(m.forward(m, rt.from_numpy(x.astype(dtype)))).copy()
        if g is None:
            g = rng.standard_normal(y.shape)
        gi = rt.to_numpy(m.backward(m, rt.from_numpy(x.astype(dtype)), rt.from_numpy(g.astype(dtype)))).copy()
        assert y.dtype == dtype and gi.dtype == dtype
        res[dtype] = (y, gi)
    assert rel_err(res[np.float32][0], res[np.float64][0]) <= 1e-5
    assert rel_err(res[np.float32][1], res[np.float64][1]) <= 1e-5
