/* cuDNN's convolutions for the cudnn.* modules on a GPU, as cudnn.torch ran them: tensor, filter and convolution
 * descriptors (groups in the descriptor), an algorithm per pass chosen once per geometry (cuDNN's heuristics
 * under a workspace limit, cudnn.fastest without one, cudnn.benchmark by timing every algorithm with Find*Ex,
 * or the one setMode named), the workspace from the caching allocator, one handle per (thread, device).
 * libcudnn is dlopen'ed with our declarations of its (legacy, still exported) API; where it is missing the
 * modules run on our own kernels (cuda_conv.c) and Lua says so once.
 *
 * The three passes share one calling shape, (a, b) -> out, which is how their cuDNN functions take their
 * descriptors: forward (x, w) -> y, backward data (w, dy) -> dx, backward filter (x, dy) -> dw. */
#include "lt_internal.h"
#include "cuda_ops_internal.h"
#include "cuda_cudnn_internal.h"

#include <limits.h>
#include <pthread.h>

enum { ST_SUCCESS = 0, DATA_FLOAT = 0, DATA_DOUBLE = 1, DATA_HALF = 2, MATH_DEFAULT = 0, MATH_FMA = 3,
       CROSS_CORRELATION = 1, FORMAT_NCHW = 0 };
enum { FWD = 0, BWD_DATA = 1, BWD_FILTER = 2, NPASSES = 3 };
static const int algo_count[NPASSES] = {8, 6, 7};   /* CUDNN_CONVOLUTION_*_ALGO_COUNT */
static const char *const pass_name[NPASSES] = {"Forward", "BackwardData", "BackwardFilter"};

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the same layout for the three */
typedef struct {
  int algo, status;
  float time;
  size_t memory;
  int determinism, math_type, reserved[3];
} perf_t;

typedef int (*get_fn)(void *, void *, void *, void *, void *, int, int *, perf_t *);
typedef int (*find_fn)(void *, void *, const void *, void *, const void *, void *, void *, void *, int, int *,
                       perf_t *, void *, size_t);
typedef int (*size_fn)(void *, void *, void *, void *, void *, int, size_t *);
typedef int (*run_fn)(void *, const void *, void *, const void *, void *, const void *, void *, int, void *, size_t,
                      const void *, void *, void *);

static struct {
  const char *(*error_string)(int);
  int (*create)(void **);
  int (*set_stream)(void *, void *);
  int (*create_tensor)(void **), (*destroy_tensor)(void *), (*set_tensor)(void *, int, int, const int *, const int *);
  int (*create_filter)(void **), (*destroy_filter)(void *), (*set_filter)(void *, int, int, int, const int *);
  int (*create_conv)(void **), (*destroy_conv)(void *);
  int (*set_conv)(void *, int, const int *, const int *, const int *, int, int);
  int (*set_groups)(void *, int), (*set_math)(void *, int);
  int (*output_dim)(void *, void *, void *, int, int *);
  get_fn get[NPASSES];
  find_fn find[NPASSES];
  size_fn size[NPASSES];
  run_fn run[NPASSES];
  int (*backward_bias)(void *, const void *, void *, const void *, const void *, void *, void *);
  int (*add_tensor)(void *, const void *, void *, const void *, const void *, void *, void *);
} api;
static int resolved;

static int resolve(void) {
  static const lt_cuda_sym syms[] = {
    {(void **)&api.error_string, "cudnnGetErrorString"}, {(void **)&api.create, "cudnnCreate"},
    {(void **)&api.set_stream, "cudnnSetStream"},
    {(void **)&api.create_tensor, "cudnnCreateTensorDescriptor"},
    {(void **)&api.destroy_tensor, "cudnnDestroyTensorDescriptor"},
    {(void **)&api.set_tensor, "cudnnSetTensorNdDescriptor"},
    {(void **)&api.create_filter, "cudnnCreateFilterDescriptor"},
    {(void **)&api.destroy_filter, "cudnnDestroyFilterDescriptor"},
    {(void **)&api.set_filter, "cudnnSetFilterNdDescriptor"},
    {(void **)&api.create_conv, "cudnnCreateConvolutionDescriptor"},
    {(void **)&api.destroy_conv, "cudnnDestroyConvolutionDescriptor"},
    {(void **)&api.set_conv, "cudnnSetConvolutionNdDescriptor"},
    {(void **)&api.set_groups, "cudnnSetConvolutionGroupCount"},
    {(void **)&api.set_math, "cudnnSetConvolutionMathType"},
    {(void **)&api.output_dim, "cudnnGetConvolutionNdForwardOutputDim"},
    {(void **)&api.get[FWD], "cudnnGetConvolutionForwardAlgorithm_v7"},
    {(void **)&api.get[BWD_DATA], "cudnnGetConvolutionBackwardDataAlgorithm_v7"},
    {(void **)&api.get[BWD_FILTER], "cudnnGetConvolutionBackwardFilterAlgorithm_v7"},
    {(void **)&api.find[FWD], "cudnnFindConvolutionForwardAlgorithmEx"},
    {(void **)&api.find[BWD_DATA], "cudnnFindConvolutionBackwardDataAlgorithmEx"},
    {(void **)&api.find[BWD_FILTER], "cudnnFindConvolutionBackwardFilterAlgorithmEx"},
    {(void **)&api.size[FWD], "cudnnGetConvolutionForwardWorkspaceSize"},
    {(void **)&api.size[BWD_DATA], "cudnnGetConvolutionBackwardDataWorkspaceSize"},
    {(void **)&api.size[BWD_FILTER], "cudnnGetConvolutionBackwardFilterWorkspaceSize"},
    {(void **)&api.run[FWD], "cudnnConvolutionForward"},
    {(void **)&api.run[BWD_DATA], "cudnnConvolutionBackwardData"},
    {(void **)&api.run[BWD_FILTER], "cudnnConvolutionBackwardFilter"},
    {(void **)&api.backward_bias, "cudnnConvolutionBackwardBias"},
    {(void **)&api.add_tensor, "cudnnAddTensor"}};
  if (lt_cuda_require(LT_CUDA_CUDNN)) return -1;
  return lt_cuda_find_symbols(LT_CUDA_CUDNN, syms, sizeof syms / sizeof syms[0], &resolved);
}

static int bn_resolve(void);
int lt_cudnn_core_resolve(void) { return resolve(); }
/* every function of the three parts: convolutions, batch norm, the layers */
int lt_cudnn_available(void) { return bn_resolve() || lt_cudnn_layers_resolve() ? -1 : 0; }

int lt_cudnn_first_notice(void) {
  static int said;
  return __atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL) == 0;
}

