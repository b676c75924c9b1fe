"""Torch7's tostring format for tensors (torch7 Tensor.lua's rules), and torch.Timer."""
import re

import numpy as np
import pytest


def show(rt, expr):
    return rt.execute("return tostring(%s)" % expr)


CASES = [
    # integers: width = digits + 1
    ("torch.Tensor({1, 2, 3})", " 1\n 2\n 3\n[torch.DoubleTensor of size 3]\n"),
    ("torch.Tensor({{1, 2, 3}, {4, 5, 6}})", " 1  2  3\n 4  5  6\n[torch.DoubleTensor of size 2x3]\n"),
    ("torch.IntTensor({-1, 20})", " -1\n 20\n[torch.IntTensor of size 2]\n"),
    ("torch.LongTensor({{0, 0}})", " 0  0\n[torch.LongTensor of size 1x2]\n"),
    ("torch.FloatTensor(2, 3):fill(7)", " 7  7  7\n 7  7  7\n[torch.FloatTensor of size 2x3]\n"),
    # large integers switch to the exponent format
    ("torch.Tensor({1e10, 2})", " 1.0000e+10\n 2.0000e+00\n[torch.DoubleTensor of size 2]\n"),
    # non-integers: 4 decimals, width digits + 6 (7 for values below 1)
    ("torch.Tensor({1.5, 2.25})", " 1.5000\n 2.2500\n[torch.DoubleTensor of size 2]\n"),
    ("torch.Tensor({0.5, 0.25})", " 0.5000\n 0.2500\n[torch.DoubleTensor of size 2]\n"),
    ("torch.Tensor({12.5, -3})", " 12.5000\n -3.0000\n[torch.DoubleTensor of size 2]\n"),
    # a common scale factor for small or large magnitudes
    ("torch.Tensor({0.001, 0.002})", "0.001 *\n 1.0000\n 2.0000\n[torch.DoubleTensor of size 2]\n"),
    ("torch.Tensor({1234567.5, 2000000})", "1e+06 *\n 1.2346\n 2.0000\n[torch.DoubleTensor of size 2]\n"),
    ("torch.Tensor({{0.001, 0.002}, {0.003, 0.004}})",
     "0.001 *\n  1.0000  2.0000\n  3.0000  4.0000\n[torch.DoubleTensor of size 2x2]\n"),
    # magnitudes more than 4 decades apart: exponent format
    ("torch.Tensor({1e-5, 100.5})", " 1.0000e-05\n 1.0050e+02\n[torch.DoubleTensor of size 2]\n"),
    # empty
    ("torch.Tensor()", "[torch.DoubleTensor with no dimension]\n"),
    ("torch.ByteTensor()", "[torch.ByteTensor with no dimension]\n"),
    # >2-D: (i,.,.) slices, one format for the whole tensor
    ("torch.Tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 10}}})",
     "(1,.,.) = \n   1   2\n   3   4\n\n(2,.,.) = \n   5   6\n   7  10\n[torch.DoubleTensor of size 2x2x2]\n"),
    ("torch.Tensor({{{0.001, 0.002}}, {{0.003, 0.004}}})",
     "(1,.,.) = \n 0.001 *\n   1.0000  2.0000\n\n(2,.,.) = \n 0.001 *\n   3.0000  4.0000\n"
     "[torch.DoubleTensor of size 2x1x2]\n"),
]


@pytest.mark.parametrize("expr,want", CASES)
def test_exact_strings(shared_rt, expr, want):
    assert show(shared_rt, expr) == want


def test_four_dims_first_index_fastest(shared_rt):
    s = show(shared_rt, "torch.Tensor(2, 2, 1, 1):zero()")
    labels = re.findall(r"\((\d+),(\d+),\.,\.\) = ", s)
    assert labels == [("1", "1"), ("2", "1"), ("1", "2"), ("2", "2")]
    assert s.endswith("[torch.DoubleTensor of size 2x2x1x1]\n")
    # the slice (i, j) shows element [i][j]
    s = show(shared_rt, "torch.Tensor({{{{1}}, {{2}}}, {{{3}}, {{4}}}})")
    assert "(2,1,.,.) = \n  3\n" in s and "(1,2,.,.) = \n  2\n" in s


def test_column_blocks(shared_rt):
    # width 2 + 1 separator: 26 columns fit in 80 characters
    s = show(shared_rt, "torch.Tensor(2, 30):fill(1)")
    row26 = " ".join([" 1"] * 26)
    row4 = " ".join([" 1"] * 4)
    want = ("Columns 1 to 26\n" + row26 + "\n" + row26 + "\n\n"
            "Columns 27 to 30\n" + row4 + "\n" + row4 + "\n[torch.DoubleTensor of size 2x30]\n")
    assert s == want


def test_noncontiguous_and_types(shared_rt, rng):
    rt = shared_rt
    a = rng.integers(-9, 10, size=(3, 4)).astype(np.float32)
    t = rt.from_numpy(np.ascontiguousarray(a.T).T)
    got = rt.call(rt.eval("function(t) return tostring(t) end"), t)
    want = "\n".join(" ".join("%2d" % v for v in r) for r in a)
    assert got == want + "\n[torch.FloatTensor of size 3x4]\n"
    for name in ["Byte", "Char", "Short", "Int", "Long", "Float", "Double"]:
        s = show(rt, "torch.%sTensor({{1, 2}, {3, 4}})" % name)
        assert s == " 1  2\n 3  4\n[torch.%sTensor of size 2x2]\n" % name


def test_nan_uses_plain_f(shared_rt):
    s = show(shared_rt, "torch.Tensor({0/0, 1.5})")
    lines = s.split("\n")
    assert lines[1] == "1.500000" and "nan" in lines[0]
    assert lines[2] == "[torch.DoubleTensor of size 2]"


def test_format_vector_for_storages(shared_rt):
    assert shared_rt.execute("return torch._formatVector(torch.Tensor({1, 2}))") == " 1\n 2"
    s = shared_rt.execute("return tostring(torch.FloatStorage({0.5, 1}))")
    assert s.startswith(" 0.5000\n 1.0000\n[torch.FloatStorage of size 2]")
    # the printer is a method too, as on Torch7's classes
    assert shared_rt.execute("return torch.LongStorage({7, 3}):__tostring__()") == " 7\n 3\n[torch.LongStorage of size 2]\n"


def test_timer(shared_rt):
    r = shared_rt.execute("""
    local t = torch.Timer()
    local x = 0
    for i = 1, 2e6 do x = x + math.sin(i) end
    local a = t:time()
    t:stop()
    local b = t:time()
    local x2 = 0
    for i = 1, 2e5 do x2 = x2 + math.sin(i) end
    local c = t:time()
    local s1 = tostring(t)
    t:resume()
    for i = 1, 2e5 do x2 = x2 + math.sin(i) end
    local d = t:time()
    t:reset()
    local e = t:time()
    t:stop(); t:reset()
    local f = t:time()
    return a.real, a.user, a.sys, b.real, c.real, c.user, d.real, e.real, f.real, s1, tostring(t),
           torch.typename(t)
    """)
    a_real, a_user, a_sys, b_real, c_real, c_user, d_real, e_real, f_real, s1, s2, tn = r
    assert a_real > 0 and a_user > 0 and a_sys >= 0
    assert b_real >= a_real and c_real == b_real
    assert d_real > c_real
    assert 0 <= e_real < d_real
    assert f_real == 0
    assert s1 == "torch.Timer [status: stopped]" and s2 == "torch.Timer [status: stopped]"
    assert tn == "torch.Timer"
