/* Volumetric (C, T, H, W) / (N, C, T, H, W) max pooling (with dilation),
 * average pooling and max unpooling, and temporal (T, F) / (N, T, F) max
 * pooling (Torch7's THNN counterparts). Planes (N*C) run in parallel.
 *
 * Volumetric max indices keep Torch7's layout: each int64 holds the tap of
 * the maximum within its (unclipped) window, in taps, as bytes 0, 1, 2 =
 * t, h, w (value t | h << 8 | w << 16), so kernels are at most 255 taps.
 * Temporal max indices are 0-based offsets of the maximum within its window. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct vol_geom {
  int64_t planes, in[3], out[3]; /* T, H, W */
  int k[3], d[3], pad[3], dil[3];
} vol_geom;

/* An empty window (Torch7's ceil mode may place the last one past the
 * volume): bytes 255, as THNN's -1, taking no gradient. */
#define VOL_NONE ((int64_t)0xFFFFFF)

static inline int64_t vol_pack(int t, int h, int w) { return (int64_t)t | ((int64_t)h << 8) | ((int64_t)w << 16); }
static inline void vol_unpack(int64_t v, int *t, int *h, int *w) {
  *t = (int)(v & 255);
  *h = (int)((v >> 8) & 255);
  *w = (int)((v >> 16) & 255);
}

/* kTHW, dTHW, padTHW, dilTHW in T, H, W order. */
static int vol_geom_init(vol_geom *g, const char *fn, const lt_tensor *input, const int *k, const int *d,
                         const int *pad, const int *dil, int ceil_mode) {
  char buf[160];
  static const char *nm[3] = {"T", "H", "W"};
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 4 && input->ndim != 5)
    return lt_fail("%s: 4D or 5D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  int f = input->ndim == 5;
  g->planes = input->size[f] * (f ? input->size[0] : 1);
  for (int i = 0; i < 3; i++) {
    if (k[i] <= 0 || k[i] > 255) return lt_fail("%s: kernel size k%s should be in 1..255, got %d", fn, nm[i], k[i]);
    if (d[i] <= 0) return lt_fail("%s: stride d%s should be greater than zero, got %d", fn, nm[i], d[i]);
    if (dil[i] <= 0) return lt_fail("%s: dilation%s should be greater than zero, got %d", fn, nm[i], dil[i]);
    if (pad[i] < 0 || pad[i] > k[i] / 2)
      return lt_fail("%s: pad should be smaller than half of kernel size, but got k%s: %d, pad%s: %d", fn, nm[i],
                     k[i], nm[i], pad[i]);
    g->in[i] = input->size[f + 1 + i];
    int64_t span = g->in[i] + 2 * (int64_t)pad[i] - (int64_t)dil[i] * (k[i] - 1) - 1;
    g->out[i] = span < 0 ? 0 : (ceil_mode ? (span + d[i] - 1) / d[i] : span / d[i]) + 1;
    g->k[i] = k[i];
    g->d[i] = d[i];
    g->pad[i] = pad[i];
    g->dil[i] = dil[i];
  }
  if (pad[0] || pad[1] || pad[2])
    for (int i = 0; i < 3; i++)  /* the last window starts inside the volume or its front padding */
      if (g->out[i] > 0 && (g->out[i] - 1) * d[i] >= g->in[i] + pad[i]) g->out[i]--;
  if (g->out[0] < 1 || g->out[1] < 1 || g->out[2] < 1)
    return lt_fail("%s: given input size %lldx%lldx%lld per plane, calculated output size %lldx%lldx%lld is too small",
                   fn, (long long)g->in[0], (long long)g->in[1], (long long)g->in[2], (long long)g->out[0],
                   (long long)g->out[1], (long long)g->out[2]);
  return 0;
}

static int vol_resize(lt_tensor *t, const lt_tensor *input, const int64_t *thw) {
  int64_t sz[5];
  int nd = input->ndim;
  for (int i = 0; i < nd - 3; i++) sz[i] = input->size[i];
  for (int i = 0; i < 3; i++) sz[nd - 3 + i] = thw[i];
  return lt_tensor_resize(t, nd, sz);
}

