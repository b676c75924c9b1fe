"""cudnn.RNN and its subclasses (RNNReLU, RNNTanh, LSTM, GRU, BLSTM, BGRU) on the CPU.

The oracle is PyTorch's torch.nn.RNN / LSTM / GRU in float64: their gate orders (LSTM i, f, g, o;
GRU r, z, n), their two biases per gate and their GRU formula (the reset gate multiplies the
recurrent projection after its bias) are cuDNN's. The flat weight is cut into PyTorch's
weight_ih_l{k}{_reverse} etc. here, in Python, following cuDNN's layout (every pseudo-layer's
matrices first, then every pseudo-layer's biases), independently of the Lua code; then output,
final hidden/cell states, gradInput, the gradients of the initial states and the whole
gradWeight (accumulated with a random scale onto a random start) are compared. Configurations are
drawn per run: 1-3 layers, uni/bidirectional, batchFirst, seqLength 1, batch 1, odd sizes,
non-contiguous inputs, float and double."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}
TOL = {np.float64: 1e-10, np.float32: 2e-3}  # float: 1 - y^2 of a saturated unit keeps few digits
DTYPES = [np.float64, np.float32]
IDS = ["double", "float"]

# class -> (cuDNN mode, gates per cell, bidirectional); None: drawn per run (the base class)
CLASSES = {
    "RNNReLU": ("CUDNN_RNN_RELU", 1, False),
    "RNNTanh": ("CUDNN_RNN_TANH", 1, False),
    "LSTM": ("CUDNN_LSTM", 4, False),
    "GRU": ("CUDNN_GRU", 3, False),
    "BLSTM": ("CUDNN_LSTM", 4, True),
    "BGRU": ("CUDNN_GRU", 3, True),
}

LUA = r"""
require 'cudnn'
local R = {}
local function clonedOrNil(x) if x == nil then return nil end return x:clone() end

-- a module of class cls (the base class gets mode / bidirectional set by hand, then reset)
function R.build(cls, ttype, I, H, L, batchFirst, mode, bidir, dropout)
   torch.setdefaulttensortype(ttype)
   local m
   if cls == 'RNN' then
      m = cudnn.RNN(I, H, L, batchFirst, dropout)
      m.mode = mode
      if bidir then m.bidirectional, m.numDirections = 'CUDNN_BIDIRECTIONAL', 2 end
      m:reset()
   else
      m = cudnn[cls](I, H, L, batchFirst, dropout)
   end
   return m
end

-- forward + backward(scale) with optional initial states and state gradients; gradWeight starts at gw0
function R.run(m, x, hx, cx, g, dhy, dcy, gw0, scale)
   m.hiddenInput, m.cellInput = clonedOrNil(hx), clonedOrNil(cx)
   m.gradHiddenOutput, m.gradCellOutput = clonedOrNil(dhy), clonedOrNil(dcy)
   m.gradWeight:copy(gw0)
   local y = m:forward(x):clone()
   local hy, cy = m.hiddenOutput:clone(), m.cellOutput:clone()
   local gi = m:backward(x, g, scale):clone()
   return {y, hy, cy, gi, m.gradHiddenInput:clone(), m.gradCellInput:clone(), m.gradWeight:clone(),
           m.weight:clone()}
end

