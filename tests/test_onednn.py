"""nn.SpatialConvolution's float32 passes through oneDNN (native/src/onednn.c), checked against PyTorch
computing in float64 and against our im2col path, on shapes drawn at random per run (odd sizes, strides, pads,
batch 1, 3-D input, non-contiguous input, strided bias); both of oneDNN's layouts (plain, blocked) and the
timed choice between them; the fallbacks (LUATORCH_ONEDNN=0, a library that is not there, double tensors);
thread counts, and DataParallelTable with 2 worker threads. nn.SpatialDilatedConvolution and
nn.VolumetricConvolution (with dilation too) the same way, against PyTorch and their unfold path."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pytorch_bridge import Runtime
from pytorch_bridge.native import ffi, lib

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# float32 against float64, errors relative to the largest magnitude: the sums here have at most a few hundred
# terms; oneDNN and im2col add them in different orders, so they differ by up to twice that
TOL_REF, TOL_PATHS = 2e-5, 4e-5
LAYOUTS = {"auto": 0, "plain": 1, "blocked": 2}

needs_onednn = pytest.mark.skipif(
    not lib.lt_onednn_loaded(),
    reason="LUATORCH_ONEDNN=0" if os.environ.get("LUATORCH_ONEDNN") == "0" else
    "oneDNN not loaded (%s): pip install onednn-cpu-gomp" % ffi.string(lib.lt_onednn_info()).decode())

RUN = """function(nin, nout, k, s, p, x, w, b, g, gw0, gb0, scale, noncontig, strided_bias)
   local m = nn.SpatialConvolution(nin, nout, k, k, s, s, p, p)
   m.weight:copy(w); m.gradWeight:copy(gw0)
   if strided_bias then  -- bias and gradBias as every other element of a longer storage
      m.bias = torch.FloatTensor(nout, 2):zero():select(2, 1):copy(b)
      m.gradBias = torch.FloatTensor(nout, 2):zero():select(2, 2):copy(gb0)
      assert(m.bias:stride(1) == 2)
   else
      m.bias:copy(b); m.gradBias:copy(gb0)
   end
   if noncontig then
      local d = x:dim()
      x = x:transpose(d - 1, d):contiguous():transpose(d - 1, d)
   end
   local y = m:forward(x):clone()
   local gi = m:backward(x, g, scale):clone()
   return y, gi, m.gradWeight:clone(), m.gradBias:clone()
