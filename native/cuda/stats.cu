/* stats.cu — the p-norm, variance and standard deviation of slices (along a dimension, or of a whole tensor as
 * one slice), and renorm; Float and Double, accumulated in double as the CPU kernels accumulate them.
 *
 *   lt_dim_stat_<T>_<idx>(T out, double* whole, T xs, q nslices, q n, q x_stride, int op, double p, int biased) ★
 *     xs: the input's slices view (reduce_dim.cu's: the reduced dimension removed); element j < n of slice s is
 *     ((T*)xs.data)[offset(xs, s) + j * x_stride]. op 0: the p-norm (p = 0: the count of non-zeros, 1: Σ|x|,
 *     2: sqrt(Σx²), inf: max|x|, other: (Σ|x|^p)^(1/p)); op 1: the variance, op 2: the standard deviation, two
 *     passes (the mean, then Σ(x − mean)²) divided by n (biased) or n − 1 (NaN for n ≤ 1 unbiased, as Torch7's).
 *     Result of slice s into out (T, nslices elements), or into whole[s] in double when whole is not 0 (out then
 *     unused). A block per slice (grid-stride over slices with blockIdx.x), threads over j.
 *   lt_dim_stat1_<T>_<idx>(the same arguments)
 *     the same results, a thread per slice (grid-stride): any geometry; for short or strided slices.
 *   lt_renorm_<T>_<idx>(T out, T x, q nslices, q n, q ostride, q xstride, double p, double maxnorm) ★
 *     x and out: slices views of tensors of one shape with dimension dim removed, ostride/xstride their strides
 *     along dim (n = its size). Sub-tensor i < n of x is the nslices elements offset(x, s) + i * xstride; its
 *     p-norm (Σ|x|^p)^(1/p) in double; when above maxnorm the sub-tensor is scaled by the factor
 *     (T)(maxnorm / (norm + 1e-7)) (the product in T's compute type), else copied. out may be x (in place).
 *     A block per sub-tensor.
 */
#include "lt_cuda_common.cuh"

LT_D bool lt_isinf_d(double p) { return p > 1.7976931348623157e308; }

/* |x|^p's contribution to a p-norm's sum */
LT_D double lt_norm_term(double a, double p) { return p == 0 ? (a != 0 ? 1.0 : 0.0) : p == 1 ? a : p == 2 ? a * a : pow(a, p); }

/* op over the values of the block (Block: all its threads must call it), or the thread's own (one thread per slice) */
template <bool Block, typename Op> LT_D double lt_stat_reduce(double v, Op op) {
  if constexpr (Block) return lt_block_reduce(v, op, 0.0);
  else return v;
}

/* the statistic of the n elements base[j * st]: shared by the threads of a block (Block: every thread of the
 * block calls it, each returns it), or of one thread */
template <bool Block, typename T, typename I>
LT_D double lt_slice_stat(const T *base, I n, I st, int op, double p, int biased) {
  const I j0 = Block ? (I)threadIdx.x : 0, dj = Block ? (I)blockDim.x : 1;
  if (op == 0) {
    const bool inf = lt_isinf_d(p);
    double acc = 0;
    for (I j = j0; j < n; j += dj) {
      const double a = fabs(lt_cast<double>(base[j * st]));
      acc = inf ? (a > acc ? a : acc) : acc + lt_norm_term(a, p);
    }
    acc = inf ? lt_stat_reduce<Block>(acc, lt_op_max()) : lt_stat_reduce<Block>(acc, lt_op_sum());
    return (p == 0 || p == 1 || inf) ? acc : p == 2 ? sqrt(acc) : pow(acc, 1.0 / p);
  }
  double s = 0;
  for (I j = j0; j < n; j += dj) s += lt_cast<double>(base[j * st]);
  const double mean = lt_stat_reduce<Block>(s, lt_op_sum()) / (double)n;
  double d2 = 0;
  for (I j = j0; j < n; j += dj) {
    const double d = lt_cast<double>(base[j * st]) - mean;
    d2 += d * d;
  }
  d2 = lt_stat_reduce<Block>(d2, lt_op_sum());
  const double v = (n > 1 || biased) ? d2 / (double)(biased ? n : n - 1) : lt_nan_d();
  return op == 2 ? sqrt(v) : v;
}

