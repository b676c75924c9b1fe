/* cutorch's tensor math on a device: operands described for native/cuda's kernel ABI, shapes checked,
 * grids sized, kernels started through a launcher (lt_cuda_ops.h). Nothing here touches device memory. */
#include "lt_internal.h"

#include <limits.h>

enum { ACC_INT = 0, ACC_FLOAT = 1, ACC_DOUBLE = 2 };   /* the compute type lt_acc_t<T> of an element type */

static int acc_kind(int host) { return host == LT_DOUBLE ? ACC_DOUBLE : host >= LT_FLOAT ? ACC_FLOAT : ACC_INT; }
static int is_float_type(int host) { return host == LT_FLOAT || host == LT_DOUBLE || host == LT_HALF; }
static const char acc_sig[3] = {'q', 'f', 'd'};
static int64_t acc_bytes(int host) { return acc_kind(host) == ACC_FLOAT ? 4 : 8; }

/* A scalar argument in the compute type of an element type. */
typedef union { long long q; float f; double d; } acc_value;

static acc_value acc_of(int host, double v) {
  acc_value a;
  switch (acc_kind(host)) {
    case ACC_FLOAT: a.f = (float)v; break;
    case ACC_DOUBLE: a.d = v; break;
    default: a.q = (long long)v; break;
  }
  return a;
}

static double acc_to_double(int host, const void *p) {
  switch (acc_kind(host)) {
    case ACC_FLOAT: return *(const float *)p;
    case ACC_DOUBLE: return *(const double *)p;
    default: return (double)*(const long long *)p;
  }
}

static int threads(const lt_cuops *ops) { return ops->threads_per_block > 0 ? ops->threads_per_block : 256; }
static int64_t block_cap(const lt_cuops *ops) { return ops->max_blocks > 0 ? ops->max_blocks : 1024; }

static int check_ops(const lt_cuops *ops, const char *fn) {
  if (!ops || !ops->launch || !ops->to_host || !ops->to_device || !ops->alloc)
    return lt_fail("%s: no launcher (launch, to_host, to_device and an allocator are needed)", fn);
  int b = threads(ops);
  if (b % 32 || b > 1024) return lt_fail("%s: %d threads per block: a multiple of 32 up to 1024 is needed", fn, b);
  return 0;
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
} args_t;

static void add_raw(args_t *a, void *p, const char *kind) {
  if (a->n) strcat(a->sig, ",");
  strcat(a->sig, kind);
  a->params[a->n++] = p;
}
static void add_tensor(args_t *a, const lt_cu_tensor *t) {
  a->tensors[a->ntensors] = *t;
  add_raw(a, &a->tensors[a->ntensors++], "S144");
}
static void add_count(args_t *a, long long v) {
  a->counts[a->ncounts] = v;
  add_raw(a, &a->counts[a->ncounts++], "q");
}
static void add_value(args_t *a, int host, double v) {
  a->values[a->nvalues] = acc_of(host, v);
  char k[2] = {acc_sig[acc_kind(host)], 0};
  add_raw(a, &a->values[a->nvalues++], k);
}

/* Blocks for n elements of a grid-stride kernel. */
static unsigned grid_for(const lt_cuops *ops, int64_t n) {
  int64_t b = threads(ops), g = (n + b - 1) / b;
  if (g > block_cap(ops)) g = block_cap(ops);
  return g < 1 ? 1 : (unsigned)g;
}

/* THC's 32-bit index path: every operand's offsets and the element count, and the thread count, fit. */
static const char *index_kind(const lt_cuops *ops, int64_t n, const int64_t *max_offsets, int k, unsigned grid) {
  int64_t limit = INT32_MAX;
  if (n > limit || (int64_t)grid * threads(ops) > ((int64_t)1 << 31)) return "i64";
  for (int i = 0; i < k; i++)
    if (max_offsets[i] > limit) return "i64";
  return "i32";
}

static int launch(const lt_cuops *ops, void *stream, const char *file, const char *kernel, unsigned grid, args_t *a) {
  return ops->launch(ops->ctx, file, kernel, a->sig, grid, (unsigned)threads(ops), stream, a->params);
}

