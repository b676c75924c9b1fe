/* cutorch's maskedSelect and maskedCopy on a device: the host side of native/cuda/masked.cu. A compaction over the
 * Byte mask: per-block counts (lt_mask_count), their prefix sums in one block (lt_mask_scan), then the scatter
 * (lt_masked_select / lt_masked_copy) with the same grid and chunk. */
#include "cuda_ops_internal.h"

static int check_masked(const char *fn, const lt_tensor *t, const lt_tensor *mask) {
  if (lt_host_type(mask->type) != LT_BYTE)
    return lt_fail("%s: the mask must be a Byte tensor, not %s", fn, tname(mask->type));
  if (lt_host_type(t->type) == LT_HALF) return lt_fail("%s: not defined for Half tensors", fn);
  return same_count(fn, t, mask, "the mask");
}

/* The geometry shared by the count and the scatter of n > 0 elements: grid blocks of chunk elements each (a
 * multiple of the block, the last chunk shorter). */
static void mask_geometry(const lt_cuops *ops, int64_t n, unsigned *grid, int64_t *chunk) {
  const int64_t b = threads(ops), g = grid_for(ops, n);
  const int64_t per = ((n + g - 1) / g + b - 1) / b * b;
  *chunk = per;
  *grid = (unsigned)((n + per - 1) / per);
}

/* Counts the mask's set elements per chunk and turns the counts into the chunks' first places (counts[0..grid)),
 * with the totals (set elements, elements above 1) in counts[2 grid], counts[2 grid + 1]. *counts is scratch of
 * the call's stream, for the caller to free. */
static int mask_scan(const lt_cuops *ops, void *stream, const lt_tensor *mask, unsigned grid, int64_t chunk,
                     long long **counts) {
  lt_cu_tensor d;
  int64_t off;
  *counts = NULL;
  if (lt_cuops_describe(mask, &d, &off)) return -1;
  const int64_t n = lt_tensor_nelement(mask);
  if (scratch(ops, stream, (2 * (int64_t)grid + 2) * 8, (void **)counts)) return -1;
  long long *c = *counts, *big = c + grid, *totals = c + 2 * grid;
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_mask_count_%s", index_kind(ops, n, &off, 1, grid));
  args_t a = {0};
  add_tensor(&a, &d);
  add_count(&a, n);
  add_count(&a, chunk);
  add_raw(&a, &c, "p");
  add_raw(&a, &big, "p");
  if (launch(ops, stream, "masked", kernel, grid, &a)) return -1;
  args_t s = {0};
  add_raw(&s, &c, "p");
  add_count(&s, grid);
  add_raw(&s, &big, "p");
  add_raw(&s, &totals, "p");
  return launch(ops, stream, "masked", "lt_mask_scan", 1, &s);
}

int lt_cuops_mask_count(const lt_cuops *ops, void *stream, const lt_tensor *mask, int64_t *ones, int64_t *above) {
  static const char fn[] = "cuda mask count";
  *ones = *above = 0;
  if (check_ops(ops, fn) || check_masked(fn, mask, mask)) return -1;
  const int64_t n = lt_tensor_nelement(mask);
  if (n == 0) return 0;
  unsigned grid;
  int64_t chunk;
  mask_geometry(ops, n, &grid, &chunk);
  long long *counts, totals[2];
  int rc = mask_scan(ops, stream, mask, grid, chunk, &counts);
  if (rc == 0) rc = ops->to_host(ops->ctx, totals, counts + 2 * grid, sizeof totals, stream);
  if (rc == 0) *ones = totals[0], *above = totals[1];
  return scratch_free(ops, counts, rc);
}

/* One compaction: kernel lt_<name>_<T>_<idx>(out, y, mask, n, chunk, offsets, limit), n the mask's elements */
static int masked_launch(const lt_cuops *ops, void *stream, const char *name, const lt_tensor *out,
                         const lt_tensor *y, const lt_tensor *mask, int64_t limit) {
  const int64_t n = lt_tensor_nelement(mask);
  if (n == 0 || limit == 0) return 0;
  lt_cu_tensor d[3];
  int64_t off[3];
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(y, &d[1], &off[1]) ||
      lt_cuops_describe(mask, &d[2], &off[2]))
    return -1;
  unsigned grid;
  int64_t chunk;
  mask_geometry(ops, n, &grid, &chunk);
  long long *counts;
  int rc = mask_scan(ops, stream, mask, grid, chunk, &counts);
  if (rc == 0) {
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", name, tname(out->type), index_kind(ops, n, off, 3, grid));
    args_t a = {0};
    for (int i = 0; i < 3; i++) add_tensor(&a, &d[i]);
    add_count(&a, n);
    add_count(&a, chunk);
    add_raw(&a, &counts, "p");
    add_count(&a, limit);
    rc = launch(ops, stream, "masked", kernel, grid, &a);
  }
  return scratch_free(ops, counts, rc);
}

int lt_cuops_masked_select(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x,
                           const lt_tensor *mask) {
  static const char fn[] = "cuda maskedSelect";
  if (check_ops(ops, fn) || check_masked(fn, x, mask) || same_type(fn, out, x, "the source")) return -1;
  return masked_launch(ops, stream, "masked_select", out, x, mask, lt_tensor_nelement(out));
}

int lt_cuops_masked_copy(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *mask,
                         const lt_tensor *src) {
  static const char fn[] = "cuda maskedCopy";
  if (check_ops(ops, fn) || check_masked(fn, out, mask) || same_type(fn, out, src, "the source")) return -1;
  return masked_launch(ops, stream, "masked_copy", out, src, mask, lt_tensor_nelement(src));
}