function R.pieces(m)
   local res = {}
   for _, which in ipairs {m:weights(), m:biases()} do
      local t = {}
      for p = 1, #which do for id = 1, #which[p] do t[#t + 1] = which[p][id]:clone() end end
      res[#res + 1] = t
   end
   return res
end
return R
"""


@pytest.fixture
def R(rt):
    return rt.execute(LUA)


def arrays(rt, tbl):
    return [rt.to_numpy(tbl[i + 1]).copy() for i in range(len(tbl))]


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def draw(rng, shape, dtype):
    """Normal values; about half the time a non-contiguous view."""
    if rng.random() < 0.5:
        return rng.standard_normal(tuple(shape[:-1]) + (2 * shape[-1],)).astype(dtype)[..., ::2]
    return rng.standard_normal(shape).astype(dtype)


def cudnn_layout(flat, I, H, L, D, G):
    """cuDNN's flat parameter vector cut into PyTorch's names: for each pseudo-layer
    (layer-major, forward direction first) the G input matrices (H x in) then the G recurrent
    ones (H x H); after all pseudo-layers' matrices, for each pseudo-layer G input biases then
    G recurrent biases."""
    out, off, names = {}, 0, []
    for layer in range(L):
        n_in = I if layer == 0 else H * D
        for d in range(D):
            sfx = "_l%d%s" % (layer, "_reverse" if d else "")
            names.append(sfx)
            out["weight_ih" + sfx] = flat[off:off + G * H * n_in].reshape(G * H, n_in)
            off += G * H * n_in
            out["weight_hh" + sfx] = flat[off:off + G * H * H].reshape(G * H, H)
            off += G * H * H
    for sfx in names:
        out["bias_ih" + sfx] = flat[off:off + G * H]
        out["bias_hh" + sfx] = flat[off + G * H:off + 2 * G * H]
        off += 2 * G * H
    assert off == flat.size, (off, flat.size)
    return out


def torch_module(mode, I, H, L, D):
    kw = dict(num_layers=L, bidirectional=D == 2, dtype=torch.float64)
    if mode == "CUDNN_LSTM":
        return torch.nn.LSTM(I, H, **kw)
    if mode == "CUDNN_GRU":
        return torch.nn.GRU(I, H, **kw)
    return torch.nn.RNN(I, H, nonlinearity="relu" if mode == "CUDNN_RNN_RELU" else "tanh", **kw)


def load_params(tm, params):
    with torch.no_grad():
        for name, p in tm.named_parameters():
            p.copy_(torch.from_numpy(np.asarray(params[name], np.float64)))


def reference(mode, I, H, L, D, G, flat, x, hx, cx, g, dhy, dcy, batch_first):
    """PyTorch's output, states and gradients (flat, in cuDNN's layout) for the same data."""
    tm = torch_module(mode, I, H, L, D)
    load_params(tm, cudnn_layout(flat.astype(np.float64), I, H, L, D, G))
    xt = torch.from_numpy(np.ascontiguousarray(x, np.float64)).requires_grad_(True)
    xs = xt.transpose(0, 1) if batch_first else xt
    zeros = np.zeros((L * D, xs.shape[1], H))
    h0 = torch.from_numpy(np.asarray(hx if hx is not None else zeros, np.float64)).requires_grad_(True)
    c0 = torch.from_numpy(np.asarray(cx if cx is not None else zeros, np.float64)).requires_grad_(True)
    if mode == "CUDNN_LSTM":
        y, (hy, cy) = tm(xs, (h0, c0))
    else:
        (y, hy), cy = tm(xs, h0), None
    yo = y.transpose(0, 1) if batch_first else y
    loss = (yo * torch.from_numpy(np.asarray(g, np.float64))).sum()
    if dhy is not None:
        loss = loss + (hy * torch.from_numpy(np.asarray(dhy, np.float64))).sum()
    if cy is not None and dcy is not None:
        loss = loss + (cy * torch.from_numpy(np.asarray(dcy, np.float64))).sum()
    loss.backward()
    grads = dict((n, p.grad.numpy()) for n, p in tm.named_parameters())
    # back into the flat layout: the inverse of cudnn_layout
    gflat = np.zeros(flat.size)
    for name, view in cudnn_layout(gflat, I, H, L, D, G).items():
        view[...] = grads[name]
    return dict(y=yo.detach().numpy(), hy=hy.detach().numpy(), cy=None if cy is None else cy.detach().numpy(),
                gi=xt.grad.numpy(), dhx=h0.grad.numpy(), dcx=None if cy is None else c0.grad.numpy(), gw=gflat)


def draw_config(rng, cls):
    if cls == "RNN":
        mode = ["CUDNN_RNN_RELU", "CUDNN_RNN_TANH", "CUDNN_LSTM", "CUDNN_GRU"][rng.integers(4)]
        G = {"CUDNN_RNN_RELU": 1, "CUDNN_RNN_TANH": 1, "CUDNN_LSTM": 4, "CUDNN_GRU": 3}[mode]
        bidir = bool(rng.integers(2))
    else:
        mode, G, bidir = CLASSES[cls]
    return dict(mode=mode, G=G, D=2 if bidir else 1, L=int(rng.integers(1, 4)), I=int(rng.integers(1, 8)),
                H=int(rng.integers(1, 8)), S=int(rng.choice([1, 2, 3, 5])), B=int(rng.choice([1, 2, 3])),
                bf=bool(rng.integers(2)), states=bool(rng.integers(2)))


def compare(rt, R, rng, cls, dtype, c):
    m = R.build(cls, TTYPE[dtype], c["I"], c["H"], c["L"], c["bf"], c["mode"], c["D"] == 2, 0)
    S, B, H, LD = c["S"], c["B"], c["H"], c["L"] * c["D"]
    shape = (B, S) if c["bf"] else (S, B)
    x = draw(rng, shape + (c["I"],), dtype)
    g = draw(rng, shape + (H * c["D"],), dtype)
    st = [rng.standard_normal((LD, B, H)).astype(dtype) if c["states"] else None for _ in range(4)]
    hx, cx, dhy, dcy = st
    lstm = c["mode"] == "CUDNN_LSTM"
    if not lstm:
        cx = dcy = None
    nw = int(rt.eval("function(m) return m.weight:nElement() end")(m))
    gw0 = rng.standard_normal(nw).astype(dtype)
    scale = float(rng.uniform(0.5, 2.0))
    L = lambda a: None if a is None else rt.from_numpy(a)
    got = arrays(rt, R.run(m, L(x), L(hx), L(cx), L(g), L(dhy), L(dcy), L(gw0), scale))
    y, hy, cy, gi, dhx, dcx, gw, w = got
    ref = reference(c["mode"], c["I"], H, c["L"], c["D"], c["G"], w, x, hx, cx, g, dhy, dcy, c["bf"])
    tol = TOL[dtype]
    assert rel_err(y, ref["y"]) <= tol, "output"
    assert rel_err(hy, ref["hy"]) <= tol, "hiddenOutput"
    if lstm:
        assert rel_err(cy, ref["cy"]) <= tol, "cellOutput"
    assert rel_err(gi, ref["gi"]) <= tol, "gradInput"
    assert rel_err(dhx, ref["dhx"]) <= tol, "gradHiddenInput"
    if lstm:
        assert rel_err(dcx, ref["dcx"]) <= tol, "gradCellInput"
    assert rel_err(gw - gw0, scale * ref["gw"]) <= tol * 10, "gradWeight"


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("cls", ["RNN"] + list(CLASSES))
def test_against_pytorch(rt, R, rng, cls, dtype):
    for _ in range(3):
        c = draw_config(rng, cls)
        try:
            compare(rt, R, rng, cls, dtype, c)
        except AssertionError as e:
            raise AssertionError("%s with %s" % (e, c)) from e


@pytest.mark.parametrize("cls", list(CLASSES))
def test_weight_pieces_follow_cudnn_layout(rt, R, rng, cls):
    """weights() / biases() are views of the flat weight at cuDNN's offsets, [pseudo-layer][id]."""
    mode, G, bidir = CLASSES[cls]
    D, I, H, L = 2 if bidir else 1, 3, 5, 3
    m = R.build(cls, TTYPE[np.float64], I, H, L, False, mode, bidir, 0)
    flat = rt.to_numpy(rt.eval("function(m) return m.weight end")(m)).copy()
    assert flat.size == sum(D * G * H * ((I if l == 0 else H * D) + H + 2) for l in range(L))
    got = R.pieces(m)
    mats, biases = arrays(rt, got[1]), arrays(rt, got[2])
    named = cudnn_layout(flat, I, H, L, D, G)
    want_m, want_b = [], []
    for layer in range(L):
        for d in range(D):
            sfx = "_l%d%s" % (layer, "_reverse" if d else "")
            for side in ("ih", "hh"):
                want_m += [a.reshape(-1) for a in np.split(named["weight_%s%s" % (side, sfx)], G)]
                want_b += np.split(named["bias_%s%s" % (side, sfx)], G)
    assert len(mats) == len(want_m) == L * D * 2 * G
    for a, b in zip(mats + biases, want_m + want_b):
        assert np.array_equal(a, b)
    # they are views: writing one shows in the flat weight
    set_views = rt.eval("function(m, p, id) m:weights()[1][1]:fill(7); m:biases()[p][id]:fill(9); return m.weight end")
    flat2 = rt.to_numpy(set_views(m, L * D, 2 * G)).copy()
    named2 = cudnn_layout(flat2, I, H, L, D, G)
    assert np.all(named2["weight_ih_l0"][:H] == 7)
    last = "_l%d%s" % (L - 1, "_reverse" if D == 2 else "")
    assert np.all(named2["bias_hh" + last][-H:] == 9)


