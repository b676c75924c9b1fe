"""cutorch's device tensor math (native/src/cuda_ops.c) on the CPU: the host layer a GPU runs, with its
kernels started in the SIMT emulator instead of cuLaunchKernel.

The launcher given to lt_cuops here runs each kernel of native/cuda/ built for the emulator (the session
fixture `simt`), which checks the argument kinds the host layer packs against the kernel's own signature;
"device" memory is host memory (tensors over NumPy buffers poisoned around the view, scratch from the
caching allocator over its host backend, all of it returned by the end of each call). What is checked
against NumPy on fresh random inputs (the seed is printed on failure): the operand descriptions (dimension
merging, against the element offsets NumPy itself computes), the 32/64-bit index choice, every operation in
contiguous, transposed, narrowed and expanded layouts, the reductions' two kernel forms and 1-based
indices, the nn kernels' shape rules and contiguous copies, and the errors of bad shapes, types and
targets."""
import ctypes
from fractions import Fraction

import numpy as np
import pytest

from lt_oracle import dropout_draws, dropout_threshold
from pytorch_bridge.native import ffi, lib
from simt_emulator import (ACC, FLOATS, INTS, NP, TYPES, assert_untouched, cuda_tensor, make_input, make_output,
                           poison_value)

LAYOUTS = ["contig", "transposed", "narrowed", "expanded"]
byte_bounds = getattr(np, "byte_bounds", None) or np.lib.array_utils.byte_bounds   # moved in NumPy 2


GEMM_SIGNATURE = ("int(void *, void *, int, char, char, int64_t, int64_t, int64_t, double, void *, int64_t, void *, "
                  "int64_t, double, void *, int64_t)")


