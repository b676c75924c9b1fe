"""Torch7's image package (lua/image over native/src/image_*.c).

Oracles: Pillow for JPEG/PNG decoding and encoding, a tiny PNG writer below (zlib + struct) for the
bit depths and colour types Pillow does not write, NumPy/SciPy for resampling and convolution,
Python's colorsys for HSV/HSL, published CIE L*a*b* values of the sRGB primaries, and the formulas
of image's documentation.
"""
import colorsys
import io
import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

from pytorch_bridge import LuaError, Runtime

PIL = pytest.importorskip("PIL.Image")
from PIL import Image  # noqa: E402

scipy_ndimage = pytest.importorskip("scipy.ndimage")
scipy_signal = pytest.importorskip("scipy.signal")

from pytorch_bridge import native  # noqa: E402

# the codecs are built only where libjpeg and libpng (headers and library) were found
HAVE = native.lib.lt_image_codecs()
needs_jpeg = pytest.mark.skipif(not HAVE & 1, reason="this build has no JPEG support (apt-get install libjpeg-dev)")
needs_png = pytest.mark.skipif(not HAVE & 2, reason="this build has no PNG support (apt-get install libpng-dev)")


@pytest.fixture(scope="module")
def irt():
    rt = Runtime()
    rt.execute("require 'image'")
    return rt


def call(rt, src, *args):
    """Run a Lua function (source text) on the arguments; numpy arrays become tensors."""
    conv = [rt.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
    return rt.call(rt.eval(src), *conv)


def arr(rt, t):
    return rt.to_numpy(t).copy()


def blob(data):
    return np.frombuffer(data, np.uint8).copy()


def lua_error(rt, src, *args):
    with pytest.raises(LuaError) as e:
        call(rt, src, *args)
    return e.value.lua_message


def chw(a):
    """H x W x C (Pillow's layout) -> C x H x W (Torch7's)."""
    return a.transpose(2, 0, 1) if a.ndim == 3 else a[None]


# ---------------------------------------------------------------------------------- a small PNG writer

def png_bytes(samples, color_type, bit_depth, palette=None, trns=None):
    """PNG of `samples` (H x W x channels of ints, or H x W palette indices / grey), filter 0 rows."""
    h, w = samples.shape[:2]
    flat = samples.reshape(h, -1).astype(np.int64)
    rows = []
    for y in range(h):
        if bit_depth == 16:
            row = b"".join(struct.pack(">H", int(v)) for v in flat[y])
        elif bit_depth == 8:
            row = bytes(int(v) for v in flat[y])
        else:  # pack sub-byte samples, most significant first
            bits = "".join(format(int(v), "0%db" % bit_depth) for v in flat[y])
            bits += "0" * (-len(bits) % 8)
            row = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
        rows.append(b"\x00" + row)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    if palette is not None:
        out += chunk(b"PLTE", bytes(int(v) for v in np.asarray(palette).reshape(-1)))
    if trns is not None:
        out += chunk(b"tRNS", bytes(int(v) for v in trns))
    return out + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")


DECOMPRESS_PNG = "function(b, t) return image.decompressPNG(b, nil, t) end"
DECOMPRESS_JPG = "function(b, t) return image.decompressJPG(b, nil, t) end"


# ---------------------------------------------------------------------------------- PNG decoding

@pytest.mark.parametrize("mode,channels", [("RGB", 3), ("L", 1), ("RGBA", 4), ("LA", 2)])
@needs_png
def test_png_8bit_matches_pillow(irt, rng, mode, channels):
    shape = (13, 17, channels) if channels > 1 else (13, 17)
    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels, mode).save(buf, "PNG")
    ref = chw(np.asarray(Image.open(io.BytesIO(buf.getvalue()))))
    got = arr(irt, call(irt, DECOMPRESS_PNG, blob(buf.getvalue()), "byte"))
    assert got.dtype == np.uint8 and got.shape == (channels, 13, 17)
    np.testing.assert_array_equal(got, ref)
    as_float = arr(irt, call(irt, DECOMPRESS_PNG, blob(buf.getvalue()), "float"))
    assert as_float.dtype == np.float32
    np.testing.assert_allclose(as_float, ref / 255.0, rtol=0, atol=1e-7)


