/* Reductions: sum, prod, mean, var, std, norm, max, min, over the whole
 * tensor (a number) or along one dimension (a tensor keeping that dimension
 * with size 1, as TH did). Accumulation is in TH's accreal: int64 for
 * integer types, double for float and double.
 *
 * Whole-tensor reductions of contiguous data split the range among threads
 * (fixed partials, combined in order, so a given thread count always gives
 * the same bits). Along a dimension, each run of output positions is reduced
 * in the cache-friendly order: when the reduced dimension has the smaller
 * stride, output by output (a contiguous row reduction); otherwise a block of
 * neighbouring outputs at a time, adding whole rows into per-block
 * accumulators on the stack, so memory is read in its own order. */
#include "math_common.h"

#define PRAGMA(x) _Pragma(#x)
#define MAX_PARTS 256
#define RED_BLOCK 1024

/* TH's accreal for the element type in scope. */
#define ACCREAL __typeof__(_Generic((scalar_t)0, float: (double)0, double: (double)0, default: (int64_t)0))

#ifdef _OPENMP
static int threads_for(int64_t n) {
  int k = n >= LT_OMP_THRESHOLD ? omp_get_max_threads() : 1;
  return k > MAX_PARTS ? MAX_PARTS : k;
}
#else
static int threads_for(int64_t n) { (void)n; return 1; }
#endif

/* ---- step macros: fold element x into the accumulators a1, a2 (c: shift) ---- */
#define STEP_SUM(a1, a2, c, x) a1 += (x)
#define STEP_PROD(a1, a2, c, x) a1 *= (x)
#define STEP_NAN_MAX(a1, a2, c, x) (a2 |= ((x) != (x)), a1 = (x) > a1 ? (x) : a1)
#define STEP_NAN_MIN(a1, a2, c, x) (a2 |= ((x) != (x)), a1 = (x) < a1 ? (x) : a1)
#define STEP_NORM0(a1, a2, c, x) a1 += ((x) != 0)
#define STEP_NORM1(a1, a2, c, x) a1 += LT_FN(fabs, (x))
#define STEP_NORM2(a1, a2, c, x) a1 += (ACCREAL)(x) * (x)
#define STEP_NORMP(a1, a2, c, x) a1 += pow(fabs((double)(x)), p)
#define STEP_NORMINF(a1, a2, c, x) a1 = LT_FN(fabs, (x)) > a1 ? LT_FN(fabs, (x)) : a1
/* var/std: sums of d = x - c and d^2, with c the first element of the slice
 * (shifting keeps the one-pass formula accurate). */
#define STEP_VAR(a1, a2, c, x) (a1 += (x) - c, a2 += ((x) - c) * ((x) - c))
/* Whole-tensor var/std: squared deviations from the mean (in mean_). */
#define STEP_DEV2(a1, a2, c, x) a1 += ((x) - mean_) * ((x) - mean_)

#define COMB_ADD(a, b) a += b
#define COMB_MUL(a, b) a *= b
#define COMB_MAX(a, b) a = (b) > (a) ? (b) : (a)
#define COMB_MIN(a, b) a = (b) < (a) ? (b) : (a)

/* Whole-tensor reduction into `total_` (type ACC_T) and the int `flag_`
 * (or-ed a2, used for NaNs). INIT may use `first_`, the first element of
 * the range being reduced. RED is the OpenMP reduction operator of STEP. */
