/* index.cu — Torch7's index family along one dimension (index, indexCopy, indexAdd, indexFill) and gather /
 * scatter, on strided tensors of the 8 element types.
 *
 * Every tensor operand is passed as its "slices" view (as in reduce_dim.cu): the tensor's lt_cu_tensor with the
 * indexed dimension removed (the host may collapse what is left), plus that dimension's stride. Row r of slice s
 * of tensor t is  ((T*)t.data)[offset(t, s) + r * stride]. All views of one launch hold nslices elements, paired
 * by their row-major number s (so two tensors whose slices have equal element counts but different shapes pair
 * as Torch7's copy pairs them).
 *
 *   lt_index_rows_<T>_<idx>(T dst, T src, q nslices, q dstride, q sstride, const q* rows, const q* first,
 *                           const q* positions, q nrows, int add)
 *     for k < nrows: destination row d = rows ? rows[k] : k; source rows positions[j] for j in
 *     [first[k], first[k+1]) (first NULL: j = k alone), 0-based.
 *     add 0: dst row d = the source row of the LAST j (Torch7's indexCopy: the last of repeated indices wins);
 *     add 1: dst row d += each source row, in the order of j, rounded to T after each addition (the CPU kernel's
 *     sequence of (T)(to + from)).
 *     index (select): rows NULL, first NULL, positions = the indices - 1. indexCopy/indexAdd: the host's
 *     per-destination lists (distinct rows, the positions naming each in order): every destination element has
 *     one writer, so repeated indices need no atomics and the result is deterministic.
 *     Thread per (k, s), s fastest.
 *   lt_index_fill_<T>_<idx>(T dst, q nslices, q dstride, const q* rows, q nrows, A value)
 *     dst row rows[k] = value; thread per (k, s).
 *   lt_gather_<T>_<idx>(T dst, T src, T index, q nslices, q len, q dstride, q sstride, q istride)
 *     dst, src and index are the slices views of tensors of index's shape (src: of its own size along dim);
 *     dst row j of slice s = src row index[s, j] - 1 of slice s (index Long, 1-based); thread per (j, s).
 *   lt_scatter_<T>_<idx>(T dst, T src, T index, q nslices, q len, q dstride, q sstride, q istride, int mode,
 *                        A value)
 *     for j < len in order: dst row index[s, j] - 1 of slice s = src row j of slice s (mode 0), += it (mode 1:
 *     scatterAdd), = value (mode 2; src unused); one thread per slice walks its len rows in order, so repeated
 *     targets end as the CPU kernel leaves them (the last one wins, sums in order) and no atomics are needed.
 *   lt_index_check_Long_<idx>(T index, q n, q limit, q* bad)
 *     bad[0] = 1 when some of the n elements of index (Long, 1-based) is outside [1, limit]; otherwise bad[0] is
 *     left alone (the host zeroes it first). Grid-stride.
 *   lt_nonzero_count_<T>_<idx>(T x, q n, q chunk, q* counts) ★
 *     counts[b] = the number of non-zero elements among x's elements [b·chunk, min(n, (b+1)·chunk)) (row-major);
 *     a block per chunk (grid-stride over chunks with blockIdx.x).
 *   lt_nonzero_write_<T>_<idx>(T x, T shape, q n, q chunk, const q* starts, q* out) ★
 *     chunk b's non-zero elements, in order, get rows starts[b], starts[b] + 1, ... of out (contiguous, shape.dims
 *     columns): their 1-based coordinates in x's logical shape (shape.sizes, uncollapsed; its strides unused). A
 *     block per chunk, tiles of blockDim elements ranked by a block-wide prefix sum (shared memory).
 * All grid-stride: any launch geometry (★: blockDim.x a multiple of 32, at most 1024). Values are moved as T
 * (copies exact); sums in lt_acc_t<T>.
 */
#include "lt_cuda_common.cuh"

template <typename T, typename I>
LT_D void lt_index_rows_impl(lt_cu_tensor dst, lt_cu_tensor src, long long nslices, long long dstride,
                             long long sstride, const long long *rows, const long long *first,
                             const long long *positions, long long nrows, int add) {
  typedef lt_acc_t<T> A;
  T *pd = (T *)dst.data;
  const T *ps = (const T *)src.data;
  LT_GRID_LOOP(I, e, (I)nrows * (I)nslices) {
    const I k = e / (I)nslices, s = e - k * (I)nslices;
    const I d = rows ? (I)rows[k] : k;
    const I j0 = first ? (I)first[k] : k, j1 = first ? (I)first[k + 1] : k + 1;
    const I so = lt_offset<I>(src, s);
    T *to = pd + lt_offset<I>(dst, s) + d * (I)dstride;
    if (add) {
      T v = *to;
      for (I j = j0; j < j1; ++j) v = lt_cast<T>(lt_cast<A>(v) + lt_cast<A>(ps[so + (I)positions[j] * (I)sstride]));
      *to = v;
    } else if (j1 > j0) {
      *to = ps[so + (I)positions[j1 - 1] * (I)sstride];
    }
  }
}

