/* gather_map.cu — nn's gather layers on the GPU: the zero, reflection and replication paddings (spatial and
 * volumetric) and nearest-neighbour upsampling. native/src/nn_padding.c (the CPU kernels and the oracle) gives
 * each a per-axis map: output index o along axis a reads input index map_a[o], or nothing (-1, zero padding).
 * Planes x (D x H x W) in, planes x (oD x oH x oW) out, both contiguous (D = oD = 1 for the 2-D layers).
 *
 *   lt_map_fwd_<T>(T* out, const T* in, const q* maps, q planes, q D, q H, q W, q oD, q oH, q oW)
 *     maps: oD entries for D, then oH for H, then oW for W; thread per output element.
 *   lt_map_bwd_<T>(T* gradIn, const T* gradOut, const q* first, const q* outputs, q planes, q D, q H, q W,
 *                  q oD, q oH, q oW)
 *     the maps inverted, per axis: input index i is read by outputs[first[i] .. first[i+1]) (first: D+1, H+1,
 *     W+1 entries; outputs: oD, oH, oW entries, each axis's offsets relative to its own part); thread per input
 *     element, which sums the gradient of every output reading it (a gather: no atomics, deterministic).
 *
 * nn.LookupTable's rows (native/src/cuda_nn.c builds the lists on the host from the indices, 0-based here):
 *   lt_rows_acc_<T>(T* gradWeight, const T* gradOut, const q* rows, const q* first, const q* positions,
 *                   q nrows, q dim, A scale, q byFreq)
 *     gradWeight row rows[k] += s * (sum of the gradOut rows positions[first[k] .. first[k+1]), in that order),
 *     s = scale, or scale / (first[k+1] - first[k]) with byFreq; thread per (k, column): each element has one
 *     writer, so repeated indices need no atomics and the sum is deterministic.
 *   lt_rows_renorm_<T>(T* weight, const q* rows, q nrows, q dim, A maxNorm, A p)
 *     each listed row whose p-norm exceeds maxNorm scaled by maxNorm / (norm + 1e-7); thread per row.
 *
 * Linear upsampling (SpatialUpSamplingBilinear, VolumetricUpSamplingTrilinear; nn_padding.c's tables, corners
 * aligned): along each axis output o reads inputs i0[o] and i1[o] with weights 1 - w1[o] and w1[o].
 *   lt_lin_fwd_<T>(T* out, const T* in, const q* i0, const q* i1, const double* w1, q planes, q D, q H, q W,
 *                  q oD, q oH, q oW)
 *     i0, i1, w1: oD entries for D, then oH, then oW; thread per output, the CPU kernel's 8 taps in double.
 *   lt_lin_bwd_<T>(T* gradIn, const T* gradOut, const q* first, const q* outputs, const double* weights,
 *                  q planes, q D, q H, q W, q oD, q oH, q oW)
 *     per axis, input i is read by outputs[first[i] .. first[i+1]) with those weights (first: D+1, H+1, W+1
 *     entries; outputs and weights: 2·oD, 2·oH, 2·oW entries, each axis's offsets relative to its own part);
 *     thread per input element, summing weight products times gradOut (a gather: no atomics, deterministic).
 * Sums in lt_acc_t<T> (the linear ones in double, as the CPU kernel's accreal). The maps and linear upsampling are
 * Float, Double and Half (computing in float, each result rounded once: the Float kernel's rounded to half), the
 * rows too (a Half gradient row's sum in float added to the row in float, rounded once; no atomics to need half
 * ones).
 */
#include "lt_cuda_common.cuh"

template <typename T>
LT_D void lt_map_fwd_impl(T *out, const T *in, const long long *maps, long long planes, long long D, long long H,
                          long long W, long long oD, long long oH, long long oW) {
  const long long *md = maps, *mh = maps + oD, *mw = maps + oD + oH;
  LT_GRID_LOOP(long long, e, planes * oD * oH * oW) {
    const long long x = e % oW, y = (e / oW) % oH, z = (e / (oW * oH)) % oD, p = e / (oW * oH * oD);
    const long long iz = md[z], iy = mh[y], ix = mw[x];
    out[e] = (iz < 0 || iy < 0 || ix < 0) ? lt_cast<T>(0.0f) : in[((p * D + iz) * H + iy) * W + ix];
  }
}