def host_gemm(calls):
    """BLAS's column-major gemm in NumPy over host memory, refusing what BLAS refuses (a leading dimension
    below max(1, rows), a bad trans); calls records (transa, transb, m, n, k, lda, ldb, ldc)."""
    def gemm(ctx, stream, ty, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        try:
            ta, tb = ta.decode(), tb.decode()
            calls.append((ta, tb, m, n, k, lda, ldb, ldc))
            dt = {5: np.float32, 6: np.float64}[ty]
            item = np.dtype(dt).itemsize

            def mat(ptr, rows, cols, ld):
                if ld < max(1, rows):
                    raise ValueError("leading dimension %d < %d" % (ld, max(1, rows)))
                buf = (ctypes.c_char * (item * ((cols - 1) * ld + rows))).from_address(int(ffi.cast("uintptr_t", ptr)))
                return np.ndarray((rows, cols), dt, buffer=buf, strides=(item, item * ld))

            if ta not in "nt" or tb not in "nt":
                raise ValueError("trans %r %r" % (ta, tb))
            A = mat(a, m, k, lda) if ta == "n" else mat(a, k, m, lda).T
            B = mat(b, k, n, ldb) if tb == "n" else mat(b, n, k, ldb).T
            C = mat(c, m, n, ldc)
            r = alpha * (A.astype(np.float64) @ B.astype(np.float64))
            if beta != 0:
                r = r + beta * C.astype(np.float64)
            C[...] = r.astype(dt)
            return 0
        except Exception as e:  # BLAS's refusal comes back as an error
            lib.lt_set_error(("host gemm: %s" % e).encode())
            return -1
    return gemm


class Device:
    """An lt_cuops: kernels in the emulator, memory from the host, scratch from a caching allocator, matrix
    products by NumPy (host_gemm)."""

    def __init__(self, simt, block=64, max_blocks=4):
        self.simt = simt
        self.launches = []
        self.gemms = []
        self.backend = lib.lt_host_backend_new(1, 0)
        self.alloc = lib.lt_cuda_alloc_new(self.backend)
        assert self.alloc != ffi.NULL, ffi.string(lib.lt_errmsg()).decode()

        @ffi.callback("int(void *, const char *, const char *, const char *, unsigned, unsigned, void *, void **)")
        def launch(ctx, file, kernel, sig, grid, blk, stream, params):
            try:
                name = ffi.string(kernel)
                self.launches.append((ffi.string(file).decode(), name.decode(), ffi.string(sig).decode(), grid, blk))
                err = ctypes.create_string_buffer(512)
                pp = ctypes.cast(int(ffi.cast("uintptr_t", params)), ctypes.POINTER(ctypes.c_void_p))
                rc = self.simt.get(ffi.string(file).decode()).dll.simt_launch(
                    name, ffi.string(sig), grid, 1, 1, blk, 1, 1, pp, err, len(err))
                if rc:
                    lib.lt_set_error(b"emulator: " + err.value)
                    return -1
                return 0
            except Exception as e:  # a failure here must come back as an error, not vanish in the callback
                lib.lt_set_error(("emulator: %r" % e).encode())
                return -1

        @ffi.callback("int(void *, void *, const void *, int64_t, void *)")
        def copy_bytes(ctx, dst, src, n, stream):
            ctypes.memmove(int(ffi.cast("uintptr_t", dst)), int(ffi.cast("uintptr_t", src)), n)
            return 0

        gemm = ffi.callback(GEMM_SIGNATURE, host_gemm(self.gemms))
        self._callbacks = (launch, copy_bytes, gemm)
        self.ops = ffi.new("lt_cuops *", {"launch": launch, "to_host": copy_bytes, "to_device": copy_bytes,
                                          "alloc": self.alloc, "device": 0, "threads_per_block": block,
                                          "max_blocks": max_blocks, "gemm": gemm})
        self.keep = []

    def close(self):
        st = ffi.new("lt_cuda_alloc_stats *")
        assert lib.lt_cuda_alloc_stats_get(self.alloc, 0, st) == 0
        lib.lt_cuda_alloc_destroy(self.alloc)
        assert lib.lt_host_backend_free(self.backend) == 0
        return st

    def needs_memory(self, nbytes):
        """Host memory is the device's here: sparse buffers take no room."""

    def tensor(self, view, base=None):
        """An lt_tensor of a Cuda type over a NumPy view (of base, its storage): host memory plays the device's."""
        base = view if base is None else base
        t, st = cuda_tensor(view, base, base.__array_interface__["data"][0])
        self.keep.append((t, st, view, base))
        return t

    def call(self, fn, *args):
        rc = getattr(lib, "lt_cuops_" + fn)(self.ops, ffi.NULL, *args)
        if rc != 0:
            raise RuntimeError(ffi.string(lib.lt_errmsg()).decode())
        self.live_scratch_is_zero()

    def live_scratch_is_zero(self):
        st = ffi.new("lt_cuda_alloc_stats *")
        assert lib.lt_cuda_alloc_stats_get(self.alloc, 0, st) == 0
        assert st.active_blocks == 0, "scratch left allocated"


class GpuDevice:
    """The same interface on a real GPU (lt_cuda_ops_init's cuLaunchKernel launcher): each NumPy buffer a
    test hands over gets a device copy; a call uploads the buffers of its operands, runs, and writes back
    the bytes the device changed (only those: views of one host buffer may have copies of their own), so the
    tests read their results from the same arrays as on the emulator. Launches are recorded on the way to
    the real launcher."""

    def __init__(self):
        backend = lib.lt_cuda_device_backend()
        assert backend != ffi.NULL, ffi.string(lib.lt_errmsg()).decode()
        self.alloc = lib.lt_cuda_alloc_new(backend)     # scratch: checked empty after every call
        self.memory = lib.lt_cuda_alloc_new(backend)    # the tensors' device copies
        self.ops = ffi.new("lt_cuops *")
        assert lib.lt_cuda_ops_init(self.ops, 0, self.alloc) == 0, ffi.string(lib.lt_errmsg()).decode()
        self.launches = []
        real = self.ops.launch

        @ffi.callback("int(void *, const char *, const char *, const char *, unsigned, unsigned, void *, void **)")
        def launch(ctx, file, kernel, sig, grid, blk, stream, params):
            self.launches.append((ffi.string(file).decode(), ffi.string(kernel).decode(), ffi.string(sig).decode(),
                                  grid, blk))
            return real(ctx, file, kernel, sig, grid, blk, stream, params)

        self._callbacks = (launch,)
        self.ops.launch = launch
        self.mirrors = {}   # lt_tensor address -> (host bytes, device pointer)
        self.keep = []
        props = ffi.new("lt_cuda_device_props *")
        assert lib.lt_cuda_device_properties(0, props) == 0
        self.memory_bytes = int(props.total_memory)

    def needs_memory(self, nbytes):
        """Skip a test whose device copies (up to nbytes) do not fit in a quarter of the device's memory (the
        emulated driver's 1 GiB, say)."""
        if 4 * nbytes > self.memory_bytes:
            pytest.skip("%.1f GiB of device copies on a device of %.1f GiB" % (nbytes / 2**30, self.memory_bytes / 2**30))

    def tensor(self, view, base=None):
        base = view if base is None else base
        lo, hi = byte_bounds(base)
        n = max(hi - lo, 1)
        p = ffi.new("void **")
        assert lib.lt_cuda_alloc(self.memory, 0, n, ffi.NULL, p) == 0, ffi.string(lib.lt_errmsg()).decode()
        host = np.frombuffer((ctypes.c_uint8 * (hi - lo)).from_address(lo), np.uint8) if hi > lo else \
            np.zeros(0, np.uint8)
        first = base.__array_interface__["data"][0]
        t, st = cuda_tensor(view, base, int(ffi.cast("uintptr_t", p[0])) + first - lo)
        self.mirrors[int(ffi.cast("uintptr_t", t))] = (host, p[0])
        self.keep.append((t, st, view, base, p))
        return t

    def call(self, fn, *args):
        tensors = []   # the call's tensors: arguments, and the entries of arrays of them (copy_batch's lists)
        for a in args:
            if isinstance(a, ffi.CData) and ffi.typeof(a) is ffi.typeof("lt_tensor *"):
                tensors.append(a)
            elif isinstance(a, ffi.CData) and ffi.typeof(a).kind == "array" and \
                    ffi.typeof(a).item is ffi.typeof("lt_tensor *"):
                tensors.extend(a)
        used = [self.mirrors[k] for k in (int(ffi.cast("uintptr_t", t)) for t in tensors) if k in self.mirrors]
        before = []
        for host, ptr in used:
            before.append(host.copy())
            assert self.ops.to_device(self.ops.ctx, ptr, ffi.cast("void *", host.ctypes.data), host.nbytes,
                                      ffi.NULL) == 0, ffi.string(lib.lt_errmsg()).decode()
        rc = getattr(lib, "lt_cuops_" + fn)(self.ops, ffi.NULL, *args)
        if rc != 0:
            raise RuntimeError(ffi.string(lib.lt_errmsg()).decode())
        for (host, ptr), old in zip(used, before):
            now = np.empty_like(host)
            assert self.ops.to_host(self.ops.ctx, ffi.cast("void *", now.ctypes.data), ptr, now.nbytes,
                                    ffi.NULL) == 0, ffi.string(lib.lt_errmsg()).decode()
            changed = now != old
            host[changed] = now[changed]
        Device.live_scratch_is_zero(self)

    def close(self):
        st = ffi.new("lt_cuda_alloc_stats *")
        assert lib.lt_cuda_alloc_stats_get(self.alloc, 0, st) == 0
        lib.lt_cuda_alloc_destroy(self.alloc)
        for *_, p in self.keep:
            lib.lt_cuda_alloc_free(self.memory, p[0])
        lib.lt_cuda_alloc_destroy(self.memory)
        return st


_count = ffi.new("int *")
lib.lt_cuda_device_count(_count)
# every test below runs on the emulator; with a GPU, again on it (ids [gpu]); none skips for want of one
BACKENDS = ["emulator"] + (["gpu"] if _count[0] > 0 else [])


@pytest.fixture(params=BACKENDS)
def dev(request):
    d = Device(request.getfixturevalue("simt")) if request.param == "emulator" else GpuDevice()
    yield d
    d.close()


@pytest.fixture
def emu(simt):
    """The emulator alone, for the tests of host-side descriptions (addresses compared with NumPy's)."""
    d = Device(simt)
    yield d
    d.close()


def values(rng, t, shape, lo=-50, hi=50):
    if t in INTS:
        info = np.iinfo(NP[t])
        return rng.integers(max(lo, info.min), min(hi, info.max), size=shape, endpoint=True).astype(NP[t])
    return rng.uniform(lo, hi, size=shape).astype(NP[t])


def rand_shape(rng, nd=None, hi=7):
    nd = int(rng.integers(1, 5)) if nd is None else nd
    return tuple(int(v) for v in rng.integers(1, hi, nd))


# ----------------------------------------------------------------------------- operand descriptions
def descriptor_offsets(d):
    """Every element's offset, row-major, from an lt_cu_tensor (the kernels' rule, in NumPy)."""
    sizes = [d.sizes[i] for i in range(d.dims)]
    strides = [d.strides[i] for i in range(d.dims)]
    idx = np.indices(sizes).reshape(len(sizes), -1) if sizes else np.zeros((0, 1), np.int64)
    return (idx * np.array(strides)[:, None]).sum(0)


def test_descriptions_address_every_element_as_numpy_does(emu, rng):
    dev = emu
    for _ in range(60):
        shape = rand_shape(rng, int(rng.integers(1, 7)), 5)
        kind = LAYOUTS[int(rng.integers(4))]
        v, _, b = make_input(kind, values(rng, "Float", shape), np.float32)
        if rng.integers(3) == 0 and v.ndim > 1:  # a permutation of the dimensions too
            perm = rng.permutation(v.ndim)
            v = v.transpose(perm)
        t = dev.tensor(v, b)
        d = ffi.new("lt_cu_tensor *")
        mo = ffi.new("int64_t *")
        assert lib.lt_cuops_describe(t, d, mo) == 0
        assert 1 <= d.dims <= 8 and all(d.sizes[i] > 1 for i in range(d.dims) if d.dims > 1)
        offs = descriptor_offsets(d)
        # numpy's own element offsets of the view, row-major
        item = v.itemsize
        want = (np.indices(v.shape).reshape(v.ndim, -1) * (np.array(v.strides) // item)[:, None]).sum(0)
        assert np.array_equal(offs, want), (v.shape, v.strides)
        assert mo[0] == (want.max() if want.size else 0)
        first = v.__array_interface__["data"][0]
        assert int(ffi.cast("uintptr_t", d.data)) == first
        # no two neighbouring dimensions left that could merge
        for i in range(d.dims - 1):
            assert d.strides[i] != d.strides[i + 1] * d.sizes[i + 1]


def test_descriptions_refuse_what_the_kernels_cannot_take(emu):
    dev = emu
    # 9 dimensions, none of which merges with the next
    mem = np.zeros(4 ** 9, np.float32)
    v = np.lib.stride_tricks.as_strided(mem, (2,) * 9, tuple(4 ** k * 4 * 3 for k in range(9)[::-1]))
    t = dev.tensor(v, mem)
    d = ffi.new("lt_cu_tensor *")
    assert lib.lt_cuops_describe(t, d, ffi.NULL) == -1
    assert "more than 8 dimensions" in ffi.string(lib.lt_errmsg()).decode()
    t.stride[0] = -1
    assert lib.lt_cuops_describe(t, d, ffi.NULL) == -1
    assert "negative stride" in ffi.string(lib.lt_errmsg()).decode()
    # empty: one dimension of size 0; all sizes 1: one element
    t2 = dev.tensor(np.zeros((3, 0, 2), np.float32))
    assert lib.lt_cuops_describe(t2, d, ffi.NULL) == 0 and d.dims == 1 and d.sizes[0] == 0
    t3 = dev.tensor(np.zeros((1, 1, 1), np.float32))
    assert lib.lt_cuops_describe(t3, d, ffi.NULL) == 0 and d.dims == 1 and d.sizes[0] == 1


# ----------------------------------------------------------------------------- copy and fill
def convert(x, src, dst):
    """The kernels' conversion rule: floats truncate to int64 first; integers wrap; to Half rounds."""
    if src in FLOATS and dst in INTS:
        return np.trunc(x.astype(np.float64)).astype(np.int64).astype(NP[dst])
    if src in INTS and dst == "Half":
        return x.astype(np.float32).astype(np.float16)
    return x.astype(NP[dst])


def test_copy_between_types_and_layouts(dev, rng):
    pairs = [(s, d) for s in TYPES for d in TYPES]
    for k in rng.permutation(len(pairs))[:24]:
        src, dst = pairs[k]
        shape = rand_shape(rng)
        lo, hi = (0, 100) if dst == "Byte" or src == "Byte" else (-100, 100)
        x = values(rng, src, shape, lo, hi)
        sk, dk = LAYOUTS[int(rng.integers(4))], ["contig", "transposed", "narrowed"][int(rng.integers(3))]
        xv, _, xb = make_input(sk, x, x.dtype)
        ob, ov, ov_mask = make_output(dk, shape, NP[dst])
        dev.call("copy", dev.tensor(ov, ob), dev.tensor(xv, xb))
        want = convert(np.asarray(xv), src, dst)
        assert np.array_equal(ov.view(np.uint16) if dst == "Half" else ov,
                              want.view(np.uint16) if dst == "Half" else want), (src, dst, sk, dk)
        assert_untouched(ob, ov_mask)
    names = {name for _, name, _, _, _ in dev.launches}
    assert all(n.startswith("lt_copy_") and n.endswith("_i32") for n in names)


def sparse_pair(step, a, b):
    """A Byte view of two elements a, b, step bytes apart, and its buffer: the zero pages between are
    never touched, so they take no memory."""
    big = np.zeros(step + 8, np.uint8)
    big[0], big[step] = a, b
    return big[::step], big


def test_copy_takes_the_64_bit_path_when_an_offset_passes_2_to_the_31(dev):
    dev.needs_memory(2 ** 31)
    src, big = sparse_pair(2 ** 31, 7, 9)
    out = np.full(2, 0x5A, np.uint8)
    dev.call("copy", dev.tensor(out), dev.tensor(src, big))
    assert out.tolist() == [7, 9]
    assert dev.launches[-1][1] == "lt_copy_Byte_Byte_i64"
    small = np.arange(5, dtype=np.uint8)
    dev.call("copy", dev.tensor(out[:1]), dev.tensor(small[2:3]))
    assert dev.launches[-1][1] == "lt_copy_Byte_Byte_i32" and out[0] == 2


def test_copy_and_fill_errors_and_empties(dev):
    a, b = np.zeros((2, 3), np.float32), np.zeros(5, np.float32)
    with pytest.raises(RuntimeError, match="has 5 elements"):
        dev.call("copy", dev.tensor(a), dev.tensor(b))
    n = len(dev.launches)
    dev.call("copy", dev.tensor(np.zeros((0, 3), np.float32)), dev.tensor(np.zeros((3, 0), np.int32)))
    dev.call("fill", dev.tensor(np.zeros((0,), np.float32)), 1.0)
    assert len(dev.launches) == n  # nothing launched for no elements


def random_bits(rng, dtype, shape):
    """Arbitrary bit patterns of dtype (NaNs with payloads, -0, infinities and subnormals among the floats)."""
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def as_bits(a):
    return np.ascontiguousarray(a).view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def batch_call(dev, outs, ins):
    """lt_cuops_copy_batch over (out view, out base) and (in view, in base) pairs."""
    to = ffi.new("lt_tensor *[]", [dev.tensor(v, b) for v, b in outs] or [ffi.NULL])
    frm = ffi.new("lt_tensor *[]", [dev.tensor(v, b) for v, b in ins] or [ffi.NULL])
    dev.call("copy_batch", to, frm, len(outs))


@pytest.mark.parametrize("t", ["Byte", "Half", "Float", "Int", "Double", "Long"])
def test_copy_batch_moves_every_pair_bit_for_bit_in_one_launch(dev, rng, t):
    k = int(rng.integers(3, 8))
    outs, ins, wants, masks = [], [], [], []
    for _ in range(k):
        shape = rand_shape(rng)
        sk = LAYOUTS[int(rng.integers(4))]
        dk = ["contig", "transposed", "narrowed"][int(rng.integers(3))]
        xv, want, xb = make_input(sk, random_bits(rng, NP[t], shape), NP[t])
        ob, ov, mask = make_output(dk, shape, NP[t])
        outs.append((ov, ob)), ins.append((xv, xb)), wants.append(want), masks.append((ob, mask))
    n = len(dev.launches)
    batch_call(dev, outs, ins)
    assert [name for _, name, _, _, _ in dev.launches[n:]] == ["lt_copy_batch_%d_i32" % np.dtype(NP[t]).itemsize]
    for (ov, _), want, (ob, mask) in zip(outs, wants, masks):
        assert np.array_equal(as_bits(ov), as_bits(want))
        assert_untouched(ob, mask)


def test_copy_batch_fills_the_slabs_of_a_cat_of_very_different_sizes(dev, rng):
    """Virtual blocks in proportion to each pair: 1 element beside thousands, more of them than the grid."""
    widths = [1, 3000, 2, 0, 777, 1]
    rows = 3
    out = np.full((rows, sum(widths)), np.nan, np.float32)
    ins, outs, at = [], [], 0
    for w in widths:
        x = rng.standard_normal((w, rows)).astype(np.float32).T   # each input transposed
        ins.append((x, x.base)), outs.append((out[:, at:at + w], out))
        at += w
    n = len(dev.launches)
    batch_call(dev, outs, ins)
    assert len(dev.launches) == n + 1
    assert np.array_equal(out, np.concatenate([x for x, _ in ins], axis=1))


def test_copy_batch_takes_the_64_bit_path_when_an_offset_passes_2_to_the_31(dev):
    dev.needs_memory(2 ** 31)
    far, big = sparse_pair(2 ** 31, 7, 9)
    near = [np.arange(3, dtype=np.uint8) + 10 * i for i in range(2)]
    outs = [np.full(2, 0x5A, np.uint8), np.zeros(3, np.uint8), np.zeros(3, np.uint8)]
    batch_call(dev, [(o, o) for o in outs], [(far, big)] + [(x, x) for x in near])
    assert dev.launches[-1][1] == "lt_copy_batch_1_i64"
    assert outs[0].tolist() == [7, 9] and outs[1].tolist() == [0, 1, 2] and outs[2].tolist() == [10, 11, 12]


def test_copy_batch_errors_and_empties(dev):
    a, b = np.zeros(4, np.float32), np.zeros(4, np.float64)
    with pytest.raises(RuntimeError, match="the source is a Double tensor, the output a Float one"):
        batch_call(dev, [(a, a)], [(b, b)])
    c = np.zeros(5, np.float32)
    with pytest.raises(RuntimeError, match="has 5 elements"):
        batch_call(dev, [(a, a)], [(c, c)])
    d = np.zeros(4, np.float64)
    with pytest.raises(RuntimeError, match="an output is a Double tensor"):
        batch_call(dev, [(a, a), (d, d)], [(a.copy(), None), (b, b)])
    n = len(dev.launches)
    e = np.zeros((0, 3), np.float32)
    batch_call(dev, [(e, e), (e, e)], [(e, e), (e, e)])
    batch_call(dev, [], [])
    assert len(dev.launches) == n   # nothing to copy, no launch


@pytest.mark.parametrize("t", TYPES)
def test_fill_writes_the_view_only(dev, rng, t):
    for kind in ("contig", "transposed", "narrowed"):
        shape = rand_shape(rng)
        ob, ov, ov_mask = make_output(kind, shape, NP[t])
        v = float(values(rng, t, ()) if t in INTS else rng.uniform(-9, 9))
        dev.call("fill", dev.tensor(ov, ob), v)
        want = np.full(shape, NP[t](v) if t in FLOATS else int(v), NP[t])
        assert np.array_equal(ov, want.astype(NP[t])), (t, kind)
        assert_untouched(ob, ov_mask)


# ----------------------------------------------------------------------------- pointwise
UNARY = {"sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "exp": np.exp, "log": np.log, "abs": np.abs,
         "neg": np.negative, "sign": np.sign, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x))}
EXACT = {"abs", "neg", "sign", "sqrt", "adds", "muls", "divs", "clamp", "cadd", "cmul", "cdiv", "addcmul",
         "addcdiv"}


def pointwise_ref(op, t, xs, a, b):
    A = ACC[t]
    x = [np.asarray(v).astype(A) for v in xs]
    a_, b_ = A(a), A(b)
    with np.errstate(all="ignore"):
        if op in UNARY:
            r = UNARY[op](x[0])
        elif op == "adds":
            r = x[0] + a_
        elif op == "muls":
            r = x[0] * a_
        elif op == "divs":
            r = x[0] / a_
        elif op == "pows":
            r = np.power(x[0], a_)
        elif op == "clamp":
            r = np.where(x[0] < a_, a_, np.where(x[0] > b_, b_, x[0]))
        elif op == "cadd":
            r = x[0] + a_ * x[1]
        elif op == "cmul":
            r = x[0] * x[1]
        elif op == "cdiv":
            r = x[0] / x[1]
        elif op == "addcmul":
            r = x[0] + (a_ * x[1]) * x[2]
        elif op == "addcdiv":
            r = x[0] + (a_ * x[1]) / x[2]
        return np.asarray(r).astype(A).astype(NP[t])


def round_to(q, dtype):
    """The exact rational q rounded to the nearest value of a binary float type, ties to even (no double
    rounding through float64 on the way)."""
    f = dtype(float(q))
    cands = [np.nextafter(f, dtype(-np.inf)), f, np.nextafter(f, dtype(np.inf))]
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(np.array(c).view(bits)) & 1))


