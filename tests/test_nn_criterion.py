"""The nn criterions (issue 11, family "criterion") against PyTorch CPU float64.

Each criterion runs forward and backward on shapes, margins, weights and flags drawn
at random per run (odd sizes, batch 1, non-contiguous inputs); its loss and gradInput
must equal PyTorch's functional counterpart (or the formula written with PyTorch ops
where PyTorch has none). Also: float32 versions, .t7 round trips, error messages."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from pytorch_bridge import LuaError  # noqa: E402

TOL = 1e-9

RUN = """function(crit, input, target)
   local function clone(g)
      if torch.isTensor(g) then return g:clone() end
      local t = {}
      for i, v in ipairs(g) do t[i] = v:clone() end
      return t
   end
   local out = crit:forward(input, target)
   return out, clone(crit:backward(input, target))
end"""


@pytest.fixture
def nn(rt):
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    return rt


def strided(a):
    """The same values as `a`, not contiguous (every other element of a bigger array)."""
    big = np.zeros(a.shape + (2,), a.dtype)
    big[..., 0] = a
    return big[..., 0]


def lua_arg(rt, v, noncontig=False):
    if isinstance(v, np.ndarray):
        return rt.from_numpy(strided(v) if noncontig else v.copy())
    if isinstance(v, (list, tuple)):
        return rt.table_from([lua_arg(rt, x, noncontig) for x in v])
    return v


def run_lua(rt, build, x, t, noncontig=False):
    """(loss, gradInput as ndarray or list of ndarrays) of the Lua criterion `build`."""
    crit = rt.eval(build) if isinstance(build, str) else build
    out, gi = rt.call(rt.eval(RUN), crit, lua_arg(rt, x, noncontig), lua_arg(rt, t))
    if isinstance(x, (list, tuple)):
        return out, [rt.to_numpy(gi[i + 1]).copy() for i in range(len(x))]
    return out, rt.to_numpy(gi).copy()


def torch_ref(loss_fn, x):
    """(loss, gradient) of loss_fn over float64 torch copies of x (an array or a list)."""
    xs = [torch.from_numpy(a.copy()).requires_grad_(True) for a in (x if isinstance(x, list) else [x])]
    loss = loss_fn(*xs)
    loss.backward()
    grads = [a.grad.numpy() for a in xs]
    return loss.item(), grads if isinstance(x, list) else grads[0]


def close(a, b, tol=TOL):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    assert float(np.max(np.abs(a - b))) <= tol * scale if a.size else True, (a, b)


def check(rt, build, x, t, loss_fn, noncontig=False, tol=TOL):
    out, gi = run_lua(rt, build, x, t, noncontig)
    ref_out, ref_gi = torch_ref(loss_fn, x)
    close(out, ref_out, tol)
    if isinstance(x, list):
        for g, r in zip(gi, ref_gi):
            close(g, r, tol)
    else:
        close(gi, ref_gi, tol)


def shape(rng):
    """A random input shape: 1-D, a batch (possibly of 1), or 3-D; odd sizes."""
    return [(int(rng.integers(1, 8)),), (int(rng.integers(1, 4)), int(rng.integers(1, 9))),
            (2, int(rng.integers(1, 4)), int(rng.integers(1, 6)))][int(rng.integers(3))]


def lua_bool(b):
    return "true" if b else "false"


def lua_vec(v):
    return "torch.Tensor({%s})" % ",".join(repr(float(a)) for a in v)


def red(size_average):
    return "mean" if size_average else "sum"


# ------------------------------------------------------------ element-wise


@pytest.mark.parametrize("trial", range(3))
def test_abs_smoothl1_softmargin(nn, rng, trial):
    s, avg, nc = shape(rng), bool(rng.integers(2)), bool(rng.integers(2))
    x = rng.standard_normal(s) * 2
    y = rng.standard_normal(s) * 2
    check(nn, "nn.AbsCriterion(%s)" % lua_bool(avg), x, y,
          lambda a: F.l1_loss(a, torch.from_numpy(y), reduction=red(avg)), nc)
    check(nn, "nn.SmoothL1Criterion(%s)" % lua_bool(avg), x, y,
          lambda a: F.smooth_l1_loss(a, torch.from_numpy(y), reduction=red(avg)), nc)
    sign = np.where(rng.random(s) < 0.5, -1.0, 1.0)
    crit = nn.eval("nn.SoftMarginCriterion()")
    crit.sizeAverage = avg
    check(nn, crit, x, sign, lambda a: F.soft_margin_loss(a, torch.from_numpy(sign), reduction=red(avg)), nc)


def test_softmargin_large_scores_stay_finite(nn):
    x = np.array([800.0, -800.0, 30.0])
    y = np.array([-1.0, 1.0, 1.0])
    # (PyTorch's soft_margin_loss overflows here; softplus is its stable form)
    check(nn, "nn.SoftMarginCriterion()", x, y, lambda a: F.softplus(-a * torch.from_numpy(y)).mean())


@pytest.mark.parametrize("trial", range(2))
def test_distkldiv_and_margin(nn, rng, trial):
    s, avg, nc = shape(rng), bool(rng.integers(2)), bool(rng.integers(2))
    x = rng.standard_normal(s)
    y = rng.random(s) * (rng.random(s) < 0.8)  # some zero targets, which contribute nothing
    crit = nn.eval("nn.DistKLDivCriterion()")
    crit.sizeAverage = avg
    yt = torch.from_numpy(y)
    check(nn, crit, x, y, lambda a: (torch.xlogy(yt, yt) - yt * a).sum() / (y.size if avg else 1), nc)
    margin = float(rng.uniform(0.2, 2))
    sign = np.where(rng.random(s) < 0.5, -1.0, 1.0)
    crit = nn.eval("nn.MarginCriterion(%r)" % margin)
    crit.sizeAverage = avg
    ref = (lambda a: (margin - a * torch.from_numpy(sign)).clamp(min=0).mean()) if avg else \
        (lambda a: (margin - a * torch.from_numpy(sign)).clamp(min=0).sum())
    check(nn, crit, x, sign, ref, nc)


def test_distkldiv_wants_same_size(nn):
    with pytest.raises(LuaError, match="same size"):
        run_lua(nn, "nn.DistKLDivCriterion()", np.zeros((2, 3)), np.zeros(6))


@pytest.mark.parametrize("trial", range(3))
def test_bce(nn, rng, trial):
    batch, n = int(rng.integers(1, 5)), int(rng.integers(1, 9))
    avg, weighted, nc, one_d = bool(rng.integers(2)), bool(rng.integers(2)), bool(rng.integers(2)), trial == 0
    s = (n,) if one_d else (batch, n)
    x = rng.uniform(0.02, 0.98, s)
    y = rng.uniform(0, 1, s)
    w = rng.uniform(0.1, 2, n)
    build = "nn.BCECriterion(%s, %s)" % (lua_vec(w) if weighted else "nil",
                                         lua_bool(avg))
    wt = torch.from_numpy(np.broadcast_to(w, s).copy()) if weighted else None
    check(nn, build, x, y, lambda a: F.binary_cross_entropy(a, torch.from_numpy(y), weight=wt, reduction=red(avg)),
          nc, tol=1e-8)


def test_bce_rejects_input_outside_0_1(nn):
    with pytest.raises(LuaError, match="between 0 and 1"):
        run_lua(nn, "nn.BCECriterion()", np.array([0.5, 1.5]), np.array([0.0, 1.0]))


@pytest.mark.parametrize("trial", range(2))
def test_hinge_embedding_and_l1cost(nn, rng, trial):
    s, nc = shape(rng), bool(rng.integers(2))
    margin = float(rng.uniform(0.2, 2))
    x = rng.standard_normal(s) * 2
    y = np.where(rng.random(s) < 0.5, -1.0, 1.0)
    check(nn, "nn.HingeEmbeddingCriterion(%r)" % margin, x, y,
          lambda a: F.hinge_embedding_loss(a, torch.from_numpy(y), margin=margin), nc)
    crit = nn.eval("nn.HingeEmbeddingCriterion(%r)" % margin)
    crit.sizeAverage = False
    check(nn, crit, x, y, lambda a: F.hinge_embedding_loss(a, torch.from_numpy(y), margin=margin, reduction="sum"))
    check(nn, "nn.L1Cost()", x, None, lambda a: a.abs().sum(), nc)


def test_hinge_embedding_number_target(nn):
    x = np.array([0.3, 2.5, -1.0])
    check(nn, "nn.HingeEmbeddingCriterion(1)", x, -1,
          lambda a: F.hinge_embedding_loss(a, -torch.ones(3), margin=1.0))


# ------------------------------------------------------------ class targets


@pytest.mark.parametrize("trial", range(3))
def test_multimargin(nn, rng, trial):
    batch, dim = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    p, margin = int(rng.integers(1, 3)), float(rng.uniform(0.1, 2))
    weighted, nc, one_d = bool(rng.integers(2)), bool(rng.integers(2)), trial == 0
    x = rng.standard_normal((dim,) if one_d else (batch, dim))
    t = rng.integers(1, dim + 1, () if one_d else batch)
    w = rng.uniform(0.1, 2, dim)
    build = "nn.MultiMarginCriterion(%d, %s, %r)" % (
        p, lua_vec(w) if weighted else "nil", margin)
    target = int(t) if one_d else t.astype(np.int64)
    ref_t = torch.tensor([int(t) - 1]) if one_d else torch.from_numpy(t - 1)
    check(nn, build, x, target, lambda a: F.multi_margin_loss(
        a.view(1, -1) if one_d else a, ref_t, p=p, margin=margin,
        weight=torch.from_numpy(w) if weighted else None), nc)


def test_multimargin_target_out_of_range(nn):
    with pytest.raises(LuaError, match="out of range"):
        run_lua(nn, "nn.MultiMarginCriterion()", np.zeros((2, 3)), np.array([1, 4], np.int64))


@pytest.mark.parametrize("trial", range(2))
def test_multilabel_margin(nn, rng, trial):
    batch, dim = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    x = rng.standard_normal((batch, dim))
    t = np.zeros((batch, dim), np.int64)
    for i in range(batch):
        k = int(rng.integers(0, dim + 1))
        t[i, :k] = rng.permutation(dim)[:k] + 1
    ref_t = torch.from_numpy(t - 1)  # PyTorch: 0-based, ended by -1
    check(nn, "nn.MultiLabelMarginCriterion()", x, t, lambda a: F.multilabel_margin_loss(a, ref_t),
          bool(rng.integers(2)))
    check(nn, "nn.MultiLabelMarginCriterion()", x[0], t[0], lambda a: F.multilabel_margin_loss(a, ref_t[0]))


@pytest.mark.parametrize("trial", range(2))
def test_multilabel_soft_margin(nn, rng, trial):
    batch, n = int(rng.integers(1, 5)), int(rng.integers(1, 9))
    weighted, nc = bool(rng.integers(2)), bool(rng.integers(2))
    x = rng.standard_normal((batch, n)) * 3
    t = (rng.random((batch, n)) < 0.5).astype(np.float64)
    w = rng.uniform(0.1, 2, n)
    build = "nn.MultiLabelSoftMarginCriterion(%s)" % (lua_vec(w)
                                                       if weighted else "")
    check(nn, build, x, t, lambda a: F.multilabel_soft_margin_loss(
        a, torch.from_numpy(t), weight=torch.from_numpy(w) if weighted else None), nc)


@pytest.mark.parametrize("trial", range(2))
def test_spatial_class_nll(nn, rng, trial):
    b, c, h, w = (int(rng.integers(1, 4)), int(rng.integers(2, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    avg, weighted = bool(rng.integers(2)), bool(rng.integers(2))
    x = rng.standard_normal((b, c, h, w))
    t = rng.integers(1, c + 1, (b, h, w)).astype(np.int64)
    wt = rng.uniform(0.1, 2, c)
    build = "nn.SpatialClassNLLCriterion(%s, %s)" % (
        lua_vec(wt) if weighted else "nil", lua_bool(avg))
    check(nn, build, x, t, lambda a: F.nll_loss(a, torch.from_numpy(t - 1), reduction=red(avg),
                                                weight=torch.from_numpy(wt) if weighted else None),
          bool(rng.integers(2)))


def test_spatial_class_nll_wants_4d(nn):
    with pytest.raises(LuaError, match="4D"):
        run_lua(nn, "nn.SpatialClassNLLCriterion()", np.zeros((3, 2, 2)), np.ones((2, 2), np.int64))


@pytest.mark.parametrize("trial", range(2))
def test_classnll_crossentropy_forms(nn, rng, trial):
    batch, c = int(rng.integers(1, 6)), int(rng.integers(2, 7))
    avg, weighted = bool(rng.integers(2)), bool(rng.integers(2))
    x = rng.standard_normal((batch, c))
    t = rng.integers(1, c + 1, batch).astype(np.int64)
    ignore = int(t[0])
    w = rng.uniform(0.1, 2, c)
    wl = lua_vec(w) if weighted else "nil"
    wt = torch.from_numpy(w) if weighted else None
    check(nn, "nn.ClassNLLCriterion(%s, %s, %d)" % (wl, lua_bool(avg), ignore), x, t,
          lambda a: F.nll_loss(a, torch.from_numpy(t - 1), weight=wt, reduction=red(avg), ignore_index=ignore - 1)
          if (t != ignore).any() else (a * 0).sum())
    check(nn, "nn.CrossEntropyCriterion(%s, %s)" % (wl, lua_bool(avg)), x, t,
          lambda a: F.cross_entropy(a, torch.from_numpy(t - 1), weight=wt, reduction=red(avg)))


# ------------------------------------------------------------ pairs and tables


@pytest.mark.parametrize("trial", range(2))
def test_cosine_embedding(nn, rng, trial):
    batch, n = int(rng.integers(1, 5)), int(rng.integers(1, 8))
    margin = float(rng.uniform(-0.5, 0.5))
    a, b = rng.standard_normal((batch, n)), rng.standard_normal((batch, n))
    y = np.where(rng.random(batch) < 0.5, -1.0, 1.0)
    check(nn, "nn.CosineEmbeddingCriterion(%r)" % margin, [a, b], y,
          lambda p, q: F.cosine_embedding_loss(p, q, torch.from_numpy(y), margin=margin), tol=1e-8)
    check(nn, "nn.CosineEmbeddingCriterion(%r)" % margin, [a[0], b[0]], -1,
          lambda p, q: F.cosine_embedding_loss(p.view(1, -1), q.view(1, -1), -torch.ones(1), margin=margin),
          tol=1e-8)


@pytest.mark.parametrize("trial", range(2))
def test_margin_ranking(nn, rng, trial):
    batch, margin = int(rng.integers(1, 7)), float(rng.uniform(0.1, 2))
    a, b = rng.standard_normal(batch), rng.standard_normal(batch)
    y = np.where(rng.random(batch) < 0.5, -1.0, 1.0)
    check(nn, "nn.MarginRankingCriterion(%r)" % margin, [a, b], y,
          lambda p, q: F.margin_ranking_loss(p, q, torch.from_numpy(y), margin=margin))
    check(nn, "nn.MarginRankingCriterion(%r)" % margin, [a[:1], b[:1]], float(y[0]),
          lambda p, q: F.margin_ranking_loss(p, q, torch.tensor([y[0]]), margin=margin, reduction="sum"))


def test_l1_hinge_embedding(nn, rng):
    n, margin = int(rng.integers(1, 8)), float(rng.uniform(0.5, 20))
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    for y in (1, -1):
        ref = (lambda p, q: (p - q).abs().sum()) if y == 1 else \
            (lambda p, q: (margin - (p - q).abs().sum()).clamp(min=0))
        check(nn, "nn.L1HingeEmbeddingCriterion(%r)" % margin, [a, b], y, ref)


def test_distance_ratio(nn, rng):
    n = int(rng.integers(1, 8))
    avg = bool(rng.integers(2))
    d1, d2 = rng.random(n) * 3, rng.random(n) * 3
    ref = lambda x, y: (x + torch.log(torch.exp(-x) + torch.exp(-y))).sum() / (n if avg else 1)  # noqa: E731
    check(nn, "nn.DistanceRatioCriterion(%s)" % lua_bool(avg), [d1, d2], None, ref)


def test_weighted_mse(nn, rng):
    batch, n = int(rng.integers(1, 5)), int(rng.integers(1, 8))
    w = rng.uniform(0.1, 2, n)
    x, y = rng.standard_normal((batch, n)), rng.standard_normal((batch, n))
    wl = lua_vec(w)
    target = torch.from_numpy(y * w)
    check(nn, "nn.WeightedMSECriterion(%s)" % wl, x, y, lambda a: F.mse_loss(a, target), bool(rng.integers(2)))
    check(nn, "nn.WeightedMSECriterion(%s)" % wl, x[0], y[0], lambda a: F.mse_loss(a, target[0]))


@pytest.mark.parametrize("batched", [False, True])
def test_spatial_autocrop_mse(nn, rng, batched):
    c, h, w = int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    dh, dw = int(rng.integers(0, 4)), int(rng.integers(0, 4))
    lead = (int(rng.integers(1, 3)),) if batched else ()
    x = rng.standard_normal(lead + (c, h, w))
    t = rng.standard_normal(lead + (c, h + dh, w + dw))
    crop = torch.from_numpy(t[..., dh // 2:dh // 2 + h, dw // 2:dw // 2 + w].copy())
    avg = bool(rng.integers(2))
    check(nn, "nn.SpatialAutoCropMSECriterion(%s)" % lua_bool(avg), x, t,
          lambda a: F.mse_loss(a, crop, reduction=red(avg)))
    if dh or dw:  # the other way round the target is too small
        with pytest.raises(LuaError, match="less than or equal"):
            run_lua(nn, "nn.SpatialAutoCropMSECriterion()", t, x)


def test_class_simplex(nn, rng):
    k = int(rng.integers(3, 9))
    crit = nn.eval("nn.ClassSimplexCriterion(%d)" % k)
    simplex = nn.to_numpy(crit.simplex).copy()
    assert simplex.shape == (k, k)
    # unit vertices, equal pairwise angles (dot -1/(k-1)), centred at the origin
    close(np.linalg.norm(simplex, axis=1), np.ones(k))
    gram = simplex @ simplex.T
    close(gram[~np.eye(k, dtype=bool)], np.full(k * k - k, -1.0 / (k - 1)))
    close(simplex.sum(0), np.zeros(k))
    batch = int(rng.integers(1, 4))
    x = rng.standard_normal((batch, k))
    t = rng.integers(1, k + 1, batch)
    ref_t = torch.from_numpy(simplex[t - 1])
    check(nn, "nn.ClassSimplexCriterion(%d)" % k, x, t.astype(np.float64), lambda a: F.mse_loss(a, ref_t))
    check(nn, "nn.ClassSimplexCriterion(%d)" % k, x[0], int(t[0]), lambda a: F.mse_loss(a, ref_t[0]))
    scores = nn.to_numpy(nn.call(nn.eval("function(c, x) return c:getTopPrediction(x) end"), crit,
                                 nn.from_numpy(simplex.copy())))
    assert list(scores) == list(range(1, k + 1))


def test_multi_parallel_module_criterion(nn, rng):
    n = int(rng.integers(1, 8))
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    w1, w2 = float(rng.uniform(0.1, 2)), float(rng.uniform(0.1, 2))
    yt = torch.from_numpy(y)
    check(nn, "nn.MultiCriterion():add(nn.MSECriterion(), %r):add(nn.AbsCriterion(), %r)" % (w1, w2), x, y,
          lambda a: w1 * F.mse_loss(a, yt) + w2 * F.l1_loss(a, yt))
    check(nn, "nn.ParallelCriterion():add(nn.MSECriterion(), %r):add(nn.AbsCriterion(), %r)" % (w1, w2),
          [x, y], [y, x], lambda a, b: w1 * F.mse_loss(a, yt) + w2 * F.l1_loss(b, torch.from_numpy(x)))
    check(nn, "nn.ParallelCriterion(true):add(nn.MSECriterion(), %r):add(nn.AbsCriterion(), %r)" % (w1, w2),
          [x, x[::-1].copy()], y, lambda a, b: w1 * F.mse_loss(a, yt) + w2 * F.l1_loss(b, yt))
    check(nn, "nn.ModuleCriterion(nn.MSECriterion(), nn.MulConstant(3), nn.MulConstant(0.5))", x, y,
          lambda a: F.mse_loss(3 * a, 0.5 * yt))


# ------------------------------------------------------------ float, .t7, fields

FLOAT_CASES = [
    ("nn.AbsCriterion()", "pair"), ("nn.SmoothL1Criterion()", "pair"), ("nn.DistKLDivCriterion()", "pair"),
    ("nn.MarginCriterion(0.5)", "sign"), ("nn.SoftMarginCriterion()", "sign"),
    ("nn.BCECriterion(torch.rand(5))", "prob"),
    ("nn.HingeEmbeddingCriterion()", "sign"), ("nn.MultiMarginCriterion(2, torch.rand(5))", "class"),
    ("nn.MultiLabelMarginCriterion()", "labels"), ("nn.MultiLabelSoftMarginCriterion()", "prob"),
    ("nn.WeightedMSECriterion(torch.rand(5))", "pair"), ("nn.SpatialClassNLLCriterion(torch.rand(5))", "spatial"),
    ("nn.L1Cost()", "pair"),
]

ARGS = """function(kind)
   if kind == 'spatial' then
      return torch.randn(2, 5, 3, 3), torch.LongTensor(2, 3, 3):random(1, 5)
   end
   local x = torch.randn(3, 5)
   if kind == 'pair' then return x, torch.rand(3, 5) end
   if kind == 'sign' then return x, torch.rand(3, 5):gt(0.5):double():mul(2):add(-1) end
   if kind == 'prob' then return torch.rand(3, 5):mul(0.9):add(0.05), torch.rand(3, 5):gt(0.5):double() end
   if kind == 'class' then return x, torch.LongTensor{1, 5, 3} end
   return x, torch.LongTensor{{1, 3, 0, 0, 0}, {5, 0, 0, 0, 0}, {2, 1, 4, 0, 0}}
