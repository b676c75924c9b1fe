/* Spatial pooling layers beyond max/average: adaptive max and average
 * pooling, dilated max pooling, max unpooling, and the cross-channel local
 * response normalization (Torch7's SpatialCrossMapLRN). Images are (C, H, W)
 * or (N, C, H, W); planes (N*C) or pixels run in parallel. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

/* The (N*C) planes of a 3-D or 4-D image and their height and width. */
typedef struct img_geom {
  int64_t planes, iH, iW, oH, oW;
} img_geom;

static int img_geom_init(img_geom *g, const char *fn, const lt_tensor *input) {
  char buf[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  int f = input->ndim == 4;
  g->planes = input->size[f] * (f ? input->size[0] : 1);
  g->iH = input->size[f + 1];
  g->iW = input->size[f + 2];
  return 0;
}

/* t resized to input's leading dimensions followed by (h, w). */
static int img_resize(lt_tensor *t, const lt_tensor *input, int64_t h, int64_t w) {
  int64_t sz[4];
  int nd = input->ndim;
  for (int d = 0; d < nd - 2; d++) sz[d] = input->size[d];
  sz[nd - 2] = h;
  sz[nd - 1] = w;
  return lt_tensor_resize(t, nd, sz);
}

static int img_check_grad(const char *fn, const lt_tensor *input, const lt_tensor *gradOutput, int64_t h, int64_t w) {
  char b[160];
  int nd = input->ndim, ok = gradOutput->ndim == nd && gradOutput->type == input->type;
  for (int d = 0; ok && d < nd - 2; d++) ok = gradOutput->size[d] == input->size[d];
  if (ok) ok = gradOutput->size[nd - 2] == h && gradOutput->size[nd - 1] == w;
  if (!ok)
    return lt_fail("%s: gradOutput %s does not match the output size (%lld x %lld per plane)", fn,
                   lt_shape_str(gradOutput, b, sizeof b), (long long)h, (long long)w);
  return 0;
}

/* Adaptive windows: output o of n over an input of length in covers
 * [floor(o*in/n), ceil((o+1)*in/n)). */
static inline int64_t adapt_start(int64_t o, int64_t n, int64_t in) { return o * in / n; }
static inline int64_t adapt_end(int64_t o, int64_t n, int64_t in) { return ((o + 1) * in + n - 1) / n; }

/* Dilated max pooling geometry (Torch7's output-size rule, see nn_pooling.c). */
typedef struct dil_geom {
  img_geom im;
  int kW, kH, dW, dH, padW, padH, dilW, dilH;
} dil_geom;

/* padded: any of the pads is non-zero (Torch7 then drops, in every dimension,
 * a last window starting past the image and its padding). */
static int64_t dil_out_size(int64_t in, int k, int d, int pad, int dil, int ceil_mode, int padded) {
  int64_t span = in + 2 * (int64_t)pad - (int64_t)dil * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + d - 1) / d : span / d) + 1;
  if (padded && (o - 1) * d >= in + pad) o--;
  return o;
}

