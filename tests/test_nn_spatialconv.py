"""nn spatial convolutions (family spatialconv) against PyTorch CPU.

For each class, on a configuration drawn at random per run (odd sizes, strides, pads, dilations,
3-D input, batch 1, non-contiguous input): output, gradInput and every parameter gradient
(accumulated with a random `scale`) equal PyTorch's in float64 (and float32 on one draw); a .t7
round trip keeps fields and results."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOL = {np.float64: 1e-10, np.float32: 2e-5}
TTYPE = {np.float64: "torch.DoubleTensor", np.float32: "torch.FloatTensor"}

RUN = """function(m, x, g, scale, noncontig)
   if noncontig then
      local d = x:dim()
      x = x:transpose(d - 1, d):contiguous():transpose(d - 1, d)
      assert(x:size(d) == 1 or x:size(d - 1) == 1 or not x:isContiguous())
   end
   m:zeroGradParameters()
   local y = m:forward(x):clone()
   local gi = m:backward(x, g, scale):clone()
   return y, gi, m.gradWeight:clone(), m.gradBias and m.gradBias:clone() or nil
end"""


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(1e-30, np.max(np.abs(b)))) if b.size else 0.0


def field(rt, m, name):
    v = rt.call(rt.eval("function(m, k) return m[k] end"), m, name)
    return rt.to_numpy(v).copy() if v is not None else None


def batch_shape(rng, c, h, w):
    """3-D, batch 1 or a small batch."""
    kind = rng.integers(3)
    return (c, h, w) if kind == 0 else (1 if kind == 1 else int(rng.integers(2, 4)), c, h, w)


def run_and_compare(rt, rng, build, in_shape, dtype, reference):
    """Build the Lua module, run it forward/backward; `reference(xt, weight, bias)` gives PyTorch's output,
    in float64 on the same values for a float32 run too (PyTorch's own float32 sums are no oracle for a bias
    gradient that cancels to 1e-5: they were off by 5e-3 of it)."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('%s')" % TTYPE[dtype])
    rt.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    m = rt.eval(build)
    weight, bias = field(rt, m, "weight"), field(rt, m, "bias")
    x = rng.standard_normal(in_shape).astype(dtype)
    exact = lambda a: torch.from_numpy(a.astype(np.float64))
    wt = exact(weight).requires_grad_(True)
    bt = exact(bias).requires_grad_(True) if bias is not None else None
    single = len(in_shape) == 3
    xt = exact(x).requires_grad_(True)
    y_ref = reference(xt[None] if single else xt, wt, bt)
    if single:
        y_ref = y_ref[0]
    g = rng.standard_normal(tuple(y_ref.shape)).astype(dtype)
    y_ref.backward(exact(g))
    scale = float(rng.uniform(0.3, 2.0))
    noncontig = bool(rng.integers(2))
    y, gi, gw, gb = rt.call(rt.eval(RUN), m, rt.from_numpy(x), rt.from_numpy(g), scale, noncontig)
    tol = TOL[dtype]
    assert rel_err(rt.to_numpy(y), y_ref.detach().numpy()) <= tol, "output of " + build
    assert rel_err(rt.to_numpy(gi), xt.grad.numpy()) <= tol, "gradInput of " + build
    assert rel_err(rt.to_numpy(gw).reshape(wt.shape), scale * wt.grad.numpy()) <= tol, "gradWeight of " + build
    if bt is not None:
        assert rel_err(rt.to_numpy(gb).reshape(bt.shape), scale * bt.grad.numpy()) <= tol, "gradBias of " + build
    return m


# ---- one configuration generator per class: (Lua constructor, input shape, PyTorch reference)

