/* cuDNN's pooling, activations and softmax for the cudnn.* modules on a GPU (cudnn.SpatialMaxPooling,
 * SpatialAveragePooling and their volumetric kin; ReLU, ClippedReLU, Tanh, Sigmoid; the softmax family), as
 * cudnn.torch ran them: descriptors made per call (they cost microseconds, and these layers keep no algorithm
 * choice), packed tensors, the handle per (thread, device) of cuda_cudnn.c. NaNs propagate through max pooling
 * and the activations, as through nn's CPU kernels (cuDNN's default would drop them). */
#include "lt_internal.h"
#include "cuda_ops_internal.h"
#include "cuda_cudnn_internal.h"

enum { PROPAGATE_NAN = 1, MAX_DIMS = 5 };

static struct {
  int (*create_pool)(void **), (*destroy_pool)(void *);
  int (*set_pool)(void *, int, int, int, const int *, const int *, const int *);
  int (*pool_dims)(const void *, const void *, int, int *);
  int (*pool_forward)(void *, const void *, const void *, const void *, const void *, const void *, const void *,
                      void *);
  int (*pool_backward)(void *, const void *, const void *, const void *, const void *, const void *, const void *,
                       const void *, const void *, const void *, const void *, void *);
  int (*create_act)(void **), (*destroy_act)(void *);
  int (*set_act)(void *, int, int, double);
  int (*act_forward)(void *, void *, const void *, const void *, const void *, const void *, const void *, void *);
  int (*act_backward)(void *, void *, const void *, const void *, const void *, const void *, const void *,
                      const void *, const void *, const void *, const void *, void *);
  int (*softmax_forward)(void *, int, int, const void *, const void *, const void *, const void *, const void *,
                         void *);
  int (*softmax_backward)(void *, int, int, const void *, const void *, const void *, const void *, const void *,
                          const void *, const void *, void *);
} api;
static int resolved;

int lt_cudnn_layers_resolve(void) {
  static const lt_cuda_sym syms[] = {
    {(void **)&api.create_pool, "cudnnCreatePoolingDescriptor"},
    {(void **)&api.destroy_pool, "cudnnDestroyPoolingDescriptor"},
    {(void **)&api.set_pool, "cudnnSetPoolingNdDescriptor"},
    {(void **)&api.pool_dims, "cudnnGetPoolingNdForwardOutputDim"},
    {(void **)&api.pool_forward, "cudnnPoolingForward"},
    {(void **)&api.pool_backward, "cudnnPoolingBackward"},
    {(void **)&api.create_act, "cudnnCreateActivationDescriptor"},
    {(void **)&api.destroy_act, "cudnnDestroyActivationDescriptor"},
    {(void **)&api.set_act, "cudnnSetActivationDescriptor"},
    {(void **)&api.act_forward, "cudnnActivationForward"},
    {(void **)&api.act_backward, "cudnnActivationBackward"},
    {(void **)&api.softmax_forward, "cudnnSoftmaxForward"},
    {(void **)&api.softmax_backward, "cudnnSoftmaxBackward"}};
  if (lt_cudnn_core_resolve()) return -1;
  return lt_cuda_find_symbols(LT_CUDA_CUDNN, syms, sizeof syms / sizeof syms[0], &resolved);
}

static int ready(const lt_cuops *ops, const char *fn) {
  if (ops && check_ops(ops, fn)) return -1;
  return lt_cudnn_layers_resolve();
}