static int failed(const char *fn, const char *what, int status) {
  return lt_fail("%s: cudnn%s: %s (%d)", fn, what, api.error_string ? api.error_string(status) : "?", status);
}

/* ---------------------------------------------------------------- geometry and descriptors */

/* A convolution as cuDNN sees it, over n = 2 (H, W) or 3 (T, H, W) spatial axes: input N x C x x[0..n), weight
 * K x C/groups x k[0..n), output N x K x y[0..n). */
typedef struct {
  int64_t N, C, K, x[3], y[3];
  int n, type;
} geometry;

/* c's per-axis parameters in cuDNN's order ((T,) H, W) */
typedef struct {
  int n, k[3], stride[3], pad[3], dil[3], adj[3];
} axes;

static void axes_of(const lt_cudnn_conv *c, axes *a) {
  const int k[3] = {c->kT, c->kH, c->kW}, s[3] = {c->dT, c->dH, c->dW}, p[3] = {c->padT, c->padH, c->padW},
            d[3] = {c->dilT, c->dilH, c->dilW}, adj[3] = {c->adjT, c->adjH, c->adjW};
  const int off = c->dims == 3 ? 0 : 1;
  a->n = c->dims == 3 ? 3 : 2;
  for (int i = 0; i < a->n; i++)
    a->k[i] = k[i + off], a->stride[i] = s[i + off], a->pad[i] = p[i + off], a->dil[i] = d[i + off],
    a->adj[i] = adj[i + off];
}

static const char *module_name(const lt_cudnn_conv *c, int full) {
  static const char *const names[2][2] = {{"cudnn.SpatialConvolution", "cudnn.SpatialFullConvolution"},
                                          {"cudnn.VolumetricConvolution", "cudnn.VolumetricFullConvolution"}};
  return names[c->dims == 3][full];
}

static int check_params(const char *fn, const lt_cudnn_conv *c) {
  if (c->dims != 2 && c->dims != 3) return lt_fail("%s: 2 or 3 spatial dimensions, not %d", fn, c->dims);
  if (lt_conv2d_check_sizes(fn, c->kW, c->kH, c->dW, c->dH, c->padW, c->padH)) return -1;
  if (c->dims == 3 && (c->kT < 1 || c->dT < 1 || c->padT < 0))
    return lt_fail("%s: kT %d, dT %d and padT %d: the kernel and stride should be at least 1, the padding at least 0",
                   fn, c->kT, c->dT, c->padT);
  if (c->dilW < 1 || c->dilH < 1 || (c->dims == 3 && c->dilT < 1))
    return lt_fail("%s: dilation should be at least 1, not %d x %d", fn, c->dilH, c->dilW);
  if (c->groups < 1) return lt_fail("%s: groups should be at least 1, not %d", fn, c->groups);
  return 0;
}

static int64_t output_extent(int64_t in, int pad, int dil, int k, int stride) {
  return (in + 2 * (int64_t)pad - ((int64_t)dil * (k - 1) + 1)) / stride + 1;
}

/* "C x H x W" (or with T) into buf */
static const char *sizes_str(char *buf, size_t len, int64_t planes, const int64_t *ext, int n) {
  int m = snprintf(buf, len, "%lld", (long long)planes);
  for (int i = 0; i < n && m < (int)len; i++) m += snprintf(buf + m, len - m, " x %lld", (long long)ext[i]);
  return buf;
}

/* Float, Double or Half input and weight of one type, the input (N x) C x spatial; its host type in *type, the
 * index of its plane dimension in *f (1 with a batch dimension) */
static int check_operands(const char *fn, int n, const lt_tensor *input, const lt_tensor *weight, int *type, int *f) {
  char a[256];
  *type = lt_host_type(input->type);
  if (*type != LT_FLOAT && *type != LT_DOUBLE && *type != LT_HALF)
    return lt_fail("%s: not defined for %s tensors (CudaTensor, CudaDoubleTensor and CudaHalfTensor here)", fn,
                   tname(input->type));
  if (weight->type != input->type)
    return lt_fail("%s: weight must be a %s tensor like the input, not %s", fn, tname(input->type), tname(weight->type));
  if (input->ndim != n + 1 && input->ndim != n + 2)
    return lt_fail("%s: %dD or %dD (batch mode) tensor expected for input, but got: %s", fn, n + 1, n + 2,
                   lt_shape_str(input, a, sizeof a));
  *f = input->ndim == n + 2;
  return 0;
}

static int check_limits(const char *fn, const geometry *g, const lt_tensor *input) {
  char a[256];
  int64_t nx = g->N * g->C, ny = g->N * g->K;
  for (int i = 0; i < g->n; i++) nx *= g->x[i], ny *= g->y[i];
  if (nx >= INT_MAX || ny >= INT_MAX || g->K >= INT_MAX)
    return lt_fail("%s: a size beyond cuDNN's 32-bit int (input %s)", fn, lt_shape_str(input, a, sizeof a));
  return 0;
}

/* The geometry of the convolution a module runs, from its input and weight of one Float or Double type, as its
 * forward, backward-data and backward-filter see them; Torch7's messages for the shapes.
 * full = 0, cudnn's convolutions: input (N x) C x spatial, weight K x C/groups x kernel; x is the input.
 * full = 1, the full convolutions (cudnn.SpatialFullConvolution, VolumetricFullConvolution): the adjoint of the
 * convolution from their output to their input, so x is their output (nOut planes), y their input (nIn planes),
 * and their weight nIn x nOut x kernel is that convolution's K x C filter; one group, no dilation. */
