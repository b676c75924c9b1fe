"""`luatorch bench overhead`: framework cost per module call on tiny tensors — Lua (LuaJIT +
FFI, our nn) against Python (PyTorch eager), one thread each, measured in one run — and the
share of a small-batch ResNet training iteration spent outside kernels.

    luatorch bench overhead [--calls 20000] [--repeat 5] [--json PATH] [--svg PATH]
                            [--model resnet20] [--batch 1,8] [--iters 20] [--skip-calls]

On a 1x1x4x4 input the kernels do almost nothing, so the time per call is the framework's own
cost: argument checks, dispatch, result allocation. Ours loops inside Lua (as a Torch7 training
script does); PyTorch's inside Python (as an eager training script does). Reported: microseconds
per forward call and per forward+backward call, the best of `repeat` timed loops of `calls`
calls each. JSON: a list of records {module, pass, ours_us, pytorch_us, ratio} (ratio = ours / PyTorch
time; lower is better for us).

Iteration share: one training step (forward, CrossEntropy, zeroGrad, backward, SGD with
momentum) of the same network with the same weights in both. Kernel time is measured from
the boundary to native code in each framework: for ours, every call into the C library is
timed by a wrapper around LuaJIT's FFI namespace (an instrumented `torch.C`, in a second
LuaJIT state); for PyTorch, torch.profiler's self time of every ATen operator (children excluded, so each
microsecond inside native operators counts once; this counts PyTorch's in-operator dispatch as kernel
time, which favours PyTorch). Outside = iteration time (uninstrumented runs) - kernel time: Lua or
Python, module dispatch, autograd bookkeeping, argument checks. Records: {kind: "iteration",
model, batch, framework, iteration_ms, kernel_ms, outside_ms, outside_share}.
"""
import argparse
import time

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import require_torch, print_table, write_json

# (name, Lua constructor, PyTorch constructor, input shape)
CASES = [
    ("Linear(16->16)", "nn.Linear(16, 16)", "torch.nn.Linear(16, 16)", (1, 16)),
    ("SpatialConvolution 3x3", "nn.SpatialConvolution(1, 1, 3, 3, 1, 1, 1, 1)",
     "torch.nn.Conv2d(1, 1, 3, 1, 1)", (1, 1, 4, 4)),
    ("ReLU", "nn.ReLU()", "torch.nn.ReLU()", (1, 1, 4, 4)),
    ("SpatialBatchNormalization", "nn.SpatialBatchNormalization(1)", "torch.nn.BatchNorm2d(1)", (2, 1, 4, 4)),
    ("SpatialMaxPooling 2x2", "nn.SpatialMaxPooling(2, 2)", "torch.nn.MaxPool2d(2)", (1, 1, 4, 4)),
    ("LogSoftMax", "nn.LogSoftMax()", "torch.nn.LogSoftmax(1)", (1, 16)),
    ("Sequential(conv, BN, ReLU)", "nn.Sequential():add(nn.SpatialConvolution(1, 1, 3, 3, 1, 1, 1, 1))"
     ":add(nn.SpatialBatchNormalization(1)):add(nn.ReLU())",
     "torch.nn.Sequential(torch.nn.Conv2d(1, 1, 3, 1, 1), torch.nn.BatchNorm2d(1), torch.nn.ReLU())", (2, 1, 4, 4)),
]

_LUA = r"""
require 'nn'
torch.setdefaulttensortype('torch.FloatTensor')
torch.setnumthreads(1)
local M = {}
-- best of `repeat` loops of n calls, in microseconds per call
function M.time(build, shape, n, rep, backward)
   local m = loadstring('return ' .. build)()
   local x = torch.randn(torch.LongStorage(shape))
   local y = m:forward(x)
   local g = y:clone():normal()
   local best = math.huge
   for r = 1, rep do
      local timer = torch.Timer()
      if backward then
         for i = 1, n do m:forward(x); m:backward(x, g) end
      else
         for i = 1, n do m:forward(x) end
      end
      best = math.min(best, timer:time().real / n * 1e6)
   end
   return best
end
return M
"""


