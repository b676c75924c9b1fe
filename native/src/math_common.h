/* Helpers shared by the math_*.c kernels: argument checks, result
 * preparation, scalar conversion and the element-wise loop templates. */
#ifndef LT_MATH_COMMON_H
#define LT_MATH_COMMON_H

#include "lt_internal.h"

/* "[2 x 3]" into buf (for error messages). */
const char *lt_math_shape(const lt_tensor *t, char *buf, size_t len);

/* Fails unless t has type `type` (what: the argument's name). */
int lt_math_check_type(const lt_tensor *t, int type, const char *fname, const char *what);

/* Fails with TH's "inconsistent tensor size" message unless a and b have
 * the same number of elements. */
int lt_math_check_numel(const char *fname, const lt_tensor *a, const char *an, const lt_tensor *b,
                        const char *bn);

/* TH's resizeAs: give r t's sizes, keeping r (and its strides) when it already
 * has them. r and t must have equal types unless any_type. */
int lt_math_resize_as(lt_tensor *r, const lt_tensor *t);

/* Element-wise kernels are free to visit elements in any order: when the
 * views (local copies) have one shape, reorder their dimensions alike so
 * that iteration follows a's memory order (a transposed tensor is then walked
 * in memory order, not with a large inner stride). b and c may be NULL;
 * views of different shapes are left in row-major order. */
void lt_math_memory_order(lt_tensor *a, lt_tensor *b, lt_tensor *c);

/* Scalars become the element type the way TH's `real` arguments did; going
 * through int64 makes out-of-range values wrap instead of being undefined. */
#define LT_SCALAR(T, v) ((T)0.5 != 0 ? (T)(v) : (T)(int64_t)(v))
#define LT_IS_FLOAT(T) ((T)0.5 != 0)

/* The float or double version of a libm function, chosen by x's type (integer
 * instantiations compile with the double version and are never run). */
#define LT_FN(name, x) _Generic((x), float: name##f, default: name)(x)
#define LT_FN2(name, x, y) _Generic((x), float: name##f, default: name)((x), (y))

/* Integer division and remainders that cannot trap: x / 0 records the error
 * in `zerodiv` (reported after the loop) and gives 0; x / -1 negates without
 * the INT_MIN overflow trap. */
#define LT_IDIV(x, y) \
  ((y) == 0 ? (lt_math_zerodiv = 1, 0) : (y) == -1 ? (int64_t)(0 - (uint64_t)(x)) : (int64_t)(x) / (int64_t)(y))
#define LT_IMOD(x, y) ((y) == 0 ? (lt_math_zerodiv = 1, 0) : (y) == -1 ? 0 : (int64_t)(x) % (int64_t)(y))

/* ---- element-wise loop templates ----
 * Used inside LT_DISPATCH (scalar_t is the element type). EXPR may use x (the
 * element of A) and y (of B). A contiguous run is one flat loop the compiler
 * vectorizes (OpenMP-parallel past LT_OMP_THRESHOLD); anything else walks the
 * tensors with lt_iter. The lt_math_zerodiv flag is a reduction so integer
 * division by zero is reported whichever thread meets it. */