static int geometry_of(const char *fn, const lt_cudnn_conv *c, int full, const lt_tensor *input,
                       const lt_tensor *weight, geometry *g) {
  char a[256], b[256], s1[96], s2[96], groups[48] = "";
  axes ax;
  int type = 0, f = 0;
  memset(g, 0, sizeof *g);   /* the axes a 2-D one does not use stay 0: they are part of its plan's key */
  if (check_params(fn, c)) return -1;
  axes_of(c, &ax);
  if (full) {
    if (c->groups != 1) return lt_fail("%s: one group (the full convolutions have no groups)", fn);
    for (int i = 0; i < ax.n; i++) {
      if (ax.dil[i] != 1) return lt_fail("%s: no dilation (the full convolutions have none)", fn);
      if (ax.adj[i] < 0 || ax.adj[i] >= ax.stride[i])
        return lt_fail("%s: adj must be smaller than the stride (adj %d, stride %d)", fn, ax.adj[i], ax.stride[i]);
    }
  }
  if (check_operands(fn, ax.n, input, weight, &type, &f)) return -1;
  int ok = weight->ndim == ax.n + 2 && (full || weight->size[0] % c->groups == 0);
  for (int i = 0; ok && i < ax.n; i++) ok = weight->size[2 + i] == ax.k[i];
  if (!ok) {
    const int64_t k[3] = {ax.k[0], ax.k[1], ax.k[2]};
    sizes_str(s1, sizeof s1, k[0], k + 1, ax.n - 1);
    if (full)
      return lt_fail("%s: weight should be nInputPlane x nOutputPlane x %s, not %s", fn, s1,
                     lt_shape_str(weight, b, sizeof b));
    return lt_fail("%s: weight should be nOutputPlane x nInputPlane/%d x %s with nOutputPlane divisible by the %d "
                   "groups, not %s", fn, c->groups, s1, c->groups, lt_shape_str(weight, b, sizeof b));
  }
  const int64_t planes = input->size[f], want = full ? weight->size[0] : weight->size[1] * c->groups;
  if (!full) snprintf(groups, sizeof groups, " in %d groups", c->groups);
  if (planes != want)
    return lt_fail("%s: input has %lld planes, expected %lld (weight %s%s); input %s", fn, (long long)planes,
                   (long long)want, lt_shape_str(weight, b, sizeof b), groups, lt_shape_str(input, a, sizeof a));
  if (!lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be contiguous", fn);
  g->n = ax.n, g->type = type;
  g->N = f ? input->size[0] : 1, g->K = weight->size[0], g->C = full ? weight->size[1] : planes;
  ok = 1;
  for (int i = 0; i < ax.n; i++) {
    const int64_t in = input->size[f + 1 + i];
    if (full) g->y[i] = in, g->x[i] = (in - 1) * ax.stride[i] - 2 * (int64_t)ax.pad[i] + ax.k[i] + ax.adj[i];
    else g->x[i] = in, g->y[i] = output_extent(in, ax.pad[i], ax.dil[i], ax.k[i], ax.stride[i]);
    ok = ok && (full ? g->x[i] : g->y[i]) >= 1;   /* the side computed here */
  }
  if (!ok)   /* the module's input side, then its output side */
    return lt_fail("%s: Given input size: (%s). Calculated output size: (%s). Output size is too small", fn,
                   full ? sizes_str(s1, sizeof s1, g->K, g->y, g->n) : sizes_str(s1, sizeof s1, g->C, g->x, g->n),
                   full ? sizes_str(s2, sizeof s2, g->C, g->x, g->n) : sizes_str(s2, sizeof s2, g->K, g->y, g->n));
  for (int i = 0; full && i < ax.n; i++)
    if (output_extent(g->x[i], ax.pad[i], 1, ax.k[i], ax.stride[i]) != g->y[i])
      return lt_fail("%s: padding %d does not fit kernel %d at stride %d", fn, ax.pad[i], ax.k[i], ax.stride[i]);
  return check_limits(fn, g, input);
}

/* t must be (N x) side[0] planes x side[1..] of the input's type and batch-ness. */
static int check_shape(const char *fn, const geometry *g, const lt_tensor *input, const lt_tensor *t,
                       const char *what, const int64_t side[4], int contiguous) {
  char a[256], s1[96];
  const int f = input->ndim == g->n + 2;
  int ok = t->type == input->type && t->ndim == input->ndim && (!f || t->size[0] == input->size[0]);
  for (int i = 0; ok && i <= g->n; i++) ok = t->size[f + i] == side[i];
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s%s, not a %s one of %s", fn, what, tname(input->type),
                   f ? "N x " : "", sizes_str(s1, sizeof s1, side[0], side + 1, g->n), tname(t->type),
                   lt_shape_str(t, a, sizeof a));
  if (contiguous && !lt_tensor_is_contiguous(t)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

static int check_vector(const char *fn, const lt_tensor *t, const lt_tensor *like, int64_t n, const char *what) {
  char a[256];
  if (t->type != like->type || lt_tensor_nelement(t) != n || !lt_tensor_is_contiguous(t))
    return lt_fail("%s: %s should be a contiguous %s tensor of %lld elements, not a %s one of %s", fn, what,
                   tname(like->type), (long long)n, tname(t->type), lt_shape_str(t, a, sizeof a));
  return 0;
}

typedef struct {
  void *x, *y, *w, *conv, *bias;   /* tensor, tensor, filter, convolution, tensor (1 x K x 1 ...) */
  void *xbias;                      /* 1 x C x 1 ...: the full convolution's bias, over x's planes */
} descriptors;

static void descriptors_free(descriptors *d) {
  if (d->x) api.destroy_tensor(d->x);
  if (d->y) api.destroy_tensor(d->y);
  if (d->bias) api.destroy_tensor(d->bias);
  if (d->xbias) api.destroy_tensor(d->xbias);
  if (d->w) api.destroy_filter(d->w);
  if (d->conv) api.destroy_conv(d->conv);
  memset(d, 0, sizeof *d);
}

/* desc as a packed (row-major) tensor of nb dims */
static int set_packed(const char *fn, void *desc, int dtype, int nb, const int64_t *dims) {
  int d[8], strides[8];
  int64_t stride = 1;
  if (nb < 3 || nb > 8) return lt_fail("%s: cuDNN describes tensors of 3 to 8 dimensions, not %d", fn, nb);
  for (int i = nb - 1; i >= 0; i--) {
    if (dims[i] < 1 || dims[i] >= INT_MAX || stride >= INT_MAX)
      return lt_fail("%s: a size beyond cuDNN's 32-bit int (or an empty tensor)", fn);
    d[i] = (int)dims[i], strides[i] = (int)stride;
    stride *= dims[i];
  }
  if (stride >= INT_MAX) return lt_fail("%s: %lld elements, beyond cuDNN's 32-bit int", fn, (long long)stride);
  int st = api.set_tensor(desc, dtype, nb, d, strides);
  return st == ST_SUCCESS ? 0 : failed(fn, "SetTensorNdDescriptor", st);
}

/* (a, planes, ext...) as nb = n + 2 dims */
static void dims_of(int64_t out[5], int64_t a, int64_t planes, const int64_t *ext, int n) {
  out[0] = a, out[1] = planes;
  for (int i = 0; i < n; i++) out[2 + i] = ext ? ext[i] : 1;
}

/* The descriptors of geometry g (packed tensors) and of c. */
static int descriptors_make(const char *fn, const lt_cudnn_conv *c, const geometry *g, descriptors *d) {
  memset(d, 0, sizeof *d);
  const int dtype = g->type == LT_DOUBLE ? DATA_DOUBLE : g->type == LT_HALF ? DATA_HALF : DATA_FLOAT, nb = g->n + 2;
  /* half data is convolved in float (cuDNN's pseudo-half configuration, what cudnn.torch asked for) */
  const int compute = g->type == LT_DOUBLE ? DATA_DOUBLE : DATA_FLOAT;
  int st;
  if ((st = api.create_tensor(&d->x)) || (st = api.create_tensor(&d->y)) || (st = api.create_tensor(&d->bias)) ||
      (st = api.create_tensor(&d->xbias)) || (st = api.create_filter(&d->w)) || (st = api.create_conv(&d->conv))) {
    descriptors_free(d);
    return failed(fn, "Create*Descriptor", st);
  }
  axes ax;
  axes_of(c, &ax);
  int filter[5] = {(int)g->K, (int)(g->C / c->groups)};
  for (int i = 0; i < g->n; i++) filter[2 + i] = ax.k[i];
  int64_t xd[5], yd[5], bd[5], xbd[5];
  dims_of(xd, g->N, g->C, g->x, g->n), dims_of(yd, g->N, g->K, g->y, g->n);
  dims_of(bd, 1, g->K, NULL, g->n), dims_of(xbd, 1, g->C, NULL, g->n);
  const char *what = NULL;
  if (set_packed(fn, d->x, dtype, nb, xd) || set_packed(fn, d->y, dtype, nb, yd) ||
      set_packed(fn, d->bias, dtype, nb, bd) || set_packed(fn, d->xbias, dtype, nb, xbd)) {
    descriptors_free(d);
    return -1;
  }
  if ((st = api.set_filter(d->w, dtype, FORMAT_NCHW, nb, filter))) what = "SetFilterNdDescriptor";
  else if ((st = api.set_conv(d->conv, g->n, ax.pad, ax.stride, ax.dil, CROSS_CORRELATION, compute)))
    what = "SetConvolutionNdDescriptor";
  else if ((st = api.set_groups(d->conv, c->groups))) what = "SetConvolutionGroupCount";
  /* float: FMA math (float32 throughout, as Torch7's cuDNN computed) unless TF32 is allowed; half: the default
   * math, which lets cuDNN use tensor cores (half products, float accumulation) */
  else if ((st = api.set_math(d->conv, g->type == LT_HALF || (g->type == LT_FLOAT && c->tf32) ? MATH_DEFAULT
                                                                                              : MATH_FMA)))
    what = "SetConvolutionMathType";
  if (what) {
    descriptors_free(d);
    return failed(fn, what, st);
  }
  return 0;
}

/* The geometry of an input of c->dims + 2 sizes (N, C, spatial...) and nOutputPlane, output sizes not needed */
static void geometry_from_sizes(const lt_cudnn_conv *c, int type, const int64_t *input, int64_t nOutputPlane,
                                geometry *g) {
  memset(g, 0, sizeof *g);
  g->n = c->dims == 3 ? 3 : 2, g->type = lt_host_type(type);
  g->N = input[0], g->C = input[1], g->K = nOutputPlane;
  for (int i = 0; i < g->n; i++) g->x[i] = input[2 + i], g->y[i] = 1;
}

int lt_cudnn_conv_output_size(const lt_cudnn_conv *c, int type, const int64_t *input, int64_t nOutputPlane,
                              int64_t *out) {
  const char *fn = "cudnn convolution output size";
  if (resolve()) return -1;
  if (check_params(fn, c)) return -1;
  geometry g;
  geometry_from_sizes(c, type, input, nOutputPlane, &g);
  if (g.C % c->groups || g.K % c->groups)
    return lt_fail("%s: %lld input and %lld output planes in %d groups", fn, (long long)g.C, (long long)g.K,
                   c->groups);
  descriptors d;
  if (descriptors_make(fn, c, &g, &d)) return -1;
  int dims[5];
  int st = api.output_dim(d.conv, d.x, d.w, g.n + 2, dims);
  descriptors_free(&d);
  if (st != ST_SUCCESS) return failed(fn, "GetConvolutionNdForwardOutputDim", st);
  for (int i = 0; i < g.n + 2; i++) out[i] = dims[i];
  return 0;
}

/* ---------------------------------------------------------------- plans: descriptors and algorithms per geometry */

enum { KEY_LEN = 32 };
typedef struct plan {
  struct plan *next;
  int64_t key[KEY_LEN];
  descriptors d;
  int algo[NPASSES];        /* -1 until the pass first runs */
  size_t workspace[NPASSES];
} plan;

static plan *plans;
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;

static void key_of(const lt_cudnn_conv *c, int device, const geometry *g, int64_t key[KEY_LEN]) {
  axes ax;
  axes_of(c, &ax);
  const int T = ax.n == 3;   /* the T axis' parameters, or zeros */
  const int64_t k[KEY_LEN] = {device, g->type, g->n, g->N, g->C, g->K, g->x[0], g->x[1], g->x[2], c->kW, c->kH,
                              c->dW, c->dH, c->padW, c->padH, c->dilW, c->dilH, T ? c->kT : 0, T ? c->dT : 0,
                              T ? c->padT : 0, T ? c->dilT : 0, c->groups, c->mode, c->tf32, c->algo[0], c->algo[1],
                              c->algo[2], c->workspace_limit, 0, 0, 0, 0};
  memcpy(key, k, sizeof k);
}

/* The plan of this geometry, made (descriptors, no algorithm yet) on first sight; plans_lock held. */
static plan *plan_for(const char *fn, const lt_cudnn_conv *c, int device, const geometry *g) {
  int64_t key[KEY_LEN];
  key_of(c, device, g, key);
  for (plan *p = plans; p; p = p->next)
    if (!memcmp(p->key, key, sizeof key)) return p;
  plan *p = calloc(1, sizeof *p);
  if (!p) {
    lt_fail("%s: out of host memory", fn);
    return NULL;
  }
  if (descriptors_make(fn, c, g, &p->d)) {
    free(p);
    return NULL;
  }
  memcpy(p->key, key, sizeof key);
  for (int i = 0; i < NPASSES; i++) p->algo[i] = -1;
  p->next = plans;
  plans = p;
  return p;
}

void lt_cudnn_forget_plans(void) {
  pthread_mutex_lock(&plans_lock);
  while (plans) {
    plan *p = plans;
    plans = p->next;
    descriptors_free(&p->d);
    free(p);
  }
  pthread_mutex_unlock(&plans_lock);
}

/* One cuDNN handle per (thread, device), as cutorch kept its cuBLAS handles; bound to the stream per call. */
static __thread void *handles[LT_CUDA_MAX_DEVICES];

static int handle_for(const char *fn, int device, void *stream, void **h) {
  if (device < 0 || device >= LT_CUDA_MAX_DEVICES) return lt_fail("%s: no device %d", fn, device);
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  int st;
  if (!handles[device] && (st = api.create(&handles[device])) != ST_SUCCESS) {
    handles[device] = NULL;
    return failed(fn, "Create", st);
  }
  if ((st = api.set_stream(handles[device], stream)) != ST_SUCCESS) return failed(fn, "SetStream", st);
  lt_cuda_count(LT_CUDA_COUNT_LIBRARY_OPS);
  *h = handles[device];
  return 0;
}

int lt_cudnn_handle(const char *fn, int device, void *stream, void **h) { return handle_for(fn, device, stream, h); }
int lt_cudnn_failed(const char *fn, const char *what, int status) { return failed(fn, what, status); }

int lt_cudnn_packed_tensor(const char *fn, int dtype, int nb, const int64_t *dims, void **desc) {
  int st;
  *desc = NULL;
  if ((st = api.create_tensor(desc)) != ST_SUCCESS) return failed(fn, "CreateTensorDescriptor", st);
  if (set_packed(fn, *desc, dtype, nb, dims)) {
    api.destroy_tensor(*desc);
    *desc = NULL;
    return -1;
  }
  return 0;
}
void lt_cudnn_tensor_free(void *desc) {
  if (desc) api.destroy_tensor(desc);
}

/* The operands of a pass in cuDNN's order: (a, b) -> out. */
typedef struct {
  void *a_desc, *b_desc, *out_desc;
  const void *a, *b;
  void *out;
  int64_t out_bytes;
} operands;

static void pass_descriptors(const plan *p, int pass, operands *o) {
  const descriptors *d = &p->d;
  o->a_desc = pass == BWD_DATA ? d->w : d->x;
  o->b_desc = pass == FWD ? d->w : d->y;
  o->out_desc = pass == FWD ? d->y : pass == BWD_DATA ? d->x : d->w;
}

/* cudnn.benchmark: every algorithm timed by Find*Ex with as much workspace as the hungriest needs (up to the
 * limit), on a scratch output for the backward filter pass (whose real output accumulates). */
static int benchmark(const char *fn, const lt_cuops *ops, void *stream, void *h, plan *p, int pass,
                     const lt_cudnn_conv *c, operands *o, perf_t *results, int *returned) {
  size_t want = 0;
  for (int algo = 0; algo < algo_count[pass]; algo++) {
    size_t s = 0;
    if (api.size[pass](h, o->a_desc, o->b_desc, p->d.conv, o->out_desc, algo, &s) == ST_SUCCESS && s > want)
      want = s;
  }
  if (c->workspace_limit >= 0 && want > (size_t)c->workspace_limit) want = (size_t)c->workspace_limit;
  void *ws = NULL, *out = o->out;
  int rc = want ? scratch(ops, stream, (int64_t)want, &ws) : 0;
  if (rc == 0 && pass == BWD_FILTER) rc = scratch(ops, stream, o->out_bytes, &out);
  if (rc == 0) {
    int st = api.find[pass](h, o->a_desc, o->a, o->b_desc, o->b, p->d.conv, o->out_desc, out, algo_count[pass],
                            returned, results, ws, want);
    if (st != ST_SUCCESS) rc = failed(fn, pass == FWD ? "FindConvolutionForwardAlgorithmEx"
                                          : pass == BWD_DATA ? "FindConvolutionBackwardDataAlgorithmEx"
                                                             : "FindConvolutionBackwardFilterAlgorithmEx", st);
  }
  if (out != o->out) rc = scratch_free(ops, out, rc);
  return scratch_free(ops, ws, rc);
}

/* The pass's algorithm and workspace for this plan, chosen on its first run; plans_lock held. */
static int choose(const char *fn, const lt_cuops *ops, void *stream, void *h, plan *p, int pass,
                  const lt_cudnn_conv *c, operands *o) {
  if (p->algo[pass] >= 0) return 0;
  char what[96];
  int st;
  if (c->algo[pass] >= 0) {   /* setMode's algorithm: cuDNN says whether it can run this geometry */
    size_t s = 0;
    if (c->algo[pass] >= algo_count[pass])
      return lt_fail("%s: no %s algorithm %d (0 to %d)", fn, pass_name[pass], c->algo[pass], algo_count[pass] - 1);
    if ((st = api.size[pass](h, o->a_desc, o->b_desc, p->d.conv, o->out_desc, c->algo[pass], &s)) != ST_SUCCESS) {
      snprintf(what, sizeof what, "GetConvolution%sWorkspaceSize (algorithm %d, as set by setMode)", pass_name[pass],
               c->algo[pass]);
      return failed(fn, what, st);
    }
    p->algo[pass] = c->algo[pass], p->workspace[pass] = s;
    return 0;
  }
  perf_t results[8];
  int returned = 0;
  if (c->mode == LT_CUDNN_BENCHMARK) {
    if (benchmark(fn, ops, stream, h, p, pass, c, o, results, &returned)) return -1;
  } else if ((st = api.get[pass](h, o->a_desc, o->b_desc, p->d.conv, o->out_desc, algo_count[pass], &returned,
                                 results)) != ST_SUCCESS) {
    snprintf(what, sizeof what, "GetConvolution%sAlgorithm_v7", pass_name[pass]);
    return failed(fn, what, st);
  }
  /* results come best first (fastest measured, or by cuDNN's heuristics); fastest ignores the limit */
  const int limited = c->mode != LT_CUDNN_FASTEST && c->workspace_limit >= 0;
  for (int i = 0; i < returned && i < 8; i++)
    if (results[i].status == ST_SUCCESS && (!limited || results[i].memory <= (size_t)c->workspace_limit)) {
      p->algo[pass] = results[i].algo, p->workspace[pass] = results[i].memory;
      return 0;
    }
  return lt_fail("%s: cuDNN offers no %s algorithm for this geometry within %lld bytes of workspace (of %d tried)",
                 fn, pass_name[pass], (long long)c->workspace_limit, returned);
}

/* Runs pass (with its algorithm chosen) as out = alpha op(a, b) + beta out; *hp and *pp (when given) get the
 * handle and plan it used, for the bias term that follows. */
static int run_pass(const char *fn, const lt_cuops *ops, void *stream, int device, const lt_cudnn_conv *c,
                    const geometry *g, int pass, operands *o, double alpha, double beta, void **hp,
                    const plan **pp) {
  void *h;
  if (handle_for(fn, device, stream, &h)) return -1;
  pthread_mutex_lock(&plans_lock);
  plan *p = plan_for(fn, c, device, g);
  int rc = p ? 0 : -1;
  if (rc == 0) {
    pass_descriptors(p, pass, o);
    rc = choose(fn, ops, stream, h, p, pass, c, o);
  }
  const int algo = rc == 0 ? p->algo[pass] : -1;
  const size_t ws_bytes = rc == 0 ? p->workspace[pass] : 0;
  pthread_mutex_unlock(&plans_lock);   /* a plan, once made, is never changed or freed while kernels use it */
  if (rc) return -1;
  if (hp) *hp = h, *pp = p;
  void *ws = NULL;
  if (ws_bytes && scratch(ops, stream, (int64_t)ws_bytes, &ws)) return -1;
  const float af = (float)alpha, bf = (float)beta;
  const void *al = g->type == LT_DOUBLE ? (const void *)&alpha : (const void *)&af;
  const void *be = g->type == LT_DOUBLE ? (const void *)&beta : (const void *)&bf;
  int st = api.run[pass](h, al, o->a_desc, o->a, o->b_desc, o->b, p->d.conv, algo, ws, ws_bytes, be, o->out_desc,
                         o->out);
  if (st != ST_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "Convolution%s (algorithm %d, %zu bytes of workspace)", pass_name[pass], algo,
             ws_bytes);
    rc = failed(fn, what, st);
  }
  return scratch_free(ops, ws, rc);
}

/* bias terms, with the handle and plan of the pass just run: t += bias over N, H, W (forward), or
 * gradBias = scale sum(t) + gradBias; t is y, the convolution's output, or x for the full convolution (its
 * output is the convolution's input) */
static int run_bias(const char *fn, void *h, const plan *p, const geometry *g, int grad, int on_x, void *bias,
                    void *t, double scale) {
  const double one = 1;
  const float onef = 1, sf = (float)scale;
  const int dbl = g->type == LT_DOUBLE;
  const void *al = grad ? (dbl ? (const void *)&scale : (const void *)&sf) : (dbl ? (const void *)&one : &onef);
  const void *be = dbl ? (const void *)&one : (const void *)&onef;
  void *td = on_x ? p->d.x : p->d.y, *bd = on_x ? p->d.xbias : p->d.bias;
  int st = grad ? api.backward_bias(h, al, td, t, be, bd, bias) : api.add_tensor(h, al, bd, bias, be, td, t);
  return st == ST_SUCCESS ? 0 : failed(fn, grad ? "ConvolutionBackwardBias" : "AddTensor", st);
}

static int ready(const lt_cuops *ops, const char *fn) {
  if (check_ops(ops, fn)) return -1;
  return resolve();
}

static int64_t bytes_of(const lt_tensor *t) { return lt_tensor_nelement(t) * lt_elemsize(t->type); }

/* The three passes of cudnn's convolutions (full = 0) and full convolutions (full = 1). The full convolution runs
 * the passes of the convolution it is the adjoint of with the roles swapped: its forward is the backward-data pass
 * (weight, input) -> output, its gradInput the forward pass (gradOutput, weight), its gradWeight the
 * backward-filter pass (gradOutput, input), its bias over x's planes. */

/* The geometry, and the module's input and output as (planes, spatial...): x's and y's sides swap in the full
 * one */
static int module_geometry(const char *fn, int full, const lt_cudnn_conv *c, const lt_tensor *input,
                           const lt_tensor *weight, geometry *g, int64_t in[4], int64_t out[4]) {
  if (geometry_of(fn, c, full, input, weight, g)) return -1;
  int64_t x[4] = {g->C}, y[4] = {g->K};
  for (int i = 0; i < g->n; i++) x[1 + i] = g->x[i], y[1 + i] = g->y[i];
  memcpy(in, full ? y : x, sizeof x);
  memcpy(out, full ? x : y, sizeof x);
  return 0;
}

static int module_forward(const char *fn, const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, int full,
                          const lt_tensor *input, lt_tensor *output, const lt_tensor *weight,
                          const lt_tensor *bias) {
  geometry g;
  int64_t in[4], out[4];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, weight, &g, in, out) ||
      check_shape(fn, &g, input, output, "the output", out, 1) ||
      (bias && check_vector(fn, bias, input, out[0], "bias")))
    return -1;
  if (g.N == 0) return 0;
  const void *x;
  void *copy;
  if (contiguous_input(ops, stream, input, &x, &copy)) return -1;
  void *w = lt_tensor_data(weight);
  operands o = {.a = full ? w : x, .b = full ? x : w, .out = lt_tensor_data(output), .out_bytes = bytes_of(output)};
  void *h = NULL;
  const plan *p = NULL;
  int rc = run_pass(fn, ops, stream, ops->device, c, &g, full ? BWD_DATA : FWD, &o, 1, 0, &h, &p);
  if (rc == 0 && bias) rc = run_bias(fn, h, p, &g, 0, full, lt_tensor_data(bias), o.out, 1);
  return scratch_free(ops, copy, rc);
}