def time_torch(torch, build, shape, n, rep, backward):
    m = eval(build, {"torch": torch})
    x = torch.randn(*shape, requires_grad=backward)
    y = m(x)
    g = torch.randn_like(y)
    best = float("inf")
    for _ in range(rep):
        if backward:
            t0 = time.perf_counter()
            for _ in range(n):
                m(x).backward(g)
        else:
            with torch.no_grad():
                t0 = time.perf_counter()
                for _ in range(n):
                    m(x)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


# torch.C with every native function wrapped in a timer: the seconds spent inside the C
# library, as package.loaded['torch.C.profile'].seconds.
_PROFILED_C = r"""
local ffi = require 'ffi'
local real = dofile(package.searchpath('torch.C', package.path))
ffi.cdef('typedef struct { long tv_sec; long tv_nsec; } lt_prof_ts; ' ..
         'int lt_prof_clock_gettime(int, lt_prof_ts *) __asm__("clock_gettime");')
local ts = ffi.new('lt_prof_ts')
local function now()
   ffi.C.lt_prof_clock_gettime(1, ts)
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local prof = {seconds = 0, calls = 0}
package.loaded['torch.C.profile'] = prof
return setmetatable({}, {__index = function(t, k)
   local v = real[k]
   if type(v) == 'cdata' and tostring(ffi.typeof(v)):find('%(') then
      local f = v
      local w = function(...)
         local t0 = now()
         local r = f(...)
         prof.seconds = prof.seconds + (now() - t0)
         prof.calls = prof.calls + 1
         return r
      end
      rawset(t, k, w)
      return w
   end
   return v
end})
"""

_ITER_LUA = r"""
require 'nn'
require 'optim'
torch.setdefaulttensortype('torch.FloatTensor')
local M = {}
function M.build(expr, seed)
   torch.manualSeed(seed)
   return loadstring('return ' .. expr)()
end
-- seconds per iteration (best of rep loops of n), and seconds inside C per iteration
function M.time(model, x, y, n, rep)
   local crit = nn.CrossEntropyCriterion()
   local p, g = model:getParameters()
   local state = {learningRate = 0.01, momentum = 0.9}
   local function step()
      local out = model:forward(x)
      crit:forward(out, y)
      model:zeroGradParameters()
      model:backward(x, crit:backward(out, y))
      optim.sgd(function() return crit.output, g end, p, state)
   end
   step(); step()
   local prof = package.loaded['torch.C.profile']
   local best, inside = math.huge, math.huge
   for r = 1, rep do
      local c0 = prof and prof.seconds or 0
      local timer = torch.Timer()
      for i = 1, n do step() end
      local t = timer:time().real / n
      if t < best then best = t; inside = prof and (prof.seconds - c0) / n or 0 end
   end
   return best, inside
end
return M
"""

ITER_MODELS = {
    "resnet20": ("require('models.resnet')({depth = 20, dataset = 'cifar10'})", (3, 32, 32)),
    "resnet18": ("require('models.resnet')({depth = 18, dataset = 'imagenet'})", (3, 224, 224)),
    "resnet50": ("require('models.resnet')({depth = 50, dataset = 'imagenet'})", (3, 224, 224)),
}


def torch_iteration(torch, net, x, y, n, rep):
    """(seconds per iteration, seconds inside ATen operators per iteration) for PyTorch eager."""
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(net(x), y).backward()
        opt.step()

    step()
    step()
    best = float("inf")
    for _ in range(rep):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - t0) / n)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            step()
    # self time (children excluded) of every ATen operator: all time inside native operators, each
    # microsecond once; autograd-engine nodes and Python-level optimizer markers are not operators
    aten_us = sum(e.self_cpu_time_total for e in prof.events() if e.name.startswith("aten::"))
    return best, aten_us * 1e-6 / n


