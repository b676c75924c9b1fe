/* SpatialConvolutionMap and SpatialFullConvolutionMap: sparse plane-to-plane
 * convolutions given by a connection table, each connection k with its own
 * kH x kW kernel. Two plane sizes meet: the "big" one (input of the valid
 * cross-correlation, output of the full convolution) and the "small" one,
 * with big = (small - 1)*d + k (up to the valid one's floor). The three
 * primitives below (cross-correlate big into small, scatter small into big,
 * kernel gradient) serve both modules. Output planes (forward), input planes
 * (gradInput) and connections (gradWeight) run in parallel, so no two
 * threads write the same plane. */
#ifndef NN_GENERIC_PASS
#include <stdlib.h>
#include "nn_internal.h"

typedef struct map_geom {
  int batch, full;
  int64_t N, inPlanes, nOut, nk;
  int64_t iH, iW, oH, oW;        /* module input and output planes */
  int64_t bH, bW, sH, sW;        /* big and small planes */
  int kH, kW, dH, dW;
  int64_t *from, *to;            /* 0-based, nk each (one malloc) */
} map_geom;

static int64_t map_entry(const lt_tensor *t, int64_t r, int64_t c) {
  const char *base = lt_tensor_data(t);
  int64_t off = r * t->stride[0] + c * t->stride[1];
  switch (lt_host_type(t->type)) {
    case LT_FLOAT: return (int64_t)((const float *)base)[off];
    case LT_DOUBLE: return (int64_t)((const double *)base)[off];
    default: return ((const int64_t *)base)[off];
  }
}

static int map_geom_init(map_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight,
                         const lt_tensor *conn, int nIn, int nOut, int dW, int dH, int full) {
  char buf[160];
  g->from = NULL;
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(weight, input->type, fn, "weight")) return -1;
  if (conn->ndim != 2 || conn->size[1] != 2 ||
      (lt_host_type(conn->type) != LT_FLOAT && lt_host_type(conn->type) != LT_DOUBLE && lt_host_type(conn->type) != LT_LONG))
    return lt_fail("%s: connTable should be an nk x 2 Float, Double or Long tensor, but got: %s", fn,
                   lt_shape_str(conn, buf, sizeof buf));
  if (weight->ndim != 3 || weight->size[0] != conn->size[0])
    return lt_fail("%s: weight should be nk x kH x kW with nk = %lld connections, but got: %s", fn,
                   (long long)conn->size[0], lt_shape_str(weight, buf, sizeof buf));
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  int f = input->ndim == 4;
  g->batch = f;
  g->full = full;
  g->N = f ? input->size[0] : 1;
  g->inPlanes = input->size[f];
  g->nOut = nOut;
  g->nk = conn->size[0];
  g->kH = (int)weight->size[1];
  g->kW = (int)weight->size[2];
  g->dH = dH;
  g->dW = dW;
  g->iH = input->size[f + 1];
  g->iW = input->size[f + 2];
  if (g->inPlanes < nIn)
    return lt_fail("%s: input has %lld planes, but the connection table needs %d (input of shape %s)", fn,
                   (long long)g->inPlanes, nIn, lt_shape_str(input, buf, sizeof buf));
  if (full) {
    g->oH = (g->iH - 1) * dH + g->kH;
    g->oW = (g->iW - 1) * dW + g->kW;
    g->bH = g->oH; g->bW = g->oW; g->sH = g->iH; g->sW = g->iW;
  } else {
    if (g->iH < g->kH || g->iW < g->kW)
      return lt_fail("%s: input image (%lld x %lld) smaller than the kernel (%d x %d)", fn, (long long)g->iH,
                     (long long)g->iW, g->kH, g->kW);
    g->oH = (g->iH - g->kH) / dH + 1;
    g->oW = (g->iW - g->kW) / dW + 1;
    g->bH = g->iH; g->bW = g->iW; g->sH = g->oH; g->sW = g->oW;
  }
  g->from = malloc(sizeof(int64_t) * 2 * (g->nk ? g->nk : 1));
  if (!g->from) return lt_fail("%s: out of memory", fn);
  g->to = g->from + g->nk;
  for (int64_t k = 0; k < g->nk; k++) {
    g->from[k] = map_entry(conn, k, 0) - 1;
    g->to[k] = map_entry(conn, k, 1) - 1;
    if (g->from[k] < 0 || g->from[k] >= g->inPlanes || g->to[k] < 0 || g->to[k] >= nOut) {
      int64_t a = g->from[k] + 1, b = g->to[k] + 1;
      free(g->from);
      g->from = NULL;
      return lt_fail("%s: connTable row %lld (%lld -> %lld) is outside the %lld input and %d output planes", fn,
                     (long long)k + 1, (long long)a, (long long)b, (long long)g->inPlanes, nOut);
    }
  }
  return 0;
}

static int map_done(map_geom *g, nn_copies *cp, int rc) {
  free(g->from);
  g->from = NULL;
  return nn_copies_free(cp, rc);
}

