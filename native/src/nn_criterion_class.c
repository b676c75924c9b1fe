/* Criterions over class scores with LongTensor targets (1-based):
 *
 * MultiMarginCriterion (p = 1 or 2, margin m, optional per-class weights w):
 *   per frame with target t: sum_{d != t} w[t] max(0, m - x[t] + x[d])^p / dim,
 *   summed over frames (/ nframe with size_average).
 * MultiLabelMarginCriterion: a frame's target row lists its classes, ended by
 *   the first 0; per frame sum_{j in targets, d not in targets} max(0, 1 - x[j] + x[d]) / dim.
 *   isTarget (input's shape) records which classes are targets.
 * SpatialClassNLLCriterion: ClassNLL over every pixel of an N x C x H x W input
 *   with an N x H x W target; total_weight = sum of the pixels' class weights.
 * Frames (pixels for SpatialClassNLL) are independent: the loops run in parallel. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct cls_geom {
  int64_t nframe, dim;
  const int64_t *target;
} cls_geom;

static int cls_input(cls_geom *g, const char *fn, const lt_tensor *input, const lt_tensor *target) {
  char b1[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (lt_host_type(target->type) != LT_LONG)
    return lt_fail("%s: target must be a LongTensor, got a %sTensor", fn, lt_type_name(target->type));
  if (input->ndim != 1 && input->ndim != 2)
    return lt_fail("%s: vector or matrix input expected, got %s", fn, lt_shape_str(input, b1, sizeof b1));
  g->nframe = input->ndim == 2 ? input->size[0] : 1;
  g->dim = input->size[input->ndim - 1];
  return 0;
}

static int cls_weights(const char *fn, const lt_tensor *input, const lt_tensor *weights, int64_t n) {
  return nn_check_vec(weights, n, input->type, fn, "weights");
}

static int mm_begin(cls_geom *g, nn_copies *cp, const char *fn, const lt_tensor *input, const lt_tensor *target,
                    const lt_tensor *weights, int p) {
  char b1[160], b2[160];
  if (cls_input(g, fn, input, target) || cls_weights(fn, input, weights, g->dim)) return -1;
  if (p != 1 && p != 2) return lt_fail("%s: only p = 1 and p = 2 are supported, got %d", fn, p);
  if (lt_tensor_nelement(target) != g->nframe || (input->ndim == 2 && target->ndim != 1))
    return lt_fail("%s: inconsistent target size (input %s, target %s)", fn, lt_shape_str(input, b1, sizeof b1),
                   lt_shape_str(target, b2, sizeof b2));
  if (!(g->target = nn_contig(cp, target))) return -1;
  for (int64_t i = 0; i < g->nframe; i++)
    if (g->target[i] < 1 || g->target[i] > g->dim)
      return lt_fail("%s: target %lld out of range 1..%lld", fn, (long long)g->target[i], (long long)g->dim);
  return 0;
}

static int ml_begin(cls_geom *g, nn_copies *cp, const char *fn, const lt_tensor *input, const lt_tensor *target,
                    lt_tensor *isTarget) {
  char b1[160], b2[160];
  if (cls_input(g, fn, input, target) || nn_check_float(isTarget, input->type, fn, "isTarget")) return -1;
  if (target->ndim != input->ndim || lt_tensor_nelement(target) != lt_tensor_nelement(input) ||
      target->size[0] != input->size[0])
    return lt_fail("%s: inconsistent target size (input %s, target %s)", fn, lt_shape_str(input, b1, sizeof b1),
                   lt_shape_str(target, b2, sizeof b2));
  if (!(g->target = nn_contig(cp, target))) return -1;
  for (int64_t i = 0; i < g->nframe * g->dim; i++)
    if (g->target[i] < 0 || g->target[i] > g->dim)
      return lt_fail("%s: target %lld out of range 0..%lld (0 ends a frame's list)", fn, (long long)g->target[i],
                     (long long)g->dim);
  return 0;
}

typedef struct snll_geom {
  int64_t batch, classes, plane;
  const int64_t *target;
} snll_geom;

static int snll_begin(snll_geom *g, nn_copies *cp, const char *fn, const lt_tensor *input, const lt_tensor *target,
                      const lt_tensor *weights, const lt_tensor *total_weight) {
  char b1[160], b2[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (lt_host_type(target->type) != LT_LONG)
    return lt_fail("%s: target must be a LongTensor, got a %sTensor", fn, lt_type_name(target->type));
  if (input->ndim != 4)
    return lt_fail("%s: only batches of spatial inputs (4D tensors N x C x H x W) are supported, got %s", fn,
                   lt_shape_str(input, b1, sizeof b1));
  if (target->ndim != 3 || target->size[0] != input->size[0] || target->size[1] != input->size[2] ||
      target->size[2] != input->size[3])
    return lt_fail("%s: target should be N x H x W for input N x C x H x W (got input %s, target %s)", fn,
                   lt_shape_str(input, b1, sizeof b1), lt_shape_str(target, b2, sizeof b2));
  g->batch = input->size[0];
  g->classes = input->size[1];
  g->plane = input->size[2] * input->size[3];
  if (nn_check_vec(weights, g->classes, input->type, fn, "weights") ||
      nn_check_float(total_weight, input->type, fn, "total_weight"))
    return -1;
  if (!(g->target = nn_contig(cp, target))) return -1;
  for (int64_t i = 0; i < g->batch * g->plane; i++)
    if (g->target[i] < 1 || g->target[i] > g->classes)
      return lt_fail("%s: target %lld out of range 1..%lld", fn, (long long)g->target[i], (long long)g->classes);
  return 0;
}

#define NN_GENERIC_FILE "nn_criterion_class.c"
#include "nn_generic.h"

/* *value (when asked for): the one-element float or double output the CPU kernel just wrote */
static void stored_loss(const lt_tensor *output, double *value) {
  if (!value) return;
  const void *d = lt_tensor_data(output);
  *value = lt_number(lt_host_type(output->type) == LT_FLOAT ? *(const float *)d : *(const double *)d);
}

