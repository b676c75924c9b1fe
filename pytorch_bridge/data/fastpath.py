"""The ImageNet transforms in C (native/src/data_draws.c, data_pipeline.c), for the loader's worker threads.

    fp = fast_path(train=True, size=224, resize=256)   # None when the native library has no JPEG codec
    ok = fp.sample(jpeg_bytes, rng, out, times)        # out: a 3 x size x size float32 batch slot
    status = fp.batch(records, seed, epoch, indices, slots, times)   # a batch in one call, streams drawn in C

The draws are transforms.py's (imagenet_train_draws / short_center_geometry on the size in the JPEG
header), and so are the resize taps (cubic_taps), made in C from the same uniforms of the sample's
stream (data_draws.c; the tests hold the two bit-identical), so a sample equals the numpy pipeline's on
the same decoded pixels. The C side decodes only the rows and columns the taps read (libjpeg-turbo's
jpeg_crop_scanline / jpeg_skip_scanlines), resizes the bytes and applies ColorJitter, Lighting and
ColorNormalize as one per-image matrix. batch() is the loader's: one call per batch, which releases the
GIL (cffi does, for every call), with each sample's stream (default_rng([seed, epoch, index]).random)
drawn in C (data_stream.c, bit-identical to numpy's); sample() takes the stream's uniforms from Python.

sample() returns False, having written nothing, for what the C path does not take — grey, CMYK or
truncated JPEGs, other formats, corrupt data, a window numpy slicing alone defines — and the caller
decodes that record the usual way (Pillow + numpy) with a fresh random stream.
"""
import threading

import numpy as np

from . import transforms as T


MAX_SEED = 2 ** 64   # the C stream takes seeds, epochs and indices as uint64; others go through sample()


