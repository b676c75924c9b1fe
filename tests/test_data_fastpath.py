"""The C input pipeline (native/src/data_pipeline.c via pytorch_bridge.data.fastpath) against the numpy
pipeline it replaces (transforms.py, the oracle) and against Pillow's decoder.

Tolerance: numpy's chain of float32 roundings (jitter, lighting, normalize one after another) drifts a few
ulps from the exact value; the C side evaluates the same maths as one matrix in double and rounds once.
So C vs a float64 op-by-op evaluation of the same steps on the same resized pixels: <= 1 ulp (which is
what shows the folded matrix is the same maths); C vs numpy: |diff| <= RTOL * max(1, |x|), RTOL = 1.5e-6
(measured: at most 9.5e-7 over 400 synth-data samples, 1.1e-6 on the odd test images here; all of it
numpy's rounding). The resize alone is bit-identical to numpy's."""
import io
import os
import threading

import numpy as np
import pytest
from PIL import Image

from pytorch_bridge.data import Dataset, pack, synth
from pytorch_bridge.data import transforms as T
from pytorch_bridge.data.fastpath import decode_rgb, fast_path

pytestmark = pytest.mark.skipif(fast_path(True) is None, reason="this build of luatorch has no libjpeg")


def jpeg(rng, w, h, subsampling=2, progressive=False, mode="RGB", quality=90):
    """A JPEG of smooth colour plus noise (like a photo) in `mode` (RGB, L, CMYK)."""
    base = Image.fromarray((rng.random((3, 4, 3)) * 255).astype(np.uint8)).resize((w, h), Image.BICUBIC)
    a = np.asarray(base, np.float32) + rng.normal(0, 12, (h, w, 3))
    im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).convert(mode)
    out = io.BytesIO()
    im.save(out, "JPEG", quality=quality, subsampling=subsampling, progressive=progressive)
    return out.getvalue()


def pillow_rgb(data):
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


def as_float(rgb):
    """Dataset.decode's floats from H x W x 3 bytes."""
    return rgb.transpose(2, 0, 1).astype(np.float32) / np.float32(255)


def odd_jpegs(rng, n):
    """Odd sizes (from tiny, smaller than the 224 crop, to large), every chroma subsampling, some progressive."""
    sizes = [(1, 1), (7, 300), (300, 5), (33, 47), (223, 224), (225, 226), (600, 180)]
    out = []
    for k in range(n):
        w, h = sizes[k] if k < len(sizes) else (int(rng.integers(20, 700)), int(rng.integers(20, 600)))
        out.append(jpeg(rng, w, h, subsampling=k % 3, progressive=k % 4 == 3))
    return out


RTOL = 1.5e-6


def assert_close_to_numpy(got, want):
    assert np.isfinite(got).all()
    excess = np.abs(got.astype(np.float64) - want) - RTOL * np.maximum(1, np.abs(want))
    assert excess.max() <= 0, "largest excess over %g relative: %g" % (RTOL, excess.max())


def test_decoder_equals_pillow(rng):
    """libjpeg-turbo here decodes these files exactly as Pillow's does (same IDCT and upsampling)."""
    for data in odd_jpegs(rng, 14):
        np.testing.assert_array_equal(decode_rgb(data, roi=False), pillow_rgb(data))


def test_region_decode_equals_full_decode(rng):
    """jpeg_crop_scanline / jpeg_skip_scanlines of a box give exactly the full decode's pixels there,
    at every chroma subsampling, the image's edges included."""
    for data in odd_jpegs(rng, 12):
        full = decode_rgb(data, roi=False)
        H, W = full.shape[:2]
        boxes = [(0, 0, W, H), (W - 1, H - 1, 1, 1), (0, H // 2, W, H - H // 2)]
        for _ in range(25):
            w, h = int(rng.integers(1, W + 1)), int(rng.integers(1, H + 1))
            boxes.append((int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1)), w, h))
        for x, y, w, h in boxes:
            np.testing.assert_array_equal(decode_rgb(data, (x, y, w, h)), full[y:y + h, x:x + w])


