/* sort.cu — sorting along one dimension (sort, topk, kthvalue, median, mode of cutorch).
 *
 * The order is the CPU sort's (native/src/sort_generic.h), a total order on (value, index) pairs:
 * ascending, a NaN after every number; descending, a NaN before every number; equal values (and two NaNs)
 * by their index in the slice, the smaller first, in both directions. So the sort is stable, every launch
 * geometry gives the same result, and the indices match the CPU's exactly.
 *
 * A = lt_acc_t<T> holds the keys (exact for every type: float for Float and Half, long long for integers).
 * The input is seen as slices, as in reduce_dim.cu: xs is x's tensor info with the sorted dimension removed,
 * n and x_stride that dimension's size and stride; element j of slice s is
 * ((T*)xs.data)[offset(xs, s) + j * x_stride]. Scratch is contiguous: pair j of slice s at [s * n + j].
 *
 *   lt_sort_tiles_<T>_<idx>(lt_cu_tensor xs, q x_stride, q nslices, q n, int desc, A *keys, q *ind)   ★
 *     Each slice is cut in tiles of LT_SORT_TILE (2048) elements (the last one shorter); a block per
 *     tile (grid-stride over the nslices * tiles tiles with blockIdx.x) sorts it in shared memory with a
 *     bitonic network, padded to a power of two with entries that sort after everything, and writes its
 *     pairs to keys/ind (the key and the 0-based index in the slice). blockDim.x a multiple of 32.
 *   lt_sort_merge_<T>(const A *keys, const q *ind, A *okeys, q *oind, q nslices, q n, q width, int desc)
 *     One merge pass: runs [2r·width, (2r+1)·width) and [(2r+1)·width, (2r+2)·width) of each slice
 *     (sorted) are merged into okeys/oind. A thread per element (grid-stride, 64-bit): its place is its
 *     place in its own run plus the number of pairs of the other run before it, found by binary search;
 *     the order is total, so no two pairs compete for a place.
 *   lt_sort_write_<T>_<idx>(lt_cu_tensor vs, q v_stride, lt_cu_tensor is, q i_stride, const A *keys,
 *                           const q *ind, q nslices, q n, q first, q count)
 *     Pairs first .. first + count - 1 of each sorted slice into the results: values (T) into the slices
 *     view vs (stride v_stride along the dimension), 1-based indices (Long) into is. A thread per
 *     element, grid-stride.
 *   lt_sort_mode_<T>_<idx>(lt_cu_tensor vs, lt_cu_tensor is, const A *keys, const q *ind, q nslices, q n)
 *     On ascending sorted slices: the value of the longest run of equal values (the first, i.e. smallest,
 *     of equally long runs; a NaN is a run of its own) and the 1-based index of the run's last pair (its
 *     largest index), into the one-element-per-slice views vs and is. A thread per slice.
 */
#include "lt_cuda_common.cuh"

#define LT_SORT_TILE 2048

/* Does (av, ai) come before (bv, bi)? */
template <typename A>
LT_D bool lt_sort_before(A av, long long ai, A bv, long long bi, int desc) {
  const bool an = lt_isnan(av), bn = lt_isnan(bv);
  if (an || bn) {
    if (an && bn) return ai < bi;
    return desc ? an : bn;
  }
  if (av != bv) return desc ? av > bv : av < bv;
  return ai < bi;
}

template <typename T, typename I>
LT_D void lt_sort_tiles(lt_cu_tensor xs, long long x_stride, long long nslices, long long n, int desc,
                        lt_acc_t<T> *keys, long long *ind) {
  typedef lt_acc_t<T> A;
  __shared__ A sk[LT_SORT_TILE];
  __shared__ int si[LT_SORT_TILE];
  const T *px = (const T *)xs.data;
  const long long tiles = (n + LT_SORT_TILE - 1) / LT_SORT_TILE;
  for (long long g = blockIdx.x; g < nslices * tiles; g += gridDim.x) {
    const long long s = g / tiles, t0 = (g - s * tiles) * LT_SORT_TILE;
    const int len = (int)(n - t0 < LT_SORT_TILE ? n - t0 : LT_SORT_TILE);
    int p = 1;
    while (p < len) p <<= 1;
    const T *base = px + lt_offset<I>(xs, (I)s);
    for (int j = threadIdx.x; j < p; j += blockDim.x) {
      si[j] = j;   /* j >= len: padding, after everything */
      if (j < len) sk[j] = lt_cast<A>(base[(I)(t0 + j) * (I)x_stride]);
    }
    __syncthreads();
    for (int k = 2; k <= p; k <<= 1) {
      for (int h = k >> 1; h > 0; h >>= 1) {
        for (int i = threadIdx.x; i < p; i += blockDim.x) {
          const int l = i ^ h;
          if (l <= i) continue;
          const int ii = si[i], il = si[l];
          /* does l belong before i in this half's direction (ascending where i & k == 0)? */
          bool lfirst;
          if (ii >= len || il >= len) lfirst = il < ii;
          else lfirst = lt_sort_before(sk[l], (long long)il, sk[i], (long long)ii, desc);
          if (lfirst == ((i & k) == 0)) {
            const A kv = sk[i];
            sk[i] = sk[l], sk[l] = kv;
            si[i] = il, si[l] = ii;
          }
        }
        __syncthreads();
      }
    }
    A *ok = keys + s * n + t0;
    long long *oi = ind + s * n + t0;
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      ok[j] = sk[j];
      oi[j] = t0 + si[j];
    }
    __syncthreads();   /* the next tile reuses the shared arrays */
  }
}

