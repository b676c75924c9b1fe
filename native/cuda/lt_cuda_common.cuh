/* lt_cuda_common.cuh — shared definitions for luatorch's NVRTC-compiled CUDA kernels.
 *
 * Every kernel source in native/cuda/ includes this header. The sources are compiled at run time by
 * NVRTC (C++17, -I <CUDA runtime include dir> for cuda_fp16.h, -I native/cuda) and, for the host tests,
 * by g++ -std=c++20 -DLT_SIMT_HOST with tests/cuda_host/simt.h (a small SIMT emulator).
 *
 * ======================================== KERNEL ABI ========================================
 * (native/cuda/README.md has the full list of kernels; this is the contract they all follow.)
 *
 * Lookup and launch
 *   Every kernel is `extern "C" __global__`, found with cuModuleGetFunction(name) and started with
 *   cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0 shared bytes, stream, params, NULL): params[k] points
 *   at the k-th argument's value, exactly as declared (structs by value, pointers as CUdeviceptr).
 *   1-D launches only (gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1); no dynamic shared memory.
 *   Names are  lt_<op>_<Type>[_<Type2>]_<idx>  with <Type> one of the Torch7 names
 *     Byte (uint8) Char (int8, signed) Short (int16) Int (int32) Long (int64) Float Double Half (__half)
 *   and <idx> one of
 *     i32  all index arithmetic in 32-bit unsigned: use it when, for every tensor operand, n <= 2^31-1 and
 *          the largest element offset sum_d (sizes[d]-1)*strides[d] <= 2^31-1, and when
 *          gridDim.x * blockDim.x <= 2^31 (THC's fast path);
 *     i64  64-bit index arithmetic, always valid.
 *   The nn kernels (logsoftmax/softmax, classnll, batchnorm, pooling) have no <idx> suffix: they use 64-bit
 *   indices throughout.
 *
 * Tensor operand: struct lt_cu_tensor, passed BY VALUE (144 bytes, 8-byte aligned):
 *     void     *data;          device pointer to the tensor's first element (storage + offset applied)
 *     long long sizes[8];      sizes of the (collapsed) dimensions, outermost first
 *     long long strides[8];    strides in ELEMENTS (not bytes), >= 0; 0 for an expanded dimension
 *     int       dims;          1..8 (a 0-dim/one-element tensor is dims = 1, sizes[0] = 1)
 *     int       pad_;          unused, keeps the layout identical in C and C++
 *   Entries at and beyond dims are ignored. The element with linear (row-major, last dimension fastest)
 *   index i lives at data[offset(i)], offset(i) = sum_d digit_d(i) * strides[d] with the digits of i in
 *   the mixed radix sizes[]. The host may collapse dimensions that are contiguous with each other (and drop
 *   size-1 dimensions) independently per operand, because only the row-major order of the elements
 *   matters: all operands of one launch must hold the same number of elements n, and element i of
 *   each is paired with element i of the others.
 *
 * Aliasing
 *   An output may be the very same tensor as an input (same data, sizes, strides: the in-place ops of
 *   Torch7). Partial overlaps, and outputs with stride 0 (several elements at one address), are not
 *   supported.
 *
 * Scalars
 *   Counts and sizes are `long long`. Value scalars have the compute ("accumulate") type of the element
 *   type, lt_acc_t<T>: float for Float and Half, double for Double, long long for the integer types.
 *   Flags are `int` (0/1). Seeds and RNG offsets are `unsigned long long`.
 *
 * Launch geometry
 *   Elementwise kernels (copy, fill, pointwise, dropout, classnll_bwd, the thread-per-output reductions,
 *   spatial (log)softmax, pooling) use grid-stride loops: any grid >= 1 and block >= 1
 *   is correct. Kernels that reduce within a block (reduce_*, reduce_finish_*, reduce_dimblk_*, (log)softmax
 *   row kernels, classnll_fwd, the batchnorm chunk kernels) need blockDim.x a multiple of 32 and
 *   <= 1024 (warp shuffles with a full mask).
 *   reduce_finish_* and classnll_fwd use block 0 only (launch them with grid = 1).
 *
 * Conversions (copy between types, and every load/store through the compute type)
 *   integer -> integer: C conversion (two's-complement wrap-around when narrowing);
 *   float/double/half -> integer: truncation toward zero to int64, then the integer rule above (so
 *     -1.5 -> Byte gives 255, as Torch7's C casts give on x86); NaN, inf and values outside int64 give an
 *     unspecified value;
 *   -> Half: round to nearest even, directly from double (__double2half) and from float; integers go
 *     through float, which is exact for every value that does not overflow half anyway;
 *   Half -> anything: exact widening to float first.
 *
 * Index results (max/min along a dimension) are 0-based int64; the Lua side adds 1 (Torch7 is 1-based).
 * ClassNLL targets are 1-based int64 (Torch7's convention) — see classnll.cu.
 * ============================================================================================
 */
