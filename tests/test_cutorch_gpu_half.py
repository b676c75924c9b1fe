"""torch.CudaHalfTensor (lua/torch/Half.lua): binary16 elements, math through float as cutorch computed it.

These run on whichever cutorch backend the process has: the CPU backend in a plain run (host memory), the GPU
backend inside test_cutorch_gpu.py's emulated-driver test (device memory the host cannot read), which runs every
test_cutorch_gpu*.py file. Oracles: numpy's float16 (a method's float32 result rounded once to half, the way
numpy's own float16 arithmetic rounds) and a tiny .t7 reader of our own for the file layout."""
import struct

import numpy as np
import pytest

from pytorch_bridge import LuaError


@pytest.fixture
def cuda(rt):
    rt.execute("require 'cutorch'; cutorch.setHostFallback('quiet')")
    return rt


def half_of(rt, array):
    """A torch.CudaHalfTensor with array's values rounded to half (through a FloatTensor)."""
    f = rt.from_numpy(np.ascontiguousarray(array, dtype=np.float32))
    return rt.eval("function(f) return f:cudaHalf() end")(f)


def values(rt, t):
    """float16 numpy values of a half tensor (through a FloatTensor: binary16 -> float32 is exact)."""
    return rt.to_numpy(rt.eval("function(t) return t:float() end")(t)).astype(np.float16)


def typename(rt, t):
    return rt.eval("function(t) return torch.type(t) end")(t)


def on_device(rt, t):
    return bool(rt.eval("function(t) return torch.C.lt_tensor_is_device(t._c) ~= 0 end")(t))


def backend(rt):
    return rt.eval("cutorch.backend")


def staged(rt):
    return dict(rt.eval("function() local o = {} for k, v in pairs(cutorch.hostFallbacks()) do o[k] = v end "
                        "return o end")().items())


def test_the_type_exists_where_cutorch_says_it_does(cuda):
    rt = cuda
    assert rt.eval("cutorch.hasHalf") is True
    assert rt.eval("torch.type(torch.CudaHalfTensor(2, 3))") == "torch.CudaHalfTensor"
    assert rt.eval("torch.type(torch.CudaHalfStorage(4))") == "torch.CudaHalfStorage"
    assert rt.eval("torch.CudaHalfTensor(2, 3):elementSize()") == 2
    t = rt.eval("torch.CudaHalfTensor(2, 3)")
    # device memory on the GPU backend, host memory on the CPU one
    assert on_device(rt, t) == (backend(rt) == "gpu")
    assert rt.eval("torch.CudaHalfTensor(2, 3):getDevice()") == rt.eval("cutorch.getDevice()")


def test_conversions_round_to_nearest_half_and_back_exactly(cuda, rng):
    rt = cuda
    x = np.concatenate([rng.standard_normal(50) * 10, [65504, 65520, 1e6, -1e6, 6e-8, 2.0 ** -24, 1e-9,
                                                       np.inf, -np.inf, np.nan, 0.0, -0.0, 1 / 3]])
    np.seterr(over="ignore")   # the values past 65504 become infinities, as they must
    for host in ("Float", "Double"):
        src = rt.from_numpy(x.astype(np.float32 if host == "Float" else np.float64))
        h = rt.eval("function(s) return s:cudaHalf() end")(src)
        assert typename(rt, h) == "torch.CudaHalfTensor"
        want = x.astype(np.float16) if host == "Double" else x.astype(np.float32).astype(np.float16)
        np.testing.assert_array_equal(values(rt, h), want)
        # and back: every half is a float and a double exactly
        back = rt.to_numpy(rt.eval("function(h) return h:double() end")(h))
        np.testing.assert_array_equal(back, want.astype(np.float64))
    # the host HalfTensor and the CudaHalfTensor hold the same bits
    h = half_of(rt, x)
    bits = rt.eval("""function(h)
        local host = h:half()
        local s, out = host:storage(), {}
        for i = 1, host:nElement() do out[i] = torch.C.lt_float_to_half(s[i]) end
        return torch.type(host), out
    end""")
    name, got = bits(h)
    assert name == "torch.HalfTensor"
    want_bits = x.astype(np.float32).astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(np.array(list(got.values()), dtype=np.uint16), want_bits)
    # integer types truncate toward zero from half, as from float
    y = np.array([2.7, -2.7, 100.5, -0.4], np.float32)
    longs = rt.to_numpy(rt.eval("function(h) return h:long() end")(half_of(rt, y)))
    np.testing.assert_array_equal(longs, np.trunc(y.astype(np.float16).astype(np.float64)).astype(np.int64))
    # :cudaHalf() from every Cuda type, and copy into a half view of another layout
    for name in ("Cuda", "CudaDouble", "CudaLong", "CudaInt", "CudaByte"):
        src = rt.eval("function(n) return torch.%sTensor and torch[n .. 'Tensor'](3, 4):copy("
                      "torch.range(1, 12):view(3, 4)) end" % name)(name)
        h = rt.eval("function(s) local o = torch.CudaHalfTensor(4, 3):t() return o:copy(s) end")(src)
        np.testing.assert_array_equal(values(rt, h), np.arange(1, 13, dtype=np.float16).reshape(3, 4))