template <typename T>
LT_D void lt_map_bwd_impl(T *gin, const T *gout, const long long *first, const long long *outputs,
                          long long planes, long long D, long long H, long long W, long long oD, long long oH,
                          long long oW) {
  typedef lt_acc_t<T> A;
  const long long *fd = first, *fh = first + D + 1, *fw = first + D + 1 + H + 1;
  const long long *od = outputs, *oh = outputs + oD, *ow = outputs + oD + oH;
  LT_GRID_LOOP(long long, e, planes * D * H * W) {
    const long long x = e % W, y = (e / W) % H, z = (e / (W * H)) % D, p = e / (W * H * D);
    A s = (A)0;
    for (long long a = fd[z]; a < fd[z + 1]; a++)
      for (long long b = fh[y]; b < fh[y + 1]; b++)
        for (long long c = fw[x]; c < fw[x + 1]; c++)
          s += lt_cast<A>(gout[((p * oD + od[a]) * oH + oh[b]) * oW + ow[c]]);
    gin[e] = lt_cast<T>(s);
  }
}

#define LT_MAP(T, N)                                                                                            \
  extern "C" __global__ void lt_map_fwd_##N(T *out, const T *in, const long long *maps, long long planes,       \
                                            long long D, long long H, long long W, long long oD, long long oH,  \
                                            long long oW) {                                                     \
    lt_map_fwd_impl<T>(out, in, maps, planes, D, H, W, oD, oH, oW);                                             \
  }                                                                                                             \
  LT_EXPORT(lt_map_fwd_##N)                                                                                     \
  extern "C" __global__ void lt_map_bwd_##N(T *gradIn, const T *gradOut, const long long *first,               \
                                            const long long *outputs, long long planes, long long D,            \
                                            long long H, long long W, long long oD, long long oH,               \
                                            long long oW) {                                                     \
    lt_map_bwd_impl<T>(gradIn, gradOut, first, outputs, planes, D, H, W, oD, oH, oW);                           \
  }                                                                                                             \
  LT_EXPORT(lt_map_bwd_##N)

LT_IF_Float(LT_MAP(float, Float))
LT_IF_Double(LT_MAP(double, Double))
LT_IF_Half(LT_MAP(__half, Half))

template <typename T>
LT_D void lt_rows_acc_impl(T *gw, const T *gout, const long long *rows, const long long *first,
                           const long long *positions, long long nrows, long long dim, lt_acc_t<T> scale,
                           long long by_freq) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, nrows * dim) {
    const long long k = e / dim, c = e % dim;
    A s = (A)0;
    for (long long j = first[k]; j < first[k + 1]; j++) s += lt_cast<A>(gout[positions[j] * dim + c]);
    const A f = by_freq ? scale / (A)(first[k + 1] - first[k]) : scale;
    T *w = gw + rows[k] * dim + c;
    *w = lt_cast<T>(lt_cast<A>(*w) + f * s);
  }
}

template <typename T>
LT_D void lt_rows_renorm_impl(T *w, const long long *rows, long long nrows, long long dim, lt_acc_t<T> max_norm,
                              lt_acc_t<T> p) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, k, nrows) {
    T *row = w + rows[k] * dim;
    A norm = (A)0;
    for (long long c = 0; c < dim; c++) {
      A a = lt_cast<A>(row[c]);
      a = a < (A)0 ? -a : a;
      norm += p == (A)1 ? a : p == (A)2 ? a * a : lt_m_pow(a, p);
    }
    norm = p == (A)1 ? norm : p == (A)2 ? lt_m_sqrt(norm) : lt_m_pow(norm, (A)1 / p);
    if (norm > max_norm) {
      const A f = max_norm / (norm + (A)1e-7);   /* (in A: a Half row scaled as the Float one, rounded once) */
      for (long long c = 0; c < dim; c++) row[c] = lt_cast<T>(lt_cast<A>(row[c]) * f);
    }
  }
}

