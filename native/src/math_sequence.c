/* 1-D sequences: linspace, logspace, range (Torch7's inclusive range). */
#include "math_common.h"

/* TH resizes the result to 1-D only when its element count differs: a
 * result that already holds n elements (a 2x2 view for 4 points, say) keeps
 * its shape and strides and is filled in row-major order. */
static int prepare(lt_tensor *r, int64_t n) {
  if (lt_tensor_nelement(r) == n && (n == 0 || r->storage)) return 0;
  return lt_tensor_resize(r, 1, &n);
}

/* r's elements, in row-major order i = 0, 1, ..., become EXPR (of i),
 * written through r's strides. */
#define FILL_SEQ(R, EXPR)                                                      \
  do {                                                                         \
    lt_iter it_;                                                               \
    lt_iter_init(&it_, R);                                                     \
    int64_t i = 0;                                                             \
    while (!lt_iter_done(&it_)) {                                              \
      int64_t m_ = lt_iter_run(&it_, NULL, NULL);                              \
      scalar_t *p_ = (scalar_t *)it_.ptr;                                      \
      for (int64_t j_ = 0; j_ < m_; j_++, i++) p_[j_ * it_.inner_stride] = (scalar_t)(EXPR); \
      lt_iter_advance(&it_, m_);                                               \
    }                                                                          \
  } while (0)

static int spaced(lt_tensor *r, double a, double b, int64_t n, int logscale) {
  const char *fname = logscale ? "logspace" : "linspace";
  if (n < 1 || (n == 1 && a != b))
    return lt_fail("%s: invalid number of points %lld (2 or more, or 1 when the ends are equal)", fname, (long long)n);
  if (lt_host_type(r->type) != LT_FLOAT && lt_host_type(r->type) != LT_DOUBLE)
    return lt_fail("%s: only defined for FloatTensor and DoubleTensor, got %sTensor", fname, lt_type_name(r->type));
  if (prepare(r, n) != 0) return -1;
  double step = n > 1 ? (b - a) / (double)(n - 1) : 0;
  LT_DISPATCH_FLOATING(r->type, fname, {
    if (logscale) FILL_SEQ(r, pow(10.0, a + (double)i * step));
    else FILL_SEQ(r, a + (double)i * step);
  });
  return 0;
}

int lt_math_linspace(lt_tensor *r, double a, double b, int64_t n) { return spaced(r, a, b, n, 0); }
int lt_math_logspace(lt_tensor *r, double a, double b, int64_t n) { return spaced(r, a, b, n, 1); }

int lt_math_range(lt_tensor *r, double a, double b, double step) {
  if (step == 0) return lt_fail("range: step must be nonzero");
  if ((step > 0 && b < a) || (step < 0 && b > a))
    return lt_fail("range: upper bound and larger bound incoherent with step sign (%g to %g by %g)", a, b, step);
  int integer = lt_host_type(r->type) != LT_FLOAT && lt_host_type(r->type) != LT_DOUBLE;
  int64_t n;
  if (integer) {
    /* TH's accreal for integer types is long: the ends and step are integers. */
    int64_t ia = (int64_t)a, ib = (int64_t)b, is = (int64_t)step;
    if (is == 0) return lt_fail("range: step must be nonzero");
    n = (ib - ia) / is + 1;
  } else {
    n = (int64_t)((b - a) / step + 1);
  }
  if (prepare(r, n) != 0) return -1;
  LT_DISPATCH(r->type, {
    if (integer) FILL_SEQ(r, (int64_t)a + i * (int64_t)step);
    else FILL_SEQ(r, a + (double)i * step);
  });
  return 0;
}