@pytest.mark.parametrize("color_type,channels", [(0, 1), (2, 3), (4, 2), (6, 4)])
@needs_png
def test_png_16bit_scaling(irt, rng, color_type, channels):
    """16-bit samples: float/double = value / 65535, byte = the high byte (Torch7's png.c)."""
    samples = rng.integers(0, 65536, (5, 7, channels))
    data = blob(png_bytes(samples, color_type, 16))
    want = samples.transpose(2, 0, 1)
    got = arr(irt, call(irt, DECOMPRESS_PNG, data, "double"))
    np.testing.assert_allclose(got, want / 65535.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(arr(irt, call(irt, DECOMPRESS_PNG, data, "byte")), want >> 8)


@needs_png
def test_png_palette_and_low_bit_grey(irt, rng):
    palette = rng.integers(0, 256, (16, 3))
    index = rng.integers(0, 16, (6, 9))
    got = arr(irt, call(irt, DECOMPRESS_PNG, blob(png_bytes(index, 3, 4, palette=palette)), "byte"))
    np.testing.assert_array_equal(got, palette[index].transpose(2, 0, 1))
    # a palette with transparency becomes RGBA
    alpha = rng.integers(0, 256, 16)
    got = arr(irt, call(irt, DECOMPRESS_PNG, blob(png_bytes(index, 3, 4, palette=palette, trns=alpha)), "byte"))
    np.testing.assert_array_equal(got[:3], palette[index].transpose(2, 0, 1))
    np.testing.assert_array_equal(got[3], alpha[index])
    # 1- and 2-bit grey are expanded to 0..255 (value * 255 / (2^bits - 1))
    for bits in (1, 2):
        grey = rng.integers(0, 2 ** bits, (4, 11))
        got = arr(irt, call(irt, DECOMPRESS_PNG, blob(png_bytes(grey, 0, bits)), "byte"))
        np.testing.assert_array_equal(got[0], grey * 255 // (2 ** bits - 1))


# ---------------------------------------------------------------------------------- JPEG decoding

@pytest.mark.parametrize("quality", [30, 75, 95, 100])
@pytest.mark.parametrize("mode", ["RGB", "L"])
@needs_jpeg
def test_jpeg_decoding_matches_pillow(irt, rng, quality, mode):
    """libjpeg-turbo here and Pillow's own libjpeg-turbo: measured identical (max 0); allow the
    +-1 of a different IDCT build."""
    small = rng.integers(0, 256, (20, 30, 3) if mode == "RGB" else (20, 30), dtype=np.uint8)
    picture = Image.fromarray(small, mode).resize((97, 61), Image.BILINEAR)
    buf = io.BytesIO()
    picture.save(buf, "JPEG", quality=quality)
    ref = chw(np.asarray(Image.open(io.BytesIO(buf.getvalue())))).astype(int)
    got = arr(irt, call(irt, DECOMPRESS_JPG, blob(buf.getvalue()), "byte")).astype(int)
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1
    as_double = arr(irt, call(irt, DECOMPRESS_JPG, blob(buf.getvalue()), "double"))
    np.testing.assert_allclose(as_double * 255, got, atol=1e-9)


@needs_png
@needs_jpeg
def test_load_by_content_and_depth(irt, rng, tmp_path):
    rgb = rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)
    path = str(tmp_path / "picture.jpeg.bin")  # the extension is unknown: the signature decides
    Image.fromarray(rgb).save(path, "PNG")
    got = arr(irt, call(irt, "function(p) return image.load(p, nil, 'byte') end", path))
    np.testing.assert_array_equal(got, rgb.transpose(2, 0, 1))
    grey = arr(irt, call(irt, "function(p) return image.load(p, 1, 'double') end", path))
    luma = (0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]) / 255
    assert grey.shape == (8, 10)
    np.testing.assert_allclose(grey, luma, atol=1e-12)
    size = arr(irt, call(irt, "function(p) return image.getSize(p) end", path))
    np.testing.assert_array_equal(size, [3, 8, 10])
    # grey to 3 channels: the plane repeated
    Image.fromarray(rgb[..., 0]).save(str(tmp_path / "g.png"))
    three = arr(irt, call(irt, "function(p) return image.load(p, 3, 'byte') end", str(tmp_path / "g.png")))
    np.testing.assert_array_equal(three, np.stack([rgb[..., 0]] * 3))


