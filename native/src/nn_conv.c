/* SpatialConvolutionMM: convolution as im2col + GEMM, Torch7's way.
 *
 * Per sample, the input patches are unfolded into a (nIn*kH*kW) x (oH*oW)
 * column matrix (im2col), so that
 *   output_n    = weight (nOut x K) * cols_n (K x L)          (+ bias)
 *   gradCols_n  = weight^T * gradOutput_n, folded back (col2im) into gradInput_n
 *   gradWeight += scale * gradOutput_n * cols_n^T
 * A 1x1 stride-1 pad-0 convolution uses the input itself as cols_n.
 * Columns are per-thread scratch (finput holds one K x L matrix per thread),
 * and accGradParameters unfolds the input again, as THCUNN does, rather than
 * keeping the whole batch's columns from the forward pass as THNN did: it
 * costs one more im2col per sample (memory-bound, small next to the GEMMs),
 * and saves N*K*L elements per layer (about 1.8 GB for ResNet-50 at batch 32)
 * and any dependence on finput surviving between forward and backward.
 *
 * Threads: with at least as many samples as threads, samples run in parallel
 * with single-threaded GEMMs (no fork/join per GEMM, and im2col/col2im run in
 * parallel too); gradWeight is then summed in per-thread partial buffers and
 * reduced, so there are no races. Otherwise each sample uses one
 * multi-threaded GEMM. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

extern void lt_blas_set_threads(int n); /* blas.c */

typedef struct conv_geom {
  int batch;                     /* input was 4-D */
  int64_t N, nIn, iH, iW, nOut, oH, oW;
  int64_t K, L;                  /* column matrix: K = nIn*kH*kW rows, L = oH*oW columns */
  int kW, kH, dW, dH, padW, padH;
  int direct;                    /* 1x1, stride 1, no padding: cols_n is input_n */
} conv_geom;

static int conv_strategy = 0;

int lt_nn_conv_set_strategy(int strategy) {
  int old = conv_strategy;
  conv_strategy = strategy;
  return old;
}

/* Threads to spread the batch over, or 0 for "one multi-threaded GEMM per sample". */
static int conv_batch_threads(int64_t N) {
  int T = lt_get_num_threads();
  if (T <= 1 || N < 2 || conv_strategy == 2) return 0;
  if (conv_strategy == 0 && N < T) return 0;
  return (int)(N < T ? N : T);
}

static int conv_geom_init(conv_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW,
                          int kH, int dW, int dH, int padW, int padH) {
  char buf[160];
  if (lt_conv2d_check_sizes(fn, kW, kH, dW, dH, padW, padH)) return -1;
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(weight, input->type, fn, "weight")) return -1;
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  if (weight->ndim == 4) {
    if (weight->size[2] != kH || weight->size[3] != kW)
      return lt_fail("%s: weight of shape %s does not match the kernel size kH: %d kW: %d", fn,
                     lt_shape_str(weight, buf, sizeof buf), kH, kW);
    g->nIn = weight->size[1];
  } else if (weight->ndim == 2 && weight->size[1] % ((int64_t)kH * kW) == 0) {
    g->nIn = weight->size[1] / ((int64_t)kH * kW);
  } else {
    return lt_fail("%s: 2D or 4D weight tensor expected (nOutputPlane x nInputPlane*kH*kW or nOutputPlane x "
                   "nInputPlane x kH x kW) but got: %s", fn, lt_shape_str(weight, buf, sizeof buf));
  }
  g->batch = input->ndim == 4;
  int f = g->batch;
  g->N = g->batch ? input->size[0] : 1;
  if (input->size[f] != g->nIn)
    return lt_fail("%s: Need input of dimension %d and input.size[%d] == %lld but got input to be of shape: %s", fn,
                   input->ndim, f + 1, (long long)g->nIn, lt_shape_str(input, buf, sizeof buf));
  g->nOut = weight->size[0];
  g->iH = input->size[f + 1];
  g->iW = input->size[f + 2];
  g->oH = (g->iH + 2 * (int64_t)padH - kH) / dH + 1;
  g->oW = (g->iW + 2 * (int64_t)padW - kW) / dW + 1;
  if (g->iH + 2 * (int64_t)padH < kH || g->iW + 2 * (int64_t)padW < kW || g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)g->nIn, (long long)g->iH, (long long)g->iW,
                   (long long)g->nOut, (long long)((g->iH + 2 * (int64_t)padH - kH) / dH + 1),
                   (long long)((g->iW + 2 * (int64_t)padW - kW) / dW + 1));
  g->K = g->nIn * kH * kW;
  g->L = g->oH * g->oW;
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH;
  g->direct = kW == 1 && kH == 1 && dW == 1 && dH == 1 && padW == 0 && padH == 0;
  if (!lt_blas_loaded()) return lt_fail("%s: BLAS is not loaded (lt_blas_load was not called)", fn);
  if (g->K > INT32_MAX || g->L > INT32_MAX || g->nOut > INT32_MAX)
    return lt_fail("%s: matrix dimensions exceed the 32-bit BLAS interface", fn);
  return 0;
}

