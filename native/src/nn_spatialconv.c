/* SpatialDilatedConvolution and SpatialFullConvolution (im2col + GEMM) and
 * SpatialSubSampling.
 *
 * Both convolutions unfold an "image" (C x H x W) into a column matrix of
 * K = C*kH*kW rows and L = oH*oW columns, where tap (kh, kw) of column
 * (oh, ow) reads pixel (oh*dH - padH + kh*dilH, ow*dW - padW + kw*dilW).
 *  - Dilated convolution: the image is the input, the columns span the
 *    output: output_n = weight (nOut x K) * cols(input_n).
 *  - Full (transposed) convolution is the adjoint of a plain convolution of
 *    its output: the image is the output, the columns span the input:
 *    output_n = col2im(weight^T * input_n), gradInput_n = weight * cols(gradOutput_n),
 *    gradWeight += input_n * cols(gradOutput_n)^T.
 * The unfolding, the GEMMs, the chunking and the threading are nn_unfold.h's. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct sc_geom {
  int batch;           /* input was 4-D */
  int64_t N;
  int64_t C, H, W;     /* the unfolded image */
  int64_t oH, oW;      /* the columns' spatial size */
  int64_t K, L;
  int kW, kH, dW, dH, padW, padH, dilW, dilH;
} sc_geom;

int lt_conv2d_check_sizes(const char *fn, int kW, int kH, int dW, int dH, int padW, int padH) {
  if (kW <= 0 || kH <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kH: %d kW: %d", fn, kH, kW);
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (padW < 0 || padH < 0) return lt_fail("%s: padding should be non-negative, but got padH: %d padW: %d", fn, padH, padW);
  return 0;
}

static int sc_check_input(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                          int dH, int padW, int padH) {
  char buf[160];
  if (lt_conv2d_check_sizes(fn, kW, kH, dW, dH, padW, padH)) return -1;
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (weight && nn_check_float(weight, input->type, fn, "weight")) return -1;
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  if (!lt_blas_loaded()) return lt_fail("%s: BLAS is not loaded (lt_blas_load was not called)", fn);
  return 0;
}

static int sc_finish(sc_geom *g, const char *fn) {
  g->K = g->C * g->kH * g->kW;
  g->L = g->oH * g->oW;
  if (g->K > INT32_MAX || g->L > INT32_MAX) return lt_fail("%s: matrix dimensions exceed the 32-bit BLAS interface", fn);
  return 0;
}

int lt_conv2d_geometry(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                       int dH, int padW, int padH, int dilW, int dilH, lt_conv2d_geom *g) {
  char buf[160];
  if (dilW <= 0 || dilH <= 0)
    return lt_fail("%s: dilation should be greater than zero, but got dilationH: %d dilationW: %d", fn, dilH, dilW);
  int64_t nIn;
  if (weight->ndim == 4 && weight->size[2] == kH && weight->size[3] == kW) {
    nIn = weight->size[1];
  } else if (weight->ndim == 2 && weight->size[1] % ((int64_t)kH * kW) == 0) {
    nIn = weight->size[1] / ((int64_t)kH * kW);
  } else {
    return lt_fail("%s: weight should be nOutputPlane x nInputPlane x kH x kW (kH: %d kW: %d) or "
                   "nOutputPlane x nInputPlane*kH*kW, but got: %s", fn, kH, kW, lt_shape_str(weight, buf, sizeof buf));
  }
  int f = input->ndim == 4;
  if (input->size[f] != nIn)
    return lt_fail("%s: input has %lld planes, expected %lld (input of shape %s)", fn, (long long)input->size[f],
                   (long long)nIn, lt_shape_str(input, buf, sizeof buf));
  g->batch = f;
  g->N = f ? input->size[0] : 1;
  g->C = nIn;
  g->H = input->size[f + 1];
  g->W = input->size[f + 2];
  g->nOut = weight->size[0];
  g->oH = (g->H + 2 * (int64_t)padH - ((int64_t)dilH * (kH - 1) + 1)) / dH + 1;
  g->oW = (g->W + 2 * (int64_t)padW - ((int64_t)dilW * (kW - 1) + 1)) / dW + 1;
  if (g->H + 2 * (int64_t)padH < (int64_t)dilH * (kH - 1) + 1 || g->W + 2 * (int64_t)padW < (int64_t)dilW * (kW - 1) + 1 ||
      g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)nIn, (long long)g->H, (long long)g->W,
                   (long long)g->nOut, (long long)g->oH, (long long)g->oW);
  return 0;
}