static int map_resize(lt_tensor *t, const map_geom *g, int64_t C, int64_t H, int64_t W) {
  int64_t sz[4] = {g->N, C, H, W};
  return g->batch ? lt_tensor_resize(t, 4, sz) : lt_tensor_resize(t, 3, sz + 1);
}

#define NN_GENERIC_FILE "nn_spatialconv_map.c"
#include "nn_generic.h"

int lt_nn_SpatialConvolutionMap_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                             lt_tensor *connTable, int nInputPlane, int nOutputPlane, int dW, int dH,
                                             int full) {
  NN_NEED(input);
  const char *fn = full ? "SpatialFullConvolutionMap_updateOutput" : "SpatialConvolutionMap_updateOutput";
  map_geom g;
  nn_copies cp = {0};
  if (map_geom_init(&g, fn, input, weight, connTable, nInputPlane, nOutputPlane, dW, dH, full)) return -1;
  int rc = -1;
  if (nn_check_vec(bias, nOutputPlane, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output"))
    goto done;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  if (!w || map_resize(output, &g, g.nOut, g.oH, g.oW)) goto done;
  NN_CALL(input->type, map_forward, &g, in, w, bias ? lt_tensor_data(bias) : NULL, bias ? nn_vec_stride(bias) : 0,
          lt_tensor_data(output));
  rc = 0;
done:
  return map_done(&g, &cp, rc);
}

int lt_nn_SpatialConvolutionMap_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                lt_tensor *weight, lt_tensor *connTable, int nInputPlane,
                                                int nOutputPlane, int dW, int dH, int full) {
  NN_NEED(input, gradOutput);
  const char *fn = full ? "SpatialFullConvolutionMap_updateGradInput" : "SpatialConvolutionMap_updateGradInput";
  char buf[160];
  map_geom g;
  nn_copies cp = {0};
  if (map_geom_init(&g, fn, input, weight, connTable, nInputPlane, nOutputPlane, dW, dH, full)) return -1;
  int rc = -1;
  if (nn_check_given(gradOutput, input->type, fn, "gradOutput") ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  int f = g.batch;
  if (gradOutput->ndim != input->ndim || (f && gradOutput->size[0] != g.N) || gradOutput->size[f] != g.nOut ||
      gradOutput->size[f + 1] != g.oH || gradOutput->size[f + 2] != g.oW) {
    lt_fail("%s: gradOutput should be of shape %s%lld x %lld x %lld but got %s", fn, f ? "N x " : "",
            (long long)g.nOut, (long long)g.oH, (long long)g.oW, lt_shape_str(gradOutput, buf, sizeof buf));
    goto done;
  }
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || map_resize(gradInput, &g, g.inPlanes, g.iH, g.iW)) goto done;
  NN_CALL(input->type, map_backward_input, &g, go, w, lt_tensor_data(gradInput));
  rc = 0;
done:
  return map_done(&g, &cp, rc);
}

int lt_nn_SpatialConvolutionMap_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                  lt_tensor *gradBias, lt_tensor *connTable, int nInputPlane,
                                                  int nOutputPlane, int dW, int dH, int full, double scale) {
  NN_NEED(input, gradOutput);
  const char *fn = full ? "SpatialFullConvolutionMap_accGradParameters" : "SpatialConvolutionMap_accGradParameters";
  char buf[160];
  map_geom g;
  nn_copies cp = {0};
  if (map_geom_init(&g, fn, input, gradWeight, connTable, nInputPlane, nOutputPlane, dW, dH, full)) return -1;
  int rc = -1;
  if (nn_check_given(gradOutput, input->type, fn, "gradOutput") ||
      nn_check_vec(gradBias, nOutputPlane, input->type, fn, "gradBias"))
    goto done;
  if (!lt_tensor_is_contiguous(gradWeight)) {
    lt_fail("%s: gradWeight needs to be contiguous", fn);
    goto done;
  }
  int f = g.batch;
  if (gradOutput->ndim != input->ndim || (f && gradOutput->size[0] != g.N) || gradOutput->size[f] != g.nOut ||
      gradOutput->size[f + 1] != g.oH || gradOutput->size[f + 2] != g.oW) {
    lt_fail("%s: gradOutput should be of shape %s%lld x %lld x %lld but got %s", fn, f ? "N x " : "",
            (long long)g.nOut, (long long)g.oH, (long long)g.oW, lt_shape_str(gradOutput, buf, sizeof buf));
    goto done;
  }
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  NN_CALL(input->type, map_acc_grad, &g, in, go, lt_tensor_data(gradWeight),
          gradBias ? lt_tensor_data(gradBias) : NULL, gradBias ? nn_vec_stride(gradBias) : 0, scale);
  rc = 0;
done:
  return map_done(&g, &cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

/* small[s] += sum_k w[k] * big[s*d + k] (valid cross-correlation, strided). */
static void NN_(map_xcorr)(const map_geom *g, real *small, const real *big, const real *w) {
  for (int64_t y = 0; y < g->sH; y++)
    for (int64_t x = 0; x < g->sW; x++) {
      const real *p = big + y * g->dH * g->bW + x * g->dW;
      accreal s = 0;
      for (int ky = 0; ky < g->kH; ky++, p += g->bW)
        for (int kx = 0; kx < g->kW; kx++) s += w[ky * g->kW + kx] * p[kx];
      small[y * g->sW + x] += (real)s;
    }
}

/* big[s*d + k] += w[k] * small[s] (the adjoint of map_xcorr). */
static void NN_(map_scatter)(const map_geom *g, real *big, const real *small, const real *w) {
  for (int64_t y = 0; y < g->sH; y++)
    for (int64_t x = 0; x < g->sW; x++) {
      real v = small[y * g->sW + x];
      real *p = big + y * g->dH * g->bW + x * g->dW;
      for (int ky = 0; ky < g->kH; ky++, p += g->bW)
        for (int kx = 0; kx < g->kW; kx++) p[kx] += v * w[ky * g->kW + kx];
    }
}

/* gw[k] += scale * sum_s small[s] * big[s*d + k]. */
static void NN_(map_wgrad)(const map_geom *g, real *gw, const real *big, const real *small, double scale) {
  for (int ky = 0; ky < g->kH; ky++)
    for (int kx = 0; kx < g->kW; kx++) {
      accreal s = 0;
      for (int64_t y = 0; y < g->sH; y++) {
        const real *p = big + (y * g->dH + ky) * g->bW + kx;
        const real *q = small + y * g->sW;
        for (int64_t x = 0; x < g->sW; x++) s += q[x] * p[x * g->dW];
      }
      gw[ky * g->kW + kx] += (real)(scale * s);
    }
}

static void NN_(map_forward)(const map_geom *g, const real *in, const real *w, const real *b, int64_t bs, real *out) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW, NO = g->N * g->nOut;
#pragma omp parallel for schedule(static) if (NO * oP * kP >= LT_OMP_THRESHOLD)
  for (int64_t no = 0; no < NO; no++) {
    int64_t n = no / g->nOut, o = no % g->nOut;
    real *dst = out + no * oP;
    real v = b ? b[o * bs] : 0;
    for (int64_t p = 0; p < oP; p++) dst[p] = v;
    for (int64_t k = 0; k < g->nk; k++) {
      if (g->to[k] != o) continue;
      const real *src = in + (n * g->inPlanes + g->from[k]) * iP;
      if (g->full) NN_(map_scatter)(g, dst, src, w + k * kP);
      else NN_(map_xcorr)(g, dst, src, w + k * kP);
    }
  }
}

static void NN_(map_backward_input)(const map_geom *g, const real *go, const real *w, real *gi) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW, NI = g->N * g->inPlanes;
#pragma omp parallel for schedule(static) if (NI * oP * kP >= LT_OMP_THRESHOLD)
  for (int64_t ni = 0; ni < NI; ni++) {
    int64_t n = ni / g->inPlanes, i = ni % g->inPlanes;
    real *dst = gi + ni * iP;
    memset(dst, 0, sizeof(real) * iP);
    for (int64_t k = 0; k < g->nk; k++) {
      if (g->from[k] != i) continue;
      const real *src = go + (n * g->nOut + g->to[k]) * oP;
      if (g->full) NN_(map_xcorr)(g, dst, src, w + k * kP);
      else NN_(map_scatter)(g, dst, src, w + k * kP);
    }
  }
}

