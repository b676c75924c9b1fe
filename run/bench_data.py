"""`luatorch bench data`: the in-memory loader against the per-file loader (fb.resnet.torch's way).

    luatorch bench data --data PACKED --files FOLDER [--workers 1,2] [--modes threads,processes]
                        [--loaders memory,files[,ceiling,pieces,torchvision]] [--pipelines c[,numpy]] [--transform train|val]
                        [--rounds 1] [--torchvision-python PY] [--batches 8] [--batch-size 32] [--iter-ms 200] [--drop-caches] [--json PATH]

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
--pipelines: `c` is the loader's C fast path (libjpeg-turbo decode of the crop's box, resize and colour in C),
`numpy` the Pillow + numpy pipeline it replaces (fast=False). Loader `pieces`: the numpy pipeline's steps
timed one by one on one thread (decode, scale, colour, copy). Loader `ceiling`: libjpeg-turbo decode alone,
from C, of the same records from memory on `workers` threads, twice: the whole image (`images_per_s_full`)
and only the box the sample's transform reads (`images_per_s`, the region-of-interest decode the C path
does). --rounds N repeats everything N times, interleaved, and the records keep every round (`round`).
--iter-ms 0 skips the data-wait runs. --epochs E (data-wait runs): E whole epochs per loader, the last one
measured, its first batch included (prefetched at the previous epoch's end, as in training). Per image, in ms (summed over workers): fetch, decode, scale (crop +
resize), colour (jitter, lighting, normalize, flip), plan (the C path's draws and call in Python), copy
(into the slot), transform (all after decoding).
Loader `torchvision`: torchvision's pipeline for the same recipe on the same files (ImageFolder + Pillow +
RandomResizedCrop/ColorJitter/ToTensor/Lighting/Normalize/flip + a DataLoader of `workers` processes;
run/torchvision_pipeline.py), run by `--torchvision-python PY` (default $LUATORCH_TORCHVISION_PYTHON, else
this interpreter): an interpreter with torch and torchvision, e.g. a venv of its own. The last table gives,
per worker count, the medians over rounds and the C pipeline's ratios to torchvision and to the ceiling.

On the emulated cluster's storage host (`luatorch cluster up --nodes 4 --storage DIR`, --files and --data
in DIR):
    luatorch bench data --cluster-hosts 1,2,4 --data DIR/packed --files DIR/src [--iter-ms 400 ...]
runs the loaders on that many hosts at once, every host's file loader reading through its own sshfs mount
(`asis` cache: the network file system's own behaviour; the server's page cache warm), released together
once all have started their workers; per host images/s and data wait, and the bytes each link carried.
    luatorch bench data --cluster-hosts 2,4 --fill replicate,partition,distributed --data DIR/packed ...
times loading the in-memory store from the storage host instead, one MPI rank per host (MPICH): every host
the whole set, each its 1/N, or the distributed fill (1/N each from storage, the rest over MPI).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from run.benchutil import print_table, write_json

PIECES = ("fetch_s", "decode_s", "scale_s", "colour_s", "plan_s", "copy_s", "transform_s")


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


def _wait_for_go(sync_dir, name):
    """Say this process is ready (its workers started), then wait until the launcher says go."""
    with open(os.path.join(sync_dir, "ready." + name), "w"):
        pass
    go = os.path.join(sync_dir, "go")
    deadline = time.monotonic() + 300
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            raise SystemExit("luatorch bench data: no go from the launcher in %s" % sync_dir)
        time.sleep(0.002)


def run_once(ds, source, workers, mode, batch_size, batches, iter_ms, seed, files_root, fast=True, train=True,
             sync_dir=None, epochs=1):
    """One loader, `epochs` epochs; the figures are the last epoch's. With epochs > 1 every epoch is read to
    its end, so the last one's first batches were prefetched while the one before ended (as in training);
    with 1, its first batch is decoded after the clock starts."""
    ld = ds.loader("train", batch_size=batch_size, workers=workers, mode=mode, source=source, seed=seed,
                   root=files_root, slots=workers + 2, fast=fast, train=train)
    try:
        ld.start()
        if sync_dir:
            _wait_for_go(sync_dir, socket.gethostname())
        epoch_waits = []
        for epoch in range(1, epochs + 1):
            ld.set_epoch(epoch)
            waited_before = ld.stats()["data_wait_s"]
            t0 = time.perf_counter()
            n, waits = 0, []
            it = iter(ld)
            for k in range(len(ld) if epochs > 1 else min(batches, len(ld))):
                t = time.perf_counter()
                x, y = next(it)
                waits.append(time.perf_counter() - t)
                n += len(y)
                if iter_ms:
                    time.sleep(iter_ms / 1000)
            wall = time.perf_counter() - t0
            if epochs > 1:
                assert next(it, None) is None   # read to its end: the next epoch's prefetch counts
            it.close()
            # the loader's own count (the consumer blocked on the workers), as in one-epoch runs
            waited = ld.stats()["data_wait_s"] - waited_before
            epoch_waits.append(waited / wall)
        s = ld.stats()
        # steady state: without the first batch (which, with one epoch, nothing could have prefetched)
        steady = sum(waits[1:]) / max(wall - waits[0], 1e-9)
        out = dict(images=n, batches=len(waits), wall_s=wall, images_per_s=n / wall, data_wait_s=waited,
                   data_wait_fraction=waited / wall, data_wait_fraction_steady=steady, epochs=epochs,
                   data_wait_fraction_per_epoch=epoch_waits, first_batch_wait_s=waits[0],
                   consumer_wait_fraction=sum(waits) / wall,   # next()'s whole time, the loop's own work included
                   load_s=s["load_s"], ring_s=s["ring_s"], store_bytes=s["store_bytes"], fast=s["fast"],
                   ring_bytes=int(ld.x.nbytes + ld.y.nbytes))
        out.update({k: s[k] for k in PIECES})
        return out
    finally:
        ld.close()


def ceiling(ds, train, workers, seed, files):
    """libjpeg-turbo decode alone, from C, on `workers` threads: images/s of the whole images and of the
    boxes the transforms read (the same draws as the loader's epoch 1)."""
    import threading
    from pytorch_bridge.data import transforms as T
    fp = ds.fast_path("train", train)
    if fp is None:
        raise SystemExit("luatorch bench data: the ceiling needs the C decoder, and this build has no libjpeg")
    datas, boxes = [], []
    for i, path in enumerate(files):
        with open(path, "rb") as f:
            data = f.read()
        size = fp.header(data)
        if size is None:
            continue
        p = fp.plan(size[0], size[1], T.sample_rng(seed, 1, i))
        if p is None:
            continue
        xs = [p.xidx[k] for k in range(4 * p.out_w)]
        ys = [p.yidx[k] for k in range(4 * p.out_h)]
        datas.append(data)
        boxes.append((p.box_x + min(xs), p.box_y + min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1))
    out = {}
    for what in ("full", "box"):
        def work(k):
            for i in range(k, len(datas), workers):
                fp.decode_only(datas[i], boxes[i] if what == "box" else None)
        threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out[what] = len(datas) / (time.perf_counter() - t0)
    return out


def numpy_pieces(ds, train, seed, files):
    """The numpy pipeline's pieces one after another on one thread (ms per image): Pillow decode,
    crop + bicubic scale, colour (jitter, lighting, normalize, flip), copy into a slot."""
    import numpy as np
    from pytorch_bridge.data import transforms as T
    t = dict(decode=0.0, scale=0.0, colour=0.0, copy=0.0)
    slot = np.empty(ds.image_shape, np.float32)
    for i, path in enumerate(files):
        with open(path, "rb") as f:
            data = f.read()
        t0 = time.perf_counter()
        img = ds.decode(data)
        t1 = time.perf_counter()
        if train:
            d = T.imagenet_train_draws(img.shape[1], img.shape[2], T.sample_rng(seed, 1, i), ds.crop)
            g = d.geometry
        else:
            g = T.short_center_geometry(img.shape[1], img.shape[2], ds.resize, ds.crop)
        x = np.array(g.apply(img), np.float32)
        t2 = time.perf_counter()
        if train:
            x = T.apply_color_jitter(x, d.jitter)
            x += d.light[:, None, None]
        x = T.color_normalize(x, T.IMAGENET_MEAN, T.IMAGENET_STD)
        if train and d.flip:
            x = x[:, :, ::-1]
        t3 = time.perf_counter()
        slot[...] = x
        t4 = time.perf_counter()
        for k, v in zip(t, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            t[k] += v
    return {k + "_ms_per_image": 1000 * v / len(files) for k, v in t.items()}


TORCHVISION_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchvision_pipeline.py")


def torchvision_python(a):
    return a.torchvision_python or os.environ.get("LUATORCH_TORCHVISION_PYTHON") or sys.executable


def check_torchvision(py):
    """Fail before measuring anything when `py` cannot import torchvision."""
    r = subprocess.run([py, "-c", "import torch, torchvision, PIL"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(
            "luatorch bench data: loader torchvision: %s cannot import torch + torchvision (%s). Give an "
            "interpreter that can with --torchvision-python PY or LUATORCH_TORCHVISION_PYTHON; PyPI's torchvision "
            "needs the torch release it was built with, e.g. `python -m venv tv && tv/bin/pip install "
            "torch==2.14.1 torchvision==0.29.1` (CPU use is fine)"
            % (py, (r.stderr.strip().splitlines() or ["no output"])[-1]))


def image_folder(files):
    """The ImageFolder root of the benchmark's files (the folder of their class folders)."""
    roots = {os.path.dirname(os.path.dirname(f)) for f in files}
    if len(roots) != 1:
        raise SystemExit("luatorch bench data: loader torchvision needs the images as ROOT/CLASS/FILE, one ROOT; "
                         "these files have %d" % len(roots))
    return roots.pop()


def run_torchvision(a, w, files):
    argv = [torchvision_python(a), TORCHVISION_SCRIPT, "--folder", image_folder(files), "--workers", str(w),
            "--batches", str(a.batches), "--batch-size", str(a.batch_size), "--transform", a.transform,
            "--seed", str(a.seed)]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise SystemExit("luatorch bench data: the torchvision pipeline failed: %s"
                         % (r.stderr or r.stdout).strip()[-2000:])
    return json.loads(lines[-1])


def summarize(records):
    """Per transform and worker count: medians over rounds, and the C pipeline against torchvision and the
    ceiling (rows for the loaders present)."""
    from run.benchutil import median
    groups = {}
    for r in records:
        if "images_per_s" in r and r["loader"] != "pieces" and r.get("cache", "warm") == "warm":
            key = (r["loader"], r.get("pipeline", "-"), r.get("mode", "threads"), r["workers"])
            groups.setdefault(key, []).append(r["images_per_s"])
    med = {k: median(v) for k, v in groups.items()}
    rows = []
    for w in sorted({k[3] for k in med}):
        tv = med.get(("torchvision", "torchvision", "processes", w))   # a DataLoader's worker processes
        ceil = med.get(("ceiling", "-", "threads", w))
        for (loader, pipeline, mode, ww), v in sorted(med.items()):
            if ww != w:
                continue
            rows.append([loader, pipeline, mode, w, "%.0f" % v, len(groups[loader, pipeline, mode, ww]),
                         "%.2f" % (v / tv) if tv and loader not in ("torchvision", "ceiling") else "-",
                         "%.2f" % (v / ceil) if ceil and loader not in ("torchvision", "ceiling") else "-"])
    return rows


def measure(ds, a, loader, pipeline, cache, mode, w, files, shards, rnd):
    rec = dict(loader=loader, pipeline=pipeline, transform=a.transform, cache=cache, mode=mode, workers=w,
               batch_size=a.batch_size, iter_ms=a.iter_ms, round=rnd, loadavg=os.getloadavg()[0])
    for what, iter_ms in (("throughput", 0), ("wait", a.iter_ms)):
        if (what == "wait" and not a.iter_ms) or (a.phase and what != a.phase):
            continue
        paths = files if loader == "files" else shards
        if cache == "cold":
            rec["cold_method"] = drop_cache(paths, a.drop_caches)
        elif cache == "warm":
            warm(paths)
        # "asis": touch nothing (a network file system's own caching is part of what is measured)
        r = run_once(ds, loader, w, mode, a.batch_size, a.batches, iter_ms, a.seed, a.files,
                     fast=pipeline == "c", train=a.transform == "train", sync_dir=a.sync_dir,
                     epochs=a.epochs if what == "wait" else 1)
        if what == "throughput":
            rec.update(images_per_s=r["images_per_s"], load_s=r["load_s"], ring_s=r["ring_s"], store_bytes=r["store_bytes"],
                       ring_bytes=r["ring_bytes"], fast_images=r["fast"], images=r["images"])
            rec.update({k[:-2] + "_ms_per_image": 1000 * r[k] / r["images"] for k in PIECES})
        else:
            rec.update(data_wait_fraction=r["data_wait_fraction"],
                       data_wait_fraction_steady=r["data_wait_fraction_steady"], epochs=r["epochs"],
                       data_wait_fraction_per_epoch=r["data_wait_fraction_per_epoch"],
                       first_batch_wait_ms=1000 * r["first_batch_wait_s"],
                       consumer_wait_fraction=r["consumer_wait_fraction"],
                       data_wait_ms_per_batch=1000 * r["data_wait_s"] / r["batches"],
                       images_per_s_with_iter=r["images_per_s"])
    if a.phase:
        return rec
    print("%-6s %-5s %-4s %-9s w=%d  %.1f img/s%s  load %.2fs  fetch %.2f decode %.2f scale %.2f colour %.2f "
          "plan %.2f copy %.2f ms/img  (load avg %.1f)"
          % (loader, pipeline, cache, mode, w, rec["images_per_s"],
             "  wait %.1f%% (steady %.1f%%)" % (100 * rec["data_wait_fraction"], 100 * rec["data_wait_fraction_steady"])
             if "data_wait_fraction" in rec else "", rec["load_s"], rec["fetch_ms_per_image"],
             rec["decode_ms_per_image"], rec["scale_ms_per_image"], rec["colour_ms_per_image"],
             rec["plan_ms_per_image"], rec["copy_ms_per_image"], rec["loadavg"]), flush=True)
    return rec


# ------------------------------------------- on the emulated cluster's storage host (issue 14)

def _cluster():
    from run import cluster
    try:
        st = cluster.current()
    except cluster.ClusterError as e:
        raise SystemExit("luatorch bench data: %s" % e)
    if not st.get("storage", {}).get("mounts"):
        raise SystemExit("luatorch bench data: the emulated cluster has no storage host; bring it up with "
                         "`luatorch cluster up --nodes 4 --storage DIR` (DIR holding the image folder)")
    return cluster, st


def host_path(path, st, host):
    """`path`, under the storage's served folder (or under any host's mount of it), as `host` sees it."""
    sto = st["storage"]
    p = os.path.abspath(path)
    for root in [sto["dir"]] + list(sto["mounts"].values()):
        if p == root or p.startswith(root.rstrip("/") + "/"):
            return os.path.normpath(os.path.join(sto["mounts"][host], os.path.relpath(p, root)))
    raise SystemExit("luatorch bench data: %s is not in the folder the storage host serves (%s); put the images "
                     "there, or bring the cluster up with --storage on their folder" % (path, sto["dir"]))


def _link_bytes(cluster, st):
    c = cluster.counters(st)
    return {"storage_tx": cluster.storage_counters(st)[0],
            **{h: c["%s/eth0" % h][1] for h in st["hosts"]}}   # what each host received on link 0


def _delta(before, after):
    return {k: after[k] - before[k] for k in before}


def _on_hosts(cluster, st, n, argvs, sync_dir=None, timeout=600):
    """Run argvs[i] on host i, all at once (released together through sync_dir when given); their outputs."""
    procs = [subprocess.Popen(cluster.exec_argv(st["hosts"][i], argvs[i]), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(n)]
    try:
        if sync_dir:
            deadline = time.monotonic() + timeout
            while sum(f.startswith("ready.") for f in os.listdir(sync_dir)) < n:
                if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            with open(os.path.join(sync_dir, "go"), "w"):
                pass
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            raise SystemExit("luatorch bench data: on %s: %s" % (st["hosts"][i], (err or out).strip()[-2000:]))
    return outs


def cluster_loaders(a):
    """The loaders on 1..N hosts at once, every host reading its images through its own sshfs mount of the
    storage host (the file loader) or from its in-memory store: per host images/s, data wait."""
    cluster, st = _cluster()
    counts = [int(v) for v in a.cluster_hosts.split(",")]
    if max(counts) > len(st["hosts"]):
        raise SystemExit("luatorch bench data: --cluster-hosts %d, but the cluster has %d hosts"
                         % (max(counts), len(st["hosts"])))
    for h in st["hosts"][:max(counts)]:
        host_path(a.files, st, h)   # fails early if the images are not served
    warm([os.path.join(a.files, str(n)) for n in _names(a.data)])   # the file server's RAM cache, as a real one
    records = []
    for rnd in range(a.rounds):
        for n in counts:
            for w in [int(v) for v in a.workers.split(",")]:
                for loader in a.loaders.split(","):
                    phases = ["throughput"] + (["wait"] if a.iter_ms else [])
                    per_host = [dict() for _ in range(n)]
                    for phase in phases:
                        with tempfile.TemporaryDirectory(prefix="luatorch-bench-") as tmp:
                            argvs = [[sys.executable, "-m", "run.bench_data", "--data", a.data,
                                      "--files", host_path(a.files, st, st["hosts"][i]), "--loaders", loader,
                                      "--workers", str(w), "--modes", "threads", "--caches", "asis",
                                      "--batches", str(a.batches), "--batch-size", str(a.batch_size),
                                      "--iter-ms", str(a.iter_ms), "--seed", str(a.seed + i), "--pipelines", "c",
                                      "--transform", a.transform, "--phase", phase, "--sync-dir", tmp,
                                      "--epochs", str(a.epochs),
                                      "--json", os.path.join(tmp, "h%d.json" % i)] for i in range(n)]
                            load = os.getloadavg()[0]
                            before = _link_bytes(cluster, st)
                            t0 = time.time()
                            _on_hosts(cluster, st, n, argvs, sync_dir=tmp)
                            wall = time.time() - t0
                            moved = _delta(before, _link_bytes(cluster, st))
                            for i in range(n):
                                with open(os.path.join(tmp, "h%d.json" % i)) as f:
                                    (r,) = json.load(f)
                                per_host[i].update(r)
                                per_host[i]["%s_rx_bytes" % phase] = moved[st["hosts"][i]]
                                per_host[i]["%s_loadavg" % phase] = load
                            for rec in per_host:
                                rec["%s_storage_tx_bytes" % phase] = moved["storage_tx"]
                                rec["%s_launch_s" % phase] = wall
                    for i, rec in enumerate(per_host):
                        rec.update(cluster_hosts=n, host=st["hosts"][i], round=rnd, loadavg=rec["throughput_loadavg"],
                                   storage_rate=st["storage"]["rate"], host_rate=st["rate"])
                        records.append(rec)
                    ips = [r["images_per_s"] for r in per_host]
                    waits = [100 * r["data_wait_fraction"] for r in per_host if "data_wait_fraction" in r]
                    print("%d host(s)  %-6s w=%d  images/s per host %s (sum %.0f)%s  storage sent %.1f MB "
                          "(load avg %.1f)" % (
                              n, loader, w, " ".join("%.0f" % v for v in ips), sum(ips),
                              "  data wait %s %%" % " ".join("%.1f" % v for v in waits) if waits else "",
                              per_host[0]["throughput_storage_tx_bytes"] / 1e6, per_host[0]["loadavg"]), flush=True)
    write_json(a.json, records)
    return 0


def _names(packed):
    from pytorch_bridge.data import Dataset
    return Dataset(packed).index("train")["name"]


FILLS = ("replicate", "partition", "distributed")


def fill_rank(a):
    """One rank of the --fill job: load the store of the packed set from this host's mount; rank 0 prints
    every rank's time and bytes read as one JSON line."""
    from mpi4py import MPI
    from pytorch_bridge.data import sampler
    from pytorch_bridge.data.store import Store
    from run import cluster
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    st = cluster.current()
    host = socket.gethostname()
    packed = host_path(a.data, st, host)
    shm = os.path.join("/dev/shm", "luatorch-bench-" + host)   # the emulated hosts share one /dev/shm
    os.makedirs(shm, exist_ok=True)
    from pytorch_bridge.data import Dataset
    n = Dataset(packed).size("train")
    lo, hi = sampler.rank_range(n, world, rank) if a.fill_rank == "partition" else (0, n)
    comm.Barrier()
    t0 = time.perf_counter()
    store = Store(packed, "train", lo, hi, shm_dir=shm, fill="distributed" if a.fill_rank == "distributed" else "local")
    t = time.perf_counter() - t0
    comm.Barrier()
    wall = time.perf_counter() - t0
    recs = comm.gather(dict(rank=rank, host=host, load_s=t, read_bytes=store.read_bytes, store_bytes=store.nbytes,
                            created=store.created, fill_s=store.fill_s), root=0)
    store.close()
    comm.Barrier()   # every rank of this host has detached
    try:
        os.rmdir(shm)
    except OSError:   # another rank of this host removed it, or something is still in it
        pass
    if rank == 0:
        print("FILL " + json.dumps(dict(wall_s=wall, ranks=recs)), flush=True)
    return 0


def cluster_fill(a):
    """Loading the in-memory store from the storage host on N hosts at once, one MPI rank per host:
    replicate (every host reads the whole set), partition (each its 1/N), distributed (each reads 1/N and
    the hosts exchange the rest over MPI). Time, and bytes through the storage link and into each host."""
    cluster, st = _cluster()
    counts = [int(v) for v in a.cluster_hosts.split(",")]
    fills = a.fill.split(",")
    for f in fills:
        if f not in FILLS:
            raise SystemExit("luatorch bench data: --fill takes %s, not %r" % (",".join(FILLS), f))
    host_path(a.data, st, st["hosts"][0])
    from pytorch_bridge.data import Dataset
    ds = Dataset(a.data)
    shards = [os.path.join(a.data, s["file"]) for s in ds.manifest["splits"]["train"]["shards"]]
    set_bytes = int(ds.index("train")["length"].sum())
    warm(shards)   # the file server's RAM cache
    records = []
    for rnd in range(a.rounds):
        for n in counts:
            for fill in fills:
                prefix, env = cluster.mpi_launch("mpich", n)
                argv = prefix + [sys.executable, "-m", "run.bench_data", "--data", a.data, "--files", a.files,
                                 "--fill-rank", fill]
                load = os.getloadavg()[0]
                before = _link_bytes(cluster, st)
                r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900,
                                   env={**os.environ, **env})
                moved = _delta(before, _link_bytes(cluster, st))
                line = [ln for ln in r.stdout.splitlines() if ln.startswith("FILL ")]
                if r.returncode != 0 or not line:
                    raise SystemExit("luatorch bench data --fill %s on %d hosts failed: %s"
                                     % (fill, n, (r.stderr or r.stdout).strip()[-2000:]))
                res = json.loads(line[0][5:])
                rec = dict(fill=fill, cluster_hosts=n, round=rnd, wall_s=res["wall_s"], ranks=res["ranks"],
                           storage_tx_bytes=moved["storage_tx"],
                           host_rx_bytes=[moved[h] for h in st["hosts"][:n]],
                           set_bytes=set_bytes, loadavg=load,
                           storage_rate=st["storage"]["rate"], host_rate=st["rate"])
                records.append(rec)
                print("%d host(s)  fill %-11s  %.2f s  storage link sent %.1f MB (%.2fx the set)  per host: read "
                      "%s MB, received %s MB  (load avg %.1f)" % (
                          n, fill, rec["wall_s"], rec["storage_tx_bytes"] / 1e6, rec["storage_tx_bytes"] / max(1, set_bytes),
                          " ".join("%.1f" % (x["read_bytes"] / 1e6) for x in res["ranks"]),
                          " ".join("%.1f" % (b / 1e6) for b in rec["host_rx_bytes"]), load), flush=True)
    write_json(a.json, records)
    return 0


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
    p.add_argument("--epochs", type=int, default=1, help="data-wait runs: epochs per loader, the last one measured "
                   "(> 1: whole epochs, so its first batches come from the prefetch at the previous epoch's end)")
    p.add_argument("--pipelines", default="c", help="c (the C fast path), numpy (Pillow + numpy), or both")
    p.add_argument("--transform", default="train", choices=("train", "val"),
                   help="on the train split: train (RandomSizedCrop, jitter, ...) or val (Scale + CenterCrop) transforms")
    p.add_argument("--rounds", type=int, default=1, help="repeat the whole measurement, interleaved")
    p.add_argument("--drop-caches", action="store_true",
                   help="cold cache by emptying the page cache of the WHOLE MACHINE (%s, needs root); "
                        "default: posix_fadvise(DONTNEED) on the benchmark's own files" % DROP_CACHES)
    p.add_argument("--torchvision-python", metavar="PY", help="the interpreter for loader torchvision (default "
                   "$LUATORCH_TORCHVISION_PYTHON, else this one)")
    p.add_argument("--json", help="write the records here (an existing file is replaced)")
    p.add_argument("--cluster-hosts", metavar="N,N", help="run the loaders on this many hosts of the emulated "
                   "cluster at once (`luatorch cluster up --storage DIR`), each reading --files through its own "
                   "mount of the storage host; --files and --data name paths in DIR")
    p.add_argument("--fill", metavar="MODES", help="with --cluster-hosts: instead of the loaders, time loading the "
                   "store from the storage host, one MPI rank per host: %s" % ",".join(FILLS))
    p.add_argument("--phase", choices=("throughput", "wait"), help=argparse.SUPPRESS)   # a cluster host's part
    p.add_argument("--sync-dir", help=argparse.SUPPRESS)
    p.add_argument("--fill-rank", choices=FILLS, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.fill_rank:
        return fill_rank(a)
    if a.fill and not a.cluster_hosts:
        raise SystemExit("luatorch bench data: --fill needs --cluster-hosts N (it measures the emulated cluster)")
    if a.cluster_hosts:
        return cluster_fill(a) if a.fill else cluster_loaders(a)
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
    if "torchvision" in a.loaders.split(","):
        check_torchvision(torchvision_python(a))
    from pytorch_bridge.data import Dataset
    ds = Dataset(a.data)
    idx = ds.index("train")
    files = [os.path.join(a.files, str(n)) for n in idx["name"]]
    shards = [os.path.join(a.data, s["file"]) for s in ds.manifest["splits"]["train"]["shards"]]
    records = []
    # the loader varies fastest, so the two loaders are measured next to each other in time (the
    # machine's load drifts)
    for rnd in range(a.rounds):
        for cache in caches:
            for mode in a.modes.split(","):
                for w in [int(v) for v in a.workers.split(",")]:
                    for loader in a.loaders.split(","):
                        if loader == "pieces":
                            if cache != caches[0] or mode != a.modes.split(",")[0] or w != 1:
                                continue   # one thread
                            rec = dict(loader="pieces", pipeline="numpy", cache="warm", mode="threads", workers=1,
                                       round=rnd, transform=a.transform, loadavg=os.getloadavg()[0])
                            rec.update(numpy_pieces(ds, a.transform == "train", a.seed, files))
                            records.append(rec)
                            print("pieces numpy (one thread): " + " ".join(
                                "%s %.3f" % (k[:-13], rec[k]) for k in rec if k.endswith("_ms_per_image"))
                                + " ms/img  (load avg %.1f)" % rec["loadavg"], flush=True)
                            continue
                        if loader == "torchvision":
                            if cache != caches[0] or mode != a.modes.split(",")[0]:
                                continue   # its own DataLoader worker processes, warm page cache
                            warm(files)
                            rec = dict(loader="torchvision", pipeline="torchvision", cache="warm", mode="processes",
                                       workers=w, round=rnd, transform=a.transform, batch_size=a.batch_size,
                                       loadavg=os.getloadavg()[0])
                            rec.update(run_torchvision(a, w, files))
                            records.append(rec)
                            print("torchvision        w=%d  %.1f img/s  (torch %s, torchvision %s, Pillow %s; load avg "
                                  "%.1f)" % (w, rec["images_per_s"], rec["torch"], rec["torchvision"], rec["pillow"],
                                             rec["loadavg"]), flush=True)
                            continue
                        if loader == "ceiling":
                            if cache != caches[0] or mode != a.modes.split(",")[0]:
                                continue   # from memory, threads: one per worker count
                            rec = dict(loader="ceiling", cache="warm", mode="threads", workers=w, round=rnd,
                                       transform=a.transform, loadavg=os.getloadavg()[0])
                            c = ceiling(ds, a.transform == "train", w, a.seed, files)
                            rec.update(images_per_s=c["box"], images_per_s_full=c["full"])
                            records.append(rec)
                            print("ceiling            w=%d  %.1f img/s box decode, %.1f whole images  (load avg %.1f)"
                                  % (w, c["box"], c["full"], rec["loadavg"]), flush=True)
                            continue
                        for pipeline in a.pipelines.split(","):
                            rec = measure(ds, a, loader, pipeline, cache, mode, w, files, shards, rnd)
                            records.append(rec)
    if a.phase:   # one host's part of a --cluster-hosts run: the launcher prints the table
        write_json(a.json, records)
        return 0
    print()
    rows = [r for r in records if r["loader"] not in ("ceiling", "pieces", "torchvision")]
    print_table(["loader", "pipeline", "cache", "mode", "workers", "images/s", "data wait", "load s", "load avg"]
                + [k[:-2] + " ms" for k in PIECES],
                [[r["loader"], r["pipeline"], r["cache"], r["mode"], r["workers"], "%.1f" % r["images_per_s"],
                  "%.1f%%" % (100 * r["data_wait_fraction"]) if "data_wait_fraction" in r else "-",
                  "%.2f" % r["load_s"], "%.1f" % r["loadavg"]]
                 + ["%.3f" % r[k[:-2] + "_ms_per_image"] for k in PIECES] for r in rows])
    summary = summarize(records)
    if summary:
        print()
        print_table(["loader", "pipeline", "mode", "workers", "images/s (median)", "rounds", "/ torchvision",
                     "/ ceiling"], summary)
    write_json(a.json, records)
    return 0


if __name__ == "__main__":   # the per-host parts of --cluster-hosts run as `python -m run.bench_data`
    sys.exit(main())
