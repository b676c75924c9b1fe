"""`luatorch bench cuda`: the GPU path on a real GPU, side by side with PyTorch CUDA in one process.

    luatorch bench cuda [--models resnet50,googlenet_bn] [--batch 64,128] [--iters 20] [--json PATH]

What it measures (one JSON record each, `what` naming the kind):
- `device`: the GPU, the driver and the CUDA libraries found.
- `compile`: NVRTC's compile of each kernel file for the device's architecture (or its cache read).
- `launch`: host microseconds per kernel launch of our host layer (lt_cuops) from LuaJIT through the FFI, as
  cutorch's Lua code calls it, and from Python through cffi, and of PyTorch's, for fill and cadd on a
  one-element tensor: launches queued back to back, one synchronize at the end; interleaved rounds, medians
  with ranges.
- `bandwidth`: GB/s (bytes read plus written) of our kernels and PyTorch's on the same device buffers (we
  operate on PyTorch's allocations): contiguous copy, transposed copy, float->half copy, cadd, sum; our
  result checked against PyTorch's each round.
- `batchnorm`: milliseconds per training batch norm (forward, then gradInput and the parameter gradients) of our
  kernels (every half network's, and every float one's without cuDNN) against PyTorch's own kernels on the same
  buffers, at ResNet-50's shapes, in float32 and half; results compared each round.
- `gemm`: TFLOP/s of our addmm (the host layer's layout logic over cuBLAS's sgemm) against torch.addmm, TF32
  off on both sides, results compared each round.
- `train_step`: the training step (forward, backward, SGD with momentum) of the paper's networks built by our
  Lua models, images/s and host CPU milliseconds per iteration: PyTorch CUDA eager on the networks converted
  with their weights, with TF32 on and off; and ours (`ours_images_per_s`, `ours_host_cpu_ms_per_iter`, in the
  TF32-off record: cuBLAS's default math) on cutorch's GPU backend, the same Lua network `:cuda()`'d, converted
  with cudnn.convert (cudnn.benchmark on) and trained with optim.sgd over getParameters, as fb.resnet.torch did;
  with what each of our steps asked of the GPU (cutorch.deviceCallCounts): kernel launches, cuBLAS/cuDNN
  operations, host waits, device allocations per step.

`--half` makes both sides of train_step train in half precision (Torch7's `CudaHalfTensor` networks: cuDNN's
convolutions in half with float arithmetic, our kernels' half instantiations; PyTorch's `.half()`), with no float
master weights on either side. `--ours-only` times our training steps alone (no PyTorch, no launch/bandwidth/gemm cases): records
`train_step_ours`. On a machine without a GPU it runs over tests/cuda_host's emulated driver in its
null-execution mode (`LT_EMULATED_CUDA_NOEXEC=1`: every call checked and queued, no kernel or library arithmetic
run), which leaves the host's own cost per step: the Lua framework, our C layer and the emulated driver's
bookkeeping, but not a real driver's or cuDNN's host time (docs/results/cuda.md has the commands).

Without a GPU (or the emulated driver) it says so and exits 2.
"""
import argparse
import os
import time

import numpy as np

from run.benchutil import median, print_table, write_json


def _loadavg():
    return [round(v, 2) for v in os.getloadavg()]


