/* cutorch's index family on a device: index, indexCopy, indexAdd, indexFill (the index vector a host LongTensor,
 * checked and turned into per-destination row lists here, then uploaded) and gather / scatter (the index a device
 * LongTensor, checked by a kernel whose verdict is read back). Kernels: native/cuda/index.cu. */
#include "cuda_ops_internal.h"
#include "index_internal.h"

/* t's slices view along dim (dimension dim removed, the rest described for the kernels), its stride along dim,
 * and the largest element offset of t as a whole. */
static int slices_view(const lt_tensor *t, int dim, lt_cu_tensor *v, int64_t *stride, int64_t *max_offset) {
  lt_tensor s = *t;
  s.ndim = 0;
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->size[d] > 0) last += (t->size[d] - 1) * t->stride[d];
    if (d == dim) continue;
    s.size[s.ndim] = t->size[d], s.stride[s.ndim] = t->stride[d], s.ndim++;
  }
  *stride = t->stride[dim];
  *max_offset = last;
  return lt_cuops_describe(&s, v, NULL);
}

static int64_t slice_count(const lt_tensor *t, int dim) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) n *= t->size[d];
  return n;
}

static int check_dim(const char *fn, const lt_tensor *t, int dim) {
  if (dim < 0 || dim >= t->ndim) return lt_fail("%s: dimension %d is out of range for a %dD tensor", fn, dim + 1, t->ndim);
  return 0;
}

/* The host LongTensor vector of 1-based indices into dimension dim of size limit, checked as the CPU kernels
 * check it (the same messages), copied into a malloc'ed array. */
static int host_indices(const char *fn, const lt_tensor *index, int64_t limit, int dim, int64_t **out, int64_t *n) {
  if (index->type != LT_LONG || index->ndim != 1)
    return lt_fail("%s: the index must be a 1-D LongTensor in host memory", fn);
  if (lt_ix_check_range(fn, index, limit, dim)) return -1;
  *n = index->size[0];
  *out = malloc((size_t)(*n > 0 ? *n : 1) * sizeof **out);
  if (!*out) return lt_fail("%s: out of host memory", fn);
  const int64_t *p = (const int64_t *)lt_tensor_data(index);
  for (int64_t i = 0; i < *n; i++) (*out)[i] = p[i * index->stride[0]];
  return 0;
}

/* lt_index_rows over dst's and src's slices views; rows/first NULL: destination k, one source positions[k] */
static int index_rows(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, int dim, void *rows,
                      void *first, void *positions, int64_t nrows, int add) {
  lt_cu_tensor d, s;
  int64_t dstride, sstride, off[2];
  if (slices_view(dst, dim, &d, &dstride, &off[0]) || slices_view(src, dim, &s, &sstride, &off[1])) return -1;
  const int64_t nslices = slice_count(dst, dim), n = nrows * nslices;
  if (n == 0) return 0;
  const unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_index_rows_%s_%s", tname(dst->type), index_kind(ops, n, off, 2, grid));
  int iadd = add;
  args_t a = {0};
  add_tensor(&a, &d);
  add_tensor(&a, &s);
  add_count(&a, nslices);
  add_count(&a, dstride);
  add_count(&a, sstride);
  add_raw(&a, &rows, "p");
  add_raw(&a, &first, "p");
  add_raw(&a, &positions, "p");
  add_count(&a, nrows);
  add_raw(&a, &iadd, "i");
  return launch(ops, stream, "index", kernel, grid, &a);
}

int lt_cuops_index_select(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, int dim,
                          const lt_tensor *index) {
  static const char fn[] = "index";
  if (check_ops(ops, fn) || check_dim(fn, src, dim) || same_type(fn, dst, src, "the source")) return -1;
  int64_t *idx, n;
  if (host_indices(fn, index, src->size[dim], dim, &idx, &n)) return -1;
  int ok = dst->ndim == src->ndim;
  for (int d = 0; ok && d < src->ndim; d++) ok = dst->size[d] == (d == dim ? n : src->size[d]);
  if (!ok) {
    free(idx);
    return lt_fail("%s: the result must have the source's shape with %lld along dimension %d", fn, (long long)n, dim + 1);
  }
  for (int64_t i = 0; i < n; i++) idx[i]--;
  void *dev = NULL;
  int rc = n > 0 ? scratch(ops, stream, n * 8, &dev) : 0;
  if (rc == 0 && n > 0) rc = lt_cuops_upload(ops, dev, idx, n * 8, stream);
  free(idx);
  if (rc == 0) rc = index_rows(ops, stream, dst, src, dim, NULL, NULL, dev, n, 0);
  return scratch_free(ops, dev, rc);
}

