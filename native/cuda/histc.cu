/* histc.cu — Torch7's histc: the counts of x's elements in nbins equal bins over [lo, hi], Float and Double.
 *
 * Two launches without atomics (the partial counts of each block, then their sums):
 *   lt_histc_partial_<T>_<idx>(T x, q n, q chunk, A lo, A hi, q nbins, q *partial)   ★
 *     Block b counts the elements [b·chunk, min(n, (b+1)·chunk)) of x (row-major) into partial[b·nbins + k] for
 *     every bin k < nbins (all written, 0 for an empty chunk). An element v with lo <= v <= hi counts in bin
 *     (long long)((v - lo) / (hi - lo) · nbins) computed in T (the CPU kernel's formula and rounding), or nbins - 1
 *     when that is nbins (v = hi); a NaN, and an element outside [lo, hi], counts nowhere. The block walks its chunk
 *     in tiles of blockDim.x elements whose bins go to shared memory; thread t counts the tile's entries equal to
 *     its bin t + r·blockDim.x, in rounds r over the bins. Every thread runs the same tiles and rounds.
 *   lt_histc_total_<T>_<idx>(T out, const q *partial, q nblocks, q nbins)
 *     out's element k (out: nbins elements, any strides) = Σ_b partial[b·nbins + k] converted to T. A thread per
 *     bin, grid-stride.
 * ★: blockDim.x a multiple of 32, at most 1024.
 */
#include "lt_cuda_common.cuh"

#define LT_HISTC_MAX_BLOCK 1024

/* the bin of v, or -1 when it counts nowhere */
template <typename T>
LT_D long long lt_histc_bin(T v, T lo, T hi, long long nbins) {
  if (!(v >= lo && v <= hi)) return -1;
  long long bin = (long long)((v - lo) / (hi - lo) * (T)nbins);
  if (bin > nbins - 1) bin = nbins - 1;
  return bin < 0 ? -1 : bin;
}

template <typename T, typename I>
LT_D void lt_histc_partial_impl(lt_cu_tensor x, long long n, long long chunk, T lo, T hi, long long nbins,
                                long long *partial) {
  __shared__ long long lt_histc_tile[LT_HISTC_MAX_BLOCK];
  const long long start = (long long)blockIdx.x * chunk;
  const long long first = start < n ? start : n, end = start + chunk < n ? start + chunk : n;
  const T *px = (const T *)x.data;
  for (long long round = 0; round < nbins; round += blockDim.x) {
    const long long mine = round + threadIdx.x;
    long long count = 0;
    for (long long base = first; base < end; base += blockDim.x) {
      const long long i = base + threadIdx.x;
      lt_histc_tile[threadIdx.x] = i < end ? lt_histc_bin<T>(px[lt_offset<I>(x, (I)i)], lo, hi, nbins) : -1;
      __syncthreads();
      const long long m = end - base < (long long)blockDim.x ? end - base : (long long)blockDim.x;
      for (long long j = 0; j < m; ++j) count += lt_histc_tile[j] == mine;
      __syncthreads();
    }
    if (mine < nbins) partial[(long long)blockIdx.x * nbins + mine] = count;
  }
}

template <typename T, typename I>
LT_D void lt_histc_total_impl(lt_cu_tensor out, const long long *partial, long long nblocks, long long nbins) {
  LT_GRID_LOOP(I, k, nbins) {
    long long sum = 0;
    for (long long b = 0; b < nblocks; ++b) sum += partial[b * nbins + (long long)k];
    ((T *)out.data)[lt_offset<I>(out, k)] = (T)sum;
  }
}

#define LT_HISTC1(T, N, IDX)                                                                                  \
  extern "C" __global__ void lt_histc_partial_##N##_##IDX(lt_cu_tensor x, long long n, long long chunk,      \
                                                          T lo, T hi, long long nbins, long long *partial) { \
    lt_histc_partial_impl<T, lt_##IDX>(x, n, chunk, lo, hi, nbins, partial);                                  \
  }                                                                                                           \
  LT_EXPORT(lt_histc_partial_##N##_##IDX)                                                                     \
  extern "C" __global__ void lt_histc_total_##N##_##IDX(lt_cu_tensor out, const long long *partial,          \
                                                        long long nblocks, long long nbins) {                \
    lt_histc_total_impl<T, lt_##IDX>(out, partial, nblocks, nbins);                                           \
  }                                                                                                           \
  LT_EXPORT(lt_histc_total_##N##_##IDX)

#define LT_HISTC(T, N) LT_HISTC1(T, N, i32) LT_HISTC1(T, N, i64)

LT_IF_Float(LT_HISTC(float, Float)) LT_IF_Double(LT_HISTC(double, Double))
