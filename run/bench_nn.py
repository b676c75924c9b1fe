"""`luatorch bench nn`: forward + backward of nn's heavy layers (beyond the ResNet ones of `bench conv`)
against PyTorch eager on the CPU, the same weights, the same thread count, timed alternately in one run.

    luatorch bench nn [--threads 2] [--repeat 7] [--layers all|substring,...] [--json PATH]

Each layer: ours is `m:forward(x); m:zeroGradParameters(); m:backward(x, g)` on the Lua module (float32);
PyTorch's is `m(x).backward(g)` on the equivalent torch.nn module with the Lua module's weights copied in.
The two are checked to agree first (output and gradInput, relative error), then timed in interleaved rounds.
Printed: medians with [min-max] over rounds, ratio = ours / PyTorch time (below 1: we are faster), and the
load average before and after. JSON: one record per layer with those fields.
"""
import argparse
import os

import numpy as np

from pytorch_bridge import Runtime
from run.benchutil import interleaved, median, print_table, require_torch, write_json

# name: (Lua constructor, PyTorch constructor, input shape, integer input's range or None)
LAYERS = {
    "SpatialFullConvolution 4x4/2 256->128 @16 (DCGAN)": (
        "nn.SpatialFullConvolution(256, 128, 4, 4, 2, 2, 1, 1)",
        lambda nn: nn.ConvTranspose2d(256, 128, 4, 2, 1), (16, 256, 16, 16), None),
    "SpatialFullConvolution 4x4/2 128->64 @32 (DCGAN)": (
        "nn.SpatialFullConvolution(128, 64, 4, 4, 2, 2, 1, 1)",
        lambda nn: nn.ConvTranspose2d(128, 64, 4, 2, 1), (16, 128, 32, 32), None),
    "SpatialCrossMapLRN 5 @96x27x27 (AlexNet/VGG)": (
        "nn.SpatialCrossMapLRN(5, 1e-4, 0.75, 1)",
        lambda nn: nn.LocalResponseNorm(5, 1e-4, 0.75, 1), (16, 96, 27, 27), None),
    "VolumetricConvolution 3x3x3 16->32 @8x28x28": (
        "nn.VolumetricConvolution(16, 32, 3, 3, 3, 1, 1, 1, 1, 1, 1)",
        lambda nn: nn.Conv3d(16, 32, 3, 1, 1), (4, 16, 8, 28, 28), None),
    "SpatialDilatedConvolution 3x3 d2 64->64 @32": (
        "nn.SpatialDilatedConvolution(64, 64, 3, 3, 1, 1, 2, 2, 2, 2)",
        lambda nn: nn.Conv2d(64, 64, 3, 1, 2, dilation=2), (16, 64, 32, 32), None),
    "LookupTable 10000x300, 64x32 indices (word2vec)": (
        "nn.LookupTable(10000, 300)",
        lambda nn: nn.Embedding(10000, 300), (64, 32), 10000),
}

_LUA = """
require 'nn'
torch.setdefaulttensortype('torch.FloatTensor')
local M = {}
function M.build(expr, seed) torch.manualSeed(seed); return loadstring('return ' .. expr)():float() end
function M.step(m, x, g)
   m:forward(x)
   m:zeroGradParameters()
   m:backward(x, g)
end
function M.forward(m, x) return m:forward(x) end
function M.backward(m, x, g) m:zeroGradParameters(); return m:backward(x, g) end
return M
"""


def _copy_weights(rt, lua_mod, torch_mod, torch):
    for name in ("weight", "bias"):
        lua_t = rt.eval("function(m, k) return m[k] end")
        t = rt.call(lua_t, lua_mod, name)
        theirs = getattr(torch_mod, name, None)
        if t is None or theirs is None:
            continue
        with torch.no_grad():
            theirs.copy_(torch.from_numpy(rt.to_numpy(t).copy()).reshape(theirs.shape))


