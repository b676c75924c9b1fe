/* Torch7's multinomial with replacement on a device: the host side of native/cuda/multinomial.cu (each uniform draw
 * searched in its row's cumulative distribution). */
#include "cuda_ops_internal.h"

static int contiguous_doubles(const char *fn, const lt_tensor *t, const char *what) {
  if (lt_host_type(t->type) != LT_DOUBLE || t->ndim != 2 || !lt_tensor_is_contiguous(t))
    return lt_fail("%s: %s must be a contiguous 2-D Double tensor", fn, what);
  return 0;
}

int lt_cuops_multinomial_search(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *cum,
                                const lt_tensor *u) {
  static const char fn[] = "cuda multinomial";
  if (check_ops(ops, fn) || contiguous_doubles(fn, cum, "the running sums") || contiguous_doubles(fn, u, "the draws"))
    return -1;
  const int64_t rows = cum->size[0], ncat = cum->size[1], n = u->size[1];
  if (u->size[0] != rows) return lt_fail("%s: %lld rows of draws for %lld distributions", fn, (long long)u->size[0],
                                         (long long)rows);
  if (lt_host_type(out->type) != LT_LONG) return lt_fail("%s: the result must be a Long tensor", fn);
  if (same_count(fn, out, u, "the draws")) return -1;
  if (rows * n == 0) return 0;
  if (ncat < 1) return lt_fail("%s: no categories", fn);
  lt_cu_tensor dout, dcum, du;
  int64_t off;
  if (lt_cuops_describe(out, &dout, &off) || lt_cuops_describe(cum, &dcum, NULL) || lt_cuops_describe(u, &du, NULL))
    return -1;
  const unsigned grid = grid_for(ops, rows * n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_multinomial_search_%s", index_kind(ops, rows * n, &off, 1, grid));
  args_t a = {0};
  add_tensor(&a, &dout);
  add_raw(&a, &dcum.data, "p");
  add_raw(&a, &du.data, "p");
  add_count(&a, rows);
  add_count(&a, ncat);
  add_count(&a, n);
  return launch(ops, stream, "multinomial", kernel, grid, &a);
}