static int vol_check(const char *fn, const char *what, const lt_tensor *t, const lt_tensor *input, const int64_t *thw,
                     int type) {
  char b[160];
  int nd = input->ndim, ok = t->ndim == nd && lt_host_type(t->type) == lt_host_type(type);
  for (int i = 0; ok && i < nd - 3; i++) ok = t->size[i] == input->size[i];
  for (int i = 0; ok && i < 3; i++) ok = t->size[nd - 3 + i] == thw[i];
  if (!ok)
    return lt_fail("%s: %s %s does not match the expected size (%lld x %lld x %lld per plane)", fn, what,
                   lt_shape_str(t, b, sizeof b), (long long)thw[0], (long long)thw[1], (long long)thw[2]);
  return 0;
}

#define NN_GENERIC_FILE "nn_pooling_volumetric.c"
#include "nn_generic.h"

/* ------------------------------------------------------ dilated max pooling */
int lt_nn_VolumetricDilatedMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kT,
                                                   int kW, int kH, int dT, int dW, int dH, int padT, int padW,
                                                   int padH, int dilationT, int dilationW, int dilationH,
                                                   int ceil_mode) {
  NN_NEED(input);
  static const char fn[] = "VolumetricDilatedMaxPooling_updateOutput";
  int k[3] = {kT, kH, kW}, d[3] = {dT, dH, dW}, p[3] = {padT, padH, padW}, dil[3] = {dilationT, dilationH, dilationW};
  nn_copies cp = {0};
  vol_geom g = {0};
  if (vol_geom_init(&g, fn, input, k, d, p, dil, ceil_mode) || nn_check_float(output, input->type, fn, "output"))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  const void *in = nn_contig(&cp, input);
  if (!in || vol_resize(output, input, g.out) || vol_resize(indices, input, g.out)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, volmax_forward, &g, in, lt_tensor_data(output), lt_tensor_data(indices));
  return nn_copies_free(&cp, 0);
}

int lt_nn_VolumetricDilatedMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                      lt_tensor *indices, int kT, int kW, int kH, int dT, int dW,
                                                      int dH, int padT, int padW, int padH, int dilationT,
                                                      int dilationW, int dilationH, int ceil_mode) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricDilatedMaxPooling_updateGradInput";
  int k[3] = {kT, kH, kW}, d[3] = {dT, dH, dW}, p[3] = {padT, padH, padW}, dil[3] = {dilationT, dilationH, dilationW};
  nn_copies cp = {0};
  vol_geom g = {0};
  if (vol_geom_init(&g, fn, input, k, d, p, dil, ceil_mode) || nn_check_float(gradInput, input->type, fn, "gradInput") ||
      vol_check(fn, "gradOutput", gradOutput, input, g.out, input->type) ||
      vol_check(fn, "indices", indices, input, g.out, LT_LONG))
    return -1;
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, volmax_backward, &g, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold a position outside the input volume", fn) : 0);
}

