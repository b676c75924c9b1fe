/* reduce_dim.cu — reductions along one dimension (reduce.cu: over all elements).
 *
 * A = lt_acc_t<T> is the accumulate type: float for Float and Half, double for Double, long long for
 * the integer types. max/min propagate NaN; a slice of length n = 0 gives the identity and index
 * INT64_MAX (the host rejects max/min over an empty dimension, as Torch7 does).
 *
 *   The input is described by its "slices" view xs: x's tensor info with the reduced dimension removed
 *   (so xs has the logical shape of the output) plus that dimension's size n and stride x_stride.
 *   Element j (0 <= j < n) of slice s is  ((T*)xs.data)[offset(xs, s) + j * x_stride].
 *   For a (outer, n, inner) contiguous layout: xs = {sizes {outer, inner}, strides {n*inner, 1}},
 *   x_stride = inner.
 *     lt_reduce_dim_<op>_<T>_<idx>   (lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n,
 *                                     long long x_stride)                op: sum prod (8 types) mean (floats)
 *     lt_reduce_dim_<mm>_<T>_<idx>   (lt_cu_tensor out, lt_cu_tensor ind, lt_cu_tensor xs,
 *                                     long long nslices, long long n, long long x_stride)   mm: max min
 *   out (type T) and ind (Long, 0-based index of the winner, ties and NaNs to the first) have
 *   nslices elements each. Two launch forms with identical arguments and results (up to the
 *   summation order):
 *     lt_reduce_dim_...     one thread per slice, sequential over j: any geometry; best when
 *                           x_stride != 1 (neighbouring threads read neighbouring slices);
 *     lt_reduce_dimblk_...  one block per slice (grid-stride over slices with blockIdx.x), threads
 *                           stride over j: blockDim.x a multiple of 32; best when x_stride == 1.
 *   mean = sum / n computed in A.
 */
#include "lt_cuda_common.cuh"

/* value reductions (sum, prod, mean): one thread per slice */
template <typename T, typename I, typename Op>
LT_D void lt_rdim_thread(lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n,
                         long long x_stride, Op op, lt_acc_t<T> ident, bool mean) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  const T *px = (const T *)xs.data;
  const I len = (I)n, st = (I)x_stride;
  LT_GRID_LOOP(I, s, nslices) {
    const T *base = px + lt_offset<I>(xs, s);
    A v = ident;
    for (I j = 0; j < len; ++j) v = op(v, lt_cast<A>(base[j * st]));
    if (mean) v = v / (A)n;
    po[lt_offset<I>(out, s)] = lt_cast<T>(v);
  }
}

/* value reductions: one block per slice */
template <typename T, typename I, typename Op>
LT_D void lt_rdim_block(lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n,
                        long long x_stride, Op op, lt_acc_t<T> ident, bool mean) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  const T *px = (const T *)xs.data;
  const I len = (I)n, st = (I)x_stride;
  for (I s = blockIdx.x; s < (I)nslices; s += gridDim.x) {
    const T *base = px + lt_offset<I>(xs, s);
    A v = ident;
    for (I j = threadIdx.x; j < len; j += blockDim.x) v = op(v, lt_cast<A>(base[j * st]));
    v = lt_block_reduce(v, op, ident);
    if (threadIdx.x == 0) {
      if (mean) v = v / (A)n;
      po[lt_offset<I>(out, s)] = lt_cast<T>(v);
    }
  }
}

/* max/min with index: one thread per slice */
template <typename T, typename I, bool IsMax>
LT_D void lt_rdim_thread_vi(lt_cu_tensor out, lt_cu_tensor ind, lt_cu_tensor xs, long long nslices,
                            long long n, long long x_stride) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  long long *pi = (long long *)ind.data;
  const T *px = (const T *)xs.data;
  const I len = (I)n, st = (I)x_stride;
  const lt_op_vi<IsMax> op;
  LT_GRID_LOOP(I, s, nslices) {
    const T *base = px + lt_offset<I>(xs, s);
    lt_vi<A> v;
    v.v = IsMax ? lt_lowest<A>() : lt_highest<A>();
    v.i = lt_highest<long long>();
    for (I j = 0; j < len; ++j) {
      lt_vi<A> e;
      e.v = lt_cast<A>(base[j * st]);
      e.i = (long long)j;
      v = op(v, e);
    }
    po[lt_offset<I>(out, s)] = lt_cast<T>(v.v);
    pi[lt_offset<I>(ind, s)] = v.i;
  }
}

