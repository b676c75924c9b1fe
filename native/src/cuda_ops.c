/* cutorch's tensor math on a device: operands described for native/cuda's kernel ABI, shapes checked,
 * grids sized, kernels started through a launcher (lt_cuda_ops.h). Nothing here touches device memory. */
#include "cuda_ops_internal.h"

#include <limits.h>

/* A device result for Lua (through lt_number): a sum of NaNs with a payload keeps it. */
static double acc_to_double(int host, const void *p) {
  switch (acc_kind(host)) {
    case ACC_FLOAT: return lt_number(*(const float *)p);
    case ACC_DOUBLE: return lt_number(*(const double *)p);
    default: return (double)*(const long long *)p;
  }
}

int lt_cuops_describe(const lt_tensor *t, lt_cu_tensor *out, int64_t *max_offset) {
  memset(out, 0, sizeof *out);
  const int elsize = lt_elemsize(t->type);
  out->data = t->storage ? (char *)t->storage->data + t->offset * elsize : NULL;
  int dims = 0;
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) {
    int64_t s = t->size[d], st = t->stride[d];
    if (st < 0) return lt_fail("a device tensor with the negative stride %lld in dimension %d", (long long)st, d + 1);
    if (s == 0) {  /* no elements: one dimension of size 0 says it */
      out->sizes[0] = 0, out->strides[0] = 1, out->dims = 1;
      if (max_offset) *max_offset = 0;
      return 0;
    }
    if (s == 1) continue;
    last += (s - 1) * st;
    if (dims && out->strides[dims - 1] == st * s) {  /* the previous dimension steps over this one whole */
      out->sizes[dims - 1] *= s;
      out->strides[dims - 1] = st;
      continue;
    }
    if (dims == 8) {
      char buf[256];
      return lt_fail("a device tensor of shape %s has more than 8 dimensions that do not merge (the kernels take 8)",
                     lt_shape_str(t, buf, sizeof buf));
    }
    out->sizes[dims] = s, out->strides[dims] = st, dims++;
  }
  if (!dims) out->sizes[0] = 1, out->strides[0] = 1, dims = 1;
  out->dims = dims;
  if (max_offset) *max_offset = last;
  return 0;
}

/* The index of op in a NULL-ended list of names, or -1. */
static int name_index(const char *const *names, const char *op) {
  for (int k = 0; op && names[k]; k++)
    if (!strcmp(names[k], op)) return k;
  return -1;
}


int lt_cuops_copy(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src) {
  static const char fn[] = "cuda copy";
  if (check_ops(ops, fn) || same_count(fn, dst, src, "the source")) return -1;
  lt_cu_tensor d, s;
  int64_t off[2];
  if (lt_cuops_describe(dst, &d, &off[0]) || lt_cuops_describe(src, &s, &off[1])) return -1;
  int64_t n = lt_tensor_nelement(dst);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_copy_%s_%s_%s", tname(dst->type), tname(src->type),
           index_kind(ops, n, off, 2, grid));
  args_t a = {0};
  add_tensor(&a, &d);
  add_tensor(&a, &s);
  add_count(&a, n);
  return launch(ops, stream, "copy", kernel, grid, &a);
}

/* copy_batch.cu's table entry */
typedef struct {
  lt_cu_tensor dst, src;
  long long n, first_block;
} copy_batch_entry;

int lt_cuops_copy_batch(const lt_cuops *ops, void *stream, lt_tensor *const *dst, const lt_tensor *const *src, int n) {
  static const char fn[] = "cuda copy (batched)";
  if (check_ops(ops, fn)) return -1;
  if (n <= 0) return 0;
  copy_batch_entry *table = malloc((size_t)n * sizeof *table);
  if (!table) return lt_fail("%s: out of host memory", fn);
  const int64_t chunk = 4 * (int64_t)threads(ops);   /* elements per virtual block: 4 a thread */
  int64_t count = 0, blocks = 0, largest = 0, off[2];
  int wide = 0;
  for (int k = 0; k < n; k++) {
    if (same_type(fn, dst[k], src[k], "the source") || same_count(fn, dst[k], src[k], "the source") ||
        (k > 0 && same_type(fn, dst[0], dst[k], "an output"))) {
      free(table);
      return -1;
    }
    const int64_t m = lt_tensor_nelement(dst[k]);
    if (m == 0) continue;
    copy_batch_entry *e = &table[count++];
    if (lt_cuops_describe(dst[k], &e->dst, &off[0]) || lt_cuops_describe(src[k], &e->src, &off[1])) {
      free(table);
      return -1;
    }
    e->n = m, e->first_block = blocks;
    blocks += (m + chunk - 1) / chunk;
    if (m > largest) largest = m;
    wide = wide || !strcmp(index_kind(ops, m, off, 2, 1), "i64");
  }
  int rc = 0;
  void *dev = NULL;
  if (count > 0) {
    const int64_t bytes = count * (int64_t)sizeof *table;
    const unsigned grid = (unsigned)(blocks < block_cap(ops) ? blocks : block_cap(ops));
    char kernel[64];
    snprintf(kernel, sizeof kernel, "lt_copy_batch_%d_%s", lt_elemsize(dst[0]->type), wide ? "i64" : "i32");
    rc = scratch(ops, stream, bytes, &dev);
    if (rc == 0) rc = lt_cuops_upload(ops, dev, table, bytes, stream);
    if (rc == 0) {
      args_t a = {0};
      add_raw(&a, &dev, "p");
      add_count(&a, count);
      add_count(&a, blocks);
      add_count(&a, chunk);
      rc = launch(ops, stream, "copy_batch", kernel, grid, &a);
    }
  }
  free(table);
  return scratch_free(ops, dev, rc);
}

