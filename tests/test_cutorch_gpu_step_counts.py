"""What a training step asks of the GPU (cutorch.deviceCallCounts, native/src/cuda_device.c's counters).

A step of a Torch7 training loop on the GPU backend should, once warm, allocate no device memory (the caching
allocator serves every block) and make the host wait only where Torch7's API makes it: the criterion returns its
loss as a Lua number. Every extra wait stalls the pipeline of launches a GPU lives on, and a cuMemAlloc per step
synchronizes the device; neither shows in results, only in speed, so this file counts them. On the emulated
driver the driver's own counts (tests/cuda_host/emulated_driver.c, emulated_calls_seen) are the oracle for ours.
The tests skip without the GPU backend; CI runs them on the emulated driver with the other GPU files."""
import ctypes
import os

import pytest

from run.bench_cuda import _LUA_TRAIN_STEP
from test_cutorch_gpu import fallbacks, gpu  # noqa: F401  (the fixture)

COUNTS = ("launches", "libraryOps", "hostWaits", "hostCopies", "deviceAllocs")

# A small CNN, trained by `luatorch bench cuda`'s own step (cudnn.convert'ed, cudnn.benchmark, CrossEntropyCriterion,
# optim.sgd with momentum and weight decay over getParameters, as fb.resnet.torch trained): batch norm, ReLU, both
# poolings, a linear classifier.
_NET = ("nn.Sequential()"
        ":add(nn.SpatialConvolution(3, 8, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(8)):add(nn.ReLU(true))"
        ":add(nn.SpatialMaxPooling(2, 2, 2, 2))"
        ":add(nn.SpatialConvolution(8, 8, 3, 3, 1, 1, 1, 1)):add(nn.SpatialBatchNormalization(8)):add(nn.ReLU(true))"
        ":add(nn.SpatialAveragePooling(4, 4)):add(nn.View(8)):add(nn.Linear(8, 5))")


def _driver_seen():
    """The emulated driver's own counts (launches, synchronizations, cuMemAlloc calls), or None on a real driver."""
    path = os.environ.get("LUATORCH_CUDA_DRIVER")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)   # the one the C layer loaded
        fn = lib.emulated_calls_seen
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_longlong
    return lambda: [fn(i) for i in range(3)]


def _counts(rt):
    c = rt.eval("cutorch.deviceCallCounts()")
    return {k: c[k] for k in COUNTS}


def _step_deltas(rt, step, steps):
    """Counts of each of `steps` training steps, and the emulated driver's (None on a GPU) for each."""
    seen = _driver_seen()
    sync = rt.eval("cutorch.synchronize")
    ours, theirs = [], []
    for _ in range(steps):
        rt.call(sync)
        c0, s0 = _counts(rt), seen() if seen else None
        loss = rt.call(step)
        c1, s1 = _counts(rt), seen() if seen else None   # (before the synchronize: its wait is not the step's)
        assert isinstance(loss, float)
        ours.append({k: c1[k] - c0[k] for k in COUNTS})
        theirs.append(None if seen is None else [b - a for a, b in zip(s0, s1)])
    return ours, theirs


def test_a_warm_training_step_allocates_nothing_and_waits_only_for_the_loss(gpu):
    rt = gpu
    step = rt.call(rt.execute(_LUA_TRAIN_STEP), _NET, 4, 8, 5, False)
    for _ in range(3):   # warm-up: cudnn's algorithm choice, the allocator's blocks, optim's state
        rt.call(step)
    ours, theirs = _step_deltas(rt, step, 3)
    assert fallbacks(rt) == {}
    assert ours[0] == ours[1] == ours[2], ours   # a step asks the same of the GPU each time
    per_step = ours[0]
    assert per_step["deviceAllocs"] == 0, per_step
    # Torch7's criterion returns the loss as a number: one wait for it (ClassNLL's forward reads its result); the
    # backward takes the total weight as a kernel argument, so nothing else waits
    assert per_step["hostWaits"] == 1, per_step
    assert per_step["hostCopies"] == per_step["hostWaits"], per_step
    assert per_step["launches"] > 10 and per_step["libraryOps"] >= 6, per_step   # 2 convs x 3 passes at least
    if theirs[0] is not None:   # the emulated driver saw exactly what we counted
        launches, syncs, allocs = theirs[0]
        assert launches == per_step["launches"]
        assert allocs == 0
        assert syncs == per_step["hostWaits"]


