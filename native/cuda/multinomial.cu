/* multinomial.cu — the draws of Torch7's multinomial with replacement: a binary search of each uniform draw in its
 * row's cumulative distribution.
 *
 *   lt_multinomial_search_<idx>(T out, const d *cum, const d *u, q rows, q ncat, q n)
 *     cum: rows x ncat contiguous doubles, each row the running sums of its row of probabilities (the host checks
 *     that they are >= 0 and that every row sums to a positive finite total); u: rows x n contiguous doubles in
 *     [0, 1). out (a Long tensor of rows·n elements, (row, draw) in row-major order, any strides) gets, for draw j
 *     of row r, 1 + the first category k whose running sum exceeds u[r, j] · total, or, when rounding leaves none
 *     (u · total rounded up to the total), the first that reaches the total. Either way a category of zero
 *     probability (a running sum equal to the one before) is never drawn. A thread per draw, grid-stride.
 */
#include "lt_cuda_common.cuh"

/* the first k in [0, ncat) with row[k] > target (strict) or >= target, ncat when there is none */
LT_D long long lt_multinomial_first(const double *row, long long ncat, double target, bool strict) {
  long long lo = 0, hi = ncat;
  while (hi > lo) {
    const long long mid = lo + (hi - lo) / 2;
    if (strict ? row[mid] > target : row[mid] >= target) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

template <typename I>
LT_D void lt_multinomial_search_impl(lt_cu_tensor out, const double *cum, const double *u, long long rows,
                                     long long ncat, long long n) {
  LT_GRID_LOOP(I, i, rows * n) {
    const long long r = (long long)i / n;
    const double *row = cum + r * ncat;
    const double target = u[(long long)i] * row[ncat - 1];
    long long k = lt_multinomial_first(row, ncat, target, true);
    if (k == ncat) k = lt_multinomial_first(row, ncat, target, false);
    ((long long *)out.data)[lt_offset<I>(out, i)] = k + 1;
  }
}

#define LT_MULTINOMIAL(IDX)                                                                                     \
  extern "C" __global__ void lt_multinomial_search_##IDX(lt_cu_tensor out, const double *cum, const double *u, \
                                                         long long rows, long long ncat, long long n) {        \
    lt_multinomial_search_impl<lt_##IDX>(out, cum, u, rows, ncat, n);                                          \
  }                                                                                                            \
  LT_EXPORT(lt_multinomial_search_##IDX)

LT_MULTINOMIAL(i32)
LT_MULTINOMIAL(i64)
