"""synth-data (real JPEGs, deterministic, ImageNet-like sizes) and a smoke run of `bench data`."""
import glob
import json
import os

import numpy as np
import pytest
import pytest
from PIL import Image

from pytorch_bridge.data.synth import make_image, synth


def test_synth_folder_deterministic(tmp_path):
    synth(str(tmp_path / "a"), 7, 3, val=2, seed=4, progress=False, size=(40, 30))
    synth(str(tmp_path / "b"), 7, 3, val=2, seed=4, workers=1, progress=False, size=(40, 30))
    fa = sorted(os.path.relpath(p, tmp_path / "a") for p in glob.glob(str(tmp_path / "a" / "*" / "*" / "*")))
    assert len(fa) == 9 and sum(f.startswith("train") for f in fa) == 7
    assert len(os.listdir(tmp_path / "a" / "train")) == 3
    for f in fa:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
        with Image.open(tmp_path / "a" / f) as im:
            assert im.format == "JPEG" and im.size == (40, 30)
    assert make_image(4, "train", 0, 40, 30) != make_image(5, "train", 0, 40, 30)


@pytest.mark.slow
def test_synth_sizes_like_imagenet():
    sizes, dims = [], []
    for i in range(40):
        b = make_image(0, "train", i)
        sizes.append(len(b))
        import io
        dims.append(Image.open(io.BytesIO(b)).size)
    w, h = np.mean(dims, 0)
    assert 360 < w < 440 and 315 < h < 385
    assert 85e3 < np.mean(sizes) < 140e3


def test_bench_data_smoke(tmp_path):
    synth(str(tmp_path / "src"), 8, 2, seed=1, progress=False, size=(48, 40))
    from run.cli import main
    assert main(["pack", str(tmp_path / "src"), str(tmp_path / "p")]) == 0
    out = tmp_path / "d.json"
    assert main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "src"), "--workers", "1",
                 "--modes", "threads", "--caches", "warm", "--batches", "1", "--batch-size", "4", "--iter-ms", "5",
                 "--json", str(out)]) == 0
    recs = json.loads(out.read_text())
    assert {r["loader"] for r in recs} == {"memory", "files"}
    for r in recs:
        for k in ("loader", "workers", "cache", "images_per_s", "data_wait_fraction"):
            assert k in r
        assert r["images_per_s"] > 0 and 0 <= r["data_wait_fraction"] <= 1
    from run.data_report import main as report
    report([str(out), "--svg", str(tmp_path / "d.svg")])
    assert (tmp_path / "d.svg").read_text().startswith("<svg")


def test_bench_data_epochs_measure_the_last_whole_epoch(tmp_path):
    """--epochs 2: each data-wait run reads two whole epochs on one loader and reports the second, whose first
    batch the loader prefetched at the first one's end; the throughput run stays one epoch."""
    synth(str(tmp_path / "src"), 12, 2, seed=1, progress=False, size=(48, 40))
    from run.cli import main
    assert main(["pack", str(tmp_path / "src"), str(tmp_path / "p")]) == 0
    out = tmp_path / "d.json"
    assert main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "src"), "--workers", "1",
                 "--modes", "threads", "--caches", "warm", "--loaders", "memory", "--batches", "1", "--batch-size",
                 "4", "--iter-ms", "5", "--epochs", "2", "--json", str(out)]) == 0
    (r,) = json.loads(out.read_text())
    assert r["epochs"] == 2 and len(r["data_wait_fraction_per_epoch"]) == 2
    assert r["data_wait_fraction"] == pytest.approx(r["data_wait_fraction_per_epoch"][1], rel=0.05, abs=1e-3)
    assert r["images"] == 4   # the throughput run: --batches 1, one epoch
    assert r["first_batch_wait_ms"] >= 0 and r["consumer_wait_fraction"] >= r["data_wait_fraction"] - 1e-6
