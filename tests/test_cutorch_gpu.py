"""cutorch's GPU backend (lua/cutorch/gpu.lua, native/src/cuda_storage.c): the Cuda types in device memory.

The tests below need the GPU backend (LUATORCH_CUTORCH=gpu and a CUDA device) and skip without it; .ci/gpu-check
runs them on a GPU machine. In CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs them in a process whose libcuda is
tests/cuda_host/emulated_driver.c with two devices and LT_EMULATED_CUDA_GUARD=1: device memory there is an arena
per device that the host cannot read, and a kernel sees only its own device's, so any host code that touched a
device pointer (instead of going through the driver's copies and kernels), or a kernel given another GPU's
memory, would crash the run. The tests of several GPUs skip on a machine with one. Oracles: numpy on the same values, and the
CPU backend's own methods for the staged ones."""
import glob
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from pytorch_bridge import LuaError

HERE = os.path.dirname(os.path.abspath(__file__))
HOST_OF = {"Cuda": "Float", "CudaDouble": "Double", "CudaLong": "Long", "CudaInt": "Int", "CudaByte": "Byte"}
DTYPE = {"Float": np.float32, "Double": np.float64, "Long": np.int64, "Int": np.int32, "Byte": np.uint8}


@pytest.fixture
def gpu(rt):
    rt.execute("require 'cutorch'")
    if rt.eval("cutorch.backend") != "gpu":
        pytest.skip("cutorch's GPU backend is not on (LUATORCH_CUTORCH=gpu on a GPU machine; the last test of this "
                    "file runs these on the emulated driver)")
    rt.execute("cutorch.setHostFallback('quiet')")
    return rt


def to_device(rt, array, cuda_name):
    """A torch.<cuda_name>Tensor with array's values (copied from a host tensor of the same element type)."""
    host = rt.from_numpy(np.ascontiguousarray(array, dtype=DTYPE[HOST_OF[cuda_name]]))
    return rt.eval("function(t, n) return t:type('torch.' .. n .. 'Tensor') end")(host, cuda_name)


def to_host(rt, t):
    """numpy values of a Cuda tensor, through a host tensor of its element type."""
    host = rt.eval("""function(t)
       local hostName = t:type():gsub('Cuda', ''):gsub('^torch%.Tensor$', 'torch.FloatTensor')
       if hostName == 'torch.Tensor' then hostName = 'torch.FloatTensor' end
       return t:type(hostName)
    end""")(t)
    return rt.to_numpy(host).copy()


def on_device(rt, t):
    return bool(rt.eval("function(t) return torch.C.lt_tensor_is_device(t._c) ~= 0 end")(t))


def fallbacks(rt):
    return dict(rt.eval("function() local o = {} for k, v in pairs(cutorch.hostFallbacks()) do o[k] = v end "
                        "return o end")().items())


LAYOUTS = {
    "contiguous": "function(t) return t end",
    "transposed": "function(t) return t:t() end",
    "narrowed": "function(t) return t:narrow(2, 2, t:size(2) - 3) end",
    "strided": "function(t) return t:unfold(1, 1, 2):select(3, 1) end",   # every other row
}


def view_of(array, layout):
    return {"contiguous": lambda a: a, "transposed": lambda a: a.T, "narrowed": lambda a: a[:, 1:a.shape[1] - 2],
            "strided": lambda a: a[::2]}[layout](array)


def test_the_backend_is_the_gpu_and_storages_are_device_memory(gpu, rng):
    rt = gpu
    assert rt.eval("cutorch.getDeviceCount()") >= 1
    assert rt.eval("cutorch.getDevice()") == 1
    props = rt.eval("cutorch.getDeviceProperties(1)")
    assert props["major"] >= 3 and props["totalGlobalMem"] > 0 and props["multiProcessorCount"] >= 1
    free, total = rt.eval("{cutorch.getMemoryUsage(1)}").values()
    assert 0 < free <= total
    x = rng.standard_normal((3, 5)).astype(np.float32)
    t = to_device(rt, x, "Cuda")
    assert on_device(rt, t) and rt.eval("function(t) return t:getDevice() end")(t) == 1
    assert not on_device(rt, rt.eval("function(t) return t:float() end")(t))
    assert rt.eval("function(t) return t:storage():getDevice() end")(t) == 1
    np.testing.assert_array_equal(to_host(rt, t), x)
    with pytest.raises(LuaError, match="out of range"):
        rt.execute("cutorch.setDevice(%d)" % (rt.eval("cutorch.getDeviceCount()") + 1))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_copies_between_host_and_device_in_any_layout_and_type(gpu, rng, layout):
    rt = gpu
    view = rt.eval(LAYOUTS[layout])
    for src_name, dst_name in [("Cuda", "CudaDouble"), ("CudaDouble", "Cuda"), ("Cuda", "CudaLong"),
                               ("CudaLong", "CudaByte"), ("CudaDouble", "CudaInt"), ("CudaInt", "Cuda")]:
        src_host = HOST_OF[src_name]
        x = (rng.standard_normal((6, 7)) * 50).astype(DTYPE[src_host])
        if src_host in ("Long", "Int"):
            x = rng.integers(0, 200, (6, 7)).astype(DTYPE[src_host])
        d = to_device(rt, x, src_name)
        src_view = view(d)
        want = view_of(x, layout)
        # device -> device with conversion, into a destination of another layout (a transposed contiguous one)
        dst = rt.eval("function(v, n) local o = torch[n .. 'Tensor'](v:size(2), v:size(1)):t() "
                      "return o:copy(v) end")(src_view, dst_name)
        got = to_host(rt, dst)
        dst_dtype = DTYPE[HOST_OF[dst_name]]
        if HOST_OF[dst_name] == "Byte":
            np.testing.assert_array_equal(got, want.astype(np.int64).astype(np.uint8))
        else:
            np.testing.assert_array_equal(got, want.astype(dst_dtype))
        # device view -> host, and host view -> device view (a NaN-poisoned destination)
        np.testing.assert_array_equal(to_host(rt, src_view), want)
        poisoned = to_device(rt, np.zeros(x.shape, DTYPE[src_host]), src_name)
        rt.eval("function(t) if t:type():match('Cuda') and not t:type():match('Long') and "
                "not t:type():match('Int') then t:fill(0 / 0) end end")(poisoned)
        host_view = rt.eval("function(v, t) return v(t) end")(view, rt.from_numpy(x.copy()))
        target = view(poisoned)
        rt.eval("function(a, b) a:copy(b) end")(target, host_view)
        np.testing.assert_array_equal(to_host(rt, target), want)
    assert fallbacks(rt) == {}


