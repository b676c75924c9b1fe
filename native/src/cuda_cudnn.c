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

enum { ST_SUCCESS = 0, DATA_FLOAT = 0, DATA_DOUBLE = 1, MATH_DEFAULT = 0, MATH_FMA = 3, CROSS_CORRELATION = 1,
       FORMAT_NCHW = 0 };
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

/* A convolution as cuDNN sees it: input N x C x H x W, weight K x C/groups x kH x kW, output N x K x oH x oW. */
typedef struct {
  int64_t N, C, H, W, K, oH, oW;
  int type;
} geometry;

static int check_params(const char *fn, const lt_cudnn_conv *c) {
  if (lt_conv2d_check_sizes(fn, c->kW, c->kH, c->dW, c->dH, c->padW, c->padH)) return -1;
  if (c->dilW < 1 || c->dilH < 1) return lt_fail("%s: dilation should be at least 1, not %d x %d", fn, c->dilH, c->dilW);
  if (c->groups < 1) return lt_fail("%s: groups should be at least 1, not %d", fn, c->groups);
  return 0;
}

static int64_t output_extent(int64_t in, int pad, int dil, int k, int stride) {
  return (in + 2 * (int64_t)pad - ((int64_t)dil * (k - 1) + 1)) / stride + 1;
}

/* Float or Double input and weight of one type, the input (N x) C x H x W; its host type in *type */
static int check_operands(const char *fn, const lt_tensor *input, const lt_tensor *weight, int *type) {
  char a[256];
  *type = lt_host_type(input->type);
  if (*type != LT_FLOAT && *type != LT_DOUBLE)
    return lt_fail("%s: not defined for %s tensors (CudaTensor and CudaDoubleTensor here)", fn, tname(input->type));
  if (weight->type != input->type)
    return lt_fail("%s: weight must be a %s tensor like the input, not %s", fn, tname(input->type), tname(weight->type));
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D (batch mode) tensor expected for input, but got: %s", fn,
                   lt_shape_str(input, a, sizeof a));
  return 0;
}

/* input (N x) C x H x W and weight K x C/groups x kH x kW of one Float or Double type, as the module's
 * forward, backward-data and backward-filter see them; Torch7's messages for the shapes. */
static int geometry_of(const char *fn, const lt_cudnn_conv *c, const lt_tensor *input, const lt_tensor *weight,
                       geometry *g) {
  char a[256], b[256];
  if (check_params(fn, c)) return -1;
  int type;
  if (check_operands(fn, input, weight, &type)) return -1;
  const int f = input->ndim == 4;
  g->type = type;
  g->N = f ? input->size[0] : 1, g->C = input->size[f], g->H = input->size[f + 1], g->W = input->size[f + 2];
  g->K = weight->ndim >= 1 ? weight->size[0] : 0;
  if (weight->ndim != 4 || weight->size[2] != c->kH || weight->size[3] != c->kW || g->K % c->groups != 0)
    return lt_fail("%s: weight should be nOutputPlane x nInputPlane/%d x %d x %d with nOutputPlane divisible by "
                   "the %d groups, not %s", fn, c->groups, c->kH, c->kW, c->groups, lt_shape_str(weight, b, sizeof b));
  if (weight->size[1] * c->groups != g->C)
    return lt_fail("%s: input has %lld planes, expected %lld (weight %s in %d groups); input %s", fn,
                   (long long)g->C, (long long)(weight->size[1] * c->groups), lt_shape_str(weight, b, sizeof b),
                   c->groups, lt_shape_str(input, a, sizeof a));
  if (!lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be contiguous", fn);
  g->oH = output_extent(g->H, c->padH, c->dilH, c->kH, c->dH);
  g->oW = output_extent(g->W, c->padW, c->dilW, c->kW, c->dW);
  if (g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)g->C, (long long)g->H, (long long)g->W, (long long)g->K,
                   (long long)g->oH, (long long)g->oW);
  if (g->N * g->C * g->H * g->W >= INT_MAX || g->N * g->K * g->oH * g->oW >= INT_MAX || g->K >= INT_MAX)
    return lt_fail("%s: a size beyond cuDNN's 32-bit int (input %s)", fn, lt_shape_str(input, a, sizeof a));
  return 0;
}

