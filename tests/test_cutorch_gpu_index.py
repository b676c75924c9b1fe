"""The index family on cutorch's GPU backend (lua/cutorch/gpu_index.lua, native/src/cuda_ops_index.c,
native/cuda/index.cu): index, indexCopy, indexAdd, indexFill, gather, scatter, scatterAdd run on the device.

Oracle: the CPU backend's own methods (what the staged path runs) on host tensors holding the same values, in the
same layouts, compared exactly (these ops move values, or add them in the CPU kernel's order); numpy checks the
repeated-index semantics independently. Every test asserts that nothing ran staged."""
import numpy as np
import pytest

from pytorch_bridge import LuaError
from test_cutorch_gpu import DTYPE as DT, HOST_OF, fallbacks, gpu, to_device, to_host  # noqa: F401

TYPES = ["Cuda", "CudaDouble", "CudaLong", "CudaInt", "CudaByte"]

# views of a 3-D base (4, 6, 5) on the host and the device alike
VIEWS3 = {
    "contiguous": "function(t) return t end",
    "transposed": "function(t) return t:transpose(1, 3) end",      # (5, 6, 4), no unit stride last
    "narrowed": "function(t) return t:narrow(2, 2, 4) end",         # (4, 4, 5)
    "strided": "function(t) return t:unfold(3, 1, 2):select(4, 1) end",   # (4, 6, 3), every other column
}


def values(rng, shape, name):
    host = HOST_OF[name]
    if host in ("Float", "Double"):
        return rng.standard_normal(shape) * 10
    return rng.integers(0, 100 if host == "Byte" else 1000, shape)


def pair(rt, rng, shape, name):
    """A device tensor and a host tensor of its host type, with the same values."""
    x = values(rng, shape, name)
    d = to_device(rt, x, name)
    h = rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(d, HOST_OF[name])
    return d, h


def host_np(rt, t):
    return rt.to_numpy(rt.eval("function(t) return t:contiguous() end")(t)).copy()


def long_index(rt, values_, on_device):
    t = rt.from_numpy(np.asarray(values_, dtype=np.int64))
    return rt.eval("function(t) return t:type('torch.CudaLongTensor') end")(t) if on_device else t


@pytest.fixture
def view3(gpu):
    return {k: gpu.eval(v) for k, v in VIEWS3.items()}


@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_index_in_every_form_matches_the_cpu(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    for k, name in enumerate(TYPES):
        d, h = pair(rt, rng, (4, 6, 5), name)
        dv, hv = view(d), view(h)
        for dim in (1, 2, 3):
            size = rt.eval("function(t, d) return t:size(d) end")(hv, dim)
            idx = rng.integers(1, size + 1, 7)     # repeats likely
            want = host_np(rt, rt.eval("function(x, d, i) return x:index(d, i) end")(hv, dim, long_index(rt, idx, False)))
            # independent oracle: numpy's take on the same values
            np.testing.assert_array_equal(want, np.take(host_np(rt, hv), idx - 1, axis=dim - 1))
            i = long_index(rt, idx, (k + dim) % 2 == 0)
            got = rt.eval("function(x, d, i) return x:index(d, i) end")(dv, dim, i)
            assert rt.eval("function(r) return r:type() end")(got) == "torch.%sTensor" % name
            np.testing.assert_array_equal(to_host(rt, got), want)
            # result first: a transposed result of the right size keeps its strides; torch.index
            res = rt.eval("function(x, d, n) local s = x:size(); s[d] = n; local r = x.new():resize(s:totable()) "
                          "return r end")(dv, dim, len(idx))
            rt.eval("function(r, x, d, i) r:zero(); torch.index(r, x, d, i) end")(res, dv, dim, i)
            np.testing.assert_array_equal(to_host(rt, res), want)
            np.testing.assert_array_equal(to_host(rt, rt.eval("function(x, d, i) return torch.index(x, d, i) end")(
                dv, dim, i)), want)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("op", ["indexCopy", "indexAdd", "indexFill"])
@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_index_copy_add_fill_match_the_cpu_with_repeated_indices(gpu, rng, view3, layout, op):
    rt = gpu
    view = view3[layout]
    run = rt.eval("""function(op, t, d, i, s)
        if op == 'indexFill' then return t:indexFill(d, i, s) end
        return t[op](t, d, i, s)
    end""")
    for k, name in enumerate(TYPES):
        for dim in (1, 2, 3):
            d, h = pair(rt, rng, (4, 6, 5), name)
            dv, hv = view(d), view(h)
            size = rt.eval("function(t, d) return t:size(d) end")(hv, dim)
            idx = rng.integers(1, size + 1, 6)
            idx[-1] = idx[0]                     # a repeated index for sure
            shape = list(host_np(rt, hv).shape)
            shape[dim - 1] = len(idx)
            if op == "indexFill":
                ds = hs = float(values(rng, (), name))
            else:
                ds, hs = pair(rt, rng, shape, name)
                if k % 2:   # a non-contiguous source
                    ds = rt.eval("function(s) return s:transpose(1, 3):clone():transpose(1, 3) end")(ds)
            before = host_np(rt, hv)
            run(op, hv, dim, long_index(rt, idx, False), hs)
            run(op, dv, dim, long_index(rt, idx, k % 2 == 0), ds)
            np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h))   # the whole base: nothing else written
            if op != "indexFill":
                # independent oracle for the repeated index: copy keeps the last source row, add sums them all
                a = np.moveaxis(before, dim - 1, 0)
                s = np.moveaxis(host_np(rt, hs), dim - 1, 0)
                r = np.moveaxis(to_host(rt, dv), dim - 1, 0)
                j = idx[0] - 1
                picks = [p for p in range(len(idx)) if idx[p] - 1 == j]
                if op == "indexCopy":
                    np.testing.assert_array_equal(r[j], s[picks[-1]])
                elif HOST_OF[name] in ("Long", "Int"):
                    np.testing.assert_array_equal(r[j], a[j] + sum(s[p] for p in picks))
    assert fallbacks(rt) == {}