def test_elements_storages_and_tables(gpu, rng):
    rt = gpu
    x = rng.standard_normal((4, 3))
    t = to_device(rt, x, "CudaDouble")
    assert rt.eval("function(t) return t[2][3] end")(t) == x[1, 2]
    assert rt.eval("function(t) return t[torch.LongStorage{4, 1}] end")(t) == x[3, 0]
    rt.eval("function(t) t[2][3] = 7.5; t[torch.LongStorage{1, 1}] = -2; t[3] = 4 end")(t)
    x[1, 2], x[0, 0], x[2, :] = 7.5, -2, 4
    np.testing.assert_array_equal(to_host(rt, t), x)
    s = rt.eval("function(t) return t:storage() end")(t)
    assert rt.eval("function(s) return s[5], #s end")(s) == (x.reshape(-1)[4], 12)
    rt.eval("function(s) s[12] = 99 end")(s)
    assert to_host(rt, t)[3, 2] == 99
    assert list(rt.eval("function(t) return t[1]:totable() end")(t).values()) == list(x[0])
    assert list(rt.eval("function(s) return s:totable() end")(s).values())[11] == 99
    rt.eval("function(s) s:copy({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) end")(s)
    np.testing.assert_array_equal(to_host(rt, t), np.arange(1, 13).reshape(4, 3))
    # a storage grown on the device keeps its elements; a new one is zero-filled
    rt.eval("function(s) s:resize(20) end")(s)
    assert list(rt.eval("function(s) return s:totable() end")(s).values())[:12] == list(range(1, 13))
    np.testing.assert_array_equal(to_host(rt, rt.eval("torch.CudaTensor(3, 3)")), np.zeros((3, 3)))
    # tables make device tensors and storages through host copies (a direct write would fault on a GPU)
    np.testing.assert_array_equal(to_host(rt, rt.eval("torch.CudaDoubleTensor{{1, 2, 3}, {4, 5, 6}}")),
                                  [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(to_host(rt, rt.eval("torch.CudaLongTensor{7, -8}")), [7, -8])
    assert rt.eval("torch.CudaTensor({}):nElement()") == 0
    assert list(rt.eval("torch.CudaStorage{1.5, 2, 3}:totable()").values()) == [1.5, 2, 3]
    with pytest.raises(LuaError, match="inconsistent table sizes"):
        rt.eval("torch.CudaTensor{{1, 2}, {3}}")
    assert fallbacks(rt) == {}


POINTWISE = [
    # (Lua call on x, y, z (device views of the same shapes), numpy of the same)
    ("x:add(2.5)", lambda x, y, z: x + np.float32(2.5)),
    ("x:add(y)", lambda x, y, z: x + y),
    ("x:add(-3, y)", lambda x, y, z: x + np.float32(-3) * y),
    ("z:add(x, y)", lambda x, y, z: x + y),
    ("z:add(x, 0.5, y)", lambda x, y, z: x + np.float32(0.5) * y),
    ("x:csub(y)", lambda x, y, z: x - y),
    ("x:mul(3)", lambda x, y, z: x * np.float32(3)),
    ("z:div(x, 4)", lambda x, y, z: x / np.float32(4)),
    ("x:cmul(y)", lambda x, y, z: x * y),
    ("z:cdiv(x, y)", lambda x, y, z: x / y),
    ("x:addcmul(0.5, y, z)", lambda x, y, z: None),   # fused: checked loosely below
    ("x:addcdiv(2, y, z)", lambda x, y, z: None),
    ("x:abs()", lambda x, y, z: np.abs(x)),
    ("z:neg(x)", lambda x, y, z: -x),
    ("x:clamp(-0.5, 0.5)", lambda x, y, z: np.clip(x, np.float32(-0.5), np.float32(0.5))),
    ("z:sqrt(y)", lambda x, y, z: np.sqrt(y)),
    ("z:exp(x)", lambda x, y, z: np.exp(x)),
    ("z:tanh(x)", lambda x, y, z: np.tanh(x)),
    ("z:sigmoid(x)", lambda x, y, z: 1 / (1 + np.exp(-x.astype(np.float64)))),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "narrowed"])
def test_pointwise_methods_run_on_the_device(gpu, rng, layout):
    rt = gpu
    view = rt.eval(LAYOUTS[layout])
    for code, ref in POINTWISE:
        x = rng.standard_normal((6, 8)).astype(np.float32)
        y = (rng.random((6, 8)) + 0.5).astype(np.float32)
        z = (rng.random((6, 8)) + 0.5).astype(np.float32)
        dx, dy, dz = (view(to_device(rt, a, "Cuda")) for a in (x, y, z))
        vx, vy, vz = (view_of(a, layout) for a in (x, y, z))
        rt.eval("function(x, y, z) %s end" % code)(dx, dy, dz)
        out = to_host(rt, dz if code.startswith("z:") else dx)
        if code.startswith("x:addc"):
            v = float(code.split("(")[1].split(",")[0])
            exact = vx.astype(np.float64) + v * (vy.astype(np.float64) * vz if "cmul" in code else vy.astype(np.float64) / vz)
            np.testing.assert_allclose(out, exact, rtol=3e-7, atol=1e-6, err_msg=code)
        else:
            np.testing.assert_allclose(out, ref(vx, vy, vz), rtol=2e-6, atol=1e-6, err_msg=code)
    assert fallbacks(rt) == {}, "some pointwise methods did not run on the device"


def test_reductions_whole_and_along_a_dimension(gpu, rng):
    rt = gpu
    x = rng.standard_normal((5, 9))
    t = rt.eval("function(t) return t:t() end")(to_device(rt, x, "CudaDouble"))   # a transposed view
    xt = x.T
    for op, ref in [("sum", np.sum), ("prod", np.prod), ("mean", np.mean), ("max", np.max), ("min", np.min)]:
        assert rt.eval("function(t) return t:%s() end" % op)(t) == pytest.approx(ref(xt), rel=1e-12, abs=1e-12), op
        for dim in (1, 2):
            got = rt.eval("function(t) local v, i = t:%s(%d) return {v, i} end" % (op, dim))(t)
            np.testing.assert_allclose(to_host(rt, got[1]), ref(xt, axis=dim - 1, keepdims=True), rtol=1e-12,
                                       atol=1e-12, err_msg="%s(%d)" % (op, dim))
            if op in ("max", "min"):
                arg = (np.argmax if op == "max" else np.argmin)(xt, axis=dim - 1)
                assert rt.eval("function(i) return i:type() end")(got[2]) == "torch.CudaLongTensor"
                np.testing.assert_array_equal(to_host(rt, got[2]).reshape(-1), arg + 1)
    assert rt.eval("function(t) return t:norm() end")(t) == pytest.approx(np.linalg.norm(x), rel=1e-12)
    assert rt.eval("function(t) return t:norm(1) end")(t) == pytest.approx(np.abs(x).sum(), rel=1e-12)
    # the functional forms that are their method: torch.sum(x, 1) is x:sum(1), on the device too
    assert rt.eval("function(t) return torch.sum(t) end")(t) == pytest.approx(xt.sum(), rel=1e-12)
    assert rt.eval("function(t) return torch.norm(t) end")(t) == pytest.approx(np.linalg.norm(x), rel=1e-12)
    np.testing.assert_allclose(to_host(rt, rt.eval("function(t) return torch.mean(t, 2) end")(t)),
                               xt.mean(1, keepdims=True), rtol=1e-12)
    got = rt.eval("function(t) local v, i = torch.max(t, 1) return {v, i} end")(t)
    np.testing.assert_allclose(to_host(rt, got[1]), xt.max(0, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(to_host(rt, got[2]).reshape(-1), xt.argmax(0) + 1)
    assert fallbacks(rt) == {}
    # on host tensors the same functions run as before
    assert rt.eval("function(t) return torch.sum(t:double(), 2):size(2) end")(t) == 1
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("name,tol", [("Cuda", 2e-5), ("CudaDouble", 1e-12)])
def test_matrix_products_over_cublas(gpu, rng, name, tol):
    rt = gpu
    a, b, m = rng.standard_normal((7, 5)), rng.standard_normal((5, 6)), rng.standard_normal((7, 6))
    da, db, dm = (to_device(rt, v, name) for v in (a, b, m))
    bt = rt.eval("function(b) return b:t():clone():t() end")(db)   # column-major: gemm reads it as it lies
    forms = [("r:mm(a, b)", a @ b), ("r:addmm(m, a, b)", m + a @ b), ("r:addmm(0.5, m, 2, a, b)", 0.5 * m + 2 * a @ b),
             ("m:addmm(a, bt)", m + a @ b), ("m:addmm(0, 3, a, b)", 3 * a @ b)]
    for code, want in forms:
        out = rt.eval("function(a, b, m, bt) local r = torch.%sTensor() m = m:clone() %s return %s end"
                      % (name, code, code.split(":")[0]))(da, db, dm, bt)
        np.testing.assert_allclose(to_host(rt, out), want, rtol=tol, atol=tol, err_msg=code)
    prod = rt.eval("function(a, b) return a * b end")(da, db)
    np.testing.assert_allclose(to_host(rt, prod), a @ b, rtol=tol, atol=tol)
    # matrix-vector and outer products, the vectors contiguous and strided (a column of a matrix)
    x, y, v = b[:, 2], m[3], rng.standard_normal(7)
    dv = to_device(rt, v, name)
    forms = [("r:mv(a, b:select(2, 3))", a @ x), ("r:mv(a, b:select(2, 3):clone())", a @ x),
             ("r = v:clone():addmv(a, b:select(2, 3))", v + a @ x),
             ("r = v:clone():addmv(0.5, 2, a, b:select(2, 3))", 0.5 * v + 2 * a @ x),
             ("r:addr(m, a:select(2, 1), m:select(1, 4))", m + np.outer(a[:, 0], y)),
             ("r = m:clone():addr(2, v, m:select(1, 4))", m + 2 * np.outer(v, y)),
             ("r:ger(v, m:select(1, 4))", np.outer(v, y))]
    for code, want in forms:
        out = rt.eval("function(a, b, m, v) local r = torch.%sTensor() %s return r end" % (name, code))(da, db, dm, dv)
        np.testing.assert_allclose(to_host(rt, out), want, rtol=tol, atol=tol, err_msg=code)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("name,tol", [("Cuda", 2e-5), ("CudaDouble", 1e-12)])
def test_batched_products_one_cublas_product_per_entry(gpu, rng, name, tol):
    rt = gpu
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5, 2))
    m3, m2 = rng.standard_normal((3, 4, 2)), rng.standard_normal((4, 2))
    da, db, dm3, dm2 = (to_device(rt, v, name) for v in (a, b, m3, m2))
    # a factor laid out as a transposed view (each entry column-major), and a result that is a narrowed view
    bt = rt.eval("function(b) return b:transpose(2, 3):clone():transpose(2, 3) end")(db)
    ab = np.einsum("bij,bjk->bik", a, b)
    forms = [("r:bmm(a, b)", ab), ("r = torch.bmm(a, bt)", ab), ("r:baddbmm(m3, a, b)", m3 + ab),
             ("r:baddbmm(0.5, m3, 2, a, bt)", 0.5 * m3 + 2 * ab), ("m3:baddbmm(0, 3, a, b) r = m3", 3 * ab),
             ("r = torch.baddbmm(m3, a, b)", m3 + ab), ("r:addbmm(m2, a, b)", m2 + ab.sum(0)),
             ("r:addbmm(0.5, m2, -1, a, bt)", 0.5 * m2 - ab.sum(0)), ("m2:addbmm(a, b) r = m2", m2 + ab.sum(0)),
             ("r = torch.addbmm(m2, a, b)", m2 + ab.sum(0)),
             ("r = torch.%sTensor(3, 4, 7):narrow(3, 2, 2) r:bmm(a, b)" % name, ab)]
    for code, want in forms:
        out = rt.eval("function(a, b, m3, m2, bt) local r = torch.%sTensor() m3, m2 = m3:clone(), m2:clone() %s "
                      "return r end" % (name, code))(da, db, dm3, dm2, bt)
        np.testing.assert_allclose(to_host(rt, out), want, rtol=tol, atol=tol, err_msg=code)
    assert fallbacks(rt) == {}
    # a result that is one of the factors runs staged, and still right
    got = rt.eval("function(a) local x = a:narrow(3, 1, 4):clone() x:bmm(x, x) return x end")(da)
    sq = a[:, :, :4]
    np.testing.assert_allclose(to_host(rt, got), np.einsum("bij,bjk->bik", sq, sq), rtol=tol, atol=tol)
    assert sum(fallbacks(rt).values()) == 1


def test_cat_and_repeat_tensor_copy_on_the_device(gpu, rng):
    rt = gpu
    rt.execute("cutorch.setHostFallback('error')")
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    da, db = to_device(rt, a, "Cuda"), to_device(rt, b, "Cuda")
    for code, want in [("torch.cat(a, b, 1)", np.concatenate([a, b])),
                       ("torch.cat({a:t(), b:t(), a:t()}, 2)", np.concatenate([a.T, b.T, a.T], 1)),
                       ("torch.cat(a:t(), b:t())", np.concatenate([a.T, b.T], 1)),    # the last dimension
                       ("torch.CudaTensor(9):cat(a, b, 1)", np.concatenate([a, b])),
                       ("a:clone():cat(b, 1)", np.concatenate([a, b])),
                       ("torch.cat(a, torch.CudaTensor(), 1)", a),
                       ("a:repeatTensor(2, 1, 2)", np.tile(a, (2, 1, 2))),
                       ("a:t():repeatTensor(1, 3)", np.tile(a.T, (1, 3)))]:
        r = rt.eval("function(a, b) return %s end" % code)(da, db)
        assert on_device(rt, r), code
        np.testing.assert_array_equal(to_host(rt, r), want, err_msg=code)
    if rt.eval("cutorch.getDeviceCount()") >= 2:   # an input on another GPU: the result on the current one
        r = rt.eval("""function(a, b)
           local other = cutorch.withDevice(2, function() return b:clone() end)
           local r = torch.cat(a, other, 1)
           return {r, r:getDevice(), other:getDevice()} end""")(da, db)
        assert (r[2], r[3]) == (1, 2)
        np.testing.assert_array_equal(to_host(rt, r[1]), np.concatenate([a, b]))
    assert fallbacks(rt) == {}


def test_diag_and_equal_on_the_device(gpu, rng):
    rt = gpu
    x, v = rng.standard_normal((4, 6)), rng.standard_normal(5)
    dx, dv = to_device(rt, x, "CudaDouble"), to_device(rt, v, "CudaDouble")
    for code, want in [("x:diag()", np.diag(x)), ("x:diag(2)", np.diag(x, 2)), ("x:diag(-3)", np.diag(x, -3)),
                       ("x:t():diag(1)", np.diag(x.T, 1)), ("torch.diag(x, 1)", np.diag(x, 1)),
                       ("v:diag()", np.diag(v)), ("v:diag(2)", np.diag(v, 2)), ("v:diag(-1)", np.diag(v, -1)),
                       ("torch.CudaDoubleTensor(3, 3):fill(7):diag(v, 1)", np.diag(v, 1)),
                       ("torch.CudaDoubleTensor(9):diag(x)", np.diag(x))]:
        r = rt.eval("function(x, v) return %s end" % code)(dx, dv)
        assert on_device(rt, r), code
        np.testing.assert_array_equal(to_host(rt, r), want, err_msg=code)
    y = x.copy()
    y[2, 3] = np.nan
    dy = to_device(rt, y, "CudaDouble")
    eq = rt.eval("""function(x, y) return {x:equal(x:clone()), x:equal(y), y:equal(y:clone()), x:equal(x:t()),
                                         x:equal(x:float():cuda()), torch.equal(x, x:clone())} end""")(dx, dy)
    assert list(eq.values()) == [True, False, False, False, False, True]
    assert fallbacks(rt) == {}


def test_operators_make_device_results(gpu, rng):
    rt = gpu
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    dx, dy = to_device(rt, x, "Cuda"), to_device(rt, y, "Cuda")
    for code, want in [("x + y", x + y), ("x - y", x - y), ("2 + x", x + 2), ("x - 1", x - 1), ("x * 3", x * 3),
                       ("x / 2", x / 2), ("-x", -x)]:
        r = rt.eval("function(x, y) return %s end" % code)(dx, dy)
        assert on_device(rt, r), code
        np.testing.assert_allclose(to_host(rt, r), want, rtol=1e-6, err_msg=code)
    assert fallbacks(rt) == {}


def test_methods_without_a_kernel_run_staged_write_back_and_are_counted(gpu, rng):
    rt = gpu
    x = rng.standard_normal((4, 6)).astype(np.float32)
    d = to_device(rt, x, "Cuda")
    # results: a staged method's result comes back as a device tensor (bhistc: a staged-only method)
    got = rt.eval("function(t) return t:bhistc(5, -2, 2) end")(d)
    assert on_device(rt, got)
    np.testing.assert_array_equal(to_host(rt, got), [np.histogram(row, 5, (-2, 2))[0] for row in x])
    # in place, on a view: the write reaches the device storage and nothing else moves
    rt.eval("function(t) t:narrow(1, 2, 2):apply(function(v) return v * 10 end) end")(d)
    want = x.copy()
    want[1:3] *= 10
    np.testing.assert_allclose(to_host(rt, d), want, rtol=1e-6)
    # a result resized by the call, and one that shares its storage with an argument
    r = rt.eval("function(t) return torch.diag(t:narrow(2, 1, 4)) end")(d)
    assert on_device(rt, r)
    np.testing.assert_allclose(to_host(rt, r), np.diag(want[:, :4]), rtol=1e-6)
    mask = rt.eval("function(t) return t:gt(0) end")(d)
    assert rt.eval("function(m) return m:type() end")(mask) == "torch.CudaByteTensor" and on_device(rt, mask)
    np.testing.assert_array_equal(to_host(rt, mask), (want > 0).astype(np.uint8))
    # a view stays a view of its base after a staged call on it: later writes through it reach the base (a
    # staged call used to give its tensor arguments copies of their storages)
    both = rt.eval("""function(t)
       local v = t:narrow(1, 1, 1)
       local before = torch.pointer(v:storage()) == torch.pointer(t:storage())
       v:bhistc(4)                     -- staged, does not change v
       v:fill(7)                       -- a device kernel through the view
       return {before, torch.pointer(v:storage()) == torch.pointer(t:storage())}
    end""")(d)
    assert both[1] and both[2]
    want[0] = 7
    np.testing.assert_allclose(to_host(rt, d), want, rtol=1e-6)
    counts = fallbacks(rt)
    assert counts.get("torch.CudaTensor:bhistc") == 2 and counts.get("torch.CudaTensor:apply") == 1, counts
    # printing a device tensor prints its values
    text = rt.eval("function(t) return tostring(t) end")(d)
    assert "torch.CudaTensor of size 4x6" in text
    # and the error mode refuses instead of staging
    rt.execute("cutorch.setHostFallback('error')")
    rt.eval("function(t) staged_input = t end")(d)
    with pytest.raises(LuaError, match="bhistc has no GPU kernel yet"):
        rt.execute("staged_input:bhistc(3)")


def test_save_and_load_through_host_memory(gpu, rng, tmp_path):
    from pytorch_bridge import t7

    rt = gpu
    x = rng.standard_normal((3, 7)).astype(np.float32)
    d = to_device(rt, x, "Cuda")
    path = str(tmp_path / "x.t7")
    rt.eval("function(t, p) torch.save(p, t:narrow(2, 2, 4)) end")(d, path)
    back = rt.eval("function(p) return torch.load(p) end")(path)
    assert on_device(rt, back) and rt.eval("function(t) return t:type() end")(back) == "torch.CudaTensor"
    np.testing.assert_array_equal(to_host(rt, back), x[:, 1:5])
    # the file is cutorch's: the independent reader sees a torch.CudaTensor of those values
    with open(path, "rb") as f:
        assert b"torch.CudaTensor" in f.read()
    np.testing.assert_array_equal(t7.load(path), x[:, 1:5])


def test_host_kernels_refuse_gpu_memory_by_name(gpu, rng):
    rt = gpu
    rt.execute("require 'nn'")
    with pytest.raises(LuaError, match="input is in GPU memory, and this module has no GPU version .require 'cunn'"):
        rt.execute("local m = nn.ReLU():cuda() m:forward(torch.CudaTensor(3):fill(-1))")
    # a host kernel reached with tensors in GPU memory names them (before cunn installs the GPU version)
    with pytest.raises(LuaError, match="IndexLinear_updateOutput: (values|keys) is in GPU memory"):
        rt.execute("local m = nn.IndexLinear(10, 2):cuda() "
                   "m:forward({torch.CudaLongTensor{1, 3}, torch.CudaTensor{0.5, 2}})")
    rt.execute("require 'cunn'")
    rt.execute("local m = nn.ReLU():cuda() assert(m:forward(torch.CudaTensor(3):fill(-1)):sum() == 0)")
    d = to_device(rt, np.ones((2, 2), np.float32), "Cuda")
    with pytest.raises(ValueError, match="in GPU memory"):
        rt.to_numpy(d)


# a batch-normalization module in evaluation mode, with running statistics that are not the initial 0 and 1
BN_EVAL = ("(function() local m = %s m.running_mean:uniform(-1, 1) m.running_var:uniform(0.5, 2) m:evaluate() "
           "return m end)()")

LAYERS = {
    "ReLU": ("nn.ReLU()", (5, 7)), "ReLU in place": ("nn.ReLU(true)", (5, 7)), "Tanh": ("nn.Tanh()", (5, 7)),
    "Threshold": ("nn.Threshold(0.3, -2)", (5, 7)), "Threshold in place": ("nn.Threshold(0.2, 0.1, true)", (4, 6)),
    "Sigmoid": ("nn.Sigmoid()", (4, 6)), "LogSoftMax": ("nn.LogSoftMax()", (5, 7)),
    "Linear": ("nn.Linear(7, 3)", (5, 7)), "Linear on a vector": ("nn.Linear(7, 3)", (7,)),
    "Sequential": ("nn.Sequential():add(nn.Linear(6, 4)):add(nn.Tanh()):add(nn.Linear(4, 2))", (3, 6)),
    "SoftMax": ("nn.SoftMax()", (5, 7)), "SoftMax on a vector": ("nn.SoftMax()", (9,)),
    "SpatialSoftMax": ("nn.SpatialSoftMax()", (2, 4, 3, 5)),
    "SoftMin": ("nn.SoftMin()", (5, 7)), "SoftMin on a vector": ("nn.SoftMin()", (6,)),
    "SpatialLogSoftMax": ("nn.SpatialLogSoftMax()", (4, 3, 5)),
    "BatchNormalization": ("nn.BatchNormalization(4)", (6, 4)),
    "BatchNormalization without affine": ("nn.BatchNormalization(4, 1e-3, 0.3, false)", (5, 4)),
    "BatchNormalization evaluate": (BN_EVAL % "nn.BatchNormalization(4)", (6, 4)),
    "SpatialBatchNormalization": ("nn.SpatialBatchNormalization(3)", (4, 3, 5, 6)),
    "SpatialBatchNormalization evaluate": (BN_EVAL % "nn.SpatialBatchNormalization(3)", (4, 3, 5, 6)),
    "VolumetricBatchNormalization": ("nn.VolumetricBatchNormalization(2)", (3, 2, 3, 4, 2)),
    "cudnn.SpatialBatchNormalization": ("cudnn.SpatialBatchNormalization(3)", (2, 3, 4, 5)),
    "cudnn.BatchNormalization evaluate": (BN_EVAL % "cudnn.BatchNormalization(5)", (3, 5)),
    "SpatialMaxPooling": ("nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1)", (2, 3, 7, 8)),
    "SpatialMaxPooling ceil": ("nn.SpatialMaxPooling(3, 3, 2, 2, 1, 1):ceil()", (2, 3, 8, 7)),
    "SpatialMaxPooling 3-D": ("nn.SpatialMaxPooling(2, 3, 2, 1)", (3, 6, 9)),
    "cudnn.SpatialMaxPooling": ("cudnn.SpatialMaxPooling(2, 2, 2, 2)", (2, 3, 6, 6)),
    "SpatialAveragePooling": ("nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1)", (2, 3, 7, 8)),
    "SpatialAveragePooling exclude pad, ceil": (
        "nn.SpatialAveragePooling(3, 3, 2, 2, 1, 1):setCountExcludePad():ceil()", (2, 3, 8, 7)),
    "SpatialAveragePooling 3-D": ("nn.SpatialAveragePooling(2, 2)", (3, 5, 4)),
    # nn's elementwise activations (native/cuda/nn_pointwise.cu)
    "HardTanh": ("nn.HardTanh(-0.5, 0.7)", (5, 7)), "HardTanh in place": ("nn.HardTanh(-1, 1, true)", (4, 6)),
    "ReLU6": ("nn.ReLU6()", (3, 4, 5)), "LeakyReLU": ("nn.LeakyReLU(0.1)", (5, 7)),
    "LeakyReLU in place": ("nn.LeakyReLU(0.2, true)", (5, 7)), "ELU": ("nn.ELU(0.8)", (2, 3, 4, 5)),
    "ELU in place": ("nn.ELU(1, true)", (5, 7)), "SoftPlus": ("nn.SoftPlus(2, 1)", (5, 7)),
    "SoftSign": ("nn.SoftSign()", (5, 7)), "SoftShrink": ("nn.SoftShrink(0.3)", (5, 7)),
    "HardShrink": ("nn.HardShrink(0.4)", (5, 7)), "TanhShrink": ("nn.TanhShrink()", (5, 7)),
    "LogSigmoid": ("nn.LogSigmoid()", (5, 7)), "Abs": ("nn.Abs()", (9,)), "Exp": ("nn.Exp()", (5, 7)),
    "Square": ("nn.Square()", (5, 7)), "Power": ("nn.Power(3)", (5, 7)),
    "Log of Abs": ("nn.Sequential():add(nn.Abs()):add(nn.Log())", (5, 7)),
    "Sqrt of Abs": ("nn.Sequential():add(nn.Abs()):add(nn.Sqrt(0.1))", (5, 7)),
    # the gather layers (native/cuda/gather_map.cu), PReLU and GatedLinearUnit (native/cuda/nn_pointwise.cu)
    "SpatialZeroPadding": ("nn.SpatialZeroPadding(1, 2, 3, 0)", (2, 3, 4, 5)),
    "SpatialZeroPadding cropping, 3-D": ("nn.SpatialZeroPadding(-1, 2, 1, -2)", (3, 5, 4)),
    "SpatialReflectionPadding": ("nn.SpatialReflectionPadding(2, 1, 3, 0)", (2, 3, 4, 5)),
    "SpatialReplicationPadding, 3-D": ("nn.SpatialReplicationPadding(3, 1, 0, 4)", (3, 4, 5)),
    "SpatialReplicationPadding cropping": ("nn.SpatialReplicationPadding(-1, 2, 2, -1)", (2, 2, 5, 6)),
    "VolumetricReplicationPadding": ("nn.VolumetricReplicationPadding(1, 2, 0, 1, 2, 1)", (2, 2, 3, 4, 3)),
    "SpatialUpSamplingNearest": ("nn.SpatialUpSamplingNearest(2)", (2, 3, 4, 3)),
    "SpatialCrossMapLRN": ("nn.SpatialCrossMapLRN(5, 1e-2, 0.75, 2)", (2, 7, 3, 4)),
    "SpatialAdaptiveAveragePooling": ("nn.SpatialAdaptiveAveragePooling(3, 2)", (2, 3, 7, 5)),
    "SpatialAdaptiveAveragePooling growing, 3-D": ("nn.SpatialAdaptiveAveragePooling(4, 5)", (3, 3, 2)),
    "SpatialCrossMapLRN even size, 3-D": ("nn.SpatialCrossMapLRN(4, 0.5, 0.6)", (6, 3, 3)),
    "cudnn.SpatialCrossMapLRN": ("cudnn.SpatialCrossMapLRN(3)", (2, 4, 2, 5)),
    "PReLU per channel": ("nn.PReLU(3)", (4, 3, 5, 2)), "PReLU shared": ("nn.PReLU()", (5, 7)),
    "PReLU per channel, 3-D": ("nn.PReLU(4)", (4, 3, 5)),
    "GatedLinearUnit": ("nn.GatedLinearUnit()", (5, 8)),
    "GatedLinearUnit dim 1, 3-D": ("nn.GatedLinearUnit(1)", (4, 3, 5)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_cunn_layers_against_the_cpu_in_double(gpu, rng, name):
    """Forward, backward and parameter gradients of a module converted with :cuda() (CudaDouble here) against
    the same module on the CPU in double, on the same input and gradOutput; nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    ctor, shape = LAYERS[name]
    if "cudnn." in ctor:
        rt.execute("require 'cudnn'")
    x, g = rng.standard_normal(shape), rng.standard_normal(tuple(n + 4 for n in shape))   # g: for larger outputs
    # the state a module keeps besides its output: batch norm's running statistics (updated in training) and
    # saved batch statistics, nn's max pooling's indices (cudnn's on cuDNN keep none, as cudnn.torch's)
    run = rt.eval("""function(x, g)
       torch.manualSeed(5)
       local cpu = %s:double()
       local dev = cpu:clone():type('torch.CudaDoubleTensor')
       local out = {}
       for k, m in ipairs {cpu, dev} do
          local input = k == 1 and x:clone() or x:cudaDouble()
          m:zeroGradParameters()
          local y = m:forward(input)
          -- gradOutput: the first values of g, in y's shape
          local grad = k == 1 and torch.DoubleTensor() or torch.CudaDoubleTensor()
          grad:resizeAs(y):copy(g:view(-1):narrow(1, 1, y:nElement()))
          local gi = m:backward(input, grad, 0.5)
          local _, gp = m:parameters()
          local state = {}
          for _, f in ipairs {'running_mean', 'running_var', 'save_mean', 'save_std', 'indices'} do
             local kept = f ~= 'indices' or not torch.typename(m):find('^cudnn%%.')
             if kept and torch.isTensor(m[f]) and m[f]:nElement() > 0 then state[#state + 1] = m[f]:double():view(-1) end
          end
          out[k] = {y:double(), gi:double(), gp and nn.Module.flatten(gp):double() or torch.DoubleTensor(),
                    #state > 0 and torch.cat(state) or torch.DoubleTensor()}
       end
       return out
    end""" % ctor)
    out = run(rt.from_numpy(x), rt.from_numpy(g))
    for i, what in ((1, "output"), (2, "gradInput"), (3, "parameter gradients"), (4, "running statistics, indices")):
        cpu, dev = rt.to_numpy(out[1][i]), rt.to_numpy(out[2][i])
        assert cpu.shape == dev.shape, (name, what, cpu.shape, dev.shape)
        np.testing.assert_allclose(dev, cpu, rtol=1e-12, atol=1e-12, err_msg="%s: %s" % (name, what))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_draws_the_uniform_fills_slopes(gpu, rng, inplace):
    """nn.RReLU in training on the GPU (one kernel): with the same cutorch seed its noise is exactly what nn's own
    composition draws (a uniform fill in [l, u), 1 where x > 0), its output x * noise and its gradInput gradOutput *
    noise, exactly, on a transposed input; the stream moves on as the fill moves it (the next draw is the same);
    in evaluation it is the leaky ReLU of slope (l + u) / 2."""
    rt = gpu
    rt.execute("require 'cunn'")
    x, g = rng.standard_normal((6, 9)), rng.standard_normal((9, 6))
    r = rt.eval("""function(x, g, inplace)
       local m = nn.RReLU(0.1, 0.4, inplace):cuda()
       local input = x:cuda():t()
       local before = input:clone()
       cutorch.manualSeed(17)
       local y = m:forward(input):clone()
       local next1 = torch.CudaTensor(3):uniform()
       local gi = m:backward(input, g:cuda()):clone()
       cutorch.manualSeed(17)
       local noise = torch.CudaTensor(9, 6):uniform(0.1, 0.4)
       noise:maskedFill(before:gt(0), 1)
       local next2 = torch.CudaTensor(3):uniform()
       m:evaluate()
       local e = m:forward(before:clone())
       return {y = y:double(), noise = m.noise:double(), want = noise:double(), x = before:double(), gi = gi:double(),
               next1 = next1:double(), next2 = next2:double(), e = e:double(), ok = torch.type(m.noise)}
    end""")(rt.from_numpy(x), rt.from_numpy(g), inplace)
    want = rt.to_numpy(r["want"])
    xs = rt.to_numpy(r["x"])
    np.testing.assert_array_equal(rt.to_numpy(r["noise"]), want)
    assert ((want >= 0.1) & (want < 0.4) | (xs > 0)).all() and len(np.unique(want)) > 10
    np.testing.assert_array_equal(rt.to_numpy(r["y"]), (xs.astype(np.float32) * want.astype(np.float32)))
    np.testing.assert_array_equal(rt.to_numpy(r["gi"]), (g.astype(np.float32) * want.astype(np.float32)))
    np.testing.assert_array_equal(rt.to_numpy(r["next1"]), rt.to_numpy(r["next2"]))
    np.testing.assert_allclose(rt.to_numpy(r["e"]), np.where(xs > 0, xs, 0.25 * xs), rtol=1e-6)
    assert fallbacks(rt) == {}


def test_relu_in_place_on_a_noncontiguous_gradient_is_one_launch(gpu, rng):
    """cudnn.ReLU(true) whose gradOutput is a narrowed view (the branches of GoogLeNet's Concat get such
    slices): cuDNN's activations take contiguous tensors only, so this runs nn.Threshold's device version, one
    threshold launch each way; against the CPU in double."""
    rt = gpu
    rt.execute("require 'cunn'; require 'cudnn'")
    x, g = rng.standard_normal((3, 4, 5, 6)), rng.standard_normal((3, 9, 5, 6))
    run = rt.eval("""function(x, g)
       local out, launches = {}, {}
       for k, ty in ipairs {'torch.DoubleTensor', 'torch.CudaDoubleTensor'} do
          local m = cudnn.ReLU(true):type(ty)
          local input = x:clone():type(ty)   -- (clones: in place, the CPU run would change x and g for the next)
          local grad = g:clone():type(ty):narrow(2, 3, 4)   -- noncontiguous
          local before = cutorch.deviceCallCounts()
          local y = m:forward(input)
          local gi = m:backward(input, grad)
          local after = cutorch.deviceCallCounts()
          out[k] = {y:double(), gi:double()}
          launches[k] = {after.launches - before.launches, after.libraryOps - before.libraryOps}
       end
       return out, launches
    end""")
    out, launches = run(rt.from_numpy(x), rt.from_numpy(g))
    for i in (1, 2):
        np.testing.assert_array_equal(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]))
    assert (launches[2][1], launches[2][2]) == (1, 1)   # forward on cuDNN (contiguous), backward one launch
    assert fallbacks(rt) == {}


SOFTMAXES = {"cudnn.SoftMax": (5, 7), "cudnn.LogSoftMax": (2, 3, 4), "cudnn.SpatialSoftMax": (2, 3, 4, 5),
             "cudnn.SpatialLogSoftMax": (3, 4, 2), "cudnn.VolumetricSoftMax": (2, 3, 2, 3, 2),
             "cudnn.VolumetricLogSoftMax": (2, 3, 2, 2, 3)}


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_cudnn_softmaxes_without_cudnn_run_on_the_device(gpu, rng, name):
    """With cuDNN off (cudnn.enabled = false, as without libcudnn) the cudnn softmax family runs nn's (Log)SoftMax
    device kernels in its own modes, against the same module on the CPU in double; until 2026-12-05 these called
    the host kernels on GPU memory and were refused."""
    rt = gpu
    rt.execute("require 'cunn'; require 'cudnn'; cudnn.enabled = false")
    shape = SOFTMAXES[name]
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    try:
        out = rt.eval("""function(x, g)
           local cpu = %s():double()
           local dev = cpu:clone():type('torch.CudaDoubleTensor')
           local r = {}
           for k, m in ipairs {cpu, dev} do
              local input, grad = x:clone(), g:clone()
              if k == 2 then input, grad = input:cudaDouble(), grad:cudaDouble() end
              local y = m:forward(input)
              r[k] = {y:double(), m:backward(input, grad):double()}
           end
           return r
        end""" % name)(rt.from_numpy(x), rt.from_numpy(g))
    finally:
        rt.execute("cudnn.enabled = true")
    for i in (1, 2):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-12)
    assert fallbacks(rt) == {}


def test_gather_layers_errors_and_views(gpu, rng):
    """The paddings check their geometry before any device work, refuse a host tensor beside a device one by name,
    and read a noncontiguous input as it lies."""
    rt = gpu
    rt.execute("require 'cunn'")
    with pytest.raises(LuaError, match="padding size .3, 0. should be less than the corresponding input dimension"):
        rt.execute("nn.SpatialReflectionPadding(3, 0, 0, 0):cuda():forward(torch.CudaTensor(1, 2, 3, 3))")
    with pytest.raises(LuaError, match="gradOutput is in GPU memory, the input in host memory"):
        rt.execute("local m = nn.SpatialReplicationPadding(1) local x = torch.DoubleTensor(1, 2, 3, 3):fill(1) "
                   "m:forward(x) m:updateGradInput(x, torch.CudaDoubleTensor(1, 2, 5, 5):fill(1))")
    x = rng.standard_normal((2, 3, 5, 4))
    got, want = rt.eval("""function(x)
       local m = nn.SpatialReflectionPadding(1, 2, 2, 1)
       local d = x:cudaDouble():transpose(3, 4):clone():transpose(3, 4)
       assert(not d:isContiguous())
       return m:clone():type('torch.CudaDoubleTensor'):forward(d):double(), m:forward(x):clone()
    end""")(rt.from_numpy(x))
    np.testing.assert_array_equal(rt.to_numpy(got), rt.to_numpy(want))
    assert fallbacks(rt) == {}


def test_elementwise_activations_on_views_and_errors(gpu, rng):
    """The activations' kernels read and write any layout: ELU and SoftPlus on a transposed and a narrowed view
    of device memory, with a transposed gradOutput, give the CPU module's values (double, 1e-12); a module
    given tensors on host and device memory at once says which."""
    rt = gpu
    rt.execute("require 'cunn'")
    x, g = rng.standard_normal((6, 8)), rng.standard_normal((8, 6))
    run = rt.eval("""function(ctor, x, g)
       local cpu, dev = ctor():double(), ctor():type('torch.CudaDoubleTensor')
       -- 8 x 4 views: a narrowed transpose of x, and gradOutput narrowed along its rows' length (stride 6)
       local xc, gc = x:t():narrow(2, 2, 4), g:narrow(2, 3, 4)
       local xd, gd = x:cudaDouble():t():narrow(2, 2, 4), g:cudaDouble():narrow(2, 3, 4)
       local yc, yd = cpu:forward(xc), dev:forward(xd)
       local ic, id = cpu:backward(xc, gc), dev:backward(xd, gd)
       return (yc - yd:double()):abs():max(), (ic - id:double()):abs():max(), xd:isContiguous()
    end""")
    for ctor in ("nn.ELU", "function() return nn.SoftPlus(2, 1) end"):
        dy, di, contiguous = run(rt.eval(ctor), rt.from_numpy(x), rt.from_numpy(g))
        assert dy <= 1e-12 and di <= 1e-12 and not contiguous, (ctor, dy, di)
    msg = rt.eval("""(function()
       local m = nn.ELU():cuda()
       m:forward(torch.CudaTensor(3):fill(1))
       return select(2, pcall(m.backward, m, torch.CudaTensor(3):fill(1), torch.FloatTensor(3):fill(1)))
    end)()""")
    assert "gradOutput" in msg or "host memory" in msg, msg
    assert fallbacks(rt) == {}


CONVOLUTIONS = {
    "3x3 pad 1": ("nn.SpatialConvolution(3, 5, 3, 3, 1, 1, 1, 1)", (2, 3, 7, 6)),
    "1x1 (no columns)": ("nn.SpatialConvolution(4, 3, 1, 1)", (3, 4, 5, 5)),
    # 6,400 values a plane: the bias gradient over (plane, run) blocks (lt_conv_bias_partial / _finish)
    "many pixels, two planes": ("nn.SpatialConvolution(3, 2, 3, 3, 1, 1, 1, 1)", (4, 3, 40, 40)),
    "7x7 stride 2 without bias": ("nn.SpatialConvolution(3, 4, 7, 7, 2, 2, 3, 3):noBias()", (2, 3, 15, 13)),
    "1x1 stride 2": ("nn.SpatialConvolution(4, 6, 1, 1, 2, 2)", (2, 4, 9, 9)),
    "MM, one image": ("nn.SpatialConvolutionMM(3, 4, 3, 2, 2, 1, 0, 1)", (3, 5, 7)),
    "dilated": ("nn.SpatialDilatedConvolution(3, 4, 3, 3, 1, 2, 2, 1, 2, 2)", (2, 3, 9, 8)),
    "cudnn, 2 groups": ("cudnn.SpatialConvolution(4, 6, 3, 3, 2, 2, 1, 1, 2)", (2, 4, 7, 7)),
    "cudnn, a noncontiguous input": ("cudnn.SpatialConvolution(3, 2, 2, 2)", "transposed (2, 3, 6, 5)"),
    "full 4x4 stride 2 pad 1": ("nn.SpatialFullConvolution(4, 3, 4, 4, 2, 2, 1, 1)", (2, 4, 5, 6)),
    "full with adj, one image": ("nn.SpatialFullConvolution(3, 2, 3, 2, 3, 2, 1, 0, 2, 1)", (3, 4, 5)),
    "full 1x1 without bias": ("nn.SpatialFullConvolution(3, 5, 1, 1):noBias()", (2, 3, 4, 4)),
    "cudnn full, a noncontiguous input": ("cudnn.SpatialFullConvolution(3, 4, 3, 3, 2, 2, 1, 1)",
                                          "transposed (2, 3, 5, 4)"),
    "local 3x2 stride 2,1 pad 1": ("nn.SpatialConvolutionLocal(3, 4, 6, 5, 3, 2, 2, 1, 1, 1)", (2, 3, 5, 6)),
    "local, one image": ("nn.SpatialConvolutionLocal(2, 3, 5, 4, 2, 2)", (2, 4, 5)),
    "local, a noncontiguous input": ("nn.SpatialConvolutionLocal(3, 2, 5, 6, 3, 3, 1, 2, 0, 1)",
                                     "transposed (2, 3, 6, 5)"),
    "temporal rows": ("nn.TemporalRowConvolution(4, 3)", (2, 7, 4)),
    "temporal rows, stride 2, features first": ("nn.TemporalRowConvolution(3, 2, 2, true)", (2, 3, 8)),
    "temporal rows, one sequence, no bias": ("nn.TemporalRowConvolution(5, 4, 3):noBias()", (11, 5)),
    "map, random table": ("nn.SpatialConvolutionMap(nn.tables.random(4, 5, 2), 3, 2, 1, 2)", (2, 4, 7, 6)),
    "map, one to one, one image": ("nn.SpatialConvolutionMap(nn.tables.oneToOne(3), 2, 2, 2, 1)", (3, 6, 5)),
    "map, a pair connected twice": ("nn.SpatialConvolutionMap(torch.Tensor{{1, 1}, {2, 1}, {1, 1}, {2, 2}}, 3, 3)",
                                    (2, 2, 5, 5)),
    "full map, random table": ("nn.SpatialFullConvolutionMap(nn.tables.random(3, 4, 2), 3, 3, 2, 2)", (2, 3, 4, 5)),
    "full map, full table, one image": ("nn.SpatialFullConvolutionMap(nn.tables.full(2, 3), 2, 3)", (2, 4, 3)),
}


# A module (%s: its constructor; a convolution here) run forward and backward on the CPU in double and on the GPU
# in CudaDouble from the same weights: output, gradInput, and gradWeight/gradBias (empty where it has none)
# accumulated twice (scales 0.5 and 1) onto nonzero buffers, for each; setup (Lua, optional) runs first with m the
# device module. Returns the two result lists, the device input and the device module (test_cudnn_gpu.py uses it
# too).
MODULE_ON_BOTH = """function(x, transposed, seed, setup)
   torch.manualSeed(seed)
   local cpu = %s:double()
   local dev = cpu:clone():type('torch.CudaDoubleTensor')
   if setup then load(setup, 'setup', 't', setmetatable({m = dev}, {__index = _G}))() end
   local g, out, inputs = nil, {}, {}
   for k, m in ipairs {cpu, dev} do
      local input = k == 1 and x:clone() or x:cudaDouble()
      if transposed then
         local d = input:dim()
         input = input:transpose(d - 1, d):clone():transpose(d - 1, d)
         assert(not input:isContiguous())
      end
      local y = m:forward(input)
      g = g or torch.randn(y:size()):double()
      local grad = k == 1 and g:clone() or g:cudaDouble()
      if m.gradWeight then m.gradWeight:fill(0.25) end
      if m.gradBias then m.gradBias:fill(-0.5) end
      local gi = m:backward(input, grad, 0.5)
      m:accGradParameters(input, grad, 1)
      local function kept(t) return t and t:double() or torch.DoubleTensor() end
      out[k] = {y:double(), gi:double(), kept(m.gradWeight), kept(m.gradBias)}
      inputs[k] = input
   end
   return out, inputs[2], dev
end"""


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_cunn_convolutions_against_the_cpu_in_double(gpu, rng, name):
    """The convolutions' im2col + cuBLAS path (CudaDouble) against the CPU module in double: output, gradInput,
    and gradWeight/gradBias accumulated twice with scales 0.5 and 1 onto nonzero buffers; nothing staged. The
    cudnn.* classes take this path too where cuDNN is off (test_cudnn_gpu.py tests them on cuDNN)."""
    rt = gpu
    rt.execute("require 'cunn' require 'cudnn' cudnn.enabled = false")
    ctor, shape = CONVOLUTIONS[name]
    transposed = isinstance(shape, str)
    if transposed:   # the same values, through a view with its last two dimensions swapped in memory
        shape = eval(shape.split(" ", 1)[1])
    x = rng.standard_normal(shape)
    run = rt.eval(MODULE_ON_BOTH % ctor)
    out = run(rt.from_numpy(x), transposed, int(rng.integers(1, 1 << 30)))[0]
    for i, what in ((1, "output"), (2, "gradInput"), (3, "gradWeight"), (4, "gradBias")):
        cpu, dev = rt.to_numpy(out[1][i]), rt.to_numpy(out[2][i])
        assert cpu.shape == dev.shape, (what, cpu.shape, dev.shape)
        np.testing.assert_allclose(dev, cpu, rtol=1e-12, atol=1e-12, err_msg="%s: %s" % (name, what))
    assert fallbacks(rt) == {}


def test_cunn_convolution_errors_name_the_problem(gpu):
    rt = gpu
    rt.execute("require 'cunn'")
    with pytest.raises(LuaError, match="input has 2 planes, expected 3"):
        rt.execute("nn.SpatialConvolution(3, 4, 3, 3):cuda():forward(torch.CudaTensor(2, 5, 5))")
    with pytest.raises(LuaError, match="Output size is too small"):
        rt.execute("nn.SpatialConvolution(3, 4, 5, 5):cuda():forward(torch.CudaTensor(3, 4, 4))")
    with pytest.raises(LuaError, match="weight must be a Double tensor like the input, not Float"):
        rt.execute("nn.SpatialConvolution(1, 1, 1, 1):cuda():forward(torch.CudaDoubleTensor(1, 2, 2))")
    with pytest.raises(LuaError, match="CudaTensor, CudaDoubleTensor and CudaHalfTensor only"):
        rt.execute("nn.SpatialConvolution(1, 1, 1, 1):type('torch.CudaLongTensor')"
                   ":forward(torch.CudaLongTensor(1, 2, 2))")


# criterion -> (input, target) drawn for it from a numpy Generator: values where its formula has its cases
CRITERIONS = {
    "nn.MSECriterion()": lambda r: (r.standard_normal((6, 5)), r.standard_normal((6, 5))),
    "nn.ClassNLLCriterion()": lambda r: (r.standard_normal((6, 5)), r.integers(1, 6, 6).astype(np.float64)),
    "nn.ClassNLLCriterion(torch.DoubleTensor{1, 2, 0.5, 1, 3})":
        lambda r: (r.standard_normal((6, 5)), r.integers(1, 6, 6).astype(np.float64)),
    "nn.AbsCriterion()": lambda r: (r.standard_normal((6, 5)), r.standard_normal((6, 5))),
    "nn.AbsCriterion(false)": lambda r: (r.standard_normal((4, 3, 2)), r.standard_normal((4, 3, 2))),
    "nn.SmoothL1Criterion()": lambda r: (r.standard_normal((6, 5)) * 2, r.standard_normal((6, 5))),
    "nn.DistKLDivCriterion()": lambda r: (r.standard_normal((6, 5)), np.where(r.random((6, 5)) < 0.2, 0,
                                                                               r.random((6, 5))) * 0.5),
    "nn.MarginCriterion(0.7)": lambda r: (r.standard_normal(9), r.choice([-1.0, 1.0], 9)),
    "nn.SoftMarginCriterion()": lambda r: (r.standard_normal((6, 5)) * 30, r.choice([-1.0, 1.0], (6, 5))),
    "nn.BCECriterion()": lambda r: (r.uniform(0.01, 0.99, (6, 5)), r.random((6, 5))),
    "nn.BCECriterion(torch.DoubleTensor(5):uniform(0.5, 2))":
        lambda r: (r.uniform(0.01, 0.99, (6, 5)), r.random((6, 5)).round()),
    "nn.L1Cost()": lambda r: (r.standard_normal((6, 5)), np.zeros((6, 5))),
    "nn.HingeEmbeddingCriterion(1.5)": lambda r: (r.standard_normal(12) * 2, r.choice([-1.0, 1.0], 12)),
    "nn.MultiMarginCriterion()": lambda r: (r.standard_normal((6, 5)) * 0.5, r.integers(1, 6, 6) * 1.0),
    "nn.MultiMarginCriterion(2, torch.DoubleTensor{1, 2, 0.5, 1, 3}, 0.7)":
        lambda r: (r.standard_normal((6, 5)) * 0.5, r.integers(1, 6, 6) * 1.0),
    "nn.MultiLabelMarginCriterion()": lambda r: (r.standard_normal((4, 6)) * 0.5,
                                                 np.array([[3, 1, 0, 0, 0, 0], [6, 0, 0, 0, 0, 0], [2, 4, 5, 1, 0, 0],
                                                           [1, 2, 3, 4, 5, 6]], dtype=np.float64)),
    # per pixel: N x C x H x W scores, N x H x W classes
    "nn.SpatialClassNLLCriterion()": lambda r: (r.standard_normal((2, 4, 3, 5)), r.integers(1, 5, (2, 3, 5)) * 1.0),
    "nn.SpatialClassNLLCriterion(torch.DoubleTensor{0.5, 2, 1, 3}, false)":
        lambda r: (r.standard_normal((3, 4, 2, 3)), r.integers(1, 5, (3, 2, 3)) * 1.0),
    "cudnn.SpatialCrossEntropyCriterion(torch.DoubleTensor{1, 0.25, 2})":
        lambda r: (r.standard_normal((2, 3, 4, 4)) * 3, r.integers(1, 4, (2, 4, 4)) * 1.0),
}


@pytest.mark.parametrize("ctor", sorted(CRITERIONS))
def test_cunn_criterions_against_the_cpu_in_double(gpu, rng, ctor):
    """Loss and gradInput against the CPU criterion in double (the elementwise ones on a transposed view of the
    input too); nothing staged."""
    rt = gpu
    rt.execute("require 'cunn' require 'cudnn'")
    x, t = CRITERIONS[ctor](rng)
    out = rt.eval("""function(x, t, view)
       local res = {}
       local base = %s
       for k, ty in ipairs {'torch.DoubleTensor', 'torch.CudaDoubleTensor'} do
          local c = base:clone():type(ty)
          local input, target = x:type(ty), t:type(ty)
          if view and input:dim() == 2 then input = input:t():clone():t() end
          local loss = c:forward(input, target)
          res[k] = {loss, c:backward(input, target):double():clone()}
       end
       return res
    end""" % ctor)
    for view in (False, True):
        r = out(rt.from_numpy(x), rt.from_numpy(t), view)
        assert r[2][1] == pytest.approx(r[1][1], rel=1e-12), view
        np.testing.assert_allclose(rt.to_numpy(r[2][2]), rt.to_numpy(r[1][2]), rtol=1e-12, atol=1e-15,
                                   err_msg="view" if view else "")
    assert fallbacks(rt) == {}


def test_cunn_criterion_errors_name_the_problem(gpu):
    rt = gpu
    rt.execute("require 'cunn'")
    with pytest.raises(LuaError, match="input value should be between 0 and 1, but got 1.5"):
        rt.execute("nn.BCECriterion():cuda():forward(torch.CudaTensor{0.5, 1.5}, torch.CudaTensor{1, 0})")
    with pytest.raises(LuaError, match="input value should be between 0 and 1, but got -?nan"):
        rt.execute("nn.BCECriterion():cuda():forward(torch.CudaTensor{0.5, 0/0}, torch.CudaTensor{1, 0})")
    # (the range is looked for only when the loss is NaN: a zero weight on the culprit, or a transposed view, hides
    # nothing; a NaN target with inputs in range is a NaN loss, as on the CPU)
    with pytest.raises(LuaError, match="input value should be between 0 and 1, but got -0.25"):
        rt.execute("nn.BCECriterion(torch.CudaTensor{1, 0, 1}):cuda():forward(torch.CudaTensor{0.5, -0.25, 1}, "
                   "torch.CudaTensor{1, 0, 1})")
    # (just outside: the log terms stay finite there, so only the range test makes the sum NaN)
    with pytest.raises(LuaError, match="input value should be between 0 and 1, but got -1e-13"):
        rt.execute("nn.BCECriterion():cuda():forward(torch.CudaDoubleTensor{0.5, -1e-13}, torch.CudaDoubleTensor{1, 1})")
    with pytest.raises(LuaError, match="input value should be between 0 and 1, but got 2"):
        rt.execute("nn.BCECriterion():cuda():forward(torch.CudaTensor{{0.5, 0.1}, {2, 0.3}}:t(), "
                   "torch.CudaTensor(2, 2):fill(1))")
    got = rt.eval("{nn.BCECriterion():cuda():forward(torch.CudaTensor{0.5, 0.5}, torch.CudaTensor{1, 0/0}), "
                  "nn.BCECriterion():forward(torch.DoubleTensor{0.5, 0.5}, torch.DoubleTensor{1, 0/0})}")
    assert math.isnan(got[1]) and math.isnan(got[2])
    with pytest.raises(LuaError, match="size mismatch"):
        rt.execute("nn.AbsCriterion():cuda():forward(torch.CudaTensor(3):fill(1), torch.CudaTensor(4):fill(1))")
    with pytest.raises(LuaError, match=r"SpatialClassNLLCriterion_updateOutput: target 7 of pixel 5 \(counted n, h, "
                                       r"w\) is out of range 1..3"):
        rt.execute("nn.SpatialClassNLLCriterion():cuda():forward(torch.CudaTensor(1, 3, 2, 3):fill(0), "
                   "torch.CudaTensor{{{1, 2, 3}, {1, 7, 1}}})")
    with pytest.raises(LuaError, match="target should be N x H x W for input N x C x H x W \\(got input 1x3x2x3, "
                                       "target 1x3x2"):
        rt.execute("nn.SpatialClassNLLCriterion():cuda():forward(torch.CudaTensor(1, 3, 2, 3), torch.CudaTensor(1, 3, 2))")
    with pytest.raises(LuaError, match="only batches of spatial inputs"):
        rt.execute("nn.SpatialClassNLLCriterion():cuda():forward(torch.CudaTensor(3, 2, 3), torch.CudaTensor(2, 3))")


# The same network trained on the CPU type and on its Cuda type: optim.sgd over getParameters, as a Torch7 script
# trains; per type the step losses, the trained network and its flat parameters.
TRAIN_ON_BOTH = """
local function trainOnBoth(base, criterion, types, x, y, config, steps)
   local out = {}
   for k, ty in ipairs(types) do
      local net, crit = base:clone():type(ty), criterion:clone():type(ty)
      local input, target = x:type(ty), y:type(ty)
      local w, dw = net:getParameters()
      local state, losses = {}, {}
      for key, v in pairs(config) do state[key] = v end
      for step = 1, steps do
         optim.sgd(function()
            dw:zero()
            local loss = crit:forward(net:forward(input), target)
            net:backward(input, crit:backward(net.output, target))
            return loss, dw
         end, w, state)
         losses[step] = crit.output
      end
      out[k] = {losses = losses, net = net, w = w, input = input}
   end
   return out
end
"""


def test_a_network_trains_on_the_gpu_as_on_the_cpu(gpu, rng):
    """Ten steps of SGD with momentum and weight decay (optim.sgd over getParameters) of an MLP with
    ClassNLLCriterion, on the CPU in float and on the GPU backend from the same start: the losses and the final
    parameters agree to float rounding, and every step ran on the device."""
    rt = gpu
    rt.execute("require 'cunn'; require 'optim'")
    x = rng.standard_normal((32, 10)).astype(np.float32)
    y = (x[:, :4].argmax(1) + 1).astype(np.float64)   # classes a linear layer can tell apart
    train = rt.execute(TRAIN_ON_BOTH + """return function(x, y)
       torch.manualSeed(3)
       local base = nn.Sequential():add(nn.Linear(10, 12)):add(nn.ReLU()):add(nn.Linear(12, 4)):add(nn.LogSoftMax())
       local r = trainOnBoth(base:float(), nn.ClassNLLCriterion(), {'torch.FloatTensor', 'torch.CudaTensor'}, x, y,
                             {learningRate = 0.5, momentum = 0.9, weightDecay = 1e-3}, 10)
       return {{r[1].losses, r[1].w:float()}, {r[2].losses, r[2].w:float()}}
    end""")
    r = train(rt.from_numpy(x), rt.from_numpy(y))
    cpu_losses, gpu_losses = list(r[1][1].values()), list(r[2][1].values())
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    assert cpu_losses[-1] < 0.8 * cpu_losses[0]   # it learned something
    np.testing.assert_allclose(rt.to_numpy(r[2][2]), rt.to_numpy(r[1][2]), rtol=1e-4, atol=1e-5)
    assert fallbacks(rt) == {}, "the training step left the device"


def test_dropout_on_the_device(gpu, rng):
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.random((200, 50)) + 1
    got = rt.eval("""function(x)
       cutorch.manualSeed(11)
       local m = nn.Dropout(0.3):type('torch.CudaDoubleTensor')
       local input = x:cudaDouble()
       local y1 = m:forward(input):double()
       local g = m:backward(input, input:clone():fill(1)):double()
       local y2 = m:forward(input):double()
       cutorch.manualSeed(11)
       local y3 = m:forward(input):double()
       m:evaluate()
       local y4 = m:forward(input):double()
       return {y1, g, y2, y3, y4}
    end""")(rt.from_numpy(x))
    y1, g, y2, y3, y4 = (rt.to_numpy(got[i]) for i in range(1, 6))
    kept = y1 != 0
    assert 0.65 < kept.mean() < 0.75
    np.testing.assert_allclose(y1[kept], x[kept] / 0.7, rtol=1e-12)
    np.testing.assert_array_equal(g != 0, kept)   # the same mask goes back
    np.testing.assert_allclose(g[kept], 1 / 0.7, rtol=1e-12)
    assert (y2 != y1).any()                        # a new mask each call,
    np.testing.assert_array_equal(y3, y1)          # the same one from the same seed
    np.testing.assert_array_equal(y4, x)           # and none in evaluation
    assert fallbacks(rt) == {}


def test_cuda_array_interface_views_device_memory(gpu, rng):
    rt = gpu
    x = rng.standard_normal((4, 6)).astype(np.float32)
    d = to_device(rt, x, "Cuda")
    base = int(rt.eval("function(t) local ffi = require 'ffi' "
                       "return tonumber(ffi.cast('uintptr_t', torch.C.lt_tensor_data(t._c))) end")(d))
    a = rt.cuda_array(d)
    iface = a.__cuda_array_interface__
    assert iface["version"] == 3 and iface["shape"] == (4, 6) and iface["typestr"] == "<f4" and iface["strides"] is None
    assert iface["data"] == (base, False) and a.device == 0
    view = rt.eval("function(t) return t:narrow(2, 2, 3):t() end")(d)   # offset 1, transposed
    vi = rt.cuda_array(view).__cuda_array_interface__
    assert vi["shape"] == (3, 4) and vi["strides"] == (4, 24) and vi["data"][0] == base + 4
    # the object keeps the memory: with the Lua tensor collected it stays allocated, until the object goes
    allocated = rt.eval("function() collectgarbage() collectgarbage() "
                        "return cutorch.getAllocatorStats().allocated_bytes end")
    t = rt.eval("torch.CudaTensor(1000):fill(3)")
    held = rt.cuda_array(t)
    live = allocated()
    del t
    assert allocated() == live
    del held
    assert allocated() == live - 4096   # 4000 bytes, in 512-byte blocks
    with pytest.raises(ValueError, match="not in GPU memory"):
        rt.cuda_array(rt.from_numpy(x))
    if os.environ.get("LT_EMULATED_CUDA_GUARD"):   # the emulated driver's memory is nobody else's
        return
    try:   # on a GPU machine with PyTorch CUDA: PyTorch reads our memory in place
        import torch
        if not torch.cuda.is_available():
            return
    except ImportError:
        return
    t = torch.as_tensor(a, device="cuda")
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    assert t.data_ptr() == base


def test_freed_device_memory_is_reused_by_the_caching_allocator(gpu):
    rt = gpu
    stats = rt.eval("""(function()
       collectgarbage() collectgarbage()
       local before = cutorch.getAllocatorStats()
       for i = 1, 20 do
          local t = torch.CudaTensor(1000, 100):fill(i)
          t = nil
          collectgarbage() collectgarbage()   -- freed now: the next one can have its block
       end
       local after = cutorch.getAllocatorStats()
       return {before.backend_mallocs, after.backend_mallocs, after.cache_hits - before.cache_hits,
               after.allocated_bytes - before.allocated_bytes}
    end)()""")
    before, after, hits, live = stats.values()
    assert after - before <= 1 and hits >= 19 and live == 0, (before, after, hits, live)


LOOKUPS = {
    "plain, a matrix of repeated indices": ("nn.LookupTable(9, 5)", [[1, 4, 4], [9, 1, 4]]),
    "paddingValue 4, scaleGradByFreq": ("nn.LookupTable(9, 5, 4):scaleGradByFreq()", [[1, 4, 4], [9, 1, 2]]),
    "maxNorm 1.5, a vector": ("nn.LookupTable(7, 6, 0, 1.5)", [3, 3, 7, 1, 2]),
    "maxNorm 2 in the 1-norm": ("nn.LookupTable(7, 3, 0, 2, 1)", [[2, 6], [6, 5]]),
}


@pytest.mark.parametrize("index_type", ["torch.CudaTensor", "torch.CudaLongTensor", "torch.LongTensor"])
@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_lookup_table_on_the_gpu_against_the_cpu_in_double(gpu, rng, name, index_type):
    """nn.LookupTable with its weight in GPU memory, indices of a Cuda float, CudaLong or host Long type: output,
    gradWeight accumulated onto a nonzero one with two scales (repeated indices summed, paddingValue's rows left,
    scaleGradByFreq), max-norm renormalization of the rows used, against the CPU module in double; nothing
    staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    ctor, idx = LOOKUPS[name]
    r = rt.eval("""function(idx, seed, indexType)
       torch.manualSeed(seed)
       local cpu = %s:double()
       cpu.weight:mul(2)
       cpu.gradWeight:uniform(-1, 1)
       local gpu = cpu:clone():type('torch.CudaDoubleTensor')
       local out = {}
       for k, m in ipairs {cpu, gpu} do
          local input = k == 1 and idx:long() or idx:long():type(indexType)
          local y = m:forward(input)
          torch.manualSeed(seed + 1)
          local go = torch.DoubleTensor(y:size()):normal()
          if k == 2 then go = go:type('torch.CudaDoubleTensor') end
          m:backward(input, go, 0.5)
          m:accGradParameters(input, go * 3, 2)
          out[k] = {y:double():clone(), m.gradWeight:double():clone(), m.weight:double():clone()}
       end
       return out
    end""" % ctor)(rt.from_numpy(np.asarray(idx, dtype=np.float64)), int(rng.integers(1 << 30)), index_type)
    for i, what in ((1, "output"), (2, "gradWeight"), (3, "weight (renormalized)")):
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-12, atol=1e-13, err_msg=what)
    assert fallbacks(rt) == {}


def test_lookup_table_trains_on_the_gpu_as_on_the_cpu(gpu, rng):
    """A LookupTable -> Linear -> LogSoftMax network with ClassNLL, optim.sgd over getParameters in float, on both
    backends: the losses agree to 1e-5; a bad index is named."""
    rt = gpu
    rt.execute("require 'cunn' require 'optim'")
    x = rng.integers(1, 21, (8, 3)).astype(np.float64)
    y = rng.integers(1, 5, 8).astype(np.float64)
    r = rt.eval("""function(x, y)
       local losses = {}
       for k, ty in ipairs {'torch.FloatTensor', 'torch.CudaTensor'} do
          torch.manualSeed(5)
          local net = nn.Sequential():add(nn.LookupTable(20, 6)):add(nn.View(-1, 18)):add(nn.Linear(18, 4))
                                     :add(nn.LogSoftMax()):type(ty)
          local crit = nn.ClassNLLCriterion():type(ty)
          local w, dw = net:getParameters()
          local input, target = x:type(ty), y:type(ty)
          losses[k] = {}
          for step = 1, 6 do
             local _, l = optim.sgd(function()
                dw:zero()
                local loss = crit:forward(net:forward(input), target)
                net:backward(input, crit:backward(net.output, target))
                return loss, dw
             end, w, {learningRate = 0.5, momentum = 0.9})
             losses[k][step] = l[1]
          end
       end
       return losses
    end""")(rt.from_numpy(x), rt.from_numpy(y))
    np.testing.assert_allclose(list(r[2].values()), list(r[1].values()), rtol=1e-5)
    assert list(r[1].values())[-1] < list(r[1].values())[0]
    with pytest.raises(LuaError, match=r"LookupTable_updateOutput: index 11 out of range \[1, 10\]"):
        rt.execute("nn.LookupTable(10, 3):cuda():forward(torch.CudaTensor{1, 11})")
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape", [("nn.Normalize(2)", (5, 7)), ("nn.Normalize(1)", (4, 6)),
                                        ("nn.Normalize(3)", (6,)), ("nn.Normalize(1.5, 1e-6)", (3, 8)),
                                        ("nn.Normalize(math.huge)", (4, 5))])
def test_normalize_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor, shape):
    """nn.Normalize's output, norms and gradInput against the CPU module in double (zeros in the input, where
    |x|^(p-2) needs its eps); p = inf through gather/scatter (staged), the others with nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.standard_normal(shape)
    x.reshape(-1)[::5] = 0
    out, _, _ = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), False, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-11, atol=1e-12,
                                   err_msg=what)
    if "huge" not in ctor:
        assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape", [("nn.FeatureLPPooling(3, 2, 2, true)", (2, 9, 4, 3)),
                                        ("nn.FeatureLPPooling(4, 1, 3)", (7, 5)),
                                        ("nn.FeatureLPPooling(2, 2, 1.5)", (6,)),
                                        ("nn.FeatureLPPooling(2, 1, 2, true)", "with zeros (2, 5, 3)")])
def test_feature_lp_pooling_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor, shape):
    """FeatureLPPooling (overlapping and strided windows over the feature dimension, batch mode or not, powers 2, 3
    and 1.5 on positive inputs, and windows of zeros whose outputs pass no gradient): output and gradInput against
    the CPU module in double; nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    zeros = isinstance(shape, str)
    if zeros:
        shape = eval(shape.split(" ", 2)[2])
    x = rng.uniform(0.1, 2, shape) if "1.5" in ctor or "3)" in ctor else rng.standard_normal(shape)
    if zeros:
        x[:, 1:3] = 0   # the window over features 2 and 3 is all zeros
    out, _, _ = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), False, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-13,
                                   err_msg=what)
    if zeros:
        assert np.all(np.isfinite(rt.to_numpy(out[2][2])))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape", [("nn.SpatialUpSamplingBilinear(2)", (2, 3, 4, 5)),
                                        ("nn.SpatialUpSamplingBilinear({oheight = 7, owidth = 3})", (3, 5, 4)),
                                        ("nn.SpatialUpSamplingBilinear(3)", (1, 1, 1, 3)),
                                        ("nn.UpSampling(2, 'trilinear')", (1, 2, 3, 2, 4))])
