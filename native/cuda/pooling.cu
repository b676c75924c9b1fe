/* pooling.cu — SpatialMaxPooling and SpatialAveragePooling forward and backward (nn's, and cudnn's
 * subclasses), with the semantics of the CPU kernels in native/src/nn_pooling.c.
 *
 * Contiguous planes: input (planes, iH, iW), output (planes, oH, oW), planes = N*C; the host gives the output
 * size (Torch7's rule with ceil mode and the dropped last window, see nn_pooling.c). Window (oh, ow) covers
 * rows oh*dH - padH .. + kH - 1 and columns ow*dW - padW .. + kW - 1; only its part inside the image is read.
 * Geometry arguments, all long long, in this order (written G below):
 *   planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW
 *
 * Max — one thread per output (grid-stride), any geometry:
 *   lt_maxpool_fwd_<T>(T *out, long long *indices, const T *in, G)
 *     scanning the window's rows, then columns: the first maximum wins, a NaN propagates (the last NaN wins);
 *     indices are 1-based positions in the input plane (h*iW + w + 1), Torch7's; a window with no value above
 *     -inf gives out = -inf and index 0 (no gradient).
 *   lt_maxpool_bwd_<T>(T *gradIn, const T *gradOut, const long long *indices, G)
 *     one thread per INPUT element, gathering gradOut from the windows that cover it and chose it, in the
 *     windows' order: deterministic and without atomics; writes every element of gradIn.
 * Average — one thread per output / per input element, any geometry:
 *   lt_avgpool_fwd_<T>(T *out, const T *in, G, int count_include_pad)
 *     the window's sum (rows of column sums, in A) divided by the window clipped to the padded image
 *     (count_include_pad) or to the image
 *   lt_avgpool_bwd_<T>(T *gradIn, const T *gradOut, G, int count_include_pad)
 *     gradIn = sum over the windows covering the element of gradOut / that window's divisor (gathered).
 * Plane-indexed scatter and gather (nn_pooling_spatial.c's plane_scatter / plane_gather: SpatialMaxUnpooling,
 * SpatialDilatedMaxPooling's backward), ind holding 1-based positions in the other plane, 0 for none:
 *   lt_plane_scatter_<T>(T *dst, const T *src, const long long *ind, q planes, q L, q dplane)
 *     dst plane p zeroed, then dst[p][ind[p][l] - 1] += src[p][l] for l in order: thread per plane, the CPU
 *     kernel's order (repeated positions sum as there; no atomics)
 *   lt_plane_gather_<T>(T *dst, const T *src, const long long *ind, q planes, q L, q splane)
 *     dst[p][l] = src[p][ind[p][l] - 1] (0 for ind 0); thread per element
 *   lt_dilmax_fwd_<T>(T *out, long long *ind, const T *in, q planes, q iH, q iW, q oH, q oW, q kH, q kW, q dH,
 *                     q dW, q padH, q padW, q dilH, q dilW)
 *     SpatialDilatedMaxPooling: the window's taps inside the image, the first maximum (a NaN wins, the last one),
 *     ind = its plane position + 1; no tap: -inf and 0; thread per output
 *   lt_tmaxpool_fwd_<T>(T *out, long long *ind, const T *in, q N, q T, q F, q oT, q kW, q dW)
 *     TemporalMaxPooling over (N, T, F): per (n, t, f) the first maximum of the kW frames from t·dW (the first NaN
 *     over a number), ind its 0-based frame within the window (Torch7's); thread per output
 *   lt_tmaxpool_bwd_<T>(T *gradIn, const T *gradOut, const long long *ind, q N, q T, q F, q oT, q kW, q dW)
 *     thread per (n, f) column: zeroed, then each window's gradient added at its maximum, in order (overlapping
 *     windows sum as the CPU kernel sums them)
 * Sub-sampling (SpatialSubSampling; TemporalSubSampling as an (N, 1, T, F) image with kT x 1 windows), G without
 * padding and C planes per sample; the weight and bias index c is the output's plane mod C, or with byCol its
 * column (TemporalSubSampling's feature):
 *   lt_subsample_fwd_<T>(T *out, const T *in, const T *w, const T *b, G, q C, int byCol)
 *     out = w[c] * (the window's sum) + b[c], in A, rounded once; thread per output
 *   lt_subsample_bwd_<T>(T *gradIn, const T *gradOut, const T *w, G, q C, int byCol)
 *     gradIn = sum over the windows covering the element of w[c] * gradOut (gathered); thread per input element
 *   lt_subsample_acc_<T>(T *gradWeight, T *gradBias, const T *gradOut, const T *in, G, q C, int byCol, A scale)
 *     gradWeight[c] += scale * sum of gradOut * window sum, gradBias[c] += scale * sum of gradOut over the outputs
 *     of index c, summed in A; block per index (blockDim.x a multiple of 32)
 * FeatureLPPooling over contiguous (B, F, S): output (B, oF, S), window o the features o*stride .. + width - 1:
 *   lt_flp_fwd_<T>(T *out, const T *in, q B, q F, q S, q oF, q width, q stride, double power)
 *     out = (sum of x^power over the window)^(1/power); thread per output
 *   lt_flp_bwd_<T>(T *gradIn, const T *gradOut, const T *in, const T *out, q B, q F, q S, q oF, q width, q stride,
 *                  double power)
 *     gradIn = sum over the windows o holding the feature, in order, of gradOut * (x / out)^(power - 1); outputs
 *     of 0 pass none (the CPU kernel's rule); thread per input element (gathered)
 * T is Float, Double or Half; computed in A = lt_acc_t<T>.
 */