int lt_nn_MultiMarginCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                            int size_average, int p, lt_tensor *weights, double margin,
                                            double *value) {
  static const char fn[] = "MultiMarginCriterion_updateOutput";
  cls_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (lt_tensor_is_device(input)) {   /* the targets read on the host, the scores on the GPU (nn_criterion.cu) */
    if (mm_begin(&g, &cp, fn, input, target, weights, p)) goto done;
    rc = lt_cuda_nn_class_margin(fn, 0, input, g.target, g.nframe, g.dim, weights, NULL, output, NULL, size_average,
                                 p, margin, value);
    goto done;
  }
  NN_NEED(input, target);
  if (mm_begin(&g, &cp, fn, input, target, weights, p) || nn_check_float(output, input->type, fn, "output")) goto done;
  const void *x = nn_contig(&cp, input);
  const void *w = weights && x ? nn_contig(&cp, weights) : NULL;
  if (!x || (weights && !w) || nn_resize1(output, 1)) goto done;
  NN_CALL(input->type, mm_forward, &g, x, w, size_average, p, margin, lt_tensor_data(output));
  stored_loss(output, value);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_MultiMarginCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                               int size_average, int p, lt_tensor *weights, double margin) {
  static const char fn[] = "MultiMarginCriterion_updateGradInput";
  cls_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (lt_tensor_is_device(input)) {
    if (mm_begin(&g, &cp, fn, input, target, weights, p)) goto done;
    rc = lt_cuda_nn_class_margin(fn, 0, input, g.target, g.nframe, g.dim, weights, NULL, NULL, gradInput,
                                 size_average, p, margin, NULL);
    goto done;
  }
  NN_NEED(input, target);
  if (mm_begin(&g, &cp, fn, input, target, weights, p) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  const void *x = nn_contig(&cp, input);
  const void *w = weights && x ? nn_contig(&cp, weights) : NULL;
  if (!x || (weights && !w) || nn_resize_as(gradInput, input)) goto done;
  NN_CALL(input->type, mm_backward, &g, x, w, size_average, p, margin, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_MultiLabelMarginCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                                 lt_tensor *isTarget, int size_average, double *value) {
  static const char fn[] = "MultiLabelMarginCriterion_updateOutput";
  cls_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (lt_tensor_is_device(input)) {
    if (ml_begin(&g, &cp, fn, input, target, isTarget)) goto done;
    rc = lt_cuda_nn_class_margin(fn, 1, input, g.target, g.nframe, g.dim, NULL, isTarget, output, NULL, size_average,
                                 1, 1, value);
    goto done;
  }
  NN_NEED(input, target);
  if (ml_begin(&g, &cp, fn, input, target, isTarget) || nn_check_float(output, input->type, fn, "output")) goto done;
  const void *x = nn_contig(&cp, input);
  if (!x || nn_resize1(output, 1) || nn_resize_as(isTarget, input)) goto done;
  NN_CALL(input->type, ml_forward, &g, x, size_average, lt_tensor_data(isTarget), lt_tensor_data(output));
  stored_loss(output, value);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_MultiLabelMarginCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                                    lt_tensor *isTarget, int size_average) {
  static const char fn[] = "MultiLabelMarginCriterion_updateGradInput";
  cls_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (lt_tensor_is_device(input)) {
    if (ml_begin(&g, &cp, fn, input, target, isTarget)) goto done;
    rc = lt_cuda_nn_class_margin(fn, 1, input, g.target, g.nframe, g.dim, NULL, isTarget, NULL, gradInput,
                                 size_average, 1, 1, NULL);
    goto done;
  }
  NN_NEED(input, target);
  if (ml_begin(&g, &cp, fn, input, target, isTarget) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  if (lt_tensor_nelement(isTarget) != lt_tensor_nelement(input)) {
    lt_fail("%s: isTarget should have input's size (call updateOutput first)", fn);
    goto done;
  }
  const void *x = nn_contig(&cp, input);
  const void *it = x ? nn_contig(&cp, isTarget) : NULL;
  if (!x || !it || nn_resize_as(gradInput, input)) goto done;
  NN_CALL(input->type, ml_backward, &g, x, it, size_average, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialClassNLLCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                                int size_average, lt_tensor *weights, lt_tensor *total_weight) {
  NN_NEED(input, target);
  static const char fn[] = "SpatialClassNLLCriterion_updateOutput";
  snll_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (snll_begin(&g, &cp, fn, input, target, weights, total_weight) ||
      nn_check_float(output, input->type, fn, "output"))
    goto done;
  const void *x = nn_contig(&cp, input);
  const void *w = weights && x ? nn_contig(&cp, weights) : NULL;
  if (!x || (weights && !w) || nn_resize1(output, 1) || nn_resize1(total_weight, 1)) goto done;
  NN_CALL(input->type, snll_forward, &g, x, w, size_average, lt_tensor_data(output), lt_tensor_data(total_weight));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_SpatialClassNLLCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                                   int size_average, lt_tensor *weights, lt_tensor *total_weight) {
  NN_NEED(input, target);
  static const char fn[] = "SpatialClassNLLCriterion_updateGradInput";
  snll_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (snll_begin(&g, &cp, fn, input, target, weights, total_weight) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  if (lt_tensor_nelement(total_weight) != 1) {
    lt_fail("%s: total_weight should have one element (call updateOutput first)", fn);
    goto done;
  }
  const void *w = weights ? nn_contig(&cp, weights) : NULL;
  if ((weights && !w) || nn_resize_as(gradInput, input)) goto done;
  NN_CALL(input->type, snll_backward, &g, w, size_average, lt_tensor_data(total_weight), lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(mm_forward)(const cls_geom *g, const real *x, const real *w, int size_average, int p, double margin,
                            real *out) {
  const int64_t dim = g->dim, nframe = g->nframe;
  accreal sum = 0;
  int64_t lt_par_n = nframe * dim;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (lt_par_n >= LT_OMP_THRESHOLD)
  for (int64_t f = 0; f < nframe; f++) {
    const real *row = x + f * dim;
    int64_t t = g->target[f] - 1;
    accreal frame = 0;
    for (int64_t d = 0; d < dim; d++) {
      accreal z = margin - row[t] + row[d];
      if (d != t && z > 0) frame += p == 1 ? z : z * z;
    }
    sum += w ? frame * w[t] : frame;
  }
  sum /= dim;
  if (size_average && nframe > 0) sum /= nframe;
  *out = (real)sum;
}

static void NN_(mm_backward)(const cls_geom *g, const real *x, const real *w, int size_average, int p, double margin,
                             real *gi) {
  const int64_t dim = g->dim, nframe = g->nframe;
  accreal scale = size_average ? 1.0 / ((accreal)nframe * dim) : 1.0 / dim;
  int64_t lt_par_n = nframe * dim;
  LT_PARALLEL_FOR
  for (int64_t f = 0; f < nframe; f++) {
    const real *row = x + f * dim;
    real *grow = gi + f * dim;
    int64_t t = g->target[f] - 1;
    accreal gs = w ? scale * w[t] : scale, gt = 0;
    for (int64_t d = 0; d < dim; d++) {
      accreal z = margin - row[t] + row[d];
      accreal h = d != t && z > 0 ? (p == 1 ? gs : 2 * gs * z) : 0;
      grow[d] = (real)h;
      gt -= h;
    }
    grow[t] = (real)gt;
  }
}

static void NN_(ml_forward)(const cls_geom *g, const real *x, int size_average, real *isTarget, real *out) {
  const int64_t dim = g->dim, nframe = g->nframe;
  accreal sum = 0;
  int64_t lt_par_n = nframe * dim;
#pragma omp parallel for schedule(static) reduction(+ : sum) if (lt_par_n >= LT_OMP_THRESHOLD)
  for (int64_t f = 0; f < nframe; f++) {
    const real *row = x + f * dim;
    const int64_t *tg = g->target + f * dim;
    real *is = isTarget + f * dim;
    for (int64_t d = 0; d < dim; d++) is[d] = 0;
    for (int64_t j = 0; j < dim && tg[j] != 0; j++) is[tg[j] - 1] = 1;
    for (int64_t j = 0; j < dim && tg[j] != 0; j++) {
      accreal xt = row[tg[j] - 1];
      for (int64_t d = 0; d < dim; d++) {
        accreal z = 1 - xt + row[d];
        if (!is[d] && z > 0) sum += z;
      }
    }
  }
  sum /= dim;
  if (size_average && nframe > 0) sum /= nframe;
  *out = (real)sum;
}

static void NN_(ml_backward)(const cls_geom *g, const real *x, const real *isTarget, int size_average, real *gi) {
  const int64_t dim = g->dim, nframe = g->nframe;
  accreal scale = size_average ? 1.0 / ((accreal)nframe * dim) : 1.0 / dim;
  int64_t lt_par_n = nframe * dim;
  LT_PARALLEL_FOR
  for (int64_t f = 0; f < nframe; f++) {
    const real *row = x + f * dim, *is = isTarget + f * dim;
    const int64_t *tg = g->target + f * dim;
    real *grow = gi + f * dim;
    for (int64_t d = 0; d < dim; d++) grow[d] = 0;
    for (int64_t j = 0; j < dim && tg[j] != 0; j++) {
      int64_t t = tg[j] - 1;
      accreal xt = row[t];
      for (int64_t d = 0; d < dim; d++) {
        accreal z = 1 - xt + row[d];
        if (!is[d] && z > 0) {
          grow[t] -= (real)scale;
          grow[d] += (real)scale;
        }
      }
    }
  }
}

static void NN_(snll_forward)(const snll_geom *g, const real *x, const real *w, int size_average, real *out,
                              real *total) {
  const int64_t C = g->classes, S = g->plane;
  accreal loss = 0, tw = 0;
  int64_t lt_par_n = g->batch * S;
#pragma omp parallel for schedule(static) reduction(+ : loss, tw) if (lt_par_n >= LT_OMP_THRESHOLD)
  for (int64_t i = 0; i < g->batch * S; i++) {
    int64_t b = i / S, s = i % S, t = g->target[i] - 1;
    accreal wt = w ? w[t] : 1;
    loss -= wt * x[(b * C + t) * S + s];
    tw += wt;
  }
  if (size_average && tw != 0) loss /= tw;
  *out = (real)loss;
  *total = (real)tw;
}

static void NN_(snll_backward)(const snll_geom *g, const real *w, int size_average, const real *total, real *gi) {
  const int64_t C = g->classes, S = g->plane;
  memset(gi, 0, sizeof(real) * g->batch * C * S);
  if (size_average && *total <= 0) return;
  int64_t lt_par_n = g->batch * S;
  LT_PARALLEL_FOR
  for (int64_t i = 0; i < g->batch * S; i++) {
    int64_t b = i / S, s = i % S, t = g->target[i] - 1;
    real wt = w ? w[t] : 1;
    gi[(b * C + t) * S + s] = size_average ? -wt / *total : -wt;
  }
}

#endif