/* t must be (N x) planes x h x w of the input's type and batch-ness. */
static int check_shape(const char *fn, const lt_tensor *input, const lt_tensor *t, const char *what, int64_t planes,
                       int64_t h, int64_t w, int contiguous) {
  char a[256];
  const int f = input->ndim == 4;
  int ok = t->type == input->type && t->ndim == input->ndim && (!f || t->size[0] == input->size[0]) &&
           t->size[f] == planes && t->size[f + 1] == h && t->size[f + 2] == w;
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s%lld x %lld x %lld, not a %s one of %s", fn, what,
                   tname(input->type), f ? "N x " : "", (long long)planes, (long long)h, (long long)w, tname(t->type),
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
  void *x, *y, *w, *conv, *bias;   /* tensor, tensor, filter, convolution, tensor (1 x K x 1 x 1) */
  void *xbias;                      /* 1 x C x 1 x 1: the full convolution's bias, over x's planes */
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

static int set_nchw(const char *fn, void *desc, int dtype, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int dims[4] = {(int)n, (int)c, (int)h, (int)w};
  const int strides[4] = {(int)(c * h * w), (int)(h * w), (int)w, 1};
  int st = api.set_tensor(desc, dtype, 4, dims, strides);
  return st == ST_SUCCESS ? 0 : failed(fn, "SetTensorNdDescriptor", st);
}

/* The descriptors of geometry g (packed NCHW tensors) and of c. */
static int descriptors_make(const char *fn, const lt_cudnn_conv *c, const geometry *g, descriptors *d) {
  memset(d, 0, sizeof *d);
  const int dtype = g->type == LT_DOUBLE ? DATA_DOUBLE : DATA_FLOAT;
  int st;
  if ((st = api.create_tensor(&d->x)) || (st = api.create_tensor(&d->y)) || (st = api.create_tensor(&d->bias)) ||
      (st = api.create_tensor(&d->xbias)) ||
      (st = api.create_filter(&d->w)) || (st = api.create_conv(&d->conv))) {
    descriptors_free(d);
    return failed(fn, "Create*Descriptor", st);
  }
  const int filter[4] = {(int)g->K, (int)(g->C / c->groups), c->kH, c->kW};
  const int pad[2] = {c->padH, c->padW}, stride[2] = {c->dH, c->dW}, dil[2] = {c->dilH, c->dilW};
  const char *what = NULL;
  if (set_nchw(fn, d->x, dtype, g->N, g->C, g->H, g->W) || set_nchw(fn, d->y, dtype, g->N, g->K, g->oH, g->oW) ||
      set_nchw(fn, d->bias, dtype, 1, g->K, 1, 1) || set_nchw(fn, d->xbias, dtype, 1, g->C, 1, 1)) {
    descriptors_free(d);
    return -1;
  }
  if ((st = api.set_filter(d->w, dtype, FORMAT_NCHW, 4, filter))) what = "SetFilterNdDescriptor";
  else if ((st = api.set_conv(d->conv, 2, pad, stride, dil, CROSS_CORRELATION, dtype)))
    what = "SetConvolutionNdDescriptor";
  else if ((st = api.set_groups(d->conv, c->groups))) what = "SetConvolutionGroupCount";
  /* float: FMA math (float32 throughout, as Torch7's cuDNN computed) unless TF32 is allowed */
  else if ((st = api.set_math(d->conv, g->type == LT_FLOAT && c->tf32 ? MATH_DEFAULT : MATH_FMA)))
    what = "SetConvolutionMathType";
  if (what) {
    descriptors_free(d);
    return failed(fn, what, st);
  }
  return 0;
}

int lt_cudnn_conv2d_output_size(const lt_cudnn_conv *c, int type, const int64_t input[4], int64_t nOutputPlane,
                                int64_t out[4]) {
  const char *fn = "cudnn convolution output size";
  if (resolve()) return -1;
  if (check_params(fn, c)) return -1;
  geometry g = {.N = input[0], .C = input[1], .H = input[2], .W = input[3], .K = nOutputPlane,
                .oH = 1, .oW = 1, .type = lt_host_type(type)};
  if (g.C % c->groups || g.K % c->groups)
    return lt_fail("%s: %lld input and %lld output planes in %d groups", fn, (long long)g.C, (long long)g.K,
                   c->groups);
  descriptors d;
  if (descriptors_make(fn, c, &g, &d)) return -1;
  int dims[4];
  int st = api.output_dim(d.conv, d.x, d.w, 4, dims);
  descriptors_free(&d);
  if (st != ST_SUCCESS) return failed(fn, "GetConvolutionNdForwardOutputDim", st);
  for (int i = 0; i < 4; i++) out[i] = dims[i];
  return 0;
}

/* ---------------------------------------------------------------- plans: descriptors and algorithms per geometry */

enum { KEY_LEN = 24 };
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
  const int64_t k[KEY_LEN] = {device, g->type, g->N, g->C, g->H, g->W, g->K, c->kW, c->kH, c->dW, c->dH, c->padW,
                              c->padH, c->dilW, c->dilH, c->groups, c->mode, c->tf32, c->algo[0], c->algo[1],
                              c->algo[2], c->workspace_limit, 0, 0};
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
  if (lt_cuda_set_device(device)) return -1;
  int st;
  if (!handles[device] && (st = api.create(&handles[device])) != ST_SUCCESS) {
    handles[device] = NULL;
    return failed(fn, "Create", st);
  }
  if ((st = api.set_stream(handles[device], stream)) != ST_SUCCESS) return failed(fn, "SetStream", st);
  *h = handles[device];
  return 0;
}