def test_linear_upsampling_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor, shape):
    """Bilinear and trilinear upsampling (corners aligned), growing and shrinking, a side of 1: output and gradInput
    against the CPU module in double; nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.standard_normal(shape)
    out, _, _ = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), False, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-13,
                                   err_msg=what)
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape", [("nn.SpatialDilatedMaxPooling(3, 3, 2, 2, 1, 1, 2, 2)", (2, 3, 9, 10)),
                                        ("nn.SpatialDilatedMaxPooling(2, 3, 1, 2, 0, 1, 3, 1):ceil()", (3, 8, 7)),
                                        ("nn.SpatialDilatedMaxPooling(3, 3, 1, 1, 1, 1, 1, 1)", (2, 2, 5, 5))])
def test_dilated_max_pooling_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor, shape):
    """SpatialDilatedMaxPooling (dilation, padding, ceil mode, overlapping windows whose gradients add up at one
    input): output, indices and gradInput against the CPU module in double, with ties (rounded inputs) and a NaN;
    nothing staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = np.round(rng.standard_normal(shape) * 2) / 2   # ties: the first maximum must win, as on the CPU
    x.reshape(-1)[7] = np.nan
    out, _, dev = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), False, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-13,
                                   err_msg=what, equal_nan=True)
    assert rt.eval("function(m) return torch.type(m.indices) end")(dev) == "torch.CudaLongTensor"
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("ctor,shape", [("nn.SpatialSubSampling(3, 2, 2, 2, 2)", (2, 3, 8, 7)),
                                        ("nn.SpatialSubSampling(4, 3, 2, 1, 2)", (4, 7, 6)),
                                        ("nn.TemporalSubSampling(5, 3, 2)", (2, 9, 5)),
                                        ("nn.TemporalSubSampling(4, 2)", (6, 4))])
