"""Host tests of the CUDA kernel sources in native/cuda/, without a GPU.

Each kernel source is compiled with g++ (C++20) and the SIMT emulator tests/cuda_host/simt.h into a
shared library in a temporary folder (all modules compile in the background, two at a time, as soon
as the first test asks for one). Kernels are launched through `simt_launch`, which takes the argument
array the way cuLaunchKernel does (params[k] points at argument k's value, tensor infos by value) and
checks the argument types against the kernel's signature. Results are compared with NumPy on fresh
random inputs (the seed is printed on failure): contiguous, transposed, narrowed (offset + stride) and
expanded (stride 0) operands, collapsed and uncollapsed tensor infos, odd sizes, outputs poisoned with
NaN (or a byte pattern for integers) so that an element not written shows, and checks that nothing
outside an output view was touched.

Tolerances, where results are not exact:
  * pointwise: IEEE-basic operations (+ - * / sqrt, clamp, abs, neg, sign and their combinations) must
    match NumPy bit for bit (the emulator has no FMA contraction: -ffp-contract=off); libm functions
    (exp, log, tanh, sigmoid, pow, rsqrt) within 4 ulp for Float/Double and 1 ulp for Half.
  * sums/products: the first-order rounding bound  eps_acc * (terms per thread + log2(threads) + 2)
    * sum|terms|  (eps_acc of the accumulate type; a dropped or doubled element exceeds it by far);
    then half an ulp of the output type for rounding the result.
  * LogSoftMax vs a float64 reference: Double 1e-12 (1 + |ref|); Float 1e-5 + 1e-6 |ref|;
    Half 2^-11 |ref| + 2e-5 (1 + |ref|) (the half rounding of the output).
  * ClassNLL loss: eps_acc * (batch + 4) * sum|w x|; gradients and total weights of unweighted runs exact.
  * copy, fill, max/min (values and indices), dropout masks/noise/outputs: exact.
"""
import ctypes
import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from lt_oracle import dropout_draws, dropout_threshold, philox_np
from simt_emulator import (ACC, CUDA_DIR, FLOATS, INTS, MODULES, NP, SIMT_DIR, TYPES, LtTensor,
                           assert_untouched, make_input, make_output, poison_value)

ACC_C = {t: ctypes.c_int64 for t in INTS}
ACC_C.update({"Float": ctypes.c_float, "Double": ctypes.c_double, "Half": ctypes.c_float})
EPS = {np.float16: 2.0 ** -11, np.float32: 2.0 ** -24, np.float64: 2.0 ** -53}  # unit roundoff


# ----------------------------------------------------------------------------- the tensor-info ABI

def collapse(sizes, strides):
    """Merge dimensions that are contiguous with each other and drop size-1 ones (what the host does)."""
    dims = [(s, st) for s, st in zip(sizes, strides) if s != 1]
    if not dims:
        return [1], [1]
    out = [list(dims[0])]
    for s, st in dims[1:]:
        ps, pst = out[-1]
        if pst == st * s:
            out[-1] = [ps * s, st]
        else:
            out.append([s, st])
    return [d[0] for d in out], [d[1] for d in out]


