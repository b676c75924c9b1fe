/* logsoftmax.cu — LogSoftMax and SoftMax forward and backward (nn.LogSoftMax, nn.SoftMax, and cunn's spatial
 * case of both: SpatialLogSoftMax, SpatialSoftMax). One file: the two differ only in the last step.
 *
 * Contiguous tensors only (the host makes input and gradOutput contiguous first, as cunn does).
 * Computed in A = lt_acc_t<T> (float for Float and Half, double for Double); numerically stable, with
 * m = max_k x[k] and s = sum_k exp(x[k] - m):
 *   logsoftmax  out[j] = (x[j] - m) - log(s)
 *   softmax     out[j] = exp(x[j] - m) / s
 * A NaN anywhere in a row makes that row NaN; a +inf also gives NaN (as Torch7's kernels do).
 * Backward (out is the forward output):
 *   logsoftmax  gradIn[j] = gradOut[j] - exp(out[j]) * sum_k gradOut[k]
 *   softmax     gradIn[j] = out[j] * (gradOut[j] - sum_k gradOut[k] * out[k])
 * out may alias in, and gradIn may alias gradOut.
 *
 * Rows of an (rows, classes) matrix — one block per row (grid-stride over rows); blockDim.x a
 * multiple of 32 (<= 1024); any grid (<op> is logsoftmax or softmax):
 *   lt_<op>_fwd_<T>(T *out, const T *in, long long rows, long long classes)
 *   lt_<op>_bwd_<T>(T *gradIn, const T *gradOut, const T *out, long long rows, long long classes)
 * Class dimension of an (outer, classes, inner) layout, element (o, c, k) at (o*classes + c)*inner + k
 * — one thread per (o, k) position (grid-stride), any geometry; neighbouring threads read neighbouring
 * k, so it is the kernel for inner > 1 (the spatial modules, 3-D/4-D input):
 *   lt_<op>_spatial_fwd_<T>(T *out, const T *in, long long outer, long long classes, long long inner)
 *   lt_<op>_spatial_bwd_<T>(T *gradIn, const T *gradOut, const T *out, long long outer,
 *                           long long classes, long long inner)
 * T is Float, Double or Half.
 */
#include "lt_cuda_common.cuh"

/* The forward's last step, from x - m and log(s) or s. */
template <bool Log, typename A> LT_D A lt_sm_out(A centred, A log_s, A s) {
  if constexpr (Log) return centred - log_s;
  else return lt_m_exp(centred) / s;
}

/* The backward's row sum term: gradOut (log) or gradOut * out (softmax). */
template <bool Log, typename A> LT_D A lt_sm_term(A go, A o) {
  if constexpr (Log) return go;
  else return go * o;
}

/* The backward's element, from that row sum. */
template <bool Log, typename A> LT_D A lt_sm_grad(A go, A o, A sum) {
  if constexpr (Log) return go - lt_m_exp(o) * sum;
  else return o * (go - sum);
}

template <bool Log, typename T>
LT_D void lt_sm_fwd_rows(T *out, const T *in, long long rows, long long classes) {
  typedef lt_acc_t<T> A;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *x = in + r * classes;
    T *y = out + r * classes;
    A m = lt_lowest<A>();
    for (long long j = threadIdx.x; j < classes; j += blockDim.x) m = lt_op_max()(m, lt_cast<A>(x[j]));
    m = lt_block_reduce(m, lt_op_max(), lt_lowest<A>());
    A s = 0;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x) s += lt_m_exp(lt_cast<A>(x[j]) - m);
    s = lt_block_reduce(s, lt_op_sum(), (A)0);
    const A ls = Log ? lt_m_log(s) : (A)0;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      y[j] = lt_cast<T>(lt_sm_out<Log>(lt_cast<A>(x[j]) - m, ls, s));
  }
}