def full_conv(rng):
    nin, nout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    padw, padh = int(rng.integers(0, kw)), int(rng.integers(0, kh))
    adjw, adjh = int(rng.integers(0, dw)), int(rng.integers(0, dh))
    h, w = int(rng.integers(2, 7)), int(rng.integers(2, 7))
    if min((h - 1) * dh - 2 * padh + kh + adjh, (w - 1) * dw - 2 * padw + kw + adjw) < 1:
        return full_conv(rng)  # an empty output: draw again
    nobias = rng.integers(4) == 0
    build = "nn.SpatialFullConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d)%s" % (
        nin, nout, kw, kh, dw, dh, padw, padh, adjw, adjh, ":noBias()" if nobias else "")

    def ref(x, wt, bt):
        return F.conv_transpose2d(x, wt, bt, (dh, dw), (padh, padw), (adjh, adjw))
    return build, batch_shape(rng, nin, h, w), ref


def dilated_conv(rng):
    nin, nout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    padw, padh = (int(v) for v in rng.integers(0, 3, 2))
    dilw, dilh = (int(v) for v in rng.integers(1, 4, 2))
    h = int(rng.integers(dilh * (kh - 1) + 1, 10))
    w = int(rng.integers(dilw * (kw - 1) + 1, 10))
    build = "nn.SpatialDilatedConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
        nin, nout, kw, kh, dw, dh, padw, padh, dilw, dilh)

    def ref(x, wt, bt):
        return F.conv2d(x, wt, bt, (dh, dw), (padh, padw), (dilh, dilw))
    return build, batch_shape(rng, nin, h, w), ref


def conv_mm(rng):
    nin, nout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    padw, padh = (int(v) for v in rng.integers(0, 3, 2))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    build = "nn.SpatialConvolutionMM(%d, %d, %d, %d, %d, %d, %d, %d)" % (nin, nout, kw, kh, dw, dh, padw, padh)

    def ref(x, wt, bt):
        return F.conv2d(x, wt.view(nout, nin, kh, kw), bt, (dh, dw), (padh, padw))
    return build, batch_shape(rng, nin, h, w), ref


def subsampling(rng):
    c = int(rng.integers(1, 5))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    build = "nn.SpatialSubSampling(%d, %d, %d, %d, %d)" % (c, kw, kh, dw, dh)

    def ref(x, wt, bt):
        return F.conv2d(x, wt.view(c, 1, 1, 1).expand(c, 1, kh, kw), bt, (dh, dw), groups=c)
    return build, batch_shape(rng, c, h, w), ref


def random_table(rng, nin, nout):
    """A connection table with every output plane reached, some input planes maybe unused."""
    rows = [(int(rng.integers(1, nin + 1)), o) for o in range(1, nout + 1)]
    rows += [(int(rng.integers(1, nin + 1)), int(rng.integers(1, nout + 1))) for _ in range(int(rng.integers(0, 5)))]
    rows.append((nin, int(rng.integers(1, nout + 1))))
    return rows


def dense(rows, wt, nin, nout, transposed):
    """The dense (nOut, nIn, kH, kW) (or (nIn, nOut, ...) when transposed) weight of a connection table."""
    shape = (nin, nout) if transposed else (nout, nin)
    planes = [[None] * shape[1] for _ in range(shape[0])]
    zero = torch.zeros_like(wt[0])
    for k, (i, o) in enumerate(rows):
        a, b = (i - 1, o - 1) if transposed else (o - 1, i - 1)
        planes[a][b] = wt[k] if planes[a][b] is None else planes[a][b] + wt[k]
    return torch.stack([torch.stack([p if p is not None else zero for p in row]) for row in planes])


def table_lua(rows):
    return "torch.Tensor({%s})" % ", ".join("{%d, %d}" % r for r in rows)


def conv_map(rng):
    nin, nout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    rows = random_table(rng, nin, nout)
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    build = "nn.SpatialConvolutionMap(%s, %d, %d, %d, %d)" % (table_lua(rows), kw, kh, dw, dh)

    def ref(x, wt, bt):
        return F.conv2d(x, dense(rows, wt, nin, nout, False), bt, (dh, dw))
    return build, batch_shape(rng, nin, h, w), ref