def fused_ref(op, t, xs, a):
    """cadd / addcmul with their last multiply and add rounded once: what NVRTC's default contraction into a
    fused multiply-add computes (nvcc built cutorch's kernels the same way)."""
    A = ACC[t]
    x, y = np.asarray(xs[0]).astype(A), np.asarray(xs[1]).astype(A)
    if op == "cadd":
        m, z = np.full_like(y, A(a)), y
    else:
        m, z = (A(a) * y).astype(A), np.asarray(xs[2]).astype(A)
    out = [round_to(Fraction(float(xi)) + Fraction(float(mi)) * Fraction(float(zi)), A)
           for xi, mi, zi in zip(x.reshape(-1), m.reshape(-1), z.reshape(-1))]
    return np.array(out, A).reshape(x.shape).astype(NP[t])


POINTWISE = [("adds", 1, True), ("muls", 1, True), ("divs", 1, False), ("pows", 1, False), ("clamp", 1, True),
             ("sqrt", 1, False), ("rsqrt", 1, False), ("exp", 1, False), ("log", 1, False), ("abs", 1, False),
             ("neg", 1, False), ("sign", 1, False), ("tanh", 1, False), ("sigmoid", 1, False),
             ("cadd", 2, True), ("cmul", 2, True), ("cdiv", 2, False), ("addcmul", 3, False),
             ("addcdiv", 3, False)]


