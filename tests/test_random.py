"""Torch7's random numbers: the MT19937 stream checked against NumPy's legacy
generator (an independent implementation of init_genrand + genrand_int32),
TH's formulas for every distribution rebuilt from that stream, state
save/restore, generators, per-LuaJIT-state independence (also across
threads), tensor fills in row-major order, randperm, multinomial and
distribution sanity with fixed seeds."""
import math
import threading

import numpy as np
import pytest

from lt_oracle import DTYPES, N, call, empty
from pytorch_bridge import LuaError, Runtime


def raw(seed, n):
    """The first n 32-bit outputs of MT19937 after init_genrand(seed)."""
    return np.random.RandomState(seed & 0xFFFFFFFF)._bit_generator.random_raw(n).astype(np.uint64)


def unit(seed, n):
    return raw(seed, n).astype(np.float64) / 4294967296.0


def box_muller(u, mean=0.0, std=1.0):
    """TH's normal(): one pair of uniforms gives rho*cos, then rho*sin."""
    x, y = u[0::2], u[1::2]
    rho = np.sqrt(-2.0 * np.log(1.0 - y))
    out = np.empty(2 * len(x))
    out[0::2] = rho * np.cos(2 * np.pi * x)
    out[1::2] = rho * np.sin(2 * np.pi * x)
    return out * std + mean


def sized(rt, dtype, *sizes):
    return rt.call(rt.eval("function(t, ...) return t:resize(...) end"), empty(rt, dtype), *sizes)


SEEDS = [0, 1, 42, 123456789, 2**32 - 1]


# ---------------------------------------------------------------- the stream


@pytest.mark.parametrize("seed", SEEDS)
def test_raw_stream_matches_numpy_mt19937(rt, seed):
    # scalar draws, then a LongTensor fill continuing the same stream (1300 words crosses two twists)
    got = call(rt, """torch.manualSeed(a)
        local s = {} for i = 1, 10 do s[i] = torch.random() end
        local t = torch.LongTensor(1300):random()
        return s, t""", seed)
    scal = np.array([got[0][i + 1] for i in range(10)], np.uint64)
    want = raw(seed, 1310)
    np.testing.assert_array_equal(scal, want[:10])
    np.testing.assert_array_equal(N(rt, got[1]).astype(np.uint64), want[10:])
    assert call(rt, "return torch.initialSeed()") == seed


def test_seed_is_masked_to_32_bits_for_the_state(rt, rng):
    seed = int(rng.integers(2**33, 2**52))
    got = call(rt, "torch.manualSeed(a); return torch.random(), torch.random(), torch.initialSeed()", seed)
    assert list(got[:2]) == list(raw(seed & 0xFFFFFFFF, 2))
    assert got[2] == seed


def test_random_seed_each_run(rt, rng):
    seed = int(rng.integers(0, 2**32))
    t = call(rt, "torch.manualSeed(a); return torch.LongTensor(700):random()", seed)
    np.testing.assert_array_equal(N(rt, t).astype(np.uint64), raw(seed, 700))


# ---------------------------------------------------------------- TH's formulas


