"""`luatorch simulate train`: the paper's training iteration at its own scale (Kumar et al. 2017: Minsky
nodes, 4 P100 each, EDR InfiniBand), a timeline per node whose inter-node allreduces are simulated with
SimGrid's SMPI on the same machinery as `luatorch simulate allreduce`.

    luatorch simulate train --platform minsky --nodes 8,16,32,64 --model resnet50,googlenet \\
        [--beyond 32,64,256] [--out docs/results/paper-scale.md] [--json PATH]

Per iteration and node (one MPI rank driving 4 GPUs through DataParallelTable, as the paper): forward and
backward on the P100 (published throughput, split by FLOPs over our models' layers), the gradient in
buckets cut as our optimized DataParallelTable cuts it (top-level children, >= 2^20 elements), the
intra-node reduction over NVLink, device/host copies, the inter-node allreduce (simulated: its time for
each bucket's or the whole gradient's size at N ranks on the platform), the SGD update, and data loading
from a parallel file system or from memory. Three optimizations, each on or off: in-memory data, the
multi-color allreduce (vs Open MPI's, SMPI's copy of its selector), the optimized DataParallelTable (one
job per device, buckets reduced and allreduced while the backward runs) vs Torch7's (two dispatch rounds,
serial input copies, reduce + allreduce after the backward). Every assumption is in PARAMS (the table of
docs/results/paper-scale.md); --set NAME=VALUE changes one.
"""
import argparse
import hashlib
import json
import math
import os
import sys
import time

from run import simulate
from run.simulate import SimulateError, fail

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES_PER_EPOCH = 1281167  # ImageNet-1k training set
BUCKET_ELEMENTS = 2 ** 20   # lua/cunn/DataParallelOptimized.lua: opts.size's default

# The models as luatorch builds them (run/bench_model.py's constructors; 224x224 inputs, 1000 classes).
MODELS = {
    "resnet50": "require('luatorch.models.resnet')({depth = 50, dataset = 'imagenet'})",
    "googlenet": "require('luatorch.models.googlenet_bn')({nClasses = 1000})",
}

# Every number the model uses: value, unit, meaning, and where it comes from ([R] a retrieved source,
# [K] background knowledge not retrieved here, [A] assumed; docs/results/paper-scale.md explains each).
PARAMS = {
    "gpus_per_node": (4, "", "P100 per node, driven by one process (DataParallelTable)",
                      "[R] IBM Redbook REDP-5405 (S822LC for HPC: 4 Tesla P100 SXM2); the paper: 32 nodes, 128 GPUs"),
    "batch_per_gpu": (32, "images", "mini-batch per GPU",
                      "[A] not in the recovered text; Goyal et al.'s 32 per GPU (8192 at 256 GPUs)"),
    "resnet50_img_s": (195.0, "img/s", "one P100, ResNet-50 fp32 training at batch 32",
                       "[R] tensorflow.org/performance/benchmarks (2017, DGX-1 P100 SXM2, synthetic data, batch 32)"),
    "googlenet_efficiency": (1.0, "", "GoogLeNet-BN's FLOP/s on the P100 relative to ResNet-50's",
                             "[A] time = ResNet-50's x FLOP ratio of our models (bracket: NV-Caffe GoogLeNet without "
                             "BN 468 img/s on a PCIe P100, Dell EMC HPC blog Oct 2016)"),
    "host_gpu_GBps": (32.0, "GB/s", "host<->GPU copy per direction (NVLink 1.0, 2 links)",
                      "[R] Redbook: 40 GB/s GPU-CPU in its figure; [A] 80% of 2 x 20 GB/s reached"),
    "nccl_GBps": (15.0, "GB/s", "NCCL 1.x reduce / broadcast over the node's 4 GPUs (bus bandwidth)",
                  "[A] GPU pairs on NVLink within a socket, the ring's cross-socket hop through the hosts' X-bus"),
    "hbm_GBps": (500.0, "GB/s", "GPU memory bandwidth reached by the SGD update and zeroing",
                 "[K] P100 HBM2 732 GB/s peak; [A] 70% of it"),
    "sgd_passes": (5, "x gradient bytes", "memory traffic of an SGD step with momentum and weight decay",
                   "[A] read params, grads, momentum; write momentum, params"),
    "dispatch_ms": (1.0, "ms", "one Lua-threads dispatch + synchronize round over 4 GPU threads",
                    "[A] closure serialization + 4 job posts + barrier (our CPU DPT: a few ms per round on a loaded 2-core box)"),
    "loader_threads": (8, "", "data-loader threads per node (fb.resnet.torch -nThreads)",
                       "[K] fb.resnet.torch's README runs ImageNet with -nThreads 8"),
    "decode_ms": (6.0, "ms", "CPU time per image: JPEG decode + random-sized crop, jitter, lighting, flip",
                  "[A] one POWER8 core, a 500x375 JPEG of about 110 KB"),
    "fs_read_ms": (10.0, "ms", "per-image open + read from the shared parallel file system (GPFS)",
                   "[A] small-file read latency under a cluster-wide load of about 20k files/s"),
    "mem_read_ms": (0.05, "ms", "per-image read from the in-memory store",
                    "[A] a 110 KB memcpy plus index lookup"),
    "overlap": (1, "0/1", "the optimized DataParallelTable allreduces buckets while the backward runs",
                "[A] 1 as our implementation (lua/cunn/DataParallelOptimized.lua); 0: after the backward, a reading "
                "of the paper in which the allreduce stays exposed"),
    "mpi_slowdown": (1.0, "x", "factor on the simulated times of the MPI library's own allreduce",
                     "[A] 1: SMPI's copy of the algorithm; our 4-host validation measured MPICH 1.2-2.1x slower"),
}


