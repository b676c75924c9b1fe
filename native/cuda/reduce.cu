/* reduce.cu — reductions over all elements, in two stages (reduce_dim.cu: along one dimension).
 *
 * A = lt_acc_t<T> is the accumulate type: float for Float and Half, double for Double, long long for
 * the integer types. max/min propagate NaN. Empty inputs give the identity (sum 0, prod 1, max -inf or
 * INT64_MIN, min +inf or INT64_MAX); Torch7 raises an error for max/min of an empty tensor, so the host
 * checks n > 0 there.
 *
 * ---- All elements, stage 1: one partial result per block ----
 *   lt_reduce_<op>_<T>_<idx>(lt_cu_tensor x, long long n, A *partial)            op: sum prod max min
 *                                                                                   (all 8 types),
 *                                                                                   sumsq (Float Double Half)
 *   lt_reduce_norm_<T>_<idx>(lt_cu_tensor x, long long n, A p, A *partial)       Float Double Half
 *   Any grid; blockDim.x a multiple of 32 (<= 1024). Block b writes partial[b], so partial holds
 *   gridDim.x values of type A. Grid-stride over the n elements of x.
 *
 * ---- All elements, stage 2: one block combines the partials ----
 *   lt_reduce_finish_<op>_<T>(const A *partial, long long nparts, A *result)     op: sum prod max min sumsq
 *   lt_reduce_finish_norm_<T>(const A *partial, long long nparts, A p, A *result)
 *   grid = 1 (other blocks return at once), blockDim.x a multiple of 32; writes result[0] (type A).
 *   sumsq's finish is a sum. norm: p == 0 counts the non-zero elements, p == inf is max |x|, otherwise
 *   (sum |x|^p)^(1/p) (p == 1 and p == 2 take the exact shortcuts |x| and x*x).
 *   The host turns sum into mean by dividing by n.
 */
#include "lt_cuda_common.cuh"

/* ---------------------------------------------------------------- element transforms */
struct lt_pre_id { template <typename A> LT_D A operator()(A v) const { return v; } };
struct lt_pre_sq { template <typename A> LT_D A operator()(A v) const { return v * v; } };

/* norm: p == 0 -> (x != 0), p == inf -> |x| (combined with max), p == 1 -> |x|, p == 2 -> x*x,
 * else |x|^p */
template <typename A> struct lt_norm_pre {
  A p;
  LT_D A operator()(A v) const {
    if (p == (A)0) return v != (A)0 ? (A)1 : (A)0;
    if (p == (A)1 || p == lt_highest<A>()) return lt_m_abs(v);
    if (p == (A)2) return v * v;
    return lt_m_pow(lt_m_abs(v), p);
  }
};
template <typename A> struct lt_norm_op {
  bool is_max;
  LT_D A operator()(A a, A b) const { return is_max ? lt_op_max()(a, b) : a + b; }
};
template <typename A> LT_D A lt_norm_post(A v, A p) {
  if (p == (A)0 || p == (A)1 || p == lt_highest<A>()) return v;
  if (p == (A)2) return lt_m_sqrt(v);
  return lt_m_pow(v, (A)1 / p);
}

/* ---------------------------------------------------------------- all elements */
template <bool Flat, typename T, typename I, typename Pre, typename Op>
LT_D lt_acc_t<T> lt_reduce_thread(lt_cu_tensor x, long long n, Pre pre, Op op, lt_acc_t<T> ident) {
  typedef lt_acc_t<T> A;
  const T *px = (const T *)x.data;
  A v = ident;
  lt_elementwise<Flat, I>(n, [&](I i) { return pre(lt_cast<A>(px[lt_off<Flat>(x, i)])); },
                          [&](I, A e) { v = op(v, e); });
  return v;
}

