"""`luatorch bench model`: one training step (forward, backward, optim.sgd) of a paper model,
our Lua path against PyTorch eager on the same weights, batch and thread count, in both of PyTorch's
memory formats (NCHW, and channels_last: oneDNN's NHWC/blocked convolutions, what a PyTorch user on a
CPU would pick), iterations interleaved between the three; plus where our time goes, layer by layer.

    luatorch bench model --model resnet50 --batch 16,32 --threads 1,2 [--iters 5] [--json PATH]

Models: resnet18/34/50/101/152 (ImageNet, 224x224), googlenet_bn (224x224), resnet20/56
(CIFAR, 32x32). One JSON record per (batch, threads): model, batch, threads, ours_images_per_s,
pytorch_nchw_images_per_s, pytorch_channels_last_images_per_s (medians), the step times of every
iteration, ratio_nchw and ratio_channels_last (ours / PyTorch images/s), ratio_best (against the faster
PyTorch configuration; `ratio` is kept as ratio_nchw for older readers), loadavg before and after,
and layers (the per-layer table).
"""
import os
import argparse
import time

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import require_torch, median, print_table, write_json

MODELS = {
    "resnet18": ("require('luatorch.models.resnet')({depth = 18, dataset = 'imagenet'})", 224, 1000),
    "resnet34": ("require('luatorch.models.resnet')({depth = 34, dataset = 'imagenet'})", 224, 1000),
    "resnet50": ("require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet'})", 224, 1000),
    "resnet101": ("require('luatorch.models.resnet')({depth = 101, dataset = 'imagenet'})", 224, 1000),
    "resnet152": ("require('luatorch.models.resnet')({depth = 152, dataset = 'imagenet'})", 224, 1000),
    "googlenet_bn": ("require('luatorch.models.googlenet_bn')({nClasses = 1000})", 224, 1000),
    "resnet20": ("require('luatorch.models.resnet')({depth = 20, dataset = 'cifar10'})", 32, 10),
    "resnet56": ("require('luatorch.models.resnet')({depth = 56, dataset = 'cifar10'})", 32, 10),
}

# The Lua training step, as a Torch7 script would write it, and a profiler that
# times every leaf module's three passes for one step.
_LUA = r"""
local M = {}
function M.setup(build)
   require 'nn'; require 'optim'
   torch.setdefaulttensortype('torch.FloatTensor')
   torch.manualSeed(1)
   local model = loadstring('return ' .. build)()
   model:float()
   -- as luatorch train (and PyTorch, whose input needs no gradient): no gradient for the images
   require('luatorch.train.models').skipInputGradient(model)
   local crit = nn.CrossEntropyCriterion():float()
   if torch.typename(model) == 'nn.Sequential' and model:size() == 2 and
      torch.typename(model:get(2)) == 'nn.Concat' then
      crit = nn.ClassNLLCriterion():float()   -- GoogLeNet-BN ends in LogSoftMax
   end
   local params, grads = model:getParameters()
   local state = {learningRate = 0.01, momentum = 0.9, weightDecay = 1e-4}
   return {model = model, crit = crit, params = params, grads = grads, state = state}
end
function M.step(s, x, y)
   local timer = torch.Timer()
   local function feval()
      s.grads:zero()
      local out = s.model:forward(x)
      local loss = s.crit:forward(out, y)
      s.model:backward(x, s.crit:backward(out, y))
      return loss, s.grads
   end
   optim.sgd(feval, s.params, s.state)
   return timer:time().real
end
-- Time each leaf module's passes for one step; returns {name, seconds} rows.
function M.profile(s, x, y)
   local rows, wrapped = {}, {}
   local idx = 0
   s.model:apply(function(m)
      if m.modules then return end
      idx = idx + 1
      local key = string.format('%03d %s', idx, tostring(m):gsub('\n.*', ''))
      rows[key] = 0
      -- backward too: some modules (batch normalization) do both passes in one call of their own; a pass
      -- called from inside another of the same module's is counted once, by the outer one
      local inside = false
      for _, fn in ipairs {'updateOutput', 'updateGradInput', 'accGradParameters', 'backward'} do
         local orig = m[fn]
         wrapped[#wrapped + 1] = {m, fn, rawget(m, fn)}
         m[fn] = function(self, ...)
            if inside then return orig(self, ...) end
            inside = true
            local t = torch.Timer()
            local a, b = orig(self, ...)
            rows[key] = rows[key] + t:time().real
            inside = false
            return a, b
         end
      end
   end)
   local total = M.step(s, x, y)
   for _, w in ipairs(wrapped) do w[1][w[2]] = w[3] end
   local out = {}
   for k, v in pairs(rows) do out[#out + 1] = {k, v} end
   table.sort(out, function(a, b) return a[2] > b[2] end)
   return out, total
end
return M
"""


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench model", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="resnet50", choices=sorted(MODELS))
    p.add_argument("--batch", default="16", help="comma-separated batch sizes")
    p.add_argument("--threads", default="2", help="comma-separated thread counts")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--top", type=int, default=15, help="rows of the per-layer table")
    p.add_argument("--json")
    args = p.parse_args(argv)

    try:
        batches = [int(b) for b in str(args.batch).split(",")]
        thread_counts = [int(t) for t in str(args.threads).split(",")]
    except ValueError:
        p.error("--batch and --threads take comma-separated integers")
    torch = require_torch("luatorch bench model")
    records = [bench_one(torch, args, b, t) for t in thread_counts for b in batches]
    print()
    print_table(["model", "batch", "threads", "ours img/s", "pytorch NCHW", "pytorch channels_last", "ratio NCHW",
                 "ratio channels_last", "ratio best"],
                [[r["model"], r["batch"], r["threads"], r["ours_images_per_s"], r["pytorch_nchw_images_per_s"],
                  r["pytorch_channels_last_images_per_s"], r["ratio_nchw"], r["ratio_channels_last"], r["ratio_best"]]
                 for r in records])
    write_json(args.json, records if len(records) > 1 else records[0])
    return 0


