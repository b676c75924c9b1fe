"""Torch7's conv2, xcorr2, conv3 and xcorr3 on the device (lua/cutorch/gpu_conv.lua: unfold views copied into columns,
the kernels flipped by an index for a convolution, one mm or bmm).

Like tests/test_cutorch_gpu.py these need the GPU backend and skip without it; in CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs this file on the emulated driver. Oracles: the
CPU's methods in double on the same values, and numpy's direct sums for the one-map 2-D case; every call that should
run on the device must (cutorch.hostFallbacks() stays empty)."""
import numpy as np
import pytest

from test_cutorch_gpu import fallbacks, gpu, to_device, to_host  # noqa: F401 (fixtures)

TOL = {"Cuda": 2e-5, "CudaDouble": 1e-12}

# (input shape, kernel shape) of the three forms: one map, plane by plane, summed planes
SHAPES = {2: [((9, 11), (3, 4)), ((3, 8, 7), (3, 2, 3)), ((2, 7, 9), (4, 2, 3, 2))],
          3: [((5, 6, 7), (2, 3, 2)), ((2, 4, 5, 6), (2, 3, 2, 2)), ((3, 4, 5, 4), (2, 3, 2, 3, 2))]}


def reference(rt, fn, x, k, mode):
    """The CPU's fn in double on the same values."""
    return rt.to_numpy(rt.eval("function(x, k, fn, mode) return torch[fn](x, k, mode) end")(
        rt.from_numpy(x.astype(np.float64)), rt.from_numpy(k.astype(np.float64)), fn, mode))


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
@pytest.mark.parametrize("nd", [2, 3])
def test_convolutions_in_every_form_against_the_cpu_in_double(gpu, rng, nd, name):
    """conv and xcorr, 'V' and 'F', the one-map, plane-by-plane and summed-planes forms, each as x:fn(k, mode),
    torch.fn(x, k, mode), r:fn(x, k, mode) and torch.fn(r, x, k) (r of another shape, resized; 'V' by default),
    the input a transposed view of its values: the CPU's results in double."""
    rt = gpu
    for xs, ks in SHAPES[nd]:
        x = rng.standard_normal(xs)
        k = rng.standard_normal(ks)
        # the device input: the values through a view that swaps its last two dimensions back
        xt = to_device(rt, np.ascontiguousarray(np.swapaxes(x, -1, -2)), name)
        dk = to_device(rt, k, name)
        for fn in ("conv%d" % nd, "xcorr%d" % nd):
            for mode in ("V", "F"):
                got = rt.eval("""function(xt, k, fn, mode)
                   local x = xt:transpose(xt:dim() - 1, xt:dim())
                   local r1, r2 = x.new(2, 2), x.new()
                   local same = r1[fn](r1, x, k, mode) == r1
                   torch[fn](r2, x, k)
                   return {x[fn](x, k, mode), torch[fn](x, k, mode), r1, r2, same, torch.type(r1)}
                end""")(xt, dk, fn, mode)
                want = reference(rt, fn, x, k, mode)
                valid = reference(rt, fn, x, k, "V")
                for i, w in [(1, want), (2, want), (3, want), (4, valid)]:
                    np.testing.assert_allclose(to_host(rt, got[i]), w, rtol=TOL[name], atol=TOL[name] * 10,
                                               err_msg="%s %s %s %s form %d" % (fn, mode, xs, ks, i))
                assert got[5] is True and got[6] == "torch.%sTensor" % name
    assert fallbacks(rt) == {}


def test_conv2_and_xcorr2_of_one_map_against_numpy(gpu, rng):
    """The one-map 2-D case by its definition: xcorr2 'V' sums x[i + a, j + b] k[a, b]; conv2 'F' sums
    x[i - a, j - b] k[a, b] over the positions inside x."""
    rt = gpu
    x, k = rng.standard_normal((6, 8)), rng.standard_normal((3, 2))
    got = rt.eval("function(x, k) return {torch.xcorr2(x, k), torch.conv2(x, k, 'F')} end")(
        to_device(rt, x, "CudaDouble"), to_device(rt, k, "CudaDouble"))
    xcorr = np.array([[np.sum(x[i:i + 3, j:j + 2] * k) for j in range(7)] for i in range(4)])
    full = np.zeros((8, 9))
    for a in range(3):
        for b in range(2):
            full[a:a + 6, b:b + 8] += k[a, b] * x
    np.testing.assert_allclose(to_host(rt, got[1]), xcorr, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_host(rt, got[2]), full, rtol=1e-12, atol=1e-12)
    assert fallbacks(rt) == {}


def test_convolutions_keep_the_cpus_errors(gpu):
    """A bad mode, planes that do not match, an input smaller than the kernel in 'V' mode, shapes of no form: the
    CPU's messages (they run staged)."""
    rt = gpu
    for code in ["torch.conv2(x.new(5, 5), x.new(2, 2), 'X')", "torch.xcorr2(x.new(2, 5, 5), x.new(3, 2, 2))",
                 "torch.conv2(x.new(3, 5, 5), x.new(4, 2, 2, 2))", "x.new(2, 5):xcorr2(x.new(3, 3))",
                 "torch.conv3(x.new(5, 5), x.new(2, 2))"]:
        msgs = [rt.eval("function(x) local ok, e = pcall(function() return %s end) return e end" % code)(
            rt.eval("torch.%s()" % t)) for t in ("CudaTensor", "FloatTensor")]
        assert msgs[0] is not None, code
        assert msgs[0].split(": ", 1)[-1].replace("CudaTensor", "FloatTensor") == msgs[1].split(": ", 1)[-1], code