/* cuDNN's data type of t's elements: float and double here */
static int data_type(const char *fn, int type, int *dtype) {
  const int host = lt_host_type(type);
  if (host != LT_FLOAT && host != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (CudaTensor and CudaDoubleTensor here)", fn, tname(type));
  *dtype = host == LT_DOUBLE ? LT_CUDNN_DATA_DOUBLE : LT_CUDNN_DATA_FLOAT;
  return 0;
}

/* alpha = 1, beta = 0 in the data type's scalar type */
static const double d_one = 1, d_zero = 0;
static const float f_one = 1, f_zero = 0;
static const void *one(int dtype) { return dtype == LT_CUDNN_DATA_DOUBLE ? (const void *)&d_one : (const void *)&f_one; }
static const void *zero(int dtype) {
  return dtype == LT_CUDNN_DATA_DOUBLE ? (const void *)&d_zero : (const void *)&f_zero;
}

/* t has the sizes dims[skip..nb) (skip 1: an unbatched tensor of a batched geometry), t's type, and is contiguous
 * when `contiguous` */
static int check_sizes(const char *fn, const lt_tensor *t, const lt_tensor *like, const int64_t *dims, int nb,
                       int skip, const char *what, int contiguous) {
  char a[256], want[160];
  int ok = t->type == like->type && t->ndim == nb - skip;
  for (int d = skip; ok && d < nb; d++) ok = t->size[d - skip] == dims[d];
  if (!ok) {
    int n = 0;
    want[0] = 0;
    for (int d = skip; d < nb && n < (int)sizeof want - 24; d++)
      n += snprintf(want + n, sizeof want - n, d > skip ? " x %lld" : "%lld", (long long)dims[d]);
    return lt_fail("%s: %s should be a %s tensor of size %s, not a %s one of %s", fn, what, tname(like->type), want,
                   tname(t->type), lt_shape_str(t, a, sizeof a));
  }
  if (contiguous && !lt_tensor_is_contiguous(t)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

/* ---------------------------------------------------------------- pooling */

static const char *pool_name(const lt_cudnn_pool *p, int backward) {
  if (p->mode == LT_CUDNN_POOL_MAX) return backward ? "cudnn max pooling backward" : "cudnn max pooling forward";
  return backward ? "cudnn average pooling backward" : "cudnn average pooling forward";
}

static int pool_check(const char *fn, const lt_cudnn_pool *p) {
  if (p->dims != 2 && p->dims != 3) return lt_fail("%s: 2-D or 3-D pooling, not %d-D", fn, p->dims);
  if (p->mode < LT_CUDNN_POOL_MAX || p->mode > LT_CUDNN_POOL_AVERAGE_EXCLUDE_PAD)
    return lt_fail("%s: no pooling mode %d", fn, p->mode);
  for (int i = 0; i < p->dims; i++)
    if (p->window[i] < 1 || p->stride[i] < 1 || p->pad[i] < 0)
      return lt_fail("%s: window %d, stride %d and padding %d (dimension %d): the window and stride should be at "
                     "least 1, the padding at least 0", fn, p->window[i], p->stride[i], p->pad[i], i + 1);
  return 0;
}

/* t's sizes with the batch dimension: (N,) C, (T,) H, W; *skip 1 when t has none */
static int pool_sizes(const char *fn, const lt_cudnn_pool *p, const lt_tensor *t, int64_t *dims, int *skip) {
  char a[256];
  const int nb = p->dims + 2;
  if (t->ndim != nb && t->ndim != nb - 1)
    return lt_fail("%s: %dD or %dD input expected, not %s", fn, nb - 1, nb, lt_shape_str(t, a, sizeof a));
  *skip = t->ndim == nb - 1;
  dims[0] = 1;
  for (int d = 0; d < t->ndim; d++) dims[d + *skip] = t->size[d];
  return 0;
}

typedef struct {
  void *pool, *x, *y;
  int dtype, nb, skip;
  int64_t in[MAX_DIMS], out[MAX_DIMS];
} pool_setup;

static void pool_free(pool_setup *s) {
  if (s->pool) api.destroy_pool(s->pool);
  lt_cudnn_tensor_free(s->x);
  lt_cudnn_tensor_free(s->y);
  s->pool = s->x = s->y = NULL;
}

/* The pooling and input descriptors, and the output's sizes cuDNN gives (and its descriptor) */
static int pool_make(const char *fn, const lt_cudnn_pool *p, int type, pool_setup *s) {
  int st, out[MAX_DIMS];
  s->nb = p->dims + 2;
  if (data_type(fn, type, &s->dtype) || lt_cudnn_packed_tensor(fn, s->dtype, s->nb, s->in, &s->x)) return -1;
  if ((st = api.create_pool(&s->pool)) != LT_CUDNN_ST_SUCCESS) {
    s->pool = NULL;
    return lt_cudnn_failed(fn, "CreatePoolingDescriptor", st);
  }
  if ((st = api.set_pool(s->pool, p->mode, PROPAGATE_NAN, p->dims, p->window, p->pad, p->stride)))
    return lt_cudnn_failed(fn, "SetPoolingNdDescriptor", st);
  if ((st = api.pool_dims(s->pool, s->x, s->nb, out))) return lt_cudnn_failed(fn, "GetPoolingNdForwardOutputDim", st);
  for (int d = 0; d < s->nb; d++) {
    if (out[d] < 1)
      return lt_fail("%s: the window does not fit the (padded) input: cuDNN's output size is %d in dimension %d",
                     fn, out[d], d + 1);
    s->out[d] = out[d];
  }
  return lt_cudnn_packed_tensor(fn, s->dtype, s->nb, s->out, &s->y);
}

int lt_cudnn_pooling_output_size(const lt_cudnn_pool *p, int type, const int64_t *input, int64_t *out) {
  const char *fn = "cudnn pooling output size";
  pool_setup s = {0};
  if (ready(NULL, fn) || pool_check(fn, p)) return -1;
  memcpy(s.in, input, (size_t)(p->dims + 2) * sizeof *input);
  int rc = pool_make(fn, p, type, &s);
  if (rc == 0) memcpy(out, s.out, (size_t)s.nb * sizeof *out);
  pool_free(&s);
  return rc;
}

int lt_cudnn_pooling_forward(const lt_cuops *ops, void *stream, const lt_cudnn_pool *p, const lt_tensor *input,
                             lt_tensor *output) {
  const char *fn = pool_name(p, 0);
  pool_setup s = {0};
  if (ready(ops, fn) || pool_check(fn, p) || pool_sizes(fn, p, input, s.in, &s.skip)) return -1;
  int rc = pool_make(fn, p, input->type, &s);
  if (rc == 0) rc = check_sizes(fn, output, input, s.out, s.nb, s.skip, "the output", 1);
  void *h = NULL, *copy = NULL;
  const void *x = NULL;
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, input, &x, &copy);
  if (rc == 0) {
    int st = api.pool_forward(h, s.pool, one(s.dtype), s.x, x, zero(s.dtype), s.y, lt_tensor_data(output));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "PoolingForward", st);
  }
  pool_free(&s);
  return scratch_free(ops, copy, rc);
}

int lt_cudnn_pooling_backward(const lt_cuops *ops, void *stream, const lt_cudnn_pool *p, const lt_tensor *input,
                              const lt_tensor *output, const lt_tensor *grad_output, lt_tensor *grad_input) {
  const char *fn = pool_name(p, 1);
  pool_setup s = {0};
  if (ready(ops, fn) || pool_check(fn, p) || pool_sizes(fn, p, input, s.in, &s.skip)) return -1;
  int rc = pool_make(fn, p, input->type, &s);
  if (rc == 0) rc = check_sizes(fn, output, input, s.out, s.nb, s.skip, "the forward's output", 0);
  if (rc == 0) rc = check_sizes(fn, grad_output, input, s.out, s.nb, s.skip, "gradOutput", 0);
  if (rc == 0) rc = check_sizes(fn, grad_input, input, s.in, s.nb, s.skip, "gradInput", 1);
  void *h = NULL, *copies[3] = {NULL, NULL, NULL};
  const void *x = NULL, *y = NULL, *dy = NULL;
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, input, &x, &copies[0]);
  if (rc == 0) rc = contiguous_input(ops, stream, output, &y, &copies[1]);
  if (rc == 0) rc = contiguous_input(ops, stream, grad_output, &dy, &copies[2]);
  if (rc == 0) {
    int st = api.pool_backward(h, s.pool, one(s.dtype), s.y, y, s.y, dy, s.x, x, zero(s.dtype), s.x,
                               lt_tensor_data(grad_input));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "PoolingBackward", st);
  }
  pool_free(&s);
  for (int i = 0; i < 3; i++) rc = scratch_free(ops, copies[i], rc);
  return rc;
}

