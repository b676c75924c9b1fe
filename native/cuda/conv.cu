/* conv.cu — the pieces of an im2col + GEMM convolution (nn.SpatialConvolution, SpatialConvolutionMM,
 * SpatialDilatedConvolution and the cudnn.* convolutions on cutorch's GPU backend; the GEMMs are cuBLAS's).
 *
 * One image is (channels, height, width), contiguous. Its column matrix has K = channels*kH*kW rows and
 * P = oH*oW columns, contiguous: row (c*kH + i)*kW + j, column oh*oW + ow holds the pixel at
 *   h = oh*dH - padH + i*dilH,  w = ow*dW - padW + j*dilW   (0 outside the image: the padding).
 *
 *   lt_im2col_<T>(T *col, const T *im, long long channels, long long height, long long width,
 *                 long long kH, long long kW, long long padH, long long padW, long long dH, long long dW,
 *                 long long dilH, long long dilW, long long oH, long long oW)
 *     writes every element of col; one thread per (c, oh, ow), grid-stride, any geometry.
 *   lt_col2im_<T>(T *im, const T *col, <the same 13 sizes>)
 *     the adjoint: im = the sum, over the column entries that read each pixel, of those entries; one thread
 *     per pixel gathering its taps in (i, j) order (no atomics, so the result does not depend on the
 *     schedule); writes every element of im. Grid-stride, any geometry.
 *   lt_conv_bias_add_<T>(T *out, const T *bias, long long outer, long long channels, long long inner)
 *     out (outer, channels, inner), contiguous: out[o, c, k] += bias[c]. Grid-stride, any geometry.
 *   lt_conv_bias_grad_<T>(T *gradBias, const T *gradOut, long long outer, long long channels, long long inner,
 *                         lt_acc_t<T> scale)
 *     gradBias[c] += scale * sum over (o, k) of gradOut[o, c, k], summed in lt_acc_t<T>. One block per
 *     channel (grid-stride over channels); blockDim.x a multiple of 32, at most 1024.
 *   lt_conv_bias_partial_<T>(A *partial, const T *gradOut, long long outer, long long channels, long long inner,
 *                            long long chunks)
 *   lt_conv_bias_finish_<T>(T *gradBias, const A *partial, long long channels, long long chunks, A scale)
 *     the same sum over more blocks, where a block per channel would leave the GPU idle (few channels of many
 *     values: a first layer's 64 channels of N x 112 x 112): each channel's N*inner values cut in `chunks` runs, a
 *     block per (channel, run) sums its run into partial[c * chunks + run] (blockDim.x as above), then a thread per
 *     channel adds scale * its partials, in run order (deterministic; no atomics). Grid-stride, any grid.
 * T is Float, Double or Half (cuBLAS multiplies half through cublasGemmEx with float accumulation); A =
 * lt_acc_t<T> (float for Half). 64-bit indices throughout.
 *
 * nn.TemporalRowConvolution (each feature row its own kW-tap kernel, weight (F, 1, kW) contiguous) on (N, F, T)
 * views of any strides (sN, sF, sT in elements; x the input, y the output or gradOutput, N x F x oT):
 *   lt_rowconv_fwd_<T>(T *y, const T *x, const T *w, const T *b (or 0), q N, q F, q T, q oT, q kW, q dW,
 *                      q xsN, q xsF, q xsT, q ysN, q ysF, q ysT)
 *     y[n, f, t] = b[f] + sum_k w[f, k] x[n, f, t dW + k], in A, rounded once; thread per output
 *   lt_rowconv_bwd_<T>(T *gradIn, const T *gradOut, const T *w, <the same 12 sizes and strides>)
 *     gradIn (x's strides) = sum over the outputs t whose taps read the frame of w[f, s - t dW] gradOut[n, f, t],
 *     gathered (no atomics); every element written; thread per input element
 *   lt_rowconv_acc_<T>(T *gradWeight, T *gradBias (or 0), const T *gradOut, const T *x, <the 12>, A scale)
 *     gradWeight[f, k] += scale sum_{n,t} gradOut[n, f, t] x[n, f, t dW + k], gradBias[f] += scale sum gradOut,
 *     summed in A; block per feature
 *
 * nn.SpatialConvolutionLocal (a kernel per output position: weight (oH, oW, O, C, kH, kW), bias (O, oH, oW), both
 * contiguous) on contiguous x (N, C, H, W) and y (N, O, oH, oW); L = the 13 sizes N, C, H, W, O, oH, oW, kH, kW,
 * dH, dW, padH, padW:
 *   lt_convlocal_fwd_<T>(T *y, const T *x, const T *w, const T *b, L)
 *     y = b + the position's kernel times its window (taps in the padding read 0), in A; thread per output
 *   lt_convlocal_bwd_<T>(T *gradIn, const T *gradOut, const T *w, L)
 *     gradIn = sum over the positions whose windows hold the pixel and the output planes of w gradOut, gathered;
 *     thread per input element
 *   lt_convlocal_acc_<T>(T *gradWeight, T *gradBias, const T *gradOut, const T *x, L, A scale)
 *     gradWeight += scale sum_n gradOut x (0 in the padding), gradBias += scale sum_n gradOut, in A; thread per
 *     weight element, then per bias element (no atomics)
 */