def float64_train(S, draws):
    """imagenet_train's colour steps in float64, op by op, on the resized float32 pixels S (the oracle
    of the folded matrix: the same scalars, rounded where transforms.py rounds them)."""
    x = S.astype(np.float64)
    g = np.array([0.299, 0.587, 0.114], np.float32).astype(np.float64)[:, None, None]
    for op, alpha in draws.jitter:
        a, b = float(np.float32(alpha)), float(np.float32(1 - alpha))
        if op == 0:
            x = a * x
        elif op == 1:
            x = a * x + float(np.float32(b) * np.float32((g * x).sum(0).mean()))
        else:
            x = a * x + b * (g * x).sum(0)[None]
    x = x + draws.light.astype(np.float64)[:, None, None]
    mean = np.array(T.IMAGENET_MEAN, np.float32).astype(np.float64)[:, None, None]
    std = np.array(T.IMAGENET_STD, np.float32).astype(np.float64)[:, None, None]
    x = (x - mean) / std
    return x[:, :, ::-1] if draws.flip else x


def test_train_samples_match_numpy(rng):
    fp = fast_path(True)
    seed = int(rng.integers(1 << 30))
    kinds = set()
    for i, data in enumerate(odd_jpegs(rng, 30)):
        img = as_float(decode_rgb(data, roi=False))
        draws = T.imagenet_train_draws(img.shape[1], img.shape[2], T.sample_rng(seed, 1, i))
        kinds.add("crop" if draws.geometry.scaled_w == draws.geometry.size == draws.geometry.scaled_h
                  and draws.geometry.ox == 0 else "fallback")
        out = np.full((3, 224, 224), np.nan, np.float32)
        g = draws.geometry
        if not g.inside() or min(g.w, g.h) == 0:   # numpy's slicing alone defines it (or fails): left to numpy
            assert not fp.sample(data, T.sample_rng(seed, 1, i), out)
            continue
        assert fp.sample(data, T.sample_rng(seed, 1, i), out)
        assert_close_to_numpy(out, T.imagenet_train(img, T.sample_rng(seed, 1, i)))
        exact = float64_train(np.array(draws.geometry.apply(img), np.float32), draws)
        ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
        assert (np.abs(out - exact) <= ulp).all()
    assert kinds == {"crop", "fallback"}   # the 1 x 1 and 7 x 300 images cannot be cropped


def test_resize_is_numpys_float32_arithmetic(rng):
    """No jitter, lighting or normalization: the resize alone gives numpy's floats bit for bit."""
    fp = fast_path(False)
    fp.resize, fp.size = 64, 48
    for data in odd_jpegs(rng, 12):
        img = as_float(decode_rgb(data, roi=False))
        g = T.short_center_geometry(img.shape[1], img.shape[2], 64, 48)
        p = fp.plan(img.shape[2], img.shape[1], None)
        if p is None:
            assert not g.inside()
            continue
        for c in range(3):
            p.mean[c], p.std[c] = 0.0, 1.0
        out = np.empty((3, 48, 48), np.float32)
        buf = fp.ffi.from_buffer("uint8_t[]", data)
        assert fp.lib.lt_data_jpeg_sample(buf, len(buf), p, fp.ffi.from_buffer("float[]", out), fp.ffi.NULL) == 0
        np.testing.assert_array_equal(out, g.apply(img))


def test_val_samples_match_numpy(rng):
    fp = fast_path(False)
    for i, data in enumerate(odd_jpegs(rng, 20)):
        img = as_float(decode_rgb(data, roi=False))
        out = np.empty((3, 224, 224), np.float32)
        if fp.sample(data, None, out):
            assert_close_to_numpy(out, T.imagenet_val(img))
        else:
            assert not T.short_center_geometry(img.shape[1], img.shape[2], 256, 224).inside()


