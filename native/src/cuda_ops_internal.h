/* The host layer's shared pieces for starting native/cuda's kernels (cuda_ops.c: tensor math, cuda_nn.c: nn
 * modules): compute types of scalars, the argument list of a launch, grid sizes, scratch on the call's stream,
 * contiguous device copies of inputs, and the common shape/type checks. Internal, not part of the FFI. */
#ifndef LT_CUDA_OPS_INTERNAL_H
#define LT_CUDA_OPS_INTERNAL_H

#include "lt_internal.h"

#include <limits.h>
#include <stdlib.h>

enum { ACC_INT = 0, ACC_FLOAT = 1, ACC_DOUBLE = 2 };   /* the compute type lt_acc_t<T> of an element type */

static inline int acc_kind(int host) { return host == LT_DOUBLE ? ACC_DOUBLE : host >= LT_FLOAT ? ACC_FLOAT : ACC_INT; }
static inline int is_float_type(int host) { return host == LT_FLOAT || host == LT_DOUBLE || host == LT_HALF; }
static const char acc_sig[3] = {'q', 'f', 'd'};
static inline int64_t acc_bytes(int host) { return acc_kind(host) == ACC_FLOAT ? 4 : 8; }

/* A scalar argument in the compute type of an element type. */
typedef union { long long q; float f; double d; } acc_value;

static inline acc_value acc_of(int host, double v) {
  acc_value a;
  switch (acc_kind(host)) {
    case ACC_FLOAT: a.f = (float)v; break;
    case ACC_DOUBLE: a.d = v; break;
    default: a.q = (long long)v; break;
  }
  return a;
}

static inline int threads(const lt_cuops *ops) { return ops->threads_per_block > 0 ? ops->threads_per_block : 256; }
static inline int64_t block_cap(const lt_cuops *ops) { return ops->max_blocks > 0 ? ops->max_blocks : 1024; }

static inline int check_ops(const lt_cuops *ops, const char *fn) {
  if (!ops || !ops->launch || !ops->to_host || !ops->to_device || !ops->alloc)
    return lt_fail("%s: no launcher (launch, to_host, to_device and an allocator are needed)", fn);
  int b = threads(ops);
  if (b % 32 || b > 1024) return lt_fail("%s: %d threads per block: a multiple of 32 up to 1024 is needed", fn, b);
  return 0;
}

/* ---------------------------------------------------------------- launches */

/* The arguments of one launch, and their kinds for the signature. */
typedef struct {
  void *params[20];
  char sig[96];
  int n;
  lt_cu_tensor tensors[4];
  int ntensors;
  acc_value values[3];
  int nvalues;
  long long counts[16];
  int ncounts;
  int overflow;   /* an argument did not fit: launch refuses instead of writing past the arrays */
} args_t;

#define LT_ARGS_FULL(a, field, count) ((a)->count >= (int)(sizeof (a)->field / sizeof (a)->field[0]))

static inline void add_raw(args_t *a, void *p, const char *kind) {
  if (LT_ARGS_FULL(a, params, n) || strlen(a->sig) + strlen(kind) + 2 > sizeof a->sig) {
    a->overflow = 1;
    return;
  }
  if (a->n) strcat(a->sig, ",");
  strcat(a->sig, kind);
  a->params[a->n++] = p;
}
static inline void add_tensor(args_t *a, const lt_cu_tensor *t) {
  if (LT_ARGS_FULL(a, tensors, ntensors)) { a->overflow = 1; return; }
  a->tensors[a->ntensors] = *t;
  add_raw(a, &a->tensors[a->ntensors++], "S144");
}
static inline void add_count(args_t *a, long long v) {
  if (LT_ARGS_FULL(a, counts, ncounts)) { a->overflow = 1; return; }
  a->counts[a->ncounts] = v;
  add_raw(a, &a->counts[a->ncounts++], "q");
}
static inline void add_value(args_t *a, int host, double v) {
  if (LT_ARGS_FULL(a, values, nvalues)) { a->overflow = 1; return; }
  a->values[a->nvalues] = acc_of(host, v);
  char k[2] = {acc_sig[acc_kind(host)], 0};
  add_raw(a, &a->values[a->nvalues++], k);
}

/* Blocks for n elements of a grid-stride kernel. */
static inline unsigned grid_for(const lt_cuops *ops, int64_t n) {
  int64_t b = threads(ops), g = (n + b - 1) / b;
  if (g > block_cap(ops)) g = block_cap(ops);
  return g < 1 ? 1 : (unsigned)g;
}

/* THC's 32-bit index path: every operand's offsets and the element count, and the thread count, fit. */
static inline const char *index_kind(const lt_cuops *ops, int64_t n, const int64_t *max_offsets, int k, unsigned grid) {
  int64_t limit = INT32_MAX;
  if (n > limit || (int64_t)grid * threads(ops) > ((int64_t)1 << 31)) return "i64";
  for (int i = 0; i < k; i++)
    if (max_offsets[i] > limit) return "i64";
  return "i32";
}

static inline int launch(const lt_cuops *ops, void *stream, const char *file, const char *kernel, unsigned grid, args_t *a) {
  if (a->overflow) return lt_fail("cuda: %s: more arguments than the launcher's argument list holds", kernel);
  return ops->launch(ops->ctx, file, kernel, a->sig, grid, (unsigned)threads(ops), stream, a->params);
}

