"""Epoch coverage, determinism, the shared store, the ring loader, corrupt images, memory vs files."""
import multiprocessing as mp
import os

import numpy as np
import pytest

from data_sources import idx, image_folder
from pytorch_bridge.data import Dataset, NotEnoughMemory, open_dataset, pack, sampler
from pytorch_bridge.data import store as store_mod
from pytorch_bridge.data.store import Store
from pytorch_bridge.data.transforms import sample_rng


@pytest.mark.parametrize("policy", sampler.POLICIES)
def test_epoch_covers_every_record_once(policy):
    for n in (1, 7, 23, 40):
        for world in range(1, 6):
            for b in (1, 3, 4, 7):
                per = [sampler.epoch_batches(n, b, r, world, seed=5, epoch=2, policy=policy) for r in range(world)]
                allidx = np.concatenate([np.concatenate(p) if p else np.zeros(0, np.int64) for p in per])
                assert sorted(allidx.tolist()) == list(range(n)), (n, world, b)
                L = {len(p) for p in per}
                assert L == {sampler.num_batches(n, b, world)}, (n, world, b)
                sizes = [len(x) for p in per for x in p]
                assert max(sizes) <= b
                if b > 1 and n >= world:
                    assert min(sizes) >= 1, (n, world, b, per)
                # all but the last batch are full
                assert all(len(x) == b for p in per for x in p[:-2])
                dl = [sampler.epoch_batches(n, b, r, world, 5, 2, policy, drop_last=True) for r in range(world)]
                flat = [i for p in dl for x in p for i in x.tolist()]
                assert len(flat) == len(set(flat)) and all(len(x) == b for p in dl for x in p)
                assert len({len(p) for p in dl}) <= 1


def test_epoch_determinism_and_policies():
    a = sampler.epoch_batches(50, 8, 1, 3, seed=7, epoch=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, sampler.epoch_batches(50, 8, 1, 3, seed=7, epoch=4)))
    b = sampler.epoch_batches(50, 8, 1, 3, seed=7, epoch=5)
    assert not all(np.array_equal(x, y) for x, y in zip(a, b))
    lo, hi = sampler.rank_range(50, 3, 1)
    assert set(np.concatenate(a).tolist()) == set(range(lo, hi))       # partition: own range only
    r = np.concatenate(sampler.epoch_batches(50, 8, 1, 3, seed=7, epoch=4, policy="replicate"))
    assert not set(r.tolist()) <= set(range(lo, hi))                   # replicate: drawn from all
    v = np.concatenate(sampler.epoch_batches(50, 8, 1, 3, shuffle=False))
    assert v.tolist() == list(range(lo, hi))
    with pytest.raises(ValueError, match="policy"):
        sampler.epoch_order(5, 0, 1, 0, 0, "bogus")


@pytest.fixture
def mnist(tmp_path, rng):
    truth = idx(str(tmp_path / "m"), rng, n=29, nval=11)
    pack(str(tmp_path / "m"), str(tmp_path / "p"), shard_bytes=784 * 6, progress=False)
    return Dataset(str(tmp_path / "p")), truth


@pytest.mark.parametrize("mode", ["threads", "processes"])
@pytest.mark.parametrize("policy", ["partition", "replicate"])
def test_loader_epochs_cover_and_match_sources(mnist, mode, policy):
    ds, truth = mnist
    mean, std = ds.manifest["pixel_mean"][0], ds.manifest["pixel_std"][0]
    pos = {bytes(x.tobytes()): i for i, x in enumerate(truth["train"][0])}
    world, b = 3, 4
    for epoch in (1, 2):
        seen = []
        for r in range(world):
            ld = ds.loader("train", batch_size=b, rank=r, world=world, seed=3, workers=2, mode=mode, policy=policy)
            ld.set_epoch(epoch)
            n = 0
            for x, y in ld:
                assert x.dtype == np.float32 and x.shape[1:] == (1, 28, 28) and y.dtype == np.int64
                raw = np.round(x * np.float32(std) + np.float32(mean)).astype(np.uint8)
                for img, lab in zip(raw, y):
                    i = pos[img.tobytes()]
                    assert lab == truth["train"][1][i] + 1
                    seen.append(i)
                n += 1
            assert n == len(ld) == sampler.num_batches(29, b, world)
            s = ld.stats()
            assert s["images"] == sum(len(v) for v in ld.batches()) and s["data_wait_s"] >= 0
            ld.close()
        assert sorted(seen) == list(range(29))