int lt_cudnn_handle(const char *fn, int device, void *stream, void **h) { return handle_for(fn, device, stream, h); }
int lt_cudnn_failed(const char *fn, const char *what, int status) { return failed(fn, what, status); }

int lt_cudnn_packed_tensor(const char *fn, int dtype, int nb, const int64_t *dims, void **desc) {
  int d[8], strides[8], st;
  if (nb < 3 || nb > 8) return lt_fail("%s: cuDNN describes tensors of 3 to 8 dimensions, not %d", fn, nb);
  int64_t stride = 1;
  for (int i = nb - 1; i >= 0; i--) {
    if (dims[i] < 1 || dims[i] >= INT_MAX || stride >= INT_MAX)
      return lt_fail("%s: a size beyond cuDNN's 32-bit int (or an empty tensor)", fn);
    d[i] = (int)dims[i], strides[i] = (int)stride;
    stride *= dims[i];
  }
  if (stride >= INT_MAX) return lt_fail("%s: %lld elements, beyond cuDNN's 32-bit int", fn, (long long)stride);
  *desc = NULL;
  if ((st = api.create_tensor(desc)) != ST_SUCCESS) return failed(fn, "CreateTensorDescriptor", st);
  if ((st = api.set_tensor(*desc, dtype, nb, d, strides)) != ST_SUCCESS) {
    api.destroy_tensor(*desc);
    *desc = NULL;
    return failed(fn, "SetTensorNdDescriptor", st);
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

/* The three passes of cudnn.SpatialConvolution (full = 0) and cudnn.SpatialFullConvolution (full = 1). The full
 * convolution runs the passes of the convolution it is the adjoint of with the roles swapped: its forward is the
 * backward-data pass (weight, input) -> output, its gradInput the forward pass (gradOutput, weight), its
 * gradWeight the backward-filter pass (gradOutput, input), its bias over x's planes. */
static int full_geometry_of(const char *fn, const lt_cudnn_conv *c, const lt_tensor *input, const lt_tensor *weight,
                            geometry *g);

/* The geometry, and the module's input and output as (planes, h, w): y's and x's sides swap in the full one */
static int module_geometry(const char *fn, int full, const lt_cudnn_conv *c, const lt_tensor *input,
                           const lt_tensor *weight, geometry *g, int64_t in[3], int64_t out[3]) {
  if (full ? full_geometry_of(fn, c, input, weight, g) : geometry_of(fn, c, input, weight, g)) return -1;
  const int64_t x[3] = {g->C, g->H, g->W}, y[3] = {g->K, g->oH, g->oW};
  memcpy(in, full ? y : x, sizeof x);
  memcpy(out, full ? x : y, sizeof x);
  return 0;
}

static int module_forward(const char *fn, const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, int full,
                          const lt_tensor *input, lt_tensor *output, const lt_tensor *weight,
                          const lt_tensor *bias) {
  geometry g;
  int64_t in[3], out[3];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, weight, &g, in, out) ||
      check_shape(fn, input, output, "the output", out[0], out[1], out[2], 1) ||
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
  int64_t in[3], out[3];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, weight, &g, in, out) ||
      check_shape(fn, input, grad_output, "gradOutput", out[0], out[1], out[2], 0) ||
      check_shape(fn, input, grad_input, "gradInput", in[0], in[1], in[2], 1))
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
  int64_t in[3], out[3];
  if (ready(ops, fn) || module_geometry(fn, full, c, input, grad_weight, &g, in, out) ||
      check_shape(fn, input, grad_output, "gradOutput", out[0], out[1], out[2], 0) ||
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

int lt_cudnn_conv2d_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                            lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias) {
  return module_forward("cudnn.SpatialConvolution forward", ops, stream, c, 0, input, output, weight, bias);
}

int lt_cudnn_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight) {
  return module_backward_data("cudnn.SpatialConvolution backward (gradInput)", ops, stream, c, 0, input, grad_output,
                              grad_input, weight);
}

int lt_cudnn_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                    const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_weight,
                                    lt_tensor *grad_bias, double scale) {
  return module_backward_params("cudnn.SpatialConvolution backward (gradWeight, gradBias)", ops, stream, c, 0, input,
                                grad_output, grad_weight, grad_bias, scale);
}