# ---------------------------------------------------------------------------------- saving

@needs_png
def test_png_save_load_roundtrip_exact(irt, rng, tmp_path):
    for shape in [(3, 9, 14), (1, 9, 14), (4, 9, 14), (9, 14)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        path = str(tmp_path / "x.png")
        call(irt, "function(p, x) image.save(p, x) end", path, img)
        back = arr(irt, call(irt, "function(p) return image.load(p, nil, 'byte') end", path))
        np.testing.assert_array_equal(back.reshape(img.shape), img)
        pillow = np.asarray(Image.open(path))
        np.testing.assert_array_equal(chw(pillow).reshape(img.shape), img)


@needs_png
def test_float_save_scales_clamps_and_truncates(irt, tmp_path):
    """Float images are clamped to [0, 1], times 255, truncated (Torch7's conversion)."""
    vals = np.array([[-0.5, 0.0, 0.5, 0.999, 1.0, 1.7, 100 / 255, 0.2]], np.float64)
    path = str(tmp_path / "f.png")
    call(irt, "function(p, x) image.savePNG(p, x) end", path, vals)
    np.testing.assert_array_equal(np.asarray(Image.open(path))[0], np.floor(np.clip(vals[0], 0, 1) * 255))


@needs_jpeg
def test_jpeg_save_psnr(irt, rng, tmp_path):
    smooth = np.asarray(Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)).resize((96, 64), Image.BICUBIC))
    img = smooth.transpose(2, 0, 1).astype(np.float32) / 255
    path = str(tmp_path / "x.jpg")
    call(irt, "function(p, x) image.saveJPG(p, x) end", path, img)
    back = np.asarray(Image.open(path)).transpose(2, 0, 1) / 255.0
    psnr = 10 * np.log10(1 / np.mean((back - img) ** 2))
    # Pillow's encoder at the same quality (75, image.saveJPG's) is the yardstick
    buf = io.BytesIO()
    Image.fromarray(smooth).save(buf, "JPEG", quality=75)
    theirs = np.asarray(Image.open(io.BytesIO(buf.getvalue()))).transpose(2, 0, 1) / 255.0
    psnr_pillow = 10 * np.log10(1 / np.mean((theirs - img) ** 2))
    assert psnr > 25 and psnr >= psnr_pillow - 0.5, (psnr, psnr_pillow)
    # quality orders the sizes; compressJPG bytes are a JPEG Pillow reads
    sizes = [int(call(irt, "function(x, q) return image.compressJPG(x, q):nElement() end", img, q)) for q in (10, 50, 95)]
    assert sizes[0] < sizes[1] < sizes[2]
    data = arr(irt, call(irt, "function(x) return image.compressJPG(x, 90) end", img)).tobytes()
    assert Image.open(io.BytesIO(data)).size == (96, 64)


@needs_png
@needs_jpeg
def test_noncontiguous_inputs(irt, rng, tmp_path):
    img = rng.integers(0, 256, (3, 10, 12), dtype=np.uint8)
    # a transposed view (W and H swapped) saves what it shows
    path = str(tmp_path / "t.png")
    call(irt, "function(p, x) image.savePNG(p, x:transpose(2, 3)) end", path, img)
    np.testing.assert_array_equal(chw(np.asarray(Image.open(path))), img.transpose(0, 2, 1))
    # a narrowed view scales like its copy
    got = arr(irt, call(irt, "function(x) return image.scale(x:narrow(3, 3, 8), 5, 4, 'bilinear') end", img))
    want = arr(irt, call(irt, "function(x) return image.scale(x:narrow(3, 3, 8):clone(), 5, 4, 'bilinear') end", img))
    np.testing.assert_array_equal(got, want)
    flipped = arr(irt, call(irt, "function(x) return image.hflip(x:transpose(2, 3)) end", img))
    np.testing.assert_array_equal(flipped, img.transpose(0, 2, 1)[:, :, ::-1])


# ---------------------------------------------------------------------------------- PPM / PGM

