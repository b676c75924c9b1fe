"""nn.IndexLinear (issue 11): the sparse {keys, values} linear layer.

Inputs are drawn at random per run (odd sizes, batch 1, samples with no keys or repeated keys,
keysOffset, non-contiguous values and gradOutput, float and double) in the three input forms
(one sample, a table batch, the flat batch with sizes). The oracle is the dense problem built
in NumPy: a (batch, inputSize) matrix X holding the values at the rows the keys name, so that
output = X W + b; the gradients and the parameter steps follow from it (PyTorch autograd for
the max-normalized variant, whose formula is Torch7's documented one). Also: weight decay,
backwardUpdate, several accumulations before one updateParameters, a .t7 round trip, :float(),
clearState and the errors on bad input."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

TOL = {np.float64: 1e-10, np.float32: 2e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}
DTYPES = [np.float64, np.float32]
IDS = ["double", "float"]

LUA = """
local H = {}
function H.new(ttype, seed, nIn, nOut, keysOffset, doGradInput, normalize)
   torch.setdefaulttensortype(ttype)
   torch.manualSeed(seed)
   local m = nn.IndexLinear(nIn, nOut, doGradInput, keysOffset, nil, nil, normalize)
   m:reset()
   m.bias:uniform(-1, 1)
   return m
end
-- forward, updateGradInput and accGradParameters; the output, gradInput, and the rows
-- this accGradParameters recorded
function H.step(m, x, g, scale)
   local y = m:forward(x):clone()
   local gi = m:updateGradInput(x, g)
   m:accGradParameters(x, g, scale)
   return y, gi, m.running.gradWeight[m.running.counter - 1]:clone()
end
function H.call(m, name, ...) return m[name](m, ...) end
function H.set(m, k, v) m[k] = v end
function H.get(m, k) return m[k] end
function H.roundtrip(m, path)
   torch.save(path, m)
   return torch.load(path)
end
return H
"""


@pytest.fixture
def H(rt):
    rt.require("nn")
    return rt.execute(LUA)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))) if b.size else 0.0


def strided(rng, a):
    """a, sometimes as a non-contiguous view (every other element of a larger array)."""
    if a.size == 0 or rng.random() < 0.5:
        return a
    big = np.zeros((a.shape[0] * 2,) + a.shape[1:], a.dtype)
    big[::2] = a
    return big[::2]


def draw_samples(rng, n, n_in, key_lo, max_keys, repeats=True, empty=True):
    """n samples of (keys, values): keys in [key_lo, key_lo + n_in), some repeated within a
    sample when `repeats`, a sample with no keys now and then when `empty`."""
    out = []
    for _ in range(n):
        k = int(rng.integers(0 if empty else 1, max_keys + 1))
        if repeats:
            keys = rng.integers(0, n_in, k)
        else:
            keys = rng.permutation(n_in)[:min(k, n_in)]
        out.append((keys.astype(np.int64) + key_lo, rng.standard_normal(len(keys))))
    return out


def dense(samples, n_in, key_lo):
    x = np.zeros((len(samples), n_in))
    for s, (k, v) in enumerate(samples):
        np.add.at(x[s], k - key_lo, v)
    return x


def lua_input(rt, rng, form, samples, dtype):
    if form == "one":
        k, v = samples[0]
        return rt.table(rt.from_numpy(k.copy()), rt.from_numpy(strided(rng, v.astype(dtype))))
    if form == "table":
        return rt.table(rt.table(*[rt.from_numpy(k.copy()) for k, _ in samples]),
                        rt.table(*[rt.from_numpy(strided(rng, v.astype(dtype))) for _, v in samples]))
    keys = np.concatenate([k for k, _ in samples]).astype(np.int64)
    vals = np.concatenate([v for _, v in samples]).astype(dtype)
    sizes = np.array([len(k) for k, _ in samples], np.int64)
    return rt.table(rt.from_numpy(keys), rt.from_numpy(strided(rng, vals)), rt.from_numpy(sizes))


def grad_input_arrays(rt, gi, form, n):
    """The gradInput's (keys, values) per sample."""
    if form == "one":
        return [(rt.to_numpy(gi[1]), rt.to_numpy(gi[2]))]
    if form == "table":
        return [(rt.to_numpy(gi[1][s + 1]), rt.to_numpy(gi[2][s + 1])) for s in range(n)]
    keys, vals = rt.to_numpy(gi[1]), rt.to_numpy(gi[2])
    return [(keys[s], vals[s]) for s in range(n)]