static int module_backward_data(const char *fn, const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, int full,
                                const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_input,
                                const lt_tensor *weight) {
  geometry g;
  int64_t in[4], out[4];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, weight, &g, in, out) ||
      check_shape(fn, &g, input, grad_output, "gradOutput", out, 0) ||
      check_shape(fn, &g, input, grad_input, "gradInput", in, 1))
    return -1;
  if (g.N == 0) return 0;
  const void *dy;
  void *copy;
  if (contiguous_input(ops, stream, grad_output, &dy, &copy)) return -1;
  void *w = lt_tensor_data(weight);
  operands o = {.a = full ? dy : w, .b = full ? w : dy, .out = lt_tensor_data(grad_input),
                .out_bytes = bytes_of(grad_input)};
  return scratch_free(ops, copy, run_pass(fn, ops, stream, ops->device, c, &g, full ? FWD : BWD_DATA, &o, 1, 0, NULL,
                                          NULL));
}

static int module_backward_params(const char *fn, const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                  int full, const lt_tensor *input, const lt_tensor *grad_output,
                                  lt_tensor *grad_weight, lt_tensor *grad_bias, double scale) {
  geometry g;
  int64_t in[4], out[4];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, grad_weight, &g, in, out) ||
      check_shape(fn, &g, input, grad_output, "gradOutput", out, 0) ||
      (grad_bias && check_vector(fn, grad_bias, input, out[0], "gradBias")))
    return -1;
  if (g.N == 0 || scale == 0) return 0;
  const void *x, *dy;
  void *x_copy, *dy_copy = NULL;
  if (contiguous_input(ops, stream, input, &x, &x_copy)) return -1;
  int rc = contiguous_input(ops, stream, grad_output, &dy, &dy_copy);
  void *h = NULL;
  const plan *p = NULL;
  if (rc == 0) {
    operands o = {.a = full ? dy : x, .b = full ? x : dy, .out = lt_tensor_data(grad_weight),
                  .out_bytes = bytes_of(grad_weight)};
    rc = run_pass(fn, ops, stream, ops->device, c, &g, BWD_FILTER, &o, scale, 1, &h, &p);
  }
  if (rc == 0 && grad_bias) rc = run_bias(fn, h, p, &g, 1, full, lt_tensor_data(grad_bias), (void *)dy, scale);
  rc = scratch_free(ops, dy_copy, rc);
  return scratch_free(ops, x_copy, rc);
}

