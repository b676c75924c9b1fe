/* compare.cu — comparisons into 0/1 masks, elementwise max/min, and filling where a mask is set.
 *
 * Strided operands as in pointwise.cu (lt_cu_tensor by value, all holding n elements, element i of each paired
 * with element i of the others; out may be the same tensor as x). Types: Byte, Char, Short, Int, Long, Float,
 * Double (no Half: the Cuda types have no Half tensor class). Grid-stride loops: any launch geometry.
 * A is lt_acc_t<T> (float for Float, double for Double, long long for the integer types).
 *
 *   lt_cmp_<T>_<idx>   (out, x, y, n, int op)   out (Byte) = x op y ? 1 : 0
 *   lt_cmps_<T>_<idx>  (out, x, n, A v, int op) out (Byte) = x op (T)v ? 1 : 0
 *       op numbered as lt_math.h's lt_cmpop: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge. A comparison with NaN is
 *       false, except ne (C's). The number is first converted to T (an integer type wraps: Byte's -1 is 255),
 *       as Torch7's comparisons with a number do.
 *   lt_binop_<T>_<idx> (out, x, y, n, int op)   out = f_op(x, y)
 *   lt_binops_<T>_<idx>(out, x, n, A v, int op) out = f_op(x, (T)v)
 *       op numbered as lt_math.h's lt_binop: 4 cmax (x > y ? x : y), 5 cmin (x < y ? x : y); both take the
 *       second operand when the comparison fails, so cmax(NaN, 1) = 1 and cmax(1, NaN) = NaN, as Torch7's.
 *       Any other op leaves x.
 *       6 cpow (pow(x, y); integer types through double, truncated), 7 tpow (pow(y, x): binops is pow(v, x)),
 *       8 fmod (C's fmod: the sign of x), 9 remainder (x - y * floor(x / y): the sign of y; NaN for y = 0 on the
 *       floating types), 10 atan2 (Float and Double: atan2(x, y)). Integer fmod and remainder give 0 for y = 0
 *       and y = -1 (the host refuses a zero divisor, as Torch7 raises an error there).
 *   lt_masked_fill_<T>_<idx>(out, mask, n, A v) out = v where mask (a Byte tensor) is not 0; other elements
 *       are not written.
 *   lt_tri_<T>_<idx>(out, x, n, q cols, q k, int upper)  tril/triu of a matrix with cols columns (n elements,
 *       row-major): out = x where (upper ? j - i >= k : j - i <= k) for element (i, j), else 0.
 * Float and Double only:
 *   lt_unop_<T>_<idx>(out, x, n, int op)          out = f_op(x), op numbered as lt_math.h's lt_unop: 7 log1p,
 *       10 floor, 11 ceil, 12 round (halves away from zero), 13 trunc, 14 frac (x - trunc(x)), 15 cinv (1 / x),
 *       16 sin, 17 cos, 18 tan, 19 asin, 20 acos, 21 atan, 22 sinh, 23 cosh, 24 expm1; any other op leaves x.
 *   lt_lerp_<T>_<idx>(out, x, y, n, A w)          out = x + w * (y - x), the product rounded before the sum.
 */
#include "lt_cuda_common.cuh"

/* the numbering of lt_math.h */
enum { LT_C_EQ = 0, LT_C_NE = 1, LT_C_LT = 2, LT_C_LE = 3, LT_C_GT = 4, LT_C_GE = 5 };
enum { LT_B_MAX = 4, LT_B_MIN = 5, LT_B_POW = 6, LT_B_TPOW = 7, LT_B_FMOD = 8, LT_B_REMAINDER = 9, LT_B_ATAN2 = 10 };
enum { LT_U_LOG1P = 7, LT_U_FLOOR = 10, LT_U_CEIL, LT_U_ROUND, LT_U_TRUNC, LT_U_FRAC, LT_U_CINV, LT_U_SIN, LT_U_COS,
       LT_U_TAN, LT_U_ASIN, LT_U_ACOS, LT_U_ATAN, LT_U_SINH, LT_U_COSH, LT_U_EXPM1 };

/* libm's functions on float and double (the f-suffixed one for float) */
#define LT_MATH1(name)                                          \
  LT_D float lt_u_##name(float x) { return name##f(x); }       \
  LT_D double lt_u_##name(double x) { return name(x); }
#define LT_MATH2(name)                                                   \
  LT_D float lt_u_##name(float x, float y) { return name##f(x, y); }    \
  LT_D double lt_u_##name(double x, double y) { return name(x, y); }
