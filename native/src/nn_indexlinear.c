/* IndexLinear's kernels (THNN's IndexLinear.c counterpart): a linear layer on
 * sparse samples given as {keys, values}, concatenated over the batch with the
 * number of keys of each sample in `sizes`. weight is (nIn, nNorm + nOut), one
 * row per feature; nNorm is 0, or 4 with max-normalization, whose columns are
 * per feature {max |value| seen, its inverse, update scale, value bias}.
 *
 * Threads split (sample, block of output columns) pairs, or blocks of output
 * columns alone where every key row is updated in turn, so that a row named
 * twice is updated in Torch7's order and no two threads write the same value.
 * The max-normalized updates read a whole row to update its value bias, so
 * they run on one thread.
 *
 * THNN has a separate path for one output whose max-normalized updates add
 * the weight decay rather than subtract it (and whose accUpdate then zeroes
 * the update scale); here every output size takes the general formulas. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

/* Output columns one thread handles at a time. */
#define IL_BLOCK 64
/* Max-normalization's statistics columns in weight. */
#define IL_NORM_COLS 4

typedef struct il_shape {
  int64_t nIn, nOut, nNorm, nKeys, nSamples;
} il_shape;

#define NN_GENERIC_FILE "nn_indexlinear.c"
#include "nn_generic.h"

static int il_is_long(const lt_tensor *t) { return lt_host_type(t->type) == LT_LONG; }

static int il_check_long_vec(const char *fn, const lt_tensor *t, const char *what) {
  if (!il_is_long(t)) return lt_fail("%s: %s must be a LongTensor, got a %sTensor", fn, what, lt_type_name(t->type));
  if (t->ndim > 1 || !lt_tensor_is_contiguous(t)) return lt_fail("%s: %s must be a contiguous 1-D LongTensor", fn, what);
  return 0;
}

/* weight (nIn, nNorm + nOut) contiguous, bias (nOut) contiguous, nNorm 0 or 4. */
static int il_check_params(const char *fn, const lt_tensor *weight, const lt_tensor *bias, il_shape *sh) {
  if (lt_host_type(weight->type) != LT_FLOAT && lt_host_type(weight->type) != LT_DOUBLE)
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (weight->ndim != 2 || !lt_tensor_is_contiguous(weight))
    return lt_fail("%s: weight must be a contiguous inputSize x (outputSize [+ 4]) matrix", fn);
  if (nn_check_float(bias, weight->type, fn, "bias")) return -1;
  if (bias->ndim != 1 || !lt_tensor_is_contiguous(bias)) return lt_fail("%s: bias must be a contiguous vector", fn);
  sh->nIn = weight->size[0];
  sh->nOut = bias->size[0];
  sh->nNorm = weight->size[1] - sh->nOut;
  if (sh->nNorm != 0 && sh->nNorm != IL_NORM_COLS)
    return lt_fail("%s: weight has %lld columns for %lld outputs; it must have outputSize (or outputSize + %d when "
                   "normalizing) columns", fn, (long long)weight->size[1], (long long)sh->nOut, IL_NORM_COLS);
  return 0;
}

/* Every key, shifted by keysOffset, must name a row of weight. */
static int il_check_keys(const char *fn, const lt_tensor *keys, int64_t keysOffset, int64_t nIn) {
  const int64_t *k = lt_tensor_data(keys);
  int64_t n = lt_tensor_nelement(keys);
  for (int64_t i = 0; i < n; i++)
    if (k[i] + keysOffset < 0 || k[i] + keysOffset >= nIn)
      return lt_fail("%s: key %lld is out of range: keys must be in [%lld, %lld] (inputSize %lld, keysOffset %lld)",
                     fn, (long long)k[i], (long long)(-keysOffset), (long long)(nIn - 1 - keysOffset),
                     (long long)nIn, (long long)(keysOffset + 1));
  return 0;
}

