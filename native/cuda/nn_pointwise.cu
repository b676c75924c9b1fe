/* nn_pointwise.cu — nn's elementwise activations on the GPU (Tanh ... Power, Threshold: the ops of
 * native/include/lt_nn_pointwise.h, whose numbers and formulas these are; native/src/nn_pointwise.c is the CPU
 * kernel and the oracle).
 *
 *   lt_nn_pw_fwd_<T>_<idx>(lt_cu_tensor out, lt_cu_tensor in, long long n, int op, double a, double b)
 *     out[i] = f_op(in[i]; a, b); out may be in (the modules' inplace).
 *   lt_nn_pw_bwd_<T>_<idx>(lt_cu_tensor gradIn, lt_cu_tensor gradOut, lt_cu_tensor ref, long long n, int op,
 *                          double a, double b)
 *     gradIn[i] = df_op(gradOut[i], ref[i]; a, b), ref being the input or the output as the header says per op;
 *     gradIn may be gradOut.
 * T is Float, Double or Half; values are computed in lt_acc_t<T> (float for Half), a and b rounded to it first
 * (as the CPU kernel rounds them to its real type), and the result rounded once to T. Grid-stride loops: any launch geometry.
 *
 * nn.PReLU (native/src/nn_pointwise_prelu.c's geometry: contiguous (outer, planes, inner) blocks, element
 * (o, c, k) at (o*planes + c)*inner + k, weight w[c]; one shared weight: planes 1):
 *   lt_prelu_fwd_<T>(T* out, const T* in, const T* w, q n, q planes, q inner)     out = x > 0 ? x : w[c] x
 *   lt_prelu_bwd_<T>(T* gradIn, const T* gradOut, const T* in, const T* w, q n, q planes, q inner)
 *     gradIn = x > 0 ? dy : w[c] dy
 *   lt_prelu_acc_<T>(T* gradWeight, q gwStride, const T* gradOut, const T* in, q outer, q planes, q inner, A scale)
 *     gradWeight[c*gwStride] += scale * (sum over x <= 0 of x dy), a block per channel (blockDim.x a multiple of
 *     32), summed in A: a Half gradient is the Float one rounded once.
 *
 * nn.GatedLinearUnit on a contiguous input seen as (outer, 2 h, inner), halves a = [o, j, k] and b = [o, h + j, k]:
 *   lt_glu_fwd_<T>(T* out, const T* in, q outer, q h, q inner)       out (outer, h, inner) = a sigmoid(b)
 *   lt_glu_bwd_<T>(T* gradIn, const T* gradOut, const T* in, q outer, q h, q inner)
 *     gradIn's a half = dy s, its b half = dy (1 - s) s a (the CPU module's order), s = sigmoid(b) recomputed
 *     in A (a Half module keeps no rounded gate).
 *
 * nn.Normalize on a contiguous (n, d) input, a block per row (blockDim.x a multiple of 32), in A (the CPU kernel's
 * formulas, native/src/nn_pointwise_normalize.c):
 *   lt_normalize_fwd_<T>(T* out, T* norm, const T* in, q n, q d, double p, double eps)
 *     norm[r] = (sum |x|^p + eps)^(1/p), or max |x| + eps for p = inf; out = x / norm (the unrounded norm)
 *   lt_normalize_bwd_<T>(T* gradIn, const T* gradOut, const T* in, const T* norm, q n, q d, double p, double eps)
 *     gi = dy / norm - w (x . dy) / (norm^p norm), w = |x|^(p-2) x (x for p = 2; (|x| + eps)^(p-2) x for p < 2
 *     not even); p = inf: dy / norm, minus x (x . dy) / norm^3 at the row's first largest |x|
 */
#include "lt_cuda_common.cuh"