def test_subsampling_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor, shape):
    """SpatialSubSampling and TemporalSubSampling (the LeNet-era layers of Torch7's tutorials): output, gradInput
    and the parameter gradients accumulated with two scales, against the CPU module in double, on contiguous and
    transposed inputs."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.standard_normal(shape)
    for transposed in (False, True):
        out, _, _ = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), transposed, int(rng.integers(1, 1 << 30)))
        for i, what in ((1, "output"), (2, "gradInput"), (3, "gradWeight"), (4, "gradBias")):
            np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-12,
                                       err_msg=what)
    assert fallbacks(rt) == {}


def test_max_unpooling_on_the_gpu_against_the_cpu_in_double(gpu, rng):
    """SpatialMaxUnpooling after the GPU SpatialMaxPooling (an encoder-decoder's pair, as SegNet and ENet use them):
    the values back where the maxima were, zeros elsewhere, and the gradient gathered back; against the same pair
    on the CPU in double; positions outside the output plane refused by name."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = rng.standard_normal((2, 3, 8, 6))
    r = rt.eval("""function(x)
       local out = {}
       for k, ty in ipairs {'torch.DoubleTensor', 'torch.CudaDoubleTensor'} do
          local pool = nn.SpatialMaxPooling(2, 2, 2, 2):type(ty)
          local net = nn.Sequential():add(pool):add(nn.SpatialMaxUnpooling(pool)):type(ty)
          local input = x:type(ty)
          local y = net:forward(input)
          torch.manualSeed(4)
          local go = torch.DoubleTensor(y:size()):normal():type(ty)
          out[k] = {y:double(), net:backward(input, go):double(), torch.type(pool.indices)}
       end
       return out
    end""")(rt.from_numpy(x))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-12, atol=1e-13, err_msg=what)
    assert r[2][3] == "torch.CudaLongTensor"
    with pytest.raises(LuaError, match="SpatialMaxUnpooling_updateOutput: indices hold a position outside the 4x4 "
                                       "output plane"):
        rt.execute("""local pool = nn.SpatialMaxPooling(2, 2):cuda()
           local unpool = nn.SpatialMaxUnpooling(pool):cuda()
           pool:forward(torch.CudaTensor(1, 4, 4):fill(1))
           pool.indices:fill(17)
           unpool:forward(pool.output)""")
    assert fallbacks(rt) == {}


