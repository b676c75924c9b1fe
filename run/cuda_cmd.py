"""`luatorch cuda`: what this machine has for the GPU path (info), and NVRTC's compile of every kernel into
the on-disk cache ahead of the first run (compile)."""
import argparse
import json
import os
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


def _compile_one(file, arch, cache):
    """(image bytes, from the cache, seconds) of one kernel file for arch: lt_cuda_kernel_image, the compile
    the GPU launcher and cutorch.kernels run. cffi releases the GIL for the call, so threads compile at once."""
    from pytorch_bridge.native import ffi, lib

    image, n, cached = ffi.new("char **"), ffi.new("int64_t *"), ffi.new("int *")
    t0 = time.perf_counter()
    if lib.lt_cuda_kernel_image(file.encode(), arch.encode(), ffi.NULL if cache is None else cache.encode(), image, n,
                                cached):
        raise RuntimeError(ffi.string(lib.lt_errmsg()).decode())
    out = ffi.buffer(image[0], n[0])[:]
    lib.lt_cuda_free(image[0])
    return out, bool(cached[0]), time.perf_counter() - t0


def compile_all(args):
    import concurrent.futures
    from pytorch_bridge import cuda
    from pytorch_bridge.data.pack import Progress

    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    if not archs:
        usage_error("luatorch cuda compile", "--arch needs at least one architecture (e.g. sm_90)")
    if args.jobs < 1:
        usage_error("luatorch cuda compile", "--jobs must be at least 1 (got %d)" % args.jobs)
    rt = _runtime()
    kernels = rt.require("cutorch.kernels")
    listed = rt.call(kernels.files)
    files = [str(listed[i]) for i in range(1, len(listed) + 1)]
    cache = "" if args.no_cache else args.cache   # None: the registered folder; "": none
    jobs = [(f, a) for a in archs for f in files]
    bar = Progress(len(jobs), "NVRTC", enabled=not args.quiet)
    t0 = time.time()
    found = {}
    # NVRTC compiles in parallel threads; the biggest files first, so that none is left alone at the end
    order = sorted(jobs, key=lambda j: -os.path.getsize(os.path.join(cuda.kernel_dir(), j[0])))
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(args.jobs, len(jobs))) as pool:
        futures = {pool.submit(_compile_one, f, a, cache): (f, a) for f, a in order}
        for fut in concurrent.futures.as_completed(futures):
            found[futures[fut]] = fut.result()
            bar.add(1)
    bar.close()
    records = []
    for f, a in jobs:
        image, cached, seconds = found[(f, a)]
        entries = rt.call(kernels.entries, image) if a.startswith("sm_") else {}
        names = [str(entries[i]) for i in range(1, len(entries) + 1)]
        records.append({"file": f, "arch": a, "bytes": len(image), "cached": cached, "seconds": round(seconds, 3),
                        "kernels": names})
    wall = time.time() - t0
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"records": records, "seconds": round(wall, 2), "jobs": args.jobs}, out, indent=1)
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
    print("compiled %d files x %d architectures (%d kernels) in %.1f s with %d threads; cache: %s" % (
        len(files), len(archs), total, wall, min(args.jobs, len(jobs)),
        "off" if args.no_cache else (args.cache or cuda.cache_dir() or "off")))
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
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="files compiled at once, each by NVRTC on a thread of its own (default: the cores, %(default)s)")
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