static const char *tname(int type) { return lt_type_name(lt_host_type(type)); }

static int same_count(const char *fn, const lt_tensor *a, const lt_tensor *b, const char *what) {
  if (lt_tensor_nelement(a) == lt_tensor_nelement(b)) return 0;
  char x[256], y[256];
  return lt_fail("%s: %s has %lld elements %s, the output %lld %s", fn, what, (long long)lt_tensor_nelement(b),
                 lt_shape_str(b, y, sizeof y), (long long)lt_tensor_nelement(a), lt_shape_str(a, x, sizeof x));
}

static int same_type(const char *fn, const lt_tensor *a, const lt_tensor *b, const char *what) {
  if (a->type == b->type) return 0;
  return lt_fail("%s: %s is a %s tensor, the output a %s one", fn, what, tname(b->type), tname(a->type));
}

/* The operations defined for the floating types only refuse the others with this. */
static int check_float_input(const char *fn, const lt_tensor *t) {
  if (is_float_type(lt_host_type(t->type))) return 0;
  return lt_fail("%s: not defined for %s tensors (Float, Double and Half only)", fn, tname(t->type));
}

/* The index of op in a NULL-ended list of names, or -1. */
static int name_index(const char *const *names, const char *op) {
  for (int k = 0; op && names[k]; k++)
    if (!strcmp(names[k], op)) return k;
  return -1;
}