def defaults():
    return {k: v[0] for k, v in PARAMS.items()}


# ---------------------------------------------------------------- models

_PROFILE_LUA = r"""
return function(build)
   require 'nn'
   torch.setdefaulttensortype('torch.FloatTensor')
   local model = loadstring('return ' .. build)()
   model:float()
   model:evaluate()
   model:forward(torch.FloatTensor(1, 3, 224, 224):zero())
   local first = true
   local lines = {}
   for j, child in ipairs(model.modules) do
      local params, fwd, bwd = 0, 0, 0
      child:apply(function(m)
         if m.modules then return end
         for _, t in ipairs(m:parameters() or {}) do params = params + t:nElement() end
         local f = 0
         if m.nInputPlane and m.kW and m.output:dim() == 4 then   -- convolutions
            local o = m.output
            f = 2 * o:size(2) * o:size(3) * o:size(4) * m.nInputPlane / (m.groups or 1) * m.kW * m.kH
         elseif torch.typename(m):find('Linear') then
            f = 2 * m.weight:size(1) * m.weight:size(2)
         end
         fwd = fwd + f
         -- gradWeight costs a forward; gradInput another, except the first layer's (fb.resnet.torch sets
         -- its gradInput to nil)
         if f > 0 then bwd = bwd + (first and f or 2 * f); first = false end
      end)
      lines[#lines + 1] = string.format('%d %s %d %.17g %.17g', j, torch.typename(child), params, fwd, bwd)
   end
   return table.concat(lines, '\n')
end
"""


def model_profile(name):
    """{model, children: [{index, type, params, forward_flops, backward_flops}]} of one image, from the
    luatorch model (a forward at batch 1 gives every layer's output size); cached by the model sources."""
    if name not in MODELS:
        raise SimulateError("unknown model %r: one of %s" % (name, ", ".join(sorted(MODELS))))
    h = hashlib.sha256(MODELS[name].encode() + _PROFILE_LUA.encode())
    for sub in ("resnet.lua", "googlenet_bn.lua"):
        with open(os.path.join(ROOT, "lua", "luatorch", "models", sub), "rb") as f:
            h.update(f.read())
    path = os.path.join(simulate.cache_dir(), "models", "%s-%s.json" % (name, h.hexdigest()[:12]))
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    from pytorch_bridge import Runtime

    rt = Runtime(threads=1)
    text = rt.call(rt.execute(_PROFILE_LUA), MODELS[name])
    children = []
    for line in str(text).splitlines():
        j, typ, params, fwd, bwd = line.split()
        children.append({"index": int(j), "type": typ, "params": int(params), "forward_flops": float(fwd),
                         "backward_flops": float(bwd)})
    prof = {"model": name, "children": children}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(prof, f, indent=1)
    return prof


def buckets(children, min_elements=BUCKET_ELEMENTS):
    """The optimized DataParallelTable's buckets in backward order: walking the top-level children from
    the last, a bucket closes at the first child (with parameters) that makes it >= min_elements; the
    first child's bucket takes what is left. [{first, last, elements, backward_flops}] (child indices)."""
    out, elems, flops, last = [], 0, 0.0, None
    with_params = [c for c in children if c["params"] > 0]
    for c in reversed(children):
        last = c["index"] if last is None else last
        elems += c["params"]
        flops += c["backward_flops"]
        is_first = bool(with_params) and c["index"] == with_params[0]["index"]
        if c["params"] and (elems >= min_elements or is_first):
            out.append({"first": c["index"], "last": last, "elements": elems, "backward_flops": flops})
            elems, flops, last = 0, 0.0, None
    if flops and out:   # parameter-less children before the first one with parameters
        out[-1]["backward_flops"] += flops
    return out