/* Dilated convolution: weight (nOut, nIn, kH, kW) or (nOut, nIn*kH*kW); *nOut set. */
static int dil_geom(sc_geom *g, int64_t *nOut, const char *fn, const lt_tensor *input, const lt_tensor *weight,
                    int kW, int kH, int dW, int dH, int padW, int padH, int dilW, int dilH) {
  lt_conv2d_geom cg;
  if (sc_check_input(fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      lt_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, dilW, dilH, &cg))
    return -1;
  *nOut = cg.nOut;
  g->batch = cg.batch;
  g->N = cg.N;
  g->C = cg.C;
  g->H = cg.H;
  g->W = cg.W;
  g->oH = cg.oH;
  g->oW = cg.oW;
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH; g->dilW = dilW; g->dilH = dilH;
  return sc_finish(g, fn);
}

int lt_full_conv2d_geometry(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                            int dH, int padW, int padH, int adjW, int adjH, lt_conv2d_geom *g) {
  char buf[160];
  if (adjW < 0 || adjH < 0 || adjW >= dW || adjH >= dH)
    return lt_fail("%s: adjW and adjH must be non-negative and smaller than dW and dH, but got adjH: %d adjW: %d "
                   "(dH: %d dW: %d)", fn, adjH, adjW, dH, dW);
  if (weight->ndim != 4 || weight->size[2] != kH || weight->size[3] != kW)
    return lt_fail("%s: weight should be nInputPlane x nOutputPlane x kH x kW (kH: %d kW: %d), but got: %s", fn, kH,
                   kW, lt_shape_str(weight, buf, sizeof buf));
  int f = input->ndim == 4;
  if (input->size[f] != weight->size[0])
    return lt_fail("%s: input has %lld planes, expected %lld (input of shape %s)", fn, (long long)input->size[f],
                   (long long)weight->size[0], lt_shape_str(input, buf, sizeof buf));
  g->batch = f;
  g->N = f ? input->size[0] : 1;
  g->C = weight->size[0];
  g->H = input->size[f + 1];
  g->W = input->size[f + 2];
  g->nOut = weight->size[1];
  g->oH = (g->H - 1) * dH - 2 * (int64_t)padH + kH + adjH;
  g->oW = (g->W - 1) * dW - 2 * (int64_t)padW + kW + adjW;
  if (g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)g->C, (long long)g->H, (long long)g->W,
                   (long long)g->nOut, (long long)g->oH, (long long)g->oW);
  return 0;
}

/* Full convolution: weight (nIn, nOut, kH, kW); the image is the output. */
static int full_geom(sc_geom *g, int64_t *nIn, const char *fn, const lt_tensor *input, const lt_tensor *weight,
                     int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH) {
  lt_conv2d_geom cg;
  if (sc_check_input(fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      lt_full_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, adjW, adjH, &cg))
    return -1;
  *nIn = cg.C;
  g->batch = cg.batch;
  g->N = cg.N;
  g->C = cg.nOut;   /* the unfolded image is the output; the columns span the input */
  g->oH = cg.H;
  g->oW = cg.W;
  g->H = cg.oH;
  g->W = cg.oW;
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH; g->dilW = 1; g->dilH = 1;
  return sc_finish(g, fn);
}

