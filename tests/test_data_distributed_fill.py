"""The store's distributed fill (Store(..., fill="distributed")) under a real MPI job on this host.

Every "host" is a shared-memory folder of its own (the ranks that see the same segment file are one host),
so 2-3 ranks here act as 2-3 hosts: each filler reads its 1/N of the bytes, the rest comes over MPI, and
every host's segment must be byte-identical to a plain load. A missing or corrupt shard on one rank's copy
of the set must fail every rank with one clear message, and none may hang.

This file is also the MPI worker: `python tests/test_data_distributed_fill.py worker OUT PACKED... `.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def worker(out, fill, packed_by_rank, shm_by_rank):
    """One rank: load the store from its packed path into its shm folder (kept), report what it read."""
    from mpi4py import MPI
    from pytorch_bridge.data.store import FillError, Store
    rank = MPI.COMM_WORLD.Get_rank()
    rec = {"rank": rank}
    try:
        st = Store(packed_by_rank[rank], "train", fill=fill, keep=True, shm_dir=shm_by_rank[rank])
        rec.update(ok=True, created=st.created, read_bytes=st.read_bytes, nbytes=st.nbytes, path=st.path)
        st.close()
    except FillError as e:
        rec.update(ok=False, error=str(e))
    with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
        json.dump(rec, f)


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    out, fill, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    args = sys.argv[5:]
    worker(out, fill, args[:n], args[n:])
    sys.exit(0)


import numpy as np  # noqa: E402  (the test side only)
from data_sources import image_folder  # noqa: E402
from test_collectives import LAUNCHERS, ROOT  # noqa: E402

from pytorch_bridge.data import pack  # noqa: E402
from pytorch_bridge.data.pack import ChecksumError, open_packed  # noqa: E402
from pytorch_bridge.data.store import Store  # noqa: E402


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    d = tmp_path_factory.mktemp("fill")
    seed = int.from_bytes(os.urandom(4), "little")
    print("numpy seed", seed)
    image_folder(str(d / "src"), np.random.default_rng(seed), per_class=(12, 10, 14), size=(30, 50))
    # small shards, so a filler's 1/N spans shard boundaries
    pack(str(d / "src"), str(d / "packed"), shard_bytes=20000, progress=False)
    return str(d / "packed")


def _segments(shm):
    return sorted(p for p in glob.glob(os.path.join(shm, "luatorch-data-*")) if "." not in os.path.basename(p))


def _plain(packed, tmp_path):
    shm = str(tmp_path / "plain-shm")
    os.makedirs(shm)
    st = Store(packed, "train", keep=True, shm_dir=shm)
    st.close()
    (seg,) = _segments(shm)
    with open(seg, "rb") as f:
        return f.read()


def _mpirun(tmp_path, fill, packed_by_rank, shm_by_rank, timeout=120, make=True):
    if "mpich" not in LAUNCHERS:
        pytest.skip("the mpich wheel's mpiexec is not installed")
    out = str(tmp_path / "out")
    os.makedirs(out, exist_ok=True)
    for d in shm_by_rank if make else ():
        os.makedirs(d, exist_ok=True)
    cmd, env = LAUNCHERS["mpich"]
    n = len(packed_by_rank)
    r = subprocess.run([*cmd, "-n", str(n), sys.executable, os.path.abspath(__file__), "worker", out, fill, str(n),
                        *packed_by_rank, *shm_by_rank], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **env, "PYTHONPATH": ROOT}, cwd=ROOT)
    recs = []
    for k in range(n):
        p = os.path.join(out, "rank%d.json" % k)
        assert os.path.exists(p), "rank %d reported nothing: %s" % (k, (r.stdout + r.stderr)[-3000:])
        with open(p) as f:
            recs.append(json.load(f))
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return recs


@pytest.mark.parametrize("nranks", [2, 3])
def test_every_host_gets_the_plain_load(packed, tmp_path, nranks):
    want = _plain(packed, tmp_path)
    shms = [str(tmp_path / ("shm%d" % k)) for k in range(nranks)]
    recs = _mpirun(tmp_path, "distributed", [packed] * nranks, shms)
    assert all(r["ok"] and r["created"] for r in recs), recs
    for d in shms:
        (seg,) = _segments(d)
        with open(seg, "rb") as f:
            assert f.read() == want
        assert not glob.glob(os.path.join(d, "*.tmp*")) and not glob.glob(os.path.join(d, "luatorch-probe-*"))
    # each host read its 1/N of the bytes, not the whole set
    total = recs[0]["nbytes"]
    assert sum(r["read_bytes"] for r in recs) == total, recs
    assert all(abs(r["read_bytes"] - total / nranks) <= 1 for r in recs), recs


def test_two_ranks_of_one_host_fill_it_once(packed, tmp_path):
    """Ranks 0 and 1 share a folder (one host), rank 2 has its own: two fillers, each reading half."""
    want = _plain(packed, tmp_path)
    a, b = str(tmp_path / "hostA"), str(tmp_path / "hostB")
    recs = _mpirun(tmp_path, "distributed", [packed] * 3, [a, a, b])
    assert all(r["ok"] for r in recs), recs
    assert [r["created"] for r in recs] == [True, False, True]
    total = recs[0]["nbytes"]
    assert [r["read_bytes"] for r in recs] == [total // 2, 0, total - total // 2]
    for d in (a, b):
        (seg,) = _segments(d)
        with open(seg, "rb") as f:
            assert f.read() == want


def test_a_host_that_has_the_segment_sits_out(packed, tmp_path):
    """Rank 0's host already holds the store (kept from an earlier job): the two others fill between them."""
    a, b, c = (str(tmp_path / h) for h in "abc")
    os.makedirs(a)
    Store(packed, "train", keep=True, shm_dir=a).close()
    recs = _mpirun(tmp_path, "distributed", [packed] * 3, [a, b, c])
    assert all(r["ok"] for r in recs), recs
    total = recs[0]["nbytes"]
    assert [r["created"] for r in recs] == [False, True, True]
    assert recs[0]["read_bytes"] == 0 and recs[1]["read_bytes"] + recs[2]["read_bytes"] == total


