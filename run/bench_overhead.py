"""`luatorch bench overhead`: framework cost per module call on tiny tensors — Lua (LuaJIT +
FFI, our nn) against Python (PyTorch eager), one thread each, measured in one run — and the
share of a small-batch ResNet training iteration spent outside kernels.

    luatorch bench overhead [--calls 20000] [--repeat 5] [--json PATH] [--svg PATH]
                            [--model resnet20] [--batch 1,8] [--iters 20] [--rounds 7] [--skip-calls]

On a 1x1x4x4 input the kernels do almost nothing, so the time per call is the framework's own
cost: argument checks, dispatch, result allocation. Ours loops inside Lua (as a Torch7 training
script does); PyTorch's inside Python (as an eager training script does). Reported: microseconds
per forward call and per forward+backward call, the best of `repeat` timed loops of `calls`
calls each. JSON: a list of records {module, pass, ours_us, pytorch_us, ratio} (ratio = ours / PyTorch
time; lower is better for us).

Iteration share: one training step (forward, CrossEntropy, zeroGrad, backward, SGD with
momentum) of the same network with the same weights in both, one thread each. Kernel time is
measured at the boundary to native code in each framework: for ours, every call into the C library
is timed by a wrapper around LuaJIT's FFI namespace (an instrumented `torch.C`, in a second LuaJIT
state); for PyTorch, torch.profiler's self time of every ATen operator (children excluded, so each
microsecond inside native operators counts once; ATen's in-operator dispatch counts as kernel time,
which favours PyTorch). The timers cost time themselves, on both sides of the boundary in a split no
one can see, so the outside-kernel time is bracketed from the instrumented loop alone: between
(instrumented - kernels - timer cost) and (instrumented - kernels), over the step less the timer cost.
The timer cost per step is the larger of a calibration (a trivial call timed bare and instrumented,
times the events per step) and the measured slowdown of the median instrumented step. `--rounds`
rounds interleave the four loops (ours plain, ours instrumented, PyTorch plain, PyTorch profiled) so
load hits them alike; every figure is a median with its [min-max] over rounds, and the load average
before and after is recorded. Records: {kind: "iteration", model, batch, framework, rounds, iters,
iteration_ms, instrumented_ms, kernel_ms, outside_share_low, outside_share_high (each {median, min,
max}), timed_events, cost_per_event_us, calibrated_cost_ms, measured_slowdown_ms, loadavg_before,
loadavg_after}.
"""
import argparse
import os
import statistics
import sys
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
local prof = {seconds = 0, calls = 0, real = real}
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
-- a closure doing one training step (forward, criterion, zeroGrad, backward, SGD with momentum), warmed up
function M.stepper(model, x, y)
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
   return step
end
-- one timed loop of n steps: wall seconds, seconds inside C (instrumented state only), C calls; all per step
function M.loop(step, n)
   local prof = package.loaded['torch.C.profile']
   local c0, k0 = prof and prof.calls or 0, prof and prof.seconds or 0
   local timer = torch.Timer()
   for i = 1, n do step() end
   local wall = timer:time().real
   if not prof then return wall / n, 0, 0 end
   return wall / n, (prof.seconds - k0) / n, (prof.calls - c0) / n
end
-- what the timing wrapper adds to one C call (seconds): a trivial function called wrapped and bare
function M.wrapper_cost(n)
   local prof = package.loaded['torch.C.profile']
   local wrapped, bare = require('torch.C'), prof.real
   local diffs = {}
   for r = 1, 7 do
      local t = torch.Timer()
      for i = 1, n do wrapped.lt_get_num_threads() end
      local tw = t:time().real
      t = torch.Timer()
      for i = 1, n do bare.lt_get_num_threads() end
      diffs[r] = (tw - t:time().real) / n
   end
   table.sort(diffs)
   return math.max(diffs[4], 0)