/* "<module> <pass>" for messages */
static const char *pass_fn(char *buf, size_t len, const lt_cudnn_conv *c, int full, const char *pass) {
  snprintf(buf, len, "%s %s", module_name(c, full), pass);
  return buf;
}
#define FN(full, pass) pass_fn(fn, sizeof fn, c, full, pass)

int lt_cudnn_conv_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                          lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias) {
  char fn[96];
  return module_forward(FN(0, "forward"), ops, stream, c, 0, input, output, weight, bias);
}

int lt_cudnn_conv_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight) {
  char fn[96];
  return module_backward_data(FN(0, "backward (gradInput)"), ops, stream, c, 0, input, grad_output, grad_input,
                              weight);
}

int lt_cudnn_conv_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias,
                                  double scale) {
  char fn[96];
  return module_backward_params(FN(0, "backward (gradWeight, gradBias)"), ops, stream, c, 0, input, grad_output,
                                grad_weight, grad_bias, scale);
}

int lt_cudnn_fullconv_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                              lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias) {
  char fn[96];
  return module_forward(FN(1, "forward"), ops, stream, c, 1, input, output, weight, bias);
}

int lt_cudnn_fullconv_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                    const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_input,
                                    const lt_tensor *weight) {
  char fn[96];
  return module_backward_data(FN(1, "backward (gradInput)"), ops, stream, c, 1, input, grad_output, grad_input,
                              weight);
}

