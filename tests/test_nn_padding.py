"""nn paddings, upsamplings, PixelShuffle and the feature-map dropouts (issue 11, family padding).

Every class against PyTorch CPU (float64 rel. error <= 1e-10, float32 <= 1e-5) on configurations
drawn at random per run (odd sizes, batch 1, non-contiguous input), against central differences
where PyTorch has no counterpart (negative pads crop), plus a .t7 round trip of each class."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = {np.float64: 1e-10, np.float32: 1e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}


@pytest.fixture
def nnrt(rt):
    rt.require("nn")
    return rt


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def run_lua(rt, build, x, g, dtype, transpose_input=False):
    """Forward and backward of the Lua module `build` on x (made non-contiguous when asked: x is then
    sent transposed in its last two dims and transposed back in Lua); returns (output, gradInput)."""
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    m = rt.eval(build)
    fn = rt.eval("""function(m, x, g, t)
        if t then x = x:transpose(x:dim() - 1, x:dim()) end
        assert(not t or not x:isContiguous())
        local y = m:forward(x):clone()
        local gi = m:backward(x, g):clone()
        return y, gi
    end""")
    xs = np.ascontiguousarray(np.swapaxes(x, -1, -2)) if transpose_input else x
    y, gi = rt.call(fn, m, rt.from_numpy(xs), rt.from_numpy(np.ascontiguousarray(g)), transpose_input)
    return rt.to_numpy(y).copy(), rt.to_numpy(gi).copy()


def check_against_torch(rt, rng, build, x, ref_fn, dtype, transpose_input=False):
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    y_ref = ref_fn(xt)
    g = rng.standard_normal(tuple(y_ref.shape)).astype(dtype)
    y_ref.backward(torch.from_numpy(g))
    y, gi = run_lua(rt, build, x, g, dtype, transpose_input)
    assert y.shape == tuple(y_ref.shape), build
    assert rel_err(y, y_ref.detach().numpy()) <= TOL[dtype], "output of " + build
    assert rel_err(gi, xt.grad.numpy()) <= TOL[dtype], "gradInput of " + build


def shape(rng, nsp, batch):
    lead = ([int(rng.choice([1, 2, 3]))] if batch else []) + [int(rng.integers(1, 4))]
    return tuple(lead + [int(rng.integers(3, 8)) for _ in range(nsp)])


CASES = [(dtype, batch, tr) for dtype in (np.float64, np.float32) for batch in (True, False) for tr in (False, True)]


@pytest.mark.parametrize("dtype,batch,transpose_input", CASES)
def test_spatial_paddings_match_pytorch(nnrt, rng, dtype, batch, transpose_input):
    for cls, mode in (("SpatialZeroPadding", "constant"), ("SpatialReflectionPadding", "reflect"),
                      ("SpatialReplicationPadding", "replicate")):
        shp = shape(rng, 2, batch)
        x = rng.standard_normal(shp).astype(dtype)
        hi = min(shp[-1], shp[-2]) - 1  # reflection needs pad < size
        l, r, t, b = (int(v) for v in rng.integers(0, min(hi, 3) + 1, 4))
        check_against_torch(nnrt, rng, "nn.%s(%d, %d, %d, %d)" % (cls, l, r, t, b), x,
                            lambda v: F.pad(v, (l, r, t, b), mode=mode), dtype, transpose_input)


@pytest.mark.parametrize("dtype,batch,transpose_input", CASES)
def test_volumetric_replication_padding_matches_pytorch(nnrt, rng, dtype, batch, transpose_input):
    shp = shape(rng, 3, batch)
    x = rng.standard_normal(shp).astype(dtype)
    p = [int(v) for v in rng.integers(0, 4, 6)]
    check_against_torch(nnrt, rng, "nn.VolumetricReplicationPadding(%d, %d, %d, %d, %d, %d)" % tuple(p), x,
                        lambda v: F.pad(v, tuple(p), mode="replicate"), dtype, transpose_input)


@pytest.mark.parametrize("dtype,batch,transpose_input", CASES)
def test_upsampling_matches_pytorch(nnrt, rng, dtype, batch, transpose_input):
    s = int(rng.integers(2, 4))
    x = rng.standard_normal(shape(rng, 2, batch)).astype(dtype)
    check_against_torch(nnrt, rng, "nn.SpatialUpSamplingNearest(%d)" % s, x,
                        lambda v: F.interpolate(v if batch else v[None], scale_factor=s, mode="nearest")
                        .reshape(v.shape[:-2] + (v.shape[-2] * s, v.shape[-1] * s)), dtype, transpose_input)
    check_against_torch(nnrt, rng, "nn.SpatialUpSamplingBilinear(%d)" % s, x,
                        lambda v: F.interpolate(v if batch else v[None], scale_factor=s, mode="bilinear",
                                                align_corners=True)
                        .reshape(v.shape[:-2] + (v.shape[-2] * s, v.shape[-1] * s)), dtype, transpose_input)
    oh, ow = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    check_against_torch(nnrt, rng, "nn.SpatialUpSamplingBilinear({oheight=%d, owidth=%d})" % (oh, ow), x,
                        lambda v: F.interpolate(v if batch else v[None], size=(oh, ow), mode="bilinear",
                                                align_corners=True).reshape(v.shape[:-2] + (oh, ow)),
                        dtype, transpose_input)
    if not batch:
        return
    x5 = rng.standard_normal(shape(rng, 3, True)).astype(dtype)
    for mode, tmode in (("nearest", "nearest"), ("linear", "trilinear")):
        kw = {} if tmode == "nearest" else {"align_corners": True}
        check_against_torch(nnrt, rng, "nn.UpSampling(%d, '%s')" % (s, mode), x5,
                            lambda v: F.interpolate(v, scale_factor=s, mode=tmode, **kw), dtype, transpose_input)
    check_against_torch(nnrt, rng, "nn.UpSampling(%d, 'bilinear')" % s, x,
                        lambda v: F.interpolate(v, scale_factor=s, mode="bilinear", align_corners=True),
                        dtype, transpose_input)
    od, oh, ow = (int(v) for v in rng.integers(1, 9, 3))
    check_against_torch(nnrt, rng, "nn.UpSampling({odepth=%d, oheight=%d, owidth=%d}, 'trilinear')" % (od, oh, ow),
                        x5, lambda v: F.interpolate(v, size=(od, oh, ow), mode="trilinear", align_corners=True),
                        dtype, transpose_input)


@pytest.mark.parametrize("dtype,batch,transpose_input", CASES)
def test_pixel_shuffle_matches_pytorch(nnrt, rng, dtype, batch, transpose_input):
    r = int(rng.integers(2, 4))
    c = int(rng.integers(1, 3))
    shp = ((2,) if batch else ()) + (c * r * r, int(rng.integers(2, 6)), int(rng.integers(2, 6)))
    x = rng.standard_normal(shp).astype(dtype)
    check_against_torch(nnrt, rng, "nn.PixelShuffle(%d)" % r, x, lambda v: F.pixel_shuffle(v, r), dtype,
                        transpose_input)


def lua_list(rt, values):
    return rt.eval("{%s}" % ",".join(map(str, values)))


def lua_numeric_jacobian_error(rt, build, shp, seed):
    """max |analytic - central-difference| over d(sum(w * output))/d(input), w random."""
    return rt.call(rt.eval("""function(build, shp, seed)
        torch.setdefaulttensortype('torch.DoubleTensor')
        torch.manualSeed(seed)
        local m = loadstring('return ' .. build)()
        local x = torch.rand(torch.LongStorage(shp))
        local w = torch.randn(m:forward(x):size())
        local gi = m:backward(x, w):clone()
        local flat, eps, err = x:view(-1), 1e-6, 0
        for i = 1, flat:nElement() do
           local v = flat[i]
           flat[i] = v + eps; local up = m:forward(x):clone():cmul(w):sum()
           flat[i] = v - eps; local dn = m:forward(x):clone():cmul(w):sum()
           flat[i] = v
           err = math.max(err, math.abs((up - dn) / (2 * eps) - gi:view(-1)[i]))
        end
        return err
    end"""), build, lua_list(rt, shp), seed)


@pytest.mark.parametrize("cls", ["SpatialZeroPadding", "SpatialReflectionPadding", "SpatialReplicationPadding"])
def test_negative_spatial_pads_crop_and_have_exact_gradients(nnrt, rng, cls):
    l, r, t, b = (int(v) for v in rng.integers(-3, 4, 4))
    shp = (int(rng.integers(1, 3)), 2, int(rng.integers(7, 10)), int(rng.integers(7, 10)))
    build = "nn.%s(%d, %d, %d, %d)" % (cls, l, r, t, b)
    assert lua_numeric_jacobian_error(nnrt, build, shp, int(rng.integers(1 << 30))) < 1e-7, build
    # Cropping then padding by the non-negative part equals PyTorch on the cropped image.
    x = rng.standard_normal(shp)
    crop = x[..., max(0, -t):shp[2] - max(0, -b), max(0, -l):shp[3] - max(0, -r)]
    mode = {"SpatialZeroPadding": "constant", "SpatialReflectionPadding": "reflect"}.get(cls, "replicate")
    ref = F.pad(torch.from_numpy(crop.copy()), (max(l, 0), max(r, 0), max(t, 0), max(b, 0)), mode=mode).numpy()
    y, _ = run_lua(nnrt, build, x, np.zeros(ref.shape), np.float64)
    assert rel_err(y, ref) <= 1e-12, build


def test_volumetric_negative_pads_gradient(nnrt, rng):
    p = [int(v) for v in rng.integers(-2, 3, 6)]
    build = "nn.VolumetricReplicationPadding(%d, %d, %d, %d, %d, %d)" % tuple(p)
    assert lua_numeric_jacobian_error(nnrt, build, (2, 5, 5, 6), int(rng.integers(1 << 30))) < 1e-7, build


@pytest.mark.parametrize("cls,shp", [("SpatialDropout", (3, 200, 2, 3)), ("SpatialDropout", (300, 2, 3)),
                                     ("VolumetricDropout", (3, 200, 2, 2, 3)), ("VolumetricDropout", (300, 2, 2, 3))])
def test_feature_map_dropout(nnrt, cls, shp):
    res = nnrt.call(nnrt.eval("""function(cls, shp, p)
        torch.setdefaulttensortype('torch.DoubleTensor')
        torch.manualSeed(7)
        local m = nn[cls](p)
        local x = torch.rand(torch.LongStorage(shp)):add(1)
        local y = m:forward(x):clone()
        local gi = m:backward(x, torch.ones(x:size())):clone()
        -- a feature map is kept or dropped whole, unscaled; gradInput is the same mask
        local maps = y:view(-1, x:size(x:dim() - 1) * x:size(x:dim()) * (cls == 'VolumetricDropout' and x:size(x:dim() - 2) or 1))
        local xmaps = x:view(maps:size())
        local gmaps = gi:view(maps:size())
        local whole, kept = true, 0
        for i = 1, maps:size(1) do
           local k = maps[i]:ne(0):sum()
           if k ~= 0 and k ~= maps:size(2) then whole = false end
           if k ~= 0 then
              kept = kept + 1
              if (maps[i] - xmaps[i]):abs():max() ~= 0 or gmaps[i]:min() ~= 1 then whole = false end
           elseif gmaps[i]:abs():max() ~= 0 then whole = false end
        end
        m:evaluate()
        local ye = m:forward(x)
        local ok, err = pcall(function() m:backward(x, x) end)
        return whole, kept / maps:size(1), (ye - x * (1 - p)):abs():max(), ok, tostring(err), tostring(m)
    end"""), cls, lua_list(nnrt, shp), 0.25)
    whole, frac, eval_err, ok, err, name = res
    assert whole
    assert abs(frac - 0.75) < 0.1
    assert eval_err < 1e-12
    assert not ok and "only defined while training" in err
    assert name == "nn.%s(0.250000)" % cls


T7_BUILDS = ["nn.SpatialZeroPadding(1, -1, 2, 0)", "nn.SpatialReflectionPadding(2, 1, 0, 1)",
             "nn.SpatialReplicationPadding(1)", "nn.VolumetricReplicationPadding(1, 0, 2, 1, 1, 2)",
             "nn.SpatialUpSamplingNearest(2)", "nn.SpatialUpSamplingBilinear(3)",
             "nn.SpatialUpSamplingBilinear({oheight=5, owidth=7})", "nn.UpSampling(2, 'trilinear')",
             "nn.UpSampling(3)", "nn.PixelShuffle(2)", "nn.SpatialDropout(0.3)", "nn.VolumetricDropout(0.4)"]


@pytest.mark.parametrize("build", T7_BUILDS)
def test_t7_round_trip_keeps_fields_and_results(nnrt, tmp_path, build):
    path = str(tmp_path / "m.t7")
    same, name1, name2 = nnrt.call(nnrt.eval("""function(build, path)
        torch.setdefaulttensortype('torch.DoubleTensor')
        local m = loadstring('return ' .. build)()
        if m.train ~= nil then m:evaluate() end
        local vol = torch.type(m):find('Volumetric') or (m.mode == 'linear' and build:find('trilinear'))
        local x = vol and torch.rand(2, 4, 3, 4, 5) or torch.rand(2, 4, 5, 6)
        local y = m:forward(x):clone()
        torch.save(path, m)
        local m2 = torch.load(path)
        local same = torch.type(m2) == torch.type(m)
        for k, v in pairs(m) do
           if type(v) == 'number' or type(v) == 'string' or type(v) == 'boolean' then same = same and m2[k] == v end
        end
        same = same and (m2:forward(x) - y):abs():max() == 0
        return same, tostring(m), tostring(m2)
    end"""), build, path)
    assert same, build
    assert name1 == name2


def test_clear_errors(nnrt):
    def err(code):
        ok, msg = nnrt.call(nnrt.eval("function(c) return pcall(loadstring(c)) end"), code)
        assert not ok, code
        return str(msg)
    assert "less than the corresponding input dimension" in err(
        "nn.SpatialReflectionPadding(3):forward(torch.rand(1, 3, 3))")
    assert "3D or 4D input" in err("nn.SpatialReplicationPadding(1):forward(torch.rand(3, 3))")
    assert "too small" in err("nn.SpatialZeroPadding(-2):forward(torch.rand(1, 3, 3))")
    assert "gradOutput" in err("local m = nn.SpatialZeroPadding(1); local x = torch.rand(1, 3, 3); "
                               "m:forward(x); m:backward(x, torch.rand(1, 4, 4))")
    assert "scale_factor must be integer" in err("nn.SpatialUpSamplingNearest(1.5)")
    assert "requires a scale_factor" in err("nn.UpSampling({oheight=3, owidth=3})")
    assert "not a multiple" in err("nn.PixelShuffle(2):forward(torch.rand(1, 3, 2, 2))")


# ---------------------------------------------------------------- infrastructure

def lua(rt, code, *args):
    return rt.call(rt.eval("function(...) torch.setdefaulttensortype('torch.DoubleTensor') %s end" % code), *args)


def test_jacobian_checks_pass_for_correct_modules_and_catch_wrong_gradients(nnrt):
    errs = lua(nnrt, """
        torch.manualSeed(3)
        local jac = nn.Jacobian
        local m = nn.Linear(3, 4)
        local x = torch.Tensor(2, 3)
        local r = {jac.testJacobian(m, x), jac.testJacobianParameters(m, x, m.weight, m.gradWeight),
                   jac.testJacobianParameters(m, x, m.bias, m.gradBias),
                   jac.testJacobianUpdateParameters(m, x, m.weight)}
        local f, b = jac.testIO(m, x)
        r[#r + 1] = f; r[#r + 1] = b
        for _, v in pairs(jac.testAllUpdate(m, x, 'weight', 'gradWeight')) do r[#r + 1] = v end
        -- a module whose gradInput is off by a factor 2 must be caught
        local bad = nn.Linear(3, 4)
        local ugi = bad.updateGradInput
        function bad:updateGradInput(i, g) return ugi(self, i, g):mul(2) end
        r[#r + 1] = -jac.testJacobian(bad, x)
        return r""")
    values = [errs[i + 1] for i in range(len(errs))]
    assert max(values[:-1]) < 1e-8, values
    assert -values[-1] > 0.1, values


def test_jacobian_numerical_matches_a_known_derivative(nnrt):
    err = lua(nnrt, """
        -- d(x^2)/dx = 2x on a diagonal
        local m = nn.Square and nn.Square() or nn.Power(2)
        local x = torch.Tensor{1, -2, 3}
        local j = nn.Jacobian.forward(m, x)
        return (j - torch.diag(x * 2)):abs():max()""")
    assert err < 1e-6


def test_sparse_jacobian_on_a_sparse_input_module(nnrt):
    res = lua(nnrt, """
        -- y = W[:, idx] * value, summed over the (index, value) rows of the input
        local SparseDot, parent = torch.class('nn._TestSparseDot', 'nn.Module')
        function SparseDot:__init(n, m)
           parent.__init(self)
           self.weight = torch.randn(m, n); self.gradWeight = torch.zeros(m, n)
        end
        function SparseDot:updateOutput(input)
           self.output:resize(self.weight:size(1)):zero()
           for r = 1, input:size(1) do self.output:add(input[r][2], self.weight:select(2, input[r][1])) end
           return self.output
        end
        function SparseDot:updateGradInput(input, g)
           self.gradInput:resizeAs(input):zero()
           for r = 1, input:size(1) do self.gradInput[r][2] = self.weight:select(2, input[r][1]):dot(g) end
           return self.gradInput
        end
        function SparseDot:accGradParameters(input, g, scale)
           for r = 1, input:size(1) do self.gradWeight:select(2, input[r][1]):add((scale or 1) * input[r][2], g) end
        end
        local m = nn._TestSparseDot(6, 3)
        local input = torch.Tensor{{2, 0}, {5, 0}, {6, 0}}
        local sj = nn.SparseJacobian
        return {sj.testJacobian(m, input), sj.testJacobianParameters(m, input, m.weight, m.gradWeight),
                sj.testJacobianUpdateParameters(m, input, m.weight)}""")
    assert max(res[i + 1] for i in range(len(res))) < 1e-8


def test_hessian_diagonal_for_linear_and_sequential(nnrt):
    res = lua(nnrt, """
        nn.hessian.enable()
        local jac = nn.Jacobian
        local m = nn.Linear(4, 3)
        local x = torch.Tensor(2, 4)
        local r = {jac.testDiagHessianInput(m, x), jac.testDiagHessianWeight(m, x), jac.testDiagHessianBias(m, x)}
        -- Sequential chains them; parameters() now also returns the Hessian tensors
        local s = nn.Sequential():add(nn.Linear(4, 3)):add(nn.Tanh())
        s:initDiagHessianParameters()
        s:forward(x)
        local h = s:updateDiagHessianInput(x, torch.ones(2, 3))
        local w, gw, hw = s:parameters()
        return r, h:nElement(), #hw""")
    errs, n, nh = res
    assert max(errs[i + 1] for i in range(3)) < 1e-8
    assert n == 8 and nh == 2


def test_stochastic_gradient_fits_a_linear_map(nnrt):
    first, last, calls = lua(nnrt, """
        torch.manualSeed(1)
        local data = {}
        local W = torch.Tensor{{1, -2}}
        for i = 1, 20 do local x = torch.randn(2); data[i] = {x, W * x} end
        function data:size() return 20 end
        local sgd = nn.StochasticGradient(nn.Linear(2, 1), nn.MSECriterion())
        sgd.learningRate, sgd.maxIteration, sgd.verbose = 0.1, 15, false
        local errs, examples = {}, 0
        sgd.hookIteration = function(_, it, err) errs[it] = err end
        sgd.hookExample = function() examples = examples + 1 end
        sgd:train(data)
        return errs[1], errs[15], examples""")
    assert last < first / 20
    assert calls == 20 * 15


def test_error_messages_and_utils(nnrt):
    msg, cleared = lua(nnrt, """
        local ok, err = pcall(function() return torch.IntTensor.nn.SpatialConvolutionMM_updateOutput end)
        local t = {a = torch.ones(3), b = {1}, c = torch.LongStorage(2), d = 5}
        nn.utils.clear(t, 'a', 'b', 'c', 'd')
        return tostring(err), t.a:nElement() == 0 and #t.b == 0 and t.c == nil and t.d == nil""")
    assert "nn.SpatialConvolutionMM_updateOutput is only supported for Float or Double Tensors" in msg
    assert cleared


def test_cudnn_classes_and_convert_both_ways(nnrt, tmp_path):
    nnrt.require("cudnn")
    res = lua(nnrt, """
        local path = ...
        torch.manualSeed(5)
        local net = nn.Sequential():add(nn.SpatialConvolutionMM(3, 4, 3, 3)):add(nn.Tanh())
           :add(nn.SpatialCrossMapLRN(3)):add(nn.SpatialFullConvolution(4, 2, 3, 3, 2, 2)):add(nn.Sigmoid())
        local x = torch.rand(2, 3, 7, 7)
        local y = net:forward(x):clone()
        cudnn.convert(net, cudnn)
        local names = {}
        for i, m in ipairs(net.modules) do names[i] = torch.type(m) end
        local y2 = net:forward(x):clone()
        torch.save(path, net)
        local y3 = torch.load(path):forward(x):clone()
        cudnn.convert(net, nn)
        local back = {}
        for i, m in ipairs(net.modules) do back[i] = torch.type(m) end
        local y4 = net:forward(x)
        local dy = cudnn.Dropout(0.5):forward(torch.ones(1000))
        assert(torch.isTypeOf(cudnn.Dropout(), 'nn.Dropout') and dy:eq(0):add(dy:eq(2)):sum() == 1000)
        local v = cudnn.VolumetricMaxPooling(2, 2, 2)
        local c = cudnn.ClippedReLU(0.5)
        local cy = c:forward(torch.Tensor{-1, 0.2, 0.9})
        return table.concat(names, ','), table.concat(back, ','),
           math.max((y2 - y):abs():max(), (y3 - y):abs():max(), (y4 - y):abs():max()),
           v.dT .. v.dW .. v.dH, cy[1] .. ' ' .. cy[2] .. ' ' .. cy[3], torch.isTypeOf(c, 'nn.HardTanh')""",
              str(tmp_path / "net.t7"))
    names, back, err, strides, clipped, is_hardtanh = res
    assert names == ("cudnn.SpatialConvolution,cudnn.Tanh,cudnn.SpatialCrossMapLRN,cudnn.SpatialFullConvolution,"
                     "cudnn.Sigmoid")
    assert back == "nn.SpatialConvolution,nn.Tanh,nn.SpatialCrossMapLRN,nn.SpatialFullConvolution,nn.Sigmoid"
    assert err == 0
    assert strides == "222"
    assert clipped == "0 0.2 0.5" and is_hardtanh


def test_cudnn_spatial_cross_entropy_matches_pytorch(nnrt, rng):
    nnrt.require("cudnn")
    n, c, h, w = 2, int(rng.integers(2, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    x = rng.standard_normal((n, c, h, w))
    target = rng.integers(0, c, (n, h, w))
    out, gi = lua(nnrt, """
        local x, t = ...
        local crit = cudnn.SpatialCrossEntropyCriterion()
        local o = crit:forward(x, t)
        return o, crit:backward(x, t):clone()""", nnrt.from_numpy(x), nnrt.from_numpy((target + 1).astype(np.float64)))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ref = F.cross_entropy(xt, torch.from_numpy(target), reduction="mean")
    ref.backward()
    assert abs(out - ref.item()) <= 1e-10 * abs(ref.item())
    # cudnn.torch's last rule (nn.SpatialClassNLLCriterion inside): the mean over every pixel
    assert rel_err(nnrt.to_numpy(gi), xt.grad.numpy()) <= 1e-10


@pytest.mark.parametrize("name,ref", [("VolumetricSoftMax", F.softmax), ("VolumetricLogSoftMax", F.log_softmax)])
@pytest.mark.parametrize("batch", [True, False])
def test_cudnn_volumetric_softmax_matches_pytorch(nnrt, rng, name, ref, batch):
    nnrt.require("cudnn")
    x = rng.standard_normal(((2,) if batch else ()) + (3, 2, 3, 4))
    check_against_torch(nnrt, rng, "cudnn.%s()" % name, x, lambda v: ref(v, dim=1 if batch else 0), np.float64)


@pytest.mark.parametrize("batch", [True, False])
def test_cudnn_temporal_convolution_with_padding_matches_pytorch(nnrt, rng, batch):
    nnrt.require("cudnn")
    fin, fout, k, d, p = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4)), \
        int(rng.integers(1, 3)), int(rng.integers(0, 3))
    t = int(rng.integers(k, k + 5))
    x = rng.standard_normal(((2,) if batch else ()) + (t, fin))
    res = lua(nnrt, """
        local x, fin, fout, k, d, p = ...
        local m = cudnn.TemporalConvolution(fin, fout, k, d, p)
        local y = m:forward(x):clone()
        local g = y:clone():fill(1)
        m:zeroGradParameters()
        local gi = m:backward(x, g):clone()
        return y, gi, m.weight:clone(), m.bias:clone(), m.gradWeight:clone(), m.gradBias:clone(), m.kH, m.kW""",
              nnrt.from_numpy(x), fin, fout, k, d, p)
    y, gi, wt, b, gw, gb, kh, kw = [nnrt.to_numpy(v).copy() if not isinstance(v, (int, float)) else v for v in res]
    assert (kh, kw) == (k, fin)
    tw = torch.from_numpy(wt.reshape(fout, k, fin).transpose(0, 2, 1).copy()).requires_grad_(True)
    tb = torch.from_numpy(b).requires_grad_(True)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    xin = xt.transpose(-1, -2) if batch else xt.transpose(0, 1)[None]
    ref = F.conv1d(xin, tw, tb, stride=d, padding=p)
    ref = ref.transpose(-1, -2) if batch else ref[0].transpose(0, 1)
    ref.sum().backward()
    assert rel_err(y, ref.detach().numpy()) <= 1e-10
    assert rel_err(gi, xt.grad.numpy()) <= 1e-10
    assert rel_err(gw, tw.grad.numpy().transpose(0, 2, 1).reshape(fout, k * fin)) <= 1e-10
    assert rel_err(gb, tb.grad.numpy()) <= 1e-10


@pytest.mark.parametrize("build", T7_BUILDS)
def test_type_conversion_to_float(nnrt, build):
    ok, err = lua(nnrt, """
        local build = ...
        local m = loadstring('return ' .. build)()
        if m.train ~= nil then m:evaluate() end
        local vol = torch.type(m):find('Volumetric') or build:find('trilinear')
        local x = vol and torch.rand(2, 4, 3, 4, 5) or torch.rand(2, 4, 5, 6)
        local y = m:forward(x):clone()
        m:float()
        local yf = m:forward(x:float())
        -- the dropouts back-propagate in training only (evaluated here, to be deterministic)
        local gf = m.train == nil and m:backward(x:float(), yf:clone():fill(1)) or yf
        return torch.type(yf) == 'torch.FloatTensor' and torch.type(gf) == 'torch.FloatTensor',
           (yf:double() - y):abs():max()""", build)
    assert ok and err < 1e-5, build
