/* Unary element-wise functions and clamp. The transcendental and rounding
 * functions exist for FloatTensor and DoubleTensor only, as in Torch7; neg,
 * abs and sign work on every type. */
#include "math_common.h"

static const char *unop_names[] = {"neg", "abs", "sign", "sqrt", "rsqrt", "exp", "log", "log1p", "tanh",
                                   "sigmoid", "floor", "ceil", "round", "trunc", "frac", "cinv", "sin", "cos",
                                   "tan", "asin", "acos", "atan", "sinh", "cosh", "expm1"};

const char *lt_math_unop_name(int op) {
  return op >= 0 && op <= LT_UN_EXPM1 ? unop_names[op] : "?";
}

int lt_math_unary(lt_tensor *r, const lt_tensor *t, int op) {
  const char *fname = lt_math_unop_name(op);
  if (op < 0 || op > LT_UN_EXPM1) return lt_fail("unknown unary operation %d", op);
  if (op >= LT_UN_SQRT && lt_host_type(t->type) != LT_FLOAT && lt_host_type(t->type) != LT_DOUBLE)
    return lt_fail("%s: only defined for FloatTensor and DoubleTensor, got %sTensor", fname, lt_type_name(t->type));
  if (lt_math_check_type(t, r->type, fname, "source") != 0 || lt_math_resize_as(r, t) != 0) return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  LT_DISPATCH(t->type, {
    const scalar_t one = 1;
    switch (op) {
      case LT_UN_NEG: LT_MAP2(r, t, -x); break;
      case LT_UN_ABS: LT_MAP2(r, t, x < 0 ? -x : x); break;
      case LT_UN_SIGN: LT_MAP2(r, t, (x > 0) - (x < 0)); break;
      case LT_UN_SQRT: LT_MAP2(r, t, LT_FN(sqrt, x)); break;
      case LT_UN_RSQRT: LT_MAP2(r, t, one / LT_FN(sqrt, x)); break;
      case LT_UN_EXP: LT_MAP2(r, t, LT_FN(exp, x)); break;
      case LT_UN_LOG: LT_MAP2(r, t, LT_FN(log, x)); break;
      case LT_UN_LOG1P: LT_MAP2(r, t, LT_FN(log1p, x)); break;
      case LT_UN_TANH: LT_MAP2(r, t, LT_FN(tanh, x)); break;
      case LT_UN_SIGMOID: LT_MAP2(r, t, one / (one + LT_FN(exp, -x))); break;
      case LT_UN_FLOOR: LT_MAP2(r, t, LT_FN(floor, x)); break;
      case LT_UN_CEIL: LT_MAP2(r, t, LT_FN(ceil, x)); break;
      case LT_UN_ROUND: LT_MAP2(r, t, LT_FN(round, x)); break;  /* halves away from zero, as TH */
      case LT_UN_TRUNC: LT_MAP2(r, t, LT_FN(trunc, x)); break;
      case LT_UN_FRAC: LT_MAP2(r, t, x - LT_FN(trunc, x)); break;
      case LT_UN_CINV: LT_MAP2(r, t, one / x); break;
      case LT_UN_SIN: LT_MAP2(r, t, LT_FN(sin, x)); break;
      case LT_UN_COS: LT_MAP2(r, t, LT_FN(cos, x)); break;
      case LT_UN_TAN: LT_MAP2(r, t, LT_FN(tan, x)); break;
      case LT_UN_ASIN: LT_MAP2(r, t, LT_FN(asin, x)); break;
      case LT_UN_ACOS: LT_MAP2(r, t, LT_FN(acos, x)); break;
      case LT_UN_ATAN: LT_MAP2(r, t, LT_FN(atan, x)); break;
      case LT_UN_SINH: LT_MAP2(r, t, LT_FN(sinh, x)); break;
      case LT_UN_COSH: LT_MAP2(r, t, LT_FN(cosh, x)); break;
      case LT_UN_EXPM1: LT_MAP2(r, t, LT_FN(expm1, x)); break;
    }
  });
  return 0;
}

int lt_math_clamp(lt_tensor *r, const lt_tensor *t, double lo, double hi) {
  if (lt_math_check_type(t, r->type, "clamp", "source") != 0 || lt_math_resize_as(r, t) != 0) return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  LT_DISPATCH(t->type, {
    const scalar_t a = LT_SCALAR(scalar_t, lo), b = LT_SCALAR(scalar_t, hi);
    LT_MAP2(r, t, x < a ? a : (x > b ? b : x));
  });
  return 0;
}