/* Scratch on the call's stream. */
static int scratch(const lt_cuops *ops, void *stream, int64_t bytes, void **p) {
  return lt_cuda_alloc(ops->alloc, ops->device, bytes, stream, p);
}
static int scratch_free(const lt_cuops *ops, void *p, int rc) {
  if (p && lt_cuda_alloc_free(ops->alloc, p) && rc == 0) return -1;
  return rc;
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

/* A contiguous device copy of t when it is not contiguous (*copy set, to be freed), else its own data. */
static int contiguous_input(const lt_cuops *ops, void *stream, const lt_tensor *t, const void **data, void **copy) {
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

static int check_contiguous_output(const char *fn, const lt_tensor *o, const lt_tensor *like, const char *what) {
  char a[256], b[256];
  int ok = o->ndim == like->ndim && o->type == like->type;
  for (int d = 0; ok && d < o->ndim; d++) ok = o->size[d] == like->size[d];
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s, not a %s one of %s", fn, what, tname(like->type),
                   lt_shape_str(like, a, sizeof a), tname(o->type), lt_shape_str(o, b, sizeof b));
  if (!lt_tensor_is_contiguous(o)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

/* (outer, classes, inner) of LogSoftMax's input, by THNN's rule. */
static int lsm_geometry(const char *fn, const lt_tensor *t, int64_t *outer, int64_t *classes, int64_t *inner) {
  char b[256];
  switch (t->ndim) {
    case 1: *outer = 1, *classes = t->size[0], *inner = 1; return 0;
    case 2: *outer = t->size[0], *classes = t->size[1], *inner = 1; return 0;
    case 3: *outer = 1, *classes = t->size[0], *inner = t->size[1] * t->size[2]; return 0;
    case 4: *outer = t->size[0], *classes = t->size[1], *inner = t->size[2] * t->size[3]; return 0;
    default: return lt_fail("%s: 1D, 2D, 3D or 4D tensor expected, got %s", fn, lt_shape_str(t, b, sizeof b));
  }
}

/* LogSoftMax's forward (dst = out, x = input) or backward (dst = gradInput, x = gradOutput, y = output): rows
 * of a 1-D or 2-D tensor a block each, the class dimension of a 3-D or 4-D one a thread per position. */
static int logsoftmax(const lt_cuops *ops, void *stream, int backward, lt_tensor *dst, const lt_tensor *x,
                      const lt_tensor *y) {
  const char *fn = backward ? "cuda LogSoftMax backward" : "cuda LogSoftMax forward";
  const lt_tensor *shape = backward ? y : x;  /* the forward output has the input's shape */
  int64_t outer = 0, classes = 0, inner = 0;
  if (check_ops(ops, fn) || check_float_input(fn, shape) || lsm_geometry(fn, shape, &outer, &classes, &inner) ||
      check_contiguous_output(fn, dst, shape, backward ? "gradInput" : "the output") ||
      (backward && (same_type(fn, y, x, "gradOutput") || same_count(fn, y, x, "gradOutput"))))
    return -1;
  if (lt_tensor_nelement(shape) == 0) return 0;
  const void *px, *py = NULL;
  void *copy1, *copy2 = NULL;
  if (contiguous_input(ops, stream, x, &px, &copy1)) return -1;
  if (backward && contiguous_input(ops, stream, y, &py, &copy2)) return scratch_free(ops, copy1, -1);
  lt_cu_tensor d;
  lt_cuops_describe(dst, &d, NULL);
  void *pd = d.data;
  args_t a = {0};
  add_raw(&a, &pd, "p");
  add_raw(&a, (void *)&px, "p");
  if (backward) add_raw(&a, (void *)&py, "p");
  add_count(&a, outer);
  add_count(&a, classes);
  if (inner != 1) add_count(&a, inner);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_logsoftmax_%s%s_%s", inner == 1 ? "" : "spatial_", backward ? "bwd" : "fwd",
           tname(shape->type));
  unsigned grid = inner == 1 ? (unsigned)(outer < block_cap(ops) ? outer : block_cap(ops)) : grid_for(ops, outer * inner);
  int rc = launch(ops, stream, "logsoftmax", kernel, grid, &a);
  rc = scratch_free(ops, copy1, rc);
  return scratch_free(ops, copy2, rc);
}

int lt_cuops_logsoftmax_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input) {
  return logsoftmax(ops, stream, 0, out, input, NULL);
}

int lt_cuops_logsoftmax_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                                 const lt_tensor *grad_output, const lt_tensor *output) {
  return logsoftmax(ops, stream, 1, grad_input, grad_output, output);
}

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
  const int host = lt_host_type(grad_input->type);
  const void *tg, *w = NULL;
  void *c2, *c3 = NULL, *tw = NULL;
  int rc = -1;
  if (contiguous_input(ops, stream, target, &tg, &c2) ||
      (weights && contiguous_input(ops, stream, weights, &w, &c3)) || scratch(ops, stream, 8, &tw))
    goto done;
  acc_value v = acc_of(host, total_weight);
  if (ops->to_device(ops->ctx, tw, &v, acc_bytes(host), stream)) goto done;
  lt_cu_tensor d;
  lt_cuops_describe(grad_input, &d, NULL);
  void *gi = d.data;
  int sa = size_average ? 1 : 0;
  args_t a = {0};
  add_raw(&a, &gi, "p");
  add_raw(&a, (void *)&tg, "p");
  add_raw(&a, (void *)&w, "p");
  add_raw(&a, &tw, "p");
  cnll_tail(&a, batch, classes, &sa, ignore_index);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_classnll_bwd_%s", tname(grad_input->type));
  rc = launch(ops, stream, "classnll", kernel, grid_for(ops, batch * classes), &a);
done:
  rc = scratch_free(ops, c2, rc);
  rc = scratch_free(ops, c3, rc);
  return scratch_free(ops, tw, rc);
}