def measure(rt, lua, torch, name, repeat, rng):
    expr, build, shape, index_range = LAYERS[name]
    m = rt.call(lua.build, expr, 1)
    tm = build(torch.nn)
    _copy_weights(rt, m, tm, torch)
    if index_range:
        idx = rng.integers(0, index_range, shape)
        x = rt.from_numpy((idx + 1).astype(np.int64))       # Torch7's indices are 1-based
        tx = torch.from_numpy(idx.astype(np.int64))
    else:
        xa = rng.standard_normal(shape, dtype=np.float32)
        x, tx = rt.from_numpy(xa), torch.from_numpy(xa.copy()).requires_grad_(True)
    out = rt.to_numpy(rt.call(lua.forward, m, x)).copy()
    g = rng.standard_normal(out.shape, dtype=np.float32)
    lg, tg = rt.from_numpy(g), torch.from_numpy(g.copy())
    theirs = tm(tx)
    theirs.backward(tg)
    out_err = float(np.abs(out - theirs.detach().numpy()).max() / (np.abs(out).max() + 1e-12))
    gin_err = None
    if not index_range:
        gin = rt.to_numpy(rt.call(lua.backward, m, x, lg))
        gin_err = float(np.abs(gin - tx.grad.numpy()).max() / (np.abs(gin).max() + 1e-12))

    def ours():
        rt.call(lua.step, m, x, lg)

    def pytorch():
        tm.zero_grad(set_to_none=False)
        if tx.grad is not None:
            tx.grad = None
        tm(tx).backward(tg)

    o, t = interleaved([ours, pytorch], repeat)
    o_ms, t_ms = [v * 1e3 for v in o], [v * 1e3 for v in t]
    ratios = [a / b for a, b in zip(o_ms, t_ms)]
    return {"layer": name, "shape": list(shape), "ours_ms": round(median(o_ms), 3),
            "ours_ms_range": [round(min(o_ms), 3), round(max(o_ms), 3)], "pytorch_ms": round(median(t_ms), 3),
            "pytorch_ms_range": [round(min(t_ms), 3), round(max(t_ms), 3)], "ratio": round(median(ratios), 3),
            "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)], "output_rel_err": out_err,
            "grad_input_rel_err": gin_err}


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench nn", description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7, help="interleaved rounds per layer")
    p.add_argument("--layers", default="all", help="'all' or comma-separated substrings of layer names")
    p.add_argument("--json", help="write the records as JSON here")
    args = p.parse_args(argv)
    if args.threads < 1 or args.repeat < 1:
        p.error("--threads and --repeat must be >= 1")
    torch = require_torch("luatorch bench nn")
    torch.set_num_threads(args.threads)
    names = list(LAYERS) if args.layers == "all" else [n for n in LAYERS if any(s in n for s in args.layers.split(","))]
    if not names:
        p.error("--layers %r matches none of: %s" % (args.layers, "; ".join(LAYERS)))
    rt = Runtime(threads=args.threads)
    lua = rt.execute(_LUA)
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()
    records = []
    for n in names:
        records.append(measure(rt, lua, torch, n, args.repeat, rng))
        r = records[-1]
        print("%-50s ours %9.2f ms  pytorch %9.2f ms  ratio %.2f" % (n, r["ours_ms"], r["pytorch_ms"], r["ratio"]),
              flush=True)
    load_after = os.getloadavg()
    for r in records:
        r["threads"], r["loadavg_before"], r["loadavg_after"] = args.threads, list(load_before), list(load_after)
    print()
    print_table(["layer", "ours ms [range]", "pytorch ms [range]", "ratio [range]", "out err", "gradIn err"],
                [[r["layer"], "%.2f [%.2f-%.2f]" % (r["ours_ms"], *r["ours_ms_range"]),
                  "%.2f [%.2f-%.2f]" % (r["pytorch_ms"], *r["pytorch_ms_range"]),
                  "%.2f [%.2f-%.2f]" % (r["ratio"], *r["ratio_range"]), "%.1e" % r["output_rel_err"],
                  "-" if r["grad_input_rel_err"] is None else "%.1e" % r["grad_input_rel_err"]] for r in records])
    print("%d threads, %d interleaved rounds; load average before %s, after %s" % (
        args.threads, args.repeat, ", ".join("%.2f" % v for v in load_before),
        ", ".join("%.2f" % v for v in load_after)))
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
