/* SoftMax and LogSoftMax over the feature dimension (THNN's layout rules):
 * 1-D (dim), 2-D (N, dim), 3-D (dim, H, W), 4-D (N, dim, H, W): `frames`
 * independent groups of `dim` values spaced `stride` apart. The maximum is
 * subtracted before exponentiating; sums are accumulated in double.
 *   softmax:    y = exp(x - max) / sum;      dx = y * (dy - sum(dy * y))
 *   logsoftmax: y = x - max - log(sum);      dx = dy - exp(y) * sum(dy)   */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct sm_geom {
  int64_t frames, dim, stride;
} sm_geom;

static int sm_geom_init(sm_geom *g, const char *fn, const lt_tensor *input) {
  char buf[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  const int64_t *s = input->size;
  switch (input->ndim) {
    case 1: *g = (sm_geom){1, s[0], 1}; break;
    case 2: *g = (sm_geom){s[0], s[1], 1}; break;
    case 3: *g = (sm_geom){1, s[0], s[1] * s[2]}; break;
    case 4: *g = (sm_geom){s[0], s[1], s[2] * s[3]}; break;
    default: return lt_fail("%s: 1D, 2D, 3D or 4D tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  }
  return 0;
}

#define NN_GENERIC_FILE "nn_softmax.c"
#include "nn_generic.h"

static int sm_forward(const char *fn, lt_tensor *input, lt_tensor *output, int logsm) {
  sm_geom g;
  if (sm_geom_init(&g, fn, input) || nn_check_float(output, input->type, fn, "output")) return -1;
  nn_copies cp = {0};
  const void *in = nn_contig(&cp, input);
  int rc = -1;
  if (in && !nn_resize_as(output, input)) {
    NN_CALL(input->type, sm_forward, &g, in, lt_tensor_data(output), logsm);
    rc = 0;
  }
  return nn_copies_free(&cp, rc);
}

static int sm_backward(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                       lt_tensor *output, int logsm) {
  char b1[160], b2[160];
  sm_geom g;
  if (sm_geom_init(&g, fn, output) || nn_check_given(gradOutput, output->type, fn, "gradOutput") ||
      nn_check_float(gradInput, output->type, fn, "gradInput"))
    return -1;
  (void)input;
  if (!lt_tensor_is_same_size(output, gradOutput))
    return lt_fail("%s: gradOutput %s should have the size of output %s", fn, lt_shape_str(gradOutput, b1, sizeof b1),
                   lt_shape_str(output, b2, sizeof b2));
  nn_copies cp = {0};
  const void *out = nn_contig(&cp, output), *go = out ? nn_contig(&cp, gradOutput) : NULL;
  int rc = -1;
  if (go && !nn_resize_as(gradInput, output)) {
    NN_CALL(output->type, sm_backward, &g, out, go, lt_tensor_data(gradInput), logsm);
    rc = 0;
  }
  return nn_copies_free(&cp, rc);
}

int lt_nn_SoftMax_updateOutput(lt_tensor *input, lt_tensor *output) {
  NN_NEED(input);
  return sm_forward("SoftMax_updateOutput", input, output, 0);
}
int lt_nn_SoftMax_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *output) {
  NN_NEED(input, gradOutput);
  return sm_backward("SoftMax_updateGradInput", input, gradOutput, gradInput, output, 0);
}
int lt_nn_LogSoftMax_updateOutput(lt_tensor *input, lt_tensor *output) {
  NN_NEED(input);
  return sm_forward("LogSoftMax_updateOutput", input, output, 1);
}
int lt_nn_LogSoftMax_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                     lt_tensor *output) {
  NN_NEED(input, gradOutput);
  return sm_backward("LogSoftMax_updateGradInput", input, gradOutput, gradInput, output, 1);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(sm_forward)(const sm_geom *g, const real *in, real *out, int logsm) {
  const int64_t D = g->dim, S = g->stride, groups = g->frames * S;
  int64_t lt_par_n = groups * D;
#pragma omp parallel for schedule(static) if (lt_par_n >= LT_OMP_THRESHOLD && groups > 1)
  for (int64_t q = 0; q < groups; q++) {
    const real *x = in + (q / S) * D * S + q % S;
    real *y = out + (q / S) * D * S + q % S;
    real mx = -INFINITY;
    for (int64_t d = 0; d < D; d++)
      if (x[d * S] > mx || isnan(x[d * S])) mx = x[d * S];
    accreal sum = 0;
    if (logsm) {
      for (int64_t d = 0; d < D; d++) sum += exp((accreal)x[d * S] - mx);
      accreal shift = mx + log(sum);
      for (int64_t d = 0; d < D; d++) y[d * S] = (real)(x[d * S] - shift);
    } else {
      for (int64_t d = 0; d < D; d++) {
        real e = (real)exp((accreal)x[d * S] - mx);
        y[d * S] = e;
        sum += e;
      }
      for (int64_t d = 0; d < D; d++) y[d * S] = (real)(y[d * S] / sum);
    }
  }
}

static void NN_(sm_backward)(const sm_geom *g, const real *out, const real *go, real *gi, int logsm) {
  const int64_t D = g->dim, S = g->stride, groups = g->frames * S;
  int64_t lt_par_n = groups * D;
#pragma omp parallel for schedule(static) if (lt_par_n >= LT_OMP_THRESHOLD && groups > 1)
  for (int64_t q = 0; q < groups; q++) {
    int64_t base = (q / S) * D * S + q % S;
    const real *y = out + base, *dy = go + base;
    real *dx = gi + base;
    accreal sum = 0;
    if (logsm) {
      for (int64_t d = 0; d < D; d++) sum += dy[d * S];
      for (int64_t d = 0; d < D; d++) dx[d * S] = (real)(dy[d * S] - exp((accreal)y[d * S]) * sum);
    } else {
      for (int64_t d = 0; d < D; d++) sum += (accreal)dy[d * S] * y[d * S];
      for (int64_t d = 0; d < D; d++) dx[d * S] = (real)(y[d * S] * (dy[d * S] - sum));
    }
  }
}

#endif