static int dil_geom_init(dil_geom *g, const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                         int padW, int padH, int dilW, int dilH, int ceil_mode) {
  if (img_geom_init(&g->im, fn, input)) return -1;
  if (kW <= 0 || kH <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kH: %d kW: %d", fn, kH, kW);
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (dilW <= 0 || dilH <= 0)
    return lt_fail("%s: dilation should be greater than zero, but got dilationH: %d dilationW: %d", fn, dilH, dilW);
  if (padW < 0 || padH < 0 || padW > kW / 2 || padH > kH / 2)
    return lt_fail("%s: pad should be smaller than half of kernel size, but got padW = %d, padH = %d, kW = %d, kH = %d",
                   fn, padW, padH, kW, kH);
  g->im.oH = dil_out_size(g->im.iH, kH, dH, padH, dilH, ceil_mode, padW || padH);
  g->im.oW = dil_out_size(g->im.iW, kW, dW, padW, dilW, ceil_mode, padW || padH);
  if (g->im.oH < 1 || g->im.oW < 1)
    return lt_fail("%s: given input size %lldx%lld per plane, calculated output size %lldx%lld is too small", fn,
                   (long long)g->im.iH, (long long)g->im.iW, (long long)g->im.oH, (long long)g->im.oW);
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH; g->dilW = dilW; g->dilH = dilH;
  return 0;
}

#define NN_GENERIC_FILE "nn_pooling_spatial.c"
#include "nn_generic.h"

/* 1-based flat plane positions (max pooling's and unpooling's indices) are in
 * the plane, or 0: an empty window (Torch7's ceil mode without padding can
 * place the last window past the image), which takes no gradient. */
static int scatter_check(const int64_t *ind, int64_t n, int64_t plane) {
  for (int64_t i = 0; i < n; i++)
    if (ind[i] < 0 || ind[i] > plane) return -1;
  return 0;
}

/* ---------------------------------------------------------------- adaptive max */
int lt_nn_SpatialAdaptiveMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int W,
                                                 int H) {
  NN_GIVEN(input);
  static const char fn[] = "SpatialAdaptiveMaxPooling_updateOutput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (img_geom_init(&g, fn, input)) return -1;
  if (W <= 0 || H <= 0) return lt_fail("%s: output size should be greater than zero, but got W: %d H: %d", fn, W, H);
  if (nn_check_float(output, input->type, fn, "output")) return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  g.oH = H;
  g.oW = W;
  if (lt_tensor_is_device(input))   /* native/cuda/adaptive_pooling.cu */
    return lt_cuda_nn_adaptive_maxpool(fn, input, NULL, output, indices, g.planes, g.iH, g.iW, g.oH, g.oW);
  const void *in = nn_contig(&cp, input);
  if (!in || img_resize(output, input, H, W)) return nn_copies_free(&cp, -1);
  /* Torch7's layout: (2, [N,] C, H, W), y then x, 1-based within the window */
  int64_t isz[5] = {2};
  for (int d = 0; d < input->ndim - 2; d++) isz[d + 1] = input->size[d];
  isz[input->ndim - 1] = H;
  isz[input->ndim] = W;
  if (lt_tensor_resize(indices, input->ndim + 1, isz)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, adamax_forward, &g, in, lt_tensor_data(output), lt_tensor_data(indices));
  return nn_copies_free(&cp, 0);
}

int lt_nn_SpatialAdaptiveMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *indices) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "SpatialAdaptiveMaxPooling_updateGradInput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (img_geom_init(&g, fn, input)) return -1;
  if (gradOutput->ndim != input->ndim) return lt_fail("%s: gradOutput must have input's dimensions", fn);
  g.oH = gradOutput->size[input->ndim - 2];
  g.oW = gradOutput->size[input->ndim - 1];
  if (img_check_grad(fn, input, gradOutput, g.oH, g.oW) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != 2 * g.planes * g.oH * g.oW)
    return lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn);
  if (lt_tensor_is_device(input))   /* native/cuda/adaptive_pooling.cu */
    return lt_cuda_nn_adaptive_maxpool(fn, input, gradOutput, gradInput, indices, g.planes, g.iH, g.iW, g.oH, g.oW);
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, adamax_backward, &g, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold a position outside their window", fn) : 0);
}

/* ------------------------------------------------------------ adaptive average */
int lt_nn_SpatialAdaptiveAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int W, int H) {
  NN_GIVEN(input);
  static const char fn[] = "SpatialAdaptiveAveragePooling_updateOutput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (img_geom_init(&g, fn, input)) return -1;
  if (W <= 0 || H <= 0) return lt_fail("%s: output size should be greater than zero, but got W: %d H: %d", fn, W, H);
  if (nn_check_float(output, input->type, fn, "output")) return -1;
  g.oH = H;
  g.oW = W;
  if (lt_tensor_is_device(input))   /* native/cuda/adaptive_pooling.cu */
    return lt_cuda_nn_adaptive_avgpool(fn, input, NULL, output, g.planes, g.iH, g.iW, g.oH, g.oW);
  NN_NEED(input);
  const void *in = nn_contig(&cp, input);
  if (!in || img_resize(output, input, H, W)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, adaavg_forward, &g, in, lt_tensor_data(output));
  return nn_copies_free(&cp, 0);
}

