/* scan.cu — cumulative sums and products along one dimension (Torch7's cumsum, cumprod), all 8 types.
 *
 *   lt_scan_<T>_<idx>(T out, T xs, q nslices, q n, q ostride, q xstride, int prod)
 *     out and xs: slices views (the scanned dimension removed, see index.cu) of tensors of one shape, ostride and
 *     xstride their strides along it, n its size. Element j of slice s of out = the sum (prod 0) or the product
 *     (prod 1) of elements 0..j of slice s of x, accumulated as the CPU kernel accumulates: in double for Float,
 *     Double and Half (rounded to T at each store), in 64-bit two's complement for the integer types (wrapping,
 *     then converted to T). A thread per slice walks it in order (grid-stride over slices); out may be x.
 *     The host's choice for many short slices.
 *
 * Few long slices (a vector of 10^6 elements) are scanned by blocks instead, in two launches (a reduce-then-scan).
 * Each slice is cut into m = ceil(n / chunk) chunks of `chunk` elements; block g (grid-stride over the nslices·m
 * chunks) owns chunk c = g mod m of slice s = g / m. Both launches must get the same chunk.
 *   lt_scan_totals_<T>_<idx>(T xs, q nslices, q n, q xstride, q chunk, int prod, void *totals)   ★
 *     totals[g] = the sum (product) of chunk g's elements in the accumulator (double, or unsigned 64-bit for
 *     the integer types).
 *   lt_scan_chunks_<T>_<idx>(T out, T xs, q nslices, q n, q ostride, q xstride, q chunk, int prod,
 *                            const void *totals)   ★
 *     Chunk g's carry is the sum (product) of the totals of the chunks before it in its slice; the block walks
 *     its chunk in tiles of blockDim.x elements, a block-wide prefix scan of each tile combined with the carry,
 *     which then takes in the tile's total. Stores as lt_scan's (the integers exact whatever the order; the
 *     floating types differ from the sequential order by double rounding only). out may be x: every element is
 *     read by the first launch and then by the thread that writes it.
 * ★: blockDim.x a multiple of 32, at most 1024.
 */
#include "lt_cuda_common.cuh"

/* the accumulator: unsigned 64-bit (wrapping) for the integer types, double for the others */
template <bool IsInt> struct lt_scan_acc { typedef double type; };
template <> struct lt_scan_acc<true> { typedef unsigned long long type; };

/* an element into the accumulator, and an accumulator into an element, as lt_scan_impl does */
template <typename T, typename Acc> LT_D Acc lt_scan_load(const T *p) {
  if constexpr (lt_is_int<T>::value) return (Acc)lt_cast<long long>(*p);
  else return lt_cast<double>(*p);
}
template <typename T, typename Acc> LT_D void lt_scan_store(T *p, Acc a) {
  if constexpr (lt_is_int<T>::value) *p = lt_cast<T>((long long)a);
  else *p = lt_cast<T>(a);
}

