/* SpatialDepthWiseConvolution: every input plane convolved on its own with
 * nOutputPlane kernels (a depth multiplier), by direct loops (the kernels
 * are small and the planes independent). Forward and gradInput run the
 * (sample, input plane) pairs in parallel, gradWeight the input planes, so
 * no two threads write the same element. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct dw_geom {
  int batch;
  int64_t N, nIn, mult, iH, iW, oH, oW;
  int kW, kH, dW, dH, padW, padH;
} dw_geom;

static int dw_geom_init(dw_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH,
                        int dW, int dH, int padW, int padH) {
  char buf[160];
  if (kW <= 0 || kH <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kH: %d kW: %d", fn, kH, kW);
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (padW < 0 || padH < 0) return lt_fail("%s: padding should be non-negative, but got padH: %d padW: %d", fn, padH, padW);
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(weight, input->type, fn, "weight")) return -1;
  if (weight->ndim == 4 && weight->size[2] == kH && weight->size[3] == kW) {
    g->nIn = weight->size[1];
  } else if (weight->ndim == 2 && weight->size[1] % ((int64_t)kH * kW) == 0) {
    g->nIn = weight->size[1] / ((int64_t)kH * kW);
  } else {
    return lt_fail("%s: weight should be nOutputPlane x nInputPlane x kH x kW (kH: %d kW: %d) or "
                   "nOutputPlane x nInputPlane*kH*kW, but got: %s", fn, kH, kW, lt_shape_str(weight, buf, sizeof buf));
  }
  g->mult = weight->size[0];
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  int f = input->ndim == 4;
  g->batch = f;
  g->N = f ? input->size[0] : 1;
  if (input->size[f] != g->nIn)
    return lt_fail("%s: input has %lld planes, expected %lld (input of shape %s)", fn, (long long)input->size[f],
                   (long long)g->nIn, lt_shape_str(input, buf, sizeof buf));
  g->iH = input->size[f + 1];
  g->iW = input->size[f + 2];
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH;
  g->oH = (g->iH + 2 * (int64_t)padH - kH) / dH + 1;
  g->oW = (g->iW + 2 * (int64_t)padW - kW) / dW + 1;
  if (g->iH + 2 * (int64_t)padH < kH || g->iW + 2 * (int64_t)padW < kW || g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)g->nIn, (long long)g->iH, (long long)g->iW,
                   (long long)(g->nIn * g->mult), (long long)g->oH, (long long)g->oW);
  return 0;
}

static int dw_check_gradOutput(const dw_geom *g, const char *fn, const lt_tensor *go, int type) {
  char buf[160];
  if (nn_check_given(go, type, fn, "gradOutput")) return -1;
  int f = g->batch;
  if (go->ndim != 3 + f || (f && go->size[0] != g->N) || go->size[f] != g->nIn * g->mult || go->size[f + 1] != g->oH ||
      go->size[f + 2] != g->oW)
    return lt_fail("%s: gradOutput should be of shape %s%lld x %lld x %lld but got %s", fn, f ? "N x " : "",
                   (long long)(g->nIn * g->mult), (long long)g->oH, (long long)g->oW,
                   lt_shape_str(go, buf, sizeof buf));
  return 0;
}

static int dw_check_bias(const dw_geom *g, const char *fn, const char *what, const lt_tensor *b, int type) {
  if (!b) return 0;
  if (nn_check_float(b, type, fn, what)) return -1;
  if (lt_tensor_nelement(b) != g->mult * g->nIn)
    return lt_fail("%s: %s should be nOutputPlane x nInputPlane (%lld x %lld)", fn, what, (long long)g->mult,
                   (long long)g->nIn);
  return 0;
}

static int dw_resize(lt_tensor *t, const dw_geom *g, int64_t C, int64_t H, int64_t W) {
  int64_t sz[4] = {g->N, C, H, W};
  return g->batch ? lt_tensor_resize(t, 4, sz) : lt_tensor_resize(t, 3, sz + 1);
}

#define NN_GENERIC_FILE "nn_spatialconv_depthwise.c"
#include "nn_generic.h"

int lt_nn_SpatialDepthWiseConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                   lt_tensor *bias, int kW, int kH, int dW, int dH, int padW,
                                                   int padH) {
  NN_NEED(input);
  static const char fn[] = "SpatialDepthWiseConvolution_updateOutput";
  dw_geom g;
  if (dw_geom_init(&g, fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      dw_check_bias(&g, fn, "bias", bias, input->type) || nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  const void *b = bias && w ? nn_contig(&cp, bias) : NULL;
  if (!w || (bias && !b) || dw_resize(output, &g, g.nIn * g.mult, g.oH, g.oW)) goto done;
  NN_CALL(input->type, dw_forward, &g, in, w, b, lt_tensor_data(output));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialDepthWiseConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradInput, lt_tensor *weight, int kW, int kH,
                                                      int dW, int dH, int padW, int padH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialDepthWiseConvolution_updateGradInput";
  dw_geom g;
  if (dw_geom_init(&g, fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      dw_check_gradOutput(&g, fn, gradOutput, input->type) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || dw_resize(gradInput, &g, g.nIn, g.iH, g.iW)) goto done;
  NN_CALL(input->type, dw_backward_input, &g, go, w, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialDepthWiseConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                        lt_tensor *gradWeight, lt_tensor *gradBias, int kW, int kH,
                                                        int dW, int dH, int padW, int padH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialDepthWiseConvolution_accGradParameters";
  dw_geom g;
  if (dw_geom_init(&g, fn, input, gradWeight, kW, kH, dW, dH, padW, padH) ||
      dw_check_gradOutput(&g, fn, gradOutput, input->type) ||
      dw_check_bias(&g, fn, "gradBias", gradBias, input->type))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  if (gradBias && !lt_tensor_is_contiguous(gradBias)) return lt_fail("%s: gradBias needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  NN_CALL(input->type, dw_acc_grad, &g, in, go, lt_tensor_data(gradWeight),
          gradBias ? lt_tensor_data(gradBias) : NULL, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

/* Taps of output row/column o that fall inside [0, n): k in [lo, hi). */
static inline void NN_(dw_taps)(int64_t o, int d, int pad, int k, int64_t n, int *lo, int *hi) {
  int64_t start = o * d - pad;
  *lo = start < 0 ? (int)-start : 0;
  *hi = start + k > n ? (int)(n - start) : k;
  if (*hi < *lo) *hi = *lo;
}