def params(rt, m):
    return rt.to_numpy(m.weight).astype(np.float64).copy(), rt.to_numpy(m.bias).astype(np.float64).copy()


def config(rng, big):
    if big:  # enough work for the threaded loops, two column blocks
        return 3000, int(rng.integers(65, 90)), int(rng.integers(2, 5)), 400
    n_out = int(rng.choice([1, int(rng.integers(2, 12)), int(rng.integers(60, 70))]))
    return int(rng.integers(3, 40)), n_out, int(rng.integers(1, 6)), 7


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_against_dense_linear(rt, H, rng, dtype, big):
    """Output, gradInput, recorded gradWeight rows, gradBias and the updateParameters step in
    each input form equal the dense X W + b problem's."""
    n_in, n_out, batch, max_keys = config(rng, big)
    for form in ["one", "table", "flat"]:
        offset = [None, 0, 1, int(rng.integers(-5, 6))][int(rng.integers(4))]
        key_lo = 1 - (offset or 0)            # keys run over [1 - keysOffset, inputSize - keysOffset]
        m = rt.call(H.new, TTYPE[dtype], int(rng.integers(1 << 30)), n_in, n_out, offset, True)
        w0, b0 = params(rt, m)
        n = 1 if form == "one" else batch
        samples = draw_samples(rng, n, n_in, key_lo, max_keys, empty=form != "one")
        x = dense(samples, n_in, key_lo)
        g = rng.standard_normal((n, n_out))
        if form == "one":
            g_lua = rt.from_numpy(strided(rng, g[0].astype(dtype)))
        else:   # sometimes column-major: a non-contiguous gradOutput
            ga = g.astype(dtype)
            g_lua = rt.from_numpy(np.asfortranarray(ga) if rng.random() < 0.5 else ga)
        scale = float(rng.uniform(0.5, 2))
        rt.call(H.call, m, "zeroGradParameters")
        y, gi, gw = rt.call(H.step, m, lua_input(rt, rng, form, samples, dtype), g_lua, scale)
        tol = TOL[dtype]
        y = rt.to_numpy(y)
        assert rel_err(y, (x @ w0 + b0)[0] if form == "one" else x @ w0 + b0) <= tol, form
        # one gradWeight row per key, in key order: scale * value * gradOutput of its sample
        rows = [scale * v[i] * g[s] for s, (k, v) in enumerate(samples) for i in range(len(k))]
        gw = rt.to_numpy(gw)
        assert rel_err(gw, np.array(rows).reshape(-1, n_out)) <= tol if rows else gw.size == 0, form
        assert rel_err(rt.to_numpy(m.gradBias), scale * g.sum(0)) <= tol, form
        # gradInput: every key of the layer, with gradOutput W^T
        for s, (gk, gv) in enumerate(grad_input_arrays(rt, gi, form, n)):
            assert np.array_equal(gk, np.arange(n_in) + key_lo), form
            assert rel_err(gv, g[s] @ w0.T) <= tol, form
        lr = float(rng.uniform(0.1, 1))
        rt.call(H.call, m, "updateParameters", lr)
        w1, b1 = params(rt, m)
        assert rel_err(w1, w0 - lr * scale * x.T @ g) <= tol, form
        assert rel_err(b1, b0 - lr * scale * g.sum(0)) <= tol, form


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_accumulations_weight_decay_and_backward_update(rt, H, rng, dtype):
    """Several forward/backward before one updateParameters apply all their rows; weight decay
    shrinks each named row once per key, in key order; backwardUpdate steps at once."""
    n_in, n_out, batch = int(rng.integers(3, 25)), int(rng.choice([1, int(rng.integers(2, 9))])), int(rng.integers(1, 5))
    tol = TOL[dtype]
    m = rt.call(H.new, TTYPE[dtype], int(rng.integers(1 << 30)), n_in, n_out, None, False)
    w0, b0 = params(rt, m)
    rt.call(H.call, m, "zeroGradParameters")
    steps = []
    for _ in range(int(rng.integers(2, 4))):
        samples = draw_samples(rng, batch, n_in, 1, 6)
        g = rng.standard_normal((batch, n_out))
        scale = float(rng.uniform(0.5, 2))
        form = ["table", "flat"][int(rng.integers(2))]
        rt.call(H.step, m, lua_input(rt, rng, form, samples, dtype), rt.from_numpy(g.astype(dtype)), scale)
        steps.append((samples, g, scale))
    lr, wd = float(rng.uniform(0.1, 1)), float(rng.uniform(0.05, 0.3))
    rt.call(H.set, m, "weightDecay", wd)
    rt.call(H.call, m, "updateParameters", lr)
    w, b = w0.copy(), b0.copy()
    for samples, g, scale in steps:
        b -= lr * scale * g.sum(0)
        for s, (k, v) in enumerate(samples):
            for i in range(len(k)):
                r = k[i] - 1
                w[r] -= wd * w[r]
                w[r] -= lr * scale * v[i] * g[s]
    w1, b1 = params(rt, m)
    assert rel_err(w1, w) <= tol and rel_err(b1, b) <= tol
    # zeroGradParameters forgets the rows: a second updateParameters changes nothing
    rt.call(H.call, m, "zeroGradParameters")
    rt.call(H.call, m, "updateParameters", lr)
    assert np.array_equal(params(rt, m)[0], w1)
    # backwardUpdate: the same step without recording (here with weight decay per key)
    samples = draw_samples(rng, batch, n_in, 1, 6)
    g = rng.standard_normal((batch, n_out))
    xin = lua_input(rt, rng, "table", samples, dtype)
    rt.call(H.call, m, "forward", xin)
    rt.call(H.call, m, "backwardUpdate", xin, rt.from_numpy(g.astype(dtype)), lr)
    w, b = w1.copy(), b1 - lr * g.sum(0)
    for s, (k, v) in enumerate(samples):
        for i in range(len(k)):
            r = k[i] - 1
            w[r] -= wd * w[r]
            w[r] -= lr * v[i] * g[s]
    w2, b2 = params(rt, m)
    assert rel_err(w2, w) <= tol and rel_err(b2, b) <= tol
    assert rt.eval("function(m) return m.running.counter end")(m) == 1