def test_not_taken_left_to_pillow(rng):
    """Grey, CMYK, PNG, truncated and garbage records: not taken, nothing written."""
    fp = fast_path(True)
    good = jpeg(rng, 90, 70)
    png = io.BytesIO()
    Image.fromarray((rng.random((30, 30, 3)) * 255).astype(np.uint8)).save(png, "PNG")
    for data in (jpeg(rng, 90, 70, mode="L"), jpeg(rng, 90, 70, mode="CMYK"), png.getvalue(),
                 good[:len(good) // 2], good[:-2], b"not an image", b"\xff\xd8\xff" + bytes(100), b""):
        out = np.full((3, 224, 224), 7, np.float32)
        assert not fp.sample(data, T.sample_rng(0, 1, 0), out)
        assert (out == 7).all()


def test_threads_give_the_same_samples(rng):
    """Worker threads (the GIL released in the call, per-thread scratch buffers) give serial results."""
    fp = fast_path(True)
    datas = odd_jpegs(rng, 16)[7:]
    want = [np.empty((3, 224, 224), np.float32) for _ in datas]
    for i, d in enumerate(datas):
        assert fp.sample(d, T.sample_rng(5, 2, i), want[i])
    got = {}

    def work(k):
        for rep in range(3):
            for i, d in enumerate(datas):
                out = np.empty((3, 224, 224), np.float32)
                fp.sample(d, T.sample_rng(5, 2, i), out)
                got[k, rep, i] = out

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (k, rep, i), out in got.items():
        np.testing.assert_array_equal(out, want[i])


@pytest.mark.parametrize("train", [True, False])
def test_batch_call_equals_sample_by_sample(rng, train):
    """batch(): one call, each sample's stream drawn in C, gives what sample() gives with numpy's stream;
    records it does not take (None, grey, truncated, garbage) are marked 1 and their slots left alone."""
    fp = fast_path(train)
    good = odd_jpegs(rng, 12)[4:]
    records = good[:3] + [None, jpeg(rng, 90, 70, mode="L"), good[3][:-2], b"garbage"] + good[3:]
    seed, epoch = int(rng.integers(2 ** 40)), int(rng.integers(100))
    indices = [int(v) for v in rng.integers(0, 2 ** 31, len(records))]
    out = np.full((len(records) + 1, 3, 224, 224), 7, np.float32)
    times = [0.0, 0.0, 0.0]
    status = fp.batch(records, seed, epoch, indices, out, times)
    assert list(status) == [0, 0, 0, 1, 1, 1, 1] + [0] * (len(good) - 3)
    assert all(t > 0 for t in times)
    for k, (data, gi) in enumerate(zip(records, indices)):
        if status[k]:
            assert (out[k] == 7).all()
            continue
        want = np.empty((3, 224, 224), np.float32)
        assert fp.sample(data, T.sample_rng(seed, epoch, gi), want)
        np.testing.assert_array_equal(out[k], want)
    assert (out[-1] == 7).all()   # past the batch: untouched
    assert fp.batch(records, -1, epoch, indices, out) is None   # not a C stream seed: the caller's way
    with pytest.raises(ValueError, match="do not fit"):
        fp.batch(records, seed, epoch, indices, out[:3])


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory):
    """Synthetic ImageNet-like JPEGs plus a grey, a CMYK, a PNG, a tiny, a truncated and a garbage record."""
    root = tmp_path_factory.mktemp("fast")
    src = str(root / "s")
    synth.synth(src, 10, 2, val=4, seed=3, progress=False)
    rng = np.random.default_rng(4)
    cls = sorted(os.listdir(os.path.join(src, "train")))[0]
    extra = {"grey.JPEG": jpeg(rng, 200, 150, mode="L"), "cmyk.JPEG": jpeg(rng, 160, 230, mode="CMYK"),
             "tiny.JPEG": jpeg(rng, 9, 13)}
    png = io.BytesIO()
    Image.fromarray((rng.random((120, 100, 3)) * 255).astype(np.uint8)).save(png, "PNG")
    extra["png.png"] = png.getvalue()
    for name, data in extra.items():
        with open(os.path.join(src, "train", cls, name), "wb") as f:
            f.write(data)
    pack(src, str(root / "p"), progress=False)
    # corrupt after packing (the packer would refuse an unreadable header): in the file loader's source
    trunc = os.path.join(src, "train", cls, "train_00000001.JPEG")
    data = open(trunc, "rb").read()
    with open(trunc, "wb") as f:
        f.write(data[:len(data) // 3])
    return Dataset(str(root / "p")), src


@pytest.mark.parametrize("split", ["train", "val"])
def test_loader_fast_path_matches_numpy_path(mixed_folder, split):
    ds, src = mixed_folder
    out = {}
    for fast in (True, False):
        with ds.loader(split, batch_size=4, workers=2, seed=7, source="files", root=src, fast=fast,
                       log=lambda m: None) as ld:
            ld.set_epoch(2)
            out[fast] = ([(x.copy(), y.copy()) for x, y in ld], ld.stats())
    (a, sa), (b, sb) = out[True], out[False]
    assert len(a) == len(b) > 0
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(ya, yb)
        assert_close_to_numpy(xa, xb.astype(np.float64))
    assert sa["corrupt"] == sb["corrupt"] == (1 if split == "train" else 0)
    assert sb["fast"] == 0
    n = ds.size(split)
    assert sa["fast"] == (n - 4 if split == "train" else n)   # grey, CMYK, PNG, truncated went to Pillow
    assert sa["decode_s"] > 0 and sa["scale_s"] > 0 and sa["colour_s"] > 0


def test_bench_data_records_ceiling_and_pieces(tmp_path):
    """`luatorch bench data` with the C and numpy pipelines, the decode-only ceiling and the numpy pieces."""
    import json
    from run.cli import main
    synth.synth(str(tmp_path / "s"), 8, 2, seed=1, progress=False)
    assert main(["pack", str(tmp_path / "s"), str(tmp_path / "p")]) == 0
    out = tmp_path / "d.json"
    assert main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "s"), "--workers", "1,2",
                 "--modes", "threads", "--caches", "warm", "--loaders", "memory,ceiling,pieces", "--pipelines",
                 "c,numpy", "--batches", "2", "--batch-size", "4", "--iter-ms", "0", "--json", str(out)]) == 0
    recs = json.loads(out.read_text())
    kinds = {(r["loader"], r.get("pipeline"), r["workers"]) for r in recs}
    assert kinds == {("memory", "c", 1), ("memory", "numpy", 1), ("memory", "c", 2), ("memory", "numpy", 2),
                     ("ceiling", None, 1), ("ceiling", None, 2), ("pieces", "numpy", 1)}
    for r in recs:
        assert r["loadavg"] >= 0
        if r["loader"] == "pieces":
            assert all(r[k + "_ms_per_image"] > 0 for k in ("decode", "scale", "colour", "copy"))
        else:
            assert r["images_per_s"] > 0
    c = [r for r in recs if r.get("pipeline") == "c"]
    assert all(r["fast_images"] == r["images"] == 8 and r["scale_ms_per_image"] > 0 for r in c)
    assert all(r["images_per_s_full"] > 0 for r in recs if r["loader"] == "ceiling")