/* lt_nn_pointwise.h's op numbers */
enum { PW_TANH = 1, PW_SIGMOID, PW_HARDTANH, PW_LEAKYRELU, PW_ELU, PW_SOFTPLUS, PW_SOFTSIGN, PW_SOFTSHRINK,
       PW_HARDSHRINK, PW_TANHSHRINK, PW_LOGSIGMOID, PW_ABS, PW_EXP, PW_LOG, PW_SQRT, PW_SQUARE, PW_POWER,
       PW_THRESHOLD };

LT_D float lt_m_log1p(float x) { return log1pf(x); }
LT_D double lt_m_log1p(double x) { return log1p(x); }

template <typename A>
LT_D A lt_pw_f(int op, A x, A a, A b) {
  const A zero = (A)0, one = (A)1;
  switch (op) {
    case PW_TANH: return lt_m_tanh(x);
    case PW_SIGMOID: return one / (one + lt_m_exp(-x));
    case PW_HARDTANH: return x < a ? a : (x > b ? b : x);
    case PW_LEAKYRELU: return x > zero ? x : x * a;
    case PW_ELU: return x <= zero ? (lt_m_exp(x) - one) * a : x;
    case PW_SOFTPLUS: return x * a > b ? x : lt_m_log1p(lt_m_exp(x * a)) / a;
    case PW_SOFTSIGN: return x / (one + lt_m_abs(x));
    case PW_SOFTSHRINK: return x > a ? x - a : (x < -a ? x + a : zero);
    case PW_HARDSHRINK: return (x > a || x < -a) ? x : zero;
    case PW_TANHSHRINK: return x - lt_m_tanh(x);
    case PW_LOGSIGMOID: return (x < zero ? x : zero) - lt_m_log1p(lt_m_exp(x < zero ? x : -x));   /* no overflow */
    case PW_ABS: return lt_m_abs(x);
    case PW_EXP: return lt_m_exp(x);
    case PW_LOG: return lt_m_log(x);
    case PW_SQRT: return lt_m_sqrt(x + a);
    case PW_SQUARE: return x * x;
    case PW_POWER: return lt_m_pow(x, a);
    case PW_THRESHOLD: return x > a ? x : b;
  }
  return zero;
}

template <typename A>
LT_D A lt_pw_df(int op, A g, A r, A a, A b) {
  const A zero = (A)0, one = (A)1;
  switch (op) {
    case PW_TANH: return g * (one - r * r);
    case PW_SIGMOID: return g * (one - r) * r;
    case PW_HARDTANH: return (r <= a || r >= b) ? zero : g;
    case PW_LEAKYRELU: return r > zero ? g : g * a;
    case PW_ELU: return r <= zero ? g * (r + a) : g;
    case PW_SOFTPLUS: {
      if (r * a > b) return g;
      const A z = lt_m_exp(r * a);
      return g * (z - one) / z;
    }
    case PW_SOFTSIGN: {
      const A d = one + lt_m_abs(r);
      return g / (d * d);
    }
    case PW_SOFTSHRINK:
    case PW_HARDSHRINK: return (r > a || r < -a) ? g : zero;
    case PW_TANHSHRINK: {
      const A t = lt_m_tanh(r);
      return g * t * t;
    }
    case PW_LOGSIGMOID: {   /* 1 - sigmoid(x) = sigmoid(-x) */
      const A e = lt_m_exp(r < zero ? r : -r);
      return g * (r < zero ? one / (one + e) : e / (one + e));
    }
    case PW_ABS: return r < zero ? -g : g;
    case PW_EXP: return g * r;
    case PW_LOG: return g / r;
    case PW_SQRT: return r == zero ? zero : (A)0.5 * g / r;
    case PW_SQUARE: return (A)2 * g * r;
    case PW_POWER: return g * a * lt_m_pow(r, a - one);
    case PW_THRESHOLD: return r > a ? g : zero;
  }
  return zero;
}

template <typename T, typename I>
LT_D void lt_nn_pw_fwd_impl(lt_cu_tensor out, lt_cu_tensor in, long long n, int op, double a, double b) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  const T *pi = (const T *)in.data;
  const A aa = (A)a, bb = (A)b;
  LT_GRID_LOOP(I, i, n) {
    po[lt_offset<I>(out, i)] = lt_cast<T>(lt_pw_f<A>(op, lt_cast<A>(pi[lt_offset<I>(in, i)]), aa, bb));
  }
}

