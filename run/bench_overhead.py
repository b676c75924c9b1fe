"""`luatorch bench overhead`: framework cost per module call on tiny tensors — Lua (LuaJIT +
FFI, our nn) against Python (PyTorch eager), one thread each, measured in one run.

    luatorch bench overhead [--calls 20000] [--repeat 5] [--json PATH]

On a 1x1x4x4 input the kernels do almost nothing, so the time per call is the framework's own
cost: argument checks, dispatch, result allocation. Ours loops inside Lua (as a Torch7 training
script does); PyTorch's inside Python (as an eager training script does). Reported: microseconds
per forward call and per forward+backward call, the best of `repeat` timed loops of `calls`
calls each. JSON: a list of records {module, pass, ours_us, pytorch_us, ratio} (ratio = ours / PyTorch
time; lower is better for us).
"""
import argparse
import time

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import print_table, write_json

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


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rt = Runtime(threads=1)
    lua = rt.execute(_LUA)
    records = []
    for name, lbuild, tbuild, shape in CASES:
        for backward in (False, True):
            ours = rt.call(lua.time, lbuild, rt.table(*shape), args.calls, args.repeat, backward)
            theirs = time_torch(torch, tbuild, shape, args.calls, args.repeat, backward)
            records.append({"module": name, "pass": "forward+backward" if backward else "forward",
                            "ours_us": round(ours, 3), "pytorch_us": round(theirs, 3),
                            "ratio": round(ours / theirs, 3)})
            print("%-28s %-17s ours %8.2f us  pytorch %8.2f us" % (name, records[-1]["pass"], ours, theirs),
                  flush=True)
    print()
    print_table(["module", "pass", "ours us/call", "pytorch us/call", "ratio"],
                [[r["module"], r["pass"], r["ours_us"], r["pytorch_us"], r["ratio"]] for r in records])
    geo = float(np.exp(np.mean([np.log(r["ratio"]) for r in records])))
    print("\ngeometric mean ratio (ours / PyTorch time per call): %.3f" % geo)
    write_json(args.json, records)
    return 0