def run_lua(rt, body, *args):
    return rt.call(rt.eval("function(...) %s end" % body), *args)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "BLSTM", "RNNTanh"])
def test_remember_states(rt, R, rng, cls):
    """With rememberStates a second call goes on from the first call's last states, as one run over
    the two sequences joined would (for one direction); resetStates starts again from zero."""
    mode, G, bidir = CLASSES[cls]
    D, I, H, L, B = 2 if bidir else 1, 4, 3, 2, 2
    x1, x2 = rng.standard_normal((3, B, I)), rng.standard_normal((2, B, I))
    got = run_lua(rt, """
       local cls, x1, x2 = ...
       torch.setdefaulttensortype('torch.DoubleTensor')
       local m = cudnn[cls](4, 3, 2, false, 0, true)
       m.rememberStates = true
       local y1 = m:forward(x1):clone()
       local h1, c1 = m.hiddenOutput:clone(), m.cellOutput:clone()
       local y2 = m:forward(x2):clone()
       local hin = m.hiddenInput:clone()
       m:resetStates()
       local y3 = m:forward(x2):clone()
       local fresh = cudnn[cls](4, 3, 2)
       fresh.weight:copy(m.weight)
       local y4 = fresh:forward(x2):clone()
       return {y1, y2, h1, hin, y3, y4, m.weight:clone(), c1}""", cls, rt.from_numpy(x1), rt.from_numpy(x2))
    y1, y2, h1, hin, y3, y4, w, c1 = arrays(rt, got)
    assert np.array_equal(hin, h1), "the second call starts from the first call's hiddenOutput"
    assert np.allclose(y3, y4, rtol=0, atol=1e-12), "resetStates: back to zero initial states"
    assert not np.allclose(y2, y3), "remembered states change the output"
    tm = torch_module(mode, I, H, L, D)
    load_params(tm, cudnn_layout(w, I, H, L, D, G))
    h0 = torch.from_numpy(h1)
    state = (h0, torch.from_numpy(c1)) if mode == "CUDNN_LSTM" else h0
    with torch.no_grad():
        ref2 = tm(torch.from_numpy(x2), state)[0].numpy()
        whole = tm(torch.from_numpy(np.concatenate([x1, x2])))[0].numpy()
    assert rel_err(y2, ref2) <= 1e-10
    if D == 1:
        assert rel_err(np.concatenate([y1, y2]), whole) <= 1e-10