def _copies(packed, tmp_path, n):
    paths = []
    for k in range(n):
        p = str(tmp_path / ("copy%d" % k))
        shutil.copytree(packed, p)
        paths.append(p)
    return paths


def _shard_read_by(packed, rank, nranks):
    """A shard file with bytes inside rank's 1/N of the segment, and an offset in it that rank reads."""
    m = open_packed(packed)
    shards = m["splits"]["train"]["shards"]
    total = sum(s["bytes"] for s in shards)
    lo, hi = total * rank // nranks, total * (rank + 1) // nranks
    pos = 0
    for s in shards:
        if pos <= (lo + hi) // 2 < pos + s["bytes"]:
            return s["file"], (lo + hi) // 2 - pos
        pos += s["bytes"]
    raise AssertionError("no shard")


def test_corrupt_shard_on_one_rank_fails_all(packed, tmp_path):
    copies = _copies(packed, tmp_path, 3)
    name, off = _shard_read_by(packed, 1, 3)
    with open(os.path.join(copies[1], name), "r+b") as f:   # same size: only the CRC can tell
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0xFF]))
    shms = [str(tmp_path / ("shm%d" % k)) for k in range(3)]
    recs = _mpirun(tmp_path, "distributed", copies, shms, timeout=90)
    assert not any(r["ok"] for r in recs), recs
    for r in recs:
        assert "fails its checksum" in r["error"] and name in r["error"], r
    for d in shms:   # nothing half-made left behind
        assert os.listdir(d) == [], os.listdir(d)


def test_missing_shard_on_one_rank_fails_all(packed, tmp_path):
    copies = _copies(packed, tmp_path, 3)
    name, _ = _shard_read_by(packed, 2, 3)
    os.unlink(os.path.join(copies[2], name))
    shms = [str(tmp_path / ("shm%d" % k)) for k in range(3)]
    recs = _mpirun(tmp_path, "distributed", copies, shms, timeout=90)
    assert not any(r["ok"] for r in recs), recs
    errors = {r["error"] for r in recs}
    assert len(errors) == 1, errors   # the same line on every rank
    (err,) = errors
    assert "rank 2" in err and name in err, err
    for d in shms:
        assert os.listdir(d) == [], os.listdir(d)


def test_without_mpi_it_is_the_plain_fill(packed, tmp_path):
    want = _plain(packed, tmp_path)
    shm = str(tmp_path / "one")
    os.makedirs(shm)
    st = Store(packed, "train", fill="distributed", keep=True, shm_dir=shm)
    assert st.created and st.read_bytes == len(want)
    st.close()
    (seg,) = _segments(shm)
    with open(seg, "rb") as f:
        assert f.read() == want