@pytest.mark.parametrize("op,arity,ints", POINTWISE, ids=[p[0] for p in POINTWISE])
def test_pointwise_against_numpy(dev, rng, op, arity, ints):
    for t in FLOATS + (INTS if ints else []):
        shape = rand_shape(rng)
        positive = op in ("sqrt", "rsqrt", "log", "pows")
        lo, hi = (0.1, 4) if positive else (-4, 4)
        if t in INTS:
            lo, hi = (0, 9) if t == "Byte" else (-9, 9)
        xs = [values(rng, t, shape, lo, hi) for _ in range(arity)]
        if op in ("cdiv", "addcdiv"):
            xs[-1] = np.where(np.abs(xs[-1].astype(np.float64)) < 0.5, NP[t](1.5), xs[-1]).astype(NP[t])
        a, b = (float(rng.uniform(0.5, 2)), 0.0) if t in FLOATS else (float(rng.integers(1, 4)), 0.0)
        if op == "clamp":
            a, b = (-1.5, 2.25) if t in FLOATS else (-2, 3)
            if t == "Byte":
                a, b = 2, 5
        kinds = [LAYOUTS[int(rng.integers(4))] for _ in range(arity)]
        views = [make_input(k, x, x.dtype)[::2] for k, x in zip(kinds, xs)]  # (view, base) each
        okind = ["contig", "transposed", "narrowed"][int(rng.integers(3))]
        ob, ov, ov_mask = make_output(okind, shape, NP[t])
        ins = [dev.tensor(v, bb) for v, bb in views] + [ffi.NULL] * (3 - arity)
        dev.call("pointwise", op.encode(), dev.tensor(ov, ob), *ins, a, b)
        want = pointwise_ref(op, t, [v for v, _ in views], a, b)
        where = "%s %s x%s -> %s" % (op, t, kinds, okind)
        if op in ("cadd", "addcmul") and t in FLOATS:
            # on a GPU x + a*y is one fused multiply-add; NumPy and the emulator round twice: either, per element
            fused = fused_ref(op, t, [v for v, _ in views], a)
            got = ov.astype(np.float64)
            assert ((got == want.astype(np.float64)) | (got == fused.astype(np.float64))).all(), where
        elif op in EXACT or t in INTS:
            assert np.array_equal(ov.astype(np.float64), want.astype(np.float64)), where
        else:
            tol = {"Float": 4e-7, "Double": 1e-15, "Half": 1e-3}[t]
            err = np.abs(ov.astype(np.float64) - want.astype(np.float64)) / np.maximum(1, np.abs(want.astype(np.float64)))
            assert err.max() <= tol * 8, (where, err.max())
        assert_untouched(ob, ov_mask)
        assert dev.launches[-1][1] == "lt_%s_%s_i32" % (op, t)


def test_pointwise_in_place_and_errors(dev, rng):
    x = values(rng, "Float", (5, 7))
    want = x * np.float32(3)
    t = dev.tensor(x)
    dev.call("pointwise", b"muls", t, t, ffi.NULL, ffi.NULL, 3.0, 0.0)
    assert np.array_equal(x, want)
    i = np.arange(6, dtype=np.int32)
    with pytest.raises(RuntimeError, match="not defined for Int tensors"):
        dev.call("pointwise", b"sqrt", dev.tensor(i), dev.tensor(i), ffi.NULL, ffi.NULL, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="no operation 'frobnicate'"):
        dev.call("pointwise", b"frobnicate", dev.tensor(x), dev.tensor(x), ffi.NULL, ffi.NULL, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="the second input is missing"):
        dev.call("pointwise", b"cmul", dev.tensor(x), dev.tensor(x), ffi.NULL, ffi.NULL, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="the first input is a Double tensor, the output a Float one"):
        dev.call("pointwise", b"exp", dev.tensor(x), dev.tensor(x.astype(np.float64)), ffi.NULL, ffi.NULL, 0, 0)
    with pytest.raises(RuntimeError, match="has 34 elements"):
        dev.call("pointwise", b"exp", dev.tensor(x), dev.tensor(np.zeros(34, np.float32)), ffi.NULL, ffi.NULL, 0, 0)


def test_a_failing_launch_is_an_error_not_a_silent_skip(dev):
    # a refusal, the host layer's or the launcher's, reaches the caller with its text
    x = np.zeros(4, np.float16)
    with pytest.raises(RuntimeError, match="not defined for Long"):
        dev.call("pointwise", b"exp", dev.tensor(np.zeros(4, np.int64)), dev.tensor(np.zeros(4, np.int64)),
                 ffi.NULL, ffi.NULL, 0, 0)
    threads = dev.ops.threads_per_block
    dev.ops.threads_per_block = 48
    with pytest.raises(RuntimeError, match="multiple of 32"):
        dev.call("fill", dev.tensor(x), 1.0)
    dev.ops.threads_per_block = threads
    saved = dev.ops.launch
    dev.ops.launch = ffi.NULL
    with pytest.raises(RuntimeError, match="no launcher"):
        dev.call("fill", dev.tensor(x), 1.0)
    dev.ops.launch = saved


# ----------------------------------------------------------------------------- reductions
def sum_bound(t, x):
    eps = {"Float": 2.0 ** -24, "Half": 2.0 ** -24, "Double": 2.0 ** -53}.get(t, 0)
    return eps * (x.size + 16) * np.abs(x.astype(np.float64)).sum() + 1e-30