#include "lt_cuda_common.cuh"

template <typename T>
LT_D void lt_im2col_impl(T *col, const T *im, long long C, long long H, long long W, long long kH, long long kW,
                         long long padH, long long padW, long long dH, long long dW, long long dilH,
                         long long dilW, long long oH, long long oW) {
  const long long P = oH * oW;
  LT_GRID_LOOP(long long, t, C * P) {
    const long long c = t / P, p = t - c * P;
    const long long oh = p / oW, ow = p - oh * oW;
    const long long h0 = oh * dH - padH, w0 = ow * dW - padW;
    const T *src = im + c * H * W;
    T *dst = col + c * kH * kW * P + p;
    for (long long i = 0; i < kH; ++i) {
      const long long h = h0 + i * dilH;
      for (long long j = 0; j < kW; ++j) {
        const long long w = w0 + j * dilW;
        *dst = (h >= 0 && h < H && w >= 0 && w < W) ? src[h * W + w] : lt_cast<T>(0.0);
        dst += P;
      }
    }
  }
}

/* The taps of one axis that read pixel coordinate x: i with x = o*d - pad + i*dil for an o in [0, outSize). */
template <typename T>
LT_D void lt_col2im_impl(T *im, const T *col, long long C, long long H, long long W, long long kH, long long kW,
                         long long padH, long long padW, long long dH, long long dW, long long dilH,
                         long long dilW, long long oH, long long oW) {
  typedef lt_acc_t<T> A;
  const long long P = oH * oW;
  LT_GRID_LOOP(long long, t, C * H * W) {
    const long long c = t / (H * W), hw = t - c * H * W;
    const long long h = hw / W, w = hw - h * W;
    A s = 0;
    for (long long i = 0; i < kH; ++i) {
      const long long ph = h + padH - i * dilH;   /* = oh * dH */
      if (ph < 0 || ph % dH != 0) continue;
      const long long oh = ph / dH;
      if (oh >= oH) continue;
      for (long long j = 0; j < kW; ++j) {
        const long long pw = w + padW - j * dilW;
        if (pw < 0 || pw % dW != 0) continue;
        const long long ow = pw / dW;
        if (ow >= oW) continue;
        s += lt_cast<A>(col[((c * kH + i) * kW + j) * P + oh * oW + ow]);
      }
    }
    im[t] = lt_cast<T>(s);
  }
}

template <typename T>
LT_D void lt_bias_add_impl(T *out, const T *bias, long long outer, long long channels, long long inner) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, outer * channels * inner) {
    const long long c = (e / inner) % channels;
    out[e] = lt_cast<T>(lt_cast<A>(out[e]) + lt_cast<A>(bias[c]));
  }
}