end"""

FLOAT_RUN = """function(build, kind)
   local x, t = (%s)(kind)
   local c = loadstring('return ' .. build)()
   local lossD, giD = c:forward(x, t), c:backward(x, t):clone()
   c:float()
   local tf = torch.typename(t) == 'torch.DoubleTensor' and t:float() or t
   local lossF, giF = c:forward(x:float(), tf), c:backward(x:float(), tf)
   assert(torch.typename(giF) == 'torch.FloatTensor', 'gradInput is a ' .. torch.typename(giF))
   return math.abs(lossF - lossD) / math.max(1, math.abs(lossD)), (giF:double() - giD):abs():max()
end""" % ARGS


@pytest.mark.parametrize("build,kind", FLOAT_CASES)
def test_float_matches_double(nn, build, kind):
    dloss, dgrad = nn.call(nn.eval(FLOAT_RUN), build, kind)
    assert dloss < 1e-5 and dgrad < 1e-5


T7_RUN = """function(build, kind, path)
   local x, t = (%s)(kind)
   local c = loadstring('return ' .. build)()
   local loss, gi = c:forward(x, t), c:backward(x, t):clone()
   torch.save(path, c)
   local c2 = torch.load(path)
   assert(torch.typename(c2) == torch.typename(c), 'loaded a ' .. tostring(torch.typename(c2)))
   for k, v in pairs(c) do
      if type(v) ~= 'table' and type(v) ~= 'userdata' and type(v) ~= 'cdata' then
         assert(c2[k] == v, 'field ' .. k .. ' changed: ' .. tostring(v) .. ' vs ' .. tostring(c2[k]))
      end
   end
   local loss2, gi2 = c2:forward(x, t), c2:backward(x, t)
   return math.abs(loss2 - loss), (gi2 - gi):abs():max()