int lt_cuops_index_copy(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                        const lt_tensor *src, int add) {
  const char *fn = add ? "indexAdd" : "indexCopy";
  if (check_ops(ops, fn) || check_dim(fn, t, dim) || check_dim(fn, src, dim) || same_type(fn, t, src, "the source"))
    return -1;
  if (slice_count(t, dim) != slice_count(src, dim))
    return lt_fail("%s: slices of the source have %lld elements, of the tensor %lld", fn,
                   (long long)slice_count(src, dim), (long long)slice_count(t, dim));
  int64_t *idx, n, m = 0;
  if (host_indices(fn, index, t->size[dim], dim, &idx, &n)) return -1;
  if (n != src->size[dim]) {
    free(idx);
    return lt_fail("%s: %lld indices for a source of %lld along dimension %d", fn, (long long)n,
                   (long long)src->size[dim], dim + 1);
  }
  void *lists = NULL;
  int rc = row_lists(fn, ops, stream, idx, n, 0, 1, &lists, &m);
  free(idx);
  if (rc == 0 && m > 0)
    rc = index_rows(ops, stream, t, src, dim, lists, (char *)lists + m * 8, (char *)lists + (2 * m + 1) * 8, m, add);
  return scratch_free(ops, lists, rc);
}

int lt_cuops_index_fill(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                        double value) {
  static const char fn[] = "indexFill";
  if (check_ops(ops, fn) || check_dim(fn, t, dim)) return -1;
  int64_t *idx, n;
  if (host_indices(fn, index, t->size[dim], dim, &idx, &n)) return -1;
  for (int64_t i = 0; i < n; i++) idx[i]--;
  lt_cu_tensor d;
  int64_t dstride, off;
  void *dev = NULL;
  const int64_t nslices = slice_count(t, dim), total = n * nslices;
  int rc = slices_view(t, dim, &d, &dstride, &off);
  if (rc == 0 && total > 0) rc = scratch(ops, stream, n * 8, &dev);
  if (rc == 0 && total > 0) rc = lt_cuops_upload(ops, dev, idx, n * 8, stream);
  free(idx);
  if (rc == 0 && total > 0) {
    const unsigned grid = grid_for(ops, total);
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_index_fill_%s_%s", tname(t->type), index_kind(ops, total, &off, 1, grid));
    args_t a = {0};
    add_tensor(&a, &d);
    add_count(&a, nslices);
    add_count(&a, dstride);
    add_raw(&a, &dev, "p");
    add_count(&a, n);
    add_value(&a, lt_host_type(t->type), value);
    rc = launch(ops, stream, "index", kernel, grid, &a);
  }
  return scratch_free(ops, dev, rc);
}

/* ---------------------------------------------------------------- gather / scatter */

/* index (a device LongTensor of t's dimensions) has t's sizes except along dim, where other (NULL: none) has at
 * least index's size */
static int check_gs(const char *fn, const lt_tensor *t, const lt_tensor *index, const lt_tensor *other, int dim) {
  if (lt_host_type(index->type) != LT_LONG || index->type == LT_LONG)
    return lt_fail("%s: the index must be a CudaLongTensor", fn);
  if (check_dim(fn, t, dim)) return -1;
  const lt_tensor *all[2] = {index, other};
  for (int k = 0; k < 2; k++) {
    const lt_tensor *x = all[k];
    if (!x) continue;
    int ok = x->ndim == t->ndim && (k == 0 || x->size[dim] >= index->size[dim]);
    for (int d = 0; ok && d < t->ndim; d++) ok = d == dim || x->size[d] == t->size[d];
    if (!ok) return lt_fail("%s: inconsistent tensor sizes (every dimension but %d must match)", fn, dim + 1);
  }
  return 0;
}