@pytest.mark.parametrize("cls", ["RNNReLU", "RNNTanh", "LSTM", "GRU", "BLSTM", "BGRU"])
def test_t7_round_trip(rt, R, rng, cls, tmp_path):
    """Saved and loaded, the module keeps its class, fields and results; no cdata or scratch is saved."""
    x = rng.standard_normal((3, 2, 4))
    path = str(tmp_path / "rnn.t7")
    got = run_lua(rt, """
       local cls, x, path = ...
       torch.setdefaulttensortype('torch.DoubleTensor')
       local m = cudnn[cls](4, 5, 2, false, 0.25)
       m:evaluate()
       local y1 = m:forward(x):clone()
       torch.save(path, m)
       local m2 = torch.load(path)
       local bad = {}
       for k, v in pairs(m2) do
          if (type(v) == 'cdata' and not torch.isTensor(v)) or type(v) == 'function' or k == '_rnn' then
             bad[#bad + 1] = k
          end
       end
       local y2 = m2:forward(x):clone()
       local fieldsSame = m2.inputSize == 4 and m2.hiddenSize == 5 and m2.numLayers == 2 and m2.dropout == 0.25
          and m2.mode == m.mode and m2.bidirectional == m.bidirectional and m2.numDirections == m.numDirections
          and m2.batchFirst == false and m2.rememberStates == false and m2.weight:equal(m.weight)
       -- the loaded module trains too
       m2:training()
       m2:backward(x, y2)
       return {torch.type(m2), table.concat(bad, ','), fieldsSame, y1, y2, tostring(m2), m2.gradWeight:norm() > 0}
    """, cls, rt.from_numpy(x), path)
    assert got[1] == "cudnn." + cls
    assert got[2] == "", "saved fields that should not be: " + got[2]
    assert got[3] is True
    assert np.array_equal(rt.to_numpy(got[4]), rt.to_numpy(got[5]))
    assert got[6] == "cudnn." + cls  # cudnn.torch's modules print their class name only
    assert got[7] is True