end""" % ARGS


@pytest.mark.parametrize("build,kind", FLOAT_CASES)
def test_t7_round_trip(nn, tmp_path, build, kind):
    dloss, dgrad = nn.call(nn.eval(T7_RUN), build, kind, str(tmp_path / "crit.t7"))
    assert dloss == 0 and dgrad == 0


def test_table_criterions_round_trip(nn, tmp_path):
    path = str(tmp_path / "c.t7")
    res = nn.execute("""
       local path = ...
       local c = nn.ParallelCriterion():add(nn.MSECriterion(), 0.5):add(nn.MarginRankingCriterion(0.3), 2)
       local m = nn.MultiCriterion():add(nn.AbsCriterion(false), 3)
       local x = {torch.randn(4), {torch.randn(3), torch.randn(3)}}
       local t = {torch.randn(4), torch.Tensor{1, -1, 1}}
       local l1 = c:forward(x, t)
       local lm = m:forward(x[1], t[1])
       torch.save(path, {c, m, nn.CosineEmbeddingCriterion(0.2), nn.ClassSimplexCriterion(4)})
       local r = torch.load(path)
       assert(r[1].weights[2] == 2 and r[2].weights[1] == 3 and r[2].criterions[1].sizeAverage == false)
       assert(r[3].margin == 0.2 and r[4].nClasses == 4)
       assert((r[4].simplex - nn.ClassSimplexCriterion(4).simplex):abs():max() == 0)
       return r[1]:forward(x, t) - l1, r[2]:forward(x[1], t[1]) - lm
    """.replace("...", repr(path)))
    assert tuple(res) == (0, 0)


def test_torch7_defaults_and_fields(nn):
    got = nn.execute("""
       local b = nn.BCECriterion(torch.ones(3))
       local m = nn.MultiMarginCriterion()
       local h = nn.HingeEmbeddingCriterion()
       local c = nn.CosineEmbeddingCriterion()
       local r = nn.MarginRankingCriterion()
       local s = nn.SpatialClassNLLCriterion(torch.ones(4))
       return {b.sizeAverage, b:__len()[1], m.p, m.margin, m.sizeAverage, h.margin, c.margin, r.margin,
               nn.MarginCriterion().margin, nn.L1HingeEmbeddingCriterion().margin, s:__len()[1],
               nn.ModuleCriterion(nn.MSECriterion()).castTarget, nn.SmoothL1Criterion(false).sizeAverage}
    """)
    assert [got[i + 1] for i in range(13)] == [True, 3, 1, 1.0, True, 1, 0, 1, 1, 1, 4, True, False]


def test_large_inputs_take_the_parallel_path(nn, rng):
    """Past the OpenMP threshold the sums are parallel reductions; they must not change the result."""
    x, y = rng.standard_normal(70001), rng.standard_normal(70001)
    check(nn, "nn.SmoothL1Criterion()", x, y, lambda a: F.smooth_l1_loss(a, torch.from_numpy(y)))
    xb = rng.standard_normal((9001, 5))
    t = rng.integers(1, 6, 9001)
    check(nn, "nn.MultiMarginCriterion(2)", xb, t, lambda a: F.multi_margin_loss(a, torch.from_numpy(t - 1), p=2))
    xs = rng.standard_normal((2, 3, 130, 130))
    ts = rng.integers(1, 4, (2, 130, 130))
    check(nn, "nn.SpatialClassNLLCriterion()", xs, ts, lambda a: F.nll_loss(a, torch.from_numpy(ts - 1)))