int lt_cudnn_fullconv_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                      const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_weight,
                                      lt_tensor *grad_bias, double scale) {
  char fn[96];
  return module_backward_params(FN(1, "backward (gradWeight, gradBias)"), ops, stream, c, 1, input, grad_output,
                                grad_weight, grad_bias, scale);
}
#undef FN

/* ---------------------------------------------------------------- the full (transposed) convolution */

int lt_cudnn_conv_algorithms(const lt_cudnn_conv *c, int device, int type, const int64_t *input, int64_t nOutputPlane,
                             int algos[3], int64_t workspace[3]) {
  geometry g;
  geometry_from_sizes(c, type, input, nOutputPlane, &g);
  int64_t key[KEY_LEN];
  key_of(c, device, &g, key);
  pthread_mutex_lock(&plans_lock);
  const plan *p = plans;
  while (p && memcmp(p->key, key, sizeof key)) p = p->next;
  for (int i = 0; p && i < NPASSES; i++) algos[i] = p->algo[i], workspace[i] = (int64_t)p->workspace[i];
  pthread_mutex_unlock(&plans_lock);
  return p ? 0 : lt_fail("cudnn: no convolution of this geometry has run on device %d", device);
}

/* ---------------------------------------------------------------- batch normalization */

enum { BN_SPATIAL = 1 };