/* t must be (N,) C x H x W as the input's batch-ness says. */
static int sc_check_shape(const sc_geom *g, const char *fn, const char *what, const lt_tensor *t, int type, int64_t C,
                          int64_t H, int64_t W) {
  char buf[160];
  if (nn_check_float(t, type, fn, what)) return -1;
  int f = g->batch;
  int ok = t->ndim == 3 + f && (!f || t->size[0] == g->N) && t->size[f] == C && t->size[f + 1] == H && t->size[f + 2] == W;
  if (!ok)
    return lt_fail("%s: %s should be of shape %s%lld x %lld x %lld but got %s", fn, what, f ? "N x " : "",
                   (long long)C, (long long)H, (long long)W, lt_shape_str(t, buf, sizeof buf));
  return 0;
}

static int sc_resize(lt_tensor *t, const sc_geom *g, int64_t C, int64_t H, int64_t W) {
  int64_t sz[4] = {g->N, C, H, W};
  return g->batch ? lt_tensor_resize(t, 4, sz) : lt_tensor_resize(t, 3, sz + 1);
}

#include "nn_unfold.h"

/* The unfold geometry of g: a 2-D image is a volume of depth 1. */
static void sc_unfold(const sc_geom *g, nn_unfold *u) {
  int64_t in[3] = {1, g->H, g->W}, out[3] = {1, g->oH, g->oW};
  int k[3] = {1, g->kH, g->kW}, d[3] = {1, g->dH, g->dW}, p[3] = {0, g->padH, g->padW}, l[3] = {1, g->dilH, g->dilW};
  nn_unfold_set(u, g->C, in, out, k, d, p, l);
}

/* Plans a call of M x K weights over g's samples; columns becomes its scratch. */
static int sc_plan(nn_unfold_plan *pl, lt_tensor *columns, const sc_geom *g, int64_t M, int partials,
                   const char *fn) {
  nn_unfold u;
  sc_unfold(g, &u);
  return nn_unfold_plan_for(pl, columns, &u, g->N, M, partials, fn);
}

#define NN_GENERIC_FILE "nn_spatialconv.c"
#include "nn_generic.h"

/* SpatialDilatedConvolution's and SpatialFullConvolution's float32 passes go to onednn.c first (a full
 * convolution as the plain one of its output, run backwards: nOut here is its nIn), and stay on the unfold path
 * when it returns 1 (oneDNN not loaded, disabled, the shape not implemented, or the unfold path timed faster). */
static lt_onednn_conv dil_onednn_geom(const sc_geom *g, int64_t nOut) {
  lt_onednn_conv c = {g->N, g->C, g->H, g->W, nOut, g->oH, g->oW, g->kH, g->kW, g->dH, g->dW, g->padH, g->padW,
                      g->dilH, g->dilW};
  return c;
}

/* One float32 pass the unfold way, for onednn.c's one-time timing on a shape's first call (ctx: the sc_job): it
 * writes only the pass's output and the columns; backward-weights accumulates into a gradWeight of its own and
 * skips the bias, so that nothing accumulates twice. Full convolutions run their passes by the convolution's
 * roles: their forward is its backward data (dy their input), their gradInput its forward (x their
 * gradOutput), their gradWeight its backward weights (x their gradOutput, dy their input). */
typedef struct sc_job {
  const sc_geom *g;
  const nn_unfold_plan *pl;
  int full;
  int64_t M;   /* the weights' rows: nOut of a dilated convolution, nIn of a full one */
  void *columns;
} sc_job;

static int sc_unfold_timed(lt_onednn_pass *p) {
  const sc_job *j = p->ctx;
  const sc_geom *g = j->g;
  if (p->pass == LT_ONEDNN_BACKWARD_WEIGHTS) {
    size_t bytes = sizeof(float) * (size_t)(j->M * g->K);
    if (!lt_onednn_own_scratch(p, bytes)) return -1;
    memset(p->scratch, 0, bytes);
    p->own_gw = p->scratch;
  }
  if (!j->full) {
    if (p->pass == LT_ONEDNN_FORWARD)
      NN_FN(dil_forward, float)(g, j->pl, j->M, p->x, p->w, p->bias, p->bs, p->out, j->columns);
    else if (p->pass == LT_ONEDNN_BACKWARD_DATA)
      NN_FN(dil_backward_input, float)(g, j->pl, j->M, p->dy, p->w, p->out, j->columns);
    else
      NN_FN(dil_acc_grad, float)(g, j->pl, j->M, p->x, p->dy, p->scratch, NULL, 0, j->columns, p->scale);
  } else {
    if (p->pass == LT_ONEDNN_BACKWARD_DATA)
      NN_FN(full_forward, float)(g, j->pl, j->M, p->dy, p->w, NULL, 0, p->out, j->columns);
    else if (p->pass == LT_ONEDNN_FORWARD)
      NN_FN(full_backward_input, float)(g, j->pl, j->M, p->x, p->w, p->out, j->columns);
    else
      NN_FN(full_acc_grad, float)(g, j->pl, j->M, p->dy, p->x, p->scratch, NULL, 0, j->columns, p->scale);
  }
  return 0;
}

