"""`luatorch cuda`: what this machine has for the GPU path (info), and NVRTC's compile of every kernel into
the on-disk cache ahead of the first run (compile)."""
import argparse
import json
import sys
import time

from run.cli import usage_error

DEFAULT_ARCHS = "sm_75,sm_80,sm_90"


def _runtime():
    from pytorch_bridge import Runtime

    return Runtime()


def info(args):
    from pytorch_bridge import cuda
    from pytorch_bridge.native import ffi, lib

    libs = cuda.describe(lib, ffi, load=True)
    n = ffi.new("int *")
    lib.lt_cuda_device_count(n)
    devices = []
    for d in range(n[0]):
        p = ffi.new("lt_cuda_device_props *")
        if lib.lt_cuda_device_properties(d, p) == 0:
            devices.append({"device": d + 1, "name": ffi.string(p.name).decode(), "memory_bytes": int(p.total_memory),
                            "compute_capability": "%d.%d" % (p.major, p.minor), "multiprocessors": p.multiprocessors})
    report = {"libraries": {k: {"loaded": v[0], "info": v[1]} for k, v in libs.items()},
              "devices": devices, "kernel_dir": cuda.kernel_dir(), "include_dirs": cuda.include_dirs(),
              "cache_dir": cuda.cache_dir()}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for name, (loaded, text) in libs.items():
        print("%-8s %s  %s" % (name, "yes" if loaded else "no ", text))
    if devices:
        for d in devices:
            print("device %d: %s, compute capability %s, %d SMs, %.1f GiB" % (
                d["device"], d["name"], d["compute_capability"], d["multiprocessors"], d["memory_bytes"] / 2**30))
    else:
        print("devices  0: cutorch runs on the CPU fallback (host memory, CPU kernels)")
    print("kernels  %s" % (report["kernel_dir"] or "(not found)"))
    print("headers  %s" % (":".join(report["include_dirs"]) or "(not found: pip install 'luatorch[cuda]')"))
    print("cache    %s" % (report["cache_dir"] or "(none)"))
    return 0


def compile_all(args):
    from pytorch_bridge import cuda
    from pytorch_bridge.data.pack import Progress

    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    if not archs:
        usage_error("luatorch cuda compile", "--arch needs at least one architecture (e.g. sm_90)")
    rt = _runtime()
    kernels = rt.require("cutorch.kernels")
    n_files = len(rt.call(kernels.files))
    bar = Progress(n_files * len(archs), "NVRTC", enabled=not args.quiet)
    opt = rt.table(cache=False) if args.no_cache else (rt.table(cache=args.cache) if args.cache is not None
                                                        else rt.table())
    t0 = time.time()
    found = rt.call(kernels.compileAll, rt.table_from(archs), opt, lambda done, total, record: bar.add(1))
    bar.close()
    records = [{"file": r["file"], "arch": r["arch"], "bytes": int(r["bytes"]), "cached": bool(r["cached"]),
                "seconds": round(float(r["seconds"]), 3), "kernels": list(r["kernels"].values())}
               for r in found.values()]
    files = sorted({r["file"] for r in records})
    wall = time.time() - t0
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"records": records, "seconds": round(wall, 2)}, out, indent=1)
    if not args.quiet:
        print("%-22s %s" % ("file", "  ".join("%-22s" % a for a in archs)))
        for f in files:
            cells = []
            for a in archs:
                r = next(r for r in records if r["file"] == f and r["arch"] == a)
                cells.append("%-22s" % ("%d kernels %.2fs%s" % (len(r["kernels"]), r["seconds"], " (cache)" if r["cached"]
                                                                 else "")))
            print("%-22s %s" % (f, "  ".join(cells)))
    total = sum(len(r["kernels"]) for r in records)
    print("compiled %d files x %d architectures (%d kernels) in %.1f s; cache: %s" % (
        len(files), len(archs), total, wall, "off" if args.no_cache else (args.cache or cuda.cache_dir() or "off")))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="luatorch cuda", description=__doc__)
    sub = ap.add_subparsers(dest="what")
    p = sub.add_parser("info", help="the CUDA libraries found, the devices, the kernel and cache folders")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p = sub.add_parser("compile", help="compile every kernel with NVRTC (no GPU needed) into the cache")
    p.add_argument("--arch", default=DEFAULT_ARCHS,
                   help="comma-separated sm_XX (CUBIN) or compute_XX (PTX) (default %s)" % DEFAULT_ARCHS)
    p.add_argument("--cache", default=None, help="cache folder (default: LUATORCH_CUDA_CACHE or ~/.cache/luatorch/cuda)")
    p.add_argument("--no-cache", action="store_true", help="compile without reading or writing the cache")
    p.add_argument("--json", default=None, help="write the per-file records here")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    args = ap.parse_args(argv)
    if args.what == "info":
        return info(args)
    if args.what == "compile":
        try:
            return compile_all(args)
        except Exception as exc:  # a Lua error from NVRTC or missing headers: one message, no traceback
            print("luatorch cuda compile: %s" % exc, file=sys.stderr)
            return 1
    ap.print_help()
    return 2