/* ---------------------------------------------------------------- activations */

static const char *act_name(int mode, int backward) {
  static const char *const names[2][4] = {
    {"cudnn.Sigmoid forward", "cudnn.ReLU forward", "cudnn.Tanh forward", "cudnn.ClippedReLU forward"},
    {"cudnn.Sigmoid backward", "cudnn.ReLU backward", "cudnn.Tanh backward", "cudnn.ClippedReLU backward"}};
  return mode >= 0 && mode < 4 ? names[backward][mode] : "cudnn activation";
}

/* The activation's descriptor and one descriptor for its tensors: all of t's elements as a 1 x 1 x 1 x n row */
static int act_make(const char *fn, int mode, double coef, const lt_tensor *t, int *dtype, void **act, void **desc) {
  *act = *desc = NULL;
  if (mode < LT_CUDNN_SIGMOID || mode > LT_CUDNN_CLIPPED_RELU) return lt_fail("%s: no activation mode %d", fn, mode);
  const int64_t dims[4] = {1, 1, 1, lt_tensor_nelement(t)};
  if (data_type(fn, t->type, dtype) || lt_cudnn_packed_tensor(fn, *dtype, 4, dims, desc)) return -1;
  int st = api.create_act(act);
  if (st != LT_CUDNN_ST_SUCCESS) {
    *act = NULL;
    return lt_cudnn_failed(fn, "CreateActivationDescriptor", st);
  }
  if ((st = api.set_act(*act, mode, PROPAGATE_NAN, coef)) != LT_CUDNN_ST_SUCCESS)
    return lt_cudnn_failed(fn, "SetActivationDescriptor", st);
  return 0;
}

