/* Temporal and volumetric convolutions (Torch7's nn.Temporal* / nn.Volumetric*).
 *
 * TemporalConvolution: the kW frames of a window are consecutive in memory,
 * so the windows form a matrix whose rows start dW frames apart; when
 * dW >= kW that matrix is read in place (leading dimension dW*F), otherwise
 * it is unfolded first (BLAS forbids overlapping rows). gradInput adds, for
 * each kernel offset k, gradOutput * weight_k into the frames t*dW + k:
 * those rows never overlap for one k, so each k is one GEMM.
 * TemporalRowConvolution and TemporalSubSampling are per-feature (depthwise)
 * 1-D filters sharing one loop kernel (SubSampling: one weight for all k).
 * Volumetric: vol2col (with stride, padding, dilation) + GEMM; the full
 * (transposed) convolution is the same pair of operations in the other
 * order (GEMM then col2vol). Both are nn_unfold.h's (column chunks, samples
 * in parallel). */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

static int tv_check_type(const lt_tensor *input, const char *fn) {
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (!lt_blas_loaded()) return lt_fail("%s: BLAS is not loaded (lt_blas_load was not called)", fn);
  return 0;
}

/* ---------------------------------------------------------------- temporal */

typedef struct tgeom {
  int batch;
  int64_t N, S, F, oS; /* samples, input frames, features per frame, output frames */
} tgeom;