class JpegFastPath:
    def __init__(self, ffi, lib, train, size, resize):
        self.ffi, self.lib = ffi, lib
        self.train = bool(train)
        r = self.recipe = ffi.new("lt_data_recipe *")
        r.train, r.size, r.resize, r.roi = int(self.train), int(size), int(resize), 1
        r.min_area, r.jitter, r.alphastd = T.CROP_MIN_AREA, T.JITTER, T.LIGHTING_STD   # imagenet_train_draws
        r.eigval = T.PCA_EIGVAL.tolist()
        r.eigvec = T.PCA_EIGVEC.tolist()
        r.mean, r.std = T.IMAGENET_MEAN, T.IMAGENET_STD
        self._local = threading.local()  # per worker thread: its plan struct and small buffers

    # the recipe's sizes and region-of-interest switch, settable (tests use small samples)
    size = property(lambda self: self.recipe.size, lambda self, v: setattr(self.recipe, "size", int(v)))
    resize = property(lambda self: self.recipe.resize, lambda self, v: setattr(self.recipe, "resize", int(v)))
    roi = property(lambda self: self.recipe.roi, lambda self, v: setattr(self.recipe, "roi", int(v)))

    def _state(self):
        st = self._local.__dict__
        ffi = self.ffi
        if not st:
            st.update(plan=ffi.new("lt_data_plan *"), info=ffi.new("int64_t[4]"), times=ffi.new("double[3]"))
        if st.get("taps_for") != self.size:   # plan()'s tap arrays: size x 4 for each axis
            n = 4 * self.size
            st["taps"] = [ffi.new("int64_t[]", n), ffi.new("float[]", n), ffi.new("int64_t[]", n), ffi.new("float[]", n)]
            st["taps_for"] = self.size
        return st

    def header(self, data, buf=None):
        """(width, height) when the C path can take this JPEG, else None."""
        info = self._state()["info"]
        buf = self.ffi.from_buffer("uint8_t[]", data) if buf is None else buf
        if self.lib.lt_data_jpeg_info(buf, len(buf), info) != 0 or not info[3]:
            return None
        return int(info[0]), int(info[1])

    def uniforms(self, rng):
        """(C array, count): the stream's next LT_DATA_UNIFORMS uniforms, as TorchRNG's draws would take them; none
        for validation, which draws nothing."""
        if not self.train:
            return self.ffi.NULL, 0
        n = self.lib.LT_DATA_UNIFORMS
        return self.ffi.from_buffer("double[]", rng.gen.random(n)), n

    def plan(self, w, h, rng):
        """This thread's lt_data_plan for an h x w image, drawn in C from rng's stream (the same draws
        imagenet_train_draws makes from it; the taps cubic_taps'), or None when numpy must do it."""
        st = self._state()
        p, (xi, xw, yi, yw) = st["plan"], st["taps"]
        rc = self.lib.lt_data_plan_draw(self.recipe, w, h, *self.uniforms(rng), p, xi, xw, yi, yw)
        if rc < 0:
            raise ValueError(self.ffi.string(self.lib.lt_errmsg()).decode())
        return p if rc == 0 else None

    def sample(self, data, rng, out, times=None):
        """Write the sample into `out` (contiguous 3 x size x size float32); False: not taken (nothing
        written, or a decode that failed part-way: the caller rewrites the slot)."""
        ffi = self.ffi
        if out.size != 3 * self.size * self.size:   # the C side writes exactly that many floats
            raise ValueError("a %d x %d sample does not fit a slot of shape %s" % (self.size, self.size, out.shape))
        t = self._state()["times"] if times is not None else ffi.NULL
        if self.lib.lt_data_jpeg_sample_drawn(ffi.from_buffer("uint8_t[]", data), len(data), self.recipe,
                                              *self.uniforms(rng), ffi.from_buffer("float[]", out, require_writable=True),
                                              t):
            return False
        if times is not None:
            for k in range(3):
                times[k] += t[k]
        return True

    def batch(self, records, seed, epoch, indices, out, times=None):
        """Samples k = 0..len(records)-1 into out[k] (out: n x 3 x size x size float32, C-contiguous), sample
        k drawn from the stream sample_rng(seed, epoch, indices[k]); records[k] None for one to skip.
        Returns an int8 array: 0 written, 1 not taken, -1 failed part-way (the caller rewrites that slot);
        None when the seeds do not fit the C stream (the caller goes sample by sample)."""
        ffi, n = self.ffi, len(records)
        if not all(isinstance(v, (int, np.integer)) and 0 <= v < MAX_SEED for v in (seed, epoch)):
            return None
        if out.shape[1:] != (3, self.size, self.size) or out.shape[0] < n or out.dtype != np.float32 \
                or not out.flags.c_contiguous:
            raise ValueError("%d samples of %d x %d do not fit a batch of shape %s" % (n, self.size, self.size, out.shape))
        st = self._state()
        if st.get("batch_n", 0) < n:   # per thread, reused: the call's argument arrays
            st.update(batch_n=n, ptrs=ffi.new("uint8_t *[]", n), lens=ffi.new("int64_t[]", n),
                      index=np.empty(n, np.int64), status=np.empty(n, np.int8))
        ptrs, lens, index, status = st["ptrs"], st["lens"], st["index"], st["status"]
        keep = []   # the records' buffers, alive until the call returns
        for k, d in enumerate(records):
            if d is None:
                ptrs[k], lens[k] = ffi.NULL, 0
            else:
                b = ffi.from_buffer("uint8_t[]", d)
                keep.append(b)
                ptrs[k], lens[k] = b, len(b)
        index[:n] = indices
        t = st["times"] if times is not None else ffi.NULL
        if times is not None:
            t[0] = t[1] = t[2] = 0.0
        if self.lib.lt_data_jpeg_batch(self.recipe, n, ptrs, lens, int(seed), int(epoch), ffi.from_buffer("int64_t[]", index),
                                       ffi.from_buffer("float[]", out, require_writable=True), 3 * self.size * self.size,
                                       ffi.from_buffer("int8_t[]", status), t):
            raise ValueError(ffi.string(self.lib.lt_errmsg()).decode())
        if times is not None:
            for k in range(3):
                times[k] += t[k]
        return status[:n].copy()

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
