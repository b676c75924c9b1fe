"""fb.resnet.torch transforms against independent oracles: per-pixel loops for image.scale's bicubic,
PyTorch tensor ops for the colour transforms, and the Lua code's draw order replayed by hand."""
import math

import numpy as np
import pytest
import torch

from pytorch_bridge.data import transforms as T


def cubic(p0, p1, p2, p3, x):
    a0, a1, a2, a3 = p1, p2 - p0, 2 * p0 - 5 * p1 + 4 * p2 - p3, 3 * (p1 - p2) + p3 - p0
    return a0 + 0.5 * x * (a1 + x * (a2 + x * a3))


def scale_line(src, n):
    """One row/column the way image.c's scaleCubic_rowcol walks it."""
    m = len(src)
    if n == m:
        return list(src)
    if m == 1:
        return [src[0]] * n
    out = []
    s = (m - 1) / (n - 1) if n > 1 else float(m - 1)
    for d in range(n - 1):
        pos = float(np.float32(d) * np.float32(s))
        i = int(pos)
        x = pos - i
        p1, p2 = src[i], src[i + 1]
        p0 = src[i - 1] if i > 0 else 2 * p1 - p2
        p3 = src[i + 2] if i + 2 < m else 2 * p2 - p1
        out.append(cubic(p0, p1, p2, p3, x))
    out.append(src[m - 1])
    return out


def oracle_scale(img, w, h):
    c = img.shape[0]
    rows = np.array([[scale_line(img[k, j].tolist(), w) for j in range(img.shape[1])] for k in range(c)])
    return np.array([[scale_line(rows[k, :, i].tolist(), h) for i in range(w)] for k in range(c)]).transpose(0, 2, 1)


@pytest.mark.parametrize("shape,out", [((3, 7, 9), (12, 5)), ((1, 5, 4), (4, 5)), ((2, 1, 6), (3, 4)),
                                       ((3, 9, 2), (2, 9)), ((3, 30, 41), (17, 23)), ((1, 6, 6), (1, 1))])
def test_bicubic_scale(rng, shape, out):
    img = rng.random(shape).astype(np.float32)
    got = T.scale(img, *out)
    assert got.shape == (shape[0], out[1], out[0]) and got.dtype == np.float32
    np.testing.assert_allclose(got, oracle_scale(img, *out), rtol=1e-5, atol=2e-6)


def test_scale_short_and_center_crop(rng):
    img = rng.random((3, 30, 41)).astype(np.float32)
    s = T.scale_short(img, 16)
    assert s.shape == (3, 16, math.floor(41 / 30 * 16))
    np.testing.assert_allclose(s, oracle_scale(img, math.floor(41 / 30 * 16), 16), rtol=1e-5, atol=2e-6)
    tall = rng.random((3, 41, 30)).astype(np.float32)
    assert T.scale_short(tall, 16).shape == (3, math.floor(41 / 30 * 16), 16)
    assert T.scale_short(img, 30) is img
    c = T.center_crop(img, 11)   # x1 = ceil((41 - 11) / 2) = 15, y1 = ceil(19 / 2) = 10
    np.testing.assert_array_equal(c, img[:, 10:21, 15:26])


class Replay:
    """The stream's draws as transforms.py defines them (each a function of the next uniforms that numpy's
    Generator.random() gives), written out separately."""

    def __init__(self, seed):
        self.g = np.random.default_rng(seed)

    def u(self):
        return self.g.random()

    def uniform(self, a=0.0, b=1.0):
        return a + (b - a) * self.u()

    def random(self, a, b):
        """Each of the b - a + 1 integers on an equal share of [0, 1)."""
        return a + min(math.floor(self.u() * (b - a + 1)), b - a)

    def perm(self, n):
        """Swaps from the last position down."""
        p = list(range(n))
        for i in reversed(range(1, n)):
            j = min(math.floor(self.u() * (i + 1)), i)
            p[i], p[j] = p[j], p[i]
        return p

    def normal(self, mean, std, n):
        """Box-Muller's cosine branch, two uniforms per number."""
        out = []
        for _ in range(n):
            u1, u2 = self.u(), self.u()
            out.append(mean + std * math.sqrt(-2 * math.log(1 - u1)) * math.cos(2 * math.pi * u2))
        return np.array(out)


def oracle_random_sized_crop(img, size, r):
    h, w = img.shape[1:]
    for _ in range(10):
        area = r.uniform(0.08, 1.0) * h * w
        ar = r.uniform(3 / 4, 4 / 3)
        cw, ch = int(math.floor(math.sqrt(area * ar) + 0.5)), int(math.floor(math.sqrt(area / ar) + 0.5))
        if r.uniform() < 0.5:
            cw, ch = ch, cw
        if ch <= h and cw <= w:
            y1, x1 = r.random(0, h - ch), r.random(0, w - cw)
            return oracle_scale(img[:, y1:y1 + ch, x1:x1 + cw], size, size), "crop"
    sw, sh = (size, math.floor(h / w * size)) if w < h else (math.floor(w / h * size), size)
    s = oracle_scale(img, sw, sh)
    y1, x1 = math.ceil((sh - size) / 2), math.ceil((sw - size) / 2)
    return s[:, y1:y1 + size, x1:x1 + size], "fallback"


def test_random_sized_crop(rng):
    kinds = set()
    for trial in range(12):
        shape = (3, int(rng.integers(6, 30)), int(rng.integers(6, 30)))
        if trial % 4 == 0:
            shape = (3, 2, 60)   # too thin for any crop (a crop of >= 8% of the area is >= 2.7 rows): the fallback path
        img = rng.random(shape).astype(np.float32)
        seed = int(rng.integers(1 << 30))
        got = T.random_sized_crop(img, 8, T.TorchRNG(np.random.default_rng(seed)))
        want, kind = oracle_random_sized_crop(img, 8, Replay(seed))
        kinds.add(kind)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert kinds == {"crop", "fallback"}