def timing_spec(prof, hw):
    """Seconds on one P100 for batch_per_gpu images: forward, and backward per bucket (backward order)."""
    resnet = model_profile("resnet50") if prof["model"] != "resnet50" else prof
    flops = lambda p: sum(c["forward_flops"] + c["backward_flops"] for c in p["children"])
    step = hw["batch_per_gpu"] / hw["resnet50_img_s"]           # ResNet-50's fwd+bwd time
    per_flop = step / flops(resnet)
    if prof["model"] != "resnet50":
        per_flop /= hw["googlenet_efficiency"]
    fwd = per_flop * sum(c["forward_flops"] for c in prof["children"])
    bks = [{"bytes": 4 * b["elements"], "backward_s": per_flop * b["backward_flops"]} for b in buckets(prof["children"])]
    return {"model": prof["model"], "forward_s": fwd, "buckets": bks,
            "param_bytes": 4 * sum(c["params"] for c in prof["children"]),
            "input_bytes_per_gpu": hw["batch_per_gpu"] * 3 * 224 * 224 * 4}


# ------------------------------------------------------------ iteration

def iteration(spec, hw, nodes, data, dpt, allreduce_s, flat=False):
    """Seconds of one training iteration on every node, and its parts.

    spec: timing_spec's dict; data: 'fs' | 'memory'; dpt: 'baseline' | 'optimized';
    allreduce_s(nbytes): the inter-node allreduce's seconds among `nodes` ranks (unused at 1 node).
    flat (optimized only): one rank per GPU, no intra-node reduction; allreduce_s is then the allreduce
    over all GPUs, and every GPU updates its own parameters (nothing to broadcast)."""
    g, M, x = hw["gpus_per_node"], spec["param_bytes"], spec["input_bytes_per_gpu"]
    nccl, link, hbm = hw["nccl_GBps"] * 1e9, hw["host_gpu_GBps"] * 1e9, hw["hbm_GBps"] * 1e9
    dispatch = hw["dispatch_ms"] / 1e3
    fwd = spec["forward_s"]
    bwd = sum(b["backward_s"] for b in spec["buckets"])
    inter = nodes > 1
    update = hw["sgd_passes"] * M / hbm
    parts = {}
    if dpt == "baseline":
        # Torch7: syncParameters (NCCL bcast), serial input copies, two exec+synchronize rounds, nccl.reduce
        # onto GPU 1, serial zeroing of the others, then the host allreduce of the whole gradient
        parts["setup"] = M / nccl + g * x / link + 2 * dispatch
        parts["forward"] = fwd
        parts["backward"] = bwd
        parts["intra_reduce"] = M / nccl + (g - 1) * M / hbm
        parts["allreduce"] = allreduce_s(M) if inter else 0.0
        parts["copies"] = 2 * M / link if inter else 0.0
        parts["update"] = update
        compute = sum(parts.values())
    elif dpt == "optimized":
        # one job per device: its own lazy parameter copy, its input slice (in parallel), forward, backward;
        # each bucket, once its layers' backward is done: reduced onto GPU 1 (one NCCL stream), copied to the
        # host, allreduced (one at a time, in order), copied back; the update waits for the last
        intra = 0.0 if flat else 1.0 / nccl
        start = M * intra + x / link + dispatch
        clock = start + fwd
        intra_free = net_free = done = clock
        end_backward = clock + bwd
        for b in spec["buckets"]:
            clock += b["backward_s"]
            ready = clock if hw["overlap"] else end_backward
            intra_free = max(ready, intra_free) + b["bytes"] * intra
            if inter:
                net_free = max(intra_free + b["bytes"] / link, net_free) + allreduce_s(b["bytes"])
                done = net_free + b["bytes"] / link
            else:
                done = intra_free
        parts["setup"] = start
        parts["forward"] = fwd
        parts["backward"] = bwd
        parts["exposed_communication"] = max(0.0, done - clock)
        parts["update"] = update
        compute = sum(parts.values())
    else:
        raise SimulateError("dpt must be 'baseline' or 'optimized' (got %r)" % dpt)
    if data not in ("fs", "memory"):
        raise SimulateError("data must be 'fs' or 'memory' (got %r)" % data)
    per_image = hw["decode_ms"] + (hw["fs_read_ms"] if data == "fs" else hw["mem_read_ms"])
    # the loader threads prefetch the next batch while this one computes: only the excess shows
    loader = g * hw["batch_per_gpu"] * per_image / 1e3 / hw["loader_threads"]
    parts["data_wait"] = max(0.0, loader - compute)
    return {"iteration_s": compute + parts["data_wait"], "parts": parts, "loader_s": loader}


