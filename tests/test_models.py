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
        local m = require('models.resnet')(opt)
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
        local m = require('models.resnet')({depth = 50, dataset = 'imagenet', shortcutType = 'B'})
        local convs = m:findModules('cudnn.SpatialConvolution')
        local first = m:get(1)
        return #convs, first.gradInput == nil, convs[1].bias == nil, torch.typename(m:get(4)),
               m:get(4).ceil_mode, tostring(m:get(11))
    """)
    assert r == (53, True, True, "nn.SpatialMaxPooling", False, "nn.Linear(2048 -> 1000)")


def test_cifar_resnet_equals_pytorch_double(rt, rng):
    check_module(rt, rng, "require('models.resnet')({depth = 20, dataset = 'cifar10'})", (2, 3, 32, 32),
                 np.float64)


MODELS = [
    ("require('models.resnet')({depth = 50, dataset = 'imagenet'})", (2, 3, 224, 224)),
    ("require('models.googlenet_bn')({nClasses = 1000})", (2, 3, 224, 224)),
]


@pytest.mark.slow
@pytest.mark.parametrize("build,shape", MODELS, ids=["resnet50", "googlenet_bn"])
def test_whole_model_float64_equals_pytorch(rt, rng, build, shape):
    """The exact check: forward + backward of the whole network in float64, BatchNorm in
    training mode; output, gradInput and every parameter gradient within 1e-10."""
    check_module(rt, rng, build, shape, np.float64, train=True)


@pytest.mark.slow
@pytest.mark.parametrize("build,shape", MODELS, ids=["resnet50", "googlenet_bn"])
def test_whole_model_float32_equals_pytorch(rt, rng, build, shape):
    """float32: output within 1e-4 of PyTorch's float32 run.

    gradInput and parameter gradients are compared at 2e-2: summed over 2x112x112 positions, the first
    convolution's float32 gradient differs from the float64 value by ~0.3-0.4% in PyTorch
    itself (measured: ours 0.34%, PyTorch 0.40% against the float64 result), so two float32
    implementations cannot agree to 1e-4 there. The float64 test above is the exact check."""
    import test_nn_modules as tm

    saved = tm.TOL[np.float32]
    tm.TOL[np.float32] = 1e-4
    try:
        check_module(rt, rng, build, shape, np.float32, train=False, grad_tol=2e-2)
    finally:
        tm.TOL[np.float32] = saved