static struct {
  int (*forward_training)(void *, int, const void *, const void *, void *, const void *, void *, void *, void *,
                          const void *, const void *, double, void *, void *, double, void *, void *);
  int (*forward_inference)(void *, int, const void *, const void *, void *, const void *, void *, void *, void *,
                           const void *, const void *, const void *, const void *, double);
  int (*backward)(void *, int, const void *, const void *, const void *, const void *, void *, const void *, void *,
                  const void *, void *, void *, void *, const void *, void *, void *, double, const void *,
                  const void *);
} bn_api;
static int bn_resolved;

static int bn_resolve(void) {
  static const lt_cuda_sym syms[] = {
    {(void **)&bn_api.forward_training, "cudnnBatchNormalizationForwardTraining"},
    {(void **)&bn_api.forward_inference, "cudnnBatchNormalizationForwardInference"},
    {(void **)&bn_api.backward, "cudnnBatchNormalizationBackward"}};
  if (resolve()) return -1;
  return lt_cuda_find_symbols(LT_CUDA_CUDNN, syms, sizeof syms / sizeof syms[0], &bn_resolved);
}

/* The input (N, C, ...) as cuDNN's N x C x L x 1 with L the product of the rest (spatial mode: statistics over
 * N and L, nn.BatchNormalization's for every input dimension), and the 1 x C x 1 x 1 parameter descriptor. */
typedef struct {
  int64_t N, C, L;
  int type;
  void *x, *p;
} bn_geometry;

static void bn_free(bn_geometry *g) {
  if (g->x) api.destroy_tensor(g->x);
  if (g->p) api.destroy_tensor(g->p);
  g->x = g->p = NULL;
}

static int bn_vector(const char *fn, const lt_tensor *t, const lt_tensor *like, int64_t n, const char *what) {
  return t ? check_vector(fn, t, like, n, what) : lt_fail("%s: %s is missing (cudnn's batch norm is affine)", fn, what);
}