static int conv_check_gradOutput(const conv_geom *g, const char *fn, const lt_tensor *gradOutput, int type) {
  char buf[160];
  if (nn_check_given(gradOutput, type, fn, "gradOutput")) return -1;
  int ok = gradOutput->ndim == (g->batch ? 4 : 3);
  int f = g->batch;
  if (ok && g->batch) ok = gradOutput->size[0] == g->N;
  if (ok) ok = gradOutput->size[f] == g->nOut && gradOutput->size[f + 1] == g->oH && gradOutput->size[f + 2] == g->oW;
  if (!ok)
    return lt_fail("%s: gradOutput should be of shape %s%lld x %lld x %lld] but got %s", fn,
                   g->batch ? "[" : "", (long long)g->nOut, (long long)g->oH, (long long)g->oW,
                   lt_shape_str(gradOutput, buf, sizeof buf));
  return 0;
}

/* The output-like shape (N, C, H, W) or (C, H, W). */
static int conv_resize4(lt_tensor *t, const conv_geom *g, int64_t C, int64_t H, int64_t W) {
  int64_t sz[4] = {g->N, C, H, W};
  return g->batch ? lt_tensor_resize(t, 4, sz) : lt_tensor_resize(t, 3, sz + 1);
}

/* Valid output columns [lo, hi) whose input column ow*d - pad + k lies in [0, n). */
static inline void conv_valid_range(int64_t n, int64_t on, int k, int d, int pad, int64_t *lo, int64_t *hi) {
  int64_t a = pad - k;  /* need ow*d >= a */
  *lo = a <= 0 ? 0 : (a + d - 1) / d;
  int64_t b = n - 1 + pad - k;  /* need ow*d <= b */
  *hi = b < 0 ? 0 : b / d + 1;
  if (*hi > on) *hi = on;
  if (*lo > on) *lo = on;
  if (*hi < *lo) *hi = *lo;
}

/* bt (or 1) per-thread K x L column buffers in buf; none for direct convolutions. */
static int conv_col_buffers(lt_tensor *buf, const conv_geom *g, int bt, void **cols) {
  *cols = NULL;
  if (g->direct) return 0;
  if (nn_resize1(buf, (bt ? bt : 1) * g->K * g->L)) return -1;
  *cols = lt_tensor_data(buf);
  return 0;
}

/* The geometry as onednn.c takes it; float32 passes go there first, and stay here when it returns 1
 * (oneDNN not loaded, disabled, the shape not implemented, or im2col timed faster for it). */
static lt_onednn_conv conv_onednn_geom(const conv_geom *g) {
  lt_onednn_conv c = {g->N, g->nIn, g->iH, g->iW, g->nOut, g->oH, g->oW, g->kH, g->kW, g->dH, g->dW, g->padH, g->padW};
  return c;
}

#include "nn_unfold.h"   /* its generic part: unfold_bias_grad */

#define NN_GENERIC_FILE "nn_conv.c"
#include "nn_generic.h"

/* One float32 pass the im2col way, on scratch of its own (columns, gradWeight partials, and for backward-weights
 * a gradWeight of its own, so that nothing accumulates twice): onednn.c times it beside oneDNN on a shape's
 * first call and keeps the faster. */
static int conv_im2col_timed(lt_onednn_pass *p) {
  const conv_geom *g = p->ctx;
  int bt = conv_batch_threads(g->N);
  int64_t ncols = g->direct ? 0 : (bt ? bt : 1) * g->K * g->L, nw = g->nOut * g->K;
  int64_t npart = p->pass == LT_ONEDNN_BACKWARD_WEIGHTS && bt > 1 ? (bt - 1) * nw : 0;
  if (!lt_onednn_own_scratch(p, sizeof(float) * (size_t)(ncols + npart + nw))) return -1;
  float *cols = ncols ? p->scratch : NULL, *part = (float *)p->scratch + ncols, *gw = part + npart;
  if (p->pass == LT_ONEDNN_FORWARD) {
    NN_FN(conv_forward, float)(g, p->x, p->w, p->bias, p->bs, p->out, cols, bt);
  } else if (p->pass == LT_ONEDNN_BACKWARD_DATA) {
    NN_FN(conv_backward_input, float)(g, p->dy, p->w, p->out, cols, bt);
  } else {
    memset(gw, 0, sizeof(float) * nw);
    NN_FN(conv_acc_grad, float)(g, p->dy, p->x, cols, gw, NULL, 0, npart ? part : NULL, bt, p->scale);
    p->own_gw = gw;
  }
  return 0;
}