/* ---------------------------------------------------------- average pooling */
int lt_nn_VolumetricAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int kT, int kW, int kH, int dT,
                                                int dW, int dH) {
  NN_NEED(input);
  static const char fn[] = "VolumetricAveragePooling_updateOutput";
  int k[3] = {kT, kH, kW}, d[3] = {dT, dH, dW}, p[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  nn_copies cp = {0};
  vol_geom g = {0};
  if (vol_geom_init(&g, fn, input, k, d, p, dil, 0) || nn_check_float(output, input->type, fn, "output")) return -1;
  const void *in = nn_contig(&cp, input);
  if (!in || vol_resize(output, input, g.out)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, volavg_forward, &g, in, lt_tensor_data(output));
  return nn_copies_free(&cp, 0);
}

int lt_nn_VolumetricAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   int kT, int kW, int kH, int dT, int dW, int dH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricAveragePooling_updateGradInput";
  int k[3] = {kT, kH, kW}, d[3] = {dT, dH, dW}, p[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  nn_copies cp = {0};
  vol_geom g = {0};
  if (vol_geom_init(&g, fn, input, k, d, p, dil, 0) || nn_check_float(gradInput, input->type, fn, "gradInput") ||
      vol_check(fn, "gradOutput", gradOutput, input, g.out, input->type))
    return -1;
  const void *go = nn_contig(&cp, gradOutput);
  if (!go || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, volavg_backward, &g, go, lt_tensor_data(gradInput));
  return nn_copies_free(&cp, 0);
}

/* ------------------------------------------------------------ max unpooling */
/* The pooling geometry seen from the unpooling side: out = the pooled size
 * (input's), in = the (oT, oH, oW) volume rebuilt. */
static int volunpool_begin(vol_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *indices, int oT,
                           int oW, int oH, int dT, int dW, int dH, int padT, int padW, int padH) {
  char b[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 4 && input->ndim != 5)
    return lt_fail("%s: 4D or 5D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, b, sizeof b));
  if (oT <= 0 || oW <= 0 || oH <= 0 || dT <= 0 || dW <= 0 || dH <= 0)
    return lt_fail("%s: output sizes and strides should be greater than zero", fn);
  int f = input->ndim == 5;
  g->planes = input->size[f] * (f ? input->size[0] : 1);
  int64_t o[3] = {oT, oH, oW};
  int d[3] = {dT, dH, dW}, p[3] = {padT, padH, padW};
  for (int i = 0; i < 3; i++) {
    g->out[i] = input->size[f + 1 + i];
    g->in[i] = o[i];
    g->d[i] = d[i];
    g->pad[i] = p[i];
    g->k[i] = d[i];
    g->dil[i] = 1;
  }
  return vol_check(fn, "indices", indices, input, g->out, LT_LONG);
}

int lt_nn_VolumetricMaxUnpooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int oT,
                                              int oW, int oH, int dT, int dW, int dH, int padT, int padW, int padH) {
  NN_NEED(input);
  static const char fn[] = "VolumetricMaxUnpooling_updateOutput";
  nn_copies cp = {0};
  vol_geom g = {0};
  if (volunpool_begin(&g, fn, input, indices, oT, oW, oH, dT, dW, dH, padT, padW, padH) ||
      nn_check_float(output, input->type, fn, "output"))
    return -1;
  const void *in = nn_contig(&cp, input);
  const int64_t *ind = in ? nn_contig(&cp, indices) : NULL;
  if (!ind || vol_resize(output, input, g.in)) return nn_copies_free(&cp, -1);
  /* the pooling backward's scatter is exactly the unpooling forward */
  int rc = NN_CALL(input->type, volmax_backward, &g, in, lt_tensor_data(output), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold a position outside the output volume", fn) : 0);
}

int lt_nn_VolumetricMaxUnpooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *indices, int oT, int oW, int oH, int dT, int dW, int dH,
                                                 int padT, int padW, int padH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricMaxUnpooling_updateGradInput";
  nn_copies cp = {0};
  vol_geom g = {0};
  if (volunpool_begin(&g, fn, input, indices, oT, oW, oH, dT, dW, dH, padT, padW, padH) ||
      nn_check_float(gradInput, input->type, fn, "gradInput") ||
      vol_check(fn, "gradOutput", gradOutput, input, g.in, input->type))
    return -1;
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, volmax_gather, &g, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold a position outside the output volume", fn) : 0);
}

/* ------------------------------------------------------ temporal max pooling */
static int tmp_begin(const char *fn, const lt_tensor *input, int kW, int dW, int64_t *N, int64_t *T, int64_t *F,
                     int64_t *oT) {
  char b[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 2 && input->ndim != 3)
    return lt_fail("%s: 2D or 3D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, b, sizeof b));
  if (kW <= 0 || dW <= 0) return lt_fail("%s: kernel size and stride should be greater than zero, got %d, %d", fn, kW, dW);
  int f = input->ndim == 3;
  *N = f ? input->size[0] : 1;
  *T = input->size[f];
  *F = input->size[f + 1];
  if (*T < kW) return lt_fail("%s: input sequence smaller than kernel size. Got: %lld, Expected: %d", fn, (long long)*T, kW);
  *oT = (*T - kW) / dW + 1;
  return 0;
}

static int tmp_resize(lt_tensor *t, const lt_tensor *input, int64_t oT) {
  int64_t sz[3];
  int nd = input->ndim;
  for (int i = 0; i < nd; i++) sz[i] = input->size[i];
  sz[nd - 2] = oT;
  return lt_tensor_resize(t, nd, sz);
}

int lt_nn_TemporalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW, int dW) {
  NN_GIVEN(input);
  static const char fn[] = "TemporalMaxPooling_updateOutput";
  nn_copies cp = {0};
  int64_t N = 0, T = 0, F = 0, oT = 0;
  if (tmp_begin(fn, input, kW, dW, &N, &T, &F, &oT) || nn_check_float(output, input->type, fn, "output")) return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  if (lt_tensor_is_device(input))   /* native/cuda/pooling.cu */
    return lt_cuda_nn_temporal_maxpool(fn, input, NULL, output, indices, N, T, F, oT, kW, dW);
  const void *in = nn_contig(&cp, input);
  if (!in || tmp_resize(output, input, oT) || tmp_resize(indices, input, oT)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, tmax_forward, N, T, F, oT, kW, dW, in, lt_tensor_data(output), lt_tensor_data(indices));
  return nn_copies_free(&cp, 0);
}

int lt_nn_TemporalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *indices, int kW, int dW) {
  NN_GIVEN(input, gradOutput);
  static const char fn[] = "TemporalMaxPooling_updateGradInput";
  char b[160];
  nn_copies cp = {0};
  int64_t N = 0, T = 0, F = 0, oT = 0;
  if (tmp_begin(fn, input, kW, dW, &N, &T, &F, &oT) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  int nd = input->ndim;
  if (gradOutput->type != input->type || gradOutput->ndim != nd || gradOutput->size[nd - 2] != oT ||
      gradOutput->size[nd - 1] != F || (nd == 3 && gradOutput->size[0] != N))
    return lt_fail("%s: gradOutput %s does not match the output size", fn, lt_shape_str(gradOutput, b, sizeof b));
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != N * oT * F)
    return lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn);
  if (lt_tensor_is_device(input))   /* native/cuda/pooling.cu */
    return lt_cuda_nn_temporal_maxpool(fn, input, gradOutput, gradInput, indices, N, T, F, oT, kW, dW);
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, tmax_backward, N, T, F, oT, kW, dW, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold an offset outside the window", fn) : 0);
}