int lt_nn_SpatialAdaptiveAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                        lt_tensor *gradInput) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "SpatialAdaptiveAveragePooling_updateGradInput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (img_geom_init(&g, fn, input)) return -1;
  if (gradOutput->ndim != input->ndim) return lt_fail("%s: gradOutput must have input's dimensions", fn);
  g.oH = gradOutput->size[input->ndim - 2];
  g.oW = gradOutput->size[input->ndim - 1];
  if (img_check_grad(fn, input, gradOutput, g.oH, g.oW) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  if (lt_tensor_is_device(input) || lt_tensor_is_device(gradOutput))
    return lt_cuda_nn_adaptive_avgpool(fn, input, gradOutput, gradInput, g.planes, g.iH, g.iW, g.oH, g.oW);
  NN_NEED(input, gradOutput);
  const void *go = nn_contig(&cp, gradOutput);
  if (!go || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, adaavg_backward, &g, go, lt_tensor_data(gradInput));
  return nn_copies_free(&cp, 0);
}

/* -------------------------------------------------------------- dilated max */
int lt_nn_SpatialDilatedMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW,
                                                int kH, int dW, int dH, int padW, int padH, int dilationW,
                                                int dilationH, int ceil_mode) {
  NN_GIVEN(input);
  static const char fn[] = "SpatialDilatedMaxPooling_updateOutput";
  nn_copies cp = {0};
  dil_geom g = {0};
  if (dil_geom_init(&g, fn, input, kW, kH, dW, dH, padW, padH, dilationW, dilationH, ceil_mode)) return -1;
  if (nn_check_float(output, input->type, fn, "output")) return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  if (lt_tensor_is_device(input)) {   /* pooling.cu */
    int64_t sz[4];
    for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
    sz[input->ndim - 2] = g.im.oH, sz[input->ndim - 1] = g.im.oW;
    const int64_t geo[13] = {g.im.planes, g.im.iH, g.im.iW, g.im.oH, g.im.oW, g.kH, g.kW, g.dH, g.dW, g.padH, g.padW,
                             g.dilH, g.dilW};
    return lt_cuda_nn_dilated_maxpool(fn, input, output, indices, sz, geo);
  }
  const void *in = nn_contig(&cp, input);
  if (!in || img_resize(output, input, g.im.oH, g.im.oW) || img_resize(indices, input, g.im.oH, g.im.oW))
    return nn_copies_free(&cp, -1);
  NN_CALL(input->type, dilmax_forward, &g, in, lt_tensor_data(output), lt_tensor_data(indices));
  return nn_copies_free(&cp, 0);
}

/* The gradient goes back through the indices (plane_scatter, shared with unpooling). */
int lt_nn_SpatialDilatedMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   lt_tensor *indices, int kW, int kH, int dW, int dH, int padW,
                                                   int padH, int dilationW, int dilationH, int ceil_mode) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "SpatialDilatedMaxPooling_updateGradInput";
  nn_copies cp = {0};
  dil_geom g = {0};
  if (dil_geom_init(&g, fn, input, kW, kH, dW, dH, padW, padH, dilationW, dilationH, ceil_mode)) return -1;
  if (img_check_grad(fn, input, gradOutput, g.im.oH, g.im.oW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  int64_t L = g.im.oH * g.im.oW, n = g.im.planes * L;
  if (lt_tensor_is_device(input)) {   /* pooling.cu: the gradient scattered back through the indices */
    if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != n)
      return lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn);
    return lt_cuda_nn_plane_index(fn, 1, gradOutput, indices, gradInput, input->ndim, input->size, g.im.planes, L,
                                  g.im.iH * g.im.iW, "the input plane");
  }
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != n)
    return lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn);
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  if (scatter_check(ind, n, g.im.iH * g.im.iW))
    return nn_copies_free(&cp, lt_fail("%s: indices hold a position outside the input plane", fn));
  NN_CALL(input->type, plane_scatter, g.im.planes, L, g.im.iH * g.im.iW, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, 0);
}

