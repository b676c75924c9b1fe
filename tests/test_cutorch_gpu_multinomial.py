"""cutorch's multinomial on the device (lua/cutorch/gpu_multinomial.lua; with replacement native/cuda/multinomial.cu
through native/src/cuda_ops_multinomial.c, without replacement the exponential keys' topk).

The draws come from cutorch's Philox stream, so they cannot match the CPU generator's: the tests check the
invariants (sizes, result type, 1-based categories, zero probabilities never drawn, distinct categories without
replacement) and the distributions, by chi-square statistics of fixed-seed draws with bounds that a wrong
distribution exceeds by far. Like tests/test_cutorch_gpu.py these need the GPU backend and skip without it; in CI
test_the_gpu_backend_on_the_emulated_driver_with_guarded_memory runs this file on the emulated driver. Every call
that should run on the device must (cutorch.hostFallbacks() stays empty)."""
import numpy as np
import pytest

from test_cutorch_gpu import LAYOUTS, fallbacks, gpu, to_device, to_host  # noqa: F401 (fixtures)


def probabilities(rng, shape, zeros):
    """Positive random weights (not normalized) with the columns in zeros set to 0."""
    p = rng.random(shape) + 0.05
    p[..., zeros] = 0
    return p


def chi_square(counts, expected):
    keep = expected > 0
    assert (counts[~keep] == 0).all(), "a category of probability 0 was drawn"
    return (((counts[keep] - expected[keep]) ** 2) / expected[keep]).sum()


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_multinomial_forms_sizes_and_invariants(gpu, rng, layout, name):
    """x:multinomial(n [, replacement]), torch.multinomial(x, ...), res:multinomial(x, ...) and torch.multinomial(res,
    x, ...) with 1-D and 2-D probabilities (a transposed view too): CudaLongTensor results of Torch7's sizes, values
    in 1..K, zero-probability categories never drawn, distinct categories in each row without replacement (and all
    of the non-zero ones when n is their count)."""
    rt = gpu
    zeros = [1, 6, 10]
    p2 = probabilities(rng, (9, 13), zeros)
    p1 = probabilities(rng, 13, zeros)
    nonzero = [k for k in range(13) if k not in zeros]
    got = rt.eval("""function(view, p1, p2)
       local r1, r2 = torch.CudaLongTensor(), torch.CudaLongTensor(4, 4)
       local x2 = view(p2)
       local out = {p1:multinomial(25, true), torch.multinomial(p1, 10), r1:multinomial(x2, 7, false),
                    torch.multinomial(r2, x2, 40, true), x2:multinomial(10), torch.multinomial(p1, 1, true)}
       out[7], out[8] = r1, r2
       local types = {}
       for i = 1, 6 do types[i] = torch.type(out[i]) end
       out[9] = table.concat(types, ' ')
       return out
    end""")(rt.eval(LAYOUTS[layout]), to_device(rt, p1, name),
            to_device(rt, p2.T if layout == "transposed" else p2, name))   # on the device: p2 through the view
    assert got[9] == " ".join(["torch.CudaLongTensor"] * 6)
    sizes = [(25,), (10,), (9, 7), (9, 40), (9, 10), (1,)]
    replaced = [True, False, False, True, False, True]
    for k, (size, with_replacement) in enumerate(zip(sizes, replaced), 1):
        d = to_host(rt, got[k])
        assert d.shape == size, k
        assert np.isin(d, np.array(nonzero) + 1).all(), (k, d)
        if not with_replacement:
            rows = d.reshape(-1, size[-1])
            assert all(len(set(r)) == size[-1] for r in rows), (k, d)
            if size[-1] == len(nonzero):
                assert all(set(r) == set(np.array(nonzero) + 1) for r in rows), k
    np.testing.assert_array_equal(to_host(rt, got[7]), to_host(rt, got[3]))
    np.testing.assert_array_equal(to_host(rt, got[8]), to_host(rt, got[4]))
    assert fallbacks(rt) == {}


@pytest.mark.parametrize("name", ["Cuda", "CudaDouble"])
def test_multinomial_with_replacement_follows_the_distribution(gpu, name):
    """A fixed seed, 12,000 draws of each of two rows with different distributions (a zero among them): the counts'
    chi-square (3 and 4 degrees of freedom) stays below 25 (a chance of about 1e-4 for the right distribution; a
    wrong one, such as the categories shifted by one or drawn uniformly, gives hundreds)."""
    rt = gpu
    rt.execute("cutorch.manualSeed(20261205)")
    p = np.array([[0.1, 0.2, 0.0, 0.3, 0.4], [5.0, 1.0, 1.0, 1.0, 2.0]])
    got = to_host(rt, rt.eval("function(p) return p:multinomial(12000, true) end")(to_device(rt, p, name)))
    for row, probs in zip(got, p):
        counts = np.bincount(row - 1, minlength=5)
        assert chi_square(counts, 12000 * probs / probs.sum()) < 25, counts
    assert fallbacks(rt) == {}


