/* cutorch's sort family on a device (sort, topk, kthvalue, median, mode): the host side of native/cuda/sort.cu.
 *
 * Every operation sorts each slice along dim into contiguous scratch (key, 0-based index) pairs in the CPU sort's
 * total order (native/src/sort_generic.h: stable, NaN after every number ascending and before every number
 * descending), then copies the pairs it wants into the results: all of them (sort), the first k (topk, in the
 * order of dir: the k largest when desc), the k-th ascending (kthvalue), or the longest run of equal values
 * (mode). Tiles of LT_SORT_TILE elements are sorted in shared memory, then merged in passes of doubling width.
 * kthvalue and topk (k at most a tile) of slices longer than a tile select instead (lt_select: radix passes find
 * the k-th pair, a block per slice): the same pairs; topk with sorted=false ("topk_unsorted") then gives its k in
 * index order, the sort path in sorted order (Torch7 leaves that order open).
 * Because the input is read whole before any result is written, a result may be the input itself or overlap it. */
#include "cuda_ops_internal.h"

#define LT_SORT_TILE 2048   /* sort.cu's tile */

static const char *const sort_ops[] = {"sort", "topk", "kthvalue", "mode", "topk_unsorted", NULL};
enum { SORT_ALL, SORT_TOPK, SORT_KTH, SORT_MODE, SORT_TOPK_UNSORTED };
enum { SELECT_TOPK, SELECT_TOPK_SORTED, SELECT_KTH };   /* sort.cu's lt_select modes */

/* Slices longer than a tile, for kthvalue and topk of at most a tile: the selection (lt_select). LT_CUDA_SELECT=sort
 * or =select forces one where both can (for the tests). */
static int by_selection(int which, int64_t n, int64_t k) {
  if (which != SORT_KTH && ((which != SORT_TOPK && which != SORT_TOPK_UNSORTED) || k > LT_SORT_TILE)) return 0;
  const char *force = getenv("LT_CUDA_SELECT");
  if (force && !strcmp(force, "sort")) return 0;
  if (force && !strcmp(force, "select")) return 1;
  return n > LT_SORT_TILE;
}

/* The slices view of t along dim (its dimension dim dropped) described for the kernels, with the largest offset
 * the slice's count elements reach along dim. */
static int slices_view(const lt_tensor *t, int dim, int64_t count, lt_cu_tensor *out, int64_t *reach) {
  lt_tensor v = *t;
  v.size[dim] = 1;
  v.stride[dim] = 0;
  if (lt_cuops_describe(&v, out, reach)) return -1;
  *reach += (count - 1) * t->stride[dim];
  return 0;
}