def test_counts_follow_what_the_driver_sees_for_single_operations(gpu):
    rt = gpu
    seen = _driver_seen()
    if seen is None:
        pytest.skip("the driver's own counts exist on the emulated driver only")
    rt.execute("cutorch.synchronize(); x = torch.CudaTensor(257, 3):fill(1)")
    before, s0 = _counts(rt), seen()
    value = rt.eval("(x:add(2):mul(3)):sum()")   # two pointwise launches, a reduction read back to the host
    after, s1 = _counts(rt), seen()
    assert value == pytest.approx(257 * 3 * 9)
    d = {k: after[k] - before[k] for k in COUNTS}
    assert d["launches"] == s1[0] - s0[0] and d["launches"] >= 3, d
    assert d["hostWaits"] == s1[1] - s0[1] == 1, d
    assert d["hostCopies"] == 1 and d["libraryOps"] == 0, d
    # a fresh allocation the cache cannot serve is a cuMemAlloc, counted by both
    before, s0 = _counts(rt), seen()
    rt.execute("big = torch.CudaTensor(3 * 1024 * 1024 + 17)")
    after, s1 = _counts(rt), seen()
    assert after["deviceAllocs"] - before["deviceAllocs"] == s1[2] - s0[2] == 1
    # a matrix product is one cuBLAS operation
    before = _counts(rt)
    rt.execute("local a = torch.CudaTensor(5, 7):fill(1); local c = torch.mm(a, a:t())")
    assert _counts(rt)["libraryOps"] - before["libraryOps"] == 1


@pytest.mark.parametrize("tt", ["torch.CudaTensor", "torch.CudaHalfTensor"])
def test_a_criterion_waits_only_to_hand_back_its_loss(gpu, tt):
    """nn's element-wise criterions (and MSECriterion, on the GPU a kernel of the same file) compute their loss on
    the device and read it back once: a forward and backward waits once, copies to the host once, allocates
    nothing when warm, whatever the element type. (Writing the loss into the criterion's one-element output and
    reading that back cost a second wait, and in half more.)"""
    rt = gpu
    rt.execute("require 'cunn'")
    run = rt.eval("""function(tt, name)
       local c = nn[name]():type(tt)
       local x = torch.CudaTensor(16, 9):uniform(0.1, 0.9):type(tt)
       local y = torch.CudaTensor(16, 9):uniform(0.1, 0.9):type(tt)
       c:forward(x, y); c:backward(x, y); cutorch.synchronize()
       local a = cutorch.deviceCallCounts()
       local loss = c:forward(x, y)
       c:backward(x, y)
       local b = cutorch.deviceCallCounts()
       return loss, b.hostWaits - a.hostWaits, b.hostCopies - a.hostCopies, b.deviceAllocs - a.deviceAllocs,
              c.output_tensor and c.output_tensor:double()[1]
    end""")
    # (BCECriterion refuses inputs outside [0, 1]: it looks for them only when the loss comes back NaN)
    for name in ("MSECriterion", "AbsCriterion", "SmoothL1Criterion", "SoftMarginCriterion", "BCECriterion"):
        loss, waits, copies, allocs, stored = run(tt, name)
        assert (waits, copies, allocs) == (1, 1, 0), name
        if stored is not None:   # the number handed back is the value the output holds
            assert loss == stored, name


@pytest.mark.parametrize("tt", ["torch.CudaTensor", "torch.CudaHalfTensor"])
def test_the_class_margin_criterions_hand_back_their_loss_without_reading_the_output(gpu, tt):
    """MultiMarginCriterion and MultiLabelMarginCriterion read their targets on the host (to check them, as nn's
    errors do) and upload them, through a cached pinned block without waiting for the GPU (until 2026-12-06 a wait in
    each pass); the forward then reads the frames' terms back once, its one wait, and the loss it returns is that sum
    as the one-element output holds it. (Reading output_tensor[1] back, as the Lua side did, was another wait.)"""
    rt = gpu
    rt.execute("require 'cunn'")
    run = rt.eval("""function(tt, name)
       local make = function() return name == 'MultiMarginCriterion' and nn[name](2, torch.range(1, 9) / 9, 0.7)
                                      or nn[name]() end
       local c = make():type(tt)
       local x = torch.CudaTensor(16, 9):uniform(-1, 1):type(tt)
       local y
       if name == 'MultiMarginCriterion' then y = torch.LongTensor(16):random(1, 9)
       else
          y = torch.LongTensor(16, 9):zero()
          for i = 1, 16 do y[i][1] = i % 9 + 1; y[i][2] = (i + 3) % 9 + 1 end
       end
       c:forward(x, y); c:backward(x, y); cutorch.synchronize()
       local a = cutorch.deviceCallCounts()
       local loss = c:forward(x, y)
       local m = cutorch.deviceCallCounts()
       c:backward(x, y)
       local b = cutorch.deviceCallCounts()
       local oracle = make():double():forward(x:double(), y)   -- the CPU kernel in double on the same scores
       return loss, m.hostWaits - a.hostWaits, b.hostWaits - m.hostWaits, b.deviceAllocs - a.deviceAllocs,
              c.output_tensor:double()[1], oracle
    end""")
    for name in ("MultiMarginCriterion", "MultiLabelMarginCriterion"):
        loss, forward_waits, backward_waits, allocs, stored, oracle = run(tt, name)
        assert (forward_waits, backward_waits, allocs) == (1, 0, 0), name
        assert loss == stored, name
        assert loss == pytest.approx(oracle, rel=1e-6 if tt == "torch.CudaTensor" else 1e-3), name