#include "lt_cuda_common.cuh"

struct lt_pool_geom {
  long long planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW;
};

/* The first and one-past-last outputs along a side whose windows cover input position x. */
LT_D void lt_pool_covering(long long x, long long k, long long d, long long pad, long long out, long long *lo,
                           long long *hi) {
  const long long p = x + pad;
  *lo = p < k ? 0 : (p - k) / d + 1;
  const long long last = p / d;
  *hi = last < out - 1 ? last + 1 : out;
}

/* Output e's plane and its window clipped to the image: rows [h0, h1), columns [w0, w1). */
struct lt_pool_window {
  long long plane, oh, ow, h0, h1, w0, w1;
};
LT_D lt_pool_window lt_pool_window_of(const lt_pool_geom &g, long long e) {
  lt_pool_window r;
  r.ow = e % g.oW, r.oh = (e / g.oW) % g.oH, r.plane = e / (g.oW * g.oH);
  const long long h = r.oh * g.dH - g.padH, w = r.ow * g.dW - g.padW;
  r.h0 = h > 0 ? h : 0, r.h1 = h + g.kH < g.iH ? h + g.kH : g.iH;
  r.w0 = w > 0 ? w : 0, r.w1 = w + g.kW < g.iW ? w + g.kW : g.iW;
  return r;
}

/* Input element e's plane and position, and the outputs whose windows cover it: rows [oh0, oh1), columns
 * [ow0, ow1). */
struct lt_pool_cover {
  long long plane, h, w, oh0, oh1, ow0, ow1;
};
LT_D lt_pool_cover lt_pool_cover_of(const lt_pool_geom &g, long long e) {
  lt_pool_cover r;
  r.w = e % g.iW, r.h = (e / g.iW) % g.iH, r.plane = e / (g.iW * g.iH);
  lt_pool_covering(r.h, g.kH, g.dH, g.padH, g.oH, &r.oh0, &r.oh1);
  lt_pool_covering(r.w, g.kW, g.dW, g.padW, g.oW, &r.ow0, &r.ow1);
  return r;
}

/* Window o's divisor along a side: clipped to the padded image, or to the image. */
LT_D long long lt_pool_span(long long o, long long k, long long d, long long pad, long long in, int include_pad) {
  const long long a = o * d - pad, b = a + k;
  if (include_pad) return (b < in + pad ? b : in + pad) - a;
  return (b < in ? b : in) - (a > 0 ? a : 0);
}

template <typename T>
LT_D void lt_maxpool_fwd(T *out, long long *ind, const T *in, const lt_pool_geom g) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.oH * g.oW) {
    const lt_pool_window win = lt_pool_window_of(g, e);
    const T *x = in + win.plane * g.iH * g.iW;
    A m = lt_lowest<A>();
    long long at = -1;
    for (long long h = win.h0; h < win.h1; ++h)
      for (long long w = win.w0; w < win.w1; ++w) {
        const A v = lt_cast<A>(x[h * g.iW + w]);
        if (v > m || lt_isnan(v)) m = v, at = h * g.iW + w;
      }
    out[e] = lt_cast<T>(m);
    ind[e] = at + 1;
  }
}

