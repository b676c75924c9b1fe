/* pointwise.cu — elementwise math on strided tensors (what the training path and optim use).
 *
 * Every operand has its own lt_cu_tensor; all hold n elements. out may be the same tensor as x
 * (in place). Values are loaded into the compute type A = lt_acc_t<T> (float for Float and Half,
 * double for Double, long long for integers), computed there, and rounded/converted back to T once.
 * Grid-stride loops: any launch geometry. <idx> is i32 or i64 (see lt_cuda_common.cuh).
 *
 * Float, Double, Half:
 *   lt_adds_<T>_<idx>   (out, x, n, A a)          out = x + a
 *   lt_muls_<T>_<idx>   (out, x, n, A a)          out = x * a
 *   lt_divs_<T>_<idx>   (out, x, n, A a)          out = x / a
 *   lt_pows_<T>_<idx>   (out, x, n, A a)          out = pow(x, a)
 *   lt_clamp_<T>_<idx>  (out, x, n, A lo, A hi)   out = x < lo ? lo : (x > hi ? hi : x)   (NaN stays NaN)
 *   lt_<f>_<T>_<idx>    (out, x, n)               f in sqrt rsqrt exp log abs neg sign tanh sigmoid
 *                                                 sign: 1, -1 or 0 (0 for 0 and NaN, as Torch7's)
 *                                                 sigmoid: 1 / (1 + exp(-x))
 *   lt_cadd_<T>_<idx>   (out, x, y, n, A a)       out = x + a * y
 *   lt_cmul_<T>_<idx>   (out, x, y, n)            out = x * y
 *   lt_cdiv_<T>_<idx>   (out, x, y, n)            out = x / y
 *   lt_addcmul_<T>_<idx>(out, x, y, z, n, A v)    out = x + (v * y) * z
 *   lt_addcdiv_<T>_<idx>(out, x, y, z, n, A v)    out = x + (v * y) / z
 * Byte, Char, Short, Int, Long (computed in long long, converted back with wrap-around):
 *   lt_adds, lt_muls, lt_clamp, lt_cadd, lt_cmul  with the same arguments.
 * All tensor arguments are lt_cu_tensor (by value); n is long long.
 */
#include "lt_cuda_common.cuh"

/* ---------------------------------------------------------------- apply loops (one and two operands: lt_map1 and
 * lt_map2 of lt_cuda_common.cuh) */
template <bool Flat, typename T, typename I, typename F>
LT_D void lt_apply3_as(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor z, long long n, F f) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  const T *px = (const T *)x.data, *py = (const T *)y.data, *pz = (const T *)z.data;
  lt_elementwise<Flat, I>(
      n,
      [&](I i) {
        return f(lt_cast<A>(px[lt_off<Flat>(x, i)]), lt_cast<A>(py[lt_off<Flat>(y, i)]),
                 lt_cast<A>(pz[lt_off<Flat>(z, i)]));
      },
      [&](I i, A v) { po[lt_off<Flat>(out, i)] = lt_cast<T>(v); });
}

template <typename T, typename I, typename F>
LT_D void lt_apply3(lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor z, long long n, F f) {
  if (out.dims == 1 && x.dims == 1 && y.dims == 1 && z.dims == 1) lt_apply3_as<true, T, I>(out, x, y, z, n, f);
  else lt_apply3_as<false, T, I>(out, x, y, z, n, f);
}

/* ---------------------------------------------------------------- operations (on the compute type) */
template <typename A> struct lt_f_adds { A a; LT_D A operator()(A x) const { return x + a; } };
template <typename A> struct lt_f_muls { A a; LT_D A operator()(A x) const { return x * a; } };
template <typename A> struct lt_f_divs { A a; LT_D A operator()(A x) const { return x / a; } };
template <typename A> struct lt_f_pows { A a; LT_D A operator()(A x) const { return lt_m_pow(x, a); } };
template <typename A> struct lt_f_clamp {
  A lo, hi;
  LT_D A operator()(A x) const { return x < lo ? lo : (x > hi ? hi : x); }
};
struct lt_f_sqrt { template <typename A> LT_D A operator()(A x) const { return lt_m_sqrt(x); } };
struct lt_f_rsqrt { template <typename A> LT_D A operator()(A x) const { return lt_m_rsqrt(x); } };
struct lt_f_exp { template <typename A> LT_D A operator()(A x) const { return lt_m_exp(x); } };
struct lt_f_log { template <typename A> LT_D A operator()(A x) const { return lt_m_log(x); } };
struct lt_f_abs { template <typename A> LT_D A operator()(A x) const { return lt_m_abs(x); } };
struct lt_f_neg { template <typename A> LT_D A operator()(A x) const { return -x; } };
struct lt_f_sign {
  template <typename A> LT_D A operator()(A x) const { return x > (A)0 ? (A)1 : (x < (A)0 ? (A)-1 : (A)0); }
};
struct lt_f_tanh { template <typename A> LT_D A operator()(A x) const { return lt_m_tanh(x); } };
struct lt_f_sigmoid {
  template <typename A> LT_D A operator()(A x) const { return (A)1 / ((A)1 + lt_m_exp(-x)); }
};
template <typename A> struct lt_f_cadd { A a; LT_D A operator()(A x, A y) const { return x + a * y; } };
struct lt_f_cmul { template <typename A> LT_D A operator()(A x, A y) const { return x * y; } };
struct lt_f_cdiv { template <typename A> LT_D A operator()(A x, A y) const { return x / y; } };
template <typename A> struct lt_f_addcmul {
  A v;
  LT_D A operator()(A x, A y, A z) const { return x + v * y * z; }
};
template <typename A> struct lt_f_addcdiv {
  A v;
  LT_D A operator()(A x, A y, A z) const { return x + v * y / z; }
};

