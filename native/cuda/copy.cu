/* copy.cu — strided, typed copy dst(D) <- src(S) for all 8 x 8 element-type pairs.
 *
 *   lt_copy_<D>_<S>_<idx>(lt_cu_tensor dst, lt_cu_tensor src, long long n)
 *
 * dst and src hold n elements each; element i of src (row-major order of its own sizes/strides)
 * goes to element i of dst, converted as described in lt_cuda_common.cuh (C-cast semantics, float to
 * integer truncates toward zero, to Half rounds to nearest even). Same-type pairs are the strided
 * device-to-device copy. Grid-stride: any launch geometry.
 */
#include "lt_cuda_common.cuh"

template <bool Flat, typename D, typename S, typename I>
LT_D void lt_copy_as(lt_cu_tensor dst, lt_cu_tensor src, long long n) {
  D *pd = (D *)dst.data;
  const S *ps = (const S *)src.data;
  lt_elementwise<Flat, I>(n, [&](I i) { return ps[lt_off<Flat>(src, i)]; },
                          [&](I i, S v) { pd[lt_off<Flat>(dst, i)] = lt_cast<D>(v); });
}

template <typename D, typename S, typename I>
LT_D void lt_copy_impl(lt_cu_tensor dst, lt_cu_tensor src, long long n) {
  if (dst.dims == 1 && src.dims == 1) lt_copy_as<true, D, S, I>(dst, src, n);
  else lt_copy_as<false, D, S, I>(dst, src, n);
}

#define LT_COPY_PAIR(TD, ND, TS, NS)                                                           \
  extern "C" __global__ void lt_copy_##ND##_##NS##_i32(lt_cu_tensor dst, lt_cu_tensor src,      \
                                                        long long n) {                          \
    lt_copy_impl<TD, TS, lt_i32>(dst, src, n);                                                  \
  }                                                                                             \
  LT_EXPORT(lt_copy_##ND##_##NS##_i32)                                                          \
  extern "C" __global__ void lt_copy_##ND##_##NS##_i64(lt_cu_tensor dst, lt_cu_tensor src,      \
                                                        long long n) {                          \
    lt_copy_impl<TD, TS, lt_i64>(dst, src, n);                                                  \
  }                                                                                             \
  LT_EXPORT(lt_copy_##ND##_##NS##_i64)

/* one destination type, every source type (LT_SELECT_TYPES selects destinations only) */
#define LT_COPY_TO(TD, ND)                                                                       \
  LT_COPY_PAIR(TD, ND, unsigned char, Byte) LT_COPY_PAIR(TD, ND, signed char, Char)            \
  LT_COPY_PAIR(TD, ND, short, Short) LT_COPY_PAIR(TD, ND, int, Int)                            \
  LT_COPY_PAIR(TD, ND, long long, Long) LT_COPY_PAIR(TD, ND, float, Float)                     \
  LT_COPY_PAIR(TD, ND, double, Double) LT_COPY_PAIR(TD, ND, __half, Half)

LT_FOR_ALL_TYPES(LT_COPY_TO)
