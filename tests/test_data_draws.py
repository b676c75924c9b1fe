"""A sample's draws and taps made in C (native/src/data_draws.c) against transforms.py's, bit for bit,
on fresh seeds and image sizes from 1 pixel to ImageNet's largest; and TorchRNG's draws themselves."""
import numpy as np
import pytest

from pytorch_bridge.data import transforms as T
from pytorch_bridge.data.fastpath import fast_path

FP = fast_path(True)
UNIFORMS = FP.lib.LT_DATA_UNIFORMS if FP is not None else 0
pytestmark = pytest.mark.skipif(FP is None, reason="this build has no JPEG support (libjpeg-dev missing)")


class Counting:
    """A numpy Generator that counts the uniforms drawn from it."""

    def __init__(self, gen):
        self.gen, self.n = gen, 0

    def random(self, size=None):
        self.n += 1 if size is None else size
        return self.gen.random(size)


def sizes(rng, n):
    out = [(1, 1), (1, 900), (900, 1), (224, 224), (223, 500), (256, 256), (257, 300), (500, 375), (2, 3)]
    while len(out) < n:
        out.append(tuple(int(v) for v in rng.integers(1, 1200, size=2)))
    return out


def same_floats(cptr, ref):
    got = np.frombuffer(FP.ffi.buffer(cptr, 4 * ref.size), np.float32)
    return np.array_equal(got.view(np.uint32), np.ascontiguousarray(ref, np.float32).ravel().view(np.uint32))


def check_plan(p, g, w, h):
    """The C plan p against transforms.py's geometry g of a w x h image."""
    assert (p.box_x, p.box_y, p.box_w, p.box_h, p.out_w, p.out_h) == (g.x, g.y, g.w, g.h, g.size, g.size), (w, h)
    for (idx_c, w_c), (src, dst, off) in (((p.xidx, p.xw), (g.w, g.scaled_w, g.ox)),
                                          ((p.yidx, p.yw), (g.h, g.scaled_h, g.oy))):
        idx, wts = T.cubic_taps(src, dst)
        idx, wts = idx[off:off + g.size], wts[off:off + g.size]
        assert [idx_c[k] for k in range(idx.size)] == idx.ravel().tolist(), (w, h, src, dst)
        assert same_floats(w_c, wts), (w, h, src, dst)


@pytest.mark.parametrize("train", [True, False], ids=["train", "val"])
def test_c_plan_equals_transforms(rng, train):
    fp = fast_path(train)
    seeds = rng.integers(0, 2 ** 31, size=3)
    planned = 0
    for k, (w, h) in enumerate(sizes(rng, 150)):
        s = [int(seeds[0]), int(seeds[1]) % 100, k]
        if train:
            d = T.imagenet_train_draws(h, w, T.sample_rng(*s), 224)
            g = d.geometry
        else:
            g = T.short_center_geometry(h, w, 256, 224)
        p = fp.plan(w, h, T.sample_rng(*s))
        if not g.inside() or g.w < 1 or g.h < 1:
            assert p is None, (w, h, g)
            continue
        assert p is not None, (w, h, g)
        planned += 1
        check_plan(p, g, w, h)
        if train:
            assert [(p.ops[i], p.alpha[i]) for i in range(p.nops)] == [(op, a) for op, a in d.jitter]
            assert np.array_equal(np.array(list(p.light), np.float32).view(np.uint32), d.light.view(np.uint32))
            assert p.flip == int(d.flip)
        else:
            assert p.nops == 0 and list(p.light) == [0, 0, 0] and p.flip == 0
        assert list(p.mean) == list(np.float32(T.IMAGENET_MEAN)) and list(p.std) == list(np.float32(T.IMAGENET_STD))
    assert planned > 100


def test_uniforms_are_enough(rng):
    """The most a sample draws (ten failed crop tries on a sliver of an image) fits in UNIFORMS; with
    fewer uniforms than a plan needs, the C side declines rather than inventing numbers."""
    most = 0
    for k, (w, h) in enumerate(sizes(rng, 300)):
        c = Counting(np.random.default_rng([int(rng.integers(1 << 30)), k]))
        T.imagenet_train_draws(h, w, T.TorchRNG(c), 224)
        most = max(most, c.n)
    assert 40 <= most <= UNIFORMS
    st = FP._state()
    u = FP.ffi.new("double[]", [0.5] * 3)
    assert FP.lib.lt_data_plan_draw(FP.recipe, 500, 375, u, 3, st["plan"], *st["taps"]) == 1
    assert FP.lib.lt_data_plan_draw(FP.recipe, 0, 375, u, 3, st["plan"], *st["taps"]) == -1


def test_torch_rng_draws(rng):
    """TorchRNG from a fresh stream: integers cover [a, b] evenly, permutations are permutations and
    uniform over the 6 orders of 3, normals have the asked mean and spread."""
    r = T.TorchRNG(np.random.default_rng(int(rng.integers(1 << 30))))
    ints = np.array([r.random(3, 7) for _ in range(20000)])
    assert ints.min() == 3 and ints.max() == 7
    assert np.abs(np.bincount(ints - 3) / 20000 - 0.2).max() < 0.02
    perms = [tuple(r.randperm(3)) for _ in range(12000)]
    assert all(sorted(p) == [0, 1, 2] for p in perms)
    counts = np.array([perms.count(p) for p in set(perms)])
    assert len(counts) == 6 and np.abs(counts / 12000 - 1 / 6).max() < 0.02
    z = r.normal(1.5, 0.1, 20000)
    assert abs(z.mean() - 1.5) < 0.005 and abs(z.std() - 0.1) < 0.005
    assert abs(((z - 1.5) / 0.1 > 1.96).mean() - 0.025) < 0.006   # a normal's tail, not just its moments


def test_c_stream_is_numpys_default_rng(rng):
    """lt_data_stream_uniforms against numpy's own default_rng([seed, epoch, index]).random(n), bit for bit:
    fresh seeds small and large (one and two 32-bit words each), zeros, and the uint64 extremes."""
    ffi, lib = FP.ffi, FP.lib
    cases = [(0, 0, 0), (1, 0, 0), (0, 0, 1), (2 ** 32 - 1, 2 ** 32, 1), (2 ** 64 - 1, 2 ** 63, 2 ** 40 + 7)]
    cases += [tuple(int(v) for v in rng.integers(0, 2 ** 16, 3)) for _ in range(100)]
    cases += [tuple(int(v) for v in rng.integers(0, 2 ** 63, 3)) for _ in range(100)]
    for n in (1, 5, UNIFORMS, 300):
        u = ffi.new("double[]", n)
        for c in cases:
            assert lib.lt_data_stream_uniforms(*c, u, n) == 0
            want = np.random.default_rng(list(c)).random(n)
            np.testing.assert_array_equal(np.frombuffer(ffi.buffer(u), np.float64), want, err_msg=str(c))
    assert lib.lt_data_stream_uniforms(0, 0, 0, ffi.NULL, 4) == -1

