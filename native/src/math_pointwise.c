/* Element-wise math: scalar and tensor operands, unary functions, clamp,
 * addcmul/addcdiv. All follow TH: the result is resized like the first
 * source, the arithmetic is done in the element type. */
#include "math_common.h"

static int check_types(const char *fname, const lt_tensor *r, const lt_tensor *a, const lt_tensor *b) {
  if (lt_math_check_type(a, r->type, fname, "source") != 0) return -1;
  if (b && lt_math_check_type(b, r->type, fname, "source") != 0) return -1;
  return 0;
}

static int zerodiv_error(const char *fname) {
  return lt_fail("%s: integer division by zero", fname);
}

/* TH's remainder: the result has the sign of the divisor. */
#define FLOAT_REMAINDER(x, y) ((y) == 0 ? (scalar_t)NAN : (x) - (y) * LT_FN(floor, (x) / (y)))
#define INT_REMAINDER(x, y) \
  ((y) == 0 ? (lt_math_zerodiv = 1, 0) : (y) == -1 ? 0 : \
   (int64_t)(x) % (int64_t)(y) != 0 && (((int64_t)(x) % (int64_t)(y) < 0) != ((y) < 0)) \
     ? (int64_t)(x) % (int64_t)(y) + (y) : (int64_t)(x) % (int64_t)(y))
/* Integer powers go through double, as pow on any TH real did. */
#define POW(x, y) (LT_IS_FLOAT(scalar_t) ? LT_FN2(pow, (x), (y)) : (scalar_t)(int64_t)pow((double)(x), (double)(y)))

/* Bit shifts of integer elements: the bits of x as an unsigned number of
 * scalar_t's width (TH's `(unsigned real)x`), shifted; counts outside
 * [0, 63] give 0 instead of C's undefined behaviour. */
#define UBITS(x) ((uint64_t)(int64_t)(x) & (sizeof(scalar_t) >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * sizeof(scalar_t))) - 1))
#define SHIFT_OK(s) ((s) >= 0 && (s) < 64)
#define ILSHIFT(x, s) (SHIFT_OK(s) ? (scalar_t)(UBITS(x) << (int)(s)) : (scalar_t)0)
#define IRSHIFT(x, s) (SHIFT_OK(s) ? (scalar_t)(UBITS(x) >> (int)(s)) : (scalar_t)0)
/* Floating types scale by 2^s instead (TH). */
#define TWO_TO(s) LT_FN2(pow, (scalar_t)2, (s))

static int integer_only(const char *fname, int type) {
  if (lt_host_type(type) != LT_FLOAT && lt_host_type(type) != LT_DOUBLE) return 0;
  return lt_fail("%s is only supported for integer type tensors, got %sTensor", fname, lt_type_name(type));
}

static const char *binop_name(int op) {
  static const char *names[] = {"add", "sub", "mul", "div", "cmax", "cmin", "pow", "tpow", "fmod", "remainder",
                                "atan2", "lshift", "rshift", "bitand", "bitor", "bitxor"};
  return op >= 0 && op <= LT_OP_BITXOR ? names[op] : "?";
}