def test_random_fills_on_the_device(gpu):
    """uniform, normal and bernoulli on device tensors run on the device (nothing staged), from cutorch.manualSeed's
    Philox stream: the same seed gives the same values, successive calls new ones; a transposed view and an integer
    tensor are filled in place; the moments are as they should be (200,000 draws: mean and variance within 5
    standard errors), uniform stays in [a, b); bad parameters are refused as on the CPU."""
    rt = gpu
    r = rt.eval("""function()
       local n = 200000
       cutorch.manualSeed(42)
       local u = torch.CudaDoubleTensor(n):uniform(-2, 3)
       local g = torch.CudaDoubleTensor(n):normal(1.5, 2)
       local b = torch.CudaTensor(n):bernoulli(0.3)
       cutorch.manualSeed(42)
       local u2 = torch.CudaDoubleTensor(n):uniform(-2, 3)
       local u3 = torch.CudaDoubleTensor(n):uniform(-2, 3)
       local base = torch.CudaDoubleTensor(30, 40):fill(-7)
       base:t():narrow(1, 3, 10):uniform(5, 6)
       local bytes = torch.CudaByteTensor(1000):bernoulli()
       return {u:double(), g:double(), b:double(), u2:double(), u3:double(), base:double(), bytes:double(),
               torch.type(bytes)}
    end""")()
    u, g, b, u2, u3, base, by = (rt.to_numpy(r[i]) for i in range(1, 8))
    n = u.size
    assert u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 5 * 5 / np.sqrt(12 * n) and abs(u.var() - 25 / 12) < 0.05
    assert abs(g.mean() - 1.5) < 5 * 2 / np.sqrt(n) and abs(g.std() - 2) < 0.02
    assert set(np.unique(b)) == {0.0, 1.0} and abs(b.mean() - 0.3) < 5 * np.sqrt(0.21 / n)
    np.testing.assert_array_equal(u2, u)
    assert not np.array_equal(u3, u)
    assert ((base[:, 2:12] >= 5) & (base[:, 2:12] < 6)).all() and (base[:, :2] == -7).all() and (base[:, 12:] == -7).all()
    assert set(np.unique(by)) <= {0.0, 1.0} and 400 < by.sum() < 600 and r[8] == "torch.CudaByteTensor"
    assert fallbacks(rt) == {}
    with pytest.raises(LuaError, match="standard deviation must be strictly positive"):
        rt.execute("torch.CudaTensor(3):normal(0, -1)")
    with pytest.raises(LuaError, match="bernoulli: p must be >= 0 and <= 1"):
        rt.execute("torch.CudaTensor(3):bernoulli(1.5)")


