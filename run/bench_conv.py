"""Convolution benchmark: SpatialConvolutionMM forward + backward (updateGradInput and
accGradParameters, called from Lua through the FFI) against PyTorch's `F.conv2d`
forward + backward, on ResNet-50's convolution shapes, same thread count, timed
alternately in one run; ours through oneDNN, through im2col + GEMM, or both.

    python -m run.bench_conv [--batch 16] [--threads 2] [--repeat 5] [--layers all|name,...]
                             [--strategy auto|batch|gemm] [--onednn on|off|both]
                             [--onednn-layout auto|plain|blocked] [--json PATH]

Prints (layer, ours ms, pytorch ms (medians), ratio = ours / pytorch, the same ratio of the
fastest runs, GFLOP/s); with `--onednn both` (the default when oneDNN is loaded) "ours" is
oneDNN's and the im2col time and the oneDNN / im2col ratio are added. `--strategy` is im2col's;
`--onednn-layout` oneDNN's (plain NCHW, its blocked layouts with reorders, or the faster per pass).
JSON: a list of records with those fields plus the shape and the largest relative difference
of gradInput/gradWeight between ours (every path run) and PyTorch.
"""
import argparse

import numpy as np

from pytorch_bridge import Runtime
from pytorch_bridge.native import ffi, lib
from run.benchutil import require_torch, interleaved, median, print_table, write_json

# name: (nIn, nOut, k, stride, pad, input size) -- ResNet-50 (fb.resnet.torch) layers
LAYERS = {
    "conv1 7x7/2 3->64 @224": (3, 64, 7, 2, 3, 224),
    "3x3 64->64 @56": (64, 64, 3, 1, 1, 56),
    "1x1 64->256 @56": (64, 256, 1, 1, 0, 56),
    "1x1 256->64 @56": (256, 64, 1, 1, 0, 56),
    "3x3/2 128->128 @56": (128, 128, 3, 2, 1, 56),
    "1x1/2 256->512 @56": (256, 512, 1, 2, 0, 56),
    "3x3 256->256 @14": (256, 256, 3, 1, 1, 14),
    "3x3 512->512 @7": (512, 512, 3, 1, 1, 7),
}
STRATEGIES = {"auto": 0, "batch": 1, "gemm": 2}
LAYOUTS = {"auto": 0, "plain": 1, "blocked": 2}

_LUA_STEP = """
local C = torch.C
return function(x, w, gw, out, gin, fin, fgin, g, k, s, p)
   torch._check(C.lt_nn_SpatialConvolutionMM_updateOutput(x._c, out._c, w._c, nil, fin._c, fgin._c, k, k, s, s, p, p))
   torch._check(C.lt_nn_SpatialConvolutionMM_updateGradInput(x._c, g._c, gin._c, w._c, fin._c, fgin._c, k, k, s, s, p, p))
   torch._check(C.lt_nn_SpatialConvolutionMM_accGradParameters(x._c, g._c, gw._c, nil, fin._c, fgin._c, k, k, s, s, p, p, 1))
end
"""