/* *bad = 1 when an element of index lies outside [1, limit] (read back: this waits for the stream) */
static int check_device_indices(const lt_cuops *ops, void *stream, const lt_tensor *index, int64_t limit, int *bad) {
  *bad = 0;
  const int64_t n = lt_tensor_nelement(index);
  if (n == 0) return 0;
  lt_cu_tensor d;
  int64_t off;
  if (lt_cuops_describe(index, &d, &off)) return -1;
  void *flag = NULL;
  long long host = 0;
  int rc = scratch(ops, stream, 8, &flag);
  if (rc == 0) rc = lt_cuops_upload(ops, flag, &host, 8, stream);
  if (rc == 0) {
    const unsigned grid = grid_for(ops, n);
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_index_check_Long_%s", index_kind(ops, n, &off, 1, grid));
    args_t a = {0};
    add_tensor(&a, &d);
    add_count(&a, n);
    add_count(&a, limit);
    add_raw(&a, &flag, "p");
    rc = launch(ops, stream, "index", kernel, grid, &a);
  }
  if (rc == 0) rc = ops->to_host(ops->ctx, &host, flag, 8, stream);
  if (rc == 0) *bad = host != 0;
  return scratch_free(ops, flag, rc);
}

/* gather (mode -1) or scatter (mode 0 copy, 1 add, 2 fill) over the three slices views */
static int gather_scatter(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, const lt_tensor *index,
                          int dim, int mode, double value) {
  lt_cu_tensor v[3];
  int64_t stride[3], off[3];
  const lt_tensor *all[3] = {dst, src, index};
  for (int k = 0; k < 3; k++)
    if (slices_view(all[k], dim, &v[k], &stride[k], &off[k])) return -1;
  const int64_t nslices = slice_count(index, dim), len = index->size[dim], n = nslices * len;
  if (n == 0) return 0;
  const int64_t work = mode < 0 ? n : nslices;
  const unsigned grid = grid_for(ops, work);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", mode < 0 ? "gather" : "scatter", tname(dst->type),
           index_kind(ops, n, off, 3, grid));
  args_t a = {0};
  for (int k = 0; k < 3; k++) add_tensor(&a, &v[k]);
  add_count(&a, nslices);
  add_count(&a, len);
  for (int k = 0; k < 3; k++) add_count(&a, stride[k]);
  if (mode >= 0) {
    add_raw(&a, &mode, "i");
    add_value(&a, lt_host_type(dst->type), value);
  }
  return launch(ops, stream, "index", kernel, grid, &a);
}

int lt_cuops_gather(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, int dim,
                    const lt_tensor *index, int *bad) {
  static const char fn[] = "gather";
  *bad = 0;
  if (check_ops(ops, fn) || same_type(fn, dst, src, "the source") || check_gs(fn, src, index, NULL, dim)) return -1;
  int ok = dst->ndim == index->ndim;
  for (int d = 0; ok && d < dst->ndim; d++) ok = dst->size[d] == index->size[d];
  if (!ok) return lt_fail("%s: the result must have the index's shape", fn);
  if (check_device_indices(ops, stream, index, src->size[dim], bad) || *bad) return *bad ? 0 : -1;
  return gather_scatter(ops, stream, dst, src, index, dim, -1, 0);
}

int lt_cuops_scatter(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                     const lt_tensor *src, int add, double value, int *bad) {
  const char *fn = add ? "scatterAdd" : "scatter";
  *bad = 0;
  if (check_ops(ops, fn) || (src && same_type(fn, t, src, "the source")) || check_gs(fn, t, index, src, dim)) return -1;
  if (check_device_indices(ops, stream, index, t->size[dim], bad) || *bad) return *bad ? 0 : -1;
  return gather_scatter(ops, stream, t, src ? src : t, index, dim, src ? (add ? 1 : 0) : 2, value);
}

/* ---------------------------------------------------------------- norm, var, std along a dimension; renorm */

static int stat_kind(const char *fn, const char *op) {
  static const char *const names[] = {"norm", "var", "std"};
  for (int k = 0; k < 3; k++)
    if (op && !strcmp(op, names[k])) return k;
  return lt_fail("%s: no statistic '%s' (norm, var, std)", fn, op ? op : "(null)");
}

static int check_float_pair(const char *fn, const lt_tensor *x) {
  const int host = lt_host_type(x->type);
  if (host != LT_FLOAT && host != LT_DOUBLE) return lt_fail("%s: Float and Double only, not %s", fn, tname(host));
  return 0;
}

