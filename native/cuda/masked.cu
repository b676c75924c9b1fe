/* masked.cu — maskedSelect and maskedCopy: a stream compaction over a Byte mask in three launches.
 *
 * The n elements (row-major order, as in pointwise.cu) are cut into gridDim.x consecutive chunks of `chunk`
 * elements (the last one may be shorter or empty); block b owns elements [b·chunk, min(n, (b+1)·chunk)). The
 * count and the scatter launch must use the same grid and chunk. A mask element is set when it is not 0.
 *
 *   lt_mask_count_<idx>(T mask, q n, q chunk, q *counts, q *big)            ★
 *       counts[b] = the set elements of block b's chunk, big[b] = how many of them are above 1 (Torch7 refuses
 *       such masks: the host checks the total).
 *   lt_mask_scan(q *counts, q nblocks, const q *big, q *totals)             ★◆
 *       counts[0..nblocks) replaced by their exclusive prefix sums (the first set element of each chunk's place
 *       in the compacted order); totals[0] = Σ counts, totals[1] = Σ big. Any nblocks.
 *   lt_masked_select_<T>_<idx>(T out, T x, T mask, q n, q chunk, const q *offsets, q limit)   ★
 *       out = x's elements where the mask is set, in row-major order: the k-th set element of x (counted
 *       row-major from 0) goes to out's element k (row-major), for k < limit (out's element count; the host
 *       sizes out to Σ counts). offsets: lt_mask_scan's counts.
 *   lt_masked_copy_<T>_<idx>(T out, T src, T mask, q n, q chunk, const q *offsets, q limit)   ★
 *       out's k-th set element (row-major) = src's element k (row-major), for k < limit (src's element count;
 *       the host checks that it is at least Σ counts); out's other elements are not written.
 *
 * Inside a chunk the block walks tiles of blockDim.x elements: one flag per thread, a block-wide prefix sum
 * (warp shuffles, then the warps' totals in shared memory) places the set ones, a running count carries over
 * to the next tile. Every thread of a block runs the same number of tiles (the __syncthreads are uniform).
 * ★: blockDim.x a multiple of 32, at most 1024. ◆: launch with grid 1. Types: every type but Half.
 */
#include "lt_cuda_common.cuh"

/* block b's share [*first, *end) of n elements in chunks of `chunk` */
LT_D void lt_chunk_of(long long n, long long chunk, long long *first, long long *end) {
  const long long f = (long long)blockIdx.x * chunk;
  *first = f < n ? f : n;
  *end = f + chunk < n ? f + chunk : n;
}

template <typename I>
LT_D void lt_mask_count_impl(lt_cu_tensor mask, long long n, long long chunk, long long *counts, long long *big) {
  const unsigned char *pm = (const unsigned char *)mask.data;
  long long first, end, ones = 0, above = 0;
  lt_chunk_of(n, chunk, &first, &end);
  for (long long i = first + threadIdx.x; i < end; i += blockDim.x) {
    const unsigned char m = pm[lt_offset<I>(mask, (I)i)];
    ones += m != 0;
    above += m > 1;
  }
  ones = lt_block_reduce(ones, lt_op_sum(), 0ll);
  above = lt_block_reduce(above, lt_op_sum(), 0ll);
  if (threadIdx.x == 0) {
    counts[blockIdx.x] = ones;
    big[blockIdx.x] = above;
  }
}

extern "C" __global__ void lt_mask_count_i32(lt_cu_tensor mask, long long n, long long chunk, long long *counts,
                                             long long *big) {
  lt_mask_count_impl<lt_i32>(mask, n, chunk, counts, big);
}
LT_EXPORT(lt_mask_count_i32)
extern "C" __global__ void lt_mask_count_i64(lt_cu_tensor mask, long long n, long long chunk, long long *counts,
                                             long long *big) {
  lt_mask_count_impl<lt_i64>(mask, n, chunk, counts, big);
}
LT_EXPORT(lt_mask_count_i64)

extern "C" __global__ void lt_mask_scan(long long *counts, long long nblocks, const long long *big,
                                        long long *totals) {
  if (blockIdx.x != 0) return;
  long long carry = 0, above = 0;
  for (long long base = 0; base < nblocks; base += blockDim.x) {
    const long long i = base + threadIdx.x;
    const long long v = i < nblocks ? counts[i] : 0;
    above += i < nblocks ? big[i] : 0;
    long long tile;
    const long long incl = lt_block_scan(v, lt_op_sum(), 0ll, &tile);
    if (i < nblocks) counts[i] = carry + incl - v;
    carry += tile;
  }
  above = lt_block_reduce(above, lt_op_sum(), 0ll);
  if (threadIdx.x == 0) {
    totals[0] = carry;
    totals[1] = above;
  }
}
LT_EXPORT(lt_mask_scan)

/* Walks block b's chunk: put(i, k) for each set element i (row-major in the n elements) with its place k in the
 * compacted order. */
template <typename I, typename Put>
LT_D void lt_compact(lt_cu_tensor mask, long long n, long long chunk, const long long *offsets, long long limit,
                     Put put) {
  const unsigned char *pm = (const unsigned char *)mask.data;
  long long first, end;
  lt_chunk_of(n, chunk, &first, &end);
  long long k0 = offsets[blockIdx.x];
  for (long long base = first; base < end; base += blockDim.x) {
    const long long i = base + threadIdx.x;
    const int set = i < end && pm[lt_offset<I>(mask, (I)i)] != 0;
    int tile;
    const int incl = lt_block_scan(set, lt_op_sum(), 0, &tile);
    if (set && k0 + incl - 1 < limit) put((I)i, (I)(k0 + incl - 1));
    k0 += tile;
  }
}

/* maskedSelect (Select: out[k] = y[i], y the source) or maskedCopy (out[i] = y[k], y the src) over the set elements i
 * and their places k */
template <typename T, typename I, bool Select>
LT_D void lt_masked_move(lt_cu_tensor out, lt_cu_tensor y, lt_cu_tensor mask, long long n, long long chunk,
                         const long long *offsets, long long limit) {
  T *po = (T *)out.data;
  const T *py = (const T *)y.data;
  lt_compact<I>(mask, n, chunk, offsets, limit, [&](I i, I k) {
    if constexpr (Select) po[lt_offset<I>(out, k)] = py[lt_offset<I>(y, i)];
    else po[lt_offset<I>(out, i)] = py[lt_offset<I>(y, k)];
  });
}

#define LT_MASKED_TYPE(T, N)                                                                                   \
  LT_PW_BOTH(lt_masked_select_##N,                                                                            \
             (lt_cu_tensor out, lt_cu_tensor x, lt_cu_tensor mask, long long n, long long chunk,              \
              const long long *offsets, long long limit),                                                     \
             (lt_masked_move<T, I, true>(out, x, mask, n, chunk, offsets, limit)))                               \
  LT_PW_BOTH(lt_masked_copy_##N,                                                                              \
             (lt_cu_tensor out, lt_cu_tensor src, lt_cu_tensor mask, long long n, long long chunk,            \
              const long long *offsets, long long limit),                                                     \
             (lt_masked_move<T, I, false>(out, src, mask, n, chunk, offsets, limit)))

LT_FOR_INT_TYPES(LT_MASKED_TYPE)
LT_IF_Float(LT_MASKED_TYPE(float, Float))
LT_IF_Double(LT_MASKED_TYPE(double, Double))