def iterations_per_epoch(hw, nodes):
    return math.ceil(IMAGES_PER_EPOCH / (nodes * hw["gpus_per_node"] * hw["batch_per_gpu"]))


# ------------------------------------------------------------- simulation

class AllreduceTimes:
    """Simulated allreduce seconds by (algorithm, ranks, ranks per host, bytes) on one platform: SMPI runs
    through `luatorch simulate allreduce`'s machinery, one launch per (algorithm, ranks), results cached."""

    def __init__(self, platform, cfg=(), quiet=False, cache=True):
        self.platform = simulate.platform_path(platform)
        with open(self.platform, "rb") as f:
            # the launch settings are part of the key: times simulated under other ones are not reused
            key = hashlib.sha256(f.read() + json.dumps(list(cfg) + simulate.NETWORK_ONLY_CFG).encode())
        self.path = os.path.join(simulate.cache_dir(), "train-allreduce-%s.json" % key.hexdigest()[:12])
        self.cfg, self.quiet = list(cfg), quiet
        self.times = {}
        if cache and os.path.exists(self.path):
            with open(self.path) as f:
                self.times = {tuple(json.loads(k)): v for k, v in json.load(f).items()}
        self.walls = []   # (algorithm, ranks, per host, sizes, wall seconds) of each launch made here

    def prefetch(self, algorithm, ranks, sizes, per_host=1):
        sizes = sorted({s for s in sizes if (algorithm, ranks, per_host, s) not in self.times})
        if not sizes:
            return
        argv = ["--platform", self.platform, "--np", str(ranks), "--ranks-per-host", str(per_host),
                "--sizes", ",".join(map(str, sizes)), "--algorithms", algorithm, "--iters", "1", "--warmup", "0",
                "--verify-mib", "0", "--quiet", "--network-only",
                # mallocs above 1 MiB in code built with smpicc (the driver, ours) shared; SMPI's own
                # algorithms' temporaries are not (see SMPI_PRIVATE_BYTES_MAX)
                "--cfg", "smpi/auto-shared-malloc-thresh:1048576"]
        for c in self.cfg:
            argv += ["--cfg", c]
        t0 = time.monotonic()
        recs = simulate.run_allreduce(simulate.parser().parse_args(argv))
        wall = time.monotonic() - t0
        self.walls.append((algorithm, ranks, per_host, sizes, wall))
        if not self.quiet:
            print("# simulated %s at %d ranks (%d per host), %d sizes: %.1f s wall" % (
                algorithm, ranks, per_host, len(sizes), wall), file=sys.stderr, flush=True)
        for r in recs:
            self.times[(algorithm, ranks, per_host, r["bytes"])] = r["time_us_median"] * 1e-6
        self.save()

    def save(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        merged = {}
        if os.path.exists(self.path):   # another run may have added entries meanwhile
            with open(self.path) as f:
                merged = json.load(f)
        merged.update({json.dumps(list(k)): v for k, v in self.times.items()})
        tmp = self.path + ".%d.tmp" % os.getpid()
        with open(tmp, "w") as f:
            json.dump(merged, f)
        os.replace(tmp, self.path)

    def get(self, algorithm, ranks, nbytes, per_host=1):
        key = (algorithm, ranks, per_host, nbytes)
        if key not in self.times:
            self.prefetch(algorithm, ranks, [nbytes], per_host)
        return self.times[key]


def needed_sizes(spec):
    return [spec["param_bytes"]] + [b["bytes"] for b in spec["buckets"]]


# --------------------------------------------------------------- report

CONFIGS = [(data, ar, dpt) for dpt in ("baseline", "optimized") for ar in ("mpi", "ours") for data in ("fs", "memory")]
PAPER = {  # simulation.md's list of the paper's figures (reading of "speed-up": optimized / baseline - 1)
    "speedup": {"resnet50": (110, 130), "googlenet": (58, 72)},
    "multicolor_gain": (15, 18),
    "minutes_90_epochs_256_gpus": 48,
}
BEGIN, END = "<!-- simulate train: begin -->", "<!-- simulate train: end -->"


def config_label(data, ar, dpt, ours="multicolor"):
    on = [n for n, flag in (("memory", data == "memory"), (ours, ar == "ours"), ("DPT", dpt == "optimized"))
          if flag]
    return "+".join(on) if on else "baseline (all off)"


class Scenario:
    """Iterations of one model under one set of assumptions, on simulated allreduce times."""

    def __init__(self, model, hw, times, ours, mpi):
        self.spec = timing_spec(model_profile(model), hw)
        self.hw, self.times, self.ours, self.mpi = hw, times, ours, mpi

    def run(self, nodes, data, ar, dpt, algorithm=None, flat=False):
        alg = algorithm or (self.ours if ar == "ours" else self.mpi)
        ranks = nodes * self.hw["gpus_per_node"] if flat else nodes
        per_host = self.hw["gpus_per_node"] if flat else 1
        factor = self.hw["mpi_slowdown"] if alg.startswith("mpi") else 1.0
        fn = lambda nbytes: factor * self.times.get(alg, ranks, nbytes, per_host)
        it = iteration(self.spec, self.hw, nodes, data, dpt, fn, flat=flat)
        it["epoch_s"] = it["iteration_s"] * iterations_per_epoch(self.hw, nodes)
        return it

    def epoch(self, nodes, config, **kw):
        return self.run(nodes, *config, **kw)["epoch_s"]

    def speedup(self, nodes):
        return 100 * (self.epoch(nodes, ("fs", "mpi", "baseline")) / self.epoch(nodes, ("memory", "ours", "optimized")) - 1)

    def multicolor_gain(self, nodes, dpt="optimized"):
        return 100 * (1 - self.epoch(nodes, ("memory", "ours", dpt)) / self.epoch(nodes, ("memory", "mpi", dpt)))

    def minutes_90(self, nodes):
        return 90 * self.epoch(nodes, ("memory", "ours", "optimized")) / 60


def off_by(value, target):
    """Percent from a paper figure (a number or a (low, high) range; 0 inside the range)."""
    lo, hi = target if isinstance(target, tuple) else (target, target)
    ref = lo if value < lo else hi if value > hi else value
    return 100 * (value / ref - 1) if ref else 0.0


def fmt_range(t):
    return "%g-%g %%" % t if isinstance(t, tuple) else "%g" % t


def _memory_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 << 30


# SMPI's own collectives (mpi:*) keep a private temporary of about the message's size on every rank
# (plain heap memory: smpi/auto-shared-malloc-thresh shares only the mallocs of code built with smpicc;
# 64 ranks x 97.5 MiB of mpi:ompi took 6.4 GB more anonymous memory, 2026-12-02), so ranks x bytes must
# fit in memory: above this, the size is left out (its cells show '-'). Ours share their scratch.
SMPI_PRIVATE_BYTES_MAX = 0.7 * _memory_bytes()


def simulation_plan(args, hw, models, nodes, beyond, flat):
    """{(algorithm, ranks, ranks per host): sorted sizes} the report needs, every model's sizes together so
    that each (algorithm, ranks) is one launch: the paper's node counts for ours and the MPI library's
    (buckets and whole gradient), the beyond node counts for the beyond algorithms (buckets and whole
    gradient; above 64 nodes only with --large), the flat ring's buckets (above 128 ranks only with --large).
    An SMPI algorithm's sizes whose ranks x bytes exceed SMPI_PRIVATE_BYTES_MAX are left out."""
    ours, mpi = args.allreduce, args.baseline_allreduce
    plan = {}

    def add(alg, ranks, sizes, per_host=1):
        if alg.startswith("mpi:"):
            sizes = [s for s in sizes if ranks * s <= SMPI_PRIVATE_BYTES_MAX]
        if sizes:
            plan.setdefault((alg, ranks, per_host), set()).update(sizes)

    for m in models:
        spec = timing_spec(model_profile(m), hw)
        for n in nodes:
            if n > 1:
                for alg in (ours, mpi):
                    add(alg, n, needed_sizes(spec))
        for n in beyond:
            if n <= 64 or args.large:
                for alg in beyond_algorithms(args, n):
                    add(alg, n, needed_sizes(spec))
        for n in flat:
            if n * hw["gpus_per_node"] <= 128 or args.large:
                add("ring", n * hw["gpus_per_node"], [b["bytes"] for b in spec["buckets"]], hw["gpus_per_node"])
    return {k: sorted(v) for k, v in plan.items()}


def build_report(args, hw, models, nodes, beyond, flat, times):
    ours, mpi = args.allreduce, args.baseline_allreduce
    for (alg, ranks, per_host), sizes in simulation_plan(args, hw, models, nodes, beyond, flat).items():
        times.prefetch(alg, ranks, sizes, per_host)
    sc = {m: Scenario(m, hw, times, ours, mpi) for m in models}
    rows, out = [], []
    w = out.append
    w("Generated by `luatorch simulate train %s` (%s UTC); platform `%s`; ours: `%s`, the MPI library's: `%s`."
      % (" ".join(args.argv), time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
         os.path.basename(times.platform), ours, mpi))
    w("")
    w("### The models (luatorch's, per GPU at %d images)" % hw["batch_per_gpu"])
    w("")
    w("| model | parameters | gradient MB | buckets (backward order, MB) | forward ms | backward ms | backward ms per bucket |")
    w("|---|---|---|---|---|---|---|")
    for m, s in sc.items():
        sp = s.spec
        w("| %s | %d | %.1f | %s | %.1f | %.1f | %s |" % (
            m, sp["param_bytes"] // 4, sp["param_bytes"] / 1e6, ", ".join("%.1f" % (b["bytes"] / 1e6) for b in sp["buckets"]),
            1e3 * sp["forward_s"], 1e3 * sum(b["backward_s"] for b in sp["buckets"]),
            ", ".join("%.1f" % (1e3 * b["backward_s"]) for b in sp["buckets"])))
    w("")
    w("### The assumptions (`--set NAME=VALUE` changes one)")
    w("")
    w("| name | value | unit | what | source |")
    w("|---|---|---|---|---|")
    for k, (v, unit, what, src) in PARAMS.items():
        w("| `%s` | %s | %s | %s | %s |" % (k, "%g" % hw[k], unit, what, src))
    for m, s in sc.items():
        w("")
        w("### %s: epoch time (s) at N nodes x %d GPUs, each optimization on or off" % (m, hw["gpus_per_node"]))
        w("")
        w("| configuration | " + " | ".join("%d nodes" % n for n in nodes) + " |")
        w("|---|" + "---|" * len(nodes))
        for cfg in CONFIGS:
            cells = []
            for n in nodes:
                it = s.run(n, *cfg)
                rows.append({"model": m, "nodes": n, "data": cfg[0], "allreduce": ours if cfg[1] == "ours" else mpi,
                             "dpt": cfg[2], **it})
                cells.append("%.1f" % it["epoch_s"])
            w("| %s | %s |" % (config_label(*cfg, ours=ours), " | ".join(cells)))
        w("")
        w("Where an iteration goes (ms; baseline -> all on):")
        w("")
        w("| nodes | configuration | iteration | " + " | ".join(PART_NAMES) + " |")
        w("|---|---|---|" + "---|" * len(PART_NAMES))
        for n in nodes:
            for cfg in (("fs", "mpi", "baseline"), ("memory", "ours", "optimized")):
                it = s.run(n, *cfg)
                w("| %d | %s | %.1f | %s |" % (n, config_label(*cfg, ours=ours), 1e3 * it["iteration_s"], " | ".join(
                    "%.1f" % (1e3 * it["parts"][p]) if p in it["parts"] else "-" for p in PART_NAMES)))
    w("")
    w("### Side by side with the paper")
    w("")
    w("| finding | paper | simulated | off by |")
    w("|---|---|---|---|")
    for m, s in sc.items():
        target = PAPER["speedup"].get(m)
        for n in [n for n in nodes if n <= 32]:
            v = s.speedup(n)
            w("| %s speed-up, all three on vs all off, %d nodes | %s | %.0f %% | %+.0f %% |" % (
                m, n, fmt_range(target), v, off_by(v, target)))
    for m, s in sc.items():
        for n in nodes:
            v = s.multicolor_gain(n)
            w("| %s epoch-time reduction, %s vs %s (all else on), %d nodes | %s | %.1f %% | %+.0f %% |" % (
                m, ours, mpi, n, fmt_range(PAPER["multicolor_gain"]), v, off_by(v, PAPER["multicolor_gain"])))
    for m, s in sc.items():
        for n in nodes:
            v = s.multicolor_gain(n, dpt="baseline")
            w("| %s epoch-time reduction, %s vs %s, in-memory data, Torch7's DPT (allreduce not overlapped), %d nodes "
              "| %s | %.1f %% | %+.0f %% |" % (m, ours, mpi, n, fmt_range(PAPER["multicolor_gain"]), v,
                                             off_by(v, PAPER["multicolor_gain"])))
    if "resnet50" in sc and 64 in nodes:
        v = sc["resnet50"].minutes_90(64)
        w("| resnet50, 90 epochs at 256 GPUs (64 nodes), all on | 48 min | %.1f min | %+.0f %% |" % (
            v, off_by(v, PAPER["minutes_90_epochs_256_gpus"])))
    if args.sensitivity and "resnet50" in sc and {8, 32, 64} <= set(nodes):
        out.extend(sensitivity(args, hw, models, times, ours, mpi))
    if beyond:
        out.extend(beyond_tables(args, sc, beyond, flat, hw))
    if times.walls:
        w("")
        w("Simulations run for this report (wall time here, one core each):")
        w("")
        w("| algorithm | ranks | per host | sizes | wall s |")
        w("|---|---|---|---|---|")
        for alg, ranks, per_host, sizes, wall in times.walls:
            w("| %s | %d | %d | %d | %.1f |" % (alg, ranks, per_host, len(sizes), wall))
    return "\n".join(out) + "\n", rows


# Several assumptions moved together: what the paper's figures would need (docs/results/paper-scale.md)
COMBINED = [
    ("allreduce after the backward, MPI library 3x slower than SMPI's copy", {"overlap": 0, "mpi_slowdown": 3.0}),
    ("16 loader threads, 25 ms per file-system read", {"loader_threads": 16, "fs_read_ms": 25.0}),
]

PART_NAMES = ["setup", "forward", "backward", "intra_reduce", "copies", "allreduce", "exposed_communication",
              "update", "data_wait"]


def sensitivity(args, hw, models, times, ours, mpi):
    """How far each assumption moves the paper's four figures: every parameter at x0.5 and x2."""
    out = ["", "### Sensitivity (each assumption halved and doubled, the others at their values)", "",
           "| assumption | value | resnet50 speed-up 8 / 32 nodes | googlenet speed-up 8 / 32 nodes | "
           "multicolor gain resnet50 32 / 64 nodes | 90 epochs, 256 GPUs (min) |", "|---|---|---|---|---|---|"]
    cases = [("(as assumed)", None, None)]
    for k, (v, *_rest) in PARAMS.items():
        if k in ("gpus_per_node",):
            continue
        for f in ((1 - v,) if k == "overlap" else (0.5, 2.0)):   # overlap: the other reading
            cases.append((k, f, v * f if k != "overlap" else f))
    for k, f, v in cases + [(label, "combined", sets) for label, sets in COMBINED]:
        h = dict(hw)
        if f == "combined":
            h.update(v)
        elif k != "(as assumed)":
            h[k] = type(PARAMS[k][0])(v)
        sc = {m: Scenario(m, h, times, ours, mpi) for m in models}
        r, g = sc.get("resnet50"), sc.get("googlenet")
        label = (k if f in (None, "combined") else "`%s` = %g" % (k, v) if k == "overlap" else "`%s` x%g" % (k, f))
        value = "" if f is None else ", ".join("%s=%g" % kv for kv in v.items()) if f == "combined" else "%g" % h[k]
        out.append("| %s | %s | %s | %s | %s | %.1f |" % (
            label, value,
            "%.0f / %.0f %%" % (r.speedup(8), r.speedup(32)),
            "%.0f / %.0f %%" % (g.speedup(8), g.speedup(32)) if g else "-",
            "%.1f / %.1f %%" % (r.multicolor_gain(32), r.multicolor_gain(64)), r.minutes_90(64)))
    return out


def beyond_algorithms(args, nodes):
    algs = parse_list(args.beyond_algorithms)
    return algs if nodes <= 64 else [a for a in algs if a in parse_list(args.large_algorithms)]


def beyond_tables(args, sc, beyond, flat, hw):
    algs = parse_list(args.beyond_algorithms)

    def cell(n, a, text, sizes, ranks=None, per_host=1):
        cached = all((a, ranks or n, per_host, b) in sc_any.times.times for b in sizes)
        return text() if a in beyond_algorithms(args, n) and cached else "-"

    sc_any = next(iter(sc.values()))
    out = ["", "### Beyond the paper: the optimized system's epoch time (s) by inter-node algorithm", "",
           "| model | nodes | GPUs | " + " | ".join(algs) + (" | flat ring over all GPUs" if flat else "") + " |",
           "|---|---|---|" + "---|" * (len(algs) + (1 if flat else 0))]
    for m, s in sc.items():
        for n in beyond:
            bks = [b["bytes"] for b in s.spec["buckets"]]
            cells = [cell(n, a, lambda: "%.1f" % s.epoch(n, ("memory", "x", "optimized"), algorithm=a), bks)
                     for a in algs]
            if flat:
                g = hw["gpus_per_node"]
                cells.append(cell(n, "ring", lambda: "%.1f" % s.epoch(n, ("memory", "x", "optimized"), algorithm="ring",
                                                                      flat=True), bks, n * g, g) if n in flat else "-")
            out.append("| %s | %d | %d | %s |" % (m, n, n * hw["gpus_per_node"], " | ".join(cells)))
    out += ["", "Exposed inter-node communication per iteration (ms, optimized system):", "",
            "| model | nodes | " + " | ".join(algs) + " |", "|---|---|" + "---|" * len(algs)]
    for m, s in sc.items():
        for n in beyond:
            bks = [b["bytes"] for b in s.spec["buckets"]]
            out.append("| %s | %d | %s |" % (m, n, " | ".join(cell(n, a, lambda: "%.1f" % (
                1e3 * s.run(n, "memory", "x", "optimized", algorithm=a)["parts"]["exposed_communication"]), bks)
                for a in algs)))
    out += ["", "The simulated allreduce of the whole gradient (ms; one rank per node, host buffers):", "",
            "| model | nodes | " + " | ".join(algs) + " |", "|---|---|" + "---|" * len(algs)]
    for m, s in sc.items():
        for n in beyond:
            out.append("| %s | %d | %s |" % (m, n, " | ".join(cell(n, a, lambda: "%.1f" % (
                1e3 * s.times.get(a, n, s.spec["param_bytes"])), [s.spec["param_bytes"]]) for a in algs)))
    return out


def write_between_markers(path, text):
    """Replace the generated part of an existing document (between BEGIN and END), or write it whole."""
    block = BEGIN + "\n" + text + END + "\n"
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        new = old + ("\n" if old else "") + block
    with open(path, "w") as f:
        f.write(new)


# ------------------------------------------------------------------ CLI

def parse_list(text, kind=str):
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SimulateError("cannot read the list %r" % text)


def parse_sets(pairs):
    hw = defaults()
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in PARAMS:
            raise SimulateError("--set takes NAME=VALUE with NAME one of %s (got %r)" % (", ".join(PARAMS), pair))
        try:
            hw[name] = type(PARAMS[name][0])(float(value)) if isinstance(PARAMS[name][0], int) else float(value)
        except ValueError:
            raise SimulateError("--set %s: %r is not a number" % (name, value))
    return hw


def parser():
    ap = argparse.ArgumentParser(prog="luatorch simulate train", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", default="minsky", help="SimGrid XML file or a name from run/platforms")
    ap.add_argument("--nodes", default="8,16,32,64", help="node counts of the paper's tables (4 GPUs each)")
    ap.add_argument("--model", default="resnet50,googlenet", help="comma-separated: resnet50, googlenet")
    ap.add_argument("--allreduce", default="multicolor", help="our allreduce for the optimized system")
    ap.add_argument("--baseline-allreduce", default="mpi:ompi", help="the MPI library's (SMPI's copy)")
    ap.add_argument("--beyond", default="", help="node counts for the beyond-the-paper table, e.g. 32,64,256")
    ap.add_argument("--beyond-algorithms", default="multicolor,multicolor_ring,ring,rhd,tree,mpi:ompi")
    ap.add_argument("--large-algorithms", default="multicolor,ring,mpi:ompi",
                    help="the beyond algorithms shown above 64 nodes")
    ap.add_argument("--large", action="store_true",
                    help="simulate the beyond node counts above 64 too (minutes per algorithm "
                         "there); without it they are shown where a simulation is cached, '-' elsewhere")
    ap.add_argument("--flat", default="", help="node counts where a flat one-rank-per-GPU ring is simulated")
    ap.add_argument("--sensitivity", action="store_true", help="add the sensitivity table (ResNet-50)")
    ap.add_argument("--set", action="append", default=[], help="NAME=VALUE: change one of the assumptions")
    ap.add_argument("--cfg", action="append", default=[], help="extra smpirun --cfg=NAME:VALUE (repeatable)")
    ap.add_argument("--out", default=None, help="write the Markdown tables here (e.g. docs/results/paper-scale.md)")
    ap.add_argument("--json", default=None, help="write every computed iteration here")
    ap.add_argument("--svg", default=None, help="write the epoch-time plot here")
    ap.add_argument("--quiet", action="store_true")
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    try:
        hw = parse_sets(args.set)
        nodes = parse_list(args.nodes, int)
        models = parse_list(args.model)
        beyond = parse_list(args.beyond, int) if args.beyond else []
        flat = parse_list(args.flat, int) if args.flat else []
        for n in nodes + beyond + flat:
            if n < 1:
                raise SimulateError("node counts must be >= 1 (got %d)" % n)
        times = AllreduceTimes(args.platform, args.cfg, quiet=args.quiet)
        text, rows = build_report(args, hw, models, nodes, beyond, flat, times)
    except SimulateError as e:
        fail(e)
    print(text)
    if args.out:
        write_between_markers(args.out, text)
    simulate.write(args.json, rows)
    if args.svg:
        plot(rows, args.svg)
    return 0


def plot(rows, path):
    """Epoch time against nodes: the baseline and the optimized system for each model."""
    from run.svgplot import line_plot

    series = {}
    for r in rows:
        if (r["data"], r["dpt"]) in (("fs", "baseline"), ("memory", "optimized")) and \
                r["allreduce"].startswith("mpi") == (r["dpt"] == "baseline"):
            name = "%s %s" % (r["model"], "all off" if r["dpt"] == "baseline" else "all on")
            series.setdefault(name, []).append((r["nodes"], r["epoch_s"]))
    line_plot(series, path, title="Simulated epoch time, Minsky nodes x 4 P100", xlabel="nodes",
              ylabel="seconds per epoch", logx=True)
