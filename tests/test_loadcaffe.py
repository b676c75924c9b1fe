"""The loadcaffe package (lua/loadcaffe): Caffe prototxt + caffemodel into an nn.Sequential.

Oracles: the protobuf package writes the files (pytorch_bridge/caffe.py builds Caffe's messages from
field numbers), and a NumPy implementation of Caffe's layer semantics written here (cross-correlation
with pad/stride/group, pooling with Caffe's rounded-up output size and its padded averaging divisor,
LRN across channels, inner product on the (C, H, W) flattening) computes the expected outputs on
fresh random inputs."""
import math
import os

import numpy as np
import pytest

from pytorch_bridge import LuaError

pytest.importorskip("google.protobuf", reason="the protobuf package (the test extra) writes the Caffe files")
from pytorch_bridge import caffe as caffe_pb  # noqa: E402


# ---------------------------------------------------------------- Caffe's semantics in NumPy

def conv(x, w, b, stride, pad, group):
    """x (C, H, W); w (O, C/group, kh, kw); stride, pad = (h, w) pairs."""
    C, H, W = x.shape
    O, cg, kh, kw = w.shape
    xp = np.zeros((C, H + 2 * pad[0], W + 2 * pad[1]))
    xp[:, pad[0]:pad[0] + H, pad[1]:pad[1] + W] = x
    oh = (H + 2 * pad[0] - kh) // stride[0] + 1
    ow = (W + 2 * pad[1] - kw) // stride[1] + 1
    out = np.zeros((O, oh, ow))
    og = O // group
    for g in range(group):
        xs = xp[g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(oh):
            for j in range(ow):
                patch = xs[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
                out[g * og:(g + 1) * og, i, j] = np.tensordot(ws, patch, axes=3)
    if b is not None:
        out += b[:, None, None]
    return out


def pooled_size(size, k, s, p):
    n = int(math.ceil((size + 2 * p - k) / s)) + 1
    if p > 0 and (n - 1) * s >= size + p:   # the last window must start inside the image
        n -= 1
    return n


def pool(x, method, k, s, p):
    """Caffe's pooling; k, s, p = (h, w) pairs."""
    C, H, W = x.shape
    oh, ow = pooled_size(H, k[0], s[0], p[0]), pooled_size(W, k[1], s[1], p[1])
    out = np.zeros((C, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            if method == "MAX":
                h1, w1 = min(h0 + k[0], H), min(w0 + k[1], W)
                h0, w0 = max(h0, 0), max(w0, 0)
                out[:, i, j] = x[:, h0:h1, w0:w1].max(axis=(1, 2))
            else:
                h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
                count = (h1 - h0) * (w1 - w0)
                h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
                out[:, i, j] = x[:, h0:h1, w0:w1].sum(axis=(1, 2)) / count
    return out


def lrn(x, size, alpha, beta, k):
    C = x.shape[0]
    sq = x ** 2
    half = (size - 1) // 2
    scale = np.empty_like(x)
    for c in range(C):
        lo, hi = max(0, c - half), min(C, c + size - half)
        scale[c] = k + alpha / size * sq[lo:hi].sum(axis=0)
    return x * scale ** -beta


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def caffe_forward(layers, x):
    """Runs a list of (kind, params) on one image x (C, H, W)."""
    for kind, p in layers:
        if kind == "conv":
            x = conv(x, p["w"], p.get("b"), p["stride"], p["pad"], p["group"])
        elif kind == "pool":
            x = pool(x, p["method"], p["k"], p["s"], p["p"])
        elif kind == "lrn":
            x = lrn(x, p["size"], p["alpha"], p["beta"], p["k"])
        elif kind == "relu":
            x = np.maximum(x, 0)
        elif kind == "fc":
            x = p["w"] @ x.reshape(-1) + p["b"]
        elif kind == "softmax":
            x = softmax(x)
        elif kind == "dropout":
            pass                                   # the deploy net scales nothing
        else:
            raise ValueError(kind)
    return x


# ---------------------------------------------------------------- nets written with protobuf

V1_TYPES = {"conv": "CONVOLUTION", "pool": "POOLING", "lrn": "LRN", "relu": "RELU", "fc": "INNER_PRODUCT",
            "softmax": "SOFTMAX", "dropout": "DROPOUT"}
NEW_TYPES = {"conv": "Convolution", "pool": "Pooling", "lrn": "LRN", "relu": "ReLU", "fc": "InnerProduct",
             "softmax": "Softmax", "dropout": "Dropout"}


def random_net(rng, in_shape, group=1):
    """A small AlexNet-like list of (name, kind, params) with random float32 weights, and the
    shape after each layer. The first pooling's output size needs Caffe's rounding up."""
    C, H, W = in_shape
    r = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5
    layers = []
    c1 = 4 * group
    layers.append(("conv1", "conv", dict(w=r(c1, C // group, 3, 3), b=r(c1), stride=(2, 2), pad=(1, 1),
                                          group=group, square=True)))
    layers.append(("relu1", "relu", {}))
    layers.append(("norm1", "lrn", dict(size=3, alpha=float(np.float32(rng.uniform(0.5, 2))),
                                        beta=0.75, k=2.0)))
    layers.append(("pool1", "pool", dict(method="MAX", k=(3, 3), s=(2, 2), p=(0, 0))))
    layers.append(("conv2", "conv", dict(w=r(5, c1, 3, 2), b=r(5), stride=(1, 2), pad=(1, 0), group=1,
                                          square=False)))
    layers.append(("relu2", "relu", {}))
    layers.append(("pool2", "pool", dict(method="AVE", k=(3, 3), s=(2, 2), p=(1, 1))))
    # the flattened size after pool2, for fc6
    x = caffe_forward([(k, p) for _, k, p in layers], np.zeros(in_shape))
    n = x.size
    layers.append(("fc6", "fc", dict(w=r(7, n), b=r(7))))
    layers.append(("relu6", "relu", {}))
    layers.append(("drop6", "dropout", dict(ratio=0.3)))
    layers.append(("fc7", "fc", dict(w=r(3, 7), b=r(3))))
    layers.append(("prob", "softmax", {}))
    return layers


def write_net(layers, in_shape, v1, legacy_blobs=False, extra=None):
    """The NetParameter of `layers`, old (V1 `layers`) or new (`layer`) format."""
    net = caffe_pb.NetParameter(name="testnet")
    net.input.append("data")
    if v1:
        net.input_dim.extend((1,) + tuple(in_shape))
    else:
        net.input_shape.add().dim.extend((1,) + tuple(in_shape))
    bottom = "data"
    for name, kind, p in layers:
        layer = net.layers.add() if v1 else net.layer.add()
        layer.name = name
        if v1:
            layer.type = caffe_pb.CLASSES["V1LayerParameter"].LayerType.Value(V1_TYPES[kind])
        else:
            layer.type = NEW_TYPES[kind]
        layer.bottom.append(bottom)
        top = bottom if kind in ("relu", "dropout") else name
        layer.top.append(top)
        bottom = top
        if kind == "conv":
            cp = layer.convolution_param
            cp.num_output = p["w"].shape[0]
            if p["group"] != 1:
                cp.group = p["group"]
            if p["square"]:
                cp.kernel_size.append(p["w"].shape[2])
                cp.stride.append(p["stride"][0])
                cp.pad.append(p["pad"][0])
            else:
                cp.kernel_h, cp.kernel_w = p["w"].shape[2:]
                cp.stride_h, cp.stride_w = p["stride"]
                cp.pad_h, cp.pad_w = p["pad"]
            layer.blobs.append(caffe_pb.blob(p["w"], legacy=legacy_blobs))
            layer.blobs.append(caffe_pb.blob(p["b"], legacy=legacy_blobs))
        elif kind == "pool":
            pp = layer.pooling_param
            pp.pool = caffe_pb.CLASSES["PoolingParameter"].PoolMethod.Value(p["method"])
            pp.kernel_size, pp.stride = p["k"][0], p["s"][0]
            if p["p"][0]:
                pp.pad = p["p"][0]
        elif kind == "lrn":
            lp = layer.lrn_param
            lp.local_size, lp.alpha, lp.beta, lp.k = p["size"], p["alpha"], p["beta"], p["k"]
        elif kind == "fc":
            layer.inner_product_param.num_output = p["w"].shape[0]
            layer.blobs.append(caffe_pb.blob(p["w"], legacy=legacy_blobs))
            layer.blobs.append(caffe_pb.blob(p["b"], legacy=legacy_blobs))
        elif kind == "dropout":
            layer.dropout_param.dropout_ratio = p["ratio"]
    return net


def save(tmp_path, net, packed=True, model_net=None):
    proto, model = str(tmp_path / "deploy.prototxt"), str(tmp_path / "weights.caffemodel")
    with open(proto, "w") as f:
        f.write(caffe_pb.text(net))
    with open(model, "wb") as f:
        f.write(caffe_pb.binary(model_net or net, packed=packed))
    return proto, model


LOAD = r"""
require 'loadcaffe'
local proto, model, backend = ...
local net = loadcaffe.load(proto, model, backend)
net:evaluate()
local names, types = {}, {}
for i = 1, #net do
   names[i] = net:get(i).name
   types[i] = torch.type(net:get(i))
end
return net, names, types
"""


def run(rt, code, *args):
    return rt.call(rt.execute("return function(...)\n" + code + "\nend"), *args)


def lua_list(t):
    return [t[i + 1] for i in range(len(t))]


def expected_modules(layers, backend="nn"):
    lib = "cudnn" if backend == "cudnn" else "nn"
    classes = {"conv": lib + ".SpatialConvolution", "relu": lib + ".ReLU", "lrn": lib + ".SpatialCrossMapLRN",
               "fc": "nn.Linear", "dropout": "nn.Dropout", "softmax": lib + ".SoftMax"}
    names, types, spatial = [], [], True
    for name, kind, p in layers:
        if kind == "fc" and spatial:
            names.append("torch_view")
            types.append("nn.View")
        if kind == "pool":
            cls = lib + (".SpatialMaxPooling" if p["method"] == "MAX" else ".SpatialAveragePooling")
        elif kind == "conv" and p["group"] > 1 and backend == "nn":
            cls = "nn.Sequential"
        else:
            cls = classes[kind]
        names.append(name)
        types.append(cls)
        spatial = {"conv": True, "pool": True, "fc": False}.get(kind, spatial)
    return names, types


def check_forward(rt, rng, net, layers, in_shape):
    ops = [(k, p) for _, k, p in layers]
    # one image, then a batch of two
    x = rng.standard_normal(in_shape)
    got = np.array(rt.to_numpy(rt.call(net.forward, net, rt.from_numpy(x))))
    want = caffe_forward(ops, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    xb = rng.standard_normal((2,) + tuple(in_shape))
    got = np.array(rt.to_numpy(rt.call(net.forward, net, rt.from_numpy(xb))))
    want = np.stack([caffe_forward(ops, xi) for xi in xb])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def input_shape(rng):
    # sizes whose first pooling (3x3, stride 2, after a stride-2 convolution) rounds up
    h = int(rng.choice([11, 15, 19]))
    w = int(rng.choice([11, 15, 19]))
    return (3, h, w)


# ---------------------------------------------------------------- tests

def test_oracle_pooling_rounds_up():
    # the oracle itself: 7 -> 3x3/2 gives 3 (floor and ceil agree), 6 -> 3 with ceil (floor: 2),
    # and a padded window that would start in the padding is dropped
    assert pooled_size(7, 3, 2, 0) == 3 and pooled_size(6, 3, 2, 0) == 3
    # 5 -> 2x2/2 padded 1: ceil(5/2)+1 = 4 windows, but the fourth would start at 6 = 5 + 1, in the padding
    assert pooled_size(5, 2, 2, 1) == 3
    x = np.arange(16.0).reshape(1, 4, 4)
    np.testing.assert_array_equal(pool(x, "MAX", (3, 3), (2, 2), (0, 0)), [[[10, 11], [14, 15]]])


@pytest.mark.parametrize("v1,legacy,packed", [(True, True, True), (True, True, False), (False, False, True),
                                              (False, True, False)],
                         ids=["v1-legacy-packed", "v1-legacy-unpacked", "new-shape-packed", "new-legacy-unpacked"])
def test_forward_matches_caffe(rt, rng, tmp_path, v1, legacy, packed):
    shape = input_shape(rng)
    layers = random_net(rng, shape)
    # the net needs the rounding up: Torch's default floor would give a smaller output
    size_after_conv1 = (shape[1] + 2 - 3) // 2 + 1
    assert (size_after_conv1 - 3) % 2 != 0
    proto, model = save(tmp_path, write_net(layers, shape, v1, legacy_blobs=legacy), packed=packed)
    net, names, types = run(rt, LOAD, proto, model, "nn")
    want_names, want_types = expected_modules(layers)
    assert lua_list(names) == want_names
    assert lua_list(types) == want_types
    check_forward(rt, rng, net, layers, shape)


def test_grouped_convolution_nn_and_cudnn(rt, rng, tmp_path):
    shape = (4, 15, 11)
    layers = random_net(rng, shape, group=2)
    proto, model = save(tmp_path, write_net(layers, shape, v1=False))
    for backend in ("nn", "cudnn"):
        net, names, types = run(rt, LOAD, proto, model, backend)
        want_names, want_types = expected_modules(layers, backend)
        assert lua_list(names) == want_names
        assert lua_list(types) == want_types
        if backend == "cudnn":
            # loadcaffe moves a cudnn net to the GPU type; compare on the CPU copy
            net = run(rt, "local net = ...; return net:double()", net)
        check_forward(rt, rng, net, layers, shape)


def test_weights_matched_by_name_not_position(rt, rng, tmp_path):
    shape = (3, 11, 15)
    layers = random_net(rng, shape)
    deploy = write_net(layers, shape, v1=True)
    # the caffemodel of a training net: its layers in another order, plus a data layer and a loss
    trained = caffe_pb.NetParameter()
    trained.layers.add(name="data", type=caffe_pb.CLASSES["V1LayerParameter"].LayerType.Value("DATA"))
    for layer in reversed(list(deploy.layers)):
        trained.layers.add().CopyFrom(layer)
    trained.layers.add(name="loss", type=caffe_pb.CLASSES["V1LayerParameter"].LayerType.Value("SOFTMAX_LOSS"))
    proto, model = save(tmp_path, deploy, model_net=trained)
    net, _, _ = run(rt, LOAD, proto, model, "nn")
    check_forward(rt, rng, net, layers, shape)
    # the weights are Caffe's, element for element
    w = np.array(rt.to_numpy(run(rt, "local net = ...; return net:get(1).weight", net)))
    np.testing.assert_array_equal(w, layers[0][2]["w"])


def test_double_blobs(rt, rng, tmp_path):
    # blobs stored as double_data (field 8) instead of float data
    shape = (3, 11, 15)
    layers = random_net(rng, shape)
    net = write_net(layers, shape, v1=False)
    for layer in net.layer:
        for blob in layer.blobs:
            blob.double_data.extend(blob.data)
            del blob.data[:]
    proto, model = save(tmp_path, net)
    lnet, _, _ = run(rt, LOAD, proto, model, "nn")
    check_forward(rt, rng, lnet, layers, shape)


def test_convolution_without_bias_and_per_axis_lists(rt, rng, tmp_path):
    # bias_term: false (one blob), and newer Caffe's kernel_size/stride/pad given twice: (h, w)
    w = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)
    net = caffe_pb.NetParameter()
    net.input_shape.add().dim.extend([1, 2, 9, 8])
    layer = net.layer.add(name="conv", type="Convolution")
    cp = layer.convolution_param
    cp.num_output, cp.bias_term = 3, False
    cp.kernel_size.extend([3, 2])
    cp.stride.extend([2, 1])
    cp.pad.extend([1, 0])
    layer.blobs.append(caffe_pb.blob(w))
    proto, model = save(tmp_path, net)
    lnet, names, types = run(rt, LOAD, proto, model, "nn")
    assert lua_list(names) == ["conv"] and lua_list(types) == ["nn.SpatialConvolution"]
    assert run(rt, "local net = ...; return net:get(1).bias == nil", lnet)
    x = rng.standard_normal((2, 9, 8))
    got = np.array(rt.to_numpy(rt.call(lnet.forward, lnet, rt.from_numpy(x))))
    np.testing.assert_allclose(got, conv(x, w, None, (2, 1), (1, 0), 1), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("v1", [True, False], ids=["v1", "new"])
def test_activations(rt, rng, tmp_path, v1):
    # Sigmoid, TanH and a leaky ReLU (negative_slope) between two inner products, nn and cudnn classes
    w1, b1 = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    w2, b2 = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    slope = float(np.float32(rng.uniform(0.05, 0.3)))
    net = caffe_pb.NetParameter()
    net.input_dim.extend([1, 5])
    add = net.layers.add if v1 else net.layer.add
    kind = (lambda t: caffe_pb.CLASSES["V1LayerParameter"].LayerType.Value(t)) if v1 else \
        {"INNER_PRODUCT": "InnerProduct", "SIGMOID": "Sigmoid", "TANH": "TanH", "RELU": "ReLU"}.get
    for name, t, w, b in (("ip1", "INNER_PRODUCT", w1, b1), ("sig", "SIGMOID", 0, 0), ("ip2", "INNER_PRODUCT", w2, b2),
                          ("tanh", "TANH", 0, 0), ("leaky", "RELU", 0, 0)):
        layer = add(name=name, type=kind(t))
        if t == "INNER_PRODUCT":
            layer.inner_product_param.num_output = w.shape[0]
            layer.blobs.extend([caffe_pb.blob(w, legacy=v1), caffe_pb.blob(b, legacy=v1)])
        if name == "leaky":
            layer.relu_param.negative_slope = slope
    proto, model = save(tmp_path, net)
    x = rng.standard_normal(5)
    h = np.tanh(w2 @ (1 / (1 + np.exp(-(w1 @ x + b1)))) + b2)
    want = np.where(h > 0, h, slope * h)
    for backend, types in (("nn", ["nn.Linear", "nn.Sigmoid", "nn.Linear", "nn.Tanh", "nn.LeakyReLU"]),
                           ("cudnn", ["nn.Linear", "cudnn.Sigmoid", "nn.Linear", "cudnn.Tanh", "nn.LeakyReLU"])):
        lnet, names, got_types = run(rt, LOAD, proto, model, backend)
        # the declared input is flat: no View before the first inner product
        assert lua_list(names) == ["ip1", "sig", "ip2", "tanh", "leaky"]
        assert lua_list(got_types) == types
        lnet = run(rt, "local net = ...; return net:double()", lnet)
        got = np.array(rt.to_numpy(rt.call(lnet.forward, lnet, rt.from_numpy(x))))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_unsupported_layer_is_named_and_left_out(rt, rng, tmp_path, capfd):
    shape = (3, 11, 11)
    layers = random_net(rng, shape)
    net = write_net(layers, shape, v1=False)
    eltwise = net.layer.add(name="sum1", type="Eltwise")
    # move it between relu2 and pool2
    items = list(net.layer)
    del net.layer[:]
    for layer in items[:-1]:
        net.layer.add().CopyFrom(layer)
        if layer.name == "relu2":
            net.layer.add().CopyFrom(eltwise)
    # a layer only in the training net is not in the deploy net
    train_only = net.layer.add(name="drop_train", type="Dropout")
    train_only.include.add().phase = 0
    proto, model = save(tmp_path, net)
    lnet, names, _ = run(rt, LOAD, proto, model, "nn")
    out = capfd.readouterr().out
    assert "sum1" in out and "Eltwise" in out and "not supported" in out
    assert "sum1" not in lua_list(names) and "drop_train" not in lua_list(names)
    check_forward(rt, rng, lnet, layers, shape)


def test_prototxt_text_format(rt, tmp_path):
    text = r'''
# a comment line
name: 'tiny' # a trailing comment
input: "data"
input_dim: [1, 2, 5, 5]
layer <
  name: "c\"onv\x41" "1"
  type: "Convolution"
  convolution_param { num_output: 3; kernel_size: 3 pad: 1 }
>
layer { name: 'r' type: "ReLU" }
layer {
  name: "p" type: "Pooling"
  pooling_param { pool: AVE kernel_size: 2 stride: 2 }
}
layer { name: "n" type: "LRN" lrn_param { local_size: 3 alpha: 1e-1 beta: .75 k: 2.5 } }
'''
    msg = run(rt, "local pt = require 'loadcaffe.prototxt'; return pt.parse(...)", text, "inline")
    layers = msg["layer"]
    assert [layers[i]["name"][1] for i in (1, 2, 3, 4)] == ['c"onvA1', "r", "p", "n"]
    assert lua_list(msg["input_dim"]) == ["1", "2", "5", "5"]
    assert msg["name"][1] == "tiny"
    assert layers[1]["convolution_param"][1]["pad"][1] == "1"
    assert layers[3]["pooling_param"][1]["pool"][1] == "AVE"
    lp = layers[4]["lrn_param"][1]
    got = run(rt, "local pt = require 'loadcaffe.prototxt'; local p = ...; "
                  "return {pt.number(p, 'alpha'), pt.number(p, 'beta'), pt.number(p, 'k')}", lp)
    assert lua_list(got) == [0.1, 0.75, 2.5]
    with pytest.raises(LuaError, match=r"inline:\d+: .*unterminated string"):
        run(rt, "local pt = require 'loadcaffe.prototxt'; return pt.parse(...)", 'name: "abc\n', "inline")
    with pytest.raises(LuaError, match=r"inline:3: missing '}'"):
        run(rt, "local pt = require 'loadcaffe.prototxt'; return pt.parse(...)", "layer {\n name: 'a'\n", "inline")


def test_errors(rt, rng, tmp_path):
    shape = (3, 11, 11)
    layers = random_net(rng, shape)
    proto, model = save(tmp_path, write_net(layers, shape, v1=True))
    with pytest.raises(LuaError, match="cannot open the prototxt '.*missing.prototxt'"):
        run(rt, LOAD, str(tmp_path / "missing.prototxt"), model, "nn")
    with pytest.raises(LuaError, match="cannot open the caffemodel '.*missing.caffemodel'"):
        run(rt, LOAD, proto, str(tmp_path / "missing.caffemodel"), "nn")
    with pytest.raises(LuaError, match="unknown backend 'torch': use 'nn' or 'cudnn'"):
        run(rt, LOAD, proto, model, "torch")
    with pytest.raises(LuaError, match="'ccn2' backend .* use 'nn' or 'cudnn'"):
        run(rt, LOAD, proto, model, "ccn2")
    data = open(model, "rb").read()
    # the offsets where one top-level field of the NetParameter ends: a file cut there is a valid,
    # shorter message (protobuf cannot tell), every other cut must be refused
    net = caffe_pb.NetParameter.FromString(data)
    pieces = [caffe_pb.NetParameter(name=net.name).SerializeToString()]
    pieces += [caffe_pb.NetParameter(layers=[layer]).SerializeToString() for layer in net.layers]
    pieces += [caffe_pb.NetParameter(input=[name]).SerializeToString() for name in net.input]
    pieces += [caffe_pb.NetParameter(input_dim=[d]).SerializeToString() for d in net.input_dim]
    assert b"".join(pieces) == data
    boundaries = set(np.cumsum([len(p) for p in pieces]).tolist())
    # cut in many places: in a tag, a length, a name, a blob's float data, ...
    cuts = set(int(c) for c in rng.integers(1, len(data) - 1, 40)) | {1, 2, len(data) // 2, len(data) - 1}
    cuts = sorted(cuts - boundaries)
    cut_file = str(tmp_path / "cut.caffemodel")
    for cut in cuts:
        with open(cut_file, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(LuaError) as e:
            run(rt, LOAD, proto, cut_file, "nn")
        assert "is corrupt or truncated" in str(e.value) and "cut.caffemodel" in str(e.value), (cut, str(e.value))
    # a cut at a layer boundary leaves the later layers out: the first of them with weights is named
    first_missing = sorted(boundaries)[1]   # after the name and conv1
    with open(cut_file, "wb") as f:
        f.write(data[:first_missing])
    with pytest.raises(LuaError, match="layer 'conv2': the caffemodel has 0 weight blobs for it, 2 needed"):
        run(rt, LOAD, proto, cut_file, "nn")
    # bytes that are no protobuf at all
    junk = str(tmp_path / "junk.caffemodel")
    with open(junk, "wb") as f:
        f.write(bytes([0x17, 0xff, 0xff]) + rng.integers(0, 256, 200, dtype=np.uint8).tobytes())
    with pytest.raises(LuaError, match="is corrupt or truncated"):
        run(rt, LOAD, proto, junk, "nn")


def test_weights_of_another_model_are_refused(rt, rng, tmp_path):
    shape = (3, 11, 11)
    layers = random_net(rng, shape)
    other = [(n, k, dict(p, w=p["w"][:, :, :2] if k == "conv" else p["w"])) if "w" in p else (n, k, p)
             for n, k, p in layers]
    proto, _ = save(tmp_path, write_net(layers, shape, v1=False))
    model = str(tmp_path / "other.caffemodel")
    with open(model, "wb") as f:
        f.write(caffe_pb.binary(write_net(other, shape, v1=False)))
    with pytest.raises(LuaError, match="layer 'conv1': the prototxt says a 3x3 kernel, the weights are 2x3"):
        run(rt, LOAD, proto, model, "nn")