def test_dropout_only_in_training(rt, R, rng):
    """dropout > 0 drops units between layers in training only; in evaluate mode the module equals
    one without dropout, and in training the backward is the gradient of what the forward computed
    (checked against central differences with the same dropout mask, by reseeding)."""
    x = rng.standard_normal((3, 2, 4))
    g = rng.standard_normal((3, 2, 6))
    got = run_lua(rt, """
       local x, g = ...
       torch.setdefaulttensortype('torch.DoubleTensor')
       local m = cudnn.LSTM(4, 6, 3, false, 0.5)
       local plain = cudnn.LSTM(4, 6, 3, false, 0)
       plain.weight:copy(m.weight)
       m:evaluate(); plain:evaluate()
       local evalSame = m:forward(x):equal(plain:forward(x))
       m:training(); plain:training()
       torch.manualSeed(11)
       local y = m:forward(x):clone()
       local trainDiffers = not y:equal(plain:forward(x))
       torch.manualSeed(12)
       local otherMask = not m:forward(x):equal(y)
       torch.manualSeed(11)
       m:forward(x)
       local gi = m:updateGradInput(x, g):clone()
       -- f(x) = sum(forward(x) * g) with the mask of seed 11
       local function f(xx) torch.manualSeed(11); return m:forward(xx):clone():cmul(g):sum() end
       local worst, eps = 0, 1e-6
       local xx = x:clone()
       for i = 1, xx:nElement() do
          local v = xx:storage()[i]
          xx:storage()[i] = v + eps; local fp = f(xx)
          xx:storage()[i] = v - eps; local fm = f(xx)
          xx:storage()[i] = v
          local num = (fp - fm) / (2 * eps)
          worst = math.max(worst, math.abs(num - gi:storage()[i]))
       end
       return {evalSame, trainDiffers, otherMask, worst, gi:abs():max()}
    """, rt.from_numpy(x), rt.from_numpy(g))
    assert got[1] is True, "evaluate mode: no dropout"
    assert got[2] is True, "training: dropout acts"
    assert got[3] is True, "a new mask per forward"
    assert got[4] <= 1e-6 * max(1.0, got[5]), got[4]


def test_errors_are_one_clear_line(rt, R):
    cases = {
        "cudnn.LSTM(4, 3, 1):forward(torch.randn(2, 4))": "input must have 3 dimensions",
        "cudnn.LSTM(4, 3, 1):forward(torch.randn(2, 3, 5))": "expected inputSize 4",
        "cudnn.GRU(4, 3, 1):forward({torch.randn(5, 4), {3, 3}})": "its batchSizes add up to 6",
        "cudnn.GRU(4, 3, 1):forward({torch.randn(5, 4), {2, 3}})": "non-increasing",
        "local m = cudnn.LSTM(4, 3, 1); m:forward(torch.randn(2, 1, 4)); m:evaluate();"
        "m:backward(torch.randn(2, 1, 4), torch.randn(2, 1, 3))": "only be called when training",
        "local m = cudnn.LSTM(4, 3, 1); m.hiddenSize = 5; m:forward(torch.randn(2, 1, 4))": "call :reset()",
        "local m = cudnn.LSTM(4, 3, 2); m.hiddenInput = torch.zeros(1, 1, 3); m:forward(torch.randn(2, 1, 4))":
            "hiddenInput should be a 2 x 1 x 3 tensor",
        "local m = cudnn.RNN(4, 3, 1); m.mode = 'CUDNN_XYZ'; m:forward(torch.randn(2, 1, 4))": "unknown mode",
        "cudnn.GRU(4, 3, 1):updateGradInput(torch.randn(2, 1, 4), torch.randn(2, 1, 3))":
            "needs a forward on the same input first",
    }
    for code, want in cases.items():
        msg = run_lua(rt, "local ok, e = pcall(function() %s end); return ok and 'no error' or tostring(e)" % code)
        assert want in msg and "\n" not in msg.strip(), (code, msg)