template <bool Log, typename T>
LT_D void lt_sm_bwd_rows(T *gin, const T *gout, const T *out, long long rows, long long classes) {
  typedef lt_acc_t<T> A;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *go = gout + r * classes, *o = out + r * classes;
    T *gi = gin + r * classes;
    A s = 0;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      s += lt_sm_term<Log>(lt_cast<A>(go[j]), lt_cast<A>(o[j]));
    s = lt_block_reduce(s, lt_op_sum(), (A)0);
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      gi[j] = lt_cast<T>(lt_sm_grad<Log>(lt_cast<A>(go[j]), lt_cast<A>(o[j]), s));
  }
}

template <bool Log, typename T>
LT_D void lt_sm_fwd_spatial(T *out, const T *in, long long outer, long long classes, long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, p, outer * inner) {
    const long long o = p / inner, k = p - o * inner;
    const T *x = in + o * classes * inner + k;
    T *y = out + o * classes * inner + k;
    A m = lt_lowest<A>();
    for (long long c = 0; c < classes; ++c) m = lt_op_max()(m, lt_cast<A>(x[c * inner]));
    A s = 0;
    for (long long c = 0; c < classes; ++c) s += lt_m_exp(lt_cast<A>(x[c * inner]) - m);
    const A ls = Log ? lt_m_log(s) : (A)0;
    for (long long c = 0; c < classes; ++c)
      y[c * inner] = lt_cast<T>(lt_sm_out<Log>(lt_cast<A>(x[c * inner]) - m, ls, s));
  }
}

template <bool Log, typename T>
LT_D void lt_sm_bwd_spatial(T *gin, const T *gout, const T *out, long long outer, long long classes,
                            long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, p, outer * inner) {
    const long long o = p / inner, k = p - o * inner;
    const long long base = o * classes * inner + k;
    A s = 0;
    for (long long c = 0; c < classes; ++c)
      s += lt_sm_term<Log>(lt_cast<A>(gout[base + c * inner]), lt_cast<A>(out[base + c * inner]));
    for (long long c = 0; c < classes; ++c) {
      const long long e = base + c * inner;
      gin[e] = lt_cast<T>(lt_sm_grad<Log>(lt_cast<A>(gout[e]), lt_cast<A>(out[e]), s));
    }
  }
}

#define LT_SM(T, N, OP, LOG)                                                                        \
  extern "C" __global__ void lt_##OP##_fwd_##N(T *out, const T *in, long long rows, long long classes) { \
    lt_sm_fwd_rows<LOG, T>(out, in, rows, classes);                                                 \
  }                                                                                                 \
  LT_EXPORT(lt_##OP##_fwd_##N)                                                                      \
  extern "C" __global__ void lt_##OP##_bwd_##N(T *gradIn, const T *gradOut, const T *out,            \
                                               long long rows, long long classes) {                 \
    lt_sm_bwd_rows<LOG, T>(gradIn, gradOut, out, rows, classes);                                    \
  }                                                                                                 \
  LT_EXPORT(lt_##OP##_bwd_##N)                                                                      \
  extern "C" __global__ void lt_##OP##_spatial_fwd_##N(T *out, const T *in, long long outer,         \
                                                       long long classes, long long inner) {        \
    lt_sm_fwd_spatial<LOG, T>(out, in, outer, classes, inner);                                      \
  }                                                                                                 \
  LT_EXPORT(lt_##OP##_spatial_fwd_##N)                                                              \
  extern "C" __global__ void lt_##OP##_spatial_bwd_##N(T *gradIn, const T *gradOut, const T *out,   \
                                                       long long outer, long long classes,          \
                                                       long long inner) {                           \
    lt_sm_bwd_spatial<LOG, T>(gradIn, gradOut, out, outer, classes, inner);                         \
  }                                                                                                 \
  LT_EXPORT(lt_##OP##_spatial_bwd_##N)

#define LT_LSM(T, N) LT_SM(T, N, logsoftmax, true) LT_SM(T, N, softmax, false)

LT_FOR_FLOAT_TYPES(LT_LSM)