def test_elements_views_and_indexing(cuda, rng):
    rt = cuda
    x = rng.standard_normal((4, 5)).astype(np.float32)
    h = half_of(rt, x)
    hx = x.astype(np.float16)
    get = rt.eval("function(t, i, j) return t[i][j], t[{i, j}], t[torch.LongStorage({i % 5, j % 6})] end")
    for i, j in [(1, 1), (4, 5), (2, 3), (-1, -1)]:
        a, b, c = get(h, i, j)
        want = float(hx[i - 1 if i > 0 else i, j - 1 if j > 0 else j])
        assert a == b == c == want
    # table views: a range keeps its dimension, a number selects, {} keeps all
    view = rt.eval("function(t) return t[{{2, 3}, {}}], t[{{}, 4}], t[{-1, {2, -2}}] end")(h)
    np.testing.assert_array_equal(values(rt, view[0]), hx[1:3])
    np.testing.assert_array_equal(values(rt, view[1]), hx[:, 3])
    np.testing.assert_array_equal(values(rt, view[2]), hx[-1, 1:-1])
    # writes go to the shared storage, rounded to half
    rt.eval("function(t) t[{2, 3}] = 1/3; t[{{1}, {}}] = 7; t[3][4] = -2.5; t[{{4}, {1, 2}}]:fill(65519) end")(h)
    hx[1, 2], hx[0, :], hx[2, 3], hx[3, 0:2] = 1 / 3, 7, -2.5, 65519
    np.testing.assert_array_equal(values(rt, h), hx)
    # a mask selects (through float), a mask assignment writes
    mask = rt.eval("function(t) return t:gt(0) end")(h)
    assert typename(rt, mask) in ("torch.CudaByteTensor",)
    sel = rt.eval("function(t, m) return t[m] end")(h, mask)
    assert typename(rt, sel) == "torch.CudaHalfTensor"
    np.testing.assert_array_equal(values(rt, sel), hx[hx > 0])
    rt.eval("function(t, m) t[m] = 0.1 end")(h, mask)
    hx[hx > 0] = np.float16(0.1)
    np.testing.assert_array_equal(values(rt, h), hx)
    rt.eval("function(t) HALF = t end")(h)
    with pytest.raises(LuaError, match="out of range"):
        rt.execute("return HALF[{5, 1}]")


POINTWISE = [
    # (Lua with a, b and the result r, the numpy oracle on float32 operands)
    ("r = a + b", lambda a, b: a + b),
    ("r = a - b * 2", lambda a, b: a - np.float16(b * np.float32(2)).astype(np.float32)),
    ("r = torch.cmul(a, b)", lambda a, b: a * b),
    ("r = a:clone():add(0.25)", lambda a, b: a + np.float32(0.25)),
    ("r = a:clone():mul(-3)", lambda a, b: a * np.float32(-3)),
    ("r = torch.cdiv(a, b)", lambda a, b: a / b),
    ("r = a:clone():addcmul(0.5, a, b)", lambda a, b: a + np.float32(0.5) * (a * b)),
    ("r = torch.CudaHalfTensor(); r:add(a, b)", lambda a, b: a + b),
    ("r = torch.abs(a)", lambda a, b: np.abs(a)),
    ("r = -a", lambda a, b: -a),
    ("r = torch.clamp(a, -0.5, 0.5)", lambda a, b: np.clip(a, np.float32(-0.5), np.float32(0.5))),
    ("r = torch.cmax(a, b)", lambda a, b: np.maximum(a, b)),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "narrowed"])