template <typename T>
LT_D void lt_bias_grad_impl(T *gradBias, const T *gradOut, long long outer, long long channels, long long inner,
                            lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
    A s = 0;
    for (long long o = 0; o < outer; ++o) {
      const T *g = gradOut + (o * channels + c) * inner;
      for (long long k = threadIdx.x; k < inner; k += blockDim.x) s += lt_cast<A>(g[k]);
    }
    s = lt_block_reduce(s, lt_op_sum(), (A)0);
    if (threadIdx.x == 0) gradBias[c] = lt_cast<T>(lt_cast<A>(gradBias[c]) + scale * s);
  }
}

/* A channel's n = outer * inner values (j = o * inner + i) cut in `chunks` runs of ceil(n / chunks); block b
 * (grid-stride over channels * chunks) sums run b % chunks of channel b / chunks into partial[b] (in A), each thread
 * stepping by blockDim.x with its (o, i) advanced by addition. */
template <typename T>
LT_D void lt_bias_partial_impl(lt_acc_t<T> *partial, const T *gradOut, long long outer, long long channels,
                               long long inner, long long chunks) {
  typedef lt_acc_t<T> A;
  const long long n = outer * inner, len = (n + chunks - 1) / chunks;
  const long long step_o = blockDim.x / inner, step_i = blockDim.x % inner;
  for (long long b = blockIdx.x; b < channels * chunks; b += gridDim.x) {
    const long long c = b / chunks, lo = (b % chunks) * len, hi = lo + len < n ? lo + len : n;
    A s = 0;
    long long j = lo + threadIdx.x, o = j / inner, i = j % inner;
    for (; j < hi; j += blockDim.x) {
      s += lt_cast<A>(gradOut[(o * channels + c) * inner + i]);
      o += step_o, i += step_i;
      if (i >= inner) i -= inner, ++o;
    }
    s = lt_block_reduce(s, lt_op_sum(), (A)0);
    if (threadIdx.x == 0) partial[b] = s;
    __syncthreads();   /* (lt_block_reduce's shared memory is reused by the next b) */
  }
}

/* gradBias[c] += scale * (the channel's partials summed in chunk order): thread per channel, grid-stride. */
template <typename T>
LT_D void lt_bias_finish_impl(T *gradBias, const lt_acc_t<T> *partial, long long channels, long long chunks,
                              lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, c, channels) {
    A s = 0;
    for (long long k = 0; k < chunks; ++k) s += partial[c * chunks + k];
    gradBias[c] = lt_cast<T>(lt_cast<A>(gradBias[c]) + scale * s);
  }
}

#define LT_CONV_SIZES                                                                                     \
  long long C, long long H, long long W, long long kH, long long kW, long long padH, long long padW,     \
      long long dH, long long dW, long long dilH, long long dilW, long long oH, long long oW
#define LT_CONV_ARGS C, H, W, kH, kW, padH, padW, dH, dW, dilH, dilW, oH, oW

