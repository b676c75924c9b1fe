/* PReLU: a leaky ReLU with a learned slope per channel (or one shared). */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

/* Geometry of the input as (outer, planes, inner) blocks. */
typedef struct prelu_geom {
  int64_t outer, planes, inner;
} prelu_geom;

#define NN_GENERIC_FILE "nn_pointwise_prelu.c"
#include "nn_generic.h"

static int prelu_geom_of(const char *fn, const lt_tensor *input, const lt_tensor *weight, int64_t nplane,
                         prelu_geom *g) {
  char b[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_vec(weight, nplane > 0 ? nplane : 1, input->type, fn, "weight")) return -1;
  int64_t n = lt_tensor_nelement(input);
  if (nplane == 0) {
    *g = (prelu_geom){n, 1, 1}; /* one weight: every element its own block, for the parallel loops */
    return 0;
  }
  int nd = input->ndim, cdim = (nd == 1 || nd == 3) ? 0 : 1;
  if (nd < 1 || nd > 4 || input->size[cdim] != nplane)
    return lt_fail("%s: input %s does not have %lld channels in dim %d (expected a 1-D to 4-D input with the "
                   "channels in dim 1, or dim 2 when batched)",
                   fn, lt_shape_str(input, b, sizeof b), (long long)nplane, cdim + 1);
  int64_t inner = 1;
  for (int d = cdim + 1; d < nd; d++) inner *= input->size[d];
  *g = (prelu_geom){cdim ? input->size[0] : 1, nplane, inner};
  return 0;
}

static int same_count(const char *fn, const lt_tensor *input, const lt_tensor *other, const char *what) {
  char b1[160], b2[160];
  if (nn_check_float(other, input->type, fn, what)) return -1;
  if (lt_tensor_nelement(other) != lt_tensor_nelement(input))
    return lt_fail("%s: inconsistent tensor size: %s %s vs input %s", fn, what, lt_shape_str(other, b1, sizeof b1),
                   lt_shape_str(input, b2, sizeof b2));
  return 0;
}

int lt_nn_PReLU_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, int64_t nOutputPlane) {
  static const char fn[] = "PReLU_updateOutput";
  const int device = input && lt_tensor_is_device(input);   /* cunn's: native/cuda/nn_pointwise.cu */
  if (device) NN_GIVEN(input); else NN_NEED(input);
  prelu_geom g;
  if (prelu_geom_of(fn, input, weight, nOutputPlane, &g) || nn_check_float(output, input->type, fn, "output"))
    return -1;
  if (device) return lt_cuda_nn_prelu(fn, 0, input, NULL, output, weight, g.outer, g.planes, g.inner, 1);
  nn_copies cp = {0};
  const void *x = nn_contig(&cp, input), *w = nn_contig(&cp, weight);
  if (!x || !w || nn_resize_as(output, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, prelu_forward, lt_tensor_data(output), x, w, g);
  return nn_copies_free(&cp, 0);
}

int lt_nn_PReLU_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *weight,
                                int64_t nOutputPlane) {
  static const char fn[] = "PReLU_updateGradInput";
  const int device = input && lt_tensor_is_device(input);
  if (device) NN_GIVEN(input, gradOutput); else NN_NEED(input, gradOutput);
  prelu_geom g;
  if (prelu_geom_of(fn, input, weight, nOutputPlane, &g) || same_count(fn, input, gradOutput, "gradOutput") ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  if (device) return lt_cuda_nn_prelu(fn, 1, input, gradOutput, gradInput, weight, g.outer, g.planes, g.inner, 1);
  nn_copies cp = {0};
  const void *x = nn_contig(&cp, input), *dy = nn_contig(&cp, gradOutput), *w = nn_contig(&cp, weight);
  if (!x || !dy || !w || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, prelu_backward, lt_tensor_data(gradInput), dy, x, w, g);
  return nn_copies_free(&cp, 0);
}

int lt_nn_PReLU_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                  int64_t nOutputPlane, double scale) {
  static const char fn[] = "PReLU_accGradParameters";
  const int device = input && lt_tensor_is_device(input);
  if (device) NN_GIVEN(input, gradOutput); else NN_NEED(input, gradOutput);
  prelu_geom g;
  if (prelu_geom_of(fn, input, gradWeight, nOutputPlane, &g) || same_count(fn, input, gradOutput, "gradOutput"))
    return -1;
  if (device) return lt_cuda_nn_prelu(fn, 2, input, gradOutput, gradWeight, NULL, g.outer, g.planes, g.inner, scale);
  nn_copies cp = {0};
  const void *x = nn_contig(&cp, input), *dy = nn_contig(&cp, gradOutput);
  if (!x || !dy) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, prelu_accgrad, gradWeight, dy, x, g, scale);
  return nn_copies_free(&cp, 0);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(prelu_forward)(real *y, const real *x, const real *w, prelu_geom g) {
  int64_t blocks = g.outer * g.planes, lt_par_n = blocks * g.inner;
  LT_PARALLEL_FOR
  for (int64_t b = 0; b < blocks; b++) {
    const real a = w[b % g.planes];
    const real *xb = x + b * g.inner;
    real *yb = y + b * g.inner;
    for (int64_t i = 0; i < g.inner; i++) yb[i] = xb[i] > 0 ? xb[i] : a * xb[i];
  }
}

static void NN_(prelu_backward)(real *gi, const real *dy, const real *x, const real *w, prelu_geom g) {
  int64_t blocks = g.outer * g.planes, lt_par_n = blocks * g.inner;
  LT_PARALLEL_FOR
  for (int64_t b = 0; b < blocks; b++) {
    const real a = w[b % g.planes];
    int64_t o = b * g.inner;
    for (int64_t i = 0; i < g.inner; i++) gi[o + i] = x[o + i] > 0 ? dy[o + i] : a * dy[o + i];
  }
}

/* One channel per iteration: each writes only its own weight's gradient. */
static void NN_(prelu_accgrad)(lt_tensor *gradWeight, const real *dy, const real *x, prelu_geom g, double scale) {
  real *gw = lt_tensor_data(gradWeight);
  int64_t gs = nn_vec_stride(gradWeight), lt_par_n = g.outer * g.planes * g.inner;
  LT_PARALLEL_FOR
  for (int64_t c = 0; c < g.planes; c++) {
    accreal s = 0;
    for (int64_t n = 0; n < g.outer; n++) {
      int64_t o = (n * g.planes + c) * g.inner;
      for (int64_t i = 0; i < g.inner; i++)
        if (x[o + i] <= 0) s += (accreal)x[o + i] * dy[o + i];
    }
    gw[c * gs] += (real)(scale * s);
  }
}

#endif