int lt_cuops_fill(const lt_cuops *ops, void *stream, lt_tensor *t, double value) {
  static const char fn[] = "cuda fill";
  if (check_ops(ops, fn)) return -1;
  lt_cu_tensor d;
  int64_t off;
  if (lt_cuops_describe(t, &d, &off)) return -1;
  int64_t n = lt_tensor_nelement(t);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_fill_%s_%s", tname(t->type), index_kind(ops, n, &off, 1, grid));
  args_t a = {0};
  add_tensor(&a, &d);
  add_count(&a, n);
  add_value(&a, lt_host_type(t->type), value);
  return launch(ops, stream, "fill", kernel, grid, &a);
}

/* cutorch._sleep: the stream busy for `cycles` device clock cycles (one thread). */
int lt_cuops_sleep(const lt_cuops *ops, void *stream, int64_t cycles) {
  if (check_ops(ops, "cutorch._sleep")) return -1;
  args_t a = {0};
  add_count(&a, cycles < 0 ? 0 : cycles);
  if (a.overflow) return lt_fail("cuda: lt_sleep: more arguments than the launcher's argument list holds");
  return ops->launch(ops->ctx, "sleep", "lt_sleep", a.sig, 1, 1, stream, a.params);
}

/* ---------------------------------------------------------------- pointwise */

typedef struct {
  const char *name;
  int inputs;        /* tensor operands besides out */
  int scalars;       /* a, b */
  int integers;      /* defined for the integer types too */
} pointwise_op;

static const pointwise_op pointwise_ops[] = {
  {"adds", 1, 1, 1}, {"muls", 1, 1, 1}, {"divs", 1, 1, 0}, {"pows", 1, 1, 0}, {"clamp", 1, 2, 1},
  {"sqrt", 1, 0, 0}, {"rsqrt", 1, 0, 0}, {"exp", 1, 0, 0}, {"log", 1, 0, 0}, {"abs", 1, 0, 0},
  {"neg", 1, 0, 0}, {"sign", 1, 0, 0}, {"tanh", 1, 0, 0}, {"sigmoid", 1, 0, 0},
  {"cadd", 2, 1, 1}, {"cmul", 2, 0, 1}, {"cdiv", 2, 0, 0}, {"addcmul", 3, 1, 0}, {"addcdiv", 3, 1, 0},
  {NULL, 0, 0, 0}};

int lt_cuops_pointwise(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, const lt_tensor *x,
                       const lt_tensor *y, const lt_tensor *z, double a, double b) {
  const pointwise_op *p = pointwise_ops;
  while (p->name && strcmp(p->name, op ? op : "")) p++;
  if (!p->name) return lt_fail("cuda pointwise: no operation '%s'", op ? op : "(null)");
  char fn[64];
  snprintf(fn, sizeof fn, "cuda %s", p->name);
  if (check_ops(ops, fn)) return -1;
  const int host = lt_host_type(out->type);
  if (!p->integers && check_float_input(fn, out)) return -1;
  const lt_tensor *in[3] = {x, y, z};
  static const char *const names[3] = {"the first input", "the second input", "the third input"};
  lt_cu_tensor d[4];
  int64_t off[4];
  if (lt_cuops_describe(out, &d[0], &off[0])) return -1;
  for (int i = 0; i < p->inputs; i++) {
    if (!in[i]) return lt_fail("%s: %s is missing", fn, names[i]);
    if (same_type(fn, out, in[i], names[i]) || same_count(fn, out, in[i], names[i]) ||
        lt_cuops_describe(in[i], &d[i + 1], &off[i + 1]))
      return -1;
  }
  int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", p->name, tname(out->type), index_kind(ops, n, off, p->inputs + 1, grid));
  args_t args = {0};
  for (int i = 0; i <= p->inputs; i++) add_tensor(&args, &d[i]);
  add_count(&args, n);
  if (p->scalars >= 1) add_value(&args, host, a);
  if (p->scalars >= 2) add_value(&args, host, b);
  return launch(ops, stream, "pointwise", kernel, grid, &args);
}

/* ---------------------------------------------------------------- reductions */

int lt_cuops_reduce(const lt_cuops *ops, void *stream, const char *op, const lt_tensor *x, double p,
                    double *result) {
  static const char *const known[] = {"sum", "prod", "max", "min", "mean", "sumsq", "norm", NULL};
  if (name_index(known, op) < 0) return lt_fail("cuda reduce: no reduction '%s'", op ? op : "(null)");
  char fn[64];
  snprintf(fn, sizeof fn, "cuda %s", op);
  if (check_ops(ops, fn)) return -1;
  const int host = lt_host_type(x->type);
  const int mean = !strcmp(op, "mean"), norm = !strcmp(op, "norm");
  if ((mean || norm || !strcmp(op, "sumsq")) && check_float_input(fn, x)) return -1;
  const char *kop = mean ? "sum" : op;
  lt_cu_tensor d;
  int64_t off, n = lt_tensor_nelement(x);
  if (lt_cuops_describe(x, &d, &off)) return -1;
  if (n == 0 && (mean || !strcmp(op, "max") || !strcmp(op, "min")))
    return lt_fail("%s: the tensor has no elements", fn);
  unsigned grid = grid_for(ops, n);
  void *buf = NULL;
  const int64_t ab = acc_bytes(host);
  if (scratch(ops, stream, ab * (grid + 1), &buf)) return -1;
  void *partial = buf, *res = (char *)buf + ab * grid;
  char kernel[64];
  args_t a = {0};
  int rc = -1;
  add_tensor(&a, &d);
  add_count(&a, n);
  if (norm) add_value(&a, host, p);
  add_raw(&a, &partial, "p");
  snprintf(kernel, sizeof kernel, "lt_reduce_%s_%s_%s", kop, tname(x->type), index_kind(ops, n, &off, 1, grid));
  if (launch(ops, stream, "reduce", kernel, grid, &a)) goto done;
  args_t f = {0};
  add_raw(&f, &partial, "p");
  add_count(&f, grid);
  if (norm) add_value(&f, host, p);
  add_raw(&f, &res, "p");
  snprintf(kernel, sizeof kernel, "lt_reduce_finish_%s_%s", kop, tname(x->type));
  if (launch(ops, stream, "reduce", kernel, 1, &f)) goto done;
  double host_res[1];
  if (ops->to_host(ops->ctx, host_res, res, ab, stream)) goto done;
  *result = acc_to_double(host, host_res);
  if (mean) *result /= (double)n;
  rc = 0;
done:
  return scratch_free(ops, buf, rc);
}