static int bn_geometry_of(const char *fn, const lt_tensor *input, bn_geometry *g) {
  char a[256];
  memset(g, 0, sizeof *g);
  g->type = lt_host_type(input->type);
  if (g->type != LT_FLOAT && g->type != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (CudaTensor and CudaDoubleTensor here)", fn, tname(input->type));
  if (input->ndim < 2 || input->ndim > 5)
    return lt_fail("%s: 2D to 5D input expected (N x C x ...), not %s", fn, lt_shape_str(input, a, sizeof a));
  g->N = input->size[0], g->C = input->size[1], g->L = 1;
  for (int d = 2; d < input->ndim; d++) g->L *= input->size[d];
  if (g->N * g->C * g->L >= INT_MAX) return lt_fail("%s: a size beyond cuDNN's 32-bit int (%s)", fn,
                                                   lt_shape_str(input, a, sizeof a));
  const int dtype = g->type == LT_DOUBLE ? DATA_DOUBLE : DATA_FLOAT;
  int st;
  if ((st = api.create_tensor(&g->x)) || (st = api.create_tensor(&g->p))) {
    bn_free(g);
    return failed(fn, "CreateTensorDescriptor", st);
  }
  const int64_t xd[4] = {g->N, g->C, g->L, 1}, pd[4] = {1, g->C, 1, 1};
  if (set_packed(fn, g->x, dtype, 4, xd) || set_packed(fn, g->p, dtype, 4, pd)) {
    bn_free(g);
    return -1;
  }
  return 0;
}

int lt_cudnn_batchnorm_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                               const lt_tensor *weight, const lt_tensor *bias, lt_tensor *running_mean,
                               lt_tensor *running_var, lt_tensor *save_mean, lt_tensor *save_std, int train,
                               double momentum, double eps) {
  const char *fn = "cudnn batch normalization forward";
  bn_geometry g;
  if (check_ops(ops, fn) || bn_resolve() || bn_geometry_of(fn, input, &g)) return -1;
  int rc = check_contiguous_output(fn, out, input, "the output");
  if (rc == 0) rc = bn_vector(fn, weight, input, g.C, "weight");
  if (rc == 0) rc = bn_vector(fn, bias, input, g.C, "bias");
  if (rc == 0) rc = bn_vector(fn, running_mean, input, g.C, "running_mean");
  if (rc == 0) rc = bn_vector(fn, running_var, input, g.C, "running_var");
  if (rc == 0 && train) rc = bn_vector(fn, save_mean, input, g.C, "save_mean");
  if (rc == 0 && train) rc = bn_vector(fn, save_std, input, g.C, "save_std");
  void *h = NULL, *copy = NULL;
  const void *x = NULL;
  if (rc == 0) rc = handle_for(fn, ops->device, stream, &h);
  if (rc == 0 && g.N > 0) rc = contiguous_input(ops, stream, input, &x, &copy);
  if (rc == 0 && g.N > 0) {
    const double one = 1, zero = 0;
    const float onef = 1, zerof = 0;
    const int dbl = g.type == LT_DOUBLE;
    const void *al = dbl ? (const void *)&one : &onef, *be = dbl ? (const void *)&zero : &zerof;
    int st = train ? bn_api.forward_training(h, BN_SPATIAL, al, be, g.x, x, g.x, lt_tensor_data(out), g.p,
                                             lt_tensor_data(weight), lt_tensor_data(bias), momentum,
                                             lt_tensor_data(running_mean), lt_tensor_data(running_var), eps,
                                             lt_tensor_data(save_mean), lt_tensor_data(save_std))
                   : bn_api.forward_inference(h, BN_SPATIAL, al, be, g.x, x, g.x, lt_tensor_data(out), g.p,
                                              lt_tensor_data(weight), lt_tensor_data(bias),
                                              lt_tensor_data(running_mean), lt_tensor_data(running_var), eps);
    if (st != ST_SUCCESS)
      rc = failed(fn, train ? "BatchNormalizationForwardTraining" : "BatchNormalizationForwardInference", st);
  }
  bn_free(&g);
  return scratch_free(ops, copy, rc);
}

int lt_cudnn_batchnorm_backward(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_input, lt_tensor *grad_weight,
                                lt_tensor *grad_bias, const lt_tensor *weight, const lt_tensor *save_mean,
                                const lt_tensor *save_std, double scale, double eps) {
  const char *fn = "cudnn batch normalization backward";
  char a[256], b[256];
  bn_geometry g;
  if (check_ops(ops, fn) || bn_resolve() || bn_geometry_of(fn, input, &g)) return -1;
  int rc = 0;
  if (grad_output->type != input->type || lt_tensor_nelement(grad_output) != lt_tensor_nelement(input) ||
      grad_output->ndim != input->ndim)
    rc = lt_fail("%s: gradOutput %s should have the input's type and shape %s", fn,
                 lt_shape_str(grad_output, a, sizeof a), lt_shape_str(input, b, sizeof b));
  if (rc == 0 && grad_input) rc = check_contiguous_output(fn, grad_input, input, "gradInput");
  if (rc == 0) rc = bn_vector(fn, weight, input, g.C, "weight");
  if (rc == 0) rc = bn_vector(fn, save_mean, input, g.C, "save_mean");
  if (rc == 0) rc = bn_vector(fn, save_std, input, g.C, "save_std");
  if (rc == 0 && grad_weight) rc = bn_vector(fn, grad_weight, input, g.C, "gradWeight");
  if (rc == 0 && grad_bias) rc = bn_vector(fn, grad_bias, input, g.C, "gradBias");
  void *h = NULL, *x_copy = NULL, *dy_copy = NULL, *spare = NULL;
  const void *x = NULL, *dy = NULL;
  if (rc == 0) rc = handle_for(fn, ops->device, stream, &h);
  if (rc == 0 && g.N > 0) rc = contiguous_input(ops, stream, input, &x, &x_copy);
  if (rc == 0 && g.N > 0) rc = contiguous_input(ops, stream, grad_output, &dy, &dy_copy);
  /* cuDNN writes dx, dscale and dbias in one call: what the caller did not ask for goes to scratch */
  const int64_t es = lt_elemsize(input->type), params = g.C * es;
  const int want_params = grad_weight || grad_bias;
  if (rc == 0 && g.N > 0)
    rc = scratch(ops, stream, (grad_input ? 0 : g.N * g.C * g.L * es) + (grad_weight ? 0 : params) +
                              (grad_bias ? 0 : params) + 16, &spare);
  if (rc == 0 && g.N > 0) {
    char *next = spare;
    void *dx = grad_input ? lt_tensor_data(grad_input) : next;
    if (!grad_input) next += g.N * g.C * g.L * es;
    void *dw = grad_weight ? lt_tensor_data(grad_weight) : next;
    if (!grad_weight) next += params;
    void *db = grad_bias ? lt_tensor_data(grad_bias) : next;
    const int dbl = g.type == LT_DOUBLE;
    const double one = 1, zero = 0, pa = want_params ? scale : 0, pb = 1;
    const float onef = 1, zerof = 0, paf = (float)pa, pbf = 1;
    /* dscale and dbias share alpha and beta: scale dW + gradWeight where parameters are wanted (a scratch one
     * among them only collects garbage), plain zeros into scratch where none is */
    const double pbeta = want_params ? pb : 0;
    const float pbetaf = want_params ? pbf : 0;
    int st = bn_api.backward(h, BN_SPATIAL, dbl ? (const void *)&one : &onef, dbl ? (const void *)&zero : &zerof,
                             dbl ? (const void *)&pa : &paf, dbl ? (const void *)&pbeta : &pbetaf, g.x, x, g.x, dy,
                             g.x, dx, g.p, lt_tensor_data(weight), dw, db, eps, lt_tensor_data(save_mean),
                             lt_tensor_data(save_std));
    if (st != ST_SUCCESS) rc = failed(fn, "BatchNormalizationBackward", st);
  }
  bn_free(&g);
  rc = scratch_free(ops, spare, rc);
  rc = scratch_free(ops, dy_copy, rc);
  return scratch_free(ops, x_copy, rc);
}