static void NN_(dw_forward)(const dw_geom *g, const real *in, const real *w, const real *b, real *out) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW, NI = g->N * g->nIn;
#pragma omp parallel for schedule(static) if (NI * g->mult * oP * kP >= LT_OMP_THRESHOLD)
  for (int64_t ni = 0; ni < NI; ni++) {
    int64_t i = ni % g->nIn;
    const real *plane = in + ni * iP;
    for (int64_t m = 0; m < g->mult; m++) {
      const real *k = w + (m * g->nIn + i) * kP;
      real *o = out + (ni * g->mult + m) * oP;
      real bv = b ? b[m * g->nIn + i] : 0;
      for (int64_t oh = 0; oh < g->oH; oh++) {
        int ylo, yhi;
        NN_(dw_taps)(oh, g->dH, g->padH, g->kH, g->iH, &ylo, &yhi);
        for (int64_t ow = 0; ow < g->oW; ow++) {
          int xlo, xhi;
          NN_(dw_taps)(ow, g->dW, g->padW, g->kW, g->iW, &xlo, &xhi);
          const real *p = plane + (oh * g->dH - g->padH) * g->iW + (ow * g->dW - g->padW);
          accreal s = 0;
          for (int ky = ylo; ky < yhi; ky++)
            for (int kx = xlo; kx < xhi; kx++) s += k[ky * g->kW + kx] * p[ky * g->iW + kx];
          o[oh * g->oW + ow] = bv + (real)s;
        }
      }
    }
  }
}

static void NN_(dw_backward_input)(const dw_geom *g, const real *go, const real *w, real *gi) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW, NI = g->N * g->nIn;
#pragma omp parallel for schedule(static) if (NI * g->mult * oP * kP >= LT_OMP_THRESHOLD)
  for (int64_t ni = 0; ni < NI; ni++) {
    int64_t i = ni % g->nIn;
    real *plane = gi + ni * iP;
    memset(plane, 0, sizeof(real) * iP);
    for (int64_t m = 0; m < g->mult; m++) {
      const real *k = w + (m * g->nIn + i) * kP;
      const real *o = go + (ni * g->mult + m) * oP;
      for (int64_t oh = 0; oh < g->oH; oh++) {
        int ylo, yhi;
        NN_(dw_taps)(oh, g->dH, g->padH, g->kH, g->iH, &ylo, &yhi);
        for (int64_t ow = 0; ow < g->oW; ow++) {
          int xlo, xhi;
          NN_(dw_taps)(ow, g->dW, g->padW, g->kW, g->iW, &xlo, &xhi);
          real *p = plane + (oh * g->dH - g->padH) * g->iW + (ow * g->dW - g->padW);
          real v = o[oh * g->oW + ow];
          for (int ky = ylo; ky < yhi; ky++)
            for (int kx = xlo; kx < xhi; kx++) p[ky * g->iW + kx] += v * k[ky * g->kW + kx];
        }
      }
    }
  }
}

static void NN_(dw_acc_grad)(const dw_geom *g, const real *in, const real *go, real *gw, real *gb, double scale) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW;
#pragma omp parallel for schedule(static) if (g->N * g->nIn * g->mult * oP * kP >= LT_OMP_THRESHOLD)
  for (int64_t i = 0; i < g->nIn; i++)
    for (int64_t m = 0; m < g->mult; m++) {
      real *k = gw + (m * g->nIn + i) * kP;
      accreal sb = 0;
      for (int ky = 0; ky < g->kH; ky++)
        for (int kx = 0; kx < g->kW; kx++) {
          accreal s = 0;
          for (int64_t n = 0; n < g->N; n++) {
            const real *plane = in + (n * g->nIn + i) * iP, *o = go + ((n * g->nIn + i) * g->mult + m) * oP;
            for (int64_t oh = 0; oh < g->oH; oh++) {
              int64_t ih = oh * g->dH - g->padH + ky;
              if (ih < 0 || ih >= g->iH) continue;
              for (int64_t ow = 0; ow < g->oW; ow++) {
                int64_t iw = ow * g->dW - g->padW + kx;
                if (iw >= 0 && iw < g->iW) s += o[oh * g->oW + ow] * plane[ih * g->iW + iw];
              }
            }
          }
          k[ky * g->kW + kx] += (real)(scale * s);
        }
      if (gb) {
        for (int64_t n = 0; n < g->N; n++) {
          const real *o = go + ((n * g->nIn + i) * g->mult + m) * oP;
          for (int64_t p = 0; p < oP; p++) sb += o[p];
        }
        gb[m * g->nIn + i] += (real)(scale * sb);
      }
    }
}

#endif