def test_index_copy_pairs_slices_of_other_shapes_and_sources_sharing_the_storage(gpu, rng):
    """Torch7 pairs a source slice with a destination slice of as many elements in row-major order; a source
    that is a view of the destination reads the values from before the call."""
    rt = gpu
    d, h = pair(rt, rng, (4, 6, 5), "CudaDouble")
    sd, sh = pair(rt, rng, (2, 3, 10), "CudaDouble")    # slices along 2: 20 elements, as t's
    go = rt.eval("function(t, s, i) t:indexAdd(2, i, s) end")
    go(h, sh, long_index(rt, [6, 1, 6], False))
    go(d, sd, long_index(rt, [6, 1, 6], True))
    np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h))
    same = rt.eval("function(t, i) t:indexCopy(1, i, t:narrow(1, 2, 3)) end")
    same(h, long_index(rt, [1, 2, 4], False))
    same(d, long_index(rt, [1, 2, 4], False))
    np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h))
    assert fallbacks(rt) == {}


def test_index_float_sums_round_as_the_cpu_kernel_does(gpu, rng):
    """indexAdd on Float adds one source row at a time, rounding to float each time (the CPU kernel's order)."""
    rt = gpu
    d, h = pair(rt, rng, (3, 8), "Cuda")
    big = np.array([[1e8] * 8, [1.0] * 8, [-1e8] * 8, [0.5] * 8], np.float64)
    sd, sh = to_device(rt, big, "Cuda"), rt.from_numpy(big.astype(np.float32))
    rt.eval("function(t, i, s) t:indexAdd(1, i, s) end")(h, long_index(rt, [2, 2, 2, 2], False), sh)
    rt.eval("function(t, i, s) t:indexAdd(1, i, s) end")(d, long_index(rt, [2, 2, 2, 2], True), sd)
    np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_gather_scatter_match_the_cpu(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    for k, name in enumerate(TYPES):
        for dim in (1, 2, 3):
            d, h = pair(rt, rng, (4, 6, 5), name)
            dv, hv = view(d), view(h)
            shape = list(host_np(rt, hv).shape)
            size = shape[dim - 1]
            ishape = list(shape)
            ishape[dim - 1] = max(1, size - 1)
            idx = rng.integers(1, size + 1, ishape)
            hi, di = long_index(rt, idx, False), long_index(rt, idx, True)
            if k % 2:   # a transposed index
                di = rt.eval("function(i) return i:transpose(1, 2):clone():transpose(1, 2) end")(di)
            # gather, both forms; numpy's take_along_axis as the independent oracle
            want = host_np(rt, rt.eval("function(x, d, i) return x:gather(d, i) end")(hv, dim, hi))
            np.testing.assert_array_equal(want, np.take_along_axis(host_np(rt, hv), idx - 1, axis=dim - 1))
            got = rt.eval("function(x, d, i) return torch.gather(x, d, i) end")(dv, dim, di)
            np.testing.assert_array_equal(to_host(rt, got), want)
            res = rt.eval("function(i) return torch.%sTensor(i:size()):zero() end" % name)(di)
            rt.eval("function(r, x, d, i) r:gather(x, d, i) end")(res, dv, dim, di)
            np.testing.assert_array_equal(to_host(rt, res), want)
            # scatter of a larger source, of a number, and scatterAdd: the whole base compared
            sshape = list(shape)
            sshape[dim - 1] = ishape[dim - 1] + 1
            sd, sh = pair(rt, rng, sshape, name)
            v = float(values(rng, (), name))
            for form in ("function(t, d, i, s, v) t:scatter(d, i, s) end",
                         "function(t, d, i, s, v) torch.scatter(t, d, i, v) end",
                         "function(t, d, i, s, v) t:scatterAdd(d, i, s) end"):
                f = rt.eval(form)
                f(hv, dim, hi, sh, v)
                f(dv, dim, di, sd, v)
                np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h), err_msg=form)
    assert fallbacks(rt) == {}