int lt_math_scalar(lt_tensor *r, const lt_tensor *t, int op, double value) {
  const char *fname = binop_name(op);
  if (op >= LT_OP_BITAND && integer_only(fname, t->type) != 0) return -1;
  if (check_types(fname, r, t, NULL) != 0 || lt_math_resize_as(r, t) != 0) return -1;
  int lt_math_zerodiv = 0;
  LT_DISPATCH(t->type, {
    const scalar_t v = LT_SCALAR(scalar_t, value);
    switch (op) {
      case LT_OP_ADD: LT_MAP2(r, t, x + v); break;
      case LT_OP_RSUB: LT_MAP2(r, t, v - x); break;
      case LT_OP_MUL: LT_MAP2(r, t, x * v); break;
      case LT_OP_DIV:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP2(r, t, x / v);
        else if (v == 0) return zerodiv_error("div");
        else LT_MAP2(r, t, LT_IDIV(x, v));
        break;
      case LT_OP_MAX: LT_MAP2(r, t, x > v ? x : v); break;
      case LT_OP_MIN: LT_MAP2(r, t, x < v ? x : v); break;
      case LT_OP_POW:
        if (LT_IS_FLOAT(scalar_t) && value == 2) LT_MAP2(r, t, x * x);
        else LT_MAP2(r, t, POW(x, v));
        break;
      case LT_OP_TPOW: LT_MAP2(r, t, POW(v, x)); break;
      case LT_OP_FMOD:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP2(r, t, LT_FN2(fmod, x, v));
        else LT_MAP2(r, t, LT_IMOD(x, v));
        break;
      case LT_OP_REMAINDER:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP2(r, t, FLOAT_REMAINDER(x, v));
        else LT_MAP2(r, t, INT_REMAINDER(x, v));
        break;
      case LT_OP_LSHIFT:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP2(r, t, x * TWO_TO(v));
        else LT_MAP2(r, t, ILSHIFT(x, v));
        break;
      case LT_OP_RSHIFT:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP2(r, t, x / TWO_TO(v));
        else LT_MAP2(r, t, IRSHIFT(x, v));
        break;
      /* (the float instantiations are never run: integer_only refused them) */
      case LT_OP_BITAND: LT_MAP2(r, t, (int64_t)x & (int64_t)v); break;
      case LT_OP_BITOR: LT_MAP2(r, t, (int64_t)x | (int64_t)v); break;
      case LT_OP_BITXOR: LT_MAP2(r, t, (int64_t)x ^ (int64_t)v); break;
      default: return lt_fail("unknown scalar operation %d", op);
    }
  });
  return lt_math_zerodiv ? zerodiv_error(fname) : 0;
}

int lt_math_binary(lt_tensor *r, const lt_tensor *a, int op, const lt_tensor *b) {
  static const char *cnames[] = {"cadd", "csub", "cmul", "cdiv", "cmax", "cmin", "cpow", "ctpow", "cfmod",
                                 "cremainder", "atan2", "clshift", "crshift", "cbitand", "cbitor", "cbitxor"};
  const char *fname = op >= 0 && op <= LT_OP_BITXOR ? cnames[op] : "?";
  if (op == LT_OP_ATAN2 && lt_host_type(a->type) != LT_FLOAT && lt_host_type(a->type) != LT_DOUBLE)
    return lt_fail("atan2: only defined for FloatTensor and DoubleTensor, got %sTensor", lt_type_name(a->type));
  if (op >= LT_OP_BITAND && integer_only(fname, a->type) != 0) return -1;
  if (check_types(fname, r, a, b) != 0 || lt_math_check_numel(fname, a, "tensor", b, "src") != 0 ||
      lt_math_resize_as(r, a) != 0)
    return -1;
  int lt_math_zerodiv = 0;
  LT_DISPATCH(a->type, {
    switch (op) {
      case LT_OP_ADD: LT_MAP3(r, a, b, x + y); break;
      case LT_OP_MUL: LT_MAP3(r, a, b, x * y); break;
      case LT_OP_DIV:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP3(r, a, b, x / y);
        else LT_MAP3(r, a, b, LT_IDIV(x, y));
        break;
      case LT_OP_MAX: LT_MAP3(r, a, b, x > y ? x : y); break;
      case LT_OP_MIN: LT_MAP3(r, a, b, x < y ? x : y); break;
      case LT_OP_POW: LT_MAP3(r, a, b, POW(x, y)); break;
      case LT_OP_FMOD:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP3(r, a, b, LT_FN2(fmod, x, y));
        else LT_MAP3(r, a, b, LT_IMOD(x, y));
        break;
      case LT_OP_REMAINDER:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP3(r, a, b, FLOAT_REMAINDER(x, y));
        else LT_MAP3(r, a, b, INT_REMAINDER(x, y));
        break;
      case LT_OP_ATAN2: LT_MAP3(r, a, b, LT_FN2(atan2, x, y)); break;
      case LT_OP_LSHIFT:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP3(r, a, b, x * TWO_TO(y));
        else LT_MAP3(r, a, b, ILSHIFT(x, y));
        break;
      case LT_OP_RSHIFT:
        if (LT_IS_FLOAT(scalar_t)) LT_MAP3(r, a, b, x / TWO_TO(y));
        else LT_MAP3(r, a, b, IRSHIFT(x, y));
        break;
      case LT_OP_BITAND: LT_MAP3(r, a, b, (int64_t)x & (int64_t)y); break;
      case LT_OP_BITOR: LT_MAP3(r, a, b, (int64_t)x | (int64_t)y); break;
      case LT_OP_BITXOR: LT_MAP3(r, a, b, (int64_t)x ^ (int64_t)y); break;
      default: return lt_fail("unknown element-wise operation %d", op);
    }
  });
  return lt_math_zerodiv ? zerodiv_error(fname) : 0;
}

