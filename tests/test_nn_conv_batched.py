"""The chunked, sample-parallel paths of the unfold-based convolutions (native/src/nn_unfold.h):
SpatialDilatedConvolution, SpatialFullConvolution, VolumetricConvolution,
VolumetricDilatedConvolution, VolumetricFullConvolution.

With 2 threads, batches of 1 (samples in turn, BLAS threads), 2 and 3-5 (samples in parallel,
uneven splits), and column chunks from one output row to the whole sample, on configurations
drawn at random per run: output, gradInput, gradWeight and gradBias equal PyTorch's in float64
(float32 on one draw), with non-contiguous inputs. The column scratch stays within its chunk
budget instead of growing to a whole sample's column matrix, and the weight gradient does not
depend on how the samples were shared out between the threads."""
import numpy as np
import pytest

from test_nn_tvconv import check, ri

torch = pytest.importorskip("torch")
F = torch.nn.functional

SET_CHUNK = "function(n) return tonumber(torch.C.lt_nn_unfold_set_chunk(n)) end"


@pytest.fixture
def rt2(rt):
    rt.require("nn")
    rt.execute("torch.setnumthreads(2)")
    yield rt
    rt.call(rt.eval(SET_CHUNK), 0)


def dilated(rng):
    nin, nout, kh, kw = ri(rng, 1, 4), ri(rng, 1, 5), ri(rng, 1, 3), ri(rng, 1, 3)
    dh, dw, ph, pw, lh, lw = ri(rng, 1, 2), ri(rng, 1, 2), ri(rng, 0, 2), ri(rng, 0, 2), ri(rng, 1, 3), ri(rng, 1, 3)
    h, w = ri(rng, lh * (kh - 1) + 1, 13), ri(rng, lw * (kw - 1) + 1, 13)
    build = "nn.SpatialDilatedConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
        nin, nout, kw, kh, dw, dh, pw, ph, lw, lh)
    ref = lambda x, wt, b: F.conv2d(x, wt, b, stride=(dh, dw), padding=(ph, pw), dilation=(lh, lw))  # noqa: E731
    return build, (nin, h, w), ref


def full(rng):
    nin, nout, kh, kw = ri(rng, 1, 4), ri(rng, 1, 5), ri(rng, 1, 4), ri(rng, 1, 4)
    dh, dw = ri(rng, 1, 3), ri(rng, 1, 3)
    ph, pw = ri(rng, 0, (kh - 1) // 2), ri(rng, 0, (kw - 1) // 2)
    ah, aw = ri(rng, 0, dh - 1), ri(rng, 0, dw - 1)
    h, w = ri(rng, 1, 9), ri(rng, 1, 9)
    build = "nn.SpatialFullConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
        nin, nout, kw, kh, dw, dh, pw, ph, aw, ah)
    ref = lambda x, wt, b: F.conv_transpose2d(x, wt, b, stride=(dh, dw), padding=(ph, pw),  # noqa: E731
                                              output_padding=(ah, aw))
    return build, (nin, h, w), ref


def volumetric(rng, dilation=False):
    nin, nout = ri(rng, 1, 3), ri(rng, 1, 4)
    k = [ri(rng, 1, 3) for _ in range(3)]
    d = [ri(rng, 1, 2) for _ in range(3)]
    p = [ri(rng, 0, 1) for _ in range(3)]
    l = [ri(rng, 1, 2) if dilation else 1 for _ in range(3)]
    sp = [ri(rng, l[i] * (k[i] - 1) + 1, l[i] * (k[i] - 1) + 6) for i in range(3)]
    if dilation:
        build = "nn.VolumetricDilatedConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
            nin, nout, k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1], l[0], l[2], l[1])
    else:
        build = "nn.VolumetricConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
            nin, nout, k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1])
    ref = lambda x, wt, b: F.conv3d(x, wt, b, stride=d, padding=p, dilation=l)  # noqa: E731
    return build, (nin, *sp), ref