LT_MATH1(floor) LT_MATH1(ceil) LT_MATH1(round) LT_MATH1(trunc) LT_MATH1(sin) LT_MATH1(cos) LT_MATH1(tan)
LT_MATH1(asin) LT_MATH1(acos) LT_MATH1(atan) LT_MATH1(sinh) LT_MATH1(cosh) LT_MATH1(log1p) LT_MATH1(expm1)
LT_MATH2(fmod) LT_MATH2(atan2)

/* a product rounded on its own (no fused multiply-add), as the CPU kernels compute it */
#if defined(LT_SIMT_HOST)
LT_D float lt_mul_rn(float a, float b) { return a * b; }
LT_D double lt_mul_rn(double a, double b) { return a * b; }
#else
LT_D float lt_mul_rn(float a, float b) { return __fmul_rn(a, b); }
LT_D double lt_mul_rn(double a, double b) { return __dmul_rn(a, b); }
#endif

/* cpow, fmod, remainder and atan2 by compute type: floating, then integer (long long) */
LT_D float lt_b_pow(float x, float y) { return lt_m_pow(x, y); }
LT_D double lt_b_pow(double x, double y) { return lt_m_pow(x, y); }
LT_D long long lt_b_pow(long long x, long long y) { return (long long)pow((double)x, (double)y); }
template <typename A> LT_D A lt_b_fmod(A x, A y) { return lt_u_fmod(x, y); }
template <> LT_D long long lt_b_fmod(long long x, long long y) { return y == 0 || y == -1 ? 0 : x % y; }
template <typename A> LT_D A lt_b_remainder(A x, A y) {
  return y == 0 ? lt_cast<A>(lt_nan_d()) : x - lt_mul_rn(y, lt_u_floor(x / y));
}
template <> LT_D long long lt_b_remainder(long long x, long long y) {
  if (y == 0 || y == -1) return 0;
  const long long r = x % y;
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}
template <typename A> LT_D A lt_b_atan2(A x, A y) { return lt_u_atan2(x, y); }
template <> LT_D long long lt_b_atan2(long long x, long long) { return x; }

#define LT_FOR_COMPARE_TYPES(M) LT_FOR_INT_TYPES(M) LT_IF_Float(M(float, Float)) LT_IF_Double(M(double, Double))

/* ---------------------------------------------------------------- operations */
struct lt_f_compare {
  int op;
  template <typename A> LT_D unsigned char operator()(A x, A y) const {
    const bool less = x < y, more = x > y, same = x == y;
    switch (op) {
      case LT_C_EQ: return same;
      case LT_C_NE: return !same;
      case LT_C_LT: return less;
      case LT_C_LE: return less || same;
      case LT_C_GT: return more;
      default: return more || same;
    }
  }
};

struct lt_f_binop {
  int op;
  template <typename A> LT_D A operator()(A x, A y) const {
    switch (op) {
      case LT_B_MAX: return x > y ? x : y;
      case LT_B_MIN: return x < y ? x : y;
      case LT_B_POW: return lt_b_pow(x, y);
      case LT_B_TPOW: return lt_b_pow(y, x);
      case LT_B_FMOD: return lt_b_fmod(x, y);
      case LT_B_REMAINDER: return lt_b_remainder(x, y);
      case LT_B_ATAN2: return lt_b_atan2(x, y);
      default: return x;
    }
  }
};

struct lt_f_unop {
  int op;
  template <typename A> LT_D A operator()(A x) const {
    switch (op) {
      case LT_U_LOG1P: return lt_u_log1p(x);
      case LT_U_FLOOR: return lt_u_floor(x);
      case LT_U_CEIL: return lt_u_ceil(x);
      case LT_U_ROUND: return lt_u_round(x);
      case LT_U_TRUNC: return lt_u_trunc(x);
      case LT_U_FRAC: return x - lt_u_trunc(x);
      case LT_U_CINV: return (A)1 / x;
      case LT_U_SIN: return lt_u_sin(x);
      case LT_U_COS: return lt_u_cos(x);
      case LT_U_TAN: return lt_u_tan(x);
      case LT_U_ASIN: return lt_u_asin(x);
      case LT_U_ACOS: return lt_u_acos(x);
      case LT_U_ATAN: return lt_u_atan(x);
      case LT_U_SINH: return lt_u_sinh(x);
      case LT_U_COSH: return lt_u_cosh(x);
      case LT_U_EXPM1: return lt_u_expm1(x);
      default: return x;
    }
  }
};