def test_scatter_with_repeated_targets_keeps_the_last_and_adds_all(gpu):
    rt = gpu
    t = to_device(rt, np.zeros((2, 4)), "CudaDouble")
    idx = long_index(rt, [[2, 2, 1, 2], [4, 4, 4, 4]], True)
    src = to_device(rt, np.array([[1., 2., 3., 4.], [5., 6., 7., 8.]]), "CudaDouble")
    rt.eval("function(t, i, s) t:scatter(2, i, s) end")(t, idx, src)
    np.testing.assert_array_equal(to_host(rt, t), [[3, 4, 0, 0], [0, 0, 0, 8]])
    rt.eval("function(t, i, s) t:zero():scatterAdd(2, i, s) end")(t, idx, src)
    np.testing.assert_array_equal(to_host(rt, t), [[3, 7, 0, 0], [0, 0, 0, 26]])
    assert fallbacks(rt) == {}


def test_out_of_range_indices_are_the_cpu_kernels_errors_and_write_nothing(gpu, rng):
    rt = gpu
    x = rng.standard_normal((3, 4))
    d = to_device(rt, x, "CudaDouble")
    for form, msg in [("function(x, i) return x:index(2, i) end", "index: index out of range: 5 is not in"),
                      ("function(x, i) x:indexFill(2, i, 1) end", "indexFill: index out of range: 5"),
                      ("function(x, i) x:indexCopy(2, i, x:narrow(2, 1, 2):clone()) end", "indexCopy: index out"),
                      ("function(x, i) x:indexAdd(2, i, x:narrow(2, 1, 2):clone()) end", "indexAdd: index out")]:
        for on_dev in (False, True):
            with pytest.raises(LuaError, match=msg):
                rt.call(rt.eval(form), d, long_index(rt, [1, 5], on_dev))
    with pytest.raises(LuaError, match="index out of range: 0 is not in"):
        rt.call(rt.eval("function(x, i) x:indexFill(1, i, 1) end"), d, long_index(rt, [0], True))
    assert fallbacks(rt) == {}
    # gather/scatter: the device check finds it, nothing is written, and the staged call names it
    bad = long_index(rt, [[1, 2, 3, 4], [1, 5, 1, 1], [1, 1, 1, 1]], True)     # one past the end
    with pytest.raises(LuaError, match="gather: index out of range: 5 is not in"):
        rt.call(rt.eval("function(x, i) return x:gather(2, i) end"), d, bad)
    bad = long_index(rt, [[1, 2, 3, 4], [1, 0, 1, 1], [1, 1, 1, 1]], True)
    with pytest.raises(LuaError, match="gather: index out of range: 0 is not in"):
        rt.call(rt.eval("function(x, i) return x:gather(2, i) end"), d, bad)
    bad = long_index(rt, [[1, 2, 3, 4], [1, 9, 1, 1], [1, 1, 1, 1]], True)
    with pytest.raises(LuaError, match="gather: index out of range: 9"):
        rt.call(rt.eval("function(x, i) return x:gather(2, i) end"), d, bad)
    with pytest.raises(LuaError, match="scatter: index out of range: 9"):
        rt.call(rt.eval("function(x, i) x:scatter(2, i, 7) end"), d, bad)
    with pytest.raises(LuaError, match="scatterAdd: index out of range: 9"):
        rt.call(rt.eval("function(x, i) x:scatterAdd(2, i, x:clone()) end"), d, bad)
    np.testing.assert_array_equal(to_host(rt, d), x)
    assert set(fallbacks(rt)) == {"torch.CudaDoubleTensor:gather", "torch.CudaDoubleTensor:scatter",
                                  "torch.CudaDoubleTensor:scatterAdd"}


