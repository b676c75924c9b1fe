"""JPEGs with restart markers (native/src/data_restart.c): the lossless transcode pack does with
`restarts=True`, and the decode of only the MCU rows and segments around a box.

Oracles: Pillow's decode of the original file (the transcode must not change a pixel), and the whole
decode of the same file for every box; the loader's batches from a set packed with and without markers."""
import io
import os

import numpy as np
import pytest
from PIL import Image

from pytorch_bridge.data import Dataset, pack, synth
from pytorch_bridge.data.fastpath import decode_rgb, fast_path
from pytorch_bridge.data.pack import add_restarts, load_manifest
from test_data_fastpath import jpeg, odd_jpegs, pillow_rgb

pytestmark = pytest.mark.skipif(fast_path(True) is None, reason="this build of luatorch has no libjpeg")


def markers(data):
    """(restart interval, MCUs per row, RST markers in the scan) read from the bytes, independently of C."""
    p, interval, hmax, width = 2, 0, 1, 0
    while True:
        m, n = data[p + 1], int.from_bytes(data[p + 2:p + 4], "big")
        if m in (0xC0, 0xC1):
            width = int.from_bytes(data[p + 7:p + 9], "big")
            hmax = max(data[p + 11 + 3 * c] >> 4 for c in range(data[p + 9]))
        elif m == 0xDD:
            interval = int.from_bytes(data[p + 4:p + 6], "big")
        elif m == 0xDA:
            scan = data[p + 2 + n:]
            break
        p += 2 + n
    rst = sum(scan.count(bytes([0xFF, 0xD0 + k])) for k in range(8))
    return interval, -(-width // (8 * hmax)), rst


def test_transcode_keeps_every_pixel(rng):
    """Every chroma subsampling, odd and tiny sizes: the same pixels as Pillow's decode of the original,
    an interval that divides the MCU row, and a marker at every interval; progressive JPEGs, files that
    already have markers, grey ones aside, and non-JPEG data come back as they were."""
    datas = odd_jpegs(rng, 24) + [jpeg(rng, 333, 251, subsampling=s, quality=97) for s in (0, 1, 2)]
    done = 0
    for k, data in enumerate(datas):
        out = add_restarts(data)
        if k < 24 and k % 4 == 3:   # odd_jpegs makes every fourth one progressive
            assert out == data
            continue
        done += 1
        assert out != data
        np.testing.assert_array_equal(pillow_rgb(out), pillow_rgb(data))
        interval, per_row, rst = markers(out)
        assert 1 <= interval <= 4 and per_row % interval == 0
        with Image.open(io.BytesIO(data)) as im:
            mcu_h = 16 if im.layer[0][2] == 2 else 8   # luma's vertical sampling factor
            rows = -(-im.size[1] // mcu_h)
        assert rst == rows * per_row // interval - 1
        assert add_restarts(out) == out   # already has them
    assert done == 21
    grey = jpeg(rng, 50, 40, mode="L")
    np.testing.assert_array_equal(pillow_rgb(add_restarts(grey)), pillow_rgb(grey))
    for data in (b"", b"not a jpeg", datas[0][:len(datas[0]) // 2]):
        assert add_restarts(data) == data


def test_window_decode_equals_whole_decode(rng):
    """Random boxes, the image's edges and corners included, at every subsampling: decoding only the MCU
    rows and segments around the box gives exactly the whole image's pixels there."""
    datas = [add_restarts(d) for k, d in enumerate(odd_jpegs(rng, 16)) if k % 4 != 3]
    datas += [add_restarts(jpeg(rng, int(rng.integers(200, 700)), int(rng.integers(150, 600)), subsampling=s))
              for s in (0, 1, 2)]
    for data in datas:
        full = decode_rgb(data, roi=False)
        H, W = full.shape[:2]
        boxes = [(0, 0, W, H), (W - 1, H - 1, 1, 1), (0, 0, 1, 1), (W - 1, 0, 1, H), (0, H // 2, W, H - H // 2)]
        for _ in range(40):
            w, h = int(rng.integers(1, W + 1)), int(rng.integers(1, H + 1))
            boxes.append((int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1)), w, h))
        for x, y, w, h in boxes:
            np.testing.assert_array_equal(decode_rgb(data, (x, y, w, h)), full[y:y + h, x:x + w],
                                          err_msg="box %s of %d x %d" % ((x, y, w, h), W, H))


def test_damaged_markers_are_not_trusted(rng):
    """A restart marker renumbered or the scan cut short: no window is made from it; the decode either
    gives the whole decode's pixels or fails with a message (the loader then goes the Pillow way)."""
    data = add_restarts(jpeg(rng, 300, 200))
    full = decode_rgb(data, roi=False)
    at = data.rindex(b"\xff\xd3")
    renumbered = data[:at] + b"\xff\xd5" + data[at + 2:]
    box = (100, 90, 60, 50)
    for bad in (renumbered, data[:len(data) * 2 // 3], data[:-2]):
        got = decode_rgb(bad, box)
        assert got is None or np.array_equal(got, full[90:140, 100:160])
    fp = fast_path(True)
    out = np.full((2, 3, 224, 224), 7, np.float32)
    status = fp.batch([data[:len(data) // 2], renumbered], 1, 0, [0, 1], out)
    assert status[0] != 0 and (out[0] == 7).all()   # truncated: not taken
    assert status[1] in (0, -1, 1)


def test_loader_batches_equal_with_and_without_markers(tmp_path):
    """The same set packed both ways: bit-identical batches from the C pipeline (same pixels, same
    draws), smaller records, and the manifest says which."""
    src = str(tmp_path / "s")
    synth.synth(src, 24, 3, val=6, seed=5, progress=False)
    pack(src, str(tmp_path / "plain"), progress=False)
    pack(src, str(tmp_path / "rst"), progress=False, restarts=True)
    m = load_manifest(str(tmp_path / "rst"))
    assert m["jpeg_restarts"] and not load_manifest(str(tmp_path / "plain"))["jpeg_restarts"]
    sizes = {}
    for split in ("train", "val"):
        got = {}
        for name in ("plain", "rst"):
            ds = Dataset(str(tmp_path / name))
            with ds.loader(split, batch_size=8, workers=2, seed=3, log=lambda m: None) as ld:
                ld.set_epoch(1)
                got[name] = [(x.copy(), y.copy()) for x, y in ld]
                assert ld.stats()["fast"] == ds.size(split)
            sizes[name] = sum(s["bytes"] for s in load_manifest(str(tmp_path / name))["splits"][split]["shards"])
        assert len(got["plain"]) == len(got["rst"]) > 0
        for (xa, ya), (xb, yb) in zip(got["plain"], got["rst"]):
            np.testing.assert_array_equal(ya, yb)
            np.testing.assert_array_equal(xa, xb)
        assert sizes["rst"] < sizes["plain"]   # optimized Huffman tables outweigh the markers here
    # a repack with the other choice rewrites the shards (the option is part of what a shard holds)
    m2 = pack(src, str(tmp_path / "rst"), progress=False, restarts=False)
    assert not m2["jpeg_restarts"] and m2.get("resumed_shards") == 0
    assert os.path.exists(tmp_path / "rst" / "manifest.json")