@pytest.mark.parametrize("code,oracle", POINTWISE, ids=[c for c, _ in POINTWISE])
def test_pointwise_math_is_floats_rounded_once_to_half(cuda, rng, layout, code, oracle):
    rt = cuda
    shape = (7, 9)
    x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32) + 3
    view = {"contiguous": "function(t) return t end", "transposed": "function(t) return t:t() end",
            "narrowed": "function(t) return t:narrow(2, 2, 5) end"}[layout]
    npview = {"contiguous": lambda a: a, "transposed": lambda a: a.T,
              "narrowed": lambda a: a[:, 1:6]}[layout]
    run = rt.eval("function(a, b) local view = %s; a, b = view(a), view(b); local r; %s; return r end"
                  % (view, code))
    before = staged(rt)
    r = run(half_of(rt, x), half_of(rt, y))
    assert typename(rt, r) == "torch.CudaHalfTensor"
    a, b = npview(x.astype(np.float16).astype(np.float32)), npview(y.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(values(rt, r), oracle(a, b).astype(np.float16))
    assert staged(rt) == before   # on the GPU backend, the float methods ran on the device


def test_unary_functions_within_one_half_ulp(cuda, rng):
    rt = cuda
    x = rng.uniform(0.1, 3, (5, 6)).astype(np.float32)
    hx = x.astype(np.float16).astype(np.float32)
    for fn, oracle in [("exp", np.exp), ("log", np.log), ("tanh", np.tanh), ("sqrt", np.sqrt),
                       ("sigmoid", lambda v: 1 / (1 + np.exp(-v)))]:
        r = rt.eval("function(a) return torch.%s(a) end" % fn)(half_of(rt, x))
        got = values(rt, r).astype(np.float64)
        want = oracle(hx.astype(np.float64))
        ulp = np.spacing(want.astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(got - want) <= ulp), fn
        # and in place, on the half tensor itself
        t = half_of(rt, x)
        same = rt.eval("function(t) return rawequal(t:%s(), t) or torch.pointer(t:%s()) == torch.pointer(t) end"
                       % (fn, fn))(t)
        assert same


def test_reductions_accumulate_in_float(cuda, rng):
    rt = cuda
    x = rng.standard_normal((6, 11)).astype(np.float32)
    h = half_of(rt, x)
    hx = x.astype(np.float16).astype(np.float64)
    total, mean, mx, mn = rt.eval("function(t) return t:sum(), t:mean(), t:max(), t:min() end")(h)
    assert total == pytest.approx(hx.sum(), rel=1e-5, abs=1e-5)
    assert mean == pytest.approx(hx.mean(), rel=1e-5, abs=1e-5)
    assert (mx, mn) == (hx.max(), hx.min())
    s1, s2 = rt.eval("function(t) return t:sum(1), torch.sum(t, 2) end")(h)
    assert typename(rt, s1) == typename(rt, s2) == "torch.CudaHalfTensor"
    np.testing.assert_allclose(values(rt, s1).astype(np.float64), hx.sum(0, keepdims=True), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(values(rt, s2).astype(np.float64), hx.sum(1, keepdims=True), rtol=2e-3, atol=2e-3)
    m, i = rt.eval("function(t) return t:max(2) end")(h)
    assert typename(rt, m) == "torch.CudaHalfTensor" and typename(rt, i) == "torch.CudaLongTensor"
    np.testing.assert_array_equal(values(rt, m)[:, 0], hx.max(1).astype(np.float16))
    idx = rt.to_numpy(rt.eval("function(i) return i:long() end")(i))[:, 0]
    np.testing.assert_array_equal(hx[np.arange(6), idx - 1], hx.max(1))
    # result-first forms write into the given half tensor
    r = rt.eval("function(t) local r = torch.CudaHalfTensor(); torch.sum(r, t, 1); return r end")(h)
    np.testing.assert_allclose(values(rt, r).astype(np.float64), hx.sum(0, keepdims=True), rtol=2e-3, atol=2e-3)


def test_half_math_runs_on_half_kernels_without_float_copies_on_the_gpu(cuda, rng):
    """On the GPU backend the pointwise methods and reductions whose kernels have Half instantiations take half
    operands directly (matrix products: cublasGemmEx with half operands and float arithmetic), so a method on half
    tensors makes as many launches as on float ones (the float route made four more per operand: a zero-filled
    float tensor, a conversion there, and one back)."""
    rt = cuda
    if rt.eval("cutorch.backend") != "gpu":
        pytest.skip("the GPU backend's launches (CI runs this file on the emulated driver too)")
    x, y = rng.standard_normal((9, 13)).astype(np.float32), rng.standard_normal((9, 13)).astype(np.float32)
    half = (half_of(rt, x), half_of(rt, y))
    single = rt.eval("function(a, b) return a:float():cuda(), b:float():cuda() end")(*half)
    launches = rt.eval("""function(code, a, b)
        local f = loadstring('local a, b = ...; ' .. code)
        local before = cutorch.deviceCallCounts().launches
        f(a, b)
        return cutorch.deviceCallCounts().launches - before
    end""")
    for code in ("a:add(b)", "a:csub(0.5, b)", "a:mul(1.5)", "a:cmul(b)", "a:cdiv(b:clone():abs():add(1))",
                 "a:addcmul(0.25, a, b)", "a:tanh()", "a:sign()", "a:clamp(-1, 1)", "a:neg()", "return a:sum()",
                 "return a:sum(1)", "return a:max(2)", "return a:mean()", "return a:norm()",
                 "return torch.mm(a, b:t())", "return torch.mv(a, b:select(1, 2))", "return torch.ger(a[1], b[2])"):
        assert launches(code, *half) == launches(code, *single), code
    assert launches("a:add(b)", *half) == 1
    # and the values are still the float computation rounded once to half (the tests above check every form)
    r = rt.eval("function(a, b) return a:clone():add(2, b) end")(half_of(rt, x), half_of(rt, y))
    want = (x.astype(np.float16).astype(np.float32) + 2 * y.astype(np.float16).astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(values(rt, r), want)


def test_matrix_products(cuda, rng):
    rt = cuda
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    c = rng.standard_normal((5, 3)).astype(np.float32)
    ha, hb, hc = (v.astype(np.float16).astype(np.float64) for v in (a, b, c))
    mm, addmm, tmm = rt.eval("""function(a, b, c)
        return torch.mm(a, b), c:clone():addmm(0.5, c, 2, a, b), torch.mm(b:t(), a:t())
    end""")(half_of(rt, a), half_of(rt, b), half_of(rt, c))
    for got, want in [(mm, ha @ hb), (addmm, 0.5 * hc + 2 * (ha @ hb)), (tmm, (ha @ hb).T)]:
        assert typename(rt, got) == "torch.CudaHalfTensor"
        g = values(rt, got).astype(np.float64)
        # the float32 product rounded once to half: within one half ulp of the exact product
        assert np.all(np.abs(g - want) <= np.spacing(np.abs(want).astype(np.float16)).astype(np.float64) * 1.01)


def test_mixing_with_float_cuda_tensors_is_refused_as_cutorch_did(cuda):
    rt = cuda
    with pytest.raises(LuaError, match="a torch.CudaTensor among torch.CudaHalfTensor arguments"):
        rt.execute("torch.CudaHalfTensor(3):fill(1):add(torch.CudaTensor(3):fill(1))")
    for other in ("torch.DoubleTensor", "torch.CudaDoubleTensor", "torch.HalfTensor"):
        with pytest.raises(LuaError, match="torch.CudaHalfTensor expected, got " + other):
            rt.execute("local x = torch.CudaHalfTensor(3):fill(1) + %s(3):fill(1)" % other)
        with pytest.raises(LuaError, match="torch.CudaHalfTensor expected, got " + other):
            rt.execute("torch.CudaHalfTensor(3):fill(1):cmul(%s(3):fill(1))" % other)
    # the host HalfTensor keeps Torch7's rule: no math
    with pytest.raises(LuaError, match="no Half math"):
        rt.execute("local x = torch.HalfTensor(3):fill(1) + torch.HalfTensor(3):fill(1)")


def read_t7_half_tensor(data):
    """Our own minimal reader of a binary .t7 holding one torch.CudaHalfTensor: (class names, sizes, strides,
    offset, storage bits) as cutorch wrote them (Torch7's File object layout, binary16 storage elements)."""
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v

    def string():
        (n,) = take("i")
        nonlocal pos
        s = data[pos:pos + n].decode()
        pos += n
        return s

    def torch_object():
        (kind,) = take("i")
        assert kind == 4          # TYPE_TORCH
        take("i")                 # the object's index
        version, name = string(), string()
        assert version == "V 1"
        return name

    names = [torch_object()]
    (ndim,) = take("i")
    sizes, strides = take("%dq" % ndim), take("%dq" % ndim)
    (offset,) = take("q")
    names.append(torch_object())
    (n,) = take("q")
    bits = np.frombuffer(data, np.uint16, n, pos)
    return names, sizes, strides, offset, bits


def test_t7_files_in_cutorchs_layout_round_trip_and_load_without_cutorch(cuda, rng, tmp_path):
    rt = cuda
    x = rng.standard_normal((3, 4)).astype(np.float32)
    path = str(tmp_path / "half.t7")
    rt.eval("function(t, p) torch.save(p, t:t()) end")(half_of(rt, x), path)
    names, sizes, strides, offset, bits = read_t7_half_tensor(open(path, "rb").read())
    assert names == ["torch.CudaHalfTensor", "torch.CudaHalfStorage"]
    assert (sizes, strides, offset) == ((4, 3), (1, 4), 1)
    np.testing.assert_array_equal(bits, x.astype(np.float16).view(np.uint16).ravel())
    back = rt.eval("function(p) return torch.load(p) end")(path)
    assert typename(rt, back) == "torch.CudaHalfTensor"
    np.testing.assert_array_equal(values(rt, back), x.astype(np.float16).T)
    # ascii too (elements as numbers)
    rt.eval("function(t, p) torch.save(p, t, 'ascii') end")(half_of(rt, x), path + ".ascii")
    back = rt.eval("function(p) return torch.load(p, 'ascii') end")(path + ".ascii")
    np.testing.assert_array_equal(values(rt, back), x.astype(np.float16))


def test_a_file_with_cuda_half_tensors_loads_as_half_tensors_without_cutorch(rt, rng, tmp_path):
    x = rng.standard_normal((2, 5)).astype(np.float32)
    path = str(tmp_path / "half.t7")
    rt.execute("require 'cutorch'")
    rt.eval("function(f, p) torch.save(p, f:cudaHalf()) end")(rt.from_numpy(x), path)
    # a fresh state without cutorch: the aliases of torch/File.lua
    from pytorch_bridge import Runtime
    plain = Runtime(threads=1)
    t = plain.eval("function(p) return torch.load(p) end")(path)
    assert plain.eval("function(t) return torch.type(t) end")(t) == "torch.HalfTensor"
    np.testing.assert_array_equal(plain.to_numpy(plain.eval("function(t) return t:float() end")(t)),
                                  x.astype(np.float16).astype(np.float32))


def test_printing_and_storages(cuda):
    rt = cuda
    text = rt.eval("tostring(torch.CudaHalfTensor({{1.5, -2}, {1/3, 65504}}))")
    assert "[torch.CudaHalfTensor of size 2x2]" in text and "6.5504e+04" in text and "3.3325e-01" in text
    s = rt.eval("torch.CudaHalfStorage({1, 2.5, 1/3})")
    got = rt.eval("function(s) return s:size(), s[2], s[3], torch.type(s:float()) end")(s)
    assert got == (3, 2.5, float(np.float16(1 / 3)), "torch.FloatStorage")
    assert "[torch.CudaHalfStorage of size 3]" in rt.eval("function(s) return tostring(s) end")(s)


def test_an_nn_linear_layer_trains_in_half(cuda, rng):
    rt = cuda
    x = rng.standard_normal((4, 6)).astype(np.float32)
    out = rt.eval("""function(x)
        require 'nn'
        torch.manualSeed(3)
        local lin = nn.Linear(6, 3)
        local ref = lin:clone():double()
        lin:type('torch.CudaHalfTensor')
        local h = x:cudaHalf()
        local y = lin:forward(h)
        local gi = lin:backward(h, y:clone():fill(1))
        local xd = h:double()
        local yd = ref:forward(xd)
        local gid = ref:backward(xd, yd:clone():fill(1))
        return torch.type(y), torch.type(lin.gradWeight), (y:double() - yd):abs():max(), (gi:double() - gid):abs():max(),
               (lin.gradWeight:double() - ref.gradWeight):abs():max(), yd:abs():max()
    end""")(rt.from_numpy(x))
    ty, gwty, dy, dgi, dgw, scale = out
    assert ty == gwty == "torch.CudaHalfTensor"
    # each result is the float computation rounded to half (weights already half): a few half ulps at most
    assert dy <= 4e-3 * max(1.0, scale) and dgi <= 4e-3 and dgw <= 8e-3