int lt_cuops_reduce_dim(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, lt_tensor *ind,
                        const lt_tensor *x, int dim) {
  static const char *const known[] = {"sum", "prod", "mean", "max", "min", NULL};
  const int k = name_index(known, op);
  if (k < 0) return lt_fail("cuda reduce along a dimension: no reduction '%s'", op ? op : "(null)");
  char fn[64], buf1[256], buf2[256];
  snprintf(fn, sizeof fn, "cuda %s along a dimension", op);
  if (check_ops(ops, fn)) return -1;
  const int minmax = k >= 3;
  if (!strcmp(op, "mean") && check_float_input(fn, x)) return -1;
  if (dim < 0 || dim >= (x->ndim ? x->ndim : 1))
    return lt_fail("%s: dimension %d out of range of a %d-dimensional tensor", fn, dim + 1, x->ndim);
  if (same_type(fn, out, x, "the input")) return -1;
  /* out (and ind) must have x's shape with dim of size 1 */
  lt_tensor want = *x;
  if (want.ndim == 0) want.ndim = 1, want.size[0] = 1, want.stride[0] = 1;
  want.size[dim] = 1;
  const lt_tensor *outs[2] = {out, ind};
  for (int i = 0; i < 1 + minmax; i++) {
    const lt_tensor *o = outs[i];
    if (!o) return lt_fail("%s: the indices' tensor is missing", fn);
    int ok = o->ndim == want.ndim;
    for (int d = 0; ok && d < want.ndim; d++) ok = o->size[d] == want.size[d];
    if (!ok)
      return lt_fail("%s: %s should be of shape %s, not %s", fn, i ? "the indices" : "the output",
                     lt_shape_str(&want, buf1, sizeof buf1), lt_shape_str(o, buf2, sizeof buf2));
  }
  if (minmax && lt_host_type(ind->type) != LT_LONG)
    return lt_fail("%s: the indices must be a Long tensor, not %s", fn, tname(ind->type));
  const int64_t n = x->ndim ? x->size[dim] : 1, x_stride = x->ndim ? x->stride[dim] : 1;
  if (n == 0 && minmax) return lt_fail("%s: dimension %d has no elements", fn, dim + 1);
  /* the slices' view: x without dim (its data pointer and the other dimensions) */
  lt_tensor xs = want;
  xs.stride[dim] = 0;
  lt_cu_tensor dout, dind, dxs;
  int64_t off[3];
  if (lt_cuops_describe(out, &dout, &off[0]) || lt_cuops_describe(&xs, &dxs, &off[1])) return -1;
  off[1] += (n - 1) * x_stride;  /* the slices' elements reach this far */
  if (minmax && lt_cuops_describe(ind, &dind, &off[2])) return -1;
  const int64_t nslices = lt_tensor_nelement(out);
  if (nslices == 0) return 0;
  /* a block per slice when its elements are neighbours and many, else a thread per slice */
  const int blk = x_stride == 1 && n >= threads(ops);
  unsigned grid = blk ? (unsigned)(nslices < block_cap(ops) ? nslices : block_cap(ops)) : grid_for(ops, nslices);
  const char *idx = index_kind(ops, nslices > n ? nslices : n, off, 2 + minmax, grid);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_reduce_%s_%s_%s_%s", blk ? "dimblk" : "dim", op, tname(x->type), idx);
  args_t a = {0};
  add_tensor(&a, &dout);
  if (minmax) add_tensor(&a, &dind);
  add_tensor(&a, &dxs);
  add_count(&a, nslices);
  add_count(&a, n);
  add_count(&a, x_stride);
  if (launch(ops, stream, "reduce_dim", kernel, grid, &a)) return -1;
  if (!minmax) return 0;
  /* the kernels' indices are 0-based; Torch7's 1-based */
  return lt_cuops_pointwise(ops, stream, "adds", ind, ind, NULL, NULL, 1, 0);
}

/* ---------------------------------------------------------------- nn */

