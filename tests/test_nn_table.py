"""nn's table, shape and container modules (issue 11, family "table") against PyTorch autograd.

Each module runs forward and backward in Lua on inputs (nested tables of tensors) drawn at
random per run; the output, every gradInput and the parameter gradients must equal what
PyTorch computes for the same function in float64 (float32: 1e-5). Inputs are often
non-contiguous numpy views (from_numpy keeps their strides). Each class also survives a .t7
round trip (fields and results kept) and a :type() change."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

TOL = {np.float64: 1e-10, np.float32: 1e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}
DTYPES = [np.float64, np.float32]
IDS = ["double", "float"]

LUA_HELPERS = """
local H = {}
-- the tensors of a nested table, cloned, depth first; a number becomes a 1-element tensor
function H.flat(x, out)
   out = out or {}
   if torch.isTensor(x) then out[#out + 1] = x:clone()
   elseif type(x) == 'number' then out[#out + 1] = torch.DoubleTensor({x})
   else for i = 1, #x do H.flat(x[i], out) end end
   return out
end
function H.run(m, x, g, params)
   m:zeroGradParameters()
   local y = H.flat(m:forward(x))
   local gi = H.flat(m:backward(x, g))
   local p = {}
   for i, t in ipairs(params and params(m) or {}) do p[i] = t:clone() end
   return y, gi, p
end
return H
"""


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def helpers(rt):
    rt.require("nn")
    return rt.execute(LUA_HELPERS)


def to_lua(rt, x):
    if isinstance(x, (list, tuple)):
        return rt.table(*[to_lua(rt, v) for v in x])
    return rt.from_numpy(x)


def to_torch(x, grad):
    if isinstance(x, (list, tuple)):
        return [to_torch(v, grad) for v in x]
    t = torch.from_numpy(np.ascontiguousarray(x).copy())
    return t.requires_grad_(True) if grad and x.dtype.kind == "f" else t


def flat(x):
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in flat(v)]
    return [x]


def lua_list(rt, tbl):
    return [rt.to_numpy(tbl[i + 1]).copy() for i in range(len(tbl))]


def noncontig(rng, shape, dtype):
    """A random array of `shape`, as a strided view when it has a dimension to stride."""
    shape = tuple(shape)
    if len(shape) and rng.integers(0, 2):
        big = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
        return big[..., ::2]
    return rng.standard_normal(shape).astype(dtype)


def check(rt, rng, build, x, ref, dtype, params=None, ref_params=None):
    """Lua module `build` on input x (nested numpy) vs ref(torch inputs, lua module) in PyTorch.

    params: Lua function(m) returning the parameter gradients to compare with
    ref_params(m) -> the torch tensors (requires_grad) that ref uses."""
    H = helpers(rt)
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    m = rt.eval(build)
    xt = to_torch(x, True)
    leaves = ref_params(m) if ref_params else []
    yt = flat(ref(xt, m, leaves))
    gs = [rng.standard_normal(tuple(y.shape)).astype(dtype) for y in yt]
    # gradOutput has the output's nesting: rebuild it from the Lua output's structure
    g_lua = rebuild(rt, rt.call(rt.eval("function(m, x) return m:forward(x) end"), m, to_lua(rt, x)), gs)
    y, gi, p = rt.call(H.run, m, to_lua(rt, x), g_lua, rt.eval(params) if params else None)
    y, gi, p = lua_list(rt, y), lua_list(rt, gi), lua_list(rt, p)
    tol = TOL[dtype]
    assert len(y) == len(yt), build
    for a, b in zip(y, yt):
        assert rel_err(a, b.detach().numpy()) <= tol, "output of " + build
    inputs = flat(xt)
    wrt = [t for t in inputs + leaves if t.requires_grad]
    grads = torch.autograd.grad([t for t in yt], wrt, [torch.from_numpy(g) for g in gs], allow_unused=True)
    grads = dict(zip([id(t) for t in wrt], grads))
    assert len(gi) == len(inputs), "gradInput structure of " + build
    for a, t in zip(gi, inputs):
        b = grads.get(id(t))
        b = np.zeros(tuple(t.shape)) if b is None else b.numpy()
        assert rel_err(a, b) <= tol, "gradInput of " + build
    for a, t in zip(p, leaves):
        assert rel_err(a.reshape(tuple(t.shape)), grads[id(t)].numpy()) <= tol, "parameter gradient of " + build
    return m


def rebuild(rt, like, arrays):
    """A Lua table shaped like `like` (a Lua output), its tensors taken in order from arrays."""
    it = iter(arrays)
    is_tensor = rt.eval("torch.isTensor")

    def go(v):
        if is_tensor(v) or isinstance(v, (int, float)):
            a = next(it)
            return rt.from_numpy(a.copy()) if not isinstance(v, (int, float)) else float(a.reshape(-1)[0])
        return rt.table(*[go(v[i + 1]) for i in range(len(v))])

    return go(like)


def linear_params(path):
    """(Lua grads function, torch leaves function) for the Linear at Lua expression `path` of m."""
    lua = "function(m) local l = %s; return {l.gradWeight, l.gradBias} end" % path

    def leaves(rt):
        def f(m):
            w = rt.call(rt.eval("function(m) local l = %s; return l.weight, l.bias end" % path), m)
            return [torch.from_numpy(rt.to_numpy(t).copy()).requires_grad_(True) for t in w]
        return f
    return lua, leaves


def dims(rng, n, lo=1, hi=5):
    return [int(v) for v in rng.integers(lo, hi + 1, n)]


# ---------------------------------------------------------------------------- table modules

@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_join_split_table(rt, rng, dtype):
    a, b, c = dims(rng, 3)
    parts = [noncontig(rng, (a, k, c), dtype) for k in dims(rng, 3)]
    check(rt, rng, "nn.JoinTable(2)", parts, lambda x, m, p: torch.cat(x, 1), dtype)
    last = [noncontig(rng, (a, b, k), dtype) for k in dims(rng, 2)]
    check(rt, rng, "nn.JoinTable(-1)", last, lambda x, m, p: torch.cat(x, 2), dtype)
    # nInputDims: a batch in front shifts the dimension
    check(rt, rng, "nn.JoinTable(1, 2)", parts, lambda x, m, p: torch.cat(x, 1), dtype)
    x = noncontig(rng, (a, b, c), dtype)
    for d in (1, 2, 3, -1):
        check(rt, rng, "nn.SplitTable(%d)" % d, x, lambda x, m, p, d=d: list(x.unbind(d if d < 0 else d - 1)), dtype)
    check(rt, rng, "nn.SplitTable(1, 2)", x, lambda x, m, p: list(x.unbind(1)), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_select_narrow_flatten_table(rt, rng, dtype):
    s = dims(rng, 2)
    t = lambda: noncontig(rng, s, dtype)  # noqa: E731
    x = [t(), [t(), t()], t()]
    check(rt, rng, "nn.SelectTable(1)", x, lambda x, m, p: x[0], dtype)
    check(rt, rng, "nn.SelectTable(2)", x, lambda x, m, p: x[1], dtype)
    check(rt, rng, "nn.SelectTable(-1)", x, lambda x, m, p: x[2], dtype)
    y = [t() for _ in range(5)]
    check(rt, rng, "nn.NarrowTable(2, 3)", y, lambda x, m, p: x[1:4], dtype)
    check(rt, rng, "nn.NarrowTable(4)", y, lambda x, m, p: x[3:4], dtype)
    z = [t(), [t(), [t(), t()]], [t()]]
    check(rt, rng, "nn.FlattenTable()", z, lambda x, m, p: flat(x), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_pointwise_tables(rt, rng, dtype):
    s = dims(rng, 3)
    n = int(rng.integers(2, 5))
    xs = [noncontig(rng, s, dtype) for _ in range(n)]

    def prod(x, m, p):
        out = x[0]
        for v in x[1:]:
            out = out * v
        return out
    check(rt, rng, "nn.CMulTable()", xs, prod, dtype)
    check(rt, rng, "nn.CSubTable()", xs[:2], lambda x, m, p: x[0] - x[1], dtype)
    den = [xs[0], (np.sign(xs[1]) * (0.5 + np.abs(xs[1]))).astype(dtype)]  # away from zero
    check(rt, rng, "nn.CDivTable()", den, lambda x, m, p: x[0] / x[1], dtype)
    check(rt, rng, "nn.CMaxTable()", xs, lambda x, m, p: torch.stack(x).amax(0), dtype)
    check(rt, rng, "nn.CMinTable()", xs, lambda x, m, p: torch.stack(x).amin(0), dtype)
    v = noncontig(rng, s, dtype)
    check(rt, rng, "nn.CAddTensorTable()", [v, xs], lambda x, m, p: [t + x[0] for t in x[1]], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_zip_tables(rt, rng, dtype):
    s = dims(rng, 2)
    t = lambda: noncontig(rng, s, dtype)  # noqa: E731
    k = int(rng.integers(1, 4))
    x = [[t() for _ in range(k)], [t() for _ in range(k)]]
    check(rt, rng, "nn.ZipTable()", x, lambda x, m, p: [[a, b] for a, b in zip(*x)], dtype)
    y = [t(), [t() for _ in range(k)]]
    check(rt, rng, "nn.ZipTableOneToMany()", y, lambda x, m, p: [[x[0], b] for b in x[1]], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_mixture_table(rt, rng, dtype):
    b, n, f = dims(rng, 3, 1, 4)
    gater = noncontig(rng, (b, n), dtype)
    experts = [noncontig(rng, (b, f), dtype) for _ in range(n)]
    mix = lambda g, e: sum(g[:, i:i + 1] * e[i] for i in range(len(e)))  # noqa: E731
    check(rt, rng, "nn.MixtureTable()", [gater, experts], lambda x, m, p: mix(x[0], x[1]), dtype)
    # experts as one tensor, experts along dim 2
    e3 = noncontig(rng, (b, n, f, 2), dtype)
    check(rt, rng, "nn.MixtureTable()", [gater, e3],
          lambda x, m, p: (x[0][:, :, None, None] * x[1]).sum(1), dtype)
    # no batch
    g1 = noncontig(rng, (n,), dtype)
    check(rt, rng, "nn.MixtureTable()", [g1, [noncontig(rng, (f,), dtype) for _ in range(n)]],
          lambda x, m, p: sum(x[0][i] * x[1][i] for i in range(n)), dtype)
    check(rt, rng, "nn.MixtureTable()", [g1, noncontig(rng, (n, f), dtype)],
          lambda x, m, p: (x[0][:, None] * x[1]).sum(0), dtype)


def test_criterion_table(rt, rng):
    """The output is the criterion's loss; gradInput = {dloss/dinput} (gradOutput is ignored, as Torch7)."""
    helpers(rt)
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    x, t = rng.standard_normal(dims(rng, 2)), None
    t = rng.standard_normal(x.shape)
    run = rt.eval("""function(x, t)
        local m = nn.CriterionTable(nn.MSECriterion())
        local loss = m:forward({x, t})
        local gi = m:backward({x, t}, 123.0)
        return loss, #gi, gi[1]:clone()
    end""")
    loss, n, gi = rt.call(run, rt.from_numpy(x), rt.from_numpy(t))
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    ref = ((xt - torch.from_numpy(t)) ** 2).mean()
    ref.backward()
    assert abs(loss - ref.item()) <= 1e-12 * abs(ref.item())
    assert n == 1
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= 1e-12


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_index_masked_select(rt, rng, dtype):
    a, b = dims(rng, 2, 2, 5)
    x = noncontig(rng, (a, b), dtype)
    idx = rng.integers(1, a + 1, int(rng.integers(1, 7))).astype(np.int64)  # repeats accumulate
    check(rt, rng, "nn.Index(1)", [x, idx], lambda x, m, p: x[0].index_select(0, x[1] - 1), dtype)
    idx2 = rng.integers(1, b + 1, 3).astype(np.int64)
    check(rt, rng, "nn.Index(2)", [x, idx2], lambda x, m, p: x[0].index_select(1, x[1] - 1), dtype)
    mask = (rng.random((a, b)) < 0.5).astype(np.uint8)
    check(rt, rng, "nn.MaskedSelect()", [x, mask], lambda x, m, p: x[0][x[1].bool()], dtype)


# ---------------------------------------------------------------------------- containers

@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_map_table(rt, rng, dtype):
    i, o, n = dims(rng, 3)
    xs = [noncontig(rng, (n, i), dtype) for _ in range(int(rng.integers(1, 4)))]
    lua, leaves = linear_params("m.modules[1]")
    check(rt, rng, "nn.MapTable(nn.Linear(%d, %d))" % (i, o), xs,
          lambda x, m, p: [v @ p[0].t() + p[1] for v in x], dtype, lua, leaves(rt))
    # the clones share the parameters of the first module
    m = rt.eval("nn.MapTable(nn.Linear(3, 2))")
    rt.call(rt.eval("function(m) m:forward({torch.randn(3), torch.randn(3)}) end"), m)
    assert rt.call(rt.eval("function(m) return torch.pointer(m.modules[1].weight:storage()) == "
                           "torch.pointer(m.modules[2].weight:storage()) end"), m)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_parallel(rt, rng, dtype):
    i, n = dims(rng, 2)
    o1, o2 = dims(rng, 2)
    x = noncontig(rng, (n, 2, i), dtype)  # child k sees x[:, k]
    build = "nn.Parallel(2, 2):add(nn.Linear(%d, %d)):add(nn.Linear(%d, %d))" % (i, o1, i, o2)
    lua = "function(m) return {m.modules[1].gradWeight, m.modules[1].gradBias, m.modules[2].gradWeight, m.modules[2].gradBias} end"

    def leaves(m):
        get = rt.eval("function(m) return {m.modules[1].weight, m.modules[1].bias, m.modules[2].weight, m.modules[2].bias} end")
        ts = rt.call(get, m)
        return [torch.from_numpy(rt.to_numpy(ts[k + 1]).copy()).requires_grad_(True) for k in range(4)]
    check(rt, rng, build, x, lambda x, m, p: torch.cat([x[:, 0] @ p[0].t() + p[1], x[:, 1] @ p[2].t() + p[3]], 1),
          dtype, lua, leaves)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_bottle_decorator(rt, rng, dtype):
    i, o, a, b = dims(rng, 4)
    lua, leaves = linear_params("m.modules[1]")
    x = noncontig(rng, (a, b, 2, i), dtype)
    check(rt, rng, "nn.Bottle(nn.Linear(%d, %d))" % (i, o), x,
          lambda x, m, p: x @ p[0].t() + p[1], dtype, lua, leaves(rt))
    check(rt, rng, "nn.Bottle(nn.Linear(%d, %d))" % (i, o), noncontig(rng, (a, i), dtype),
          lambda x, m, p: x @ p[0].t() + p[1], dtype, lua, leaves(rt))
    check(rt, rng, "nn.Decorator(nn.Linear(%d, %d))" % (i, o), noncontig(rng, (a, i), dtype),
          lambda x, m, p: x @ p[0].t() + p[1], dtype, lua, leaves(rt))
    assert rt.eval("tostring(nn.Decorator(nn.Identity()))") == "nn.Decorator @ nn.Identity"


def test_container_scale(rt, rng):
    """accGradParameters(input, gradOutput, scale) scales the children's parameter gradients."""
    helpers(rt)
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    fn = rt.eval("""function(build, x)
        local m = loadstring('return ' .. build)()
        local y = m:forward(x)
        local g = torch.isTensor(y) and y:clone():normal() or {y[1]:clone():normal()}
        m:zeroGradParameters(); m:backward(x, g, 1)
        local _, gw1 = m:parameters()
        local w1 = gw1[1]:clone()
        m:zeroGradParameters(); m:updateGradInput(x, g); m:accGradParameters(x, g, 0.25)
        local _, gw = m:parameters()
        return (gw[1] - w1 * 0.25):abs():max(), w1:abs():max()
    end""")
    for build, shape in (("nn.MapTable(nn.Linear(3, 2))", None), ("nn.Parallel(1, 1):add(nn.Linear(3, 2))", (1, 3)),
                         ("nn.Bottle(nn.Linear(3, 2))", (2, 2, 3)), ("nn.Decorator(nn.Linear(3, 2))", (2, 3))):
        x = rt.table(rt.from_numpy(rng.standard_normal(3))) if shape is None else rt.from_numpy(rng.standard_normal(shape))
        diff, size = rt.call(fn, build, x)
        assert size > 0 and diff <= 1e-12 * size, build


# ---------------------------------------------------------------------------- shape modules

@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_reductions(rt, rng, dtype):
    s = dims(rng, 3, 2, 5)
    x = noncontig(rng, s, dtype)
    for d in (1, 2, 3, -1):
        k = d - 1 if d > 0 else d
        check(rt, rng, "nn.Max(%d)" % d, x, lambda x, m, p, k=k: x.amax(k), dtype)
        check(rt, rng, "nn.Min(%d)" % d, x, lambda x, m, p, k=k: x.amin(k), dtype)
        check(rt, rng, "nn.Sum(%d)" % d, x, lambda x, m, p, k=k: x.sum(k), dtype)
        check(rt, rng, "nn.Mean(%d)" % d, x, lambda x, m, p, k=k: x.mean(k), dtype)
    check(rt, rng, "nn.Sum(2, nil, true, false)", x, lambda x, m, p: x.mean(1, keepdim=True), dtype)
    check(rt, rng, "nn.Sum(1, 2)", x, lambda x, m, p: x.sum(1), dtype)  # batch of a 2D sample
    check(rt, rng, "nn.Max(1, 2)", x, lambda x, m, p: x.amax(1), dtype)
    check(rt, rng, "nn.Mean(2, 2)", x[0], lambda x, m, p: x.mean(1), dtype)
    check(rt, rng, "nn.Max(1)", x[0, 0], lambda x, m, p: x.amax(0, keepdim=True), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_narrow_select_replicate(rt, rng, dtype):
    a, b, c = dims(rng, 3, 3, 6)
    x = noncontig(rng, (a, b, c), dtype)
    off = int(rng.integers(1, b))
    ln = int(rng.integers(1, b - off + 2))
    check(rt, rng, "nn.Narrow(2, %d, %d)" % (off, ln), x, lambda x, m, p: x[:, off - 1:off - 1 + ln], dtype)
    check(rt, rng, "nn.Narrow(-2, %d, -1)" % off, x, lambda x, m, p: x[:, off - 1:], dtype)
    check(rt, rng, "nn.Narrow(3, -1, 2)", x, lambda x, m, p: x[:, :, :c - 2], dtype)
    check(rt, rng, "nn.Select(2, %d)" % off, x, lambda x, m, p: x[:, off - 1], dtype)
    check(rt, rng, "nn.Select(-1, -1)", x, lambda x, m, p: x[:, :, -1], dtype)
    n = int(rng.integers(1, 4))
    for d in (1, 2, 4):
        check(rt, rng, "nn.Replicate(%d, %d)" % (n, d), x,
              lambda x, m, p, d=d: x.unsqueeze(d - 1).expand(*x.shape[:d - 1], n, *x.shape[d - 1:]), dtype)
    check(rt, rng, "nn.Replicate(%d, 1, 2)" % n, x, lambda x, m, p: x.unsqueeze(1).expand(a, n, b, c), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_padding(rt, rng, dtype):
    a, b, c = dims(rng, 3, 2, 5)
    x = noncontig(rng, (a, b, c), dtype)
    p = int(rng.integers(1, 4))
    z = lambda *s: torch.full(s, 0.5, dtype=torch.float64 if dtype == np.float64 else torch.float32)  # noqa: E731
    check(rt, rng, "nn.Padding(2, %d, nil, 0.5)" % p, x, lambda x, m, q: torch.cat([x, z(a, p, c)], 1), dtype)
    check(rt, rng, "nn.Padding(2, -%d, nil, 0.5)" % p, x, lambda x, m, q: torch.cat([z(a, p, c), x], 1), dtype)
    # nInputDim: x is a batch of 2D samples, so dim 1 is x's dim 2
    check(rt, rng, "nn.Padding(1, -%d, 2, 0.5, 2)" % p, x,
          lambda x, m, q: torch.cat([x[:, :1], z(a, p, c), x[:, 1:]], 1), dtype)
    check(rt, rng, "nn.Padding(3, %d, nil, 0.5, 2)" % p, x,
          lambda x, m, q: torch.cat([x[:, :, :c - 1], z(a, b, p), x[:, :, c - 1:]], 2), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_squeeze_unsqueeze_transpose_collapse(rt, rng, dtype):
    a, b = dims(rng, 2, 2, 4)
    x = noncontig(rng, (a, 1, b, 1), dtype)
    check(rt, rng, "nn.Squeeze()", x, lambda x, m, p: x.reshape(a, b), dtype)
    check(rt, rng, "nn.Squeeze(2)", x, lambda x, m, p: x.reshape(a, b, 1), dtype)
    check(rt, rng, "nn.Squeeze(1, 3)", x, lambda x, m, p: x.reshape(a, b, 1), dtype)
    one = noncontig(rng, (1, 1, b), dtype)
    check(rt, rng, "nn.Squeeze(nil, 2)", one, lambda x, m, p: x.reshape(1, b), dtype)
    y = noncontig(rng, (a, b), dtype)
    for pos in (1, 2, 3):
        check(rt, rng, "nn.Unsqueeze(%d)" % pos, y, lambda x, m, p, pos=pos: x.unsqueeze(pos - 1), dtype)
    check(rt, rng, "nn.Unsqueeze(1, 1)", y, lambda x, m, p: x.unsqueeze(1), dtype)
    z = noncontig(rng, (a, b, 3, 2), dtype)
    check(rt, rng, "nn.Transpose({1, 2})", z, lambda x, m, p: x.transpose(0, 1), dtype)
    check(rt, rng, "nn.Transpose({1, 3}, {2, 4})", z, lambda x, m, p: x.transpose(0, 2).transpose(1, 3), dtype)
    check(rt, rng, "nn.Transpose({1, 2}):setNumInputDims(3)", z, lambda x, m, p: x.transpose(1, 2), dtype)
    check(rt, rng, "nn.Collapse(3)", z, lambda x, m, p: x.reshape(a, -1), dtype)
    check(rt, rng, "nn.Collapse(4)", z, lambda x, m, p: x.reshape(-1), dtype)


# ---------------------------------------------------------------------------- .t7 and type

T7_CASES = [
    ("nn.JoinTable(2, 2)", "{torch.randn(2, 3), torch.randn(2, 4)}", ["dimension", "nInputDims"]),
    ("nn.SplitTable(-1, 2)", "torch.randn(2, 3)", ["dimension", "nInputDims"]),
    ("nn.SelectTable(-2)", "{torch.randn(2), torch.randn(3)}", ["index"]),
    ("nn.NarrowTable(2, 2)", "{torch.randn(2), torch.randn(3), torch.randn(1)}", ["offset", "length"]),
    ("nn.FlattenTable()", "{torch.randn(2), {torch.randn(3)}}", []),
    ("nn.CMulTable()", "{torch.randn(2, 3), torch.randn(2, 3)}", []),
    ("nn.CSubTable()", "{torch.randn(2, 3), torch.randn(2, 3)}", []),
    ("nn.CDivTable()", "{torch.randn(2, 3), torch.rand(2, 3):add(1)}", []),
    ("nn.CMaxTable()", "{torch.randn(2, 3), torch.randn(2, 3)}", []),
    ("nn.CMinTable()", "{torch.randn(2, 3), torch.randn(2, 3)}", []),
    ("nn.CAddTensorTable()", "{torch.randn(3), {torch.randn(3), torch.randn(3)}}", []),
    ("nn.MapTable(nn.Linear(3, 2))", "{torch.randn(3), torch.randn(3)}", ["shared"]),
    ("nn.MixtureTable()", "{torch.rand(2, 3), {torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4)}}", ["dim"]),
    ("nn.ZipTable()", "{{torch.randn(2)}, {torch.randn(2)}}", []),
    ("nn.ZipTableOneToMany()", "{torch.randn(2), {torch.randn(2), torch.randn(2)}}", []),
    ("nn.Parallel(1, 1):add(nn.Linear(3, 2)):add(nn.Linear(3, 1))", "torch.randn(2, 3)",
     ["inputDimension", "outputDimension"]),
    ("nn.Bottle(nn.Linear(3, 2))", "torch.randn(2, 4, 3)", ["nInputDim", "nOutputDim", "dimDelta"]),
    ("nn.Decorator(nn.Linear(3, 2))", "torch.randn(3)", []),
    ("nn.Collapse(2)", "torch.randn(2, 3, 4)", ["nInputDim"]),
    ("nn.CriterionTable(nn.MSECriterion())", "{torch.randn(3), torch.randn(3)}", []),
    ("nn.Index(1)", "{torch.randn(4, 2), torch.LongTensor{3, 1, 3}}", ["dimension"]),
    ("nn.MaskedSelect()", "{torch.randn(2, 2), torch.ByteTensor{{1, 0}, {0, 1}}}", []),
    ("nn.Max(2, 2)", "torch.randn(2, 3, 4)", ["dimension", "nInputDims"]),
    ("nn.Min(-1)", "torch.randn(2, 3)", ["dimension"]),
    ("nn.Mean(1, nil, false)", "torch.randn(2, 3)", ["dimension", "sizeAverage", "squeeze"]),
    ("nn.Sum(1, 1, true)", "torch.randn(2, 3)", ["dimension", "nInputDims", "sizeAverage", "squeeze"]),
    ("nn.Narrow(2, 2, -1)", "torch.randn(2, 4)", ["dimension", "index", "length"]),
    ("nn.Select(1, -1)", "torch.randn(2, 4)", ["dimension", "index"]),
    ("nn.Replicate(3, 2, 1)", "torch.randn(2, 4)", ["nfeatures", "dim", "ndim"]),
    ("nn.Padding(1, -2, 1, 7, 1)", "torch.randn(2, 4)", ["dim", "pad", "nInputDim", "value", "index"]),
    ("nn.Squeeze(2, 2)", "torch.randn(2, 3, 1)", ["dim", "numInputDims"]),
    ("nn.Unsqueeze(2, 1)", "torch.randn(2, 3)", ["pos", "numInputDims"]),
    ("nn.Transpose({1, 2}, {2, 3})", "torch.randn(2, 3, 4)", []),
]


def test_t7_round_trip_and_type(rt, tmp_path):
    """torch.save/torch.load keeps each class's fields and results; :float() converts it."""
    helpers(rt)
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    H = rt.execute(LUA_HELPERS)
    fn = rt.eval("""function(H, build, input, fields, path)
        local m = loadstring('return ' .. build)()
        local x = loadstring('return ' .. input)()
        local y = H.flat(m:forward(x))
        torch.save(path, m)
        local m2 = torch.load(path)
        assert(torch.type(m2) == torch.type(m), 'class ' .. torch.type(m2))
        for f in fields:gmatch('[^,]+') do
           assert(m2[f] == m[f], 'field ' .. f .. ': ' .. tostring(m2[f]) .. ' vs ' .. tostring(m[f]))
        end
        local y2 = H.flat(m2:forward(x))
        assert(#y2 == #y, 'output count')
        for i = 1, #y do assert((y2[i] - y[i]):abs():max() == 0, 'output ' .. i) end
        -- type conversion: the float module on float inputs gives the same result
        local function float(v)
           if torch.isTensor(v) then
              return (torch.type(v) == 'torch.DoubleTensor') and v:float() or v
           end
           local t = {}; for i = 1, #v do t[i] = float(v[i]) end; return t
        end
        m2:float()
        local y3 = H.flat(m2:forward(float(x)))
        for i = 1, #y do
           local back = y3[i]:double()  -- kept in a local: see the report on GC of temporaries
           local diff = (back - y[i]):abs():max()
           assert(diff <= 1e-5 * math.max(1, y[i]:abs():max()), 'float output ' .. i .. ': ' .. diff)
        end
        m2:clearState()
        return tostring(m2)
    end""")
    for i, (build, inp, fields) in enumerate(T7_CASES):
        try:
            text = rt.call(fn, H, build, inp, ",".join(fields), str(tmp_path / ("m%d.t7" % i)))
        except Exception as e:
            raise AssertionError("%s: %s" % (build, e)) from None
        assert text.startswith(build.split("(")[0]), (build, text)


# ---------------------------------------------------------------------------- shared fixes

def test_nested_container_error_prefixes(rt):
    """Each container adds one 'In i module of T:' line, without blank lines (as Torch7)."""
    rt.require("nn")
    from pytorch_bridge import LuaError

    with pytest.raises(LuaError) as info:
        rt.execute("""local p = nn.Parallel(1, 1):add(nn.Linear(1, 1))
                      local m = nn.Sequential():add(nn.Identity()):add(nn.Concat(1):add(p))
                      m:forward(torch.randn(1, 2, 2))""")
    msg = info.value.lua_message
    assert "In 2 module of nn.Sequential:\nIn 1 module of nn.Concat:\nIn 1 module of nn.Parallel:\n" in msg, msg
    assert "size mismatch" in msg


def test_concat_table_shorter_input_table(rt):
    """A table input shorter than the previous one gives a gradInput of its own length."""
    rt.require("nn")
    n = rt.execute("""local m = nn.ConcatTable():add(nn.Identity()):add(nn.Identity())
                      local x, y = {torch.randn(5), torch.randn(5)}, {torch.randn(5)}
                      m:forward(x); m:backward(x, {x, x})
                      m:forward(y)
                      return #m:backward(y, {y, y})""")
    assert n == 1
