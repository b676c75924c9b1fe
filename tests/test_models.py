"""The paper's models: construction as fb.resnet.torch / imagenet-multiGPU.torch, parameter
counts equal to the references, and whole-model forward+backward equal to PyTorch."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_nn_modules import check_module  # noqa: E402

RESNET_COUNTS = {18: 11689512, 34: 21797672, 50: 25557032, 101: 44549160, 152: 60192808}


def test_resnet_parameter_counts(rt):
    rt.require("nn")
    count = rt.eval("""function(opt)
        local m = require('luatorch.models.resnet')(opt)
        local p = m:getParameters()
        return p:nElement()
    end""")
    for depth, expected in RESNET_COUNTS.items():
        assert rt.call(count, rt.table_from({"depth": depth, "dataset": "imagenet"})) == expected, depth
    # CIFAR: 6n+2 layers, type-A shortcuts add no parameters
    assert rt.call(count, rt.table_from({"depth": 20, "dataset": "cifar10"})) == 269722
    assert rt.call(count, rt.table_from({"depth": 56, "dataset": "cifar10"})) == 853018


def test_resnet50_structure(rt):
    rt.require("nn")
    r = rt.execute("""
        local m = require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet', shortcutType = 'B'})
        local convs = m:findModules('cudnn.SpatialConvolution')
        local first = m:get(1)
        return #convs, first.gradInput == nil, convs[1].bias == nil, torch.typename(m:get(4)),
               m:get(4).ceil_mode, tostring(m:get(11))
    """)
    assert r == (53, True, True, "nn.SpatialMaxPooling", False, "nn.Linear(2048 -> 1000)")


def test_skip_input_gradient_finds_the_first_layer_through_sequentials(rt, rng):
    """GoogLeNet-BN's first convolution sits inside `features`: it is the layer that skips the images'
    gradient, and the parameter gradients are those of the full backward (a model whose first layer cannot
    skip is left alone)."""
    rt.require("nn")
    x = rng.standard_normal((2, 3, 20, 20))
    r = rt.call(rt.eval("""function(x)
        local models = require 'luatorch.train.models'
        torch.manualSeed(3)
        local function build()
           return nn.Sequential():add(nn.Sequential():add(nn.SpatialConvolution(3, 4, 3, 3)):add(nn.ReLU()))
                                 :add(nn.View(-1):setNumInputDims(3)):add(nn.Linear(4 * 18 * 18, 5)):double()
        end
        local a = build()
        local b = a:clone()
        local skipped = models.skipInputGradient(b)
        local gy = torch.randn(2, 5)
        local pa, ga = a:getParameters()
        local pb, gb = b:getParameters()
        ga:zero(); gb:zero()
        a:forward(x); a:backward(x, gy)
        b:forward(x); local gi = b:backward(x, gy)
        local relu_first = nn.Sequential():add(nn.ReLU()):add(nn.Linear(3, 2))
        return skipped == b:get(1):get(1), gi == nil, (ga - gb):abs():max(), ga:abs():max(),
               models.skipInputGradient(relu_first) == nil, relu_first:get(1).gradInput ~= nil
    end"""), rt.from_numpy(x))
    assert r[0] and r[1] and r[2] == 0.0 and r[3] > 0 and r[4] and r[5], r


def test_cifar_resnet_equals_pytorch_double(rt, rng):
    check_module(rt, rng, "require('luatorch.models.resnet')({depth = 20, dataset = 'cifar10'})", (2, 3, 32, 32),
                 np.float64)


# GoogLeNet-BN with imagenet-multiGPU.torch's `-wInit kaiming`: with the default
# U(+-1/sqrt(fan-in)) init its input gradient decays to ~1e-12, where float32
# comparisons measure only rounding noise.
GOOGLENET_KAIMING = ("(function() local m = require('luatorch.models.googlenet_bn')({nClasses = 1000}) "
                     "for _, v in ipairs(m:findModules('nn.SpatialConvolution')) do "
                     "v.weight:normal(0, math.sqrt(2 / (v.kW * v.kH * v.nOutputPlane))) end return m end)()")
MODELS = [
    ("require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet'})", (2, 3, 224, 224)),
    (GOOGLENET_KAIMING, (2, 3, 224, 224)),
]


@pytest.mark.slow
@pytest.mark.parametrize("build,shape", MODELS, ids=["resnet50", "googlenet_bn"])
def test_whole_model_float64_equals_pytorch(rt, rng, build, shape):
    """The exact check: forward + backward of the whole network in float64, BatchNorm in
    training mode; output, gradInput and every parameter gradient within 1e-10."""
    check_module(rt, rng, build, shape, np.float64, train=True)


@pytest.mark.slow
@pytest.mark.parametrize("build,shape", MODELS, ids=["resnet50", "googlenet_bn"])
def test_whole_model_float32_close_to_float64(rt, rng, build, shape):
    """float32 forward + backward of the whole network against PyTorch's float64 run on the same
    (float32-valued) weights and input.

    Elementwise agreement is not attainable for the gradients: roughly once per draw a
    pre-ReLU value lies within float32 rounding (~1e-8) of zero, lands on the other side of it,
    and routes one gradient element differently; every gradient upstream then differs by up
    to ~2e-2 in its largest element, for PyTorch's own float32 run as much as for ours
    (measured over 15 draws). So the output is compared elementwise (1e-4) and gradients by
    relative Frobenius norm (2e-2, or twice PyTorch's own float32 deviation in that draw; a wrong kernel
    errs by O(1)). The float64 test above is the exact check."""
    from test_nn_modules import forward_backward, lua_grads, rel_err
    from pytorch_bridge.interop import to_torch

    rt.require("nn")
    rt.execute("torch.setdefaulttensortype('torch.FloatTensor')")
    rt.execute("torch.manualSeed(%d)" % int(rng.integers(1 << 30)))
    m = rt.eval(build)
    rt.call(rt.eval("function(m) m:evaluate() end"), m)
    x = rng.standard_normal(shape).astype(np.float32)

    def torch_run(dtype):
        net = to_torch(rt, m, dtype)
        net.train(False)
        xt = torch.from_numpy(x.astype(dtype)).requires_grad_(True)
        y = net(xt)
        y.backward(torch.from_numpy(g.astype(dtype)))
        grads = [p.grad.numpy().astype(np.float64) for _, p in net.named_parameters()]
        return y.detach().numpy().astype(np.float64), xt.grad.numpy().astype(np.float64), grads

    with torch.no_grad():
        n_out = to_torch(rt, m, np.float32).eval()(torch.from_numpy(x[:1])).shape[1]
    g = rng.standard_normal((shape[0], n_out)).astype(np.float32)
    ref = torch_run(np.float64)
    theirs = torch_run(np.float32)
    y, gi = forward_backward(rt, m, x, g)
    ours = (rt.to_numpy(y), gi is not None and rt.to_numpy(gi),
            [gr.reshape(r.shape) for (_, gr), r in zip(lua_grads(rt, m), ref[2])])

    def check(what, a, b, r, elementwise=False):
        def err(u):
            return rel_err(u, r) if elementwise else float(np.linalg.norm(u - r) / np.linalg.norm(r))

        # gradients: 2e-2, or twice PyTorch's own float32 deviation in the same draw where a rerouted element
        # made that larger (CI saw 0.0206 against PyTorch's 0.0199)
        bound = 1e-4 if elementwise else max(2e-2, 2 * err(b))
        assert err(a) <= bound, "%s: ours %.3g from float64 (PyTorch float32: %.3g)" % (
            what, err(a), err(b))

    check("output", ours[0], theirs[0], ref[0], elementwise=True)
    if gi is not None:  # fb.resnet's first convolution skips its gradInput
        check("gradInput", ours[1], theirs[1], ref[1])
    assert len(ours[2]) == len(ref[2])
    # gradients analytically zero (a bias feeding BatchNorm) hold only rounding noise
    scale = max(float(np.max(np.abs(r))) for r in ref[2])
    for i, (a, b, r) in enumerate(zip(ours[2], theirs[2], ref[2])):
        if np.max(np.abs(r)) < 1e-6 * scale:
            assert np.max(np.abs(a - r)) <= 1e-5 * scale, "zero gradient %d" % i
        else:
            check("gradient %d" % i, a, b, r)


def test_clone_save_load_and_train(rt, tmp_path):
    """clone() (serialization based, as Torch7), torch.save/load of a cudnn-class ResNet, and a
    few optim.sgd steps on the loaded copy."""
    rt.require("nn")
    rt.require("optim")
    r = rt.execute("""
        local path = ...
        torch.manualSeed(3)
        local m = require('luatorch.models.resnet')({depth = 20, dataset = 'cifar10'})
        local x = torch.randn(4, 3, 32, 32)
        m:evaluate()
        local y = m:forward(x):clone()
        local c = m:clone()
        local dClone = (c:forward(x) - y):abs():max()
        torch.save(path, m)
        local m2 = torch.load(path)
        m2:evaluate()
        local dLoad = (m2:forward(x) - y):abs():max()
        m2:training()
        local crit = nn.CrossEntropyCriterion()
        local p, g = m2:getParameters()
        local t = torch.LongTensor{1, 7, 3, 3}
        local first, last
        for i = 1, 8 do
           local function feval()
              g:zero()
              local out = m2:forward(x)
              local loss = crit:forward(out, t)
              m2:backward(x, crit:backward(out, t))
              return loss, g
           end
           local _, fx = optim.sgd(feval, p, {learningRate = 0.05, momentum = 0.9})
           first = first or fx[1]
           last = fx[1]
        end
        return dClone, dLoad, torch.typename(m2:get(1)), first, last
    """.replace("...", repr(str(tmp_path / "resnet20.t7"))))
    d_clone, d_load, first_type, first, last = r
    assert d_clone == 0 and d_load == 0
    assert first_type == "cudnn.SpatialConvolution"
    assert last < first
