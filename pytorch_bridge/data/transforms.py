"""fb.resnet.torch's transforms (datasets/transforms.lua, imagenet.lua, cifar10.lua) in numpy on
C x H x W float32 images, drawing from the random stream in the same order as the Lua code.

The random stream is per sample: `sample_rng(seed, epoch, index)`, so the in-memory and the file
loader (and any number of workers) give bit-identical batches for the same seed.

Numerics follow Torch7 where the Lua code relied on it: float32 tensors with float32 scalars
(`img[i]:add(-mean)`, `:div(std)`), image.scale's bicubic (align-corners sampling, Catmull-Rom
weights, linear extrapolation at the borders, last sample copied) and C `round` for the crop sizes.
"""
import functools
import math
from collections import namedtuple

import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
PCA_EIGVAL = np.array([0.2175, 0.0188, 0.0045])
PCA_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                       [-0.5808, -0.0045, -0.8140],
                       [-0.5836, -0.6948, 0.4203]])
# fb.resnet.torch's ImageNet train recipe (imagenet.lua); the C planner is given the same numbers (fastpath.py)
CROP_MIN_AREA = 0.08               # RandomSizedCrop: 8-100 % of the area
JITTER = (0.4, 0.4, 0.4)           # ColorJitter: brightness, contrast, saturation
LIGHTING_STD = 0.1                 # Lighting(0.1)
CIFAR_MEAN = (125.3, 123.0, 113.9)
CIFAR_STD = (63.0, 62.1, 66.7)


class TorchRNG:
    """The draws transforms.lua makes (torch.uniform, torch.random(a, b), normal, randperm), each a function
    of the stream's next uniforms in [0, 1) (numpy's Generator.random()), spelled out operation by
    operation so that native/src/data_draws.c makes the same draws from the same numbers, bit for bit."""

    def __init__(self, gen):
        self.gen = gen

    def uniform(self, a=0.0, b=1.0):
        return a + (b - a) * self.gen.random()

    def random(self, a, b):
        """An integer in [a, b]."""
        n = b - a + 1
        return a + min(int(self.gen.random() * n), n - 1)

    def normal(self, mean, std, n):
        """Box-Muller, the cosine half: two uniforms per number."""
        out = np.empty(n)
        for k in range(n):
            u1, u2 = self.gen.random(), self.gen.random()
            out[k] = mean + std * (math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2))
        return out

    def randperm(self, n):
        """Fisher-Yates from the top."""
        perm = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.random(0, i)
            perm[i], perm[j] = perm[j], perm[i]
        return perm


def sample_rng(seed, epoch, index):
    return TorchRNG(np.random.default_rng([seed, epoch, index]))


def c_round(x):
    """C round(): halves away from zero (torch.round), not Python's banker's rounding."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


@functools.lru_cache(maxsize=1024)
def cubic_taps(src_len, dst_len):
    """image.scale's bicubic along one axis as 4 taps per output: (indices dst x 4, float32 weights)."""
    idx = np.zeros((dst_len, 4), np.int64)
    wts = np.zeros((dst_len, 4), np.float32)
    if dst_len == src_len or src_len == 1:
        idx[:, 0] = np.arange(dst_len) if dst_len == src_len else 0
        wts[:, 0] = 1
        return idx, wts
    scale = np.float32(src_len - 1) / np.float32(dst_len - 1) if dst_len > 1 else np.float32(src_len - 1)
    pos = np.arange(dst_len - 1, dtype=np.float32) * scale
    i = pos.astype(np.int64)
    x = (pos - i.astype(np.float32)).astype(np.float64)
    x3 = x * x * x   # products, not x ** 3 (numpy's pow may take a vector library's rounding)
    # Catmull-Rom: p1 + 0.5 x (p2 - p0 + x (2p0 - 5p1 + 4p2 - p3 + x (3(p1 - p2) + p3 - p0))) as weights
    w0 = 0.5 * (-x + 2 * x * x - x3)
    w1 = 0.5 * (2 - 5 * x * x + 3 * x3)
    w2 = 0.5 * (x + 4 * x * x - 3 * x3)
    w3 = 0.5 * (-x * x + x3)
    left = i == 0                      # p0 = 2 p1 - p2
    w1, w2, w0 = np.where(left, w1 + 2 * w0, w1), np.where(left, w2 - w0, w2), np.where(left, 0, w0)
    right = i + 2 >= src_len           # p3 = 2 p2 - p1
    w2, w1, w3 = np.where(right, w2 + 2 * w3, w2), np.where(right, w1 - w3, w1), np.where(right, 0, w3)
    idx[:-1] = np.stack([np.maximum(i - 1, 0), i, i + 1, np.minimum(i + 2, src_len - 1)], 1)
    wts[:-1] = np.stack([w0, w1, w2, w3], 1)
    idx[-1, 0], wts[-1, 0] = src_len - 1, 1   # the last sample is copied
    return idx, wts