/* keys, values (same count), sizes and their running sums cumSumSizes. */
static int il_check_batch(const char *fn, const lt_tensor *keys, int64_t keysOffset, const lt_tensor *values,
                          const lt_tensor *sizes, const lt_tensor *cumSumSizes, const lt_tensor *weight,
                          const lt_tensor *bias, il_shape *sh) {
  if (nn_need(fn, "values", values, "keys", keys) || nn_need(fn, "weight", weight, "sizes", sizes) ||
      il_check_params(fn, weight, bias, sh) || il_check_long_vec(fn, keys, "keys") ||
      il_check_long_vec(fn, sizes, "sizes") || il_check_long_vec(fn, cumSumSizes, "cumSumSizes") ||
      nn_check_float(values, weight->type, fn, "values"))
    return -1;
  if (values->ndim > 1 || !lt_tensor_is_contiguous(values)) return lt_fail("%s: values must be a contiguous vector", fn);
  sh->nKeys = lt_tensor_nelement(keys);
  if (lt_tensor_nelement(values) != sh->nKeys)
    return lt_fail("%s: keys and values should have the same number of elements (%lld keys, %lld values)", fn,
                   (long long)sh->nKeys, (long long)lt_tensor_nelement(values));
  sh->nSamples = lt_tensor_nelement(sizes);
  if (lt_tensor_nelement(cumSumSizes) != sh->nSamples)
    return lt_fail("%s: cumSumSizes must have one entry per sample (%lld), got %lld", fn, (long long)sh->nSamples,
                   (long long)lt_tensor_nelement(cumSumSizes));
  const int64_t *sz = lt_tensor_data(sizes), *cs = lt_tensor_data(cumSumSizes);
  int64_t total = 0;
  for (int64_t j = 0; j < sh->nSamples; j++) {
    if (sz[j] < 0) return lt_fail("%s: sample %lld has a negative size %lld", fn, (long long)j + 1, (long long)sz[j]);
    total += sz[j];
    if (cs[j] != total) return lt_fail("%s: cumSumSizes is not the running sum of sizes", fn);
  }
  if (total != sh->nKeys)
    return lt_fail("%s: the sizes add up to %lld keys but %lld keys were given", fn, (long long)total,
                   (long long)sh->nKeys);
  return il_check_keys(fn, keys, keysOffset, sh->nIn);
}

/* gradOutput holds nSamples x nOut elements (its shape may be a vector for one sample). */
static int il_check_grad_output(const char *fn, const lt_tensor *gradOutput, const lt_tensor *weight,
                                const il_shape *sh) {
  if (nn_check_given(gradOutput, weight->type, fn, "gradOutput")) return -1;
  if (lt_tensor_nelement(gradOutput) != sh->nSamples * sh->nOut)
    return lt_fail("%s: gradOutput must have %lld x %lld elements, got %lld", fn, (long long)sh->nSamples,
                   (long long)sh->nOut, (long long)lt_tensor_nelement(gradOutput));
  return 0;
}

int lt_nn_IndexLinear_updateOutput(lt_tensor *keys, int64_t keysOffset, lt_tensor *values, lt_tensor *sizes,
                                   lt_tensor *cumSumSizes, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                   lt_tensor *normalizedValues, int train) {
  static const char fn[] = "IndexLinear_updateOutput";
  il_shape sh;
  if (il_check_batch(fn, keys, keysOffset, values, sizes, cumSumSizes, weight, bias, &sh) ||
      nn_check_float(output, weight->type, fn, "output") ||
      nn_check_float(normalizedValues, weight->type, fn, "normalizedValues"))
    return -1;
  int64_t shape[2] = {sh.nSamples, sh.nOut};
  if (lt_tensor_resize(output, 2, shape)) return -1;
  if (sh.nNorm && nn_resize1(normalizedValues, sh.nKeys)) return -1;
  NN_CALL(weight->type, il_forward, keys, keysOffset, values, cumSumSizes, output, weight, bias,
          sh.nNorm ? normalizedValues : NULL, train, &sh);
  return 0;
}

