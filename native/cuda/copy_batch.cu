/* copy_batch.cu — many same-type strided copies in one launch (torch.cat of device tensors: each input into its
 * slab of the result; cutorch's catArray did the same with its batched kernel).
 *
 *   lt_copy_batch_<B>_<idx>(const lt_copy_batch_entry *entries, long long count, long long blocks, long long chunk)
 *
 * B is the element size in bytes (1, 2, 4, 8): a same-type copy moves bits, so one kernel serves every type of
 * that size (NaN payloads and -0 kept). entries (device memory, count of them) each describe one copy:
 *     lt_cu_tensor dst, src;    the two operands, both holding n elements (element i of src to element i of dst,
 *                               row-major order of each, as copy.cu)
 *     long long n;              elements
 *     long long first_block;    the entry's first "virtual block": entry e owns virtual blocks
 *                               [first_block_e, first_block_e + ceil(n_e / chunk)), and first_block of the
 *                               entries ascends, starting at 0
 * `blocks` is the total of virtual blocks. Virtual block v of entry e copies elements [(v - first_block) * chunk,
 * min(n, ... + chunk)) of it, its threads striding by blockDim.x; the launch's blocks take the virtual blocks
 * grid-stride. So every entry gets blocks in proportion to its size, and any grid, block and chunk >= 1 is
 * correct. The destinations must not overlap each other or any source.
 */
#include "lt_cuda_common.cuh"

typedef struct lt_copy_batch_entry {
  lt_cu_tensor dst;
  lt_cu_tensor src;
  long long n;
  long long first_block;
} lt_copy_batch_entry;

/* the element as bits: same-type copies need no conversion */
template <int B> struct lt_bits;
template <> struct lt_bits<1> { typedef unsigned char t; };
template <> struct lt_bits<2> { typedef unsigned short t; };
template <> struct lt_bits<4> { typedef unsigned int t; };
template <> struct lt_bits<8> { typedef unsigned long long t; };

/* the entry that owns virtual block v: the last one whose first_block is <= v */
LT_D long long lt_copy_batch_owner(const lt_copy_batch_entry *entries, long long count, long long v) {
  long long lo = 0, hi = count - 1;
  while (lo < hi) {
    const long long mid = lo + (hi - lo + 1) / 2;
    if (entries[mid].first_block <= v) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <int B, typename I>
LT_D void lt_copy_batch_impl(const lt_copy_batch_entry *entries, long long count, long long blocks, long long chunk) {
  typedef typename lt_bits<B>::t E;
  __shared__ lt_copy_batch_entry e;
  for (long long v = blockIdx.x; v < blocks; v += gridDim.x) {
    if (threadIdx.x == 0) e = entries[lt_copy_batch_owner(entries, count, v)];
    __syncthreads();
    const long long first = (v - e.first_block) * chunk;
    const long long end = first + chunk < e.n ? first + chunk : e.n;
    E *pd = (E *)e.dst.data;
    const E *ps = (const E *)e.src.data;
    if (e.dst.dims == 1 && e.src.dims == 1) {
      const I ds = (I)e.dst.strides[0], ss = (I)e.src.strides[0];
      for (long long i = first + threadIdx.x; i < end; i += blockDim.x) pd[(I)i * ds] = ps[(I)i * ss];
    } else {
      for (long long i = first + threadIdx.x; i < end; i += blockDim.x)
        pd[lt_offset<I>(e.dst, (I)i)] = ps[lt_offset<I>(e.src, (I)i)];
    }
    __syncthreads();   /* every thread is done with e before thread 0 loads the next entry */
  }
}

#define LT_COPY_BATCH(B)                                                                                       \
  extern "C" __global__ void lt_copy_batch_##B##_i32(const lt_copy_batch_entry *entries, long long count,     \
                                                     long long blocks, long long chunk) {                     \
    lt_copy_batch_impl<B, lt_i32>(entries, count, blocks, chunk);                                              \
  }                                                                                                            \
  LT_EXPORT(lt_copy_batch_##B##_i32)                                                                           \
  extern "C" __global__ void lt_copy_batch_##B##_i64(const lt_copy_batch_entry *entries, long long count,     \
                                                     long long blocks, long long chunk) {                     \
    lt_copy_batch_impl<B, lt_i64>(entries, count, blocks, chunk);                                              \
  }                                                                                                            \
  LT_EXPORT(lt_copy_batch_##B##_i64)

LT_COPY_BATCH(1)
LT_COPY_BATCH(2)
LT_COPY_BATCH(4)
LT_COPY_BATCH(8)