template <typename T>
LT_D void lt_maxpool_bwd(T *grad_in, const T *grad_out, const long long *ind, const lt_pool_geom g) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.iH * g.iW) {
    const lt_pool_cover c = lt_pool_cover_of(g, e);
    const long long base = c.plane * g.oH * g.oW, self = c.h * g.iW + c.w + 1;
    A s = 0;
    for (long long oh = c.oh0; oh < c.oh1; ++oh)
      for (long long ow = c.ow0; ow < c.ow1; ++ow)
        if (ind[base + oh * g.oW + ow] == self) s += lt_cast<A>(grad_out[base + oh * g.oW + ow]);
    grad_in[e] = lt_cast<T>(s);
  }
}

/* The sum of a window's part inside the image (rows of column sums), in A. */
template <typename T>
LT_D lt_acc_t<T> lt_window_sum(const T *in, const lt_pool_geom &g, const lt_pool_window &win) {
  typedef lt_acc_t<T> A;
  const T *x = in + win.plane * g.iH * g.iW;
  A s = 0;
  for (long long h = win.h0; h < win.h1; ++h) {
    A row = 0;
    for (long long w = win.w0; w < win.w1; ++w) row += lt_cast<A>(x[h * g.iW + w]);
    s += row;
  }
  return s;
}

template <typename T>
LT_D void lt_avgpool_fwd(T *out, const T *in, const lt_pool_geom g, int include_pad) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.oH * g.oW) {
    const lt_pool_window win = lt_pool_window_of(g, e);
    const A s = lt_window_sum(in, g, win);
    const long long div = lt_pool_span(win.oh, g.kH, g.dH, g.padH, g.iH, include_pad) *
                          lt_pool_span(win.ow, g.kW, g.dW, g.padW, g.iW, include_pad);
    out[e] = lt_cast<T>(s / (A)div);
  }
}

template <typename T>
LT_D void lt_avgpool_bwd(T *grad_in, const T *grad_out, const lt_pool_geom g, int include_pad) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.iH * g.iW) {
    const lt_pool_cover c = lt_pool_cover_of(g, e);
    const T *go = grad_out + c.plane * g.oH * g.oW;
    A s = 0;
    for (long long oh = c.oh0; oh < c.oh1; ++oh) {
      const long long dh = lt_pool_span(oh, g.kH, g.dH, g.padH, g.iH, include_pad);
      for (long long ow = c.ow0; ow < c.ow1; ++ow)
        s += lt_cast<A>(go[oh * g.oW + ow]) / (A)(dh * lt_pool_span(ow, g.kW, g.dW, g.padW, g.iW, include_pad));
    }
    grad_in[e] = lt_cast<T>(s);
  }
}

#define LT_POOL_G                                                                                         \
  long long planes, long long iH, long long iW, long long oH, long long oW, long long kH, long long kW,     \
      long long dH, long long dW, long long padH, long long padW
#define LT_POOL_MAKE_G {planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW}

#define LT_POOL(T, N)                                                                                     \
  extern "C" __global__ void lt_maxpool_fwd_##N(T *out, long long *indices, const T *in, LT_POOL_G) {     \
    lt_maxpool_fwd<T>(out, indices, in, lt_pool_geom LT_POOL_MAKE_G);                                     \
  }                                                                                                       \
  LT_EXPORT(lt_maxpool_fwd_##N)                                                                           \
  extern "C" __global__ void lt_maxpool_bwd_##N(T *gradIn, const T *gradOut, const long long *indices,    \
                                                LT_POOL_G) {                                              \
    lt_maxpool_bwd<T>(gradIn, gradOut, indices, lt_pool_geom LT_POOL_MAKE_G);                             \
  }                                                                                                       \
  LT_EXPORT(lt_maxpool_bwd_##N)                                                                           \
  extern "C" __global__ void lt_avgpool_fwd_##N(T *out, const T *in, LT_POOL_G, int count_include_pad) {  \
    lt_avgpool_fwd<T>(out, in, lt_pool_geom LT_POOL_MAKE_G, count_include_pad);                           \
  }                                                                                                       \
  LT_EXPORT(lt_avgpool_fwd_##N)                                                                           \
  extern "C" __global__ void lt_avgpool_bwd_##N(T *gradIn, const T *gradOut, LT_POOL_G,                   \
                                                int count_include_pad) {                                  \
    lt_avgpool_bwd<T>(gradIn, gradOut, lt_pool_geom LT_POOL_MAKE_G, count_include_pad);                   \
  }                                                                                                       \
  LT_EXPORT(lt_avgpool_bwd_##N)

LT_FOR_FLOAT_TYPES(LT_POOL)

template <typename T>
LT_D void lt_plane_scatter_impl(T *dst, const T *src, const long long *ind, long long planes, long long L,
                                long long dplane) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, p, planes) {
    T *d = dst + p * dplane;
    for (long long i = 0; i < dplane; i++) d[i] = lt_cast<T>((A)0);
    for (long long l = 0; l < L; l++) {
      const long long k = ind[p * L + l];
      if (k) d[k - 1] = lt_cast<T>(lt_cast<A>(d[k - 1]) + lt_cast<A>(src[p * L + l]));
    }
  }
}