template <typename T>
LT_D void lt_sort_merge(const lt_acc_t<T> *keys, const long long *ind, lt_acc_t<T> *okeys, long long *oind,
                        long long nslices, long long n, long long width, int desc) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, nslices * n) {
    const long long s = e / n, j = e - s * n;
    const long long run = j / width, lo = (run & ~1ll) * width, mid = lo + width;
    const long long hi = mid + width < n ? mid + width : n;
    const A v = keys[e];
    const long long vi = ind[e];
    const A *sk = keys + s * n;
    const long long *sind = ind + s * n;
    /* the other run [a, b): count its pairs that come before (v, vi) */
    long long a = (run & 1) ? lo : mid, b = (run & 1) ? mid : hi;
    const long long own = (run & 1) ? j - mid : j - lo;
    if (a > b) a = b;   /* an unpaired last run */
    long long first = a;
    while (a < b) {
      const long long m = a + (b - a) / 2;
      if (lt_sort_before(sk[m], sind[m], v, vi, desc)) a = m + 1;
      else b = m;
    }
    const long long at = s * n + lo + own + (a - first);
    okeys[at] = v;
    oind[at] = vi;
  }
}

template <typename T, typename I>
LT_D void lt_sort_write(lt_cu_tensor vs, long long v_stride, lt_cu_tensor is, long long i_stride,
                        const lt_acc_t<T> *keys, const long long *ind, long long nslices, long long n,
                        long long first, long long count) {
  T *pv = (T *)vs.data;
  long long *pi = (long long *)is.data;
  LT_GRID_LOOP(I, e, nslices * count) {
    const I s = e / (I)count, j = e - s * (I)count;
    const long long src = (long long)s * n + first + (long long)j;
    pv[lt_offset<I>(vs, s) + j * (I)v_stride] = lt_cast<T>(keys[src]);
    pi[lt_offset<I>(is, s) + j * (I)i_stride] = ind[src] + 1;
  }
}

template <typename T, typename I>
LT_D void lt_sort_mode(lt_cu_tensor vs, lt_cu_tensor is, const lt_acc_t<T> *keys, const long long *ind,
                       long long nslices, long long n) {
  T *pv = (T *)vs.data;
  long long *pi = (long long *)is.data;
  LT_GRID_LOOP(I, s, nslices) {
    const lt_acc_t<T> *k = keys + (long long)s * n;
    long long best = 0, bestlen = 0, start = 0;
    for (long long j = 0; j < n; ++j) {
      if (j + 1 < n && k[j + 1] == k[j]) continue;   /* NaN != NaN: a run of its own */
      if (j + 1 - start > bestlen) bestlen = j + 1 - start, best = j;
      start = j + 1;
    }
    pv[lt_offset<I>(vs, s)] = lt_cast<T>(k[best]);
    pi[lt_offset<I>(is, s)] = ind[(long long)s * n + best] + 1;
  }
}

#define LT_SORT_IDX(T, N, IDX)                                                                            \
  extern "C" __global__ void lt_sort_tiles_##N##_##IDX(lt_cu_tensor xs, long long x_stride,              \
                                                       long long nslices, long long n, int desc,         \
                                                       lt_acc_t<T> *keys, long long *ind) {              \
    lt_sort_tiles<T, lt_##IDX>(xs, x_stride, nslices, n, desc, keys, ind);                              \
  }                                                                                                       \
  LT_EXPORT(lt_sort_tiles_##N##_##IDX)                                                                    \
  extern "C" __global__ void lt_sort_write_##N##_##IDX(                                                   \
      lt_cu_tensor vs, long long v_stride, lt_cu_tensor is, long long i_stride, const lt_acc_t<T> *keys,  \
      const long long *ind, long long nslices, long long n, long long first, long long count) {           \
    lt_sort_write<T, lt_##IDX>(vs, v_stride, is, i_stride, keys, ind, nslices, n, first, count);          \
  }                                                                                                       \
  LT_EXPORT(lt_sort_write_##N##_##IDX)                                                                    \
  extern "C" __global__ void lt_sort_mode_##N##_##IDX(lt_cu_tensor vs, lt_cu_tensor is,                  \
                                                      const lt_acc_t<T> *keys, const long long *ind,      \
                                                      long long nslices, long long n) {                   \
    lt_sort_mode<T, lt_##IDX>(vs, is, keys, ind, nslices, n);                                             \
  }                                                                                                       \
  LT_EXPORT(lt_sort_mode_##N##_##IDX)

#define LT_SORT_TYPE(T, N)                                                                                \
  LT_SORT_IDX(T, N, i32)                                                                                  \
  LT_SORT_IDX(T, N, i64)                                                                                  \
  extern "C" __global__ void lt_sort_merge_##N(const lt_acc_t<T> *keys, const long long *ind,            \
                                               lt_acc_t<T> *okeys, long long *oind, long long nslices,    \
                                               long long n, long long width, int desc) {                  \
    lt_sort_merge<T>(keys, ind, okeys, oind, nslices, n, width, desc);                                    \
  }                                                                                                       \
  LT_EXPORT(lt_sort_merge_##N)

LT_FOR_ALL_TYPES(LT_SORT_TYPE)