/* ClassNLL's batch and classes, with target and weights checked. */
static int cnll_geometry(const char *fn, const lt_tensor *input, const lt_tensor *target, const lt_tensor *weights,
                         int64_t *batch, int64_t *classes) {
  char b[256];
  if (check_float_input(fn, input)) return -1;
  if (input->ndim == 1) *batch = 1, *classes = input->size[0];
  else if (input->ndim == 2) *batch = input->size[0], *classes = input->size[1];
  else return lt_fail("%s: input should be 1D or 2D, got %s", fn, lt_shape_str(input, b, sizeof b));
  if (lt_host_type(target->type) != LT_LONG)
    return lt_fail("%s: target should be a Long tensor, not %s", fn, tname(target->type));
  if (lt_tensor_nelement(target) != *batch)
    return lt_fail("%s: %lld targets for a batch of %lld", fn, (long long)lt_tensor_nelement(target),
                   (long long)*batch);
  if (weights && (weights->type != input->type || lt_tensor_nelement(weights) != *classes))
    return lt_fail("%s: weights should be a %s tensor of %lld elements, not a %s one of %s", fn,
                   tname(input->type), (long long)*classes, tname(weights->type),
                   lt_shape_str(weights, b, sizeof b));
  return 0;
}

/* Both ClassNLL kernels' last arguments: batch, classes, size_average, ignore_index. */
static void cnll_tail(args_t *a, int64_t batch, int64_t classes, int *size_average, int64_t ignore_index) {
  add_count(a, batch);
  add_count(a, classes);
  add_raw(a, size_average, "i");
  add_count(a, ignore_index);
}

int lt_cuops_classnll_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, const lt_tensor *target,
                              const lt_tensor *weights, int size_average, int64_t ignore_index, double *loss,
                              double *total_weight) {
  static const char fn[] = "cuda ClassNLLCriterion forward";
  int64_t batch = 0, classes = 0;
  if (check_ops(ops, fn) || cnll_geometry(fn, input, target, weights, &batch, &classes)) return -1;
  const int host = lt_host_type(input->type);
  const void *in, *tg, *w = NULL;
  void *c1, *c2 = NULL, *c3 = NULL, *res = NULL;
  int rc = -1;
  if (contiguous_input(ops, stream, input, &in, &c1) || contiguous_input(ops, stream, target, &tg, &c2) ||
      (weights && contiguous_input(ops, stream, weights, &w, &c3)) || scratch(ops, stream, 3 * 8, &res))
    goto done;
  void *out = res, *tw = (char *)res + 8, *bad = (char *)res + 16;
  int sa = size_average ? 1 : 0;
  args_t a = {0};
  add_raw(&a, &out, "p");
  add_raw(&a, &tw, "p");
  add_raw(&a, &bad, "p");
  add_raw(&a, (void *)&in, "p");
  add_raw(&a, (void *)&tg, "p");
  add_raw(&a, (void *)&w, "p");
  cnll_tail(&a, batch, classes, &sa, ignore_index);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_classnll_fwd_%s", tname(input->type));
  if (launch(ops, stream, "classnll", kernel, 1, &a)) goto done;
  unsigned char host_res[24];
  if (ops->to_host(ops->ctx, host_res, res, 24, stream)) goto done;
  long long first_bad;
  memcpy(&first_bad, host_res + 16, 8);
  if (first_bad >= 0) {
    long long t;
    if (ops->to_host(ops->ctx, &t, (const long long *)tg + first_bad, 8, stream)) goto done;
    lt_fail("%s: target %lld of sample %lld is out of range 1..%lld", fn, t, first_bad + 1, (long long)classes);
    goto done;
  }
  *loss = acc_to_double(host, host_res);
  *total_weight = acc_to_double(host, host_res + 8);
  rc = 0;
done:
  rc = scratch_free(ops, c1, rc);
  rc = scratch_free(ops, c2, rc);
  rc = scratch_free(ops, c3, rc);
  return scratch_free(ops, res, rc);
}

int lt_cuops_classnll_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input, const lt_tensor *target,
                               const lt_tensor *weights, int size_average, int64_t ignore_index,
                               double total_weight) {
  static const char fn[] = "cuda ClassNLLCriterion backward";
  int64_t batch = 0, classes = 0;
  if (check_ops(ops, fn) || cnll_geometry(fn, grad_input, target, weights, &batch, &classes)) return -1;
  if (!lt_tensor_is_contiguous(grad_input)) return lt_fail("%s: gradInput must be contiguous", fn);
  if (batch * classes == 0) return 0;
  const void *tg, *w = NULL;
  void *c2, *c3 = NULL;
  int rc = -1;
  if (contiguous_input(ops, stream, target, &tg, &c2) || (weights && contiguous_input(ops, stream, weights, &w, &c3)))
    goto done;
  lt_cu_tensor d;
  lt_cuops_describe(grad_input, &d, NULL);
  void *gi = d.data;
  int sa = size_average ? 1 : 0;
  args_t a = {0};
  add_raw(&a, &gi, "p");
  add_raw(&a, (void *)&tg, "p");
  add_raw(&a, (void *)&w, "p");
  add_raw(&a, &total_weight, "d");   /* by value: no upload, no wait */
  cnll_tail(&a, batch, classes, &sa, ignore_index);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_classnll_bwd_%s", tname(grad_input->type));
  rc = launch(ops, stream, "classnll", kernel, grid_for(ops, batch * classes), &a);
done:
  rc = scratch_free(ops, c2, rc);
  return scratch_free(ops, c3, rc);
}

/* Dropout's and RReLU's training forward, the operands checked: kernel `op` (dropout.cu) with (out, input, noise,
 * n, the layer's parameters x (kind kx) and y (kind ky), seed, offset); each thread takes `group` elements. */
