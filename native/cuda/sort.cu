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
 *
 * The selection (topk with small k, kthvalue, median of long slices) finds the k-th pair of a slice without sorting
 * it. Each value maps to an unsigned radix key whose order is the order above (NaN last; -0 and 0 one key; the
 * bits inverted for desc, so NaN first), ties left to the index:
 *   lt_select_<T>_<idx>(lt_cu_tensor xs, q x_stride, lt_cu_tensor vs, q v_stride, lt_cu_tensor is, q i_stride,
 *                       q nslices, q n, q k, int desc, int mode)   ★
 *     A block per slice (grid-stride over slices). Radix passes of 4 bits from the top narrow down the k-th key:
 *     each counts, per digit, the keys that match the digits chosen so far (per-thread counters, summed over
 *     the warps) and keeps the digit where the count reaches k. Then a walk over the slice in index order, in
 *     tiles of blockDim.x with block-wide prefix counts, picks the keys below that threshold and the first
 *     (smallest-index) keys equal to it, as many as make k: the CPU's pairs exactly.
 *     mode 2 (kthvalue): the k-th pair's value and 1-based index into the one-element slices of vs and is.
 *     mode 0, 1 (topk, k <= LT_SORT_TILE): the k pairs, gathered in shared memory in index order, sorted in the
 *     order of desc by the bitonic network when mode is 1, into vs and is (k elements along v_stride, i_stride).
 *     Reads the input whole before it writes a result.
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

/* Sorts the pairs (sk[j], si[j]), j < p (a power of two), in shared memory with a bitonic network: in the order of
 * lt_sort_before, except that a pair with si >= len is padding, after every other pair. Every thread of the block
 * calls it; it ends with a __syncthreads. */