#define REDUCE_ALL(T, ACC_T, RED, COMB, INIT, STEP)                                  \
  int64_t n_ = lt_tensor_nelement(T);                                                \
  ACC_T total_ = 0;                                                                  \
  int flag_ = 0;                                                                     \
  if (lt_tensor_is_contiguous(T)) {                                                  \
    const scalar_t *p_ = (const scalar_t *)lt_tensor_data(T);                        \
    ACC_T parts_[MAX_PARTS];                                                         \
    int flags_[MAX_PARTS];                                                           \
    int nparts_ = 1, nth_ = threads_for(n_);                                         \
    PRAGMA(omp parallel num_threads(nth_) if(nth_ > 1))                              \
    {                                                                                \
      int tid_ = LT_THREAD_ID(), k_ = LT_THREAD_COUNT();                                   \
      int64_t lo_ = n_ * tid_ / k_, hi_ = n_ * (tid_ + 1) / k_;                      \
      scalar_t first_ = p_[lo_ < n_ ? lo_ : 0];                                      \
      ACC_T a1 = (INIT);                                                             \
      int a2 = 0;                                                                    \
      (void)first_;                                                                  \
      PRAGMA(omp simd reduction(RED:a1) reduction(|:a2))                             \
      for (int64_t i_ = lo_; i_ < hi_; i_++) { scalar_t x = p_[i_]; STEP(a1, a2, c, x); } \
      parts_[tid_] = a1;                                                             \
      flags_[tid_] = a2;                                                             \
      if (tid_ == 0) nparts_ = k_;                                                   \
    }                                                                                \
    total_ = parts_[0];                                                              \
    flag_ = flags_[0];                                                               \
    for (int q_ = 1; q_ < nparts_; q_++) { COMB(total_, parts_[q_]); flag_ |= flags_[q_]; } \
  } else {                                                                           \
    lt_tensor tv_ = *(T);                                                            \
    lt_iter it_;                                                                     \
    lt_math_memory_order(&tv_, NULL, NULL);                                          \
    lt_iter_init(&it_, &tv_);                                                        \
    int started_ = 0;                                                                \
    while (!lt_iter_done(&it_)) {                                                    \
      int64_t m_ = it_.inner_left, s_ = it_.inner_stride;                            \
      const scalar_t *p_ = (const scalar_t *)it_.ptr;                                \
      scalar_t first_ = p_[0];                                                       \
      ACC_T a1 = (INIT);                                                             \
      int a2 = 0;                                                                    \
      (void)first_;                                                                  \
      PRAGMA(omp simd reduction(RED:a1) reduction(|:a2))                             \
      for (int64_t i_ = 0; i_ < m_; i_++) { scalar_t x = p_[i_ * s_]; STEP(a1, a2, c, x); } \
      if (started_) { COMB(total_, a1); } else { total_ = a1; started_ = 1; }        \
      flag_ |= a2;                                                                   \
      lt_iter_advance(&it_, m_);                                                     \
    }                                                                                \
  }

/* Reduction of T along DIM into R (R already has T's sizes with DIM = 1).
 * INIT and SHIFT may use p_, the start of the output's slice; FINAL uses a1,
 * a2 and N_. Every output folds its slice in order, first element to last, as
 * TH did (Torch7's own tests compare y:sum(d) and y:prod(d) bit for bit with
 * a loop of adds or multiplies), so no SIMD reduction within a slice: a block
 * of neighbouring outputs is folded side by side, one element of each per
 * step, in accumulators on the stack. When the reduced dimension has the
 * larger stride the block is wide and memory is read in its own order (whole
 * rows added into the accumulators); otherwise (a contiguous row per output)
 * it is ROW_GROUP outputs, independent chains that keep the adder busy. */