int lt_cuops_stat(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, const lt_tensor *x, int dim,
                  double p, int biased, double *result) {
  static const char fn[] = "cuda norm/var/std";
  const int k = stat_kind(fn, op);
  if (k < 0 || check_ops(ops, fn) || check_float_pair(fn, x)) return -1;
  lt_cu_tensor dout, dxs;
  int64_t n, x_stride, nslices, off[2] = {0, 0};
  const void *data = NULL;
  void *copy = NULL, *whole = NULL;
  int rc = 0;
  if (dim < 0) {   /* the whole tensor as one contiguous slice, the result in double */
    n = lt_tensor_nelement(x), x_stride = 1, nslices = 1, off[1] = n;
    if (contiguous_input(ops, stream, x, &data, &copy)) return -1;
    memset(&dxs, 0, sizeof dxs);
    dxs.data = (void *)data, dxs.sizes[0] = 1, dxs.strides[0] = 1, dxs.dims = 1;
    dout = dxs;
    rc = scratch(ops, stream, 8, &whole);
  } else {
    if (check_dim(fn, x, dim) || same_type(fn, out, x, "the input")) return -1;
    int ok = out->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++) ok = out->size[d] == (d == dim ? 1 : x->size[d]);
    if (!ok) return lt_fail("%s: the output must have the input's shape with 1 along dimension %d", fn, dim + 1);
    n = x->size[dim], nslices = slice_count(x, dim);
    if (slices_view(x, dim, &dxs, &x_stride, &off[1]) || lt_cuops_describe(out, &dout, &off[0])) return -1;
    if (nslices == 0) return 0;
  }
  if (rc == 0) {
    /* a block per slice when its elements are neighbours and many (and for the whole tensor), else a thread */
    const int blk = x_stride == 1 && (n >= threads(ops) || dim < 0);
    const unsigned grid = blk ? (unsigned)(nslices < block_cap(ops) ? nslices : block_cap(ops)) : grid_for(ops, nslices);
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_dim_stat%s_%s_%s", blk ? "" : "1", tname(x->type),
             index_kind(ops, nslices > n ? nslices : n, off, 2, grid));
    int iop = k, ib = biased ? 1 : 0;
    args_t a = {0};
    add_tensor(&a, &dout);
    add_raw(&a, &whole, "p");
    add_tensor(&a, &dxs);
    add_count(&a, nslices);
    add_count(&a, n);
    add_count(&a, x_stride);
    add_raw(&a, &iop, "i");
    add_raw(&a, &p, "d");
    add_raw(&a, &ib, "i");
    rc = launch(ops, stream, "stats", kernel, grid, &a);
  }
  if (rc == 0 && whole) rc = ops->to_host(ops->ctx, result, whole, 8, stream);
  if (rc == 0 && whole) *result = lt_number(*result);   /* for Lua */
  rc = scratch_free(ops, copy, rc);
  return scratch_free(ops, whole, rc);
}

/* out and x of one shape, seen along dim: their slices views and strides there, dim's size n and the slice count */
typedef struct {
  lt_cu_tensor out, x;
  int64_t ostride, xstride, off[2], n, nslices;
} pair_views;

static int pair_views_of(const char *fn, const lt_tensor *out, const lt_tensor *x, int dim, pair_views *v) {
  if (check_dim(fn, x, dim) || same_type(fn, out, x, "the input")) return -1;
  int ok = out->ndim == x->ndim;
  for (int d = 0; ok && d < x->ndim; d++) ok = out->size[d] == x->size[d];
  if (!ok) return lt_fail("%s: the output must have the input's shape", fn);
  if (slices_view(out, dim, &v->out, &v->ostride, &v->off[0]) || slices_view(x, dim, &v->x, &v->xstride, &v->off[1]))
    return -1;
  v->n = x->size[dim], v->nslices = slice_count(x, dim);
  return 0;
}

/* the kernel name's index kind, and the launch's first arguments: out, x, nslices, n, ostride, xstride */
static const char *add_pair_views(const lt_cuops *ops, args_t *a, pair_views *v, unsigned grid) {
  add_tensor(a, &v->out);
  add_tensor(a, &v->x);
  add_count(a, v->nslices);
  add_count(a, v->n);
  add_count(a, v->ostride);
  add_count(a, v->xstride);
  return index_kind(ops, v->nslices > v->n ? v->nslices : v->n, v->off, 2, grid);
}