/* ------------------------------------------------------------- max unpooling */
static int unpool_begin(img_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *indices, int oW,
                        int oH) {
  char b1[160], b2[160];
  if (img_geom_init(g, fn, input)) return -1;
  if (oW <= 0 || oH <= 0) return lt_fail("%s: output size should be greater than zero, but got %dx%d", fn, oH, oW);
  int same = lt_host_type(indices->type) == LT_LONG && indices->ndim == input->ndim;
  for (int d = 0; same && d < input->ndim; d++) same = indices->size[d] == input->size[d];
  if (!same)
    return lt_fail("%s: input %s and indices %s should have the same shape (the pooling module's output)", fn,
                   lt_shape_str(input, b1, sizeof b1), lt_shape_str(indices, b2, sizeof b2));
  g->oH = oH;
  g->oW = oW;
  return 0;
}

int lt_nn_SpatialMaxUnpooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int oW, int oH) {
  NN_GIVEN(input);
  static const char fn[] = "SpatialMaxUnpooling_updateOutput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (unpool_begin(&g, fn, input, indices, oW, oH) || nn_check_float(output, input->type, fn, "output")) return -1;
  char plane[64];
  snprintf(plane, sizeof plane, "the %dx%d output plane", oH, oW);
  if (lt_tensor_is_device(input)) {   /* pooling.cu */
    int64_t sz[4];
    for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
    sz[input->ndim - 2] = oH, sz[input->ndim - 1] = oW;
    return lt_cuda_nn_plane_index(fn, 1, input, indices, output, input->ndim, sz, g.planes, g.iH * g.iW,
                                  (int64_t)oH * oW, plane);
  }
  const void *in = nn_contig(&cp, input);
  const int64_t *ind = in ? nn_contig(&cp, indices) : NULL;
  if (!ind || img_resize(output, input, oH, oW)) return nn_copies_free(&cp, -1);
  int64_t L = g.iH * g.iW;
  if (scatter_check(ind, g.planes * L, (int64_t)oH * oW))
    return nn_copies_free(&cp, lt_fail("%s: indices hold a position outside the %dx%d output plane", fn, oH, oW));
  NN_CALL(input->type, plane_scatter, g.planes, L, (int64_t)oH * oW, in, lt_tensor_data(output), ind);
  return nn_copies_free(&cp, 0);
}

int lt_nn_SpatialMaxUnpooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *indices, int oW, int oH) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "SpatialMaxUnpooling_updateGradInput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (unpool_begin(&g, fn, input, indices, oW, oH) || img_check_grad(fn, input, gradOutput, oH, oW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  if (lt_tensor_is_device(input)) {   /* pooling.cu */
    char plane[64];
    snprintf(plane, sizeof plane, "the %dx%d output plane", oH, oW);
    return lt_cuda_nn_plane_index(fn, 0, gradOutput, indices, gradInput, input->ndim, input->size, g.planes,
                                  g.iH * g.iW, (int64_t)oH * oW, plane);
  }
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int64_t L = g.iH * g.iW;
  if (scatter_check(ind, g.planes * L, (int64_t)oH * oW))
    return nn_copies_free(&cp, lt_fail("%s: indices hold a position outside the %dx%d output plane", fn, oH, oW));
  NN_CALL(input->type, plane_gather, g.planes, L, (int64_t)oH * oW, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, 0);
}

/* ------------------------------------------------------- cross-map LRN */
/* scale = k + alpha/size * sum of x^2 over the channels [c - size/2, c + (size-1)/2]
 * (the same for odd sizes; for even ones Torch7's first channel and PyTorch's rule);
 * output = x * scale^-beta. */