def normalized(stats, keys, vals, train):
    """Torch7's documented max-normalization, key by key: in training the largest |value| seen
    per feature is updated first; y = x / max + feature bias, clamped to sign(x) + bias beyond max."""
    stats = stats.copy()
    out = np.empty(len(keys))
    for i, (r, v) in enumerate(zip(keys, vals)):
        if train:
            if abs(v) > stats[r, 0]:
                stats[r, 0], stats[r, 1] = abs(v), 1 / abs(v)
            stats[r, 2] = 1
        out[i] = (np.sign(v) if abs(v) > stats[r, 0] else v * stats[r, 1]) + stats[r, 3]
    return out, stats


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_max_normalize(rt, H, rng, dtype):
    """The normalize variant: statistics columns, output, recorded rows, and the steps of
    updateParameters and backwardUpdate (per-feature update scale included) against autograd."""
    n_in, n_out, batch = int(rng.integers(8, 30)), int(rng.choice([1, int(rng.integers(2, 9))])), int(rng.integers(1, 5))
    tol = TOL[dtype]
    m = rt.call(H.new, TTYPE[dtype], int(rng.integers(1 << 30)), n_in, n_out, None, False, True)
    assert rt.eval("function(m) return m.normalize end")(m) == 4
    w = rt.to_numpy(m.weight)
    assert w.shape == (n_in, n_out + 4) and not w[:, :4].any()      # reset zeroes the statistics
    # some features already seen, with a value bias and an update scale that training resets
    seen = rng.random(n_in) < 0.5
    w[:, 0] = np.where(seen, rng.uniform(0.5, 2, n_in), 0)
    w[:, 1] = np.where(seen, 1 / np.where(seen, w[:, 0], 1), 0)
    w[:, 2] = 0.5
    w[:, 3] = rng.uniform(-1, 1, n_in)
    lr = float(rng.uniform(0.1, 1))

    def run(train, distinct, update):
        if distinct:   # no key twice in the whole batch: the sequential steps are then gradient descent
            perm, per = rng.permutation(n_in).astype(np.int64) + 1, min(6, n_in // batch)
            counts = rng.integers(1, per + 1, batch)
            starts = np.cumsum(np.concatenate([[0], counts]))
            samples = [(perm[starts[s]:starts[s + 1]], 3 * rng.standard_normal(counts[s])) for s in range(batch)]
        else:          # values up to 3: beyond the statistics, clamped in evaluation
            samples = [(k, 3 * v) for k, v in draw_samples(rng, batch, n_in, 1, 6, empty=False)]
        keys = np.concatenate([k for k, _ in samples]) - 1
        vals = np.concatenate([v for _, v in samples])
        w0 = rt.to_numpy(m.weight).astype(np.float64).copy()
        b0 = rt.to_numpy(m.bias).astype(np.float64).copy()
        nv, stats = normalized(w0[:, :4], keys, vals, train)
        rt.eval("function(m, t) if t then m:training() else m:evaluate() end end")(m, train)
        rt.call(H.call, m, "zeroGradParameters")
        g = rng.standard_normal((batch, n_out))
        xin = lua_input(rt, rng, ["table", "flat"][int(rng.integers(2))], samples, dtype)
        if update == "accumulate":
            scale = float(rng.uniform(0.5, 2))
            y, _, gw = rt.call(H.step, m, xin, rt.from_numpy(g.astype(dtype)), scale)
            y = rt.to_numpy(y)
            sample_of = sample_of_keys(samples)
            expect_rows = np.concatenate([scale * g[sample_of], scale * nv[:, None] * g[sample_of]], 1)
            assert rel_err(rt.to_numpy(gw), expect_rows) <= tol
        else:
            y = rt.to_numpy(rt.call(H.call, m, "forward", xin)).copy()
        xdense = np.zeros((batch, n_in))
        np.add.at(xdense, (sample_of_keys(samples), keys), nv)
        assert rel_err(y, xdense @ w0[:, 4:] + b0) <= tol
        w1 = rt.to_numpy(m.weight).astype(np.float64)
        assert rel_err(w1[:, :3], stats[:, :3]) <= tol and np.array_equal(w1[:, 4:], w0[:, 4:])
        assert rel_err(rt.to_numpy(m.normalizedValues), nv) <= tol
        if update is None:
            return
        # the update scale (column 2) weighs each feature's step: set it per feature now
        ups = rng.uniform(0.5, 1.5, n_in)
        rt.to_numpy(m.weight)[:, 2] = ups
        wt = torch.tensor(w1[:, 4:], requires_grad=True)
        vb = torch.tensor(w1[:, 3], requires_grad=True)
        bt = torch.tensor(b0, requires_grad=True)
        n_t = torch.tensor(nv - w1[keys, 3])                 # the normalized value without the bias
        contrib = (n_t + vb[torch.tensor(keys)])[:, None] * wt[torch.tensor(keys)]
        yt = bt + torch.zeros(batch, n_out, dtype=torch.float64).index_add(0, torch.tensor(sample_of_keys(samples)), contrib)
        if update == "accumulate":
            (scale * (yt * torch.tensor(g)).sum()).backward()
            rt.call(H.call, m, "updateParameters", lr)
        else:
            (yt * torch.tensor(g)).sum().backward()
            rt.call(H.call, m, "backwardUpdate", xin, rt.from_numpy(g.astype(dtype)), lr)
        s = torch.tensor(ups)
        w2 = rt.to_numpy(m.weight).astype(np.float64)
        assert rel_err(w2[:, 4:], (wt - lr * s[:, None] * wt.grad).detach().numpy()) <= tol
        assert rel_err(w2[:, 3], (vb - lr * s * vb.grad).detach().numpy()) <= tol
        assert rel_err(rt.to_numpy(m.bias), (bt - lr * bt.grad).detach().numpy()) <= tol

    run(True, False, None)            # repeated keys: the statistics change between uses
    run(False, False, None)           # evaluation: no statistics update, values beyond max clamp
    run(True, True, "accumulate")
    run(True, True, "backwardUpdate")


def sample_of_keys(samples):
    return np.repeat(np.arange(len(samples)), [len(k) for k, _ in samples])


def test_t7_round_trip_type_and_clear_state(rt, H, rng, tmp_path):
    """A module saved mid-accumulation loads with Torch7's fields and finishes the same update;
    :float() keeps keys and sizes LongTensors; clearState drops the recorded rows."""
    n_in, n_out = int(rng.integers(5, 30)), int(rng.integers(1, 8))
    # a new module has the fields of Torch7's constructor (the .t7 layout), weight and bias zero
    fresh = rt.eval("function(a, b) local m = nn.IndexLinear(a, b); local f = {}; for k in pairs(m) do f[#f + 1] = k end; "
                    "return table.concat(f, ' '), m.weight:abs():sum() + m.bias:abs():sum() end")
    names, total = fresh(n_in, n_out)
    assert set(names.split()) == {"normalize", "weight", "bias", "inputSize", "outputSize", "gradWeight", "gradBias",
                                  "gradWeightBuffer", "valuesBuffer", "normalizedValues", "running", "sizesCache",
                                  "cumSumSizesCache", "weightDecay", "doGradInput", "offset", "output", "gradInput",
                                  "_type"}
    assert total == 0
    m = rt.call(H.new, "torch.DoubleTensor", int(rng.integers(1 << 30)), n_in, n_out, 1, True)
    samples = draw_samples(rng, 3, n_in, 0, 5)
    g = rt.from_numpy(rng.standard_normal((3, n_out)))
    xin = lua_input(rt, rng, "table", samples, np.float64)
    rt.call(H.step, m, xin, g, 0.5)
    m2 = rt.call(H.roundtrip, m, str(tmp_path / "il.t7"))
    fields = rt.eval("""function(m)
        return torch.type(m), m.offset, m.normalize, m.inputSize, m.outputSize, m.doGradInput, m.weightDecay,
               m.running.counter, torch.type(m.running.keys[1]), torch.type(m.gradWeight), m.gradWeight:nElement()
    end""")
    assert fields(m2) == fields(m) == ("nn.IndexLinear", 0, 0, n_in, n_out, True, 0, 2, "torch.LongTensor",
                                       "torch.DoubleTensor", 0)
    for k in ["weight", "bias", "gradBias"]:
        assert np.array_equal(rt.to_numpy(rt.call(H.get, m, k)), rt.to_numpy(rt.call(H.get, m2, k)))
    for mod in (m, m2):
        rt.call(H.call, mod, "updateParameters", 0.3)
    assert np.array_equal(params(rt, m)[0], params(rt, m2)[0])
    assert np.array_equal(rt.to_numpy(rt.call(H.call, m, "forward", xin)), rt.to_numpy(rt.call(H.call, m2, "forward", xin)))
    assert rt.eval("function(m) return tostring(m) end")(m) == "nn.IndexLinear"
    # :float() after a forward: parameters float, keys and sizes still LongTensors, and it runs
    conv = rt.eval("""function(m, x)
        m:forward(x)
        m:float()
        local fx = {{}, {}}
        for i = 1, #x[1] do fx[1][i] = x[1][i]; fx[2][i] = x[2][i]:float() end
        local y = m:forward(fx)
        return torch.type(m.weight), torch.type(m.keys), torch.type(m.sizes), torch.type(y), y:double()
    end""")
    wt, kt, st, yt, y = conv(m, xin)
    assert (wt, kt, st, yt) == ("torch.FloatTensor", "torch.LongTensor", "torch.LongTensor", "torch.FloatTensor")
    assert rel_err(rt.to_numpy(y), rt.to_numpy(rt.call(H.call, m2, "forward", xin))) <= 1e-5
    cleared = rt.eval("""function(m, x, g)
        m:double()
        m:zeroGradParameters()
        m:forward(x); m:backward(x, g)
        local w = m.weight:clone()
        m:clearState()
        m:updateParameters(1)
        return #m.running.keys, m.keys == nil, (m.weight - w):abs():max(), m.output:nElement()
    end""")
    assert cleared(m, xin, g) == (0, True, 0, 0)


def lua_error(rt, code):
    with pytest.raises(Exception) as e:
        rt.execute(code)
    msg = getattr(e.value, "lua_message", str(e.value))
    assert "\n" not in msg
    return msg


def test_errors(rt, H):
    rt.require("nn")
    pre = "local m = nn.IndexLinear(10, 3, true, %s, nil, nil, %s) "
    cases = [
        (pre % ("nil", "false") + "m:forward({torch.LongTensor{3, 11}, torch.Tensor{1, 2}})",
         r"key 11 is out of range: keys must be in [1, 10]"),
        (pre % ("1", "false") + "m:forward({torch.LongTensor{0, -1}, torch.Tensor{1, 2}})",
         r"key -1 is out of range: keys must be in [0, 9]"),
        (pre % ("nil", "false") + "m:forward({{torch.LongTensor{1}, torch.LongTensor{1, 2}}, {torch.Tensor{1}, torch.Tensor{2}}})",
         "sample 2 has 2 keys but 1 values"),
        (pre % ("nil", "false") + "m:forward({torch.LongTensor{1, 2}, torch.Tensor{1}, torch.LongTensor{2}})",
         "2 keys but 1 values: keys and values should be of same size"),
        (pre % ("nil", "false") + "m:forward({torch.LongTensor{1, 2, 3}, torch.Tensor{1, 2, 3}, torch.LongTensor{1, 1}})",
         "the sizes add up to 2 keys but 3 keys were given"),
        (pre % ("nil", "false") + "m:forward(torch.Tensor(3))", "input must be {keys, values}"),
        (pre % ("nil", "false") + "m:updateParameters()", "give a learning rate"),
        (pre % ("nil", "true") + "local x = {torch.LongTensor{1}, torch.Tensor{1}}; m:forward(x); m:backward(x, torch.ones(3))",
         "not implemented in max-normalize mode"),
        ("local m = nn.IndexLinear(10, 3); local x = {torch.LongTensor{1}, torch.Tensor{1}}; m:forward(x); m:backward(x, torch.ones(4))",
         "gradOutput must have 1 x 3 elements, got 4"),
    ]
    for code, expect in cases:
        assert expect in lua_error(rt, code), (code, expect)
    # a failed forward leaves the weights as they were
    keep = rt.eval("""function()
        local m = nn.IndexLinear(4, 2); m:reset()
        local w = m.weight:clone()
        pcall(m.forward, m, {torch.LongTensor{1, 9}, torch.Tensor{1, 1}})
        return (m.weight - w):abs():max()
    end""")
    assert keep() == 0