INDEX_POOLINGS = {   # constructor, input shape: modules that keep Torch7's indices of their maxima
    "nn.TemporalMaxPooling(3, 1)": (2, 9, 4),              # overlapping windows
    "nn.TemporalMaxPooling(2)": (7, 3),                    # one sequence
    "nn.TemporalMaxPooling(4, 3)": (3, 11, 5),             # a stride that skips frames
    "nn.SpatialAdaptiveMaxPooling(3, 2)": (2, 3, 7, 8),    # overlapping windows: the sides do not divide
    "nn.SpatialAdaptiveMaxPooling(5, 4)": (2, 3, 5),       # windows larger than the input
    "nn.SpatialAdaptiveMaxPooling(1, 1)": (2, 4, 6, 6),    # global pooling
}


@pytest.mark.parametrize("ctor", sorted(INDEX_POOLINGS))
def test_index_keeping_max_poolings_on_the_gpu_against_the_cpu_in_double(gpu, rng, ctor):
    """TemporalMaxPooling (0-based frames) and SpatialAdaptiveMaxPooling ((2, [N,] C, oH, oW) window positions):
    output, Torch7's indices and gradInput against the CPU module in double, on inputs with ties and a NaN; nothing
    staged."""
    rt = gpu
    rt.execute("require 'cunn'")
    x = np.round(rng.standard_normal(INDEX_POOLINGS[ctor]) * 2) / 2   # ties: the first maximum must win
    x.reshape(-1)[5] = np.nan
    out, _, dev = rt.eval(MODULE_ON_BOTH % ctor)(rt.from_numpy(x), False, int(rng.integers(1, 1 << 30)))
    for i, what in ((1, "output"), (2, "gradInput")):
        np.testing.assert_allclose(rt.to_numpy(out[2][i]), rt.to_numpy(out[1][i]), rtol=1e-12, atol=1e-13,
                                   err_msg=what, equal_nan=True)
    ind = rt.eval("function(m) return m.indices:double() end")(dev)
    cpu = rt.eval("function(m, x) local c = m:clone():double() c:forward(x) return c.indices:double() end")(
        dev, rt.from_numpy(x))
    np.testing.assert_array_equal(rt.to_numpy(ind), rt.to_numpy(cpu))
    assert fallbacks(rt) == {}


def emulated_driver():
    return os.environ.get("LUATORCH_CUDA_DRIVER", "").endswith("libdriver_emulated.so")


@pytest.fixture
def streams(gpu):
    """Two reserved streams; the thread's current stream (process-wide, as cutorch's) back to 0 afterwards."""
    gpu.execute("cutorch.reserveStreams(2)")
    yield gpu
    gpu.execute("cutorch.setDevice(1) cutorch.setStream(0)")


def test_streams_order_work_as_cuda_does(streams, rng):
    """cutorch.setStream sends kernels, copies and cuBLAS to the stream chosen; work on one stream is seen by another
    only after streamWaitFor or streamBarrier. On the emulated driver streams run lazily (a queue runs when waited
    for), so a read on stream 2 of what stream 1 wrote without a wait gets the old values, as a GPU may; the waits
    make the reads right on any device."""
    rt = streams
    x, b = rng.standard_normal(7), rng.standard_normal((4, 3))
    r = rt.eval("""function(x, b)
       local out = {cutorch.getNumStreams(), cutorch.getStream()}
       local d = torch.CudaDoubleTensor(7):copy(x)
       local a, bd = torch.CudaDoubleTensor(5, 4):fill(1), torch.CudaDoubleTensor(4, 3):copy(b)
       cutorch.synchronize()
       cutorch.setStream(1)
       out[3] = cutorch.getStream()
       a:mul(3)
       out[4] = torch.mm(a, bd):double()     -- cuBLAS on stream 1, after a:mul(3) there
       d:mul(2)
       cutorch.setStream(2)
       out[5] = d:double()                    -- stream 2, no wait: stream 1's mul(2) not ordered before
       cutorch.streamWaitFor(2, {1})
       out[6] = d:double()
       d:add(1)                               -- stream 2
       cutorch.setStream(1)
       cutorch.streamBarrier({1, 2})
       out[7] = d:double()                    -- stream 1, after stream 2's add
       local pinned = cutorch.createCudaHostDoubleTensor(7):copyAsync(d)
       cutorch.streamSynchronize(1)
       out[8] = pinned:clone()
       cutorch.setDefaultStream()
       out[9] = cutorch.getStream()
       return out
    end""")(rt.from_numpy(x), rt.from_numpy(b))
    assert (r[1], r[2], r[3], r[9]) == (2, 0, 1, 0)
    np.testing.assert_allclose(rt.to_numpy(r[4]), np.full((5, 4), 3.0) @ b, rtol=1e-13)
    if emulated_driver():
        np.testing.assert_array_equal(rt.to_numpy(r[5]), x)
    np.testing.assert_array_equal(rt.to_numpy(r[6]), 2 * x)
    np.testing.assert_array_equal(rt.to_numpy(r[7]), 2 * x + 1)
    np.testing.assert_array_equal(rt.to_numpy(r[8]), 2 * x + 1)


def test_streams_across_gpus_and_their_errors(two_gpus, rng):
    """streamWaitForMultiDevice orders a stream of GPU 1 after a stream of GPU 2 (a copy between them then sees GPU
    2's work on that stream); a copy between GPUs waits for the source GPU's current stream by itself. Streams
    beyond those reserved and non-numbers are refused by name."""
    rt = two_gpus
    rt.execute("cutorch.reserveStreams(2)")
    x = rng.standard_normal(6)
    try:
        r = rt.eval("""function(x)
           cutorch.setDevice(2)
           local y = torch.CudaDoubleTensor(6):copy(x)
           cutorch.synchronize()
           cutorch.setStream(1)
           y:mul(4)                                   -- GPU 2, stream 1
           cutorch.setDevice(1)
           cutorch.setStream(2)
           cutorch.streamWaitForMultiDevice(1, 2, {[2] = {1}})
           local got = torch.CudaDoubleTensor(6):copy(y)   -- GPU 1, stream 2 (waits for GPU 2's stream 2 too)
           cutorch.setDevice(2)
           y:add(1)                                   -- GPU 2, stream 2: the copy below waits for it
           cutorch.setDevice(1)
           local again = torch.CudaDoubleTensor(6):copy(y)
           return {got:double(), again:double()}
        end""")(rt.from_numpy(x))
        np.testing.assert_array_equal(rt.to_numpy(r[1]), 4 * x)
        np.testing.assert_array_equal(rt.to_numpy(r[2]), 4 * x + 1)
        with pytest.raises(LuaError, match=r"stream 3 is not one of 0\.\.2 \(cutorch.reserveStreams\(3\)"):
            rt.execute("cutorch.setStream(3)")
        with pytest.raises(LuaError, match="cutorch.setStream: a stream number expected, got string"):
            rt.execute("cutorch.setStream('1')")
        with pytest.raises(LuaError, match="a table of streams to wait for expected"):
            rt.execute("cutorch.streamWaitFor(1, 2)")
    finally:
        rt.execute("cutorch.setDevice(1) cutorch.setStream(0)")


# ----------------------------------------------------------------------------- on the emulated driver