def torch_jitter(img, seed):
    """ColorJitter (brightness, contrast, saturation 0.4 in random order) with torch ops."""
    g = Replay(seed)
    x = torch.from_numpy(img.copy())
    w = torch.tensor([0.299, 0.587, 0.114], dtype=torch.float32)
    for k in g.perm(3):
        alpha = 1.0 + (-0.4 + 0.8 * g.u())
        if k == 0:
            other = torch.zeros_like(x)
        elif k == 1:
            other = torch.full_like(x, float((x * w[:, None, None]).sum(0).double().mean()))
        else:
            other = (x * w[:, None, None]).sum(0, keepdim=True).expand_as(x)
        x = x * alpha + other * (1 - alpha)
    return x.numpy(), g


def test_color_jitter(rng):
    for _ in range(6):
        img = rng.random((3, 9, 13)).astype(np.float32)
        seed = int(rng.integers(1 << 30))
        got = T.color_jitter(img.copy(), T.TorchRNG(np.random.default_rng(seed)))
        want, _ = torch_jitter(img, seed)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lighting_normalize_flip(rng):
    img = rng.random((3, 5, 7)).astype(np.float32)
    seed = int(rng.integers(1 << 30))
    got = T.lighting(img.copy(), T.TorchRNG(np.random.default_rng(seed)), 0.1)
    alpha = Replay(seed).normal(0, 0.1, 3)
    want = img + (T.PCA_EIGVEC @ (alpha * T.PCA_EIGVAL))[:, None, None]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    n = T.color_normalize(img.copy(), T.IMAGENET_MEAN, T.IMAGENET_STD)
    want = (torch.from_numpy(img) - torch.tensor(T.IMAGENET_MEAN)[:, None, None]) / torch.tensor(T.IMAGENET_STD)[:, None, None]
    np.testing.assert_allclose(n, want.numpy(), rtol=1e-6, atol=1e-6)
    flips = 0
    for s in range(40):
        f = T.horizontal_flip(img, T.TorchRNG(np.random.default_rng(s)))
        flipped = np.random.default_rng(s).random() < 0.5
        flips += flipped
        np.testing.assert_array_equal(f, torch.from_numpy(img).flip(2).numpy() if flipped else img)
    assert 5 < flips < 35


def test_cifar_random_crop(rng):
    img = (rng.random((3, 32, 32)) * 255).astype(np.float32)
    for _ in range(5):
        seed = int(rng.integers(1 << 30))
        got = T.cifar_train(img.copy(), T.TorchRNG(np.random.default_rng(seed)))
        g = Replay(seed)
        x = (img - np.float32(T.CIFAR_MEAN)[:, None, None]) / np.float32(T.CIFAR_STD)[:, None, None]
        if g.u() < 0.5:
            x = x[:, :, ::-1]
        x = np.pad(x, ((0, 0), (4, 4), (4, 4)))
        x1 = g.random(0, 8)
        y1 = g.random(0, 8)
        np.testing.assert_allclose(got, x[:, y1:y1 + 32, x1:x1 + 32], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(T.cifar_val(img.copy()), (img - np.float32(T.CIFAR_MEAN)[:, None, None])
                               / np.float32(T.CIFAR_STD)[:, None, None], rtol=1e-6)


def test_imagenet_pipelines(rng):
    img = rng.random((3, 23, 29)).astype(np.float32)
    seed = int(rng.integers(1 << 30))
    got = T.imagenet_train(img.copy(), T.TorchRNG(np.random.default_rng(seed)), size=8)
    r = Replay(seed)
    x, _ = oracle_random_sized_crop(img, 8, r)
    g = r   # jitter, lighting, normalise, flip continue on the same stream
    xt = torch.from_numpy(x.astype(np.float32))
    w = torch.tensor([0.299, 0.587, 0.114])
    for k in g.perm(3):
        alpha = 1.0 + (-0.4 + 0.8 * g.u())
        other = [torch.zeros_like(xt), torch.full_like(xt, float((xt * w[:, None, None]).sum(0).double().mean())),
                 (xt * w[:, None, None]).sum(0, keepdim=True).expand_as(xt)][k]
        xt = xt * alpha + other * (1 - alpha)
    alpha = g.normal(0, 0.1, 3)
    xt = xt + torch.from_numpy(T.PCA_EIGVEC @ (alpha * T.PCA_EIGVAL)).float()[:, None, None]
    xt = (xt - torch.tensor(T.IMAGENET_MEAN)[:, None, None]) / torch.tensor(T.IMAGENET_STD)[:, None, None]
    if g.u() < 0.5:
        xt = xt.flip(2)
    assert got.shape == (3, 8, 8)
    np.testing.assert_allclose(got, xt.numpy(), rtol=1e-5, atol=1e-5)
    v = T.imagenet_val(img.copy(), size=8, resize=10)
    s = oracle_scale(img, math.floor(29 / 23 * 10), 10)   # the shorter side (height) to 10
    y1, x1 = math.ceil((s.shape[1] - 8) / 2), math.ceil((s.shape[2] - 8) / 2)
    want = (s[:, y1:y1 + 8, x1:x1 + 8] - np.array(T.IMAGENET_MEAN)[:, None, None]) / np.array(T.IMAGENET_STD)[:, None, None]
    np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-5)


def test_c_round():
    assert [T.c_round(v) for v in (0.5, 1.5, 2.5, -0.5, 2.49)] == [1, 2, 3, -1, 2]