template <typename T, typename I>
LT_D void lt_scan_impl(lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n, long long ostride,
                       long long xstride, int prod) {
  typedef typename lt_scan_acc<lt_is_int<T>::value>::type Acc;
  LT_GRID_LOOP(I, s, nslices) {
    const T *px = (const T *)xs.data + lt_offset<I>(xs, s);
    T *po = (T *)out.data + lt_offset<I>(out, s);
    Acc a = prod ? (Acc)1 : (Acc)0;
    for (I j = 0; j < (I)n; ++j) {
      const Acc v = lt_scan_load<T, Acc>(px + j * (I)xstride);
      a = prod ? a * v : a + v;
      lt_scan_store(po + j * (I)ostride, a);
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

template <typename Acc> LT_D Acc lt_scan_identity(lt_op_sum) { return (Acc)0; }
template <typename Acc> LT_D Acc lt_scan_identity(lt_op_prod) { return (Acc)1; }

/* op over chunk g's elements [first, end) of slice s, for every thread of the block */
template <typename T, typename I, typename Acc, typename Op>
LT_D Acc lt_scan_chunk_total(const T *px, long long xstride, long long first, long long end, Op op, Acc identity) {
  Acc a = identity;
  for (long long j = first + threadIdx.x; j < end; j += blockDim.x) a = op(a, lt_scan_load<T, Acc>(px + (I)j * (I)xstride));
  return lt_block_reduce(a, op, identity);
}

template <typename T, typename I, typename Op>
LT_D void lt_scan_totals_impl(lt_cu_tensor xs, long long nslices, long long n, long long xstride, long long chunk,
                              Op op, void *totals) {
  typedef typename lt_scan_acc<lt_is_int<T>::value>::type Acc;
  const Acc identity = lt_scan_identity<Acc>(op);
  const long long m = (n + chunk - 1) / chunk;
  for (long long g = blockIdx.x; g < nslices * m; g += gridDim.x) {
    const long long s = g / m, first = (g - s * m) * chunk, end = first + chunk < n ? first + chunk : n;
    const T *px = (const T *)xs.data + lt_offset<I>(xs, (I)s);
    const Acc t = lt_scan_chunk_total<T, I>(px, xstride, first, end, op, identity);
    if (threadIdx.x == 0) ((Acc *)totals)[g] = t;
  }
}

template <typename T, typename I, typename Op>
LT_D void lt_scan_chunks_impl(lt_cu_tensor out, lt_cu_tensor xs, long long nslices, long long n, long long ostride,
                              long long xstride, long long chunk, Op op, const void *totals) {
  typedef typename lt_scan_acc<lt_is_int<T>::value>::type Acc;
  const Acc identity = lt_scan_identity<Acc>(op);
  const Acc *tot = (const Acc *)totals;
  const long long m = (n + chunk - 1) / chunk;
  for (long long g = blockIdx.x; g < nslices * m; g += gridDim.x) {
    const long long s = g / m, c = g - s * m, first = c * chunk, end = first + chunk < n ? first + chunk : n;
    Acc carry = identity;
    for (long long b = s * m + threadIdx.x; b < g; b += blockDim.x) carry = op(carry, tot[b]);
    carry = lt_block_reduce(carry, op, identity);
    const T *px = (const T *)xs.data + lt_offset<I>(xs, (I)s);
    T *po = (T *)out.data + lt_offset<I>(out, (I)s);
    for (long long base = first; base < end; base += blockDim.x) {   /* the same trip count in every thread */
      const long long j = base + threadIdx.x;
      const Acc v = j < end ? lt_scan_load<T, Acc>(px + (I)j * (I)xstride) : identity;
      Acc tile;
      const Acc incl = lt_block_scan(v, op, identity, &tile);
      if (j < end) lt_scan_store(po + (I)j * (I)ostride, op(carry, incl));
      carry = op(carry, tile);
    }
  }
}

#define LT_SCAN_BLOCKS1(T, N, IDX)                                                                               \
  extern "C" __global__ void lt_scan_totals_##N##_##IDX(lt_cu_tensor xs, long long nslices, long long n,       \
                                                        long long xstride, long long chunk, int prod,         \
                                                        void *totals) {                                       \
    if (prod) lt_scan_totals_impl<T, lt_##IDX>(xs, nslices, n, xstride, chunk, lt_op_prod(), totals);          \
    else lt_scan_totals_impl<T, lt_##IDX>(xs, nslices, n, xstride, chunk, lt_op_sum(), totals);                \
  }                                                                                                            \
  LT_EXPORT(lt_scan_totals_##N##_##IDX)                                                                        \
  extern "C" __global__ void lt_scan_chunks_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor xs, long long nslices,  \
                                                        long long n, long long ostride, long long xstride,    \
                                                        long long chunk, int prod, const void *totals) {      \
    if (prod) lt_scan_chunks_impl<T, lt_##IDX>(out, xs, nslices, n, ostride, xstride, chunk, lt_op_prod(), totals); \
    else lt_scan_chunks_impl<T, lt_##IDX>(out, xs, nslices, n, ostride, xstride, chunk, lt_op_sum(), totals);   \
  }                                                                                                            \
  LT_EXPORT(lt_scan_chunks_##N##_##IDX)

#define LT_SCAN_BLOCKS(T, N) LT_SCAN_BLOCKS1(T, N, i32) LT_SCAN_BLOCKS1(T, N, i64)

LT_FOR_ALL_TYPES(LT_SCAN_BLOCKS)