static int lrn_begin(const char *fn, const lt_tensor *input, int size, int64_t *N, int64_t *C, int64_t *S) {
  char b[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: Input must be 3D or 4D, got %s", fn, lt_shape_str(input, b, sizeof b));
  if (size < 1) return lt_fail("%s: size should be at least 1, got %d", fn, size);
  int f = input->ndim == 4;
  *N = f ? input->size[0] : 1;
  *C = input->size[f];
  *S = input->size[f + 1] * input->size[f + 2];
  return 0;
}

int lt_nn_SpatialCrossMapLRN_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *scale, int size,
                                          double alpha, double beta, double k) {
  NN_GIVEN(input);
  static const char fn[] = "SpatialCrossMapLRN_updateOutput";
  nn_copies cp = {0};
  int64_t N = 0, C = 0, S = 0;
  if (lrn_begin(fn, input, size, &N, &C, &S) || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(scale, input->type, fn, "scale"))
    return -1;
  if (lt_tensor_is_device(input))   /* native/cuda/lrn.cu */
    return lt_cuda_nn_lrn(fn, input, NULL, output, scale, NULL, N, C, S, size, alpha, beta, k);
  NN_NEED(input);
  const void *in = nn_contig(&cp, input);
  if (!in || nn_resize_as(output, input) || nn_resize_as(scale, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, lrn_forward, N, C, S, size, alpha, beta, k, in, lt_tensor_data(output),
          lt_tensor_data(scale));
  return nn_copies_free(&cp, 0);
}

int lt_nn_SpatialCrossMapLRN_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *scale, lt_tensor *output, int size, double alpha,
                                             double beta, double k) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "SpatialCrossMapLRN_updateGradInput";
  char b[160];
  nn_copies cp = {0};
  int64_t N = 0, C = 0, S = 0, n;
  (void)k;
  if (lrn_begin(fn, input, size, &N, &C, &S) || nn_check_float(gradInput, input->type, fn, "gradInput")) return -1;
  n = lt_tensor_nelement(input);
  if (gradOutput->type != input->type || lt_tensor_nelement(gradOutput) != n)
    return lt_fail("%s: gradOutput %s does not match input", fn, lt_shape_str(gradOutput, b, sizeof b));
  if (scale->type != input->type || output->type != input->type || lt_tensor_nelement(scale) != n ||
      lt_tensor_nelement(output) != n || !lt_tensor_is_contiguous(scale) || !lt_tensor_is_contiguous(output))
    return lt_fail("%s: scale and output must be the tensors filled by updateOutput", fn);
  if (lt_tensor_is_device(input) || lt_tensor_is_device(gradOutput))
    return lt_cuda_nn_lrn(fn, input, gradOutput, gradInput, scale, output, N, C, S, size, alpha, beta, k);
  NN_NEED(input, gradOutput);
  const void *in = nn_contig(&cp, input);
  const void *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, lrn_backward, N, C, S, size, alpha, beta, in, go, lt_tensor_data(output),
          lt_tensor_data(scale), lt_tensor_data(gradInput));
  return nn_copies_free(&cp, 0);
}

/* ---------------------------------------------------- fractional max pooling */
int lt_nn_SpatialFractionalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, int outW, int outH,
                                                   int poolSizeW, int poolSizeH, lt_tensor *indices,
                                                   lt_tensor *randomSamples) {
  NN_NEED(input);
  static const char fn[] = "SpatialFractionalMaxPooling_updateOutput";
  nn_copies cp = {0};
  img_geom g = {0};
  if (img_geom_init(&g, fn, input) || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(randomSamples, input->type, fn, "randomSamples"))
    return -1;
  if (outW < 1 || outH < 1 || poolSizeW < 1 || poolSizeH < 1)
    return lt_fail("%s: output and pool sizes should be greater than zero", fn);
  if (outH + poolSizeH - 1 >= g.iH)
    return lt_fail("%s: poolSizeH (%d) too large relative to input height (%lld)", fn, poolSizeH, (long long)g.iH);
  if (outW + poolSizeW - 1 >= g.iW)
    return lt_fail("%s: poolSizeW (%d) too large relative to input width (%lld)", fn, poolSizeW, (long long)g.iW);
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  if (lt_tensor_nelement(randomSamples) != 2 * g.planes)
    return lt_fail("%s: randomSamples must hold 2 samples per plane (%lld), got %lld", fn, (long long)(2 * g.planes),
                   (long long)lt_tensor_nelement(randomSamples));
  g.oH = outH;
  g.oW = outW;
  const void *in = nn_contig(&cp, input);
  const void *u = in ? nn_contig(&cp, randomSamples) : NULL;
  if (!u || img_resize(output, input, outH, outW) || img_resize(indices, input, outH, outW))
    return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, fracmax_forward, &g, poolSizeW, poolSizeH, in, u, lt_tensor_data(output),
                   lt_tensor_data(indices));
  return nn_copies_free(&cp, rc ? lt_fail("%s: out of memory", fn) : 0);
}

