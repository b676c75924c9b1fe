"""`luatorch bench data`: the in-memory loader against the per-file loader (fb.resnet.torch's way).

    luatorch bench data --data PACKED --files FOLDER [--workers 1,2] [--modes threads,processes]
                        [--batches 8] [--batch-size 32] [--iter-ms 200] [--drop-caches] [--json PATH]

PACKED is FOLDER packed (`luatorch pack FOLDER PACKED`), FOLDER e.g. from `luatorch synth-data`.
For each loader (memory | files), page cache (cold | warm), worker mode and worker count it measures
  - images/s: `--batches` training batches pulled as fast as the loader gives them;
  - data_wait_fraction: the same with a simulated training iteration of `--iter-ms` ms per batch
    (a sleep), time the consumer waited for data / wall time; fb.resnet.torch's "Data" time share.
Cold cache: posix_fadvise(DONTNEED) on every file the run reads (source images, or the shards before the
store loads), `cold_method: fadvise` in the records; it evicts only those files. With --drop-caches (root):
`echo 3 > /proc/sys/vm/drop_caches` instead, which empties the page cache of the whole machine, every
process's; `cold_method: drop_caches`.
For the memory loader, cold/warm only changes the time to load the store (load_s); the epoch is in RAM.
"""
import argparse
import os
import time

from run.benchutil import print_table, write_json


DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_machine_cache():
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


def drop_cache(paths, machine):
    """Make the next read of `paths` come from the disk: the whole machine's page cache (`machine`), or
    just these files'."""
    if machine:
        drop_machine_cache()
        return "drop_caches"
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        except OSError:
            pass
    return "fadvise"


def warm(paths):
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def run_once(ds, source, workers, mode, batch_size, batches, iter_ms, seed, files_root):
    ld = ds.loader("train", batch_size=batch_size, workers=workers, mode=mode, source=source, seed=seed,
                   root=files_root, slots=workers + 2)
    try:
        ld.start()
        t0 = time.perf_counter()
        n, waits = 0, []
        it = iter(ld)
        for k in range(min(batches, len(ld))):
            t = time.perf_counter()
            x, y = next(it)
            waits.append(time.perf_counter() - t)
            n += len(y)
            if iter_ms:
                time.sleep(iter_ms / 1000)
        wall = time.perf_counter() - t0
        it.close()
        s = ld.stats()
        # steady state: without the first batch, which nothing could have prefetched
        steady = sum(waits[1:]) / max(wall - waits[0], 1e-9)
        return dict(images=n, wall_s=wall, images_per_s=n / wall, data_wait_s=s["data_wait_s"],
                    data_wait_fraction=s["data_wait_s"] / wall, data_wait_fraction_steady=steady,
                    load_s=s["load_s"], store_bytes=s["store_bytes"],
                    ring_bytes=int(ld.x.nbytes + ld.y.nbytes), decode_s=s["decode_s"], transform_s=s["transform_s"],
                    fetch_s=s["fetch_s"])
    finally:
        ld.close()


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch bench data", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="packed folder")
    p.add_argument("--files", required=True, help="the original image folder")
    p.add_argument("--workers", default="1,2")
    p.add_argument("--modes", default="threads,processes")
    p.add_argument("--loaders", default="memory,files")
    p.add_argument("--caches", default="cold,warm")
    p.add_argument("--batches", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--iter-ms", type=float, default=200.0, help="simulated training iteration (ms per batch)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--drop-caches", action="store_true",
                   help="cold cache by emptying the page cache of the WHOLE MACHINE (%s, needs root); "
                        "default: posix_fadvise(DONTNEED) on the benchmark's own files" % DROP_CACHES)
    p.add_argument("--json", help="write the records here (an existing file is replaced)")
    a = p.parse_args(argv)
    caches = a.caches.split(",")
    if a.drop_caches:
        try:  # fail before measuring anything, not in the middle
            drop_machine_cache()
        except OSError as e:
            raise SystemExit("luatorch bench data: --drop-caches cannot write %s (%s); run as root, or leave "
                             "the flag out for per-file eviction (posix_fadvise)" % (DROP_CACHES, e.strerror))
    elif "cold" in caches:
        print("cold cache: posix_fadvise(DONTNEED) on the benchmark's files only; --drop-caches (root) empties "
              "the whole machine's page cache instead", flush=True)
    from pytorch_bridge.data import Dataset
    ds = Dataset(a.data)
    idx = ds.index("train")
    files = [os.path.join(a.files, str(n)) for n in idx["name"]]
    shards = [os.path.join(a.data, s["file"]) for s in ds.manifest["splits"]["train"]["shards"]]
    records = []
    # the loader varies fastest, so the two loaders are measured next to each other in time (the
    # machine's load drifts)
    for cache in caches:
        for mode in a.modes.split(","):
            for w in [int(v) for v in a.workers.split(",")]:
                for loader in a.loaders.split(","):
                    rec = dict(loader=loader, cache=cache, mode=mode, workers=w, batch_size=a.batch_size,
                               iter_ms=a.iter_ms, loadavg=os.getloadavg()[0])
                    for what, iter_ms in (("throughput", 0), ("wait", a.iter_ms)):
                        paths = files if loader == "files" else shards
                        if cache == "cold":
                            rec["cold_method"] = drop_cache(paths, a.drop_caches)
                        else:
                            warm(paths)
                        r = run_once(ds, loader, w, mode, a.batch_size, a.batches, iter_ms, a.seed, a.files)
                        if what == "throughput":
                            rec.update(images_per_s=r["images_per_s"], load_s=r["load_s"],
                                       store_bytes=r["store_bytes"], ring_bytes=r["ring_bytes"],
                                       decode_ms_per_image=1000 * r["decode_s"] / r["images"],
                                       transform_ms_per_image=1000 * r["transform_s"] / r["images"],
                                       fetch_ms_per_image=1000 * r["fetch_s"] / r["images"])
                        else:
                            rec.update(data_wait_fraction=r["data_wait_fraction"],
                                       data_wait_fraction_steady=r["data_wait_fraction_steady"],
                                       data_wait_ms_per_batch=1000 * r["data_wait_s"] / a.batches)
                    records.append(rec)
                    print("%-6s %-4s %-9s w=%d  %.1f img/s  wait %.1f%% (steady %.1f%%)  load %.2fs  fetch %.2f ms/img"
                          "  (load avg %.1f)"
                          % (loader, cache, mode, w, rec["images_per_s"], 100 * rec["data_wait_fraction"],
                             100 * rec["data_wait_fraction_steady"],
                             rec["load_s"], rec["fetch_ms_per_image"], rec["loadavg"]), flush=True)
    print()
    print_table(["loader", "cache", "mode", "workers", "images/s", "data wait", "fetch ms/img", "load s"],
                [[r["loader"], r["cache"], r["mode"], r["workers"], "%.1f" % r["images_per_s"],
                  "%.1f%%" % (100 * r["data_wait_fraction"]), "%.2f" % r["fetch_ms_per_image"], "%.2f" % r["load_s"]]
                 for r in records])
    write_json(a.json, records)
    return 0