end"""


@pytest.fixture
def frt():
    rt = Runtime(threads=2)
    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.FloatTensor')")
    yield rt
    lib.lt_onednn_set_enabled(1)
    lib.lt_onednn_set_layout(0)


def draw(rng):
    """(nin, nout, k, stride, pad, input shape): odd sizes, output size flooring, batch 1 or 3-D now and then."""
    k = int(rng.choice([1, 2, 3, 5]))
    s, p = int(rng.integers(1, 4)), int(rng.integers(0, k))
    h, w = int(rng.integers(k, 17)), int(rng.integers(k, 17))
    nin, nout = int(rng.integers(1, 13)), int(rng.integers(1, 13))
    kind = rng.integers(3)
    shape = (nin, h, w) if kind == 0 else (1 if kind == 1 else int(rng.integers(2, 6)), nin, h, w)
    return nin, nout, k, s, p, shape


def reference(case, x, w, b, g, gw0, gb0, scale):
    """PyTorch in float64: output, gradInput, accumulated gradWeight and gradBias."""
    nin, nout, k, s, p, shape = case
    single = len(shape) == 3
    X = torch.tensor(x[None] if single else x, dtype=torch.float64, requires_grad=True)
    W = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    B = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    Y = torch.nn.functional.conv2d(X, W, B, stride=s, padding=p)
    G = torch.tensor(g[None] if single else g, dtype=torch.float64)
    Y.backward(G)
    y, gi = Y.detach().numpy(), X.grad.numpy()
    if single:
        y, gi = y[0], gi[0]
    return y, gi, gw0 + scale * W.grad.numpy(), gb0 + scale * B.grad.numpy()


def inputs(rng, case):
    nin, nout, k, s, p, shape = case
    oh, ow = (shape[-2] + 2 * p - k) // s + 1, (shape[-1] + 2 * p - k) // s + 1
    f = np.float32
    x = rng.standard_normal(shape).astype(f)
    w = (rng.standard_normal((nout, nin, k, k)) * 0.3).astype(f)
    b = rng.standard_normal(nout).astype(f)
    g = rng.standard_normal(shape[:-3] + (nout, oh, ow)).astype(f)
    gw0, gb0 = rng.standard_normal(w.shape).astype(f), rng.standard_normal(nout).astype(f)
    return x, w, b, g, gw0, gb0, float(rng.uniform(0.25, 2.0))


def run(rt, case, data, onednn, layout=0, noncontig=False, strided_bias=False):
    """Our results with oneDNN on/off, and how many oneDNN passes ran."""
    lib.lt_onednn_set_enabled(onednn)
    lib.lt_onednn_set_layout(layout)
    nin, nout, k, s, p, shape = case
    x, w, b, g, gw0, gb0, scale = data
    before = lib.lt_onednn_calls()
    out = rt.call(rt.eval(RUN), nin, nout, k, s, p, *(rt.from_numpy(a) for a in (x, w, b, g, gw0, gb0)), scale,
                  noncontig, strided_bias)
    return [rt.to_numpy(t).copy() for t in out], lib.lt_onednn_calls() - before


def rel(a, ref):
    """Error relative to the largest reference value, or to 0.01 when all are smaller: a float32 sum that
    cancels to a small value (a gradBias over few outputs) keeps the absolute error of its O(1) terms."""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.max(np.abs(a - ref)) / max(1e-2, np.max(np.abs(ref))))


NAMES = ["output", "gradInput", "gradWeight", "gradBias"]


@needs_onednn
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_random_shapes_match_pytorch_and_im2col(frt, rng, layout):
    for i in range(8):
        case = draw(rng)
        data = inputs(rng, case)
        ref = reference(case, *data)
        noncontig, strided_bias = bool(i % 3 == 1), bool(i % 4 == 2)
        ours, calls = run(frt, case, data, 1, LAYOUTS[layout], noncontig, strided_bias)
        # a forced layout runs every pass on oneDNN; "auto" may have timed im2col faster for some
        assert calls == 3 or (layout == "auto" and 0 <= calls <= 3), "%s: oneDNN ran %d passes" % (case, calls)
        im2col, calls = run(frt, case, data, 0, noncontig=noncontig, strided_bias=strided_bias)
        assert calls == 0
        for name, a, c, r in zip(NAMES, ours, im2col, ref):
            assert a.shape == r.shape, (name, case)
            assert rel(a, r) <= TOL_REF, "oneDNN %s %s (%s): %g vs PyTorch" % (layout, name, case, rel(a, r))
            assert rel(c, r) <= TOL_REF, "im2col %s (%s): %g vs PyTorch" % (name, case, rel(c, r))
            assert rel(a, c) <= TOL_PATHS, "oneDNN %s vs im2col %s (%s): %g" % (layout, name, case, rel(a, c))


@needs_onednn
def test_resnet_shapes_both_layouts(frt, rng):
    """A few ResNet-50 layer shapes, scaled down in size, where oneDNN picks blocked kernels."""
    for nin, nout, k, s, p, size in [(3, 16, 7, 2, 3, 33), (64, 64, 3, 1, 1, 14), (64, 128, 1, 2, 0, 14),
                                     (128, 32, 1, 1, 0, 7)]:
        case = (nin, nout, k, s, p, (2, nin, size, size))
        data = inputs(rng, case)
        ref = reference(case, *data)
        for layout in ("plain", "blocked"):
            ours, calls = run(frt, case, data, 1, LAYOUTS[layout])
            assert calls == 3
            for name, a, r in zip(NAMES, ours, ref):
                assert rel(a, r) <= 5e-5, "oneDNN %s %s (%s): %g" % (layout, name, case, rel(a, r))


@needs_onednn
def test_double_stays_on_im2col(frt):
    before = lib.lt_onednn_calls()
    ran = frt.execute("""
      local m = nn.SpatialConvolution(3, 4, 3, 3):double()
      local x = torch.randn(2, 3, 7, 7):double()
      local y = m:forward(x)
      m:backward(x, y:clone():normal())
      return torch.type(y) == 'torch.DoubleTensor' and y:size(2) == 4""")
    assert ran is True and lib.lt_onednn_calls() == before


@needs_onednn
def test_primitives_per_thread_count_and_cached(frt, rng):
    if lib.lt_onednn_cache_size() > 512 - 3:
        # the cache is process-wide and holds at most 512 shapes; the tests before this one filled it
        pytest.skip("oneDNN's primitive cache is full from earlier tests in this process")
    case = (5, 7, 3, 1, 1, (3, 5, 9, 11))
    data = inputs(rng, case)
    ref = reference(case, *data)
    sizes = []
    for threads in (1, 2, 1):
        frt.execute("torch.setnumthreads(%d)" % threads)
        ours, calls = run(frt, case, data, 1, LAYOUTS["plain"])
        assert calls == 3
        sizes.append(lib.lt_onednn_cache_size())
        for name, a, r in zip(NAMES, ours, ref):
            assert rel(a, r) <= TOL_REF, (name, threads)
    # 1 thread then 2: new primitives; 1 again: the cached ones
    assert sizes[1] == sizes[0] + 3 and sizes[2] == sizes[1]


@needs_onednn
def test_data_parallel_table_two_workers(frt, rng):
    """The same net, alone and as a DataParallelTable over 2 worker threads (each with its own thread count):
    oneDNN runs in the workers and both give the same output, gradInput and gradients."""
    lib.lt_onednn_set_layout(LAYOUTS["blocked"])  # every pass on oneDNN, in the workers too
    before = lib.lt_onednn_calls()
    worst = frt.execute(r"""
      require 'cunn'
      torch.manualSeed(3)
      local net = nn.Sequential():add(nn.SpatialConvolution(3, 8, 3, 3, 1, 1, 1, 1)):add(nn.ReLU())
                    :add(nn.SpatialConvolution(8, 5, 3, 3, 2, 2, 1, 1))
      local dpt = nn.DataParallelTable(1):add(net:clone(), {1, 2}):threads(function() require 'nn' end)
      local x, go = torch.randn(6, 3, 11, 9), torch.randn(6, 5, 6, 5)
      net:zeroGradParameters(); dpt:zeroGradParameters()
      local o, gi = net:forward(x):clone(), net:backward(x, go, 0.5):clone()
      local o2, gi2 = dpt:forward(x), dpt:backward(x, go, 0.5)
      local worst = math.max((o - o2):abs():max() / o:abs():max(), (gi - gi2):abs():max() / gi:abs():max())
      local _, g = net:parameters()
      local _, g2 = dpt:parameters()
      for j = 1, #g do worst = math.max(worst, (g[j] - g2[j]):abs():max() / g[j]:abs():max()) end
      dpt.impl:close()
      return worst""")
    assert worst <= TOL_PATHS
    # the single net's 2 convolutions x 3 passes, and the same again in each of the 2 workers
    assert lib.lt_onednn_calls() - before >= 18


def th(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-m", "run.cli", "th", "-e", code], capture_output=True, text=True,
                          cwd=ROOT, env=e, timeout=120)


CONV_IN_LUA = """require 'nn'
torch.setdefaulttensortype('torch.FloatTensor')
torch.manualSeed(1)
torch.C.lt_onednn_set_layout(1)  -- oneDNN for every pass (the timed choice may keep im2col for some)
local m = nn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)
local x = torch.randn(2, 3, 6, 6)
local y = m:forward(x)
m:backward(x, y:clone():fill(1))
print(torch.C.lt_onednn_loaded(), tonumber(torch.C.lt_onednn_calls()), string.format('%.6f', y:sum()))"""


@needs_onednn
def test_fallbacks_in_a_real_process():
    """oneDNN on, LUATORCH_ONEDNN=0, and LUATORCH_ONEDNN_LIB naming no library: the same results; oneDNN runs
    only in the first; the missing library is one line on stderr."""
    on = th(CONV_IN_LUA)
    off = th(CONV_IN_LUA, LUATORCH_ONEDNN="0")
    missing = th(CONV_IN_LUA, LUATORCH_ONEDNN_LIB=os.path.join(ROOT, "no-such-dir", "libdnnl.so.3"))
    for r in (on, off, missing):
        assert r.returncode == 0, r.stderr
    (l_on, c_on, s_on), (l_off, c_off, s_off), (l_m, c_m, s_m) = (r.stdout.split() for r in (on, off, missing))
    assert (l_on, c_on) == ("1", "3") and (l_off, c_off) == ("0", "0") and (l_m, c_m) == ("0", "0")
    assert abs(float(s_on) - float(s_off)) < 1e-3 and s_off == s_m
    assert off.stderr == ""
    lines = missing.stderr.splitlines()
    assert len(lines) == 1 and "LUATORCH_ONEDNN_LIB" in lines[0] and "no-such-dir" in lines[0] and "im2col" in lines[0]


# ---- nn.SpatialDilatedConvolution: the same oneDNN path with oneDNN's dilates (Torch7's dilation - 1) ----

RUN_DILATED = """function(nin, nout, kw, kh, sw, sh, pw, ph, lw, lh, x, w, b, g, gw0, gb0, scale, noncontig)
   local m = nn.SpatialDilatedConvolution(nin, nout, kw, kh, sw, sh, pw, ph, lw, lh)
   m.weight:copy(w); m.gradWeight:copy(gw0); m.bias:copy(b); m.gradBias:copy(gb0)
   if noncontig then
      local d = x:dim()
      x = x:transpose(d - 1, d):contiguous():transpose(d - 1, d)  -- still contiguous when H or W is 1
   end
   local y = m:forward(x):clone()
   local gi = m:backward(x, g, scale):clone()
   return y, gi, m.gradWeight:clone(), m.gradBias:clone()