int lt_nn_SpatialConvolutionMM_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                            lt_tensor *finput, lt_tensor *fgradInput, int kW, int kH, int dW, int dH,
                                            int padW, int padH) {
  NN_NEED(input);
  static const char fn[] = "SpatialConvolutionMM_updateOutput";
  conv_geom g;
  (void)fgradInput;
  if (conv_geom_init(&g, fn, input, weight, kW, kH, dW, dH, padW, padH)) return -1;
  if (nn_check_vec(bias, g.nOut, input->type, fn, "bias") || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(finput, input->type, fn, "finput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *w = in ? nn_contig(&cp, weight) : NULL;
  if (!w) goto done;
  if (conv_resize4(output, &g, g.nOut, g.oH, g.oW)) goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = conv_onednn_geom(&g);
    lt_onednn_pass p = {fn, LT_ONEDNN_FORWARD, .x = in, .w = w, .bias = bias ? lt_tensor_data(bias) : NULL,
                        .bs = bias ? nn_vec_stride(bias) : 0, .out = lt_tensor_data(output), .own = conv_im2col_timed,
                        .ctx = &g};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  int bt = conv_batch_threads(g.N);
  void *cols;
  if (conv_col_buffers(finput, &g, bt, &cols)) goto done;
  const void *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  NN_CALL(input->type, conv_forward, &g, in, w, b, bs, lt_tensor_data(output), cols, bt);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialConvolutionMM_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                               lt_tensor *weight, lt_tensor *finput, lt_tensor *fgradInput, int kW,
                                               int kH, int dW, int dH, int padW, int padH) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialConvolutionMM_updateGradInput";
  conv_geom g;
  (void)finput;
  if (conv_geom_init(&g, fn, input, weight, kW, kH, dW, dH, padW, padH)) return -1;
  if (conv_check_gradOutput(&g, fn, gradOutput, input->type) ||
      nn_check_float(gradInput, input->type, fn, "gradInput") ||
      nn_check_float(fgradInput, input->type, fn, "fgradInput"))
    return -1;
  nn_copies cp = {0};
  int rc = -1;
  const void *go = nn_contig(&cp, gradOutput), *w = go ? nn_contig(&cp, weight) : NULL;
  if (!w) goto done;
  if (conv_resize4(gradInput, &g, g.nIn, g.iH, g.iW)) goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = conv_onednn_geom(&g);
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_DATA, .w = w, .dy = go, .out = lt_tensor_data(gradInput),
                        .own = conv_im2col_timed, .ctx = &g};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  int bt = conv_batch_threads(g.N);
  void *cols;
  if (conv_col_buffers(fgradInput, &g, bt, &cols)) goto done;
  NN_CALL(input->type, conv_backward_input, &g, go, w, lt_tensor_data(gradInput), cols, bt);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialConvolutionMM_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                 lt_tensor *gradBias, lt_tensor *finput, lt_tensor *fgradInput,
                                                 int kW, int kH, int dW, int dH, int padW, int padH, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialConvolutionMM_accGradParameters";
  conv_geom g;
  if (conv_geom_init(&g, fn, input, gradWeight, kW, kH, dW, dH, padW, padH)) return -1;
  if (conv_check_gradOutput(&g, fn, gradOutput, input->type) ||
      nn_check_vec(gradBias, g.nOut, input->type, fn, "gradBias") ||
      nn_check_float(fgradInput, input->type, fn, "fgradInput"))
    return -1;
  if (!lt_tensor_is_contiguous(gradWeight)) return lt_fail("%s: gradWeight needs to be contiguous", fn);
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input);
  if (!in || nn_check_float(finput, input->type, fn, "finput")) goto done;
  const void *go = nn_contig(&cp, gradOutput);
  if (!go) goto done;
  if (lt_host_type(input->type) == LT_FLOAT) {  /* CudaTensor too: float32 elements */
    lt_onednn_conv oc = conv_onednn_geom(&g);
    lt_onednn_pass p = {fn, LT_ONEDNN_BACKWARD_WEIGHTS, .x = in, .dy = go, .gw = lt_tensor_data(gradWeight),
                        .gb = gradBias ? lt_tensor_data(gradBias) : NULL, .gbs = gradBias ? nn_vec_stride(gradBias) : 0,
                        .scale = scale, .own = conv_im2col_timed, .ctx = &g};
    if ((rc = lt_onednn_run(&oc, &p)) <= 0) goto done;
    rc = -1;
  }
  int bt = conv_batch_threads(g.N);
  void *cols, *part = NULL;
  if (conv_col_buffers(finput, &g, bt, &cols)) goto done;
  if (bt > 1) {
    if (nn_resize1(fgradInput, (bt - 1) * g.nOut * g.K)) goto done;
    part = lt_tensor_data(fgradInput);
  }
  void *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  NN_CALL(input->type, conv_acc_grad, &g, go, in, cols, lt_tensor_data(gradWeight), gb, gbs, part, bt, scale);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

