/* ClassNLLCriterion (THNN's ClassNLLCriterion.c): for 1-based targets t_i,
 *   loss = -sum_i w[t_i] * input[i][t_i]   (w = 1 without weights)
 *   total_weight = sum_i w[t_i];  with size_average, loss /= total_weight
 *   (when it is non-zero); targets equal to ignore_index are skipped.
 *   gradInput = 0 except gradInput[i][t_i] = -w[t_i] (/ total_weight). */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct nll_geom {
  int64_t batch, classes;
  const int64_t *target;  /* contiguous copy or the tensor's own data */
  int64_t ignore;
} nll_geom;

static int nll_begin(nll_geom *g, nn_copies *cp, const char *fn, const lt_tensor *input, const lt_tensor *target,
                     const lt_tensor *weights, const lt_tensor *total_weight, int64_t ignore_index) {
  char b1[160], b2[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (lt_host_type(target->type) != LT_LONG) return lt_fail("%s: target must be a LongTensor, got a %sTensor", fn, lt_type_name(target->type));
  if (input->ndim != 1 && input->ndim != 2)
    return lt_fail("%s: input tensor should be 1D or 2D but got: %s", fn, lt_shape_str(input, b1, sizeof b1));
  g->batch = input->ndim == 2 ? input->size[0] : 1;
  g->classes = input->size[input->ndim - 1];
  if (lt_tensor_nelement(target) != g->batch || (input->ndim == 2 && target->ndim != 1))
    return lt_fail("%s: size mismatch (got input: %s, target: %s)", fn, lt_shape_str(input, b1, sizeof b1),
                   lt_shape_str(target, b2, sizeof b2));
  if (nn_check_vec(weights, g->classes, input->type, fn, "weights") ||
      nn_check_float(total_weight, input->type, fn, "total_weight"))
    return -1;
  g->target = nn_contig(cp, target);
  if (!g->target) return -1;
  g->ignore = ignore_index;
  for (int64_t i = 0; i < g->batch; i++) {
    int64_t t = g->target[i];
    if (t != ignore_index && (t < 1 || t > g->classes))
      return lt_fail("%s: target %lld is out of range: %lld classes (1-based targets 1..%lld)", fn, (long long)t,
                     (long long)g->classes, (long long)g->classes);
  }
  return 0;
}

#define NN_GENERIC_FILE "nn_criterion.c"
#include "nn_generic.h"

int lt_nn_ClassNLLCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output, int size_average,
                                         lt_tensor *weights, lt_tensor *total_weight, int64_t ignore_index) {
  NN_NEED(input, target);
  static const char fn[] = "ClassNLLCriterion_updateOutput";
  nll_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (nll_begin(&g, &cp, fn, input, target, weights, total_weight, ignore_index) ||
      nn_check_float(output, input->type, fn, "output"))
    goto done;
  const void *in = nn_contig(&cp, input);
  if (!in || nn_resize1(output, 1) || nn_resize1(total_weight, 1)) goto done;
  const void *w = weights ? lt_tensor_data(weights) : NULL;
  int64_t ws = weights ? nn_vec_stride(weights) : 0;
  NN_CALL(input->type, nll_forward, &g, in, w, ws, size_average, lt_tensor_data(output), lt_tensor_data(total_weight));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_ClassNLLCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                            int size_average, lt_tensor *weights, lt_tensor *total_weight,
                                            int64_t ignore_index) {
  NN_NEED(input, target);
  static const char fn[] = "ClassNLLCriterion_updateGradInput";
  nll_geom g;
  nn_copies cp = {0};
  int rc = -1;
  if (nll_begin(&g, &cp, fn, input, target, weights, total_weight, ignore_index) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    goto done;
  if (lt_tensor_nelement(total_weight) != 1) {
    lt_fail("%s: total_weight should have one element (call updateOutput first)", fn);
    goto done;
  }
  if (nn_resize_as(gradInput, input)) goto done;
  const void *w = weights ? lt_tensor_data(weights) : NULL;
  int64_t ws = weights ? nn_vec_stride(weights) : 0;
  NN_CALL(input->type, nll_backward, &g, w, ws, size_average, lt_tensor_data(gradInput), lt_tensor_data(total_weight));
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(nll_forward)(const nll_geom *g, const real *in, const real *w, int64_t ws, int size_average,
                             real *out, real *total) {
  accreal loss = 0, tw = 0;
  for (int64_t i = 0; i < g->batch; i++) {
    int64_t t = g->target[i];
    if (t == g->ignore) continue;
    accreal wt = w ? w[(t - 1) * ws] : 1;
    loss -= wt * in[i * g->classes + t - 1];
    tw += wt;
  }
  if (size_average && tw != 0) loss /= tw;
  *out = (real)loss;
  *total = (real)tw;
}

static void NN_(nll_backward)(const nll_geom *g, const real *w, int64_t ws, int size_average, real *gi,
                              const real *total) {
  memset(gi, 0, sizeof(real) * g->batch * g->classes);
  if (*total <= 0) return;
  for (int64_t i = 0; i < g->batch; i++) {
    int64_t t = g->target[i];
    if (t == g->ignore) continue;
    real wt = w ? w[(t - 1) * ws] : 1;
    gi[i * g->classes + t - 1] = size_average ? -wt / *total : -wt;
  }
}

#endif