def _taps(img, axis, n):
    idx, w = cubic_taps(img.shape[axis], n)
    shape = [1] * img.ndim
    shape[axis] = n
    out = np.take(img, idx[:, 0], axis=axis) * w[:, 0].reshape(shape)
    for k in range(1, 4):
        out += np.take(img, idx[:, k], axis=axis) * w[:, k].reshape(shape)
    return out


def scale(img, width, height):
    """image.scale(img, width, height, 'bicubic'): rows (width) first, then columns."""
    width, height = int(width), int(height)
    tmp = img if width == img.shape[2] else _taps(img, 2, width)
    return tmp if height == img.shape[1] else _taps(tmp, 1, height)


def scale_short(img, size):
    """M.Scale(size): the shorter side to `size` (the other truncated as image.scale's sizes are)."""
    h, w = img.shape[1:]
    if (w <= h and w == size) or (h <= w and h == size):
        return img
    if w < h:
        return scale(img, size, h / w * size)
    return scale(img, w / h * size, size)


def center_crop(img, size):
    h, w = img.shape[1:]
    x1, y1 = math.ceil((w - size) / 2), math.ceil((h - size) / 2)
    return img[:, y1:y1 + size, x1:x1 + size]


class Geometry(namedtuple("Geometry", "x y w h scaled_w scaled_h ox oy size")):
    """Where a sample comes from: the box (x, y, w, h) of the image, scaled to scaled_w x scaled_h,
    and the size x size window at (ox, oy) of that (numpy slicing rules, as center_crop's)."""

    def apply(self, img):
        return scale(img[:, self.y:self.y + self.h, self.x:self.x + self.w], self.scaled_w,
                     self.scaled_h)[:, self.oy:self.oy + self.size, self.ox:self.ox + self.size]

    def inside(self):
        """The window lies in the scaled box (else only numpy's slicing defines the result)."""
        return 0 <= self.ox and self.ox + self.size <= self.scaled_w and 0 <= self.oy and \
            self.oy + self.size <= self.scaled_h


def short_center_geometry(h, w, resize, size):
    """M.Scale(resize) then M.CenterCrop(size) of an h x w image (scale_short's sizes)."""
    if (w <= h and w == resize) or (h <= w and h == resize):
        sw, sh = w, h
    elif w < h:
        sw, sh = int(resize), int(h / w * resize)
    else:
        sw, sh = int(w / h * resize), int(resize)
    return Geometry(0, 0, w, h, sw, sh, math.ceil((sw - size) / 2), math.ceil((sh - size) / 2), size)


def random_sized_crop_geometry(h, w, size, rng):
    """Inception-style crop: area 8-100 %, aspect 3/4-4/3, 10 attempts, else Scale + CenterCrop."""
    for _ in range(10):
        target = rng.uniform(CROP_MIN_AREA, 1.0) * (h * w)
        aspect = rng.uniform(3 / 4, 4 / 3)
        cw = c_round(math.sqrt(target * aspect))
        ch = c_round(math.sqrt(target / aspect))
        if rng.uniform() < 0.5:
            cw, ch = ch, cw
        if ch <= h and cw <= w:
            y1 = rng.random(0, h - ch)
            x1 = rng.random(0, w - cw)
            return Geometry(x1, y1, cw, ch, size, size, 0, 0, size)
    return short_center_geometry(h, w, size, size)


def random_sized_crop(img, size, rng):
    return random_sized_crop_geometry(img.shape[1], img.shape[2], size, rng).apply(img)


def _gray(img):
    g = np.float32(0.299) * img[0]
    g += np.float32(0.587) * img[1]
    g += np.float32(0.114) * img[2]
    return g


def _blend(img, other, alpha):
    """img:mul(alpha):add(1 - alpha, other), in place; `other` broadcasts (gray or a constant)."""
    img *= np.float32(alpha)
    if other is not None:
        img += np.float32(1 - alpha) * other


def _brightness(img, alpha):
    _blend(img, None, alpha)   # blend with zeros


def _contrast(img, alpha):
    _blend(img, np.float32(_gray(img).mean(dtype=np.float64)), alpha)


def _saturation(img, alpha):
    _blend(img, _gray(img)[None], alpha)


JITTER_OPS = (_brightness, _contrast, _saturation)   # the op numbers of lt_data_plan.ops


def brightness(img, rng, var):
    _brightness(img, 1.0 + rng.uniform(-var, var))
    return img


def contrast(img, rng, var):
    _contrast(img, 1.0 + rng.uniform(-var, var))
    return img


def saturation(img, rng, var):
    _saturation(img, 1.0 + rng.uniform(-var, var))
    return img