template <typename T, typename I>
LT_D void lt_index_fill_impl(lt_cu_tensor dst, long long nslices, long long dstride, const long long *rows,
                             long long nrows, lt_acc_t<T> value) {
  T *pd = (T *)dst.data;
  const T v = lt_cast<T>(value);
  LT_GRID_LOOP(I, e, (I)nrows * (I)nslices) {
    const I k = e / (I)nslices, s = e - k * (I)nslices;
    pd[lt_offset<I>(dst, s) + (I)rows[k] * (I)dstride] = v;
  }
}

template <typename T, typename I>
LT_D void lt_gather_impl(lt_cu_tensor dst, lt_cu_tensor src, lt_cu_tensor index, long long nslices, long long len,
                         long long dstride, long long sstride, long long istride) {
  T *pd = (T *)dst.data;
  const T *ps = (const T *)src.data;
  const long long *pi = (const long long *)index.data;
  LT_GRID_LOOP(I, e, (I)len * (I)nslices) {
    const I j = e / (I)nslices, s = e - j * (I)nslices;
    const I r = (I)(pi[lt_offset<I>(index, s) + j * (I)istride] - 1);
    pd[lt_offset<I>(dst, s) + j * (I)dstride] = ps[lt_offset<I>(src, s) + r * (I)sstride];
  }
}

template <typename T, typename I>
LT_D void lt_scatter_impl(lt_cu_tensor dst, lt_cu_tensor src, lt_cu_tensor index, long long nslices, long long len,
                          long long dstride, long long sstride, long long istride, int mode, lt_acc_t<T> value) {
  typedef lt_acc_t<T> A;
  T *pd = (T *)dst.data;
  const T *ps = (const T *)src.data;
  const long long *pi = (const long long *)index.data;
  const T v = lt_cast<T>(value);
  LT_GRID_LOOP(I, s, nslices) {
    T *to = pd + lt_offset<I>(dst, s);
    const long long *ix = pi + lt_offset<I>(index, s);
    const T *from = mode == 2 ? (const T *)0 : ps + lt_offset<I>(src, s);
    for (I j = 0; j < (I)len; ++j) {
      T *p = to + (I)(ix[j * (I)istride] - 1) * (I)dstride;
      if (mode == 2) *p = v;
      else if (mode == 1) *p = lt_cast<T>(lt_cast<A>(*p) + lt_cast<A>(from[j * (I)sstride]));
      else *p = from[j * (I)sstride];
    }
  }
}

template <typename I>
LT_D void lt_index_check_impl(lt_cu_tensor index, long long n, long long limit, long long *bad) {
  const long long *pi = (const long long *)index.data;
  LT_GRID_LOOP(I, e, n) {
    const long long v = pi[lt_offset<I>(index, e)];
    if (v < 1 || v > limit) *bad = 1;
  }
}

template <typename T, typename I>
LT_D void lt_nonzero_count_impl(lt_cu_tensor x, long long n, long long chunk, long long *counts) {
  const T *px = (const T *)x.data;
  const long long nchunks = (n + chunk - 1) / chunk;
  for (long long b = blockIdx.x; b < nchunks; b += gridDim.x) {
    const long long end = (b + 1) * chunk < n ? (b + 1) * chunk : n;
    long long c = 0;
    for (long long i = b * chunk + threadIdx.x; i < end; i += blockDim.x) c += lt_cast<lt_acc_t<T>>(px[lt_offset<I>(x, (I)i)]) != 0;
    c = lt_block_reduce(c, lt_op_sum(), 0ll);
    if (threadIdx.x == 0) counts[b] = c;
  }
}