def test_plain_fill_reads_each_shard_once_and_still_checks_it(packed, tmp_path):
    """The CRC of a whole shard is taken on the bytes read into the segment, not by reading the file again."""
    (copy,) = _copies(packed, tmp_path, 1)
    shm = str(tmp_path / "shm")
    os.makedirs(shm)
    st = Store(copy, "train", shm_dir=shm)
    assert st.read_bytes == st.nbytes
    st.close()
    name, off = _shard_read_by(packed, 0, 1)
    with open(os.path.join(copy, name), "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(ChecksumError, match="fails its checksum"):
        Store(copy, "train", shm_dir=shm)
    assert os.listdir(shm) == []


def test_bad_fill_name(packed, tmp_path):
    with pytest.raises(ValueError, match="fill must be one of local, distributed"):
        Store(packed, "train", fill="everywhere", shm_dir=str(tmp_path))


def test_a_part_of_the_set_reads_each_shard_it_touches_once(packed, tmp_path):
    """partition's ranges cut shards: a cut shard is read once, whole (its CRC is the file's), not twice."""
    m = open_packed(packed)
    shards = m["splits"]["train"]["shards"]
    assert len(shards) >= 3
    cut = shards[1]
    start, end = cut["first"] + 1, cut["first"] + cut["count"] - 1   # inside one shard
    shm = str(tmp_path / "shm")
    os.makedirs(shm)
    st = Store(packed, "train", start, end, shm_dir=shm)
    assert st.read_bytes == cut["bytes"] and 0 < st.nbytes < cut["bytes"]
    full = _plain(packed, tmp_path)
    first = sum(s["bytes"] for s in shards[:1])
    offsets = st.index["offset"]
    got = bytes(st.buf)
    st.close()
    # the same bytes as the whole-split load holds for those records
    z = np.load(os.path.join(packed, cut["index"]))
    a = first + int(z["offset"][1])
    assert got == full[a:a + len(got)] and offsets[0] == 0
    (copy,) = _copies(packed, tmp_path, 1)
    with open(os.path.join(copy, cut["file"]), "r+b") as f:   # a byte of the shard outside the range
        f.seek(0)
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(ChecksumError, match="fails its checksum"):
        Store(copy, "train", start, end, shm_dir=shm)


def test_a_rank_that_cannot_write_its_folder_fails_all(packed, tmp_path):
    shms = [str(tmp_path / "a")]
    os.makedirs(shms[0])
    missing = str(tmp_path / "no" / "such")
    recs = _mpirun(tmp_path, "distributed", [packed] * 2, [shms[0], missing], timeout=90, make=False)
    assert not any(r["ok"] for r in recs), recs
    assert all("rank 1" in r["error"] and missing in r["error"] for r in recs), recs
    assert os.listdir(shms[0]) == []


def _train(tmp_path, *args):
    from run.launch import child_env
    cmd = [sys.executable, "-m", "run.cli", "train", "--save", str(tmp_path / "run"), "--model", "resnet",
           "--depth", "18", "--workers", "1", "--val-iters", "1", "--max-iters", "2", "--epochs", "1",
           "--batch-size", "4", *args]
    return subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=600)


def test_train_with_the_distributed_fill(packed, tmp_path):
    """`luatorch train -dataFill distributed`: 2 ranks (one host here: one filler) train from the store."""
    if "mpich" not in LAUNCHERS:
        pytest.skip("the mpich wheel's mpiexec is not installed")
    r = _train(tmp_path, "--dataset", packed, "--np", "2", "-dataFill", "distributed")
    assert r.returncode == 0, r.stderr[-3000:]
    with open(tmp_path / "run" / "log.jsonl") as f:
        assert json.loads(f.readline())["ranks"] == 2


def test_train_refuses_the_distributed_fill_with_partition(packed, tmp_path):
    r = _train(tmp_path, "--dataset", packed, "-dataFill", "distributed", "-dataPolicy", "partition")
    assert r.returncode != 0
    assert "-dataFill distributed needs -dataPolicy replicate" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = _train(tmp_path, "--dataset", packed, "-dataFill", "everywhere")
    assert r.returncode == 2 and "-dataFill must be local or distributed (got everywhere)" in r.stderr, r.stderr