#define LT_MAP2(R, A, EXPR)                                                          \
  do {                                                                               \
    int64_t n_ = lt_tensor_nelement(R);                                              \
    if (lt_tensor_is_contiguous(R) && lt_tensor_is_contiguous(A)) {                  \
      scalar_t *r_ = (scalar_t *)lt_tensor_data(R);                                  \
      const scalar_t *a_ = (const scalar_t *)lt_tensor_data(A);                      \
      int64_t lt_par_n = n_;                                                         \
      _Pragma("omp parallel for schedule(static) reduction(|:lt_math_zerodiv) if(lt_par_n >= 32768)") \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                          \
        scalar_t x = a_[i_];                                                         \
        r_[i_] = (scalar_t)(EXPR);                                                   \
      }                                                                              \
    } else {                                                                         \
      lt_tensor rv_ = *(R), av_ = *(A);                                              \
      lt_iter ir_, ia_;                                                              \
      lt_math_memory_order(&rv_, &av_, NULL);                                        \
      lt_iter_init(&ir_, &rv_);                                                      \
      lt_iter_init(&ia_, &av_);                                                      \
      while (!lt_iter_done(&ir_)) {                                                  \
        int64_t m_ = lt_iter_run(&ir_, &ia_, NULL);                                  \
        scalar_t *r_ = (scalar_t *)ir_.ptr;                                          \
        const scalar_t *a_ = (const scalar_t *)ia_.ptr;                              \
        int64_t rs_ = ir_.inner_stride, as_ = ia_.inner_stride;                      \
        for (int64_t i_ = 0; i_ < m_; i_++) {                                        \
          scalar_t x = a_[i_ * as_];                                                 \
          r_[i_ * rs_] = (scalar_t)(EXPR);                                           \
        }                                                                            \
        lt_iter_advance(&ir_, m_);                                                   \
        lt_iter_advance(&ia_, m_);                                                   \
      }                                                                              \
    }                                                                                \
  } while (0)

/* In LT_MAP3, LT_Z is R's current element (for updates in place). */
#define LT_Z (*zp_)
#define LT_MAP3(R, A, B, EXPR)                                                       \
  do {                                                                               \
    int64_t n_ = lt_tensor_nelement(R);                                              \
    if (lt_tensor_is_contiguous(R) && lt_tensor_is_contiguous(A) && lt_tensor_is_contiguous(B)) { \
      scalar_t *r_ = (scalar_t *)lt_tensor_data(R);                                  \
      const scalar_t *a_ = (const scalar_t *)lt_tensor_data(A);                      \
      const scalar_t *b_ = (const scalar_t *)lt_tensor_data(B);                      \
      int64_t lt_par_n = n_;                                                         \
      _Pragma("omp parallel for schedule(static) reduction(|:lt_math_zerodiv) if(lt_par_n >= 32768)") \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                          \
        scalar_t x = a_[i_], y = b_[i_], *zp_ = r_ + i_;                             \
        (void)zp_;                                                                   \
        r_[i_] = (scalar_t)(EXPR);                                                   \
      }                                                                              \
    } else {                                                                         \
      lt_tensor rv_ = *(R), av_ = *(A), bv_ = *(B);                                  \
      lt_iter ir_, ia_, ib_;                                                         \
      lt_math_memory_order(&rv_, &av_, &bv_);                                        \
      lt_iter_init(&ir_, &rv_);                                                      \
      lt_iter_init(&ia_, &av_);                                                      \
      lt_iter_init(&ib_, &bv_);                                                      \
      while (!lt_iter_done(&ir_)) {                                                  \
        int64_t m_ = lt_iter_run(&ir_, &ia_, &ib_);                                  \
        scalar_t *r_ = (scalar_t *)ir_.ptr;                                          \
        const scalar_t *a_ = (const scalar_t *)ia_.ptr;                              \
        const scalar_t *b_ = (const scalar_t *)ib_.ptr;                              \
        int64_t rs_ = ir_.inner_stride, as_ = ia_.inner_stride, bs_ = ib_.inner_stride; \
        for (int64_t i_ = 0; i_ < m_; i_++) {                                        \
          scalar_t x = a_[i_ * as_], y = b_[i_ * bs_], *zp_ = r_ + i_ * rs_;         \
          (void)zp_;                                                                 \
          r_[i_ * rs_] = (scalar_t)(EXPR);                                           \
        }                                                                            \
        lt_iter_advance(&ir_, m_);                                                   \
        lt_iter_advance(&ia_, m_);                                                   \
        lt_iter_advance(&ib_, m_);                                                   \
      }                                                                              \
    }                                                                                \
  } while (0)

#endif