#include "nn_unfold.h"

/* cols[(c*kH + kh)*kW + kw][oh*oW + ow] = input[c][oh*dH - padH + kh][ow*dW - padW + kw], 0 outside. */
static void NN_(im2col)(const conv_geom *g, const real *in, real *cols, int par) {
  const int64_t C = g->nIn, iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW;
  const int kH = g->kH, kW = g->kW, dH = g->dH, dW = g->dW, padH = g->padH, padW = g->padW;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t c = 0; c < C; c++) {
    const real *plane = in + c * iH * iW;
    for (int kh = 0; kh < kH; kh++) {
      for (int kw = 0; kw < kW; kw++) {
        real *row = cols + ((c * kH + kh) * kW + kw) * oH * oW;
        int64_t lo, hi;
        conv_valid_range(iW, oW, kw, dW, padW, &lo, &hi);
        for (int64_t oh = 0; oh < oH; oh++) {
          real *r = row + oh * oW;
          int64_t ih = oh * dH - padH + kh;
          if (ih < 0 || ih >= iH) {
            memset(r, 0, sizeof(real) * oW);
            continue;
          }
          for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0;
          const real *src = plane + ih * iW - padW + kw;
          if (dW == 1) {
            for (int64_t ow = lo; ow < hi; ow++) r[ow] = src[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ow++) r[ow] = src[ow * dW];
          }
          for (int64_t ow = hi; ow < oW; ow++) r[ow] = 0;
        }
      }
    }
  }
}

/* The adjoint of im2col: gradInput = 0, then every column entry is added to
 * the input pixel it came from. Channels are independent, so they may run in
 * parallel. */
static void NN_(col2im)(const conv_geom *g, const real *cols, real *in, int par) {
  const int64_t C = g->nIn, iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW;
  const int kH = g->kH, kW = g->kW, dH = g->dH, dW = g->dW, padH = g->padH, padW = g->padW;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t c = 0; c < C; c++) {
    real *plane = in + c * iH * iW;
    memset(plane, 0, sizeof(real) * iH * iW);
    for (int kh = 0; kh < kH; kh++) {
      for (int kw = 0; kw < kW; kw++) {
        const real *row = cols + ((c * kH + kh) * kW + kw) * oH * oW;
        int64_t lo, hi;
        conv_valid_range(iW, oW, kw, dW, padW, &lo, &hi);
        for (int64_t oh = 0; oh < oH; oh++) {
          int64_t ih = oh * dH - padH + kh;
          if (ih < 0 || ih >= iH) continue;
          const real *r = row + oh * oW;
          real *dst = plane + ih * iW - padW + kw;
          if (dW == 1) {
            for (int64_t ow = lo; ow < hi; ow++) dst[ow] += r[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ow++) dst[ow * dW] += r[ow];
          }
        }
      }
    }
  }
}

/* The column matrix of one sample: the input itself, or its im2col in cols. */
static const real *NN_(conv_cols)(const conv_geom *g, const real *in, real *cols, int par) {
  if (g->direct) return in;
  NN_(im2col)(g, in, cols, par);
  return cols;
}

static void NN_(conv_forward_one)(const conv_geom *g, const real *in, const real *w, const real *b, int64_t bs,
                                  real *out, real *cols, int par) {
  const real *B = NN_(conv_cols)(g, in, cols, par);
  real beta = 0;
  if (b) {
    for (int64_t o = 0; o < g->nOut; o++) {
      real v = b[o * bs], *r = out + o * g->L;
      for (int64_t l = 0; l < g->L; l++) r[l] = v;
    }
    beta = 1;
  }
  NN_GEMM(0, 0, g->nOut, g->L, g->K, 1, w, g->K, B, g->L, beta, out, g->L);
}