template <typename A, typename J>
LT_D void lt_bitonic_shared(A *sk, J *si, int p, J len, int desc) {
  for (int k = 2; k <= p; k <<= 1) {
    for (int h = k >> 1; h > 0; h >>= 1) {
      for (int i = threadIdx.x; i < p; i += blockDim.x) {
        const int l = i ^ h;
        if (l <= i) continue;
        const J ii = si[i], il = si[l];
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
    lt_bitonic_shared(sk, si, p, len, desc);
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


/* ---------------------------------------------------------------- selection */
#define LT_RADIX_BITS 4
#define LT_RADIX_DIGITS (1 << LT_RADIX_BITS)
enum { LT_SELECT_TOPK = 0, LT_SELECT_TOPK_SORTED = 1, LT_SELECT_KTH = 2 };

/* the radix key's type: 64 bits for Double and Long, 32 for the others */
template <typename T> struct lt_radix_of { typedef unsigned type; };
template <> struct lt_radix_of<double> { typedef unsigned long long type; };
template <> struct lt_radix_of<long long> { typedef unsigned long long type; };

/* An unsigned key in the ascending order of lt_sort_before: flip the sign bit of a two's complement integer; a
 * float's sign-magnitude bits: all inverted when negative, the sign set when not. NaN: the largest key. */
template <typename T> LT_D typename lt_radix_of<T>::type lt_radix_key(lt_acc_t<T> v) {
  typedef typename lt_radix_of<T>::type K;
  constexpr K top = (K)1 << (sizeof(K) * 8 - 1);
  if constexpr (!lt_is_int<T>::value) {
    if (lt_isnan(v)) return ~(K)0;
    if (v == 0) return top;   /* -0 is 0 */
    K bits;
    if constexpr (sizeof(K) == 8) bits = (K)__double_as_longlong((double)v);
    else bits = __float_as_uint((float)v);
    return (bits & top) ? ~bits : bits | top;
  } else if constexpr (sizeof(K) == 8) {
    return (K)v ^ top;
  } else {
    return (K)(int)v ^ top;
  }
}

template <typename T, typename I>
LT_D void lt_select(lt_cu_tensor xs, long long x_stride, lt_cu_tensor vs, long long v_stride, lt_cu_tensor is,
                    long long i_stride, long long nslices, long long n, long long k, int desc, int mode) {
  typedef lt_acc_t<T> A;
  typedef typename lt_radix_of<T>::type K;
  __shared__ unsigned long long sh_counts[32][LT_RADIX_DIGITS];   /* per warp, per digit */
  __shared__ K sh_prefix, sh_mask;
  __shared__ long long sh_need, sh_kth;
  __shared__ A sk[LT_SORT_TILE];           /* topk's pairs */
  __shared__ long long si[LT_SORT_TILE];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31u) >> 5;
  T *pv = (T *)vs.data;
  long long *pi = (long long *)is.data;
  for (long long s = blockIdx.x; s < nslices; s += gridDim.x) {
    const T *px = (const T *)xs.data + lt_offset<I>(xs, (I)s);
    const auto key_at = [&](long long j) {
      const K key = lt_radix_key<T>(lt_cast<A>(px[(I)j * (I)x_stride]));
      return desc ? (K)~key : key;
    };
    if (threadIdx.x == 0) sh_prefix = 0, sh_mask = 0, sh_need = k;
    __syncthreads();
    for (int shift = (int)sizeof(K) * 8 - LT_RADIX_BITS; shift >= 0; shift -= LT_RADIX_BITS) {
      const K prefix = sh_prefix, mask = sh_mask;
      unsigned long long count[LT_RADIX_DIGITS];
      LT_UNROLL for (int d = 0; d < LT_RADIX_DIGITS; ++d) count[d] = 0;
      for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        const K key = key_at(j);
        const int digit = (int)((key >> shift) & (LT_RADIX_DIGITS - 1));
        const bool match = (key & mask) == prefix;
        LT_UNROLL for (int d = 0; d < LT_RADIX_DIGITS; ++d) count[d] += match && digit == d;
      }
      LT_UNROLL for (int d = 0; d < LT_RADIX_DIGITS; ++d) {
        const unsigned long long c = lt_warp_reduce(count[d], lt_op_sum());
        if (lane == 0) sh_counts[warp][d] = c;
      }
      __syncthreads();
      if (threadIdx.x == 0) {   /* the digit where the running count reaches the rank still wanted */
        long long need = sh_need;
        int digit = LT_RADIX_DIGITS - 1;
        for (int d = 0; d < LT_RADIX_DIGITS; ++d) {
          long long c = 0;
          for (unsigned w = 0; w < nwarps; ++w) c += (long long)sh_counts[w][d];
          if (c >= need) {
            digit = d;
            break;
          }
          need -= c;
        }
        sh_prefix = prefix | ((K)digit << shift);
        sh_mask = mask | ((K)(LT_RADIX_DIGITS - 1) << shift);
        sh_need = need;
      }
      __syncthreads();
    }
    /* the k-th key is sh_prefix; it is the sh_need-th (by index) of the keys equal to it */
    const K kth = sh_prefix;
    const long long need = sh_need;
    long long eq_before = 0, taken = 0;
    for (long long base = 0; base < n; base += blockDim.x) {   /* the same trip count in every thread */
      const long long j = base + threadIdx.x;
      const K key = j < n ? key_at(j) : 0;
      const int eq = j < n && key == kth, below = j < n && key < kth;
      int eq_tile, sel_tile;
      const long long eq_rank = eq_before + lt_block_scan(eq, lt_op_sum(), 0, &eq_tile);
      eq_before += eq_tile;
      if (mode == LT_SELECT_KTH) {
        if (eq && eq_rank == need) sh_kth = j;
        continue;
      }
      const int sel = below || (eq && eq_rank <= need);
      const long long at = taken + lt_block_scan(sel, lt_op_sum(), 0, &sel_tile) - 1;
      taken += sel_tile;
      if (sel) sk[at] = lt_cast<A>(px[(I)j * (I)x_stride]), si[at] = j;
    }
    __syncthreads();
    if (mode == LT_SELECT_KTH && threadIdx.x == 0) {
      pv[lt_offset<I>(vs, (I)s)] = px[(I)sh_kth * (I)x_stride];
      pi[lt_offset<I>(is, (I)s)] = sh_kth + 1;
    }
    if (mode != LT_SELECT_KTH) {
      if (mode == LT_SELECT_TOPK_SORTED) {
        int p = 1;
        while (p < k) p <<= 1;
        for (int j = (int)k + threadIdx.x; j < p; j += blockDim.x) si[j] = n + j;   /* padding */
        __syncthreads();
        lt_bitonic_shared(sk, si, p, n, desc);
      }
      for (long long j = threadIdx.x; j < k; j += blockDim.x) {
        pv[lt_offset<I>(vs, (I)s) + (I)j * (I)v_stride] = lt_cast<T>(sk[j]);
        pi[lt_offset<I>(is, (I)s) + (I)j * (I)i_stride] = si[j] + 1;
      }
    }
    __syncthreads();   /* the next slice reuses the shared arrays */
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
  LT_EXPORT(lt_sort_mode_##N##_##IDX)                                                                     \
  extern "C" __global__ void lt_select_##N##_##IDX(lt_cu_tensor xs, long long x_stride, lt_cu_tensor vs,  \
                                                   long long v_stride, lt_cu_tensor is, long long i_stride, \
                                                   long long nslices, long long n, long long k, int desc, \
                                                   int mode) {                                            \
    lt_select<T, lt_##IDX>(xs, x_stride, vs, v_stride, is, i_stride, nslices, n, k, desc, mode);          \
  }                                                                                                       \
  LT_EXPORT(lt_select_##N##_##IDX)

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