def test_val_each_image_once(mnist):
    ds, truth = mnist
    seen = []
    for r in range(4):
        with ds.loader("val", batch_size=2, rank=r, world=4, shuffle=False, workers=1) as ld:
            seen += [int(v) for _, y in ld for v in y]
    assert sorted(seen) == sorted((truth["val"][1] + 1).tolist())


def test_ring_slots_are_views_recycled_after_release(mnist):
    ds, _ = mnist
    with ds.loader("train", batch_size=4, workers=1, slots=2, seed=1) as ld:
        bases, firsts = [], []
        for x, y in ld:
            assert x.base is not None and np.shares_memory(x, ld.x)
            bases.append(x.__array_interface__["data"][0])
            firsts.append(x.copy())
        assert len(set(bases)) == 2   # two slots, reused
        # a second pass gives the same batches for the same epoch
        again = [x.copy() for x, _ in ld]
        assert all(np.array_equal(a, b) for a, b in zip(firsts, again))
        # abandoning an epoch halfway and starting another is fine
        for k, _ in enumerate(ld):
            if k == 1:
                break
        assert sum(1 for _ in ld) == len(ld)


def _attach(path, q, barrier):
    st = Store(path, "train")
    barrier.wait()
    q.put((st.path, st.created, os.stat(st.path).st_ino, bytes(st.get(0))))
    barrier.wait()
    st.close()


def test_store_shared_between_processes(mnist):
    ds, _ = mnist
    ctx = mp.get_context("fork")
    q, barrier = ctx.Queue(), ctx.Barrier(2)
    ps = [ctx.Process(target=_attach, args=(ds.path, q, barrier)) for _ in range(2)]
    for p in ps:
        p.start()
    got = [q.get(timeout=60) for _ in ps]
    for p in ps:
        p.join(60)
    assert got[0][0] == got[1][0] and got[0][2] == got[1][2] and got[0][3] == got[1][3]
    assert sorted(g[1] for g in got) == [False, True]        # one created it, the other attached
    assert not os.path.exists(got[0][0])                      # the last to leave unlinked it
    segs = [f for f in os.listdir("/dev/shm") if f == os.path.basename(got[0][0])]
    assert segs == []


def test_not_enough_memory_said_before_loading(mnist, monkeypatch):
    ds, _ = mnist
    monkeypatch.setattr(store_mod, "mem_available", lambda: 100)
    need = 29 * 784
    with pytest.raises(NotEnoughMemory, match="need %d bytes" % need):
        Store(ds.path, "train")


@pytest.fixture
def jpegs(tmp_path, rng):
    image_folder(str(tmp_path / "s"), rng, per_class=(4, 3, 3), val=(1, 1, 1), size=(40, 60), fmt="mixed")
    pack(str(tmp_path / "s"), str(tmp_path / "p"), shard_bytes=20000, progress=False)
    return Dataset(str(tmp_path / "p"), image_size=16), tmp_path


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_memory_and_file_loaders_agree(jpegs, mode):
    ds, _ = jpegs
    out = {}
    for source in ("memory", "files"):
        for split in ("train", "val"):
            with ds.loader(split, batch_size=3, rank=1, world=2, seed=11, workers=2, source=source,
                           mode=mode) as ld:
                ld.set_epoch(3)
                out[source, split] = [(x.copy(), y.copy()) for x, y in ld]
    for split in ("train", "val"):
        a, b = out["memory", split], out["files", split]
        assert len(a) == len(b) > 0
        for (xa, ya), (xb, yb) in zip(a, b):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)
    assert out["memory", "train"][0][0].shape[1:] == (3, 16, 16)


