/* SpatialConvolutionLocal: a convolution whose kernels differ at every
 * output position, by direct loops. Forward runs the (sample, output
 * position) pairs in parallel, gradInput the (sample, input plane) pairs,
 * gradWeight the output positions: no two threads write the same element. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct loc_geom {
  int batch;
  int64_t N, nIn, nOut, iH, iW, oH, oW;
  int kW, kH, dW, dH, padW, padH;
} loc_geom;

static int loc_geom_init(loc_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight,
                         const lt_tensor *bias, int kW, int kH, int dW, int dH, int padW, int padH, int64_t iW,
                         int64_t iH, int64_t oW, int64_t oH) {
  char buf[160];
  if (kW <= 0 || kH <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kH: %d kW: %d", fn, kH, kW);
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (padW < 0 || padH < 0) return lt_fail("%s: padding should be non-negative, but got padH: %d padW: %d", fn, padH, padW);
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(weight, input->type, fn, "weight") || nn_check_float(bias, input->type, fn, "bias")) return -1;
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  int f = input->ndim == 4;
  g->batch = f;
  g->N = f ? input->size[0] : 1;
  g->nIn = input->size[f];
  g->iH = iH; g->iW = iW; g->oH = oH; g->oW = oW;
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH;
  if (input->size[f + 1] != iH || input->size[f + 2] != iW)
    return lt_fail("%s: input of shape %s does not match the module's image size %lld x %lld", fn,
                   lt_shape_str(input, buf, sizeof buf), (long long)iH, (long long)iW);
  if (oH != (iH + 2 * (int64_t)padH - kH) / dH + 1 || oW != (iW + 2 * (int64_t)padW - kW) / dW + 1 || oH < 1 || oW < 1)
    return lt_fail("%s: output size %lld x %lld does not follow from the input size and kernel", fn, (long long)oH,
                   (long long)oW);
  int64_t per = g->nIn * kH * kW * oH * oW;
  if (per == 0 || lt_tensor_nelement(weight) % per != 0)
    return lt_fail("%s: weight of shape %s does not hold oH x oW x nOutputPlane x %lld x %d x %d kernels", fn,
                   lt_shape_str(weight, buf, sizeof buf), (long long)g->nIn, kH, kW);
  g->nOut = lt_tensor_nelement(weight) / per;
  if (bias && lt_tensor_nelement(bias) != g->nOut * oH * oW)
    return lt_fail("%s: bias should have nOutputPlane x oH x oW = %lld elements, got %lld", fn,
                   (long long)(g->nOut * oH * oW), (long long)lt_tensor_nelement(bias));
  return 0;
}

static int loc_check_gradOutput(const loc_geom *g, const char *fn, const lt_tensor *go, int type) {
  char buf[160];
  if (nn_check_given(go, type, fn, "gradOutput")) return -1;
  int f = g->batch;
  if (go->ndim != 3 + f || (f && go->size[0] != g->N) || go->size[f] != g->nOut || go->size[f + 1] != g->oH ||
      go->size[f + 2] != g->oW)
    return lt_fail("%s: gradOutput should be of shape %s%lld x %lld x %lld but got %s", fn, f ? "N x " : "",
                   (long long)g->nOut, (long long)g->oH, (long long)g->oW, lt_shape_str(go, buf, sizeof buf));
  return 0;
}

static int loc_resize(lt_tensor *t, const loc_geom *g, int64_t C, int64_t H, int64_t W) {
  int64_t sz[4] = {g->N, C, H, W};
  return g->batch ? lt_tensor_resize(t, 4, sz) : lt_tensor_resize(t, 3, sz + 1);
}

#define NN_GENERIC_FILE "nn_spatialconv_local.c"
#include "nn_generic.h"

int lt_nn_SpatialConvolutionLocal_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                               lt_tensor *bias, int kW, int kH, int dW, int dH, int padW, int padH,
                                               int64_t iW, int64_t iH, int64_t oW, int64_t oH) {
  NN_NEED(input);
  static const char fn[] = "SpatialConvolutionLocal_updateOutput";
  loc_geom g;
  if (loc_geom_init(&g, fn, input, weight, bias, kW, kH, dW, dH, padW, padH, iW, iH, oW, oH) ||
      nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  const void *b = bias && w ? nn_contig(&cp, bias) : NULL;
  if (!w || (bias && !b) || loc_resize(output, &g, g.nOut, g.oH, g.oW)) goto done;
  NN_CALL(input->type, loc_forward, &g, in, w, b, lt_tensor_data(output));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialConvolutionLocal_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                  lt_tensor *weight, int kW, int kH, int dW, int dH, int padW,
                                                  int padH, int64_t iW, int64_t iH, int64_t oW, int64_t oH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialConvolutionLocal_updateGradInput";
  loc_geom g;
  if (loc_geom_init(&g, fn, input, weight, NULL, kW, kH, dW, dH, padW, padH, iW, iH, oW, oH) ||
      loc_check_gradOutput(&g, fn, gradOutput, input->type) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || loc_resize(gradInput, &g, g.nIn, g.iH, g.iW)) goto done;
  NN_CALL(input->type, loc_backward_input, &g, go, w, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialConvolutionLocal_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                    lt_tensor *gradBias, int kW, int kH, int dW, int dH, int padW,
                                                    int padH, int64_t iW, int64_t iH, int64_t oW, int64_t oH,
                                                    double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialConvolutionLocal_accGradParameters";
  loc_geom g;
  if (loc_geom_init(&g, fn, input, gradWeight, gradBias, kW, kH, dW, dH, padW, padH, iW, iH, oW, oH) ||
      loc_check_gradOutput(&g, fn, gradOutput, input->type))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight) || (gradBias && !lt_tensor_is_contiguous(gradBias)))
    return lt_fail("%s: gradWeight and gradBias need to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  NN_CALL(input->type, loc_acc_grad, &g, in, go, lt_tensor_data(gradWeight),
          gradBias ? lt_tensor_data(gradBias) : NULL, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(loc_forward)(const loc_geom *g, const real *in, const real *w, const real *b, real *out) {
  const int64_t P = g->oH * g->oW, iP = g->iH * g->iW, kP = (int64_t)g->kH * g->kW, NP = g->N * P;
  const int64_t wpos = g->nOut * g->nIn * kP;  /* weights of one output position */