#define LT_ROWS(T, N)                                                                                           \
  extern "C" __global__ void lt_rows_acc_##N(T *gradWeight, const T *gradOut, const long long *rows,           \
                                             const long long *first, const long long *positions,               \
                                             long long nrows, long long dim, lt_acc_t<T> scale,                \
                                             long long byFreq) {                                               \
    lt_rows_acc_impl<T>(gradWeight, gradOut, rows, first, positions, nrows, dim, scale, byFreq);               \
  }                                                                                                             \
  LT_EXPORT(lt_rows_acc_##N)                                                                                    \
  extern "C" __global__ void lt_rows_renorm_##N(T *weight, const long long *rows, long long nrows,             \
                                                long long dim, lt_acc_t<T> maxNorm, lt_acc_t<T> p) {           \
    lt_rows_renorm_impl<T>(weight, rows, nrows, dim, maxNorm, p);                                               \
  }                                                                                                             \
  LT_EXPORT(lt_rows_renorm_##N)

LT_IF_Float(LT_ROWS(float, Float))
LT_IF_Double(LT_ROWS(double, Double))
LT_IF_Half(LT_ROWS(__half, Half))

template <typename T>
LT_D void lt_lin_fwd_impl(T *out, const T *in, const long long *i0, const long long *i1, const double *w1,
                          long long planes, long long D, long long H, long long W, long long oD, long long oH,
                          long long oW) {
  LT_GRID_LOOP(long long, e, planes * oD * oH * oW) {
    const long long x = e % oW, y = (e / oW) % oH, z = (e / (oW * oH)) % oD, p = e / (oW * oH * oD);
    const long long zo = z, yo = oD + y, xo = oD + oH + x;
    const T *pl = in + p * D * H * W;
    const long long d0 = i0[zo], d1 = i1[zo], h0 = i0[yo], h1 = i1[yo], w0 = i0[xo], w1i = i1[xo];
    const double wd1 = w1[zo], wd0 = 1 - wd1, wh1 = w1[yo], wh0 = 1 - wh1, ww1 = w1[xo], ww0 = 1 - ww1;
#define LT_AT(d, h, w) lt_cast<double>(pl[((d) * H + (h)) * W + (w)])
    const double v0 = wh0 * (ww0 * LT_AT(d0, h0, w0) + ww1 * LT_AT(d0, h0, w1i)) +
                      wh1 * (ww0 * LT_AT(d0, h1, w0) + ww1 * LT_AT(d0, h1, w1i));
    const double v1 = wh0 * (ww0 * LT_AT(d1, h0, w0) + ww1 * LT_AT(d1, h0, w1i)) +
                      wh1 * (ww0 * LT_AT(d1, h1, w0) + ww1 * LT_AT(d1, h1, w1i));
#undef LT_AT
    out[e] = lt_store<T>(wd0 * v0 + wd1 * v1);
  }
}

template <typename T>
LT_D void lt_lin_bwd_impl(T *gin, const T *gout, const long long *first, const long long *outputs,
                          const double *weights, long long planes, long long D, long long H, long long W,
                          long long oD, long long oH, long long oW) {
  const long long *fd = first, *fh = first + D + 1, *fw = first + D + 1 + H + 1;
  const long long *od = outputs, *oh = outputs + 2 * oD, *ow = outputs + 2 * oD + 2 * oH;
  const double *wd = weights, *wh = weights + 2 * oD, *ww = weights + 2 * oD + 2 * oH;
  LT_GRID_LOOP(long long, e, planes * D * H * W) {
    const long long x = e % W, y = (e / W) % H, z = (e / (W * H)) % D, p = e / (W * H * D);
    const T *pl = gout + p * oD * oH * oW;
    double s = 0;
    for (long long a = fd[z]; a < fd[z + 1]; a++)
      for (long long b = fh[y]; b < fh[y + 1]; b++) {
        const double wab = wd[a] * wh[b];
        const T *row = pl + (od[a] * oH + oh[b]) * oW;
        for (long long c = fw[x]; c < fw[x + 1]; c++) s += wab * ww[c] * lt_cast<double>(row[ow[c]]);
      }
    gin[e] = lt_store<T>(s);
  }
}

#define LT_LIN(T, N)                                                                                            \
  extern "C" __global__ void lt_lin_fwd_##N(T *out, const T *in, const long long *i0, const long long *i1,     \
                                            const double *w1, long long planes, long long D, long long H,      \
                                            long long W, long long oD, long long oH, long long oW) {           \
    lt_lin_fwd_impl<T>(out, in, i0, i1, w1, planes, D, H, W, oD, oH, oW);                                       \
  }                                                                                                             \
  LT_EXPORT(lt_lin_fwd_##N)                                                                                     \
  extern "C" __global__ void lt_lin_bwd_##N(T *gradIn, const T *gradOut, const long long *first,               \
                                            const long long *outputs, const double *weights, long long planes, \
                                            long long D, long long H, long long W, long long oD, long long oH, \
                                            long long oW) {                                                     \
    lt_lin_bwd_impl<T>(gradIn, gradOut, first, outputs, weights, planes, D, H, W, oD, oH, oW);                  \
  }                                                                                                             \
  LT_EXPORT(lt_lin_bwd_##N)

LT_IF_Float(LT_LIN(float, Float))
LT_IF_Double(LT_LIN(double, Double))
LT_IF_Half(LT_LIN(__half, Half))