static void act_free(void *act, void *desc) {
  if (act) api.destroy_act(act);
  lt_cudnn_tensor_free(desc);
}

int lt_cudnn_activation_forward(const lt_cuops *ops, void *stream, int mode, double coef, const lt_tensor *input,
                                lt_tensor *output) {
  const char *fn = act_name(mode, 0);
  if (ready(ops, fn) || check_contiguous_output(fn, output, input, "the output")) return -1;
  if (lt_tensor_nelement(input) == 0) return 0;
  int dtype;
  void *act, *desc, *copy = NULL, *h = NULL;
  const void *x = NULL;
  int rc = act_make(fn, mode, coef, input, &dtype, &act, &desc);
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, input, &x, &copy);
  if (rc == 0) {
    int st = api.act_forward(h, act, one(dtype), desc, x, zero(dtype), desc, lt_tensor_data(output));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "ActivationForward", st);
  }
  act_free(act, desc);
  return scratch_free(ops, copy, rc);
}

int lt_cudnn_activation_backward(const lt_cuops *ops, void *stream, int mode, double coef, const lt_tensor *input,
                                 const lt_tensor *output, const lt_tensor *grad_output, lt_tensor *grad_input) {
  const char *fn = act_name(mode, 1);
  if (ready(ops, fn) || check_contiguous_output(fn, grad_input, input, "gradInput")) return -1;
  if (same_count(fn, output, input, "the forward's input") || same_type(fn, output, input, "the forward's input") ||
      same_count(fn, grad_output, input, "the input") || same_type(fn, grad_output, input, "gradOutput"))
    return -1;
  if (lt_tensor_nelement(input) == 0) return 0;
  int dtype;
  void *act, *desc, *h = NULL, *copies[3] = {NULL, NULL, NULL};
  const void *x = NULL, *y = NULL, *dy = NULL;
  int rc = act_make(fn, mode, coef, input, &dtype, &act, &desc);
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, input, &x, &copies[0]);
  if (rc == 0) rc = contiguous_input(ops, stream, output, &y, &copies[1]);
  if (rc == 0) rc = contiguous_input(ops, stream, grad_output, &dy, &copies[2]);
  if (rc == 0) {
    int st = api.act_backward(h, act, one(dtype), desc, y, desc, dy, desc, x, zero(dtype), desc,
                              lt_tensor_data(grad_input));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "ActivationBackward", st);
  }
  act_free(act, desc);
  for (int i = 0; i < 3; i++) rc = scratch_free(ops, copies[i], rc);
  return rc;
}

