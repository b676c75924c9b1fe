/* Helpers shared by the math_*.c kernels: argument checks, result
 * preparation, scalar conversion and the element-wise loop templates. */
#ifndef LT_MATH_COMMON_H
#define LT_MATH_COMMON_H

#include "lt_internal.h"

/* "[2 x 3]" into buf (for error messages). */

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

#ifdef _OPENMP
#define LT_THREAD_ID() omp_get_thread_num()
#define LT_THREAD_COUNT() omp_get_num_threads()
#else
#define LT_THREAD_ID() 0
#define LT_THREAD_COUNT() 1
#endif

/* Position a freshly initialized iterator at element e (row-major order of
 * its view), so threads can each walk one range of a strided tensor. */
void lt_math_iter_seek(lt_iter *it, int64_t e);

/* ---- element-wise loop templates ----
 * Used inside LT_DISPATCH (scalar_t is the element type); the enclosing
 * function declares `int lt_math_zerodiv`, a reduction flag so that integer
 * division by zero is reported whichever thread meets it. */

/* Walk three views of equal element count (pass one twice when there are
 * two) as strided runs, in the first view's memory order when the shapes
 * agree, the range split among threads past LT_OMP_THRESHOLD. The body sees
 * m_ (run length), p0_, p1_, p2_ (char pointers) and s0_, s1_, s2_ (strides
 * in elements). */
#define LT_WALK3(V0, V1, V2, ...)                                                    \
  do {                                                                               \
    lt_tensor w0_ = *(V0), w1_ = *(V1), w2_ = *(V2);                                 \
    int64_t wn_ = lt_tensor_nelement(&w0_);                                          \
    lt_math_memory_order(&w0_, &w1_, &w2_);                                          \
    int64_t lt_par_n = wn_;                                                          \
    _Pragma("omp parallel reduction(|:lt_math_zerodiv) if(lt_par_n >= 32768)")       \
    {                                                                                \
      int64_t k_ = LT_THREAD_COUNT(), t_ = LT_THREAD_ID();                           \
      int64_t lo_ = wn_ * t_ / k_, left_ = wn_ * (t_ + 1) / k_ - lo_;                \
      lt_iter i0_, i1_, i2_;                                                         \
      lt_iter_init(&i0_, &w0_);                                                      \
      lt_iter_init(&i1_, &w1_);                                                      \
      lt_iter_init(&i2_, &w2_);                                                      \
      lt_math_iter_seek(&i0_, lo_);                                                  \
      lt_math_iter_seek(&i1_, lo_);                                                  \
      lt_math_iter_seek(&i2_, lo_);                                                  \
      while (left_ > 0) {                                                            \
        int64_t m_ = lt_iter_run(&i0_, &i1_, &i2_);                                  \
        if (m_ > left_) m_ = left_;                                                  \
        char *p0_ = i0_.ptr, *p1_ = i1_.ptr, *p2_ = i2_.ptr;                         \
        int64_t s0_ = i0_.inner_stride, s1_ = i1_.inner_stride, s2_ = i2_.inner_stride; \
        (void)p2_;                                                                   \
        (void)s2_;                                                                   \
        __VA_ARGS__;                                                                 \
        lt_iter_advance(&i0_, m_);                                                   \
        lt_iter_advance(&i1_, m_);                                                   \
        lt_iter_advance(&i2_, m_);                                                   \
        left_ -= m_;                                                                 \
      }                                                                              \
    }                                                                                \
  } while (0)

/* R = EXPR over A: EXPR may use x (the element of A). Contiguous views are
 * one flat loop the compiler vectorizes (OpenMP-parallel past
 * LT_OMP_THRESHOLD); others go through LT_WALK3. */
#define LT_MAP2(R, A, EXPR)                                                          \
  do {                                                                               \
    if (lt_tensor_is_contiguous(R) && lt_tensor_is_contiguous(A)) {                  \
      int64_t n_ = lt_tensor_nelement(R);                                            \
      scalar_t *r_ = (scalar_t *)lt_tensor_data(R);                                  \
      const scalar_t *a_ = (const scalar_t *)lt_tensor_data(A);                      \
      int64_t lt_par_n = n_;                                                         \
      _Pragma("omp parallel for schedule(static) reduction(|:lt_math_zerodiv) if(lt_par_n >= 32768)") \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                          \
        scalar_t x = a_[i_];                                                         \
        r_[i_] = (scalar_t)(EXPR);                                                   \
      }                                                                              \
    } else {                                                                         \
      LT_WALK3(R, A, A, {                                                            \
        scalar_t *r_ = (scalar_t *)p0_;                                              \
        const scalar_t *a_ = (const scalar_t *)p1_;                                  \
        for (int64_t i_ = 0; i_ < m_; i_++) {                                        \
          scalar_t x = a_[i_ * s1_];                                                 \
          r_[i_ * s0_] = (scalar_t)(EXPR);                                           \
        }                                                                            \
      });                                                                            \
    }                                                                                \
  } while (0)

/* R = EXPR over A and B: EXPR may use x, y, and LT_Z, R's current element
 * (for updates in place). */
#define LT_Z (*zp_)
#define LT_MAP3(R, A, B, EXPR)                                                       \
  do {                                                                               \
    if (lt_tensor_is_contiguous(R) && lt_tensor_is_contiguous(A) && lt_tensor_is_contiguous(B)) { \
      int64_t n_ = lt_tensor_nelement(R);                                            \
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
      LT_WALK3(R, A, B, {                                                            \
        scalar_t *r_ = (scalar_t *)p0_;                                              \
        const scalar_t *a_ = (const scalar_t *)p1_;                                  \
        const scalar_t *b_ = (const scalar_t *)p2_;                                  \
        for (int64_t i_ = 0; i_ < m_; i_++) {                                        \
          scalar_t x = a_[i_ * s1_], y = b_[i_ * s2_], *zp_ = r_ + i_ * s0_;         \
          (void)zp_;                                                                 \
          r_[i_ * s0_] = (scalar_t)(EXPR);                                           \
        }                                                                            \
      });                                                                            \
    }                                                                                \
  } while (0)

#endif