#pragma omp parallel for schedule(static) if (NP * wpos >= LT_OMP_THRESHOLD)
  for (int64_t np = 0; np < NP; np++) {
    int64_t n = np / P, p = np % P, y = p / g->oW, x = p % g->oW;
    const real *wp = w + p * wpos, *img = in + n * g->nIn * iP;
    for (int64_t o = 0; o < g->nOut; o++) {
      accreal s = b ? b[o * P + p] : 0;
      for (int64_t i = 0; i < g->nIn; i++) {
        const real *k = wp + (o * g->nIn + i) * kP, *plane = img + i * iP;
        for (int ky = 0; ky < g->kH; ky++) {
          int64_t ih = y * g->dH - g->padH + ky;
          if (ih < 0 || ih >= g->iH) continue;
          for (int kx = 0; kx < g->kW; kx++) {
            int64_t iw = x * g->dW - g->padW + kx;
            if (iw >= 0 && iw < g->iW) s += k[ky * g->kW + kx] * plane[ih * g->iW + iw];
          }
        }
      }
      out[(n * g->nOut + o) * P + p] = (real)s;
    }
  }
}

static void NN_(loc_backward_input)(const loc_geom *g, const real *go, const real *w, real *gi) {
  const int64_t P = g->oH * g->oW, iP = g->iH * g->iW, kP = (int64_t)g->kH * g->kW, NI = g->N * g->nIn;
  const int64_t wpos = g->nOut * g->nIn * kP;
#pragma omp parallel for schedule(static) if (NI * P * g->nOut * kP >= LT_OMP_THRESHOLD)
  for (int64_t ni = 0; ni < NI; ni++) {
    int64_t n = ni / g->nIn, i = ni % g->nIn;
    real *plane = gi + ni * iP;
    memset(plane, 0, sizeof(real) * iP);
    for (int64_t p = 0; p < P; p++) {
      int64_t y = p / g->oW, x = p % g->oW;
      for (int64_t o = 0; o < g->nOut; o++) {
        real v = go[(n * g->nOut + o) * P + p];
        const real *k = w + p * wpos + (o * g->nIn + i) * kP;
        for (int ky = 0; ky < g->kH; ky++) {
          int64_t ih = y * g->dH - g->padH + ky;
          if (ih < 0 || ih >= g->iH) continue;
          for (int kx = 0; kx < g->kW; kx++) {
            int64_t iw = x * g->dW - g->padW + kx;
            if (iw >= 0 && iw < g->iW) plane[ih * g->iW + iw] += v * k[ky * g->kW + kx];
          }
        }
      }
    }
  }
}

static void NN_(loc_acc_grad)(const loc_geom *g, const real *in, const real *go, real *gw, real *gb, double scale) {
  const int64_t P = g->oH * g->oW, iP = g->iH * g->iW, kP = (int64_t)g->kH * g->kW;
  const int64_t wpos = g->nOut * g->nIn * kP;
#pragma omp parallel for schedule(static) if (g->N * P * wpos >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < P; p++) {
    int64_t y = p / g->oW, x = p % g->oW;
    for (int64_t o = 0; o < g->nOut; o++) {
      accreal sb = 0;
      for (int64_t n = 0; n < g->N; n++) {
        real v = (real)(scale * go[(n * g->nOut + o) * P + p]);
        sb += go[(n * g->nOut + o) * P + p];
        for (int64_t i = 0; i < g->nIn; i++) {
          real *k = gw + p * wpos + (o * g->nIn + i) * kP;
          const real *plane = in + (n * g->nIn + i) * iP;
          for (int ky = 0; ky < g->kH; ky++) {
            int64_t ih = y * g->dH - g->padH + ky;
            if (ih < 0 || ih >= g->iH) continue;
            for (int kx = 0; kx < g->kW; kx++) {
              int64_t iw = x * g->dW - g->padW + kx;
              if (iw >= 0 && iw < g->iW) k[ky * g->kW + kx] += v * plane[ih * g->iW + iw];
            }
          }
        }
      }
      if (gb) gb[o * P + p] += (real)(scale * sb);
    }
  }
}

#endif
