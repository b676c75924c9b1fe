"""Index ops, masks, nonzero, cat/split/chunk and t[...] indexing against NumPy.

Inputs are fresh random arrays each run (seed printed by the rng fixture), in
all seven element types and in several memory layouts: contiguous,
transposed, strided (every other element) and, for read-only inputs,
expanded (stride 0). Torch7 indices are 1-based.
"""
import numpy as np
import pytest

from pytorch_bridge import LuaError

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
TNAME = {np.uint8: "Byte", np.int8: "Char", np.int16: "Short", np.int32: "Int", np.int64: "Long",
         np.float32: "Float", np.float64: "Double"}
LAYOUTS = ["contig", "transposed", "strided"]


def rand(rng, shape, dtype):
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dtype)


def layout(arr, kind):
    """A writable view holding arr's values in the given memory layout."""
    if kind == "contig" or arr.ndim == 0:
        return arr.copy()
    if kind == "transposed" and arr.ndim >= 2:
        return np.ascontiguousarray(arr.transpose()).transpose()
    base = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
    view = base[..., ::2]
    view[...] = arr
    return view


def expanded(rng, shape, dtype, dim):
    """A stride-0 view along dim (values repeat along it)."""
    small = rand(rng, shape[:dim] + (1,) + shape[dim + 1:], dtype)
    strides = list(small.strides)
    strides[dim] = 0
    return np.lib.stride_tricks.as_strided(small, shape, strides), small


def inputs(rng, shape, dtype, dim=0):
    """(numpy values, array to wrap) pairs for every input layout."""
    out = []
    for kind in LAYOUTS:
        a = rand(rng, shape, dtype)
        out.append((a, layout(a, kind)))
    e, keep = expanded(rng, shape, dtype, dim)
    out.append((np.array(e), e))
    return out


def to_np(rt, t):
    v = rt.to_numpy(t)
    r = np.array(v)
    del v
    return r


def lua(rt, src):
    return rt.eval("function(...) " + src + " end")


def long_t(rt, values):
    return rt.from_numpy(np.ascontiguousarray(values, dtype=np.int64))


def strided_long(rt, values):
    """A non-contiguous LongTensor holding values."""
    return rt.from_numpy(layout(np.asarray(values, dtype=np.int64), "strided"))


def close(got, want):
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- index


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select_matches_take(shared_rt, rng, dtype):
    rt = shared_rt
    f = lua(rt, "local s, d, i = ...; return s:index(d, i), torch.index(s, d, i)")
    shape = (5, 3, 4)
    for dim in range(3):
        for a, view in inputs(rng, shape, dtype, dim):
            idx = rng.integers(1, shape[dim] + 1, size=int(rng.integers(1, 7)))
            for it in (long_t(rt, idx), strided_long(rt, idx)):
                r1, r2 = rt.call(f, rt.from_numpy(view), dim + 1, it)
                want = np.take(a, idx - 1, axis=dim)
                close(to_np(rt, r1), want)
                close(to_np(rt, r2), want)