def tinfo(view, collapsed=True):
    """lt_cu_tensor of a NumPy view (its memory plays the device memory)."""
    item = view.itemsize
    sizes = list(view.shape)
    strides = []
    for st in view.strides:
        assert st >= 0 and st % item == 0
        strides.append(st // item)
    if not sizes:
        sizes, strides = [1], [1]
    if collapsed:
        sizes, strides = collapse(sizes, strides)
    assert 1 <= len(sizes) <= 8
    t = LtTensor()
    t.data = view.__array_interface__["data"][0]
    for d, (s, st) in enumerate(zip(sizes, strides)):
        t.sizes[d] = s
        t.strides[d] = st
    t.dims = len(sizes)
    return t


def ptr(a):
    return ctypes.c_void_p(0 if a is None else a.__array_interface__["data"][0])



# ----------------------------------------------------------------------------- layouts and checks
def assert_exact(got, exp, what=""):
    got = np.asarray(got)
    exp = np.asarray(exp)
    assert got.shape == exp.shape, (what, got.shape, exp.shape)
    if got.dtype.kind == "f":
        ok = (got == exp) | (np.isnan(got) & np.isnan(exp))
    else:
        ok = got == exp
    if not ok.all():
        i = np.argwhere(~ok)[0]
        raise AssertionError("%s: %d of %d differ; first at %s: got %r expected %r" % (
            what, (~ok).sum(), ok.size, tuple(i), got[tuple(i)], exp[tuple(i)]))


def _ordered(a):
    """Floats as integers in value order (so that |difference| counts ulps)."""
    a = np.ascontiguousarray(a)
    it = {2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize]
    i = a.view(it).astype(object if a.itemsize == 8 else np.int64)
    mag_mask = (1 << (8 * a.itemsize - 1)) - 1
    if a.itemsize == 8:
        return np.array([(-(v & mag_mask) if v < 0 else v) for v in i.ravel().tolist()],
                        dtype=object).reshape(a.shape)
    return np.where(i < 0, -(i & mag_mask), i)


def assert_ulp(got, exp, max_ulp, what=""):
    got = np.asarray(got)
    exp = np.asarray(exp, dtype=got.dtype)
    gn, en = np.isnan(got), np.isnan(exp)
    if (gn != en).any():
        i = np.argwhere(gn != en)[0]
        raise AssertionError("%s: NaN mismatch at %s: got %r expected %r" % (
            what, tuple(i), got[tuple(i)], exp[tuple(i)]))
    keep = ~gn
    d = np.abs(_ordered(np.where(keep, got, 0)) - _ordered(np.where(keep, exp, 0)))
    d = np.where(keep, d, 0)
    worst = max(d.ravel().tolist()) if d.size else 0
    if worst > max_ulp:
        i = np.unravel_index(int(np.argmax(np.array(d.ravel().tolist(), dtype=np.float64))), d.shape)
        raise AssertionError("%s: %d ulp apart (allowed %d) at %s: got %r expected %r" % (
            what, worst, max_ulp, i, got[i], exp[i]))


def assert_bound(got, ref, bound, what=""):
    """|got - ref| <= bound (+ half an ulp of got's type for the final rounding), NaN must match."""
    got = np.asarray(got)
    g = got.astype(np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    bound = np.asarray(bound, dtype=np.float64)
    if got.dtype.kind == "f":
        # half an ulp: relative for normal numbers, half the smallest subnormal below them (a Half result of
        # 1.8e-5 is a subnormal, 2^-24 apart; CI once failed there on a correctly rounded value)
        half_ulp = np.maximum(np.abs(ref) * EPS[got.dtype.type], 0.5 * float(np.finfo(got.dtype).smallest_subnormal))
        bound = bound + half_ulp
    gn, rn = np.isnan(g), np.isnan(ref)
    same_inf = np.isinf(g) & np.isinf(ref) & (np.sign(g) == np.sign(ref))
    with np.errstate(invalid="ignore"):
        ok = (gn & rn) | same_inf | (~gn & ~rn & (np.abs(g - ref) <= bound))
    if not ok.all():
        i = np.argwhere(~ok)[0]
        i = tuple(i)
        b = bound if bound.ndim == 0 else bound[i]
        raise AssertionError("%s: %d of %d outside the bound; first at %s: got %r ref %r bound %r" % (
            what, (~ok).sum(), ok.size, i, g[i], ref[i], b))


def geometry(n, block=64, cap=4):
    return max(1, min(cap, -(-n // block))), block


# ----------------------------------------------------------------------------- expected kernel names
def expected_kernels(resolve=True):
    """Every kernel name the README documents, module by module, with its signature; "A" (the compute
    type of the kernel's element type) resolved to f/d/q unless resolve is False."""
    T, P, Q, I, U, D = "S144", "p", "q", "i", "Q", "d"
    if resolve:
        sc = lambda t: {"Float": "f", "Half": "f", "Double": "d"}.get(t, "q")  # noqa: E731
    else:
        sc = lambda t: "A"  # noqa: E731
    k = {m: {} for m in MODULES if not m.startswith("simt_")}
    k["masked"]["lt_mask_scan"] = ",".join([P, Q, P, P])
    k["sleep"]["lt_sleep"] = Q
    for idx in ("i32", "i64"):
        for b in (1, 2, 4, 8):
            k["copy_batch"]["lt_copy_batch_%d_%s" % (b, idx)] = ",".join([P, Q, Q, Q])
    for idx in ("i32", "i64"):
        for d in TYPES:
            for s in TYPES:
                k["copy"]["lt_copy_%s_%s_%s" % (d, s, idx)] = ",".join([T, T, Q])
            k["fill"]["lt_fill_%s_%s" % (d, idx)] = ",".join([T, Q, sc(d)])
            k["dropout"]["lt_random_%s_%s" % (d, idx)] = ",".join([T, Q, I, D, D, U, U])
        k["masked"]["lt_mask_count_%s" % idx] = ",".join([T, Q, Q, P, P])
        k["multinomial"]["lt_multinomial_search_%s" % idx] = ",".join([T, P, P, Q, Q, Q])
        for t in TYPES:
            a = sc(t)
            ops = {"adds": [T, T, Q, a], "muls": [T, T, Q, a], "clamp": [T, T, Q, a, a],
                   "cadd": [T, T, T, Q, a], "cmul": [T, T, T, Q]}
            if t in FLOATS:
                ops.update({"divs": [T, T, Q, a], "pows": [T, T, Q, a], "cdiv": [T, T, T, Q],
                            "addcmul": [T, T, T, T, Q, a], "addcdiv": [T, T, T, T, Q, a]})
                for u in ("sqrt", "rsqrt", "exp", "log", "abs", "neg", "sign", "tanh", "sigmoid"):
                    ops[u] = [T, T, Q]
            for op, sig in ops.items():
                k["pointwise"]["lt_%s_%s_%s" % (op, t, idx)] = ",".join(sig)
            red = ["sum", "prod", "max", "min"] + (["sumsq"] if t in FLOATS else [])
            for op in red:
                k["reduce"]["lt_reduce_%s_%s_%s" % (op, t, idx)] = ",".join([T, Q, P])
            if t in FLOATS:
                k["reduce"]["lt_reduce_norm_%s_%s" % (t, idx)] = ",".join([T, Q, a, P])
            for kind in ("dim", "dimblk"):
                for op in ["sum", "prod"] + (["mean"] if t in FLOATS else []):
                    k["reduce_dim"]["lt_reduce_%s_%s_%s_%s" % (kind, op, t, idx)] = ",".join([T, T, Q, Q, Q])
                for op in ("max", "min"):
                    k["reduce_dim"]["lt_reduce_%s_%s_%s_%s" % (kind, op, t, idx)] = ",".join([T, T, T, Q, Q, Q])
            k["sort"]["lt_sort_tiles_%s_%s" % (t, idx)] = ",".join([T, Q, Q, Q, I, P, P])
            k["sort"]["lt_sort_write_%s_%s" % (t, idx)] = ",".join([T, Q, T, Q, P, P, Q, Q, Q, Q])
            k["sort"]["lt_sort_mode_%s_%s" % (t, idx)] = ",".join([T, T, P, P, Q, Q])
            k["sort"]["lt_select_%s_%s" % (t, idx)] = ",".join([T, Q, T, Q, T, Q, Q, Q, Q, I, I])
            k["index"]["lt_index_rows_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, Q, P, P, P, Q, I])
            k["index"]["lt_index_fill_%s_%s" % (t, idx)] = ",".join([T, Q, Q, P, Q, a])
            k["index"]["lt_gather_%s_%s" % (t, idx)] = ",".join([T, T, T] + [Q] * 5)
            k["index"]["lt_scatter_%s_%s" % (t, idx)] = ",".join([T, T, T] + [Q] * 5 + [I, a])
            k["index"]["lt_nonzero_count_%s_%s" % (t, idx)] = ",".join([T, Q, Q, P])
            k["index"]["lt_nonzero_write_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, P, P])
        for t in TYPES[:-1]:  # compare.cu: every type but Half
            a = sc(t)
            k["compare"]["lt_cmp_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, I])
            k["compare"]["lt_cmps_%s_%s" % (t, idx)] = ",".join([T, T, Q, a, I])
            k["compare"]["lt_binop_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, I])
            k["compare"]["lt_binops_%s_%s" % (t, idx)] = ",".join([T, T, Q, a, I])
            k["compare"]["lt_masked_fill_%s_%s" % (t, idx)] = ",".join([T, T, Q, a])
            k["compare"]["lt_tri_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, Q, I])
            k["masked"]["lt_masked_select_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, Q, P, Q])
            k["masked"]["lt_masked_copy_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, Q, P, Q])
            if t in ("Float", "Double"):
                k["compare"]["lt_unop_%s_%s" % (t, idx)] = ",".join([T, T, Q, I])
                k["compare"]["lt_lerp_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, a])
        k["index"]["lt_index_check_Long_%s" % idx] = ",".join([T, Q, Q, P])
        for t in TYPES:
            k["scan"]["lt_scan_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, Q, Q, I])
            k["scan"]["lt_scan_totals_%s_%s" % (t, idx)] = ",".join([T, Q, Q, Q, Q, I, P])
            k["scan"]["lt_scan_chunks_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, Q, Q, Q, I, P])
        for t in ("Float", "Double"):
            k["stats"]["lt_dim_stat_%s_%s" % (t, idx)] = ",".join([T, P, T, Q, Q, Q, I, D, I])
            k["stats"]["lt_dim_stat1_%s_%s" % (t, idx)] = ",".join([T, P, T, Q, Q, Q, I, D, I])
            k["stats"]["lt_renorm_%s_%s" % (t, idx)] = ",".join([T, T, Q, Q, Q, Q, D, D])
        for t in FLOATS:
            k["dropout"]["lt_dropout_fwd_%s_%s" % (t, idx)] = ",".join([T, T, P, Q, D, I, U, U])
            k["dropout"]["lt_rrelu_fwd_%s_%s" % (t, idx)] = ",".join([T, T, P, Q, D, D, U, U])
            k["dropout"]["lt_dropout_bwd_%s_%s" % (t, idx)] = ",".join([T, T, P, Q])
    for t in TYPES:
        a = sc(t)
        for op in ["sum", "prod", "max", "min"] + (["sumsq"] if t in FLOATS else []):
            k["reduce"]["lt_reduce_finish_%s_%s" % (op, t)] = ",".join([P, Q, P])
        if t in FLOATS:
            k["reduce"]["lt_reduce_finish_norm_%s" % t] = ",".join([P, Q, a, P])
        k["sort"]["lt_sort_merge_%s" % t] = ",".join([P, P, P, P, Q, Q, Q, I])
    for t in FLOATS:
        a = sc(t)
        for op in ("logsoftmax", "softmax"):
            k["logsoftmax"]["lt_%s_fwd_%s" % (op, t)] = ",".join([P, P, Q, Q])
            k["logsoftmax"]["lt_%s_bwd_%s" % (op, t)] = ",".join([P, P, P, Q, Q])
            k["logsoftmax"]["lt_%s_spatial_fwd_%s" % (op, t)] = ",".join([P, P, Q, Q, Q])
            k["logsoftmax"]["lt_%s_spatial_bwd_%s" % (op, t)] = ",".join([P, P, P, Q, Q, Q])
        k["batchnorm"]["lt_batchnorm_stats_%s" % t] = ",".join([P] * 2 + [Q] * 4)
        k["batchnorm"]["lt_batchnorm_fwd_train_%s" % t] = ",".join([P] * 9 + [Q] * 4 + [a, a])
        k["batchnorm"]["lt_batchnorm_fwd_eval_%s" % t] = ",".join([P] * 6 + [Q] * 4 + [a])
        k["batchnorm"]["lt_batchnorm_grad_sums_%s" % t] = ",".join([P] * 4 + [Q] * 4)
        k["batchnorm"]["lt_batchnorm_bwd_%s" % t] = ",".join([P] * 9 + [Q] * 4 + [I, a, a])
        geo = [Q] * 11  # planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW
        k["pooling"]["lt_maxpool_fwd_%s" % t] = ",".join([P, P, P] + geo)
        k["pooling"]["lt_maxpool_bwd_%s" % t] = ",".join([P, P, P] + geo)
        k["pooling"]["lt_avgpool_fwd_%s" % t] = ",".join([P, P] + geo + [I])
        k["pooling"]["lt_avgpool_bwd_%s" % t] = ",".join([P, P] + geo + [I])
        k["pooling"]["lt_subsample_fwd_%s" % t] = ",".join([P] * 4 + geo + [Q, I])
        k["pooling"]["lt_subsample_bwd_%s" % t] = ",".join([P] * 3 + geo + [Q, I])
        k["pooling"]["lt_subsample_acc_%s" % t] = ",".join([P] * 4 + geo + [Q, I, a])
        k["pooling"]["lt_flp_fwd_%s" % t] = ",".join([P, P] + [Q] * 6 + [D])
        k["pooling"]["lt_flp_bwd_%s" % t] = ",".join([P] * 4 + [Q] * 6 + [D])
        k["classnll"]["lt_classnll_fwd_%s" % t] = ",".join([P, P, P, P, P, P, Q, Q, I, Q])
        k["classnll"]["lt_classnll_bwd_%s" % t] = ",".join([P, P, P, D, Q, Q, I, Q])
    for t in ("Float", "Double", "Half"):
        for unfold in ("im2col", "col2im"):
            k["conv"]["lt_%s_%s" % (unfold, t)] = ",".join([P, P] + [Q] * 13)
        k["conv"]["lt_conv_bias_add_%s" % t] = ",".join([P, P, Q, Q, Q])
        k["conv"]["lt_rowconv_fwd_%s" % t] = ",".join([P] * 4 + [Q] * 12)
        k["conv"]["lt_rowconv_bwd_%s" % t] = ",".join([P] * 3 + [Q] * 12)
        k["conv"]["lt_rowconv_acc_%s" % t] = ",".join([P] * 4 + [Q] * 12 + [sc(t)])
        k["conv"]["lt_convlocal_fwd_%s" % t] = ",".join([P] * 4 + [Q] * 13)
        k["conv"]["lt_convlocal_bwd_%s" % t] = ",".join([P] * 3 + [Q] * 13)
        k["conv"]["lt_convlocal_acc_%s" % t] = ",".join([P] * 4 + [Q] * 13 + [sc(t)])
        k["conv"]["lt_conv_bias_grad_%s" % t] = ",".join([P, P, Q, Q, Q, sc(t)])
        k["conv"]["lt_conv_bias_partial_%s" % t] = ",".join([P, P, Q, Q, Q, Q])
        k["conv"]["lt_conv_bias_finish_%s" % t] = ",".join([P, P, Q, Q, sc(t)])
    for t in ("Float", "Double", "Half"):
        for idx in ("i32", "i64"):
            k["nn_pointwise"]["lt_nn_pw_fwd_%s_%s" % (t, idx)] = ",".join([T, T, Q, I, D, D])
            k["nn_pointwise"]["lt_nn_pw_bwd_%s_%s" % (t, idx)] = ",".join([T, T, T, Q, I, D, D])
        k["nn_pointwise"]["lt_prelu_fwd_%s" % t] = ",".join([P, P, P, Q, Q, Q])
        k["nn_pointwise"]["lt_prelu_bwd_%s" % t] = ",".join([P, P, P, P, Q, Q, Q])
        k["nn_pointwise"]["lt_prelu_acc_%s" % t] = ",".join([P, Q, P, P, Q, Q, Q, sc(t)])
        k["nn_pointwise"]["lt_glu_fwd_%s" % t] = ",".join([P, P, Q, Q, Q])
        k["nn_pointwise"]["lt_glu_bwd_%s" % t] = ",".join([P, P, P, Q, Q, Q])
        k["nn_pointwise"]["lt_normalize_fwd_%s" % t] = ",".join([P, P, P, Q, Q, D, D])
        k["nn_pointwise"]["lt_normalize_bwd_%s" % t] = ",".join([P, P, P, P, Q, Q, D, D])
    # (Half: the nn layers' kernels that nn's modules reach with device half tensors)
    for t in ("Float", "Double", "Half"):
        for idx in ("i32", "i64"):
            k["nn_criterion"]["lt_nn_crit_fwd_%s_%s" % (t, idx)] = ",".join([P, T, T, T, I, Q, I, D])
            k["nn_criterion"]["lt_nn_crit_bwd_%s_%s" % (t, idx)] = ",".join([T, T, T, T, I, Q, I, D, D])
        k["gather_map"]["lt_map_fwd_%s" % t] = ",".join([P, P, P] + [Q] * 7)
        k["nn_criterion"]["lt_multimargin_fwd_%s" % t] = ",".join([P, P, P, P, Q, Q, I, D])
        k["nn_criterion"]["lt_multimargin_bwd_%s" % t] = ",".join([P, P, P, P, Q, Q, I, D, D])
        k["nn_criterion"]["lt_multilabel_fwd_%s" % t] = ",".join([P, P, P, P, Q, Q])
        k["nn_criterion"]["lt_multilabel_bwd_%s" % t] = ",".join([P, P, P, P, Q, Q, D])
        k["gather_map"]["lt_map_bwd_%s" % t] = ",".join([P, P, P, P] + [Q] * 7)
        k["pooling"]["lt_plane_scatter_%s" % t] = ",".join([P, P, P, Q, Q, Q])
        k["pooling"]["lt_plane_gather_%s" % t] = ",".join([P, P, P, Q, Q, Q])
        k["pooling"]["lt_dilmax_fwd_%s" % t] = ",".join([P, P, P] + [Q] * 13)
        k["pooling"]["lt_tmaxpool_fwd_%s" % t] = ",".join([P, P, P] + [Q] * 6)
        k["pooling"]["lt_tmaxpool_bwd_%s" % t] = ",".join([P, P, P] + [Q] * 6)
        k["gather_map"]["lt_lin_fwd_%s" % t] = ",".join([P] * 5 + [Q] * 7)
        k["gather_map"]["lt_lin_bwd_%s" % t] = ",".join([P] * 5 + [Q] * 7)
        k["lrn"]["lt_lrn_fwd_%s" % t] = ",".join([P, P, P, Q, Q, Q, I, D, D, D])
        k["lrn"]["lt_lrn_bwd_%s" % t] = ",".join([P, P, P, P, P, Q, Q, Q, I, D, D])
        for d in ("fwd", "bwd"):
            k["adaptive_pooling"]["lt_adaptive_avgpool_%s_%s" % (d, t)] = ",".join([P, P] + [Q] * 5)
            k["adaptive_pooling"]["lt_adaptive_maxpool_%s_%s" % (d, t)] = ",".join([P, P, P] + [Q] * 5)
        k["gather_map"]["lt_rows_acc_%s" % t] = ",".join([P] * 5 + [Q, Q, sc(t), Q])
        k["gather_map"]["lt_rows_renorm_%s" % t] = ",".join([P, P, Q, Q, sc(t), sc(t)])
    for t in ("Float", "Double"):
        for idx in ("i32", "i64"):
            k["histc"]["lt_histc_partial_%s_%s" % (t, idx)] = ",".join([T, Q, Q, sc(t), sc(t), Q, P])
            k["histc"]["lt_histc_total_%s_%s" % (t, idx)] = ",".join([T, P, Q, Q])
    return k


@pytest.mark.parametrize("module", [m for m in MODULES if not m.startswith("simt_")])
def test_kernel_names_and_signatures_match_the_documented_abi(simt, module):
    got = simt.get(module).kernels()
    exp = expected_kernels()[module]
    assert sorted(set(exp) - set(got)) == [], "documented but missing"
    assert sorted(set(got) - set(exp)) == [], "present but not documented"
    wrong = {n: (got[n], s) for n, s in exp.items() if got[n] != s}
    assert not wrong, wrong
    assert simt.warnings(module) == []


def kernel_families():
    """{family pattern: (signature, [types])} with the type names as <T> and the index kind as <idx>."""
    fam = {}
    for names in expected_kernels(resolve=False).values():
        for n, sig in names.items():
            parts = n.split("_")
            key = "_".join("<T>" if p in TYPES else "<idx>" if p in ("i32", "i64") else p for p in parts)
            types = "/".join(p for p in parts if p in TYPES)
            entry = fam.setdefault(key, (sig.replace("S144", "T"), []))
            assert entry[0] == sig.replace("S144", "T"), (key, entry[0], sig)
            if types not in entry[1]:
                entry[1].append(types)
    return fam


def test_readme_lists_every_kernel_family_with_its_signature():
    """native/cuda/README.md's family list is the complete, exact ABI: pattern and argument kinds."""
    lines = open(os.path.join(CUDA_DIR, "README.md")).read().splitlines()
    listed = {}
    for line in lines:
        f = line.split()
        if len(f) >= 2 and f[0].startswith("lt_") and f[1].startswith("("):
            listed[f[0]] = f[1].strip("()")
    fam = kernel_families()
    assert sorted(set(fam) - set(listed)) == [], "families missing from the README list"
    assert sorted(set(listed) - set(fam)) == [], "README lists families the sources do not define"
    wrong = {k: (listed[k], v[0]) for k, v in fam.items() if listed[k] != v[0]}
    assert not wrong, wrong


# ----------------------------------------------------------------------------- the emulator itself
def _shfl_expected(nthreads, width, block):
    out = np.zeros((nthreads, 7), np.int64)
    for g in range(nthreads):
        t = g % block
        warp0 = t - t % 32
        lanes = min(32, block - warp0)
        lane = t % 32
        base = lane - lane % width
        own = 7 * g + 1
        val = lambda s: 7 * (g - lane + s) + 1 if 0 <= s < lanes else own  # noqa: E731
        out[g, 0] = val(lane + 1) if lane + 1 - base < width else own
        out[g, 1] = val(lane + 5) if lane + 5 - base < width else own
        out[g, 2] = val(lane + 16) if lane + 16 - base < width else own
        out[g, 3] = val(lane ^ 1) if (lane ^ 1) < base + width else own
        out[g, 4] = val(lane ^ 12) if (lane ^ 12) < base + width else own
        out[g, 5] = val(lane - 3) if lane - 3 >= base else own
        out[g, 6] = val(base + (5 % width))
    return out


@pytest.mark.parametrize("block,width", [(64, 32), (96, 8), (40, 16), (32, 4)])
def test_simt_shuffles(simt, block, width):
    lib = simt.get("simt_selftest")
    grid = 2
    out = np.full((grid * block, 7), -1, np.int32)
    lib.launch("simt_test_shfl", grid, block, ptr(out), ctypes.c_int32(width))
    assert_exact(out, _shfl_expected(grid * block, width, block).astype(np.int32), "shuffles")


def test_simt_shuffles_64_bit(simt):
    lib = simt.get("simt_selftest")
    out = np.zeros(64, np.int64)
    outd = np.zeros(64, np.float64)
    lib.launch("simt_test_shfl64", 1, 64, ptr(out), ptr(outd))
    g = np.arange(64)
    src = np.where(g % 32 + 2 < 32, g + 2, g)
    assert_exact(out, (0x100000000 * (src + 3) + src).astype(np.int64), "64-bit shuffle")
    assert_exact(outd, 0.5 + (g ^ 3), "double shuffle")


@pytest.mark.parametrize("block", [1, 33, 64, 128])
def test_simt_barriers_and_shared_memory(simt, block):
    lib = simt.get("simt_selftest")
    grid, phases = 3, 4
    out = np.full(grid * block, -1, np.int32)
    lib.launch("simt_test_sync", grid, block, ptr(out), ctypes.c_int32(phases))
    t = np.arange(grid * block) % block
    b = np.arange(grid * block) // block
    nb = (t + 1) % block
    exp = sum(1000 * k + 10 * nb + b for k in range(phases))
    assert_exact(out, exp.astype(np.int32), "barriers")


def test_simt_exited_threads_leave_the_barrier(simt):
    lib = simt.get("simt_selftest")
    block, grid = 64, 2
    out = np.full(grid * block, -1, np.int32)
    lib.launch("simt_test_exit", grid, block, ptr(out))
    exp = np.full(grid * block, -1, np.int64)
    for g in range(grid * block):
        t = g % block
        if t % 3 == 0:
            continue
        p = (t + 1) % block
        while p % 3 == 0:
            p = (p + 1) % block
        exp[g] = sum(100 * k + p for k in range(3))
    assert_exact(out, exp.astype(np.int32), "early exit")


def test_simt_geometry_and_argument_checks(simt):
    lib = simt.get("simt_selftest")
    out = np.full((5 * 48, 4), -1, np.int32)
    lib.launch("simt_test_ids", 5, 48, ptr(out))
    g = np.arange(5 * 48)
    assert_exact(out, np.stack([g % 48, g // 48, np.full_like(g, 48), np.full_like(g, 5)], 1).astype(np.int32))
    with pytest.raises(AssertionError, match="takes"):
        lib.launch("simt_test_ids", 1, 32, ptr(out), ctypes.c_int32(1))
    with pytest.raises(AssertionError, match="no kernel"):
        lib.launch("simt_test_nothing", 1, 32)
    with pytest.raises(AssertionError, match="block size"):
        lib.launch("simt_test_ids", 1, 2048, ptr(out))


def test_half_conversions_match_numpy(simt, rng):
    """float/double -> half rounds to nearest even from the exact value; half -> float is exact."""
    lib = simt.get("copy")
    specials = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e9, np.inf, -np.inf,
                2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 3 * 2.0 ** -25, 2.0 ** -14,
                2.0 ** -14 - 2.0 ** -25, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -11 + 2.0 ** -40,
                -(1 + 2.0 ** -11 + 2.0 ** -40), 2049.0, 2051.0, 4097.0, 1e-8, 5.96e-8, 6.1e-5]
    f32 = np.concatenate([np.array(specials, np.float32),
                          rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    f32 = f32[~np.isnan(f32)]
    f64 = np.concatenate([np.array(specials, np.float64),
                          rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000)])
    # values a hair above/below a half tie, which a float intermediate would round to the tie
    h = rng.integers(0, 0x7bff, 5000).astype(np.uint16).view(np.float16).astype(np.float64)
    nxt = np.nextafter(h.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    tie = (h + nxt) / 2
    f64 = np.concatenate([f64, tie, tie + tie * 2.0 ** -40, tie - tie * 2.0 ** -40])
    for src, name in ((f32, "Float"), (f64, "Double")):
        out = np.full(src.shape, np.nan, np.float16)
        lib.launch("lt_copy_Half_%s_i32" % name, 8, 64, tinfo(out), tinfo(src), ctypes.c_int64(src.size))
        with np.errstate(over="ignore"):  # large values round to inf
            exp = src.astype(np.float16)
        assert_exact(out.view(np.uint16), exp.view(np.uint16), "%s -> Half bits" % name)
    direct = np.float64(1 + 2.0 ** -11 + 2.0 ** -40)
    out = np.zeros(1, np.float16)
    lib.launch("lt_copy_Half_Double_i64", 1, 32, tinfo(out), tinfo(np.array([direct])), ctypes.c_int64(1))
    assert out[0] == np.float16(1 + 2.0 ** -10), "double -> half must round once, not through float"
    allh = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    out = np.zeros(65536, np.float32)
    lib.launch("lt_copy_Float_Half_i32", 8, 64, tinfo(out), tinfo(allh), ctypes.c_int64(65536))
    exp = allh.astype(np.float32)
    nan = np.isnan(exp)
    assert np.isnan(out[nan]).all()
    assert_exact(out[~nan].view(np.uint32), exp[~nan].view(np.uint32), "Half -> Float bits")


# ----------------------------------------------------------------------------- copy and fill
def random_values(rng, t, shape, lo=None, hi=None):
    dt = NP[t]
    if t in INTS:
        info = np.iinfo(dt)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
        return rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64).astype(dt)
    lo = -100.0 if lo is None else lo
    hi = 100.0 if hi is None else hi
    return rng.uniform(lo, hi, size=shape).astype(dt)


def convert_ref(x, src, dst):
    """Expected dst values of the documented conversion rules."""
    d = NP[dst]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the expected result
        if src in FLOATS and dst in INTS:
            return np.trunc(x.astype(np.float64)).astype(np.int64).astype(d)
        if src in INTS and dst == "Half":
            return x.astype(np.float32).astype(np.float16)
        return x.astype(d)


def copy_source_values(rng, src, dst, shape):
    """Values of type src whose conversion to dst is defined (documented) behaviour."""
    if src in FLOATS:
        if dst in INTS:
            # beyond int32 for Long (a conversion through int would show), inside int32 for Int, and
            # wrapping for the narrow types
            lim = {"Long": 1e12, "Int": 2e9}.get(dst, 1e4)
            if src == "Half":
                lim = 2000.0
            elif dst == "Long" and src == "Double":
                lim = 1e15
            x = rng.uniform(-lim, lim, size=shape)
            flat = x.reshape(-1)
            flat[: min(6, flat.size)] = [2.5, -2.5, -0.7, 0.7, -1.5, 255.9][: min(6, flat.size)]
            return x.astype(NP[src])
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 6, size=shape)
        flat = x.reshape(-1)
        specials = [np.nan, np.inf, -np.inf, 65519.0, 1e6, -0.0]
        if src == "Half":
            specials = [np.nan, np.inf, -np.inf, 0.1]
        flat[: min(len(specials), flat.size)] = specials[: min(len(specials), flat.size)]
        with np.errstate(over="ignore"):
            return x.astype(NP[src])
    if dst == "Half" and src in ("Int", "Long"):
        return random_values(rng, src, shape, -70000, 70000)
    return random_values(rng, src, shape)


COPY_SHAPES = [(1,), (31,), (33, 7), (5, 1, 33), (257,), (3, 1000), (4, 3, 5, 7)]
IN_LAYOUTS = ["contig", "transposed", "narrowed", "expanded"]
OUT_LAYOUTS = ["contig", "transposed", "narrowed"]


@pytest.mark.parametrize("dst", TYPES)
@pytest.mark.parametrize("src", TYPES)
def test_copy_all_type_pairs(simt, rng, dst, src):
    lib = simt.get("copy")
    k = TYPES.index(dst) * 8 + TYPES.index(src)
    for j, idx in enumerate(("i32", "i64")):
        shape = COPY_SHAPES[(k + 3 * j) % len(COPY_SHAPES)]
        in_kind = IN_LAYOUTS[(k + j) % 4]
        out_kind = OUT_LAYOUTS[(k // 4 + j) % 3]
        vals = copy_source_values(rng, src, dst, shape)
        xin, vals, _ = make_input(in_kind, vals, NP[src])
        base, out, mask = make_output(out_kind, shape, NP[dst])
        n = int(np.prod(shape))
        g, b = geometry(n)
        lib.launch("lt_copy_%s_%s_%s" % (dst, src, idx), g, b, tinfo(out, collapsed=j == 0),
                   tinfo(xin, collapsed=j == 1), ctypes.c_int64(n))
        what = "copy %s <- %s %s %s->%s %s" % (dst, src, idx, in_kind, out_kind, shape)
        assert_exact(out, convert_ref(vals, src, dst), what)
        assert_untouched(base, mask, what)


@pytest.mark.parametrize("t", TYPES)
def test_fill(simt, rng, t):
    lib = simt.get("fill")
    values = {"Long": [2 ** 53 + 1, -7], "Float": [0.1, -3.25], "Double": [0.1, 1e300],
              "Half": [0.1, 70000.0]}.get(t)
    if values is None:
        info = np.iinfo(NP[t])
        values = [int(info.max), int(info.min) + 1]
    for j, (idx, kind, shape) in enumerate([("i32", "narrowed", (33, 7)), ("i64", "transposed", (5, 1, 257))]):
        base, out, mask = make_output(kind, shape, NP[t])
        n = int(np.prod(shape))
        v = values[j]
        lib.launch("lt_fill_%s_%s" % (t, idx), *geometry(n, 32), tinfo(out, collapsed=j == 0),
                   ctypes.c_int64(n), ACC_C[t](v))
        with np.errstate(over="ignore"):  # 70000 -> Half is inf
            exp = np.full(shape, np.float32(v) if t == "Half" else v).astype(NP[t])
        assert_exact(out, exp, "fill %s %s" % (t, idx))
        assert_untouched(base, mask, "fill")


# ----------------------------------------------------------------------------- pointwise
FLOAT_OPS = ["adds", "muls", "divs", "pows", "clamp", "sqrt", "rsqrt", "exp", "log", "abs", "neg",
             "sign", "tanh", "sigmoid", "cadd", "cmul", "cdiv", "addcmul", "addcdiv"]
INT_OPS = ["adds", "muls", "clamp", "cadd", "cmul"]
LIBM_OPS = {"pows", "exp", "log", "tanh", "sigmoid", "rsqrt"}
NARGS = {"cadd": 2, "cmul": 2, "cdiv": 2, "addcmul": 3, "addcdiv": 3}
PW_SHAPES = [(33, 31), (1,), (257,), (7, 5, 3), (2, 1000)]


def pw_inputs(rng, op, t, shape):
    """(x, y, z, scalars) of the operation's domain, as values of type t."""
    dt = NP[t]
    if t in INTS:
        info = np.iinfo(dt)
        small = {"Long": 2 ** 40}.get(t, None)
        lo, hi = (-small, small) if small else (info.min, info.max)
        x = rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
        y = rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
        if op == "cmul" and t == "Long":
            x = rng.integers(-2 ** 31, 2 ** 31, size=shape).astype(dt)
            y = rng.integers(-2 ** 31, 2 ** 31, size=shape).astype(dt)
        a = int(rng.integers(-300, 300))
        sc = {"adds": [a], "muls": [a], "cadd": [a], "cmul": [],
              "clamp": sorted(int(v) for v in rng.integers(info.min, info.max, 2, endpoint=True))}[op]
        return x, y, None, sc
    pos = op in ("sqrt", "rsqrt", "log", "pows")
    x = rng.uniform(0.05, 20.0, size=shape) if pos else rng.standard_normal(shape) * 4
    if op == "exp":
        x = np.clip(x, -20, 10)
    y = rng.standard_normal(shape) * 3
    z = rng.standard_normal(shape) * 3
    if op in ("cdiv", "addcdiv"):
        y, z = y, np.where(np.abs(z) < 0.1, 0.5, z)
        if op == "cdiv":
            y = np.where(np.abs(y) < 0.1, 0.5, y)
    a = float(rng.uniform(0.3, 3.0)) * (1 if op == "pows" else float(rng.choice([-1, 1])))
    sc = {"clamp": sorted(float(v) for v in rng.uniform(-4, 4, 2))}.get(op, [a])
    if op in ("sqrt", "rsqrt", "exp", "log", "abs", "neg", "sign", "tanh", "sigmoid", "cmul", "cdiv"):
        sc = []
    if op == "sign":
        x.reshape(-1)[:3] = [0.0, -0.0, 2.0][: x.size]
    return x.astype(dt), y.astype(dt), z.astype(dt), sc


def pw_ref(op, t, x, y, z, sc):
    A = ACC[t]
    xa = x.astype(A)
    ya = None if y is None else y.astype(A)
    za = None if z is None else z.astype(A)
    s = [A(v) for v in sc]
    with np.errstate(all="ignore"):
        r = {
            "adds": lambda: xa + s[0], "muls": lambda: xa * s[0], "divs": lambda: xa / s[0],
            "pows": lambda: np.power(xa, s[0]),
            "clamp": lambda: np.where(xa < s[0], s[0], np.where(xa > s[1], s[1], xa)),
            "sqrt": lambda: np.sqrt(xa), "rsqrt": lambda: A(1) / np.sqrt(xa), "exp": lambda: np.exp(xa),
            "log": lambda: np.log(xa), "abs": lambda: np.abs(xa), "neg": lambda: -xa,
            "sign": lambda: np.where(xa > 0, A(1), np.where(xa < 0, A(-1), A(0))),
            "tanh": lambda: np.tanh(xa), "sigmoid": lambda: A(1) / (A(1) + np.exp(-xa)),
            "cadd": lambda: xa + s[0] * ya, "cmul": lambda: xa * ya, "cdiv": lambda: xa / ya,
            "addcmul": lambda: xa + s[0] * ya * za, "addcdiv": lambda: xa + s[0] * ya / za,
        }[op]()
        return np.asarray(r, dtype=A).astype(NP[t])


def _pw_run(lib, op, t, idx, shape, layouts, inplace, rng, collapsed, nan=False):
    dt = NP[t]
    x, y, z, sc = pw_inputs(rng, op, t, shape)
    if nan and t in FLOATS:
        x.reshape(-1)[-1] = np.nan
    nin = NARGS.get(op, 1)
    inputs = []
    vals = []
    for k, v in enumerate([x, y, z][:nin]):
        kind = layouts[k] if not (inplace and k == 0) else layouts[-1]
        if inplace and k == 0:
            kind = "contig" if kind == "expanded" else kind
        view, v, _ = make_input(kind, v, dt)
        inputs.append(view)
        vals.append(v)
    exp = pw_ref(op, t, vals[0], vals[1] if nin > 1 else None, vals[2] if nin > 2 else None, sc)
    if inplace:
        out, base, mask = inputs[0], None, None
    else:
        base, out, mask = make_output(layouts[-1], shape, dt)
    n = int(np.prod(shape))
    args = [tinfo(out, collapsed)] + [tinfo(v, not collapsed if k % 2 else collapsed) for k, v in enumerate(inputs)]
    args.append(ctypes.c_int64(n))
    args += [ACC_C[t](v) for v in sc]
    lib.launch("lt_%s_%s_%s" % (op, t, idx), *geometry(n), *args)
    what = "%s %s %s %s %s%s" % (op, t, idx, shape, layouts, " in place" if inplace else "")
    if op in LIBM_OPS:
        assert_ulp(out, exp, 1 if t == "Half" else 4, what)
    else:
        assert_exact(out, exp, what)
    if base is not None:
        assert_untouched(base, mask, what)


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_pointwise_float(simt, rng, op, t):
    lib = simt.get("pointwise")
    k = FLOAT_OPS.index(op) + 7 * FLOATS.index(t)
    L = IN_LAYOUTS
    runs = [("i32", (L[k % 4], L[(k + 1) % 4], L[(k + 2) % 4], OUT_LAYOUTS[k % 3]), False, True),
            ("i64", (L[(k + 2) % 4], L[(k + 3) % 4], L[k % 4], OUT_LAYOUTS[(k + 1) % 3]), False, False),
            ("i32", ("narrowed", "expanded", "transposed", "narrowed"), True, True),
            ("i64", ("transposed", "contig", "expanded", "transposed"), True, False)]
    for j, (idx, layouts, inplace, collapsed) in enumerate(runs):
        shape = PW_SHAPES[(k + j) % len(PW_SHAPES)]
        _pw_run(lib, op, t, idx, shape, layouts, inplace, rng, collapsed, nan=(j == 1))


@pytest.mark.parametrize("t", INTS)
@pytest.mark.parametrize("op", INT_OPS)
def test_pointwise_int(simt, rng, op, t):
    lib = simt.get("pointwise")
    k = INT_OPS.index(op) + 3 * INTS.index(t)
    runs = [("i32", ("transposed", "expanded", "narrowed"), False, True),
            ("i64", ("narrowed", "contig", "transposed"), False, False),
            ("i64", ("contig", "transposed", "contig"), True, True)]
    for j, (idx, layouts, inplace, collapsed) in enumerate(runs):
        shape = PW_SHAPES[(k + j) % len(PW_SHAPES)]
        _pw_run(lib, op, t, idx, shape, layouts, inplace, rng, collapsed)


def test_pointwise_byte_arithmetic_wraps(simt):
    lib = simt.get("pointwise")
    x = np.array([200, 0, 255, 17], np.uint8)
    out = np.zeros(4, np.uint8)
    lib.launch("lt_adds_Byte_i32", 1, 32, tinfo(out), tinfo(x), ctypes.c_int64(4), ctypes.c_int64(100))
    assert out.tolist() == [44, 100, 99, 117]
    lib.launch("lt_muls_Char_i64", 1, 32, tinfo(out.view(np.int8)), tinfo(x.view(np.int8)),
               ctypes.c_int64(4), ctypes.c_int64(-3))
    assert out.view(np.int8).tolist() == [-88, 0, 3, -51]  # (-56) * (-3) = 168 wraps to -88


# ----------------------------------------------------------------------------- reductions
def sum_bound(acc_dt, n, threads, abs_terms):
    """Rounding bound of a sum split over `threads` sequential partial sums and a tree: every term
    passes through at most (n/threads + log2(threads) + 2) additions (u = EPS, bound with 2u)."""
    per = -(-n // max(1, threads))
    return EPS[acc_dt] * 2 * (per + math.log2(max(threads, 1)) + 2) * abs_terms


def prod_bound(acc_dt, n, abs_prod):
    """Rounding bound of a product in any order: each of the n - 1 multiplications scales the result
    by (1 + d), |d| <= u, whatever the tree shape."""
    return EPS[acc_dt] * 2 * (n + 1) * abs_prod


RED_SIZES = [1, 31, 33, 257, 1000, 4099]
RED_GEOMS = [(1, 32), (3, 64), (7, 96), (40, 64), (2, 128), (5, 32)]


def red_values(rng, op, t, n):
    if op == "prod":
        if t in INTS:
            v = np.ones(n, np.int64)
            k = rng.choice(n, size=min(n, 40), replace=False)
            v[k] = rng.choice([2, -1, 3] if t != "Byte" else [2, 3], size=k.size)
            v[rng.choice(n, size=min(n, 15), replace=False)] = 1
            return v.astype(NP[t])
        return np.exp(rng.uniform(-0.05, 0.05, n)).astype(NP[t])
    if t in INTS:
        info = np.iinfo(NP[t])
        lo, hi = (max(info.min, -10 ** 9), min(info.max, 10 ** 9))
        return rng.integers(lo, hi, n, endpoint=True).astype(NP[t])
    v = rng.standard_normal(n) * 5
    if op == "norm":
        v[rng.random(n) < 0.2] = 0
    return v.astype(NP[t])


def red_ref_ok(op, t, got, vals, p, threads, what):
    v = vals.astype(np.float64) if t in FLOATS else vals.astype(np.int64)
    A = ACC[t]
    n = v.size
    if t in INTS:
        ref = {"sum": lambda: int(np.sum(v.astype(object))), "prod": lambda: int(np.prod(v.astype(object))),
               "max": lambda: int(v.max()), "min": lambda: int(v.min())}[op]()
        assert int(got) == ref, (what, got, ref)
        return
    if op in ("max", "min"):
        assert_exact(np.array(got, A), np.array(getattr(v, op)(), A), what)
        return
    if op == "sum":
        ref, b = v.sum(), sum_bound(A, n, threads, np.abs(v).sum())
    elif op == "sumsq":
        ref, b = (v * v).sum(), sum_bound(A, n, threads, (v * v).sum())
    elif op == "prod":
        ref = np.prod(v)
        b = prod_bound(A, n, abs(ref))
    else:  # norm
        if p == 0:
            ref, b = float(np.count_nonzero(v)), 0.0
        elif p == np.inf:
            ref, b = np.abs(v).max(), 0.0
        else:
            s = (np.abs(v) ** p).sum()
            ref = s ** (1.0 / p)
            rel = sum_bound(A, n, threads, 1.0) + 8 * EPS[A]
            b = abs(ref) * (rel / p + 8 * EPS[A]) + abs(ref) * EPS[A] * 8
    assert_bound(np.array(got, A), ref, b, what)


def _reduce_all(lib, op, t, vals_view, n, geom, finish_block, idx, p=None, collapsed=True):
    A = ACC[t]
    grid, block = geom
    partial = np.full(grid + 1, np.nan if A != np.int64 else poison_value(np.int64), A)
    result = np.full(2, np.nan if A != np.int64 else poison_value(np.int64), A)
    extra = [] if p is None else [ACC_C[t](p)]
    lib.launch("lt_reduce_%s_%s_%s" % (op, t, idx), grid, block, tinfo(vals_view, collapsed),
               ctypes.c_int64(n), *extra, ptr(partial))
    assert_exact(partial[grid:], np.full(1, poison_value(A), A), "stage 1 wrote beyond gridDim.x")
    lib.launch("lt_reduce_finish_%s_%s" % (op, t), 1, finish_block, ptr(partial), ctypes.c_int64(grid),
               *extra, ptr(result))
    assert_exact(result[1:], np.full(1, poison_value(A), A), "finish wrote beyond result[0]")
    return result[0]


ALL_RED = [(op, t) for op in ("sum", "prod", "max", "min") for t in TYPES] + \
          [(op, t) for op in ("sumsq", "norm") for t in FLOATS]


@pytest.mark.parametrize("op,t", ALL_RED)
def test_reduce_all(simt, rng, op, t):
    lib = simt.get("reduce")
    ps = [0.0, 1.0, 2.0, 3.0, 0.5, np.inf]
    for j, n in enumerate(RED_SIZES):
        geom = RED_GEOMS[(j + TYPES.index(t)) % len(RED_GEOMS)]
        kind = IN_LAYOUTS[(j + len(op)) % 3]  # expanded is covered by the dim reductions
        idx = ("i32", "i64")[j % 2]
        vals = red_values(rng, op, t, n)
        shape = (n,) if j % 3 else ((n // 3, 3) if n % 3 == 0 else (1, n))
        view, vals, _ = make_input(kind, vals.reshape(shape), NP[t])
        p = ps[j % len(ps)] if op == "norm" else None
        got = _reduce_all(lib, op, t, view, n, geom, 32 if j % 2 else 64, idx, p, collapsed=j % 4 != 1)
        red_ref_ok(op, t, got, vals.reshape(-1), p, geom[0] * geom[1],
                   "%s %s n=%d %s geom=%s p=%s" % (op, t, n, kind, geom, p))


@pytest.mark.parametrize("t", FLOATS)
def test_reduce_all_nan_and_inf(simt, rng, t):
    lib = simt.get("reduce")
    v = (rng.standard_normal(257) * 3).astype(NP[t])
    v[100] = np.inf
    v[7] = -np.inf
    for op, exp in (("max", np.inf), ("min", -np.inf)):
        got = _reduce_all(lib, op, t, v, 257, (3, 64), 32, "i32")
        assert got == exp, (op, got)
    v[200] = np.nan
    for op in ("max", "min", "sum", "prod", "sumsq"):
        got = _reduce_all(lib, op, t, v, 257, (3, 64), 32, "i64")
        assert np.isnan(got), (op, got)


def test_reduce_all_empty_gives_identity(simt):
    lib = simt.get("reduce")
    v = np.zeros(1, np.float32)
    assert _reduce_all(lib, "sum", "Float", v, 0, (2, 32), 32, "i32") == 0
    assert _reduce_all(lib, "prod", "Float", v, 0, (2, 32), 32, "i32") == 1
    assert _reduce_all(lib, "max", "Float", v, 0, (2, 32), 32, "i32") == -np.inf
    assert _reduce_all(lib, "min", "Long", v.view(np.int32), 0, (2, 32), 32, "i32") == 2 ** 63 - 1


DIM_CASES = [((5, 33, 7), 1), ((4, 257), 1), ((31, 3), 0), ((2, 3, 1), 2), ((1000,), 0), ((3, 65, 2), 2)]
DIM_RED = [(op, t, kind) for op in ("sum", "prod", "max", "min") for t in TYPES for kind in ("dim", "dimblk")] + \
          [("mean", t, kind) for t in FLOATS for kind in ("dim", "dimblk")]


def dim_values(rng, op, t, shape):
    n = int(np.prod(shape))
    if op in ("max", "min"):
        if t in INTS:
            return rng.integers(0, 4, n).reshape(shape).astype(NP[t])  # many ties
        v = np.round(rng.standard_normal(n) * 4, 1)
        return v.reshape(shape).astype(NP[t])
    return red_values(rng, op if op != "mean" else "sum", t, n).reshape(shape)


@pytest.mark.parametrize("op,t,kind", DIM_RED)
def test_reduce_along_dim(simt, rng, op, t, kind):
    lib = simt.get("reduce_dim")
    dt = NP[t]
    A = ACC[t]
    k = TYPES.index(t) + len(op)
    for j, (shape, d) in enumerate(DIM_CASES):
        in_kind = IN_LAYOUTS[(k + j) % 4]
        if in_kind == "expanded" and shape[d] == max(shape):
            in_kind = "narrowed"  # the reduced dimension itself expanded: covered by n=1 cases
        out_kind = OUT_LAYOUTS[(k + 2 * j) % 3]
        idx = ("i32", "i64")[(j + k) % 2]
        vals = dim_values(rng, op, t, shape)
        if op in ("max", "min") and t in FLOATS and j % 2 == 0:
            flat = vals.reshape(-1)
            flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = np.nan
        xin, vals, _ = make_input(in_kind, vals, dt)
        oshape = tuple(s for i, s in enumerate(shape) if i != d) or (1,)
        nslices = int(np.prod(oshape))
        n = shape[d]
        item = xin.itemsize
        xs_sizes = [s for i, s in enumerate(xin.shape) if i != d] or [1]
        xs_strides = [st // item for i, st in enumerate(xin.strides) if i != d] or [0]
        collapsed = j % 2 == 0
        xs = LtTensor()
        xs.data = xin.__array_interface__["data"][0]
        if collapsed:
            xs_sizes, xs_strides = collapse(xs_sizes, xs_strides)
        for i, (s, st) in enumerate(zip(xs_sizes, xs_strides)):
            xs.sizes[i], xs.strides[i] = s, st
        xs.dims = len(xs_sizes)
        x_stride = xin.strides[d] // item
        base, out, mask = make_output(out_kind, oshape, dt)
        geom = (min(3, nslices), (32, 64, 96)[j % 3]) if kind == "dimblk" else geometry(nslices, 32)
        what = "%s %s %s %s %s dim %d %s->%s" % (kind, op, t, idx, shape, d, in_kind, out_kind)
        name = "lt_reduce_%s_%s_%s_%s" % (kind, op, t, idx)
        ref_vals = vals.astype(np.float64 if t in FLOATS else np.int64)
        if op in ("max", "min"):
            ibase, ind, imask = make_output(OUT_LAYOUTS[(k + j + 1) % 3], oshape, np.int64)
            lib.launch(name, *geom, tinfo(out, collapsed), tinfo(ind, not collapsed), xs,
                       ctypes.c_int64(nslices), ctypes.c_int64(n), ctypes.c_int64(x_stride))
            f = np.argmax if op == "max" else np.argmin
            eidx = f(ref_vals, axis=d).reshape(oshape)
            evals = np.take_along_axis(vals, np.expand_dims(f(ref_vals, axis=d), d), d).reshape(oshape)
            assert_exact(ind, eidx.astype(np.int64), what + " indices")
            assert_exact(out, evals, what + " values")
            assert_untouched(ibase, imask, what + " indices")
        else:
            lib.launch(name, *geom, tinfo(out, collapsed), xs, ctypes.c_int64(nslices),
                       ctypes.c_int64(n), ctypes.c_int64(x_stride))
            if t in INTS:
                r = (np.sum if op == "sum" else np.prod)(vals.astype(np.int64), axis=d).reshape(oshape)
                assert_exact(out, r.astype(dt), what)
            else:
                threads = geom[1] if kind == "dimblk" else 1
                if op == "prod":
                    ref = np.prod(ref_vals, axis=d)
                    b = prod_bound(A, n, np.abs(ref))
                else:
                    ref = np.sum(ref_vals, axis=d)
                    b = sum_bound(A, n, threads, np.sum(np.abs(ref_vals), axis=d))
                    if op == "mean":
                        ref, b = ref / n, b / n + np.abs(ref / n) * EPS[A]
                assert_bound(out, ref.reshape(oshape), np.asarray(b).reshape(oshape), what)
        assert_untouched(base, mask, what)


# ----------------------------------------------------------------------------- LogSoftMax
LSM_TOL = {"Double": lambda r: 1e-12 * (1 + np.abs(r)),
           "Float": lambda r: 1e-5 + 1e-6 * np.abs(r),
           "Half": lambda r: 2.0 ** -11 * np.abs(r) + 2e-5 * (1 + np.abs(r))}


def lsm_ref(x, axis):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    return (x - m) - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def lsm_input(rng, t, shape, axis):
    x = rng.standard_normal(shape) * (3 if t == "Half" else 5)
    if t != "Half" and shape[0] > 1:
        x[1] += 1000.0  # large values: fine only with the max subtraction
    return x.astype(NP[t])


@pytest.mark.parametrize("t", FLOATS)
def test_logsoftmax_rows(simt, rng, t):
    lib = simt.get("logsoftmax")
    dt = NP[t]
    A = ACC[t]
    for j, (rows, classes) in enumerate([(1, 1), (3, 31), (5, 33), (2, 1000), (7, 257), (4, 64)]):
        grid, block = (min(rows, 3), (32, 64, 96)[j % 3])
        x = lsm_input(rng, t, (rows, classes), 1)
        inplace = j % 3 == 2
        out = x.copy() if inplace else np.full_like(x, np.nan)
        src = out if inplace else x
        lib.launch("lt_logsoftmax_fwd_%s" % t, grid, block, ptr(out), ptr(src), ctypes.c_int64(rows),
                   ctypes.c_int64(classes))
        ref = lsm_ref(x, 1)
        what = "logsoftmax fwd %s %dx%d" % (t, rows, classes)
        assert_bound(out, ref, LSM_TOL[t](ref), what)
        assert np.all(np.abs(np.exp(out.astype(np.float64)).sum(1) - 1) < 1e-2 if t == "Half" else 1e-5)
        go = (rng.standard_normal((rows, classes))).astype(dt)
        gi = go.copy() if inplace else np.full_like(go, np.nan)
        lib.launch("lt_logsoftmax_bwd_%s" % t, grid, block, ptr(gi), ptr(gi if inplace else go), ptr(out),
                   ctypes.c_int64(rows), ctypes.c_int64(classes))
        g64, o64 = go.astype(np.float64), out.astype(np.float64)
        s = g64.sum(1, keepdims=True)
        ref = g64 - np.exp(o64) * s
        b = EPS[A] * (classes / block + 12) * (np.abs(g64) + np.exp(o64) * np.abs(g64).sum(1, keepdims=True)) \
            + 4 * EPS[A] * np.abs(ref)
        assert_bound(gi, ref, b, what.replace("fwd", "bwd"))


@pytest.mark.parametrize("t", FLOATS)
def test_logsoftmax_spatial(simt, rng, t):
    lib = simt.get("logsoftmax")
    dt = NP[t]
    A = ACC[t]
    for j, (N, C, inner) in enumerate([(2, 5, 33), (3, 31, 1), (1, 1000, 3), (4, 1, 7), (2, 64, 65)]):
        x = lsm_input(rng, t, (N, C, inner), 1)
        inplace = j == 4
        out = x.copy() if inplace else np.full_like(x, np.nan)
        src = out if inplace else x
        lib.launch("lt_logsoftmax_spatial_fwd_%s" % t, *geometry(N * inner), ptr(out), ptr(src),
                   ctypes.c_int64(N), ctypes.c_int64(C), ctypes.c_int64(inner))
        ref = lsm_ref(x, 1)
        what = "spatial logsoftmax fwd %s %s" % (t, (N, C, inner))
        assert_bound(out, ref, LSM_TOL[t](ref), what)
        go = rng.standard_normal((N, C, inner)).astype(dt)
        gi = go.copy() if inplace else np.full_like(go, np.nan)
        lib.launch("lt_logsoftmax_spatial_bwd_%s" % t, *geometry(N * inner, 32, 3), ptr(gi),
                   ptr(gi if inplace else go), ptr(out), ctypes.c_int64(N), ctypes.c_int64(C),
                   ctypes.c_int64(inner))
        g64, o64 = go.astype(np.float64), out.astype(np.float64)
        ref = g64 - np.exp(o64) * g64.sum(1, keepdims=True)
        b = EPS[A] * (C + 4) * (np.abs(g64) + np.exp(o64) * np.abs(g64).sum(1, keepdims=True)) \
            + 4 * EPS[A] * np.abs(ref)
        assert_bound(gi, ref, b, what.replace("fwd", "bwd"))


def test_logsoftmax_nan_row_stays_in_its_row(simt):
    lib = simt.get("logsoftmax")
    x = np.zeros((3, 40), np.float32)
    x[1, 7] = np.nan
    out = np.zeros_like(x)
    lib.launch("lt_logsoftmax_fwd_Float", 2, 32, ptr(out), ptr(x), ctypes.c_int64(3), ctypes.c_int64(40))
    assert np.isnan(out[1]).all()
    assert np.allclose(out[[0, 2]], -np.log(40.0), atol=1e-6)


# ----------------------------------------------------------------------------- ClassNLL
def cnll_ref(x, target, w, size_average, ignore_index):
    x = x.astype(np.float64)
    classes = x.shape[1]
    loss = tw = 0.0
    terms = 0.0
    bad = -1
    for i, tg in enumerate(target):
        tg = int(tg)
        if tg == ignore_index:
            continue
        if tg < 1 or tg > classes:
            bad = i if bad < 0 else bad
            continue
        wi = 1.0 if w is None else float(w[tg - 1])
        loss -= wi * x[i, tg - 1]
        terms += abs(wi * x[i, tg - 1])
        tw += wi
    if size_average and tw != 0:
        loss /= tw
        terms /= abs(tw)
    return loss, tw, bad, terms


CNLL_CASES = [  # batch, classes, weights, size_average, ignore_index, special
    (1, 5, False, 1, -100, None), (33, 10, True, 1, -100, None), (257, 1000, False, 0, -100, None),
    (64, 3, True, 0, 2, None), (100, 7, False, 1, 3, "bad"), (9, 4, True, 1, 1, "all_ignored"),
    (40, 6, True, 1, -100, "zero_weights")]


@pytest.mark.parametrize("t", FLOATS)
def test_classnll(simt, rng, t):
    lib = simt.get("classnll")
    dt = NP[t]
    A = ACC[t]
    for j, (batch, classes, weighted, size_average, ignore, special) in enumerate(CNLL_CASES):
        x = np.log(rng.dirichlet(np.ones(classes), size=batch)).astype(dt)
        target = rng.integers(1, classes, batch, endpoint=True).astype(np.int64)
        w = rng.uniform(0.1, 2.0, classes).astype(dt) if weighted else None
        if special == "bad":
            target[[5, 37, 69, 41]] = [0, classes + 1, -5, 0]  # 5 and 69: one thread with block 64
        elif special == "all_ignored":
            target[:] = ignore
        elif special == "zero_weights":
            w[:] = 0
        out = np.full(2, np.nan, A)
        tw = np.full(2, np.nan, A)
        bad = np.full(2, 12345, np.int64)
        block = (32, 64, 96)[j % 3]
        lib.launch("lt_classnll_fwd_%s" % t, 1, block, ptr(out), ptr(tw), ptr(bad), ptr(x), ptr(target),
                   ptr(w), ctypes.c_int64(batch), ctypes.c_int64(classes), ctypes.c_int32(size_average),
                   ctypes.c_int64(ignore))
        loss, rtw, rbad, terms = cnll_ref(x, target, w, size_average, ignore)
        what = "classnll %s case %d" % (t, j)
        assert bad[0] == rbad and bad[1] == 12345, (what, bad, rbad)
        assert np.isnan(out[1]) and np.isnan(tw[1])
        if w is None:
            assert tw[0] == rtw, (what, tw[0], rtw)
        else:
            assert_bound(tw[:1], [rtw], EPS[A] * (batch + 4) * np.abs(w.astype(np.float64)).max() * batch, what)
        assert_bound(out[:1], [loss], EPS[A] * (batch + 4) * (terms + 1e-30) * (2 if size_average else 1), what)
        if special == "all_ignored":
            assert out[0] == 0 and not np.signbit(out[0]) and tw[0] == 0
        gi = np.full((batch, classes), np.nan, dt)
        lib.launch("lt_classnll_bwd_%s" % t, *geometry(batch * classes), ptr(gi), ptr(target), ptr(w),
                   ctypes.c_double(tw[0]), ctypes.c_int64(batch), ctypes.c_int64(classes), ctypes.c_int32(size_average),
                   ctypes.c_int64(ignore))
        exp = np.zeros((batch, classes), A)
        twa = A(tw[0])
        if twa > 0:
            norm = A(1) / twa if size_average else A(1)
            for i, tg in enumerate(target):
                if tg != ignore and 1 <= tg <= classes:
                    wi = A(1) if w is None else A(w[tg - 1])
                    exp[i, tg - 1] = -wi * norm
        assert_exact(gi, exp.astype(dt), what + " gradInput")


@pytest.mark.parametrize("t", FLOATS)
def test_prelu_and_glu(simt, rng, t):
    """nn_pointwise.cu's PReLU and GatedLinearUnit kernels against NumPy: the forward and gradInput of PReLU one
    product in the compute type rounded once (exact), the weight's gradient a block-per-channel sum (several block
    sizes, fewer blocks than channels) within the sum's bound of the double one; GLU's a sigmoid(b) and its
    gradient within a few roundings of the double formulas."""
    lib = simt.get("nn_pointwise")
    dt, A = NP[t], ACC[t]
    outer, planes, inner = 3, 5, 7
    n = outer * planes * inner
    x = rng.standard_normal((outer, planes, inner)).astype(dt)
    go = rng.standard_normal((outer, planes, inner)).astype(dt)
    w = rng.uniform(0.05, 0.5, planes).astype(dt)
    wa = w.astype(A)[None, :, None]
    q = ctypes.c_int64
    out = np.full(n, np.nan, dt)
    lib.launch("lt_prelu_fwd_%s" % t, *geometry(n, 32), ptr(out), ptr(x), ptr(w), q(n), q(planes), q(inner))
    assert_exact(out.reshape(x.shape), np.where(x > 0, x, (wa * x.astype(A)).astype(dt)), "prelu forward")
    gi = np.full(n, np.nan, dt)
    lib.launch("lt_prelu_bwd_%s" % t, *geometry(n, 32), ptr(gi), ptr(go), ptr(x), ptr(w), q(n), q(planes), q(inner))
    assert_exact(gi.reshape(x.shape), np.where(x > 0, go, (wa * go.astype(A)).astype(dt)), "prelu gradInput")
    terms = np.where(x <= 0, x.astype(np.float64) * go.astype(np.float64), 0)
    for block in (32, 64, 96):
        gw = np.full(2 * planes, 7, dt)   # stride 2: the odd elements untouched
        gw[::2] = rng.uniform(-1, 1, planes).astype(dt)
        ref = gw[::2].astype(np.float64) + 0.5 * terms.sum(axis=(0, 2))
        lib.launch("lt_prelu_acc_%s" % t, 2, block, ptr(gw), q(2), ptr(go), ptr(x), q(outer), q(planes), q(inner),
                   ACC_C[t](0.5))
        bound = EPS[A] * (outer * inner + 4) * (np.abs(terms).sum(axis=(0, 2)) + np.abs(ref))
        assert_bound(gw[::2], ref, bound, "prelu gradWeight, block %d" % block)
        assert (gw[1::2] == 7).all()
    h = 4
    y = rng.standard_normal((outer, 2 * h, inner)).astype(dt)
    a, b = y[:, :h].astype(np.float64), y[:, h:].astype(np.float64)
    s = 1 / (1 + np.exp(-b))
    out = np.full(outer * h * inner, np.nan, dt)
    lib.launch("lt_glu_fwd_%s" % t, *geometry(out.size, 32), ptr(out), ptr(y), q(outer), q(h), q(inner))
    assert_bound(out.reshape(a.shape), a * s, 8 * EPS[A] * np.abs(a * s), "glu forward")
    g = rng.standard_normal(a.shape).astype(dt)
    gi = np.full(y.shape, np.nan, dt)
    lib.launch("lt_glu_bwd_%s" % t, *geometry(g.size, 32), ptr(gi), ptr(g), ptr(y), q(outer), q(h), q(inner))
    gd = g.astype(np.float64)
    assert_bound(gi[:, :h], gd * s, 8 * EPS[A] * np.abs(gd * s), "glu gradInput of a")
    gb = gd * (1 - s) * s * a
    # 1 - s cancels where s is near 1: its absolute error (s's rounding, then the subtraction's) is up to an eps,
    # times |g s a| (CI once: 0.0837069 against 0.0837068, 1.2e-6 relative, with s near 1)
    assert_bound(gi[:, h:], gb, 12 * EPS[A] * np.abs(gb) + 2 * EPS[A] * np.abs(gd * s * a), "glu gradInput of b")


# ----------------------------------------------------------------------------- schedule jitter
def test_block_reductions_under_schedule_jitter(simt, rng):
    """With one warp held back after every __syncthreads (in turn), the kernels that reuse the block
    reduction's shared scratch several times still give the right answers: the barriers that separate
    a read of shared memory from its next write are all there."""
    libs = {m: simt.get(m) for m in ("logsoftmax", "classnll", "reduce", "reduce_dim")}
    for lib in libs.values():
        lib.dll.simt_set_jitter(3000)
    try:
        x = (rng.standard_normal((2, 70)) * 3).astype(np.float32)
        out = np.full_like(x, np.nan)
        libs["logsoftmax"].launch("lt_logsoftmax_fwd_Float", 1, 96, ptr(out), ptr(x), ctypes.c_int64(2),
                                  ctypes.c_int64(70))
        ref = lsm_ref(x, 1)
        assert_bound(out, ref, LSM_TOL["Float"](ref), "logsoftmax under jitter")

        batch, classes = 100, 5
        xin = np.log(rng.dirichlet(np.ones(classes), size=batch)).astype(np.float32)
        target = rng.integers(1, classes, batch, endpoint=True).astype(np.int64)
        target[[3, 67]] = 0
        w = rng.uniform(0.5, 2, classes).astype(np.float32)
        o, tw, bad = np.full(1, np.nan, np.float32), np.full(1, np.nan, np.float32), np.zeros(1, np.int64)
        libs["classnll"].launch("lt_classnll_fwd_Float", 1, 64, ptr(o), ptr(tw), ptr(bad), ptr(xin), ptr(target),
                                ptr(w), ctypes.c_int64(batch), ctypes.c_int64(classes), ctypes.c_int32(1),
                                ctypes.c_int64(-100))
        loss, rtw, rbad, terms = cnll_ref(xin, target, w, 1, -100)
        assert bad[0] == rbad == 3
        assert_bound(tw, [rtw], 1e-4 * rtw, "classnll total weight under jitter")
        assert_bound(o, [loss], 1e-5 * (terms + 1), "classnll loss under jitter")

        v = rng.standard_normal(300).astype(np.float64)
        got = _reduce_all(libs["reduce"], "sum", "Double", v, 300, (2, 96), 64, "i32")
        assert_bound(np.array(got), v.sum(), 1e-12 * np.abs(v).sum(), "sum under jitter")

        xd = np.round(rng.standard_normal((4, 70)) * 3).astype(np.float32)
        outv, ind = np.full(4, np.nan, np.float32), np.full(4, -1, np.int64)
        xs = tinfo(xd[:, 0])
        libs["reduce_dim"].launch("lt_reduce_dimblk_max_Float_i32", 2, 96, tinfo(outv), tinfo(ind), xs,
                                  ctypes.c_int64(4), ctypes.c_int64(70), ctypes.c_int64(1))
        assert_exact(ind, np.argmax(xd, 1).astype(np.int64), "dimblk max indices under jitter")
        assert_exact(outv, xd.max(1), "dimblk max values under jitter")
    finally:
        for lib in libs.values():
            lib.dll.simt_set_jitter(0)


# ----------------------------------------------------------------------------- Philox and Dropout
# Random123 known-answer vectors for philox4x32-10: file tests/kat_vectors of
# https://github.com/DEShawResearch/random123 (the three "philox4x32 10" lines; columns: counter[4],
# key[2], expected output[4]). Algorithm: Salmon et al., SC11, "Parallel random numbers: as easy as
# 1, 2, 3".
PHILOX_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]
def dropout_expected(t, x, seed, offset, p, v1):
    n = x.size
    kept = dropout_draws(seed, offset, n) < np.uint64(dropout_threshold(p))
    keep = NP[t](1.0 if v1 else 1.0 / (1.0 - p))
    noise = np.where(kept, keep, NP[t](0)).astype(NP[t])
    A = ACC[t]
    out = (x.reshape(-1).astype(A) * noise.astype(A)).astype(NP[t]).reshape(x.shape)
    return kept, noise, out


def test_philox_reference_matches_random123(simt):
    for c, k, e in PHILOX_KAT:
        got = philox_np([np.uint64(v) for v in c], [np.uint64(v) for v in k])
        assert tuple(int(v) for v in got) == e


@pytest.fixture(scope="module")
def philox_c(tmp_path_factory):
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build philox.cuh as C")
    out = tmp_path_factory.mktemp("philox_c") / "philox_check.so"
    cmd = [cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O1", "-shared", "-fPIC", "-I", CUDA_DIR,
           os.path.join(SIMT_DIR, "philox_check.c"), "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lib = ctypes.CDLL(str(out))
    lib.lt_check_dropout_mask.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64, ctypes.c_double,
                                          ctypes.c_void_p]
    return lib


def test_philox_header_as_c_matches_random123_and_kernel_stream(philox_c, rng):
    U4, U2 = ctypes.c_uint32 * 4, ctypes.c_uint32 * 2
    for c, k, e in PHILOX_KAT:
        out = U4()
        philox_c.lt_check_philox(U4(*c), U2(*k), out)
        assert tuple(out) == e
    for seed, offset, n, p in [(0, 0, 1000, 0.5), (int(rng.integers(0, 2 ** 63)), 2 ** 32 - 3, 999, 0.3),
                               (2 ** 64 - 1, 7, 64, 0.9)]:
        mask = np.zeros(n, np.uint8)
        philox_c.lt_check_dropout_mask(seed, offset, n, p, mask.ctypes.data)
        exp = dropout_draws(seed, offset, n) < np.uint64(dropout_threshold(p))
        assert_exact(mask.astype(bool), exp, "host mask from philox.cuh")


def _dropout(lib, t, idx, x, out, seed, offset, p, v1, geom=None, collapsed=True):
    n = x.size
    noise = np.full(n + 1, np.nan, NP[t])
    lib.launch("lt_dropout_fwd_%s_%s" % (t, idx), *(geom or geometry(n)), tinfo(out, collapsed),
               tinfo(x, not collapsed), ptr(noise), ctypes.c_int64(n), ctypes.c_double(p), ctypes.c_int32(v1),
               ctypes.c_uint64(seed), ctypes.c_uint64(offset))
    assert np.isnan(noise[n]), "noise written beyond n"
    return noise[:n]


@pytest.mark.parametrize("t", FLOATS)
def test_dropout_forward_backward_reproducible(simt, rng, t):
    lib = simt.get("dropout")
    dt = NP[t]
    cases = [(1, 0, 0.5, 0), (3, 1, 0.2, 0), (33, 2, 0.5, 1), (1000, 7, 0.9, 0), (4097, 2 ** 32 + 3, 0.1, 0),
             (257, 5, 0.0, 0)]
    shapes = {1: (1,), 3: (3,), 33: (3, 11), 1000: (10, 100), 4097: (4097,), 257: (257,)}
    for j, (n, offset, p, v1) in enumerate(cases):
        seed = int(rng.integers(0, 2 ** 64, dtype=np.uint64))
        idx = ("i32", "i64")[j % 2]
        shape = shapes[n]
        xin, vals, _ = make_input(IN_LAYOUTS[j % 3], (rng.standard_normal(shape) * 2).astype(dt), dt)
        inplace = j == 2
        if inplace:
            out, base, mask = xin, None, None
        else:
            base, out, mask = make_output(OUT_LAYOUTS[(j + 1) % 3], shape, dt)
        noise = _dropout(lib, t, idx, xin, out, seed, offset, p, v1, collapsed=j % 2 == 0)
        kept, enoise, eout = dropout_expected(t, vals, seed, offset, p, v1)
        what = "dropout %s %s n=%d offset=%d p=%g v1=%d" % (t, idx, n, offset, p, v1)
        assert_exact(noise, enoise, what + " noise")
        assert_exact(out, eout, what + " output")
        if base is not None:
            assert_untouched(base, mask, what)
        go_view, go, _ = make_input(IN_LAYOUTS[(j + 2) % 3], rng.standard_normal(shape).astype(dt), dt)
        gbase, gi, gmask = make_output(OUT_LAYOUTS[j % 3], shape, dt)
        lib.launch("lt_dropout_bwd_%s_%s" % (t, idx), *geometry(n), tinfo(gi), tinfo(go_view), ptr(noise),
                   ctypes.c_int64(n))
        A = ACC[t]
        assert_exact(gi, (go.reshape(-1).astype(A) * enoise.astype(A)).astype(dt).reshape(shape), what + " bwd")
        assert_untouched(gbase, gmask, what + " bwd")


def test_dropout_does_not_depend_on_launch_geometry_and_offsets_shift_the_stream(simt, rng):
    lib = simt.get("dropout")
    n, seed = 3001, int(rng.integers(0, 2 ** 63))
    x = np.ones(n + 13, np.float32)
    masks = []
    for geom in [(1, 32), (5, 64), (13, 96), (64, 64)]:
        out = np.zeros(n, np.float32)
        masks.append(_dropout(lib, "Float", "i64", x[:n], out, seed, 0, 0.5, 1, geom))
    for m in masks[1:]:
        assert_exact(m, masks[0], "geometry")
    for k in (1, 2, 3, 5, 13):
        out = np.zeros(n, np.float32)
        m = _dropout(lib, "Float", "i32", x[:n], out, seed, k, 0.5, 1)
        assert_exact(m[: n - k], masks[0][k:], "offset %d" % k)
    out = np.zeros(n, np.float32)
    other = _dropout(lib, "Float", "i32", x[:n], out, seed ^ 1, 0, 0.5, 1)
    agree = (other == masks[0]).mean()
    assert 0.4 < agree < 0.6, agree  # independent streams agree half of the time at p = 0.5


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_mask_statistics(simt, rng, p):
    lib = simt.get("dropout")
    n = 1 << 17
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    noise = _dropout(lib, "Float", "i32", x, out, int(rng.integers(0, 2 ** 63)), int(rng.integers(0, 2 ** 40)),
                     p, 0, (16, 64))
    kept = noise != 0
    q = 1 - p
    assert np.all(noise[kept] == np.float32(1 / q))
    z = 5.0

    def near(frac, prob, count):
        return abs(frac - prob) <= z * math.sqrt(prob * (1 - prob) / count)

    assert near(kept.mean(), q, n), kept.mean()
    for lane in range(4):
        assert near(kept[lane::4].mean(), q, n // 4), (lane, kept[lane::4].mean())
    both = (kept[:-1] & kept[1:]).mean()
    assert near(both, q * q, n - 1), both
    both4 = (kept[:-4] & kept[4:]).mean()
    assert near(both4, q * q, n - 4), both4


# ----------------------------------------------------------------------------- masked.cu
@pytest.mark.parametrize("t", ["Byte", "Char", "Long", "Float", "Double"])
def test_masked_compaction_by_hand(simt, rng, t):
    """masked.cu's three launches as the host makes them (the chunk a multiple of the block), both index kinds, a
    transposed source and mask, then one launch under schedule jitter: the per-chunk counts and counts above 1,
    the scan of more counts than threads (several tiles of the block), the scatter of maskedSelect (nothing past
    limit written) and maskedCopy (nothing past limit read; the unset elements kept)."""
    lib = simt.get("masked")
    x = random_values(rng, t, (37, 29)).T
    m = (rng.random((29, 37)) < 0.45).astype(np.uint8)
    m[0, :5] = 2   # set too, and counted above 1
    n, block, grid, chunk = x.size, 64, 4, 320
    order = m.ravel() != 0
    for idx, jitter in (("i32", 0), ("i64", 0), ("i32", 3000)):
        lib.dll.simt_set_jitter(jitter)
        try:
            counts, big, totals = np.full(grid, -1, np.int64), np.full(grid, -1, np.int64), np.zeros(2, np.int64)
            lib.launch("lt_mask_count_" + idx, grid, block, tinfo(m), ctypes.c_int64(n), ctypes.c_int64(chunk),
                       ptr(counts), ptr(big))
            pieces = [m.ravel()[b * chunk:(b + 1) * chunk] for b in range(grid)]
            assert_exact(counts, [(p != 0).sum() for p in pieces], "counts " + idx)
            assert_exact(big, [(p > 1).sum() for p in pieces], "above 1 " + idx)
            lib.launch("lt_mask_scan", 1, block, ptr(counts), ctypes.c_int64(grid), ptr(big), ptr(totals))
            k = int(order.sum())
            assert_exact(counts, np.cumsum([0] + [(p != 0).sum() for p in pieces[:-1]]), "offsets " + idx)
            assert_exact(totals, [k, 5], "totals " + idx)
            out = np.full(k + 3, 99, x.dtype)
            lib.launch("lt_masked_select_%s_%s" % (t, idx), grid, block, tinfo(out), tinfo(x), tinfo(m),
                       ctypes.c_int64(n), ctypes.c_int64(chunk), ptr(counts), ctypes.c_int64(k - 2))
            assert_exact(out, np.concatenate([x[order.reshape(x.shape)][:k - 2], np.full(5, 99, x.dtype)]),
                         "select " + idx)
            dst = np.array(x.T).T                       # a transposed destination
            src = random_values(rng, t, (k,))
            lib.launch("lt_masked_copy_%s_%s" % (t, idx), grid, block, tinfo(dst), tinfo(src), tinfo(m),
                       ctypes.c_int64(n), ctypes.c_int64(chunk), ptr(counts), ctypes.c_int64(k - 1))
            want = np.array(x, order="C")
            want.reshape(-1)[np.flatnonzero(order)[:k - 1]] = src[:k - 1]
            assert_exact(dst, want, "copy " + idx)
        finally:
            lib.dll.simt_set_jitter(0)
    many = rng.integers(0, 50, 200).astype(np.int64)
    zeros, totals = np.zeros(200, np.int64), np.zeros(2, np.int64)
    scanned = many.copy()
    lib.launch("lt_mask_scan", 1, 64, ptr(scanned), ctypes.c_int64(200), ptr(zeros), ptr(totals))
    assert_exact(scanned, np.cumsum(many) - many, "scan in tiles")
    assert_exact(totals, [many.sum(), 0], "scan totals")


# ----------------------------------------------------------------------------- histc.cu
@pytest.mark.parametrize("t", ["Float", "Double"])
def test_histc_partial_counts_and_totals_by_hand(simt, rng, t):
    """histc.cu's two launches as the host makes them, both index kinds, a transposed input, chunks of several
    tiles and more bins than threads (two rounds), then once under schedule jitter (the tile of bins in shared
    memory is refilled after each barrier): every block's row of counts, and their sums into a strided result.
    Values at lo and hi, outside the range, and NaN: hi in the last bin, the others nowhere."""
    lib = simt.get("histc")
    dt = np.float32 if t == "Float" else np.float64
    x = rng.standard_normal((23, 31)).astype(dt).T
    x[0, :3] = [-1.5, 1.25, np.nan]
    n, block, grid, chunk, nbins, lo, hi = x.size, 64, 4, 192, 90, dt(-1.5), dt(1.25)
    flat = x.ravel()
    for idx, jitter in (("i32", 0), ("i64", 0), ("i32", 3000)):
        lib.dll.simt_set_jitter(jitter)
        try:
            partial = np.full((grid, nbins), -1, np.int64)
            cast = ctypes.c_float if t == "Float" else ctypes.c_double
            lib.launch("lt_histc_partial_%s_%s" % (t, idx), grid, block, tinfo(x), ctypes.c_int64(n),
                       ctypes.c_int64(chunk), cast(lo), cast(hi), ctypes.c_int64(nbins), ptr(partial))
            for b in range(grid):
                v = flat[b * chunk:(b + 1) * chunk]
                v = v[(v >= lo) & (v <= hi)]
                bins = np.minimum(((v - lo) / (hi - lo) * dt(nbins)).astype(np.int64), nbins - 1)
                assert_exact(partial[b], np.bincount(bins, minlength=nbins), "block %d %s" % (b, idx))
            out = np.full(2 * nbins, -7, dt)
            lib.launch("lt_histc_total_%s_%s" % (t, idx), 2, block, tinfo(out[::2]), ptr(partial),
                       ctypes.c_int64(grid), ctypes.c_int64(nbins))
            assert_exact(out[::2], partial.sum(0).astype(dt), "totals " + idx)
            assert_exact(out[1::2], np.full(nbins, -7, dt), "between the strided totals " + idx)
            assert out[::2][-1] >= 1 and out[::2][0] >= 1
        finally:
            lib.dll.simt_set_jitter(0)


# ----------------------------------------------------------------------------- multinomial.cu
def test_multinomial_search_by_hand(simt, rng):
    """multinomial.cu's search, both index kinds, into a transposed result: each draw is 1 + the first category
    whose running sum exceeds u times the row's total; u = 0 skips leading zero-probability categories, a u whose
    product rounds up to the total takes the last category of positive probability, never the zeros after it."""
    lib = simt.get("multinomial")
    p = rng.random((3, 6))
    p[0, [0, 1, 4]] = 0
    p[1, [5]] = 0
    p[2, [2, 3, 5]] = 0
    cum = np.cumsum(p, 1)
    u = rng.random((3, 7))
    u[:, 0] = 0
    u[:, 1] = 1 - 2.0 ** -53     # u * total may round to the total
    want = np.array([[1 + np.argmax(c > v * c[-1]) if (c > v * c[-1]).any() else 1 + np.argmax(c >= v * c[-1])
                      for v in uu] for c, uu in zip(cum, u)])
    assert (p[np.arange(3)[:, None], want - 1] > 0).all()
    for idx in ("i32", "i64"):
        out = np.zeros((7, 3), np.int64)
        lib.launch("lt_multinomial_search_" + idx, 2, 32, tinfo(out.T), ptr(cum), ptr(u), ctypes.c_int64(3),
                   ctypes.c_int64(6), ctypes.c_int64(7))
        assert_exact(out.T, want, idx)
    assert want[0, 0] == 3 and want[2, 0] == 1   # u = 0: past row 0's two leading zeros


# ----------------------------------------------------------------------------- scan.cu by blocks, sort.cu's selection
def slices_of(x):
    """(slices view, stride along the last axis) of a 2-D array scanned or selected along its last axis"""
    return tinfo(x[:, 0]), ctypes.c_int64(x.strides[1] // x.itemsize)


@pytest.mark.parametrize("t", ["Byte", "Int", "Long", "Float", "Double", "Half"])
def test_block_scan_by_hand(simt, rng, t):
    """lt_scan_totals then lt_scan_chunks as the host launches them, on a transposed input (5 slices of 1000,
    stride 5) into a transposed output: 6 chunks of 3 tiles per slice, a grid of 4 blocks striding over the 30
    chunks, both index kinds, then under schedule jitter; sums and products. Integers exact (wrapping uint64,
    then converted); floats within the double rounding of another order, then one ulp of T."""
    lib = simt.get("scan")
    nslices, n, block, grid, chunk = 5, 1000, 64, 4, 192
    m = -(-n // chunk)
    for prod, idx, jitter in ((0, "i32", 0), (1, "i64", 0), (0, "i64", 3000), (1, "i32", 3000)):
        if t in INTS:
            x = random_values(rng, t, (n, nslices)).T
        elif prod:
            x = random_values(rng, t, (n, nslices), 0.99, 1.01).T
        else:
            x = random_values(rng, t, (n, nslices)).T
        out = np.full((n, nslices), 77, NP[t]).T
        totals = np.zeros(nslices * m, np.uint64 if t in INTS else np.float64)
        xs, xstride = slices_of(x)
        os_, ostride = slices_of(out)
        lib.dll.simt_set_jitter(jitter)
        try:
            lib.launch("lt_scan_totals_%s_%s" % (t, idx), grid, block, xs, ctypes.c_int64(nslices), ctypes.c_int64(n),
                       xstride, ctypes.c_int64(chunk), ctypes.c_int(prod), ptr(totals))
            lib.launch("lt_scan_chunks_%s_%s" % (t, idx), grid, block, os_, xs, ctypes.c_int64(nslices),
                       ctypes.c_int64(n), ostride, xstride, ctypes.c_int64(chunk), ctypes.c_int(prod), ptr(totals))
        finally:
            lib.dll.simt_set_jitter(0)
        what = "%s %s prod %d jitter %d" % (t, idx, prod, jitter)
        if t in INTS:
            acc = x.astype(np.int64).astype(np.uint64)
            with np.errstate(over="ignore"):
                want = (np.cumprod(acc, 1) if prod else np.cumsum(acc, 1)).astype(np.int64).astype(NP[t])
                pieces = [acc[:, c * chunk:(c + 1) * chunk] for c in range(m)]
                tot = np.stack([p.prod(1) if prod else p.sum(1) for p in pieces], 1).ravel()
            assert_exact(totals, tot, "totals " + what)
            assert_exact(out, want, what)
        else:
            xd = x.astype(np.float64)
            want = np.cumprod(xd, 1) if prod else np.cumsum(xd, 1)
            size = np.cumprod(np.abs(xd), 1) if prod else np.cumsum(np.abs(xd), 1)
            bound = np.spacing(np.abs(want).astype(NP[t])).astype(np.float64) + 2.0 ** -53 * 4 * n * size
            assert_bound(out, want, bound, what)


def cpu_order(x, desc):
    """0-based positions sorting each row of x in the CPU sort's order: (value, index), NaN last ascending and
    first descending, ties (NaNs too) by index"""
    rows = []
    for r in np.asarray(x, np.float64):
        nan = np.isnan(r)
        pos = np.arange(r.size)
        key = np.where(nan, 0, -r if desc else r)
        order = np.lexsort((pos, key, ~nan if desc else nan))
        rows.append(order)
    return np.array(rows)


@pytest.mark.parametrize("t", ["Int", "Long", "Float", "Double"])
def test_selection_by_hand(simt, rng, t):
    """lt_select on 3 slices of 1500 (strided input, transposed outputs), a grid of 2 blocks striding over them:
    many ties, NaN, inf, -0 (one key with 0); kthvalue (mode 2) for k = 1, n and a middle one, topk of k = 1, 100
    and 1500 (the whole slice) unsorted (index order) and sorted, both directions, then under schedule jitter.
    The positions and values must be the CPU's exactly."""
    lib = simt.get("sort")
    nslices, n, block, grid = 3, 1500, 64, 2
    base = rng.integers(-20, 20, (nslices, 2 * n)).astype(np.float64)
    if t in ("Float", "Double"):
        base[rng.random(base.shape) < 0.05] = np.nan
        base[rng.random(base.shape) < 0.03] = np.inf
        base[rng.random(base.shape) < 0.03] = -np.inf
        base[rng.random(base.shape) < 0.1] = -0.0
        base[rng.random(base.shape) < 0.3] += 0.5
    else:
        base *= 2 ** 40 if t == "Long" else 2 ** 20
    x = base.astype(NP[t])[:, ::2]   # stride 2 along the slice
    xs, xstride = slices_of(x)
    cases = [(2, 1, 0, 0), (2, n, 0, 0), (2, 777, 0, 3000), (0, 100, 1, 0), (1, 100, 1, 0), (1, 100, 0, 3000),
             (0, 1, 0, 0), (1, 1, 1, 0), (1, n, 0, 0), (0, n, 1, 0)]
    for (mode, k, desc, jitter), idx in zip(cases, ["i32", "i64"] * len(cases)):
        count = 1 if mode == 2 else k
        v = np.full((count, nslices), 99, NP[t]).T
        i = np.full((count, nslices), -5, np.int64).T
        vs, vstride = slices_of(v)
        is_, istride = slices_of(i)
        lib.dll.simt_set_jitter(jitter)
        try:
            lib.launch("lt_select_%s_%s" % (t, idx), grid, block, xs, xstride, vs, vstride, is_, istride,
                       ctypes.c_int64(nslices), ctypes.c_int64(n), ctypes.c_int64(k), ctypes.c_int(desc),
                       ctypes.c_int(mode))
        finally:
            lib.dll.simt_set_jitter(0)
        order = cpu_order(x, desc)
        want = order[:, k - 1:k] if mode == 2 else order[:, :k]
        if mode == 0:
            want = np.sort(want, 1)
        what = "%s mode %d k %d desc %d jitter %d" % (t, mode, k, desc, jitter)
        assert_exact(i, want + 1, "indices " + what)
        got_v, want_v = v, np.take_along_axis(x, want, 1)
        assert_exact(got_v, want_v, "values " + what)
        if t in ("Float", "Double"):
            assert_exact(np.signbit(got_v), np.signbit(want_v), "signs " + what)