@pytest.mark.parametrize("t", TYPES)
def test_reduce_all_elements(dev, rng, t):
    ops = ["sum", "prod", "max", "min"] + (["mean", "sumsq", "norm"] if t in FLOATS else [])
    for op in ops:
        shape = rand_shape(rng, hi=9)
        lo, hi = (-3, 3) if op != "prod" else (1, 2)
        if t == "Byte":
            lo = max(lo, 0)
        x = values(rng, t, shape, lo, hi)
        if op == "prod" and t in FLOATS:
            x = rng.uniform(0.9, 1.1, shape).astype(NP[t])
        kind = LAYOUTS[int(rng.integers(4))]
        xv, _, xb = make_input(kind, x, x.dtype)
        res = ffi.new("double *")
        p = float(rng.choice([1, 2, 3, 0, np.inf])) if op == "norm" else 0.0
        dev.call("reduce", op.encode(), dev.tensor(xv, xb), p, res)
        v = np.asarray(xv).astype(np.float64 if t in FLOATS else np.int64)
        if op == "sum":
            want = v.sum()
        elif op == "prod":
            want = np.prod(v) if t in FLOATS else int(np.prod(v.astype(np.int64)))
        elif op == "max":
            want = v.max()
        elif op == "min":
            want = v.min()
        elif op == "mean":
            want = v.mean()
        elif op == "sumsq":
            want = (v * v).sum()
        else:
            want = (np.count_nonzero(v) if p == 0 else np.abs(v).max() if p == np.inf
                    else (np.abs(v) ** p).sum() ** (1 / p))
        where = "%s %s %s %s p=%g" % (op, t, kind, shape, p)
        if t in INTS or op in ("max", "min"):
            assert res[0] == want, where
        else:
            scale = np.abs(v).sum() if op in ("sum", "mean") else abs(want) * v.size
            tol = {"Float": 2.0 ** -24, "Half": 2.0 ** -24, "Double": 2.0 ** -53}[t] * (v.size + 16) * 4
            assert abs(res[0] - want) <= tol * max(scale, 1e-30) + 1e-300, (where, res[0], want)
    fam = {n.split("_")[1] for _, n, _, _, _ in dev.launches}
    assert fam == {"reduce"}


def test_reduce_errors(dev):
    e = dev.tensor(np.zeros((0, 4), np.float32))
    res = ffi.new("double *")
    for op in (b"max", b"min", b"mean"):
        with pytest.raises(RuntimeError, match="no elements"):
            dev.call("reduce", op, e, 0.0, res)
    dev.call("reduce", b"sum", e, 0.0, res)
    assert res[0] == 0
    dev.call("reduce", b"prod", e, 0.0, res)
    assert res[0] == 1
    with pytest.raises(RuntimeError, match="not defined for Int"):
        dev.call("reduce", b"norm", dev.tensor(np.ones(3, np.int32)), 2.0, res)


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "max", "min"])
def test_reduce_along_a_dimension(dev, rng, op):
    types = FLOATS if op == "mean" else TYPES
    for t in types:
        for form in ("thread", "block"):
            nd = int(rng.integers(1, 4))
            shape = list(rand_shape(rng, nd))
            dim = int(rng.integers(nd))
            kind = LAYOUTS[int(rng.integers(3))]  # contig, transposed, narrowed
            threads = dev.ops.threads_per_block
            if form == "block":  # a dimension of stride 1 and at least a block's threads long: a block per slice
                kind, dim = "contig", nd - 1
                shape[dim] = int(rng.integers(threads, threads + 136))
            shape = tuple(shape)
            if op in ("max", "min"):  # small integers: ties, the first must win
                x = values(rng, t, shape, 0, 4)
            elif op == "prod":
                x = values(rng, t, shape, 1, 2) if t in INTS else rng.uniform(0.9, 1.1, shape).astype(NP[t])
            else:
                x = values(rng, t, shape, 0 if t == "Byte" else -5, 5)
            xv, _, xb = make_input(kind, x, x.dtype)
            oshape = tuple(1 if i == dim else s for i, s in enumerate(shape))
            ob, ov, ov_mask = make_output("contig", oshape, NP[t])
            args = [dev.tensor(ov, ob)]
            if op in ("max", "min"):
                ib, iv, _ = make_output("contig", oshape, np.int64)
                args.append(dev.tensor(iv, ib))
            else:
                args.append(ffi.NULL)
            dev.call("reduce_dim", op.encode(), *args, dev.tensor(xv, xb), dim)
            kernel = [n for _, n, _, _, _ in dev.launches if n.startswith("lt_reduce_dim")][-1]
            assert kernel.startswith("lt_reduce_dimblk_" if form == "block" else "lt_reduce_dim_")
            v = np.asarray(xv)
            where = "%s %s %s dim %d %s" % (op, t, shape, dim, kind)
            if op in ("max", "min"):
                want_i = (np.argmax if op == "max" else np.argmin)(v, axis=dim)
                assert np.array_equal(iv.reshape(want_i.shape), want_i + 1), where
                want = (np.max if op == "max" else np.min)(v, axis=dim, keepdims=True)
                assert np.array_equal(ov, want), where
            elif t in INTS:
                A = v.astype(np.int64)
                want = (A.sum(dim, keepdims=True) if op == "sum" else A.prod(dim, keepdims=True)).astype(NP[t])
                assert np.array_equal(ov, want), where
            else:
                A = v.astype(np.float64)
                want = (A.sum(dim, keepdims=True) if op == "sum" else A.prod(dim, keepdims=True) if op == "prod"
                        else A.mean(dim, keepdims=True))
                eps = {"Float": 2.0 ** -24, "Half": 2.0 ** -11, "Double": 2.0 ** -53}[t]
                bound = eps * (shape[dim] + 8) * (np.abs(A).sum(dim, keepdims=True) + np.abs(want)) + 1e-300
                assert (np.abs(ov.astype(np.float64) - want) <= bound).all(), where
            assert_untouched(ob, ov_mask)


def test_reduce_dim_takes_the_64_bit_path_for_a_long_stride_of_the_reduced_dimension(dev):
    dev.needs_memory(2 ** 32)
    # the slices themselves start at offset 0: only the reduced dimension's stride, 2^32 (0 in 32 bits),
    # passes the 32-bit range
    x, big = sparse_pair(2 ** 32, 3, 4)
    out = np.full(1, 0x5A, np.uint8)
    dev.call("reduce_dim", b"sum", dev.tensor(out), ffi.NULL, dev.tensor(x, big), 0)
    assert out[0] == 7 and dev.launches[-1][1] == "lt_reduce_dim_sum_Byte_i64"


def test_reduce_dim_errors(dev):
    x = dev.tensor(np.zeros((3, 4), np.float32))
    out, ind = dev.tensor(np.zeros((3, 1), np.float32)), dev.tensor(np.zeros((3, 1), np.int64))
    with pytest.raises(RuntimeError, match=r"the output should be of shape \[3 x 1\]"):
        dev.call("reduce_dim", b"sum", dev.tensor(np.zeros((1, 4), np.float32)), ffi.NULL, x, 1)
    with pytest.raises(RuntimeError, match="dimension 3 out of range"):
        dev.call("reduce_dim", b"sum", out, ffi.NULL, x, 2)
    with pytest.raises(RuntimeError, match="indices must be a Long"):
        dev.call("reduce_dim", b"max", out, dev.tensor(np.zeros((3, 1), np.int32)), x, 1)
    with pytest.raises(RuntimeError, match="has no elements"):
        dev.call("reduce_dim", b"max", dev.tensor(np.zeros((3, 1), np.float32)), ind,
                 dev.tensor(np.zeros((3, 0), np.float32)), 1)