static inline const char *tname(int type) { return lt_type_name(lt_host_type(type)); }

static inline int same_count(const char *fn, const lt_tensor *a, const lt_tensor *b, const char *what) {
  if (lt_tensor_nelement(a) == lt_tensor_nelement(b)) return 0;
  char x[256], y[256];
  return lt_fail("%s: %s has %lld elements %s, the output %lld %s", fn, what, (long long)lt_tensor_nelement(b),
                 lt_shape_str(b, y, sizeof y), (long long)lt_tensor_nelement(a), lt_shape_str(a, x, sizeof x));
}

static inline int same_type(const char *fn, const lt_tensor *a, const lt_tensor *b, const char *what) {
  if (a->type == b->type) return 0;
  return lt_fail("%s: %s is a %s tensor, the output a %s one", fn, what, tname(b->type), tname(a->type));
}

/* The operations defined for the floating types only refuse the others with this. */
static inline int check_float_input(const char *fn, const lt_tensor *t) {
  if (is_float_type(lt_host_type(t->type))) return 0;
  return lt_fail("%s: not defined for %s tensors (Float, Double and Half only)", fn, tname(t->type));
}

/* Scratch on the call's stream (NULL: the thread's current one, where the call's work goes). */
static inline int scratch(const lt_cuops *ops, void *stream, int64_t bytes, void **p) {
  if (lt_cuda_resolve_stream(ops->device, &stream)) return -1;
  return lt_cuda_alloc(ops->alloc, ops->device, bytes, stream, p);
}
static inline int scratch_free(const lt_cuops *ops, void *p, int rc) {
  if (p && lt_cuda_alloc_free(ops->alloc, p) && rc == 0) return -1;
  return rc;
}

/* A contiguous device copy of t when it is not contiguous (*copy set, to be freed), else its own data. */
static inline int contiguous_input(const lt_cuops *ops, void *stream, const lt_tensor *t, const void **data, void **copy) {
  *copy = NULL;
  lt_cu_tensor d;
  if (lt_cuops_describe(t, &d, NULL)) return -1;
  if (lt_tensor_is_contiguous(t)) {
    *data = d.data;
    return 0;
  }
  int64_t n = lt_tensor_nelement(t);
  if (scratch(ops, stream, n * lt_elemsize(t->type), copy)) return -1;
  lt_storage st = {.data = *copy, .size = n, .type = t->type};
  lt_tensor c = {.storage = &st, .offset = 0, .ndim = 1, .type = t->type};
  c.size[0] = n, c.stride[0] = 1;
  if (lt_cuops_copy(ops, stream, &c, t)) return scratch_free(ops, *copy, -1);
  *data = *copy;
  return 0;
}

static inline int check_contiguous_output(const char *fn, const lt_tensor *o, const lt_tensor *like, const char *what) {
  char a[256], b[256];
  int ok = o->ndim == like->ndim && o->type == like->type;
  for (int d = 0; ok && d < o->ndim; d++) ok = o->size[d] == like->size[d];
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s, not a %s one of %s", fn, what, tname(like->type),
                   lt_shape_str(like, a, sizeof a), tname(o->type), lt_shape_str(o, b, sizeof b));
  if (!lt_tensor_is_contiguous(o)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}


/* (row, position) pairs ordered by row, then position */
static inline int by_row(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The distinct rows named by the 1-based idx (0-based, ascending, padding's left out unless keep_padding) and, per
 * row, the positions naming it, in order: one host buffer rows[m] | first[m + 1] | positions[...], uploaded to *dev
 * (scratch on stream). */
static inline int row_lists(const char *fn, const lt_cuops *ops, void *stream, const int64_t *idx, int64_t n,
                            int64_t padding, int keep_padding, void **dev, int64_t *m) {
  int64_t (*pairs)[2] = malloc((size_t)(n > 0 ? n : 1) * sizeof *pairs);
  int64_t *buf = malloc((size_t)(3 * n + 1) * sizeof *buf);
  if (!pairs || !buf) {
    free(pairs), free(buf);
    return lt_fail("%s: out of host memory", fn);
  }
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (keep_padding || idx[i] != padding) pairs[k][0] = idx[i] - 1, pairs[k][1] = i, k++;
  qsort(pairs, (size_t)k, sizeof *pairs, by_row);
  int64_t u = 0;
  for (int64_t i = 0; i < k; i++) u += i == 0 || pairs[i][0] != pairs[i - 1][0];
  int64_t *rows = buf, *first = buf + u, *positions = buf + 2 * u + 1;
  for (int64_t i = 0, r = -1; i < k; i++) {
    if (i == 0 || pairs[i][0] != pairs[i - 1][0]) rows[++r] = pairs[i][0], first[r] = i;
    positions[i] = pairs[i][1];
  }
  first[u] = k;
  free(pairs);
  *m = u;
  const int64_t bytes = (2 * u + 1 + k) * 8;
  int rc = scratch(ops, stream, bytes, dev);
  if (rc == 0) rc = ops->to_device(ops->ctx, *dev, buf, bytes, stream);
  free(buf);
  if (rc) rc = scratch_free(ops, *dev, rc), *dev = NULL;
  return rc;
}

#endif /* LT_CUDA_OPS_INTERNAL_H */
