"""nn modules against PyTorch (the independent oracle), through pytorch_bridge.interop.

For each module type on random configurations: output, gradInput and every parameter gradient
equal PyTorch's (float64: rel. error <= 1e-10; float32: <= 1e-5)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pytorch_bridge.interop import from_torch, load_state_dict, state_dict, to_torch  # noqa: E402

TOL = {np.float64: 1e-10, np.float32: 1e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def lua_grads(rt, module):
    """(name, gradient ndarray) in the same walk order as interop.state_dict."""
    walk = rt.execute("""
        local function walk(m, prefix, out)
           if m.modules and #m.modules > 0 then
              for i, c in ipairs(m.modules) do walk(c, prefix .. (i - 1) .. '.', out) end
              return
           end
           if m.gradWeight then out[#out + 1] = {prefix .. 'weight', m.gradWeight} end
           if m.gradBias then out[#out + 1] = {prefix .. 'bias', m.gradBias} end
        end
        return function(m) local out = {}; walk(m, '', out); return out end
    """)
    res = rt.call(walk, module)
    return [(res[i + 1][1], rt.to_numpy(res[i + 1][2]).copy()) for i in range(len(res))]


def forward_backward(rt, module, x, g):
    """One forward and backward of the Lua module on numpy x, g: (output, gradInput or None), copied."""
    fn = rt.eval("""function(m, x, g)
        m:zeroGradParameters()
        local y = m:forward(x):clone()
        local gi = m:backward(x, g)
        return y, gi and gi:clone() or nil
    end""")
    return rt.call(fn, module, rt.from_numpy(x), rt.from_numpy(g))


def check_module(rt, rng, build, in_shape, dtype, train=True, seed_lua=True, grad_tol=None):
    """Build the Lua module with `build` (Lua expression), compare with PyTorch."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    if seed_lua:
        rt.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    m = rt.eval(build)
    rt.call(rt.eval("function(m, t) if t then m:training() else m:evaluate() end end"), m, train)
    net = to_torch(rt, m, dtype)
    net.train(train)
    x = rng.standard_normal(in_shape).astype(dtype)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    y_ref = net(xt)
    g = rng.standard_normal(tuple(y_ref.shape)).astype(dtype)
    y_ref.backward(torch.from_numpy(g))

    y, gi = forward_backward(rt, m, x, g)
    tol = TOL[dtype]
    assert rel_err(rt.to_numpy(y), y_ref.detach().numpy()) <= tol, "output of " + build
    if gi is not None:
        assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= (grad_tol or tol), "gradInput of " + build
    ref_grads = dict((n, p.grad.numpy()) for n, p in net.named_parameters())
    # A bias feeding BatchNorm has an analytically zero gradient (the mean is removed):
    # both sides hold rounding noise there, so compare such gradients in absolute terms
    # against the scale of the network's gradients.
    scale = max([float(np.max(np.abs(v))) for v in ref_grads.values() if v.size] + [0.0])
    for name, grad in lua_grads(rt, m):
        assert name in ref_grads, (name, sorted(ref_grads))
        ref = ref_grads[name]
        grad = grad.reshape(ref.shape)
        if np.max(np.abs(ref)) < 1e-9 * scale:
            assert np.max(np.abs(grad - ref)) <= 1e-9 * scale, "grad %s of %s (zero gradient)" % (name, build)
        else:
            # relative to the larger of this gradient and the network's gradient scale: a sum over the batch
            # that cancels (a bias gradient of a few samples) keeps the rounding of its terms, not of its result
            err = np.max(np.abs(grad.astype(np.float64) - ref)) / max(np.max(np.abs(ref)), scale)
            assert err <= (grad_tol or tol), "grad %s of %s" % (name, build)
    if train:
        # BN running statistics after one training step
        sd = state_dict(rt, m)
        ref = net.state_dict()
        for k, v in sd.items():
            if "running" in k:
                assert rel_err(v.numpy(), ref[k].numpy()) <= tol, k
    return m, net


DTYPES = [np.float64, np.float32]


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_linear(rt, rng, dtype):
    i, o, n = (int(v) for v in rng.integers(1, 20, 3))
    check_module(rt, rng, "nn.Linear(%d, %d)" % (i, o), (n, i), dtype)
    check_module(rt, rng, "nn.Linear(%d, %d):noBias()" % (i, o), (n, i), dtype)
    check_module(rt, rng, "nn.Linear(%d, %d)" % (i, o), (1, i), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_spatial_convolution(rt, rng, dtype):
    for _ in range(4):
        nin, nout = (int(v) for v in rng.integers(1, 6, 2))
        kw, kh = (int(v) for v in rng.integers(1, 5, 2))
        dw, dh = (int(v) for v in rng.integers(1, 3, 2))
        pw, ph = int(rng.integers(0, kw // 2 + 1)), int(rng.integers(0, kh // 2 + 1))
        n = int(rng.integers(1, 4))
        h, w = kh + int(rng.integers(0, 7)), kw + int(rng.integers(0, 7))
        build = "nn.SpatialConvolution(%d, %d, %d, %d, %d, %d, %d, %d)" % (nin, nout, kw, kh, dw, dh, pw, ph)
        check_module(rt, rng, build, (n, nin, h, w), dtype)
        check_module(rt, rng, build + ":noBias()", (n, nin, h, w), dtype)
    check_module(rt, rng, "cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)" if rt.require("cudnn") else "",
                 (2, 3, 5, 6), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_batch_normalization(rt, rng, dtype):
    c = int(rng.integers(1, 6))
    for train in (True, False):
        check_module(rt, rng, "nn.SpatialBatchNormalization(%d)" % c, (3, c, 4, 5), dtype, train=train)
        check_module(rt, rng, "nn.SpatialBatchNormalization(%d, 1e-3, 0.3)" % c, (2, c, 3, 3), dtype, train=train)
        check_module(rt, rng, "nn.BatchNormalization(%d)" % c, (6, c), dtype, train=train)
        check_module(rt, rng, "nn.BatchNormalization(%d, 1e-5, 0.1, false)" % c, (4, c), dtype, train=train)
        # planes long enough for the vector lanes of the float reductions, and an odd length for their tail
        check_module(rt, rng, "nn.SpatialBatchNormalization(%d)" % c, (5, c, 37, 41), dtype, train=train)


def test_batch_normalization_float_with_a_large_mean(rt, rng):
    """float32 batch statistics of values far from zero (mean 300, std 1, so float32's own rounding of the
    inputs is 3e-5 of their spread): output, gradInput and the parameter gradients against PyTorch in float64
    on the same float32 values, within what float32 output rounding (and, for gradWeight, the float32 saved
    mean) allows."""
    rt.require("nn")
    c = 3
    x = (300 + rng.standard_normal((4, c, 29, 31))).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    m = rt.eval("nn.SpatialBatchNormalization(%d):float()" % c)
    rt.to_numpy(m.weight)[:] = w
    rt.to_numpy(m.bias)[:] = b
    y, gi = forward_backward(rt, m, x, g)
    bn = torch.nn.BatchNorm2d(c).double()
    with torch.no_grad():
        bn.weight.copy_(torch.from_numpy(w.astype(np.float64)))
        bn.bias.copy_(torch.from_numpy(b.astype(np.float64)))
    xt = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    yt = bn(xt)
    yt.backward(torch.from_numpy(g.astype(np.float64)))
    assert rel_err(rt.to_numpy(y), yt.detach().numpy()) <= 1e-6
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= 1e-5
    # backward reads the batch mean as saved, a float32 (THNN's save_mean is a real tensor): half an ulp of 300
    # shifts every x - mean by up to 1.5e-5, and gradWeight = invstd * sum((x - mean) * dy) by that times sum(dy)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=(0, 2, 3)), xd.var(axis=(0, 2, 3))
    saved_mean_slack = (0.5 * np.spacing(mean.astype(np.float32)).astype(np.float64)
                        * np.abs(g.astype(np.float64).sum(axis=(0, 2, 3))) / np.sqrt(var + 1e-5))
    ref_gw = bn.weight.grad.numpy()
    assert np.all(np.abs(rt.to_numpy(m.gradWeight) - ref_gw) <= 1e-5 * np.max(np.abs(ref_gw)) + saved_mean_slack)
    assert rel_err(rt.to_numpy(m.gradBias), bn.bias.grad.numpy()) <= 1e-5
    assert rel_err(rt.to_numpy(m.running_mean), bn.running_mean.numpy()) <= 1e-6


@pytest.mark.parametrize("case", ["evaluate", "batch of one"])
def test_batch_norm_saved_statistics_are_sized_where_the_batch_is_not_used(rt, rng, case):
    """Torch7 sizes save_mean/save_std per feature in every forward (cunn's tests read save_std:max() after a
    training forward of one sample); the running statistics are left alone when the batch's are not used."""
    x = rng.standard_normal((1 if case == "batch of one" else 4, 6))
    r = rt.eval("""function(x, evaluate)
        require 'nn'
        local m = nn.BatchNormalization(6):double()
        if evaluate then m:evaluate() end
        local rm = m.running_mean:clone()
        m:forward(x)
        return m.save_mean:nElement(), m.save_std:nElement(), (m.running_mean - rm):abs():max()
    end""")(rt.from_numpy(x), case == "evaluate")
    assert tuple(r) == (6, 6, 0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_pooling(rt, rng, dtype):
    for _ in range(6):
        k = int(rng.integers(1, 4))
        s = int(rng.integers(1, 3))
        p = int(rng.integers(0, k // 2 + 1))
        ceil = bool(rng.integers(0, 2)) and p > 0  # Torch7 and PyTorch differ only for ceil without pad
        h, w = k + int(rng.integers(0, 6)), k + int(rng.integers(0, 6))
        suffix = ":ceil()" if ceil else ""
        check_module(rt, rng, "nn.SpatialMaxPooling(%d, %d, %d, %d, %d, %d)%s" % (k, k, s, s, p, p, suffix),
                     (2, 3, h, w), dtype)
        for pad_mode in ("", ":setCountExcludePad()"):
            check_module(rt, rng, "nn.SpatialAveragePooling(%d, %d, %d, %d, %d, %d)%s%s"
                         % (k, k, s, s, p, p, suffix, pad_mode), (2, 3, h, w), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_activations_and_softmax(rt, rng, dtype):
    check_module(rt, rng, "nn.ReLU()", (3, 4, 5), dtype)
    check_module(rt, rng, "nn.Threshold(0.3, -1)", (7, 3), dtype)
    check_module(rt, rng, "nn.SoftMax()", (5, 7), dtype)
    check_module(rt, rng, "nn.LogSoftMax()", (5, 7), dtype)
    check_module(rt, rng, "nn.LogSoftMax()", (9,), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_containers(rt, rng, dtype):
    # a CIFAR-style residual block with a type-A (zero-padded) shortcut, then a classifier; the
    # convolution before BN has no bias, as in fb.resnet.torch (its gradient would be ~0 and
    # a relative comparison meaningless)
    block = """nn.Sequential()
        :add(nn.ConcatTable()
              :add(nn.Sequential():add(nn.SpatialConvolution(3, 6, 3, 3, 1, 1, 1, 1):noBias()):add(nn.SpatialBatchNormalization(6)))
              :add(nn.Sequential():add(nn.SpatialAveragePooling(1, 1, 1, 1))
                                  :add(nn.Concat(2):add(nn.Identity()):add(nn.MulConstant(0)))))
        :add(nn.CAddTable(true))
        :add(nn.ReLU(true))
        :add(nn.View(-1):setNumInputDims(3))
        :add(nn.Linear(6 * 5 * 6, 3))
        :add(nn.LogSoftMax())"""
    check_module(rt, rng, block, (2, 3, 5, 6), dtype)
    # DepthConcat centres the smaller (3x3-convolved) output in zero padding
    check_module(rt, rng, "nn.DepthConcat(2):add(nn.SpatialConvolution(2, 3, 3, 3))"
                 ":add(nn.SpatialConvolution(2, 4, 1, 1)):add(nn.SpatialMaxPooling(2, 2, 1, 1))", (2, 2, 5, 6), dtype)


def test_errors_name_the_module(rt):
    rt.require("nn")
    from pytorch_bridge import LuaError

    with pytest.raises(LuaError) as info:
        rt.execute("""local m = nn.Sequential():add(nn.Linear(4, 3)):add(nn.ReLU()):add(nn.Linear(5, 2))
                      m:forward(torch.randn(2, 4))""")
    assert "In 3 module of nn.Sequential" in info.value.lua_message
    assert "size mismatch" in info.value.lua_message
    with pytest.raises(LuaError, match="input has 2 channels"):
        rt.execute("nn.SpatialConvolution(3, 4, 3, 3):forward(torch.randn(1, 2, 5, 5))")
    with pytest.raises(LuaError, match="out of range"):
        rt.execute("nn.ClassNLLCriterion():forward(torch.randn(2, 5), torch.LongTensor{1, 6})")


@pytest.mark.parametrize("dtype", DTYPES, ids=["double", "float"])
def test_criteria(rt, rng, dtype):
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    n, c = 6, 5
    x = rng.standard_normal((n, c)).astype(dtype)
    t = rng.integers(1, c + 1, n)
    crit = rt.eval("nn.CrossEntropyCriterion()")
    run = rt.eval("function(c, x, t) local l = c:forward(x, t); return l, c:backward(x, t):clone() end")
    loss, gi = rt.call(run, crit, rt.from_numpy(x), rt.from_numpy(t.astype(np.int64)))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ref = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t - 1))
    ref.backward()
    assert rel_err(loss, ref.item()) <= TOL[dtype]
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= TOL[dtype]
    mse = rt.eval("nn.MSECriterion()")
    y = rng.standard_normal((n, c)).astype(dtype)
    loss, gi = rt.call(run, mse, rt.from_numpy(x), rt.from_numpy(y))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ref = torch.nn.functional.mse_loss(xt, torch.from_numpy(y))
    ref.backward()
    assert rel_err(loss, ref.item()) <= TOL[dtype]
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= TOL[dtype]


def test_sgd_matches_torch_optim(rt, rng):
    """A few optim.sgd steps on a small model equal torch.optim.SGD configured to match
    (Torch7's sgd: weight decay added to the gradient, first momentum step without
    dampening, dampening = momentum by default -> PyTorch's dampening=momentum)."""
    rt.require("nn")
    rt.require("optim")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor'); torch.manualSeed(7)")
    model = rt.eval("nn.Sequential():add(nn.Linear(6, 5)):add(nn.ReLU()):add(nn.Linear(5, 3))")
    net = to_torch(rt, model, np.float64)
    cfg = dict(lr=0.05, momentum=0.9, dampening=0.9, weight_decay=1e-3, nesterov=False)
    opt = torch.optim.SGD(net.parameters(), **cfg)
    state = rt.eval("{learningRate = 0.05, momentum = 0.9, weightDecay = 1e-3}")
    crit = rt.eval("nn.CrossEntropyCriterion()")
    # getParameters must be called once: flatten first, then reuse through a closure
    rt.globals.__model = model
    rt.execute("__params, __grads = __model:getParameters()")
    step = rt.eval("""function(model, crit, x, t, state)
        local function feval()
           __grads:zero()
           local y = model:forward(x)
           local loss = crit:forward(y, t)
           model:backward(x, crit:backward(y, t))
           return loss, __grads
        end
        optim.sgd(feval, __params, state)
    end""")
    for _ in range(4):
        x = rng.standard_normal((8, 6))
        t = rng.integers(1, 4, 8)
        rt.call(step, model, crit, rt.from_numpy(x), rt.from_numpy(t.astype(np.int64)), state)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(t - 1))
        loss.backward()
        opt.step()
    ours = state_dict(rt, model)
    for k, v in net.state_dict().items():
        assert rel_err(ours[k].numpy(), v.numpy()) <= 1e-10, k


def test_round_trip_through_torch(rt, rng):
    rt.require("nn")
    m = rt.eval("nn.Sequential():add(nn.SpatialConvolution(2, 3, 3, 3)):add(nn.SpatialBatchNormalization(3))"
                ":add(nn.ReLU()):add(nn.SpatialMaxPooling(2, 2)):add(nn.View(-1):setNumInputDims(3))"
                ":add(nn.Linear(3 * 2 * 2, 4))")
    net = to_torch(rt, m)
    back = from_torch(rt, net)
    a, b = state_dict(rt, m), state_dict(rt, back)
    assert list(a) == list(b)
    for k in a:
        assert torch.equal(a[k], b[k]), k
    sd = {k: torch.randn_like(v) for k, v in a.items()}
    load_state_dict(rt, back, sd)
    got = state_dict(rt, back)
    for k in sd:
        assert torch.equal(got[k], sd[k]), k