/* ------------------------------------------------- fractional max pooling */
/* Torch7's layout: input ([N,] C, H, W, T) -- time last -- and randomSamples
 * ([N,] C, 3) holding the samples for T, W, H in that order. */
int lt_nn_VolumetricFractionalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, int outT, int outW,
                                                      int outH, int poolSizeT, int poolSizeW, int poolSizeH,
                                                      lt_tensor *indices, lt_tensor *randomSamples) {
  NN_NEED(input);
  static const char fn[] = "VolumetricFractionalMaxPooling_updateOutput";
  char b[160];
  nn_copies cp = {0};
  vol_geom g = {0};
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 4 && input->ndim != 5)
    return lt_fail("%s: 4D or 5D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, b, sizeof b));
  if (nn_check_float(output, input->type, fn, "output") || nn_check_float(randomSamples, input->type, fn, "randomSamples"))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a LongTensor", fn);
  int f = input->ndim == 5;
  static const char *nm[3] = {"H", "W", "T"};
  int pool[3] = {poolSizeH, poolSizeW, poolSizeT}, out[3] = {outH, outW, outT};
  g.planes = input->size[f] * (f ? input->size[0] : 1);
  for (int i = 0; i < 3; i++) {
    g.in[i] = input->size[f + 1 + i];
    g.out[i] = out[i];
    g.k[i] = pool[i];
    if (out[i] < 1 || pool[i] < 1) return lt_fail("%s: output and pool sizes should be greater than zero", fn);
    if (out[i] + pool[i] - 1 >= g.in[i])
      return lt_fail("%s: poolSize%s (%d) too large relative to input size (%lld)", fn, nm[i], pool[i],
                     (long long)g.in[i]);
  }
  if (lt_tensor_nelement(randomSamples) != 3 * g.planes)
    return lt_fail("%s: randomSamples must hold 3 samples per plane (%lld), got %lld", fn, (long long)(3 * g.planes),
                   (long long)lt_tensor_nelement(randomSamples));
  const void *in = nn_contig(&cp, input);
  const void *u = in ? nn_contig(&cp, randomSamples) : NULL;
  if (!u || vol_resize(output, input, g.out) || vol_resize(indices, input, g.out)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, volfrac_forward, &g, in, u, lt_tensor_data(output), lt_tensor_data(indices));
  return nn_copies_free(&cp, rc ? lt_fail("%s: out of memory", fn) : 0);
}