def full_conv_map(rng):
    nin, nout = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    rows = random_table(rng, nin, nout)
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    build = "nn.SpatialFullConvolutionMap(%s, %d, %d, %d, %d)" % (table_lua(rows), kw, kh, dw, dh)

    def ref(x, wt, bt):
        return F.conv_transpose2d(x, dense(rows, wt, nin, nout, True), bt, (dh, dw))
    return build, batch_shape(rng, nin, h, w), ref


def depthwise(rng):
    nin, mult = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    padw, padh = (int(v) for v in rng.integers(0, 3, 2))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    nobias = rng.integers(4) == 0
    build = "nn.SpatialDepthWiseConvolution(%d, %d, %d, %d, %d, %d, %d, %d)%s" % (
        nin, mult, kw, kh, dw, dh, padw, padh, ":noBias()" if nobias else "")

    def ref(x, wt, bt):
        # output plane i*mult + m is input plane i through kernel [m][i]
        wg = wt.view(mult, nin, kh, kw).permute(1, 0, 2, 3).reshape(nin * mult, 1, kh, kw)
        return F.conv2d(x, wg, bt.t().reshape(-1) if bt is not None else None, (dh, dw), (padh, padw), groups=nin)
    return build, batch_shape(rng, nin, h, w), ref


def local_conv(rng):
    nin, nout = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kw, kh, dw, dh = (int(v) for v in rng.integers(1, 4, 4))
    padw, padh = int(rng.integers(0, kw)), int(rng.integers(0, kh))
    h, w = int(rng.integers(kh, 8)), int(rng.integers(kw, 8))
    oh, ow = (h + 2 * padh - kh) // dh + 1, (w + 2 * padw - kw) // dw + 1
    build = "nn.SpatialConvolutionLocal(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
        nin, nout, w, h, kw, kh, dw, dh, padw, padh)

    def ref(x, wt, bt):
        cols = F.unfold(x, (kh, kw), padding=(padh, padw), stride=(dh, dw))  # N x nIn*kH*kW x oH*oW
        y = torch.einsum("pok,nkp->nop", wt.reshape(oh * ow, nout, -1), cols) + bt.reshape(nout, -1)
        return y.reshape(x.shape[0], nout, oh, ow)
    return build, batch_shape(rng, nin, h, w), ref


CASES = {"SpatialFullConvolution": full_conv, "SpatialDilatedConvolution": dilated_conv,
         "SpatialConvolutionMM": conv_mm, "SpatialSubSampling": subsampling,
         "SpatialConvolutionMap": conv_map, "SpatialFullConvolutionMap": full_conv_map,
         "SpatialDepthWiseConvolution": depthwise, "SpatialConvolutionLocal": local_conv}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytorch(rt, rng, name):
    for dtype in (np.float64, np.float64, np.float64, np.float32):
        build, shape, ref = CASES[name](rng)
        run_and_compare(rt, rng, build, shape, dtype, ref)


@pytest.mark.parametrize("name", sorted(CASES))
def test_t7_round_trip(rt, rng, tmp_path, name):
    build, shape, _ = CASES[name](rng)
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    x = rt.from_numpy(rng.standard_normal(shape))
    path = str(tmp_path / "m.t7")
    same = rt.eval("""function(build, x, path)
        local m = loadstring('return ' .. build)()
        local y = m:forward(x):clone()
        torch.save(path, m)
        local m2 = torch.load(path)
        assert(torch.type(m2) == torch.type(m), torch.type(m2))
        for k, v in pairs(m) do
           if type(v) == 'number' or type(v) == 'string' then assert(m2[k] == v, k) end
        end
        assert(tostring(m2) == tostring(m))
        return (m2:forward(x) - y):abs():max(), m2.weight:isSameSizeAs(m.weight)
    end""")
    diff, same_size = rt.call(same, build, x, path)
    assert diff == 0 and same_size