/* ---- SpatialDilatedConvolution ---- */

int lt_nn_SpatialDilatedConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                 lt_tensor *bias, lt_tensor *columns, int kW, int kH, int dW,
                                                 int dH, int padW, int padH, int dilationW, int dilationH) {
  NN_NEED(input);
  static const char fn[] = "SpatialDilatedConvolution_updateOutput";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nOut;
  if (dil_geom(&g, &nOut, fn, input, weight, kW, kH, dW, dH, padW, padH, dilationW, dilationH)) return -1;
  if (nn_check_vec(bias, nOut, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  if (!w || sc_resize(output, &g, nOut, g.oH, g.oW) || sc_plan(&pl, columns, &g, nOut, 0, fn)) goto done;
  const void *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = dil_onednn_geom(&g, nOut);
    sc_job j = {&g, &pl, 0, nOut, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_FORWARD, .x = in, .w = w, .bias = b, .bs = bs, .out = lt_tensor_data(output),
                        .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, dil_forward, &g, &pl, nOut, in, w, b, bs, lt_tensor_data(output), lt_tensor_data(columns));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialDilatedConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *weight, lt_tensor *columns, int kW, int kH, int dW,
                                                    int dH, int padW, int padH, int dilationW, int dilationH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialDilatedConvolution_updateGradInput";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nOut;
  if (dil_geom(&g, &nOut, fn, input, weight, kW, kH, dW, dH, padW, padH, dilationW, dilationH)) return -1;
  if (sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, nOut, g.oH, g.oW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput") || nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || sc_resize(gradInput, &g, g.C, g.H, g.W) || sc_plan(&pl, columns, &g, nOut, 0, fn)) goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = dil_onednn_geom(&g, nOut);
    sc_job j = {&g, &pl, 0, nOut, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_DATA, .w = w, .dy = go, .out = lt_tensor_data(gradInput),
                        .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, dil_backward_input, &g, &pl, nOut, go, w, lt_tensor_data(gradInput), lt_tensor_data(columns));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialDilatedConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradWeight, lt_tensor *gradBias,
                                                      lt_tensor *columns, int kW, int kH, int dW, int dH, int padW,
                                                      int padH, int dilationW, int dilationH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialDilatedConvolution_accGradParameters";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nOut;
  if (dil_geom(&g, &nOut, fn, input, gradWeight, kW, kH, dW, dH, padW, padH, dilationW, dilationH)) return -1;
  if (sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, nOut, g.oH, g.oW) ||
      nn_check_vec(gradBias, nOut, input->type, fn, "gradBias") || nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || sc_plan(&pl, columns, &g, nOut, 1, fn)) goto done;
  void *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = dil_onednn_geom(&g, nOut);
    sc_job j = {&g, &pl, 0, nOut, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_WEIGHTS, .x = in, .dy = go, .gw = lt_tensor_data(gradWeight), .gb = gb,
                        .gbs = gbs, .scale = scale, .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, dil_acc_grad, &g, &pl, nOut, in, go, lt_tensor_data(gradWeight), gb, gbs,
          lt_tensor_data(columns), scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

/* ---- SpatialFullConvolution ---- */

int lt_nn_SpatialFullConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                              lt_tensor *bias, lt_tensor *columns, int kW, int kH, int dW, int dH,
                                              int padW, int padH, int adjW, int adjH) {
  NN_NEED(input);
  static const char fn[] = "SpatialFullConvolution_updateOutput";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nIn;
  if (full_geom(&g, &nIn, fn, input, weight, kW, kH, dW, dH, padW, padH, adjW, adjH)) return -1;
  if (nn_check_vec(bias, g.C, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  if (!w || sc_resize(output, &g, g.C, g.H, g.W) || sc_plan(&pl, columns, &g, nIn, 0, fn)) goto done;
  const void *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = dil_onednn_geom(&g, nIn);
    sc_job j = {&g, &pl, 1, nIn, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_DATA, .w = w, .dy = in, .out = lt_tensor_data(output),
                        .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) < 0) goto done;
    if (rc == 0) {  /* the backward-data pass has no bias */
      NN_FN(plane_add_bias, float)(lt_tensor_data(output), g.N, g.C, g.H * g.W, b, bs);
      goto done;
    }
    rc = -1;
  }
  NN_CALL(input->type, full_forward, &g, &pl, nIn, in, w, b, bs, lt_tensor_data(output), lt_tensor_data(columns));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialFullConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *weight, lt_tensor *columns, int kW, int kH, int dW,
                                                 int dH, int padW, int padH, int adjW, int adjH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialFullConvolution_updateGradInput";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nIn;
  if (full_geom(&g, &nIn, fn, input, weight, kW, kH, dW, dH, padW, padH, adjW, adjH)) return -1;
  if (sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, g.C, g.H, g.W) ||
      nn_check_float(gradInput, input->type, fn, "gradInput") || nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || sc_resize(gradInput, &g, nIn, g.oH, g.oW) || sc_plan(&pl, columns, &g, nIn, 0, fn)) goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = dil_onednn_geom(&g, nIn);
    sc_job j = {&g, &pl, 1, nIn, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_FORWARD, .x = go, .w = w, .out = lt_tensor_data(gradInput),
                        .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, full_backward_input, &g, &pl, nIn, go, w, lt_tensor_data(gradInput), lt_tensor_data(columns));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialFullConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                   lt_tensor *gradBias, lt_tensor *columns, int kW, int kH, int dW,
                                                   int dH, int padW, int padH, int adjW, int adjH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialFullConvolution_accGradParameters";
  sc_geom g;
  nn_unfold_plan pl;
  int64_t nIn;
  if (full_geom(&g, &nIn, fn, input, gradWeight, kW, kH, dW, dH, padW, padH, adjW, adjH)) return -1;
  if (sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, g.C, g.H, g.W) ||
      nn_check_vec(gradBias, g.C, input->type, fn, "gradBias") || nn_check_float(columns, input->type, fn, "columns"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || sc_plan(&pl, columns, &g, nIn, 1, fn)) goto done;
  void *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = dil_onednn_geom(&g, nIn);
    sc_job j = {&g, &pl, 1, nIn, lt_tensor_data(columns)};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_WEIGHTS, .x = go, .dy = in, .gw = lt_tensor_data(gradWeight),
                        .scale = scale, .own = sc_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) < 0) goto done;
    if (rc == 0) {  /* the bias of a full convolution sums its gradOutput: the convolution's x, not its dy */
      NN_FN(unfold_bias_grad, float)(go, g.N, g.C, g.H * g.W, gb, gbs, scale);
      goto done;
    }
    rc = -1;
  }
  NN_CALL(input->type, full_acc_grad, &g, &pl, nIn, in, go, lt_tensor_data(gradWeight), gb, gbs,
          lt_tensor_data(columns), scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

/* ---- SpatialSubSampling ---- */

static int sub_geom(sc_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH,
                    int dW, int dH) {
  char buf[160];
  if (sc_check_input(fn, input, NULL, kW, kH, dW, dH, 0, 0) || nn_check_float(weight, input->type, fn, "weight"))
    return -1;
  int f = input->ndim == 4;
  g->batch = f;
  g->N = f ? input->size[0] : 1;
  g->C = lt_tensor_nelement(weight);
  if (input->size[f] != g->C)
    return lt_fail("%s: input has %lld planes, expected %lld (input of shape %s)", fn, (long long)input->size[f],
                   (long long)g->C, lt_shape_str(input, buf, sizeof buf));
  g->H = input->size[f + 1];
  g->W = input->size[f + 2];
  if (g->H < kH || g->W < kW)
    return lt_fail("%s: input image (%lld x %lld) smaller than the kernel (%d x %d)", fn, (long long)g->H,
                   (long long)g->W, kH, kW);
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = 0; g->padH = 0; g->dilW = 1; g->dilH = 1;
  g->oH = (g->H - kH) / dH + 1;
  g->oW = (g->W - kW) / dW + 1;
  g->K = g->C;
  g->L = g->oH * g->oW;
  return 0;
}

int lt_nn_SpatialSubSampling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                          int kW, int kH, int dW, int dH) {
  NN_NEED(input);
  static const char fn[] = "SpatialSubSampling_updateOutput";
  sc_geom g;
  if (sub_geom(&g, fn, input, weight, kW, kH, dW, dH) || nn_check_vec(weight, g.C, input->type, fn, "weight") ||
      nn_check_vec(bias, g.C, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input);
  if (!in || sc_resize(output, &g, g.C, g.oH, g.oW)) goto done;
  NN_CALL(input->type, sub_forward, &g, in, lt_tensor_data(weight), nn_vec_stride(weight),
          bias ? lt_tensor_data(bias) : NULL, bias ? nn_vec_stride(bias) : 0, lt_tensor_data(output));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialSubSampling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *weight, int kW, int kH, int dW, int dH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialSubSampling_updateGradInput";
  sc_geom g;
  if (sub_geom(&g, fn, input, weight, kW, kH, dW, dH) || nn_check_vec(weight, g.C, input->type, fn, "weight") ||
      sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, g.C, g.oH, g.oW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput);
  if (!go || sc_resize(gradInput, &g, g.C, g.H, g.W)) goto done;
  NN_CALL(input->type, sub_backward_input, &g, go, lt_tensor_data(weight), nn_vec_stride(weight),
          lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialSubSampling_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                               lt_tensor *gradBias, int kW, int kH, int dW, int dH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialSubSampling_accGradParameters";
  sc_geom g;
  if (sub_geom(&g, fn, input, gradWeight, kW, kH, dW, dH) ||
      nn_check_vec(gradWeight, g.C, input->type, fn, "gradWeight") ||
      nn_check_vec(gradBias, g.C, input->type, fn, "gradBias") ||
      sc_check_shape(&g, fn, "gradOutput", gradOutput, input->type, g.C, g.oH, g.oW))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  NN_CALL(input->type, sub_acc_grad, &g, in, go, lt_tensor_data(gradWeight), nn_vec_stride(gradWeight),
          gradBias ? lt_tensor_data(gradBias) : NULL, gradBias ? nn_vec_stride(gradBias) : 0, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

#include "nn_unfold.h"

static void NN_(dil_forward)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nOut, const real *in, const real *w,
                             const real *b, int64_t bs, real *out, real *buf) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(unfold_gemm)(&u, pl, g->N, in, w, nOut, b, bs, out, buf);
}

static void NN_(dil_backward_input)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nOut, const real *go,
                                    const real *w, real *gi, real *buf) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(gemm_fold)(&u, pl, g->N, w, nOut, go, NULL, 0, gi, buf);
}