int lt_cuops_dropout_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                             lt_tensor *noise, double p, int v1, uint64_t seed, uint64_t offset) {
  static const char fn[] = "cuda Dropout forward";
  if (check_ops(ops, fn) || check_float_input(fn, input) || same_type(fn, out, input, "the input") ||
      same_count(fn, out, input, "the input") || same_type(fn, out, noise, "the noise") ||
      same_count(fn, out, noise, "the noise"))
    return -1;
  if (!(p >= 0 && p < 1)) return lt_fail("%s: the dropout probability %g is not in [0, 1)", fn, p);
  if (!lt_tensor_is_contiguous(noise)) return lt_fail("%s: the noise must be contiguous", fn);
  lt_cu_tensor d[3];
  int64_t off[2];
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(input, &d[1], &off[1]) ||
      lt_cuops_describe(noise, &d[2], NULL))
    return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  unsigned grid = grid_for(ops, (n + 3) / 4);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_dropout_fwd_%s_%s", tname(out->type), index_kind(ops, n, off, 2, grid));
  void *pn = d[2].data;
  double pp = p;
  int iv1 = v1 ? 1 : 0;
  unsigned long long s = seed, o = offset;
  args_t a = {0};
  add_tensor(&a, &d[0]);
  add_tensor(&a, &d[1]);
  add_raw(&a, &pn, "p");
  add_count(&a, n);
  add_raw(&a, &pp, "d");
  add_raw(&a, &iv1, "i");
  add_raw(&a, &s, "Q");
  add_raw(&a, &o, "Q");
  return launch(ops, stream, "dropout", kernel, grid, &a);
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
  if (type != LT_FLOAT && type != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (Float and Double only)", fn, tname(a->type));
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

/* ---------------------------------------------------------------- convolution: im2col + GEMM */

/* What the column kernels and GEMMs see: an image (C, H, W) per sample, a kernel of kH x kW taps, and its
 * column matrix of K = C*kH*kW rows by P = oH*oW columns; `rows` is the other side of the weight matrix (rows x
 * K): a plain convolution's output planes, or a full convolution's input planes. For a plain convolution the
 * image is the input; for a full (transposed) one it is the output, whose columns span the input. */
typedef struct {
  int64_t N, C, H, W, oH, oW, K, P, rows;
  int64_t kW, kH, dW, dH, padW, padH, dilW, dilH;
  int batch, type;
} conv_geom;

static int conv_check_common(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                             int dH, int padW, int padH) {
  char a[256];
  if (lt_conv2d_check_sizes(fn, kW, kH, dW, dH, padW, padH)) return -1;
  const int type = lt_host_type(input->type);
  if (type != LT_FLOAT && type != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (CudaTensor and CudaDoubleTensor only)", fn, tname(input->type));
  if (weight->type != input->type)
    return lt_fail("%s: weight must be a %s tensor like the input, not %s", fn, tname(input->type), tname(weight->type));
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, a, sizeof a));
  return 0;
}

/* The unfolding geometry of a plain (full = 0) or full convolution, checked as the CPU kernels check it. */
static int conv_geometry(const char *fn, conv_geom *g, int full, const lt_tensor *input, const lt_tensor *weight,
                         int kW, int kH, int dW, int dH, int padW, int padH, int dilW_or_adjW, int dilH_or_adjH) {
  lt_conv2d_geom cg;
  if (conv_check_common(fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      (full ? lt_full_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, dilW_or_adjW, dilH_or_adjH, &cg)
            : lt_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, dilW_or_adjW, dilH_or_adjH, &cg)))
    return -1;
  if (!lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be contiguous", fn);
  memset(g, 0, sizeof *g);
  g->batch = cg.batch, g->type = lt_host_type(input->type), g->N = cg.N;
  if (full) {   /* the image is the output */
    g->C = cg.nOut, g->H = cg.oH, g->W = cg.oW, g->oH = cg.H, g->oW = cg.W, g->rows = cg.C;
    g->dilW = g->dilH = 1;
  } else {
    g->C = cg.C, g->H = cg.H, g->W = cg.W, g->oH = cg.oH, g->oW = cg.oW, g->rows = cg.nOut;
    g->dilW = dilW_or_adjW, g->dilH = dilH_or_adjH;
  }
  g->kW = kW, g->kH = kH, g->dW = dW, g->dH = dH, g->padW = padW, g->padH = padH;
  g->K = g->C * kH * kW, g->P = g->oH * g->oW;
  if (g->K >= INT_MAX || g->P >= INT_MAX || g->rows >= INT_MAX)
    return lt_fail("%s: a matrix dimension is beyond cuBLAS's 32-bit int", fn);
  return 0;
}