int lt_nn_IndexLinear_accGradParameters(lt_tensor *keys, int64_t keysOffset, lt_tensor *values, lt_tensor *sizes,
                                        lt_tensor *cumSumSizes, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                        lt_tensor *gradBias, lt_tensor *weight, lt_tensor *bias, double scale) {
  NN_NEED(gradOutput);
  static const char fn[] = "IndexLinear_accGradParameters";
  il_shape sh;
  if (il_check_batch(fn, keys, keysOffset, values, sizes, cumSumSizes, weight, bias, &sh) ||
      il_check_grad_output(fn, gradOutput, weight, &sh) || nn_check_float(gradWeight, weight->type, fn, "gradWeight") ||
      nn_check_vec(gradBias, sh.nOut, weight->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_contiguous(gradBias)) return lt_fail("%s: gradBias must be contiguous", fn);
  int64_t shape[2] = {sh.nKeys, sh.nOut * (sh.nNorm ? 2 : 1)};
  if (lt_tensor_resize(gradWeight, 2, shape)) return -1;
  nn_copies cp = {0};
  const void *go = nn_contig(&cp, gradOutput);
  if (!go) return nn_copies_free(&cp, -1);
  NN_CALL(weight->type, il_backward, values, cumSumSizes, go, gradWeight, gradBias, scale, &sh);
  return nn_copies_free(&cp, 0);
}

int lt_nn_IndexLinear_accUpdateGradParameters(lt_tensor *keys, int64_t keysOffset, lt_tensor *values,
                                              lt_tensor *sizes, lt_tensor *cumSumSizes, lt_tensor *gradOutput,
                                              lt_tensor *weight, lt_tensor *bias, double weightDecay, double scale) {
  NN_NEED(gradOutput);
  static const char fn[] = "IndexLinear_accUpdateGradParameters";
  il_shape sh;
  if (il_check_batch(fn, keys, keysOffset, values, sizes, cumSumSizes, weight, bias, &sh) ||
      il_check_grad_output(fn, gradOutput, weight, &sh))
    return -1;
  nn_copies cp = {0};
  const void *go = nn_contig(&cp, gradOutput);
  if (!go) return nn_copies_free(&cp, -1);
  NN_CALL(weight->type, il_acc_update, keys, keysOffset, values, cumSumSizes, go, weight, bias, weightDecay, scale,
          &sh);
  return nn_copies_free(&cp, 0);
}

int lt_nn_IndexLinear_updateParameters(lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *weight,
                                       lt_tensor *bias, lt_tensor *keys, int64_t keysOffset, double weightDecay,
                                       double learningRate) {
  static const char fn[] = "IndexLinear_updateParameters";
  il_shape sh;
  if (nn_need(fn, "weight", weight, "keys", keys) || il_check_params(fn, weight, bias, &sh) ||
      il_check_long_vec(fn, keys, "keys") ||
      nn_check_float(gradWeight, weight->type, fn, "gradWeight") ||
      nn_check_vec(gradBias, sh.nOut, weight->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_contiguous(gradBias)) return lt_fail("%s: gradBias must be contiguous", fn);
  sh.nKeys = lt_tensor_nelement(keys);
  sh.nSamples = 0;
  int64_t cols = sh.nOut * (sh.nNorm ? 2 : 1);
  /* (without keys, an empty gradWeight of any shape: only the bias moves) */
  int rows_ok = sh.nKeys == 0 ? lt_tensor_nelement(gradWeight) == 0
                              : gradWeight->ndim == 2 && gradWeight->size[0] == sh.nKeys &&
                                    gradWeight->size[1] == cols && lt_tensor_is_contiguous(gradWeight);
  if (!rows_ok)
    return lt_fail("%s: gradWeight must be a contiguous %lld x %lld matrix (one row per key)", fn,
                   (long long)sh.nKeys, (long long)cols);
  if (il_check_keys(fn, keys, keysOffset, sh.nIn)) return -1;
  NN_CALL(weight->type, il_update, gradWeight, gradBias, weight, bias, keys, keysOffset, weightDecay, learningRate,
          &sh);
  return 0;
}

#else /* ---------------------------------------------- generic part (real) */

/* The value a key contributes under max-normalization: scaled by the inverse
 * of the largest |value| seen (clamped to +-1 beyond it), plus the feature's
 * value bias. In training the statistics are updated first, in key order. */
static real NN_(il_normalize)(real *row, real v, int train) {
  real a = v < 0 ? -v : v;
  if (train) {
    if (a > row[0]) {
      row[0] = a;
      row[1] = 1 / a;
    }
    row[2] = 1;
  }
  real n = a > row[0] ? (real)((v > 0) - (v < 0)) : v * row[1];
  return n + row[3];
}

static void NN_(il_forward)(const lt_tensor *keys, int64_t keysOffset, const lt_tensor *values,
                            const lt_tensor *cumSumSizes, lt_tensor *output, lt_tensor *weight, const lt_tensor *bias,
                            lt_tensor *normalizedValues, int train, const il_shape *sh) {
  const int64_t *key = lt_tensor_data(keys), *cs = lt_tensor_data(cumSumSizes);
  const real *v = lt_tensor_data(values), *b = lt_tensor_data(bias);
  real *w = lt_tensor_data(weight), *y = lt_tensor_data(output);
  int64_t ld = sh->nNorm + sh->nOut, nOut = sh->nOut;
  if (normalizedValues) {
    /* one pass in key order: a key's statistics may change between two of its uses */
    real *nv = lt_tensor_data(normalizedValues);
    for (int64_t i = 0; i < sh->nKeys; i++) nv[i] = NN_(il_normalize)(w + (key[i] + keysOffset) * ld, v[i], train);
    v = nv;
  }
  const real *wv = w + sh->nNorm;
  int64_t nBlocks = (nOut + IL_BLOCK - 1) / IL_BLOCK;
  int64_t lt_par_n = sh->nKeys * nOut;
  LT_PARALLEL_FOR
  for (int64_t t = 0; t < sh->nSamples * nBlocks; t++) {
    int64_t j = t / nBlocks, k0 = (t % nBlocks) * IL_BLOCK, k1 = k0 + IL_BLOCK < nOut ? k0 + IL_BLOCK : nOut;
    real *yj = y + j * nOut;
    for (int64_t k = k0; k < k1; k++) yj[k] = b[k];
    for (int64_t i = j ? cs[j - 1] : 0; i < cs[j]; i++) {
      const real *row = wv + (key[i] + keysOffset) * ld;
      real vi = v[i];
      for (int64_t k = k0; k < k1; k++) yj[k] += vi * row[k];
    }
  }
}

/* gradWeight gets one row per key: scale * value * gradOutput of its sample,
 * preceded under max-normalization by scale * gradOutput (for the value bias). */
static void NN_(il_backward)(const lt_tensor *values, const lt_tensor *cumSumSizes, const real *go,
                             lt_tensor *gradWeight, lt_tensor *gradBias, double scale, const il_shape *sh) {
  const int64_t *cs = lt_tensor_data(cumSumSizes);
  const real *v = lt_tensor_data(values);
  real *gw = lt_tensor_data(gradWeight), *gb = lt_tensor_data(gradBias);
  int64_t nOut = sh->nOut, ld = nOut * (sh->nNorm ? 2 : 1), valueCol = sh->nNorm ? nOut : 0;
  const real sc = (real)scale;
  int64_t nBlocks = (nOut + IL_BLOCK - 1) / IL_BLOCK;
  int64_t lt_par_n = sh->nKeys * nOut;
  LT_PARALLEL_FOR
  for (int64_t t = 0; t < sh->nSamples * nBlocks; t++) {
    int64_t j = t / nBlocks, k0 = (t % nBlocks) * IL_BLOCK, k1 = k0 + IL_BLOCK < nOut ? k0 + IL_BLOCK : nOut;
    const real *gj = go + j * nOut;
    for (int64_t i = j ? cs[j - 1] : 0; i < cs[j]; i++) {
      real *row = gw + i * ld;
      real vi = v[i] * sc;
      if (valueCol)
        for (int64_t k = k0; k < k1; k++) row[k] = gj[k] * sc;
      for (int64_t k = k0; k < k1; k++) row[valueCol + k] = vi * gj[k];
    }
  }
  lt_par_n = sh->nSamples * nOut;
  LT_PARALLEL_FOR
  for (int64_t k = 0; k < nOut; k++) {
    accreal sum = 0;
    for (int64_t j = 0; j < sh->nSamples; j++) sum += go[j * nOut + k];
    gb[k] += (real)(scale * sum);
  }
}

/* One key's step on its weight row, columns k0..k1: decay (row -= wd * row),
 * then row -= step * g. Under max-normalization (stats, the row's statistics,
 * not NULL) the value bias first moves by -biasStep * <gBias, row>. */
static inline void NN_(il_step_row)(real *row, real *stats, const real *gBias, const real *g, real step, real wd,
                                    real biasStep, int64_t k0, int64_t k1) {
  if (stats) {
    accreal dot = 0;
    for (int64_t k = k0; k < k1; k++) dot += gBias[k] * row[k];
    stats[3] -= (real)(biasStep * dot);
  }
  if (wd != 0)
    for (int64_t k = k0; k < k1; k++) row[k] -= wd * row[k];
  for (int64_t k = k0; k < k1; k++) row[k] -= step * g[k];
}

static void NN_(il_acc_update)(const lt_tensor *keys, int64_t keysOffset, const lt_tensor *values,
                               const lt_tensor *cumSumSizes, const real *go, lt_tensor *weight, lt_tensor *bias,
                               double weightDecay, double scale, const il_shape *sh) {
  const int64_t *key = lt_tensor_data(keys), *cs = lt_tensor_data(cumSumSizes);
  const real *v = lt_tensor_data(values);
  real *w = lt_tensor_data(weight), *b = lt_tensor_data(bias);
  int64_t nOut = sh->nOut, ld = sh->nNorm + nOut;
  const real sc = (real)scale, wd = (real)weightDecay;
  for (int64_t k = 0; k < nOut; k++) {
    accreal sum = 0;
    for (int64_t j = 0; j < sh->nSamples; j++) sum += go[j * nOut + k];
    b[k] -= (real)(scale * sum);
  }
  if (sh->nNorm) {
    /* the update scale (column 2) weighs the step, the decay and the value bias's step */
    for (int64_t j = 0; j < sh->nSamples; j++)
      for (int64_t i = j ? cs[j - 1] : 0; i < cs[j]; i++) {
        real *stats = w + (key[i] + keysOffset) * ld, s = stats[2];
        const real *gj = go + j * nOut;
        NN_(il_step_row)(stats + sh->nNorm, stats, gj, gj, v[i] * sc * s, wd * s, sc * s, 0, nOut);
      }
    return;
  }
  int64_t nBlocks = (nOut + IL_BLOCK - 1) / IL_BLOCK;
  int64_t lt_par_n = sh->nKeys * nOut;
  LT_PARALLEL_FOR
  for (int64_t blk = 0; blk < nBlocks; blk++) {
    int64_t k0 = blk * IL_BLOCK, k1 = k0 + IL_BLOCK < nOut ? k0 + IL_BLOCK : nOut;
    for (int64_t j = 0; j < sh->nSamples; j++)
      for (int64_t i = j ? cs[j - 1] : 0; i < cs[j]; i++)
        NN_(il_step_row)(w + (key[i] + keysOffset) * ld, NULL, NULL, go + j * nOut, v[i] * sc, wd, 0, k0, k1);
  }
}

static void NN_(il_update)(const lt_tensor *gradWeight, const lt_tensor *gradBias, lt_tensor *weight,
                           lt_tensor *bias, const lt_tensor *keys, int64_t keysOffset, double weightDecay,
                           double learningRate, const il_shape *sh) {
  const int64_t *key = lt_tensor_data(keys);
  const real *gw = lt_tensor_data(gradWeight), *gb = lt_tensor_data(gradBias);
  real *w = lt_tensor_data(weight), *b = lt_tensor_data(bias);
  int64_t nOut = sh->nOut, ld = sh->nNorm + nOut, gld = nOut * (sh->nNorm ? 2 : 1);
  const real lr = (real)learningRate, wd = (real)weightDecay;
  for (int64_t k = 0; k < nOut; k++) b[k] -= lr * gb[k];
  if (sh->nNorm) {
    /* a gradWeight row is {gradient of the value bias's step, gradient of the weights} */
    for (int64_t r = 0; r < sh->nKeys; r++) {
      real *stats = w + (key[r] + keysOffset) * ld, s = stats[2];
      const real *g = gw + r * gld;
      NN_(il_step_row)(stats + sh->nNorm, stats, g, g + nOut, lr * s, wd * s, lr * s, 0, nOut);
    }
    return;
  }
  int64_t nBlocks = (nOut + IL_BLOCK - 1) / IL_BLOCK;
  int64_t lt_par_n = sh->nKeys * nOut;
  LT_PARALLEL_FOR
  for (int64_t blk = 0; blk < nBlocks; blk++) {
    int64_t k0 = blk * IL_BLOCK, k1 = k0 + IL_BLOCK < nOut ? k0 + IL_BLOCK : nOut;
    for (int64_t r = 0; r < sh->nKeys; r++)
      NN_(il_step_row)(w + (key[r] + keysOffset) * ld, NULL, NULL, gw + r * gld, lr, wd, 0, k0, k1);
  }
}

#endif