/* ---------------------------------------------------------------- softmax */

/* t as cudnn.torch described it to cuDNN: C -> 1 x C x 1 x 1, N x C -> N x C x 1 x 1, C x H x W -> 1 x C x H x W */
static int softmax_make(const char *fn, int algorithm, int mode, const lt_tensor *t, int *dtype, void **desc) {
  char a[256];
  int64_t dims[4] = {1, 1, 1, 1};
  *desc = NULL;
  if (algorithm < 0 || algorithm > 2) return lt_fail("%s: no softmax algorithm %d", fn, algorithm);
  if (mode < 0 || mode > 1) return lt_fail("%s: no softmax mode %d", fn, mode);
  switch (t->ndim) {
    case 1: dims[1] = t->size[0]; break;
    case 2: dims[0] = t->size[0], dims[1] = t->size[1]; break;
    case 3: dims[1] = t->size[0], dims[2] = t->size[1], dims[3] = t->size[2]; break;
    case 4: for (int d = 0; d < 4; d++) dims[d] = t->size[d]; break;
    default: return lt_fail("%s: 1D to 4D input expected, not %s", fn, lt_shape_str(t, a, sizeof a));
  }
  if (data_type(fn, t->type, dtype)) return -1;
  return lt_cudnn_packed_tensor(fn, *dtype, 4, dims, desc);
}

int lt_cudnn_softmax_forward(const lt_cuops *ops, void *stream, int algorithm, int mode, const lt_tensor *input,
                             lt_tensor *output) {
  const char *fn = algorithm == 2 ? "cudnn log-softmax forward" : "cudnn softmax forward";
  if (ready(ops, fn) || check_contiguous_output(fn, output, input, "the output")) return -1;
  if (lt_tensor_nelement(input) == 0) return 0;
  int dtype;
  void *desc, *copy = NULL, *h = NULL;
  const void *x = NULL;
  int rc = softmax_make(fn, algorithm, mode, input, &dtype, &desc);
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, input, &x, &copy);
  if (rc == 0) {
    int st = api.softmax_forward(h, algorithm, mode, one(dtype), desc, x, zero(dtype), desc, lt_tensor_data(output));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "SoftmaxForward", st);
  }
  lt_cudnn_tensor_free(desc);
  return scratch_free(ops, copy, rc);
}

int lt_cudnn_softmax_backward(const lt_cuops *ops, void *stream, int algorithm, int mode, const lt_tensor *output,
                              const lt_tensor *grad_output, lt_tensor *grad_input) {
  const char *fn = algorithm == 2 ? "cudnn log-softmax backward" : "cudnn softmax backward";
  if (ready(ops, fn) || check_contiguous_output(fn, grad_input, output, "gradInput")) return -1;
  if (same_count(fn, grad_output, output, "gradOutput") || same_type(fn, grad_output, output, "gradOutput"))
    return -1;
  if (lt_tensor_nelement(output) == 0) return 0;
  int dtype;
  void *desc, *h = NULL, *copies[2] = {NULL, NULL};
  const void *y = NULL, *dy = NULL;
  int rc = softmax_make(fn, algorithm, mode, output, &dtype, &desc);
  if (rc == 0) rc = lt_cudnn_handle(fn, ops->device, stream, &h);
  if (rc == 0) rc = contiguous_input(ops, stream, output, &y, &copies[0]);
  if (rc == 0) rc = contiguous_input(ops, stream, grad_output, &dy, &copies[1]);
  if (rc == 0) {
    int st = api.softmax_backward(h, algorithm, mode, one(dtype), desc, y, desc, dy, zero(dtype), desc,
                                  lt_tensor_data(grad_input));
    if (st != LT_CUDNN_ST_SUCCESS) rc = lt_cudnn_failed(fn, "SoftmaxBackward", st);
  }
  lt_cudnn_tensor_free(desc);
  for (int i = 0; i < 2; i++) rc = scratch_free(ops, copies[i], rc);
  return rc;
}