def test_bench_data_torchvision_needs_an_interpreter_that_has_it(tmp_path):
    """Loader torchvision with an interpreter that cannot import it: one clear line before anything runs."""
    from run.cli import main
    synth.synth(str(tmp_path / "s"), 4, 2, seed=1, progress=False)
    assert main(["pack", str(tmp_path / "s"), str(tmp_path / "p")]) == 0
    no_tv = tmp_path / "py"
    no_tv.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torchvision'\" >&2\nexit 1\n")
    no_tv.chmod(0o755)
    with pytest.raises(SystemExit, match="cannot import torch \\+ torchvision .*No module named 'torchvision'.*"
                                         "--torchvision-python"):
        main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "s"), "--loaders",
              "memory,torchvision", "--torchvision-python", str(no_tv), "--iter-ms", "0"])


def test_bench_data_summary_ratios():
    """The summary's medians over rounds and the C pipeline's ratios to torchvision and to the ceiling."""
    from run.bench_data import summarize
    recs = [dict(loader="memory", pipeline="c", mode="threads", cache="warm", workers=1, images_per_s=v)
            for v in (600, 800, 700)]
    recs += [dict(loader="torchvision", pipeline="torchvision", mode="processes", cache="warm", workers=1,
                  images_per_s=v) for v in (300, 200, 250)]
    recs += [dict(loader="ceiling", mode="threads", cache="warm", workers=1, images_per_s=v) for v in (1000, 1100)]
    recs += [dict(loader="memory", pipeline="c", mode="threads", cache="cold", workers=1, images_per_s=1.0)]
    rows = {(r[0], r[3]): r for r in summarize(recs)}
    assert rows["memory", 1][4:] == ["700", 3, "2.80", "0.67"]   # 700 / 250, 700 / 1050
    assert rows["torchvision", 1][4:] == ["250", 3, "-", "-"]
    assert rows["ceiling", 1][4:] == ["1050", 2, "-", "-"]


@pytest.mark.skipif(not os.environ.get("LUATORCH_TORCHVISION_PYTHON"),
                    reason="LUATORCH_TORCHVISION_PYTHON (an interpreter with torch + torchvision) is not set")
def test_bench_data_runs_torchvision(tmp_path):
    """The real torchvision pipeline on the bench's files, side by side with ours."""
    import json
    from run.cli import main
    synth.synth(str(tmp_path / "s"), 12, 2, seed=1, progress=False)
    assert main(["pack", str(tmp_path / "s"), str(tmp_path / "p")]) == 0
    out = tmp_path / "d.json"
    for transform in ("train", "val"):
        assert main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "s"), "--workers", "1",
                     "--modes", "threads", "--caches", "warm", "--loaders", "memory,torchvision", "--batches", "2",
                     "--batch-size", "4", "--iter-ms", "0", "--transform", transform, "--json", str(out)]) == 0
        (tv,) = [r for r in json.loads(out.read_text()) if r["loader"] == "torchvision"]
        assert tv["images"] == 8 and tv["images_per_s"] > 0 and tv["torchvision"] and tv["transform"] == transform