#ifndef LT_CUDA_COMMON_CUH
#define LT_CUDA_COMMON_CUH

#if defined(LT_SIMT_HOST)
#include "simt.h"
#define LT_UNROLL
#else
#include <cuda_fp16.h>
#define LT_UNROLL _Pragma("unroll")
#endif

/* Under the host emulator each kernel also registers itself by name (with its argument signature),
 * so the tests launch it through the same params-array convention as cuLaunchKernel. */
#if defined(LT_SIMT_HOST)
#define LT_EXPORT(name) static const int simt_reg_##name = simt::reg(#name, &name);
#else
#define LT_EXPORT(name)
#endif

#define LT_MAX_DIMS 8

typedef struct lt_cu_tensor {
  void *data;
  long long sizes[LT_MAX_DIMS];
  long long strides[LT_MAX_DIMS];
  int dims;
  int pad_;
} lt_cu_tensor;

#define LT_D __device__ __forceinline__

/* ---------------------------------------------------------------- type traits (no <type_traits>) */
template <typename A, typename B> struct lt_same { static const bool value = false; };
template <typename A> struct lt_same<A, A> { static const bool value = true; };

template <typename T> struct lt_is_int { static const bool value = false; };
template <> struct lt_is_int<unsigned char> { static const bool value = true; };
template <> struct lt_is_int<signed char> { static const bool value = true; };
template <> struct lt_is_int<short> { static const bool value = true; };
template <> struct lt_is_int<int> { static const bool value = true; };
template <> struct lt_is_int<long long> { static const bool value = true; };

/* compute / accumulate type */
template <typename T> struct lt_acc_of { typedef long long type; };
template <> struct lt_acc_of<float> { typedef float type; };
template <> struct lt_acc_of<double> { typedef double type; };
template <> struct lt_acc_of<__half> { typedef float type; };
template <typename T> using lt_acc_t = typename lt_acc_of<T>::type;

/* ---------------------------------------------------------------- conversions */
template <typename To, typename From>
LT_D To lt_cast(From v) {
  if constexpr (lt_same<To, From>::value) {
    return v;
  } else if constexpr (lt_same<From, __half>::value) {
    return lt_cast<To>(__half2float(v));
  } else if constexpr (lt_same<To, __half>::value) {
    if constexpr (lt_same<From, double>::value) return __double2half(v);
    else return __float2half_rn((float)v);
  } else if constexpr (lt_is_int<To>::value && !lt_is_int<From>::value) {
    return (To)(long long)v;
  } else {
    return (To)v;
  }
}

/* A value computed in double stored in T as the Float kernel stores it: rounded to lt_acc_t<T> first (float for
 * Half), so that a Half kernel's result is the Float kernel's rounded once more, to half (as THCUNN's half kernels,
 * computing in float), never the double rounded to half directly. */
template <typename T>
LT_D T lt_store(double v) {
  return lt_cast<T>((lt_acc_t<T>)v);
}

/* ---------------------------------------------------------------- limits and NaN */
template <typename A> LT_D A lt_lowest();
template <typename A> LT_D A lt_highest();
template <> LT_D float lt_lowest<float>() { return __int_as_float((int)0xff800000u); }
template <> LT_D float lt_highest<float>() { return __int_as_float(0x7f800000); }
template <> LT_D double lt_lowest<double>() { return __longlong_as_double((long long)0xfff0000000000000ull); }
template <> LT_D double lt_highest<double>() { return __longlong_as_double(0x7ff0000000000000ll); }
template <> LT_D long long lt_lowest<long long>() { return (long long)0x8000000000000000ull; }
template <> LT_D long long lt_highest<long long>() { return 0x7fffffffffffffffll; }