int lt_cuops_renorm(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int dim, double p,
                    double maxnorm) {
  static const char fn[] = "renorm";
  pair_views v;
  if (check_ops(ops, fn) || check_float_pair(fn, x) || pair_views_of(fn, out, x, dim, &v)) return -1;
  if (!(p > 0)) return lt_fail("%s: the norm's p must be positive (got %g)", fn, p);
  if (v.n == 0 || v.nslices == 0) return 0;
  const unsigned grid = (unsigned)(v.n < block_cap(ops) ? v.n : block_cap(ops));
  args_t a = {0};
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_renorm_%s_%s", tname(x->type), add_pair_views(ops, &a, &v, grid));
  add_raw(&a, &p, "d");
  add_raw(&a, &maxnorm, "d");
  return launch(ops, stream, "stats", kernel, grid, &a);
}

/* ---------------------------------------------------------------- cumsum, cumprod */

/* Many short slices: a thread walks each (lt_scan); a slice at least a block long is scanned by blocks in chunks
 * (lt_scan_totals, then lt_scan_chunks: scan.cu). LT_CUDA_SCAN=thread or =block forces one (for the tests). */
static int scan_by_blocks(const lt_cuops *ops, int64_t n) {
  const char *force = getenv("LT_CUDA_SCAN");
  if (force && !strcmp(force, "thread")) return 0;
  if (force && !strcmp(force, "block")) return 1;
  return n >= threads(ops);
}

int lt_cuops_scan(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int dim, int prod) {
  const char *fn = prod ? "cumprod" : "cumsum";
  pair_views v;
  if (check_ops(ops, fn) || pair_views_of(fn, out, x, dim, &v)) return -1;
  if (v.n == 0 || v.nslices == 0) return 0;
  int iprod = prod ? 1 : 0;
  char kernel[64];
  if (!scan_by_blocks(ops, v.n)) {
    const unsigned grid = grid_for(ops, v.nslices);
    args_t a = {0};
    snprintf(kernel, sizeof kernel, "lt_scan_%s_%s", tname(x->type), add_pair_views(ops, &a, &v, grid));
    add_raw(&a, &iprod, "i");
    return launch(ops, stream, "scan", kernel, grid, &a);
  }
  /* chunks of whole tiles, about block_cap of them in all (at least one per slice) */
  const int64_t b = threads(ops), per_slice = block_cap(ops) / v.nslices > 1 ? block_cap(ops) / v.nslices : 1;
  int64_t chunk = ((v.n + per_slice - 1) / per_slice + b - 1) / b * b;
  const int64_t chunks = v.nslices * ((v.n + chunk - 1) / chunk);
  const unsigned grid = (unsigned)(chunks < block_cap(ops) ? chunks : block_cap(ops));
  void *totals = NULL;
  if (scratch(ops, stream, chunks * 8, &totals)) return -1;
  args_t t = {0}, a = {0};
  const char *kind = add_pair_views(ops, &a, &v, grid);
  snprintf(kernel, sizeof kernel, "lt_scan_totals_%s_%s", tname(x->type), kind);
  add_tensor(&t, &v.x);
  add_count(&t, v.nslices);
  add_count(&t, v.n);
  add_count(&t, v.xstride);
  add_count(&t, chunk);
  add_raw(&t, &iprod, "i");
  add_raw(&t, &totals, "p");
  int rc = launch(ops, stream, "scan", kernel, grid, &t);
  if (rc == 0) {
    snprintf(kernel, sizeof kernel, "lt_scan_chunks_%s_%s", tname(x->type), kind);
    add_count(&a, chunk);
    add_raw(&a, &iprod, "i");
    add_raw(&a, &totals, "p");
    rc = launch(ops, stream, "scan", kernel, grid, &a);
  }
  return scratch_free(ops, totals, rc);
}

/* ---------------------------------------------------------------- nonzero */

/* x's elements in chunks of a multiple of the block (at most 65536 chunks); *counts (malloc'ed, nchunks) the
 * number of non-zero elements of each, read back from lt_nonzero_count. */