template <bool Block, typename T, typename I>
LT_D void lt_dim_stat_impl(lt_cu_tensor out, double *whole, lt_cu_tensor xs, long long nslices, long long n,
                           long long x_stride, int op, double p, int biased) {
  const I s0 = Block ? (I)blockIdx.x : (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
  const I ds = Block ? (I)gridDim.x : (I)gridDim.x * (I)blockDim.x;
  for (I s = s0; s < (I)nslices; s += ds) {
    const double v =
        lt_slice_stat<Block, T, I>((const T *)xs.data + lt_offset<I>(xs, s), (I)n, (I)x_stride, op, p, biased);
    if (!Block || threadIdx.x == 0) {
      if (whole) whole[s] = v;
      else ((T *)out.data)[lt_offset<I>(out, s)] = lt_cast<T>(v);
    }
  }
}

template <typename T, typename I>
LT_D void lt_renorm_impl(lt_cu_tensor out, lt_cu_tensor x, long long nslices, long long n, long long ostride,
                         long long xstride, double p, double maxnorm) {
  typedef lt_acc_t<T> A;
  for (I i = blockIdx.x; i < (I)n; i += gridDim.x) {
    const T *px = (const T *)x.data + i * (I)xstride;
    T *po = (T *)out.data + i * (I)ostride;
    double acc = 0;
    for (I s = threadIdx.x; s < (I)nslices; s += blockDim.x) acc += lt_norm_term(fabs(lt_cast<double>(px[lt_offset<I>(x, s)])), p);
    const double norm = pow(lt_block_reduce(acc, lt_op_sum(), 0.0), 1.0 / p);
    const bool scale = norm > maxnorm;
    const A f = lt_cast<A>(lt_cast<T>(maxnorm / (norm + 1e-7)));
    for (I s = threadIdx.x; s < (I)nslices; s += blockDim.x) {
      const T v = px[lt_offset<I>(x, s)];
      po[lt_offset<I>(out, s)] = scale ? lt_cast<T>(lt_cast<A>(v) * f) : v;
    }
  }
}

#define LT_STAT_KERNEL(NAME, BLOCK, T, N, IDX)                                                                  \
  extern "C" __global__ void NAME##_##N##_##IDX(lt_cu_tensor out, double *whole, lt_cu_tensor xs,              \
                                                long long nslices, long long n, long long x_stride, int op,    \
                                                double p, int biased) {                                        \
    lt_dim_stat_impl<BLOCK, T, lt_##IDX>(out, whole, xs, nslices, n, x_stride, op, p, biased);                  \
  }                                                                                                             \
  LT_EXPORT(NAME##_##N##_##IDX)

#define LT_STATS1(T, N, IDX)                                                                                    \
  LT_STAT_KERNEL(lt_dim_stat, true, T, N, IDX)                                                                  \
  LT_STAT_KERNEL(lt_dim_stat1, false, T, N, IDX)                                                                \
  extern "C" __global__ void lt_renorm_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor x, long long nslices,         \
                                                   long long n, long long ostride, long long xstride, double p, \
                                                   double maxnorm) {                                           \
    lt_renorm_impl<T, lt_##IDX>(out, x, nslices, n, ostride, xstride, p, maxnorm);                              \
  }                                                                                                             \
  LT_EXPORT(lt_renorm_##N##_##IDX)

#define LT_STATS(T, N) LT_STATS1(T, N, i32) LT_STATS1(T, N, i64)

LT_IF_Float(LT_STATS(float, Float))
LT_IF_Double(LT_STATS(double, Double))