int lt_nn_SpatialFractionalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                      int outW, int outH, int poolSizeW, int poolSizeH,
                                                      lt_tensor *indices) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialFractionalMaxPooling_updateGradInput";
  nn_copies cp = {0};
  img_geom g = {0};
  (void)poolSizeW;
  (void)poolSizeH;
  if (img_geom_init(&g, fn, input) || img_check_grad(fn, input, gradOutput, outH, outW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  int64_t L = (int64_t)outH * outW, n = g.planes * L;
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != n)
    return lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn);
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  if (scatter_check(ind, n, g.iH * g.iW))
    return nn_copies_free(&cp, lt_fail("%s: indices hold a position outside the input plane", fn));
  NN_CALL(input->type, plane_scatter, g.planes, L, g.iH * g.iW, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, 0);
}

#else /* ---------------------------------------------- generic part (real) */

/* Planes in parallel when there is enough work (a local `work` in scope). */
#define PLANES_PARALLEL \
  _Pragma("omp parallel for schedule(static) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)")

static void NN_(adamax_forward)(const img_geom *g, const real *in, real *out, int64_t *ind) {
  const int64_t L = g->oH * g->oW, n = g->planes * L;
  int64_t *indy = ind, *indx = ind + n;
  const int64_t work = g->planes * g->iH * g->iW;
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++) {
      int64_t hs = adapt_start(oh, g->oH, g->iH), he = adapt_end(oh, g->oH, g->iH);
      for (int64_t ow = 0; ow < g->oW; ow++) {
        int64_t ws = adapt_start(ow, g->oW, g->iW), we = adapt_end(ow, g->oW, g->iW);
        int64_t o = p * L + oh * g->oW + ow, bh = hs, bw = ws;
        real best = x[hs * g->iW + ws];
        for (int64_t h = hs; h < he; h++)
          for (int64_t w = ws; w < we; w++) {
            real v = x[h * g->iW + w];
            if (v > best || (isnan(v) && !isnan(best))) {
              best = v;
              bh = h;
              bw = w;
            }
          }
        out[o] = best;
        indy[o] = bh - hs + 1;
        indx[o] = bw - ws + 1;
      }
    }
  }
}

static int NN_(adamax_backward)(const img_geom *g, const real *go, real *gi, const int64_t *ind) {
  const int64_t L = g->oH * g->oW, n = g->planes * L;
  const int64_t *indy = ind, *indx = ind + n;
  int bad = 0;
  memset(gi, 0, sizeof(real) * g->planes * g->iH * g->iW);
#pragma omp parallel for schedule(static) reduction(| : bad) if (g->planes > 1 && n >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    real *x = gi + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++) {
      int64_t hs = adapt_start(oh, g->oH, g->iH), he = adapt_end(oh, g->oH, g->iH);
      for (int64_t ow = 0; ow < g->oW; ow++) {
        int64_t ws = adapt_start(ow, g->oW, g->iW), we = adapt_end(ow, g->oW, g->iW);
        int64_t o = p * L + oh * g->oW + ow, h = hs + indy[o] - 1, w = ws + indx[o] - 1;
        if (h < hs || h >= he || w < ws || w >= we) {
          bad = 1;
          continue;
        }
        x[h * g->iW + w] += go[o];
      }
    }
  }
  return bad ? -1 : 0;
}

static void NN_(adaavg_forward)(const img_geom *g, const real *in, real *out) {
  const int64_t L = g->oH * g->oW;
  const int64_t work = g->planes * g->iH * g->iW;
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++) {
      int64_t hs = adapt_start(oh, g->oH, g->iH), he = adapt_end(oh, g->oH, g->iH);
      for (int64_t ow = 0; ow < g->oW; ow++) {
        int64_t ws = adapt_start(ow, g->oW, g->iW), we = adapt_end(ow, g->oW, g->iW);
        accreal s = 0;
        for (int64_t h = hs; h < he; h++)
          for (int64_t w = ws; w < we; w++) s += x[h * g->iW + w];
        out[p * L + oh * g->oW + ow] = (real)(s / ((he - hs) * (we - ws)));
      }
    }
  }
}