def color_jitter_draws(rng, b=0.4, c=0.4, s=0.4):
    """ColorJitter's draws: RandomOrder over the non-zero ones of brightness, contrast, saturation (in
    that table order), each a blend factor: [(op number, alpha)] in the order they apply."""
    ts = [(k, v) for k, v in enumerate((b, c, s)) if v != 0]
    if not ts:
        return []
    ops = []
    for k in rng.randperm(len(ts)):
        op, v = ts[k]
        ops.append((op, 1.0 + rng.uniform(-v, v)))
    return ops


def apply_color_jitter(img, ops):
    for op, alpha in ops:
        JITTER_OPS[op](img, alpha)
    return img


def color_jitter(img, rng, b=0.4, c=0.4, s=0.4):
    return apply_color_jitter(img, color_jitter_draws(rng, b, c, s))


def lighting_rgb(rng, alphastd, eigval=PCA_EIGVAL, eigvec=PCA_EIGVEC):
    """Lighting's per-channel offset (float32), or None when alphastd is 0 (nothing drawn)."""
    if alphastd == 0:
        return None
    a = rng.normal(0, alphastd, 3).tolist()
    e, v = np.asarray(eigvec, np.float64).tolist(), np.asarray(eigval, np.float64).tolist()
    return np.array([e[i][0] * a[0] * v[0] + e[i][1] * a[1] * v[1] + e[i][2] * a[2] * v[2] for i in range(3)],
                    np.float32)


def lighting(img, rng, alphastd, eigval=PCA_EIGVAL, eigvec=PCA_EIGVEC):
    """AlexNet PCA noise: img[i] += sum_j eigvec[i, j] alpha_j eigval_j (double, added as float)."""
    rgb = lighting_rgb(rng, alphastd, eigval, eigvec)
    if rgb is not None:
        img += rgb[:, None, None]
    return img


def color_normalize(img, mean, std):
    c = img.shape[0]
    img -= np.asarray(mean[:c], np.float32)[:, None, None]
    img /= np.asarray(std[:c], np.float32)[:, None, None]
    return img


def horizontal_flip(img, rng, prob=0.5):
    if rng.uniform() < prob:
        return img[:, :, ::-1]
    return img


def random_crop(img, size, padding, rng):
    """M.RandomCrop(size, padding): zero padding, then x1 then y1 drawn."""
    c, h, w = img.shape
    if padding > 0:
        tmp = np.zeros((c, h + 2 * padding, w + 2 * padding), np.float32)
        tmp[:, padding:padding + h, padding:padding + w] = img
        img, h, w = tmp, h + 2 * padding, w + 2 * padding
    if w == size and h == size:
        return img
    x1 = rng.random(0, w - size)
    y1 = rng.random(0, h - size)
    return img[:, y1:y1 + size, x1:x1 + size]


# The per-kind pipelines (fb.resnet.torch's preprocess()); `img` is a fresh float32 array they may reuse.

class TrainDraws(namedtuple("TrainDraws", "geometry jitter light flip")):
    """Everything imagenet_train draws for one sample, in the stream's order; `apply` is the numpy
    pipeline, pytorch_bridge.data.fastpath the C one."""

    def apply(self, img):
        img = np.array(self.geometry.apply(img), np.float32)  # own, contiguous copy: the jitter works in place
        img = apply_color_jitter(img, self.jitter)
        if self.light is not None:
            img += self.light[:, None, None]
        img = color_normalize(img, IMAGENET_MEAN, IMAGENET_STD)
        return img[:, :, ::-1] if self.flip else img


def imagenet_train_draws(h, w, rng, size=224):
    geometry = random_sized_crop_geometry(h, w, size, rng)
    jitter = color_jitter_draws(rng, *JITTER)
    light = lighting_rgb(rng, LIGHTING_STD)
    return TrainDraws(geometry, jitter, light, rng.uniform() < 0.5)   # HorizontalFlip(0.5)


def imagenet_train(img, rng, size=224):
    return imagenet_train_draws(img.shape[1], img.shape[2], rng, size).apply(img)


def imagenet_val(img, rng=None, size=224, resize=256):
    # ColorNormalize before CenterCrop in fb; both elementwise-independent, so cropping first gives the
    # same floats for less work
    img = np.array(short_center_geometry(img.shape[1], img.shape[2], resize, size).apply(img), np.float32)
    return color_normalize(img, IMAGENET_MEAN, IMAGENET_STD)


def cifar_train(img, rng):
    img = color_normalize(img, CIFAR_MEAN, CIFAR_STD)
    img = horizontal_flip(img, rng, 0.5)
    return random_crop(img, 32, 4, rng)


def cifar_val(img, rng=None):
    return color_normalize(img, CIFAR_MEAN, CIFAR_STD)


def normalize_only(mean, std, size=None):
    """MNIST-type: normalise with the set's pixel mean/std (0..255 units), optionally bicubic-resized."""
    def f(img, rng=None):
        if size is not None and img.shape[1:] != (size, size):
            img = np.array(scale(img, size, size), np.float32)
        return color_normalize(img, mean, std)
    return f