def test_full_convolution_target_picks_adj(rt, rng):
    """{input, target}: the output takes the target's size; the target's gradient is zero."""
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.DoubleTensor')")
    d, k, p = int(rng.integers(2, 4)), int(rng.integers(1, 4)), 0
    h, w = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    th, tw = (h - 1) * d + k + int(rng.integers(0, d)), (w - 1) * d + k + int(rng.integers(0, d))
    res = rt.call(rt.eval("""function(d, k, p, h, w, th, tw)
        local m = nn.SpatialFullConvolution(3, 2, k, k, d, d, p, p)
        local x, t = torch.randn(2, 3, h, w), torch.randn(2, 5, th, tw)
        local y = m:forward({x, t})
        local gi = m:backward({x, t}, torch.randn(y:size()))
        return y:size(3), y:size(4), gi[1]:isSameSizeAs(x), gi[2]:isSameSizeAs(t), gi[2]:abs():max()
    end"""), d, k, p, h, w, th, tw)
    assert tuple(res) == (th, tw, True, True, 0)


def test_torch7_fields_and_printing(rt):
    rt.require("nn")
    out = rt.execute("""
        local f = nn.SpatialFullConvolution(3, 4, 3, 3, 2, 2, 1, 1, 1, 1)
        assert(f.weight:dim() == 4 and f.weight:size(1) == 3 and f.weight:size(2) == 4 and f.adjW == 1)
        local d = nn.SpatialDilatedConvolution(3, 4, 3, 3, 1, 1, 2, 2, 2, 2)
        assert(torch.isTypeOf(d, 'nn.SpatialConvolution') and d.dilationH == 2)
        local mm = nn.SpatialConvolutionMM(3, 4, 5, 5)
        assert(mm.weight:dim() == 2 and mm.weight:size(2) == 75 and not torch.isTypeOf(mm, 'nn.SpatialConvolution'))
        local s = nn.SpatialSubSampling(3, 2, 2, 2, 2)
        assert(s.weight:dim() == 1 and s.weight:size(1) == 3)
        local t = nn.tables.random(6, 4, 3)
        assert(t:size(1) == 12 and t:select(2, 1):max() <= 6)
        assert(nn.tables.full(2, 3):size(1) == 6 and nn.tables.oneToOne(4)[3][2] == 3)
        local cm = nn.SpatialConvolutionMap(nn.tables.full(2, 3), 3, 3)
        assert(cm.nInputPlane == 2 and cm.nOutputPlane == 3 and cm.weight:size(1) == 6)
        cm:float(); assert(cm:forward(torch.FloatTensor(2, 5, 5):normal()):size(1) == 3)
        local ok, err = pcall(nn.SpatialFullConvolution, 3, 4, 3, 3, 1, 1, 0, 0, 1, 0)
        assert(not ok and err:find('adjW'))
        return tostring(f) .. '|' .. tostring(d) .. '|' .. tostring(mm:noBias())
    """)
    assert out == ("nn.SpatialFullConvolution(3 -> 4, 3x3, 2,2, 1,1, 1,1)|"
                   "nn.SpatialDilatedConvolution(3 -> 4, 3x3, 1,1, 2,2, 2,2)|"
                   "nn.SpatialConvolutionMM(3 -> 4, 5x5) without bias")


def test_errors_name_the_problem(rt):
    rt.require("nn")
    msg = rt.execute("""
        local m = nn.SpatialDilatedConvolution(3, 4, 3, 3, 1, 1, 0, 0, 4, 4)
        local ok, err = pcall(m.forward, m, torch.randn(3, 5, 5))
        assert(not ok)
        local ok2, err2 = pcall(function() nn.SpatialConvolutionMap(torch.Tensor({{1, 1}, {3, 1}}), 2, 2):forward(torch.randn(2, 4, 4)) end)
        assert(not ok2)
        return tostring(err) .. '|' .. tostring(err2)
    """)
    assert "Output size is too small" in msg and "planes" in msg
