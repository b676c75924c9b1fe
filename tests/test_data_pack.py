"""luatorch pack: round trip for every source kind, --verify, resume, bad sources."""
import json
import os

import numpy as np
import pytest

from data_sources import cifar_binary, cifar_python, fb_cifar_t7, idx, image_folder
from pytorch_bridge.data import ChecksumError, Dataset, SourceError, pack, verify
from pytorch_bridge.data.store import Store


def records(out, split):
    """Every record of a packed split, in stored order, read through the shared-memory store."""
    st = Store(out, split)
    try:
        return [bytes(st.get(i)) for i in range(len(st))], st.labels.copy(), st.index["name"].copy()
    finally:
        st.close()


@pytest.mark.parametrize("fmt", ["JPEG", "mixed"])
def test_folder_round_trip(tmp_path, rng, fmt):
    src = tmp_path / "src"
    truth = image_folder(str(src), rng, fmt=fmt)
    m = pack(str(src), str(tmp_path / "p"), shard_bytes=3000, workers=2, progress=False)
    assert m["classes"] == ["ant", "cat", "dog"]
    ds = Dataset(str(tmp_path / "p"))
    assert ds.kind == "imagenet" and ds.num_classes == 3 and ds.image_shape == (3, 224, 224)
    for split in ("train", "val"):
        data, labels, names = records(str(tmp_path / "p"), split)
        want = {k: v for k, v in truth.items() if k.startswith(split + os.sep)}
        assert sorted(names) == sorted(want) and ds.size(split) == len(want)
        for d, lab, name in zip(data, labels, names):
            assert d == (src / name).read_bytes()
            assert lab == want[name] + 1          # 1-based, sorted-folder numbering
    assert len(m["splits"]["train"]["shards"]) > 1   # small shards: several per split


def _check_arrays(out, truth, classes=None):
    ds = Dataset(out)
    if classes:
        assert ds.classes == classes
    for split, (x, y) in truth.items():
        data, labels, names = records(out, split)
        assert len(data) == len(x)
        order = np.array([int(n) for n in names])
        assert sorted(order.tolist()) == list(range(len(x)))   # a permutation of the source
        for d, i in zip(data, order):
            assert d == x[i].tobytes()
        np.testing.assert_array_equal(labels, np.asarray(y)[order] + 1)
    return ds


def test_cifar_python_round_trip(tmp_path, rng):
    truth, names = cifar_python(str(tmp_path / "c"), rng)
    pack(str(tmp_path / "c"), str(tmp_path / "p"), shard_bytes=3072 * 4, progress=False)
    ds = _check_arrays(str(tmp_path / "p"), truth, names)
    assert ds.kind == "cifar" and ds.image_shape == (3, 32, 32)


def test_cifar_binary_round_trip(tmp_path, rng):
    truth, names = cifar_binary(str(tmp_path / "c"), rng)
    pack(str(tmp_path / "c"), str(tmp_path / "p"), progress=False)
    _check_arrays(str(tmp_path / "p"), truth, names)


@pytest.mark.parametrize("gz", [True, False])
def test_idx_round_trip(tmp_path, rng, gz):
    truth = idx(str(tmp_path / "m"), rng, gz=gz)
    pack(str(tmp_path / "m"), str(tmp_path / "p"), shard_bytes=784 * 5, progress=False)
    ds = _check_arrays(str(tmp_path / "p"), truth)
    assert ds.kind == "mnist" and ds.image_shape == (1, 28, 28)
    m = ds.manifest
    x = truth["train"][0].astype(np.float64)
    assert m["pixel_mean"][0] == pytest.approx(x.mean()) and m["pixel_std"][0] == pytest.approx(x.std())


def test_fb_cifar_t7_round_trip(tmp_path, rng):
    truth = fb_cifar_t7(str(tmp_path / "cifar10.t7"), rng)
    pack(str(tmp_path / "cifar10.t7"), str(tmp_path / "p"), progress=False)
    ds = _check_arrays(str(tmp_path / "p"), truth)
    assert ds.num_classes == 10 and ds.classes[0] == "airplane"


def test_verify_names_flipped_shard(tmp_path, rng):
    image_folder(str(tmp_path / "s"), rng)
    out = str(tmp_path / "p")
    m = pack(str(tmp_path / "s"), out, shard_bytes=3000, progress=False)
    assert verify(out) == []
    victim = m["splits"]["train"]["shards"][1]["file"]
    with open(os.path.join(out, victim), "r+b") as f:
        f.seek(5)
        b = f.read(1)
        f.seek(5)
        f.write(bytes([b[0] ^ 0x10]))
    bad = verify(out)
    assert len(bad) == 1 and bad[0].startswith(victim)
    with pytest.raises(ChecksumError, match=victim):
        Store(out, "train").close()
    from run.pack import main
    assert main(["--verify", out]) == 1


def test_resume_skips_complete_shards(tmp_path, rng):
    image_folder(str(tmp_path / "s"), rng, per_class=(4, 4, 4))
    out = str(tmp_path / "p")
    m = pack(str(tmp_path / "s"), out, shard_bytes=2500, progress=False)
    shards = m["splits"]["train"]["shards"]
    assert len(shards) >= 3
    mtimes = {s["file"]: os.stat(os.path.join(out, s["file"])).st_mtime_ns for s in shards}
    # an interrupted pack: one shard never finished, one corrupted after being written
    os.unlink(os.path.join(out, shards[0]["file"]))
    with open(os.path.join(out, shards[1]["file"]), "r+b") as f:
        f.write(b"\0\0\0\0")
    m2 = pack(str(tmp_path / "s"), out, shard_bytes=2500, progress=False)
    total = sum(len(s["shards"]) for s in m2["splits"].values())
    assert m2["resumed_shards"] == total - 2
    for s in shards[2:]:
        assert os.stat(os.path.join(out, s["file"])).st_mtime_ns == mtimes[s["file"]]
    assert verify(out) == []
    assert [s["crc32"] for s in m2["splits"]["train"]["shards"]] == [s["crc32"] for s in shards]


def test_pack_cli_and_progress(tmp_path, rng, capsys):
    image_folder(str(tmp_path / "s"), rng)
    from run.cli import main
    assert main(["pack", str(tmp_path / "s"), str(tmp_path / "p"), "--shard-mb", "0.003", "--workers", "2"]) == 0
    cap = capsys.readouterr()
    assert "train: 9 images" in cap.out and "/s ETA" in cap.err
    assert main(["pack", "--verify", str(tmp_path / "p")]) == 0
    json.load(open(tmp_path / "p" / "manifest.json"))


def test_bad_sources(tmp_path, rng):
    with pytest.raises(SourceError, match="no such"):
        pack(str(tmp_path / "nope"), str(tmp_path / "p"), progress=False)
    (tmp_path / "a" / "train" / "x").mkdir(parents=True)
    with pytest.raises(SourceError, match="empty class folder"):
        pack(str(tmp_path / "a"), str(tmp_path / "p"), progress=False)
    (tmp_path / "b" / "train").mkdir(parents=True)
    with pytest.raises(SourceError, match="no class folders"):
        pack(str(tmp_path / "b"), str(tmp_path / "p"), progress=False)
    image_folder(str(tmp_path / "c"), rng)
    (tmp_path / "c" / "val" / "zebra").mkdir()
    with pytest.raises(SourceError, match="zebra"):
        pack(str(tmp_path / "c"), str(tmp_path / "p"), progress=False)
    from run.pack import main
    assert main([str(tmp_path / "b"), str(tmp_path / "p")]) == 2