int lt_nn_VolumetricFractionalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                         lt_tensor *gradInput, int outT, int outW, int outH,
                                                         int poolSizeT, int poolSizeW, int poolSizeH,
                                                         lt_tensor *indices) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricFractionalMaxPooling_updateGradInput";
  char b[160];
  nn_copies cp = {0};
  (void)poolSizeT;
  (void)poolSizeW;
  (void)poolSizeH;
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != 4 && input->ndim != 5)
    return lt_fail("%s: 4D or 5D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, b, sizeof b));
  int64_t o[3] = {outH, outW, outT};
  if (nn_check_float(gradInput, input->type, fn, "gradInput") ||
      vol_check(fn, "gradOutput", gradOutput, input, o, input->type) || vol_check(fn, "indices", indices, input, o, LT_LONG))
    return -1;
  int f = input->ndim == 5;
  int64_t planes = input->size[f] * (f ? input->size[0] : 1);
  int64_t vin = input->size[f + 1] * input->size[f + 2] * input->size[f + 3], L = o[0] * o[1] * o[2];
  const void *go = nn_contig(&cp, gradOutput);
  const int64_t *ind = go ? nn_contig(&cp, indices) : NULL;
  if (!ind || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  int rc = NN_CALL(input->type, flat_scatter, planes, L, vin, go, lt_tensor_data(gradInput), ind);
  return nn_copies_free(&cp, rc ? lt_fail("%s: indices hold a position outside the input volume", fn) : 0);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(volmax_forward)(const vol_geom *g, const real *in, real *out, int64_t *ind) {
  const int64_t iT = g->in[0], iH = g->in[1], iW = g->in[2], oT = g->out[0], oH = g->out[1], oW = g->out[2];
  const int64_t work = g->planes * oT * oH * oW * g->k[0] * g->k[1] * g->k[2];
#pragma omp parallel for schedule(static) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * iT * iH * iW;
    for (int64_t ot = 0; ot < oT; ot++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          int64_t t0 = ot * g->d[0] - g->pad[0], h0 = oh * g->d[1] - g->pad[1], w0 = ow * g->d[2] - g->pad[2];
          int64_t o = ((p * oT + ot) * oH + oh) * oW + ow;
          real best = -INFINITY;
          int found = 0, bt = 0, bh = 0, bw = 0;
          for (int a = 0; a < g->k[0]; a++) {
            int64_t t = t0 + (int64_t)a * g->dil[0];
            if (t < 0 || t >= iT) continue;
            for (int b = 0; b < g->k[1]; b++) {
              int64_t h = h0 + (int64_t)b * g->dil[1];
              if (h < 0 || h >= iH) continue;
              for (int c = 0; c < g->k[2]; c++) {
                int64_t w = w0 + (int64_t)c * g->dil[2];
                if (w < 0 || w >= iW) continue;
                real v = x[(t * iH + h) * iW + w];
                if (!found || v > best || (isnan(v) && !isnan(best))) {
                  found = 1;
                  best = v;
                  bt = a; bh = b; bw = c;
                }
              }
            }
          }
          out[o] = best;
          ind[o] = found ? vol_pack(bt, bh, bw) : VOL_NONE;
        }
  }
}

/* Position in the (in) volume of the maximum recorded for output cell (ot, oh, ow);
 * -1 outside, -2 for an empty window. */
static inline int64_t NN_(vol_target)(const vol_geom *g, int64_t ot, int64_t oh, int64_t ow, int64_t packed) {
  int a, b, c;
  if (packed == VOL_NONE) return -2;
  vol_unpack(packed, &a, &b, &c);
  int64_t t = ot * g->d[0] - g->pad[0] + (int64_t)a * g->dil[0];
  int64_t h = oh * g->d[1] - g->pad[1] + (int64_t)b * g->dil[1];
  int64_t w = ow * g->d[2] - g->pad[2] + (int64_t)c * g->dil[2];
  if (t < 0 || h < 0 || w < 0 || t >= g->in[0] || h >= g->in[1] || w >= g->in[2]) return -1;
  return (t * g->in[1] + h) * g->in[2] + w;
}

/* dst (in-sized, zeroed here) += src (out-sized) at the recorded maxima. */
static int NN_(volmax_backward)(const vol_geom *g, const real *src, real *dst, const int64_t *ind) {
  const int64_t vin = g->in[0] * g->in[1] * g->in[2], oT = g->out[0], oH = g->out[1], oW = g->out[2];
  const int64_t vout = oT * oH * oW;
  int bad = 0;
  memset(dst, 0, sizeof(real) * g->planes * vin);
#pragma omp parallel for schedule(static) reduction(| : bad) if (g->planes > 1 && g->planes * vout >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++)
    for (int64_t ot = 0; ot < oT; ot++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          int64_t o = ((p * oT + ot) * oH + oh) * oW + ow, at = NN_(vol_target)(g, ot, oh, ow, ind[o]);
          if (at < 0) {
            bad |= at == -1;
            continue;
          }
          dst[p * vin + at] += src[o];
        }
  return bad ? -1 : 0;
}

/* dst (out-sized) = src (in-sized) at the recorded maxima. */
static int NN_(volmax_gather)(const vol_geom *g, const real *src, real *dst, const int64_t *ind) {
  const int64_t vin = g->in[0] * g->in[1] * g->in[2], oT = g->out[0], oH = g->out[1], oW = g->out[2];
  const int64_t vout = oT * oH * oW;
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (g->planes > 1 && g->planes * vout >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++)
    for (int64_t ot = 0; ot < oT; ot++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          int64_t o = ((p * oT + ot) * oH + oh) * oW + ow, at = NN_(vol_target)(g, ot, oh, ow, ind[o]);
          if (at < 0) {
            bad |= at == -1;
            dst[o] = 0;
            continue;
          }
          dst[o] = src[p * vin + at];
        }
  return bad ? -1 : 0;
}

static void NN_(volavg_forward)(const vol_geom *g, const real *in, real *out) {
  const int64_t iT = g->in[0], iH = g->in[1], iW = g->in[2], oT = g->out[0], oH = g->out[1], oW = g->out[2];
  const int64_t n = (int64_t)g->k[0] * g->k[1] * g->k[2], work = g->planes * oT * oH * oW * n;
#pragma omp parallel for schedule(static) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * iT * iH * iW;
    for (int64_t ot = 0; ot < oT; ot++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          accreal s = 0;
          for (int64_t t = ot * g->d[0]; t < ot * g->d[0] + g->k[0]; t++)
            for (int64_t h = oh * g->d[1]; h < oh * g->d[1] + g->k[1]; h++)
              for (int64_t w = ow * g->d[2]; w < ow * g->d[2] + g->k[2]; w++) s += x[(t * iH + h) * iW + w];
          out[((p * oT + ot) * oH + oh) * oW + ow] = (real)(s / n);
        }
  }
}

