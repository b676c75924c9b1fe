"""The THNN-like nn kernels (native/src/nn_*.c), called from Lua through the FFI,
against PyTorch as the oracle, on fresh random configurations and inputs.
float64 must agree to 1e-10 and float32 to 1e-5 (max abs error / max abs value)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError, Runtime

torch = pytest.importorskip("torch")
F = torch.nn.functional

TYPES = [(np.float64, "Double", 1e-10), (np.float32, "Float", 1e-5)]
TYPE_IDS = ["Double", "Float"]


class Kernels:
    """Calls torch.C.lt_nn_<name>(...) with numpy arrays / Lua tensors / numbers / None."""

    def __init__(self, threads=2):
        self.rt = Runtime(threads=threads)
        self._call = self.rt.eval("""function(fname, n, ...)
            local args = {...}
            for i = 1, n do if torch.isTensor(args[i]) then args[i] = args[i]._c end end
            torch._check(torch.C['lt_nn_' .. fname](unpack(args, 1, n)))
        end""")
        self._new = self.rt.eval("function(name) return torch[name .. 'Tensor']() end")
        self._threads = self.rt.eval("function(n) torch.setnumthreads(n) end")
        self._strategy = self.rt.eval("function(s) return torch.C.lt_nn_conv_set_strategy(s) end")

    def new(self, tname):
        return self.rt.call(self._new, tname)

    def __call__(self, fname, *args):
        args = [self.rt.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
        self.rt.call(self._call, fname, len(args), *args)

    def np(self, t):
        return np.array(self.rt.to_numpy(t))

    def threads(self, n):
        self.rt.call(self._threads, n)

    def strategy(self, s):
        return self.rt.call(self._strategy, s)


@pytest.fixture(scope="module")
def K():
    return Kernels(threads=2)


def relerr(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    assert a.shape == ref.shape, (a.shape, ref.shape)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))


def close(a, ref, tol, what="", scale_of=None):
    """Relative error against the largest |ref|, or against the largest of scale_of: for an accumulated sum
    the bound belongs to the magnitude of its terms (|start| + |scale| * sum of |products|), because a result
    that cancels to near zero keeps only the absolute rounding of those terms."""
    if scale_of is None:
        e = relerr(a, ref)
    else:
        a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
        assert a.shape == ref.shape, (a.shape, ref.shape)
        e = float(np.abs(a - ref).max() / max(np.abs(np.asarray(scale_of, np.float64)).max(), 1e-30)) if a.size else 0.0
    assert e <= tol, "%s: relative error %g > %g" % (what, e, tol)


def tt(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


# ----------------------------------------------------------------- convolution

def conv_configs(rng, n):
    out = []
    while len(out) < n:
        kh, kw = rng.integers(1, 6, size=2)
        dh, dw = rng.integers(1, 4, size=2)
        ph, pw = rng.integers(0, 3, size=2)
        h, w = rng.integers(1, 13, size=2)
        if h + 2 * ph < kh or w + 2 * pw < kw:
            continue
        out.append(dict(N=int(rng.choice([1, 2, 3, 5])), C=int(rng.integers(1, 6)), O=int(rng.integers(1, 7)),
                        H=int(h), W=int(w), kh=int(kh), kw=int(kw), dh=int(dh), dw=int(dw), ph=int(ph), pw=int(pw)))
    # the direct (1x1, stride 1, pad 0) path and single samples always
    out.append(dict(N=3, C=4, O=5, H=6, W=7, kh=1, kw=1, dh=1, dw=1, ph=0, pw=0))
    out.append(dict(N=0, C=3, O=2, H=5, W=6, kh=3, kw=2, dh=1, dw=2, ph=1, pw=0))
    out.append(dict(N=0, C=3, O=2, H=5, W=6, kh=1, kw=1, dh=1, dw=1, ph=0, pw=0))
    return out


def run_conv(K, rng, c, dtype, tname, bias=True, weight2d=False, noncontig=False, scale=1.0):
    shape = (c["N"], c["C"], c["H"], c["W"]) if c["N"] else (c["C"], c["H"], c["W"])
    x = rng.standard_normal(shape).astype(dtype)
    if noncontig:  # same values through a strided view (rows padded, offset 1)
        big = rng.standard_normal(shape[:-1] + (shape[-1] + 2,)).astype(dtype)
        big[..., 1:-1] = x
        x_arg = big[..., 1:-1]
    else:
        x_arg = x
    w = rng.standard_normal((c["O"], c["C"], c["kh"], c["kw"])).astype(dtype)
    b = rng.standard_normal(c["O"]).astype(dtype) if bias else None
    X, Wt = tt(x[None] if not c["N"] else x, True), tt(w, True)
    B = tt(b, True) if bias else None
    Y = F.conv2d(X, Wt, B, stride=(c["dh"], c["dw"]), padding=(c["ph"], c["pw"]))
    g = rng.standard_normal(Y.shape).astype(dtype)
    Y.backward(tt(g))
    if not c["N"]:
        g = g[0]
    geo = (c["kw"], c["kh"], c["dw"], c["dh"], c["pw"], c["ph"])
    out, gi, fin, fgi = (K.new(tname) for _ in range(4))
    w_arg = w.reshape(c["O"], -1) if weight2d else w
    K("SpatialConvolutionMM_updateOutput", x_arg, out, w_arg, b, fin, fgi, *geo)
    K("SpatialConvolutionMM_updateGradInput", x_arg, g, gi, w_arg, fin, fgi, *geo)
    gw0 = rng.standard_normal(w_arg.shape).astype(dtype)  # accumulation onto existing values
    gb0 = rng.standard_normal(c["O"]).astype(dtype)
    gw, gb = gw0.copy(), gb0.copy()
    K("SpatialConvolutionMM_accGradParameters", x_arg, g, gw, gb if bias else None, fin, fgi, *geo, scale)
    y_ref, gi_ref = Y.detach().numpy(), X.grad.numpy()
    if not c["N"]:
        y_ref, gi_ref = y_ref[0], gi_ref[0]
    # the sizes of the accumulated sums' terms, for their error bound
    G = np.abs(g if c["N"] else g[None]).astype(np.float64)
    gw_terms = torch.nn.grad.conv2d_weight(torch.tensor(np.abs(X.detach().numpy()).astype(np.float64)), w.shape,
                                           torch.tensor(G), stride=(c["dh"], c["dw"]), padding=(c["ph"], c["pw"]))
    gw_mag = np.abs(gw0) + abs(scale) * gw_terms.numpy().reshape(w_arg.shape)
    gb_mag = np.abs(gb0) + abs(scale) * G.sum(axis=(0, 2, 3))
    return dict(out=(K.np(out), y_ref, None), gradInput=(K.np(gi), gi_ref, None),
                # the accumulated buffers themselves (gw - gw0 in float32 would cancel digits)
                gradWeight=(gw, gw0.astype(np.float64) + scale * Wt.grad.numpy().reshape(w_arg.shape), gw_mag),
                gradBias=((gb, gb0.astype(np.float64) + scale * B.grad.numpy(), gb_mag) if bias else (gb, gb0, None)))


@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("strategy", [0, 1, 2], ids=["auto", "batch-parallel", "gemm-parallel"])
def test_conv_matches_pytorch(K, rng, dtype, tname, tol, strategy):
    K.threads(2)  # per process; 2 threads exercise both strategies
    old = K.strategy(strategy)
    try:
        for i, c in enumerate(conv_configs(rng, 8)):
            res = run_conv(K, rng, c, dtype, tname, bias=bool(i % 3), weight2d=i % 4 == 1, noncontig=i % 5 == 2,
                           scale=[1.0, 0.5, 2.0][i % 3])
            for k, (a, ref, mag) in res.items():
                close(a, ref, tol, "%s %s" % (k, c), scale_of=mag)
    finally:
        K.strategy(old)


def test_conv_one_thread(rng):
    K1 = Kernels(threads=1)
    try:
        for c in conv_configs(rng, 3):
            for k, (a, ref, mag) in run_conv(K1, rng, c, np.float64, "Double").items():
                close(a, ref, 1e-10, "%s %s" % (k, c), scale_of=mag)
    finally:
        K1.threads(2)  # process-wide setting


def test_conv_work_buffers_do_not_grow_when_warm(K, rng):
    K.threads(2)  # the thread count is per process: another test may have changed it
    x = rng.standard_normal((4, 3, 9, 8))
    w = rng.standard_normal((4, 3, 3, 3))
    g = rng.standard_normal((4, 4, 9, 8))
    gw = np.zeros_like(w)
    out, gi, fin, fgi = (K.new("Double") for _ in range(4))
    ptr = K.rt.eval("function(t) return tonumber(require('ffi').cast('intptr_t', t._c.storage.data)) end")
    geo = (3, 3, 1, 1, 1, 1)
    addrs = []
    for _ in range(3):
        K("SpatialConvolutionMM_updateOutput", x, out, w, None, fin, fgi, *geo)
        K("SpatialConvolutionMM_updateGradInput", x, g, gi, w, fin, fgi, *geo)
        K("SpatialConvolutionMM_accGradParameters", x, g, gw, None, fin, fgi, *geo, 1.0)
        addrs.append([K.rt.call(ptr, t) for t in (out, gi, fin, fgi)])
    assert addrs[1] == addrs[2]
    assert 2 * 27 * 72 == K.np(fin).size  # one K x L column matrix per thread (2 threads)
    # accGradParameters does not rely on finput from updateOutput: a fresh buffer gives the same gradient
    gw2 = np.zeros_like(w)
    K("SpatialConvolutionMM_accGradParameters", x, g, gw2, None, K.new("Double"), K.new("Double"), *geo, 1.0)
    close(gw2, gw / 3, 1e-12, "gradWeight with fresh buffers")


def test_conv_errors(K, rng):
    x = rng.standard_normal((2, 3, 5, 5))
    w = rng.standard_normal((4, 3, 3, 3))
    out, fin, fgi = K.new("Double"), K.new("Double"), K.new("Double")
    with pytest.raises(LuaError, match=r"input.size\[2\] == 3 but got input to be of shape: \[2 x 2 x 5 x 5\]"):
        K("SpatialConvolutionMM_updateOutput", x[:, :2].copy(), out, w, None, fin, fgi, 3, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="Output size is too small"):
        K("SpatialConvolutionMM_updateOutput", x[:, :, :2].copy(), out, w, None, fin, fgi, 3, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="3D or 4D input tensor expected"):
        K("SpatialConvolutionMM_updateOutput", x[0, 0].copy(), out, w, None, fin, fgi, 3, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="kernel size should be greater than zero"):
        K("SpatialConvolutionMM_updateOutput", x, out, w, None, fin, fgi, 0, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="stride should be greater than zero"):
        K("SpatialConvolutionMM_updateOutput", x, out, w, None, fin, fgi, 3, 3, 0, 1, 0, 0)
    with pytest.raises(LuaError, match="FloatTensor and DoubleTensor"):
        K("SpatialConvolutionMM_updateOutput", x.astype(np.int32), K.new("Int"), w.astype(np.int32), None,
          K.new("Int"), K.new("Int"), 3, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="weight is a FloatTensor"):
        K("SpatialConvolutionMM_updateOutput", x, out, w.astype(np.float32), None, fin, fgi, 3, 3, 1, 1, 0, 0)
    K("SpatialConvolutionMM_updateOutput", x, out, w, None, fin, fgi, 3, 3, 1, 1, 0, 0)
    with pytest.raises(LuaError, match="gradOutput should be of shape"):
        K("SpatialConvolutionMM_updateGradInput", x, rng.standard_normal((2, 4, 3, 4)), K.new("Double"), w, fin,
          fgi, 3, 3, 1, 1, 0, 0)


# ----------------------------------------------------------------- batch norm

@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_batchnorm_matches_pytorch(K, rng, dtype, tname, tol):
    for trial in range(8):
        four = trial % 2 == 0
        C = int(rng.integers(1, 6))
        # two values per channel make gradInput 0 up to eps and rounding, which no relative tolerance can judge
        N = int(rng.integers(2, 6)) if four else int(rng.integers(3, 9))
        H, W = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        if four and N * H * W < 3:
            N = 3
        shape = (N, C, H, W) if four else (N, C)
        affine, train = trial % 3 != 2, trial % 4 != 3
        eps, momentum, scale = float(rng.choice([1e-5, 1e-3])), float(rng.uniform(0.05, 0.5)), [1.0, 0.7][trial % 2]
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        if trial == 5:  # non-contiguous input: a strided view
            big = (rng.standard_normal((N, 2 * C) + shape[2:]) * 3 + 1).astype(dtype)
            x = big[:, ::2]
        w = rng.uniform(0, 1, C).astype(dtype) if affine else None
        b = rng.standard_normal(C).astype(dtype) if affine else None
        rm0, rv0 = rng.standard_normal(C).astype(dtype), rng.uniform(0.5, 2, C).astype(dtype)
        rm, rv = rm0.copy(), rv0.copy()
        out, gi, sm, ss = (K.new(tname) for _ in range(4))
        K("BatchNormalization_updateOutput", x, out, w, b, rm, rv, sm, ss, int(train), momentum, eps)
        g = rng.standard_normal(shape).astype(dtype)
        gw0 = rng.standard_normal(C).astype(dtype)
        gb0 = rng.standard_normal(C).astype(dtype)
        gw, gb = gw0.copy(), gb0.copy()
        K("BatchNormalization_backward", x, g, gi, gw if affine else None, gb if affine else None, w, rm, rv, sm, ss,
          int(train), scale, eps)

        X = tt(np.ascontiguousarray(x), True)
        Wt, B = (tt(w, True), tt(b, True)) if affine else (None, None)
        RM, RV = tt(rm0), tt(rv0)
        Y = F.batch_norm(X, RM, RV, Wt, B, training=train, momentum=momentum, eps=eps)
        Y.backward(tt(g))
        what = "trial %d shape %s affine %s train %s" % (trial, shape, affine, train)
        close(K.np(out), Y.detach().numpy(), tol, "output " + what)
        close(K.np(gi), X.grad.numpy(), tol, "gradInput " + what)
        close(rm, RM.numpy(), tol, "running_mean " + what)
        close(rv, RV.numpy(), tol, "running_var " + what)
        if train:
            axes = (0, 2, 3) if four else (0,)
            close(K.np(sm), x.astype(np.float64).mean(axis=axes), tol, "save_mean " + what)
            close(K.np(ss), 1 / np.sqrt(x.astype(np.float64).var(axis=axes) + eps), tol, "save_std " + what)
        if affine:
            # compare the accumulated buffers themselves (gw - gw0 in float32 would cancel), bounded by the size of
            # their terms: a per-channel sum can cancel to near zero
            axes = (0, 2, 3) if four else (0,)
            x64 = x.astype(np.float64)
            if train:
                xhat = (x64 - x64.mean(axis=axes, keepdims=True)) / np.sqrt(x64.var(axis=axes, keepdims=True) + eps)
            else:
                bshape = (1, C) + (1,) * (x.ndim - 2)
                xhat = (x64 - rm0.reshape(bshape)) / np.sqrt(rv0.astype(np.float64).reshape(bshape) + eps)
            g64 = np.abs(g.astype(np.float64))
            close(gw, gw0.astype(np.float64) + scale * Wt.grad.numpy().astype(np.float64), tol, "gradWeight " + what,
                  scale_of=np.abs(gw0) + abs(scale) * (g64 * np.abs(xhat)).sum(axis=axes))
            close(gb, gb0.astype(np.float64) + scale * B.grad.numpy().astype(np.float64), tol, "gradBias " + what,
                  scale_of=np.abs(gb0) + abs(scale) * g64.sum(axis=axes))


def test_batchnorm_errors(K, rng):
    x = rng.standard_normal((4, 3, 2, 2))
    out, sm, ss = K.new("Double"), K.new("Double"), K.new("Double")
    with pytest.raises(LuaError, match="weight should have 3 elements, got 2"):
        K("BatchNormalization_updateOutput", x, out, np.ones(2), None, np.zeros(3), np.ones(3), sm, ss, 1, 0.1, 1e-5)
    with pytest.raises(LuaError, match="running_mean and running_var are needed"):
        K("BatchNormalization_updateOutput", x, out, None, None, None, None, sm, ss, 0, 0.1, 1e-5)


# ----------------------------------------------------------------- pooling

def t7_out(i, k, d, p, ceil_mode, any_pad):
    """Torch7's pooled size (with the 'last window starts inside' correction)."""
    o = (-(-(i + 2 * p - k) // d) if ceil_mode else (i + 2 * p - k) // d) + 1
    if any_pad and (o - 1) * d >= i + p:
        o -= 1
    return o


def pool_configs(rng, n):
    out = []
    while len(out) < n:
        kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
        dh, dw = (int(v) for v in rng.integers(1, 4, size=2))
        ph, pw = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
        h, w = (int(v) for v in rng.integers(1, 11, size=2))
        ceil_mode = bool(rng.integers(0, 2))
        if h + 2 * ph < kh or w + 2 * pw < kw:
            continue
        # PyTorch corrects in ceil mode only, Torch7 when any pad is set: compare where they agree
        # (test_pool_torch7_size_rule covers the difference)
        oh, ow = t7_out(h, kh, dh, ph, ceil_mode, ph or pw), t7_out(w, kw, dw, pw, ceil_mode, ph or pw)
        if oh < 1 or ow < 1:
            continue
        out.append(dict(N=int(rng.choice([0, 1, 2, 3])), C=int(rng.integers(1, 4)), H=h, W=w, kh=kh, kw=kw, dh=dh,
                        dw=dw, ph=ph, pw=pw, ceil=ceil_mode, oh=oh, ow=ow))
    out.append(dict(N=2, C=3, H=112, W=112, kh=3, kw=3, dh=2, dw=2, ph=1, pw=1, ceil=False, oh=56, ow=56))  # ResNet
    out.append(dict(N=2, C=2, H=112, W=112, kh=3, kw=3, dh=2, dw=2, ph=0, pw=0, ceil=True, oh=56, ow=56))  # GoogLeNet
    # many small planes: the kernels take several planes per loop, in blocks, the last one partial
    out.append(dict(N=3, C=37, H=7, W=7, kh=3, kw=3, dh=1, dw=1, ph=1, pw=1, ceil=True, oh=7, ow=7))
    out.append(dict(N=2, C=41, H=14, W=13, kh=3, kw=3, dh=2, dw=2, ph=0, pw=0, ceil=True, oh=7, ow=6))
    return out


def pool_input(rng, c, dtype):
    shape = (c["N"], c["C"], c["H"], c["W"]) if c["N"] else (c["C"], c["H"], c["W"])
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_maxpool_matches_pytorch(K, rng, dtype, tname, tol):
    for c in pool_configs(rng, 14):
        x = pool_input(rng, c, dtype)
        X = tt(x, True)
        Y, I = F.max_pool2d(X, (c["kh"], c["kw"]), (c["dh"], c["dw"]), (c["ph"], c["pw"]), ceil_mode=c["ceil"],
                            return_indices=True)
        if Y.shape[-2:] != (c["oh"], c["ow"]):
            continue  # PyTorch's size rule differs here (ceil mode, no pad, k < d)
        g = rng.standard_normal(Y.shape).astype(dtype)
        Y.backward(tt(g))
        out, ind, gi = K.new(tname), K.new("Long"), K.new(tname)
        geo = (c["kw"], c["kh"], c["dw"], c["dh"], c["pw"], c["ph"], int(c["ceil"]))
        K("SpatialMaxPooling_updateOutput", x, out, ind, *geo)
        K("SpatialMaxPooling_updateGradInput", x, g, gi, ind, *geo)
        assert relerr(K.np(out), Y.detach().numpy()) == 0, c
        np.testing.assert_array_equal(K.np(ind) - 1, I.numpy(), err_msg=str(c))  # ours are 1-based
        close(K.np(gi), X.grad.numpy(), tol, "gradInput %s" % c)


def maxpool_rule(x, c):
    """Torch7's SpatialMaxPooling, window by window in numpy: rows then columns, the first maximum wins, a NaN
    propagates (the last NaN wins), an all -inf window keeps index 0 (1-based indices into the plane)."""
    planes = x.reshape(-1, c["H"], c["W"])
    out = np.empty((len(planes), c["oh"], c["ow"]), x.dtype)
    ind = np.empty(out.shape, np.int64)
    for p, img in enumerate(planes):
        for oh in range(c["oh"]):
            hs, he = max(0, oh * c["dh"] - c["ph"]), min(c["H"], oh * c["dh"] - c["ph"] + c["kh"])
            for ow in range(c["ow"]):
                ws, we = max(0, ow * c["dw"] - c["pw"]), min(c["W"], ow * c["dw"] - c["pw"] + c["kw"])
                best, at = -np.inf, -1
                for h in range(hs, he):
                    for w in range(ws, we):
                        v = img[h, w]
                        if v > best or np.isnan(v):
                            best, at = v, h * c["W"] + w
                out[p, oh, ow], ind[p, oh, ow] = best, at + 1
    return out, ind


@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_maxpool_ties_nan_and_infinities(K, rng, dtype, tname, tol):
    """Ties (values from a few levels), NaNs and -inf windows, which PyTorch does not settle the same way:
    against the rule written out window by window."""
    for c in pool_configs(rng, 14):
        shape = (c["N"], c["C"], c["H"], c["W"]) if c["N"] else (c["C"], c["H"], c["W"])
        x = rng.integers(0, 3, shape).astype(dtype)
        x[rng.random(shape) < 0.1] = np.nan
        x[rng.random(shape) < 0.3] = -np.inf
        out, ind = K.new(tname), K.new("Long")
        K("SpatialMaxPooling_updateOutput", x, out, ind, c["kw"], c["kh"], c["dw"], c["dh"], c["pw"], c["ph"],
          int(c["ceil"]))
        want, want_ind = maxpool_rule(x, c)
        got = K.np(out)
        if got.shape[-2:] != want.shape[-2:]:
            continue  # the ceil-mode size rule (test_pool_torch7_size_rule)
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=str(c))
        np.testing.assert_array_equal(K.np(ind).reshape(want.shape), want_ind, err_msg=str(c))


@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("include_pad", [True, False], ids=["include-pad", "exclude-pad"])
def test_avgpool_matches_pytorch(K, rng, dtype, tname, tol, include_pad):
    for c in pool_configs(rng, 14):
        x = pool_input(rng, c, dtype)
        X = tt(x, True)
        Y = F.avg_pool2d(X, (c["kh"], c["kw"]), (c["dh"], c["dw"]), (c["ph"], c["pw"]), ceil_mode=c["ceil"],
                         count_include_pad=include_pad)
        if Y.shape[-2:] != (c["oh"], c["ow"]):
            continue
        g = rng.standard_normal(Y.shape).astype(dtype)
        Y.backward(tt(g))
        out, gi = K.new(tname), K.new(tname)
        geo = (c["kw"], c["kh"], c["dw"], c["dh"], c["pw"], c["ph"], int(c["ceil"]), int(include_pad))
        K("SpatialAveragePooling_updateOutput", x, out, *geo)
        K("SpatialAveragePooling_updateGradInput", x, g, gi, *geo)
        close(K.np(out), Y.detach().numpy(), tol, "output %s" % c)
        close(K.np(gi), X.grad.numpy(), tol, "gradInput %s" % c)


def test_pool_torch7_size_rule(K, rng):
    # ceil mode, pad 1: 5 -> ceil((5+2-3)/3)+1 = 3, but the third window would start at 6-1 = 5 >= 5+1? no: 2*3=6 >= 6
    x = rng.standard_normal((1, 5, 5))
    out, ind = K.new("Double"), K.new("Long")
    K("SpatialMaxPooling_updateOutput", x, out, ind, 3, 3, 3, 3, 1, 1, 1)
    assert K.np(out).shape == (1, 2, 2)
    # pad 0 in ceil mode: Torch7 applies no correction (PyTorch would give 2 here)
    K("SpatialAveragePooling_updateOutput", x, out, 1, 1, 3, 3, 0, 0, 1, 1)
    assert K.np(out).shape == (1, 3, 3)
    np.testing.assert_array_equal(K.np(out)[:, :2, :2], x[:, ::3, ::3][:, :2, :2])
    # GoogLeNet's 3x3/1 pad 1 ceil-mode pooling keeps the size; include-pad divides corners by 9? no: by the
    # window clipped to the padded image, which is 9 everywhere here
    x = rng.standard_normal((2, 3, 7, 7))
    K("SpatialAveragePooling_updateOutput", x, out, 3, 3, 1, 1, 1, 1, 1, 1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = sum(xp[:, :, i:i + 7, j:j + 7] for i in range(3) for j in range(3)) / 9
    close(K.np(out), ref, 1e-12, "avg include pad")
    with pytest.raises(LuaError, match="pad should be smaller than half of kernel size"):
        K("SpatialMaxPooling_updateOutput", x, out, ind, 3, 3, 1, 1, 2, 2, 0)


# ----------------------------------------------------------------- threshold

@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_threshold_matches_pytorch(K, rng, dtype, tname, tol):
    for trial in range(6):
        th, val = (0.0, 0.0) if trial < 2 else (float(rng.standard_normal()), float(rng.standard_normal()))
        x = rng.standard_normal((3, 4, 5)).astype(dtype)
        x.flat[::7] = dtype(th)  # exactly at the threshold: strict >, so val and no gradient
        g = rng.standard_normal(x.shape).astype(dtype)
        X = tt(x, True)
        Y = F.threshold(X, th, val)
        Y.backward(tt(g))
        y_ref, gi_ref = Y.detach().numpy(), X.grad.numpy()
        inplace = trial % 2 == 1
        if trial >= 4:  # non-contiguous input and gradOutput
            x_arg, g_arg = np.swapaxes(np.ascontiguousarray(np.swapaxes(x, 0, 2)), 0, 2), g[:, ::-1][:, ::-1]
            g_arg = np.swapaxes(np.ascontiguousarray(np.swapaxes(g, 0, 2)), 0, 2)
        else:
            x_arg, g_arg = x.copy(), g.copy()
        out, gi = K.new(tname), K.new(tname)
        x_keep = x_arg.copy()
        K("Threshold_updateOutput", x_arg, out, th, val, int(inplace))
        close(K.np(out), y_ref, 0, "output")
        if inplace:
            np.testing.assert_array_equal(x_arg, y_ref)  # input overwritten
            x_arg = x_keep  # THNN's gradient looks at input; in-place ReLU's output has the same sign
        K("Threshold_updateGradInput", x_arg, g_arg, gi, th, val, int(inplace))
        close(K.np(gi), gi_ref, 0, "gradInput")
        if inplace:
            np.testing.assert_array_equal(g_arg, gi_ref)


# ----------------------------------------------------------------- softmax

@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
@pytest.mark.parametrize("log", [False, True], ids=["SoftMax", "LogSoftMax"])
def test_softmax_matches_pytorch(K, rng, dtype, tname, tol, log):
    name = "LogSoftMax" if log else "SoftMax"
    for shape, dim in [((7,), 0), ((4, 9), 1), ((5, 3, 4), 0), ((2, 6, 3, 5), 1), ((1, 1000), 1)]:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        Y = (F.log_softmax if log else F.softmax)(tt(x.astype(np.float64)), dim=dim)
        out, gi = K.new(tname), K.new(tname)
        K(name + "_updateOutput", x, out)
        K(name + "_updateGradInput", x, g, gi, out)
        close(K.np(out), Y.numpy(), tol, "%s output %s" % (name, shape))
        # Torch7's backward is a function of the module's output, as PyTorch's backward kernels are:
        # the oracle takes the very output we computed, in float64. Against the exact softmax instead,
        # the float32 rounding of that output alone moves a peaked softmax's gradient by 1e-4 relative
        # (y * (dy - sum(dy*y)) cancels), whatever the kernel does.
        Y_ours = tt(K.np(out).astype(np.float64))
        backward = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        ref_gi = backward(tt(g.astype(np.float64)), Y_ours, dim, torch.float64)
        close(K.np(gi), ref_gi.numpy(), tol, "%s gradInput %s" % (name, shape))
    big = np.array([1000.0, 1001.0, -1000.0], dtype)  # exp overflows without the max subtraction
    out = K.new(tname)
    K(name + "_updateOutput", big, out)
    ref = F.log_softmax(tt(big.astype(np.float64)), 0) if log else F.softmax(tt(big.astype(np.float64)), 0)
    close(K.np(out), ref.numpy(), tol, name + " large inputs")


# ----------------------------------------------------------------- ClassNLL

@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_classnll_matches_pytorch(K, rng, dtype, tname, tol):
    for trial in range(8):
        n_cls = int(rng.integers(2, 8))
        batch = trial % 4 != 3
        N = int(rng.integers(1, 9)) if batch else 1
        x = rng.standard_normal((N, n_cls)).astype(dtype)
        t = rng.integers(1, n_cls + 1, size=N).astype(np.int64)
        weights = rng.uniform(0.1, 2, n_cls).astype(dtype) if trial % 2 else None
        size_average = trial % 3 != 0
        ignore = -100
        if trial in (4, 5) and N > 1:
            ignore = int(t[0])  # ignore one class (1-based, like the target)
            t[-1] = (ignore % n_cls) + 1  # keep at least one counted target
        X = tt(x, True)
        loss = F.nll_loss(X, torch.tensor(t - 1), weight=tt(weights) if weights is not None else None,
                          ignore_index=ignore - 1, reduction="mean" if size_average else "sum")
        loss.backward()
        out, tw, gi = K.new(tname), K.new(tname), K.new(tname)
        x_arg, t_arg = (x, t) if batch else (x[0], t[:1])
        K("ClassNLLCriterion_updateOutput", x_arg, t_arg, out, int(size_average), weights, tw, ignore)
        K("ClassNLLCriterion_updateGradInput", x_arg, t_arg, gi, int(size_average), weights, tw, ignore)
        close(K.np(out), loss.detach().numpy().reshape(1), tol, "loss trial %d" % trial)
        ref_gi = X.grad.numpy() if batch else X.grad.numpy()[0]
        close(K.np(gi), ref_gi, tol, "gradInput trial %d" % trial)
        w_t = weights[t - 1] if weights is not None else np.ones(N)
        close(K.np(tw), [w_t[t != ignore].sum()], tol, "total_weight trial %d" % trial)


def test_classnll_errors(K, rng):
    x = rng.standard_normal((3, 5))
    out, tw = K.new("Double"), K.new("Double")
    with pytest.raises(LuaError, match="target 6 is out of range: 5 classes"):
        K("ClassNLLCriterion_updateOutput", x, np.array([1, 6, 2]), out, 1, None, tw, -100)
    with pytest.raises(LuaError, match="target 0 is out of range: 5 classes"):
        K("ClassNLLCriterion_updateOutput", x, np.array([1, 0, 2]), out, 1, None, tw, -100)
    with pytest.raises(LuaError, match="size mismatch"):
        K("ClassNLLCriterion_updateOutput", x, np.array([1, 2]), out, 1, None, tw, -100)
    with pytest.raises(LuaError, match="target must be a LongTensor"):
        K("ClassNLLCriterion_updateOutput", x, np.array([1, 2, 3], np.int32), out, 1, None, tw, -100)
    # all targets ignored: Torch7 gives 0 (PyTorch gives nan)
    K("ClassNLLCriterion_updateOutput", x, np.array([2, 2, 2]), out, 1, None, tw, 2)
    assert K.np(out)[0] == 0 and K.np(tw)[0] == 0


# ----------------------------------------------------------------- bigger shapes

@pytest.mark.slow
@pytest.mark.parametrize("dtype,tname,tol", TYPES, ids=TYPE_IDS)
def test_conv_resnet_shapes(K, rng, dtype, tname, tol):
    for (C, O, k, s, p, H) in [(3, 16, 7, 2, 3, 64), (32, 32, 3, 1, 1, 28), (32, 64, 1, 2, 0, 28), (64, 32, 1, 1, 0, 14)]:
        c = dict(N=4, C=C, O=O, H=H, W=H, kh=k, kw=k, dh=s, dw=s, ph=p, pw=p)
        for key, (a, ref, mag) in run_conv(K, rng, c, dtype, tname).items():
            close(a, ref, tol, "%s %s" % (key, c), scale_of=mag)


def test_bench_conv_runs(tmp_path):
    import json

    from run import bench_conv

    out = tmp_path / "conv.json"
    assert bench_conv.main(["--batch", "2", "--threads", "1", "--repeat", "1", "--layers", "512->512",
                            "--json", str(out)]) == 0
    (rec,) = json.loads(out.read_text())
    assert rec["layer"] == "3x3 512->512 @7" and rec["ours_ms"] > 0 and rec["max_rel_error"] < 1e-4