static int noise_forward(const lt_cuops *ops, void *stream, const char *fn, const char *op, lt_tensor *out,
                         const lt_tensor *input, lt_tensor *noise, int group, void *x, const char *kx, void *y,
                         const char *ky, uint64_t seed, uint64_t offset) {
  if (!lt_tensor_is_contiguous(noise)) return lt_fail("%s: the noise must be contiguous", fn);
  lt_cu_tensor d[3];
  int64_t off[2];
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(input, &d[1], &off[1]) ||
      lt_cuops_describe(noise, &d[2], NULL))
    return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, (n + group - 1) / group);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_%s_fwd_%s_%s", op, tname(out->type), index_kind(ops, n, off, 2, grid));
  void *pn = d[2].data;
  unsigned long long s = seed, o = offset;
  args_t a = {0};
  add_tensor(&a, &d[0]);
  add_tensor(&a, &d[1]);
  add_raw(&a, &pn, "p");
  add_count(&a, n);
  add_raw(&a, x, kx);
  add_raw(&a, y, ky);
  add_raw(&a, &s, "Q");
  add_raw(&a, &o, "Q");
  return launch(ops, stream, "dropout", kernel, grid, &a);
}

static int noise_operands(const lt_cuops *ops, const char *fn, const lt_tensor *out, const lt_tensor *input,
                          const lt_tensor *noise) {
  return check_ops(ops, fn) || check_float_input(fn, input) || same_type(fn, out, input, "the input") ||
                 same_count(fn, out, input, "the input") || same_type(fn, out, noise, "the noise") ||
                 same_count(fn, out, noise, "the noise")
             ? -1
             : 0;
}

int lt_cuops_dropout_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                             lt_tensor *noise, double p, int v1, uint64_t seed, uint64_t offset) {
  static const char fn[] = "cuda Dropout forward";
  if (noise_operands(ops, fn, out, input, noise)) return -1;
  if (!(p >= 0 && p < 1)) return lt_fail("%s: the dropout probability %g is not in [0, 1)", fn, p);
  double pp = p;
  int iv1 = v1 ? 1 : 0;
  /* (one Philox call per group of 4 elements) */
  return noise_forward(ops, stream, fn, "dropout", out, input, noise, 4, &pp, "d", &iv1, "i", seed, offset);
}

int lt_cuops_rrelu_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                           lt_tensor *noise, double lower, double upper, uint64_t seed, uint64_t offset) {
  static const char fn[] = "cuda RReLU forward";
  if (noise_operands(ops, fn, out, input, noise)) return -1;
  double lo = lower, hi = upper;
  return noise_forward(ops, stream, fn, "rrelu", out, input, noise, 1, &lo, "d", &hi, "d", seed, offset);
}

int lt_cuops_random(const lt_cuops *ops, void *stream, lt_tensor *out, int kind, double a, double b, uint64_t seed,
                    uint64_t offset) {
  static const char fn[] = "cuda random fill";
  if (check_ops(ops, fn)) return -1;
  if (kind < 0 || kind > 7)
    return lt_fail("%s: kind %d is not uniform (0), normal (1), bernoulli (2), exponential (3), cauchy (4), "
                   "logNormal (5), geometric (6) or integers (7)", fn, kind);
  lt_cu_tensor d;
  int64_t off;
  if (lt_cuops_describe(out, &d, &off)) return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_random_%s_%s", tname(out->type), index_kind(ops, n, &off, 1, grid));
  double aa = a, bb = b;
  unsigned long long s = seed, o = offset;
  args_t args = {0};
  add_tensor(&args, &d);
  add_count(&args, n);
  add_raw(&args, &kind, "i");
  add_raw(&args, &aa, "d");
  add_raw(&args, &bb, "d");
  add_raw(&args, &s, "Q");
  add_raw(&args, &o, "Q");
  return launch(ops, stream, "dropout", kernel, grid, &args);
}

int lt_cuops_dropout_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *noise) {
  static const char fn[] = "cuda Dropout backward";
  if (check_ops(ops, fn) || check_float_input(fn, grad_output) ||
      same_type(fn, grad_input, grad_output, "gradOutput") || same_count(fn, grad_input, grad_output, "gradOutput") ||
      same_type(fn, grad_input, noise, "the noise") || same_count(fn, grad_input, noise, "the noise"))
    return -1;
  const void *pn;
  void *copy;
  lt_cu_tensor d[2];
  int64_t off[2];
  if (lt_cuops_describe(grad_input, &d[0], &off[0]) || lt_cuops_describe(grad_output, &d[1], &off[1])) return -1;
  const int64_t n = lt_tensor_nelement(grad_input);
  if (n == 0) return 0;
  if (contiguous_input(ops, stream, noise, &pn, &copy)) return -1;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_dropout_bwd_%s_%s", tname(grad_input->type), index_kind(ops, n, off, 2, grid));
  args_t a = {0};
  add_tensor(&a, &d[0]);
  add_tensor(&a, &d[1]);
  add_raw(&a, (void *)&pn, "p");
  add_count(&a, n);
  int rc = launch(ops, stream, "dropout", kernel, grid, &a);
  return scratch_free(ops, copy, rc);
}

/* ---------------------------------------------------------------- nn's elementwise activations */