def test_index_select_1d_and_result_forms(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (7,), np.float64)
    idx = np.array([7, 1, 1, 3])
    f = lua(rt, "local s, i = ...; return s:index(1, i)")
    close(to_np(rt, rt.call(f, rt.from_numpy(layout(a, "strided")), long_t(rt, idx))), a[idx - 1])
    # res:index(src, dim, idx) writes into res; a right-sized non-contiguous res keeps its strides
    b = rand(rng, (4, 6), np.float32)
    res_base = np.zeros((6, 3), np.float32)
    res_view = res_base.T  # 3x6, transposed
    g = lua(rt, "local r, s, i = ...; local out = r:index(s, 1, i); return out == r, torch.index(r, s, 1, i) == r")
    same1, same2 = rt.call(g, rt.from_numpy(res_view), rt.from_numpy(b), long_t(rt, [4, 2, 4]))
    assert same1 and same2
    np.testing.assert_array_equal(res_view, b[[3, 1, 3]])
    # result aliasing the source
    h = lua(rt, "local s, i = ...; local r = s:clone(); r:index(r, 2, i); return r")
    close(to_np(rt, rt.call(h, rt.from_numpy(b), long_t(rt, [6, 1]))), b[:, [5, 0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_copy_fill_add(shared_rt, rng, dtype):
    rt = shared_rt
    fcopy = lua(rt, "local t, d, i, s = ...; return t:indexCopy(d, i, s) == t")
    fadd = lua(rt, "local t, d, i, s = ...; return t:indexAdd(d, i, s) == t")
    ffill = lua(rt, "local t, d, i, v = ...; return t:indexFill(d, i, v) == t")
    shape = (4, 5, 3)
    for dim in range(3):
        for kind in LAYOUTS:
            n = int(rng.integers(1, shape[dim] + 1))
            uniq = rng.permutation(shape[dim])[:n] + 1
            sshape = shape[:dim] + (n,) + shape[dim + 1:]
            src = rand(rng, sshape, dtype)
            # indexCopy (distinct indices)
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            t = rt.from_numpy(view)
            assert rt.call(fcopy, t, dim + 1, strided_long(rt, uniq), rt.from_numpy(layout(src, kind)))
            want = a.copy()
            np.moveaxis(want, dim, 0)[uniq - 1] = np.moveaxis(src, dim, 0)
            close(view, want)
            # indexAdd with duplicates accumulates
            dup = rng.integers(1, shape[dim] + 1, size=n)
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            assert rt.call(fadd, rt.from_numpy(view), dim + 1, long_t(rt, dup), rt.from_numpy(layout(src, kind)))
            want = a.copy()
            np.add.at(np.moveaxis(want, dim, 0), dup - 1, np.moveaxis(src, dim, 0))
            close(view, want)
            # indexFill
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            assert rt.call(ffill, rt.from_numpy(view), dim + 1, long_t(rt, dup), 7)
            want = a.copy()
            np.moveaxis(want, dim, 0)[dup - 1] = 7
            close(view, want)


def test_index_copy_1d_and_errors(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (6,), np.int32)
    view = layout(a, "strided")
    f = lua(rt, "local t, i, s = ...; t:indexCopy(1, i, s)")
    rt.call(f, rt.from_numpy(view), long_t(rt, [6, 2]), rt.from_numpy(np.array([10, 20], np.int32)))
    want = a.copy()
    want[[5, 1]] = [10, 20]
    np.testing.assert_array_equal(view, want)
    before = view.copy()
    for code, pat in [("t:indexCopy(1, torch.LongTensor{1, 7}, torch.IntTensor{1, 2})", "index out of range: 7"),
                      ("t:indexAdd(1, torch.LongTensor{0}, torch.IntTensor{1})", "index out of range: 0"),
                      ("t:indexFill(1, torch.LongTensor{2, 9}, 1)", "index out of range: 9"),
                      ("t:indexCopy(1, torch.LongTensor{1, 2}, torch.IntTensor{1})", "Number of indices"),
                      ("t:indexCopy(1, torch.LongTensor{1}, torch.FloatTensor{1})", "must be a torch.IntTensor"),
                      ("t:indexFill(2, torch.LongTensor{1}, 1)", "out of bounds"),
                      ("t:indexFill(1, torch.IntTensor{1}, 1)", "torch.LongTensor of indices expected"),
                      ("t:index(1, torch.LongTensor{{1}})", "Index is supposed to be a vector"),
                      ("torch.DoubleTensor():index(1, torch.LongTensor{1})", "Source tensor is empty")]:
        g = lua(rt, "local t = ...; " + code)
        with pytest.raises(LuaError, match=pat.replace("(", r"\(")):
            rt.call(g, rt.from_numpy(view))
    np.testing.assert_array_equal(view, before)


# ---------------------------------------------------------------- gather / scatter


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_take_along_axis(shared_rt, rng, dtype):
    rt = shared_rt
    f = lua(rt, "local s, d, i = ...; return s:gather(d, i), torch.gather(s, d, i)")
    shape = (4, 3, 5)
    for dim in range(3):
        for a, view in inputs(rng, shape, dtype, (dim + 1) % 3):
            ishape = shape[:dim] + (int(rng.integers(1, 7)),) + shape[dim + 1:]
            idx = rng.integers(1, shape[dim] + 1, size=ishape)
            for kind in ("contig", "transposed"):
                r1, r2 = rt.call(f, rt.from_numpy(view), dim + 1, rt.from_numpy(layout(idx, kind)))
                want = np.take_along_axis(a, idx - 1, axis=dim)
                close(to_np(rt, r1), want)
                close(to_np(rt, r2), want)


def test_gather_result_form_and_errors(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (3, 4), np.float64)
    idx = rng.integers(1, 4, size=(2, 4))
    res = np.zeros((4, 2))
    f = lua(rt, "local r, s, i = ...; return r:gather(s, 1, i) == r")
    assert rt.call(f, rt.from_numpy(res.T), rt.from_numpy(a), long_t(rt, idx))
    np.testing.assert_array_equal(res.T, np.take_along_axis(a, idx - 1, axis=0))
    g = lua(rt, "local s = ...; return s:gather(2, torch.LongTensor{{1, 5}, {1, 1}, {1, 1}})")
    with pytest.raises(LuaError, match="index out of range: 5"):
        rt.call(g, rt.from_numpy(a))
    g = lua(rt, "local s = ...; return s:gather(1, torch.LongTensor{{1, 1}})")
    with pytest.raises(LuaError, match="inconsistent tensor size"):
        rt.call(g, rt.from_numpy(a))
    g = lua(rt, "local s = ...; return s:gather(1, torch.LongTensor{1, 1})")
    with pytest.raises(LuaError, match="same dimensions"):
        rt.call(g, rt.from_numpy(a))


def test_gather_scatter_1d(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (6,), np.int64)
    idx = rng.integers(1, 7, size=9)
    f = lua(rt, "local s, i = ...; return s:gather(1, i)")
    np.testing.assert_array_equal(to_np(rt, rt.call(f, rt.from_numpy(layout(a, "strided")), strided_long(rt, idx))),
                                  a[idx - 1])
    t = layout(np.zeros(6, np.int64), "strided")
    perm = rng.permutation(6)[:4] + 1
    src = rand(rng, (5,), np.int64)
    g = lua(rt, "local t, i, s = ...; t:scatter(1, i, s)")
    rt.call(g, rt.from_numpy(t), long_t(rt, perm), rt.from_numpy(src))
    want = np.zeros(6, np.int64)
    want[perm - 1] = src[:4]
    np.testing.assert_array_equal(t, want)


def unique_along(rng, shape, dim, k):
    """1-based indices of size k along dim, distinct within each line along dim."""
    perm = np.argsort(rng.random(shape), axis=dim)
    return np.take(perm, np.arange(k), axis=dim) + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_matches_put_along_axis(shared_rt, rng, dtype):
    rt = shared_rt
    fsrc = lua(rt, "local t, d, i, s = ...; return t:scatter(d, i, s) == t")
    fadd = lua(rt, "local t, d, i, s = ...; return t:scatterAdd(d, i, s) == t")
    shape = (3, 5, 4)
    for dim in range(3):
        for kind in LAYOUTS:
            k = int(rng.integers(1, shape[dim] + 1))
            idx = unique_along(rng, shape, dim, k)
            sshape = shape[:dim] + (k + 1,) + shape[dim + 1:]  # src may be longer along dim
            src = rand(rng, sshape, dtype)
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            t = rt.from_numpy(view)
            assert rt.call(fsrc, t, dim + 1, rt.from_numpy(layout(idx, kind)), rt.from_numpy(layout(src, kind)))
            want = a.copy()
            np.put_along_axis(want, idx - 1, np.take(src, np.arange(k), axis=dim), axis=dim)
            close(view, want)
            # scatter of a value
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            rt.call(fsrc, rt.from_numpy(view), dim + 1, long_t(rt, idx), 5)
            want = a.copy()
            np.put_along_axis(want, idx - 1, 5, axis=dim)
            close(view, want)
            # scatterAdd with repeated indices accumulates
            ridx = rng.integers(1, shape[dim] + 1, size=idx.shape)
            a = rand(rng, shape, dtype)
            view = layout(a, kind)
            assert rt.call(fadd, rt.from_numpy(view), dim + 1, long_t(rt, ridx), rt.from_numpy(src))
            want = a.copy()
            full = list(np.indices(idx.shape))
            full[dim] = ridx - 1
            np.add.at(want, tuple(full), np.take(src, np.arange(k), axis=dim))
            close(view, want)


def test_scatter_errors_leave_tensor_untouched(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (3, 4), np.float32)
    view = layout(a, "transposed")
    for code, pat in [("t:scatter(1, torch.LongTensor{{1, 2, 4, 1}}, torch.FloatTensor(1, 4):fill(1))",
                       "index out of range: 4"),
                      ("t:scatter(2, torch.LongTensor{{1}, {0}, {1}}, 2)", "index out of range: 0"),
                      ("t:scatter(1, torch.LongTensor{{1, 2, 3}}, 2)", "inconsistent tensor size"),
                      ("t:scatter(1, torch.LongTensor{{1, 2, 3, 1}}, torch.FloatTensor(2, 3))",
                       "inconsistent tensor size"),
                      ("t:scatter(3, torch.LongTensor{{1, 2, 3, 1}}, 1)", "out of bounds")]:
        g = lua(rt, "local t = ...; " + code)
        with pytest.raises(LuaError, match=pat):
            rt.call(g, rt.from_numpy(view))
        np.testing.assert_array_equal(view, a)


# ---------------------------------------------------------------- masks and nonzero


def rand_mask(rng, shape, kind="contig"):
    return layout((rng.random(shape) < 0.5).astype(np.uint8), kind)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select_fill_copy(shared_rt, rng, dtype):
    rt = shared_rt
    fsel = lua(rt, "local s, m = ...; return s:maskedSelect(m), torch.maskedSelect(s, m), s[m]")
    ffill = lua(rt, "local t, m, v = ...; return t:maskedFill(m, v) == t")
    fcopy = lua(rt, "local t, m, s = ...; return t:maskedCopy(m, s) == t")
    fset = lua(rt, "local t, m, v = ...; t[m] = v")
    shape = (4, 6)
    for (a, view), mkind in zip(inputs(rng, shape, dtype), ["contig", "transposed", "strided", "contig"]):
        mask = rand_mask(rng, shape, mkind)
        want = a[mask.astype(bool)]
        for r in rt.call(fsel, rt.from_numpy(view), rt.from_numpy(mask)):
            if want.size:
                close(to_np(rt, r), want)
            else:
                assert rt.call(lua(rt, "return (...):dim()"), r) == 0
    for kind in LAYOUTS:
        mask = rand_mask(rng, shape, kind)
        bmask = mask.astype(bool)
        a = rand(rng, shape, dtype)
        view = layout(a, kind)
        t = rt.from_numpy(view)
        assert rt.call(ffill, t, rt.from_numpy(mask), 3)
        want = a.copy()
        want[bmask] = 3
        close(view, want)
        rt.call(fset, t, rt.from_numpy(mask), 4)
        want[bmask] = 4
        close(view, want)
        src = rand(rng, (3, 9), dtype)  # any shape with enough elements, read in row-major order
        assert rt.call(fcopy, t, rt.from_numpy(mask), rt.from_numpy(layout(src, kind)))
        want[bmask] = src.ravel()[: bmask.sum()]
        close(view, want)
        src2 = rand(rng, (bmask.sum() + 2,), dtype)
        rt.call(fset, t, rt.from_numpy(mask), rt.from_numpy(src2))
        want[bmask] = src2[: bmask.sum()]
        close(view, want)


def test_masked_select_result_forms(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (3, 5), np.int16)
    mask = rand_mask(rng, (3, 5))
    mask[0, 0] = 1
    want = a[mask.astype(bool)]
    # a right-sized strided result is written in place
    res = layout(np.zeros(want.shape, np.int16), "strided")
    f = lua(rt, "local r, s, m = ...; return r:maskedSelect(s, m) == r, torch.maskedSelect(r, s, m) == r")
    assert rt.call(f, rt.from_numpy(res), rt.from_numpy(a), rt.from_numpy(mask)) == (True, True)
    np.testing.assert_array_equal(res, want)
    # the result may be the source itself
    g = lua(rt, "local s, m = ...; local r = s:clone(); r:maskedSelect(r, m); return r")
    np.testing.assert_array_equal(to_np(rt, rt.call(g, rt.from_numpy(a), rt.from_numpy(mask))), want)


def test_mask_errors(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (2, 3), np.float64)
    view = layout(a, "strided")
    for code, pat in [("t:maskedFill(torch.ByteTensor{{0, 2, 1}, {0, 0, 0}}, 1)", "0 and 1 values only"),
                      ("t:maskedFill(torch.ByteTensor{1, 0}, 1)", "inconsistent tensor size"),
                      ("t:maskedCopy(torch.ByteTensor{{1, 1, 1}, {0, 0, 1}}, torch.DoubleTensor{1, 2, 3})",
                       r"Number of elements of src \(3\) < number of ones in mask \(4\)"),
                      ("t:maskedCopy(torch.ByteTensor{1, 1}, torch.DoubleTensor{1, 2, 3})",
                       "Number of elements of destination tensor"),
                      ("t:maskedFill(torch.LongTensor{{0, 1, 1}, {0, 0, 0}}, 1)", "ByteTensor mask expected"),
                      ("return t:maskedSelect(torch.ByteTensor{{0, 5, 1}, {0, 0, 0}})", "0 and 1 values only")]:
        g = lua(rt, "local t = ...; " + code)
        with pytest.raises(LuaError, match=pat):
            rt.call(g, rt.from_numpy(view))
        np.testing.assert_array_equal(view, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_matches_argwhere(shared_rt, rng, dtype):
    rt = shared_rt
    f = lua(rt, "local t = ...; local r = t:nonzero(); return r, torch.nonzero(t), r:dim()")
    for shape in [(7,), (3, 4), (2, 3, 4)]:
        for kind in LAYOUTS:
            a = rand(rng, shape, dtype) * (rng.random(shape) < 0.4)
            r1, r2, nd = rt.call(f, rt.from_numpy(layout(a.astype(dtype), kind)))
            want = np.argwhere(a) + 1
            if want.shape[0] == 0:
                assert nd == 0
                continue
            np.testing.assert_array_equal(to_np(rt, r1), want)
            np.testing.assert_array_equal(to_np(rt, r2), want)
    r, _, nd = rt.call(f, rt.from_numpy(np.zeros((3, 2), np.float32)))
    assert nd == 0
    # result form
    g = lua(rt, "local t = ...; local r = torch.LongTensor(); return torch.nonzero(r, t) == r and r")
    close(to_np(rt, rt.call(g, rt.from_numpy(np.array([0, 5, 0, 1.5])))), np.array([[2], [4]]))


# ---------------------------------------------------------------- cat / split / chunk


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_matches_concatenate(shared_rt, rng, dtype):
    rt = shared_rt
    f2 = lua(rt, "local a, b, d = ...; return torch.cat(a, b, d)")
    ft = lua(rt, "local d = ...; return torch.cat({select(2, ...)}, d)")
    fdef = lua(rt, "local a, b, c = ...; return torch.cat({a, b, c}), torch.cat(a, b)")
    base = (3, 4, 2)
    for dim in range(3):
        arrs, views = [], []
        for kind in LAYOUTS:
            shape = list(base)
            shape[dim] = int(rng.integers(1, 4))
            a = rand(rng, tuple(shape), dtype)
            arrs.append(a)
            views.append(rt.from_numpy(layout(a, kind)))
        e, _ = expanded(rng, base, dtype, dim)
        arrs.append(np.array(e))
        views.append(rt.from_numpy(e))
        close(to_np(rt, rt.call(f2, views[0], views[1], dim + 1)), np.concatenate(arrs[:2], axis=dim))
        close(to_np(rt, rt.call(ft, dim + 1, *views)), np.concatenate(arrs, axis=dim))
    # default dimension is the last one
    same = [rand(rng, (2, 3, k), dtype) for k in (1, 2, 3)]
    r1, r2 = rt.call(fdef, *[rt.from_numpy(layout(a, "transposed")) for a in same])
    close(to_np(rt, r1), np.concatenate(same, axis=2))
    close(to_np(rt, r2), np.concatenate(same[:2], axis=2))


def test_cat_torch7_shapes_and_result(shared_rt, rng):
    rt = shared_rt
    f = lua(rt, "return torch.cat(...)")
    a, b = rand(rng, (3,), np.float64), rand(rng, (4,), np.float64)
    ta, tb = rt.from_numpy(a), rt.from_numpy(b)
    close(to_np(rt, rt.call(f, ta, tb)), np.concatenate([a, b]))
    # 1-D tensors along dimension 2 stack as columns
    c = rand(rng, (3,), np.float64)
    close(to_np(rt, rt.call(f, ta, rt.from_numpy(c), 2)), np.stack([a, c], axis=1))
    # a 1-D tensor counts as n x 1 next to a matrix
    m = rand(rng, (3, 2), np.float64)
    close(to_np(rt, rt.call(f, ta, rt.from_numpy(m), 2)), np.concatenate([a[:, None], m], axis=1))
    # empty tensors are skipped; all empty gives an empty result
    g = lua(rt, "local a = ...; local e = torch.DoubleTensor(); return torch.cat({e, a, e}, 1), "
                "torch.cat(e, e):dim(), torch.cat({a, e}):nElement()")
    r, nd, n = rt.call(g, ta)
    close(to_np(rt, r), a)
    assert nd == 0 and n == 3
    # result forms, including a result that is one of the inputs
    h = lua(rt, "local a, b = ...; local r = torch.DoubleTensor(); local r2 = torch.cat(r, a, b, 1); "
                "local x = a:clone(); torch.cat(x, {x, b}, 1); return r2 == r and r, x")
    r, x = rt.call(h, ta, tb)
    close(to_np(rt, r), np.concatenate([a, b]))
    close(to_np(rt, x), np.concatenate([a, b]))
    for code, pat in [("torch.cat(torch.Tensor(2, 3), torch.Tensor(3, 3), 2)", "inconsistent tensor size"),
                      ("torch.cat(torch.Tensor(2), torch.FloatTensor(2))", "FloatTensor"),
                      ("torch.cat({})", "invalid number of inputs"),
                      ("torch.cat(torch.Tensor(2), torch.Tensor(2), 0)", "invalid dimension")]:
        with pytest.raises(LuaError, match=pat):
            rt.execute(code)


def test_split_and_chunk(shared_rt, rng):
    rt = shared_rt
    a = rand(rng, (7, 5), np.float64)
    t = rt.from_numpy(a)
    f = lua(rt, "local t, fn, n, d = ...; local r = torch[fn](t, n, d); local m = t[fn](t, n, d); "
                "assert(#r == #m); local out = {}; for i, v in ipairs(r) do "
                "assert(v:storage() == nil or torch.pointer(v:storage()) == torch.pointer(t:storage())); "
                "out[i] = v end; return out")
    for fn, n, d, cuts in [("split", 3, 1, [3, 6]), ("split", 2, 2, [2, 4]), ("split", 7, 1, []),
                           ("chunk", 3, 1, [3, 6]), ("chunk", 2, 2, [3]), ("chunk", 4, 1, [2, 4, 6]),
                           ("chunk", 5, 2, [1, 2, 3, 4])]:
        parts = rt.call(f, t, fn, n, d)
        want = np.split(a, cuts, axis=d - 1)
        assert len(parts) == len(want)
        for i, w in enumerate(want):
            np.testing.assert_array_equal(to_np(rt, parts[i + 1]), w)
    # default dim 1 and the result-table form (emptied first)
    g = lua(rt, "local t = ...; local r = {1, 2, 3, 4, 5, 6, 7, 8, 9}; local r2 = torch.split(r, t, 4); "
                "return r2 == r, #r, r[2]:size(1), #torch.chunk(t, 2), #t:chunk(3)")
    assert rt.call(g, t) == (True, 2, 3, 2, 3)


# ---------------------------------------------------------------- t[...]


def random_key(rng, shape):
    """A Torch7 index table (Lua source) and the equivalent NumPy index."""
    nkeys = int(rng.integers(0, len(shape) + 1))
    lua_parts, np_parts = [], []
    for d in range(nkeys):
        n = shape[d]
        kind = rng.integers(0, 4)
        i = int(rng.integers(1, n + 1))
        j = int(rng.integers(i, n + 1))
        neg = lambda x: x - n - 1 if rng.random() < 0.3 else x  # noqa: E731
        if kind == 0:
            lua_parts.append(str(neg(i)))
            np_parts.append(i - 1)
        elif kind == 1:
            lua_parts.append("{%d, %d}" % (neg(i), neg(j)))
            np_parts.append(slice(i - 1, j))
        elif kind == 2:
            lua_parts.append("{}")
            np_parts.append(slice(None))
        else:
            lua_parts.append("{%d}" % neg(i))
            np_parts.append(slice(i - 1, i))
    return "{" + ", ".join(lua_parts) + "}", tuple(np_parts)


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, np.float32, np.float64])
def test_table_indexing_matches_numpy(shared_rt, rng, dtype):
    rt = shared_rt
    shape = (4, 3, 5)
    for trial in range(40):
        a = rand(rng, shape, dtype)
        view = layout(a, LAYOUTS[trial % 3])
        key, npkey = random_key(rng, shape)
        t = rt.from_numpy(view)
        got = rt.call(lua(rt, "local t = ...; return t[%s]" % key), t)
        want = a[npkey]
        if np.ndim(want) == 0:
            assert got == want.item(), key
        else:
            np.testing.assert_array_equal(to_np(rt, got), want, err_msg=key)
        # writes: a number fills, a tensor copies
        rt.call(lua(rt, "local t = ...; t[%s] = 9" % key), t)
        w = a.copy()
        w[npkey] = 9
        np.testing.assert_array_equal(view, w, err_msg=key)
        src = rand(rng, np.shape(want), dtype)
        if np.ndim(want) > 0:
            rt.call(lua(rt, "local t, s = ...; t[%s] = s" % key), t, rt.from_numpy(src))
            w[npkey] = src
            np.testing.assert_array_equal(view, w, err_msg=key)


def test_table_indexing_torch7_cases(shared_rt):
    rt = shared_rt
    r = rt.execute("""
    local t = torch.Tensor({{1, 2, 3}, {4, 5, 6}})
    local out = {}
    out[1] = t[{2, 3}]
    out[2] = t[{-1, -1}]
    out[3] = t[{{}, 2}]:dim()
    out[4] = t[{{1}, {2, 3}}]:dim()
    out[5] = t[{2}]:size(1)
    out[6] = t[{{2, -1}}]:size(1)
    out[7] = t[{}]:dim()
    local v = t[{{}, {2, 3}}]
    v[{1, 1}] = 20
    out[8] = t[1][2]
    t[{{}, 1}] = torch.Tensor({7, 8})
    out[9] = t[2][1]
    t[{2, {2, 3}}] = 0
    out[10] = t[2][3]
    out[11] = t[torch.LongTensor{2, 1}][1][1]
    t[torch.LongTensor{1}] = 5
    out[12] = t[1][3]
    out[13] = torch.IntTensor{3, 4}[{2}]
    return unpack(out)
    """)
    assert r == (6, 6, 1, 2, 3, 1, 2, 20, 8, 0, 8, 5, 4)
    assert isinstance(r[12], (int, float))
    for code, pat in [("local t = torch.Tensor(2, 3); return t[{3}]", "out of bound"),
                      ("local t = torch.Tensor(2, 3); return t[{1, 2, 3}]", "too many indices"),
                      ("local t = torch.Tensor(2, 3); return t[{{3, 1}}]", "start index 3 out of bound"),
                      ("local t = torch.Tensor(2, 3); return t[{{}, {2, 4}}]", "end index 4 out of bound"),
                      ("local t = torch.Tensor(3); return t[{{3, 2}}]", "greater or equal"),
                      ("local t = torch.Tensor(3); return t[{'a'}]", "must be a number or a table"),
                      ("local t = torch.Tensor(3); return t[torch.DoubleTensor{1}]", "ByteTensor mask"),
                      ("local t = torch.Tensor(3); t[{1}] = torch.Tensor{1}", "number"),
                      ("local t = torch.Tensor(3); t[{{1, 2}}] = 'x'", "expecting number or Tensor")]:
        with pytest.raises(LuaError, match=pat):
            rt.execute(code)