static void NN_(dil_acc_grad)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nOut, const real *in,
                              const real *go, real *gw, real *gb, int64_t gbs, real *buf, double scale) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(unfold_acc)(&u, pl, g->N, go, in, nOut, gw, buf, scale);
  NN_(unfold_bias_grad)(go, g->N, nOut, g->L, gb, gbs, scale);
}

static void NN_(full_forward)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nIn, const real *in, const real *w,
                              const real *b, int64_t bs, real *out, real *buf) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(gemm_fold)(&u, pl, g->N, w, nIn, in, b, bs, out, buf);
}

static void NN_(full_backward_input)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nIn, const real *go,
                                     const real *w, real *gi, real *buf) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(unfold_gemm)(&u, pl, g->N, go, w, nIn, NULL, 0, gi, buf);
}

static void NN_(full_acc_grad)(const sc_geom *g, const nn_unfold_plan *pl, int64_t nIn, const real *in,
                               const real *go, real *gw, real *gb, int64_t gbs, real *buf, double scale) {
  nn_unfold u;
  sc_unfold(g, &u);
  NN_(unfold_acc)(&u, pl, g->N, in, go, nIn, gw, buf, scale);
  NN_(unfold_bias_grad)(go, g->N, g->C, g->H * g->W, gb, gbs, scale);
}