int lt_cuops_sort(const lt_cuops *ops, void *stream, const char *op, lt_tensor *values, lt_tensor *indices,
                  const lt_tensor *x, int dim, int desc, int64_t k) {
  int which = -1;
  for (int i = 0; op && sort_ops[i]; i++)
    if (!strcmp(sort_ops[i], op)) which = i;
  if (which < 0) return lt_fail("cuda sort: no operation '%s'", op ? op : "(null)");
  const int sorted = which != SORT_TOPK_UNSORTED;
  if (which == SORT_TOPK_UNSORTED) which = SORT_TOPK;   /* the sort path gives the k in order either way */
  char fn[64], buf1[256], buf2[256];
  snprintf(fn, sizeof fn, "cuda %s", op);
  if (check_ops(ops, fn)) return -1;
  if (x->ndim == 0 || dim < 0 || dim >= x->ndim)
    return lt_fail("%s: dimension %d out of range of a %d-dimensional tensor", fn, dim + 1, x->ndim);
  if (same_type(fn, values, x, "the input")) return -1;
  if (lt_host_type(indices->type) != LT_LONG)
    return lt_fail("%s: the indices must be a Long tensor, not %s", fn, tname(indices->type));
  const int64_t n = x->size[dim];
  if (which == SORT_TOPK && (k < 0 || k > n))
    return lt_fail("%s: k (%lld) out of range (dimension %d of size %lld)", fn, (long long)k, dim + 1, (long long)n);
  if (which == SORT_KTH && (k < 1 || k > n))
    return lt_fail("%s: k (%lld) out of range (dimension %d of size %lld)", fn, (long long)k, dim + 1, (long long)n);
  if (which == SORT_MODE && n == 0) return lt_fail("%s: dimension %d has no elements", fn, dim + 1);
  const int64_t count = which == SORT_ALL ? n : which == SORT_TOPK ? k : 1;
  const int64_t first = which == SORT_KTH ? k - 1 : 0;
  lt_tensor want = *x;
  want.size[dim] = count;
  const lt_tensor *outs[2] = {values, indices};
  for (int i = 0; i < 2; i++) {
    int ok = outs[i]->ndim == want.ndim;
    for (int d = 0; ok && d < want.ndim; d++) ok = outs[i]->size[d] == want.size[d];
    if (!ok)
      return lt_fail("%s: %s should be of shape %s, not %s", fn, i ? "the indices" : "the values",
                     lt_shape_str(&want, buf1, sizeof buf1), lt_shape_str(outs[i], buf2, sizeof buf2));
  }
  const int64_t nslices = n ? lt_tensor_nelement(x) / n : 0, total = nslices * n;
  if (total == 0 || count == 0) return 0;

  lt_cu_tensor dxs, dvs, dis;
  int64_t off[3];
  if (slices_view(x, dim, n, &dxs, &off[0]) || slices_view(values, dim, count, &dvs, &off[1]) ||
      slices_view(indices, dim, count, &dis, &off[2]))
    return -1;
  if (by_selection(which, n, k)) {
    const unsigned grid = (unsigned)(nslices < block_cap(ops) ? nslices : block_cap(ops));
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_select_%s_%s", tname(x->type), index_kind(ops, nslices > n ? nslices : n, off, 3, grid));
    int d = which == SORT_TOPK && desc != 0;
    int mode = which == SORT_KTH ? SELECT_KTH : sorted ? SELECT_TOPK_SORTED : SELECT_TOPK;
    args_t a = {0};
    add_tensor(&a, &dxs);
    add_count(&a, x->stride[dim]);
    add_tensor(&a, &dvs);
    add_count(&a, values->stride[dim]);
    add_tensor(&a, &dis);
    add_count(&a, indices->stride[dim]);
    add_count(&a, nslices);
    add_count(&a, n);
    add_count(&a, which == SORT_KTH ? k : count);
    add_raw(&a, &d, "i");
    add_raw(&a, &mode, "i");
    return launch(ops, stream, "sort", kernel, grid, &a);
  }
  /* scratch: indices, then keys, twice when merge passes ping-pong between two copies */
  const int copies = n > LT_SORT_TILE ? 2 : 1;
  const int64_t ibytes = total * 8, kbytes = (total * acc_bytes(lt_host_type(x->type)) + 7) / 8 * 8;
  void *mem = NULL;
  if (scratch(ops, stream, copies * (ibytes + kbytes), &mem)) return -1;
  char *ind[2], *keys[2];
  for (int c = 0; c < copies; c++) {
    ind[c] = (char *)mem + c * ibytes;
    keys[c] = (char *)mem + copies * ibytes + c * kbytes;
  }
  const char *type = tname(x->type);
  char kernel[64];
  int rc = -1;
  {
    const int64_t tiles = nslices * ((n + LT_SORT_TILE - 1) / LT_SORT_TILE);
    const unsigned grid = (unsigned)(tiles < block_cap(ops) ? tiles : block_cap(ops));
    snprintf(kernel, sizeof kernel, "lt_sort_tiles_%s_%s", type, index_kind(ops, nslices > n ? nslices : n, off, 1, grid));
    long long stride = x->stride[dim];
    int d = desc != 0 && (which == SORT_ALL || which == SORT_TOPK);   /* kthvalue and mode: ascending */
    args_t a = {0};
    add_tensor(&a, &dxs);
    add_count(&a, stride);
    add_count(&a, nslices);
    add_count(&a, n);
    add_raw(&a, &d, "i");
    add_raw(&a, &keys[0], "p");
    add_raw(&a, &ind[0], "p");
    if (launch(ops, stream, "sort", kernel, grid, &a)) goto done;
    int cur = 0;
    for (long long width = LT_SORT_TILE; width < n; width *= 2, cur ^= 1) {
      snprintf(kernel, sizeof kernel, "lt_sort_merge_%s", type);
      args_t m = {0};
      add_raw(&m, &keys[cur], "p");
      add_raw(&m, &ind[cur], "p");
      add_raw(&m, &keys[cur ^ 1], "p");
      add_raw(&m, &ind[cur ^ 1], "p");
      add_count(&m, nslices);
      add_count(&m, n);
      add_count(&m, width);
      add_raw(&m, &d, "i");
      if (launch(ops, stream, "sort", kernel, grid_for(ops, total), &m)) goto done;
    }
    const int64_t outputs = which == SORT_MODE ? nslices : nslices * count;
    const unsigned wgrid = grid_for(ops, outputs);
    args_t w = {0};
    add_tensor(&w, &dvs);
    if (which != SORT_MODE) add_count(&w, values->stride[dim]);
    add_tensor(&w, &dis);
    if (which != SORT_MODE) add_count(&w, indices->stride[dim]);
    add_raw(&w, &keys[cur], "p");
    add_raw(&w, &ind[cur], "p");
    add_count(&w, nslices);
    add_count(&w, n);
    if (which != SORT_MODE) {
      add_count(&w, first);
      add_count(&w, count);
    }
    snprintf(kernel, sizeof kernel, "lt_sort_%s_%s_%s", which == SORT_MODE ? "mode" : "write", type,
             index_kind(ops, outputs, off + 1, 2, wgrid));
    if (launch(ops, stream, "sort", kernel, wgrid, &w)) goto done;
  }
  rc = 0;
done:
  return scratch_free(ops, mem, rc);
}