template <typename T>
LT_D void lt_plane_gather_impl(T *dst, const T *src, const long long *ind, long long planes, long long L,
                               long long splane) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, planes * L) {
    const long long k = ind[e];
    dst[e] = k ? src[(e / L) * splane + k - 1] : lt_cast<T>((A)0);
  }
}

template <typename T>
LT_D void lt_dilmax_fwd_impl(T *out, long long *ind, const T *in, long long planes, long long iH, long long iW,
                             long long oH, long long oW, long long kH, long long kW, long long dH, long long dW,
                             long long padH, long long padW, long long dilH, long long dilW) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, planes * oH * oW) {
    const long long ow = e % oW, oh = (e / oW) % oH, p = e / (oW * oH);
    const T *x = in + p * iH * iW;
    const long long h0 = oh * dH - padH, w0 = ow * dW - padW;
    long long at = -1;
    A best = lt_lowest<A>();   /* -inf */
    for (long long i = 0; i < kH; i++) {
      const long long h = h0 + i * dilH;
      if (h < 0 || h >= iH) continue;
      for (long long j = 0; j < kW; j++) {
        const long long w = w0 + j * dilW;
        if (w < 0 || w >= iW) continue;
        const A v = lt_cast<A>(x[h * iW + w]);
        if (at < 0 || v > best || v != v) best = v, at = h * iW + w;
      }
    }
    out[e] = lt_cast<T>(best);
    ind[e] = at + 1;
  }
}

#define LT_PLANE_INDEX(T, N)                                                                                    \
  extern "C" __global__ void lt_plane_scatter_##N(T *dst, const T *src, const long long *ind, long long planes,  \
                                                  long long L, long long dplane) {                              \
    lt_plane_scatter_impl<T>(dst, src, ind, planes, L, dplane);                                                 \
  }                                                                                                             \
  LT_EXPORT(lt_plane_scatter_##N)                                                                               \
  extern "C" __global__ void lt_plane_gather_##N(T *dst, const T *src, const long long *ind, long long planes,   \
                                                 long long L, long long splane) {                               \
    lt_plane_gather_impl<T>(dst, src, ind, planes, L, splane);                                                  \
  }                                                                                                             \
  LT_EXPORT(lt_plane_gather_##N)                                                                                \
  extern "C" __global__ void lt_dilmax_fwd_##N(T *out, long long *ind, const T *in, long long planes,           \
                                               long long iH, long long iW, long long oH, long long oW,          \
                                               long long kH, long long kW, long long dH, long long dW,          \
                                               long long padH, long long padW, long long dilH, long long dilW) {\
    lt_dilmax_fwd_impl<T>(out, ind, in, planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW, dilH, dilW);        \
  }                                                                                                             \
  LT_EXPORT(lt_dilmax_fwd_##N)

LT_IF_Float(LT_PLANE_INDEX(float, Float))
LT_IF_Double(LT_PLANE_INDEX(double, Double))
LT_IF_Half(LT_PLANE_INDEX(__half, Half))

template <typename T>
LT_D void lt_tmaxpool_fwd_impl(T *out, long long *ind, const T *in, long long N, long long Tn, long long F,
                               long long oT, long long kW, long long dW) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, N * oT * F) {
    const long long f = e % F, t = (e / F) % oT, n = e / (F * oT);
    const T *x = in + (n * Tn + t * dW) * F + f;
    A best = lt_cast<A>(x[0]);
    long long at = 0;
    for (long long k = 1; k < kW; k++) {
      const A v = lt_cast<A>(x[k * F]);
      if (v > best || (v != v && best == best)) best = v, at = k;
    }
    out[e] = lt_cast<T>(best);
    ind[e] = at;
  }
}

