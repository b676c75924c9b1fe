/* lrn.cu — nn.SpatialCrossMapLRN (and cudnn's) on the GPU: local response normalization across channels, as
 * native/src/nn_pooling_spatial.c computes it (the CPU kernel and the oracle). Input N x C x S (S = H*W),
 * contiguous; one thread per (n, s) walks the channels with a running sum, in double. T is Float, Double or Half:
 * scale and out rounded to lt_acc_t<T> (float for Half) as the Float kernel rounds them, the output computed from
 * that scale, then stored in T (lt_store): a Half result is the Float kernel's rounded once to half.
 *
 *   lt_lrn_fwd_<T>(T* out, T* scale, const T* in, q N, q C, q S, int size, double alpha, double beta, double k)
 *     scale_c = k + alpha/size * sum of x^2 over channels [c - size/2, c + (size-1)/2]; out = x * scale^-beta.
 *   lt_lrn_bwd_<T>(T* gradIn, const T* in, const T* gradOut, const T* out, const T* scale, q N, q C, q S,
 *                  int size, double alpha, double beta)
 *     gi_c = go_c * scale_c^-beta - 2 alpha beta / size * x_c * sum over c' in [c - (size-1)/2, c + size/2] of
 *     go_c' * out_c' / scale_c'.
 */
#include "lt_cuda_common.cuh"

template <typename T>
LT_D void lt_lrn_fwd_impl(T *out, T *scale, const T *in, long long N, long long C, long long S, int size,
                          double alpha, double beta, double k) {
  typedef lt_acc_t<T> A;
  const long long lo = size / 2, hi = (size - 1) / 2;
  LT_GRID_LOOP(long long, ns, N * S) {
    const long long off = (ns / S) * C * S + ns % S;
    const T *x = in + off;
    T *y = out + off, *sc = scale + off;
#define LT_X(c) lt_cast<double>(x[(c) * S])
    double sum = 0;
    for (long long c = 0; c < hi && c < C; c++) sum += LT_X(c) * LT_X(c);
    for (long long c = 0; c < C; c++) {
      const long long add = c + hi, drop = c - lo - 1;
      if (add < C) sum += LT_X(add) * LT_X(add);
      if (drop >= 0) sum -= LT_X(drop) * LT_X(drop);
      const A s = (A)(k + alpha / size * sum);
      sc[c * S] = lt_cast<T>(s);
      y[c * S] = lt_store<T>(LT_X(c) * pow((double)s, -beta));
    }
#undef LT_X
  }
}

template <typename T>
LT_D void lt_lrn_bwd_impl(T *gi, const T *in, const T *go, const T *out, const T *scale, long long N, long long C,
                          long long S, int size, double alpha, double beta) {
  const long long lo = size / 2, hi = (size - 1) / 2;
  const double coef = 2.0 * alpha * beta / size;
  LT_GRID_LOOP(long long, ns, N * S) {
    const long long off = (ns / S) * C * S + ns % S;
    const T *x = in + off, *g = go + off, *y = out + off, *sc = scale + off;
    T *r = gi + off;
#define LT_AT(p, c) lt_cast<double>(p[(c) * S])
#define LT_TERM(c) (LT_AT(g, c) * LT_AT(y, c) / LT_AT(sc, c))
    double sum = 0;
    for (long long c = 0; c < lo && c < C; c++) sum += LT_TERM(c);
    for (long long c = 0; c < C; c++) {
      const long long add = c + lo, drop = c - hi - 1;
      if (add < C) sum += LT_TERM(add);
      if (drop >= 0) sum -= LT_TERM(drop);
      r[c * S] = lt_store<T>(LT_AT(g, c) * pow(LT_AT(sc, c), -beta) - coef * LT_AT(x, c) * sum);
    }
#undef LT_TERM
#undef LT_AT
  }
}

#define LT_LRN(T, N)                                                                                            \
  extern "C" __global__ void lt_lrn_fwd_##N(T *out, T *scale, const T *in, long long Nn, long long C,           \
                                            long long S, int size, double alpha, double beta, double k) {       \
    lt_lrn_fwd_impl<T>(out, scale, in, Nn, C, S, size, alpha, beta, k);                                         \
  }                                                                                                             \
  LT_EXPORT(lt_lrn_fwd_##N)                                                                                     \
  extern "C" __global__ void lt_lrn_bwd_##N(T *gradIn, const T *in, const T *gradOut, const T *out,             \
                                            const T *scale, long long Nn, long long C, long long S, int size,   \
                                            double alpha, double beta) {                                        \
    lt_lrn_bwd_impl<T>(gradIn, in, gradOut, out, scale, Nn, C, S, size, alpha, beta);                           \
  }                                                                                                             \
  LT_EXPORT(lt_lrn_bwd_##N)

LT_IF_Float(LT_LRN(float, Float))
LT_IF_Double(LT_LRN(double, Double))
LT_IF_Half(LT_LRN(__half, Half))