/* cols: bt (or 1) per-thread K x L buffers, NULL for direct convolutions. */
static void NN_(conv_forward)(const conv_geom *g, const real *in, const real *w, const real *b, int64_t bs, real *out,
                              real *cols, int bt) {
  const int64_t inN = g->nIn * g->iH * g->iW, outN = g->nOut * g->L, colN = g->K * g->L;
  if (bt) {
    lt_blas_set_threads(1);
#pragma omp parallel num_threads(bt)
    {
      real *mycols = cols ? cols + omp_get_thread_num() * colN : NULL;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g->N; n++) NN_(conv_forward_one)(g, in + n * inN, w, b, bs, out + n * outN, mycols, 0);
    }
    lt_blas_set_threads(lt_get_num_threads());
  } else {
    for (int64_t n = 0; n < g->N; n++) NN_(conv_forward_one)(g, in + n * inN, w, b, bs, out + n * outN, cols, 1);
  }
}

/* gradInput_n = col2im(weight^T * gradOutput_n); cols is this thread's K x L buffer. */
static void NN_(conv_backward_input_one)(const conv_geom *g, const real *go, const real *w, real *gi, real *cols,
                                         int par) {
  if (g->direct) {
    NN_GEMM(1, 0, g->K, g->L, g->nOut, 1, w, g->K, go, g->L, 0, gi, g->L);
    return;
  }
  NN_GEMM(1, 0, g->K, g->L, g->nOut, 1, w, g->K, go, g->L, 0, cols, g->L);
  NN_(col2im)(g, cols, gi, par);
}

static void NN_(conv_backward_input)(const conv_geom *g, const real *go, const real *w, real *gi, real *cols, int bt) {
  const int64_t inN = g->nIn * g->iH * g->iW, outN = g->nOut * g->L, colN = g->K * g->L;
  if (bt) {
    lt_blas_set_threads(1);
#pragma omp parallel num_threads(bt)
    {
      real *mycols = cols ? cols + omp_get_thread_num() * colN : NULL;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g->N; n++) NN_(conv_backward_input_one)(g, go + n * outN, w, gi + n * inN, mycols, 0);
    }
    lt_blas_set_threads(lt_get_num_threads());
  } else {
    for (int64_t n = 0; n < g->N; n++) NN_(conv_backward_input_one)(g, go + n * outN, w, gi + n * inN, cols, 1);
  }
}

/* gradWeight += scale * sum_n gradOutput_n * cols_n^T; gradBias += scale * sum of gradOutput per plane.
 * With bt > 1 threads, thread t > 0 sums its samples into part[t-1] and the
 * partials are added afterwards. */
static void NN_(conv_acc_grad)(const conv_geom *g, const real *go, const real *in, real *cols, real *gw, real *gb,
                               int64_t gbs, real *part, int bt, double scale) {
  const int64_t inN = g->nIn * g->iH * g->iW, outN = g->nOut * g->L, colN = g->K * g->L, wN = g->nOut * g->K;
  if (bt > 1) {
    lt_blas_set_threads(1);
#pragma omp parallel num_threads(bt)
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
      int64_t n0 = g->N * t / nt, n1 = g->N * (t + 1) / nt;
      real *dst = t == 0 ? gw : part + (t - 1) * wN;
      real beta = t == 0 ? 1 : 0;
      real *mycols = cols ? cols + t * colN : NULL;
      if (n0 == n1 && t > 0) memset(dst, 0, sizeof(real) * wN);
      for (int64_t n = n0; n < n1; n++, beta = 1)
        NN_GEMM(0, 1, g->nOut, g->K, g->L, scale, go + n * outN, g->L, NN_(conv_cols)(g, in + n * inN, mycols, 0),
                g->L, beta, dst, g->K);
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t i = 0; i < wN; i++) {
        real s = 0;
        for (int u = 1; u < nt; u++) s += part[(u - 1) * wN + i];
        gw[i] += s;
      }
    }
    lt_blas_set_threads(lt_get_num_threads());
  } else {
    for (int64_t n = 0; n < g->N; n++)
      NN_GEMM(0, 1, g->nOut, g->K, g->L, scale, go + n * outN, g->L, NN_(conv_cols)(g, in + n * inN, cols, 1), g->L,
              1, gw, g->K);
  }
  NN_(unfold_bias_grad)(go, g->N, g->nOut, g->L, gb, gbs, scale);
}

#endif