template <typename T>
LT_D void lt_tmaxpool_bwd_impl(T *gi, const T *go, const long long *ind, long long N, long long Tn, long long F,
                               long long oT, long long kW, long long dW) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, c, N * F) {
    const long long n = c / F, f = c % F;
    for (long long t = 0; t < Tn; t++) gi[(n * Tn + t) * F + f] = lt_cast<T>((A)0);
    for (long long t = 0; t < oT; t++) {
      const long long o = (n * oT + t) * F + f, k = ind[o];
      if (k < 0 || k >= kW) continue;   /* checked by the host first */
      T *g = gi + (n * Tn + t * dW + k) * F + f;
      *g = lt_cast<T>(lt_cast<A>(*g) + lt_cast<A>(go[o]));
    }
  }
}

#define LT_TMAXPOOL(T, N)                                                                                       \
  extern "C" __global__ void lt_tmaxpool_fwd_##N(T *out, long long *ind, const T *in, long long Nn, long long Tn, \
                                                 long long F, long long oT, long long kW, long long dW) {       \
    lt_tmaxpool_fwd_impl<T>(out, ind, in, Nn, Tn, F, oT, kW, dW);                                              \
  }                                                                                                             \
  LT_EXPORT(lt_tmaxpool_fwd_##N)                                                                                \
  extern "C" __global__ void lt_tmaxpool_bwd_##N(T *gradIn, const T *gradOut, const long long *ind, long long Nn, \
                                                 long long Tn, long long F, long long oT, long long kW,         \
                                                 long long dW) {                                                \
    lt_tmaxpool_bwd_impl<T>(gradIn, gradOut, ind, Nn, Tn, F, oT, kW, dW);                                       \
  }                                                                                                             \
  LT_EXPORT(lt_tmaxpool_bwd_##N)

LT_IF_Float(LT_TMAXPOOL(float, Float))
LT_IF_Double(LT_TMAXPOOL(double, Double))
LT_IF_Half(LT_TMAXPOOL(__half, Half))

template <typename T>
LT_D void lt_subsample_fwd(T *out, const T *in, const T *w, const T *b, const lt_pool_geom g, long long C,
                           int by_col) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.oH * g.oW) {
    const long long c = by_col ? e % g.oW : (e / (g.oH * g.oW)) % C;
    out[e] = lt_cast<T>(lt_cast<A>(w[c]) * lt_window_sum(in, g, lt_pool_window_of(g, e)) + lt_cast<A>(b[c]));
  }
}

template <typename T>
LT_D void lt_subsample_bwd(T *grad_in, const T *grad_out, const T *w, const lt_pool_geom g, long long C,
                           int by_col) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.planes * g.iH * g.iW) {
    const lt_pool_cover c = lt_pool_cover_of(g, e);
    const T *go = grad_out + c.plane * g.oH * g.oW;
    A s = 0;
    for (long long oh = c.oh0; oh < c.oh1; ++oh)
      for (long long ow = c.ow0; ow < c.ow1; ++ow)
        s += lt_cast<A>(w[by_col ? ow : c.plane % C]) * lt_cast<A>(go[oh * g.oW + ow]);
    grad_in[e] = lt_cast<T>(s);
  }
}

template <typename T>
LT_D void lt_subsample_acc(T *gw, T *gb, const T *grad_out, const T *in, const lt_pool_geom g, long long C,
                           int by_col, lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  const long long plane = g.oH * g.oW, nidx = by_col ? g.oW : C;
  const long long m = by_col ? g.planes * g.oH : (g.planes / C) * plane;   /* the outputs of one index */
  for (long long k = blockIdx.x; k < nidx; k += gridDim.x) {
    A sw = 0, sb = 0;
    for (long long j = threadIdx.x; j < m; j += blockDim.x) {
      const long long e = by_col ? j * g.oW + k : ((j / plane) * C + k) * plane + j % plane;
      const A d = lt_cast<A>(grad_out[e]);
      sw += d * lt_window_sum(in, g, lt_pool_window_of(g, e));
      sb += d;
    }
    sw = lt_block_reduce(sw, lt_op_sum(), (A)0);
    sb = lt_block_reduce(sb, lt_op_sum(), (A)0);
    if (threadIdx.x == 0) {
      gw[k] = lt_cast<T>(lt_cast<A>(gw[k]) + scale * sw);
      gb[k] = lt_cast<T>(lt_cast<A>(gb[k]) + scale * sb);
    }
  }
}

