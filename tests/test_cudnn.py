"""The cudnn package: every non-recurrent class of cudnn.torch, its functional API and cudnn.convert.

Oracles: PyTorch float64 where a cudnn class computes something nn does not (grouped convolution,
instance-mode softmax, padded 3-D average pooling, the cross-entropy criterions, ...), the nn class
configured the same way where the cudnn class only changes the constructor, the bytes of the saved
.t7 file (read by the pure-Python reader) for the class names and fields. Configurations are drawn
at random on each run (the seed is printed on failure)."""
import numpy as np
import pytest

from pytorch_bridge import LuaError, t7

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = 1e-10

# every module of cudnn.torch but the recurrent family, as its file names list them
CUDNN_TORCH_CLASSES = [
    "SpatialConvolution", "SpatialFullConvolution", "VolumetricConvolution", "VolumetricFullConvolution",
    "TemporalConvolution", "SpatialMaxPooling", "SpatialAveragePooling", "VolumetricMaxPooling",
    "VolumetricAveragePooling", "ReLU", "ClippedReLU", "Tanh", "Sigmoid", "SoftMax", "LogSoftMax",
    "SpatialSoftMax", "SpatialLogSoftMax", "VolumetricSoftMax", "VolumetricLogSoftMax", "SpatialCrossMapLRN",
    "SpatialDivisiveNormalization", "BatchNormalization", "SpatialBatchNormalization",
    "VolumetricBatchNormalization", "SpatialCrossEntropyCriterion", "VolumetricCrossEntropyCriterion",
]