def spread(ts):
    """Images/s of the median step and of the fastest and slowest."""
    return median(ts), min(ts), max(ts)


def bench_one(torch, args, batch, threads):
    from pytorch_bridge.interop import to_torch

    torch.set_num_threads(threads)
    build, size, classes = MODELS[args.model]
    rt = Runtime(threads=threads)
    lua = rt.execute(_LUA)
    s = rt.call(lua.setup, build)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    y = rng.integers(1, classes + 1, batch).astype(np.int64)
    tx, ty = rt.from_numpy(x), rt.from_numpy(y)

    googlenet = args.model == "googlenet_bn"
    loss_fn = torch.nn.functional.nll_loss if googlenet else torch.nn.functional.cross_entropy
    yt = torch.from_numpy(y - 1)

    def torch_step_fn(memory_format):
        net = to_torch(rt, s["model"], np.float32).to(memory_format=memory_format)
        net.train()
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, dampening=0.9, weight_decay=1e-4)
        xt = torch.from_numpy(x).contiguous(memory_format=memory_format)

        def step():
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(net(xt), yt)
            loss.backward()
            opt.step()
            return time.perf_counter() - t0
        return step

    steps = {"ours": lambda: rt.call(lua.step, s, tx, ty), "pytorch_nchw": torch_step_fn(torch.contiguous_format),
             "pytorch_channels_last": torch_step_fn(torch.channels_last)}
    load_before = os.getloadavg()
    for _ in range(args.warmup):
        for fn in steps.values():
            fn()
    times = {k: [] for k in steps}
    for i in range(args.iters):
        # rotate the order each round, so that none of the three always runs right after another
        order = list(steps)[i % 3:] + list(steps)[:i % 3]
        for k in order:
            times[k].append(steps[k]())
        print("%s batch %d, %d threads, iter %d/%d: ours %.3f s, pytorch NCHW %.3f s, channels_last %.3f s"
              % (args.model, batch, threads, i + 1, args.iters, times["ours"][-1], times["pytorch_nchw"][-1],
                 times["pytorch_channels_last"][-1]), flush=True)
    rows, total = rt.call(lua.profile, s, tx, ty)
    layers = [(str(rows[i + 1][1]), float(rows[i + 1][2])) for i in range(len(rows))]

    rec = {"model": args.model, "batch": batch, "threads": threads}
    for k, ts in times.items():
        rec[k + "_images_per_s"] = round(batch / median(ts), 2)
        rec[k + "_step_s"] = [round(t, 4) for t in ts]
    ours = rec["ours_images_per_s"]
    rec["ratio_nchw"] = round(ours / rec["pytorch_nchw_images_per_s"], 3)
    rec["ratio_channels_last"] = round(ours / rec["pytorch_channels_last_images_per_s"], 3)
    rec["ratio_best"] = min(rec["ratio_nchw"], rec["ratio_channels_last"])
    rec["ratio"] = rec["ratio_nchw"]
    rec["pytorch_images_per_s"] = rec["pytorch_nchw_images_per_s"]
    rec["loadavg"] = {"before": [round(v, 2) for v in load_before], "after": [round(v, 2) for v in os.getloadavg()]}
    in_layers = sum(t for _, t in layers)
    rec["layers"] = [{"layer": n, "seconds": round(t, 5), "share": round(t / total, 4)} for n, t in layers]
    print("\n%s batch %d, %d threads: step s median [range]: ours %.3f [%.3f-%.3f], pytorch NCHW %.3f [%.3f-%.3f], "
          "channels_last %.3f [%.3f-%.3f]; load average %s before, %s after"
          % ((args.model, batch, threads) + spread(times["ours"]) + spread(times["pytorch_nchw"])
             + spread(times["pytorch_channels_last"]) + (rec["loadavg"]["before"], rec["loadavg"]["after"])))
    print("where one of our steps goes (profiled step %.3f s; leaf modules %.1f%%, the rest is containers, "
          "criterion, sgd and Lua):" % (total, 100 * in_layers / total))
    print_table(["layer", "ms", "share"], [[n, "%.1f" % (t * 1e3), "%.1f%%" % (100 * t / total)]
                                           for n, t in layers[:args.top]])
    return rec