template <typename T, typename I>
LT_D void lt_nonzero_write_impl(lt_cu_tensor x, lt_cu_tensor shape, long long n, long long chunk,
                                const long long *starts, long long *out) {
  __shared__ long long lt_nz_rank[1024];
  const T *px = (const T *)x.data;
  const long long nchunks = (n + chunk - 1) / chunk;
  const unsigned t = threadIdx.x;
  for (long long b = blockIdx.x; b < nchunks; b += gridDim.x) {
    const long long end = (b + 1) * chunk < n ? (b + 1) * chunk : n;
    long long row = starts[b];
    for (long long tile = b * chunk; tile < end; tile += blockDim.x) {
      const long long i = tile + t;
      const long long flag = i < end && lt_cast<lt_acc_t<T>>(px[lt_offset<I>(x, (I)i)]) != 0;
      lt_nz_rank[t] = flag;
      __syncthreads();
      for (unsigned d = 1; d < blockDim.x; d <<= 1) {   /* inclusive prefix sum over the tile */
        const long long v = t >= d ? lt_nz_rank[t - d] : 0;
        __syncthreads();
        lt_nz_rank[t] += v;
        __syncthreads();
      }
      if (flag) {
        long long *o = out + (row + lt_nz_rank[t] - 1) * shape.dims;
        long long rest = i;
        for (int d = shape.dims - 1; d >= 0; --d) {
          o[d] = rest % shape.sizes[d] + 1;
          rest /= shape.sizes[d];
        }
      }
      row += lt_nz_rank[blockDim.x - 1];
      __syncthreads();   /* the ranks are read before the next tile writes them */
    }
  }
}

#define LT_INDEX1(T, N, IDX)                                                                                    \
  extern "C" __global__ void lt_index_rows_##N##_##IDX(lt_cu_tensor dst, lt_cu_tensor src, long long nslices,  \
                                                       long long dstride, long long sstride,                   \
                                                       const long long *rows, const long long *first,          \
                                                       const long long *positions, long long nrows, int add) { \
    lt_index_rows_impl<T, lt_##IDX>(dst, src, nslices, dstride, sstride, rows, first, positions, nrows, add);   \
  }                                                                                                             \
  LT_EXPORT(lt_index_rows_##N##_##IDX)                                                                          \
  extern "C" __global__ void lt_index_fill_##N##_##IDX(lt_cu_tensor dst, long long nslices, long long dstride,  \
                                                       const long long *rows, long long nrows,                 \
                                                       lt_acc_t<T> value) {                                    \
    lt_index_fill_impl<T, lt_##IDX>(dst, nslices, dstride, rows, nrows, value);                                 \
  }                                                                                                             \
  LT_EXPORT(lt_index_fill_##N##_##IDX)                                                                          \
  extern "C" __global__ void lt_gather_##N##_##IDX(lt_cu_tensor dst, lt_cu_tensor src, lt_cu_tensor index,     \
                                                   long long nslices, long long len, long long dstride,        \
                                                   long long sstride, long long istride) {                     \
    lt_gather_impl<T, lt_##IDX>(dst, src, index, nslices, len, dstride, sstride, istride);                      \
  }                                                                                                             \
  LT_EXPORT(lt_gather_##N##_##IDX)                                                                              \
  extern "C" __global__ void lt_scatter_##N##_##IDX(lt_cu_tensor dst, lt_cu_tensor src, lt_cu_tensor index,    \
                                                    long long nslices, long long len, long long dstride,       \
                                                    long long sstride, long long istride, int mode,            \
                                                    lt_acc_t<T> value) {                                       \
    lt_scatter_impl<T, lt_##IDX>(dst, src, index, nslices, len, dstride, sstride, istride, mode, value);        \
  }                                                                                                             \
  LT_EXPORT(lt_scatter_##N##_##IDX)                                                                             \
  extern "C" __global__ void lt_nonzero_count_##N##_##IDX(lt_cu_tensor x, long long n, long long chunk,        \
                                                          long long *counts) {                                 \
    lt_nonzero_count_impl<T, lt_##IDX>(x, n, chunk, counts);                                                    \
  }                                                                                                             \
  LT_EXPORT(lt_nonzero_count_##N##_##IDX)                                                                       \
  extern "C" __global__ void lt_nonzero_write_##N##_##IDX(lt_cu_tensor x, lt_cu_tensor shape, long long n,     \
                                                          long long chunk, const long long *starts,            \
                                                          long long *out) {                                    \
    lt_nonzero_write_impl<T, lt_##IDX>(x, shape, n, chunk, starts, out);                                        \
  }                                                                                                             \
  LT_EXPORT(lt_nonzero_write_##N##_##IDX)

#define LT_INDEX(T, N) LT_INDEX1(T, N, i32) LT_INDEX1(T, N, i64)

LT_FOR_ALL_TYPES(LT_INDEX)

#define LT_INDEX_CHECK(IDX)                                                                                     \
  extern "C" __global__ void lt_index_check_Long_##IDX(lt_cu_tensor index, long long n, long long limit,       \
                                                       long long *bad) {                                       \
    lt_index_check_impl<lt_##IDX>(index, n, limit, bad);                                                        \
  }                                                                                                             \
  LT_EXPORT(lt_index_check_Long_##IDX)

LT_INDEX_CHECK(i32)
LT_INDEX_CHECK(i64)
