/* adaptive_pooling.cu — nn.SpatialAdaptiveAveragePooling on the GPU, as native/src/nn_pooling_spatial.c computes
 * it (the CPU kernel and the oracle): output cell o of n over an input side of length in averages
 * [floor(o*in/n), ceil((o+1)*in/n)). Planes x iH x iW in, planes x oH x oW out, contiguous.
 *
 *   lt_adaptive_avgpool_fwd_<T>(T* out, const T* in, q planes, q iH, q iW, q oH, q oW)   thread per output
 *   lt_adaptive_avgpool_bwd_<T>(T* gradIn, const T* gradOut, <the same 5 sizes>)         thread per input,
 *     summing gradOut / window area over the windows that hold it (a gather: no atomics, deterministic)
 * Sums in double.
 *
 * nn.SpatialAdaptiveMaxPooling likewise, with Torch7's index layout: ind[0 .. n) the row, ind[n .. 2n) the column
 * of each output's maximum, 1-based within its window (n = planes·oH·oW):
 *   lt_adaptive_maxpool_fwd_<T>(T* out, q* ind, const T* in, <the same 5 sizes>)   thread per output; the first
 *     maximum wins, the first NaN over a number
 *   lt_adaptive_maxpool_bwd_<T>(T* gradIn, const T* gradOut, const q* ind, <the same 5 sizes>)   thread per input,
 *     summing (in lt_acc_t<T>, in window order, as the CPU kernel adds) the gradOut of the windows whose maximum it is
 * T is Float, Double or Half (compared and summed in float, the averages' double rounded to float first: lt_store).
 */
#include "lt_cuda_common.cuh"

LT_D long long lt_adapt_start(long long o, long long n, long long in) { return o * in / n; }
LT_D long long lt_adapt_end(long long o, long long n, long long in) { return ((o + 1) * in + n - 1) / n; }

template <typename T>
LT_D void lt_adaptive_avgpool_fwd_impl(T *out, const T *in, long long planes, long long iH, long long iW,
                                       long long oH, long long oW) {
  LT_GRID_LOOP(long long, e, planes * oH * oW) {
    const long long ow = e % oW, oh = (e / oW) % oH, p = e / (oW * oH);
    const long long hs = lt_adapt_start(oh, oH, iH), he = lt_adapt_end(oh, oH, iH);
    const long long ws = lt_adapt_start(ow, oW, iW), we = lt_adapt_end(ow, oW, iW);
    const T *x = in + p * iH * iW;
    double s = 0;
    for (long long h = hs; h < he; h++)
      for (long long w = ws; w < we; w++) s += lt_cast<double>(x[h * iW + w]);
    out[e] = lt_store<T>(s / (double)((he - hs) * (we - ws)));
  }
}

template <typename T>
LT_D void lt_adaptive_avgpool_bwd_impl(T *gi, const T *go, long long planes, long long iH, long long iW,
                                       long long oH, long long oW) {
  LT_GRID_LOOP(long long, e, planes * iH * iW) {
    const long long w = e % iW, h = (e / iW) % iH, p = e / (iW * iH);
    const T *g = go + p * oH * oW;
    const long long oh0 = h * oH / iH, oh1 = ((h + 1) * oH + iH - 1) / iH;   /* the candidates */
    const long long ow0 = w * oW / iW, ow1 = ((w + 1) * oW + iW - 1) / iW;
    double s = 0;
    for (long long oh = oh0; oh < oh1 && oh < oH; oh++) {
      const long long hs = lt_adapt_start(oh, oH, iH), he = lt_adapt_end(oh, oH, iH);
      if (h < hs || h >= he) continue;
      for (long long ow = ow0; ow < ow1 && ow < oW; ow++) {
        const long long ws = lt_adapt_start(ow, oW, iW), we = lt_adapt_end(ow, oW, iW);
        if (w < ws || w >= we) continue;
        s += lt_cast<double>(g[oh * oW + ow]) / (double)((he - hs) * (we - ws));
      }
    }
    gi[e] = lt_store<T>(s);
  }
}