/* The forward (ref NULL: dst = f(src)) or the backward (dst = df(src = gradOutput, ref)) of an activation. */
static int nn_pointwise(const lt_cuops *ops, void *stream, int op, lt_tensor *dst, const lt_tensor *src,
                        const lt_tensor *ref, double a, double b) {
  const char *fn = ref ? "cuda pointwise activation backward" : "cuda pointwise activation forward";
  if (check_ops(ops, fn) || same_type(fn, dst, src, ref ? "gradOutput" : "the input") ||
      same_count(fn, dst, src, ref ? "gradOutput" : "the input") ||
      (ref && (same_type(fn, dst, ref, "the reference") || same_count(fn, dst, ref, "the reference"))))
    return -1;
  int host = lt_host_type(src->type);
  if (host != LT_FLOAT && host != LT_DOUBLE && host != LT_HALF)
    return lt_fail("%s: Float, Double and Half only, not %s", fn, tname(host));
  lt_cu_tensor d[3];
  int64_t off[3];
  int k = ref ? 3 : 2;
  if (lt_cuops_describe(dst, &d[0], &off[0]) || lt_cuops_describe(src, &d[1], &off[1]) ||
      (ref && lt_cuops_describe(ref, &d[2], &off[2])))
    return -1;
  const int64_t n = lt_tensor_nelement(dst);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_nn_pw_%s_%s_%s", ref ? "bwd" : "fwd", tname(host), index_kind(ops, n, off, k, grid));
  int iop = op;
  args_t args = {0};
  for (int i = 0; i < k; i++) add_tensor(&args, &d[i]);
  add_count(&args, n);
  add_raw(&args, &iop, "i");
  add_raw(&args, &a, "d");
  add_raw(&args, &b, "d");
  return launch(ops, stream, "nn_pointwise", kernel, grid, &args);
}

int lt_cuops_nn_pointwise_forward(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *input,
                                  double a, double b) {
  return nn_pointwise(ops, stream, op, out, input, NULL, a, b);
}

int lt_cuops_nn_pointwise_backward(const lt_cuops *ops, void *stream, int op, lt_tensor *grad_input,
                                   const lt_tensor *grad_output, const lt_tensor *ref, double a, double b) {
  if (!ref) return lt_fail("cuda pointwise activation backward: no reference tensor");
  return nn_pointwise(ops, stream, op, grad_input, grad_output, ref, a, b);
}

/* ---------------------------------------------------------------- nn's elementwise criterions */

/* One launch of the criterion kernels: the forward's loss terms into terms (n doubles; grad_input NULL) or the
 * backward's gradient into grad_input. x, y and w as the kernels take them (x again where there are no
 * weights), with the index width their offsets need. */
static int crit_launch(const char *fn, const lt_cuops *ops, void *stream, int kind, void *terms,
                       lt_tensor *grad_input, const lt_tensor *input, const lt_tensor *target,
                       const lt_tensor *weights, double param, double norm) {
  const int host = lt_host_type(input->type), fwd = grad_input == NULL;
  if (host != LT_FLOAT && host != LT_DOUBLE && host != LT_HALF)
    return lt_fail("%s: Float, Double and Half only, not %s", fn, tname(host));
  const int64_t n = lt_tensor_nelement(input);
  const lt_tensor *t[4] = {grad_input, input, target, weights ? weights : input};
  lt_cu_tensor d[4];
  int64_t off[4] = {0, 0, 0, 0};
  for (int i = fwd; i < 4; i++) {
    if (i > 1 && (same_type(fn, input, t[i], i == 2 ? "target" : "weights") ||
                  same_count(fn, input, t[i], i == 2 ? "target" : "weights")))
      return -1;
    if (lt_cuops_describe(t[i], &d[i], &off[i])) return -1;
  }
  const unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_nn_crit_%s_%s_%s", fwd ? "fwd" : "bwd", tname(host),
           index_kind(ops, n, off + fwd, 4 - fwd, grid));
  int has_w = weights ? 1 : 0, k = kind;
  args_t a = {0};
  if (fwd) add_raw(&a, &terms, "p");
  for (int i = fwd; i < 4; i++) add_tensor(&a, &d[i]);
  add_raw(&a, &has_w, "i");
  add_count(&a, n);
  add_raw(&a, &k, "i");
  add_raw(&a, &param, "d");
  if (!fwd) add_raw(&a, &norm, "d");
  return launch(ops, stream, "nn_criterion", kernel, grid, &a);
}

int lt_cuops_criterion_forward(const lt_cuops *ops, void *stream, int kind, const lt_tensor *input,
                               const lt_tensor *target, const lt_tensor *weights, double param, double *loss) {
  const char *fn = "cuda elementwise criterion forward";
  if (check_ops(ops, fn)) return -1;
  const int64_t n = lt_tensor_nelement(input);
  *loss = 0;
  if (n == 0) return 0;
  void *terms = NULL;
  if (scratch(ops, stream, n * 8, &terms)) return -1;
  int rc = crit_launch(fn, ops, stream, kind, terms, NULL, input, target, weights, param, 1);
  if (rc == 0) {   /* the terms' sum, as the CPU kernel sums them (in double) */
    lt_storage st = {.data = terms, .size = n, .type = LT_CUDA_DOUBLE};
    lt_tensor t = {.storage = &st, .offset = 0, .ndim = 1, .type = LT_CUDA_DOUBLE};
    t.size[0] = n, t.stride[0] = 1;
    rc = lt_cuops_reduce(ops, stream, "sum", &t, 0, loss);
  }
  return scratch_free(ops, terms, rc);
}

int lt_cuops_criterion_backward(const lt_cuops *ops, void *stream, int kind, lt_tensor *grad_input,
                                const lt_tensor *input, const lt_tensor *target, const lt_tensor *weights,
                                double param, double norm) {
  const char *fn = "cuda elementwise criterion backward";
  if (check_ops(ops, fn) || same_type(fn, grad_input, input, "the input") ||
      same_count(fn, grad_input, input, "the input"))
    return -1;
  if (lt_tensor_nelement(input) == 0) return 0;
  return crit_launch(fn, ops, stream, kind, NULL, grad_input, input, target, weights, param, norm);
}

