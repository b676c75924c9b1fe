/* Comparisons into ByteTensor masks (eq, ne, lt, le, gt, ge) and the
 * all/any tests. As in TH, a number is first converted to the element type. */
#include "math_common.h"

static const char *cmp_names[] = {"eq", "ne", "lt", "le", "gt", "ge"};

/* r (uint8) = EXPR(x, y) over a and b (b may be NULL: then y is the value). */
#define CMP_LOOP(R, A, B, EXPR)                                                        \
  do {                                                                                 \
    int64_t n_ = lt_tensor_nelement(R);                                                \
    int cont_ = lt_tensor_is_contiguous(R) && lt_tensor_is_contiguous(A) &&            \
                (!(B) || lt_tensor_is_contiguous(B));                                  \
    if (cont_) {                                                                       \
      uint8_t *r_ = (uint8_t *)lt_tensor_data(R);                                      \
      const scalar_t *a_ = (const scalar_t *)lt_tensor_data(A);                        \
      int64_t lt_par_n = n_;                                                           \
      if (B) {                                                                         \
        const scalar_t *b_ = (const scalar_t *)lt_tensor_data(B);                      \
        LT_PARALLEL_FOR                                                                \
        for (int64_t i_ = 0; i_ < n_; i_++) {                                          \
          scalar_t x = a_[i_], y = b_[i_];                                             \
          r_[i_] = (EXPR);                                                             \
        }                                                                              \
      } else {                                                                         \
        LT_PARALLEL_FOR                                                                \
        for (int64_t i_ = 0; i_ < n_; i_++) {                                          \
          scalar_t x = a_[i_], y = v;                                                  \
          r_[i_] = (EXPR);                                                             \
        }                                                                              \
      }                                                                                \
    } else {                                                                           \
      LT_WALK3(R, A, (B) ? (B) : (A), {                                                \
        uint8_t *r_ = (uint8_t *)p0_;                                                  \
        const scalar_t *a_ = (const scalar_t *)p1_;                                    \
        const scalar_t *b_ = (B) ? (const scalar_t *)p2_ : &v;                         \
        int64_t bs_ = (B) ? s2_ : 0;                                                   \
        for (int64_t i_ = 0; i_ < m_; i_++) {                                          \
          scalar_t x = a_[i_ * s1_], y = b_[i_ * bs_];                                 \
          r_[i_ * s0_] = (EXPR);                                                       \
        }                                                                              \
      });                                                                              \
    }                                                                                  \
  } while (0)

static int compare(lt_tensor *r, const lt_tensor *a, int op, const lt_tensor *b, double value) {
  if (op < 0 || op > LT_CMP_GE) return lt_fail("unknown comparison %d", op);
  const char *fname = cmp_names[op];
  if (lt_math_check_type(r, LT_BYTE, fname, "result") != 0) return -1;
  if (b && (lt_math_check_type(b, a->type, fname, "second operand") != 0 ||
            lt_math_check_numel(fname, a, "tensor", b, "src") != 0))
    return -1;
  if (lt_math_resize_as(r, a) != 0) return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  LT_DISPATCH(a->type, {
    const scalar_t v = LT_SCALAR(scalar_t, value);
    switch (op) {
      case LT_CMP_EQ: CMP_LOOP(r, a, b, x == y); break;
      case LT_CMP_NE: CMP_LOOP(r, a, b, x != y); break;
      case LT_CMP_LT: CMP_LOOP(r, a, b, x < y); break;
      case LT_CMP_LE: CMP_LOOP(r, a, b, x <= y); break;
      case LT_CMP_GT: CMP_LOOP(r, a, b, x > y); break;
      case LT_CMP_GE: CMP_LOOP(r, a, b, x >= y); break;
    }
  });
  return 0;
}

int lt_math_compare_value(lt_tensor *r, const lt_tensor *a, int op, double value) {
  return compare(r, a, op, NULL, value);
}

int lt_math_compare(lt_tensor *r, const lt_tensor *a, int op, const lt_tensor *b) {
  return compare(r, a, op, b, 0);
}

int lt_math_all_any(const lt_tensor *t, int any, int *out) {
  /* Stops at the first element that decides the answer. */
  int found = 0;
  LT_DISPATCH(t->type, {
    lt_iter it;
    lt_iter_init(&it, t);
    while (!found && !lt_iter_done(&it)) {
      int64_t m = it.inner_left;
      const scalar_t *p = (const scalar_t *)it.ptr;
      int64_t s = it.inner_stride;
      for (int64_t i = 0; i < m; i++)
        if ((p[i * s] != 0) == any) { found = 1; break; }
      lt_iter_advance(&it, m);
    }
  });
  *out = any ? found : !found;
  return 0;
}
