"""`luatorch bench model`: one training step (forward, backward, optim.sgd) of a paper model,
our Lua path against PyTorch eager on the same weights, batch and thread count, iterations
alternating between the two; plus where our time goes, layer by layer.

    luatorch bench model --model resnet50 --batch 16 --threads 2 [--iters 5] [--json PATH]

Models: resnet18/34/50/101/152 (ImageNet, 224x224), googlenet_bn (224x224), resnet20/56
(CIFAR, 32x32). JSON keys: model, batch, threads, ours_images_per_s, pytorch_images_per_s,
ratio (ours / PyTorch images/s), plus layers (the per-layer table).
"""
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
      for _, fn in ipairs {'updateOutput', 'updateGradInput', 'accGradParameters'} do
         local orig = m[fn]
         wrapped[#wrapped + 1] = {m, fn, rawget(m, fn)}
         m[fn] = function(self, ...)
            local t = torch.Timer()
            local a, b = orig(self, ...)
            rows[key] = rows[key] + t:time().real
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
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--top", type=int, default=15, help="rows of the per-layer table")
    p.add_argument("--json")
    args = p.parse_args(argv)

    torch = require_torch("luatorch bench model")

    from pytorch_bridge.interop import to_torch

    torch.set_num_threads(args.threads)
    build, size, classes = MODELS[args.model]
    rt = Runtime(threads=args.threads)
    lua = rt.execute(_LUA)
    s = rt.call(lua.setup, build)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 3, size, size)).astype(np.float32)
    y = rng.integers(1, classes + 1, args.batch).astype(np.int64)
    tx, ty = rt.from_numpy(x), rt.from_numpy(y)

    net = to_torch(rt, s["model"], np.float32)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, dampening=0.9, weight_decay=1e-4)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y - 1)
    googlenet = args.model == "googlenet_bn"
    loss_fn = torch.nn.functional.nll_loss if googlenet else torch.nn.functional.cross_entropy

    def torch_step():
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(net(xt), yt)
        loss.backward()
        opt.step()
        return time.perf_counter() - t0

    for _ in range(args.warmup):
        rt.call(lua.step, s, tx, ty)
        torch_step()
    ours, theirs = [], []
    for i in range(args.iters):
        ours.append(rt.call(lua.step, s, tx, ty))
        theirs.append(torch_step())
        print("iter %d/%d: ours %.3f s, pytorch %.3f s" % (i + 1, args.iters, ours[-1], theirs[-1]), flush=True)
    rows, total = rt.call(lua.profile, s, tx, ty)
    layers = [(str(rows[i + 1][1]), float(rows[i + 1][2])) for i in range(len(rows))]

    rec = {"model": args.model, "batch": args.batch, "threads": args.threads,
           "ours_images_per_s": round(args.batch / median(ours), 2),
           "pytorch_images_per_s": round(args.batch / median(theirs), 2)}
    rec["ratio"] = round(rec["ours_images_per_s"] / rec["pytorch_images_per_s"], 3)
    rec["ours_step_s"] = [round(t, 4) for t in ours]
    rec["pytorch_step_s"] = [round(t, 4) for t in theirs]
    in_layers = sum(t for _, t in layers)
    rec["layers"] = [{"layer": n, "seconds": round(t, 5), "share": round(t / total, 4)} for n, t in layers]
    print()
    print_table(["model", "batch", "threads", "ours img/s", "pytorch img/s", "ratio"],
                [[rec["model"], rec["batch"], rec["threads"], rec["ours_images_per_s"], rec["pytorch_images_per_s"],
                  rec["ratio"]]])
    print("\nwhere one of our steps goes (profiled step %.3f s; leaf modules %.1f%%, the rest is containers, "
          "criterion, sgd and Lua):" % (total, 100 * in_layers / total))
    print_table(["layer", "ms", "share"], [[n, "%.1f" % (t * 1e3), "%.1f%%" % (100 * t / total)]
                                           for n, t in layers[:args.top]])
    write_json(args.json, rec)
    return 0
