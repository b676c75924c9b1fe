/* BatchNormalization / SpatialBatchNormalization, following THNN's
 * BatchNormalization.c: per feature f (input dimension 2), over the n =
 * nElement / nFeature values of the batch (and the spatial positions):
 *   train: mean = sum/n; invstd = 1/sqrt(sum((x-mean)^2)/n + eps)
 *          (0 when both the variance sum and eps are 0);
 *          running_mean = momentum*mean + (1-momentum)*running_mean
 *          running_var  = momentum*sum((x-mean)^2)/(n-1) + (1-momentum)*running_var
 *   eval:  mean = running_mean; invstd = 1/sqrt(running_var + eps)
 *   y = (x - mean) * invstd * weight + bias
 * Sums are accumulated in double (in vector lanes for float). Features run in parallel. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

/* The input as (N, C, S) with S the product of the dims after the features. */
typedef struct bn_geom {
  int64_t N, C, S;
} bn_geom;

static int bn_geom_init(bn_geom *g, const char *fn, const lt_tensor *input) {
  char buf[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim < 2)
    return lt_fail("%s: 2D or 4D input tensor expected (batch x features) but got: %s", fn,
                   lt_shape_str(input, buf, sizeof buf));
  g->N = input->size[0];
  g->C = input->size[1];
  g->S = 1;
  for (int d = 2; d < input->ndim; d++) g->S *= input->size[d];
  return 0;
}

/* Optional per-feature vectors as pointer + stride (NULL when absent). */
typedef struct bn_vec {
  void *p;
  int64_t s;
} bn_vec;

static bn_vec bn_vec_of(lt_tensor *t) {
  bn_vec v = {NULL, 0};
  if (t) {
    v.p = lt_tensor_data(t);
    v.s = nn_vec_stride(t);
  }
  return v;
}

#define NN_GENERIC_FILE "nn_batchnorm.c"
#include "nn_generic.h"

int lt_nn_BatchNormalization_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                          lt_tensor *running_mean, lt_tensor *running_var, lt_tensor *save_mean,
                                          lt_tensor *save_std, int train, double momentum, double eps) {
  NN_NEED(input);
  static const char fn[] = "BatchNormalization_updateOutput";
  bn_geom g = {0, 0, 0};
  if (bn_geom_init(&g, fn, input)) return -1;
  int ty = input->type;
  if (nn_check_vec(weight, g.C, ty, fn, "weight") || nn_check_vec(bias, g.C, ty, fn, "bias") ||
      nn_check_vec(running_mean, g.C, ty, fn, "running_mean") || nn_check_vec(running_var, g.C, ty, fn, "running_var") ||
      nn_check_float(output, ty, fn, "output"))
    return -1;
  if (train) {
    if (!save_mean || !save_std) return lt_fail("%s: save_mean and save_std are needed in training mode", fn);
    if (nn_check_float(save_mean, ty, fn, "save_mean") || nn_check_float(save_std, ty, fn, "save_std") ||
        nn_resize1(save_mean, g.C) || nn_resize1(save_std, g.C))
      return -1;
  } else if (!running_mean || !running_var) {
    return lt_fail("%s: running_mean and running_var are needed in evaluation mode", fn);
  }
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input);
  if (!in || nn_resize_as(output, input)) goto done;
  bn_vec w = bn_vec_of(weight), b = bn_vec_of(bias), rm = bn_vec_of(running_mean), rv = bn_vec_of(running_var);
  bn_vec sm = bn_vec_of(train ? save_mean : NULL), ss = bn_vec_of(train ? save_std : NULL);
  NN_CALL(ty, bn_forward, &g, in, lt_tensor_data(output), w, b, rm, rv, sm, ss, train, momentum, eps);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

int lt_nn_BatchNormalization_backward(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                      lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *weight,
                                      lt_tensor *running_mean, lt_tensor *running_var, lt_tensor *save_mean,
                                      lt_tensor *save_std, int train, double scale, double eps) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "BatchNormalization_backward";
  char b1[160], b2[160];
  bn_geom g = {0, 0, 0};
  if (bn_geom_init(&g, fn, input)) return -1;
  int ty = input->type;
  if (nn_check_given(gradOutput, ty, fn, "gradOutput")) return -1;
  if (!lt_tensor_is_same_size(input, gradOutput))
    return lt_fail("%s: gradOutput %s should have the size of input %s", fn, lt_shape_str(gradOutput, b1, sizeof b1),
                   lt_shape_str(input, b2, sizeof b2));
  if (nn_check_float(gradInput, ty, fn, "gradInput") || nn_check_vec(gradWeight, g.C, ty, fn, "gradWeight") ||
      nn_check_vec(gradBias, g.C, ty, fn, "gradBias") || nn_check_vec(weight, g.C, ty, fn, "weight"))
    return -1;
  if (train) {
    if (!save_mean || !save_std) return lt_fail("%s: save_mean and save_std are needed in training mode", fn);
    if (nn_check_vec(save_mean, g.C, ty, fn, "save_mean") || nn_check_vec(save_std, g.C, ty, fn, "save_std"))
      return -1;
  } else {
    if (!running_mean || !running_var)
      return lt_fail("%s: running_mean and running_var are needed in evaluation mode", fn);
    if (nn_check_vec(running_mean, g.C, ty, fn, "running_mean") ||
        nn_check_vec(running_var, g.C, ty, fn, "running_var"))
      return -1;
  }
  nn_copies cp = {0};
  int rc = -1;
  const void *in = nn_contig(&cp, input), *go = in ? nn_contig(&cp, gradOutput) : NULL;
  if (!go) goto done;
  if (gradInput && nn_resize_as(gradInput, input)) goto done;
  void *gi = gradInput ? lt_tensor_data(gradInput) : NULL;
  bn_vec gw = bn_vec_of(gradWeight), gb = bn_vec_of(gradBias), w = bn_vec_of(weight);
  bn_vec m = bn_vec_of(train ? save_mean : running_mean), s = bn_vec_of(train ? save_std : running_var);
  NN_CALL(ty, bn_backward, &g, in, go, gi, gw, gb, w, m, s, train, scale, eps);
  rc = 0;