#define ROW_GROUP 8
#define REDUCE_DIM(R, T, DIM, ACC_T, INIT, SHIFT, STEP, FINAL)                       \
  do {                                                                               \
    lt_tensor slice_ = *(T), rv_ = *(R);                                             \
    slice_.size[DIM] = 1;                                                            \
    const int64_t N_ = (T)->size[DIM], sd_ = (T)->stride[DIM];                       \
    lt_iter is_, ir_;                                                                \
    lt_math_memory_order(&slice_, &rv_, NULL);                                       \
    lt_iter_init(&is_, &slice_);                                                     \
    lt_iter_init(&ir_, &rv_);                                                        \
    while (!lt_iter_done(&is_)) {                                                    \
      int64_t m_ = lt_iter_run(&is_, &ir_, NULL);                                    \
      const scalar_t *src_ = (const scalar_t *)is_.ptr;                              \
      scalar_t *dst_ = (scalar_t *)ir_.ptr;                                          \
      int64_t ss_ = is_.inner_stride, ds_ = ir_.inner_stride;                        \
      int64_t lt_par_n = m_ * N_;                                                    \
      int64_t bw_ = m_ == 1 || sd_ <= ss_ ? ROW_GROUP : RED_BLOCK;                   \
      int64_t nb_ = (m_ + bw_ - 1) / bw_;                                            \
      LT_PARALLEL_FOR                                                                \
      for (int64_t b_ = 0; b_ < nb_; b_++) {                                         \
        int64_t j0_ = b_ * bw_, w_ = m_ - j0_ < bw_ ? m_ - j0_ : bw_;                \
        ACC_T A1_[RED_BLOCK], A2_[RED_BLOCK], C_[RED_BLOCK];                         \
        (void)C_;                                                                    \
        for (int64_t q_ = 0; q_ < w_; q_++) {                                        \
          const scalar_t *p_ = src_ + (j0_ + q_) * ss_;                              \
          (void)p_;                                                                  \
          A1_[q_] = (INIT);                                                          \
          A2_[q_] = 0;                                                               \
          C_[q_] = (SHIFT);                                                          \
        }                                                                            \
        int64_t k_ = 0;                                                              \
        if (ss_ == 1) {                                                              \
          /* four rows per sweep: a quarter of the accumulator traffic */            \
          for (; k_ + 4 <= N_; k_ += 4) {                                            \
            const scalar_t *r0_ = src_ + k_ * sd_ + j0_, *r1_ = r0_ + sd_;           \
            const scalar_t *r2_ = r1_ + sd_, *r3_ = r2_ + sd_;                       \
            PRAGMA(omp simd)                                                         \
            for (int64_t q_ = 0; q_ < w_; q_++) {                                    \
              STEP(A1_[q_], A2_[q_], C_[q_], r0_[q_]);                               \
              STEP(A1_[q_], A2_[q_], C_[q_], r1_[q_]);                               \
              STEP(A1_[q_], A2_[q_], C_[q_], r2_[q_]);                               \
              STEP(A1_[q_], A2_[q_], C_[q_], r3_[q_]);                               \
            }                                                                        \
          }                                                                          \
        }                                                                            \
        for (; k_ < N_; k_++) {                                                      \
          const scalar_t *row_ = src_ + k_ * sd_ + j0_ * ss_;                        \
          if (ss_ == 1) {                                                            \
            PRAGMA(omp simd)                                                         \
            for (int64_t q_ = 0; q_ < w_; q_++) { scalar_t x = row_[q_]; STEP(A1_[q_], A2_[q_], C_[q_], x); } \
          } else {                                                                   \
            for (int64_t q_ = 0; q_ < w_; q_++) {                                    \
              scalar_t x = row_[q_ * ss_];                                           \
              STEP(A1_[q_], A2_[q_], C_[q_], x);                                     \
            }                                                                        \
          }                                                                          \
        }                                                                            \
        for (int64_t q_ = 0; q_ < w_; q_++) {                                        \
          ACC_T a1 = A1_[q_], a2 = A2_[q_];                                          \
          (void)a2;                                                                  \
          dst_[(j0_ + q_) * ds_] = (scalar_t)(FINAL);                                \
        }                                                                            \
      }                                                                              \
      lt_iter_advance(&is_, m_);                                                     \
      lt_iter_advance(&ir_, m_);                                                     \
    }                                                                                \
  } while (0)

static const char *red_names[] = {"sum", "prod", "mean", "var", "std", "norm", "max", "min"};

static int check_op(int op, const lt_tensor *t) {
  if (op < 0 || op > LT_RED_MIN) return lt_fail("unknown reduction %d", op);
  if ((op == LT_RED_MEAN || op == LT_RED_VAR || op == LT_RED_STD || op == LT_RED_NORM) && lt_host_type(t->type) != LT_FLOAT &&
      lt_host_type(t->type) != LT_DOUBLE)
    return lt_fail("%s: only defined for FloatTensor and DoubleTensor, got %sTensor", red_names[op],
                   lt_type_name(t->type));
  return 0;
}

/* var from the shifted sums: (sum d^2 - (sum d)^2 / n) / (n or n - 1). */
static double var_of(double s1, double s2, int64_t n, int biased) {
  double v = (s2 - s1 * s1 / (double)n) / (double)(biased ? n : n - 1);
  return v < 0 ? 0 : v;
}

static double norm_root(double s, double p) {
  if (p == 0 || isinf(p)) return s;
  if (p == 1) return s;
  if (p == 2) return sqrt(s);
  return pow(s, 1.0 / p);
}