@pytest.mark.slow
def test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory(simt, tmp_path):
    """Every test of this file and of test_cutorch_gpu_*.py (the families of device methods), in a process whose CUDA driver and cuBLAS are tests/cuda_host's emulations
    with two devices and LT_EMULATED_CUDA_GUARD=1 (device memory the host cannot touch, and a kernel cannot touch
    another device's) and whose kernels run in the SIMT emulator: LUATORCH_CUTORCH=gpu, so `require 'cutorch'`
    must take the GPU backend."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, guard=True)   # every kernel file
    env["LUATORCH_CUTORCH"] = "gpu"
    env["LT_EMULATED_CUDA_DEVICES"] = "2"
    files = [os.path.abspath(__file__)] + sorted(glob.glob(os.path.join(HERE, "test_cutorch_gpu_*.py")))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *files,
                        "-k", "not emulated_driver"], capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE),
                       timeout=1800)
    assert r.returncode == 0 and "skipped" not in r.stdout, r.stdout[-4000:] + r.stderr[-3000:]


@pytest.mark.slow
def test_auto_takes_the_gpu_when_one_is_present_and_starts(simt, tmp_path):
    """LUATORCH_CUTORCH unset (auto): the GPU backend with the (emulated) driver showing a device; the CPU
    backend, silently, without a driver; the CPU backend with one line on stderr saying why when a device is
    present but the backend cannot start (no NVRTC); and LUATORCH_CUTORCH=gpu makes that last case an error."""
    from simt_emulator import emulated_cuda_env

    env = emulated_cuda_env(simt, tmp_path, ("copy", "fill"))
    env.pop("LUATORCH_CUTORCH", None)
    probe = "require 'cutorch' io.write('backend=' .. cutorch.backend .. '\\n')"

    def th(extra, drop=()):
        e = {k: v for k, v in env.items() if k not in drop}
        e.update(extra)
        return subprocess.run([sys.executable, "-m", "run.cli", "th", "-e", probe], capture_output=True, text=True,
                              env=e, cwd=os.path.dirname(HERE), timeout=300)

    r = th({})
    assert r.returncode == 0 and "backend=gpu" in r.stdout and r.stderr == "", r.stdout + r.stderr
    r = th({}, drop=("LUATORCH_CUDA_DRIVER",))
    assert r.returncode == 0 and "backend=cpu" in r.stdout and r.stderr == "", r.stdout + r.stderr
    r = th({"LUATORCH_CUDA_NVRTC": str(tmp_path / "no-such-libnvrtc.so")})
    assert r.returncode == 0 and "backend=cpu" in r.stdout, r.stdout + r.stderr
    assert "a GPU is present but the GPU backend does not start" in r.stderr and "NVRTC" in r.stderr, r.stderr
    r = th({"LUATORCH_CUDA_NVRTC": str(tmp_path / "no-such-libnvrtc.so"), "LUATORCH_CUTORCH": "gpu"})
    assert r.returncode != 0 and "the GPU backend does not start (LUATORCH_CUTORCH=gpu)" in r.stdout + r.stderr


def test_a_residual_network_trains_on_the_gpu_as_on_the_cpu(gpu, rng):
    """A small ResNet (fb.resnet.torch's blocks: cudnn convolutions, batch norm, ReLU in place, max pooling, two
    basic blocks, one with a projection shortcut, average pooling, Linear, CrossEntropyCriterion), five optim.sgd
    steps with momentum and weight decay over getParameters in double on both backends: losses, parameters and
    batch norm's running statistics agree to 1e-9, and nothing runs staged."""
    rt = gpu
    rt.execute("require 'cunn' require 'cudnn' require 'optim'")
    x = rng.standard_normal((8, 3, 16, 16))
    y = rng.integers(1, 6, 8).astype(np.float64)
    train = rt.execute(TRAIN_ON_BOTH + """return function(x, y)
       local function block(nIn, nOut, stride)
          local s = nn.Sequential()
             :add(cudnn.SpatialConvolution(nIn, nOut, 3, 3, stride, stride, 1, 1):noBias())
             :add(cudnn.SpatialBatchNormalization(nOut)):add(cudnn.ReLU(true))
             :add(cudnn.SpatialConvolution(nOut, nOut, 3, 3, 1, 1, 1, 1):noBias())
             :add(cudnn.SpatialBatchNormalization(nOut))
          local shortcut = nn.Identity()
          if stride ~= 1 or nIn ~= nOut then
             shortcut = nn.Sequential():add(cudnn.SpatialConvolution(nIn, nOut, 1, 1, stride, stride):noBias())
                                       :add(cudnn.SpatialBatchNormalization(nOut))
          end
          return nn.Sequential():add(nn.ConcatTable():add(s):add(shortcut)):add(nn.CAddTable(true))
                                :add(cudnn.ReLU(true))
       end
       torch.manualSeed(7)
       local base = nn.Sequential()
          :add(cudnn.SpatialConvolution(3, 8, 3, 3, 1, 1, 1, 1)):add(cudnn.SpatialBatchNormalization(8))
          :add(cudnn.ReLU(true)):add(cudnn.SpatialMaxPooling(3, 3, 2, 2, 1, 1))
          :add(block(8, 8, 1)):add(block(8, 16, 2))
          :add(cudnn.SpatialAveragePooling(4, 4, 1, 1)):add(nn.View(16)):add(nn.Linear(16, 5))
       local r = trainOnBoth(base, nn.CrossEntropyCriterion(), {'torch.DoubleTensor', 'torch.CudaDoubleTensor'},
                             x, y, {learningRate = 0.1, momentum = 0.9, weightDecay = 1e-4}, 5)
       local results = {}
       for k = 1, 2 do
          local net = r[k].net
          local bn = net:findModules('cudnn.SpatialBatchNormalization')
          net:evaluate()
          results[k] = {r[k].losses, r[k].w:double(), bn[#bn].running_mean:double(), bn[#bn].running_var:double(),
                        #bn, net:forward(r[k].input):double()}
       end
       return results
    end""")
    r = train(rt.from_numpy(x), rt.from_numpy(y))
    assert r[1][5] == 6   # the stem, two per block, the projection shortcut
    cpu, dev = (list(r[k][1].values()) for k in (1, 2))
    np.testing.assert_allclose(dev, cpu, rtol=1e-9)
    assert cpu[-1] < cpu[0]
    for i, what in ((2, "parameters"), (3, "running_mean"), (4, "running_var"), (6, "evaluation output")):
        np.testing.assert_allclose(rt.to_numpy(r[2][i]), rt.to_numpy(r[1][i]), rtol=1e-9, atol=1e-12, err_msg=what)
    assert fallbacks(rt) == {}, "the training step left the device"


# ----------------------------------------------------------------------------- several GPUs

@pytest.fixture
def two_gpus(gpu):
    if gpu.eval("cutorch.getDeviceCount()") < 2:
        pytest.skip("needs two GPUs (the emulated-driver run of this file shows two: LT_EMULATED_CUDA_DEVICES=2)")
    yield gpu
    gpu.execute("cutorch.setDevice(1)")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_copies_between_gpus_in_any_layout_and_type(two_gpus, rng, layout):
    """A tensor on GPU 1 copied into one on GPU 2 (the driver's peer copy), from any layout into a transposed
    destination, Cuda into CudaDouble: the values arrive, the destination stays on GPU 2, the source on GPU 1,
    and a clone is made on the current device (GPU 1 again), as cutorch's."""
    rt = two_gpus
    x = rng.standard_normal((6, 9)).astype(np.float32)
    src = rt.eval("function(t, layout) return layout(t) end")(to_device(rt, x, "Cuda"), rt.eval(LAYOUTS[layout]))
    want = view_of(x, layout)
    copy = rt.eval("""function(src, typ)
       cutorch.setDevice(2)
       local dst = torch.getmetatable(typ).new(src:size(2), src:size(1)):t()   -- a transposed view on GPU 2
       dst:copy(src)
       cutorch.setDevice(1)
       return dst, dst:getDevice(), src:getDevice(), dst:clone():getDevice()
    end""")
    for typ, dtype in (("torch.CudaTensor", np.float32), ("torch.CudaDoubleTensor", np.float64)):
        dst, dst_dev, src_dev, clone_dev = copy(src, typ)
        assert (dst_dev, src_dev, clone_dev) == (2, 1, 1)
        np.testing.assert_array_equal(to_host(rt, dst), want.astype(dtype))
    assert fallbacks(rt) == {}


# a small network with batch norm trained by nn.DataParallelTable (forwardBackward, optim.sgd) in double, on
# the given types and assignments; returns the losses, the final parameters, batch norm's running mean, the
# evaluation output and the devices of the replicas' parameters
DPT_TRAIN = """
return function(ty, gpus, impl, threaded, nccl, x, y)
   require 'optim'
   if ty:match('Cuda') then cutorch.setDevice(gpus[1]) end
   torch.manualSeed(5)
   local base = nn.Sequential()
      :add(cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(cudnn.SpatialBatchNormalization(4))
      :add(cudnn.ReLU(true)):add(nn.View(4 * 6 * 6)):add(nn.Linear(4 * 6 * 6, 5))
   local net = base:double():type(ty)
   local dpt = nn.DataParallelTable(1, true, nccl):add(net, gpus):implementation(impl)
   if threaded then dpt:threads(function() require 'cudnn' end) end
   local crit = nn.CrossEntropyCriterion():type(ty)
   local w, g = dpt:getParameters()
   local input, target = x:type(ty), ty:match('Cuda') and y:cudaLong() or y:long()
   local state, losses = {learningRate = 0.1, momentum = 0.9, weightDecay = 1e-4}, {}
   for step = 1, 4 do
      optim.sgd(function()
         dpt:zeroGradParameters()
         losses[step] = dpt:forwardBackward(input, target, crit)
         return losses[step], g
      end, w, state)
   end
   dpt:evaluate()
   local out = dpt:forward(input):double()
   local devices = {}
   local function device(t) return t.getDevice and t:getDevice() or 0 end
   for k, f in ipairs(dpt.flattenedParams) do devices[k] = device(f[1]) end
   local result = {losses, w:double(), dpt:get(1):get(2).running_mean:double(), out, devices,
                   torch.type(dpt.output), device(dpt.output), dpt._ncclComm ~= nil}
   dpt.impl:close()
   cutorch.setDevice(1)
   return result
end
"""


@pytest.mark.parametrize("impl", ["baseline", "optimized"])
@pytest.mark.parametrize("threaded", [False, True], ids=["serial", "threads"])
@pytest.mark.parametrize("gpus", [(1, 2), (2, 1, 1)], ids=["1-2", "2-1-1"])
@pytest.mark.parametrize("nccl", [False, True], ids=["peer", "nccl"])
def test_data_parallel_table_over_gpus_as_over_cpu_workers(two_gpus, rng, impl, threaded, gpus, nccl):
    """nn.DataParallelTable with its replicas on GPUs (each replica on its assigned device: clones made and run
    there, slices and parameters moved by peer copies, gradients summed on the first device, or by NCCL's reduce
    and broadcast with useNCCL where every replica has its own GPU) trains as the same table over CPU workers:
    losses, parameters, batch norm's running mean (per replica, as Torch7) and the evaluation output agree to
    1e-9 in double, with several replicas on one GPU too, and nothing staged."""
    rt = two_gpus
    rt.execute("require 'cudnn'")
    x = rng.standard_normal((7, 3, 6, 6))   # 7 over 2 or 3 replicas: uneven slices
    y = rng.integers(1, 6, 7).astype(np.float64)
    train = rt.execute(DPT_TRAIN)
    lua_gpus = rt.eval("function(...) return {...} end")(*gpus)
    cpu = train("torch.DoubleTensor", lua_gpus, impl, threaded, nccl, rt.from_numpy(x), rt.from_numpy(y))
    dev = train("torch.CudaDoubleTensor", lua_gpus, impl, threaded, nccl, rt.from_numpy(x), rt.from_numpy(y))
    np.testing.assert_allclose(list(dev[1].values()), list(cpu[1].values()), rtol=1e-9)
    for i, what in ((2, "parameters"), (3, "running_mean"), (4, "evaluation output")):
        np.testing.assert_allclose(rt.to_numpy(dev[i]), rt.to_numpy(cpu[i]), rtol=1e-9, atol=1e-12, err_msg=what)
    assert tuple(dev[5].values()) == gpus   # replica k's parameters on GPU gpus[k]
    assert dev[6] == "torch.CudaDoubleTensor" and dev[7] == gpus[0]
    if nccl and len(set(gpus)) == len(gpus) and os.environ.get("LUATORCH_CUDA_NCCL"):   # the emulated run has one
        assert dev[8], "NCCL was not used"
    if len(set(gpus)) < len(gpus) or not nccl:
        assert not dev[8]
    assert fallbacks(rt) == {}


DPT_HALF = """
return function(ty, x, y, impl)
   require 'optim'
   torch.manualSeed(5)
   local net = nn.Sequential():add(cudnn.SpatialConvolution(3, 4, 3, 3, 1, 1, 1, 1)):add(cudnn.ReLU(true))
      :add(nn.View(4 * 6 * 6)):add(nn.Linear(4 * 6 * 6, 5)):float()
   local dpt = nn.DataParallelTable(1, true, true):add(net, {1, 2}):implementation(impl)
      :threads(function() require 'cudnn' end)
   dpt = dpt:type(ty)   -- as fb.resnet.torch: the table converted after its replicas were listed
   local crit = nn.CrossEntropyCriterion():type(ty)
   local w, g = dpt:getParameters()
   -- the input as fb.resnet.torch's trainer hands it over with -precision half: a pinned host HalfTensor
   local input = ty == 'torch.CudaHalfTensor' and cutorch.createCudaHostHalfTensor() or cutorch.createCudaHostTensor()
   input:resize(x:size()):copy(x)
   local target = y:cudaLong()
   local state, losses = {learningRate = 0.05, momentum = 0.9}, {}
   for step = 1, 3 do
      optim.sgd(function()
         dpt:zeroGradParameters()
         local out = dpt:forward(input)
         losses[step] = crit:forward(out, target)
         dpt:backward(input, crit:backward(out, target))
         return losses[step], g
      end, w, state)
   end
   local devices = {}
   for k, f in ipairs(dpt.flattenedParams) do devices[k] = f[1]:getDevice() end
   local result = {losses, w:double(), devices, torch.type(dpt.output), torch.type(w), dpt._ncclComm ~= nil}
   dpt.impl:close()
   cutorch.setDevice(1)
   return result
end
"""


@pytest.mark.parametrize("impl", ["baseline", "optimized"])
def test_data_parallel_table_trains_in_half_over_two_gpus(two_gpus, rng, impl):
    """fb.resnet.torch's -precision half: a DataParallelTable converted to CudaHalfTensor keeps half replicas on
    each GPU (it trained a float copy before), takes a pinned host HalfTensor batch, and sums the half gradients
    with NCCL. Oracle: the same table in float; three SGD steps agree to half's precision."""
    rt = two_gpus
    rt.execute("require 'cudnn'")
    x, y = rng.standard_normal((6, 3, 6, 6)), rng.integers(1, 6, 6).astype(np.float64)
    train = rt.execute(DPT_HALF)
    ref = train("torch.CudaTensor", rt.from_numpy(x), rt.from_numpy(y), impl)
    half = train("torch.CudaHalfTensor", rt.from_numpy(x), rt.from_numpy(y), impl)
    np.testing.assert_allclose(list(half[1].values()), list(ref[1].values()), rtol=2e-2)
    w_half, w_ref = rt.to_numpy(half[2]), rt.to_numpy(ref[2])
    assert np.abs(w_half - w_ref).max() <= 2e-2 * np.abs(w_ref).max()
    assert tuple(half[3].values()) == (1, 2)
    assert (half[4], half[5]) == ("torch.CudaHalfTensor", "torch.CudaHalfTensor")
    if os.environ.get("LUATORCH_CUDA_NCCL"):   # the emulated run has one
        assert half[6], "NCCL was not used"
    assert fallbacks(rt) == {}


def test_data_parallel_table_types_and_empty_inputs_as_cunns(two_gpus, rng):
    """As cunn's DataParallelTable on GPUs: :type() before any module is added, a host type refused, modules added
    one GPU at a time; an input table whose first entry is an empty tensor (each replica gets an empty one, the
    batch is the other entry's) gives the module's own output and gradient."""
    rt = two_gpus
    rt.execute("require 'cunn'")
    out = rt.eval("""function(x, g)
       local net = nn.Sequential():add(nn.SelectTable(2)):add(nn.Linear(10, 2)):cuda()
       local dpt = nn.DataParallelTable(1):type('torch.CudaTensor')
       for i = 1, 2 do cutorch.withDevice(i, function() dpt:add(net:clone(), i) end) end
       local refused, why = pcall(function() dpt:type('torch.FloatTensor') end)
       local input = {torch.CudaTensor(), x:cuda()}
       local y = dpt:forward(input):double()
       local gi = dpt:backward(input, g:cuda())
       local want = net:forward(input):double()
       local wantGi = net:backward(input, g:cuda())
       return y, want, gi[2]:double(), wantGi[2]:double(), gi[1]:nElement(), refused, why
    end""")(rt.from_numpy(rng.standard_normal((4, 10))), rt.from_numpy(rng.standard_normal((4, 2))))
    y, want, gi, want_gi, empty, refused, why = out
    np.testing.assert_allclose(rt.to_numpy(y), rt.to_numpy(want), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rt.to_numpy(gi), rt.to_numpy(want_gi), rtol=1e-6, atol=1e-6)
    assert empty == 0
    assert refused is False and "supports only torch.CudaHalfTensor or torch.CudaDoubleTensor or torch.CudaTensor" in why
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("impl", ["baseline", "optimized"])
def test_data_parallel_table_on_a_stream_of_the_callers(two_gpus, rng, impl):
    """With stream 2 current on the calling thread, DataParallelTable's threads run their replicas on stream 2 of
    their GPUs too, after the copies the caller queued there (on the emulated driver, a worker left on the legacy
    stream would read its slice before it arrived): it trains as over CPU workers, and the caller's stream is
    still 2 afterwards."""
    rt = two_gpus
    rt.execute("require 'cudnn' cutorch.reserveStreams(2)")
    x = rng.standard_normal((7, 3, 6, 6))
    y = rng.integers(1, 6, 7).astype(np.float64)
    train = rt.execute(DPT_TRAIN)
    gpus = rt.eval("{1, 2}")
    cpu = train("torch.DoubleTensor", gpus, impl, True, False, rt.from_numpy(x), rt.from_numpy(y))
    try:
        rt.execute("cutorch.setStream(2)")
        dev = train("torch.CudaDoubleTensor", gpus, impl, True, False, rt.from_numpy(x), rt.from_numpy(y))
        assert rt.eval("cutorch.getStream()") == 2
    finally:
        rt.execute("cutorch.setDevice(1) cutorch.setStream(0)")
    np.testing.assert_allclose(list(dev[1].values()), list(cpu[1].values()), rtol=1e-9)
    for i, what in ((2, "parameters"), (3, "running_mean"), (4, "evaluation output")):
        np.testing.assert_allclose(rt.to_numpy(dev[i]), rt.to_numpy(cpu[i]), rtol=1e-9, atol=1e-12, err_msg=what)


