/* LookupTable's kernels (THNN's LookupTable.c counterpart): scattered
 * gradient accumulation into the rows named by the indices, and max-norm
 * renormalization of those rows. Threads split the embedding columns, so no
 * two threads write the same element even when indices repeat. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"
#include <math.h>
#include <stdlib.h>

/* Reads the i-th index (1-based) of a contiguous Long or Int tensor. */
static inline int64_t lut_index(const lt_tensor *idx, int64_t i) {
  return lt_host_type(idx->type) == LT_LONG ? ((const int64_t *)lt_tensor_data(idx))[i]
                              : (int64_t)((const int32_t *)lt_tensor_data(idx))[i];
}

#define NN_GENERIC_FILE "nn_linear.c"
#include "nn_generic.h"

static int lut_check_index(const char *fn, const lt_tensor *input, int64_t nIndex) {
  if (lt_host_type(input->type) != LT_LONG && lt_host_type(input->type) != LT_INT)
    return lt_fail("%s: input must be a LongTensor or IntTensor of indices, got a %sTensor", fn,
                   lt_type_name(input->type));
  if (!lt_tensor_is_contiguous(input)) return lt_fail("%s: input must be contiguous", fn);
  int64_t n = lt_tensor_nelement(input);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = lut_index(input, i);
    if (k < 1 || k > nIndex)
      return lt_fail("%s: index %lld out of range [1, %lld]", fn, (long long)k, (long long)nIndex);
  }
  return 0;
}

static int lut_check_weight(const char *fn, const lt_tensor *w, const char *what) {
  if (lt_host_type(w->type) != LT_FLOAT && lt_host_type(w->type) != LT_DOUBLE)
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (w->ndim != 2 || !lt_tensor_is_contiguous(w)) return lt_fail("%s: %s must be a contiguous matrix", fn, what);
  return 0;
}

int lt_nn_LookupTable_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                        lt_tensor *count, int scale_by_freq, int64_t padding_value,
                                        double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "LookupTable_accGradParameters";
  if (lut_check_weight(fn, gradWeight, "gradWeight") || nn_check_given(gradOutput, gradWeight->type, fn, "gradOutput"))
    return -1;
  int64_t nIndex = gradWeight->size[0], dim = gradWeight->size[1];
  if (lut_check_index(fn, input, nIndex)) return -1;
  int64_t n = lt_tensor_nelement(input);
  if (lt_tensor_nelement(gradOutput) != n * dim)
    return lt_fail("%s: gradOutput has %lld elements, expected %lld (indices x %lld)", fn,
                   (long long)lt_tensor_nelement(gradOutput), (long long)(n * dim), (long long)dim);
  int32_t *cnt = NULL;
  if (scale_by_freq) {
    if (!count || lt_host_type(count->type) != LT_INT) return lt_fail("%s: scale_by_freq needs an IntTensor count", fn);
    if (nn_resize1(count, nIndex) || lt_tensor_fill(count, 0)) return -1;
    cnt = lt_tensor_data(count);
    for (int64_t i = 0; i < n; i++) cnt[lut_index(input, i) - 1]++;
  }
  nn_copies cp = {0};
  const void *go = nn_contig(&cp, gradOutput);
  if (!go) return nn_copies_free(&cp, -1);
  NN_CALL(gradWeight->type, lut_acc, input, go, gradWeight, cnt, padding_value, scale, n, dim);
  return nn_copies_free(&cp, 0);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int lt_nn_LookupTable_renorm(lt_tensor *input, lt_tensor *weight, double maxNorm, double normType) {
  NN_NEED(input);
  static const char fn[] = "LookupTable_renorm";
  if (lut_check_weight(fn, weight, "weight")) return -1;
  if (lut_check_index(fn, input, weight->size[0])) return -1;
  if (normType <= 0) return lt_fail("%s: normType must be positive, got %g", fn, normType);
  int64_t n = lt_tensor_nelement(input);
  if (n == 0) return 0;
  int64_t *rows = malloc((size_t)n * sizeof *rows);
  if (!rows) return lt_fail("%s: out of memory", fn);
  for (int64_t i = 0; i < n; i++) rows[i] = lut_index(input, i);
  qsort(rows, (size_t)n, sizeof *rows, cmp_i64);
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (m == 0 || rows[m - 1] != rows[i]) rows[m++] = rows[i];
  NN_CALL(weight->type, lut_renorm, weight, rows, m, maxNorm, normType);
  free(rows);
  return 0;
}

#else /* ---------------------------------------------- generic part (real) */

static void NN_(lut_acc)(const lt_tensor *input, const void *gov, lt_tensor *gradWeight, const int32_t *cnt,
                         int64_t padding_value, double scale, int64_t n, int64_t dim) {
  const real *go = gov;
  real *gw = lt_tensor_data(gradWeight);
  /* Threads own blocks of columns (so that two never add into one element, and every element gets its terms
   * in index order, as with one thread); within a block each index adds one contiguous piece of a row. */
  enum { BLOCK = 32 };
  int64_t nblocks = (dim + BLOCK - 1) / BLOCK, lt_par_n = n * dim;
  LT_PARALLEL_FOR
  for (int64_t b = 0; b < nblocks; b++) {
    int64_t c0 = b * BLOCK, c1 = c0 + BLOCK < dim ? c0 + BLOCK : dim;
    for (int64_t i = 0; i < n; i++) {
      int64_t k = lut_index(input, i);
      if (k == padding_value) continue;
      double s = cnt ? scale / cnt[k - 1] : scale;
      real *row = gw + (k - 1) * dim;
      const real *g = go + i * dim;
      for (int64_t c = c0; c < c1; c++) row[c] += (real)(s * g[c]);
    }
  }
}

static void NN_(lut_renorm)(lt_tensor *weight, const int64_t *rows, int64_t m, double maxNorm, double p) {
  real *w = lt_tensor_data(weight);
  int64_t dim = weight->size[1], lt_par_n = m * dim;
  LT_PARALLEL_FOR
  for (int64_t r = 0; r < m; r++) {
    real *row = w + (rows[r] - 1) * dim;
    accreal norm = 0;
    for (int64_t c = 0; c < dim; c++) {
      accreal a = fabs((accreal)row[c]);
      norm += p == 1 ? a : p == 2 ? a * a : pow(a, p);
    }
    norm = p == 1 ? norm : p == 2 ? sqrt(norm) : pow(norm, 1.0 / p);
    if (norm > maxNorm) {
      real f = (real)(maxNorm / (norm + 1e-7));
      for (int64_t c = 0; c < dim; c++) row[c] *= f;
    }
  }
}

#endif