def test_multinomial_without_replacement_follows_successive_draws(gpu):
    """1,500 rows of one distribution, two draws each without replacement (a fixed seed): the first draws follow p,
    the second ones sum_i p_i p_j / (1 - p_i) over i != j; chi-square below 25 each (a wrong order, such as the
    least likely first, or draws with replacement, fail)."""
    rt = gpu
    rt.execute("cutorch.manualSeed(7)")
    p = np.array([0.5, 0.25, 0.0, 0.15, 0.1])
    rows = np.tile(p, (1500, 1))
    got = to_host(rt, rt.eval("function(p) return torch.multinomial(p, 2) end")(to_device(rt, rows, "CudaDouble")))
    assert (got[:, 0] != got[:, 1]).all()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)])
    for draws, probs in ((got[:, 0], p), (got[:, 1], second)):
        counts = np.bincount(draws - 1, minlength=5)
        assert chi_square(counts, 1500 * probs) < 25, counts
    assert fallbacks(rt) == {}


def test_multinomial_keeps_the_cpus_errors(gpu):
    """Negative and NaN probabilities, a row summing to 0, more draws than categories or than non-zero probabilities
    without replacement, no draws, 3-D probabilities: the CPU's messages (they run staged)."""
    rt = gpu
    for code in ["torch.multinomial(x.new({0.5, -0.1, 0.6}), 2, true)", "torch.multinomial(x.new({0.5, 0/0}), 1, true)",
                 "torch.multinomial(x.new({{1, 2}, {0, 0}}), 2, true)", "torch.multinomial(x.new({1, 2}), 3)",
                 "torch.multinomial(x.new({1, 0, 0, 2}), 3)", "torch.multinomial(x.new({1, 2}), 0, true)",
                 "torch.multinomial(x.new(2, 2, 2):fill(1), 1, true)"]:
        msgs = [rt.eval("function(x) local ok, e = pcall(function() return %s end) return e end" % code)(
            rt.eval("torch.%s()" % t)) for t in ("CudaTensor", "FloatTensor")]
        assert msgs[0] is not None and msgs[0].split(": ", 1)[-1] == msgs[1].split(": ", 1)[-1], (code, msgs)


def _lua(rt, src):
    return rt.eval("function(...) " + src + " end")


def test_alias_tables_of_device_probabilities_are_zero_based(gpu, rng):
    """cutorch's torch.multinomialAliasSetup on a CudaTensor gives 0-based aliases (the CPU's are 1-based): the
    same tables as the CPU's less one, and draws from them are the CPU's draws (1-based) from the same seed."""
    rt = gpu
    probs = rt.from_numpy(rng.uniform(0.1, 1, 23))
    r = _lua(rt, """
        local p = ...
        local cpu = torch.multinomialAliasSetup(p)
        local dev = torch.multinomialAliasSetup(p:cuda())
        torch.manualSeed(3)
        local a = torch.multinomialAlias(torch.LongTensor(200), cpu)
        torch.manualSeed(3)
        local b = torch.multinomialAlias(torch.CudaLongTensor(200), dev)
        return torch.type(dev[1]), cpu[1], dev[1]:long(), a, b:long()""")(probs)
    assert r[0] == "torch.CudaLongTensor"
    np.testing.assert_array_equal(rt.to_numpy(r[2]), rt.to_numpy(r[1]) - 1)
    np.testing.assert_array_equal(rt.to_numpy(r[4]), rt.to_numpy(r[3]))
    assert rt.to_numpy(r[2]).min() >= 0 and rt.to_numpy(r[2]).max() < 23


@pytest.mark.parametrize("p", [0.8, 0.3])
def test_geometric_counts_trials_as_cutorch_did(gpu, p):
    """cutorch's x:geometric(p): trials up to the first success of probability p (mean 1/p), numpy's geometric;
    Torch7's CPU geometric(p) differs (P(x > k) = p^k), and FloatTensor keeps that."""
    rt = gpu
    n = 40000
    dev, cpu = _lua(rt, """
        local n, p = ...
        cutorch.manualSeed(11)
        torch.manualSeed(11)
        return torch.CudaTensor(n):geometric(p):float(), torch.FloatTensor(n):geometric(p)""")(n, p)
    x = rt.to_numpy(dev)
    assert x.min() >= 1 and np.all(x == np.round(x))
    for k in range(1, 6):   # P(x = k) = (1 - p)^(k - 1) p, within 5 standard errors
        want = (1 - p) ** (k - 1) * p
        assert abs(np.mean(x == k) - want) < 5 * np.sqrt(want * (1 - want) / n) + 1e-4, k
    assert abs(rt.to_numpy(cpu).mean() - 1 / (1 - p)) < 0.05 / (1 - p)