#define LT_SUBSAMPLE(T, N)                                                                                    \
  extern "C" __global__ void lt_subsample_fwd_##N(T *out, const T *in, const T *w, const T *b, LT_POOL_G,     \
                                                  long long C, int byCol) {                                   \
    lt_subsample_fwd<T>(out, in, w, b, lt_pool_geom LT_POOL_MAKE_G, C, byCol);                                \
  }                                                                                                           \
  LT_EXPORT(lt_subsample_fwd_##N)                                                                             \
  extern "C" __global__ void lt_subsample_bwd_##N(T *gradIn, const T *gradOut, const T *w, LT_POOL_G,         \
                                                  long long C, int byCol) {                                   \
    lt_subsample_bwd<T>(gradIn, gradOut, w, lt_pool_geom LT_POOL_MAKE_G, C, byCol);                           \
  }                                                                                                           \
  LT_EXPORT(lt_subsample_bwd_##N)                                                                             \
  extern "C" __global__ void lt_subsample_acc_##N(T *gradWeight, T *gradBias, const T *gradOut, const T *in,  \
                                                  LT_POOL_G, long long C, int byCol, lt_acc_t<T> scale) {     \
    lt_subsample_acc<T>(gradWeight, gradBias, gradOut, in, lt_pool_geom LT_POOL_MAKE_G, C, byCol, scale);     \
  }                                                                                                           \
  LT_EXPORT(lt_subsample_acc_##N)

LT_FOR_FLOAT_TYPES(LT_SUBSAMPLE)

template <typename T>
LT_D void lt_flp_fwd(T *out, const T *in, long long B, long long F, long long S, long long oF, long long width,
                     long long stride, double power) {
  typedef lt_acc_t<T> A;
  const A p = (A)power;
  LT_GRID_LOOP(long long, e, B * oF * S) {
    const long long s = e % S, o = (e / S) % oF, b = e / (S * oF);
    const T *x = in + (b * F + o * stride) * S + s;
    A v = 0;
    for (long long i = 0; i < width; i++) v += lt_m_pow(lt_cast<A>(x[i * S]), p);
    out[e] = lt_cast<T>(lt_m_pow(v, (A)1 / p));
  }
}

template <typename T>
LT_D void lt_flp_bwd(T *grad_in, const T *grad_out, const T *in, const T *out, long long B, long long F,
                     long long S, long long oF, long long width, long long stride, double power) {
  typedef lt_acc_t<T> A;
  const A p1 = (A)power - (A)1;
  LT_GRID_LOOP(long long, e, B * F * S) {
    const long long s = e % S, f = (e / S) % F, b = e / (S * F);
    const long long lo = f < width ? 0 : (f - width) / stride + 1, last = f / stride;
    const long long hi = last < oF - 1 ? last + 1 : oF;
    const A x = lt_cast<A>(in[e]);
    A g = 0;
    for (long long o = lo; o < hi; o++) {
      const long long k = (b * oF + o) * S + s;
      const A y = lt_cast<A>(out[k]);
      if (y != (A)0) g += lt_cast<A>(grad_out[k]) * lt_m_pow(x / y, p1);
    }
    grad_in[e] = lt_cast<T>(g);
  }
}

#define LT_FLP(T, N)                                                                                          \
  extern "C" __global__ void lt_flp_fwd_##N(T *out, const T *in, long long B, long long F, long long S,       \
                                            long long oF, long long width, long long stride, double power) {  \
    lt_flp_fwd<T>(out, in, B, F, S, oF, width, stride, power);                                                \
  }                                                                                                           \
  LT_EXPORT(lt_flp_fwd_##N)                                                                                   \
  extern "C" __global__ void lt_flp_bwd_##N(T *gradIn, const T *gradOut, const T *in, const T *out,           \
                                            long long B, long long F, long long S, long long oF,              \
                                            long long width, long long stride, double power) {                \
    lt_flp_bwd<T>(gradIn, gradOut, in, out, B, F, S, oF, width, stride, power);                               \
  }                                                                                                           \
  LT_EXPORT(lt_flp_bwd_##N)

LT_FOR_FLOAT_TYPES(LT_FLP)