static void NN_(adaavg_backward)(const img_geom *g, const real *go, real *gi) {
  const int64_t L = g->oH * g->oW;
  memset(gi, 0, sizeof(real) * g->planes * g->iH * g->iW);
  const int64_t work = g->planes * g->iH * g->iW;
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    real *x = gi + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++) {
      int64_t hs = adapt_start(oh, g->oH, g->iH), he = adapt_end(oh, g->oH, g->iH);
      for (int64_t ow = 0; ow < g->oW; ow++) {
        int64_t ws = adapt_start(ow, g->oW, g->iW), we = adapt_end(ow, g->oW, g->iW);
        real v = (real)(go[p * L + oh * g->oW + ow] / (accreal)((he - hs) * (we - ws)));
        for (int64_t h = hs; h < he; h++)
          for (int64_t w = ws; w < we; w++) x[h * g->iW + w] += v;
      }
    }
  }
}

static void NN_(dilmax_forward)(const dil_geom *dg, const real *in, real *out, int64_t *ind) {
  const img_geom *g = &dg->im;
  const int64_t L = g->oH * g->oW;
  const int64_t work = g->planes * L * dg->kH * dg->kW;
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++) {
      int64_t h0 = oh * dg->dH - dg->padH;
      for (int64_t ow = 0; ow < g->oW; ow++) {
        int64_t w0 = ow * dg->dW - dg->padW, at = -1, o = p * L + oh * g->oW + ow;
        real best = -INFINITY;
        for (int i = 0; i < dg->kH; i++) {
          int64_t h = h0 + (int64_t)i * dg->dilH;
          if (h < 0 || h >= g->iH) continue;
          for (int j = 0; j < dg->kW; j++) {
            int64_t w = w0 + (int64_t)j * dg->dilW;
            if (w < 0 || w >= g->iW) continue;
            real v = x[h * g->iW + w];
            if (at < 0 || v > best || isnan(v)) { /* the first maximum wins; NaN propagates */
              best = v;
              at = h * g->iW + w;
            }
          }
        }
        out[o] = best;
        ind[o] = at + 1;
      }
    }
  }
}

/* dst[p][ind-1] += src[p][l] for every l of every plane (indices checked; 0 skipped). */
static void NN_(plane_scatter)(int64_t planes, int64_t L, int64_t dplane, const real *src, real *dst,
                               const int64_t *ind) {
  memset(dst, 0, sizeof(real) * planes * dplane);
#pragma omp parallel for schedule(static) if (planes > 1 && planes * L >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < planes; p++)
    for (int64_t l = 0; l < L; l++)
      if (ind[p * L + l]) dst[p * dplane + ind[p * L + l] - 1] += src[p * L + l];
}

/* dst[p][l] = src[p][ind-1] (0 where ind is 0). */
static void NN_(plane_gather)(int64_t planes, int64_t L, int64_t splane, const real *src, real *dst,
                              const int64_t *ind) {
#pragma omp parallel for schedule(static) if (planes > 1 && planes * L >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < planes; p++)
    for (int64_t l = 0; l < L; l++) dst[p * L + l] = ind[p * L + l] ? src[p * splane + ind[p * L + l] - 1] : 0;
}

static void NN_(lrn_forward)(int64_t N, int64_t C, int64_t S, int size, double alpha, double beta, double k,
                             const real *in, real *out, real *scale) {
  const int64_t lo = size / 2, hi = (size - 1) / 2;
#pragma omp parallel for schedule(static) if (N * S > 1 && N * C * S * size >= LT_OMP_THRESHOLD)
  for (int64_t ns = 0; ns < N * S; ns++) {
    int64_t n = ns / S, s = ns % S;
    const real *x = in + n * C * S + s;
    real *y = out + n * C * S + s, *sc = scale + n * C * S + s;
    accreal sum = 0;
    for (int64_t c = 0; c < hi && c < C; c++) sum += (accreal)x[c * S] * x[c * S];
    for (int64_t c = 0; c < C; c++) {
      int64_t add = c + hi, drop = c - lo - 1;
      if (add < C) sum += (accreal)x[add * S] * x[add * S];
      if (drop >= 0) sum -= (accreal)x[drop * S] * x[drop * S];
      sc[c * S] = (real)(k + alpha / size * sum);
      y[c * S] = (real)(x[c * S] * pow((double)sc[c * S], -beta));
    }
  }
}