def measure(rt, name, shape, batch, threads, repeat, paths):
    """paths: the oneDNN switch values to time ours with, [1] (oneDNN), [0] (im2col) or [1, 0]."""
    import torch
    import torch.nn.functional as F

    nin, nout, k, s, p, size = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, nin, size, size), dtype=np.float32)
    w = (rng.standard_normal((nout, nin, k, k), dtype=np.float32) * 0.1).astype(np.float32)
    osz = (size + 2 * p - k) // s + 1
    g = rng.standard_normal((batch, nout, osz, osz), dtype=np.float32)
    gw = np.zeros_like(w)
    step = rt.execute(_LUA_STEP)
    new = rt.eval("function() return torch.FloatTensor() end")
    out, gin, fin, fgin = (rt.call(new) for _ in range(4))
    tx, tw, tg, tgw = rt.from_numpy(x), rt.from_numpy(w), rt.from_numpy(g), rt.from_numpy(gw)

    def ours_with(onednn):
        def ours():
            lib.lt_onednn_set_enabled(onednn)
            rt.call(step, tx, tw, tgw, out, gin, fin, fgin, tg, k, s, p)
        return ours

    X = torch.from_numpy(x).requires_grad_(True)
    W = torch.from_numpy(w.copy()).requires_grad_(True)
    G = torch.from_numpy(g)

    def theirs():
        X.grad = None
        W.grad = None
        y = F.conv2d(X, W, None, stride=s, padding=p)
        y.backward(G)

    torch.set_num_threads(threads)
    *t_paths, t_torch = interleaved([ours_with(v) for v in paths] + [theirs], repeat, warmup=1)
    # same numbers (catches a wrong benchmark, not only a slow one)
    theirs()
    err = 0.0
    for v in paths:
        gw[...] = 0
        ours_with(v)()
        err = max(err, float(np.abs(gw - W.grad.numpy()).max() / np.abs(W.grad.numpy()).max()),
                  float(np.abs(rt.to_numpy(gin) - X.grad.numpy()).max() / np.abs(X.grad.numpy()).max()))
    lib.lt_onednn_set_enabled(1)
    flop = 3 * 2.0 * batch * nout * nin * k * k * osz * osz
    t_ours = t_paths[0]
    mo, mt = median(t_ours), median(t_torch)
    bo, bt = min(t_ours), min(t_torch)
    rec = {"layer": name, "batch": batch, "threads": threads, "nin": nin, "nout": nout, "k": k, "stride": s,
            "pad": p, "size": size, "ours_ms": round(mo * 1e3, 2), "pytorch_ms": round(mt * 1e3, 2),
            "ratio": round(mo / mt, 3), "ours_best_ms": round(bo * 1e3, 2), "pytorch_best_ms": round(bt * 1e3, 2),
            "best_ratio": round(bo / bt, 3), "ours_gflops": round(flop / mo / 1e9, 1),
            "pytorch_gflops": round(flop / mt / 1e9, 1), "max_rel_error": err, "onednn": paths[0] == 1}
    if len(paths) == 2:
        mi = median(t_paths[1])
        rec.update(onednn_ms=rec["ours_ms"], im2col_ms=round(mi * 1e3, 2), onednn_vs_im2col=round(mo / mi, 3),
                   im2col_ratio=round(mi / mt, 3))
    return rec


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench conv", description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--layers", default="all", help="'all' or comma-separated substrings of layer names")
    p.add_argument("--strategy", default="auto", choices=sorted(STRATEGIES))
    p.add_argument("--onednn", choices=["on", "off", "both"],
                   help="time ours through oneDNN, im2col + GEMM, or both (default: both when oneDNN is loaded)")
    p.add_argument("--onednn-layout", default="auto", choices=sorted(LAYOUTS),
                   help="oneDNN's layouts: Torch7's plain ones, its own blocked ones with reorders around each "
                   "call, or the faster per layer and pass, timed on the first call (default)")
    p.add_argument("--json", help="write the records as JSON here")
    args = p.parse_args(argv)
    require_torch("luatorch bench conv")   # before any work: the whole table is a comparison
    rt = Runtime(threads=args.threads)
    onednn = args.onednn or ("both" if lib.lt_onednn_loaded() else "off")
    if onednn != "off" and not lib.lt_onednn_loaded():
        print("luatorch bench conv: --onednn %s, but oneDNN is not loaded (%s): install onednn-cpu-gomp or use "
              "--onednn off" % (onednn, ffi.string(lib.lt_onednn_info()).decode()))
        return 2
    paths = {"on": [1], "off": [0], "both": [1, 0]}[onednn]
    lib.lt_onednn_set_layout(LAYOUTS[args.onednn_layout])
    rt.call(rt.eval("function(s) return torch.C.lt_nn_conv_set_strategy(s) end"), STRATEGIES[args.strategy])
    names = list(LAYERS) if args.layers == "all" else [n for n in LAYERS if any(s in n for s in args.layers.split(","))]
    records = [measure(rt, n, LAYERS[n], args.batch, args.threads, args.repeat, paths) for n in names]
    print("batch %d, %d threads, ours: %s (oneDNN layout %s, im2col strategy %s); fwd+bwd (gradInput + gradWeight)"
          % (args.batch, args.threads, {"on": "oneDNN", "off": "im2col", "both": "oneDNN and im2col"}[onednn],
             args.onednn_layout, args.strategy))
    head = ["layer", "ours ms", "pytorch ms", "ratio", "best-of ratio", "ours GFLOP/s", "pytorch GFLOP/s"]
    rows = [[r["layer"], r["ours_ms"], r["pytorch_ms"], r["ratio"], r["best_ratio"], r["ours_gflops"],
             r["pytorch_gflops"]] for r in records]
    if onednn == "both":
        head += ["im2col ms", "oneDNN / im2col"]
        rows = [row + [r["im2col_ms"], r["onednn_vs_im2col"]] for row, r in zip(rows, records)]
    print_table(head, rows)
    tot_o, tot_t = sum(r["ours_ms"] for r in records), sum(r["pytorch_ms"] for r in records)
    print("total: ours %.1f ms, pytorch %.1f ms, ratio %.2f" % (tot_o, tot_t, tot_o / tot_t))
    if onednn == "both":
        tot_i = sum(r["im2col_ms"] for r in records)
        print("total: im2col %.1f ms, ratio %.2f; oneDNN / im2col %.2f" % (tot_i, tot_i / tot_t, tot_o / tot_i))
    write_json(args.json, records)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