template <typename A> struct lt_f_lerp {
  A w;
  LT_D A operator()(A x, A y) const { return x + lt_mul_rn(w, y - x); }
};

/* tril (upper 0) or triu (1) as a positional mask: element number e of a matrix of cols columns */
template <typename T, typename I>
LT_D void lt_tri_impl(lt_cu_tensor out, lt_cu_tensor x, long long n, long long cols, long long k, int upper) {
  T *po = (T *)out.data;
  const T *px = (const T *)x.data;
  LT_GRID_LOOP(I, e, n) {
    const long long i = (long long)(e / (I)cols), j = (long long)(e - (I)i * (I)cols);
    const bool keep = upper ? j - i >= k : j - i <= k;
    po[lt_offset<I>(out, e)] = keep ? px[lt_offset<I>(x, e)] : lt_cast<T>(0);
  }
}

/* the second operand's number as T's value, in the compute type */
template <typename T, typename F> struct lt_with_value {
  lt_acc_t<T> v;
  F f;
  template <typename A> LT_D decltype(F()(A(), A())) operator()(A x) const { return f(x, v); }
};
template <typename T, typename F> LT_D lt_with_value<T, F> lt_bind(lt_acc_t<T> v, F f) {
  return lt_with_value<T, F>{lt_cast<lt_acc_t<T>>(lt_cast<T>(v)), f};
}

template <bool Flat, typename T, typename I>
LT_D void lt_masked_fill_as(lt_cu_tensor out, lt_cu_tensor mask, long long n, T value) {
  T *po = (T *)out.data;
  const unsigned char *pm = (const unsigned char *)mask.data;
  lt_elementwise<Flat, I>(n, [&](I i) { return pm[lt_off<Flat>(mask, i)]; },
                          [&](I i, unsigned char m) {
                            if (m) po[lt_off<Flat>(out, i)] = value;
                          });
}

template <typename T, typename I>
LT_D void lt_masked_fill_impl(lt_cu_tensor out, lt_cu_tensor mask, long long n, lt_acc_t<T> v) {
  if (out.dims == 1 && mask.dims == 1) lt_masked_fill_as<true, T, I>(out, mask, n, lt_cast<T>(v));
  else lt_masked_fill_as<false, T, I>(out, mask, n, lt_cast<T>(v));
}

/* ---------------------------------------------------------------- kernel definitions */
#define LT_COMPARE_TYPE(T, N)                                                                                    \
  LT_PW_BOTH(lt_cmp_##N, (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, int op),             \
              (lt_map2<unsigned char, T, I>(out, x, y, n, lt_f_compare{op})))                                   \
  LT_PW_BOTH(lt_cmps_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n, lt_acc_t<T> v, int op),             \
              (lt_map1<unsigned char, T, I>(out, x, n, lt_bind<T>(v, lt_f_compare{op}))))                       \
  LT_PW_BOTH(lt_binop_##N, (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, int op),           \
              (lt_map2<T, T, I>(out, x, y, n, lt_f_binop{op})))                                                 \
  LT_PW_BOTH(lt_binops_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n, lt_acc_t<T> v, int op),           \
              (lt_map1<T, T, I>(out, x, n, lt_bind<T>(v, lt_f_binop{op}))))                                     \
  LT_PW_BOTH(lt_masked_fill_##N, (lt_cu_tensor out, lt_cu_tensor mask, long long n, lt_acc_t<T> v),          \
              (lt_masked_fill_impl<T, I>(out, mask, n, v)))                                                     \
  LT_PW_BOTH(lt_tri_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n, long long cols, long long k, int upper), \
              (lt_tri_impl<T, I>(out, x, n, cols, k, upper)))

LT_FOR_COMPARE_TYPES(LT_COMPARE_TYPE)

#define LT_FLOAT_ONLY_TYPE(T, N)                                                                               \
  LT_PW_BOTH(lt_unop_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n, int op),                           \
             (lt_map1<T, T, I>(out, x, n, lt_f_unop{op})))                                                     \
  LT_PW_BOTH(lt_lerp_##N, (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, lt_acc_t<T> w),    \
             (lt_map2<T, T, I>(out, x, y, n, lt_f_lerp<lt_acc_t<T>>{w})))

LT_IF_Float(LT_FLOAT_ONLY_TYPE(float, Float)) LT_IF_Double(LT_FLOAT_ONLY_TYPE(double, Double))