# cuDNN's RNN sample (RNN_example.cu) prints these sums for its fixed problem: 2 layers of
# 512 units, batch 64, 20 steps, inputs, initial states and output gradients all ones; each
# matrix filled with 1/its element count and biases with 1 (bidirectional: the whole flat
# weight with 1/its size, which fixes that size too). cudnn.torch's test_rnn.lua checks them.
# Sums in order: output, hy, cy, gradInput, dhx, dcx, gradWeight (None: no cell state).
SAMPLE_SUMS = {
    ("RNNReLU", None, False): (1.315793e+06, 1.315212e+05, None, 6.676003e+01, 6.425067e+01, None, 1.453750e+09),
    ("RNNTanh", None, False): (6.319591e+05, 6.319605e+04, None, 4.501830e+00, 4.489546e+00, None, 5.012598e+07),
    ("LSTM", None, False): (5.749536e+05, 5.774818e+04, 4.365091e+05, 3.842206e+02, 1.182566e+01, 9.323785e+03,
                            4.313461e+08),
    ("GRU", None, False): (6.358978e+05, 6.281680e+04, None, 6.296622e+00, 2.289960e+05, None, 5.397419e+07),
    ("RNN", "CUDNN_RNN_RELU", True): (1.388634e+01, 1.288997e+01, None, 1.288729e+01, 1.279004e+01, None,
                                      7.061081e+07),
    ("RNN", "CUDNN_GRU", True): (6.555183e+04, 5.830924e+00, None, 4.271801e+00, 6.555744e+04, None, 1.701796e+08),
    ("BLSTM", None, True): (3.134097e+04, 1.922855e+00, 3.845626e+00, 4.794993e+00, 2.468645e+00, 2.870925e+04,
                            1.121568e+08),
}


@pytest.mark.slow
@pytest.mark.parametrize("key", list(SAMPLE_SUMS), ids=["-".join(str(k) for k in key) for key in SAMPLE_SUMS])
def test_cudnn_sample_checksums(rt, R, key):
    cls, mode, bidir = key
    sums = run_lua(rt, """
       local cls, mode, bidir = ...
       torch.setdefaulttensortype('torch.FloatTensor')
       local B, S, H, L = 64, 20, 512, 2
       local m = cudnn[cls](H, H, L)
       if mode then m.mode = mode end
       if bidir then m.bidirectional, m.numDirections = 'CUDNN_BIDIRECTIONAL', 2 end
       m:reset()
       local D = m.numDirections
       if D == 2 then
          m.weight:fill(1 / m.weight:size(1))
       else
          for _, p in ipairs(m:weights()) do for _, w in ipairs(p) do w:fill(1 / w:size(1)) end end
          for _, p in ipairs(m:biases()) do for _, b in ipairs(p) do b:fill(1) end end
       end
       m.hiddenInput, m.cellInput = torch.ones(L * D, B, H), torch.ones(L * D, B, H)
       m.gradHiddenOutput, m.gradCellOutput = torch.ones(L * D, B, H), torch.ones(L * D, B, H)
       local x = torch.ones(S, B, H)
       local y = m:forward(x)
       m:backward(x, torch.ones(S, B, H * D))
       return {y:sum(), m.hiddenOutput:sum(), m.cellOutput:sum(), m.gradInput:sum(), m.gradHiddenInput:sum(),
               m.gradCellInput:sum(), m.gradWeight:sum()}""", cls, mode, bidir)
    for i, want in enumerate(SAMPLE_SUMS[key]):
        if want is not None:
            assert abs(sums[i + 1] - want) <= 1e-4 * abs(want), (i, sums[i + 1], want)


def test_get_parameters_and_training_step(rt, R, rng):
    """getParameters() flattens weight into a shared storage; the module keeps its results, and a small
    step along the flat gradient lowers the loss by |grad|^2 * step to first order."""
    x, target = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 3, 6))
    got = run_lua(rt, """
       local x, target = ...
       torch.setdefaulttensortype('torch.DoubleTensor')
       local net = nn.Sequential():add(cudnn.BGRU(5, 3, 2)):add(nn.Bottle(nn.Linear(6, 6)))
       local y0 = net:forward(x):clone()
       local params, grads = net:getParameters()
       local same = net:forward(x):equal(y0)
       local crit = nn.MSECriterion()
       grads:zero()
       local loss = crit:forward(net:forward(x), target)
       net:backward(x, crit:backward(net.output, target))
       local step = 1e-5
       params:add(-step, grads)
       local after = crit:forward(net:forward(x), target)
       return {same, loss - after, step * grads:dot(grads)}
    """, rt.from_numpy(x), rt.from_numpy(target))
    assert got[1] is True
    assert abs(got[2] - got[3]) <= 1e-3 * got[3], (got[2], got[3])


