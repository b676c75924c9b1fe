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
 *   lt_masked_fill_<T>_<idx>(out, mask, n, A v) out = v where mask (a Byte tensor) is not 0; other elements
 *       are not written.
 */
#include "lt_cuda_common.cuh"

/* the numbering of lt_math.h */
enum { LT_C_EQ = 0, LT_C_NE = 1, LT_C_LT = 2, LT_C_LE = 3, LT_C_GT = 4, LT_C_GE = 5 };
enum { LT_B_MAX = 4, LT_B_MIN = 5 };

#define LT_FOR_COMPARE_TYPES(M) LT_FOR_INT_TYPES(M) LT_IF_Float(M(float, Float)) LT_IF_Double(M(double, Double))

/* ---------------------------------------------------------------- apply loops (out of type O, inputs of T) */
template <bool Flat, typename O, typename T, typename I, typename F>
LT_D void lt_map1_as(lt_cu_tensor out, lt_cu_tensor x, long long n, F f) {
  typedef lt_acc_t<T> A;
  typedef decltype(f(A())) R;
  O *po = (O *)out.data;
  const T *px = (const T *)x.data;
  lt_elementwise<Flat, I>(n, [&](I i) { return f(lt_cast<A>(px[lt_off<Flat>(x, i)])); },
                          [&](I i, R v) { po[lt_off<Flat>(out, i)] = lt_cast<O>(v); });
}

template <bool Flat, typename O, typename T, typename I, typename F>
LT_D void lt_map2_as(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, F f) {
  typedef lt_acc_t<T> A;
  typedef decltype(f(A(), A())) R;
  O *po = (O *)out.data;
  const T *px = (const T *)x.data, *py = (const T *)y.data;
  lt_elementwise<Flat, I>(
      n, [&](I i) { return f(lt_cast<A>(px[lt_off<Flat>(x, i)]), lt_cast<A>(py[lt_off<Flat>(y, i)])); },
      [&](I i, R v) { po[lt_off<Flat>(out, i)] = lt_cast<O>(v); });
}

template <typename O, typename T, typename I, typename F>
LT_D void lt_map1(lt_cu_tensor out, lt_cu_tensor x, long long n, F f) {
  if (out.dims == 1 && x.dims == 1) lt_map1_as<true, O, T, I>(out, x, n, f);
  else lt_map1_as<false, O, T, I>(out, x, n, f);
}

template <typename O, typename T, typename I, typename F>
LT_D void lt_map2(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, F f) {
  if (out.dims == 1 && x.dims == 1 && y.dims == 1) lt_map2_as<true, O, T, I>(out, x, y, n, f);
  else lt_map2_as<false, O, T, I>(out, x, y, n, f);
}

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
      default: return x;
    }
  }
};

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
              (lt_masked_fill_impl<T, I>(out, mask, n, v)))

LT_FOR_COMPARE_TYPES(LT_COMPARE_TYPE)