done:
  return nn_copies_free(&cp, rc);
}

#else /* ---------------------------------------------- generic part (real) */

#define BN_AT(v, f) (((real *)(v).p)[(f) * (v).s])

/* The reductions of one feature over its N planes of S values, in double (NN_SUM_LANES: in vector lanes for
 * float). */
static accreal NN_(bn_sum)(const real *in, int64_t N, int64_t C, int64_t S, int64_t f) {
  accreal sum = 0;
  for (int64_t i = 0; i < N; i++) {
    const real *x = in + (i * C + f) * S;
    NN_SUM_LANES(+ : sum)
    for (int64_t k = 0; k < S; k++) sum += x[k];
  }
  return sum;
}

static accreal NN_(bn_centred_squares)(const real *in, int64_t N, int64_t C, int64_t S, int64_t f, accreal mean) {
  accreal var = 0;
  for (int64_t i = 0; i < N; i++) {
    const real *x = in + (i * C + f) * S;
    NN_SUM_LANES(+ : var)
    for (int64_t k = 0; k < S; k++) {
      accreal d = x[k] - mean;
      var += d * d;
    }
  }
  return var;
}

static void NN_(bn_forward)(const bn_geom *g, const real *in, real *out, bn_vec w, bn_vec b, bn_vec rm, bn_vec rv,
                            bn_vec sm, bn_vec ss, int train, double momentum, double eps) {
  const int64_t N = g->N, C = g->C, S = g->S, n = N * S;
  int64_t lt_par_n = C * n;
#pragma omp parallel for schedule(static) if (lt_par_n >= LT_OMP_THRESHOLD && C > 1)
  for (int64_t f = 0; f < C; f++) {
    accreal mean, invstd;
    if (train) {
      mean = n > 0 ? NN_(bn_sum)(in, N, C, S, f) / n : 0;
      accreal var = NN_(bn_centred_squares)(in, N, C, S, f, mean);
      invstd = (var == 0 && eps == 0) ? 0 : 1 / sqrt(var / n + eps);
      BN_AT(sm, f) = (real)mean;
      BN_AT(ss, f) = (real)invstd;
      if (rm.p) BN_AT(rm, f) = (real)(momentum * mean + (1 - momentum) * BN_AT(rm, f));
      if (rv.p) BN_AT(rv, f) = (real)(momentum * (var / (n - 1)) + (1 - momentum) * BN_AT(rv, f));
    } else {
      mean = BN_AT(rm, f);
      invstd = 1 / sqrt(BN_AT(rv, f) + eps);
    }
    accreal a = invstd * (w.p ? BN_AT(w, f) : 1), c = b.p ? BN_AT(b, f) : 0;
    for (int64_t i = 0; i < N; i++) {
      const real *x = in + (i * C + f) * S;
      real *y = out + (i * C + f) * S;
#pragma omp simd
      for (int64_t k = 0; k < S; k++) y[k] = (real)((x[k] - mean) * a + c);
    }
  }
}

/* m, s: save_mean/save_std in training mode, running_mean/running_var otherwise. */
static void NN_(bn_backward)(const bn_geom *g, const real *in, const real *go, real *gi, bn_vec gw, bn_vec gb,
                             bn_vec w, bn_vec m, bn_vec s, int train, double scale, double eps) {
  const int64_t N = g->N, C = g->C, S = g->S, n = N * S;
  int64_t lt_par_n = C * n;
#pragma omp parallel for schedule(static) if (lt_par_n >= LT_OMP_THRESHOLD && C > 1)
  for (int64_t f = 0; f < C; f++) {
    accreal mean = BN_AT(m, f);
    accreal invstd = train ? (accreal)BN_AT(s, f) : 1 / sqrt(BN_AT(s, f) + eps);
    accreal wf = w.p ? BN_AT(w, f) : 1;
    accreal sum = 0, dotp = 0;
    for (int64_t i = 0; i < N; i++) {
      const real *x = in + (i * C + f) * S, *dy = go + (i * C + f) * S;
      NN_SUM_LANES(+ : sum, dotp)
      for (int64_t k = 0; k < S; k++) {
        sum += dy[k];
        dotp += (x[k] - mean) * dy[k];
      }
    }
    if (gi) {
      if (train) {
        /* dx = (dy - mean(dy) - (x-mean) * mean(dy*(x-mean)) * invstd^2) * invstd * w */
        accreal k1 = dotp * invstd * invstd / n, gmean = sum / n;
        for (int64_t i = 0; i < N; i++) {
          const real *x = in + (i * C + f) * S, *dy = go + (i * C + f) * S;
          real *dx = gi + (i * C + f) * S;
#pragma omp simd
          for (int64_t k = 0; k < S; k++) dx[k] = (real)((dy[k] - gmean - (x[k] - mean) * k1) * invstd * wf);
        }
      } else {
        accreal a = invstd * wf;
        for (int64_t i = 0; i < N; i++) {
          const real *dy = go + (i * C + f) * S;
          real *dx = gi + (i * C + f) * S;
#pragma omp simd
          for (int64_t k = 0; k < S; k++) dx[k] = (real)(dy[k] * a);
        }
      }
    }
    if (gw.p) BN_AT(gw, f) += (real)(scale * dotp * invstd);
    if (gb.p) BN_AT(gb, f) += (real)(scale * sum);
  }
}

#undef BN_AT

#endif