end"""


def draw_dilated(rng):
    """((kh, kw), (sh, sw), (ph, pw), (dilh, dilw), nin, nout, input shape): each side drawn apart, output size
    flooring, batch 1 or 3-D now and then."""
    k = tuple(int(rng.choice([1, 2, 3, 5])) for _ in range(2))
    d = tuple(int(rng.integers(1, 4)) for _ in range(2))
    s = tuple(int(rng.integers(1, 4)) for _ in range(2))
    p = tuple(int(rng.integers(0, kk + 1)) for kk in k)
    hw = tuple(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]) + int(rng.integers(0, 12)) for i in range(2))
    nin, nout = int(rng.integers(1, 13)), int(rng.integers(1, 13))
    kind = rng.integers(3)
    shape = (nin,) + hw if kind == 0 else (1 if kind == 1 else int(rng.integers(2, 6)), nin) + hw
    return k, s, p, d, nin, nout, shape


def dilated_inputs(rng, case):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), nin, nout, shape = case
    oh = (shape[-2] + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    ow = (shape[-1] + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    f = np.float32
    x = rng.standard_normal(shape).astype(f)
    w = (rng.standard_normal((nout, nin, kh, kw)) * 0.3).astype(f)
    b = rng.standard_normal(nout).astype(f)
    g = rng.standard_normal(shape[:-3] + (nout, oh, ow)).astype(f)
    gw0, gb0 = rng.standard_normal(w.shape).astype(f), rng.standard_normal(nout).astype(f)
    return x, w, b, g, gw0, gb0, float(rng.uniform(0.25, 2.0))


def dilated_reference(case, x, w, b, g, gw0, gb0, scale):
    k, s, p, d, nin, nout, shape = case
    single = len(shape) == 3
    X = torch.tensor(x[None] if single else x, dtype=torch.float64, requires_grad=True)
    W = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    B = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    Y = torch.nn.functional.conv2d(X, W, B, stride=s, padding=p, dilation=d)
    Y.backward(torch.tensor(g[None] if single else g, dtype=torch.float64))
    y, gi = Y.detach().numpy(), X.grad.numpy()
    if single:
        y, gi = y[0], gi[0]
    return y, gi, gw0 + scale * W.grad.numpy(), gb0 + scale * B.grad.numpy()


def run_dilated(rt, case, data, onednn, layout=0, noncontig=False):
    lib.lt_onednn_set_enabled(onednn)
    lib.lt_onednn_set_layout(layout)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), nin, nout, shape = case
    x, w, b, g, gw0, gb0, scale = data
    before = lib.lt_onednn_calls()
    out = rt.call(rt.eval(RUN_DILATED), nin, nout, kw, kh, sw, sh, pw, ph, dw, dh,
                  *(rt.from_numpy(a) for a in (x, w, b, g, gw0, gb0)), scale, noncontig)
    return [rt.to_numpy(t).copy() for t in out], lib.lt_onednn_calls() - before


@needs_onednn
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_dilated_random_shapes_match_pytorch_and_unfold(frt, rng, layout):
    for i in range(8):
        case = draw_dilated(rng)
        data = dilated_inputs(rng, case)
        ref = dilated_reference(case, *data)
        noncontig = bool(i % 3 == 1)
        ours, calls = run_dilated(frt, case, data, 1, LAYOUTS[layout], noncontig)
        assert calls == 3 or (layout == "auto" and 0 <= calls <= 3), "%s: oneDNN ran %d passes" % (case, calls)
        unfold, calls = run_dilated(frt, case, data, 0, noncontig=noncontig)
        assert calls == 0
        for name, a, c, r in zip(NAMES, ours, unfold, ref):
            assert a.shape == r.shape, (name, case)
            assert rel(a, r) <= TOL_REF, "oneDNN %s %s (%s): %g vs PyTorch" % (layout, name, case, rel(a, r))
            assert rel(c, r) <= TOL_REF, "unfold %s (%s): %g vs PyTorch" % (name, case, rel(c, r))
            assert rel(a, c) <= TOL_PATHS, "oneDNN %s vs unfold %s (%s): %g" % (layout, name, case, rel(a, c))


@needs_onednn
def test_dilated_bench_shape_both_layouts(frt, rng):
    """The bench's 3x3 d2 64->64 layer, smaller: oneDNN runs every pass in either layout, and the dilated key does
    not collide with a plain convolution of the same kernel (dilation 1 is its own cache entry)."""
    case = ((3, 3), (1, 1), (2, 2), (2, 2), 64, 64, (2, 64, 15, 15))
    data = dilated_inputs(rng, case)
    ref = dilated_reference(case, *data)
    for layout in ("plain", "blocked"):
        ours, calls = run_dilated(frt, case, data, 1, LAYOUTS[layout])
        assert calls == 3
        for name, a, r in zip(NAMES, ours, ref):
            assert rel(a, r) <= 5e-5, "oneDNN %s %s: %g" % (layout, name, rel(a, r))


@needs_onednn
def test_dilated_double_stays_on_unfold(frt):
    before = lib.lt_onednn_calls()
    ran = frt.execute("""
      local m = nn.SpatialDilatedConvolution(3, 4, 3, 3, 1, 1, 2, 2, 2, 2):double()
      local x = torch.randn(2, 3, 9, 9):double()
      local y = m:forward(x)
      m:backward(x, y:clone():normal())
      return torch.type(y) == 'torch.DoubleTensor' and y:size(2) == 4""")
    assert ran is True and lib.lt_onednn_calls() == before


# ---- nn.VolumetricConvolution: the same path in 5-D (NCDHW data, OIDHW weights) ----

RUN_VOLUMETRIC = """function(nin, nout, k, s, p, l, x, w, b, g, gw0, gb0, scale, noncontig)
   local m = nn.VolumetricConvolution(nin, nout, k[1], k[3], k[2], s[1], s[3], s[2], p[1], p[3], p[2])
   if l[1] ~= 1 or l[2] ~= 1 or l[3] ~= 1 then  -- dilation: the module's updateOutput passes it through
      m = nn.VolumetricDilatedConvolution(nin, nout, k[1], k[3], k[2], s[1], s[3], s[2], p[1], p[3], p[2],
                                          l[1], l[3], l[2])
   end
   m.weight:copy(w); m.gradWeight:copy(gw0); m.bias:copy(b); m.gradBias:copy(gb0)
   if noncontig then
      local d = x:dim()
      x = x:transpose(d - 1, d):contiguous():transpose(d - 1, d)  -- still contiguous when H or W is 1
   end
   local y = m:forward(x):clone()
   local gi = m:backward(x, g, scale):clone()
   return y, gi, m.gradWeight:clone(), m.gradBias:clone()