int lt_math_reduce_all(const lt_tensor *t, int op, double p, int biased, double *out) {
  if (check_op(op, t) != 0) return -1;
  int64_t n = lt_tensor_nelement(t);
  if (n == 0) {
    switch (op) {
      case LT_RED_SUM: case LT_RED_NORM: *out = 0; return 0;
      case LT_RED_PROD: *out = 1; return 0;
      case LT_RED_MEAN: case LT_RED_VAR: case LT_RED_STD: *out = NAN; return 0;
      default: return lt_fail("%s: the tensor is empty", red_names[op]);
    }
  }
  LT_DISPATCH(t->type, {
    typedef ACCREAL acc_t;
    switch (op) {
      case LT_RED_SUM: case LT_RED_MEAN: {
        REDUCE_ALL(t, acc_t, +, COMB_ADD, 0, STEP_SUM);
        *out = op == LT_RED_SUM ? (double)total_ : (double)total_ / (double)n_;
        (void)flag_;
        break;
      }
      case LT_RED_PROD: {
        REDUCE_ALL(t, acc_t, *, COMB_MUL, 1, STEP_PROD);
        *out = (double)total_;
        (void)flag_;
        break;
      }
      case LT_RED_MAX: {
        REDUCE_ALL(t, scalar_t, max, COMB_MAX, first_, STEP_NAN_MAX);
        *out = flag_ ? NAN : (double)total_;
        break;
      }
      case LT_RED_MIN: {
        REDUCE_ALL(t, scalar_t, min, COMB_MIN, first_, STEP_NAN_MIN);
        *out = flag_ ? NAN : (double)total_;
        break;
      }
      case LT_RED_VAR: case LT_RED_STD: {
        /* Two passes: the mean, then the squared deviations from it. */
        double mean;
        {
          REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_SUM);
          mean = total_ / (double)n_;
          (void)flag_;
        }
        const double mean_ = mean;
        REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_DEV2);
        (void)flag_;
        double v = n_ > 1 || biased ? total_ / (double)(biased ? n_ : n_ - 1) : NAN;
        *out = op == LT_RED_VAR ? v : sqrt(v);
        break;
      }
      case LT_RED_NORM: {
        double s;
        if (p == 0) { REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_NORM0); s = total_; (void)flag_; }
        else if (p == 1) { REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_NORM1); s = total_; (void)flag_; }
        else if (p == 2) { REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_NORM2); s = total_; (void)flag_; }
        else if (isinf(p)) { REDUCE_ALL(t, double, max, COMB_MAX, 0, STEP_NORMINF); s = total_; (void)flag_; }
        else { REDUCE_ALL(t, double, +, COMB_ADD, 0, STEP_NORMP); s = total_; (void)flag_; }
        *out = norm_root(s, p);
        break;
      }
    }
  });
  *out = lt_number(*out);
  return 0;
}

/* Checks dim and gives r t's sizes with dimension dim of size 1. */
static int prepare_dim(lt_tensor *r, const lt_tensor *t, int dim, const char *fname) {
  if (dim < 0 || dim >= t->ndim)
    return lt_fail("%s: dimension %d out of range of %dD tensor", fname, dim + 1, t->ndim);
  int64_t size[LT_MAXDIM];
  for (int d = 0; d < t->ndim; d++) size[d] = t->size[d];
  size[dim] = 1;
  int same = r->ndim == t->ndim;
  for (int d = 0; same && d < t->ndim; d++) same = r->size[d] == size[d];
  return same ? 0 : lt_tensor_resize(r, t->ndim, size);
}

int lt_math_reduce_dim(lt_tensor *r, const lt_tensor *t, int dim, int op, double p, int biased) {
  if (check_op(op, t) != 0) return -1;
  if (op == LT_RED_MAX || op == LT_RED_MIN) return lt_fail("%s: use lt_math_maxmin_dim", red_names[op]);
  if (lt_math_check_type(r, t->type, red_names[op], "result") != 0) return -1;
  if (prepare_dim(r, t, dim, red_names[op]) != 0) return -1;
  LT_DISPATCH(t->type, {
    typedef ACCREAL acc_t;
    switch (op) {
      case LT_RED_SUM: REDUCE_DIM(r, t, dim, acc_t, 0, 0, STEP_SUM, a1); break;
      case LT_RED_MEAN: REDUCE_DIM(r, t, dim, acc_t, 0, 0, STEP_SUM, a1 / (acc_t)N_); break;
      case LT_RED_PROD: REDUCE_DIM(r, t, dim, acc_t, 1, 0, STEP_PROD, a1); break;
      case LT_RED_VAR:
        REDUCE_DIM(r, t, dim, double, 0, p_[0], STEP_VAR, N_ > 1 || biased ? var_of(a1, a2, N_, biased) : NAN);
        break;
      case LT_RED_STD:
        REDUCE_DIM(r, t, dim, double, 0, p_[0], STEP_VAR,
                   N_ > 1 || biased ? sqrt(var_of(a1, a2, N_, biased)) : NAN);
        break;
      case LT_RED_NORM:
        if (p == 0) REDUCE_DIM(r, t, dim, double, 0, 0, STEP_NORM0, a1);
        else if (p == 1) REDUCE_DIM(r, t, dim, double, 0, 0, STEP_NORM1, a1);
        else if (p == 2) REDUCE_DIM(r, t, dim, double, 0, 0, STEP_NORM2, sqrt(a1));
        else if (isinf(p)) REDUCE_DIM(r, t, dim, double, 0, 0, STEP_NORMINF, a1);
        else REDUCE_DIM(r, t, dim, double, 0, 0, STEP_NORMP, pow(a1, 1.0 / p));
        break;
    }
  });
  return 0;
}