/* ---------------------------------------------------------------- matrix products */

/* A 2-D view: its first element, sizes and strides in elements. */
typedef struct { char *data; int64_t rows, cols, s0, s1; } matrix;

static matrix as_matrix(const lt_tensor *t) {
  matrix x = {(char *)t->storage->data + t->offset * lt_elemsize(t->type), t->size[0], t->size[1], t->stride[0],
              t->stride[1]};
  return x;
}

static matrix transposed(matrix x) {
  matrix y = {x.data, x.cols, x.rows, x.s1, x.s0};
  return y;
}

/* The leading dimension with which BLAS reads x as a column-major matrix, or 0 when it cannot (BLAS wants
 * unit steps down a column and ld >= max(1, rows); a size-1 dimension's stride does not matter). */
static int64_t column_major_ld(matrix x) {
  const int64_t need = x.rows > 1 ? x.rows : 1;
  if (x.rows > 1 && x.s0 != 1) return 0;
  const int64_t ld = x.cols > 1 ? x.s1 : need;
  return ld >= need ? ld : 0;
}

/* An lt_tensor over x's memory (storage st), for the copy kernels. */
static void matrix_tensor(matrix x, int type, lt_storage *st, lt_tensor *t) {
  memset(st, 0, sizeof *st), memset(t, 0, sizeof *t);
  st->data = x.data, st->size = 1 + (x.rows - 1) * x.s0 + (x.cols - 1) * x.s1, st->type = type;
  t->storage = st, t->type = type, t->ndim = 2;
  t->size[0] = x.rows, t->size[1] = x.cols, t->stride[0] = x.s0, t->stride[1] = x.s1;
}

/* Scratch holding x column-major (ld = rows), its values copied in when copy_in; *x is repointed at it. */
static int column_major_copy(const lt_cuops *ops, void *stream, int type, matrix *x, int copy_in, void **mem) {
  if (scratch(ops, stream, x->rows * x->cols * lt_elemsize(type), mem)) return -1;
  matrix c = {*mem, x->rows, x->cols, 1, x->rows};
  if (copy_in) {
    lt_storage ss, ds;
    lt_tensor src, dst;
    matrix_tensor(*x, type, &ss, &src);
    matrix_tensor(c, type, &ds, &dst);
    if (lt_cuops_copy(ops, stream, &dst, &src)) return -1;
  }
  *x = c;
  return 0;
}

/* x as gemm reads it: 'n' (column-major as it lies), 't' (its transpose is), or a column-major copy. */
static int gemm_operand(const lt_cuops *ops, void *stream, int type, matrix *x, char *trans, int64_t *ld,
                        void **mem) {
  *mem = NULL;
  if ((*ld = column_major_ld(*x))) return *trans = 'n', 0;
  if ((*ld = column_major_ld(transposed(*x)))) return *trans = 't', 0;
  if (column_major_copy(ops, stream, type, x, 1, mem)) return -1;
  *trans = 'n', *ld = x->rows > 1 ? x->rows : 1;
  return 0;
}

static int same_view(const lt_tensor *x, const lt_tensor *y) {
  if (x->storage->data != y->storage->data || x->offset != y->offset || x->ndim != y->ndim) return 0;
  for (int d = 0; d < x->ndim; d++)
    if (x->size[d] != y->size[d] || x->stride[d] != y->stride[d]) return 0;
  return 1;
}

