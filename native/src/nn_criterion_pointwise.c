/* The element-wise criterions (Torch7's Abs, SmoothL1, DistKLDiv, Margin,
 * SoftMargin, BCE, HingeEmbedding, and L1Cost, whose target is not read):
 *   loss = sum_i f(x_i, y_i [, w_i])  (/ n with size_average),
 *   gradInput_i = f'(x_i, y_i [, w_i])  (/ n).
 * One kernel, the element function chosen by `kind` (LT_CRIT_*, see
 * lt_nn_criterion.h); `param` is the margin of Margin- and
 * HingeEmbeddingCriterion. LT_CRIT_MSE is (x - y)^2, for cunn's MSECriterion on
 * the GPU (nn's composes tensor methods). The sum is a parallel reduction over the elements. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

static const char *crit_name(int kind) {
  switch (kind) {
    case LT_CRIT_ABS: return "AbsCriterion";
    case LT_CRIT_SMOOTHL1: return "SmoothL1Criterion";
    case LT_CRIT_DISTKLDIV: return "DistKLDivCriterion";
    case LT_CRIT_MARGIN: return "MarginCriterion";
    case LT_CRIT_SOFTMARGIN: return "SoftMarginCriterion";
    case LT_CRIT_BCE: return "BCECriterion";
    case LT_CRIT_L1COST: return "L1Cost";
    case LT_CRIT_HINGE: return "HingeEmbeddingCriterion";
    case LT_CRIT_MSE: return "MSECriterion";
    default: return NULL;
  }
}

static int crit_begin(const char *fn, int kind, const lt_tensor *input, const lt_tensor *target,
                      const lt_tensor *weights) {
  if (!crit_name(kind)) return lt_fail("%s: unknown criterion kind %d", fn, kind);
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_given(target, input->type, fn, "target") || nn_check_float(weights, input->type, fn, "weights"))
    return -1;
  int64_t n = lt_tensor_nelement(input);
  if (lt_tensor_nelement(target) != n)
    return lt_fail("%s: input and target size mismatch (%lld vs %lld elements)", fn, (long long)n,
                   (long long)lt_tensor_nelement(target));
  if (weights && lt_tensor_nelement(weights) != n)
    return lt_fail("%s: input and weights size mismatch (%lld vs %lld elements)", fn, (long long)n,
                   (long long)lt_tensor_nelement(weights));
  return 0;
}

#define NN_GENERIC_FILE "nn_criterion_pointwise.c"
#include "nn_generic.h"

int lt_nn_PointwiseCriterion_updateOutput(int kind, lt_tensor *input, lt_tensor *target, lt_tensor *output,
                                          int size_average, lt_tensor *weights, double param, double *value) {
  char fn[96];
  snprintf(fn, sizeof fn, "%s_updateOutput", crit_name(kind) ? crit_name(kind) : "PointwiseCriterion");
  if (input && lt_tensor_is_device(input)) {   /* cunn's: native/cuda/nn_criterion.cu */
    if (!target) return lt_fail("%s: target is missing", fn);
    if (crit_begin(fn, kind, input, target, weights) || nn_check_float(output, input->type, fn, "output")) return -1;
    return lt_cuda_nn_criterion_updateOutput(fn, kind, input, target, output, size_average, weights, param, value);
  }
  NN_NEED(input, target);
  nn_copies cp = {0};
  int rc = -1;
  if (crit_begin(fn, kind, input, target, weights) || nn_check_float(output, input->type, fn, "output")) goto done;
  const void *x = nn_contig(&cp, input), *y = x ? nn_contig(&cp, target) : NULL;
  const void *w = weights && y ? nn_contig(&cp, weights) : NULL;
  if (!x || !y || (weights && !w) || nn_resize1(output, 1)) goto done;
  int64_t n = lt_tensor_nelement(input);
  double loss = 0;
  if (lt_host_type(input->type) == LT_FLOAT) {
    if (crit_forward_float(kind, n, x, y, w, param, &loss)) goto done;
    float stored = (float)(size_average && n > 0 ? loss / n : loss);
    *(float *)lt_tensor_data(output) = stored;
    if (value) *value = lt_number(stored);
  } else {
    if (crit_forward_double(kind, n, x, y, w, param, &loss)) goto done;
    double stored = size_average && n > 0 ? loss / n : loss;
    *(double *)lt_tensor_data(output) = stored;
    if (value) *value = lt_number(stored);
  }
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_PointwiseCriterion_updateGradInput(int kind, lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                             int size_average, lt_tensor *weights, double param) {
  char fn[96];
  snprintf(fn, sizeof fn, "%s_updateGradInput", crit_name(kind) ? crit_name(kind) : "PointwiseCriterion");
  if (input && lt_tensor_is_device(input)) {
    if (!target) return lt_fail("%s: target is missing", fn);
    if (crit_begin(fn, kind, input, target, weights) || nn_check_float(gradInput, input->type, fn, "gradInput"))
      return -1;
    return lt_cuda_nn_criterion_updateGradInput(fn, kind, input, target, gradInput, size_average, weights, param);
  }
  NN_NEED(input, target);
  nn_copies cp = {0};
  int rc = -1;
  if (crit_begin(fn, kind, input, target, weights) || nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  const void *x = nn_contig(&cp, input), *y = x ? nn_contig(&cp, target) : NULL;
  const void *w = weights && y ? nn_contig(&cp, weights) : NULL;
  if (!x || !y || (weights && !w) || nn_resize_as(gradInput, input)) goto done;
  int64_t n = lt_tensor_nelement(input);
  double norm = size_average && n > 0 ? 1.0 / n : 1.0;
  NN_CALL(input->type, crit_backward, kind, n, x, y, w, param, norm, lt_tensor_data(gradInput));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

#define CRIT_EPS 1e-12

static int NN_(crit_forward)(int kind, int64_t n, const real *x, const real *y, const real *w, double param,
                             double *out) {
  accreal sum = 0;
  int64_t bad = -1;
  int64_t lt_par_n = n;
#pragma omp parallel for schedule(static) reduction(+ : sum) reduction(max : bad) if (lt_par_n >= LT_OMP_THRESHOLD)
  for (int64_t i = 0; i < n; i++) {
    accreal a = x[i], b = y[i], v = 0;
    switch (kind) {
      case LT_CRIT_ABS: v = fabs(a - b); break;
      case LT_CRIT_SMOOTHL1: {
        accreal z = fabs(a - b);
        v = z < 1 ? 0.5 * z * z : z - 0.5;
        break;
      }
      case LT_CRIT_DISTKLDIV: v = b > 0 ? b * (log(b) - a) : 0; break;
      case LT_CRIT_MARGIN: {
        accreal z = param - a * b;
        v = z > 0 ? z : 0;
        break;
      }
      case LT_CRIT_SOFTMARGIN: {
        /* log(1 + exp(-a b)), written so that large |a b| neither overflows nor loses the tail */
        accreal z = -a * b;
        v = z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
        break;
      }
      case LT_CRIT_BCE:
        if (!(a >= 0 && a <= 1)) {
          if (i > bad) bad = i;
          break;
        }
        v = -(log(a + CRIT_EPS) * b + log(1 - a + CRIT_EPS) * (1 - b));
        if (w) v *= w[i];
        break;
      case LT_CRIT_L1COST: v = fabs(a); break;
      case LT_CRIT_HINGE: /* y = 1: x; y = -1: max(0, margin - x); both terms for any other y */
        v = (b != -1 ? a : 0) + (b != 1 && param - a > 0 ? param - a : 0);
        break;
      case LT_CRIT_MSE: v = (a - b) * (a - b); break;
    }
    sum += v;
  }
  if (bad >= 0) return lt_fail("BCECriterion: input value should be between 0 and 1, but got %g", (double)x[bad]);
  *out = (double)sum;
  return 0;
}

static void NN_(crit_backward)(int kind, int64_t n, const real *x, const real *y, const real *w, double param,
                               double norm, real *gi) {
  int64_t lt_par_n = n;
  LT_PARALLEL_FOR
  for (int64_t i = 0; i < n; i++) {
    accreal a = x[i], b = y[i], g = 0;
    switch (kind) {
      case LT_CRIT_ABS: g = a - b >= 0 ? 1 : -1; break;
      case LT_CRIT_SMOOTHL1: {
        accreal z = a - b;
        g = z < -1 ? -1 : (z > 1 ? 1 : z);
        break;
      }
      case LT_CRIT_DISTKLDIV: g = b > 0 ? -b : 0; break;
      case LT_CRIT_MARGIN: g = a * b < param ? -b : 0; break;
      case LT_CRIT_SOFTMARGIN: {
        /* d/da log(1 + exp(-a b)) = -b / (1 + exp(a b)) */
        accreal z = a * b;
        g = z > 0 ? -b * exp(-z) / (1 + exp(-z)) : -b / (1 + exp(z));
        break;
      }
      case LT_CRIT_BCE:
        g = -(b - a) / ((1 - a + CRIT_EPS) * (a + CRIT_EPS));
        if (w) g *= w[i];
        break;
      case LT_CRIT_L1COST: g = a > 0 ? 1 : (a < 0 ? -1 : 0); break;
      case LT_CRIT_HINGE: g = b == -1 && a > param ? 0 : b; break;
      case LT_CRIT_MSE: g = 2 * (a - b); break;
    }
    gi[i] = (real)(g * norm);
  }
}

#undef CRIT_EPS

#endif