/* ---------------------------------------------------------------- kernel definitions */
#define LT_PW_SCALAR(OP, T, N)                                                            \
  LT_PW_BOTH(lt_##OP##_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n, lt_acc_t<T> a), \
             (lt_map1<T, T, I>(out, x, n, lt_f_##OP<lt_acc_t<T>>{a})))

#define LT_PW_CLAMP(T, N)                                                                    \
  LT_PW_BOTH(lt_clamp_##N,                                                                   \
             (lt_cu_tensor out, lt_cu_tensor x, long long n, lt_acc_t<T> lo, lt_acc_t<T> hi), \
             (lt_map1<T, T, I>(out, x, n, lt_f_clamp<lt_acc_t<T>>{lo, hi})))

#define LT_PW_UNARY(OP, T, N) \
  LT_PW_BOTH(lt_##OP##_##N, (lt_cu_tensor out, lt_cu_tensor x, long long n), (lt_map1<T, T, I>(out, x, n, lt_f_##OP())))

#define LT_PW_CADD(T, N)                                                                        \
  LT_PW_BOTH(lt_cadd_##N,                                                                       \
             (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n, lt_acc_t<T> a),     \
             (lt_map2<T, T, I>(out, x, y, n, lt_f_cadd<lt_acc_t<T>>{a})))

#define LT_PW_BINARY(OP, T, N)                                                               \
  LT_PW_BOTH(lt_##OP##_##N, (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, long long n), \
             (lt_map2<T, T, I>(out, x, y, n, lt_f_##OP())))

#define LT_PW_TERNARY(OP, T, N)                                                                   \
  LT_PW_BOTH(lt_##OP##_##N,                                                                       \
             (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor z, long long n,      \
              lt_acc_t<T> v),                                                                     \
             (lt_apply3<T, I>(out, x, y, z, n, lt_f_##OP<lt_acc_t<T>>{v})))

#define LT_PW_FLOAT_TYPE(T, N)                                                              \
  LT_PW_SCALAR(adds, T, N) LT_PW_SCALAR(muls, T, N) LT_PW_SCALAR(divs, T, N)                \
  LT_PW_SCALAR(pows, T, N) LT_PW_CLAMP(T, N)                                                \
  LT_PW_UNARY(sqrt, T, N) LT_PW_UNARY(rsqrt, T, N) LT_PW_UNARY(exp, T, N)                   \
  LT_PW_UNARY(log, T, N) LT_PW_UNARY(abs, T, N) LT_PW_UNARY(neg, T, N)                      \
  LT_PW_UNARY(sign, T, N) LT_PW_UNARY(tanh, T, N) LT_PW_UNARY(sigmoid, T, N)                \
  LT_PW_CADD(T, N) LT_PW_BINARY(cmul, T, N) LT_PW_BINARY(cdiv, T, N)                        \
  LT_PW_TERNARY(addcmul, T, N) LT_PW_TERNARY(addcdiv, T, N)

#define LT_PW_INT_TYPE(T, N)                                                         \
  LT_PW_SCALAR(adds, T, N) LT_PW_SCALAR(muls, T, N) LT_PW_CLAMP(T, N) LT_PW_CADD(T, N) \
  LT_PW_BINARY(cmul, T, N)

LT_FOR_FLOAT_TYPES(LT_PW_FLOAT_TYPE)
LT_FOR_INT_TYPES(LT_PW_INT_TYPE)