/* Max/min along dim with 1-based indices. Ties keep the first position; a
 * NaN wins and the first NaN's index is returned (numpy's and TH's rule). */
#define BETTER(x, best) (best == best && (want_max ? !((x) <= best) : !((x) >= best)))

int lt_math_maxmin_dim(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim, int want_max) {
  const char *fname = want_max ? "max" : "min";
  if (lt_math_check_type(values, t->type, fname, "values") != 0 ||
      lt_math_check_type(indices, LT_LONG, fname, "indices") != 0)
    return -1;
  if (prepare_dim(values, t, dim, fname) != 0 || prepare_dim(indices, t, dim, fname) != 0) return -1;
  LT_DISPATCH(t->type, {
    lt_tensor slice = *t, vv = *values, iv_ = *indices;
    slice.size[dim] = 1;
    const int64_t N = t->size[dim], sd = t->stride[dim];
    lt_iter is, iv, ii;
    lt_math_memory_order(&slice, &vv, &iv_);
    lt_iter_init(&is, &slice);
    lt_iter_init(&iv, &vv);
    lt_iter_init(&ii, &iv_);
    while (!lt_iter_done(&is)) {
      int64_t m = lt_iter_run(&is, &iv, &ii);
      const scalar_t *src = (const scalar_t *)is.ptr;
      scalar_t *val = (scalar_t *)iv.ptr;
      int64_t *idx = (int64_t *)ii.ptr;
      int64_t ss = is.inner_stride, vs = iv.inner_stride, xs = ii.inner_stride;
      int64_t lt_par_n = m * N;
      if (m == 1 || sd <= ss) {
        LT_PARALLEL_FOR
        for (int64_t j = 0; j < m; j++) {
          const scalar_t *p = src + j * ss;
          scalar_t best = p[0];
          int64_t at = 0;
          if (sd == 1) {
            /* vectorized: the extreme value (and whether there is a NaN),
             * then the first position holding it */
            int nan = 0;
            if (want_max) {
              PRAGMA(omp simd reduction(max:best) reduction(|:nan))
              for (int64_t k = 0; k < N; k++) { nan |= p[k] != p[k]; best = p[k] > best ? p[k] : best; }
            } else {
              PRAGMA(omp simd reduction(min:best) reduction(|:nan))
              for (int64_t k = 0; k < N; k++) { nan |= p[k] != p[k]; best = p[k] < best ? p[k] : best; }
            }
            if (nan) {
              while (p[at] == p[at]) at++;
            } else {
              while (p[at] != best) at++;
            }
            best = p[at];  /* of the two zeros, the first one's sign */
          } else {
            for (int64_t k = 1; k < N; k++) {
              scalar_t x = p[k * sd];
              if (BETTER(x, best)) { best = x; at = k; }
            }
          }
          val[j * vs] = best;
          idx[j * xs] = at + 1;
        }
      } else {
        int64_t nb = (m + RED_BLOCK - 1) / RED_BLOCK;
        LT_PARALLEL_FOR
        for (int64_t b = 0; b < nb; b++) {
          int64_t j0 = b * RED_BLOCK, w = m - j0 < RED_BLOCK ? m - j0 : RED_BLOCK;
          scalar_t best[RED_BLOCK];
          int64_t at[RED_BLOCK];
          for (int64_t q = 0; q < w; q++) { best[q] = src[(j0 + q) * ss]; at[q] = 0; }
          for (int64_t k = 1; k < N; k++) {
            const scalar_t *row = src + k * sd + j0 * ss;
            for (int64_t q = 0; q < w; q++) {
              scalar_t x = row[q * ss];
              if (BETTER(x, best[q])) { best[q] = x; at[q] = k; }
            }
          }
          for (int64_t q = 0; q < w; q++) { val[(j0 + q) * vs] = best[q]; idx[(j0 + q) * xs] = at[q] + 1; }
        }
      }
      lt_iter_advance(&is, m);
      lt_iter_advance(&iv, m);
      lt_iter_advance(&ii, m);
    }
  });
  return 0;
}