static int nonzero_counts(const lt_cuops *ops, void *stream, const lt_tensor *x, int64_t *chunk, int64_t *nchunks,
                          int64_t **counts, const char **kind) {
  lt_cu_tensor d;
  int64_t off;
  const int64_t n = lt_tensor_nelement(x), b = threads(ops);
  if (lt_cuops_describe(x, &d, &off)) return -1;
  *chunk = 16 * b;
  if ((n + *chunk - 1) / *chunk > 65536) *chunk = ((n + 65535) / 65536 + b - 1) / b * b;
  *nchunks = (n + *chunk - 1) / *chunk;
  const unsigned grid = (unsigned)(*nchunks < block_cap(ops) ? *nchunks : block_cap(ops));
  *kind = index_kind(ops, n, &off, 1, grid);
  *counts = malloc((size_t)(*nchunks > 0 ? *nchunks : 1) * 8);
  if (!*counts) return lt_fail("nonzero: out of host memory");
  void *dev = NULL;
  int rc = scratch(ops, stream, *nchunks * 8, &dev);
  if (rc == 0) {
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_nonzero_count_%s_%s", tname(x->type), *kind);
    args_t a = {0};
    add_tensor(&a, &d);
    add_count(&a, n);
    add_count(&a, *chunk);
    add_raw(&a, &dev, "p");
    rc = launch(ops, stream, "index", kernel, grid, &a);
  }
  if (rc == 0) rc = ops->to_host(ops->ctx, *counts, dev, *nchunks * 8, stream);
  rc = scratch_free(ops, dev, rc);
  if (rc) free(*counts), *counts = NULL;
  return rc;
}

int lt_cuops_nonzero_count(const lt_cuops *ops, void *stream, const lt_tensor *x, int64_t *count) {
  int64_t chunk, nchunks, *counts;
  const char *kind;
  *count = 0;
  if (check_ops(ops, "nonzero")) return -1;
  if (lt_tensor_nelement(x) == 0) return 0;
  if (nonzero_counts(ops, stream, x, &chunk, &nchunks, &counts, &kind)) return -1;
  for (int64_t b = 0; b < nchunks; b++) *count += counts[b];
  free(counts);
  return 0;
}

int lt_cuops_nonzero(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x) {
  static const char fn[] = "nonzero";
  if (check_ops(ops, fn)) return -1;
  if (x->ndim < 1 || x->ndim > 8) return lt_fail("%s: 1 to 8 dimensions, not %d", fn, x->ndim);
  int64_t chunk, nchunks, *counts, total = 0;
  const char *kind;
  if (lt_tensor_nelement(x) == 0) return 0;
  if (nonzero_counts(ops, stream, x, &chunk, &nchunks, &counts, &kind)) return -1;
  for (int64_t b = 0; b < nchunks; b++) {   /* the chunks' first rows */
    const int64_t c = counts[b];
    counts[b] = total, total += c;
  }
  if (lt_host_type(out->type) != LT_LONG || out->ndim != 2 || out->size[0] != total || out->size[1] != x->ndim ||
      !lt_tensor_is_contiguous(out)) {
    free(counts);
    return lt_fail("%s: the result must be a contiguous Long tensor of %lld x %d", fn, (long long)total, x->ndim);
  }
  lt_cu_tensor d, shape;
  memset(&shape, 0, sizeof shape);
  for (int k = 0; k < x->ndim; k++) shape.sizes[k] = x->size[k], shape.strides[k] = 1;
  shape.dims = x->ndim;
  void *starts = NULL, *o = lt_tensor_data(out);
  int rc = lt_cuops_describe(x, &d, NULL);
  if (rc == 0 && total > 0) rc = scratch(ops, stream, nchunks * 8, &starts);
  if (rc == 0 && total > 0) rc = lt_cuops_upload(ops, starts, counts, nchunks * 8, stream);
  free(counts);
  if (rc == 0 && total > 0) {
    const int64_t n = lt_tensor_nelement(x);
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_nonzero_write_%s_%s", tname(x->type), kind);
    args_t a = {0};
    add_tensor(&a, &d);
    add_tensor(&a, &shape);
    add_count(&a, n);
    add_count(&a, chunk);
    add_raw(&a, &starts, "p");
    add_raw(&a, &o, "p");
    rc = launch(ops, stream, "index", kernel, (unsigned)(nchunks < block_cap(ops) ? nchunks : block_cap(ops)), &a);
  }
  return scratch_free(ops, starts, rc);
}