def test_corrupt_and_truncated_images(tmp_path, rng):
    image_folder(str(tmp_path / "s"), rng, per_class=(3, 3, 3), val=(1, 1, 1), size=(40, 60))
    trunc = os.path.join("train", "dog", "img0.JPEG")
    garbage = os.path.join("train", "ant", "img1.JPEG")
    data = (tmp_path / "s" / trunc).read_bytes()
    (tmp_path / "s" / trunc).write_bytes(data[:len(data) // 2])    # header fine, body cut
    (tmp_path / "s" / garbage).write_bytes(b"not an image at all")
    m = pack(str(tmp_path / "s"), str(tmp_path / "p"), progress=False)
    assert m["unreadable_headers"] == [garbage]
    ds = Dataset(str(tmp_path / "p"), image_size=16)
    idx = ds.index("train")
    names = list(idx["name"])
    logs = []
    with ds.loader("train", batch_size=4, workers=2, seed=2, log=logs.append) as ld:
        for epoch in (1, 2):
            ld.set_epoch(epoch)
            labels = {}
            for bi, (x, y) in zip(ld.batches(), ld):
                for j, gi in enumerate(bi):
                    labels[names[gi]] = int(y[j])
                    if names[gi] in (trunc, garbage):
                        hw = (int(idx["height"][gi]), int(idx["width"][gi])) if idx["width"][gi] > 0 else (16, 16)
                        gray = np.full((3,) + hw, 0.5, np.float32)
                        want = ds.transform("train")(gray, sample_rng(2, epoch, int(gi)))
                        np.testing.assert_array_equal(x[j], want)
            assert labels[trunc] == 3 and labels[garbage] == 1     # labels never shift
        assert ld.stats()["corrupt"] == 4          # 2 per epoch, counted
    assert len(logs) == 2 and all("gray" in m for m in logs)   # logged once each, with the path
    assert any(trunc in m for m in logs) and any(garbage in m for m in logs)


def test_open_dataset_packs_source_into_cache(tmp_path, rng, monkeypatch):
    monkeypatch.setenv("LUATORCH_DATA", str(tmp_path / "cache"))
    idx(str(tmp_path / "m"), rng)
    ds = open_dataset(str(tmp_path / "m"), progress=False)
    assert ds.path.startswith(str(tmp_path / "cache")) and ds.size("train") == 13
    assert open_dataset(str(tmp_path / "m"), progress=False).path == ds.path
    assert open_dataset(ds.path, image_size=32).image_shape == (1, 32, 32)
    with pytest.raises(ValueError, match="files"):
        ds.loader("train", batch_size=2, source="files")


def test_local_rank_from_env(monkeypatch):
    for k in ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(k, raising=False)
    import sys
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    assert store_mod.local_rank() == (0, 1)               # no MPI at all: one process
    monkeypatch.setenv("MPI_LOCALRANKID", "2")
    monkeypatch.setenv("MPI_LOCALNRANKS", "4")
    assert store_mod.local_rank() == (2, 4)
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3")
    assert store_mod.local_rank() == (1, 3)


@pytest.mark.slow
def test_full_size_imagenet_batches_memory_vs_files(tmp_path):
    """The default 224 pipeline on ImageNet-sized JPEGs: both loaders, both modes, bit-identical."""
    from pytorch_bridge.data.synth import synth
    synth(str(tmp_path / "s"), 12, 3, val=4, seed=2, progress=False)
    pack(str(tmp_path / "s"), str(tmp_path / "p"), progress=False)
    ds = Dataset(str(tmp_path / "p"))
    ref = None
    for source in ("memory", "files"):
        for mode in ("threads", "processes"):
            with ds.loader("train", batch_size=5, workers=2, seed=9, source=source, mode=mode) as ld:
                got = [(x.copy(), y.copy()) for x, y in ld]
            assert [x.shape for x, _ in got] == [(5, 3, 224, 224), (5, 3, 224, 224), (2, 3, 224, 224)]
            if ref is None:
                ref = got
            for (a, b), (c, d) in zip(ref, got):
                np.testing.assert_array_equal(a, c)
                np.testing.assert_array_equal(b, d)
    with ds.loader("val", batch_size=4, workers=1, shuffle=False) as ld:
        x, y = next(iter(ld))
        assert x.shape == (4, 3, 224, 224) and np.isfinite(x).all()


def test_keep_and_remove_unused_segments(mnist):
    ds, _ = mnist
    kept = Store(ds.path, "train", 0, 5, keep=True)
    path = kept.path
    kept.close()
    assert os.path.exists(path)                       # kept for the next run
    again = Store(ds.path, "train", 0, 5)
    assert not again.created and again.path == path  # attached, not rebuilt
    assert path not in store_mod.remove_unused_segments()   # in use: left alone
    again.keep = True
    again.close()
    assert path in store_mod.remove_unused_segments()
    assert not os.path.exists(path) and not os.path.exists(path + ".lock")


@pytest.mark.parametrize("world", [2, 3, 4])
def test_replicate_steps_union_is_the_single_process_batch(world):
    """With `replicate`, step k over all ranks = step k of one process with the global batch: the
    property that makes N ranks compute one process's gradient."""
    n, b = 97, 5
    single = sampler.epoch_batches(n, world * b, 0, 1, seed=3, epoch=2, policy="replicate")
    per_rank = [sampler.epoch_batches(n, b, r, world, seed=3, epoch=2, policy="replicate") for r in range(world)]
    full_steps = n // (world * b)
    for k in range(full_steps):
        union = np.concatenate([per_rank[r][k] for r in range(world)])
        assert sorted(union.tolist()) == sorted(single[k].tolist()), k


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_prefetch_across_epochs_gives_each_epochs_own_batches(mnist, mode):
    """The slots an epoch frees at its end take the next epoch's first batches. Whatever order the epochs are
    asked for in (the next one, the same again, a jump, one abandoned halfway, one read the way the Lua
    DataLoader reads: exactly len() batches, the generator never resumed), every epoch's batches are those
    of a fresh loader that has seen no other epoch."""
    ds, _ = mnist

    def fresh(epoch):
        with ds.loader("train", batch_size=3, rank=1, world=2, seed=5, workers=2, mode=mode) as ld:
            ld.set_epoch(epoch)
            return [(x.copy(), y.copy()) for x, y in ld]

    def same(got, epoch):
        want = fresh(epoch)
        assert len(got) == len(want)
        for (x, y), (wx, wy) in zip(got, want):
            assert np.array_equal(x, wx) and np.array_equal(y, wy), epoch

    with ds.loader("train", batch_size=3, rank=1, world=2, seed=5, workers=2, mode=mode) as ld:
        for epoch in (1, 2, 2, 3, 7, 8):
            ld.set_epoch(epoch)
            same([(x.copy(), y.copy()) for x, y in ld], epoch)
            # read to its end: the next epoch's first batches are with the workers already
            assert ld._ahead["epoch"] == epoch + 1 and len(ld._ahead["slots"]) == ld.nslots - 1
        ld.set_epoch(9)
        for k, _ in enumerate(ld):   # abandoned halfway
            if k == 1:
                break
        ld.set_epoch(10)
        same([(x.copy(), y.copy()) for x, y in ld], 10)
        for epoch in (11, 12):       # as the Lua DataLoader reads
            ld.set_epoch(epoch)
            it = iter(ld)
            same([(x.copy(), y.copy()) for x, y in (next(it) for _ in range(len(ld)))], epoch)
        assert ld.stats()["epochs"] == 9   # every epoch read to its last batch: not the abandoned one
