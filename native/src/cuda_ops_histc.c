/* Torch7's histc on a device: the host side of native/cuda/histc.cu. Each block counts its chunk of x into its own
 * row of a scratch table (no atomics), then a thread per bin sums the bin's column into the result. */
#include "cuda_ops_internal.h"

/* at most this many partial counts (blocks × bins) in the scratch table: fewer blocks for many bins */
#define HISTC_MAX_PARTIAL ((int64_t)1 << 24)

int lt_cuops_histc(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int64_t nbins, double lo,
                   double hi) {
  static const char fn[] = "cuda histc";
  if (check_ops(ops, fn) || same_type(fn, out, x, "the input")) return -1;
  const int host = lt_host_type(x->type);
  if (host != LT_FLOAT && host != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (Float and Double only)", fn, tname(x->type));
  if (nbins < 1 || nbins > HISTC_MAX_PARTIAL)
    return lt_fail("%s: the number of bins must be between 1 and %lld (got %lld)", fn, (long long)HISTC_MAX_PARTIAL,
                   (long long)nbins);
  if (out->ndim != 1 || out->size[0] != nbins)
    return lt_fail("%s: the output should be a vector of the %lld bins", fn, (long long)nbins);
  lt_cu_tensor dx, dout;
  int64_t off[2];
  if (lt_cuops_describe(x, &dx, &off[0]) || lt_cuops_describe(out, &dout, &off[1])) return -1;
  const int64_t n = lt_tensor_nelement(x), block = threads(ops);
  /* blocks of whole tiles; an empty x still takes one block (it writes the zero counts) */
  int64_t grid = grid_for(ops, n), cap = HISTC_MAX_PARTIAL / nbins;
  if (grid > cap) grid = cap;
  int64_t chunk = ((n + grid - 1) / grid + block - 1) / block * block;
  if (chunk == 0) chunk = block;
  grid = n > 0 ? (n + chunk - 1) / chunk : 1;
  long long *partial = NULL;
  if (scratch(ops, stream, grid * nbins * 8, (void **)&partial)) return -1;
  const char *idx = index_kind(ops, n > nbins ? n : nbins, off, 2, (unsigned)grid);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_histc_partial_%s_%s", tname(x->type), idx);
  args_t a = {0};
  add_tensor(&a, &dx);
  add_count(&a, n);
  add_count(&a, chunk);
  add_value(&a, host, lo);
  add_value(&a, host, hi);
  add_count(&a, nbins);
  add_raw(&a, &partial, "p");
  int rc = launch(ops, stream, "histc", kernel, (unsigned)grid, &a);
  if (rc == 0) {
    snprintf(kernel, sizeof kernel, "lt_histc_total_%s_%s", tname(x->type), idx);
    args_t t = {0};
    add_tensor(&t, &dout);
    add_raw(&t, &partial, "p");
    add_count(&t, grid);
    add_count(&t, nbins);
    rc = launch(ops, stream, "histc", kernel, grid_for(ops, nbins), &t);
  }
  return scratch_free(ops, partial, rc);
}