/* max/min with index: one block per slice */
template <typename T, typename I, bool IsMax>
LT_D void lt_rdim_block_vi(lt_cu_tensor out, lt_cu_tensor ind, lt_cu_tensor xs, long long nslices,
                           long long n, long long x_stride) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  long long *pi = (long long *)ind.data;
  const T *px = (const T *)xs.data;
  const I len = (I)n, st = (I)x_stride;
  const lt_op_vi<IsMax> op;
  lt_vi<A> ident;
  ident.v = IsMax ? lt_lowest<A>() : lt_highest<A>();
  ident.i = lt_highest<long long>();
  for (I s = blockIdx.x; s < (I)nslices; s += gridDim.x) {
    const T *base = px + lt_offset<I>(xs, s);
    lt_vi<A> v = ident;
    for (I j = threadIdx.x; j < len; j += blockDim.x) {
      lt_vi<A> e;
      e.v = lt_cast<A>(base[j * st]);
      e.i = (long long)j;
      v = op(v, e);
    }
    v = lt_block_reduce(v, op, ident);
    if (threadIdx.x == 0) {
      po[lt_offset<I>(out, s)] = lt_cast<T>(v.v);
      pi[lt_offset<I>(ind, s)] = v.i;
    }
  }
}

#define LT_RDIM_VAL1(KIND, FN, OPNAME, T, N, IDX, OP, IDENT, MEAN)                               \
  extern "C" __global__ void lt_reduce_##KIND##_##OPNAME##_##N##_##IDX(                          \
      lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n, long long x_stride) {   \
    FN<T, lt_##IDX>(out, xs, nslices, n, x_stride, OP(), IDENT, MEAN);                           \
  }                                                                                              \
  LT_EXPORT(lt_reduce_##KIND##_##OPNAME##_##N##_##IDX)

#define LT_RDIM_VAL(OPNAME, T, N, OP, IDENT, MEAN)                               \
  LT_RDIM_VAL1(dim, lt_rdim_thread, OPNAME, T, N, i32, OP, IDENT, MEAN)          \
  LT_RDIM_VAL1(dim, lt_rdim_thread, OPNAME, T, N, i64, OP, IDENT, MEAN)          \
  LT_RDIM_VAL1(dimblk, lt_rdim_block, OPNAME, T, N, i32, OP, IDENT, MEAN)        \
  LT_RDIM_VAL1(dimblk, lt_rdim_block, OPNAME, T, N, i64, OP, IDENT, MEAN)

#define LT_RDIM_VI1(KIND, FN, OPNAME, T, N, IDX, ISMAX)                                          \
  extern "C" __global__ void lt_reduce_##KIND##_##OPNAME##_##N##_##IDX(                          \
      lt_cu_tensor out, lt_cu_tensor ind, lt_cu_tensor xs, long long nslices, long long n,       \
      long long x_stride) {                                                                      \
    FN<T, lt_##IDX, ISMAX>(out, ind, xs, nslices, n, x_stride);                                  \
  }                                                                                              \
  LT_EXPORT(lt_reduce_##KIND##_##OPNAME##_##N##_##IDX)

#define LT_RDIM_VI(OPNAME, T, N, ISMAX)                                   \
  LT_RDIM_VI1(dim, lt_rdim_thread_vi, OPNAME, T, N, i32, ISMAX)           \
  LT_RDIM_VI1(dim, lt_rdim_thread_vi, OPNAME, T, N, i64, ISMAX)           \
  LT_RDIM_VI1(dimblk, lt_rdim_block_vi, OPNAME, T, N, i32, ISMAX)         \
  LT_RDIM_VI1(dimblk, lt_rdim_block_vi, OPNAME, T, N, i64, ISMAX)

#define LT_RDIM_TYPE(T, N)                                               \
  LT_RDIM_VAL(sum, T, N, lt_op_sum, (lt_acc_t<T>)0, false)               \
  LT_RDIM_VAL(prod, T, N, lt_op_prod, (lt_acc_t<T>)1, false)             \
  LT_RDIM_VI(max, T, N, true) LT_RDIM_VI(min, T, N, false)
#define LT_RDIM_FLOAT_EXTRA(T, N) LT_RDIM_VAL(mean, T, N, lt_op_sum, (lt_acc_t<T>)0, true)

LT_FOR_ALL_TYPES(LT_RDIM_TYPE)
LT_FOR_FLOAT_TYPES(LT_RDIM_FLOAT_EXTRA)