static void NN_(map_acc_grad)(const map_geom *g, const real *in, const real *go, real *gw, real *gb, int64_t gbs,
                              double scale) {
  const int64_t iP = g->iH * g->iW, oP = g->oH * g->oW, kP = (int64_t)g->kH * g->kW;
#pragma omp parallel for schedule(static) if (g->nk * g->N * (g->full ? iP : oP) * kP >= LT_OMP_THRESHOLD)
  for (int64_t k = 0; k < g->nk; k++)
    for (int64_t n = 0; n < g->N; n++) {
      const real *x = in + (n * g->inPlanes + g->from[k]) * iP, *y = go + (n * g->nOut + g->to[k]) * oP;
      if (g->full) NN_(map_wgrad)(g, gw + k * kP, y, x, scale);
      else NN_(map_wgrad)(g, gw + k * kP, x, y, scale);
    }
  if (gb) {
#pragma omp parallel for schedule(static) if (g->N * g->nOut * oP >= LT_OMP_THRESHOLD)
    for (int64_t o = 0; o < g->nOut; o++) {
      accreal s = 0;
      for (int64_t n = 0; n < g->N; n++) {
        const real *r = go + (n * g->nOut + o) * oP;
        for (int64_t p = 0; p < oP; p++) s += r[p];
      }
      gb[o * gbs] += (real)(scale * s);
    }
  }
}

#endif