template <typename T, typename I, typename Pre, typename Op>
LT_D void lt_reduce_all(lt_cu_tensor x, long long n, lt_acc_t<T> *partial, Pre pre, Op op,
                        lt_acc_t<T> ident) {
  lt_acc_t<T> v = x.dims == 1 ? lt_reduce_thread<true, T, I>(x, n, pre, op, ident)
                              : lt_reduce_thread<false, T, I>(x, n, pre, op, ident);
  v = lt_block_reduce(v, op, ident);
  if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

template <typename A, typename Op>
LT_D bool lt_reduce_finish(const A *partial, long long nparts, Op op, A ident, A *out) {
  if (blockIdx.x != 0) return false;
  A v = ident;
  for (long long j = threadIdx.x; j < nparts; j += blockDim.x) v = op(v, partial[j]);
  *out = lt_block_reduce(v, op, ident);
  return threadIdx.x == 0;
}

#define LT_RED_ALL(OPNAME, T, N, PRE, OP, IDENT)                                                  \
  extern "C" __global__ void lt_reduce_##OPNAME##_##N##_i32(lt_cu_tensor x, long long n,          \
                                                            lt_acc_t<T> *partial) {               \
    lt_reduce_all<T, lt_i32>(x, n, partial, PRE(), OP(), IDENT);                                  \
  }                                                                                               \
  LT_EXPORT(lt_reduce_##OPNAME##_##N##_i32)                                                       \
  extern "C" __global__ void lt_reduce_##OPNAME##_##N##_i64(lt_cu_tensor x, long long n,          \
                                                            lt_acc_t<T> *partial) {               \
    lt_reduce_all<T, lt_i64>(x, n, partial, PRE(), OP(), IDENT);                                  \
  }                                                                                               \
  LT_EXPORT(lt_reduce_##OPNAME##_##N##_i64)                                                       \
  extern "C" __global__ void lt_reduce_finish_##OPNAME##_##N(const lt_acc_t<T> *partial,          \
                                                             long long nparts, lt_acc_t<T> *result) { \
    lt_acc_t<T> r;                                                                                \
    if (lt_reduce_finish(partial, nparts, OP(), (lt_acc_t<T>)(IDENT), &r)) result[0] = r;         \
  }                                                                                               \
  LT_EXPORT(lt_reduce_finish_##OPNAME##_##N)

#define LT_RED_NORM(T, N)                                                                          \
  extern "C" __global__ void lt_reduce_norm_##N##_i32(lt_cu_tensor x, long long n, lt_acc_t<T> p,  \
                                                      lt_acc_t<T> *partial) {                      \
    typedef lt_acc_t<T> A;                                                                         \
    lt_reduce_all<T, lt_i32>(x, n, partial, lt_norm_pre<A>{p}, lt_norm_op<A>{p == lt_highest<A>()}, (A)0); \
  }                                                                                                \
  LT_EXPORT(lt_reduce_norm_##N##_i32)                                                              \
  extern "C" __global__ void lt_reduce_norm_##N##_i64(lt_cu_tensor x, long long n, lt_acc_t<T> p,  \
                                                      lt_acc_t<T> *partial) {                      \
    typedef lt_acc_t<T> A;                                                                         \
    lt_reduce_all<T, lt_i64>(x, n, partial, lt_norm_pre<A>{p}, lt_norm_op<A>{p == lt_highest<A>()}, (A)0); \
  }                                                                                                \
  LT_EXPORT(lt_reduce_norm_##N##_i64)                                                              \
  extern "C" __global__ void lt_reduce_finish_norm_##N(const lt_acc_t<T> *partial, long long nparts, \
                                                       lt_acc_t<T> p, lt_acc_t<T> *result) {       \
    typedef lt_acc_t<T> A;                                                                         \
    A r;                                                                                           \
    if (lt_reduce_finish(partial, nparts, lt_norm_op<A>{p == lt_highest<A>()}, (A)0, &r))          \
      result[0] = lt_norm_post(r, p);                                                              \
  }                                                                                                \
  LT_EXPORT(lt_reduce_finish_norm_##N)

#define LT_RED_ALL_TYPE(T, N)                                                   \
  LT_RED_ALL(sum, T, N, lt_pre_id, lt_op_sum, (lt_acc_t<T>)0)                   \
  LT_RED_ALL(prod, T, N, lt_pre_id, lt_op_prod, (lt_acc_t<T>)1)                 \
  LT_RED_ALL(max, T, N, lt_pre_id, lt_op_max, lt_lowest<lt_acc_t<T>>())         \
  LT_RED_ALL(min, T, N, lt_pre_id, lt_op_min, lt_highest<lt_acc_t<T>>())
#define LT_RED_FLOAT_EXTRA(T, N) LT_RED_ALL(sumsq, T, N, lt_pre_sq, lt_op_sum, (lt_acc_t<T>)0) LT_RED_NORM(T, N)

LT_FOR_ALL_TYPES(LT_RED_ALL_TYPE)
LT_FOR_FLOAT_TYPES(LT_RED_FLOAT_EXTRA)

