"""The ImageNet transforms in C (native/src/data_pipeline.c), for the loader's worker threads.

    fp = fast_path(train=True, size=224, resize=256)   # None when the native library has no JPEG codec
    ok = fp.sample(jpeg_bytes, rng, out, times)        # out: a 3 x size x size float32 batch slot

The draws are transforms.py's own (imagenet_train_draws / short_center_geometry on the size in the
JPEG header), and so are the resize taps (cubic_taps), so a sample equals the numpy pipeline's on the
same decoded pixels; the C side decodes only the rows and columns the taps read (libjpeg-turbo's
jpeg_crop_scanline / jpeg_skip_scanlines), resizes the bytes and applies ColorJitter, Lighting and
ColorNormalize as one per-image matrix. The call releases the GIL (cffi does, for every call).

sample() returns False, having written nothing, for what the C path does not take — grey, CMYK or
truncated JPEGs, other formats, corrupt data, a window numpy slicing alone defines — and the caller
decodes that record the usual way (Pillow + numpy) with a fresh random stream.
"""
import threading

import numpy as np

from . import transforms as T


class JpegFastPath:
    _taps = {}   # (src, dst) -> cdata pointers into cubic_taps' arrays; shared by every loader of the process

    def __init__(self, ffi, lib, train, size, resize):
        self.ffi, self.lib = ffi, lib
        self.train, self.size, self.resize = bool(train), int(size), int(resize)
        self.roi = 1
        self._local = threading.local()  # per worker thread: its plan struct and small buffers

    def _state(self):
        st = self._local.__dict__
        if not st:
            st.update(plan=self.ffi.new("lt_data_plan *"), info=self.ffi.new("int64_t[4]"),
                      times=self.ffi.new("double[3]"))
        return st

    def taps(self, src, dst):
        """cubic_taps(src, dst) as (int64_t *, float *), made once per size pair (they keep the arrays)."""
        t = self._taps.get((src, dst))
        if t is None:
            if len(self._taps) > 4096:   # bounded: val sizes vary with every image size
                self._taps.clear()
            idx, w = T.cubic_taps(src, dst)
            t = self._taps[src, dst] = (self.ffi.from_buffer("int64_t[]", idx), self.ffi.from_buffer("float[]", w))
        return t

    def header(self, data, buf=None):
        """(width, height) when the C path can take this JPEG, else None."""
        info = self._state()["info"]
        buf = self.ffi.from_buffer("uint8_t[]", data) if buf is None else buf
        if self.lib.lt_data_jpeg_info(buf, len(buf), info) != 0 or not info[3]:
            return None
        return int(info[0]), int(info[1])

    def plan(self, w, h, rng):
        """This thread's lt_data_plan filled for an h x w image (drawing from rng as the numpy pipeline
        does), or None when numpy must do it."""
        if self.train:
            d = T.imagenet_train_draws(h, w, rng, self.size)
            g, jitter, light, flip = d.geometry, d.jitter, d.light, d.flip
        else:
            g, jitter, light, flip = T.short_center_geometry(h, w, self.resize, self.size), (), None, False
        if not g.inside() or g.w < 1 or g.h < 1:
            return None
        xi, xw = self.taps(g.w, g.scaled_w)
        yi, yw = self.taps(g.h, g.scaled_h)
        st = self._state()
        st["keep"] = (xi, xw, yi, yw)   # alive until this thread's next plan, whatever _taps drops
        p = st["plan"]
        p.box_x, p.box_y, p.box_w, p.box_h = g.x, g.y, g.w, g.h
        p.out_w = p.out_h = g.size
        p.xidx, p.xw, p.yidx, p.yw = xi + 4 * g.ox, xw + 4 * g.ox, yi + 4 * g.oy, yw + 4 * g.oy
        p.nops = len(jitter)
        for k, (op, alpha) in enumerate(jitter):
            p.ops[k], p.alpha[k] = op, alpha
        p.light = light.tolist() if light is not None else [0.0, 0.0, 0.0]
        p.mean, p.std = T.IMAGENET_MEAN, T.IMAGENET_STD
        p.flip = int(bool(flip))
        p.roi = self.roi
        return p

    def sample(self, data, rng, out, times=None):
        """Write the sample into `out` (contiguous 3 x size x size float32); False: not taken."""
        ffi = self.ffi
        buf = ffi.from_buffer("uint8_t[]", data)
        size = self.header(data, buf)
        if size is None:
            return False
        p = self.plan(size[0], size[1], rng)
        if p is None:
            return False
        t = self._state()["times"] if times is not None else ffi.NULL
        if self.lib.lt_data_jpeg_sample(buf, len(buf), p, ffi.from_buffer("float[]", out, require_writable=True), t):
            return False
        if times is not None:
            for k in range(3):
                times[k] += t[k]
        return True

    def decode_only(self, data, box=None):
        """The decode alone (the ceiling): the box (x, y, w, h) with region-of-interest decoding, or the
        whole image when box is None. False when the C decoder does not take the data."""
        size = self.header(data)
        if size is None:
            return False
        x, y, w, h = box or (0, 0, size[0], size[1])
        buf = self.ffi.from_buffer("uint8_t[]", data)
        return self.lib.lt_data_jpeg_decode(buf, len(buf), x, y, w, h, int(box is not None), self.ffi.NULL) == 0


def fast_path(train, size=224, resize=256):
    """A JpegFastPath, or None when the native library was built without libjpeg."""
    try:
        from pytorch_bridge.native import ffi, lib
    except ImportError:
        return None
    if not lib.lt_image_codecs() & 1:
        return None
    return JpegFastPath(ffi, lib, train, size, resize)


def decode_rgb(data, box=None, roi=True):
    """C decode of the box (x, y, w, h; default the whole image) as an h x w x 3 uint8 array, or None
    (for tests and the benchmark: the same decoder the fast path uses)."""
    fp = fast_path(True)
    if fp is None or fp.header(data) is None:
        return None
    W, H = fp.header(data)
    x, y, w, h = box or (0, 0, W, H)
    out = np.empty((h, w, 3), np.uint8)
    buf = fp.ffi.from_buffer("uint8_t[]", data)
    rc = fp.lib.lt_data_jpeg_decode(buf, len(buf), x, y, w, h, int(roi), fp.ffi.from_buffer("uint8_t[]", out))
    return out if rc == 0 else None