# ----------------------------------------------------------------------------- norm, var, std, dist, renorm
FTYPES = ["Cuda", "CudaDouble"]


def close(got, want, name):
    rtol = 1e-12 if name == "CudaDouble" else 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-300 if name == "CudaDouble" else 1e-30, equal_nan=True)


@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_norm_var_std_along_a_dimension_match_the_cpu_and_numpy(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    forms = [("function(x, d) return x:norm(%s, d) end" % p, "norm", p) for p in ("0", "1", "2", "3.5", "math.huge")]
    forms += [("function(x, d) return x:var(d) end", "var", False),
              ("function(x, d) return torch.var(x, d, true) end", "var", True),
              ("function(x, d) local r = x.new(1):fill(7) r:std(x, d, false) return r end", "std", False),
              ("function(x, d) return x:std(d, true) end", "std", True),
              ("function(x, d) local s = x:size() s[d] = 1 local r = x.new(s:totable()):zero() "
               "torch.norm(r, x, 1.5, d) return r end", "norm", "1.5")]
    for name in FTYPES:
        d, h = pair(rt, rng, (4, 6, 5), name)
        rt.eval("function(d, h) d:select(1, 2):select(1, 3):zero() h:select(1, 2):select(1, 3):zero() end")(d, h)
        dv, hv = view(d), view(h)
        a = host_np(rt, hv).astype(np.float64)
        for dim in (1, 2, 3):
            for form, op, arg in forms:
                f = rt.eval(form)
                want = host_np(rt, f(hv, dim))
                close(to_host(rt, f(dv, dim)), want, name)
                # numpy, in double
                if op == "norm":
                    p = {"math.huge": np.inf}.get(arg, None) or float(arg)
                    b = np.abs(a)
                    ref = (b != 0).sum(axis=dim - 1, keepdims=True) if p == 0 else \
                        b.max(axis=dim - 1, keepdims=True) if p == np.inf else \
                        (b ** p).sum(axis=dim - 1, keepdims=True) ** (1 / p)
                else:
                    ref = a.var(axis=dim - 1, ddof=0 if arg else 1, keepdims=True)
                    ref = np.sqrt(ref) if op == "std" else ref
                np.testing.assert_allclose(want, ref, rtol=1e-5 if name == "Cuda" else 1e-10)
    assert fallbacks(rt) == {}


def test_whole_tensor_var_std_dist_and_single_element_slices(gpu, rng):
    rt = gpu
    for name in FTYPES:
        d, h = pair(rt, rng, (5, 7), name)
        e, g = pair(rt, rng, (5, 7), name)
        for form in ("function(x, y) return x:var() end", "function(x, y) return x:t():std(true) end",
                     "function(x, y) return torch.std(x:narrow(2, 2, 3)) end",
                     "function(x, y) return x:var(false) end",
                     "function(x, y) return x:dist(y) end", "function(x, y) return torch.dist(x:t(), y:t(), 3) end",
                     "function(x, y) return x:dist(y, 0) end", "function(x, y) return x:dist(y, math.huge) end"):
            f = rt.eval(form)
            np.testing.assert_allclose(f(d, e), f(h, g), rtol=1e-12, err_msg=form)
        x = host_np(rt, h).astype(np.float64)
        np.testing.assert_allclose(rt.eval("function(x) return x:var() end")(d), x.var(ddof=1), rtol=1e-10)
        # long contiguous slices: a block per slice
        d2, h2 = pair(rt, rng, (3, 300), name)
        for form in ("function(x) return x:var(2) end", "function(x) return x:std(2, true) end",
                     "function(x) return x:norm(3, 2) end", "function(x) return x:norm(0, 2) end",
                     "function(x) return x:norm(math.huge, 2) end"):
            f = rt.eval(form)
            close(to_host(rt, f(d2)), host_np(rt, f(h2)), name)
        # one element per slice: NaN unbiased, 0 biased (as Torch7)
        one = rt.eval("function(x) return x:narrow(2, 1, 1) end")(d)
        assert np.isnan(to_host(rt, rt.eval("function(x) return x:var(2) end")(one))).all()
        np.testing.assert_array_equal(to_host(rt, rt.eval("function(x) return x:std(2, true) end")(one)), 0)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_renorm_matches_the_cpu(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    for name in FTYPES:
        for dim in (1, 2, 3):
            for form in ("function(x, p, d, m) x:renorm(p, d, m) return x end",
                         "function(x, p, d, m) return torch.renorm(x, p, d, m) end",
                         "function(x, p, d, m) local r = x.new(x:size(3), x:size(2), x:size(1)):zero():transpose(1, 3) "
                         "r:renorm(x, p, d, m) return r end"):
                for p in (1, 2, 3):
                    d, h = pair(rt, rng, (4, 6, 5), name)
                    dv, hv = view(d), view(h)
                    norms = host_np(rt, rt.eval("function(x, p, d) return x:norm(p, d) end")(hv, p, dim))
                    m = float(np.median(norms))      # some sub-tensors above, some not
                    f = rt.eval(form)
                    want = host_np(rt, f(hv, p, dim, m))
                    close(to_host(rt, f(dv, p, dim, m)), want, name)
                    close(to_host(rt, d), host_np(rt, h), name)
                    a = np.moveaxis(host_np(rt, hv).astype(np.float64), dim - 1, 0)
                    if "x:renorm" not in form:
                        got = np.moveaxis(to_host(rt, f(dv, p, dim, m)), dim - 1, 0).reshape(a.shape[0], -1)
                        nrm = (np.abs(a.reshape(a.shape[0], -1)) ** p).sum(1) ** (1 / p)
                        scale = np.where(nrm > m, m / (nrm + 1e-7), 1)
                        np.testing.assert_allclose(got, a.reshape(a.shape[0], -1) * scale[:, None], rtol=1e-5)
    assert fallbacks(rt) == {}


# ----------------------------------------------------------------------------- cumsum, cumprod
@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_cumsum_cumprod_match_the_cpu(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    forms = ["function(x, d) return x:%s(d) end", "function(x, d) return torch.%s(x, d) end",
             "function(x, d) local r = x.new(x:size(3), x:size(2), x:size(1)):zero():transpose(1, 3) "
             "r:%s(x, d) return r end"]
    for k, name in enumerate(TYPES):
        d, h = pair(rt, rng, (4, 6, 5), name)
        if HOST_OF[name] in ("Float", "Double"):   # factors near 1 keep products in range
            rt.eval("function(d, h) d:div(40):add(1) h:div(40):add(1) end")(d, h)
        dv, hv = view(d), view(h)
        for op in ("cumsum", "cumprod"):
            for dim in (1, 2, 3):
                f = rt.eval(forms[(k + dim) % 3] % op)
                want = host_np(rt, f(hv, dim))
                np.testing.assert_array_equal(to_host(rt, f(dv, dim)), want, err_msg="%s %s %d" % (name, op, dim))
                if op == "cumsum" and HOST_OF[name] in ("Long", "Int"):
                    np.testing.assert_array_equal(want, np.cumsum(host_np(rt, hv), axis=dim - 1))
        # the default dimension (1), in place (the result is the input), and wrap-around of Byte products
        np.testing.assert_array_equal(to_host(rt, rt.eval("function(x) return x:cumsum() end")(dv)),
                                      host_np(rt, rt.eval("function(x) return x:cumsum() end")(hv)))
        f = rt.eval("function(x) x:cumprod(x, 2) return x end")
        np.testing.assert_array_equal(to_host(rt, f(dv)), host_np(rt, f(hv)))
        np.testing.assert_array_equal(to_host(rt, d), host_np(rt, h))
    assert fallbacks(rt) == {}


# ----------------------------------------------------------------------------- trace, all, any
def test_trace_all_any_match_the_cpu(gpu, rng):
    rt = gpu
    for name in TYPES:
        d, h = pair(rt, rng, (5, 7), name)
        a = host_np(rt, h)
        # float sums of a few terms may cancel: their rounding is relative to the terms, not to the sum (CI once saw
        # -0.1997433 against -0.1997442 from terms near 1)
        tol = {"Cuda": 1e-6, "CudaDouble": 1e-12}.get(name, 0) * float(np.abs(a).sum())
        for form in ("function(x) return x:trace() end", "function(x) return torch.trace(x:t()) end",
                     "function(x) return x:narrow(2, 3, 4):trace() end",
                     "function(x) return x:unfold(1, 1, 2):select(3, 1):trace() end"):
            f = rt.eval(form)
            np.testing.assert_allclose(f(d), f(h), rtol=0, atol=tol, err_msg=form)
        assert rt.eval("function(x) return x:trace() end")(d) == pytest.approx(np.trace(a.astype(np.float64)).item(),
                                                                               rel=0, abs=tol)
        # all/any on values with and without zeros, and on a view
        z = np.ones((3, 4))
        z[1, 2] = 0
        for x in (z, np.zeros((3, 4)), np.ones((3, 4)), values(rng, (3, 4), name)):
            d, h = to_device(rt, x, name), rt.from_numpy(np.asarray(x, dtype=host_np(rt, h).dtype))
            for form in ("function(x) return x:all() end", "function(x) return torch.any(x) end",
                         "function(x) return x:narrow(2, 4, 1):all() end", "function(x) return x:t():any() end"):
                f = rt.eval(form)
                assert f(d) == f(h), (form, x)
    d = to_device(rt, np.array([0, 0, 1, 0]), "CudaByte")
    assert rt.eval("function(x) return x:any(), x:all(), x:narrow(1, 1, 2):any() end")(d) == (True, False, False)
    assert fallbacks(rt) == {}


# ----------------------------------------------------------------------------- nonzero
@pytest.mark.parametrize("layout", sorted(VIEWS3))
def test_nonzero_matches_the_cpu(gpu, rng, view3, layout):
    rt = gpu
    view = view3[layout]
    nz = rt.eval("function(x) return x:nonzero() end")
    for k, name in enumerate(TYPES):
        x = rng.integers(0, 3, (4, 6, 5))        # about a third zeros
        d, h = to_device(rt, x, name), rt.from_numpy(x.astype(np.dtype(DT[HOST_OF[name]])))
        dv, hv = view(d), view(h)
        want = host_np(rt, nz(hv))
        np.testing.assert_array_equal(want, np.argwhere(host_np(rt, hv) != 0) + 1)
        got = nz(dv)
        assert rt.eval("function(r) return r:type() end")(got) == "torch.CudaLongTensor"
        np.testing.assert_array_equal(to_host(rt, got), want)
        res = rt.eval("function() return torch.CudaLongTensor(3, 3):fill(-1) end")()
        rt.eval("function(r, x) torch.nonzero(r, x) end")(res, dv)
        np.testing.assert_array_equal(to_host(rt, res), want)
    # no non-zero elements: an empty result; several chunks and tiles, NaN counts as non-zero
    assert rt.eval("function(x) return x:nonzero():nElement() end")(to_device(rt, np.zeros((3, 4)), "Cuda")) == 0
    big = (rng.random((90, 150)) < 0.3) * rng.standard_normal((90, 150))
    big[7, 9] = np.nan
    np.testing.assert_array_equal(to_host(rt, nz(to_device(rt, big, "CudaDouble"))), np.argwhere(big != 0) + 1)
    assert fallbacks(rt) == {}