int lt_cuops_addmm(const lt_cuops *ops, void *stream, lt_tensor *out, double beta, const lt_tensor *m, double alpha,
                   const lt_tensor *a, const lt_tensor *b) {
  static const char fn[] = "cuda addmm";
  char x[256], y[256];
  if (check_ops(ops, fn)) return -1;
  if (!ops->gemm) return lt_fail("%s: no matrix product on this device (cuBLAS is not loaded)", fn);
  if (a->ndim != 2 || b->ndim != 2)
    return lt_fail("%s: matrices expected, got %dD, %dD tensors", fn, a->ndim, b->ndim);
  if (m->ndim != 2 || out->ndim != 2)
    return lt_fail("%s: the added matrix and the result must be 2D, got %dD and %dD", fn, m->ndim, out->ndim);
  const int type = lt_host_type(a->type);
  if (type != LT_FLOAT && type != LT_DOUBLE && type != LT_HALF)   /* half: cublasGemmEx, float arithmetic */
    return lt_fail("%s: not defined for %s tensors (Float, Double and Half only)", fn, tname(a->type));
  const lt_tensor *all[3] = {b, m, out};
  for (int i = 0; i < 3; i++)
    if (all[i]->type != a->type)
      return lt_fail("%s: every operand must be a %s tensor, not %s", fn, tname(a->type), tname(all[i]->type));
  if (a->size[1] != b->size[0])
    return lt_fail("%s: size mismatch, m1: %s, m2: %s", fn, lt_shape_str(a, x, sizeof x), lt_shape_str(b, y, sizeof y));
  if (m->size[0] != a->size[0] || m->size[1] != b->size[1] || out->size[0] != m->size[0] ||
      out->size[1] != m->size[1])
    return lt_fail("%s: the result and the added matrix should be [%lld x %lld], not %s and %s", fn,
                   (long long)a->size[0], (long long)b->size[1], lt_shape_str(out, x, sizeof x),
                   lt_shape_str(m, y, sizeof y));
  const int64_t rows = a->size[0], cols = b->size[1], k = a->size[1];
  if (rows == 0 || cols == 0) return 0;
  if (beta != 0 && !same_view(out, m) && lt_cuops_copy(ops, stream, out, m)) return -1;
  if (k == 0)   /* no products: beta m alone */
    return beta == 0 ? lt_cuops_fill(ops, stream, out, 0) : lt_cuops_pointwise(ops, stream, "muls", out, out, NULL,
                                                                                NULL, beta, 0);
  matrix C = as_matrix(out), A = as_matrix(a), B = as_matrix(b);
  void *cmem = NULL, *amem = NULL, *bmem = NULL;
  const matrix C_out = C;
  int rc = -1;
  if (!column_major_ld(C)) {
    if (column_major_ld(transposed(C))) {   /* out^T = b^T a^T, column-major as out lies */
      matrix t = A;
      C = transposed(C), A = transposed(B), B = transposed(t);
    } else if (column_major_copy(ops, stream, a->type, &C, beta != 0, &cmem)) {
      goto done;
    }
  }
  char ta, tb;
  int64_t lda, ldb, ldc = column_major_ld(C);
  if (gemm_operand(ops, stream, a->type, &A, &ta, &lda, &amem) ||
      gemm_operand(ops, stream, a->type, &B, &tb, &ldb, &bmem))
    goto done;
  const int64_t dims[6] = {C.rows, C.cols, k, lda, ldb, ldc};
  for (int i = 0; i < 6; i++)
    if (dims[i] >= INT_MAX) {
      lt_fail("%s: a size or leading dimension of %lld is beyond BLAS's 32-bit int", fn, (long long)dims[i]);
      goto done;
    }
  if (ops->gemm(ops->ctx, stream, type, ta, tb, C.rows, C.cols, k, alpha, A.data, lda, B.data, ldb, beta, C.data, ldc))
    goto done;
  if (cmem) {   /* back into out's own layout */
    lt_storage ss, ds;
    lt_tensor src, dst;
    matrix_tensor(C, a->type, &ss, &src);
    matrix_tensor(C_out, a->type, &ds, &dst);
    if (lt_cuops_copy(ops, stream, &dst, &src)) goto done;
  }
  rc = 0;
done:
  rc = scratch_free(ops, cmem, rc);
  rc = scratch_free(ops, amem, rc);
  return scratch_free(ops, bmem, rc);
}

/* entry 0 of a batch (a 3-D tensor) as a matrix */
static matrix first_entry(const lt_tensor *t) {
  matrix x = {(char *)t->storage->data + t->offset * lt_elemsize(t->type), t->size[1], t->size[2], t->stride[1],
              t->stride[2]};
  return x;
}

/* the transpose flag and leading dimension with which gemm reads x as it lies, or 0 */
static int64_t as_gemm_reads(matrix x, char *trans) {
  int64_t ld;
  if ((ld = column_major_ld(x))) return *trans = 'n', ld;
  if ((ld = column_major_ld(transposed(x)))) return *trans = 't', ld;
  return 0;
}

int lt_cuops_baddbmm(const lt_cuops *ops, void *stream, lt_tensor *out, double beta, double alpha, const lt_tensor *a,
                     const lt_tensor *b) {
  static const char fn[] = "cuda baddbmm";
  if (check_ops(ops, fn)) return -1;
  if (a->ndim != 3 || b->ndim != 3 || out->ndim != 3)
    return lt_fail("%s: 3-D tensors expected, got %dD, %dD and %dD", fn, a->ndim, b->ndim, out->ndim);
  const int type = lt_host_type(a->type);
  if ((type != LT_FLOAT && type != LT_DOUBLE) || b->type != a->type || out->type != a->type)
    return lt_fail("%s: Float or Double tensors of one type expected", fn);
  const int64_t nb = a->size[0], rows = a->size[1], k = a->size[2], cols = b->size[2];
  if (b->size[0] != nb || b->size[1] != k || out->size[0] != nb || out->size[1] != rows || out->size[2] != cols)
    return lt_fail("%s: the batches' sizes do not match", fn);
  /* the degenerate products, results over a factor's memory and older cuBLAS: entry by entry (the caller) */
  if (!ops->gemm_strided_batched || nb == 0 || rows == 0 || cols == 0 || k == 0 || out->storage == a->storage ||
      out->storage == b->storage)
    return 1;
  matrix C = first_entry(out), A = first_entry(a), B = first_entry(b);
  int64_t sc = out->stride[0], sa = a->stride[0], sb = b->stride[0];
  /* out's entries must not overlap one another */
  if (nb > 1 && sc < 1 + (C.rows - 1) * C.s0 + (C.cols - 1) * C.s1) return 1;
  if (!column_major_ld(C)) {
    if (!column_major_ld(transposed(C))) return 1;
    matrix t = A;   /* out^T = b^T a^T, column-major as out lies */
    int64_t st = sa;
    C = transposed(C), A = transposed(B), B = transposed(t), sa = sb, sb = st;
  }
  char ta = 'n', tb = 'n';
  const int64_t lda = as_gemm_reads(A, &ta), ldb = as_gemm_reads(B, &tb), ldc = column_major_ld(C);
  if (!lda || !ldb) return 1;
  const int64_t dims[7] = {C.rows, C.cols, k, lda, ldb, ldc, nb};
  for (int i = 0; i < 7; i++)
    if (dims[i] >= INT_MAX) return 1;
  return ops->gemm_strided_batched(ops->ctx, stream, type, ta, tb, C.rows, C.cols, k, alpha, A.data, lda, sa, B.data,
                                   ldb, sb, beta, C.data, ldc, sc, nb) ? -1 : 0;
}