# ----------------------------------------------------------------------------- nn
def lsm_np(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


@pytest.mark.parametrize("t", FLOATS)
def test_logsoftmax_forward_backward(dev, rng, t):
    for shape, axis in (((7,), 0), ((5, 11), 1), ((4, 3, 5), 0), ((2, 6, 3, 4), 1), ((3, 70), 1)):
        x = (rng.standard_normal(shape) * 3).astype(NP[t])
        kind = ["contig", "transposed", "narrowed"][int(rng.integers(3))]
        xv, _, xb = make_input(kind, x, x.dtype)
        ob, ov, _ = make_output("contig", shape, NP[t])
        dev.call("logsoftmax_forward", dev.tensor(ov, ob), dev.tensor(xv, xb))
        ref = lsm_np(np.asarray(xv), axis)
        tol = {"Float": 2e-6, "Double": 1e-13, "Half": 2e-3}[t]
        assert np.abs(ov.astype(np.float64) - ref).max() <= tol * (1 + np.abs(ref).max()), (t, shape, kind)
        g = rng.standard_normal(shape).astype(NP[t])
        gv, _, gb = make_input(["contig", "transposed"][int(rng.integers(2))], g, g.dtype)
        gib, giv, _ = make_output("contig", shape, NP[t])
        dev.call("logsoftmax_backward", dev.tensor(giv, gib), dev.tensor(gv, gb), dev.tensor(ov, ob))
        o = ov.astype(np.float64)
        gref = np.asarray(gv).astype(np.float64) - np.exp(o) * np.asarray(gv).astype(np.float64).sum(axis, keepdims=True)
        assert np.abs(giv.astype(np.float64) - gref).max() <= tol * 10 * (1 + np.abs(gref).max()), (t, shape)
    spatial = [n for _, n, _, _, _ in dev.launches if "spatial" in n]
    assert spatial, "3-D and 4-D inputs take the spatial kernels"


def test_logsoftmax_errors(dev):
    x = dev.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="should be a Float tensor of shape"):
        dev.call("logsoftmax_forward", dev.tensor(np.zeros((3, 2), np.float32)), x)
    with pytest.raises(RuntimeError, match="must be contiguous"):
        dev.call("logsoftmax_forward", dev.tensor(np.zeros((3, 2), np.float32).T), x)
    with pytest.raises(RuntimeError, match="1D, 2D, 3D or 4D"):
        dev.call("logsoftmax_forward", dev.tensor(np.zeros((1,) * 5, np.float32)),
                 dev.tensor(np.zeros((1,) * 5, np.float32)))
    with pytest.raises(RuntimeError, match="not defined for Int"):
        i = dev.tensor(np.zeros((2, 3), np.int32))
        dev.call("logsoftmax_forward", i, i)


@pytest.mark.parametrize("t", FLOATS)
def test_classnll_forward_backward(dev, rng, t):
    for batch, classes, weighted, avg in ((1, 5, False, 1), (37, 6, True, 1), (70, 3, True, 0), (9, 10, False, 0)):
        logp = np.log(rng.dirichlet(np.ones(classes), size=batch)).astype(NP[t])
        target = rng.integers(1, classes, batch, endpoint=True).astype(np.int64)
        target[rng.random(batch) < 0.2] = -100  # ignore_index
        w = rng.uniform(0.5, 2, classes).astype(NP[t]) if weighted else None
        x = logp[0] if batch == 1 and rng.integers(2) else logp
        tv, _, tb = make_input(["contig", "transposed"][int(rng.integers(2))], target, target.dtype)
        xv, _, xb = make_input(["contig", "narrowed"][int(rng.integers(2))], x, x.dtype)
        loss, tw = ffi.new("double *"), ffi.new("double *")
        wt = dev.tensor(w) if weighted else ffi.NULL
        dev.call("classnll_forward", dev.tensor(xv, xb), dev.tensor(tv, tb), wt, avg, -100, loss, tw)
        ww = w.astype(np.float64) if weighted else np.ones(classes)
        keep = target != -100
        terms = np.array([ww[c - 1] * logp.astype(np.float64)[i, c - 1] for i, c in enumerate(target) if c != -100])
        want_tw = ww[target[keep] - 1].sum()
        want = -terms.sum() / (want_tw if avg and want_tw else 1)
        eps = 2.0 ** -53 if t == "Double" else 2.0 ** -24
        assert abs(tw[0] - want_tw) <= eps * batch * 4 * want_tw + 1e-300, (t, batch)
        assert abs(loss[0] - want) <= eps * (batch + 4) * 4 * (np.abs(terms).sum() + 1), (t, batch, loss[0], want)
        gb, gv, _ = make_output("contig", x.shape, NP[t])
        dev.call("classnll_backward", dev.tensor(gv, gb), dev.tensor(tv, tb), wt, avg, -100, tw[0])
        g = np.zeros((batch, classes))
        for i, c in enumerate(target):
            if c != -100:
                g[i, c - 1] = -ww[c - 1] / (tw[0] if avg else 1)
        assert np.abs(gv.reshape(batch, classes).astype(np.float64) - g).max() <= (
            1e-3 if t == "Half" else 1e-6 if t == "Float" else 1e-14), (t, batch)


def test_classnll_names_a_bad_target(dev):
    x = dev.tensor(np.zeros((4, 3), np.float32))
    loss, tw = ffi.new("double *"), ffi.new("double *")
    tgt = np.array([1, 3, 7, 0], np.int64)
    with pytest.raises(RuntimeError, match=r"target 7 of sample 3 is out of range 1\.\.3"):
        dev.call("classnll_forward", x, dev.tensor(tgt), ffi.NULL, 1, -100, loss, tw)
    with pytest.raises(RuntimeError, match="3 targets for a batch of 4"):
        dev.call("classnll_forward", x, dev.tensor(tgt[:3]), ffi.NULL, 1, -100, loss, tw)
    with pytest.raises(RuntimeError, match="target should be a Long"):
        dev.call("classnll_forward", x, dev.tensor(tgt.astype(np.int32)), ffi.NULL, 1, -100, loss, tw)
    with pytest.raises(RuntimeError, match="weights should be a Float tensor of 3 elements"):
        dev.call("classnll_forward", x, dev.tensor(np.ones(4, np.int64)), dev.tensor(np.ones(2, np.float32)), 1,
                 -100, loss, tw)


@pytest.mark.parametrize("t", FLOATS)
def test_dropout_forward_backward(dev, rng, t):
    for v1 in (0, 1):
        shape = rand_shape(rng, 3, 9)
        x = rng.uniform(-2, 2, shape).astype(NP[t])
        xv, _, xb = make_input(LAYOUTS[int(rng.integers(4))], x, x.dtype)
        ob, ov, _ = make_output(["contig", "transposed"][int(rng.integers(2))], shape, NP[t])
        noise = np.full(x.size, poison_value(NP[t]), NP[t]).reshape(shape)
        p = float(rng.uniform(0.1, 0.7))
        seed, offset = int(rng.integers(0, 2 ** 63)), int(rng.integers(0, 2 ** 40))
        dev.call("dropout_forward", dev.tensor(ov, ob), dev.tensor(xv, xb), dev.tensor(noise), p, v1, seed, offset)
        kept = dropout_draws(seed, offset, x.size) < np.uint64(dropout_threshold(p))
        keep = NP[t](1.0 if v1 else 1.0 / (1.0 - p))
        want_noise = np.where(kept, keep, NP[t](0)).astype(NP[t])
        assert np.array_equal(noise.reshape(-1), want_noise), (t, v1)
        A = ACC[t]
        want = (np.asarray(xv).reshape(-1).astype(A) * want_noise.astype(A)).astype(NP[t]).reshape(shape)
        assert np.array_equal(ov, want), (t, v1)
        g = rng.standard_normal(shape).astype(NP[t])
        gib, giv, _ = make_output("contig", shape, NP[t])
        dev.call("dropout_backward", dev.tensor(giv, gib), dev.tensor(g), dev.tensor(noise))
        assert np.array_equal(giv, (g.reshape(-1).astype(A) * want_noise.astype(A)).astype(NP[t]).reshape(shape))
    # a stream continues where it stopped: offsets n1.. after n1 elements give one run's noise
    n1, n2 = 13, 30
    x = np.ones(n1 + n2, NP[t])
    whole = np.zeros_like(x)
    parts = np.zeros_like(x)
    out = np.zeros_like(x)
    dev.call("dropout_forward", dev.tensor(out), dev.tensor(x), dev.tensor(whole), 0.5, 1, 99, 5)
    dev.call("dropout_forward", dev.tensor(out[:n1]), dev.tensor(x[:n1]), dev.tensor(parts[:n1]), 0.5, 1, 99, 5)
    dev.call("dropout_forward", dev.tensor(out[n1:]), dev.tensor(x[n1:]), dev.tensor(parts[n1:]), 0.5, 1, 99, 5 + n1)
    assert np.array_equal(whole, parts)


def test_dropout_errors(dev):
    x = dev.tensor(np.zeros(8, np.float32))
    with pytest.raises(RuntimeError, match="probability 1 is not in"):
        dev.call("dropout_forward", x, x, dev.tensor(np.zeros(8, np.float32)), 1.0, 0, 1, 0)
    with pytest.raises(RuntimeError, match="noise must be contiguous"):
        dev.call("dropout_forward", x, x, dev.tensor(np.zeros(16, np.float32)[::2]), 0.5, 0, 1, 0)
    with pytest.raises(RuntimeError, match="the noise is a Double tensor"):
        dev.call("dropout_forward", x, x, dev.tensor(np.zeros(8, np.float64)), 0.5, 0, 1, 0)