@pytest.mark.parametrize("cls", ["LSTM", "BGRU"])
def test_torch7_field_set_loads_and_runs(rt, R, rng, cls, tmp_path):
    """A file holding exactly the fields cudnn.torch's constructor and forward leave (CudaTensors, its
    dropout state fields, no scratch of ours) loads and runs forward and backward, as a model saved by
    Torch7 would."""
    path = str(tmp_path / "t7rnn.t7")
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    got = run_lua(rt, """
       local cls, x, path = ...
       torch.setdefaulttensortype('torch.FloatTensor')
       local ours = cudnn[cls](3, 5, 2)
       local want = ours:forward(x):clone()
       require 'cutorch'
       local C = function() return torch.CudaTensor() end
       local obj = {datatype = 'CUDNN_DATA_FLOAT', inputSize = 3, hiddenSize = 5, seqLength = 4, miniBatch = 2,
                    numLayers = 2, bidirectional = ours.bidirectional, numDirections = ours.numDirections,
                    inputMode = 'CUDNN_LINEAR_INPUT', mode = ours.mode, dropout = 0, seed = 0x01234567,
                    batchFirst = false, rememberStates = false, sync = true, inputPacked = false, train = true,
                    gradInput = C(), output = C(), weight = ours.weight:cuda(), gradWeight = C(), reserve = C(),
                    hiddenOutput = C(), cellOutput = C(), gradHiddenInput = C(), gradCellInput = C(),
                    dropoutStates = C(), dropoutStatesSize = 0}
       torch.setmetatable(obj, 'cudnn.' .. cls)
       torch.save(path, obj)
       local m = torch.load(path)
       local xc = x:cuda()
       local y = m:forward(xc)
       m:backward(xc, y:clone():fill(1))
       return {torch.type(m), torch.type(y), (y:float() - want):abs():max(), m.gradWeight:nElement() == ours.weight:nElement()}
    """, cls, rt.from_numpy(x), path)
    assert got[1] == "cudnn." + cls and got[2] == "torch.CudaTensor"
    assert got[3] == 0
    assert got[4] is True


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_sequences(rt, R, rng, batch_first):
    """cudnn.RNN:packPaddedSequence stacks each step's rows of the sequences still running;
    padPackedSequence undoes it (zero padding) and gives the lengths back."""
    lengths = sorted((int(v) for v in rng.integers(1, 6, int(rng.integers(1, 5)))), reverse=True)
    T, B = lengths[0] + int(rng.integers(0, 2)), len(lengths)
    x = rng.standard_normal((T, B, 3))
    for j, n in enumerate(lengths):
        x[n:, j] = 0
    want_rows = np.concatenate([x[t, :sum(1 for n in lengths if n > t)] for t in range(lengths[0])])
    want_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0])]
    got = run_lua(rt, """
       local x, lengths, bf = ...
       local l = {}
       for i = 1, #lengths do l[i] = lengths[i] end
       local input = bf and x:transpose(1, 2) or x
       local packed = cudnn.RNN:packPaddedSequence(input, l, bf)
       local padded, back = cudnn.RNN:padPackedSequence(packed, bf)
       if bf then padded = padded:transpose(1, 2) end
       return {packed[1], packed[2], padded:contiguous(), back}
    """, rt.from_numpy(x), rt.table(*lengths), batch_first)
    assert np.array_equal(rt.to_numpy(got[1]), want_rows)
    assert [got[2][i + 1] for i in range(len(got[2]))] == want_sizes
    assert np.array_equal(rt.to_numpy(got[3]), x[:lengths[0]])
    assert [got[4][i + 1] for i in range(len(got[4]))] == lengths
    msg = run_lua(rt, "local ok, e = pcall(function() cudnn.RNN:packPaddedSequence(torch.zeros(3, 2, 1), {1, 2}) end)"
                      " return tostring(e)")
    assert "decreasing order" in msg


