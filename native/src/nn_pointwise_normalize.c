/* Normalize: rows scaled to unit p-norm (see lt_nn_pointwise.h).
 * With s = sum |x|^p + eps and norm = s^(1/p), y_j = x_j / norm and
 *   dx_j = dy_j / norm - x_j |x_j|^(p-2) (x . dy) / (s * norm);
 * for p = inf, norm = |x_m| + eps (m the arg max) and only x_m gets the
 * cross term, (x_m / norm) (x . dy) / norm^2 (Torch7's form). */
#ifndef NN_GENERIC_PASS
#include <math.h>
#include "nn_internal.h"

#define NN_GENERIC_FILE "nn_pointwise_normalize.c"
#include "nn_generic.h"

static int norm_rows(const char *fn, const lt_tensor *input, double p, int64_t *n, int64_t *d) {
  char b[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (!(p > 0)) return lt_fail("%s: the norm p must be > 0, got %g", fn, p);
  if (input->ndim == 1) {
    *n = 1, *d = input->size[0];
  } else if (input->ndim == 2) {
    *n = input->size[0], *d = input->size[1];
  } else {
    return lt_fail("%s: expected a 1-D or 2-D input, got %s", fn, lt_shape_str(input, b, sizeof b));
  }
  return 0;
}

int lt_nn_Normalize_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *norm, double p, double eps) {
  NN_NEED(input);
  static const char fn[] = "Normalize_updateOutput";
  int64_t n = 0, d = 0;
  if (norm_rows(fn, input, p, &n, &d) || nn_check_float(output, input->type, fn, "output") ||
      nn_check_float(norm, input->type, fn, "norm"))
    return -1;
  nn_copies cp = {0};
  const void *x = nn_contig(&cp, input);
  if (!x || nn_resize_as(output, input) || nn_resize1(norm, n)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, normalize_forward, lt_tensor_data(output), lt_tensor_data(norm), x, n, d, p, eps);
  return nn_copies_free(&cp, 0);
}

int lt_nn_Normalize_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *norm,
                                    double p, double eps) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "Normalize_updateGradInput";
  char b1[160], b2[160];
  int64_t n = 0, d = 0;
  if (norm_rows(fn, input, p, &n, &d) || nn_check_given(gradOutput, input->type, fn, "gradOutput") ||
      nn_check_float(gradInput, input->type, fn, "gradInput") || nn_check_vec(norm, n, input->type, fn, "norm"))
    return -1;
  if (lt_tensor_nelement(gradOutput) != n * d)
    return lt_fail("%s: inconsistent tensor size: gradOutput %s vs input %s", fn,
                   lt_shape_str(gradOutput, b1, sizeof b1), lt_shape_str(input, b2, sizeof b2));
  nn_copies cp = {0};
  const void *x = nn_contig(&cp, input), *dy = nn_contig(&cp, gradOutput), *nr = nn_contig(&cp, norm);
  if (!x || !dy || !nr || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, normalize_backward, lt_tensor_data(gradInput), dy, x, nr, n, d, p, eps);
  return nn_copies_free(&cp, 0);
}

#else /* ---------------------------------------------- generic part (real) */

/* |v|^e with the common exponents exact and fast. */
static inline double NN_(abspow)(double v, double e) {
  double a = fabs(v);
  if (e == 1) return a;
  if (e == 2) return a * a;
  return pow(a, e);
}

static void NN_(normalize_forward)(real *y, real *norm, const real *x, int64_t n, int64_t d, double p, double eps) {
  int64_t lt_par_n = n * d;
  LT_PARALLEL_FOR
  for (int64_t r = 0; r < n; r++) {
    const real *xr = x + r * d;
    double s = 0;
    if (isinf(p)) {
      for (int64_t j = 0; j < d; j++) s = fmax(s, fabs((double)xr[j]));
      s += eps;
    } else {
      for (int64_t j = 0; j < d; j++) s += NN_(abspow)(xr[j], p);
      s = p == 2 ? sqrt(s + eps) : pow(s + eps, 1 / p);
    }
    norm[r] = (real)s;
    for (int64_t j = 0; j < d; j++) y[r * d + j] = (real)(xr[j] / s);
  }
}

static void NN_(normalize_backward)(real *gi, const real *dy, const real *x, const real *norm, int64_t n, int64_t d,
                                    double p, double eps) {
  int64_t lt_par_n = n * d;
  LT_PARALLEL_FOR
  for (int64_t r = 0; r < n; r++) {
    const real *xr = x + r * d, *gr = dy + r * d;
    real *out = gi + r * d;
    double nm = norm[r], dot = 0;
    for (int64_t j = 0; j < d; j++) dot += (double)xr[j] * gr[j];
    if (isinf(p)) {
      int64_t m = 0;
      for (int64_t j = 1; j < d; j++)
        if (fabs((double)xr[j]) > fabs((double)xr[m])) m = j;
      for (int64_t j = 0; j < d; j++) out[j] = (real)(gr[j] / nm);
      if (d) out[m] -= (real)(xr[m] / nm * dot / (nm * nm));
      continue;
    }
    double s = 0; /* sum |x|^p + eps, i.e. norm^p */
    for (int64_t j = 0; j < d; j++) s += NN_(abspow)(xr[j], p);
    s += eps;
    for (int64_t j = 0; j < d; j++) {
      double xj = xr[j], w;
      if (p == 2) w = xj;
      else if (p < 2 && fmod(p, 2) != 0) w = pow(fabs(xj) + eps, p - 2) * xj; /* eps keeps |x|^(p-2) finite at 0 */
      else w = NN_(abspow)(xj, p - 2) * xj;
      out[j] = (real)(gr[j] / nm - w * dot / (s * nm));
    }
  }
}

#endif
