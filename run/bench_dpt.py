"""`luatorch bench dpt`: nn.DataParallelTable training steps, Torch7's baseline against the
optimized one-job-per-device path, at 1 and 2 devices (CPU workers: pthread + LuaJIT state
each, floor(cores / devices) compute threads each), steps interleaved so that machine noise
hits all configurations alike.

    luatorch bench dpt [--model resnet20|resnet56|resnet50|mlp] [--batch 64] [--devices 1,2] [--iters 5]
                       [--json PATH]

One step = dpt:forwardBackward(x, y, criterion) + optim.sgd on replica 1's flat parameters.
Baseline = Torch7's sequence (serial distribute on the main thread, one exec round for
forward and one for backward, criterion on the concatenated output, star reduction into
replica 1, serial parameter broadcast at the next forward). `plain` is the model without DPT
(its "x base" is against the 1-device baseline).
Breakdown columns are seconds per step (the device_* ones: the slowest device's share).
"""
import argparse
import json
import os

from pytorch_bridge import Runtime
from run.benchutil import median, print_table, write_json

MODELS = {
    "resnet20": ("require('luatorch.models.resnet')({depth = 20, dataset = 'cifar10'})", 32, 10),
    "resnet56": ("require('luatorch.models.resnet')({depth = 56, dataset = 'cifar10'})", 32, 10),
    "resnet50": ("require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet'})", 224, 1000),
    # many parameters for little compute (the regime of fast devices): what the reduction,
    # broadcast and dispatch cost shows here
    "mlp": ("nn.Sequential():add(nn.View(-1):setNumInputDims(3)):add(nn.Linear(3 * 16 * 16, 2048)):add(nn.ReLU())"
            ":add(nn.Linear(2048, 2048)):add(nn.ReLU()):add(nn.Linear(2048, 2048)):add(nn.ReLU())"
            ":add(nn.Linear(2048, 10))", 16, 10),
}

_LUA = r"""
local M = {}
function M.setup(build, impl, D, batch, size, classes)
   require 'cunn'; require 'optim'
   torch.setdefaulttensortype('torch.FloatTensor')
   torch.manualSeed(1)
   local model = loadstring('return ' .. build)():float()
   local s = {crit = nn.CrossEntropyCriterion():float(), state = {learningRate = 0.01, momentum = 0.9}}
   s.x = torch.randn(batch, 3, size, size):float()
   s.y = torch.LongTensor(batch):random(1, classes)
   if impl == 'plain' then
      s.model = model
   else
      local gpus = {}
      for i = 1, D do gpus[i] = i end
      local dpt = nn.DataParallelTable(1, true):add(model, gpus):threads(function() end)
      dpt:implementation(impl)
      dpt.gradInput = nil
      s.model, s.dpt = dpt, dpt
   end
   s.params, s.grads = s.model:getParameters()
   return s
end
function M.step(s, threads)
   -- OpenBLAS's thread count is process-wide and the workers set it to their share:
   -- give the main thread its own count back before a plain step
   if not s.dpt then torch.setnumthreads(threads) end
   local t = torch.Timer()
   local function feval()
      s.grads:zero()
      if s.dpt then
         local loss = s.dpt:forwardBackward(s.x, s.y, s.crit)
         return loss, s.grads
      end
      local out = s.model:forward(s.x)
      local loss = s.crit:forward(out, s.y)
      s.model:backward(s.x, s.crit:backward(out, s.y))
      return loss, s.grads
   end
   optim.sgd(feval, s.params, s.state)
   return t:time().real
end
function M.timing(s, on)
   if not s.dpt then return {} end
   if on then s.dpt:timing(true); return {} end
   return s.dpt:timing()
end
function M.close(s) if s.dpt then s.dpt.impl:close() end end
return M
"""

PHASES = ["sync", "distribute", "forward", "backward", "criterion", "concat", "reduce",
          "device_sync", "device_fb", "device_wait", "device_reduce"]


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench dpt", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet20", choices=sorted(MODELS))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--devices", default="1,2")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=None, help="compute threads in all (default: all cores)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    devices = [int(d) for d in args.devices.split(",")]
    threads = args.threads or os.cpu_count()
    rt = Runtime(threads=threads)
    M = rt.execute(_LUA)
    build, size, classes = MODELS[args.model]
    configs = [("plain", 1)] + [(impl, d) for d in devices for impl in ("baseline", "optimized")]
    states = [rt.call(M.setup, build, impl, d, args.batch, size, classes) for impl, d in configs]
    for s in states:
        for _ in range(args.warmup):
            rt.call(M.step, s, threads)
        rt.call(M.timing, s, True)
    times = [[] for _ in configs]
    for _ in range(args.iters):
        for k, s in enumerate(states):
            times[k].append(rt.call(M.step, s, threads))
    phases = []
    for s in states:
        t = rt.call(M.timing, s, False)
        phases.append({k: float(t[k]) / args.iters for k in PHASES if t[k] is not None})
        rt.call(M.close, s)
    load = os.getloadavg()
    records, rows = [], []
    base = {d: median(times[k]) for k, (impl, d) in enumerate(configs) if impl == "baseline"}
    for k, (impl, d) in enumerate(configs):
        med = median(times[k])
        rec = {"model": args.model, "batch": args.batch, "impl": impl, "devices": d, "threads": threads,
               "step_s": med, "images_per_s": args.batch / med, "vs_baseline": med / base[d] if d in base else None,
               "phases_s": phases[k], "loadavg": load[0]}
        records.append(rec)
        ph = phases[k]
        rows.append([impl, d, "%.3f" % med, "%.1f" % (args.batch / med),
                     "%.2f" % rec["vs_baseline"] if rec["vs_baseline"] else "-"]
                    + ["%.3f" % ph[x] if x in ph else "-" for x in PHASES])
    print("model %s, batch %d, %d compute threads, %d steps (median), load average %.2f %.2f %.2f"
          % (args.model, args.batch, threads, args.iters, *load))
    print_table(["impl", "dev", "step s", "img/s", "x base"] + PHASES, rows)
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
