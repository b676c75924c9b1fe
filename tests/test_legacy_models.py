"""Legacy Torch7 models: a network saved by Torch7 + cutorch + cudnn.torch (cudnn.* classes,
torch.CudaTensor parameters), written here byte by byte from the format description (not by our
writer), loads, runs forward as PyTorch computes it, takes an SGD step as PyTorch's autograd
gives it, and saves back as classes and types Torch7 reads."""
import numpy as np
import pytest

from t7_cases import f64, i32, i64, s

torch = pytest.importorskip("torch")


class Obj:
    def __init__(self, cls, fields, version="V 1"):
        self.cls, self.fields, self.version = cls, fields, version


class Cuda:
    """A torch.CudaTensor (float32) as cutorch wrote it: tensor header, then a CudaStorage."""

    def __init__(self, array):
        self.array = np.ascontiguousarray(array, np.float32)


class Writer:
    """Torch7 binary format: tags, reference indices, "V 1" versions, 64-bit longs."""

    def __init__(self):
        self.out, self.n = [], 0

    def _index(self):
        self.n += 1
        return self.n

    def value(self, v):
        if v is None:
            self.out.append(i32(0))
        elif isinstance(v, bool):
            self.out.append(i32(5, int(v)))
        elif isinstance(v, (int, float)):
            self.out.append(i32(1) + f64(float(v)))
        elif isinstance(v, str):
            self.out.append(i32(2) + s(v))
        elif isinstance(v, dict):
            items = [(k, x) for k, x in v.items() if x is not None]
            self.out.append(i32(3, self._index(), len(items)))
            for k, x in items:
                self.value(k)
                self.value(x)
        elif isinstance(v, Cuda):
            a = v.array
            strides = [st // 4 for st in a.strides]
            self.out.append(i32(4, self._index()) + s("V 1") + s("torch.CudaTensor") + i32(a.ndim) +
                            i64(*a.shape) + i64(*strides) + i64(1))
            self.out.append(i32(4, self._index()) + s("V 1") + s("torch.CudaStorage") + i64(a.size) + a.tobytes())
        elif isinstance(v, Obj):
            self.out.append(i32(4, self._index()) + s(v.version) + s(v.cls))
            self.value(v.fields)
        else:
            raise TypeError(type(v))

    def bytes(self):
        return b"".join(self.out)


def empty():
    return Cuda(np.zeros((0,), np.float32))


def legacy_model(rng):
    """conv(3->4, 3x3, pad 1, no bias) - BN - ReLU(inplace) - maxpool 2x2 - View(64) - Linear(64->5),
    fields as cudnn.torch / nn wrote them (descriptors cleared, no bias on the convolution)."""
    w = {
        "conv": rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3,
        "bn_w": rng.uniform(0.5, 1.5, 4).astype(np.float32), "bn_b": rng.standard_normal(4).astype(np.float32),
        "bn_m": rng.standard_normal(4).astype(np.float32) * 0.1, "bn_v": rng.uniform(0.5, 2, 4).astype(np.float32),
        "fc_w": rng.standard_normal((5, 64)).astype(np.float32) * 0.1,
        "fc_b": rng.standard_normal(5).astype(np.float32) * 0.1,
    }
    base = lambda: {"output": empty(), "gradInput": empty(), "train": True, "_type": "torch.CudaTensor"}  # noqa
    conv = Obj("cudnn.SpatialConvolution", {**base(), "nInputPlane": 3, "nOutputPlane": 4, "kW": 3, "kH": 3,
                                            "dW": 1, "dH": 1, "padW": 1, "padH": 1, "groups": 1,
                                            "weight": Cuda(w["conv"]), "gradWeight": Cuda(np.zeros_like(w["conv"]))})
    bn = Obj("cudnn.SpatialBatchNormalization", {
        **base(), "eps": 1e-5, "momentum": 0.1, "affine": True, "nDim": 4, "mode": "CUDNN_BATCHNORM_SPATIAL",
        "weight": Cuda(w["bn_w"]), "bias": Cuda(w["bn_b"]), "running_mean": Cuda(w["bn_m"]),
        "running_var": Cuda(w["bn_v"]), "gradWeight": Cuda(np.zeros(4)), "gradBias": Cuda(np.zeros(4)),
        "save_mean": empty(), "save_std": empty()})
    relu = Obj("cudnn.ReLU", {**base(), "inplace": True, "mode": "CUDNN_ACTIVATION_RELU"})
    pool = Obj("cudnn.SpatialMaxPooling", {**base(), "kW": 2, "kH": 2, "dW": 2, "dH": 2, "padW": 0, "padH": 0,
                                           "ceil_mode": False, "mode": "CUDNN_POOLING_MAX"})
    size = Obj("torch.LongStorage", None)  # placeholder, replaced below (storages have no field table)
    view = Obj("nn.View", {**base(), "numElements": 64, "numInputDims": 3, "size": size})
    fc = Obj("nn.Linear", {**base(), "weight": Cuda(w["fc_w"]), "bias": Cuda(w["fc_b"]),
                           "gradWeight": Cuda(np.zeros_like(w["fc_w"])), "gradBias": Cuda(np.zeros(5))})
    seq = Obj("nn.Sequential", {**base(), "modules": {1: conv, 2: bn, 3: relu, 4: pool, 5: view, 6: fc}})
    wr = Writer()
    # a LongStorage {64} in place of the placeholder: written by hand where the View's field goes
    orig = wr.value

    def value(v):
        if v is size:
            wr.out.append(i32(4, wr._index()) + s("V 1") + s("torch.LongStorage") + i64(1) + i64(64))
        else:
            orig(v)
    wr.value = value
    wr.value(seq)
    return wr.bytes(), w


def reference(w, x, g, lr):
    """PyTorch: output, and the parameters after one plain SGD step on <output, g>."""
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
    xt = torch.tensor(x, dtype=torch.float64)
    y = torch.nn.functional.conv2d(xt, t["conv"], padding=1)
    y = (y - t["bn_m"].detach()[None, :, None, None]) / torch.sqrt(t["bn_v"].detach()[None, :, None, None] + 1e-5)
    y = y * t["bn_w"][None, :, None, None] + t["bn_b"][None, :, None, None]
    y = torch.nn.functional.max_pool2d(torch.relu(y), 2)
    y = y.reshape(x.shape[0], 64) @ t["fc_w"].T + t["fc_b"]
    (y * torch.tensor(g, dtype=torch.float64)).sum().backward()
    after = {k: (v - lr * v.grad).detach().numpy() for k, v in t.items() if k not in ("bn_m", "bn_v")}
    return y.detach().numpy(), after


def test_cudnn_cuda_model_loads_runs_trains_and_saves(rt, rng, tmp_path):
    data, w = legacy_model(rng)
    path = tmp_path / "legacy_cudnn.t7"
    path.write_bytes(data)
    x = rng.standard_normal((3, 3, 8, 8)).astype(np.float32)
    g = rng.standard_normal((3, 5)).astype(np.float32)
    lr = 0.05
    y_ref, after = reference(w, x, g, lr)
    rt.require("nn")
    rt.require("cudnn")
    out = rt.call(rt.eval("""function(path, x, g, lr, out)
        local m = torch.load(path)
        local types = {}
        for i, mod in ipairs(m.modules) do types[i] = torch.typename(mod) end
        m:evaluate()                       -- BN uses its running statistics, as the reference
        local y = m:forward(x):clone()
        m:zeroGradParameters()
        m:backward(x, g)
        m:updateParameters(lr)
        torch.save(out, m)
        local c, bn, fc = m:get(1), m:get(2), m:get(6)
        return y, types, c.weight:type(), c.weight, bn.weight, bn.bias, fc.weight, fc.bias
    end"""), str(path), rt.from_numpy(x), rt.from_numpy(g), lr, str(tmp_path / "saved.t7"))
    y, types, wtype = out[0], out[1], out[2]
    assert [types[i + 1] for i in range(6)] == ["cudnn.SpatialConvolution", "cudnn.SpatialBatchNormalization",
                                                "cudnn.ReLU", "cudnn.SpatialMaxPooling", "nn.View", "nn.Linear"]
    assert wtype == "torch.FloatTensor"  # CudaTensor parameters arrive as the CPU float type
    np.testing.assert_allclose(rt.to_numpy(y), y_ref, rtol=1e-4, atol=1e-5)
    for name, t in zip(["conv", "bn_w", "bn_b", "fc_w", "fc_b"], out[3:]):
        np.testing.assert_allclose(rt.to_numpy(t), after[name], rtol=1e-4, atol=1e-5, err_msg=name)

    # what we saved back: cudnn class names and CPU float tensors, read by the pure-Python reader
    from pytorch_bridge import t7

    saved = t7.load(str(tmp_path / "saved.t7"))
    assert saved.typename == "nn.Sequential"
    mods = saved.modules
    assert [m.typename for m in mods] == [types[i + 1] for i in range(6)]
    assert mods[0].weight.dtype == np.float32  # written as torch.FloatTensor
    np.testing.assert_array_equal(mods[0].weight, rt.to_numpy(out[3]))


def test_half_cuda_tensors_load_as_half_tensors_without_cutorch(rt, tmp_path):
    # cutorch's layout: binary16 storage elements (1.0 is 0x3C00, -2.0 is 0xC000); without cutorch the file gives
    # torch.HalfTensor, as the other Cuda types give their CPU types
    path = tmp_path / "half.t7"
    path.write_bytes(i32(4, 1) + s("V 1") + s("torch.CudaHalfTensor") + i32(1) + i64(2) + i64(1) + i64(1) +
                     i32(4, 2) + s("V 1") + s("torch.CudaHalfStorage") + i64(2) + bytes([0x00, 0x3C, 0x00, 0xC0]))
    got = rt.call(rt.eval("function(p) local t = torch.load(p); return torch.type(t), t[1], t[2] end"), str(path))
    assert tuple(got) == ("torch.HalfTensor", 1.0, -2.0)
