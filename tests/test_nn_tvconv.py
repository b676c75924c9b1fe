"""nn.Temporal*/Volumetric* convolutions against PyTorch (the independent oracle).

Each class, on configurations drawn at random per run (odd sizes, strides, padding, dilation,
batch 1, non-contiguous inputs): output, gradInput and every parameter gradient (accumulated
with a random `scale`) equal torch.nn.functional's conv1d / conv3d / conv_transpose3d on the
same weights; float64 to 1e-10, float32 to 1e-4. Plus a .t7 round trip, type(), clearState
and one-line errors."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from pytorch_bridge import LuaError  # noqa: E402

TOL = {np.float64: 1e-10, np.float32: 1e-4}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


# One forward/backward of module m on x (made non-contiguous on request), gradients
# accumulated with `scale` into freshly zeroed buffers.
RUN = """function(m, x, g, scale, noncontig)
   local d = x:dim()
   if noncontig then x = x:transpose(d - 1, d):contiguous():transpose(d - 1, d) end
   m:zeroGradParameters()
   local y = m:forward(x):clone()
   local gi = m:backward(x, g, scale):clone()
   return y, gi, m.weight, m.gradWeight, m.bias, m.gradBias
end"""


def check(rt, rng, build, x_shape, reference, dtype=np.float64):
    """`reference(x, w, b) -> y` in PyTorch, w and b shaped as the Lua module's weight and bias."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    rt.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    m = rt.eval(build)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rt.to_numpy(rt.eval("function(m) return m.weight end")(m)).copy()
    bias = rt.eval("function(m) return m.bias end")(m)
    b = rt.to_numpy(bias).copy() if bias is not None else None
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    wt = torch.from_numpy(w).requires_grad_(True)
    bt = torch.from_numpy(b).requires_grad_(True) if b is not None else None
    y_ref = reference(xt, wt, bt)
    g = rng.standard_normal(tuple(y_ref.shape)).astype(dtype)
    y_ref.backward(torch.from_numpy(g))
    scale = float(rng.uniform(0.3, 2.0))
    noncontig = x.ndim >= 2 and min(x.shape[-2:]) > 1
    y, gi, _, gw, _, gb = rt.call(rt.eval(RUN), m, rt.from_numpy(x), rt.from_numpy(g), scale, noncontig)
    tol = TOL[dtype]
    assert rel_err(rt.to_numpy(y), y_ref.detach().numpy()) <= tol, "output of " + build
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= tol, "gradInput of " + build
    assert rel_err(rt.to_numpy(gw), scale * wt.grad.numpy()) <= tol, "gradWeight of " + build
    if b is not None:
        assert rel_err(rt.to_numpy(gb), scale * bt.grad.numpy()) <= tol, "gradBias of " + build
    return m


def ri(rng, lo, hi):
    return int(rng.integers(lo, hi + 1))