int lt_cudnn_fullconv2d_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias) {
  return module_forward("cudnn.SpatialFullConvolution forward", ops, stream, c, 1, input, output, weight, bias);
}

int lt_cudnn_fullconv2d_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                      const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_input,
                                      const lt_tensor *weight) {
  return module_backward_data("cudnn.SpatialFullConvolution backward (gradInput)", ops, stream, c, 1, input,
                              grad_output, grad_input, weight);
}

int lt_cudnn_fullconv2d_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                        const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_weight,
                                        lt_tensor *grad_bias, double scale) {
  return module_backward_params("cudnn.SpatialFullConvolution backward (gradWeight, gradBias)", ops, stream, c, 1,
                                input, grad_output, grad_weight, grad_bias, scale);
}

/* ---------------------------------------------------------------- the full (transposed) convolution */

/* cudnn.SpatialFullConvolution is the adjoint of the convolution from its output to its input: in the geometry
 * of that convolution (x: the full convolution's output, nOut planes; y: its input, nIn planes; the weight
 * nIn x nOut x kH x kW is that convolution's K x C filter), its forward is cuDNN's backward-data pass, its
 * gradInput the forward pass, its gradWeight the backward-filter pass with the roles of x and dy taken by
 * gradOutput and the input. The plans and algorithms are the convolution's. */
static int full_geometry_of(const char *fn, const lt_cudnn_conv *c, const lt_tensor *input, const lt_tensor *weight,
                            geometry *g) {
  char a[256], b[256];
  if (check_params(fn, c)) return -1;
  if (c->groups != 1 || c->dilW != 1 || c->dilH != 1)
    return lt_fail("%s: one group and no dilation (nn.SpatialFullConvolution has neither)", fn);
  if (c->adjW < 0 || c->adjH < 0 || c->adjW >= c->dW || c->adjH >= c->dH)
    return lt_fail("%s: adjW and adjH must be smaller than dW and dH (adj %d x %d, stride %d x %d)", fn, c->adjH,
                   c->adjW, c->dH, c->dW);
  int type;
  if (check_operands(fn, input, weight, &type)) return -1;
  const int f = input->ndim == 4;
  if (weight->ndim != 4 || weight->size[2] != c->kH || weight->size[3] != c->kW)
    return lt_fail("%s: weight should be nInputPlane x nOutputPlane x %d x %d, not %s", fn, c->kH, c->kW,
                   lt_shape_str(weight, b, sizeof b));
  if (weight->size[0] != input->size[f])
    return lt_fail("%s: input has %lld planes, expected %lld (weight %s); input %s", fn, (long long)input->size[f],
                   (long long)weight->size[0], lt_shape_str(weight, b, sizeof b), lt_shape_str(input, a, sizeof a));
  if (!lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be contiguous", fn);
  g->type = type;
  g->N = f ? input->size[0] : 1, g->K = weight->size[0], g->C = weight->size[1];
  g->oH = input->size[f + 1], g->oW = input->size[f + 2];
  g->H = (g->oH - 1) * c->dH - 2 * (int64_t)c->padH + c->kH + c->adjH;
  g->W = (g->oW - 1) * c->dW - 2 * (int64_t)c->padW + c->kW + c->adjW;
  if (g->H < 1 || g->W < 1)
    return lt_fail("%s: Given input size: (%lld x %lld x %lld). Calculated output size: (%lld x %lld x %lld). "
                   "Output size is too small", fn, (long long)g->K, (long long)g->oH, (long long)g->oW, (long long)g->C,
                   (long long)g->H, (long long)g->W);
  if (output_extent(g->H, c->padH, 1, c->kH, c->dH) != g->oH || output_extent(g->W, c->padW, 1, c->kW, c->dW) != g->oW)
    return lt_fail("%s: padding %d x %d does not fit kernel %d x %d at stride %d x %d", fn, c->padH, c->padW, c->kH,
                   c->kW, c->dH, c->dW);
  if (g->N * g->C * g->H * g->W >= INT_MAX || g->N * g->K * g->oH * g->oW >= INT_MAX)
    return lt_fail("%s: a size beyond cuDNN's 32-bit int (input %s)", fn, lt_shape_str(input, a, sizeof a));
  return 0;
}

int lt_cudnn_conv2d_algorithms(const lt_cudnn_conv *c, int device, int type, const int64_t input[4],
                               int64_t nOutputPlane, int algos[3], int64_t workspace[3]) {
  geometry g = {.N = input[0], .C = input[1], .H = input[2], .W = input[3], .K = nOutputPlane,
                .type = lt_host_type(type)};
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
  if (set_nchw(fn, g->x, dtype, g->N, g->C, g->L, 1) || set_nchw(fn, g->p, dtype, 1, g->C, 1, 1)) {
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