/* input (S, F) or (N, S, F); frameSize < 0: not checked. */
static int tgeom_init(tgeom *g, const char *fn, const lt_tensor *input, int kW, int dW, int64_t frameSize) {
  char buf[160];
  if (kW <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kW: %d", fn, kW);
  if (dW <= 0) return lt_fail("%s: stride should be greater than zero, but got dW: %d", fn, dW);
  if (tv_check_type(input, fn)) return -1;
  if (input->ndim != 2 && input->ndim != 3)
    return lt_fail("%s: 2D or 3D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  g->batch = input->ndim == 3;
  g->N = g->batch ? input->size[0] : 1;
  g->S = input->size[g->batch];
  g->F = input->size[g->batch + 1];
  if (frameSize >= 0 && g->F != frameSize)
    return lt_fail("%s: invalid input frame size. Got: %lld, Expected: %lld", fn, (long long)g->F,
                   (long long)frameSize);
  if (g->S < kW)
    return lt_fail("%s: input sequence smaller than kernel size. Got: %lld, Expected: %d", fn, (long long)g->S, kW);
  g->oS = (g->S - kW) / dW + 1;
  return 0;
}

static int tresize(lt_tensor *t, const tgeom *g, int64_t S, int64_t F) {
  int64_t sz[3] = {g->N, S, F};
  return g->batch ? lt_tensor_resize(t, 3, sz) : lt_tensor_resize(t, 2, sz + 1);
}

static int tcheck_gradOutput(const tgeom *g, const char *fn, const lt_tensor *go, int type, int64_t O) {
  char buf[160];
  if (nn_check_given(go, type, fn, "gradOutput")) return -1;
  int ok = go->ndim == (g->batch ? 3 : 2) && (!g->batch || go->size[0] == g->N) &&
           go->size[g->batch] == g->oS && go->size[g->batch + 1] == O;
  if (!ok)
    return lt_fail("%s: gradOutput should be of shape %s%lld x %lld] but got %s", fn, g->batch ? "[N x " : "[",
                   (long long)g->oS, (long long)O, lt_shape_str(go, buf, sizeof buf));
  return 0;
}

/* The TemporalConvolution weight (O, kW*F); returns O or -1. */
static int64_t tconv_weight(const char *fn, const lt_tensor *w, int type, int kW, int64_t F) {
  char buf[160];
  if (nn_check_float(w, type, fn, "weight")) return -1;
  if (w->ndim != 2 || w->size[1] != kW * F)
    return lt_fail("%s: weight should be of shape [outputFrameSize x %lld] but got %s", fn, (long long)(kW * F),
                   lt_shape_str(w, buf, sizeof buf));
  return w->size[0];
}

/* Scratch for the unfolded windows, only when they overlap (dW < kW); *scratch NULL otherwise. */
static int tconv_scratch(lt_tensor *tmp, const tgeom *g, int kW, int dW, void **scratch) {
  *scratch = NULL;
  if (dW >= kW) return 0;
  if (nn_resize1(tmp, g->oS * kW * g->F)) return -1;
  *scratch = lt_tensor_data(tmp);
  return 0;
}

typedef struct dwgeom {
  tgeom t;     /* S and F as the frames and features, whatever the layout */
  int kW, dW, padW;
  int64_t xsF, xsS, osF, osS; /* input and output strides of feature and frame */
  int64_t wsF, wsK;           /* weight strides (wsK 0: one weight per feature) */
} dwgeom;

typedef struct vgeom {
  int batch;
  int64_t N, nIn, nOut;
  int64_t C, iT, iH, iW, oT, oH, oW;
  int k[3], d[3], p[3], l[3]; /* T, H, W: kernel, stride, padding, dilation */
  int64_t K, L;               /* column matrix rows (C*kT*kH*kW) and columns (oT*oH*oW) */
  int64_t inN, outN;          /* elements per sample of the module's input and output */
} vgeom;

#include "nn_unfold.h"

int64_t nn_unfold_chunk_override = 0;

int64_t lt_nn_unfold_set_chunk(int64_t elements) {
  int64_t old = nn_unfold_chunk_override;
  nn_unfold_chunk_override = elements > 0 ? elements : 0;
  return old;
}

/* The unfold geometry of g. */
static void vunfold(const vgeom *g, nn_unfold *u) {
  int64_t in[3] = {g->iT, g->iH, g->iW}, out[3] = {g->oT, g->oH, g->oW};
  nn_unfold_set(u, g->C, in, out, g->k, g->d, g->p, g->l);
}

#define NN_GENERIC_FILE "nn_tvconv.c"
#include "nn_generic.h"

/* VolumetricConvolution's and VolumetricFullConvolution's float32 passes go to onednn.c first (a full
 * convolution as the plain one of its output, run backwards: O is its nIn), and stay on the unfold path when it
 * returns 1 (oneDNN not loaded, disabled, the shape not implemented, or the unfold path timed faster for it). */
static lt_onednn_conv vconv_onednn_geom(const vgeom *g, int64_t O) {
  lt_onednn_conv c = {g->N, g->C, g->iH, g->iW, O, g->oH, g->oW, g->k[1], g->k[2], g->d[1], g->d[2], g->p[1],
                      g->p[2], g->l[1], g->l[2], g->iT, g->oT, g->k[0], g->d[0], g->p[0], g->l[0]};
  return c;
}

/* One float32 pass the unfold way, for onednn.c's one-time timing on a shape's first call (ctx: the vconv_job):
 * it writes only the pass's output and the columns; backward-weights accumulates into a gradWeight of its own
 * and skips the bias, so that nothing accumulates twice. A full convolution's passes come by the convolution's
 * roles (lt_onednn.h): its forward as backward data, its gradInput as forward, x and dy swapped in backward
 * weights. */
typedef struct vconv_job {
  const vgeom *g;
  const nn_unfold_plan *pl;
  int full;
  void *cols;
} vconv_job;

static int vconv_unfold_timed(lt_onednn_pass *p) {
  const vconv_job *j = p->ctx;
  const vgeom *g = j->g;
  if (p->pass == LT_ONEDNN_BACKWARD_WEIGHTS) {
    size_t bytes = sizeof(float) * (size_t)(g->nIn * g->nOut * g->k[0] * g->k[1] * g->k[2]);
    if (!lt_onednn_own_scratch(p, bytes)) return -1;
    memset(p->scratch, 0, bytes);
    p->own_gw = p->scratch;
  }
  if (!j->full) {
    if (p->pass == LT_ONEDNN_FORWARD)
      NN_FN(vconv_forward, float)(g, j->pl, p->x, p->w, p->bias, p->bs, p->out, j->cols);
    else if (p->pass == LT_ONEDNN_BACKWARD_DATA)
      NN_FN(vconv_backward, float)(g, j->pl, p->dy, p->w, p->out, j->cols);
    else
      NN_FN(vconv_acc, float)(g, j->pl, p->x, p->dy, p->scratch, NULL, 0, j->cols, p->scale);
  } else {
    if (p->pass == LT_ONEDNN_BACKWARD_DATA)
      NN_FN(vfull_forward, float)(g, j->pl, p->dy, p->w, NULL, 0, p->out, j->cols);
    else if (p->pass == LT_ONEDNN_FORWARD)
      NN_FN(vfull_backward, float)(g, j->pl, p->x, p->w, p->out, j->cols);
    else
      NN_FN(vfull_acc, float)(g, j->pl, p->dy, p->x, p->scratch, NULL, 0, j->cols, p->scale);
  }
  return 0;
}

int lt_nn_TemporalConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                           int kW, int dW, int inputFrameSize, int outputFrameSize) {
  NN_NEED(input);
  static const char fn[] = "TemporalConvolution_updateOutput";
  tgeom g;
  if (tgeom_init(&g, fn, input, kW, dW, inputFrameSize)) return -1;
  int64_t O = tconv_weight(fn, weight, input->type, kW, g.F);
  if (O < 0) return -1;
  if (O != outputFrameSize)
    return lt_fail("%s: weight has %lld output features, expected %d", fn, (long long)O, outputFrameSize);
  if (nn_check_vec(bias, O, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output")) return -1;
  nn_copies cp = {0};
  lt_tensor tmp;
  lt_tensor_init(&tmp, input->type);
  int rc = -1;
  void *scratch;
  const void *x = nn_contig(&cp, input), *w = x ? nn_contig(&cp, weight) : NULL;
  if (!w || tconv_scratch(&tmp, &g, kW, dW, &scratch) || tresize(output, &g, g.oS, O)) goto done;
  NN_CALL(input->type, tconv_forward, &g, O, kW, dW, x, w, bias ? lt_tensor_data(bias) : NULL,
          bias ? nn_vec_stride(bias) : 0, lt_tensor_data(output), scratch);
  rc = 0;
done:
  lt_tensor_clear(&tmp);
  return nn_copies_free(&cp, rc);
}

int lt_nn_TemporalConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *weight, int kW, int dW) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "TemporalConvolution_updateGradInput";
  tgeom g;
  if (tgeom_init(&g, fn, input, kW, dW, -1)) return -1;
  int64_t O = tconv_weight(fn, weight, input->type, kW, g.F);
  if (O < 0 || tcheck_gradOutput(&g, fn, gradOutput, input->type, O) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || tresize(gradInput, &g, g.S, g.F)) goto done;
  NN_CALL(input->type, tconv_backward, &g, O, kW, dW, go, w, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_TemporalConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                lt_tensor *gradBias, int kW, int dW, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "TemporalConvolution_accGradParameters";
  tgeom g;
  if (tgeom_init(&g, fn, input, kW, dW, -1)) return -1;
  int64_t O = tconv_weight(fn, gradWeight, input->type, kW, g.F);
  if (O < 0 || tcheck_gradOutput(&g, fn, gradOutput, input->type, O) ||
      nn_check_vec(gradBias, O, input->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  lt_tensor tmp;
  lt_tensor_init(&tmp, input->type);
  int rc = -1;
  void *scratch;
  const void *x = nn_contig(&cp, input), *go = x ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || tconv_scratch(&tmp, &g, kW, dW, &scratch)) goto done;
  NN_CALL(input->type, tconv_acc, &g, O, kW, dW, x, go, lt_tensor_data(gradWeight),
          gradBias ? lt_tensor_data(gradBias) : NULL, gradBias ? nn_vec_stride(gradBias) : 0,
          scratch, scale);
  rc = 0;
done:
  lt_tensor_clear(&tmp);
  return nn_copies_free(&cp, rc);
}

/* ---- depthwise 1-D (TemporalRowConvolution, TemporalSubSampling) */

static int dwgeom_init(dwgeom *g, const char *fn, const lt_tensor *input, int kW, int dW, int padW, int featFirst,
                       int64_t frameSize) {
  char buf[160];
  if (kW <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kW: %d", fn, kW);
  if (dW <= 0) return lt_fail("%s: stride should be greater than zero, but got dW: %d", fn, dW);
  if (padW < 0) return lt_fail("%s: padding should be non-negative, but got padW: %d", fn, padW);
  if (tv_check_type(input, fn)) return -1;
  if (input->ndim != 2 && input->ndim != 3)
    return lt_fail("%s: 2D or 3D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  tgeom *t = &g->t;
  t->batch = input->ndim == 3;
  t->N = t->batch ? input->size[0] : 1;
  int f = t->batch;
  t->F = input->size[featFirst ? f : f + 1];
  t->S = input->size[featFirst ? f + 1 : f];
  if (t->F != frameSize)
    return lt_fail("%s: invalid input frame size. Got: %lld, Expected: %lld", fn, (long long)t->F,
                   (long long)frameSize);
  if (t->S + 2 * (int64_t)padW < kW)
    return lt_fail("%s: input sequence smaller than kernel size. Got: %lld, Expected: %d", fn, (long long)t->S, kW);
  t->oS = (t->S + 2 * (int64_t)padW - kW) / dW + 1;
  g->kW = kW; g->dW = dW; g->padW = padW;
  g->xsF = featFirst ? t->S : 1;
  g->xsS = featFirst ? 1 : t->F;
  g->osF = featFirst ? t->oS : 1;
  g->osS = featFirst ? 1 : t->F;
  return 0;
}

static int dw_resize(lt_tensor *t, const dwgeom *g, int64_t S, int featFirst) {
  int64_t a = featFirst ? g->t.F : S, b = featFirst ? S : g->t.F;
  int64_t sz[3] = {g->t.N, a, b};
  return g->t.batch ? lt_tensor_resize(t, 3, sz) : lt_tensor_resize(t, 2, sz + 1);
}

static int dw_check_gradOutput(const dwgeom *g, const char *fn, const lt_tensor *go, int type, int featFirst) {
  char buf[160];
  if (nn_check_given(go, type, fn, "gradOutput")) return -1;
  int f = g->t.batch;
  int ok = go->ndim == (f ? 3 : 2) && (!f || go->size[0] == g->t.N) &&
           go->size[featFirst ? f : f + 1] == g->t.F && go->size[featFirst ? f + 1 : f] == g->t.oS;
  if (!ok)
    return lt_fail("%s: gradOutput has shape %s, expected %lld frames of %lld features", fn,
                   lt_shape_str(go, buf, sizeof buf), (long long)g->t.oS, (long long)g->t.F);
  return 0;
}

/* weight: RowConvolution (F, 1, kW) or (F, kW), SubSampling (F) (shared = 1). */
static int dw_weight(dwgeom *g, const char *fn, const lt_tensor *w, int type, int shared) {
  char buf[160];
  if (nn_check_float(w, type, fn, "weight")) return -1;
  if (shared) {
    if (nn_check_vec(w, g->t.F, type, fn, "weight")) return -1;
    g->wsF = nn_vec_stride(w);
    g->wsK = 0;
    return 0;
  }
  int ok = (w->ndim == 3 && w->size[1] == 1) || w->ndim == 2;
  if (!ok || w->size[0] != g->t.F || w->size[w->ndim - 1] != g->kW)
    return lt_fail("%s: weight should be of shape [%lld x 1 x %d] but got %s", fn, (long long)g->t.F, g->kW,
                   lt_shape_str(w, buf, sizeof buf));
  g->wsF = w->stride[0];
  g->wsK = w->stride[w->ndim - 1];
  return 0;
}

static int dw_forward(const char *fn, lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                      int kW, int dW, int padW, int featFirst, int shared, int64_t frameSize) {
  dwgeom g;
  if (dwgeom_init(&g, fn, input, kW, dW, padW, featFirst, frameSize) || dw_weight(&g, fn, weight, input->type, shared) ||
      nn_check_vec(bias, g.t.F, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *x = nn_contig(&cp, input);
  if (!x || dw_resize(output, &g, g.t.oS, featFirst)) goto done;
  NN_CALL(input->type, dw_forward, &g, x, lt_tensor_data(weight), bias ? lt_tensor_data(bias) : NULL,
          bias ? nn_vec_stride(bias) : 0, lt_tensor_data(output));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

static int dw_backward(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                       lt_tensor *weight, int kW, int dW, int padW, int featFirst, int shared) {
  dwgeom g;
  int64_t F = input->ndim >= 2 ? input->size[featFirst ? input->ndim - 2 : input->ndim - 1] : 0;
  if (dwgeom_init(&g, fn, input, kW, dW, padW, featFirst, F) || dw_weight(&g, fn, weight, input->type, shared) ||
      dw_check_gradOutput(&g, fn, gradOutput, input->type, featFirst) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput);
  if (!go || dw_resize(gradInput, &g, g.t.S, featFirst)) goto done;
  NN_CALL(input->type, dw_backward, &g, go, lt_tensor_data(weight), lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

static int dw_acc(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                  lt_tensor *gradBias, int kW, int dW, int padW, int featFirst, int shared, double scale) {
  dwgeom g;
  int64_t F = input->ndim >= 2 ? input->size[featFirst ? input->ndim - 2 : input->ndim - 1] : 0;
  if (dwgeom_init(&g, fn, input, kW, dW, padW, featFirst, F) ||
      dw_weight(&g, fn, gradWeight, input->type, shared) ||
      dw_check_gradOutput(&g, fn, gradOutput, input->type, featFirst) ||
      nn_check_vec(gradBias, g.t.F, input->type, fn, "gradBias"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *x = nn_contig(&cp, input), *go = x ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  NN_CALL(input->type, dw_acc, &g, x, go, lt_tensor_data(gradWeight), gradBias ? lt_tensor_data(gradBias) : NULL,
          gradBias ? nn_vec_stride(gradBias) : 0, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_TemporalRowConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                              lt_tensor *bias, int kW, int dW, int padW, int featFirst) {
  NN_NEED(input);
  int64_t F = weight->ndim >= 1 ? weight->size[0] : -1;
  return dw_forward("TemporalRowConvolution_updateOutput", input, output, weight, bias, kW, dW, padW, featFirst, 0,
                    F);
}

int lt_nn_TemporalRowConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *weight, int kW, int dW, int padW, int featFirst) {
  NN_NEED(input, gradOutput);
  return dw_backward("TemporalRowConvolution_updateGradInput", input, gradOutput, gradInput, weight, kW, dW, padW,
                     featFirst, 0);
}

int lt_nn_TemporalRowConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                   lt_tensor *gradBias, int kW, int dW, int padW, int featFirst,
                                                   double scale) {
  NN_NEED(input, gradOutput);
  return dw_acc("TemporalRowConvolution_accGradParameters", input, gradOutput, gradWeight, gradBias, kW, dW, padW,
                featFirst, 0, scale);
}

int lt_nn_TemporalSubSampling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                           int kW, int dW, int inputFrameSize) {
  NN_NEED(input);
  return dw_forward("TemporalSubSampling_updateOutput", input, output, weight, bias, kW, dW, 0, 0, 1,
                    inputFrameSize);
}

int lt_nn_TemporalSubSampling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *weight, int kW, int dW) {
  NN_NEED(input, gradOutput);
  return dw_backward("TemporalSubSampling_updateGradInput", input, gradOutput, gradInput, weight, kW, dW, 0, 0, 1);
}

int lt_nn_TemporalSubSampling_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                lt_tensor *gradBias, int kW, int dW, double scale) {
  NN_NEED(input, gradOutput);
  return dw_acc("TemporalSubSampling_accGradParameters", input, gradOutput, gradWeight, gradBias, kW, dW, 0, 0, 1,
                scale);
}

/* -------------------------------------------------------------- volumetric */

/* vol2col/col2vol geometry: a C-channel volume (iT, iH, iW) against a grid of
 * (oT, oH, oW) kernel positions. */
static int vcheck_params(const char *fn, const int k[3], const int d[3], const int p[3], const int l[3]) {
  for (int i = 0; i < 3; i++) {
    if (k[i] <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kT: %d kH: %d kW: %d", fn, k[0], k[1], k[2]);
    if (d[i] <= 0) return lt_fail("%s: stride should be greater than zero, but got dT: %d dH: %d dW: %d", fn, d[0], d[1], d[2]);
    if (p[i] < 0) return lt_fail("%s: padding should be non-negative, but got padT: %d padH: %d padW: %d", fn, p[0], p[1], p[2]);
    if (l[i] <= 0) return lt_fail("%s: dilation should be greater than zero, but got dilationT: %d dilationH: %d dilationW: %d", fn, l[0], l[1], l[2]);
  }
  return 0;
}

static int vinput(vgeom *g, const char *fn, const lt_tensor *input, int64_t nIn, int64_t sp[3]) {
  char buf[160];
  if (input->ndim != 4 && input->ndim != 5)
    return lt_fail("%s: 4D or 5D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  g->batch = input->ndim == 5;
  int f = g->batch;
  g->N = f ? input->size[0] : 1;
  if (input->size[f] != nIn)
    return lt_fail("%s: input has %lld planes, expected %lld (input of shape %s)", fn, (long long)input->size[f],
                   (long long)nIn, lt_shape_str(input, buf, sizeof buf));
  for (int i = 0; i < 3; i++) sp[i] = input->size[f + 1 + i];
  return 0;
}

/* Convolution: weight (nOut, nIn, kT, kH, kW) or (nOut, nIn*kT*kH*kW). */
static int vconv_init(vgeom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight, int kT, int kW,
                      int kH, int dT, int dW, int dH, int pT, int pW, int pH, int lT, int lW, int lH) {
  char buf[160];
  int k[3] = {kT, kH, kW}, d[3] = {dT, dH, dW}, p[3] = {pT, pH, pW}, l[3] = {lT, lH, lW};
  if (vcheck_params(fn, k, d, p, l) || tv_check_type(input, fn) || nn_check_float(weight, input->type, fn, "weight"))
    return -1;
  int64_t kk = (int64_t)kT * kH * kW;
  if (weight->ndim == 5 && weight->size[2] == kT && weight->size[3] == kH && weight->size[4] == kW)
    g->nIn = weight->size[1];
  else if (weight->ndim == 2 && weight->size[1] % kk == 0)
    g->nIn = weight->size[1] / kk;
  else
    return lt_fail("%s: weight should be of shape [nOutputPlane x nInputPlane x %d x %d x %d] but got %s", fn, kT,
                   kH, kW, lt_shape_str(weight, buf, sizeof buf));
  g->nOut = weight->size[0];
  int64_t sp[3], os[3];
  if (vinput(g, fn, input, g->nIn, sp)) return -1;
  for (int i = 0; i < 3; i++) {
    os[i] = (sp[i] + 2 * (int64_t)p[i] - (int64_t)l[i] * (k[i] - 1) - 1);
    os[i] = os[i] < 0 ? 0 : os[i] / d[i] + 1;
  }
  if (os[0] < 1 || os[1] < 1 || os[2] < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld x "
                   "%lld). Output size is too small", fn, (long long)g->nIn, (long long)sp[0], (long long)sp[1],
                   (long long)sp[2], (long long)g->nOut, (long long)os[0], (long long)os[1], (long long)os[2]);
  g->C = g->nIn;
  g->iT = sp[0]; g->iH = sp[1]; g->iW = sp[2];
  g->oT = os[0]; g->oH = os[1]; g->oW = os[2];
  memcpy(g->k, k, sizeof k); memcpy(g->d, d, sizeof d); memcpy(g->p, p, sizeof p); memcpy(g->l, l, sizeof l);
  g->K = g->C * kk;
  g->L = g->oT * g->oH * g->oW;
  g->inN = g->nIn * g->iT * g->iH * g->iW;
  g->outN = g->nOut * g->L;
  return 0;
}

/* Full convolution: weight (nIn, nOut, kT, kH, kW); the volume of vol2col is the module's output. */
static int vfull_init(vgeom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight, int dT, int dW,
                      int dH, int pT, int pW, int pH, int aT, int aW, int aH) {
  char buf[160];
  if (tv_check_type(input, fn) || nn_check_float(weight, input->type, fn, "weight")) return -1;
  if (weight->ndim != 5)
    return lt_fail("%s: 5D weight tensor expected (nInputPlane x nOutputPlane x kT x kH x kW) but got %s", fn,
                   lt_shape_str(weight, buf, sizeof buf));
  int k[3] = {(int)weight->size[2], (int)weight->size[3], (int)weight->size[4]}, d[3] = {dT, dH, dW},
      p[3] = {pT, pH, pW}, l[3] = {1, 1, 1}, a[3] = {aT, aH, aW};
  if (vcheck_params(fn, k, d, p, l)) return -1;
  for (int i = 0; i < 3; i++)
    if (a[i] < 0 || a[i] >= d[i])
      return lt_fail("%s: adjT, adjH, adjW (%d, %d, %d) must be smaller than the strides (%d, %d, %d)", fn, aT, aH,
                     aW, dT, dH, dW);
  g->nIn = weight->size[0];
  g->nOut = weight->size[1];
  int64_t sp[3], os[3];
  if (vinput(g, fn, input, g->nIn, sp)) return -1;
  for (int i = 0; i < 3; i++) os[i] = (sp[i] - 1) * d[i] - 2 * (int64_t)p[i] + k[i] + a[i];
  if (os[0] < 1 || os[1] < 1 || os[2] < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld x "
                   "%lld). Output size is too small", fn, (long long)g->nIn, (long long)sp[0], (long long)sp[1],
                   (long long)sp[2], (long long)g->nOut, (long long)os[0], (long long)os[1], (long long)os[2]);
  g->C = g->nOut;
  g->iT = os[0]; g->iH = os[1]; g->iW = os[2];
  g->oT = sp[0]; g->oH = sp[1]; g->oW = sp[2];
  memcpy(g->k, k, sizeof k); memcpy(g->d, d, sizeof d); memcpy(g->p, p, sizeof p); memcpy(g->l, l, sizeof l);
  g->K = g->C * k[0] * k[1] * k[2];
  g->L = g->oT * g->oH * g->oW;
  g->inN = g->nIn * g->L;
  g->outN = g->nOut * g->iT * g->iH * g->iW;
  return 0;
}

/* (N,) C, T, H, W */
static int vresize(lt_tensor *t, const vgeom *g, int64_t C, int64_t T, int64_t H, int64_t W) {
  int64_t sz[5] = {g->N, C, T, H, W};
  return g->batch ? lt_tensor_resize(t, 5, sz) : lt_tensor_resize(t, 4, sz + 1);
}

static int vcheck_shape(const vgeom *g, const char *fn, const char *what, const lt_tensor *t, int type, int64_t C,
                        int64_t T, int64_t H, int64_t W) {
  char buf[160];
  if (nn_check_float(t, type, fn, what)) return -1;
  int f = g->batch;
  int ok = t->ndim == 4 + f && (!f || t->size[0] == g->N) && t->size[f] == C && t->size[f + 1] == T &&
           t->size[f + 2] == H && t->size[f + 3] == W;
  if (!ok)
    return lt_fail("%s: %s should be of shape %s%lld x %lld x %lld x %lld] but got %s", fn, what,
                   f ? "[N x " : "[", (long long)C, (long long)T, (long long)H, (long long)W,
                   lt_shape_str(t, buf, sizeof buf));
  return 0;
}

/* Plans a call of M x K weights over g's samples; finput becomes its scratch (partials: weight gradients). */
static int vcols(lt_tensor *finput, const vgeom *g, int64_t M, int partials, int type, const char *fn,
                 nn_unfold_plan *pl, void **buf) {
  nn_unfold u;
  vunfold(g, &u);
  if (nn_check_float(finput, type, fn, "finput") || nn_unfold_plan_for(pl, finput, &u, g->N, M, partials, fn))
    return -1;
  *buf = lt_tensor_data(finput);
  return 0;
}

int lt_nn_VolumetricConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                             lt_tensor *bias, lt_tensor *finput, int kT, int kW, int kH, int dT,
                                             int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                                             int dilH) {
  NN_NEED(input);
  static const char fn[] = "VolumetricConvolution_updateOutput";
  vgeom g;
  nn_unfold_plan pl;
  if (vconv_init(&g, fn, input, weight, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH) ||
      nn_check_vec(bias, g.nOut, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *x = nn_contig(&cp, input), *w = x ? nn_contig(&cp, weight) : NULL;
  if (!w || vcols(finput, &g, g.nOut, 0, input->type, fn, &pl, &cols) ||
      vresize(output, &g, g.nOut, g.oT, g.oH, g.oW))
    goto done;
  const void *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nOut);
    vconv_job j = {&g, &pl, 0, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_FORWARD, .x = x, .w = w, .bias = b, .bs = bs, .out = lt_tensor_data(output),
                        .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, vconv_forward, &g, &pl, x, w, b, bs, lt_tensor_data(output), cols);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_VolumetricConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                lt_tensor *weight, lt_tensor *finput, int kT, int kW, int kH, int dT,
                                                int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                                                int dilH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricConvolution_updateGradInput";
  vgeom g;
  nn_unfold_plan pl;
  if (vconv_init(&g, fn, input, weight, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH) ||
      vcheck_shape(&g, fn, "gradOutput", gradOutput, input->type, g.nOut, g.oT, g.oH, g.oW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || vcols(finput, &g, g.nOut, 0, input->type, fn, &pl, &cols) ||
      vresize(gradInput, &g, g.nIn, g.iT, g.iH, g.iW))
    goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nOut);
    vconv_job j = {&g, &pl, 0, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_DATA, .w = w, .dy = go, .out = lt_tensor_data(gradInput),
                        .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, vconv_backward, &g, &pl, go, w, lt_tensor_data(gradInput), cols);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_VolumetricConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                  lt_tensor *gradBias, lt_tensor *finput, int kT, int kW, int kH,
                                                  int dT, int dW, int dH, int padT, int padW, int padH, int dilT,
                                                  int dilW, int dilH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricConvolution_accGradParameters";
  vgeom g;
  nn_unfold_plan pl;
  if (vconv_init(&g, fn, input, gradWeight, kT, kW, kH, dT, dW, dH, padT, padW, padH, dilT, dilW, dilH) ||
      vcheck_shape(&g, fn, "gradOutput", gradOutput, input->type, g.nOut, g.oT, g.oH, g.oW) ||
      nn_check_vec(gradBias, g.nOut, input->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *x = nn_contig(&cp, input), *go = x ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || vcols(finput, &g, g.nOut, 1, input->type, fn, &pl, &cols)) goto done;
  void *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nOut);
    vconv_job j = {&g, &pl, 0, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_WEIGHTS, .x = x, .dy = go, .gw = lt_tensor_data(gradWeight), .gb = gb,
                        .gbs = gbs, .scale = scale, .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, vconv_acc, &g, &pl, x, go, lt_tensor_data(gradWeight), gb, gbs, cols, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_VolumetricFullConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                 lt_tensor *bias, lt_tensor *finput, int dT, int dW, int dH,
                                                 int padT, int padW, int padH, int adjT, int adjW, int adjH) {
  NN_NEED(input);
  static const char fn[] = "VolumetricFullConvolution_updateOutput";
  vgeom g;
  nn_unfold_plan pl;
  if (vfull_init(&g, fn, input, weight, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH) ||
      nn_check_vec(bias, g.nOut, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *x = nn_contig(&cp, input), *w = x ? nn_contig(&cp, weight) : NULL;
  if (!w || vcols(finput, &g, g.nIn, 0, input->type, fn, &pl, &cols) ||
      vresize(output, &g, g.nOut, g.iT, g.iH, g.iW))
    goto done;
  const void *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nIn);
    vconv_job j = {&g, &pl, 1, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_DATA, .w = w, .dy = x, .out = lt_tensor_data(output),
                        .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) < 0) goto done;
    if (rc == 0) {  /* the backward-data pass has no bias */
      NN_FN(plane_add_bias, float)(lt_tensor_data(output), g.N, g.nOut, g.iT * g.iH * g.iW, b, bs);
      goto done;
    }
    rc = -1;
  }
  NN_CALL(input->type, vfull_forward, &g, &pl, x, w, b, bs, lt_tensor_data(output), cols);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_VolumetricFullConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *weight, lt_tensor *finput, int dT, int dW, int dH,
                                                    int padT, int padW, int padH, int adjT, int adjW, int adjH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricFullConvolution_updateGradInput";
  vgeom g;
  nn_unfold_plan pl;
  if (vfull_init(&g, fn, input, weight, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH) ||
      vcheck_shape(&g, fn, "gradOutput", gradOutput, input->type, g.nOut, g.iT, g.iH, g.iW) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w || vcols(finput, &g, g.nIn, 0, input->type, fn, &pl, &cols) ||
      vresize(gradInput, &g, g.nIn, g.oT, g.oH, g.oW))
    goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nIn);
    vconv_job j = {&g, &pl, 1, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_FORWARD, .x = go, .w = w, .out = lt_tensor_data(gradInput),
                        .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  NN_CALL(input->type, vfull_backward, &g, &pl, go, w, lt_tensor_data(gradInput), cols);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_VolumetricFullConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *finput,
                                                      int dT, int dW, int dH, int padT, int padW, int padH, int adjT,
                                                      int adjW, int adjH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "VolumetricFullConvolution_accGradParameters";
  vgeom g;
  nn_unfold_plan pl;
  if (vfull_init(&g, fn, input, gradWeight, dT, dW, dH, padT, padW, padH, adjT, adjW, adjH) ||
      vcheck_shape(&g, fn, "gradOutput", gradOutput, input->type, g.nOut, g.iT, g.iH, g.iW) ||
      nn_check_vec(gradBias, g.nOut, input->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  void *cols;
  const void *x = nn_contig(&cp, input), *go = x ? nn_contig(&cp, gradOutput) : NULL;
  if (!go || vcols(finput, &g, g.nIn, 1, input->type, fn, &pl, &cols)) goto done;
  void *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  if (lt_host_type(input->type) == LT_FLOAT) {
    lt_onednn_conv oc = vconv_onednn_geom(&g, g.nIn);
    vconv_job j = {&g, &pl, 1, cols};
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_WEIGHTS, .x = go, .dy = x, .gw = lt_tensor_data(gradWeight),
                        .scale = scale, .own = vconv_unfold_timed, .ctx = &j};
    if ((rc = lt_onednn_run(&oc, &p)) < 0) goto done;
    if (rc == 0) {  /* the bias of a full convolution sums its gradOutput: the convolution's x, not its dy */
      NN_FN(unfold_bias_grad, float)(go, g.N, g.nOut, g.iT * g.iH * g.iW, gb, gbs, scale);
      goto done;
    }
    rc = -1;
  }
  NN_CALL(input->type, vfull_acc, &g, &pl, x, go, lt_tensor_data(gradWeight), gb, gbs, cols, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

/* ---- TemporalConvolution */

/* The windows of one sample as an oS x kW*F matrix: in place, or unfolded into scratch. */
static const real *NN_(tconv_windows)(const tgeom *g, int kW, int dW, const real *x, real *scratch, int64_t *ld) {
  const int64_t row = kW * g->F;
  if (!scratch) {
    *ld = dW * g->F;
    return x;
  }
  for (int64_t t = 0; t < g->oS; t++) memcpy(scratch + t * row, x + t * dW * g->F, sizeof(real) * row);
  *ld = row;
  return scratch;
}

static void NN_(tconv_forward)(const tgeom *g, int64_t O, int kW, int dW, const real *x, const real *w,
                               const real *b, int64_t bs, real *out, real *scratch) {
  const int64_t K = kW * g->F;
  for (int64_t n = 0; n < g->N; n++) {
    real *y = out + n * g->oS * O;
    int64_t ld;
    const real *X = NN_(tconv_windows)(g, kW, dW, x + n * g->S * g->F, scratch, &ld);
    for (int64_t t = 0; t < g->oS; t++)
      for (int64_t o = 0; o < O; o++) y[t * O + o] = b ? b[o * bs] : 0;
    NN_GEMM(0, 1, g->oS, O, K, 1, X, ld, w, K, 1, y, O);
  }
}

static void NN_(tconv_backward)(const tgeom *g, int64_t O, int kW, int dW, const real *go, const real *w, real *gi) {
  const int64_t K = kW * g->F;
  memset(gi, 0, sizeof(real) * g->N * g->S * g->F);
  for (int64_t n = 0; n < g->N; n++)
    for (int k = 0; k < kW; k++)
      NN_GEMM(0, 0, g->oS, g->F, O, 1, go + n * g->oS * O, O, w + k * g->F, K, 1, gi + n * g->S * g->F + k * g->F,
              dW * g->F);
}

static void NN_(tconv_acc)(const tgeom *g, int64_t O, int kW, int dW, const real *x, const real *go, real *gw,
                           real *gb, int64_t gbs, real *scratch, double scale) {
  const int64_t K = kW * g->F;
  for (int64_t n = 0; n < g->N; n++) {
    int64_t ld;
    const real *X = NN_(tconv_windows)(g, kW, dW, x + n * g->S * g->F, scratch, &ld);
    NN_GEMM(1, 0, O, K, g->oS, (real)scale, go + n * g->oS * O, O, X, ld, 1, gw, K);
  }
  if (gb) {
    for (int64_t o = 0; o < O; o++) {
      accreal s = 0;
      for (int64_t n = 0; n < g->N; n++)
        for (int64_t t = 0; t < g->oS; t++) s += go[(n * g->oS + t) * O + o];
      gb[o * gbs] += (real)(scale * s);
    }
  }
}

/* ---- depthwise 1-D: line (n, f) of input, output */

static void NN_(dw_forward)(const dwgeom *g, const real *x, const real *w, const real *b, int64_t bs, real *out) {
  const int64_t N = g->t.N, F = g->t.F, S = g->t.S, oS = g->t.oS;
  const int kW = g->kW, dW = g->dW, padW = g->padW;
#pragma omp parallel for schedule(static) if (N * F * oS * kW >= LT_OMP_THRESHOLD)
  for (int64_t nf = 0; nf < N * F; nf++) {
    int64_t n = nf / F, f = nf % F;
    const real *xl = x + n * F * S + f * g->xsF;
    real *yl = out + n * F * oS + f * g->osF;
    const real *wl = w + f * g->wsF;
    for (int64_t t = 0; t < oS; t++) {
      accreal s = b ? b[f * bs] : 0;
      for (int k = 0; k < kW; k++) {
        int64_t i = t * dW - padW + k;
        if (i >= 0 && i < S) s += wl[k * g->wsK] * xl[i * g->xsS];
      }
      yl[t * g->osS] = (real)s;
    }
  }
}

static void NN_(dw_backward)(const dwgeom *g, const real *go, const real *w, real *gi) {
  const int64_t N = g->t.N, F = g->t.F, S = g->t.S, oS = g->t.oS;
  const int kW = g->kW, dW = g->dW, padW = g->padW;
#pragma omp parallel for schedule(static) if (N * F * oS * kW >= LT_OMP_THRESHOLD)
  for (int64_t nf = 0; nf < N * F; nf++) {
    int64_t n = nf / F, f = nf % F;
    real *gl = gi + n * F * S + f * g->xsF;
    const real *yl = go + n * F * oS + f * g->osF;
    const real *wl = w + f * g->wsF;
    for (int64_t i = 0; i < S; i++) gl[i * g->xsS] = 0;
    for (int64_t t = 0; t < oS; t++) {
      real v = yl[t * g->osS];
      for (int k = 0; k < kW; k++) {
        int64_t i = t * dW - padW + k;
        if (i >= 0 && i < S) gl[i * g->xsS] += wl[k * g->wsK] * v;
      }
    }
  }
}

static void NN_(dw_acc)(const dwgeom *g, const real *x, const real *go, real *gw, real *gb, int64_t gbs,
                        double scale) {
  const int64_t N = g->t.N, F = g->t.F, S = g->t.S, oS = g->t.oS;
  const int kW = g->kW, dW = g->dW, padW = g->padW;
#pragma omp parallel for schedule(static) if (N * F * oS * kW >= LT_OMP_THRESHOLD)
  for (int64_t f = 0; f < F; f++) {
    for (int k = 0; k < kW; k++) {
      accreal s = 0;
      for (int64_t n = 0; n < N; n++) {
        const real *xl = x + n * F * S + f * g->xsF;
        const real *yl = go + n * F * oS + f * g->osF;
        for (int64_t t = 0; t < oS; t++) {
          int64_t i = t * dW - padW + k;
          if (i >= 0 && i < S) s += yl[t * g->osS] * xl[i * g->xsS];
        }
      }
      gw[f * g->wsF + k * g->wsK] += (real)(scale * s);
    }
    if (gb) {
      accreal s = 0;
      for (int64_t n = 0; n < N; n++)
        for (int64_t t = 0; t < oS; t++) s += go[n * F * oS + f * g->osF + t * g->osS];
      gb[f * gbs] += (real)(scale * s);
    }
  }
}

/* ---- volumetric */

#include "nn_unfold.h"

static void NN_(vconv_forward)(const vgeom *g, const nn_unfold_plan *pl, const real *x, const real *w, const real *b,
                               int64_t bs, real *out, real *buf) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(unfold_gemm)(&u, pl, g->N, x, w, g->nOut, b, bs, out, buf);
}

static void NN_(vconv_backward)(const vgeom *g, const nn_unfold_plan *pl, const real *go, const real *w, real *gi,
                                real *buf) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(gemm_fold)(&u, pl, g->N, w, g->nOut, go, NULL, 0, gi, buf);
}

static void NN_(vconv_acc)(const vgeom *g, const nn_unfold_plan *pl, const real *x, const real *go, real *gw, real *gb,
                           int64_t gbs, real *buf, double scale) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(unfold_acc)(&u, pl, g->N, go, x, g->nOut, gw, buf, scale);
  NN_(unfold_bias_grad)(go, g->N, g->nOut, g->L, gb, gbs, scale);
}

/* Full convolution: the unfolded volume is the module's output, the columns span its input. */
static void NN_(vfull_forward)(const vgeom *g, const nn_unfold_plan *pl, const real *x, const real *w, const real *b,
                               int64_t bs, real *out, real *buf) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(gemm_fold)(&u, pl, g->N, w, g->nIn, x, b, bs, out, buf);
}

static void NN_(vfull_backward)(const vgeom *g, const nn_unfold_plan *pl, const real *go, const real *w, real *gi,
                                real *buf) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(unfold_gemm)(&u, pl, g->N, go, w, g->nIn, NULL, 0, gi, buf);
}

static void NN_(vfull_acc)(const vgeom *g, const nn_unfold_plan *pl, const real *x, const real *go, real *gw, real *gb,
                           int64_t gbs, real *buf, double scale) {
  nn_unfold u;
  vunfold(g, &u);
  NN_(unfold_acc)(&u, pl, g->N, x, go, g->nIn, gw, buf, scale);
  NN_(unfold_bias_grad)(go, g->N, g->nOut, g->iT * g->iH * g->iW, gb, gbs, scale);
}

#endif