def test_every_launch_packs_the_kernels_own_signature(dev, rng):
    """The emulator refuses a launch whose argument kinds differ from the kernel's: every launch of the
    tests above went through that check; here, once more for a mix, and the allocator ends empty."""
    x = values(rng, "Double", (6, 5))
    res = ffi.new("double *")
    dev.call("reduce", b"norm", dev.tensor(x), 3.0, res)
    sigs = {(n, s) for _, n, s, _, _ in dev.launches}
    assert ("lt_reduce_norm_Double_i32", "S144,q,d,p") in sigs
    assert ("lt_reduce_finish_norm_Double", "p,q,d,p") in sigs
    st = dev.close()
    assert st.active_blocks == 0 and st.allocs >= 1
    dev.close = lambda: st  # the fixture's close: already done


# ----------------------------------------------------------------------------- matrix products
MATRIX_LAYOUTS = ["contig", "transposed", "narrowed", "expanded"]   # row-major, column-major, neither, stride 0


@pytest.mark.parametrize("t", ["Float", "Double"])
def test_addmm_against_numpy(dev, rng, t):
    """out = beta m + alpha a b for every layout of each operand (BLAS reads row- and column-major ones as they
    lie, others through copies; a row-major out as the transposed product), out the same tensor as m or not,
    beta 0 over NaN, sizes of 1 (whose strides BLAS must not see)."""
    dt = NP[t]
    for trial in range(24):
        r, k, c = (int(v) for v in rng.integers(1, 9, 3))
        if trial % 6 == 5:
            r, c = (1, c) if trial % 12 == 5 else (r, 1)
        a = rng.uniform(-2, 2, (r, k)).astype(dt)
        b = rng.uniform(-2, 2, (k, c)).astype(dt)
        m = rng.uniform(-2, 2, (r, c)).astype(dt)
        ka, kb, km = (MATRIX_LAYOUTS[int(rng.integers(4))] for _ in range(3))
        av, _, abase = make_input(ka, a, dt)
        bv, _, bbase = make_input(kb, b, dt)
        mv, _, mbase = make_input(km if km != "expanded" else "contig", m, dt)
        alpha = float(rng.uniform(-2, 2))
        beta = [0.0, 1.0, float(rng.uniform(-2, 2))][trial % 3]
        in_place = trial % 4 == 0
        if beta == 0:
            mv[...] = np.nan   # BLAS does not read C when beta is 0
        want = alpha * (np.asarray(av).astype(np.float64) @ np.asarray(bv).astype(np.float64))
        if beta != 0:
            want = want + beta * mv.astype(np.float64)
        if in_place:
            ov, ob, mask = mv, mbase, None
            mt = ot = dev.tensor(mv, mbase)
        else:
            ko = ["contig", "transposed", "narrowed"][int(rng.integers(3))]
            ob, ov, mask = make_output(ko, (r, c), dt)
            mt, ot = dev.tensor(mv, mbase), dev.tensor(ov, ob)
        dev.call("addmm", ot, beta, mt, alpha, dev.tensor(av, abase), dev.tensor(bv, bbase))
        eps = 2.0 ** -24 if t == "Float" else 2.0 ** -53
        bound = eps * (k + 3) * 2 * (abs(alpha) * np.abs(np.asarray(av)).astype(np.float64) @ np.abs(np.asarray(bv))
                                     + (abs(beta) * np.abs(mv.astype(np.float64)) if beta else 0) + 1e-30)
        where = (t, (r, k, c), ka, kb, km, in_place, beta)
        assert np.isfinite(ov).all(), where
        assert (np.abs(ov.astype(np.float64) - want) <= bound).all(), where
        if mask is not None:
            assert_untouched(ob, mask)


def test_addmm_reads_row_and_column_major_operands_without_copies(emu):
    """The layouts BLAS can read go to gemm as they lie: no copy kernel runs; a row-major result is the
    transposed product (gemm sees c x r)."""
    dev = emu
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(20, dtype=np.float32).reshape(4, 5)
    out = np.zeros((3, 5), np.float32)
    dev.call("addmm", dev.tensor(out), 0.0, dev.tensor(out), 1.0, dev.tensor(a), dev.tensor(b))
    assert np.array_equal(out, a @ b)
    assert dev.gemms[-1] == ("n", "n", 5, 3, 4, 5, 4, 5) and not dev.launches
    fa, fb, fo = np.asfortranarray(a), np.asfortranarray(b), np.zeros((5, 3), np.float32).T
    dev.call("addmm", dev.tensor(fo, fo.base), 0.0, dev.tensor(fo, fo.base), 1.0, dev.tensor(fa), dev.tensor(fb))
    assert np.array_equal(fo, a @ b) and dev.gemms[-1] == ("n", "n", 3, 5, 4, 3, 4, 3) and not dev.launches
    dev.call("addmm", dev.tensor(out), 0.0, dev.tensor(out), 1.0, dev.tensor(fa), dev.tensor(b))
    assert dev.gemms[-1][:2] == ("n", "t") and not dev.launches
    # a view that is neither: copied first
    wide = np.zeros((3, 8), np.float32)
    wide[:, ::2] = a
    dev.call("addmm", dev.tensor(out), 0.0, dev.tensor(out), 1.0, dev.tensor(wide[:, ::2], wide), dev.tensor(b))
    assert np.array_equal(out, a @ b) and dev.launches and dev.launches[-1][1].startswith("lt_copy_Float_Float")


def test_addmm_with_no_products_and_errors(dev):
    m = np.full((2, 3), 2.0, np.float32)
    out = np.zeros((2, 3), np.float32)
    dev.call("addmm", dev.tensor(out), 1.5, dev.tensor(m), 1.0, dev.tensor(np.zeros((2, 0), np.float32)),
             dev.tensor(np.zeros((0, 3), np.float32)))
    assert np.array_equal(out, np.full((2, 3), 3.0, np.float32))
    dev.call("addmm", dev.tensor(out), 0.0, dev.tensor(m), 1.0, dev.tensor(np.zeros((2, 0), np.float32)),
             dev.tensor(np.zeros((0, 3), np.float32)))
    assert not out.any()
    x = dev.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"size mismatch, m1: \[2 x 3\], m2: \[2 x 3\]"):
        dev.call("addmm", x, 1.0, x, 1.0, x, x)
    with pytest.raises(RuntimeError, match="matrices expected, got 1D, 2D"):
        dev.call("addmm", x, 1.0, x, 1.0, dev.tensor(np.zeros(3, np.float32)), x)
    with pytest.raises(RuntimeError, match="should be \\[2 x 2\\]"):
        dev.call("addmm", x, 1.0, x, 1.0, x, dev.tensor(np.zeros((3, 2), np.float32)))
    with pytest.raises(RuntimeError, match="every operand must be a Float tensor, not Double"):
        dev.call("addmm", x, 1.0, x, 1.0, x, dev.tensor(np.zeros((3, 3), np.float64)))
    i = dev.tensor(np.zeros((2, 2), np.int32))
    with pytest.raises(RuntimeError, match="not defined for Int"):
        dev.call("addmm", i, 1.0, i, 1.0, i, i)
    saved = dev.ops.gemm
    dev.ops.gemm = ffi.NULL
    with pytest.raises(RuntimeError, match="no matrix product on this device"):
        dev.call("addmm", x, 1.0, x, 1.0, x, dev.tensor(np.zeros((3, 3), np.float32)))
    dev.ops.gemm = saved


# ----------------------------------------------------------------------------- cunn's modules (cuda_nn.c)
def torch64(a):
    import torch
    return torch.from_numpy(np.array(a, dtype=np.float64))


