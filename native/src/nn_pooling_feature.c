/* FeatureLPPooling (Torch7's THNN FeatureLPPooling.c): the p-norm
 * (sum x^p)^(1/p) over `width` consecutive features, `stride` apart.
 * Input [B,] F [, o1 [, o2]]: seen as (B, F, S) with S the trailing sizes;
 * columns (b, s) run in parallel. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct flp_geom {
  int64_t B, F, S, oF;
} flp_geom;

static int flp_geom_init(flp_geom *g, const char *fn, const lt_tensor *input, int width, int stride, int batch) {
  char b[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  int lo = batch ? 2 : 1;
  if (input->ndim < lo || input->ndim > lo + 2)
    return lt_fail("%s: input must be %d to %dD (%s), got %s", fn, lo, lo + 2,
                   batch ? "batch, feature, optional dims" : "feature, optional dims",
                   lt_shape_str(input, b, sizeof b));
  if (width < 2 || width > 16) return lt_fail("%s: width must be within 2 to 16, got %d", fn, width);
  if (stride < 1 || stride > 4) return lt_fail("%s: stride must be within 1 to 4, got %d", fn, stride);
  int f = batch ? 1 : 0;
  g->B = batch ? input->size[0] : 1;
  g->F = input->size[f];
  g->S = 1;
  for (int d = f + 1; d < input->ndim; d++) g->S *= input->size[d];
  if (g->F < width) return lt_fail("%s: input feature dimension (%lld) smaller than width %d", fn, (long long)g->F, width);
  g->oF = (g->F - width) / stride + 1;
  return 0;
}

#define NN_GENERIC_FILE "nn_pooling_feature.c"
#include "nn_generic.h"

int lt_nn_FeatureLPPooling_updateOutput(lt_tensor *input, lt_tensor *output, double power, int width, int stride,
                                        int batch_mode) {
  NN_NEED(input);
  static const char fn[] = "FeatureLPPooling_updateOutput";
  nn_copies cp = {0};
  flp_geom g = {0};
  if (flp_geom_init(&g, fn, input, width, stride, batch_mode) || nn_check_float(output, input->type, fn, "output"))
    return -1;
  int64_t sz[4];
  for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
  sz[batch_mode ? 1 : 0] = g.oF;
  const void *in = nn_contig(&cp, input);
  if (!in || lt_tensor_resize(output, input->ndim, sz)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, flp_forward, &g, power, width, stride, in, lt_tensor_data(output));
  return nn_copies_free(&cp, 0);
}

int lt_nn_FeatureLPPooling_updateGradInput(lt_tensor *gradOutput, lt_tensor *input, lt_tensor *output,
                                           lt_tensor *gradInput, double power, int width, int stride,
                                           int batch_mode) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "FeatureLPPooling_updateGradInput";
  char b[160];
  nn_copies cp = {0};
  flp_geom g = {0};
  if (flp_geom_init(&g, fn, input, width, stride, batch_mode) ||
      nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  int64_t n = g.B * g.oF * g.S;
  if (gradOutput->type != input->type || lt_tensor_nelement(gradOutput) != n)
    return lt_fail("%s: gradOutput %s does not match the output size", fn, lt_shape_str(gradOutput, b, sizeof b));
  if (output->type != input->type || lt_tensor_nelement(output) != n)
    return lt_fail("%s: output must be the tensor filled by updateOutput", fn);
  const void *in = nn_contig(&cp, input);
  const void *go = in ? nn_contig(&cp, gradOutput) : NULL;
  const void *out = go ? nn_contig(&cp, output) : NULL;
  if (!out || nn_resize_as(gradInput, input)) return nn_copies_free(&cp, -1);
  NN_CALL(input->type, flp_backward, &g, power, width, stride, in, out, go, lt_tensor_data(gradInput));
  return nn_copies_free(&cp, 0);
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(flp_forward)(const flp_geom *g, double power, int width, int stride, const real *in, real *out) {
  const int64_t S = g->S;
#pragma omp parallel for schedule(static) if (g->B * S > 1 && g->B * S * g->oF * width >= LT_OMP_THRESHOLD)
  for (int64_t bs = 0; bs < g->B * S; bs++) {
    int64_t b = bs / S, s = bs % S;
    const real *x = in + b * g->F * S + s;
    real *y = out + b * g->oF * S + s;
    for (int64_t o = 0; o < g->oF; o++) {
      accreal v = 0;
      for (int i = 0; i < width; i++) v += pow((double)x[(o * stride + i) * S], power);
      y[o * S] = (real)pow((double)v, 1.0 / power);
    }
  }
}

/* d y_o / d x_i = (x_i / y_o)^(p-1); outputs of 0 pass no gradient (as THNN). */
static void NN_(flp_backward)(const flp_geom *g, double power, int width, int stride, const real *in,
                              const real *out, const real *go, real *gi) {
  const int64_t S = g->S;
  memset(gi, 0, sizeof(real) * g->B * g->F * S);
#pragma omp parallel for schedule(static) if (g->B * S > 1 && g->B * S * g->oF * width >= LT_OMP_THRESHOLD)
  for (int64_t bs = 0; bs < g->B * S; bs++) {
    int64_t b = bs / S, s = bs % S;
    const real *x = in + b * g->F * S + s;
    const real *y = out + b * g->oF * S + s, *d = go + b * g->oF * S + s;
    real *r = gi + b * g->F * S + s;
    for (int64_t o = 0; o < g->oF; o++) {
      real yo = y[o * S];
      if (yo == 0) continue;
      for (int i = 0; i < width; i++) {
        int64_t f = o * stride + i;
        r[f * S] += (real)(d[o * S] * pow((double)x[f * S] / yo, power - 1));
      }
    }
  }
}

#endif