DTYPES = [np.float64, np.float32]
IDS = ["double", "float"]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_temporal_convolution(rt, rng, dtype):
    for _ in range(4):
        fi, fo, kw, dw = ri(rng, 1, 5), ri(rng, 1, 5), ri(rng, 1, 4), ri(rng, 1, 4)
        s = kw + ri(rng, 0, 6)

        def ref(x, w, b, fi=fi, kw=kw, dw=dw):
            wk = w.view(w.shape[0], kw, fi).permute(0, 2, 1)
            xs = x.transpose(-1, -2) if x.dim() == 3 else x.t().unsqueeze(0)
            y = F.conv1d(xs, wk, b, stride=dw).transpose(-1, -2)
            return y if x.dim() == 3 else y[0]

        build = "nn.TemporalConvolution(%d, %d, %d, %d)" % (fi, fo, kw, dw)
        check(rt, rng, build, (s, fi), ref, dtype)
        check(rt, rng, build, (ri(rng, 1, 3), s, fi), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_temporal_subsampling(rt, rng, dtype):
    for _ in range(4):
        fi, kw, dw = ri(rng, 1, 5), ri(rng, 1, 4), ri(rng, 1, 3)
        s = kw + ri(rng, 0, 6)

        def ref(x, w, b, fi=fi, kw=kw, dw=dw):
            wk = w.view(fi, 1, 1).expand(fi, 1, kw)
            return F.conv1d(x.t().unsqueeze(0), wk, b, stride=dw, groups=fi)[0].t()

        check(rt, rng, "nn.TemporalSubSampling(%d, %d, %d)" % (fi, kw, dw), (s, fi), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_temporal_row_convolution(rt, rng, dtype):
    for _ in range(3):
        fi, kw, dw = ri(rng, 1, 5), ri(rng, 1, 4), ri(rng, 1, 3)
        s = kw + ri(rng, 0, 6)
        for feat_first in (False, True):
            def ref(x, w, b, fi=fi, dw=dw, ff=feat_first):
                batch = x.dim() == 3
                xs = x if batch else x.unsqueeze(0)
                if not ff:
                    xs = xs.transpose(1, 2)
                y = F.conv1d(xs, w, b, stride=dw, groups=fi)
                if not ff:
                    y = y.transpose(1, 2)
                return y if batch else y[0]

            build = "nn.TemporalRowConvolution(%d, %d, %d, %s)" % (fi, kw, dw, str(feat_first).lower())
            shape = (fi, s) if feat_first else (s, fi)
            check(rt, rng, build, shape, ref, dtype)
            check(rt, rng, build, (ri(rng, 1, 3),) + shape, ref, dtype)
            check(rt, rng, build + ":noBias()", (2,) + shape, lambda x, w, b, r=ref: r(x, w, None), dtype)


def vol_config(rng, dilated=False):
    c = dict(nin=ri(rng, 1, 3), nout=ri(rng, 1, 3), k=[ri(rng, 1, 3) for _ in range(3)],
             d=[ri(rng, 1, 2) for _ in range(3)], l=[ri(rng, 1, 2) if dilated else 1 for _ in range(3)])
    c["p"] = [ri(rng, 0, k // 2) for k in c["k"]]
    c["size"] = [c["l"][i] * (c["k"][i] - 1) + 1 + ri(rng, 0, 3) for i in range(3)]  # T, H, W
    return c


def vol_shape(c, rng, batch):
    shape = (c["nin"],) + tuple(c["size"])
    return ((ri(rng, 1, 3),) + shape) if batch else shape


def unbatched(fn):
    """PyTorch's 3-D ops on a (C, T, H, W) volume too."""
    def ref(x, w, b):
        return fn(x, w, b) if x.dim() == 5 else fn(x.unsqueeze(0), w, b)[0]
    return ref


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_volumetric_convolution(rt, rng, dtype):
    for batch in (True, False, True):
        c = vol_config(rng)
        (kT, kH, kW), (dT, dH, dW), (pT, pH, pW) = c["k"], c["d"], c["p"]
        build = "nn.VolumetricConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
            c["nin"], c["nout"], kT, kW, kH, dT, dW, dH, pT, pW, pH)
        ref = unbatched(lambda x, w, b: F.conv3d(x, w, b, stride=c["d"], padding=c["p"]))
        check(rt, rng, build, vol_shape(c, rng, batch), ref, dtype)
        check(rt, rng, build + ":noBias()", vol_shape(c, rng, batch), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_volumetric_dilated_convolution(rt, rng, dtype):
    for batch in (True, False, True):
        c = vol_config(rng, dilated=True)
        (kT, kH, kW), (dT, dH, dW), (pT, pH, pW), (lT, lH, lW) = c["k"], c["d"], c["p"], c["l"]
        build = "nn.VolumetricDilatedConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
            c["nin"], c["nout"], kT, kW, kH, dT, dW, dH, pT, pW, pH, lT, lW, lH)
        ref = unbatched(lambda x, w, b: F.conv3d(x, w, b, stride=c["d"], padding=c["p"], dilation=c["l"]))
        check(rt, rng, build, vol_shape(c, rng, batch), ref, dtype)
        check(rt, rng, build + ":noBias()", vol_shape(c, rng, batch), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_volumetric_full_convolution(rt, rng, dtype):
    for batch in (True, False, True):
        c = vol_config(rng)
        (kT, kH, kW), (dT, dH, dW), (pT, pH, pW) = c["k"], c["d"], c["p"]
        a = [ri(rng, 0, d - 1) for d in c["d"]]
        build = "nn.VolumetricFullConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
            c["nin"], c["nout"], kT, kW, kH, dT, dW, dH, pT, pW, pH, a[0], a[2], a[1])
        ref = unbatched(lambda x, w, b: F.conv_transpose3d(x, w, b, stride=c["d"], padding=c["p"],
                                                           output_padding=a))
        check(rt, rng, build, vol_shape(c, rng, batch), ref, dtype)
        check(rt, rng, build + ":noBias()", vol_shape(c, rng, batch), ref, dtype)


def test_volumetric_full_convolution_target_size(rt):
    """{input, target}: adj from the target's size; the target's gradient is zero."""
    rt.require("nn")
    res = rt.execute("""
        torch.setdefaulttensortype('torch.DoubleTensor')
        local m = nn.VolumetricFullConvolution(2, 3, 3, 3, 3, 2, 2, 2, 1, 1, 1)
        local x, t = torch.randn(2, 2, 3, 4, 5), torch.randn(2, 3, 6, 8, 10)
        local y = m:forward({x, t})
        local gi = m:backward({x, t}, torch.randn(y:size()))
        return table.concat(y:size():totable(), 'x'), table.concat(gi[1]:size():totable(), 'x'),
               gi[2]:abs():sum(), table.concat(gi[2]:size():totable(), 'x')
    """)
    assert tuple(res) == ("2x3x6x8x10", "2x2x3x4x5", 0, "2x3x6x8x10")


ALL = [
    ("nn.TemporalConvolution(3, 4, 3, 2)", "torch.randn(2, 9, 3)"),
    ("nn.TemporalSubSampling(3, 2, 2)", "torch.randn(9, 3)"),
    ("nn.TemporalRowConvolution(3, 3, 2)", "torch.randn(2, 9, 3)"),
    ("nn.VolumetricConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1)", "torch.randn(2, 2, 5, 6, 5)"),
    ("nn.VolumetricDilatedConvolution(2, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 1, 2)", "torch.randn(2, 5, 5, 5)"),
    ("nn.VolumetricFullConvolution(2, 3, 2, 3, 2, 2, 2, 2, 0, 1, 0, 1, 0, 1)", "torch.randn(1, 2, 3, 4, 3)"),
]


@pytest.mark.parametrize("build,inp", ALL, ids=[b.split("(")[0] for b, _ in ALL])
def test_t7_round_trip_type_and_clear_state(rt, tmp_path, build, inp):
    """torch.save/torch.load keeps the class, fields and results; :float() and clearState work."""
    rt.require("nn")
    path = str(tmp_path / "m.t7")
    res = rt.execute("""
        torch.setdefaulttensortype('torch.DoubleTensor')
        local m, x = %s, %s
        local y = m:forward(x):clone()
        m:backward(x, torch.randn(y:size()))
        torch.save('%s', m)
        local m2 = torch.load('%s')
        local same = torch.type(m2) == torch.type(m) and tostring(m2) == tostring(m)
        for k, v in pairs(m) do
           if type(v) == 'number' or type(v) == 'boolean' then same = same and m2[k] == v end
        end
        same = same and m2.weight:equal(m.weight) and m2.gradWeight:equal(m.gradWeight)
        local err = (m2:forward(x) - y):abs():max()
        m2:clearState()
        local cleared = m2.output:nElement() == 0 and (m2.finput == nil or m2.finput:nElement() == 0)
        m2:float()
        local yf = m2:forward(x:float())
        return same, err, cleared, torch.type(yf), (yf:double() - y):abs():max()
    """ % (build, inp, path, path))
    same, err, cleared, ftype, ferr = res
    assert same and err == 0 and cleared
    assert ftype == "torch.FloatTensor" and ferr < 1e-4


@pytest.mark.parametrize("build,inp,msg", [
    ("nn.TemporalConvolution(3, 4, 3)", "torch.randn(9, 5)", "invalid input frame size"),
    ("nn.TemporalConvolution(3, 4, 3)", "torch.randn(2, 3)", "input sequence smaller than kernel size"),
    ("nn.TemporalRowConvolution(3, 3)", "torch.randn(2, 2, 9, 3)", "2D or 3D"),
    ("nn.VolumetricConvolution(2, 3, 2, 2, 2)", "torch.randn(3, 4, 4, 4)", "planes"),
    ("nn.VolumetricConvolution(2, 3, 3, 3, 3)", "torch.randn(2, 2, 2, 2)", "Output size is too small"),
    ("nn.VolumetricFullConvolution(2, 3, 2, 2, 2)", "torch.randn(4, 4, 4)", "4D or 5D"),
])
def test_errors_are_one_line(rt, build, inp, msg):
    rt.require("nn")
    with pytest.raises(LuaError) as e:
        rt.execute("torch.setdefaulttensortype('torch.DoubleTensor'); local m = %s; m:forward(%s)" % (build, inp))
    assert msg in str(e.value).strip().splitlines()[0]


def test_full_convolution_adj_must_be_below_stride(rt):
    rt.require("nn")
    with pytest.raises(LuaError, match="must be smaller than the strides"):
        rt.execute("nn.VolumetricFullConvolution(2, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0, 1, 0, 0)")


def test_threaded_paths(rt, rng):
    """Shapes large enough for the OpenMP loops (per-feature lines, vol2col channels) agree too."""
    rt.require("nn")
    rt.execute("torch.setnumthreads(2)")
    ref = lambda x, w, b: F.conv1d(x.transpose(1, 2), w, b, stride=1, groups=16).transpose(1, 2)  # noqa: E731
    check(rt, rng, "nn.TemporalRowConvolution(16, 4)", (8, 301, 16), ref)
    check(rt, rng, "nn.VolumetricConvolution(4, 5, 3, 3, 3, 1, 1, 1, 1)", (2, 4, 8, 9, 7),
          lambda x, w, b: F.conv3d(x, w, b, padding=1))


def test_acc_update_grad_parameters(rt):
    """accUpdateGradParameters / sharedAccUpdateGradParameters step the weights by -lr * gradient."""
    rt.require("nn")
    res = rt.execute("""
        torch.setdefaulttensortype('torch.DoubleTensor')
        local errs = {}
        for _, m in ipairs({nn.TemporalConvolution(3, 4, 2), nn.VolumetricConvolution(2, 2, 2, 2, 2)}) do
           local x = m.weight:dim() == 2 and torch.randn(6, 3) or torch.randn(2, 4, 4, 4)
           local y = m:forward(x)
           local g = torch.randn(y:size())
           m:zeroGradParameters()
           m:backward(x, g)
           local expect = m.weight - m.gradWeight * 0.1
           m:sharedAccUpdateGradParameters(x, g, 0.1)
           errs[#errs + 1] = (m.weight - expect):abs():max()
        end
        return errs[1], errs[2]
    """)
    assert max(res) < 1e-12