def test_data_parallel_table_refuses_assignments_it_cannot_keep(two_gpus):
    """A GPU the machine does not have, and a module made on another GPU than its first assignment, are
    errors that say what to change; a layer given tensors on two GPUs says which are where."""
    rt = two_gpus
    rt.execute("require 'cunn'")
    run = rt.eval("""function(gpus)
       local dpt = nn.DataParallelTable(1):add(nn.Linear(3, 2):cuda(), gpus)
       return select(2, pcall(dpt.forward, dpt, torch.CudaTensor(4, 3):fill(1)))
    end""")
    assert "replica 2 is assigned GPU 9, but this machine has" in run(rt.eval("{1, 9}"))
    msg = run(rt.eval("{2, 1}"))
    assert "the module is on GPU 1 but its first assignment is GPU 2" in msg and "cutorch.setDevice(2)" in msg
    msg = rt.eval("""(function()
       local conv = nn.SpatialConvolution(2, 3, 3, 3):cuda()
       cutorch.setDevice(2)
       local x = torch.CudaTensor(1, 2, 5, 5):fill(1)
       cutorch.setDevice(1)
       return select(2, pcall(conv.forward, conv, x))
    end)()""")
    assert "its tensors are on different GPUs (input on GPU 2, weight on GPU 1)" in msg


def test_pinned_host_tensors_and_copy_async(gpu, rng):
    """cutorch.createCudaHost*Tensor gives host tensors over pinned memory (cuMemHostAlloc'ed blocks, cached with
    their last reference and freed by cutorch.emptyCache); copyAsync between them and device tensors lands the data
    (read back after cutorch.synchronize); pairs it does not take (unpinned, noncontiguous) copy synchronously."""
    rt = gpu
    x = rng.standard_normal((3, 4))
    live = None
    if os.environ.get("LUATORCH_CUDA_DRIVER", "").endswith("libdriver_emulated.so"):
        import ctypes

        live = ctypes.CDLL(os.environ["LUATORCH_CUDA_DRIVER"]).emulated_pinned_live
        live.restype = ctypes.c_long
    before = live() if live else None
    r = rt.eval("""function(x)
       local pinned = cutorch.createCudaHostDoubleTensor(3, 4)
       local out = {torch.type(pinned), torch.C.lt_storage_is_pinned(pinned._c.storage), pinned:sum()}
       pinned:copy(x)
       local d = torch.CudaDoubleTensor(3, 4):copyAsync(pinned)
       local back = cutorch.createCudaHostDoubleTensor(3, 4):copyAsync(d * 2)
       cutorch.synchronize()
       local plain = torch.DoubleTensor(3, 4):copyAsync(d)           -- not pinned: synchronous
       local strided = cutorch.createCudaHostDoubleTensor(4, 3):copyAsync(d:t())   -- noncontiguous source
       local empty = cutorch.createCudaHostTensor()
       out[4], out[5], out[6], out[7] = d:double(), back:clone(), plain, strided:clone()
       out[8], out[9] = torch.type(empty), empty:nElement()
       return out
    end""")(rt.from_numpy(x))
    assert r[1] == "torch.DoubleTensor" and r[2] == 1 and r[3] == 0
    np.testing.assert_array_equal(rt.to_numpy(r[4]), x)
    np.testing.assert_array_equal(rt.to_numpy(r[5]), 2 * x)
    np.testing.assert_array_equal(rt.to_numpy(r[6]), x)
    np.testing.assert_array_equal(rt.to_numpy(r[7]), x.T)
    assert r[8] == "torch.FloatTensor" and r[9] == 0
    if live:   # the emulated driver counts its pinned allocations: the cache keeps them until emptyCache
        rt.execute("collectgarbage() collectgarbage() cutorch.synchronize() cutorch.emptyCache()")
        base = live()
        assert base <= before, (before, base)
        rt.execute("keep = cutorch.createCudaHostFloatTensor(5)")
        assert live() == base + 1
        rt.execute("keep = nil collectgarbage() collectgarbage()")
        assert live() == base + 1    # cached
        rt.execute("cutorch.emptyCache()")
        assert live() == base


def test_pointwise_functional_forms_run_on_the_device(gpu, rng):
    """torch.add(x, y), torch.add(r, x, v, y), torch.cmul, torch.mul, torch.exp, torch.clamp, torch.addcmul,
    torch.pow, torch.mm, torch.addmm and torch.mv on GPU tensors: the results of the same calls on host tensors,
    computed by the device versions of their methods (nothing staged), the result argument filled and returned
    when given."""
    rt = gpu
    x, y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    run = rt.eval("""function(x, y, cuda)
       if cuda then x, y = x:cudaDouble(), y:cudaDouble() end
       local r = x.new()
       local given = torch.add(r, x, 2, y)
       local out = {torch.add(x, y), given, torch.cmul(x, y), torch.mul(x, 3), torch.exp(x), torch.clamp(x, -0.5, 0.5),
                    torch.addcmul(x, 0.5, y, y), torch.pow(x, 2), torch.mm(x, y:t()),
                    torch.addmm(0.5, torch.mm(x, y:t()), 2, x, y:t()), torch.mv(x, y[1])}
       for i, t in ipairs(out) do out[i] = t:double() end
       out[#out + 1] = rawequal(given, r) and torch.type(r) or 'another tensor'
       return out
    end""")
    host, dev = run(rt.from_numpy(x), rt.from_numpy(y), False), run(rt.from_numpy(x), rt.from_numpy(y), True)
    for i in range(1, 12):
        np.testing.assert_allclose(rt.to_numpy(dev[i]), rt.to_numpy(host[i]), rtol=1e-13, atol=1e-13, err_msg=str(i))
    assert dev[12] == "torch.CudaDoubleTensor" and host[12] == "torch.DoubleTensor"
    assert fallbacks(rt) == {}


def test_indexing_operators_read_and_write_device_memory_through_the_driver(gpu, rng):
    """t[{i, j}], t[mask], t[indices] and their assignments on tensors in GPU memory: element reads and writes go
    through the driver and the masks and index lists through the tensor's own (device) methods. These read
    the device pointer on the host (a crash under guarded memory) until 2026-12-05."""
    rt = gpu
    x = rng.standard_normal((5, 6)).astype(np.float32)
    t = to_device(rt, x, "Cuda")
    elem, view, masked, rows = rt.eval("""function(t)
        return t[{2, 3}], t[{{1, 2}, 3}], t[t:gt(0)], t[torch.CudaLongTensor({4, 1, 4})]
    end""")(t)
    assert elem == x[1, 2]
    np.testing.assert_array_equal(to_host(rt, view), x[0:2, 2])
    np.testing.assert_array_equal(to_host(rt, masked), x[x > 0])
    np.testing.assert_array_equal(to_host(rt, rows), x[[3, 0, 3]])
    rt.eval("""function(t)
        t[{5, 6}] = 42
        t[t:lt(-1)] = -1
        t[torch.CudaLongTensor({2})] = 7
        t[torch.CudaLongTensor({3})] = torch.CudaTensor(1, 6):fill(8)
    end""")(t)
    want = x.copy()
    want[4, 5] = 42
    want[want < -1] = -1
    want[1], want[2] = 7, 8
    np.testing.assert_array_equal(to_host(rt, t), want)
    assert not {k for k in fallbacks(rt) if "mask" in k or "index" in k}


def test_torch_functions_that_are_no_method_run_staged_on_device_tensors(gpu, rng):
    """LAPACK (torch.gesv, svd, inverse, ...), the alias sampler and torch.rand/randn/randperm into a device result
    called their C code on device memory (a crash under guarded memory) until 2026-12-05: the staging loop only saw
    tensor methods. Now they run staged (counted), and with a Cuda default type the functions that make their
    results of that type (torch.range, linspace, zeros, rand) give device tensors."""
    rt = gpu
    a = rng.standard_normal((5, 5)) + 5 * np.eye(5)
    b = rng.standard_normal((5, 2))
    da, db = to_device(rt, a, "CudaDouble"), to_device(rt, b, "CudaDouble")
    x, inv, usv, qr, chol = rt.eval("""function(a, b)
        local spd = torch.mm(a, a:t())
        return torch.gesv(b, a), torch.inverse(a), {torch.svd(a)}, {torch.qr(a)}, torch.potrf(spd, 'U')
    end""")(da, db)
    (u, s, v), (q, r) = list(usv.values()), list(qr.values())
    for t in (x, inv, u, s, v, q, r, chol):
        assert on_device(rt, t) and rt.eval("function(t) return torch.type(t) end")(t) == "torch.CudaDoubleTensor"
    np.testing.assert_allclose(to_host(rt, x), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_host(rt, inv), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_host(rt, s), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(to_host(rt, u) @ np.diag(to_host(rt, s)) @ to_host(rt, v).T, a, atol=1e-10)
    np.testing.assert_allclose(to_host(rt, q) @ to_host(rt, r), a, atol=1e-10)
    np.testing.assert_allclose(to_host(rt, chol).T @ to_host(rt, chol), a @ a.T, rtol=1e-10)
    done = fallbacks(rt)
    assert {"torch.gesv", "torch.inverse", "torch.svd", "torch.qr", "torch.potrf"} <= set(done)
    # the alias sampler over device tensors, and draws into device results (an empty one too)
    draws, perm, uni, nor = rt.eval("""function()
        local state = torch.multinomialAliasSetup(torch.CudaDoubleTensor({0, 0.5, 0.5, 0}))
        return torch.multinomialAlias(torch.CudaLongTensor(200), state), torch.randperm(torch.CudaLongTensor(), 9),
               torch.rand(torch.CudaTensor(), 4, 3), torch.randn(torch.CudaDoubleTensor(2), 1000)
    end""")()
    d = to_host(rt, draws)
    assert set(d) <= {2, 3} and len(set(d)) == 2
    assert sorted(to_host(rt, perm)) == list(range(1, 10))
    assert to_host(rt, uni).shape == (4, 3) and 0 <= to_host(rt, uni).min() and to_host(rt, uni).max() < 1
    assert abs(to_host(rt, nor).mean()) < 0.2 and 0.8 < to_host(rt, nor).std() < 1.2
    assert all(on_device(rt, t) for t in (draws, perm, uni, nor))
    # a Cuda default type
    made = rt.eval("""function()
        torch.setdefaulttensortype('torch.CudaTensor')
        local out = {torch.range(1, 4), torch.linspace(0, 1, 5), torch.zeros(3), torch.eye(2), torch.rand(3),
                     torch.randperm(5)}
        torch.setdefaulttensortype('torch.DoubleTensor')
        return out
    end""")()
    made = list(made.values())
    assert all(on_device(rt, t) for t in made)
    np.testing.assert_array_equal(to_host(rt, made[0]), [1, 2, 3, 4])
    np.testing.assert_allclose(to_host(rt, made[1]), np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_array_equal(to_host(rt, made[3]), np.eye(2))
    assert sorted(to_host(rt, made[5])) == [1, 2, 3, 4, 5]
    # a tensor given twice to a staged method is one tensor to the CPU method, whose aliasing check then sees it
    rt.execute("ALIASED = torch.CudaTensor(3, 5):uniform()")
    with pytest.raises(LuaError, match="the result cannot be the input tensor"):
        rt.execute("ALIASED:bhistc(ALIASED)")


def test_zeros_and_ones_of_a_cuda_default_type_fill_on_the_device(gpu):
    """torch.zeros/ones (and x:zeros/ones) are a resize and a fill, both done in device memory: no host staging.
    CycleGAN's InstanceNormalization makes its running statistics with them after setting the default type to
    torch.CudaTensor, and said 'torch.zeros has no GPU kernel yet'."""
    rt = gpu
    before = fallbacks(rt)
    made = rt.eval("""function()
        torch.setdefaulttensortype('torch.CudaTensor')
        local out = {torch.zeros(3, 4), torch.ones(5), torch.CudaDoubleTensor(2):zeros(2, 3):add(1),
                     torch.CudaLongTensor():ones(4)}
        torch.setdefaulttensortype('torch.DoubleTensor')
        return out
    end""")()
    made = list(made.values())
    assert fallbacks(rt) == before
    assert all(on_device(rt, t) for t in made)
    np.testing.assert_array_equal(to_host(rt, made[0]), np.zeros((3, 4)))
    np.testing.assert_array_equal(to_host(rt, made[1]), np.ones(5))
    np.testing.assert_array_equal(to_host(rt, made[2]), np.ones((2, 3)))
    np.testing.assert_array_equal(to_host(rt, made[3]), np.ones(4))


def test_every_method_and_torch_function_survives_device_arguments(gpu):
    """A sweep: every method of the Cuda tensor classes (CudaTensor, CudaLongTensor, CudaHalfTensor) and every
    function of the torch package, called with device tensors, numbers and index tensors in 8 argument forms. Any
    result or error is fine; what must not happen is host code reading device memory, which under the guarded
    emulated driver ends the process (the LAPACK functions, the alias sampler and torch.rand into a device result
    did until 2026-12-05)."""
    rt = gpu
    calls = rt.execute("""
        local forms = {
          function(f, x) return f(x) end, function(f, x) return f(x, x) end, function(f, x) return f(x, 2) end,
          function(f, x) return f(x, 1, 2) end, function(f, x) return f(x.new(), x) end,
          function(f, x) return f(x.new(), x, 2) end,
          function(f, x) return f(x, torch.CudaLongTensor({1, 2})) end,
          function(f, x) return f(x, 1, torch.CudaLongTensor({1, 2})) end,
        }
        -- functions that change the process's state for the calls after them
        local leave = {save = true, load = true, setdefaulttensortype = true, setnumthreads = true, include = true,
                       class = true, setRNGState = true, manualSeed = true, seed = true, factory = true,
                       newmetatable = true, setmetatable = true, deserialize = true, deserializeFromStorage = true,
                       TestSuite = true, setheaptracking = true}
        local calls = 0
        local function sweep(fns, make)
           local names = {}
           for k, v in pairs(fns) do
              if type(v) == 'function' and not k:match('^_') and not leave[k] then names[#names + 1] = k end
           end
           table.sort(names)
           for _, name in ipairs(names) do
              for _, form in ipairs(forms) do
                 pcall(form, fns[name], make())
                 calls = calls + 1
              end
           end
        end
        sweep(torch.getmetatable('torch.CudaTensor'), function() return torch.CudaTensor(4, 5):uniform() end)
        sweep(torch.getmetatable('torch.CudaLongTensor'), function() return torch.CudaLongTensor(4, 5):fill(2) end)
        sweep(torch.getmetatable('torch.CudaHalfTensor'), function() return torch.CudaHalfTensor(4, 5):fill(1) end)
        sweep(torch, function() return torch.CudaTensor(4, 5):uniform() end)
        return calls
    """)
    assert calls > 3000