def test_cuda_tensors_once_cutorch_is_loaded(rt, R):
    """As cudnn.torch's, the modules hold CudaTensors once cutorch is loaded (luatorch's run on the CPU)
    and take CudaTensor input without :cuda()."""
    got = run_lua(rt, """
       require 'cutorch'
       local m = cudnn.BLSTM(3, 4, 1)
       local x = torch.CudaTensor(2, 1, 3):fill(1)
       local y = m:forward(x)
       m:backward(x, y)
       return {torch.type(m.weight), torch.type(y), torch.type(m.gradInput), torch.type(m.hiddenOutput)}
    """)
    assert [got[i + 1] for i in range(4)] == ["torch.CudaTensor"] * 4


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("cls", ["RNNTanh", "LSTM", "GRU", "BLSTM", "BGRU"])
def test_packed_sequences_against_pytorch(rt, R, rng, cls, dtype):
    """Variable-length input packed by packPaddedSequence: each sequence runs over its own length (the
    backward direction from its own last step), its final states are taken at its own end; output,
    states and every gradient equal PyTorch's on the same PackedSequence."""
    mode, G, bidir = CLASSES[cls]
    D, I, H, L = 2 if bidir else 1, int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
    lengths = sorted((int(v) for v in rng.integers(1, 6, int(rng.integers(1, 5)))), reverse=True)
    T, B = lengths[0], len(lengths)
    sizes = [sum(1 for n in lengths if n > t) for t in range(T)]
    N = sum(sizes)
    x = rng.standard_normal((N, I)).astype(dtype)
    g = rng.standard_normal((N, H * D)).astype(dtype)
    hx, cx, dhy, dcy = [rng.standard_normal((L * D, B, H)).astype(dtype) for _ in range(4)]
    lstm = mode == "CUDNN_LSTM"
    m = R.build(cls, TTYPE[dtype], I, H, L, False, mode, bidir, 0)
    got = run_lua(rt, """
       local m, x, sizes, hx, cx, g, dhy, dcy, scale = ...
       local bs = {}
       for i = 1, #sizes do bs[i] = sizes[i] end
       local input = {x, bs}
       m.hiddenInput, m.cellInput, m.gradHiddenOutput, m.gradCellOutput = hx, cx, dhy, dcy
       m:zeroGradParameters()
       local y = m:forward(input):clone()
       local gi = m:backward(input, g, scale):clone()
       return {y, m.hiddenOutput:clone(), m.cellOutput:clone(), gi, m.gradHiddenInput:clone(),
               m.gradCellInput:clone(), m.gradWeight:clone(), m.weight:clone()}
    """, m, rt.from_numpy(x), rt.table(*sizes), rt.from_numpy(hx), rt.from_numpy(cx), rt.from_numpy(g),
        rt.from_numpy(dhy), rt.from_numpy(dcy), 0.5)
    y, hy, cy, gi, dhx, dcx, gw, w = arrays(rt, got)
    tm = torch_module(mode, I, H, L, D)
    load_params(tm, cudnn_layout(w, I, H, L, D, G))
    xt = torch.from_numpy(x.astype(np.float64)).requires_grad_(True)
    packed = torch.nn.utils.rnn.PackedSequence(xt, torch.tensor(sizes))
    h0 = torch.from_numpy(hx.astype(np.float64)).requires_grad_(True)
    c0 = torch.from_numpy(cx.astype(np.float64)).requires_grad_(True)
    if lstm:
        out, (ht, ct) = tm(packed, (h0, c0))
    else:
        (out, ht), ct = tm(packed, h0), None
    loss = (out.data * torch.from_numpy(g.astype(np.float64))).sum() + (ht * torch.from_numpy(dhy.astype(np.float64))).sum()
    if lstm:
        loss = loss + (ct * torch.from_numpy(dcy.astype(np.float64))).sum()
    loss.backward()
    tol = TOL[dtype]
    assert rel_err(y, out.data.detach().numpy()) <= tol, "output"
    assert rel_err(hy, ht.detach().numpy()) <= tol, "hiddenOutput"
    assert rel_err(gi, xt.grad.numpy()) <= tol, "gradInput"
    assert rel_err(dhx, h0.grad.numpy()) <= tol, "gradHiddenInput"
    if lstm:
        assert rel_err(cy, ct.detach().numpy()) <= tol, "cellOutput"
        assert rel_err(dcx, c0.grad.numpy()) <= tol, "gradCellInput"
    gflat = np.zeros(w.size)
    grads = dict((n, p.grad.numpy()) for n, p in tm.named_parameters())
    for name, view in cudnn_layout(gflat, I, H, L, D, G).items():
        view[...] = grads[name]
    assert rel_err(gw, 0.5 * gflat) <= tol * 10, "gradWeight"