/* gi_c = go_c * scale_c^-beta - 2 alpha beta / size * x_c * sum over the c' whose
 * window holds c (c' in [c - hi, c + lo]) of go_c' * y_c' / scale_c'. */
static void NN_(lrn_backward)(int64_t N, int64_t C, int64_t S, int size, double alpha, double beta, const real *in,
                              const real *go, const real *out, const real *scale, real *gi) {
  const int64_t lo = size / 2, hi = (size - 1) / 2;
  const double coef = 2.0 * alpha * beta / size;
#pragma omp parallel for schedule(static) if (N * S > 1 && N * C * S * size >= LT_OMP_THRESHOLD)
  for (int64_t ns = 0; ns < N * S; ns++) {
    int64_t n = ns / S, s = ns % S, off = n * C * S + s;
    const real *x = in + off, *g = go + off, *y = out + off, *sc = scale + off;
    real *r = gi + off;
    accreal sum = 0;
    /* running sum of g*y/scale over [c - hi, c + lo] */
    for (int64_t c = 0; c < lo && c < C; c++) sum += (accreal)g[c * S] * y[c * S] / sc[c * S];
    for (int64_t c = 0; c < C; c++) {
      int64_t add = c + lo, drop = c - hi - 1;
      if (add < C) sum += (accreal)g[add * S] * y[add * S] / sc[add * S];
      if (drop >= 0) sum -= (accreal)g[drop * S] * y[drop * S] / sc[drop * S];
      r[c * S] = (real)(g[c * S] * pow((double)sc[c * S], -beta) - coef * x[c * S] * sum);
    }
  }
}

/* Window starts of fractional max pooling for one dimension (Graham 2014's
 * pseudo-random sequence, computed in `real` as Torch7): start_i =
 * floor((i + u) * a) - floor(u * a), a = (in - pool) / (out - 1), and the last
 * window ends at the input's end. */
static void NN_(frac_starts)(real u, int64_t in, int64_t out, int pool, int64_t *start) {
  real a = out > 1 ? (real)(in - pool) / (real)(out - 1) : 0;
  for (int64_t i = 0; i < out - 1; i++) start[i] = (int64_t)((i + u) * a) - (int64_t)(u * a);
  start[out - 1] = in - pool;
}

static int NN_(fracmax_forward)(const img_geom *g, int pW, int pH, const real *in, const real *u, real *out,
                                int64_t *ind) {
  const int64_t L = g->oH * g->oW;
  int fail = 0;
  const int64_t work = g->planes * L * pW * pH;
#pragma omp parallel for schedule(static) reduction(| : fail) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    int64_t *sw = malloc(sizeof(int64_t) * (g->oW + g->oH));
    if (!sw) {
      fail = 1;
      continue;
    }
    int64_t *sh = sw + g->oW;
    NN_(frac_starts)(u[2 * p], g->iW, g->oW, pW, sw);
    NN_(frac_starts)(u[2 * p + 1], g->iH, g->oH, pH, sh);
    const real *x = in + p * g->iH * g->iW;
    for (int64_t oh = 0; oh < g->oH; oh++)
      for (int64_t ow = 0; ow < g->oW; ow++) {
        real best = -INFINITY;
        int64_t at = -1;
        for (int64_t h = sh[oh]; h < sh[oh] + pH; h++)
          for (int64_t w = sw[ow]; w < sw[ow] + pW; w++) {
            real v = x[h * g->iW + w];
            if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
              best = v;
              at = h * g->iW + w;
            }
          }
        out[p * L + oh * g->oW + ow] = best;
        ind[p * L + oh * g->oW + ow] = at + 1;
      }
    free(sw);
  }
  return fail ? -1 : 0;
}

#undef PLANES_PARALLEL
#endif