template <typename T, typename I>
LT_D void lt_nn_pw_bwd_impl(lt_cu_tensor gin, lt_cu_tensor gout, lt_cu_tensor ref, long long n, int op, double a,
                            double b) {
  typedef lt_acc_t<T> A;
  T *pgi = (T *)gin.data;
  const T *pgo = (const T *)gout.data, *pr = (const T *)ref.data;
  const A aa = (A)a, bb = (A)b;
  LT_GRID_LOOP(I, i, n) {
    const A g = lt_cast<A>(pgo[lt_offset<I>(gout, i)]), r = lt_cast<A>(pr[lt_offset<I>(ref, i)]);
    pgi[lt_offset<I>(gin, i)] = lt_cast<T>(lt_pw_df<A>(op, g, r, aa, bb));
  }
}

#define LT_NN_PW1(T, N, IDX)                                                                               \
  extern "C" __global__ void lt_nn_pw_fwd_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor in, long long n, int op, \
                                                      double a, double b) {                                \
    lt_nn_pw_fwd_impl<T, lt_##IDX>(out, in, n, op, a, b);                                                  \
  }                                                                                                        \
  LT_EXPORT(lt_nn_pw_fwd_##N##_##IDX)                                                                      \
  extern "C" __global__ void lt_nn_pw_bwd_##N##_##IDX(lt_cu_tensor gradIn, lt_cu_tensor gradOut,             \
                                                      lt_cu_tensor ref, long long n, int op, double a,      \
                                                      double b) {                                          \
    lt_nn_pw_bwd_impl<T, lt_##IDX>(gradIn, gradOut, ref, n, op, a, b);                                     \
  }                                                                                                        \
  LT_EXPORT(lt_nn_pw_bwd_##N##_##IDX)

#define LT_NN_PW(T, N) LT_NN_PW1(T, N, i32) LT_NN_PW1(T, N, i64)

LT_IF_Float(LT_NN_PW(float, Float))
LT_IF_Double(LT_NN_PW(double, Double))
LT_IF_Half(LT_NN_PW(__half, Half))

template <typename T>
LT_D void lt_prelu_fwd_impl(T *out, const T *in, const T *w, long long n, long long planes, long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, i, n) {
    const A x = lt_cast<A>(in[i]);
    out[i] = x > (A)0 ? in[i] : lt_cast<T>(lt_cast<A>(w[(i / inner) % planes]) * x);
  }
}

template <typename T>
LT_D void lt_prelu_bwd_impl(T *gin, const T *gout, const T *in, const T *w, long long n, long long planes,
                            long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, i, n) {
    const A a = lt_cast<A>(w[(i / inner) % planes]);
    gin[i] = lt_cast<A>(in[i]) > (A)0 ? gout[i] : lt_cast<T>(a * lt_cast<A>(gout[i]));
  }
}

template <typename T>
LT_D void lt_prelu_acc_impl(T *gw, long long gw_stride, const T *gout, const T *in, long long outer, long long planes,
                            long long inner, lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  const long long m = outer * inner;
  for (long long c = blockIdx.x; c < planes; c += gridDim.x) {
    A s = (A)0;
    for (long long j = threadIdx.x; j < m; j += blockDim.x) {
      const long long o = j / inner, e = (o * planes + c) * inner + (j - o * inner);
      const A x = lt_cast<A>(in[e]);
      if (x <= (A)0) s += x * lt_cast<A>(gout[e]);
    }
    s = lt_block_reduce(s, lt_op_sum(), (A)0);
    if (threadIdx.x == 0) gw[c * gw_stride] = lt_cast<T>(lt_cast<A>(gw[c * gw_stride]) + scale * s);
  }
}