/* t must be an (N x) planes x h x w tensor of the input's type and batch-ness; contiguous when asked. */
static int conv_check_shape(const char *fn, const conv_geom *g, const lt_tensor *t, int type, const char *what,
                            int64_t planes, int64_t h, int64_t w, int contiguous) {
  char a[256];
  const int f = g->batch;
  int ok = t->type == type && t->ndim == 3 + f && (!f || t->size[0] == g->N) && t->size[f] == planes &&
           t->size[f + 1] == h && t->size[f + 2] == w;
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s%lld x %lld x %lld, not a %s one of %s", fn, what,
                   tname(type), f ? "N x " : "", (long long)planes, (long long)h, (long long)w, tname(t->type),
                   lt_shape_str(t, a, sizeof a));
  if (contiguous && !lt_tensor_is_contiguous(t)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

static int conv_check_vector(const char *fn, const lt_tensor *t, int type, int64_t n, const char *what) {
  char a[256];
  if (t->type != type || lt_tensor_nelement(t) != n || !lt_tensor_is_contiguous(t))
    return lt_fail("%s: %s should be a contiguous %s tensor of %lld elements, not a %s one of %s", fn, what,
                   tname(type), (long long)n, tname(t->type), lt_shape_str(t, a, sizeof a));
  return 0;
}

/* A 1x1 kernel with unit stride, no padding: the image is its own column matrix. */
static int conv_is_pointwise(const conv_geom *g) {
  return g->kW == 1 && g->kH == 1 && g->dW == 1 && g->dH == 1 && g->padW == 0 && g->padH == 0;
}

static const char *conv_type_name(const conv_geom *g) { return g->type == LT_DOUBLE ? "Double" : "Float"; }

/* im2col (to_columns) or col2im of one sample. */
static int conv_unfold(const lt_cuops *ops, void *stream, const conv_geom *g, int to_columns, void *dst,
                       const void *src) {
  args_t a = {0};
  add_raw(&a, &dst, "p");
  add_raw(&a, (void *)&src, "p");
  const int64_t sizes[13] = {g->C, g->H, g->W, g->kH, g->kW, g->padH, g->padW, g->dH, g->dW, g->dilH, g->dilW,
                             g->oH, g->oW};
  for (int i = 0; i < 13; i++) add_count(&a, sizes[i]);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_%s_%s", to_columns ? "im2col" : "col2im", conv_type_name(g));
  return launch(ops, stream, "conv", kernel, grid_for(ops, to_columns ? g->C * g->P : g->C * g->H * g->W), &a);
}

/* The bias kernels over an (outer, channels, inner) tensor x: add bias into it, or accumulate scale * its sums
 * over outer and inner into bias. */
static int conv_bias(const lt_cuops *ops, void *stream, const conv_geom *g, int grad, void *bias, const void *x,
                     int64_t outer, int64_t channels, int64_t inner, double scale) {
  args_t a = {0};
  add_raw(&a, grad ? &bias : (void **)&x, "p");
  add_raw(&a, grad ? (void **)&x : &bias, "p");
  add_count(&a, outer);
  add_count(&a, channels);
  add_count(&a, inner);
  if (grad) add_value(&a, g->type, scale);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_conv_bias_%s_%s", grad ? "grad" : "add", conv_type_name(g));
  unsigned grid = grad ? (unsigned)(channels < block_cap(ops) ? channels : block_cap(ops))
                       : grid_for(ops, outer * channels * inner);
  return launch(ops, stream, "conv", kernel, grid, &a);
}

/* The three per-sample passes, each over the N samples of contiguous (sample-major) tensors. In each, cols is
 * sample n's column matrix (K x P) and w the weight as a (rows x K) matrix; x is a (rows x P) tensor per sample.
 *   UNFOLD_MULTIPLY:   x_n = w cols(image_n)                   (plain forward; full backward-data)
 *   MULTIPLY_FOLD:     image_n = fold(w^T x_n)                 (plain backward-data; full forward)
 *   UNFOLD_ACCUMULATE: w += scale x_n cols(image_n)^T          (both backward-parameters)
 * Column-major (cuBLAS) views of the row-major matrices are their transposes, hence the operand orders. */
enum { UNFOLD_MULTIPLY, MULTIPLY_FOLD, UNFOLD_ACCUMULATE };

static int conv_passes(const lt_cuops *ops, void *stream, const conv_geom *g, int pass, char *image, char *x,
                       char *w, double scale) {
  const int64_t es = lt_elemsize(g->type);
  const int64_t image_step = g->C * g->H * g->W * es, x_step = g->rows * g->P * es;
  const int pointwise = conv_is_pointwise(g);
  void *col = NULL;
  int rc = pointwise ? 0 : scratch(ops, stream, g->K * g->P * es, &col);
  for (int64_t n = 0; rc == 0 && n < g->N; n++) {
    char *image_n = image + n * image_step, *x_n = x + n * x_step;
    void *cols = pointwise ? (void *)image_n : col;
    switch (pass) {
      case UNFOLD_MULTIPLY:
        if (!pointwise) rc = conv_unfold(ops, stream, g, 1, col, image_n);
        if (rc == 0)
          rc = ops->gemm(ops->ctx, stream, g->type, 'n', 'n', g->P, g->rows, g->K, 1.0, cols, g->P, w, g->K, 0.0, x_n,
                         g->P);
        break;
      case MULTIPLY_FOLD:
        rc = ops->gemm(ops->ctx, stream, g->type, 'n', 't', g->P, g->K, g->rows, 1.0, x_n, g->P, w, g->K, 0.0, cols,
                       g->P);
        if (rc == 0 && !pointwise) rc = conv_unfold(ops, stream, g, 0, image_n, col);
        break;
      default:
        if (!pointwise) rc = conv_unfold(ops, stream, g, 1, col, image_n);
        if (rc == 0)
          rc = ops->gemm(ops->ctx, stream, g->type, 't', 'n', g->K, g->rows, g->P, scale, cols, g->P, x_n, g->P, 1.0,
                         w, g->K);
    }
  }
  return scratch_free(ops, col, rc);
}

/* The data of t, or of a contiguous scratch copy (*copy, to be freed) when t is not contiguous. */
static int conv_contiguous(const lt_cuops *ops, void *stream, const lt_tensor *t, char **data, void **copy) {
  const void *d;
  if (contiguous_input(ops, stream, t, &d, copy)) return -1;
  *data = (char *)d;
  return 0;
}

static int conv_ready(const lt_cuops *ops, const char *fn) {
  if (check_ops(ops, fn)) return -1;
  if (!ops->gemm) return lt_fail("%s: no matrix product on this device (cuBLAS is not loaded)", fn);
  return 0;
}

/* forward of a plain (full = 0) or full convolution: output = conv(input) + bias */
static int conv_forward(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                        lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW,
                        int dH, int padW, int padH, int extraW, int extraH) {
  conv_geom g;
  if (conv_ready(ops, fn) || conv_geometry(fn, &g, full, input, weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  if ((bias && conv_check_vector(fn, bias, input->type, planes, "bias")) ||
      conv_check_shape(fn, &g, output, input->type, "the output", planes, oH, oW, 1))
    return -1;
  if (g.N == 0) return 0;
  char *in, *out = lt_tensor_data(output);
  void *copy;
  if (conv_contiguous(ops, stream, input, &in, &copy)) return -1;
  int rc = full ? conv_passes(ops, stream, &g, MULTIPLY_FOLD, out, in, lt_tensor_data(weight), 0)
                : conv_passes(ops, stream, &g, UNFOLD_MULTIPLY, in, out, lt_tensor_data(weight), 0);
  if (rc == 0 && bias) rc = conv_bias(ops, stream, &g, 0, lt_tensor_data(bias), out, g.N, planes, oH * oW, 0);
  return scratch_free(ops, copy, rc);
}

static int conv_backward_data(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                              const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight, int kW,
                              int kH, int dW, int dH, int padW, int padH, int extraW, int extraH) {
  conv_geom g;
  if (conv_ready(ops, fn) || conv_geometry(fn, &g, full, input, weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t out_planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  const int64_t in_planes = full ? g.rows : g.C, iH = full ? g.oH : g.H, iW = full ? g.oW : g.W;
  if (conv_check_shape(fn, &g, grad_output, input->type, "gradOutput", out_planes, oH, oW, 0) ||
      conv_check_shape(fn, &g, grad_input, input->type, "gradInput", in_planes, iH, iW, 1))
    return -1;
  if (g.N == 0) return 0;
  char *go, *gi = lt_tensor_data(grad_input);
  void *copy;
  if (conv_contiguous(ops, stream, grad_output, &go, &copy)) return -1;
  int rc = full ? conv_passes(ops, stream, &g, UNFOLD_MULTIPLY, go, gi, lt_tensor_data(weight), 0)
                : conv_passes(ops, stream, &g, MULTIPLY_FOLD, gi, go, lt_tensor_data(weight), 0);
  return scratch_free(ops, copy, rc);
}

static int conv_backward_params(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias, int kW,
                                int kH, int dW, int dH, int padW, int padH, int extraW, int extraH, double scale) {
  conv_geom g;
  if (conv_ready(ops, fn) ||
      conv_geometry(fn, &g, full, input, grad_weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t out_planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  if (conv_check_shape(fn, &g, grad_output, input->type, "gradOutput", out_planes, oH, oW, 0) ||
      (grad_bias && conv_check_vector(fn, grad_bias, input->type, out_planes, "gradBias")))
    return -1;
  if (g.N == 0 || scale == 0) return 0;
  char *in, *go = NULL;
  void *in_copy, *go_copy = NULL;
  if (conv_contiguous(ops, stream, input, &in, &in_copy)) return -1;
  int rc = conv_contiguous(ops, stream, grad_output, &go, &go_copy);
  if (rc == 0)
    rc = conv_passes(ops, stream, &g, UNFOLD_ACCUMULATE, full ? go : in, full ? in : go,
                     lt_tensor_data(grad_weight), scale);
  if (rc == 0 && grad_bias)
    rc = conv_bias(ops, stream, &g, 1, lt_tensor_data(grad_bias), go, g.N, out_planes, oH * oW, scale);
  rc = scratch_free(ops, go_copy, rc);
  return scratch_free(ops, in_copy, rc);
}

int lt_cuops_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                            const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH, int padW,
                            int padH, int dilW, int dilH) {
  return conv_forward("cuda SpatialConvolution forward", 0, ops, stream, input, output, weight, bias, kW, kH, dW, dH,
                      padW, padH, dilW, dilH);
}

int lt_cuops_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight, int kW,
                                  int kH, int dW, int dH, int padW, int padH, int dilW, int dilH) {
  return conv_backward_data("cuda SpatialConvolution backward (gradInput)", 0, ops, stream, input, grad_output,
                            grad_input, weight, kW, kH, dW, dH, padW, padH, dilW, dilH);
}

int lt_cuops_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                    const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias, int kW,
                                    int kH, int dW, int dH, int padW, int padH, int dilW, int dilH, double scale) {
  return conv_backward_params("cuda SpatialConvolution backward (gradWeight, gradBias)", 0, ops, stream, input,
                              grad_output, grad_weight, grad_bias, kW, kH, dW, dH, padW, padH, dilW, dilH, scale);
}

int lt_cuops_full_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                                 const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH,
                                 int padW, int padH, int adjW, int adjH) {
  return conv_forward("cuda SpatialFullConvolution forward", 1, ops, stream, input, output, weight, bias, kW, kH, dW,
                      dH, padW, padH, adjW, adjH);
}

int lt_cuops_full_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                       const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight,
                                       int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH) {
  return conv_backward_data("cuda SpatialFullConvolution backward (gradInput)", 1, ops, stream, input, grad_output,
                            grad_input, weight, kW, kH, dW, dH, padW, padH, adjW, adjH);
}

int lt_cuops_full_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                         const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias,
                                         int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH,
                                         double scale) {
  return conv_backward_params("cuda SpatialFullConvolution backward (gradWeight, gradBias)", 1, ops, stream, input,
                              grad_output, grad_weight, grad_bias, kW, kH, dW, dH, padW, padH, adjW, adjH, scale);
}
