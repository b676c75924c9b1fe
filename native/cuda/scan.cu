/* scan.cu — cumulative sums and products along one dimension (Torch7's cumsum, cumprod), all 8 types.
 *
 *   lt_scan_<T>_<idx>(T out, T xs, q nslices, q n, q ostride, q xstride, int prod)
 *     out and xs: slices views (the scanned dimension removed, see index.cu) of tensors of one shape, ostride and
 *     xstride their strides along it, n its size. Element j of slice s of out = the sum (prod 0) or the product
 *     (prod 1) of elements 0..j of slice s of x, accumulated as the CPU kernel accumulates: in double for Float,
 *     Double and Half (rounded to T at each store), in 64-bit two's complement for the integer types (wrapping,
 *     then converted to T). A thread per slice walks it in order (grid-stride over slices); out may be x.
 */
#include "lt_cuda_common.cuh"

/* the accumulator: unsigned 64-bit (wrapping) for the integer types, double for the others */
template <bool IsInt> struct lt_scan_acc { typedef double type; };
template <> struct lt_scan_acc<true> { typedef unsigned long long type; };

template <typename T, typename I>
LT_D void lt_scan_impl(lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n, long long ostride,
                       long long xstride, int prod) {
  typedef typename lt_scan_acc<lt_is_int<T>::value>::type Acc;
  LT_GRID_LOOP(I, s, nslices) {
    const T *px = (const T *)xs.data + lt_offset<I>(xs, s);
    T *po = (T *)out.data + lt_offset<I>(out, s);
    Acc a = prod ? (Acc)1 : (Acc)0;
    for (I j = 0; j < (I)n; ++j) {
      if constexpr (lt_is_int<T>::value) {
        const Acc v = (Acc)lt_cast<long long>(px[j * (I)xstride]);
        a = prod ? a * v : a + v;
        po[j * (I)ostride] = lt_cast<T>((long long)a);
      } else {
        const Acc v = lt_cast<double>(px[j * (I)xstride]);
        a = prod ? a * v : a + v;
        po[j * (I)ostride] = lt_cast<T>(a);
      }
    }
  }
}

#define LT_SCAN1(T, N, IDX)                                                                                     \
  extern "C" __global__ void lt_scan_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor xs, long long nslices,          \
                                                 long long n, long long ostride, long long xstride, int prod) { \
    lt_scan_impl<T, lt_##IDX>(out, xs, nslices, n, ostride, xstride, prod);                                     \
  }                                                                                                             \
  LT_EXPORT(lt_scan_##N##_##IDX)

#define LT_SCAN(T, N) LT_SCAN1(T, N, i32) LT_SCAN1(T, N, i64)

LT_FOR_ALL_TYPES(LT_SCAN)