static void NN_(volavg_backward)(const vol_geom *g, const real *go, real *gi) {
  const int64_t iT = g->in[0], iH = g->in[1], iW = g->in[2], oT = g->out[0], oH = g->out[1], oW = g->out[2];
  const int64_t n = (int64_t)g->k[0] * g->k[1] * g->k[2], work = g->planes * oT * oH * oW * n;
  memset(gi, 0, sizeof(real) * g->planes * iT * iH * iW);
#pragma omp parallel for schedule(static) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    real *x = gi + p * iT * iH * iW;
    for (int64_t ot = 0; ot < oT; ot++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          real v = (real)(go[((p * oT + ot) * oH + oh) * oW + ow] / (accreal)n);
          for (int64_t t = ot * g->d[0]; t < ot * g->d[0] + g->k[0]; t++)
            for (int64_t h = oh * g->d[1]; h < oh * g->d[1] + g->k[1]; h++)
              for (int64_t w = ow * g->d[2]; w < ow * g->d[2] + g->k[2]; w++) x[(t * iH + h) * iW + w] += v;
        }
  }
}

static void NN_(tmax_forward)(int64_t N, int64_t T, int64_t F, int64_t oT, int kW, int dW, const real *in, real *out,
                              int64_t *ind) {
#pragma omp parallel for schedule(static) if (N * oT > 1 && N * oT * F * kW >= LT_OMP_THRESHOLD)
  for (int64_t nt = 0; nt < N * oT; nt++) {
    int64_t n = nt / oT, t = nt % oT;
    const real *x = in + (n * T + t * dW) * F;
    real *y = out + nt * F;
    int64_t *ix = ind + nt * F;
    for (int64_t f = 0; f < F; f++) {
      real best = x[f];
      int64_t at = 0;
      for (int k = 1; k < kW; k++) {
        real v = x[k * F + f];
        if (v > best || (isnan(v) && !isnan(best))) {
          best = v;
          at = k;
        }
      }
      y[f] = best;
      ix[f] = at;
    }
  }
}