@pytest.fixture
def crt(rt):
    rt.require("cudnn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    return rt


def lua(rt, code, *args):
    return rt.call(rt.eval("function(...) %s end" % code), *args)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def arr(rt, v):
    return None if v is None else rt.to_numpy(v).copy()


RUN = """
    local build, x, g, scale, transposed = ...
    if transposed then x = x:transpose(x:dim() - 1, x:dim()) end   -- a non-contiguous view
    local m = loadstring('return ' .. build)()
    m:zeroGradParameters()
    local y = m:forward(x):clone()
    local gi = m:backward(x, g, scale):clone()
    return y, gi, m.weight and m.weight:clone(), m.bias and m.bias:clone(),
       m.gradWeight and m.gradWeight:clone(), m.gradBias and m.gradBias:clone()"""


def run(rt, build, x, g, scale=1.0, transposed=False):
    """Forward/backward of the Lua module `build`: (output, gradInput, weight, bias, gradWeight, gradBias)."""
    xs = np.ascontiguousarray(np.swapaxes(x, -1, -2)) if transposed else x
    res = lua(rt, RUN, build, rt.from_numpy(xs), rt.from_numpy(g), scale, transposed)
    return [arr(rt, res[i]) for i in range(6)]


def against_torch(rt, rng, build, x, ref, scale=1.0, transposed=False, with_params=True):
    """Compare output, gradInput and the parameter gradients with ref(x, weight, bias) in PyTorch."""
    # the output shape from a first forward, for the gradOutput
    size = lua(rt, "local build, x = ...; return loadstring('return ' .. build)():forward(x):size():totable()",
               build, rt.from_numpy(x))
    out_shape = tuple(int(size[i + 1]) for i in range(len(size)))
    g = rng.standard_normal(out_shape)
    y, gi, w, b, gw, gb = run(rt, build, x, g, scale, transposed)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    wt = torch.from_numpy(w).requires_grad_(True) if with_params and w is not None else None
    bt = torch.from_numpy(b).requires_grad_(True) if with_params and b is not None else None
    yt = ref(xt, wt, bt)
    yt.backward(torch.from_numpy(g))
    assert rel_err(y, yt.detach().numpy()) <= TOL, "output of " + build
    assert rel_err(gi, xt.grad.numpy()) <= TOL, "gradInput of " + build
    if wt is not None:
        assert rel_err(gw, scale * wt.grad.numpy()) <= TOL, "gradWeight of " + build
    if bt is not None:
        assert rel_err(gb, scale * bt.grad.numpy()) <= TOL, "gradBias of " + build


def same_as_nn(rt, rng, cudnn_build, nn_build, x, scale=1.0):
    """The cudnn module and the nn module (weights copied from the cudnn one) agree on everything."""
    res = lua(rt, """
        local cb, nb, x, scale, seed = ...
        function evaluating(m) m:evaluate(); return m end
        torch.manualSeed(seed)
        local c = loadstring('return ' .. cb)()
        local n = loadstring('return ' .. nb)()
        local pc, pn = c:parameters(), n:parameters()
        for i = 1, #(pc or {}) do pn[i]:copy(pc[i]) end
        local g = c:forward(x):clone():normal()
        local err = (c.output - n:forward(x)):abs():max()
        c:zeroGradParameters(); n:zeroGradParameters()
        err = math.max(err, (c:backward(x, g, scale) - n:backward(x, g, scale)):abs():max())
        local _, gc = c:parameters()
        local _, gn = n:parameters()
        for i = 1, #(gc or {}) do err = math.max(err, (gc[i] - gn[i]):abs():max()) end
        return err, torch.type(c)""", cudnn_build, nn_build, rt.from_numpy(x), scale, int(rng.integers(1 << 30)))
    err, typename = res
    assert typename == "cudnn." + cudnn_build.split("cudnn.")[1].split("(")[0]
    assert err <= 1e-12, (cudnn_build, nn_build, err)


# ---------------------------------------------------------------- the classes and their defaults

def test_every_cudnn_torch_class_exists_and_derives_from_its_nn_class(crt):
    # cudnn.SpatialDivisiveNormalization is a cross-channel layer, unrelated to nn's spatial one
    missing = lua(crt, """
        local names, missing = ..., {}
        for i = 1, #names do
           local name = names[i]
           if not cudnn[name] then missing[#missing + 1] = name
           elseif nn[name] and name ~= 'SpatialDivisiveNormalization'
                  and not torch.isTypeOf(setmetatable({}, torch.getmetatable('cudnn.' .. name)), 'nn.' .. name) then
              missing[#missing + 1] = name .. ' (not an nn.' .. name .. ')'
           end
        end
        return table.concat(missing, ', ')""", crt.eval("{%s}" % ",".join("'%s'" % n for n in CUDNN_TORCH_CLASSES)))
    assert missing == ""


DEFAULTS = [
    # cudnn.torch: padH defaults to 0, not to padW as in nn
    ("cudnn.SpatialConvolution(3, 4, 5, 3, 1, 1, 2)", dict(dW=1, dH=1, padW=2, padH=0, groups=1)),
    ("cudnn.SpatialConvolution(4, 6, 3, 3, 2, 1, 1, 1, 2)", dict(dW=2, padW=1, padH=1, groups=2)),
    ("cudnn.SpatialFullConvolution(3, 2, 3, 3)", dict(dW=1, padW=0, adjW=0, adjH=0)),
    ("cudnn.VolumetricConvolution(2, 3, 3, 3, 3, 1, 1, 1, 1)", dict(padT=1, padW=1, padH=1)),
    ("cudnn.VolumetricFullConvolution(2, 3, 3, 3, 3)", dict(dT=1, padT=0, adjT=0)),
    ("cudnn.TemporalConvolution(5, 4, 3)", dict(kW=5, kH=3, dH=1, padH=0, inputFrameSize=5, outputFrameSize=4)),
    # pooling strides default to the kernel size (nn's average pooling: 1)
    ("cudnn.SpatialMaxPooling(3, 2)", dict(dW=3, dH=2, padW=0, padH=0, ceil_mode=False)),
    ("cudnn.SpatialAveragePooling(3, 2)", dict(dW=3, dH=2, padW=0, padH=0, ceil_mode=False, count_include_pad=True)),
    ("cudnn.VolumetricMaxPooling(2, 3, 4)", dict(dT=2, dW=3, dH=4, padT=0, padW=0, padH=0, ceil_mode=False)),
    ("cudnn.VolumetricAveragePooling(2, 3, 4)", dict(dT=2, dW=3, dH=4, padT=0, padW=0, padH=0, ceil_mode=False)),
    ("cudnn.ReLU()", dict(inplace=False)),
    ("cudnn.Tanh(true)", dict(inplace=True)),
    ("cudnn.Sigmoid()", dict(inplace=False)),
    ("cudnn.ClippedReLU(6, true)", dict(ceiling=6, inplace=True)),
    ("cudnn.SoftMax()", dict(algorithm="CUDNN_SOFTMAX_ACCURATE")),
    ("cudnn.SoftMax(true)", dict(algorithm="CUDNN_SOFTMAX_FAST")),
    ("cudnn.SpatialSoftMax(true)", dict(algorithm="CUDNN_SOFTMAX_FAST")),
    ("cudnn.SpatialLogSoftMax()", dict(algorithm="CUDNN_SOFTMAX_LOG", mode="CUDNN_SOFTMAX_MODE_CHANNEL")),
    ("cudnn.SpatialCrossMapLRN()", dict(size=5, alpha=1e-4, beta=0.75, k=1)),
    ("cudnn.SpatialDivisiveNormalization()", dict(size=5, alpha=1e-4, beta=0.75, K=2)),
    ("cudnn.BatchNormalization(5)", dict(eps=1e-5, momentum=0.1, affine=True)),
    ("cudnn.SpatialBatchNormalization(5, 1e-3, 0.2)", dict(eps=1e-3, momentum=0.2, affine=True, nDim=4)),
    ("cudnn.VolumetricBatchNormalization(5)", dict(nDim=5, mode="CUDNN_BATCHNORM_SPATIAL")),
    ("cudnn.SpatialCrossEntropyCriterion()", dict(sizeAverage=True)),
]


@pytest.mark.parametrize("build,fields", DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_constructor_defaults_are_cudnn_torch_s(crt, build, fields):
    got = lua(crt, "local m = loadstring('return ' .. ...)(); local t = {} "
                   "for _, k in ipairs(select(2, ...)) do t[k] = m[k] end return t",
              build, crt.eval("{%s}" % ",".join("'%s'" % k for k in fields)))
    for k, v in fields.items():
        assert got[k] == pytest.approx(v) if isinstance(v, float) else got[k] == v, (build, k, got[k])


def test_weight_shapes_children_and_printed_forms(crt):
    res = lua(crt, """
        local conv = cudnn.SpatialConvolution(4, 6, 3, 5, 1, 1, 0, 0, 2)
        local v = cudnn.VolumetricLogSoftMax()
        local sce, vce = cudnn.SpatialCrossEntropyCriterion(), cudnn.VolumetricCrossEntropyCriterion()
        return table.concat(conv.weight:size():totable(), 'x'), torch.type(v.ssm), v.ssm.algorithm,
           torch.type(sce.slsm) .. ' ' .. torch.type(sce.nll), torch.type(vce.scec),
           tostring(cudnn.SpatialConvolution(3, 96, 11, 11, 3, 3)), tostring(cudnn.ReLU()),
           tostring(cudnn.SpatialMaxPooling(2, 2)), tostring(cudnn.SpatialBatchNormalization(4)),
           tostring(cudnn.VolumetricAveragePooling(2, 2, 2)), tostring(cudnn.TemporalConvolution(3, 4, 2))""")
    assert list(res) == ["6x2x5x3", "cudnn.SpatialSoftMax", "CUDNN_SOFTMAX_LOG",
                         "cudnn.SpatialLogSoftMax nn.SpatialClassNLLCriterion", "cudnn.SpatialCrossEntropyCriterion",
                         "cudnn.SpatialConvolution(3 -> 96, 11x11, 3,3)", "cudnn.ReLU",
                         "cudnn.SpatialMaxPooling(2x2, 2,2)", "cudnn.SpatialBatchNormalization",
                         "cudnn.VolumetricAveragePooling", "cudnn.TemporalConvolution"]


BAD = [
    ("cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 0, 0, 2)", "divisible by groups"),
    ("cudnn.SpatialCrossMapLRN(17)", "size has to be between 1 and 16"),
    ("cudnn.SpatialCrossMapLRN(5, 1e-4, 0.001)", "beta has to be at least 0.01"),
    ("cudnn.SpatialDivisiveNormalization(5, 1e-4, 0.75, 1e-6)", "k has to be at least 1e-5"),
    ("cudnn.BatchNormalization(4, 1e-5, 0.1, false)", "only affine = true is supported"),
    ("cudnn.ClippedReLU()", "no ceiling was given"),
    ("cudnn.SpatialAveragePooling(2, 2):setCountExcludePad()", "always counts the padding"),
    ("cudnn.VolumetricSoftMax():forward(torch.zeros(2, 3, 4))", "3-D volume"),
    ("cudnn.SpatialCrossEntropyCriterion():forward(torch.zeros(2, 3, 4, 4), torch.ones(2, 4, 5))",
     "should be of same size"),
    ("cudnn.VolumetricCrossEntropyCriterion():forward(torch.zeros(2, 3, 4, 4), torch.ones(2, 4, 4))",
     "mini-batches only"),
    ("cudnn.convert(nn.ReLU(), 'cudnn')", "must be the nn or the cudnn package"),
    ("cudnn.C.CUDNN_POOLING_MAX", "cudnn.C.CUDNN_POOLING_MAX: luatorch has no cuDNN library"),
    ("cudnn.toDescriptor(torch.zeros(2, 2))", "cudnn.toDescriptor: luatorch has no cuDNN library"),
]


@pytest.mark.parametrize("code,message", BAD, ids=[b[1] for b in BAD])
def test_user_mistakes_give_one_clear_line(crt, code, message):
    with pytest.raises(LuaError) as e:
        lua(crt, "return " + code)
    assert message in e.value.lua_message and "\n" not in e.value.lua_message.strip()


# ---------------------------------------------------------------- results against PyTorch

def test_grouped_convolution_matches_pytorch(crt, rng):
    groups = int(rng.integers(1, 4))
    nin, nout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    pw, ph = int(rng.integers(0, kw)), int(rng.integers(0, kh))
    batch = [] if rng.random() < 0.3 else [int(rng.integers(1, 3))]
    x = rng.standard_normal(batch + [nin, int(rng.integers(kh, kh + 5)), int(rng.integers(kw, kw + 5))])
    build = "cudnn.SpatialConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d)" % (nin, nout, kw, kh, dw, dh, pw, ph, groups)

    def ref(xt, w, b):
        y = F.conv2d(xt if batch else xt[None], w, b, stride=(dh, dw), padding=(ph, pw), groups=groups)
        return y if batch else y[0]
    against_torch(crt, rng, build, x, ref, scale=float(rng.uniform(0.5, 2)), transposed=bool(rng.random() < 0.5))


@pytest.mark.parametrize("name,log", [("SoftMax", False), ("LogSoftMax", True)])
@pytest.mark.parametrize("dims", [1, 2, 3, 4])
def test_softmax_normalizes_each_sample_as_a_whole(crt, rng, name, log, dims):
    shape = [int(v) for v in rng.integers(1, 4, dims)]
    x = rng.standard_normal(shape)
    fn = F.log_softmax if log else F.softmax

    def ref(xt, w, b):
        if dims == 1:
            return fn(xt, 0)
        if dims == 3:   # one C x H x W image: over all of it
            return fn(xt.reshape(-1), 0).reshape(xt.shape)
        return fn(xt.reshape(xt.shape[0], -1), 1).reshape(xt.shape)
    against_torch(crt, rng, "cudnn.%s()" % name, x, ref)


@pytest.mark.parametrize("name,log", [("SpatialSoftMax", False), ("SpatialLogSoftMax", True),
                                      ("VolumetricSoftMax", False), ("VolumetricLogSoftMax", True)])
@pytest.mark.parametrize("batch", [True, False])
def test_spatial_and_volumetric_softmax_normalize_over_the_channels(crt, rng, name, log, batch):
    spatial = 2 if name.startswith("Spatial") else 3
    lead = [int(rng.integers(1, 4))] if batch else []
    x = rng.standard_normal(lead + [int(v) for v in rng.integers(1, 5, 1 + spatial)])
    fn = F.log_softmax if log else F.softmax
    against_torch(crt, rng, "cudnn.%s()" % name, x, lambda xt, w, b: fn(xt, 1 if batch else 0),
                  transposed=bool(rng.random() < 0.5))


@pytest.mark.parametrize("ceil", [False, True])
def test_padded_volumetric_average_pooling_counts_the_padding(crt, rng, ceil):
    k = [int(v) for v in rng.integers(1, 4, 3)]
    d = [int(v) for v in rng.integers(1, 3, 3)]
    p = [int(rng.integers(0, kk // 2 + 1)) for kk in k]
    batch = rng.random() < 0.5
    x = rng.standard_normal(([2] if batch else []) + [2] + [int(rng.integers(kk, kk + 4)) for kk in k])
    build = "cudnn.VolumetricAveragePooling(%d,%d,%d, %d,%d,%d, %d,%d,%d)%s" % (
        k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1], ":ceil()" if ceil else "")

    def ref(xt, w, b):
        # zeros around the volume (and past its end in ceil mode), every window divided by its full size
        sp = xt.shape[-3:]
        rnd = np.ceil if ceil else np.floor
        out = [int(rnd((sp[i] + 2 * p[i] - k[i]) / d[i])) + 1 for i in range(3)]
        extra = [max(0, (out[i] - 1) * d[i] + k[i] - sp[i] - 2 * p[i]) for i in range(3)]
        v = F.pad(xt if batch else xt[None], (p[2], p[2] + extra[2], p[1], p[1] + extra[1], p[0], p[0] + extra[0]))
        y = F.avg_pool3d(v, k, d)
        return y if batch else y[0]
    against_torch(crt, rng, build, x, ref)


def test_average_pooling_strides_default_to_the_kernel_and_count_the_padding(crt, rng):
    kw, kh = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    pw, ph = int(rng.integers(0, kw // 2 + 1)), int(rng.integers(0, kh // 2 + 1))
    x = rng.standard_normal((int(rng.integers(1, 3)), 3, int(rng.integers(kh, 9)), int(rng.integers(kw, 9))))
    against_torch(crt, rng, "cudnn.SpatialAveragePooling(%d, %d, nil, nil, %d, %d)" % (kw, kh, pw, ph), x,
                  lambda xt, w, b: F.avg_pool2d(xt, (kh, kw), padding=(ph, pw), count_include_pad=True))


@pytest.mark.parametrize("name", ["SpatialCrossMapLRN", "SpatialDivisiveNormalization"])
def test_cross_channel_normalizations_match_pytorch_lrn(crt, rng, name):
    size = int(rng.choice([1, 3, 5]))
    alpha, beta, kk = float(rng.uniform(1e-4, 1)), float(rng.uniform(0.1, 1)), float(rng.uniform(1, 3))
    x = rng.standard_normal((int(rng.integers(1, 3)), int(rng.integers(1, 7)), 3, 4))
    against_torch(crt, rng, "cudnn.%s(%d, %r, %r, %r)" % (name, size, alpha, beta, kk), x,
                  lambda xt, w, b: F.local_response_norm(xt, size, alpha, beta, kk))


@pytest.mark.parametrize("name,ref", [("Tanh", torch.tanh), ("Sigmoid", torch.sigmoid),
                                      ("ReLU", torch.relu), ("ClippedReLU", None)])
@pytest.mark.parametrize("inplace", [False, True])
def test_pointwise_modules_and_their_inplace_flag(crt, rng, name, ref, inplace):
    ceiling = float(rng.uniform(0.2, 1.5))
    build = "cudnn.ClippedReLU(%r, %s)" % (ceiling, str(inplace).lower()) if name == "ClippedReLU" \
        else "cudnn.%s(%s)" % (name, str(inplace).lower())
    x = rng.standard_normal((3, int(rng.integers(1, 6))))
    g = rng.standard_normal(x.shape)
    y, gi, x_after, g_after = lua(crt, """
        local build, x, g = ...
        local m = loadstring('return ' .. build)()
        local y = m:forward(x)
        local gi = m:backward(x, g)
        return y:clone(), gi:clone(), x, g""", build, crt.from_numpy(x.copy()), crt.from_numpy(g.copy()))
    fn = ref or (lambda t: F.hardtanh(t, 0, ceiling))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    yt = fn(xt)
    yt.backward(torch.from_numpy(g))
    assert rel_err(arr(crt, y), yt.detach().numpy()) <= TOL
    assert rel_err(arr(crt, gi), xt.grad.numpy()) <= TOL
    # in place: the input holds the output, the gradOutput the gradInput
    assert np.array_equal(arr(crt, x_after), arr(crt, y) if inplace else x)
    assert np.array_equal(arr(crt, g_after), arr(crt, gi) if inplace else g)


@pytest.mark.parametrize("size_average", [True, False])
@pytest.mark.parametrize("volumetric", [False, True])
def test_cross_entropy_criterions_match_pytorch(crt, rng, size_average, volumetric):
    n, c = int(rng.integers(1, 4)), int(rng.integers(2, 5))
    spatial = [int(v) for v in rng.integers(1, 4, 3 if volumetric else 2)]
    x = rng.standard_normal([n, c] + spatial)
    target = rng.integers(0, c, [n] + spatial)
    weights = rng.uniform(0.5, 2, c) if rng.random() < 0.5 else None
    out, gi = lua(crt, """
        local x, t, w, volumetric, sizeAverage = ...
        local crit = volumetric and cudnn.VolumetricCrossEntropyCriterion(w) or cudnn.SpatialCrossEntropyCriterion(w)
        if volumetric then crit.scec.sizeAverage = sizeAverage else crit.sizeAverage = sizeAverage end
        local o = crit:forward(x, t)
        return o, crit:backward(x, t):clone()""", crt.from_numpy(x), crt.from_numpy((target + 1).astype(np.float64)),
                  None if weights is None else crt.from_numpy(weights), volumetric, size_average)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ref = F.cross_entropy(xt, torch.from_numpy(target), weight=None if weights is None else torch.from_numpy(weights),
                          reduction="mean" if size_average else "sum")
    ref.backward()
    assert abs(out - ref.item()) <= TOL * abs(ref.item())
    assert rel_err(arr(crt, gi), xt.grad.numpy()) <= TOL


# ---------------------------------------------------------------- results equal to nn's

def test_thin_subclasses_compute_what_their_nn_class_computes(crt, rng):
    r = lambda *s: rng.standard_normal(s)  # noqa: E731
    cases = [
        ("cudnn.SpatialConvolution(3, 4, 3, 2, 2, 1, 1, 0)", "nn.SpatialConvolution(3, 4, 3, 2, 2, 1, 1, 0)",
         r(2, 3, 6, 7)),
        ("cudnn.SpatialFullConvolution(3, 2, 3, 3, 2, 2, 1, 1, 1, 0)",
         "nn.SpatialFullConvolution(3, 2, 3, 3, 2, 2, 1, 1, 1, 0)", r(2, 3, 4, 5)),
        ("cudnn.VolumetricConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1)",
         "nn.VolumetricConvolution(2, 3, 2, 3, 2, 1, 2, 1, 1)", r(2, 2, 4, 5, 6)),
        ("cudnn.VolumetricFullConvolution(2, 3, 2, 2, 2, 2, 2, 2)",
         "nn.VolumetricFullConvolution(2, 3, 2, 2, 2, 2, 2, 2)", r(1, 2, 3, 3, 3)),
        ("cudnn.SpatialMaxPooling(3, 2, 2, 2, 1, 1):ceil()", "nn.SpatialMaxPooling(3, 2, 2, 2, 1, 1):ceil()",
         r(2, 3, 7, 8)),
        ("cudnn.VolumetricMaxPooling(2, 2, 2, 1, 2, 2, 1, 1, 1)", "nn.VolumetricMaxPooling(2, 2, 2, 1, 2, 2, 1, 1, 1)",
         r(2, 2, 4, 5, 5)),
        ("cudnn.VolumetricAveragePooling(2, 3, 2)", "nn.VolumetricAveragePooling(2, 3, 2)", r(2, 2, 5, 6, 7)),
        ("cudnn.BatchNormalization(5)", "nn.BatchNormalization(5)", r(4, 5)),
        ("cudnn.SpatialBatchNormalization(3)", "nn.SpatialBatchNormalization(3)", r(2, 3, 4, 5)),
        ("cudnn.VolumetricBatchNormalization(3)", "nn.VolumetricBatchNormalization(3)", r(2, 3, 2, 3, 4)),
        ("evaluating(cudnn.SpatialBatchNormalization(3))", "evaluating(nn.SpatialBatchNormalization(3))",
         r(2, 3, 4, 5)),
    ]
    for cb, nb, x in cases:
        same_as_nn(crt, rng, cb, nb, x, scale=float(rng.uniform(0.5, 2)))


# ---------------------------------------------------------------- the functional API

def test_functional_api_matches_pytorch(crt, rng):
    n, cin, cout = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kh, kw, sh, sw = (int(v) for v in rng.integers(1, 4, 4))
    ph, pw = int(rng.integers(0, kh)), int(rng.integers(0, kw))
    x = rng.standard_normal((n, cin, int(rng.integers(kh, 9)), int(rng.integers(kw, 9))))
    w = rng.standard_normal((cout, cin, kh, kw))
    bias = rng.standard_normal(cout)
    xt, wt = torch.from_numpy(x.copy()).requires_grad_(True), torch.from_numpy(w.copy()).requires_grad_(True)
    yt = F.conv2d(xt, wt, stride=(sh, sw), padding=(ph, pw))
    g = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.from_numpy(g))
    gw0 = rng.standard_normal(w.shape)
    gb0 = rng.standard_normal(cout)
    scale, alpha = float(rng.uniform(0.5, 2)), float(rng.uniform(0, 1))
    res = lua(crt, """
        local f, x, w, b, g, sh, sw, ph, pw, gw, gb, scale, alpha = cudnn.functional, ...
        local h = cudnn.getHandle()
        local y = torch.Tensor(g:size()):fill(7)
        f.Convolution2D_updateOutput(h, x, w, y, sh, sw, ph, pw)
        local gi = torch.Tensor(x:size()):fill(7)
        f.Convolution2D_updateGradInput(h, x, w, y, g, gi, sh, sw, ph, pw)
        f.Convolution2D_accGradParameters(h, x, gw, g, sh, sw, ph, pw, scale, alpha)
        local yb = y:clone()
        f.bias2D_updateOutput(h, b, yb)
        f.bias2D_accGradParameters(h, g, gb, scale, alpha)
        return y, gi, gw, yb, gb""", crt.from_numpy(x), crt.from_numpy(w), crt.from_numpy(bias), crt.from_numpy(g),
              sh, sw, ph, pw, crt.from_numpy(gw0.copy()), crt.from_numpy(gb0.copy()), scale, alpha)
    y, gi, gw, yb, gb = (arr(crt, v) for v in res)
    assert rel_err(y, yt.detach().numpy()) <= TOL
    assert rel_err(gi, xt.grad.numpy()) <= TOL
    assert rel_err(gw, scale * wt.grad.numpy() + alpha * gw0) <= TOL
    assert rel_err(yb, yt.detach().numpy() + bias[None, :, None, None]) <= TOL
    assert rel_err(gb, scale * g.sum(axis=(0, 2, 3)) + alpha * gb0) <= TOL


@pytest.mark.parametrize("kind", ["MaxPooling2D", "AveragePooling2D"])
def test_functional_pooling_matches_pytorch(crt, rng, kind):
    kh, kw = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    ph, pw = int(rng.integers(0, kh // 2 + 1)), int(rng.integers(0, kw // 2 + 1))
    x = rng.standard_normal((2, 3, int(rng.integers(kh, 9)), int(rng.integers(kw, 9))))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    if kind == "MaxPooling2D":
        yt = F.max_pool2d(xt, (kh, kw), (dh, dw), (ph, pw))
    else:
        yt = F.avg_pool2d(xt, (kh, kw), (dh, dw), (ph, pw), count_include_pad=True)
    g = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.from_numpy(g))
    y, gi = lua(crt, """
        local kind, x, g, kh, kw, dh, dw, ph, pw = ...
        local f, h = cudnn.functional, cudnn.getHandle()
        local y, gi = torch.Tensor(g:size()), torch.Tensor(x:size())
        f[kind .. '_updateOutput'](h, x, y, kh, kw, dh, dw, ph, pw)
        f[kind .. '_updateGradInput'](h, x, y, g, gi, kh, kw, dh, dw, ph, pw)
        return y, gi""", kind, crt.from_numpy(x), crt.from_numpy(g), kh, kw, dh, dw, ph, pw)
    assert rel_err(arr(crt, y), yt.detach().numpy()) <= TOL
    assert rel_err(arr(crt, gi), xt.grad.numpy()) <= TOL


@pytest.mark.parametrize("name,ref", [("ReLU", torch.relu), ("Tanh", torch.tanh), ("Sigmoid", torch.sigmoid),
                                      ("SoftMax", lambda t: F.softmax(t, 1)),
                                      ("LogSoftMax", lambda t: F.log_softmax(t, 1))])
def test_functional_activations_match_pytorch(crt, rng, name, ref):
    x = rng.standard_normal((int(rng.integers(1, 5)), int(rng.integers(1, 13))))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    yt = ref(xt)
    g = rng.standard_normal(x.shape)
    yt.backward(torch.from_numpy(g))
    y, gi = lua(crt, """
        local name, x, g = ...
        local f, h = cudnn.functional, cudnn.getHandle()
        local y, gi = torch.Tensor(), torch.Tensor()
        f[name .. '_updateOutput'](h, x, y)
        f[name .. '_updateGradInput'](h, x, y, g, gi)
        return y, gi""", name, crt.from_numpy(x), crt.from_numpy(g))
    assert rel_err(arr(crt, y), yt.detach().numpy()) <= TOL
    assert rel_err(arr(crt, gi), xt.grad.numpy()) <= TOL


def test_functional_bias_takes_2d_and_3d_outputs_and_submodules_require(crt):
    res = lua(crt, """
        local f = require 'cudnn.functional' and cudnn.functional
        local y2, y3 = torch.zeros(2, 3), torch.zeros(3, 2, 2)
        f.bias2D_updateOutput(nil, torch.Tensor{1, 2, 3}, y2)
        f.bias2D_updateOutput(nil, torch.Tensor{1, 2, 3}, y3)
        local gb = torch.Tensor{1, 1, 1}
        f.bias2D_accGradParameters(nil, torch.ones(2, 3), gb, 0.5, 2)
        return y2:sum(), y3:sum(), gb:sum(), require('cudnn.find') == cudnn.find""")
    assert list(res) == [12, 24, 9, True]


def test_functional_calls_leave_the_random_stream_alone(crt):
    same = lua(crt, """
        torch.manualSeed(11)
        local a = torch.rand(3)
        torch.manualSeed(11)
        local f, x = cudnn.functional, torch.ones(1, 2, 4, 4)
        f.Convolution2D_updateOutput(nil, x, torch.ones(3, 2, 3, 3), torch.Tensor(1, 3, 2, 2), 1, 1, 0, 0)
        return (torch.rand(3) - a):abs():max() == 0""")
    assert same


# ---------------------------------------------------------------- settings that only tuned cuDNN

def test_tuning_switches_are_accepted_and_change_nothing(crt):
    err = lua(crt, """
        torch.manualSeed(3)
        local conv = cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)
        local x = torch.randn(2, 3, 6, 6)
        local y = conv:forward(x):clone()
        cudnn.benchmark, cudnn.fastest, cudnn.verbose, cudnn.useFindEx = true, true, true, true
        cudnn.find.reset(); cudnn.reset(); cudnn.setSharedWorkspaceSize(1e6); cudnn.configureMath()
        assert(cudnn.find.get() == cudnn.find and cudnn.getHandle() == nil)
        conv:setMode('CUDNN_CONVOLUTION_FWD_ALGO_GEMM', 'CUDNN_CONVOLUTION_BWD_DATA_ALGO_1',
                     'CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1'):fastest():resetWeightDescriptors()
        assert(conv.fmode == 'CUDNN_CONVOLUTION_FWD_ALGO_GEMM' and conv.fastest_mode == true)
        local err = (conv:forward(x) - y):abs():max()
        conv:resetMode()
        assert(conv.fmode == nil and conv.bdmode == nil and conv.bwmode == nil)
        return err""")
    assert err == 0


# ---------------------------------------------------------------- .t7 files

V4, V5, X4 = "torch.randn(2, 4, 3, 4, 4)", "torch.randn(2, 2, 3, 4, 4)", "torch.randn(2, 4, 5, 5)"
SAVED = [
    ("cudnn.SpatialConvolution(4, 6, 3, 3, 1, 1, 1, 1, 2)", X4), ("cudnn.SpatialFullConvolution(4, 3, 3, 3)", X4),
    ("cudnn.VolumetricConvolution(2, 3, 2, 2, 2)", V5), ("cudnn.VolumetricFullConvolution(2, 3, 2, 2, 2)", V5),
    ("cudnn.TemporalConvolution(4, 3, 2, 1, 1)", "torch.randn(2, 5, 4)"), ("cudnn.SpatialMaxPooling(2, 2)", X4),
    ("cudnn.SpatialAveragePooling(2, 2, 1, 1, 1, 1)", X4), ("cudnn.VolumetricMaxPooling(2, 2, 2)", V4),
    ("cudnn.VolumetricAveragePooling(2, 2, 2, 1, 1, 1, 1, 1, 1)", V4), ("cudnn.ReLU(true)", X4),
    ("cudnn.ClippedReLU(0.5)", X4), ("cudnn.Tanh()", X4), ("cudnn.Sigmoid()", X4), ("cudnn.SoftMax()", X4),
    ("cudnn.LogSoftMax()", X4), ("cudnn.SpatialSoftMax()", X4), ("cudnn.SpatialLogSoftMax()", X4),
    ("cudnn.VolumetricSoftMax()", V4), ("cudnn.VolumetricLogSoftMax()", V4), ("cudnn.SpatialCrossMapLRN(3)", X4),
    ("cudnn.SpatialDivisiveNormalization(3)", X4), ("cudnn.BatchNormalization(4)", "torch.randn(3, 4)"),
    ("cudnn.SpatialBatchNormalization(4)", X4), ("cudnn.VolumetricBatchNormalization(4)", V4),
]


def names_in(obj, out):
    """Every torch class name in a file read by pytorch_bridge.t7, with the fields of cudnn objects."""
    if isinstance(obj, t7.TorchObject):
        out.append((obj.typename, obj.fields))
        for v in obj.fields.values():
            names_in(v, out)
    elif isinstance(obj, dict):
        for v in obj.values():
            names_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            names_in(v, out)
    return out


@pytest.mark.parametrize("build,x", SAVED, ids=[b for b, _ in SAVED])
def test_t7_round_trip_keeps_the_cudnn_class_name_and_no_descriptor(crt, tmp_path, build, x):
    path = str(tmp_path / "m.t7")
    err = lua(crt, """
        local build, x, path = ...
        local ffi = require 'ffi'
        torch.manualSeed(1)
        local m = loadstring('return ' .. build)()
        x = loadstring('return ' .. x)()
        local y = m:forward(x):clone()
        -- what cudnn.torch left on its modules: FFI descriptors, which no file can hold
        m.iDesc, m.oDesc, m.poolDesc = ffi.new('int[1]'), ffi.new('int[1]'), ffi.new('int[1]')
        torch.save(path, m)
        local back = torch.load(path)
        assert(torch.type(back) == torch.type(m), torch.type(back))
        return (back:forward(x) - y):abs():max()""", build, x, path)
    assert err <= 1e-12
    found = names_in(t7.load(path), [])
    top = "cudnn." + build.split(".")[1].split("(")[0]
    assert found[0][0] == top
    for typename, fields in found:
        assert typename.startswith(("cudnn.", "nn.", "torch.")), typename
        assert not {"iDesc", "oDesc", "poolDesc"} & set(fields), (typename, set(fields))


def test_files_written_by_cudnn_torch_load_and_run(crt, tmp_path, rng):
    """Objects with the fields cudnn.torch's classes kept (and nothing of nn's that they lacked)."""
    x = rng.standard_normal((2, 3, 4, 5))
    base = lambda: {"output": np.zeros(0), "gradInput": np.zeros(0), "train": True}  # noqa: E731
    objs = {
        "relu": t7.TorchObject("cudnn.ReLU", {**base(), "inplace": False, "mode": "CUDNN_ACTIVATION_RELU"}),
        "clipped": t7.TorchObject("cudnn.ClippedReLU", {**base(), "ceiling": 0.5, "inplace": False}),
        "tanh": t7.TorchObject("cudnn.Tanh", {**base(), "inplace": False, "mode": "CUDNN_ACTIVATION_TANH"}),
        "lrn": t7.TorchObject("cudnn.SpatialCrossMapLRN", {**base(), "size": 3, "alpha": 0.5, "beta": 0.75,
                                                            "K": 2.0}),
        "avg": t7.TorchObject("cudnn.SpatialAveragePooling", {**base(), "kW": 2, "kH": 2, "dW": 2, "dH": 2}),
        "softmax": t7.TorchObject("cudnn.SoftMax", {**base(), "algorithm": "CUDNN_SOFTMAX_ACCURATE",
                                                     "mode": "CUDNN_SOFTMAX_MODE_INSTANCE"}),
        "vsm": t7.TorchObject("cudnn.VolumetricSoftMax", {**base(), "ssm": t7.TorchObject(
            "cudnn.SpatialSoftMax", {**base(), "algorithm": "CUDNN_SOFTMAX_LOG",
                                     "mode": "CUDNN_SOFTMAX_MODE_CHANNEL"})}),
    }
    path = str(tmp_path / "legacy.t7")
    t7.save(path, objs)
    res = lua(crt, """
        local path, x = ...
        local o = torch.load(path)
        local x5 = x:view(2, 3, 4, 5, 1)
        return o.relu:forward(x):clone(), o.clipped:forward(x):clone(), o.tanh:forward(x):clone(),
           o.lrn:forward(x):clone(), o.avg:forward(x):clone(), o.softmax:forward(x):clone(),
           o.vsm:forward(x5):clone()""", path, crt.from_numpy(x))
    y = [arr(crt, v) for v in res]
    xt = torch.from_numpy(x)
    assert rel_err(y[0], torch.relu(xt).numpy()) <= TOL
    assert rel_err(y[1], F.hardtanh(xt, 0, 0.5).numpy()) <= TOL
    assert rel_err(y[2], torch.tanh(xt).numpy()) <= TOL
    assert rel_err(y[3], F.local_response_norm(xt, 3, 0.5, 0.75, 2.0).numpy()) <= TOL
    assert rel_err(y[4], F.avg_pool2d(xt, 2).numpy()) <= TOL
    assert rel_err(y[5], F.softmax(xt.reshape(2, -1), 1).reshape(x.shape).numpy()) <= TOL
    assert rel_err(y[6].reshape(x.shape), F.log_softmax(xt, 1).numpy()) <= TOL


# ---------------------------------------------------------------- cudnn.convert

NET = """
    torch.manualSeed(7)
    local spatial = nn.Sequential()
       :add(nn.SpatialConvolutionMM(3, 4, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(4)):add(nn.ReLU())
       :add(nn.SpatialCrossMapLRN(3)):add(nn.SpatialConvolution(4, 4, 3, 3, 1, 1, 1, 1)):add(nn.Tanh())
       :add(nn.SpatialMaxPooling(2, 2, 2, 2, 1, 1)):add(nn.SpatialAveragePooling(2, 2, 1, 1, 1, 1))
       :add(nn.SpatialFullConvolution(4, 2, 3, 3, 2, 2, 1, 1, 1, 1)):add(nn.Sigmoid())
       :add(nn.SpatialAveragePooling(3, 3, 1, 1, 1, 1):setCountExcludePad())   -- stays nn: cudnn cannot
    local flat = nn.Sequential():add(nn.BatchNormalization(5)):add(nn.SoftMax()):add(nn.LogSoftMax())
       :add(nn.BatchNormalization(5, 1e-5, 0.1, false))   -- stays nn: cudnn's is affine only
    local volumetric = nn.Sequential()
       :add(nn.VolumetricConvolution(2, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1)):add(nn.VolumetricBatchNormalization(3))
       :add(nn.VolumetricMaxPooling(2, 2, 2)):add(nn.VolumetricAveragePooling(1, 2, 2, 1, 1, 1))
       :add(nn.VolumetricFullConvolution(3, 2, 2, 2, 2, 2, 2, 2))
    local net = nn.ParallelTable():add(spatial):add(flat):add(volumetric)
    local x = {torch.randn(2, 3, 6, 6), torch.randn(4, 5), torch.randn(2, 2, 4, 5, 5)}
"""

RESULTS = """
    local function results(net, x)
       net:zeroGradParameters()
       local y = net:forward(x)
       local g = {}
       for i, t in ipairs(y) do g[i] = t:clone():fill(1):cmul(torch.range(1, t:nElement()):viewAs(t):sin()) end
       local gi = net:backward(x, g)
       local out = {}
       for i = 1, #y do out[#out + 1] = y[i]:clone(); out[#out + 1] = gi[i]:clone() end
       local _, grads = net:parameters()
       for _, t in ipairs(grads) do out[#out + 1] = t:clone() end
       return out
    end
    local function maxDiff(a, b)
       local m = 0
       for i = 1, #a do m = math.max(m, (a[i] - b[i]):abs():max()) end
       return m
    end
    local function types(net)
       local t = {}
       for _, m in ipairs(net:listModules()) do t[#t + 1] = torch.type(m) end
       return table.concat(t, ' ')
    end
"""


def test_convert_to_cudnn_and_back_to_nn_keeps_results_and_shares_weights(crt):
    to_cudnn, back, diff_cudnn, diff_back, shared = lua(crt, NET + RESULTS + """
        local ref = results(net, x)
        local mm = net.modules[1].modules[1]
        local converted = cudnn.convert(net, cudnn)
        local c = types(converted)
        local d1 = maxDiff(results(converted, x), ref)
        -- no copy: the new convolution holds the MM layer's weight memory
        local sharedWeight = converted.modules[1].modules[1].weight:storage() == mm.weight:storage()
           or torch.pointer(converted.modules[1].modules[1].weight:storage()) == torch.pointer(mm.weight:storage())
        local again = cudnn.convert(converted, nn)
        return c, types(again), d1, maxDiff(results(again, x), ref), sharedWeight""")
    assert to_cudnn.split() == [
        "nn.ParallelTable", "nn.Sequential", "cudnn.SpatialConvolution", "cudnn.SpatialBatchNormalization",
        "cudnn.ReLU", "cudnn.SpatialCrossMapLRN", "cudnn.SpatialConvolution", "cudnn.Tanh", "cudnn.SpatialMaxPooling",
        "cudnn.SpatialAveragePooling", "cudnn.SpatialFullConvolution", "cudnn.Sigmoid", "nn.SpatialAveragePooling",
        "nn.Sequential", "cudnn.BatchNormalization", "cudnn.SoftMax", "cudnn.LogSoftMax", "nn.BatchNormalization",
        "nn.Sequential", "cudnn.VolumetricConvolution", "cudnn.VolumetricBatchNormalization",
        "cudnn.VolumetricMaxPooling", "cudnn.VolumetricAveragePooling", "cudnn.VolumetricFullConvolution"]
    assert back == to_cudnn.replace("cudnn.", "nn.")
    assert diff_cudnn <= 1e-12 and diff_back <= 1e-12
    assert shared


def test_convert_honours_the_exclusion_function_and_converts_a_bare_module(crt):
    res = lua(crt, """
        local net = nn.Sequential():add(nn.SpatialConvolution(3, 96, 11, 11, 3, 3)):add(nn.ReLU())
        cudnn.convert(net, cudnn, function(m) return torch.type(m):find('ReLU') end)
        local bare = cudnn.convert(nn.ReLU(true), cudnn)
        local back = cudnn.convert(cudnn.ReLU(), nn)
        return torch.type(net.modules[1]), torch.type(net.modules[2]), torch.type(bare), bare.inplace,
           torch.type(back), back.threshold, back.val""")
    assert list(res) == ["cudnn.SpatialConvolution", "nn.ReLU", "cudnn.ReLU", True, "nn.ReLU", 0, 0]


def test_convert_to_nn_leaves_what_nn_cannot_compute_and_keeps_count_include_pad(crt):
    res = lua(crt, """
        torch.manualSeed(2)
        local net = nn.Sequential():add(cudnn.SpatialConvolution(4, 4, 3, 3, 1, 1, 1, 1, 2))
           :add(cudnn.SpatialAveragePooling(3, 3, 1, 1, 1, 1))
           :add(nn.View(4, 6, 6, 1)):add(cudnn.VolumetricAveragePooling(2, 2, 1, 1, 1, 1, 1, 1, 0))
           :add(cudnn.ClippedReLU(1))
        local x = torch.randn(2, 4, 6, 6)
        local y = net:forward(x):clone()
        cudnn.convert(net, nn)
        local t = {}
        for i, m in ipairs(net.modules) do t[i] = torch.type(m) end
        return table.concat(t, ' '), net.modules[2].count_include_pad, (net:forward(x) - y):abs():max()""")
    names, include_pad, err = res
    assert names == ("cudnn.SpatialConvolution nn.SpatialAveragePooling nn.View cudnn.VolumetricAveragePooling "
                     "cudnn.ClippedReLU")
    assert include_pad is True
    assert err <= 1e-12