/* the positive quiet NaN, spelled out (NVRTC has no math.h NAN) */
LT_D double lt_nan_d() { return __longlong_as_double(0x7ff8000000000000ll); }
template <typename A> LT_D bool lt_isnan(A) { return false; }
LT_D bool lt_isnan(float x) { return x != x; }
LT_D bool lt_isnan(double x) { return x != x; }

/* ---------------------------------------------------------------- math on the compute types */
LT_D float lt_m_sqrt(float x) { return sqrtf(x); }
LT_D double lt_m_sqrt(double x) { return sqrt(x); }
LT_D float lt_m_rsqrt(float x) { return rsqrtf(x); }
LT_D double lt_m_rsqrt(double x) { return rsqrt(x); }
LT_D float lt_m_exp(float x) { return expf(x); }
LT_D double lt_m_exp(double x) { return exp(x); }
LT_D float lt_m_log(float x) { return logf(x); }
LT_D double lt_m_log(double x) { return log(x); }
LT_D float lt_m_tanh(float x) { return tanhf(x); }
LT_D double lt_m_tanh(double x) { return tanh(x); }
LT_D float lt_m_pow(float x, float y) { return powf(x, y); }
LT_D double lt_m_pow(double x, double y) { return pow(x, y); }
LT_D float lt_m_abs(float x) { return fabsf(x); }
LT_D double lt_m_abs(double x) { return fabs(x); }
LT_D long long lt_m_abs(long long x) { return x < 0 ? -x : x; }

/* ---------------------------------------------------------------- index math */
/* Offset (in elements) of the element with row-major linear index i. I is unsigned int (i32 kernels)
 * or unsigned long long (i64 kernels). The loop is unrolled over LT_MAX_DIMS so that sizes[]/strides[]
 * are read at constant indices straight from the kernel parameters. */
template <typename I>
LT_D I lt_offset(const lt_cu_tensor t, I i) {
  if (t.dims == 1) return i * (I)t.strides[0];
  I off = 0;
  LT_UNROLL
  for (int d = LT_MAX_DIMS - 1; d >= 1; --d) {
    if (d < t.dims) {
      const I s = (I)t.sizes[d];
      const I q = i / s;
      off += (i - q * s) * (I)t.strides[d];
      i = q;
    }
  }
  return off + i * (I)t.strides[0];
}

typedef unsigned int lt_i32;
typedef unsigned long long lt_i64;

/* grid-stride loop over [0, n) */
#define LT_GRID_LOOP(I, i, n)                                                       \
  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)(n);             \
       i += (I)blockDim.x * (I)gridDim.x)

/* The loop over [0, n) of an elementwise kernel: value(i) reads (and computes) element i, put(i, v) writes or
 * accumulates it; each thread visits the plain loop's elements in the plain loop's order.
 * Flat (every operand one run of equally spaced elements, dims == 1 after the host merged dimensions): four
 * elements per iteration (i, i + s, i + 2s, i + 3s; s the grid's thread count), all four read before any is
 * written, so each thread keeps four memory requests in flight where the plain loop keeps one. At full
 * occupancy a memory-bound kernel needs that to approach the device's bandwidth (docs/results/cuda.md,
 * measured on an H200). Other layouts keep the plain loop: their index arithmetic is the larger cost, and
 * unrolling it four times would quadruple their code. */
template <bool Flat, typename I>
LT_D I lt_off(const lt_cu_tensor &t, I i) {
  if constexpr (Flat) return i * (I)t.strides[0];
  else return lt_offset<I>(t, i);
}