#define LT_PRELU(T, N)                                                                                           \
  extern "C" __global__ void lt_prelu_fwd_##N(T *out, const T *in, const T *w, long long n, long long planes,    \
                                              long long inner) {                                               \
    lt_prelu_fwd_impl<T>(out, in, w, n, planes, inner);                                                          \
  }                                                                                                              \
  LT_EXPORT(lt_prelu_fwd_##N)                                                                                    \
  extern "C" __global__ void lt_prelu_bwd_##N(T *gradIn, const T *gradOut, const T *in, const T *w, long long n, \
                                              long long planes, long long inner) {                             \
    lt_prelu_bwd_impl<T>(gradIn, gradOut, in, w, n, planes, inner);                                              \
  }                                                                                                              \
  LT_EXPORT(lt_prelu_bwd_##N)                                                                                    \
  extern "C" __global__ void lt_prelu_acc_##N(T *gradWeight, long long gwStride, const T *gradOut, const T *in,  \
                                              long long outer, long long planes, long long inner,              \
                                              lt_acc_t<T> scale) {                                             \
    lt_prelu_acc_impl<T>(gradWeight, gwStride, gradOut, in, outer, planes, inner, scale);                        \
  }                                                                                                              \
  LT_EXPORT(lt_prelu_acc_##N)

LT_IF_Float(LT_PRELU(float, Float))
LT_IF_Double(LT_PRELU(double, Double))
LT_IF_Half(LT_PRELU(__half, Half))

template <typename A> LT_D A lt_glu_gate(A b) { return (A)1 / ((A)1 + lt_m_exp(-b)); }

template <typename T>
LT_D void lt_glu_fwd_impl(T *out, const T *in, long long outer, long long h, long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, outer * h * inner) {
    const long long k = e % inner, j = (e / inner) % h, o = e / (inner * h);
    const long long ia = (o * 2 * h + j) * inner + k, ib = ia + h * inner;
    out[e] = lt_cast<T>(lt_cast<A>(in[ia]) * lt_glu_gate(lt_cast<A>(in[ib])));
  }
}

template <typename T>
LT_D void lt_glu_bwd_impl(T *gin, const T *gout, const T *in, long long outer, long long h, long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, outer * h * inner) {
    const long long k = e % inner, j = (e / inner) % h, o = e / (inner * h);
    const long long ia = (o * 2 * h + j) * inner + k, ib = ia + h * inner;
    const A g = lt_cast<A>(gout[e]), s = lt_glu_gate(lt_cast<A>(in[ib]));
    gin[ia] = lt_cast<T>(g * s);
    gin[ib] = lt_cast<T>(g * ((A)1 - s) * s * lt_cast<A>(in[ia]));
  }
}

#define LT_GLU(T, N)                                                                                             \
  extern "C" __global__ void lt_glu_fwd_##N(T *out, const T *in, long long outer, long long h, long long inner) { \
    lt_glu_fwd_impl<T>(out, in, outer, h, inner);                                                                \
  }                                                                                                              \
  LT_EXPORT(lt_glu_fwd_##N)                                                                                      \
  extern "C" __global__ void lt_glu_bwd_##N(T *gradIn, const T *gradOut, const T *in, long long outer,           \
                                            long long h, long long inner) {                                      \
    lt_glu_bwd_impl<T>(gradIn, gradOut, in, outer, h, inner);                                                    \
  }                                                                                                              \
  LT_EXPORT(lt_glu_bwd_##N)

LT_IF_Float(LT_GLU(float, Float))
LT_IF_Double(LT_GLU(double, Double))
LT_IF_Half(LT_GLU(__half, Half))

template <typename A> LT_D A lt_abspow(A v, A e) {
  const A a = v < (A)0 ? -v : v;
  return e == (A)1 ? a : e == (A)2 ? a * a : lt_m_pow(a, e);
}

template <typename T>
LT_D void lt_normalize_fwd_impl(T *out, T *norm, const T *in, long long n, long long d, double p_, double eps_) {
  typedef lt_acc_t<T> A;
  const A p = (A)p_, eps = (A)eps_;
  const bool inf = p_ > 1e308;
  for (long long r = blockIdx.x; r < n; r += gridDim.x) {
    const T *x = in + r * d;
    A s = 0;
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A v = lt_cast<A>(x[j]);
      s = inf ? lt_op_max()(s, v < (A)0 ? -v : v) : s + lt_abspow(v, p);
    }
    s = inf ? lt_block_reduce(s, lt_op_max(), (A)0) + eps : lt_block_reduce(s, lt_op_sum(), (A)0);
    if (!inf) s = p == (A)2 ? lt_m_sqrt(s + eps) : lt_m_pow(s + eps, (A)1 / p);
    if (threadIdx.x == 0) norm[r] = lt_cast<T>(s);
    for (long long j = threadIdx.x; j < d; j += blockDim.x) out[r * d + j] = lt_cast<T>(lt_cast<A>(x[j]) / s);
  }
}