/* Sum of the window of output pixel (oh, ow) in one plane. */
static inline accreal NN_(sub_window)(const sc_geom *g, const real *plane, int64_t oh, int64_t ow) {
  accreal s = 0;
  const real *p = plane + oh * g->dH * g->W + ow * g->dW;
  for (int kh = 0; kh < g->kH; kh++, p += g->W)
    for (int kw = 0; kw < g->kW; kw++) s += p[kw];
  return s;
}

static void NN_(sub_forward)(const sc_geom *g, const real *in, const real *w, int64_t ws, const real *b, int64_t bs,
                             real *out) {
  const int64_t NC = g->N * g->C, P = g->H * g->W;
#pragma omp parallel for schedule(static) if (NC * P >= LT_OMP_THRESHOLD)
  for (int64_t nc = 0; nc < NC; nc++) {
    int64_t c = nc % g->C;
    const real *plane = in + nc * P;
    real *o = out + nc * g->L;
    real wc = w[c * ws], bc = b ? b[c * bs] : 0;
    for (int64_t oh = 0; oh < g->oH; oh++)
      for (int64_t ow = 0; ow < g->oW; ow++) o[oh * g->oW + ow] = bc + wc * (real)NN_(sub_window)(g, plane, oh, ow);
  }
}

static void NN_(sub_backward_input)(const sc_geom *g, const real *go, const real *w, int64_t ws, real *gi) {
  const int64_t NC = g->N * g->C, P = g->H * g->W;
#pragma omp parallel for schedule(static) if (NC * P >= LT_OMP_THRESHOLD)
  for (int64_t nc = 0; nc < NC; nc++) {
    real wc = w[(nc % g->C) * ws];
    real *plane = gi + nc * P;
    const real *r = go + nc * g->L;
    memset(plane, 0, sizeof(real) * P);
    for (int64_t oh = 0; oh < g->oH; oh++)
      for (int64_t ow = 0; ow < g->oW; ow++) {
        real v = wc * r[oh * g->oW + ow];
        real *p = plane + oh * g->dH * g->W + ow * g->dW;
        for (int kh = 0; kh < g->kH; kh++, p += g->W)
          for (int kw = 0; kw < g->kW; kw++) p[kw] += v;
      }
  }
}

static void NN_(sub_acc_grad)(const sc_geom *g, const real *in, const real *go, real *gw, int64_t ws, real *gb,
                              int64_t bs, double scale) {
  const int64_t P = g->H * g->W;
#pragma omp parallel for schedule(static) if (g->N * g->C * P >= LT_OMP_THRESHOLD)
  for (int64_t c = 0; c < g->C; c++) {
    accreal sw = 0, sb = 0;
    for (int64_t n = 0; n < g->N; n++) {
      const real *plane = in + (n * g->C + c) * P, *r = go + (n * g->C + c) * g->L;
      for (int64_t oh = 0; oh < g->oH; oh++)
        for (int64_t ow = 0; ow < g->oW; ow++) {
          real v = r[oh * g->oW + ow];
          sb += v;
          sw += v * NN_(sub_window)(g, plane, oh, ow);
        }
    }
    gw[c * ws] += (real)(scale * sw);
    if (gb) gb[c * bs] += (real)(scale * sb);
  }
}

#endif