def test_ppm_pgm_read_write(irt, rng, tmp_path):
    rgb = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    p6 = tmp_path / "a.ppm"
    p6.write_bytes(b"P6\n# comment\n6 5\n255\n" + rgb.tobytes())
    np.testing.assert_array_equal(arr(irt, call(irt, "function(p) return image.load(p, nil, 'byte') end", str(p6))),
                                  rgb.transpose(2, 0, 1))
    grey = rng.integers(0, 16, (3, 4))
    p2 = tmp_path / "b.pgm"
    p2.write_text("P2\n4 3\n15\n" + "\n".join(" ".join(str(v) for v in row) for row in grey) + "\n")
    got = arr(irt, call(irt, "function(p) return image.load(p, nil, 'byte') end", str(p2)))
    np.testing.assert_array_equal(got[0], grey * 255 // 15)
    got = arr(irt, call(irt, "function(p) return image.load(p, nil, 'double') end", str(p2)))
    np.testing.assert_allclose(got[0], grey / 15.0, atol=1e-12)
    # our writer's files are what Pillow reads
    out = str(tmp_path / "c.ppm")
    call(irt, "function(p, x) image.save(p, x) end", out, rgb.transpose(2, 0, 1).copy())
    np.testing.assert_array_equal(np.asarray(Image.open(out)), rgb)
    out = str(tmp_path / "d.pgm")
    call(irt, "function(p, x) image.save(p, x) end", out, rgb[..., 1].copy())
    np.testing.assert_array_equal(np.asarray(Image.open(out)), rgb[..., 1])


# ---------------------------------------------------------------------------------- errors

@needs_png
@needs_jpeg
def test_corrupt_and_missing_files_raise_named_errors(irt, rng, tmp_path):
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(buf, "JPEG")
    jpeg = buf.getvalue()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(jpeg[: len(jpeg) // 2])
    msg = lua_error(irt, "function(p) return image.load(p) end", str(cut))
    assert "cut.jpg" in msg and "truncated" in msg
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(buf, "PNG")
    png = buf.getvalue()
    cut = tmp_path / "cut.png"
    cut.write_bytes(png[: len(png) // 2])
    msg = lua_error(irt, "function(p) return image.load(p) end", str(cut))
    assert "cut.png" in msg and "not a readable PNG" in msg
    bad = bytearray(png)
    bad[16:20] = b"\xff\xff\xff\xff"  # an impossible width, the IHDR CRC no longer matches
    (tmp_path / "bad.png").write_bytes(bytes(bad))
    msg = lua_error(irt, "function(p) return image.load(p) end", str(tmp_path / "bad.png"))
    assert "bad.png" in msg and "Error during init_io" in msg
    msg = lua_error(irt, "function(p) return image.load(p) end", str(tmp_path / "nothing.png"))
    assert "nothing.png" in msg
    garbage = blob(b"\xff\xd8\xff" + bytes(rng.integers(0, 256, 500, dtype=np.uint8)))
    assert "not a readable JPEG" in lua_error(irt, DECOMPRESS_JPG, garbage, "byte")
    assert "not PNG data" in lua_error(irt, DECOMPRESS_PNG, garbage, "byte")
    (tmp_path / "x.pbm").write_bytes(b"P4\n1 1\n\x80")
    assert "unsupported magic number: P4" in lua_error(irt, "function(p) return image.loadPPM(p) end", str(tmp_path / "x.pbm"))
    (tmp_path / "short.ppm").write_bytes(b"P6\n4 4\n255\n" + b"\x00" * 10)
    assert "truncated" in lua_error(irt, "function(p) return image.load(p) end", str(tmp_path / "short.ppm"))
    (tmp_path / "noext").write_bytes(b"BM" + b"\x00" * 30)
    assert "unable to determine image type" in lua_error(irt, "function(p) return image.load(p) end", str(tmp_path / "noext"))
    assert "quality" in lua_error(irt, "function() return image.compressJPG(torch.rand(3, 4, 4), 101) end")


@needs_png
def test_corrupt_file_under_luatorch_th_is_one_line(tmp_path):
    """A script hitting a corrupt PNG gets a Lua error it can catch, with the file named, and the
    process survives (no exit() from libpng)."""
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    script = tmp_path / "s.lua"
    script.write_text("require 'image'\nlocal ok, err = pcall(image.load, 'broken.png')\n"
                      "print(ok, (err:gsub('\\n', ' ')))\nprint('still alive')\n")
    exe = os.path.join(os.path.dirname(sys.executable), "luatorch")
    out = subprocess.run([exe, "th", str(script)], cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "still alive"
    assert lines[-2].startswith("false") and "broken.png" in lines[-2] and "Error during init_io" in lines[-2]


# ---------------------------------------------------------------------------------- scaling

def align_corners_linear(x, n):
    """1-D linear resampling with the end samples aligned (image.scale's upsampling)."""
    return np.interp(np.arange(n) * ((len(x) - 1) / (n - 1)), np.arange(len(x)), x)


def area_average(x, n):
    """1-D box-filter downsampling: each output averages the source interval it covers."""
    edges = np.arange(n + 1) * (len(x) / n)
    cum = np.concatenate([[0], np.cumsum(x)])
    integral = np.interp(edges, np.arange(len(x) + 1), cum)
    return np.diff(integral) / np.diff(edges)


def test_scale_bilinear_against_numpy(irt, rng):
    src = rng.random((2, 6, 9))
    up = arr(irt, call(irt, "function(x) return image.scale(x, 20, 15, 'bilinear') end", src))
    rows = np.apply_along_axis(align_corners_linear, 2, src, 20)
    want = np.apply_along_axis(align_corners_linear, 1, rows, 15)
    np.testing.assert_allclose(up, want, atol=1e-5)
    src = rng.random((1, 24, 30))
    down = arr(irt, call(irt, "function(x) return image.scale(x, 7, 11, 'bilinear') end", src))
    want = np.apply_along_axis(area_average, 1, np.apply_along_axis(area_average, 2, src, 7), 11)
    np.testing.assert_allclose(down, want, atol=1e-5)


def test_scale_bicubic_reproduces_linear_ramps(irt):
    """Catmull-Rom with linear extrapolation at the ends is exact on linear images."""
    yy, xx = np.mgrid[0:5, 0:8]
    src = (0.3 * xx + 0.7 * yy + 1.0)[None]
    got = arr(irt, call(irt, "function(x) return image.scale(x, 22, 13, 'bicubic') end", src))
    gy, gx = np.meshgrid(np.linspace(0, 4, 13), np.linspace(0, 7, 22), indexing="ij")
    np.testing.assert_allclose(got[0], 0.3 * gx + 0.7 * gy + 1.0, atol=1e-4)


def test_scale_simple_and_size_forms(irt, rng):
    src = rng.random((3, 10, 20))
    got = arr(irt, call(irt, "function(x) return image.scale(x, 7, 4, 'simple') end", src))
    ys = np.minimum((np.arange(4) * np.float32(10 / 4)).astype(int), 9)
    xs = np.minimum((np.arange(7) * np.float32(20 / 7)).astype(int), 19)
    np.testing.assert_array_equal(got, src[:, ys][:, :, xs])
    shape = lambda spec: tuple(arr(irt, call(irt, "function(x, s) return torch.LongTensor(image.scale(x, s):size():totable()) end", src, spec)))
    assert shape(10) == (3, 5, 10)        # longest side
    assert shape("6x9") == (3, 9, 6)      # W x H
    assert shape("^5") == (3, 5, 10)      # shortest side
    assert shape("*0.5") == (3, 5, 10)
    assert shape("*3/2") == (3, 15, 30)
    dst = call(irt, "function(x) local d = torch.DoubleTensor(3, 4, 5); image.scale(d, x); return d end", src)
    assert arr(irt, dst).shape == (3, 4, 5)


def test_scale_bytes_round_like_floats(irt, rng):
    src = rng.integers(0, 256, (3, 9, 13), dtype=np.uint8)
    for mode in ("bilinear", "bicubic"):
        as_bytes = arr(irt, call(irt, "function(x, m) return image.scale(x, 6, 17, m) end", src, mode)).astype(int)
        assert as_bytes.min() >= 0 and as_bytes.max() <= 255


# ---------------------------------------------------------------------------------- rotate, warp, crop

def test_rotate_quarter_turn_is_rot90(irt, rng):
    src = rng.random((2, 9, 9))
    for mode in ("simple", "bilinear"):
        got = arr(irt, call(irt, "function(x, m) return image.rotate(x, math.pi / 2, m) end", src, mode))
        np.testing.assert_allclose(got, np.rot90(src, 1, axes=(1, 2)), atol=1e-5)


def test_warp_against_scipy_map_coordinates(irt, rng):
    src = rng.random((2, 12, 15))
    yy, xx = np.mgrid[0:10, 0:11].astype(float)
    sy, sx = yy * 1.05 + 0.37, xx * 1.2 + 0.61  # all inside the source
    flow = np.stack([sy, sx])
    got = arr(irt, call(irt, "function(x, f) return image.warp(x, f, 'bilinear', false) end", src, flow))
    want = np.stack([scipy_ndimage.map_coordinates(p, [sy, sx], order=1) for p in src])
    np.testing.assert_allclose(got, want, atol=1e-5)
    # offset mode: the field is added to each pixel's own (y, x); nearest sampling rounds
    got = arr(irt, call(irt, "function(x, f) return image.warp(x, f, 'simple') end", src, flow - np.stack([yy, xx])))
    want = src[:, np.floor(sy + 0.5).astype(int), np.floor(sx + 0.5).astype(int)]
    np.testing.assert_allclose(got, want, atol=1e-6)
    # samples off the image: clamped to the border, or the pad value
    far = np.full((2, 3, 4), -50.0)
    got = arr(irt, call(irt, "function(x, f) return image.warp(x, f, 'bilinear', false) end", src, far))
    np.testing.assert_allclose(got, np.broadcast_to(src[:, :1, :1], (2, 3, 4)), atol=1e-6)
    got = arr(irt, call(irt, "function(x, f) return image.warp(x, f, 'lanczos', false, 'pad', 0.25) end", src, far))
    np.testing.assert_allclose(got, 0.25)


def test_warp_identity_every_mode(irt, rng):
    src = rng.random((3, 8, 9)).astype(np.float32)
    for mode in ("simple", "bilinear", "bicubic", "lanczos"):
        got = arr(irt, call(irt, "function(x, m) return image.warp(x, torch.FloatTensor(2, 8, 9):zero(), m) end", src, mode))
        np.testing.assert_allclose(got, src, atol=1e-5, err_msg=mode)


def test_crop_forms_and_translate(irt, rng):
    src = rng.random((3, 10, 12))
    np.testing.assert_array_equal(arr(irt, call(irt, "function(x) return image.crop(x, 2, 3, 7, 9) end", src)), src[:, 3:9, 2:7])
    np.testing.assert_array_equal(arr(irt, call(irt, "function(x) return image.crop(x, 'c', 4, 6) end", src)), src[:, 2:8, 4:8])
    np.testing.assert_array_equal(arr(irt, call(irt, "function(x) return image.crop(x, 'br', 4, 6) end", src)), src[:, 4:, 8:])
    np.testing.assert_array_equal(arr(irt, call(irt, "function(x) return image.crop(x, 'tr', 5, 2) end", src)), src[:, :2, 7:])
    got = arr(irt, call(irt, "function(x) local d = torch.DoubleTensor(3, 2, 3); image.crop(d, x, 4, 5); return d end", src))
    np.testing.assert_array_equal(got, src[:, 5:7, 4:7])
    assert "outside" in lua_error(irt, "function(x) return image.crop(x, 5, 5, 20, 8) end", src)
    moved = arr(irt, call(irt, "function(x) return image.translate(x, 3, -2) end", src))
    want = np.zeros_like(src)
    want[:, :8, 3:] = src[:, 2:, :9]
    np.testing.assert_array_equal(moved, want)


def test_flips(irt, rng):
    src = rng.random((2, 3, 4, 5))
    for dim in range(1, 5):
        got = arr(irt, call(irt, "function(x, d) return image.flip(x, d) end", src, dim))
        np.testing.assert_array_equal(got, np.flip(src, dim - 1))
    img = rng.random((3, 5, 6))
    # in place (the tensor shares the array's memory: pass a copy)
    got = arr(irt, call(irt, "function(x) image.vflip(x, x); return x end", img.copy()))
    np.testing.assert_array_equal(got, img[:, ::-1])


# ---------------------------------------------------------------------------------- colour

def test_hsv_hsl_against_colorsys(irt, rng):
    rgb = rng.random((3, 6, 7))
    pix = rgb.reshape(3, -1).T
    hsv = arr(irt, call(irt, "function(x) return image.rgb2hsv(x) end", rgb)).reshape(3, -1).T
    np.testing.assert_allclose(hsv, [colorsys.rgb_to_hsv(*p) for p in pix], atol=1e-9)
    hls = np.array([colorsys.rgb_to_hls(*p) for p in pix])
    hsl = arr(irt, call(irt, "function(x) return image.rgb2hsl(x) end", rgb)).reshape(3, -1).T
    np.testing.assert_allclose(hsl, hls[:, [0, 2, 1]], atol=1e-9)
    for there, back in (("rgb2hsv", "hsv2rgb"), ("rgb2hsl", "hsl2rgb"), ("rgb2lab", "lab2rgb"), ("rgb2yuv", "yuv2rgb")):
        got = arr(irt, call(irt, "function(x) return image.%s(image.%s(x)) end" % (back, there), rgb))
        np.testing.assert_allclose(got, rgb, atol=1e-4, err_msg=there)


def test_lab_of_the_srgb_primaries(irt):
    """CIE L*a*b* (D65) of sRGB white, red, green, blue (published reference values)."""
    colours = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]], float).reshape(3, 1, 4)
    lab = arr(irt, call(irt, "function(x) return image.rgb2lab(x) end", colours))[:, 0].T
    want = [[100, 0, 0], [53.24, 80.09, 67.20], [87.73, -86.18, 83.18], [32.30, 79.19, -107.86]]
    np.testing.assert_allclose(lab, want, atol=0.1)
    assert "ByteTensor" in lua_error(irt, "function(x) return image.rgb2lab(x) end", (colours * 255).astype(np.uint8))


def test_rgb2y_and_byte_colour_conversions(irt, rng):
    rgb = rng.random((3, 4, 5))
    y = arr(irt, call(irt, "function(x) return image.rgb2y(x) end", rgb))
    np.testing.assert_allclose(y[0], 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2], atol=1e-12)
    as_bytes = rng.integers(0, 256, (3, 4, 5), dtype=np.uint8)
    hsv = arr(irt, call(irt, "function(x) return image.rgb2hsv(x) end", as_bytes))
    ref = np.array([colorsys.rgb_to_hsv(*(p / 255.0)) for p in as_bytes.reshape(3, -1).T]).T.reshape(3, 4, 5)
    assert np.abs(hsv.astype(float) - ref * 255).max() <= 0.5 + 1e-3


def test_y2jet_and_colormaps(irt):
    jet = arr(irt, call(irt, "function() return image.jetColormap(8) end"))
    q = 4 * np.arange(1, 9) / 8
    want = np.clip(np.stack([np.minimum(q - 1.5, 4.5 - q), np.minimum(q - 0.5, 3.5 - q), np.minimum(q + 0.5, 2.5 - q)], 1), 0, 1)
    np.testing.assert_allclose(jet, want, atol=1e-12)
    levels = np.array([[1, 3], [8, 2]], float)
    got = arr(irt, call(irt, "function(x) return image.y2jet(x) end", levels))
    np.testing.assert_allclose(got, want[levels.astype(int) - 1].transpose(2, 0, 1))
    np.testing.assert_array_equal(levels, [[1, 3], [8, 2]])  # the input is left alone


# ---------------------------------------------------------------------------------- kernels, filters

def test_gaussian_formula(irt):
    g = arr(irt, call(irt, "function() return image.gaussian{width=7, height=5, sigma_horz=0.2, sigma_vert=0.3, "
                            "amplitude=2, mean_horz=0.4, mean_vert=0.6} end"))
    v, u = np.mgrid[1:6, 1:8]
    want = 2 * np.exp(-0.5 * (((u - (0.4 * 7 + 0.5)) / (0.2 * 7)) ** 2 + ((v - (0.6 * 5 + 0.5)) / (0.3 * 5)) ** 2))
    np.testing.assert_allclose(g, want, rtol=1e-12)
    n = arr(irt, call(irt, "function() return image.gaussian(9, 0.25, 1, true) end"))
    assert abs(n.sum() - 1) < 1e-12 and n.shape == (9, 9)
    g1 = arr(irt, call(irt, "function() return image.gaussian1D{size=6, sigma=0.3, mean=0.5} end"))
    np.testing.assert_allclose(g1, np.exp(-0.5 * ((np.arange(1, 7) - 3.5) / 1.8) ** 2), rtol=1e-12)


def test_convolve_modes_against_scipy(irt, rng):
    src = rng.random((2, 9, 11))
    kernel = rng.random((3, 4))
    full = np.stack([scipy_signal.convolve2d(p, kernel, mode="full") for p in src])
    for mode, want in (("full", full), ("valid", np.stack([scipy_signal.convolve2d(p, kernel, mode="valid") for p in src])),
                       ("same", full[:, 1:10, 1:12])):
        got = arr(irt, call(irt, "function(x, k, m) return image.convolve(x, k, m) end", src, kernel, mode))
        np.testing.assert_allclose(got, want, atol=1e-10, err_msg=mode)


def test_minmax_and_display_grid(irt, rng):
    x = rng.random((4, 5)) * 10 - 3
    got = arr(irt, call(irt, "function(x) return image.minmax{tensor=x} end", x))
    np.testing.assert_allclose(got, (x - x.min()) / (x.max() - x.min()), atol=1e-12)
    grid = arr(irt, call(irt, "function(x) return image.toDisplayTensor{input=x, nrow=2, padding=1} end", rng.random((3, 1, 4, 4))))
    assert grid.shape == (1, 10, 10) and grid.min() >= 0 and grid.max() <= 1
    assert "no display" in irt.execute("local out = {} ; local p = print; print = function(s) out[1] = s end; "
                                       "image.display(torch.rand(3, 4, 4)); print = p; return out[1]")


def test_draw_rect(irt):
    img = np.zeros((3, 8, 10), np.uint8)
    got = arr(irt, call(irt, "function(x) return image.drawRect(x, 2, 3, 6, 5, {color={10, 20, 30}}) end", img))
    # corners are 1-based: columns 2 and 6 are 0-based 1 and 5, rows 3 and 5 are 2 and 4
    mask = np.zeros((8, 10), bool)
    mask[2:5, 1] = mask[2:5, 5] = True
    mask[2, 1:6] = mask[4, 1:6] = True
    for k, c in enumerate((10, 20, 30)):
        np.testing.assert_array_equal(got[k], np.where(mask, c, 0))
    np.testing.assert_array_equal(img, 0)  # drawn on a copy


def test_erode_dilate_against_scipy(irt, rng):
    im = (rng.random((12, 14)) > 0.4).astype(np.float64)
    eroded = arr(irt, call(irt, "function(x) return image.erode(x) end", im))
    # erode pads with 1: outside pixels count as set
    want = scipy_ndimage.binary_erosion(im, np.ones((3, 3)), border_value=1)
    np.testing.assert_array_equal(eroded, want.astype(float))
    dilated = arr(irt, call(irt, "function(x) return image.dilate(x) end", im))
    np.testing.assert_array_equal(dilated, scipy_ndimage.binary_dilation(im, np.ones((3, 3))).astype(float))


def test_lcn_affine_polar(irt, rng):
    im = rng.random((20, 24))
    out = arr(irt, call(irt, "function(x) return image.lcn(x) end", im))
    assert out.shape == (12, 16) and np.isfinite(out).all()
    # standardise, subtract the local (9 x 9 Gaussian) mean, divide by max(1, local std)
    k = arr(irt, call(irt, "function() return image.gaussian{size=9, sigma=1.591/9, normalize=true} end"))
    z = (im - im.mean()) / im.std(ddof=1)
    mean = scipy_signal.convolve2d(z, k, mode="valid")
    std = np.sqrt(np.clip(scipy_signal.convolve2d(z * z, k, mode="valid") - mean ** 2, 0, None))
    np.testing.assert_allclose(out, (z[4:16, 4:20] - mean) / np.maximum(std, 1), atol=1e-10)
    src = rng.random((2, 9, 11))
    same = arr(irt, call(irt, "function(x) return image.affinetransform(x, torch.eye(2), 'bilinear') end", src))
    np.testing.assert_allclose(same, src, atol=1e-6)
    flat = np.full((1, 16, 16), 0.75)
    for fn in ("polar", "logpolar"):
        got = arr(irt, call(irt, "function(x, f) return image[f](x, 'bilinear', 'valid') end", flat, fn))
        assert got.shape == (1, 16, 16)
        np.testing.assert_allclose(got, 0.75, atol=1e-6, err_msg=fn)