template <typename T>
LT_D void lt_normalize_bwd_impl(T *gin, const T *gout, const T *in, const T *norm, long long n, long long d,
                                double p_, double eps_) {
  typedef lt_acc_t<T> A;
  const A p = (A)p_, eps = (A)eps_;
  const bool inf = p_ > 1e308, odd = p_ < 2 && fmod(p_, 2.0) != 0;
  for (long long r = blockIdx.x; r < n; r += gridDim.x) {
    const T *x = in + r * d, *g = gout + r * d;
    T *gi = gin + r * d;
    const A nm = lt_cast<A>(norm[r]);
    A dot = 0, s = 0;
    lt_vi<A> m = {(A)-1, d};
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A v = lt_cast<A>(x[j]);
      dot += v * lt_cast<A>(g[j]);
      if (inf) m = lt_op_vi<true>()(m, lt_vi<A>{v < (A)0 ? -v : v, j});
      else s += lt_abspow(v, p);
    }
    dot = lt_block_reduce(dot, lt_op_sum(), (A)0);
    if (inf) m = lt_block_reduce(m, lt_op_vi<true>(), lt_vi<A>{(A)-1, d});
    else s = lt_block_reduce(s, lt_op_sum(), (A)0) + eps;   /* norm^p */
    for (long long j = threadIdx.x; j < d; j += blockDim.x) {
      const A xj = lt_cast<A>(x[j]), gj = lt_cast<A>(g[j]);
      if (inf) {
        gi[j] = lt_cast<T>(j == m.i ? gj / nm - xj / nm * dot / (nm * nm) : gj / nm);
        continue;
      }
      A w;
      if (p == (A)2) w = xj;
      else if (odd) w = lt_m_pow((xj < (A)0 ? -xj : xj) + eps, p - (A)2) * xj;   /* eps: finite at x = 0 */
      else w = lt_abspow(xj, p - (A)2) * xj;
      gi[j] = lt_cast<T>(gj / nm - w * dot / (s * nm));
    }
  }
}

#define LT_NORMALIZE(T, N)                                                                                       \
  extern "C" __global__ void lt_normalize_fwd_##N(T *out, T *norm, const T *in, long long n, long long d,        \
                                                  double p, double eps) {                                      \
    lt_normalize_fwd_impl<T>(out, norm, in, n, d, p, eps);                                                       \
  }                                                                                                              \
  LT_EXPORT(lt_normalize_fwd_##N)                                                                                \
  extern "C" __global__ void lt_normalize_bwd_##N(T *gradIn, const T *gradOut, const T *in, const T *norm,      \
                                                  long long n, long long d, double p, double eps) {            \
    lt_normalize_bwd_impl<T>(gradIn, gradOut, in, norm, n, d, p, eps);                                           \
  }                                                                                                              \
  LT_EXPORT(lt_normalize_bwd_##N)

LT_IF_Float(LT_NORMALIZE(float, Float))
LT_IF_Double(LT_NORMALIZE(double, Double))
LT_IF_Half(LT_NORMALIZE(__half, Half))