static int NN_(tmax_backward)(int64_t N, int64_t T, int64_t F, int64_t oT, int kW, int dW, const real *go, real *gi,
                              const int64_t *ind) {
  int bad = 0;
  memset(gi, 0, sizeof(real) * N * T * F);
  /* windows overlap when dW < kW: parallel over samples and features only */
#pragma omp parallel for schedule(static) reduction(| : bad) if (N * F > 1 && N * oT * F >= LT_OMP_THRESHOLD)
  for (int64_t nf = 0; nf < N * F; nf++) {
    int64_t n = nf / F, f = nf % F;
    for (int64_t t = 0; t < oT; t++) {
      int64_t o = (n * oT + t) * F + f, k = ind[o];
      if (k < 0 || k >= kW) {
        bad = 1;
        continue;
      }
      gi[(n * T + t * dW + k) * F + f] += go[o];
    }
  }
  return bad ? -1 : 0;
}


/* Window starts for one dimension (the sequence of nn.SpatialFractionalMaxPooling). */
static void NN_(vfrac_starts)(real u, int64_t in, int64_t out, int pool, int64_t *start) {
  real a = out > 1 ? (real)(in - pool) / (real)(out - 1) : 0;
  for (int64_t i = 0; i < out - 1; i++) start[i] = (int64_t)((i + u) * a) - (int64_t)(u * a);
  start[out - 1] = in - pool;
}

/* Dimensions in[0..2] = H, W, T; samples per plane are (T, W, H). */
static int NN_(volfrac_forward)(const vol_geom *g, const real *in, const real *u, real *out, int64_t *ind) {
  const int64_t I0 = g->in[0], I1 = g->in[1], I2 = g->in[2], O0 = g->out[0], O1 = g->out[1], O2 = g->out[2];
  const int64_t L = O0 * O1 * O2, work = g->planes * L * g->k[0] * g->k[1] * g->k[2];
  int fail = 0;
#pragma omp parallel for schedule(static) reduction(| : fail) if (g->planes > 1 && work >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    int64_t *s0 = malloc(sizeof(int64_t) * (O0 + O1 + O2));
    if (!s0) {
      fail = 1;
      continue;
    }
    int64_t *s1 = s0 + O0, *s2 = s1 + O1;
    NN_(vfrac_starts)(u[3 * p + 2], I0, O0, g->k[0], s0);
    NN_(vfrac_starts)(u[3 * p + 1], I1, O1, g->k[1], s1);
    NN_(vfrac_starts)(u[3 * p], I2, O2, g->k[2], s2);
    const real *x = in + p * I0 * I1 * I2;
    for (int64_t a = 0; a < O0; a++)
      for (int64_t b = 0; b < O1; b++)
        for (int64_t c = 0; c < O2; c++) {
          real best = -INFINITY;
          int64_t at = -1;
          for (int64_t i = s0[a]; i < s0[a] + g->k[0]; i++)
            for (int64_t j = s1[b]; j < s1[b] + g->k[1]; j++)
              for (int64_t k = s2[c]; k < s2[c] + g->k[2]; k++) {
                real v = x[(i * I1 + j) * I2 + k];
                if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
                  best = v;
                  at = (i * I1 + j) * I2 + k;
                }
              }
          int64_t o = p * L + (a * O1 + b) * O2 + c;
          out[o] = best;
          ind[o] = at + 1;
        }
    free(s0);
  }
  return fail ? -1 : 0;
}

/* dst[p][ind-1] += src[p][l] (1-based flat positions, checked). */
static int NN_(flat_scatter)(int64_t planes, int64_t L, int64_t dplane, const real *src, real *dst,
                             const int64_t *ind) {
  int bad = 0;
  memset(dst, 0, sizeof(real) * planes * dplane);
#pragma omp parallel for schedule(static) reduction(| : bad) if (planes > 1 && planes * L >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < planes; p++)
    for (int64_t l = 0; l < L; l++) {
      int64_t at = ind[p * L + l];
      if (at < 1 || at > dplane) {
        bad = 1;
        continue;
      }
      dst[p * dplane + at - 1] += src[p * L + l];
    }
  return bad ? -1 : 0;
}

#endif