template <bool Flat, typename I, typename Value, typename Put>
LT_D void lt_elementwise(long long n, Value value, Put put) {
  if constexpr (Flat) {
    const long long s = (long long)blockDim.x * (long long)gridDim.x;
    long long i = (long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x;
    for (; i + 3 * s < n; i += 4 * s) {
      const auto v0 = value((I)i);
      const auto v1 = value((I)(i + s));
      const auto v2 = value((I)(i + 2 * s));
      const auto v3 = value((I)(i + 3 * s));
      put((I)i, v0);
      put((I)(i + s), v1);
      put((I)(i + 2 * s), v2);
      put((I)(i + 3 * s), v3);
    }
    for (; i < n; i += s) put((I)i, value((I)i));
  } else {
    LT_GRID_LOOP(I, i, n) put(i, value(i));
  }
}

/* Elementwise loops over strided operands: out (of type O) = f(x[, y]) with the inputs of type T loaded into the
 * compute type lt_acc_t<T>, f's result converted to O once (pointwise.cu, compare.cu). */
template <bool Flat, typename O, typename T, typename I, typename F>
LT_D void lt_map1_as(lt_cu_tensor out, lt_cu_tensor x, long long n, F f) {
  typedef lt_acc_t<T> A;
  typedef decltype(f(A())) R;
  O *po = (O *)out.data;
  const T *px = (const T *)x.data;
  lt_elementwise<Flat, I>(n, [&](I i) { return f(lt_cast<A>(px[lt_off<Flat>(x, i)])); },
                          [&](I i, R v) { po[lt_off<Flat>(out, i)] = lt_cast<O>(v); });
}

template <bool Flat, typename O, typename T, typename I, typename F>
LT_D void lt_map2_as(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, F f) {
  typedef lt_acc_t<T> A;
  typedef decltype(f(A(), A())) R;
  O *po = (O *)out.data;
  const T *px = (const T *)x.data, *py = (const T *)y.data;
  lt_elementwise<Flat, I>(
      n, [&](I i) { return f(lt_cast<A>(px[lt_off<Flat>(x, i)]), lt_cast<A>(py[lt_off<Flat>(y, i)])); },
      [&](I i, R v) { po[lt_off<Flat>(out, i)] = lt_cast<O>(v); });
}

template <typename O, typename T, typename I, typename F>
LT_D void lt_map1(lt_cu_tensor out, lt_cu_tensor x, long long n, F f) {
  if (out.dims == 1 && x.dims == 1) lt_map1_as<true, O, T, I>(out, x, n, f);
  else lt_map1_as<false, O, T, I>(out, x, n, f);
}

template <typename O, typename T, typename I, typename F>
LT_D void lt_map2(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, F f) {
  if (out.dims == 1 && x.dims == 1 && y.dims == 1) lt_map2_as<true, O, T, I>(out, x, y, n, f);
  else lt_map2_as<false, O, T, I>(out, x, y, n, f);
}

/* The kernels NAME_i32 and NAME_i64 (pointwise.cu, compare.cu) with parameter list PARAMS, each running CALL with I
 * the index type */
#define LT_PW_BOTH(NAME, PARAMS, CALL)                   \
  extern "C" __global__ void NAME##_i32 PARAMS {         \
    typedef lt_i32 I;                                    \
    CALL;                                                \
  }                                                      \
  LT_EXPORT(NAME##_i32)                                  \
  extern "C" __global__ void NAME##_i64 PARAMS {         \
    typedef lt_i64 I;                                    \
    CALL;                                                \
  }                                                      \
  LT_EXPORT(NAME##_i64)

/* ---------------------------------------------------------------- reduction operators */
struct lt_op_sum {
  template <typename A> LT_D A operator()(A a, A b) const { return a + b; }
};
struct lt_op_prod {
  template <typename A> LT_D A operator()(A a, A b) const { return a * b; }
};
/* max/min propagate NaN (Torch7's max/min do). */
struct lt_op_max {
  template <typename A> LT_D A operator()(A a, A b) const { return (a > b || lt_isnan(a)) ? a : b; }
};
struct lt_op_min {
  template <typename A> LT_D A operator()(A a, A b) const { return (a < b || lt_isnan(a)) ? a : b; }
};

/* value with its (0-based) index, for max/min along a dimension */
template <typename A> struct lt_vi {
  A v;
  long long i;
};
/* The winner: a NaN (the first one), else the larger (smaller) value, ties to the smaller index. The
 * result does not depend on the order of combination, so every launch geometry gives the same index. */
template <bool IsMax> struct lt_op_vi {
  template <typename A> LT_D lt_vi<A> operator()(lt_vi<A> a, lt_vi<A> b) const {
    const bool an = lt_isnan(a.v), bn = lt_isnan(b.v);
    if (an || bn) {
      if (an && bn) return a.i <= b.i ? a : b;
      return an ? a : b;
    }
    if (IsMax ? (a.v > b.v) : (a.v < b.v)) return a;
    if (IsMax ? (b.v > a.v) : (b.v < a.v)) return b;
    return a.i <= b.i ? a : b;
  }
};

/* ---------------------------------------------------------------- warp and block reductions */
template <typename A> LT_D A lt_shfl_down(A v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
template <typename A> LT_D lt_vi<A> lt_shfl_down(lt_vi<A> v, int d) {
  lt_vi<A> r;
  r.v = __shfl_down_sync(0xffffffffu, v.v, d);
  r.i = __shfl_down_sync(0xffffffffu, v.i, d);
  return r;
}

/* lane 0 ends with op over the 32 lanes' values */
template <typename A, typename Op> LT_D A lt_warp_reduce(A v, Op op) {
  for (int d = 16; d > 0; d >>= 1) v = op(v, lt_shfl_down(v, d));
  return v;
}

/* op over the values of all threads of the block, returned to every thread. blockDim.x must be a
 * multiple of 32 (<= 1024) and every thread of the block must call it (it has __syncthreads). */
template <typename A, typename Op> LT_D A lt_block_reduce(A v, Op op, A identity) {
  __shared__ A lt_red_sh[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned nwarps = (blockDim.x + 31u) >> 5;
  v = lt_warp_reduce(v, op);
  if (lane == 0) lt_red_sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? lt_red_sh[lane] : identity;
    v = lt_warp_reduce(v, op);
    if (lane == 0) lt_red_sh[0] = v;
  }
  __syncthreads();
  const A r = lt_red_sh[0];
  __syncthreads(); /* lt_red_sh may be reused by the next call */
  return r;
}

/* The inclusive prefix of v over the block's threads under op (associative), in thread order; *total gets op
 * over the whole block. blockDim.x a multiple of 32 (<= 1024); every thread of the block must call it. */
template <typename A, typename Op> LT_D A lt_block_scan(A v, Op op, A identity, A *total) {
  __shared__ A lt_scan_sh[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned nwarps = (blockDim.x + 31u) >> 5;
  for (unsigned d = 1; d < 32; d <<= 1) {
    const A u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v = op(u, v);
  }
  if (lane == 31u) lt_scan_sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    A w = lane < nwarps ? lt_scan_sh[lane] : identity;
    for (unsigned d = 1; d < 32; d <<= 1) {
      const A u = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w = op(u, w);
    }
    lt_scan_sh[lane] = w;
  }
  __syncthreads();
  if (warp > 0) v = op(lt_scan_sh[warp - 1], v);
  *total = lt_scan_sh[nwarps - 1];
  __syncthreads(); /* lt_scan_sh is reused by the next call */
  return v;
}

/* ---------------------------------------------------------------- type lists for instantiation */
/* By default every source instantiates its kernels for all the element types it supports. Compiling
 * with -DLT_SELECT_TYPES instantiates only the types named by -DLT_WANT_<Type> (e.g. -DLT_WANT_Float
 * -DLT_WANT_Half), which cuts NVRTC time proportionally; for copy.cu the selection applies to the
 * destination type (copies into a selected type from every source type are kept). */
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Byte)
#define LT_IF_Byte(x)
#else
#define LT_IF_Byte(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Char)
#define LT_IF_Char(x)
#else
#define LT_IF_Char(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Short)
#define LT_IF_Short(x)
#else
#define LT_IF_Short(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Int)
#define LT_IF_Int(x)
#else
#define LT_IF_Int(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Long)
#define LT_IF_Long(x)
#else
#define LT_IF_Long(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Float)
#define LT_IF_Float(x)
#else
#define LT_IF_Float(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Double)
#define LT_IF_Double(x)
#else
#define LT_IF_Double(x) x
#endif
#if defined(LT_SELECT_TYPES) && !defined(LT_WANT_Half)
#define LT_IF_Half(x)
#else
#define LT_IF_Half(x) x
#endif

#define LT_FOR_INT_TYPES(M)                                                            \
  LT_IF_Byte(M(unsigned char, Byte)) LT_IF_Char(M(signed char, Char))                  \
  LT_IF_Short(M(short, Short)) LT_IF_Int(M(int, Int)) LT_IF_Long(M(long long, Long))
#define LT_FOR_FLOAT_TYPES(M) \
  LT_IF_Float(M(float, Float)) LT_IF_Double(M(double, Double)) LT_IF_Half(M(__half, Half))
#define LT_FOR_ALL_TYPES(M) LT_FOR_INT_TYPES(M) LT_FOR_FLOAT_TYPES(M)

#endif /* LT_CUDA_COMMON_CUH */