def test_scalar_distributions_follow_th_formulas(rt):
    seed = 2024
    u = unit(seed, 64)
    r = raw(seed, 64)
    got = call(rt, """torch.manualSeed(a)
        return {torch.uniform(), torch.uniform(-2, 3), torch.exponential(2.5), torch.cauchy(), torch.cauchy(1, 2),
                torch.geometric(0.3), torch.bernoulli(), torch.bernoulli(0.9), torch.random(10), torch.random(-5, 5),
                torch.normal(), torch.normal(3, 2), torch.normal(), torch.logNormal(), torch.logNormal(0.5, 0.25)}""",
                seed)
    g = [got[i + 1] for i in range(15)]
    assert g[0] == u[0]
    assert g[1] == u[1] * 5 - 2
    assert g[2] == pytest.approx(-1 / 2.5 * math.log(1 - u[2]), rel=1e-15)
    assert g[3] == pytest.approx(math.tan(math.pi * (u[3] - 0.5)), rel=1e-14)
    assert g[4] == pytest.approx(1 + 2 * math.tan(math.pi * (u[4] - 0.5)), rel=1e-14)
    assert g[5] == int(math.log(1 - u[5]) / math.log(0.3)) + 1
    assert g[6] == (1 if u[6] <= 0.5 else 0)
    assert g[7] == (1 if u[7] <= 0.9 else 0)
    assert g[8] == int(r[8]) % 10 + 1
    assert g[9] == int(r[9]) % 11 - 5
    # normal: pair (u10, u11) gives cos then sin; logNormal(1, 2) defaults use the next pair
    n = box_muller(u[10:14])
    assert g[10] == pytest.approx(n[0], rel=1e-13)
    assert g[11] == pytest.approx(n[1] * 2 + 3, rel=1e-13)
    assert g[12] == pytest.approx(n[2], rel=1e-13)
    assert g[13] == pytest.approx(math.exp(n[3] * 2 + 1), rel=1e-13)
    n2 = box_muller(u[14:16])
    assert g[14] == pytest.approx(math.exp(n2[0] * 0.25 + 0.5), rel=1e-13)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_random_ranges_per_type(rt, dtype):
    """TH's t:random() ranges: [0, max] for integers, [0, 2^mantissa] for floats."""
    mod = {np.uint8: 256, np.int8: 128, np.int16: 2**15, np.int32: 2**31, np.int64: 2**63,
           np.float32: 2**24 + 1, np.float64: 2**53 + 1}[dtype]
    seed = 77
    t = call(rt, "torch.manualSeed(a); return b:random()", seed, sized(rt, dtype, 3, 50))
    want = (raw(seed, 150) % np.uint64(mod)).astype(dtype).reshape(3, 50)
    np.testing.assert_array_equal(N(rt, t), want)
    t = call(rt, "torch.manualSeed(a); return b:random(-3, 9)", seed, sized(rt, dtype, 150))
    if dtype == np.uint8:
        want = ((raw(seed, 150) % np.uint64(13)).astype(np.int64) - 3).astype(dtype)
    else:
        want = ((raw(seed, 150) % np.uint64(13)).astype(np.int64) - 3).astype(dtype)
    np.testing.assert_array_equal(N(rt, t), want)
    t = call(rt, "torch.manualSeed(a); return b:random(7)", seed, sized(rt, dtype, 150))
    np.testing.assert_array_equal(N(rt, t), (raw(seed, 150) % np.uint64(7) + np.uint64(1)).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensor_fills_follow_the_stream_in_row_major_order(rt, dtype):
    seed = 9
    u = unit(seed, 200)
    # a transposed, non-contiguous tensor is filled in its logical row-major order
    forms = [
        ("b:uniform()", u[:40]),
        ("b:uniform(2, 4)", u[:40] * 2 + 2),
        ("torch.uniform(b, -1, 1)", u[:40] * 2 - 1),
        ("b:normal()", box_muller(u[:40])),
        ("b:normal(1, 3)", box_muller(u[:40]) * 3 + 1),
        ("b:exponential(0.5)", -1 / 0.5 * np.log(1 - u[:40])),
        ("b:cauchy(0, 2)", 2 * np.tan(np.pi * (u[:40] - 0.5))),
        ("b:logNormal(0, 0.5)", np.exp(box_muller(u[:40]) * 0.5)),
        ("b:geometric(0.5)", (np.log(1 - u[:40]) / np.log(0.5)).astype(np.int64) + 1),
        ("b:bernoulli(0.25)", (u[:40] <= 0.25).astype(np.float64)),
    ]
    for code, want in forms:
        t = call(rt, "torch.manualSeed(a); local r = %s; assert(r == b); return b" % code, seed,
                 call(rt, "return a:resize(8, 5):t()", empty(rt, dtype)))
        got = N(rt, t)
        assert got.shape == (5, 8)
        np.testing.assert_allclose(got.reshape(-1), want.astype(dtype), rtol=1e-6 if dtype == np.float32 else 1e-13,
                                   err_msg=code)


def test_bernoulli_with_probability_tensor(rt, rng):
    seed = 31
    u = unit(seed, 60)
    for ptype in (np.float32, np.float64):
        p = rng.random(60).astype(ptype)
        t = call(rt, "torch.manualSeed(a); return torch.ByteTensor(6, 10):bernoulli(b)", seed, rt.from_numpy(p))
        np.testing.assert_array_equal(N(rt, t).reshape(-1), (u <= p.astype(np.float64)).astype(np.uint8))
    with pytest.raises(LuaError, match="inconsistent tensor size"):
        call(rt, "return torch.Tensor(3):bernoulli(torch.Tensor(4):fill(0.5))")
    with pytest.raises(LuaError, match="FloatTensor or DoubleTensor"):
        call(rt, "return torch.Tensor(3):bernoulli(torch.IntTensor(3):fill(0))")


def test_normal_cache_is_reset_by_manual_seed(rt):
    u = unit(5, 4)
    got = call(rt, "torch.manualSeed(5); torch.normal(); torch.manualSeed(5); return torch.normal(), torch.normal()")
    assert got == pytest.approx(tuple(box_muller(u[:2])), rel=1e-13)


# ---------------------------------------------------------------- constructors


def test_rand_randn_forms(rt):
    seed = 3
    u = unit(seed, 24)
    t, name = call(rt, "torch.manualSeed(a); local t = torch.rand(2, 3, 4); return t, torch.typename(t)", seed)
    assert name == "torch.DoubleTensor"
    np.testing.assert_array_equal(N(rt, t).reshape(-1), u)
    t = call(rt, "torch.manualSeed(a); return torch.rand(torch.LongStorage({4, 6}))", seed)
    np.testing.assert_array_equal(N(rt, t), u.reshape(4, 6))
    r = empty(rt, np.float32)
    t = call(rt, "torch.manualSeed(a); local t = torch.rand(b, 6); assert(t == b); return t", seed, r)
    np.testing.assert_array_equal(N(rt, t), u[:6].astype(np.float32))
    t = call(rt, "local g = torch.Generator(); torch.manualSeed(g, a); torch.manualSeed(1); return torch.randn(g, 4)", seed)
    np.testing.assert_allclose(N(rt, t), box_muller(u[:4]), rtol=1e-13)
    t = call(rt, "torch.manualSeed(a); return torch.randn(b, 2, 2)", seed, empty(rt, np.float64))
    np.testing.assert_allclose(N(rt, t).reshape(-1), box_muller(u[:4]), rtol=1e-13)


def randperm_oracle(seed, n):
    r = raw(seed, n)
    p = list(range(1, n + 1))
    for i in range(n - 1):
        z = int(r[i]) % (n - i)
        p[i], p[z + i] = p[z + i], p[i]
    return p


def test_randperm(rt, rng):
    seed = int(rng.integers(0, 2**32))
    for n in (1, 2, 10, 1000):
        t, name = call(rt, "torch.manualSeed(a); local p = torch.randperm(b); return p, torch.typename(p)", seed, n)
        assert name == "torch.DoubleTensor"
        got = N(rt, t)
        assert sorted(got.tolist()) == list(range(1, n + 1))
        assert got.tolist() == randperm_oracle(seed, n)
    t = call(rt, "torch.manualSeed(a); return torch.randperm(torch.LongTensor(), 50)", seed)
    assert N(rt, t).tolist() == randperm_oracle(seed, 50)
    with pytest.raises(LuaError, match="strictly positive"):
        call(rt, "return torch.randperm(0)")


def multinomial_oracle(u, probs, n, replacement):
    """TH's inverse-CDF draw, rebuilt from its description."""
    cum = np.cumsum(probs.astype(np.float64)).tolist()
    total = cum[-1]
    cum = [c / total for c in cum]
    out, k = [], 0
    for draw in range(n):
        x = u[k]
        k += 1
        cum[-1] = 1.0
        lo, hi = 0, len(cum)
        while hi > lo:
            mid = lo + (hi - lo) // 2
            if cum[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        out.append(lo + 1)
        if not replacement and draw + 1 < n:
            before = cum[lo - 1] if lo > 0 else 0.0
            diff = cum[lo] - before
            cum = [((c - diff) if j >= lo else c) / (1.0 - diff) for j, c in enumerate(cum)]
    return out


def test_multinomial(rt, rng):
    seed = 11
    p = rng.random(7) + 0.05
    u = unit(seed, 200)
    t = call(rt, "torch.manualSeed(a); return torch.multinomial(b, 20, true)", seed, rt.from_numpy(p))
    assert N(rt, t).tolist() == multinomial_oracle(u, p, 20, True)
    t = call(rt, "torch.manualSeed(a); return torch.multinomial(b, 7)", seed, rt.from_numpy(p))
    got = N(rt, t).tolist()
    assert got == multinomial_oracle(u, p, 7, False)
    assert sorted(got) == list(range(1, 8))
    # 2-D: one row of draws per distribution, continuing the stream
    P = rng.random((3, 5)).astype(np.float32) + 0.01
    t = call(rt, "torch.manualSeed(a); return torch.multinomial(b, 4, true)", seed, rt.from_numpy(P))
    want = [multinomial_oracle(u[4 * i:], P[i], 4, True) for i in range(3)]
    assert N(rt, t).tolist() == want
    # frequencies with replacement
    q = np.array([0.1, 0.6, 0.3])
    t = call(rt, "torch.manualSeed(5); return torch.multinomial(a, 30000, true)", rt.from_numpy(q))
    freq = np.bincount(N(rt, t), minlength=4)[1:] / 30000
    assert np.all(np.abs(freq - q) < 5 * np.sqrt(q * (1 - q) / 30000))
    with pytest.raises(LuaError, match="without replacement"):
        call(rt, "return torch.multinomial(a, 4)", rt.from_numpy(q))
    with pytest.raises(LuaError, match="sum of probabilities"):
        call(rt, "return torch.multinomial(torch.Tensor(3):fill(0), 2, true)")


# ---------------------------------------------------------------- state and generators


def test_rng_state_save_restore(rt):
    got = call(rt, """torch.manualSeed(8)
        torch.normal()                       -- leaves the second Box-Muller value cached
        local s = torch.getRNGState()
        local a = {torch.normal(), torch.random(), torch.rand(700)}
        torch.manualSeed(99)
        torch.setRNGState(s)
        local b = {torch.normal(), torch.random(), torch.rand(700)}
        return s:nElement(), torch.typename(s), a[1], b[1], a[2], b[2], a[3], b[3]""")
    assert got[0] == 5048 and got[1] == "torch.ByteTensor"
    assert got[2] == got[3] and got[4] == got[5]
    np.testing.assert_array_equal(N(rt, got[6]), N(rt, got[7]))
    with pytest.raises(LuaError, match="wrong size"):
        call(rt, "torch.setRNGState(torch.ByteTensor(10))")
    with pytest.raises(LuaError, match="Invalid RNG state"):
        call(rt, "torch.setRNGState(torch.ByteTensor(5048):zero())")
    with pytest.raises(LuaError, match="ByteTensor"):
        call(rt, "torch.setRNGState(torch.Tensor(5048))")


def test_generators_are_independent(rt):
    got = call(rt, """
        local g1, g2 = torch.Generator(), torch.Generator()
        assert(torch.typename(g1) == 'torch.Generator' and torch.isGenerator(g1))
        torch.manualSeed(g1, 4); torch.manualSeed(g2, 4); torch.manualSeed(5)
        local a = torch.random(g1)
        local d = torch.random()
        local b = torch.random(g2)
        local t = torch.Tensor(3):uniform(g1, 0, 1)
        local s = torch.getRNGState(g2)
        local c = torch.random(g2)
        torch.setRNGState(g2, s)
        return a, b, d, t, c, torch.random(g2), torch.initialSeed(g1)""")
    assert got[0] == got[1] == raw(4, 1)[0]
    assert got[2] == raw(5, 1)[0]
    np.testing.assert_array_equal(N(rt, got[3]), unit(4, 4)[1:])
    assert got[4] == got[5]
    assert got[6] == 4


def test_seed_round_trips(rt):
    s, init, a = call(rt, "local s = torch.seed(); return s, torch.initialSeed(), torch.random()")
    assert 0 <= s < 2**53 and s == init
    assert call(rt, "torch.manualSeed(a); return torch.random()", s) == a
    s2 = call(rt, "return torch.seed()")
    assert s2 != s  # urandom: a repeat has probability 2^-53


def test_states_are_independent_per_runtime():
    """Each LuaJIT state owns its default generator: same seed, same stream;
    seeding or drawing in one does not move the other, also from threads."""
    r1, r2 = Runtime(), Runtime()
    code = "torch.manualSeed(a); return torch.LongTensor(2000):random()"
    a1 = r1.to_numpy(call(r1, code, 17)).copy()
    a2 = r2.to_numpy(call(r2, code, 17)).copy()
    np.testing.assert_array_equal(a1, a2)
    call(r1, "torch.manualSeed(1)")
    call(r2, "torch.manualSeed(1)")
    x = call(r2, "return torch.random()")
    call(r1, "torch.manualSeed(12345); torch.rand(1000)")
    assert call(r2, "return torch.random()") == raw(1, 2)[1]
    assert x == raw(1, 1)[0]

    results = {}

    def work(i, seed):
        rt = Runtime()
        t = call(rt, "torch.manualSeed(a); local out = {} for k = 1, 20 do out[k] = torch.LongTensor(500):random() end "
                     "return torch.cat and out or out", seed)
        results[i] = np.concatenate([rt.to_numpy(t[k + 1]).copy() for k in range(20)])

    threads = [threading.Thread(target=work, args=(i, 100 + i)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i in range(3):
        np.testing.assert_array_equal(results[i].astype(np.uint64), raw(100 + i, 10000))


# ---------------------------------------------------------------- distributions


def test_distribution_moments():
    """Sample moments with fixed seeds within 6 standard errors."""
    rt = Runtime()
    n = 200_000

    def sample(code):
        return N(rt, call(rt, "torch.manualSeed(7); return torch.Tensor(%d):%s" % (n, code)))

    def near(x, mean, var):
        assert abs(x.mean() - mean) < 6 * math.sqrt(var / n), (x.mean(), mean)

    x = sample("uniform(-1, 3)")
    near(x, 1, 16 / 12)
    assert x.min() >= -1 and x.max() < 3
    assert abs(x.var() - 16 / 12) < 0.02
    x = sample("normal(2, 3)")
    near(x, 2, 9)
    assert abs(x.var() / 9 - 1) < 0.02
    near(sample("exponential(4)"), 0.25, 1 / 16)
    near(sample("bernoulli(0.3)"), 0.3, 0.21)
    near(sample("geometric(0.4)"), 1 / 0.6, 0.4 / 0.36)  # p(i) = (1 - p) p^(i - 1)
    near(sample("logNormal(0, 0.5)"), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25))
    c = sample("cauchy(1, 2)")
    assert abs(np.median(c) - 1) < 0.05
    r = sample("random(1, 6)")
    assert set(np.unique(r)) == {1, 2, 3, 4, 5, 6}
    near(r, 3.5, 35 / 12)


def test_argument_errors(rt):
    with pytest.raises(LuaError, match="standard deviation must be strictly positive"):
        call(rt, "return torch.normal(0, 0)")
    with pytest.raises(LuaError, match="standard deviation must be strictly positive"):
        call(rt, "return torch.Tensor(3):normal(0, -1)")
    with pytest.raises(LuaError, match="must be > 0 and < 1"):
        call(rt, "return torch.geometric(1)")
    with pytest.raises(LuaError, match="must be >= 0 and <= 1"):
        call(rt, "return torch.Tensor(2):bernoulli(1.5)")
    with pytest.raises(LuaError, match="upper bound must be strictly positive"):
        call(rt, "return torch.random(0)")
    with pytest.raises(LuaError, match="upper bound must be larger than lower bound"):
        call(rt, "return torch.Tensor(2):random(5, 4)")
    with pytest.raises(LuaError, match="lambda"):
        call(rt, "return torch.exponential()")