int lt_math_cadd(lt_tensor *r, const lt_tensor *a, double value, const lt_tensor *b) {
  if (check_types("add", r, a, b) != 0 || lt_math_check_numel("add", a, "tensor", b, "src") != 0 ||
      lt_math_resize_as(r, a) != 0)
    return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  LT_DISPATCH(a->type, {
    const scalar_t v = LT_SCALAR(scalar_t, value);
    if (value == 1) LT_MAP3(r, a, b, x + y);
    else LT_MAP3(r, a, b, x + v * y);
  });
  return 0;
}

int lt_math_addc(lt_tensor *r, const lt_tensor *a, double value, const lt_tensor *b, int divide,
                 const lt_tensor *c) {
  const char *fname = divide ? "addcdiv" : "addcmul";
  if (check_types(fname, r, a, b) != 0 || check_types(fname, r, c, NULL) != 0 ||
      lt_math_check_numel(fname, b, "tensor1", c, "tensor2") != 0 ||
      lt_math_check_numel(fname, a, "tensor", b, "tensor1") != 0)
    return -1;
  /* As TH: r = copy of a, then r += value * b (op) c, which needs only three
   * tensors per loop. */
  if (r != a) {
    if (lt_math_resize_as(r, a) != 0 || lt_tensor_copy(r, a) != 0) return -1;
  }
  int lt_math_zerodiv = 0;
  LT_DISPATCH(a->type, {
    const scalar_t v = LT_SCALAR(scalar_t, value);
    if (!divide) {
      LT_MAP3(r, b, c, LT_Z + v * x * y);
    } else if (LT_IS_FLOAT(scalar_t)) {
      LT_MAP3(r, b, c, LT_Z + v * x / y);
    } else {
      LT_MAP3(r, b, c, LT_Z + LT_IDIV(v * x, y));
    }
  });
  return lt_math_zerodiv ? zerodiv_error(fname) : 0;
}

int lt_math_lerp(lt_tensor *r, const lt_tensor *a, const lt_tensor *b, double weight) {
  if (lt_host_type(a->type) != LT_FLOAT && lt_host_type(a->type) != LT_DOUBLE)
    return lt_fail("lerp: only defined for FloatTensor and DoubleTensor, got %sTensor", lt_type_name(a->type));
  if (check_types("lerp", r, a, b) != 0 || lt_math_check_numel("lerp", a, "tensor", b, "end") != 0 ||
      lt_math_resize_as(r, a) != 0)
    return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  LT_DISPATCH_FLOATING(a->type, "lerp", {
    const scalar_t w = (scalar_t)weight;
    LT_MAP3(r, a, b, x + w * (y - x));
  });
  return 0;
}
