"""nn's simple parametric layers, lookup and misc modules (issue 11, family "linear").

Each class runs forward, updateGradInput and accGradParameters (with a random `scale`) in Lua on
inputs drawn at random per run (odd sizes, batch 1, often non-contiguous numpy views); the
output, every gradInput and every parameter gradient must equal what PyTorch autograd computes
for the same function in float64 (float32: 1e-5). Each class also survives a .t7 round trip
(torch.save / torch.load keep its fields and its results) and a :float() conversion."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = {np.float64: 1e-10, np.float32: 1e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}
DTYPES = [np.float64, np.float32]
IDS = ["double", "float"]

LUA_HELPERS = """
local H = {}
-- the tensors of a nested table (or one tensor), cloned, depth first
function H.flat(x, out)
   out = out or {}
   if torch.isTensor(x) then out[#out + 1] = x:clone()
   elseif type(x) == 'table' then for i = 1, #x do H.flat(x[i], out) end end
   return out
end
function H.params(m)
   local p = m:parameters()
   return H.flat(p or {})
end
function H.run(m, x, g, scale)
   m:zeroGradParameters()
   local y = H.flat(m:forward(x))
   local gi = H.flat(m:updateGradInput(x, g))
   m:accGradParameters(x, g, scale)
   local _, gp = m:parameters()
   return y, gi, H.flat(gp or {})
end
-- forward before and after torch.save / torch.load; the loaded module's type and fields
function H.roundtrip(m, path, x)
   local y1 = H.flat(m:forward(x))
   torch.save(path, m)
   local m2 = torch.load(path)
   local same = true
   for k, v in pairs(m) do
      if type(v) == 'number' or type(v) == 'boolean' or type(v) == 'string' then
         same = same and m2[k] == v
      elseif torch.isTensor(v) and k ~= 'output' and k ~= 'gradInput' then
         same = same and torch.isTensor(m2[k]) and v:isSameSizeAs(m2[k]) and
                (v:nElement() == 0 or (v:double() - m2[k]:double()):abs():max() == 0)
      end
   end
   local y2 = H.flat(m2:forward(x))
   return y1, y2, torch.type(m2), same
end
return H
"""


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


@pytest.fixture
def H(rt):
    rt.require("nn")
    return rt.execute(LUA_HELPERS)


def arrays(rt, tbl):
    return [rt.to_numpy(tbl[i + 1]).copy() for i in range(len(tbl))]


def to_lua(rt, x):
    if isinstance(x, (list, tuple)):
        return rt.table(*[to_lua(rt, v) for v in x])
    return rt.from_numpy(x)


def draw(rng, shape, dtype):
    """Normal values of `shape`; about half the time a non-contiguous view."""
    if shape and rng.random() < 0.5:
        big = rng.standard_normal(tuple(shape[:-1]) + (2 * shape[-1],)).astype(dtype)
        return big[..., ::2]
    return rng.standard_normal(shape).astype(dtype)


def build(rt, rng, expr, dtype):
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    rt.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    return rt.eval(expr)


def check(rt, H, rng, m, xs, ref, dtype, tol=None, grad_inputs=True):
    """Compare m (a Lua module) on input xs (array or list of arrays) with ref(xs_t, params_t)."""
    tol = tol or TOL[dtype]
    params = arrays(rt, H.params(m))
    pt = [torch.from_numpy(p.astype(np.float64)).requires_grad_(True) for p in params]
    listed = isinstance(xs, (list, tuple))
    xl = list(xs) if listed else [xs]
    xt = [torch.from_numpy(np.ascontiguousarray(x).astype(np.float64 if x.dtype.kind == "f" else x.dtype))
          .requires_grad_(x.dtype.kind == "f") for x in xl]
    y = ref(xt if listed else xt[0], pt)
    g = rng.standard_normal(tuple(y.shape)).astype(dtype)
    (y * torch.from_numpy(g.astype(np.float64))).sum().backward()
    scale = float(rng.uniform(0.5, 2.0))
    yl, gil, gpl = H.run(m, to_lua(rt, xs), rt.from_numpy(g), scale)
    ylua = arrays(rt, yl)
    assert len(ylua) == 1 and rel_err(ylua[0], y.detach().numpy()) <= tol, "output"
    if grad_inputs:
        gis = arrays(rt, gil)
        for gi, x in zip(gis, xt):
            if x.requires_grad:
                assert rel_err(gi, x.grad.numpy()) <= tol, "gradInput"
    for gp, p in zip(arrays(rt, gpl), pt):
        assert rel_err(gp.reshape(p.shape), scale * p.grad.numpy()) <= tol, "parameter gradient"
    return y.detach().numpy()


def roundtrip(rt, H, tmp_path, m, xs):
    y1, y2, tname, same = H.roundtrip(m, str(tmp_path / "m.t7"), to_lua(rt, xs))
    for a, b in zip(arrays(rt, y1), arrays(rt, y2)):
        assert np.array_equal(a, b)
    assert same, "fields changed by the .t7 round trip"
    return tname


def sizes(rng, n, lo=1, hi=9):
    return [int(v) for v in rng.integers(lo, hi, n)]


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_euclidean(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)
    m = build(rt, rng, "nn.Euclidean(%d, %d)" % (i, o), dtype)

    def ref(x, p):
        return torch.linalg.vector_norm(x.reshape(-1, i, 1) - p[0][None], dim=1).reshape(x.shape[:-1] + (o,))
    # the backward divides by y + 1e-7 as Torch7 does
    tol = max(TOL[dtype], 1e-5)
    check(rt, H, rng, m, draw(rng, (b, i), dtype), ref, dtype, tol)
    check(rt, H, rng, m, draw(rng, (i,), dtype), ref, dtype, tol)
    assert roundtrip(rt, H, tmp_path, m, draw(rng, (b, i), dtype)) == "nn.Euclidean"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_weighted_euclidean(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)
    m = build(rt, rng, "nn.WeightedEuclidean(%d, %d)" % (i, o), dtype)
    rt.call(rt.eval("function(m) m.diagCov:uniform(0.5, 2) end"), m)

    def ref(x, p):
        d = (x.reshape(-1, i, 1) - p[0][None]) * p[1][None]
        return torch.linalg.vector_norm(d, dim=1).reshape(x.shape[:-1] + (o,))
    tol = max(TOL[dtype], 1e-5)
    check(rt, H, rng, m, draw(rng, (b, i), dtype), ref, dtype, tol)
    check(rt, H, rng, m, draw(rng, (i,), dtype), ref, dtype, tol)
    assert roundtrip(rt, H, tmp_path, m, draw(rng, (i,), dtype)) == "nn.WeightedEuclidean"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_cosine(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)
    m = build(rt, rng, "nn.Cosine(%d, %d)" % (i, o), dtype)

    def ref(x, p):
        w = p[0]
        xn = torch.linalg.vector_norm(x, dim=-1, keepdim=True) + 1e-12
        wn = torch.linalg.vector_norm(w, dim=1) + 1e-12
        return (x @ w.t()) / xn / wn
    check(rt, H, rng, m, draw(rng, (b, i), dtype), ref, dtype)
    check(rt, H, rng, m, draw(rng, (i,), dtype), ref, dtype)
    assert roundtrip(rt, H, tmp_path, m, draw(rng, (b, i), dtype)) == "nn.Cosine"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_pair_modules(rt, H, rng, dtype, tmp_path):
    n, b = sizes(rng, 2, 2)  # one feature: the cosine is +-1, its gradient 0 up to rounding

    def cosdist(x, p):
        a, c = x
        return (a * c).sum(-1) / torch.sqrt(((a * a).sum(-1) + 1e-12) * ((c * c).sum(-1) + 1e-12))
    for shape in [(b, n), (n,)]:
        pair = [draw(rng, shape, dtype), draw(rng, shape, dtype)]
        m = build(rt, rng, "nn.DotProduct()", dtype)
        y = check(rt, H, rng, m, pair, lambda x, p: (x[0] * x[1]).sum(-1).reshape(-1), dtype)
        assert y.shape == (shape[0] if len(shape) == 2 else 1,)
        m = build(rt, rng, "nn.CosineDistance()", dtype)
        check(rt, H, rng, m, pair, lambda x, p: cosdist(x, p).reshape(-1), dtype)
    assert roundtrip(rt, H, tmp_path, m, pair) == "nn.CosineDistance"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_pairwise_distance(rt, H, rng, dtype, tmp_path):
    n, b = sizes(rng, 2, 1)
    for p in [1, 2, 3]:
        m = build(rt, rng, "nn.PairwiseDistance(%d)" % p, dtype)
        for shape in [(b, n), (n,)]:
            # Torch7's backward adds 1e-6 to the distance: keep the points apart
            a = draw(rng, shape, dtype)
            apart = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 1.5, shape)
            pair = [a, (a + apart).astype(dtype)]
            check(rt, H, rng, m, pair,
                  lambda x, _p, p=p: torch.linalg.vector_norm(x[0] - x[1], ord=p, dim=-1).reshape(-1),
                  dtype, max(TOL[dtype], 1e-4))
    assert roundtrip(rt, H, tmp_path, m, pair) == "nn.PairwiseDistance"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_bilinear(rt, H, rng, dtype, tmp_path):
    i1, i2, o, b = sizes(rng, 4)
    for bias in ["true", "false"]:
        m = build(rt, rng, "nn.Bilinear(%d, %d, %d, %s)" % (i1, i2, o, bias), dtype)

        def ref(x, p):
            y = torch.einsum("bi,kij,bj->bk", x[0], p[0], x[1])
            return y + p[1] if len(p) > 1 else y
        pair = [draw(rng, (b, i1), dtype), draw(rng, (b, i2), dtype)]
        check(rt, H, rng, m, pair, ref, dtype)
    assert roundtrip(rt, H, tmp_path, m, pair) == "nn.Bilinear"
    assert "without bias" in rt.eval("tostring")(m)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_mm_mv(rt, H, rng, dtype, tmp_path):
    p, q, r, b = sizes(rng, 4)
    for ta in [False, True]:
        for tb in [False, True]:
            m = build(rt, rng, "nn.MM(%s, %s)" % (str(ta).lower(), str(tb).lower()), dtype)
            for batch in [(), (b,)]:
                sa = batch + ((q, p) if ta else (p, q))
                sb = batch + ((r, q) if tb else (q, r))

                def ref(x, _p, ta=ta, tb=tb):
                    a = x[0].transpose(-1, -2) if ta else x[0]
                    c = x[1].transpose(-1, -2) if tb else x[1]
                    return a @ c
                check(rt, H, rng, m, [draw(rng, sa, dtype), draw(rng, sb, dtype)], ref, dtype)
    for trans in [False, True]:
        m = build(rt, rng, "nn.MV(%s)" % str(trans).lower(), dtype)
        for batch in [(), (b,)]:
            sm = batch + ((q, p) if trans else (p, q))

            def ref(x, _p, trans=trans):
                mat = x[0].transpose(-1, -2) if trans else x[0]
                return (mat @ x[1].unsqueeze(-1)).squeeze(-1)
            check(rt, H, rng, m, [draw(rng, sm, dtype), draw(rng, batch + (q,), dtype)], ref, dtype)
    assert roundtrip(rt, H, tmp_path, m, [draw(rng, (q, p), dtype), draw(rng, (q,), dtype)]) == "nn.MV"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_l1penalty(rt, H, rng, dtype, tmp_path):
    shape = tuple(sizes(rng, 2))
    w = float(rng.uniform(0.1, 2))
    for size_average in [False, True]:
        m = build(rt, rng, "nn.L1Penalty(%r, %s)" % (w, str(size_average).lower()), dtype)
        x, g = draw(rng, shape, dtype), draw(rng, shape, dtype)
        k = w / x.size if size_average else w
        # y is x itself; the penalty's gradient k * sign(x) comes on top of gradOutput
        y, gi, _ = H.run(m, rt.from_numpy(x), rt.from_numpy(g), 1)
        assert np.array_equal(arrays(rt, y)[0], x)
        assert rel_err(arrays(rt, gi)[0], g + k * np.sign(x)) <= TOL[dtype]
        assert abs(m.loss - k * np.abs(x).sum()) <= 1e-5 * max(1.0, m.loss)
    m = build(rt, rng, "nn.L1Penalty(1, false, false)", dtype)
    x, g = draw(rng, shape, dtype), draw(rng, shape, dtype)
    gi = rt.to_numpy(rt.eval("function(m, x, g) m:forward(x); return m:backward(x, g) end")(m, rt.from_numpy(x),
                                                                                          rt.from_numpy(g)))
    assert np.array_equal(gi, np.sign(x))
    assert roundtrip(rt, H, tmp_path, m, x) == "nn.L1Penalty"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_lookup_table(rt, H, rng, dtype, tmp_path):
    n_index, dim, b, k = sizes(rng, 4, 2)
    idx = rng.integers(1, n_index + 1, (b, k)).astype(np.int64)
    pad = int(idx[0, 0])
    for extra, kw in [("", {}), (", %d" % pad, {"padding_idx": pad - 1})]:
        m = build(rt, rng, "nn.LookupTable(%d, %d%s)" % (n_index, dim, extra), dtype)
        for x in [idx, idx[:, ::2], idx[0]]:
            check(rt, H, rng, m, x, lambda x, p, kw=kw: F.embedding(x - 1, p[0], **kw), dtype)
    # scaleGradByFreq divides each row's gradient by the index's count in the batch
    m = build(rt, rng, "nn.LookupTable(%d, %d):scaleGradByFreq()" % (n_index, dim), dtype)
    check(rt, H, rng, m, idx, lambda x, p: F.embedding(x - 1, p[0], scale_grad_by_freq=True), dtype)
    # maxNorm renormalizes the looked-up rows in place before the lookup
    for norm_type in [1.0, 2.0, 1.5]:
        max_norm = float(rng.uniform(0.5, 1.5))
        m = build(rt, rng, "nn.LookupTable(%d, %d, 0, %r, %r)" % (n_index, dim, max_norm, norm_type), dtype)
        w = torch.from_numpy(arrays(rt, H.params(m))[0].astype(np.float64))
        expect = F.embedding(torch.from_numpy(idx - 1), w, max_norm=max_norm, norm_type=norm_type)
        y = rt.to_numpy(m.forward(m, rt.from_numpy(idx)))
        assert rel_err(y, expect.numpy()) <= TOL[dtype]
        assert rel_err(rt.to_numpy(m.weight), w.numpy()) <= TOL[dtype]
    # no gradient for indices; accUpdateOnly drops gradWeight and still updates
    gi = rt.to_numpy(m.updateGradInput(m, rt.from_numpy(idx), m.output))
    assert gi.shape == idx.shape and not gi.any()
    assert roundtrip(rt, H, tmp_path, m, idx) == "nn.LookupTable"
    rt.call(rt.eval("function(m, x) m:accUpdateOnly(); m:float(); m:forward(x); "
                    "m:backwardUpdate(x, m.output, 0.1) end"), m, rt.from_numpy(idx))
    assert m.gradWeight is None and rt.eval("torch.type")(m.weight) == "torch.FloatTensor"
    with pytest.raises(Exception, match="out of range"):
        m.forward(m, rt.from_numpy(np.array([n_index + 1], np.int64)))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_lookup_table_wide_rows_repeated_indices(rt, H, rng, dtype):
    """Rows wider than the kernel's 32-column blocks (the last one partial), indices repeated many times, on
    2 threads: the gradient rows that several samples add into, by block, against PyTorch."""
    rt.execute("torch.setnumthreads(2)")
    n_index, dim = int(rng.integers(3, 12)), int(rng.integers(33, 140))
    idx = rng.integers(1, n_index + 1, (int(rng.integers(20, 60)), 7)).astype(np.int64)
    for expr, kw in [("", {}), (":scaleGradByFreq()", {"scale_grad_by_freq": True})]:
        m = build(rt, rng, "nn.LookupTable(%d, %d)%s" % (n_index, dim, expr), dtype)
        check(rt, H, rng, m, idx, lambda x, p, kw=kw: F.embedding(x - 1, p[0], **kw), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_maxout(rt, H, rng, dtype, tmp_path):
    i, o, k, b = sizes(rng, 4, 1, 6)
    m = build(rt, rng, "nn.Maxout(%d, %d, %d)" % (i, o, k), dtype)

    def ref(x, p):
        return F.linear(x, p[0], p[1]).reshape(x.shape[:-1] + (k, o)).max(-2)[0]
    check(rt, H, rng, m, draw(rng, (b, i), dtype), ref, dtype)
    assert roundtrip(rt, H, tmp_path, m, draw(rng, (b, i), dtype)) == "nn.Maxout"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_copy_contiguous_onehot_printsize(rt, H, rng, dtype, tmp_path):
    shape = tuple(sizes(rng, 2))
    x = draw(rng, shape, dtype)
    for expr in ["nn.Contiguous()", "nn.Copy()", "nn.Copy(nil, nil, true)", "nn.PrintSize('n2')"]:
        m = build(rt, rng, expr, dtype)
        check(rt, H, rng, m, x, lambda x, p: x * 1, dtype)
    is_contig = rt.eval("function(m, x) return m:forward(x):isContiguous() end")
    assert is_contig(build(rt, rng, "nn.Contiguous()", dtype), rt.from_numpy(x))
    # a type-changing Copy; dontCast keeps its types through :type()
    m = build(rt, rng, "nn.Copy('torch.DoubleTensor', 'torch.FloatTensor', false, true)", dtype)
    y = m.forward(m, rt.from_numpy(x.astype(np.float64)))
    assert rt.eval("torch.type")(y) == "torch.FloatTensor"
    rt.call(rt.eval("function(m) m:double() end"), m)
    assert rt.eval("torch.type")(m.output) == "torch.FloatTensor"
    assert roundtrip(rt, H, tmp_path, m, x.astype(np.float64)) == "nn.Copy"
    # OneHot: a number, or indices of any shape
    n = sizes(rng, 1, 2)[0]
    m = build(rt, rng, "nn.OneHot(%d)" % n, dtype)
    idx = rng.integers(1, n + 1, shape).astype(np.int64)
    y = rt.to_numpy(m.forward(m, rt.from_numpy(idx)))
    assert np.array_equal(y, F.one_hot(torch.from_numpy(idx - 1), n).numpy())
    assert np.array_equal(rt.to_numpy(m.forward(m, 2)), np.eye(n)[1])
    assert roundtrip(rt, H, tmp_path, m, idx) == "nn.OneHot"


def accumulates(rt, m, x, g):
    """The parameter gradients of two backward calls are twice those of one."""
    fn = rt.eval("""function(m, x, g)
        m:zeroGradParameters(); m:forward(x); m:backward(x, g)
        local _, gp = m:parameters(); local one = {}
        for i, t in ipairs(gp) do one[i] = t:clone() end
        m:forward(x); m:backward(x, g)
        local worst = 0
        for i, t in ipairs(gp) do worst = math.max(worst, (t - one[i] * 2):abs():max()) end
        return worst
    end""")
    return fn(m, rt.from_numpy(x), rt.from_numpy(g))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_linear_weight_norm(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)  # with one input, dL/dv is 0 and only rounding is left
    for bias in ["true", "false"]:
        m = build(rt, rng, "nn.LinearWeightNorm(%d, %d, %s)" % (i, o, bias), dtype)
        rt.call(rt.eval("function(m) m.g:uniform(0.5, 2) end"), m)

        def ref(x, p):
            w = p[1] * p[0] / torch.linalg.vector_norm(p[0], dim=1, keepdim=True)
            return F.linear(x, w, p[2] if len(p) > 2 else None)
        check(rt, H, rng, m, draw(rng, (b, i), dtype), ref, dtype)
        check(rt, H, rng, m, draw(rng, (i,), dtype), ref, dtype)
    x, g = draw(rng, (b, i), dtype), draw(rng, (b, o), dtype)
    assert accumulates(rt, m, x, g) <= 1e-5
    assert roundtrip(rt, H, tmp_path, m, x) == "nn.LinearWeightNorm"
    # toLinear / fromLinear keep the function
    same = rt.eval("""function(m, x)
        local lin = m:toLinear(); local back = nn.LinearWeightNorm.fromLinear(lin)
        return (lin:forward(x) - m:forward(x)):abs():max() + (back:forward(x) - m:forward(x)):abs():max()
    end""")
    assert same(m, rt.from_numpy(x)) <= 1e-5


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_weight_norm(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)
    c, h = sizes(rng, 2, 1, 4)
    cases = [("nn.Linear(%d, %d)" % (i, o), 1, (b, i),
              lambda x, w, bias: F.linear(x, w, bias), (o, i)),
             ("nn.SpatialConvolution(%d, %d, 2, 2, 1, 1, 1, 1)" % (c, o), 2, (b, c, h + 1, h + 2),
              lambda x, w, bias: F.conv2d(x, w, bias, padding=1), (o, c, 2, 2))]
    for inner, dim, shape, fn, wshape in cases:
        m = build(rt, rng, "nn.WeightNorm(%s, %d)" % (inner, dim), dtype)
        rt.call(rt.eval("function(m) m.g:uniform(0.5, 2); m.bias:uniform(-1, 1) end"), m)

        def ref(x, p, fn=fn, dim=dim, wshape=wshape):
            v, g = p[0], p[1].reshape(-1)
            wv = v * (g / torch.sqrt((v * v).sum(1) + 1e-4)).unsqueeze(1)
            moved = (wshape[dim - 1],) + tuple(s for k, s in enumerate(wshape) if k != dim - 1)
            w = wv.reshape(moved).movedim(0, dim - 1)
            return fn(x, w, p[2])
        # float: dL/dv subtracts the projection on v, a cancellation
        check(rt, H, rng, m, draw(rng, shape, dtype), ref, dtype, 1e-9 if dtype == np.float64 else 1e-3)
    # files hold no gradWeight (it is rebuilt as zeros), as Torch7's
    rt.call(rt.eval("function(m) m:zeroGradParameters() end"), m)
    assert roundtrip(rt, H, tmp_path, m, draw(rng, shape, dtype)) == "nn.WeightNorm"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_wrappers_nan_profile_gpu(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3)
    lin = lambda x, p: F.linear(x, p[0], p[1])  # noqa: E731
    for expr in ["nn.NaN(nn.Linear(%d, %d))", "nn.Profile(nn.Linear(%d, %d), 2)", "nn.GPU(nn.Linear(%d, %d), 2)"]:
        m = build(rt, rng, expr % (i, o), dtype)
        for _ in range(3):  # Profile prints every second pass
            check(rt, H, rng, m, draw(rng, (b, i), dtype), lin, dtype)
        tname = roundtrip(rt, H, tmp_path, m, draw(rng, (b, i), dtype))
        assert tname == expr.split("(")[0]
    # NaN names where the NaN came from
    fails = rt.eval("""function(m, x, g, where)
        if where == 'bias' then m.modules[1].bias:fill(0 / 0) end
        local ok, err = pcall(function() m:forward(x); if g then m:backward(x, g) end end)
        return ok, tostring(err)
    end""")
    x = draw(rng, (b, i), dtype)
    bad = x.copy()
    bad[0, 0] = np.nan
    for what, args in [("input", (bad, None, "")), ("parameters", (x, None, "bias"))]:
        m = build(rt, rng, "nn.NaN(nn.Linear(%d, %d), 7)" % (i, o), dtype)
        ok, err = fails(m, rt.from_numpy(args[0]), args[1], args[2])
        assert not ok and ("NaN found in %s" % what) in err and "nn.NaN(7)" in err
    m = build(rt, rng, "nn.NaN(nn.Linear(%d, %d))" % (i, o), dtype)
    g = np.full((b, o), np.nan, dtype)
    ok, err = fails(m, rt.from_numpy(x), rt.from_numpy(g), "")
    assert not ok and "NaN found in gradOutput" in err
    with pytest.raises(Exception, match="needs require 'cutorch'"):   # (no cutorch in this Lua state)
        rt.eval("function(m) m:cuda() end")(build(rt, rng, "nn.GPU(nn.Linear(2, 2), 1)", dtype))


def test_dont_cast(rt, H, rng, tmp_path):
    i, o, b = sizes(rng, 3)
    x, g = draw(rng, (b, i), np.float64), draw(rng, (b, o), np.float64)
    run = rt.eval("""function(x, g)
        torch.setdefaulttensortype('torch.DoubleTensor')
        local lin = nn.Linear(x:size(2), g:size(2)):float()
        local ref = lin:clone()
        local m = nn.DontCast(lin, true)
        m:zeroGradParameters(); ref:zeroGradParameters()
        local y, gi = m:forward(x), m:backward(x, g)
        local y2, gi2 = ref:forward(x:float()), ref:backward(x:float(), g:float())
        m:float()   -- the module stays a FloatTensor module either way
        m:double()
        return torch.type(y), torch.type(gi), (y:float() - y2):abs():max(), (gi:float() - gi2):abs():max(),
               (lin.gradWeight - ref.gradWeight):abs():max(), torch.type(lin.weight), m.moduleType
    end""")
    ty, tgi, dy, dgi, dgw, tw, mt = run(rt.from_numpy(x), rt.from_numpy(g))
    assert (ty, tgi, tw, mt) == ("torch.DoubleTensor", "torch.DoubleTensor", "torch.FloatTensor", "torch.FloatTensor")
    assert max(dy, dgi, dgw) <= 1e-6
    m = rt.eval("nn.DontCast(nn.Linear(%d, %d):float(), true)" % (i, o))
    assert roundtrip(rt, H, tmp_path, m, x) == "nn.DontCast"
    with pytest.raises(Exception, match="moduleType"):
        rt.execute("local m = nn.Identity(); m.output = {}; return nn.DontCast(m, true)")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_partial_linear(rt, H, rng, dtype, tmp_path):
    i, o, b = sizes(rng, 3, 2)
    m = build(rt, rng, "nn.PartialLinear(%d, %d)" % (i, o), dtype)
    rt.call(rt.eval("function(m) m.bias:uniform(-1, 1) end"), m)
    for k in [o, int(rng.integers(1, o + 1))]:
        part = rng.permutation(o)[:k] + 1
        rt.call(rt.eval("function(m, p) m:setPartition(p) end"), m, rt.from_numpy(part.astype(np.float64)))
        idx = torch.from_numpy(part - 1)
        check(rt, H, rng, m, draw(rng, (b, i), dtype), lambda x, p: x @ p[0][idx].t() + p[1][0, idx], dtype)
    rt.call(rt.eval("function(m) m:resetPartition() end"), m)
    x = draw(rng, (b, i), dtype)
    y = check(rt, H, rng, m, x, lambda x, p: F.linear(x, p[0], p[1][0]), dtype)
    assert y.shape == (b, o)
    assert roundtrip(rt, H, tmp_path, m, x) == "nn.PartialLinear"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_kmeans(rt, H, rng, dtype, tmp_path):
    k, dim, n = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(8, 30))
    m = build(rt, rng, "nn.Kmeans(%d, %d)" % (k, dim), dtype)
    x = np.ascontiguousarray(draw(rng, (n, dim), dtype))
    w = rt.to_numpy(m.weight).astype(np.float64).copy()
    scale = float(rng.uniform(0.5, 2))
    y, gi, gw = H.run(m, rt.from_numpy(x), rt.from_numpy(np.zeros(n, dtype)), scale)
    d2 = ((x[:, None, :].astype(np.float64) - w[None]) ** 2).sum(-1)
    assign = d2.argmin(1)
    assert np.array_equal(arrays(rt, y)[0], assign + 1)
    assert abs(m.loss - d2.min(1).sum()) <= 1e-4 * max(1.0, m.loss)
    assert not arrays(rt, gi)[0].any()
    expect = np.zeros_like(w)
    for c in range(k):
        rows = x[assign == c].astype(np.float64)
        if len(rows):
            expect[c] = -scale * (rows - w[c]).sum(0) / (len(rows) + 1e-7)
    assert rel_err(arrays(rt, gw)[0], expect) <= TOL[dtype] * 10
    # Lloyd steps from k-means++ seeding find k well separated clusters
    fit = rt.eval("""function(k, dim, n)
        local x = torch.Tensor(n, dim)
        for i = 1, n do x[i]:fill(((i - 1) % k) * 10) end
        local km = nn.Kmeans(k, dim)
        km:initKmeansPlus(x)
        for i = 1, 20 do
           km:zeroGradParameters(); km:forward(x); km:backward(x); km.weight:add(-1, km.gradWeight)
        end
        return km.loss
    end""")
    assert fit(k, dim, 60) <= 1e-5
    assert roundtrip(rt, H, tmp_path, m, x) == "nn.Kmeans"


def sparse_samples(rng, n, n_in, dtype):
    """n samples of {column, value} rows (distinct columns each) and their dense (n, n_in) form."""
    dense = np.zeros((n, n_in))
    samples = []
    for s in range(n):
        cols = rng.permutation(n_in)[:int(rng.integers(1, min(n_in, 6) + 1))]
        vals = rng.standard_normal(len(cols))
        dense[s, cols] = vals
        samples.append(np.stack([cols + 1.0, vals], 1).astype(dtype))
    return samples, dense


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_sparse_linear(rt, H, rng, dtype, tmp_path):
    n_in, o, b = int(rng.integers(5, 40)), int(rng.integers(1, 8)), int(rng.integers(1, 6))
    m = build(rt, rng, "nn.SparseLinear(%d, %d, true)" % (n_in, o), dtype)
    rt.call(rt.eval("function(m) m.bias:uniform(-1, 1); m.weightDecay = 0.25 end"), m)
    w0, b0 = rt.to_numpy(m.weight).astype(np.float64).copy(), rt.to_numpy(m.bias).astype(np.float64).copy()
    samples, dense = sparse_samples(rng, b, n_in, dtype)
    g = rng.standard_normal((b, o)).astype(dtype)
    scale = float(rng.uniform(0.5, 2))
    # (weightDecay fills all of gradWeight, but a sparse zeroGradParameters clears only the
    # columns of the last input, as Torch7's: clear it all here)
    run = rt.eval("""function(m, x, g, scale)
        m:zeroGradParameters(); m.gradWeight:zero()
        local y = m:forward(x):clone()
        local gi = m:updateGradInput(x, g)
        m:accGradParameters(x, g, scale)
        return y, gi, m.gradWeight:clone(), m.gradBias:clone()
    end""")
    for form in ["table", "legacy"]:
        if form == "table":
            x = rt.table(*[rt.from_numpy(s) for s in samples])
        else:  # (batch, nnz, 2): every sample needs the same nnz
            k = min(len(s) for s in samples)
            samples = [s[:k] for s in samples]
            dense = np.zeros((b, n_in))
            for r, s in enumerate(samples):
                dense[r, s[:, 0].astype(int) - 1] = s[:, 1]
            x = rt.from_numpy(np.stack(samples))
        y, gi, gw, gb = run(m, x, rt.from_numpy(g), scale)
        tol = TOL[dtype]
        assert rel_err(rt.to_numpy(y), dense @ w0.T + b0) <= tol
        assert rel_err(rt.to_numpy(gw), scale * g.T @ dense + 0.25 * w0) <= tol
        assert rel_err(rt.to_numpy(gb), scale * g.sum(0)) <= tol
        gi_dense = g.astype(np.float64) @ w0
        gis = [rt.to_numpy(gi[i + 1]) for i in range(b)] if form == "table" else list(rt.to_numpy(gi))
        for r in range(b):
            assert np.array_equal(gis[r][:, 0], np.arange(1, n_in + 1))
            assert rel_err(gis[r][:, 1], gi_dense[r]) <= tol
    # one sample: the sparse zeroGradParameters / updateParameters touch only its columns
    one, _ = sparse_samples(rng, 1, n_in, dtype)
    step = rt.eval("""function(m, x, g)
        m.weightDecay = 0
        m:zeroGradParameters()          -- forgets the recorded input
        m.gradWeight:fill(1)
        m:zeroGradParameters()          -- nothing recorded: all of it
        m:forward(x); m:backward(x, g)
        local before = m.weight:clone()
        m:updateParameters(0.5)
        local changed = (m.weight - before):abs():sum(1):view(-1)
        m:zeroGradParameters()
        return changed, m.gradWeight:abs():sum()
    end""")
    changed, left = step(m, rt.from_numpy(one[0]), rt.from_numpy(g[0]))
    used = set(one[0][:, 0].astype(int) - 1)
    assert all((rt.to_numpy(changed)[c] == 0) == (c not in used) for c in range(n_in) if abs(g[0]).sum() > 0)
    assert left == 0
    assert roundtrip(rt, H, tmp_path, m, one) == "nn.SparseLinear"
    with pytest.raises(Exception, match="out of range"):
        m.forward(m, rt.from_numpy(np.array([[n_in + 1, 1.0]], dtype)))


def test_type_conversion(rt, H):
    """:float() converts the parameters and buffers; the module still runs and clearState empties buffers."""
    run = rt.eval("""function(expr, input)
        torch.setdefaulttensortype('torch.DoubleTensor')
        local m = loadstring('return ' .. expr)()
        local x = loadstring('return ' .. input)()
        m:forward(x)
        m:float()
        local function f(t) if torch.isTensor(t) and t:type() == 'torch.DoubleTensor' then return t:float() end
                            if type(t) == 'table' then local r = {}; for k, v in pairs(t) do r[k] = f(v) end; return r end
                            return t end
        local y = m:forward(f(x))
        local p = m:parameters()
        m:clearState()
        return torch.type(y), p and torch.type(p[1]) or 'none'
    end""")
    for expr, inp in [("nn.Euclidean(3, 4)", "torch.randn(2, 3)"), ("nn.WeightedEuclidean(3, 4)", "torch.randn(3)"),
                      ("nn.Cosine(3, 4)", "torch.randn(2, 3)"), ("nn.Bilinear(2, 3, 4)", "{torch.randn(2, 2), torch.randn(2, 3)}"),
                      ("nn.LinearWeightNorm(3, 2)", "torch.randn(2, 3)"), ("nn.WeightNorm(nn.Linear(3, 2))", "torch.randn(2, 3)"),
                      ("nn.SparseLinear(5, 2)", "{torch.Tensor{{1, 0.5}, {4, -1}}}"), ("nn.Kmeans(2, 3)", "torch.randn(4, 3)"),
                      ("nn.PartialLinear(3, 2)", "torch.randn(2, 3)"), ("nn.Maxout(3, 2, 2)", "torch.randn(2, 3)"),
                      ("nn.MM()", "{torch.randn(2, 3), torch.randn(3, 2)}"), ("nn.CosineDistance()", "{torch.randn(3), torch.randn(3)}")]:
        ty, tp = run(expr, inp)
        assert ty == "torch.FloatTensor" and tp in ("torch.FloatTensor", "none"), (expr, ty, tp)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_convert(rt, H, rng, dtype, tmp_path):
    b, c, h, w = sizes(rng, 4)
    cases = [("'bchw', 'chwb'", (b, c, h, w), lambda x, p: x.permute(1, 2, 3, 0)),
             ("'bchw', 'bf'", (b, c, h, w), lambda x, p: x.reshape(b, -1)),
             ("'chw', 'hwc'", (c, h, w), lambda x, p: x.permute(1, 2, 0)),
             ("'chw', 'f'", (c, h, w), lambda x, p: x.reshape(-1)),
             ("'bf', 'fb'", (b, c), lambda x, p: x.t())]
    for args, shape, ref in cases:
        m = build(rt, rng, "nn.Convert(%s)" % args, dtype)
        check(rt, H, rng, m, draw(rng, shape, dtype), ref, dtype)
    # a DoubleTensor input into a FloatTensor Convert, and the gradient back as a DoubleTensor
    m = build(rt, rng, "nn.Convert('bchw', 'bf'):float()", dtype)
    x = rng.standard_normal((b, c, h, w))
    fb = rt.eval("function(m, x) local y = m:forward(x); local gi = m:backward(x, y); return torch.type(y), torch.type(gi), gi end")
    ty, tgi, gi = fb(m, rt.from_numpy(x))
    assert (ty, tgi) == ("torch.FloatTensor", "torch.DoubleTensor")
    assert rel_err(rt.to_numpy(gi), x) <= 1e-6
    assert roundtrip(rt, H, tmp_path, m, x.astype(np.float32)) == "nn.Convert"