def iteration_share(args, torch):
    from pytorch_bridge.interop import to_torch

    plain = Runtime(threads=1)
    profiled = Runtime(threads=1, preload={"torch.C": _PROFILED_C})
    lp, lq = plain.execute(_ITER_LUA), profiled.execute(_ITER_LUA)
    expr, shape = ITER_MODELS[args.model]
    records = []
    for batch in [int(b) for b in args.batch.split(",")]:
        rng = np.random.default_rng(batch)
        x = rng.standard_normal((batch, *shape)).astype(np.float32)
        labels = rng.integers(0, 10, batch)
        m1 = plain.call(lp.build, expr, 1)
        m2 = profiled.call(lq.build, expr, 1)
        ours, _ = plain.call(lp.time, m1, plain.from_numpy(x), plain.from_numpy(labels + 1), args.iters, args.repeat)
        _, inside = profiled.call(lq.time, m2, profiled.from_numpy(x), profiled.from_numpy(labels + 1),
                                  args.iters, args.repeat)
        net = to_torch(plain, m1, np.float32)
        net.train()
        theirs, in_ops = torch_iteration(torch, net, torch.from_numpy(x), torch.from_numpy(labels), args.iters,
                                       args.repeat)
        for fw, total, kernel in (("ours (Lua)", ours, inside), ("PyTorch (Python)", theirs, in_ops)):
            kernel = min(kernel, total)
            records.append({"kind": "iteration", "model": args.model, "batch": batch, "framework": fw,
                            "iteration_ms": round(total * 1e3, 3), "kernel_ms": round(kernel * 1e3, 3),
                            "outside_ms": round((total - kernel) * 1e3, 3),
                            "outside_share": round((total - kernel) / total, 4)})
            r = records[-1]
            print("%s batch %d  %-17s iteration %8.2f ms  kernels %8.2f ms  outside %7.2f ms (%.1f%%)" % (
                args.model, batch, fw, r["iteration_ms"], r["kernel_ms"], r["outside_ms"],
                100 * r["outside_share"]), flush=True)
    return records


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    p.add_argument("--svg", help="plot of the iteration share (kernel vs outside time)")
    p.add_argument("--model", default="resnet20", choices=sorted(ITER_MODELS))
    p.add_argument("--batch", default="1,8", help="batch sizes for the iteration share")
    p.add_argument("--iters", type=int, default=20, help="iterations per timed loop (iteration share)")
    p.add_argument("--skip-calls", action="store_true", help="only the iteration share")
    p.add_argument("--skip-iteration", action="store_true", help="only the per-call table")
    args = p.parse_args(argv)
    torch = require_torch("luatorch bench overhead")

    torch.set_num_threads(1)
    rt = Runtime(threads=1)
    lua = rt.execute(_LUA)
    records = []
    for name, lbuild, tbuild, shape in ([] if args.skip_calls else CASES):
        for backward in (False, True):
            ours = rt.call(lua.time, lbuild, rt.table(*shape), args.calls, args.repeat, backward)
            theirs = time_torch(torch, tbuild, shape, args.calls, args.repeat, backward)
            records.append({"module": name, "pass": "forward+backward" if backward else "forward",
                            "ours_us": round(ours, 3), "pytorch_us": round(theirs, 3),
                            "ratio": round(ours / theirs, 3)})
            print("%-28s %-17s ours %8.2f us  pytorch %8.2f us" % (name, records[-1]["pass"], ours, theirs),
                  flush=True)
    if records:
        print()
        print_table(["module", "pass", "ours us/call", "pytorch us/call", "ratio"],
                    [[r["module"], r["pass"], r["ours_us"], r["pytorch_us"], r["ratio"]] for r in records])
        geo = float(np.exp(np.mean([np.log(r["ratio"]) for r in records])))
        print("\ngeometric mean ratio (ours / PyTorch time per call): %.3f" % geo)
    if not args.skip_iteration:
        its = iteration_share(args, torch)
        records += its
        print()
        print_table(["model", "batch", "framework", "iteration ms", "kernels ms", "outside ms", "outside %"],
                    [[r["model"], r["batch"], r["framework"], r["iteration_ms"], r["kernel_ms"], r["outside_ms"],
                      round(100 * r["outside_share"], 1)] for r in its])
        if args.svg:
            from run.svgplot import stacked_bars

            stacked_bars(["%s b%d" % ("Lua" if r["framework"].startswith("ours") else "PyTorch", r["batch"])
                          for r in its],
                         {"kernels": [r["kernel_ms"] for r in its], "outside kernels": [r["outside_ms"] for r in its]},
                         args.svg, "%s training iteration: time in kernels vs outside (1 thread)" % args.model,
                         "ms per iteration")
    write_json(args.json, records)
    return 0