end
return M
"""

ITER_MODELS = {
    "resnet20": ("require('luatorch.models.resnet')({depth = 20, dataset = 'cifar10'})", (3, 32, 32)),
    "resnet18": ("require('luatorch.models.resnet')({depth = 18, dataset = 'imagenet'})", (3, 224, 224)),
    "resnet50": ("require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet'})", (3, 224, 224)),
}


def torch_stepper(torch, net, x, y):
    """A warmed-up PyTorch eager training step, the same recipe as M.stepper."""
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss_fn(net(x), y).backward()
        opt.step()

    step()
    step()
    return step


def torch_loop(step, n, profiled=False):
    """(wall s, s inside ATen operators, profiler events), per step; the last two only when profiled."""
    if not profiled:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t0) / n, 0.0, 0
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()       # inside the context: profiler start-up and post-processing excluded
        for _ in range(n):
            step()
        wall = time.perf_counter() - t0
    # self time (children excluded) of every ATen operator: all time inside native operators, each
    # microsecond once; autograd-engine nodes and Python-level optimizer markers are not operators
    events = prof.events()
    aten = sum(e.self_cpu_time_total for e in events if e.name.startswith("aten::"))
    return wall / n, aten * 1e-6 / n, len(events) / n


def profiler_cost(torch, n=20000):
    """What torch.profiler adds per recorded event (seconds): a one-element op, profiled and bare."""
    x = torch.zeros(1)
    diffs = []
    for _ in range(7):
        bare, _, _ = torch_loop(lambda: torch.neg(x), n)
        timed, _, events = torch_loop(lambda: torch.neg(x), n, profiled=True)
        diffs.append((timed - bare) / events)
    return max(statistics.median(diffs), 0.0)


def share_bounds(timed, kernel, extra):
    """Outside-kernel share of a step, bracketed, from one instrumented loop. The instrumentation that times
    the kernels (our FFI wrapper, torch.profiler) costs `extra` seconds per step, split between inside and
    outside the kernels in a way nobody can see: with all of it outside, the true outside time is
    timed - kernel - extra; with all of it inside, timed - kernel. The true step is timed - extra."""
    true_step = max(timed - extra, 1e-12)
    low = max(0.0, timed - kernel - extra) / true_step
    high = min(1.0, max(0.0, timed - kernel) / true_step)
    return low, high


def instrumentation_cost(rounds, cost_per_event):
    """Seconds the kernel timers add to a step: the calibrated cost per timed event times the events, or the
    measured slowdown of the median instrumented step over the median plain one, whichever is larger
    (the calibration uses a trivial call; real calls with many arguments can cost the wrapper more)."""
    med = statistics.median
    events = med(c for _, _, _, c in rounds)
    slowdown = med(t for _, t, _, _ in rounds) - med(p for p, _, _, _ in rounds)
    return max(events * cost_per_event, slowdown, 0.0), events * cost_per_event, slowdown


def _spread(xs):
    return {"median": round(statistics.median(xs), 6), "min": round(min(xs), 6), "max": round(max(xs), 6)}


def iteration_share(args, torch):
    """Rounds of interleaved loops (ours plain, ours instrumented, PyTorch plain, PyTorch profiled) per batch
    size, each quantity taken per round, so machine noise hits all four alike; medians and ranges over rounds."""
    from pytorch_bridge.interop import to_torch

    plain = Runtime(threads=1)
    profiled = Runtime(threads=1, preload={"torch.C": _PROFILED_C})
    lp, lq = plain.execute(_ITER_LUA), profiled.execute(_ITER_LUA)
    expr, shape = ITER_MODELS[args.model]
    records = []
    load_before = os.getloadavg()
    for batch in [int(b) for b in args.batch.split(",")]:
        rng = np.random.default_rng(batch)
        x = rng.standard_normal((batch, *shape)).astype(np.float32)
        labels = rng.integers(0, 10, batch)
        m1 = plain.call(lp.build, expr, 1)
        m2 = profiled.call(lq.build, expr, 1)
        ours_plain = plain.call(lp.stepper, m1, plain.from_numpy(x), plain.from_numpy(labels + 1))
        ours_timed = profiled.call(lq.stepper, m2, profiled.from_numpy(x), profiled.from_numpy(labels + 1))
        net = to_torch(plain, m1, np.float32)
        net.train()
        theirs = torch_stepper(torch, net, torch.from_numpy(x), torch.from_numpy(labels))
        runs = {"ours (Lua)": [], "PyTorch (Python)": []}
        costs = {"ours (Lua)": profiled.call(lq.wrapper_cost, 200000), "PyTorch (Python)": profiler_cost(torch)}
        for r in range(args.rounds):
            t_plain, _, _ = plain.call(lp.loop, ours_plain, args.iters)
            t_timed, k, calls = profiled.call(lq.loop, ours_timed, args.iters)
            runs["ours (Lua)"].append((t_plain, t_timed, k, calls))
            t_plain, _, _ = torch_loop(theirs, args.iters)
            t_timed, k, calls = torch_loop(theirs, args.iters, profiled=True)
            runs["PyTorch (Python)"].append((t_plain, t_timed, k, calls))
            print("\r%s batch %d: round %d/%d" % (args.model, batch, r + 1, args.rounds), end="", file=sys.stderr,
                  flush=True)
        print(file=sys.stderr)
        for fw, rs in runs.items():
            extra, calibrated, slowdown = instrumentation_cost(rs, costs[fw])
            bounds = [share_bounds(t, k, extra) for _, t, k, _ in rs]
            rec = {"kind": "iteration", "model": args.model, "batch": batch, "framework": fw,
                   "rounds": args.rounds, "iters": args.iters,
                   "iteration_ms": _spread([p * 1e3 for p, _, _, _ in rs]),
                   "instrumented_ms": _spread([t * 1e3 for _, t, _, _ in rs]),
                   "kernel_ms": _spread([k * 1e3 for _, _, k, _ in rs]),
                   "timed_events": round(statistics.median(c for _, _, _, c in rs), 1),
                   "cost_per_event_us": round(costs[fw] * 1e6, 4),
                   "calibrated_cost_ms": round(calibrated * 1e3, 3), "measured_slowdown_ms": round(slowdown * 1e3, 3),
                   "outside_share_low": _spread([lo for lo, _ in bounds]),
                   "outside_share_high": _spread([hi for _, hi in bounds])}
            records.append(rec)
            print("%s batch %d  %-17s iteration %s ms  kernels %s ms  outside %s  (timers: %.0f events, "
                  "calibrated %.3f ms, measured slowdown %.3f ms per step)" % (
                      args.model, batch, fw, _fmt(rec["iteration_ms"]), _fmt(rec["kernel_ms"]), _fmt_share(rec),
                      rec["timed_events"], rec["calibrated_cost_ms"], rec["measured_slowdown_ms"]), flush=True)
    load_after = os.getloadavg()
    for rec in records:
        rec["loadavg_before"], rec["loadavg_after"] = [round(v, 2) for v in load_before], \
            [round(v, 2) for v in load_after]
    print("load average (1, 5, 15 min): before %s, after %s" % (
        ", ".join("%.2f" % v for v in load_before), ", ".join("%.2f" % v for v in load_after)))
    return records


def _fmt(sp, scale=1.0, digits=2):
    return "%.*f [%.*f-%.*f]" % (digits, sp["median"] * scale, digits, sp["min"] * scale, digits,
                                 sp["max"] * scale)


def _fmt_share(rec):
    return "%s%% .. %s%%" % (_fmt(rec["outside_share_low"], 100, 1), _fmt(rec["outside_share_high"], 100, 1))


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    p.add_argument("--svg", help="plot of the iteration share (kernel vs outside time)")
    p.add_argument("--model", default="resnet20", choices=sorted(ITER_MODELS))
    p.add_argument("--batch", default="1,8", help="batch sizes for the iteration share")
    p.add_argument("--iters", type=int, default=20, help="iterations per timed loop (iteration share)")
    p.add_argument("--rounds", type=int, default=7,
                   help="interleaved rounds of the four iteration loops; medians and ranges over rounds")
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
        print_table(["model", "batch", "framework", "iteration ms", "kernels ms", "outside %, low .. high"],
                    [[r["model"], r["batch"], r["framework"], _fmt(r["iteration_ms"]), _fmt(r["kernel_ms"]),
                      _fmt_share(r)] for r in its])
        print("(median [min-max] over %d rounds; outside lies between the two bounds: the kernel timers' own "
              "cost falls on an unknown side)" % args.rounds)
        if args.svg:
            from run.svgplot import stacked_bars

            def kernel_and_outside(r):   # medians; outside at the middle of its bracket
                k = r["kernel_ms"]["median"]
                mid = (r["outside_share_low"]["median"] + r["outside_share_high"]["median"]) / 2
                return k, r["iteration_ms"]["median"] * mid

            parts = [kernel_and_outside(r) for r in its]
            stacked_bars(["%s b%d" % ("Lua" if r["framework"].startswith("ours") else "PyTorch", r["batch"])
                          for r in its],
                         {"kernels": [k for k, _ in parts], "outside kernels": [o for _, o in parts]},
                         args.svg, "%s training iteration: time in kernels vs outside (1 thread, medians)"
                         % args.model, "ms per iteration")
    write_json(args.json, records)
    return 0