#define LT_ADAPTIVE(T, N)                                                                                       \
  extern "C" __global__ void lt_adaptive_avgpool_fwd_##N(T *out, const T *in, long long planes, long long iH,   \
                                                         long long iW, long long oH, long long oW) {            \
    lt_adaptive_avgpool_fwd_impl<T>(out, in, planes, iH, iW, oH, oW);                                           \
  }                                                                                                             \
  LT_EXPORT(lt_adaptive_avgpool_fwd_##N)                                                                        \
  extern "C" __global__ void lt_adaptive_avgpool_bwd_##N(T *gradIn, const T *gradOut, long long planes,         \
                                                         long long iH, long long iW, long long oH,              \
                                                         long long oW) {                                        \
    lt_adaptive_avgpool_bwd_impl<T>(gradIn, gradOut, planes, iH, iW, oH, oW);                                   \
  }                                                                                                             \
  LT_EXPORT(lt_adaptive_avgpool_bwd_##N)

LT_IF_Float(LT_ADAPTIVE(float, Float))
LT_IF_Double(LT_ADAPTIVE(double, Double))
LT_IF_Half(LT_ADAPTIVE(__half, Half))

template <typename T>
LT_D void lt_adaptive_maxpool_fwd_impl(T *out, long long *ind, const T *in, long long planes, long long iH,
                                       long long iW, long long oH, long long oW) {
  typedef lt_acc_t<T> A;
  const long long n = planes * oH * oW;
  LT_GRID_LOOP(long long, e, n) {
    const long long ow = e % oW, oh = (e / oW) % oH, p = e / (oW * oH);
    const long long hs = lt_adapt_start(oh, oH, iH), he = lt_adapt_end(oh, oH, iH);
    const long long ws = lt_adapt_start(ow, oW, iW), we = lt_adapt_end(ow, oW, iW);
    const T *x = in + p * iH * iW;
    A best = lt_cast<A>(x[hs * iW + ws]);
    long long bh = hs, bw = ws;
    for (long long h = hs; h < he; h++)
      for (long long w = ws; w < we; w++) {
        const A v = lt_cast<A>(x[h * iW + w]);
        if (v > best || (v != v && best == best)) best = v, bh = h, bw = w;
      }
    out[e] = lt_cast<T>(best);
    ind[e] = bh - hs + 1;
    ind[n + e] = bw - ws + 1;
  }
}

template <typename T>
LT_D void lt_adaptive_maxpool_bwd_impl(T *gi, const T *go, const long long *ind, long long planes, long long iH,
                                       long long iW, long long oH, long long oW) {
  typedef lt_acc_t<T> A;
  const long long n = planes * oH * oW;
  LT_GRID_LOOP(long long, e, planes * iH * iW) {
    const long long w = e % iW, h = (e / iW) % iH, p = e / (iW * iH);
    const long long oh0 = h * oH / iH, oh1 = ((h + 1) * oH + iH - 1) / iH;   /* the candidates */
    const long long ow0 = w * oW / iW, ow1 = ((w + 1) * oW + iW - 1) / iW;
    A s = (A)0;
    for (long long oh = oh0; oh < oh1 && oh < oH; oh++) {
      const long long hs = lt_adapt_start(oh, oH, iH);
      for (long long ow = ow0; ow < ow1 && ow < oW; ow++) {
        const long long o = (p * oH + oh) * oW + ow, ws = lt_adapt_start(ow, oW, iW);
        if (hs + ind[o] - 1 == h && ws + ind[n + o] - 1 == w) s += lt_cast<A>(go[o]);
      }
    }
    gi[e] = lt_cast<T>(s);
  }
}

#define LT_ADAPTIVE_MAX(T, N)                                                                                   \
  extern "C" __global__ void lt_adaptive_maxpool_fwd_##N(T *out, long long *ind, const T *in, long long planes, \
                                                         long long iH, long long iW, long long oH,              \
                                                         long long oW) {                                        \
    lt_adaptive_maxpool_fwd_impl<T>(out, ind, in, planes, iH, iW, oH, oW);                                      \
  }                                                                                                             \
  LT_EXPORT(lt_adaptive_maxpool_fwd_##N)                                                                        \
  extern "C" __global__ void lt_adaptive_maxpool_bwd_##N(T *gradIn, const T *gradOut, const long long *ind,     \
                                                         long long planes, long long iH, long long iW,          \
                                                         long long oH, long long oW) {                          \
    lt_adaptive_maxpool_bwd_impl<T>(gradIn, gradOut, ind, planes, iH, iW, oH, oW);                              \
  }                                                                                                             \
  LT_EXPORT(lt_adaptive_maxpool_bwd_##N)

LT_IF_Float(LT_ADAPTIVE_MAX(float, Float))
LT_IF_Double(LT_ADAPTIVE_MAX(double, Double))
LT_IF_Half(LT_ADAPTIVE_MAX(__half, Half))
