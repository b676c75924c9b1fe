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
 * T is Float, Double or Half (cuBLAS multiplies half through cublasGemmEx with float accumulation); A =
 * lt_acc_t<T> (float for Half). 64-bit indices throughout.
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
  LT_EXPORT(lt_conv_bias_grad_##N)

LT_IF_Float(LT_CONV(float, Float))
LT_IF_Double(LT_CONV(double, Double))
LT_IF_Half(LT_CONV(__half, Half))