def volumetric_full(rng):
    nin, nout = ri(rng, 1, 3), ri(rng, 1, 4)
    k = [ri(rng, 1, 3) for _ in range(3)]
    d = [ri(rng, 1, 2) for _ in range(3)]
    p = [ri(rng, 0, (k[i] - 1) // 2) for i in range(3)]
    a = [ri(rng, 0, d[i] - 1) for i in range(3)]
    sp = [ri(rng, 1, 5) for _ in range(3)]
    build = "nn.VolumetricFullConvolution(%d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d)" % (
        nin, nout, k[0], k[2], k[1], d[0], d[2], d[1], p[0], p[2], p[1], a[0], a[2], a[1])
    ref = lambda x, wt, b: F.conv_transpose3d(x, wt, b, stride=d, padding=p, output_padding=a)  # noqa: E731
    return build, (nin, *sp), ref


CONFIGS = {"dilated": dilated, "full": full, "volumetric": volumetric,
           "volumetric_dilated": lambda rng: volumetric(rng, True), "volumetric_full": volumetric_full}


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_batches_and_chunks_match_pytorch(rt2, rng, kind):
    set_chunk = rt2.eval(SET_CHUNK)
    for batch in (1, 2, ri(rng, 3, 5)):
        # 1: one output row per chunk; a few rows (uneven last chunk); 0: the default (one chunk here).
        for chunk in (1, int(rng.integers(40, 400)), 0):
            build, shape, ref = CONFIGS[kind](rng)
            set_chunk(chunk)
            check(rt2, rng, build, (batch, *shape), ref)
            check(rt2, rng, build + ":noBias()", (batch, *shape), ref)
    build, shape, ref = CONFIGS[kind](rng)
    set_chunk(int(rng.integers(1, 200)))
    check(rt2, rng, build, (3, *shape), ref, np.float32)


def test_scratch_stays_within_the_chunk_budget(rt2):
    """A 16-plane 3x3x3 volume of 8x28x28 has 432 x 6272 columns per sample; the scratch holds chunks only."""
    set_chunk = rt2.eval(SET_CHUNK)
    size = rt2.eval("""function(n)
        torch.setdefaulttensortype('torch.FloatTensor')
        local m = nn.VolumetricConvolution(16, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1)
        local x = torch.randn(n, 16, 8, 28, 28)
        m:forward(x)
        m:backward(x, m.output:clone():normal())
        return m.finput:nElement()
    end""")
    whole = 432 * 8 * 28 * 28
    partials = 4 * 2 * 4 * 432     # a 4 x 432 weight gradient for each of at most 4 runs per thread
    for n in (1, 4):
        assert size(n) <= 2 * (1 << 18) + partials < whole
    set_chunk(432 * 28)     # one output row
    assert size(4) <= 2 * 432 * 28 + partials


def test_weight_gradient_does_not_depend_on_thread_timing(rt2, rng):
    """The batch's samples are summed in fixed runs, whichever thread takes which: bit-identical gradients."""
    res = rt2.call(rt2.eval("""function(seed)
        torch.setdefaulttensortype('torch.FloatTensor')
        torch.manualSeed(seed)
        local m = nn.SpatialFullConvolution(8, 6, 4, 4, 2, 2, 1, 1)
        local x = torch.randn(7, 8, 9, 11)
        local g = torch.randn(m:forward(x):size())
        local first
        for i = 1, 6 do
           m:zeroGradParameters()
           m:backward(x, g)
           if not first then first = m.gradWeight:clone()
           elseif not m.gradWeight:equal(first) then return false end
        end
        return true
    end"""), int(rng.integers(1 << 30)))
    assert res is True


# Size-keeping convolutions (unit strides, output as wide as the input): rows of one frame are unfolded
# and folded back in runs of several rows at once.
SAME = [
    ("nn.SpatialDilatedConvolution(3, 4, 3, 3, 1, 1, 2, 2, 2, 2)", (3, 7, 9),
     lambda x, w, b: F.conv2d(x, w, b, padding=2, dilation=2)),
    ("nn.SpatialDilatedConvolution(2, 3, 3, 5, 1, 1, 1, 2)", (2, 6, 5),
     lambda x, w, b: F.conv2d(x, w, b, padding=(2, 1))),
    ("nn.VolumetricConvolution(3, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1)", (3, 4, 6, 7),
     lambda x, w, b: F.conv3d(x, w, b, padding=1)),
    ("nn.VolumetricDilatedConvolution(2, 3, 3, 3, 3, 1, 1, 1, 2, 1, 1, 2, 1, 1)", (2, 6, 5, 4),
     lambda x, w, b: F.conv3d(x, w, b, padding=(2, 1, 1), dilation=(2, 1, 1))),
    ("nn.SpatialFullConvolution(3, 2, 3, 3, 1, 1, 1, 1)", (3, 5, 8),
     lambda x, w, b: F.conv_transpose2d(x, w, b, padding=1)),
    ("nn.VolumetricFullConvolution(2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1)", (2, 3, 5, 4),
     lambda x, w, b: F.conv_transpose3d(x, w, b, padding=1)),
]


@pytest.mark.parametrize("build,shape,ref", SAME, ids=[s[0].split("(")[0][3:] + str(i) for i, s in enumerate(SAME)])
def test_size_keeping_convolutions_match_pytorch(rt2, rng, build, shape, ref):
    set_chunk = rt2.eval(SET_CHUNK)
    for batch in (1, 3):
        for chunk in (1, int(rng.integers(20, 300)), 0):
            set_chunk(chunk)
            check(rt2, rng, build, (batch, *shape), ref)
    check(rt2, rng, build, (2, *shape), ref, np.float32)
