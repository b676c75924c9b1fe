/* fill.cu — set every element of a strided tensor to one value.
 *
 *   lt_fill_<T>_<idx>(lt_cu_tensor out, long long n, lt_acc_t<T> value)
 *
 * value has the compute type (float for Float and Half, double for Double, long long for the integer
 * types) and is converted to T once (Half: round to nearest even). Grid-stride: any launch geometry.
 */
#include "lt_cuda_common.cuh"

template <typename T, typename I>
LT_D void lt_fill_impl(lt_cu_tensor out, long long n, lt_acc_t<T> value) {
  T *po = (T *)out.data;
  const T v = lt_cast<T>(value);
  LT_GRID_LOOP(I, i, n) po[lt_offset<I>(out, i)] = v;
}

#define LT_FILL(T, N)                                                                          \
  extern "C" __global__ void lt_fill_##N##_i32(lt_cu_tensor out, long long n, lt_acc_t<T> v) { \
    lt_fill_impl<T, lt_i32>(out, n, v);                                                        \
  }                                                                                            \
  LT_EXPORT(lt_fill_##N##_i32)                                                                 \
  extern "C" __global__ void lt_fill_##N##_i64(lt_cu_tensor out, long long n, lt_acc_t<T> v) { \
    lt_fill_impl<T, lt_i64>(out, n, v);                                                        \
  }                                                                                            \
  LT_EXPORT(lt_fill_##N##_i64)

LT_FOR_ALL_TYPES(LT_FILL)