@pytest.mark.parametrize("t", ["Float", "Double"])
def test_softmax_forward_backward(dev, rng, t):
    import torch.nn.functional as F
    for shape, axis in (((7,), 0), ((5, 11), 1), ((4, 3, 5), 0), ((2, 6, 3, 4), 1)):
        x = (rng.standard_normal(shape) * 3).astype(NP[t])
        xv, _, xb = make_input(["contig", "transposed", "narrowed"][int(rng.integers(3))], x, x.dtype)
        ob, ov, _ = make_output("contig", shape, NP[t])
        dev.call("softmax_forward", dev.tensor(ov, ob), dev.tensor(xv, xb))
        xs = torch64(xv).requires_grad_()
        ref = F.softmax(xs, dim=axis)
        tol = {"Float": 2e-6, "Double": 1e-13}[t]
        assert np.abs(ov - ref.detach().numpy()).max() <= tol, (t, shape)
        g = rng.standard_normal(shape).astype(NP[t])
        gv, _, gb = make_input("transposed", g, g.dtype)
        gib, giv, _ = make_output("contig", shape, NP[t])
        dev.call("softmax_backward", dev.tensor(giv, gib), dev.tensor(gv, gb), dev.tensor(ov, ob))
        ref.backward(torch64(gv))
        assert np.abs(giv - xs.grad.numpy()).max() <= 10 * tol * (1 + np.abs(np.asarray(gv)).sum()), (t, shape)
    names = {n for _, n, _, _, _ in dev.launches}
    assert {"lt_softmax_fwd_" + t, "lt_softmax_spatial_bwd_" + t} <= names
    assert not [n for n in names if "logsoftmax" in n]


def test_batchnorm_non_contiguous_input_and_errors(dev, rng):
    import torch
    import torch.nn.functional as F
    x = rng.standard_normal((6, 3, 4, 5))
    xv, _, xb = make_input("transposed", x, np.float64)  # (6, 3, 4, 5) over a reversed layout
    w, b = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    rm, rv, sm, ss = np.zeros(3), np.ones(3), np.full(3, np.nan), np.full(3, np.nan)
    ob, ov, _ = make_output("contig", x.shape, np.float64)
    T = dev.tensor
    dev.call("batchnorm_forward", T(ov, ob), T(xv, xb), T(w), T(b), T(rm), T(rv), T(sm), T(ss), 1, 0.2, 1e-5)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ref = F.batch_norm(torch64(xv), trm, trv, torch64(w), torch64(b), training=True, momentum=0.2, eps=1e-5)
    np.testing.assert_allclose(ov, ref.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rm, trm.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rv, trv.numpy(), rtol=1e-12)
    gib, giv, _ = make_output("contig", x.shape, np.float64)
    gv, _, gb = make_input("narrowed", rng.standard_normal(x.shape), np.float64)
    gw, gbias = np.zeros(3), np.zeros(3)
    dev.call("batchnorm_backward", T(xv, xb), T(gv, gb), T(giv, gib), T(gw), T(gbias), T(w), T(rm), T(rv), T(sm),
             T(ss), 1, 1.0, 1e-5)
    xs, ws, bs = (torch64(v).requires_grad_() for v in (xv, w, b))
    F.batch_norm(xs, None, None, ws, bs, training=True, eps=1e-5).backward(torch64(gv))
    np.testing.assert_allclose(giv, xs.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, ws.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gbias, bs.grad.numpy(), rtol=1e-10, atol=1e-12)
    fwd = lambda *a: dev.call("batchnorm_forward", *a)  # noqa: E731
    x2, o2 = T(np.zeros((4, 3))), T(np.zeros((4, 3)))
    with pytest.raises(RuntimeError, match="save_mean is needed"):
        fwd(o2, x2, ffi.NULL, ffi.NULL, T(np.zeros(3)), T(np.ones(3)), ffi.NULL, ffi.NULL, 1, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_var is needed"):
        fwd(o2, x2, ffi.NULL, ffi.NULL, T(np.zeros(3)), ffi.NULL, ffi.NULL, ffi.NULL, 0, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="weight should be a Double tensor of 3 elements"):
        fwd(o2, x2, T(np.ones(4)), ffi.NULL, T(np.zeros(3)), T(np.ones(3)), ffi.NULL, ffi.NULL, 0, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean must be contiguous"):
        fwd(o2, x2, ffi.NULL, ffi.NULL, T(np.zeros(6)[::2]), T(np.ones(3)), T(np.zeros(3)), T(np.zeros(3)), 1, 0.1,
            1e-5)
    with pytest.raises(RuntimeError, match="the output should be a Double tensor of shape"):
        fwd(T(np.zeros((3, 4))), x2, ffi.NULL, ffi.NULL, T(np.zeros(3)), T(np.ones(3)), ffi.NULL, ffi.NULL, 0, 0.1, 1)
    with pytest.raises(RuntimeError, match="2D or 4D input tensor expected"):
        fwd(T(np.zeros(3)), T(np.zeros(3)), ffi.NULL, ffi.NULL, T(np.zeros(3)), T(np.ones(3)), ffi.NULL, ffi.NULL, 0,
            0.1, 1)
    with pytest.raises(RuntimeError, match="gradOutput .* should be a Double tensor of the input's size"):
        dev.call("batchnorm_backward", x2, T(np.zeros((4, 2))), ffi.NULL, T(np.zeros(3)), ffi.NULL, ffi.NULL,
                 T(np.zeros(3)), T(np.ones(3)), ffi.NULL, ffi.NULL, 0, 1.0, 1e-5)


def test_pooling_non_contiguous_input_and_errors(dev, rng):
    import torch.nn.functional as F
    x = rng.standard_normal((2, 3, 7, 6))
    xv, _, xb = make_input("narrowed", x, np.float64)
    T = dev.tensor
    ob, ov, _ = make_output("contig", (2, 3, 4, 4), np.float64)
    ind = np.zeros((2, 3, 4, 4), np.int64)
    dev.call("maxpool_forward", T(ov, ob), T(ind), T(xv, xb), 3, 3, 2, 2, 1, 1, 1)   # kW kH dW dH padW padH ceil
    xs = torch64(xv).requires_grad_()
    y, yi = F.max_pool2d(xs, 3, 2, 1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(ov, y.detach().numpy())
    np.testing.assert_array_equal(ind, yi.numpy() + 1)
    g = rng.standard_normal(ov.shape)
    gv, _, gb = make_input("transposed", g, np.float64)
    gib, giv, _ = make_output("contig", x.shape, np.float64)
    dev.call("maxpool_backward", T(giv, gib), T(gv, gb), T(ind), T(xv, xb), 3, 3, 2, 2, 1, 1, 1)
    y.backward(torch64(gv))
    np.testing.assert_array_equal(giv, xs.grad.numpy())
    ob, ov, _ = make_output("contig", (2, 3, 4, 3), np.float64)
    dev.call("avgpool_forward", T(ov, ob), T(xv, xb), 3, 3, 2, 2, 1, 1, 0, 0)
    xs = torch64(xv).requires_grad_()
    y = F.avg_pool2d(xs, 3, 2, 1, ceil_mode=False, count_include_pad=False)
    np.testing.assert_allclose(ov, y.detach().numpy(), rtol=1e-13, atol=1e-15)
    gib, giv, _ = make_output("contig", x.shape, np.float64)
    g = rng.standard_normal(ov.shape)
    dev.call("avgpool_backward", T(giv, gib), T(g), T(xv, xb), 3, 3, 2, 2, 1, 1, 0, 0)
    y.backward(torch64(g))
    np.testing.assert_allclose(giv, xs.grad.numpy(), rtol=1e-13, atol=1e-15)
    with pytest.raises(RuntimeError, match=r"the output .* does not match the input .* pooled to 4 x 3"):
        dev.call("avgpool_forward", T(np.zeros((2, 3, 3, 4))), T(xv, xb), 3, 3, 2, 2, 1, 1, 0, 0)
    with pytest.raises(RuntimeError, match="indices must be a CudaLongTensor"):
        dev.call("maxpool_forward", T(np.zeros((2, 3, 4, 3))), T(np.zeros((2, 3, 4, 3))), T(xv, xb), 3, 3, 2, 2, 1, 1,
                 0)
    with pytest.raises(RuntimeError, match="pad should be smaller than half of kernel size"):
        dev.call("avgpool_forward", T(np.zeros((2, 3, 4, 3))), T(xv, xb), 3, 3, 2, 2, 2, 1, 0, 0)
    with pytest.raises(RuntimeError, match="3D or 4D input tensor expected"):
        dev.call("avgpool_forward", T(np.zeros((3, 3))), T(np.zeros((7, 6))), 3, 3, 2, 2, 1, 1, 0, 0)