class Ours:
    """lt_cuops on device 0: our launcher, our caching allocator for scratch, operands over any device address."""

    def __init__(self):
        from pytorch_bridge.native import ffi, lib

        self.ffi, self.lib = ffi, lib
        backend = lib.lt_cuda_device_backend()
        if backend == ffi.NULL:
            raise RuntimeError(self.err())
        self.alloc = lib.lt_cuda_alloc_new(backend)
        self.ops = ffi.new("lt_cuops *")
        if lib.lt_cuda_ops_init(self.ops, 0, self.alloc):
            raise RuntimeError(self.err())
        sync = lib.lt_cuda_symbol(0, b"cuCtxSynchronize")
        self._sync = ffi.cast("int(*)(void)", sync)
        self.keep = []

    def err(self):
        return self.ffi.string(self.lib.lt_errmsg()).decode()

    def synchronize(self):
        rc = self._sync()
        if rc:
            raise RuntimeError("cuCtxSynchronize failed (%d)" % rc)

    def tensor(self, t):
        """Our operand over a PyTorch CUDA tensor's memory (same device, same default stream)."""
        from pytorch_bridge.cuda import device_tensor

        name = {"torch.float32": "Float", "torch.float16": "Half", "torch.float64": "Double",
                "torch.int64": "Long"}[str(t.dtype)]
        lt, st = device_tensor(self.ffi, t.data_ptr() - t.storage_offset() * t.element_size(), name,
                               list(t.shape), list(t.stride()), t.storage_offset(),
                               t.untyped_storage().nbytes() // t.element_size())
        self.keep.append((lt, st, t))
        return lt

    def call(self, fn, *args):
        if getattr(self.lib, "lt_cuops_" + fn)(self.ops, self.ffi.NULL, *args):
            raise RuntimeError(self.err())


def device_record(torch):
    from pytorch_bridge import cuda
    from pytorch_bridge.native import ffi, lib

    p = ffi.new("lt_cuda_device_props *")
    assert lib.lt_cuda_device_properties(0, p) == 0
    libs = cuda.describe(lib, ffi, load=True)
    return {"what": "device", "name": ffi.string(p.name).decode(), "compute_capability": "%d.%d" % (p.major, p.minor),
            "multiprocessors": p.multiprocessors, "memory_bytes": int(p.total_memory),
            "libraries": {k: v[1] for k, v in libs.items()}, "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "torch_cudnn": torch.backends.cudnn.version()}


def compile_records(arch):
    """Each kernel file's image for this device: compile (or cache read) seconds, bytes."""
    from pytorch_bridge.native import ffi, lib
    from pytorch_bridge import cuda

    files = sorted(f[:-3] for f in os.listdir(cuda.kernel_dir()) if f.endswith(".cu"))
    out = []
    for f in files:
        image, n, cached = ffi.new("char **"), ffi.new("int64_t *"), ffi.new("int *")
        t0 = time.perf_counter()
        if lib.lt_cuda_kernel_image(f.encode(), arch.encode(), ffi.NULL, image, n, cached):
            raise RuntimeError(ffi.string(lib.lt_errmsg()).decode())
        out.append({"what": "compile", "file": f, "arch": arch, "bytes": int(n[0]), "cached": bool(cached[0]),
                    "seconds": round(time.perf_counter() - t0, 3)})
        lib.lt_cuda_free(image[0])
    return out


# The same launches from LuaJIT, as cutorch's Lua code will make them: the host layer through the FFI
# (torch.C), its own lt_cuops and scratch allocator on device 0, operands over the given device addresses;
# n launches back to back, timed in Lua (the synchronize is the caller's).
_LUA_LAUNCHES = r"""
local ffi = require 'ffi'
local C = torch.C
local M = {}
local function check(rc) if rc ~= 0 then error(ffi.string(C.lt_errmsg()), 2) end end
function M.setup(x_addr, y_addr)
   local backend = C.lt_cuda_device_backend()
   if backend == nil then error(ffi.string(C.lt_errmsg())) end
   local s = {ops = ffi.new('lt_cuops[1]'), alloc = C.lt_cuda_alloc_new(backend)}
   check(C.lt_cuda_ops_init(s.ops, 0, s.alloc))
   local FLOAT = C.LT_CUDA_FLOAT   -- torch.CudaTensor's element type
   local function operand(addr)
      local st = ffi.new('lt_storage[1]')
      st[0].data, st[0].size, st[0].type, st[0].refcount = ffi.cast('void *', addr), 1, FLOAT, 1
      local t = ffi.new('lt_tensor[1]')
      t[0].storage, t[0].type, t[0].ndim, t[0].size[0], t[0].stride[0] = st, FLOAT, 1, 1, 1
      return {st = st, t = t}
   end
   s.x, s.y = operand(x_addr), operand(y_addr)
   return s
end
function M.fill(s, n)
   local ops, t, timer = s.ops, s.x.t, torch.Timer()
   for _ = 1, n do check(C.lt_cuops_fill(ops, nil, t, 1.5)) end
   return timer:time().real
end
function M.cadd(s, n)
   local ops, x, y, timer = s.ops, s.x.t, s.y.t, torch.Timer()
   for _ = 1, n do check(C.lt_cuops_pointwise(ops, nil, 'cadd', x, x, y, nil, 0.5, 0)) end
   return timer:time().real
end
return M
"""


def launch_records(torch, ours, rounds, n, device="cuda"):
    """Host microseconds per launch, queued back to back (one synchronize per round): our host layer from
    LuaJIT (FFI) and from Python (cffi), and PyTorch's from Python."""
    from pytorch_bridge import Runtime

    ffi = ours.ffi
    x = torch.zeros(1, device=device)
    y = torch.ones(1, device=device)
    lx, ly = ours.tensor(x), ours.tensor(y)
    rt = Runtime()
    lua = rt.execute(_LUA_LAUNCHES)
    ls = rt.call(lua.setup, x.data_ptr(), y.data_ptr())

    def timed(fn):
        def run():
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            return time.perf_counter() - t0
        return run

    cases = {
        ("fill", "lua"): lambda: rt.call(lua.fill, ls, n),
        ("fill", "python"): timed(lambda: ours.call("fill", lx, 1.5)),
        ("fill", "pytorch"): timed(lambda: x.fill_(1.5)),
        ("cadd", "lua"): lambda: rt.call(lua.cadd, ls, n),
        ("cadd", "python"): timed(lambda: ours.call("pointwise", b"cadd", lx, lx, ly, ffi.NULL, 0.5, 0.0)),
        ("cadd", "pytorch"): timed(lambda: x.add_(y, alpha=0.5)),
    }
    for fn in cases.values():   # first launches load modules and warm caches
        fn()
    ours.synchronize()
    times = {k: [] for k in cases}
    keys = list(cases)
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            queued = cases[k]()
            ours.synchronize()
            times[k].append(queued / n * 1e6)
    recs = []
    for op in ("fill", "cadd"):
        rec = {"what": "launch", "op": op, "launches_per_round": n, "rounds": rounds,
               "via": "ours from LuaJIT (FFI) and from Python (cffi); PyTorch from Python (ATen)"}
        for who, key in (("lua", "ours_lua"), ("python", "ours"), ("pytorch", "pytorch")):
            t = times[(op, who)]
            rec[key + "_us"] = round(median(t), 3)
            rec[key + "_range_us"] = [round(min(t), 3), round(max(t), 3)]
        rec["ratio"] = round(rec["ours_us"] / rec["pytorch_us"], 3)
        rec["ratio_lua"] = round(rec["ours_lua_us"] / rec["pytorch_us"], 3)
        recs.append(rec)
    return recs


def side_by_side(mine, theirs, rounds, sync, after_round=None, warmup_round=False):
    """Seconds per call of ours and PyTorch's, alternating which goes first each round, a synchronize before and
    after each call; after_round() (the results' check) runs after every round. warmup_round: one untimed round
    first. Returns {"ours": [...], "pytorch": [...]}."""
    t = {"ours": [], "pytorch": []}
    for r in range(rounds + (1 if warmup_round else 0)):
        for who, fn in (("ours", mine), ("pytorch", theirs)) if r % 2 == 0 else (("pytorch", theirs), ("ours", mine)):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            if r or not warmup_round:
                t[who].append(time.perf_counter() - t0)
        if after_round:
            after_round()
    return t


def bandwidth_records(torch, ours, rounds, elements, device="cuda"):
    ffi = ours.ffi
    side = int(elements ** 0.5)
    a = torch.randn(elements, device=device)
    b = torch.randn(elements, device=device)
    o = torch.empty(elements, device=device)
    h = torch.empty(elements, device=device, dtype=torch.float16)
    sq = a[:side * side].view(side, side)
    sqo = o[:side * side].view(side, side)
    la, lb, lo_, lh = ours.tensor(a), ours.tensor(b), ours.tensor(o), ours.tensor(h)
    lsq_t, lsqo = ours.tensor(sq.t()), ours.tensor(sqo)
    res = ffi.new("double *")
    f4 = 4 * elements
    cases = {
        "copy": (2 * f4, lambda: ours.call("copy", lo_, la), lambda: o.copy_(a), lambda: torch.equal(o, a)),
        "copy_transposed": (2 * 4 * side * side, lambda: ours.call("copy", lsqo, lsq_t), lambda: sqo.copy_(sq.t()),
                            lambda: torch.equal(sqo, sq.t())),
        "copy_float_to_half": (f4 + 2 * elements, lambda: ours.call("copy", lh, la), lambda: h.copy_(a),
                               lambda: torch.equal(h, a.half())),
        "cadd": (3 * f4, lambda: ours.call("pointwise", b"cadd", lo_, la, lb, ffi.NULL, 0.5, 0.0),
                 lambda: torch.add(a, b, alpha=0.5, out=o), lambda: torch.equal(o, a + 0.5 * b)),
        "sum": (f4, lambda: ours.call("reduce", b"sum", la, 0.0, res), lambda: a.sum().item(),
                lambda: abs(res[0] - a.double().sum().item()) <= 1e-5 * a.abs().sum().item()),
    }
    recs = []
    sync = ours.synchronize   # the context PyTorch and we share
    for name, (nbytes, mine, theirs, same) in cases.items():
        mine()
        sync()
        assert same(), "%s: our result differs from PyTorch's" % name
        theirs()
        def check():
            mine()
            sync()
            assert same(), "%s: our result differs from PyTorch's" % name

        t = side_by_side(mine, theirs, rounds, sync, after_round=check)
        gb = lambda s: nbytes / s / 1e9  # noqa: E731
        recs.append({"what": "bandwidth", "op": name, "bytes": nbytes, "rounds": rounds,
                     "ours_GBps": round(gb(median(t["ours"])), 1), "pytorch_GBps": round(gb(median(t["pytorch"])), 1),
                     "ours_range_GBps": [round(gb(max(t["ours"])), 1), round(gb(min(t["ours"])), 1)],
                     "pytorch_range_GBps": [round(gb(max(t["pytorch"])), 1), round(gb(min(t["pytorch"])), 1)],
                     "ratio": round(median(t["pytorch"]) / median(t["ours"]), 3)})
    return recs


def gemm_records(torch, ours, rounds, sizes, device="cuda"):
    """addmm through our host layer (cuBLAS's sgemm on a GPU) against torch.addmm on the same matrices, TF32
    off on both sides (our handles never enable it); TFLOP/s, and the results compared every round."""
    torch.backends.cuda.matmul.allow_tf32 = False
    recs = []
    for n in sizes:
        g = torch.Generator(device=device).manual_seed(n)
        a = torch.randn(n, n, device=device, generator=g)
        b = torch.randn(n, n, device=device, generator=g)
        m = torch.randn(n, n, device=device, generator=g)
        o, p = torch.empty_like(m), torch.empty_like(m)
        lo, lm, la, lb = ours.tensor(o), ours.tensor(m), ours.tensor(a), ours.tensor(b)
        mine = lambda: ours.call("addmm", lo, 0.5, lm, 1.0, la, lb)  # noqa: E731
        theirs = lambda: torch.addmm(m, a, b, beta=0.5, out=p)  # noqa: E731
        errs = []

        def check():
            errs.append((o - p).abs().max().item() / (a.abs() @ b.abs()).max().item())
            assert errs[-1] < 1e-5, "addmm %d: ours and PyTorch's differ by %.3g of the magnitude" % (n, errs[-1])

        # an untimed first round warms up cuBLAS's heuristics and PyTorch's handle
        t = side_by_side(mine, theirs, rounds, ours.synchronize, after_round=check, warmup_round=True)
        err = errs[-1]
        tf = lambda s: 2.0 * n ** 3 / s / 1e12  # noqa: E731
        recs.append({"what": "gemm", "op": "addmm float32 %d^3" % n, "n": n, "rounds": rounds, "tf32": False,
                     "ours_TFLOPs": round(tf(median(t["ours"])), 2), "pytorch_TFLOPs": round(tf(median(t["pytorch"])), 2),
                     "ours_range_TFLOPs": [round(tf(max(t["ours"])), 2), round(tf(min(t["ours"])), 2)],
                     "pytorch_range_TFLOPs": [round(tf(max(t["pytorch"])), 2), round(tf(min(t["pytorch"])), 2)],
                     "ratio": round(median(t["pytorch"]) / median(t["ours"]), 3), "max_relative_difference": err})
    return recs


# Batch norm's shapes in ResNet-50 at batch 64: the first layer (64 features of 64x112x112 values), a first-stage
# expansion (256 of 64x56x56), the last stage (2048 of 64x7x7); float32 and half.
BATCHNORM_CASES = [((64, 64, 112, 112), "float32"), ((64, 64, 112, 112), "float16"), ((64, 256, 56, 56), "float16"),
                   ((64, 2048, 7, 7), "float16"), ((64, 256, 56, 56), "float32")]


def batchnorm_records(torch, ours, rounds, cases=BATCHNORM_CASES, device="cuda"):
    """A training batch norm's forward and backward (gradInput, gradWeight, gradBias): our kernels (the ones every
    half network and every float one without cuDNN runs) against PyTorch's own CUDA kernels
    (aten.native_batch_norm and its backward, what PyTorch runs for a .half() module) on the same buffers, parameters
    in the input's type on both sides; milliseconds per forward+backward, interleaved rounds, the outputs and
    gradients compared each round."""
    recs = []
    for shape, dtype in cases:
        dt = getattr(torch, dtype)
        g = torch.Generator(device=device).manual_seed(sum(shape))
        C = shape[1]
        x = (torch.randn(shape, device=device, generator=g) * 2 + 1).to(dt)
        dy = torch.randn(shape, device=device, generator=g).to(dt)
        w = (torch.rand(C, device=device, generator=g) + 0.5).to(dt)
        b = torch.randn(C, device=device, generator=g).to(dt)
        rm, rv = torch.zeros(C, device=device, dtype=dt), torch.ones(C, device=device, dtype=dt)
        prm, prv = rm.clone(), rv.clone()
        out, dx = torch.empty_like(x), torch.empty_like(x)
        sm, ss, gw, gb = (torch.zeros(C, device=device, dtype=dt) for _ in range(4))
        lx, ldy, lw, lb, lrm, lrv, lo, ldx, lsm, lss, lgw, lgb = (
            ours.tensor(t) for t in (x, dy, w, b, rm, rv, out, dx, sm, ss, gw, gb))

        def mine():
            ours.call("batchnorm_forward", lo, lx, lw, lb, lrm, lrv, lsm, lss, 1, 0.1, 1e-5)
            ours.call("batchnorm_backward", lx, ldy, ldx, lgw, lgb, lw, ours.ffi.NULL, ours.ffi.NULL, lsm, lss, 1, 1.0,
                      1e-5)

        theirs_out = {}

        def theirs():
            y, mean, invstd = torch.ops.aten.native_batch_norm(x, w, b, prm, prv, True, 0.1, 1e-5)
            theirs_out["grads"] = torch.ops.aten.native_batch_norm_backward(dy, x, w, prm, prv, mean, invstd, True,
                                                                            1e-5, [True, True, True])
            theirs_out["y"] = y

        def compare():
            gw.zero_(), gb.zero_()
            mine()
            theirs()
            ours.synchronize()
            tol = 2e-2 if dtype == "float16" else 1e-4
            (pdx, pgw, pgb), py = theirs_out["grads"], theirs_out["y"]
            worst = 0.0
            for a, ref in ((out, py), (dx, pdx), (gw, pgw), (gb, pgb)):
                err = ((a.double() - ref.double()).abs().max() / ref.double().abs().max().clamp_min(1e-30)).item()
                worst = max(worst, err)
            assert worst < tol, "batchnorm %s %s: ours and PyTorch's differ by %.3g of the magnitude" % (
                shape, dtype, worst)
            return worst

        worst = compare()
        t = side_by_side(mine, theirs, rounds, ours.synchronize)
        worst = max(worst, compare())
        ms = lambda v: round(v * 1e3, 4)  # noqa: E731
        recs.append({"what": "batchnorm", "shape": list(shape), "dtype": dtype, "rounds": rounds,
                     "ours_ms": ms(median(t["ours"])), "pytorch_ms": ms(median(t["pytorch"])),
                     "ours_range_ms": [ms(min(t["ours"])), ms(max(t["ours"]))],
                     "pytorch_range_ms": [ms(min(t["pytorch"])), ms(max(t["pytorch"]))],
                     "ratio": round(median(t["pytorch"]) / median(t["ours"]), 3),
                     "max_relative_difference": worst, "pytorch": "aten.native_batch_norm + native_batch_norm_backward"})
    return recs


_LUA_TRAIN_STEP = """
return function(build, batch, size, classes, nll, half)
   require 'cunn'
   require 'cudnn'
   require 'optim'
   torch.manualSeed(1)
   local net = loadstring('return ' .. build)():cuda()
   -- as fb.resnet.torch and imagenet-multiGPU.torch trained: cudnn's modules, algorithms found by timing
   cudnn.convert(net, cudnn)
   cudnn.benchmark = true
   net:training()
   local crit = (nll and nn.ClassNLLCriterion() or nn.CrossEntropyCriterion()):cuda()
   local x = torch.FloatTensor(batch, 3, size, size):normal():cuda()
   if half then   -- cunn's half training: parameters, activations and gradients in half, no float master copy
      net, crit, x = net:type('torch.CudaHalfTensor'), crit:type('torch.CudaHalfTensor'), x:cudaHalf()
   end
   local y = torch.LongTensor(batch):random(1, classes):cuda()
   local w, dw = net:getParameters()
   local state = {learningRate = 0.01, momentum = 0.9, dampening = 0.9, weightDecay = 1e-4}
   local loss
   local function feval() return loss, dw end
   return function()
      dw:zero()
      local out = net:forward(x)
      loss = crit:forward(out, y)
      net:backward(x, crit:backward(out, y))
      optim.sgd(feval, w, state)
      return loss
   end
end
"""


COUNT_FIELDS = {"launches": "ours_launches_per_iter", "libraryOps": "ours_library_ops_per_iter",
                "hostWaits": "ours_host_waits_per_iter", "deviceAllocs": "ours_device_allocs_per_iter"}


def ours_train_step(build, batch, size, classes, nll, iters, warmup, half=False):
    """Our training step on cutorch's GPU backend: (wall seconds, host CPU seconds) per timed step, the
    losses, the staged methods, the convolution path and what a timed step asked of the GPU on average
    (cutorch.deviceCallCounts). The host CPU time is taken before the synchronize, as PyTorch's."""
    from pytorch_bridge import Runtime

    os.environ["LUATORCH_CUTORCH"] = "gpu"   # read when the new state requires cutorch
    rt = Runtime()
    step = rt.call(rt.execute(_LUA_TRAIN_STEP), build, batch, size, classes, nll, half)
    sync = rt.eval("cutorch.synchronize")
    counted = rt.eval("cutorch.deviceCallCounts")
    walls, cpus, losses = [], [], []
    per_iter = dict.fromkeys(COUNT_FIELDS.values(), 0.0)
    for i in range(warmup + iters):
        rt.call(sync)
        before = dict(rt.call(counted).items())
        w0, c0 = time.perf_counter(), time.thread_time()
        loss = rt.call(step)
        c1 = time.thread_time()
        after = dict(rt.call(counted).items())   # (before the synchronize, which is not the step's wait)
        rt.call(sync)
        if i >= warmup:
            walls.append(time.perf_counter() - w0)
            cpus.append(c1 - c0)
            for name, field in COUNT_FIELDS.items():
                per_iter[field] += (after[name] - before[name]) / iters
        losses.append(loss)
    fallbacks = dict(rt.eval("cutorch.hostFallbacks()").items())
    convolutions = rt.eval("cudnn.isAvailable and cudnn.isAvailable() and 'cuDNN' or 'luatorch im2col + cuBLAS'")
    return walls, cpus, losses, fallbacks, convolutions, per_iter


def ours_record(build, batch, size, classes, nll, iters, warmup, half=False):
    walls, cpus, losses, staged, convolutions, per_iter = ours_train_step(build, batch, size, classes, nll, iters,
                                                                          warmup, half)
    ours = {"ours_images_per_s": round(batch / median(walls), 1),
            "ours_images_per_s_range": [round(batch / max(walls), 1), round(batch / min(walls), 1)],
            "ours_host_cpu_ms_per_iter": round(median(cpus) * 1e3, 2),
            "ours_host_cpu_ms_per_iter_range": [round(min(cpus) * 1e3, 2), round(max(cpus) * 1e3, 2)],
            "ours_first_last_loss": [losses[0], losses[-1]], "ours_host_fallbacks": staged,
            "ours_convolutions": convolutions}
    ours.update({k: round(v, 2) for k, v in per_iter.items()})
    return ours


def print_ours(model, batch, ours):
    print("train_step %s batch %d ours (%s): %.1f img/s, host CPU %.2f ms/iter; per step %g launches, %g library "
          "operations, %g host waits, %g device allocations%s" % (
              model, batch, ours["ours_convolutions"], ours["ours_images_per_s"], ours["ours_host_cpu_ms_per_iter"],
              ours["ours_launches_per_iter"], ours["ours_library_ops_per_iter"], ours["ours_host_waits_per_iter"],
              ours["ours_device_allocs_per_iter"],
              ", staged on the host: %s" % ours["ours_host_fallbacks"] if ours["ours_host_fallbacks"] else ""),
          flush=True)


def ours_only_records(models, batches, iters, warmup, half=False):
    """Our training steps alone, without PyTorch: what --ours-only records."""
    from run.bench_model import MODELS

    recs = []
    for model in models:
        build, size, classes = MODELS[model]
        for batch in batches:
            ours = ours_record(build, batch, size, classes, model == "googlenet_bn", iters, warmup, half)
            print_ours(model, batch, ours)
            recs.append(dict({"what": "train_step_ours", "model": model, "batch": batch, "iters": iters,
                              "dtype": "half" if half else "float", "loadavg": _loadavg()}, **ours))
    return recs


def train_records(torch, models, batches, iters, warmup, device="cuda", half=False):
    from pytorch_bridge import Runtime
    from pytorch_bridge.interop import to_torch
    from run.bench_model import MODELS

    recs = []
    for model in models:
        build, size, classes = MODELS[model]
        rt = Runtime()
        net_lua = rt.execute("require 'nn'; torch.manualSeed(1); local m = " + build + "; return m:float()")
        googlenet = model == "googlenet_bn"
        loss_fn = torch.nn.functional.nll_loss if googlenet else torch.nn.functional.cross_entropy
        for batch in batches:
            ours = ours_record(build, batch, size, classes, googlenet, iters, warmup, half)
            print_ours(model, batch, ours)
            for tf32 in ((None,) if half else (True, False)):   # (half: pure half on both sides, TF32 moot)
                torch.backends.cudnn.allow_tf32 = bool(tf32)
                torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
                torch.backends.cudnn.benchmark = True
                net = to_torch(rt, net_lua, np.float32).to(device).train()
                if half:
                    net = net.half()
                opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, dampening=0.9, weight_decay=1e-4)
                g = torch.Generator(device=device).manual_seed(0)
                x = torch.randn(batch, 3, size, size, device=device, generator=g)
                if half:
                    x = x.half()
                y = torch.randint(0, classes, (batch,), device=device, generator=g)
                sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
                walls, cpus = [], []
                for i in range(warmup + iters):
                    sync()
                    w0, c0 = time.perf_counter(), time.thread_time()
                    opt.zero_grad(set_to_none=True)
                    loss = loss_fn(net(x), y)
                    loss.backward()
                    opt.step()
                    c1 = time.thread_time()
                    sync()
                    if i >= warmup:
                        walls.append(time.perf_counter() - w0)
                        cpus.append(c1 - c0)
                assert torch.isfinite(loss).item(), "%s: the loss is not finite" % model
                recs.append({"what": "train_step", "model": model, "batch": batch, "tf32": tf32,
                             "dtype": "half" if half else "float",
                             "memory_format": "NCHW", "iters": iters,
                             "pytorch_images_per_s": round(batch / median(walls), 1),
                             "pytorch_images_per_s_range": [round(batch / max(walls), 1), round(batch / min(walls), 1)],
                             "pytorch_host_cpu_ms_per_iter": round(median(cpus) * 1e3, 2),
                             "loadavg": _loadavg()})
                recs[-1].update(ours if not tf32 else {"ours_images_per_s": None})
                if not tf32:
                    recs[-1]["ours_vs_pytorch"] = round(ours["ours_images_per_s"] / recs[-1]["pytorch_images_per_s"], 3)
                print("train_step %s batch %d tf32 %s: PyTorch %.1f img/s, host CPU %.1f ms/iter" % (
                    model, batch, tf32, recs[-1]["pytorch_images_per_s"], recs[-1]["pytorch_host_cpu_ms_per_iter"]),
                    flush=True)
                del net, opt, x, y, loss
                if device == "cuda":
                    torch.cuda.empty_cache()
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="luatorch bench cuda", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,googlenet_bn", help="train_step networks ('' for none)")
    ap.add_argument("--batch", default="64,128")
    ap.add_argument("--iters", type=int, default=20, help="timed training steps per configuration")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds of the launch and bandwidth cases")
    ap.add_argument("--launches", type=int, default=5000, help="launches per round")
    ap.add_argument("--elements", type=int, default=1 << 26, help="float32 elements of the bandwidth buffers")
    ap.add_argument("--gemm", default="1024,4096", help="square addmm sizes (float32)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--half", action="store_true",
                    help="train_step in half on both sides (cunn's CudaHalfTensor; PyTorch's .half()), not float")
    ap.add_argument("--ours-only", action="store_true",
                    help="our training steps alone: no PyTorch reference, no launch/bandwidth/gemm cases")
    args = ap.parse_args(argv)

    from pytorch_bridge.native import ffi, lib

    n = ffi.new("int *")
    lib.lt_cuda_device_count(n)
    if n[0] == 0:
        print("luatorch bench cuda: no CUDA device: %s" % ffi.string(lib.lt_cuda_library_info(0)).decode())
        return 2
    if args.ours_only:
        driver = ffi.string(lib.lt_cuda_library_info(0)).decode()
        print("driver: %s" % driver, flush=True)
        records = [{"what": "device", "driver": driver, "null_execution": os.environ.get("LT_EMULATED_CUDA_NOEXEC"),
                    "loadavg_before": _loadavg()}]
        records += ours_only_records([m for m in args.models.split(",") if m], [int(b) for b in args.batch.split(",")],
                                     args.iters, args.warmup, args.half)
        records[0]["loadavg_after"] = _loadavg()
        if args.json:
            write_json(args.json, records)
        return 0
    try:
        import torch
    except ImportError:
        print("luatorch bench cuda: PyTorch with CUDA is the side-by-side reference: pip install torch")
        return 2
    if not torch.cuda.is_available():
        print("luatorch bench cuda: this PyTorch sees no GPU (a CPU build?): it is the side-by-side reference")
        return 2
    torch.cuda.init()   # PyTorch's primary context first; ours retains the same one
    load_before = _loadavg()
    dev = device_record(torch)
    dev["loadavg_before"] = load_before
    print("device: %s (compute capability %s, %d SMs, %.0f GiB)" % (
        dev["name"], dev["compute_capability"], dev["multiprocessors"], dev["memory_bytes"] / 2**30), flush=True)
    records = [dev]
    arch = "sm_" + dev["compute_capability"].replace(".", "")
    comp = compile_records(arch)
    records += comp
    print("kernels for %s: %d files, %.1f s (%d from the cache)" % (
        arch, len(comp), sum(r["seconds"] for r in comp), sum(r["cached"] for r in comp)), flush=True)
    ours = Ours()
    launches = launch_records(torch, ours, args.rounds, args.launches)
    records += launches
    print_table(["launch", "ours from Lua us", "ours from Python us", "PyTorch us", "Lua/PyTorch"],
                [[r["op"], r["ours_lua_us"], r["ours_us"], r["pytorch_us"], r["ratio_lua"]] for r in launches])
    bw = bandwidth_records(torch, ours, args.rounds, args.elements)
    records += bw
    print_table(["kernel", "ours GB/s", "PyTorch GB/s", "ours/PyTorch speed"],
                [[r["op"], r["ours_GBps"], r["pytorch_GBps"], r["ratio"]] for r in bw])
    gemms = gemm_records(torch, ours, args.rounds, [int(v) for v in args.gemm.split(",") if v])
    records += gemms
    print_table(["matrix product", "ours TFLOP/s", "PyTorch TFLOP/s", "ours/PyTorch speed"],
                [[r["op"], r["ours_TFLOPs"], r["pytorch_TFLOPs"], r["ratio"]] for r in gemms])
    bns = batchnorm_records(torch, ours, args.rounds)
    records += bns
    print_table(["batch norm forward+backward", "ours ms", "PyTorch ms", "ours/PyTorch speed"],
                [["%s %s" % ("x".join(map(str, r["shape"])), r["dtype"]), r["ours_ms"], r["pytorch_ms"], r["ratio"]]
                 for r in bns])
    models = [m for m in args.models.split(",") if m]
    if models:
        records += train_records(torch, models, [int(b) for b in args.batch.split(",")], args.iters, args.warmup,
                                 half=args.half)
    records[0]["loadavg_after"] = _loadavg()
    if args.json:
        write_json(args.json, records)
    return 0