#define LT_CONV(T, N)                                                                                     \
  extern "C" __global__ void lt_im2col_##N(T *col, const T *im, LT_CONV_SIZES) {                          \
    lt_im2col_impl<T>(col, im, LT_CONV_ARGS);                                                             \
  }                                                                                                       \
  LT_EXPORT(lt_im2col_##N)                                                                                \
  extern "C" __global__ void lt_col2im_##N(T *im, const T *col, LT_CONV_SIZES) {                          \
    lt_col2im_impl<T>(im, col, LT_CONV_ARGS);                                                             \
  }                                                                                                       \
  LT_EXPORT(lt_col2im_##N)                                                                                \
  extern "C" __global__ void lt_conv_bias_add_##N(T *out, const T *bias, long long outer, long long channels, \
                                                  long long inner) {                                      \
    lt_bias_add_impl<T>(out, bias, outer, channels, inner);                                               \
  }                                                                                                       \
  LT_EXPORT(lt_conv_bias_add_##N)                                                                         \
  extern "C" __global__ void lt_conv_bias_grad_##N(T *gradBias, const T *gradOut, long long outer,         \
                                                   long long channels, long long inner, lt_acc_t<T> scale) { \
    lt_bias_grad_impl<T>(gradBias, gradOut, outer, channels, inner, scale);                               \
  }                                                                                                       \
  LT_EXPORT(lt_conv_bias_grad_##N)                                                                        \
  extern "C" __global__ void lt_conv_bias_partial_##N(lt_acc_t<T> *partial, const T *gradOut, long long outer, \
                                                      long long channels, long long inner, long long chunks) { \
    lt_bias_partial_impl<T>(partial, gradOut, outer, channels, inner, chunks);                             \
  }                                                                                                       \
  LT_EXPORT(lt_conv_bias_partial_##N)                                                                     \
  extern "C" __global__ void lt_conv_bias_finish_##N(T *gradBias, const lt_acc_t<T> *partial, long long channels, \
                                                     long long chunks, lt_acc_t<T> scale) {               \
    lt_bias_finish_impl<T>(gradBias, partial, channels, chunks, scale);                                   \
  }                                                                                                       \
  LT_EXPORT(lt_conv_bias_finish_##N)

LT_IF_Float(LT_CONV(float, Float))
LT_IF_Double(LT_CONV(double, Double))
LT_IF_Half(LT_CONV(__half, Half))

/* The first and one-past-last outputs along a side whose windows (k taps, stride d, padding pad) hold position x. */
LT_D void lt_conv_covering(long long x, long long k, long long d, long long pad, long long out, long long *lo,
                           long long *hi) {
  const long long p = x + pad;
  *lo = p < k ? 0 : (p - k) / d + 1;
  const long long last = p / d;
  *hi = last < out - 1 ? last + 1 : out;
}

/* (N, F, T)-view geometry of a row convolution: sizes, then x's and y's strides */
struct lt_rowconv_g {
  long long N, F, T, oT, kW, dW, xn, xf, xt, yn, yf, yt;
};

template <typename T>
LT_D void lt_rowconv_fwd(T *y, const T *x, const T *w, const T *b, const lt_rowconv_g g) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.N * g.F * g.oT) {
    const long long t = e % g.oT, f = (e / g.oT) % g.F, n = e / (g.oT * g.F);
    const T *xr = x + n * g.xn + f * g.xf + t * g.dW * g.xt;
    A s = b ? lt_cast<A>(b[f]) : (A)0;
    for (long long k = 0; k < g.kW; k++) s += lt_cast<A>(w[f * g.kW + k]) * lt_cast<A>(xr[k * g.xt]);
    y[n * g.yn + f * g.yf + t * g.yt] = lt_cast<T>(s);
  }
}

template <typename T>
LT_D void lt_rowconv_bwd(T *gin, const T *gout, const T *w, const lt_rowconv_g g) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, g.N * g.F * g.T) {
    const long long s = e % g.T, f = (e / g.T) % g.F, n = e / (g.T * g.F);
    const long long lo = s < g.kW ? 0 : (s - g.kW) / g.dW + 1, last = s / g.dW;
    const long long hi = last < g.oT - 1 ? last + 1 : g.oT;
    A v = 0;
    for (long long t = lo; t < hi; t++)
      v += lt_cast<A>(w[f * g.kW + s - t * g.dW]) * lt_cast<A>(gout[n * g.yn + f * g.yf + t * g.yt]);
    gin[n * g.xn + f * g.xf + s * g.xt] = lt_cast<T>(v);
  }
}

template <typename T>
LT_D void lt_rowconv_acc(T *gw, T *gb, const T *gout, const T *x, const lt_rowconv_g g, lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  const long long m = g.N * g.oT;
  for (long long f = blockIdx.x; f < g.F; f += gridDim.x) {
    for (long long k = -1; k < g.kW; k++) {   /* k = -1: the bias's sum */
      if (k < 0 && !gb) continue;
      A s = 0;
      for (long long j = threadIdx.x; j < m; j += blockDim.x) {
        const long long n = j / g.oT, t = j % g.oT;
        const A d = lt_cast<A>(gout[n * g.yn + f * g.yf + t * g.yt]);
        s += k < 0 ? d : d * lt_cast<A>(x[n * g.xn + f * g.xf + (t * g.dW + k) * g.xt]);
      }
      s = lt_block_reduce(s, lt_op_sum(), (A)0);
      T *to = k < 0 ? gb + f : gw + f * g.kW + k;
      if (threadIdx.x == 0) *to = lt_cast<T>(lt_cast<A>(*to) + scale * s);
    }
  }
}