end"""


def draw_volumetric(rng):
    """(k, s, p, l, nin, nout, input shape), each per (T, H, W) and drawn apart; batch 1 or 4-D now and then."""
    k = tuple(int(rng.choice([1, 2, 3])) for _ in range(3))
    l = tuple(int(rng.choice([1, 1, 2])) for _ in range(3))
    s = tuple(int(rng.integers(1, 3)) for _ in range(3))
    p = tuple(int(rng.integers(0, kk + 1)) for kk in k)
    sp = tuple(max(1, l[i] * (k[i] - 1) + 1 - 2 * p[i]) + int(rng.integers(0, 6)) for i in range(3))
    nin, nout = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    kind = rng.integers(3)
    shape = (nin,) + sp if kind == 0 else (1 if kind == 1 else int(rng.integers(2, 4)), nin) + sp
    return k, s, p, l, nin, nout, shape


def volumetric_inputs(rng, case):
    k, s, p, l, nin, nout, shape = case
    o = tuple((shape[-3 + i] + 2 * p[i] - (l[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(3))
    f = np.float32
    x = rng.standard_normal(shape).astype(f)
    w = (rng.standard_normal((nout, nin) + k) * 0.3).astype(f)
    b = rng.standard_normal(nout).astype(f)
    g = rng.standard_normal(shape[:-4] + (nout,) + o).astype(f)
    gw0, gb0 = rng.standard_normal(w.shape).astype(f), rng.standard_normal(nout).astype(f)
    return x, w, b, g, gw0, gb0, float(rng.uniform(0.25, 2.0))


def volumetric_reference(case, x, w, b, g, gw0, gb0, scale):
    k, s, p, l, nin, nout, shape = case
    single = len(shape) == 4
    X = torch.tensor(x[None] if single else x, dtype=torch.float64, requires_grad=True)
    W = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    B = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    Y = torch.nn.functional.conv3d(X, W, B, stride=s, padding=p, dilation=l)
    Y.backward(torch.tensor(g[None] if single else g, dtype=torch.float64))
    y, gi = Y.detach().numpy(), X.grad.numpy()
    if single:
        y, gi = y[0], gi[0]
    return y, gi, gw0 + scale * W.grad.numpy(), gb0 + scale * B.grad.numpy()


def run_volumetric(rt, case, data, onednn, layout=0, noncontig=False):
    lib.lt_onednn_set_enabled(onednn)
    lib.lt_onednn_set_layout(layout)
    k, s, p, l, nin, nout, shape = case
    x, w, b, g, gw0, gb0, scale = data
    before = lib.lt_onednn_calls()
    lua_list = rt.eval("function(a, b, c) return {a, b, c} end")
    out = rt.call(rt.eval(RUN_VOLUMETRIC), nin, nout, *(rt.call(lua_list, *v) for v in (k, s, p, l)),
                  *(rt.from_numpy(a) for a in (x, w, b, g, gw0, gb0)), scale, noncontig)
    return [rt.to_numpy(t).copy() for t in out], lib.lt_onednn_calls() - before


@needs_onednn
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_volumetric_random_shapes_match_pytorch_and_unfold(frt, rng, layout):
    for i in range(6):
        case = draw_volumetric(rng)
        data = volumetric_inputs(rng, case)
        ref = volumetric_reference(case, *data)
        noncontig = bool(i % 3 == 1)
        ours, calls = run_volumetric(frt, case, data, 1, LAYOUTS[layout], noncontig)
        assert calls == 3 or (layout == "auto" and 0 <= calls <= 3), "%s: oneDNN ran %d passes" % (case, calls)
        unfold, calls = run_volumetric(frt, case, data, 0, noncontig=noncontig)
        assert calls == 0
        for name, a, c, r in zip(NAMES, ours, unfold, ref):
            assert a.shape == r.shape, (name, case)
            assert rel(a, r) <= TOL_REF, "oneDNN %s %s (%s): %g vs PyTorch" % (layout, name, case, rel(a, r))
            assert rel(c, r) <= TOL_REF, "unfold %s (%s): %g vs PyTorch" % (name, case, rel(c, r))
            assert rel(a, c) <= TOL_PATHS, "oneDNN %s vs unfold %s (%s): %g" % (layout, name, case, rel(a, c))


@needs_onednn
def test_volumetric_bench_shape_both_layouts(frt, rng):
    """The bench's 3x3x3 16->32 layer, smaller, in either layout."""
    case = ((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1), 16, 32, (2, 16, 5, 9, 9))
    data = volumetric_inputs(rng, case)
    ref = volumetric_reference(case, *data)
    for layout in ("plain", "blocked"):
        ours, calls = run_volumetric(frt, case, data, 1, LAYOUTS[layout])
        assert calls == 3
        for name, a, r in zip(NAMES, ours, ref):
            assert rel(a, r) <= 5e-5, "oneDNN %s %s: %g" % (layout, name, rel(a, r))


@needs_onednn
def test_volumetric_double_stays_on_unfold(frt):
    before = lib.lt_onednn_calls()
    ran = frt.execute("""
      local m = nn.VolumetricConvolution(3, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1):double()
      local x = torch.randn(2, 3, 5, 6, 7):double()
      local y = m:forward(x)
      m:backward(x, y:clone():normal())
      return torch.type(y) == 'torch.DoubleTensor' and y:size(2) == 4""")
    assert ran is True and lib.lt_onednn_calls() == before