#define LT_ROWCONV_G                                                                                          \
  long long N, long long F, long long Tn, long long oT, long long kW, long long dW, long long xsN,            \
      long long xsF, long long xsT, long long ysN, long long ysF, long long ysT
#define LT_ROWCONV_MAKE_G lt_rowconv_g{N, F, Tn, oT, kW, dW, xsN, xsF, xsT, ysN, ysF, ysT}

#define LT_ROWCONV(T, N_)                                                                                     \
  extern "C" __global__ void lt_rowconv_fwd_##N_(T *y, const T *x, const T *w, const T *b, LT_ROWCONV_G) {    \
    lt_rowconv_fwd<T>(y, x, w, b, LT_ROWCONV_MAKE_G);                                                         \
  }                                                                                                           \
  LT_EXPORT(lt_rowconv_fwd_##N_)                                                                              \
  extern "C" __global__ void lt_rowconv_bwd_##N_(T *gradIn, const T *gradOut, const T *w, LT_ROWCONV_G) {     \
    lt_rowconv_bwd<T>(gradIn, gradOut, w, LT_ROWCONV_MAKE_G);                                                 \
  }                                                                                                           \
  LT_EXPORT(lt_rowconv_bwd_##N_)                                                                              \
  extern "C" __global__ void lt_rowconv_acc_##N_(T *gradWeight, T *gradBias, const T *gradOut, const T *x,    \
                                                 LT_ROWCONV_G, lt_acc_t<T> scale) {                           \
    lt_rowconv_acc<T>(gradWeight, gradBias, gradOut, x, LT_ROWCONV_MAKE_G, scale);                            \
  }                                                                                                           \
  LT_EXPORT(lt_rowconv_acc_##N_)

LT_FOR_FLOAT_TYPES(LT_ROWCONV)

struct lt_convlocal_g {
  long long N, C, H, W, O, oH, oW, kH, kW, dH, dW, padH, padW;
};

template <typename T>
LT_D void lt_convlocal_fwd(T *y, const T *x, const T *w, const T *b, const lt_convlocal_g g) {
  typedef lt_acc_t<T> A;
  const long long taps = g.C * g.kH * g.kW;
  LT_GRID_LOOP(long long, e, g.N * g.O * g.oH * g.oW) {
    const long long ow = e % g.oW, oh = (e / g.oW) % g.oH, o = (e / (g.oW * g.oH)) % g.O;
    const long long n = e / (g.oW * g.oH * g.O);
    const T *wk = w + ((oh * g.oW + ow) * g.O + o) * taps;
    A s = lt_cast<A>(b[(o * g.oH + oh) * g.oW + ow]);
    for (long long c = 0; c < g.C; c++)
      for (long long i = 0; i < g.kH; i++) {
        const long long h = oh * g.dH - g.padH + i;
        if (h < 0 || h >= g.H) continue;
        for (long long j = 0; j < g.kW; j++) {
          const long long v = ow * g.dW - g.padW + j;
          if (v < 0 || v >= g.W) continue;
          s += lt_cast<A>(wk[(c * g.kH + i) * g.kW + j]) * lt_cast<A>(x[((n * g.C + c) * g.H + h) * g.W + v]);
        }
      }
    y[e] = lt_cast<T>(s);
  }
}

template <typename T>
LT_D void lt_convlocal_bwd(T *gin, const T *gout, const T *w, const lt_convlocal_g g) {
  typedef lt_acc_t<T> A;
  const long long taps = g.C * g.kH * g.kW;
  LT_GRID_LOOP(long long, e, g.N * g.C * g.H * g.W) {
    const long long v = e % g.W, h = (e / g.W) % g.H, c = (e / (g.W * g.H)) % g.C, n = e / (g.W * g.H * g.C);
    long long oh0, oh1, ow0, ow1;
    lt_conv_covering(h, g.kH, g.dH, g.padH, g.oH, &oh0, &oh1);
    lt_conv_covering(v, g.kW, g.dW, g.padW, g.oW, &ow0, &ow1);
    A s = 0;
    for (long long oh = oh0; oh < oh1; oh++)
      for (long long ow = ow0; ow < ow1; ow++) {
        const long long i = h - (oh * g.dH - g.padH), j = v - (ow * g.dW - g.padW);
        for (long long o = 0; o < g.O; o++)
          s += lt_cast<A>(w[((oh * g.oW + ow) * g.O + o) * taps + (c * g.kH + i) * g.kW + j]) *
               lt_cast<A>(gout[((n * g.O + o) * g.oH + oh) * g.oW + ow]);
      }
    gin[e] = lt_cast<T>(s);
  }
}

template <typename T>
LT_D void lt_convlocal_acc(T *gw, T *gb, const T *gout, const T *x, const lt_convlocal_g g, lt_acc_t<T> scale) {
  typedef lt_acc_t<T> A;
  const long long taps = g.C * g.kH * g.kW, nw = g.oH * g.oW * g.O * taps, plane = g.oH * g.oW;
  LT_GRID_LOOP(long long, e, nw + g.O * plane) {
    A s = 0;
    if (e < nw) {
      const long long j = e % g.kW, i = (e / g.kW) % g.kH, c = (e / (g.kW * g.kH)) % g.C, o = (e / taps) % g.O;
      const long long p = e / (taps * g.O), oh = p / g.oW, ow = p % g.oW;
      const long long h = oh * g.dH - g.padH + i, v = ow * g.dW - g.padW + j;
      if (h >= 0 && h < g.H && v >= 0 && v < g.W)
        for (long long n = 0; n < g.N; n++)
          s += lt_cast<A>(gout[((n * g.O + o) * g.oH + oh) * g.oW + ow]) *
               lt_cast<A>(x[((n * g.C + c) * g.H + h) * g.W + v]);
      gw[e] = lt_cast<T>(lt_cast<A>(gw[e]) + scale * s);
    } else {
      const long long k = e - nw;   /* (o, oh, ow) */
      for (long long n = 0; n < g.N; n++) s += lt_cast<A>(gout[n * g.O * plane + k]);
      gb[k] = lt_cast<T>(lt_cast<A>(gb[k]) + scale * s);
    }
  }
}

#define LT_CONVLOCAL_L                                                                                        \
  long long N, long long C, long long H, long long W, long long O, long long oH, long long oW, long long kH,  \
      long long kW, long long dH, long long dW, long long padH, long long padW
#define LT_CONVLOCAL_MAKE_L lt_convlocal_g{N, C, H, W, O, oH, oW, kH, kW, dH, dW, padH, padW}

#define LT_CONVLOCAL(T, N_)                                                                                   \
  extern "C" __global__ void lt_convlocal_fwd_##N_(T *y, const T *x, const T *w, const T *b, LT_CONVLOCAL_L) { \
    lt_convlocal_fwd<T>(y, x, w, b, LT_CONVLOCAL_MAKE_L);                                                     \
  }                                                                                                           \
  LT_EXPORT(lt_convlocal_fwd_##N_)                                                                            \
  extern "C" __global__ void lt_convlocal_bwd_##N_(T *gradIn, const T *gradOut, const T *w, LT_CONVLOCAL_L) { \
    lt_convlocal_bwd<T>(gradIn, gradOut, w, LT_CONVLOCAL_MAKE_L);                                             \
  }                                                                                                           \
  LT_EXPORT(lt_convlocal_bwd_##N_)                                                                            \
  extern "C" __global__ void lt_convlocal_acc_##N_(T *gradWeight, T *gradBias, const T *gradOut, const T *x,  \
                                                   LT_CONVLOCAL_L, lt_acc_t<T> scale) {                       \
    lt_convlocal_acc<T>(gradWeight, gradBias, gradOut, x, LT_CONVLOCAL_MAKE_L, scale);                        \
  }                                                                                                           \
  LT_EXPORT(lt_convlocal_acc_##N_)

LT_FOR_FLOAT_TYPES(LT_CONVLOCAL)
