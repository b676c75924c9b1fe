/* An emulated libcudnn for the emulated driver (emulated_driver.c): the cuDNN entry points native/src/cuda_cudnn.c
 * calls, with the checks cuDNN makes of them, so that the cudnn.* convolutions' GPU path (descriptors, algorithm
 * choice by heuristics, by Find*Ex timing and by name, workspace sizes, float and double scalars, alpha/beta
 * accumulation, handles per device) runs in CI as on a GPU. The arithmetic is the plain loop in double over the
 * descriptors' strides: an oracle, not a fast path.
 *
 * Each pass has a small catalogue of algorithms with workspace needs of their own: a run given less workspace
 * than its algorithm needs is CUDNN_STATUS_BAD_PARAM, and every run scribbles over the workspace it was given,
 * so a caller that reads workspace or under-allocates it is caught. The heuristics (Get*_v7) rank the
 * catalogue one way, Find*Ex's "timings" another, so a test can tell which one chose. Under the driver's
 * LT_EMULATED_CUDA_GUARD every pointer must lie in the current device's memory. Status codes as cuDNN 9's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "emulated_half.h"
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, NOT_INITIALIZED = 1001, BAD_PARAM = 2000, NOT_SUPPORTED = 3000, EXECUTION_FAILED = 5003,
       ALLOC_FAILED = 4000 };
enum { FWD = 0, BWD_DATA = 1, BWD_FILTER = 2 };
enum { K_HANDLE = 1, K_TENSOR, K_FILTER, K_CONV, K_POOL, K_ACT };
static const int MAGIC = 0x63644e4e;

typedef struct { int magic, kind, device; void *stream; } handle;
typedef struct { int magic, kind, set, dtype, nb, dims[5], strides[5]; } tensor;
typedef struct { int magic, kind, set, dtype, format, nb, dims[5]; } filter;
typedef struct { int magic, kind, set, n, pad[3], stride[3], dil[3], mode, ctype, groups, math; } conv;
typedef struct { int algo, status; float time; size_t memory; int determinism, math_type, reserved[3]; } perf_t;

#include "emulated_link.h"

static int device_now(void) { find_driver(); return emu_current_device ? emu_current_device() : 0; }
/* the pointer is in device dev's memory (always true where the driver does not guard its arenas) */
static int on_device(const void *p, int dev) {
  find_driver();
  if (!emu_device_of) return 1;
  int d = emu_device_of((unsigned long long)(uintptr_t)p);
  return d == -2 || d == dev;
}

EXPORT size_t cudnnGetVersion(void) { return 92000; }

EXPORT const char *cudnnGetErrorString(int s) {
  switch (s) {
    case SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
    case EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}

static void *make(size_t size, int kind) {
  int *p = calloc(1, size);
  if (p) p[0] = MAGIC, p[1] = kind;
  return p;
}
static int is(const void *p, int kind) { return p && ((const int *)p)[0] == MAGIC && ((const int *)p)[1] == kind; }
static int destroy(void *p, int kind) {
  if (!is(p, kind)) return BAD_PARAM;
  ((int *)p)[0] = 0;
  free(p);
  return SUCCESS;
}

EXPORT int cudnnCreate(void **h) {
  if (!h) return BAD_PARAM;
  handle *p = make(sizeof *p, K_HANDLE);
  if (!p) return ALLOC_FAILED;
  p->device = device_now();
  *h = p;
  return SUCCESS;
}
EXPORT int cudnnDestroy(void *h) { return destroy(h, K_HANDLE); }
EXPORT int cudnnSetStream(void *h, void *s) {
  if (!is(h, K_HANDLE)) return BAD_PARAM;
  ((handle *)h)->stream = s;
  return SUCCESS;
}

#define CREATE(NAME, TYPE, KIND)                                   \
  EXPORT int cudnnCreate##NAME##Descriptor(void **d) {            \
    if (!d) return BAD_PARAM;                                     \
    return (*d = make(sizeof(TYPE), KIND)) ? SUCCESS : ALLOC_FAILED; \
  }                                                               \
  EXPORT int cudnnDestroy##NAME##Descriptor(void *d) { return destroy(d, KIND); }
CREATE(Tensor, tensor, K_TENSOR)
CREATE(Filter, filter, K_FILTER)
CREATE(Convolution, conv, K_CONV)

/* data: float, double, half (convolutions and their bias only: the other layers refuse half here); computation:
 * float or double (half data is computed in float, cuDNN's pseudo-half configuration; true half is not emulated) */
static int dtype_ok(int t) { return t == 0 || t == 1 || t == 2; }
static int compute_ok(int t) { return t == 0 || t == 1; }
enum { HALF = 2 };

EXPORT int cudnnSetTensorNdDescriptor(void *d, int dtype, int nb, const int *dims, const int *strides) {
  if (!is(d, K_TENSOR) || !dims || !strides) return BAD_PARAM;
  if (nb != 4 && nb != 5) return NOT_SUPPORTED;   /* cuDNN takes 3 to 8; the callers here use 4 and 5 */
  if (!dtype_ok(dtype)) return NOT_SUPPORTED;
  tensor *t = d;
  t->nb = nb;
  for (int i = 0; i < nb; i++) {
    if (dims[i] <= 0 || strides[i] <= 0) return BAD_PARAM;
    t->dims[i] = dims[i], t->strides[i] = strides[i];
  }
  t->dtype = dtype, t->set = 1;
  return SUCCESS;
}

EXPORT int cudnnSetFilterNdDescriptor(void *d, int dtype, int format, int nb, const int *dims) {
  if (!is(d, K_FILTER) || !dims) return BAD_PARAM;
  if ((nb != 4 && nb != 5) || format != 0 || !dtype_ok(dtype)) return NOT_SUPPORTED;   /* NCHW / NCDHW */
  filter *f = d;
  f->nb = nb;
  for (int i = 0; i < nb; i++) {
    if (dims[i] <= 0) return BAD_PARAM;
    f->dims[i] = dims[i];
  }
  f->dtype = dtype, f->format = format, f->set = 1;
  return SUCCESS;
}

EXPORT int cudnnSetConvolutionNdDescriptor(void *d, int n, const int *pad, const int *stride, const int *dil, int mode,
                                           int ctype) {
  if (!is(d, K_CONV) || !pad || !stride || !dil) return BAD_PARAM;
  if (n != 2 && n != 3) return NOT_SUPPORTED;
  if ((mode != 0 && mode != 1) || !compute_ok(ctype)) return BAD_PARAM;
  conv *c = d;
  c->n = n;
  for (int i = 0; i < n; i++) {
    if (pad[i] < 0 || stride[i] <= 0 || dil[i] <= 0) return BAD_PARAM;
    c->pad[i] = pad[i], c->stride[i] = stride[i], c->dil[i] = dil[i];
  }
  c->mode = mode, c->ctype = ctype, c->set = 1;
  if (!c->groups) c->groups = 1;
  return SUCCESS;
}

EXPORT int cudnnSetConvolutionGroupCount(void *d, int g) {
  if (!is(d, K_CONV) || g < 1) return BAD_PARAM;
  ((conv *)d)->groups = g;
  return SUCCESS;
}

EXPORT int cudnnSetConvolutionMathType(void *d, int m) {
  if (!is(d, K_CONV) || m < 0 || m > 3) return BAD_PARAM;
  ((conv *)d)->math = m;
  return SUCCESS;
}

/* x, w and the convolution agree (2 or 3 spatial dimensions); out[x->nb] the output's dims */
static int output_dims(const conv *c, const tensor *x, const filter *w, int out[5]) {
  if (!is(c, K_CONV) || !is(x, K_TENSOR) || !is(w, K_FILTER) || !c->set || !x->set || !w->set) return BAD_PARAM;
  if (x->nb != c->n + 2 || w->nb != x->nb) return BAD_PARAM;
  /* the computation in the data's type, or in float for half data */
  if (x->dtype != w->dtype || c->ctype != (x->dtype == HALF ? 0 : x->dtype)) return BAD_PARAM;
  if (w->dims[1] * c->groups != x->dims[1] || w->dims[0] % c->groups) return BAD_PARAM;
  out[0] = x->dims[0], out[1] = w->dims[0];
  for (int i = 0; i < c->n; i++) {
    int span = c->dil[i] * (w->dims[2 + i] - 1) + 1;
    if (x->dims[2 + i] + 2 * c->pad[i] < span) return BAD_PARAM;
    out[2 + i] = (x->dims[2 + i] + 2 * c->pad[i] - span) / c->stride[i] + 1;
  }
  return SUCCESS;
}

EXPORT int cudnnGetConvolutionNdForwardOutputDim(const void *c, const void *x, const void *w, int nb, int *out) {
  if (!out || !is(x, K_TENSOR) || nb != ((const tensor *)x)->nb) return BAD_PARAM;
  return output_dims(c, x, w, out);
}

/* ---------------------------------------------------------------- the pass's operands and catalogue */

/* (a, b) -> out: forward (x, w) -> y, backward data (w, dy) -> dx, backward filter (x, dy) -> dw */
typedef struct { const tensor *x, *y; const filter *w; const conv *c; int dtype; } geom;

static int pass_geom(int pass, const void *ad, const void *bd, const void *cd, const void *od, geom *g) {
  g->c = cd;
  g->x = pass == BWD_DATA ? od : ad;
  g->w = pass == FWD ? bd : pass == BWD_DATA ? ad : od;
  g->y = pass == FWD ? od : bd;
  int dims[5];
  int st = output_dims(g->c, g->x, g->w, dims);
  if (st) return st;
  if (!is(g->y, K_TENSOR) || !g->y->set || g->y->dtype != g->x->dtype || g->y->nb != g->x->nb) return BAD_PARAM;
  for (int i = 0; i < g->x->nb; i++)
    if (g->y->dims[i] != dims[i]) return BAD_PARAM;
  g->dtype = g->x->dtype;
  return SUCCESS;
}

/* The algorithms each pass offers, their workspace (in elements of the data type, per the geometry), the
 * heuristics' order and Find's "times" (ms). Unlisted numbers are NOT_SUPPORTED. */
static int64_t spatial(const int *dims, int nb) {   /* the product of the dims after N and C */
  int64_t n = 1;
  for (int i = 2; i < nb; i++) n *= dims[i];
  return n;
}
static int64_t col_elems(const geom *g) {   /* one group's column matrix over the whole batch */
  return (int64_t)g->w->dims[1] * spatial(g->w->dims, g->w->nb) * spatial(g->y->dims, g->y->nb) * g->y->dims[0];
}
static int supported(int pass, int algo) {
  static const int ok[3][8] = {{1, 1, 1, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 1, 0, 0, 0, 0}};
  return algo >= 0 && algo < 8 && ok[pass][algo];
}
static size_t workspace_of(int pass, int algo, const geom *g) {
  const size_t es = g->dtype == 1 ? 8 : g->dtype == HALF ? 2 : 4;
  switch (algo) {
    case 0: return 0;
    case 1: return (size_t)spatial(g->y->dims, g->y->nb) * 8 + 64;   /* "index precomputation" */
    default: return (size_t)col_elems(g) * es + (pass == BWD_FILTER ? 256 : 0);   /* GEMM / ALGO_3: columns */
  }
}
static const int heuristic_order[3][3] = {{1, 0, 2}, {1, 0, -1}, {1, 0, 3}};
static const int find_order[3][3] = {{2, 0, 1}, {0, 1, -1}, {3, 1, 0}};

static int check_handle(const void *h) {
  if (!is(h, K_HANDLE)) return BAD_PARAM;
  if (((const handle *)h)->device != device_now()) return EXECUTION_FAILED;   /* a handle works on its device */
  return SUCCESS;
}

static int get_v7(int pass, void *h, const void *a, const void *b, const void *c, const void *o, int req, int *ret,
                  perf_t *perf) {
  geom g;
  int st = check_handle(h);
  if (st || (st = pass_geom(pass, a, b, c, o, &g))) return st;
  if (req < 1 || !ret || !perf) return BAD_PARAM;
  int n = 0;
  for (int i = 0; i < 3 && n < req; i++) {
    int algo = heuristic_order[pass][i];
    if (algo < 0) continue;
    perf[n] = (perf_t){.algo = algo, .status = SUCCESS, .time = -1, .memory = workspace_of(pass, algo, &g),
                       .math_type = ((const conv *)c)->math};
    n++;
  }
  *ret = n;
  return SUCCESS;
}

EXPORT int cudnnGetConvolutionForwardAlgorithm_v7(void *h, const void *x, const void *w, const void *c,
                                                  const void *y, int req, int *ret, perf_t *perf) {
  return get_v7(FWD, h, x, w, c, y, req, ret, perf);
}
EXPORT int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *h, const void *w, const void *dy, const void *c,
                                                       const void *dx, int req, int *ret, perf_t *perf) {
  return get_v7(BWD_DATA, h, w, dy, c, dx, req, ret, perf);
}
EXPORT int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *h, const void *x, const void *dy, const void *c,
                                                         const void *dw, int req, int *ret, perf_t *perf) {
  return get_v7(BWD_FILTER, h, x, dy, c, dw, req, ret, perf);
}

static int ws_size(int pass, void *h, const void *a, const void *b, const void *c, const void *o, int algo,
                   size_t *size) {
  geom g;
  int st = check_handle(h);
  if (st || (st = pass_geom(pass, a, b, c, o, &g))) return st;
  if (!size) return BAD_PARAM;
  if (!supported(pass, algo)) return NOT_SUPPORTED;
  *size = workspace_of(pass, algo, &g);
  return SUCCESS;
}
EXPORT int cudnnGetConvolutionForwardWorkspaceSize(void *h, const void *x, const void *w, const void *c,
                                                   const void *y, int algo, size_t *size) {
  return ws_size(FWD, h, x, w, c, y, algo, size);
}
EXPORT int cudnnGetConvolutionBackwardDataWorkspaceSize(void *h, const void *w, const void *dy, const void *c,
                                                        const void *dx, int algo, size_t *size) {
  return ws_size(BWD_DATA, h, w, dy, c, dx, algo, size);
}
EXPORT int cudnnGetConvolutionBackwardFilterWorkspaceSize(void *h, const void *x, const void *dy, const void *c,
                                                          const void *dw, int algo, size_t *size) {
  return ws_size(BWD_FILTER, h, x, dy, c, dw, algo, size);
}

static void count(const char *fn);

/* ---------------------------------------------------------------- the arithmetic */

/* element i of data of type el (0 float, 1 double, 2 half); a half store rounds through float, as the float
 * computation of half data ends */
static double load(const void *p, int64_t i, int el) {
  if (el == 1) return ((const double *)p)[i];
  if (el == HALF) return half_to_double(((const uint16_t *)p)[i]);
  return ((const float *)p)[i];
}
static void store(void *p, int64_t i, int el, double v) {
  if (el == 1) ((double *)p)[i] = v;
  else if (el == HALF) ((uint16_t *)p)[i] = float_to_half((float)v);
  else ((float *)p)[i] = (float)v;
}

/* A 4-D or 5-D tensor's or filter's spatial extent i of (T, H, W), T = 1 for 4-D; the convolution's pad,
 * stride and dilation along it (0, 1, 1 for T of a 2-D one) */
static int ext(const int *dims, int nb, int i) { return nb == 5 ? dims[2 + i] : i == 0 ? 1 : dims[1 + i]; }
static void conv_axis(const conv *c, int i, int *pad, int *stride, int *dil) {
  const int k = i - (3 - c->n);
  *pad = k < 0 ? 0 : c->pad[k], *stride = k < 0 ? 1 : c->stride[k], *dil = k < 0 ? 1 : c->dil[k];
}
/* element (n, c, a, b, d) of a tensor by its strides, and its dense index */
static int64_t tpos(const tensor *t, int n, int c, int a, int b, int d) {
  int64_t p = (int64_t)n * t->strides[0] + (int64_t)c * t->strides[1];
  if (t->nb == 5) return p + (int64_t)a * t->strides[2] + (int64_t)b * t->strides[3] + (int64_t)d * t->strides[4];
  return p + (int64_t)b * t->strides[2] + (int64_t)d * t->strides[3];
}
static int64_t dense(const int *dims, int nb, int n, int c, int a, int b, int d) {
  return ((((int64_t)n * dims[1] + c) * ext(dims, nb, 0) + a) * ext(dims, nb, 1) + b) * ext(dims, nb, 2) + d;
}
static int64_t tcount(const tensor *t) { return (int64_t)t->dims[0] * t->dims[1] * spatial(t->dims, t->nb); }
/* the element at dense (row-major over dims) index i, by the descriptor's strides */
static int64_t at(const tensor *t, int64_t i) {
  int64_t pos = 0;
  for (int d = t->nb - 1; d >= 0; d--) {
    pos += (i % t->dims[d]) * t->strides[d];
    i /= t->dims[d];
  }
  return pos;
}

/* out = alpha op(a, b) + beta out, the sums in double; beta == 0 does not read out */
static int compute(int pass, const geom *g, double alpha, double beta, const void *a, const void *b, void *out) {
  const int dbl = g->dtype;   /* (the element type: load and store take 0, 1, 2) */
  const tensor *x = g->x, *y = g->y;
  const filter *w = g->w;
  const conv *c = g->c;
  const int G = c->groups, Cg = w->dims[1], Kg = w->dims[0] / G, nb = x->nb;
  const void *xp = pass == BWD_DATA ? NULL : a, *wp = pass == FWD ? b : pass == BWD_DATA ? a : NULL;
  const void *yp = pass == FWD ? NULL : b;
  const int64_t n_out = pass == FWD ? tcount(y) : pass == BWD_DATA ? tcount(x)
                                                  : (int64_t)w->dims[0] * Cg * spatial(w->dims, w->nb);
  double *acc = calloc((size_t)n_out, sizeof *acc);
  if (!acc) return ALLOC_FAILED;
  int O[3], I[3], Kz[3], pad[3], str[3], dil[3];
  for (int i = 0; i < 3; i++) {
    O[i] = ext(y->dims, nb, i), I[i] = ext(x->dims, nb, i), Kz[i] = ext(w->dims, w->nb, i);
    conv_axis(c, i, &pad[i], &str[i], &dil[i]);
  }
  /* the accumulator is indexed densely: y and x as N,C,(T,)H,W; w as its own (packed) layout */
  for (int n = 0; n < x->dims[0]; n++)
    for (int k = 0; k < w->dims[0]; k++)
      for (int o0 = 0; o0 < O[0]; o0++)
        for (int o1 = 0; o1 < O[1]; o1++)
          for (int o2 = 0; o2 < O[2]; o2++) {
            const int grp = k / Kg;
            const int64_t yi = dense(y->dims, nb, n, k, o0, o1, o2);
            const double dy = pass == FWD ? 0 : load(yp, tpos(y, n, k, o0, o1, o2), dbl);
            for (int cc = 0; cc < Cg; cc++)
              for (int r0 = 0; r0 < Kz[0]; r0++) {
                const int i0 = o0 * str[0] - pad[0] + r0 * dil[0];
                if (i0 < 0 || i0 >= I[0]) continue;
                for (int r1 = 0; r1 < Kz[1]; r1++) {
                  const int i1 = o1 * str[1] - pad[1] + r1 * dil[1];
                  if (i1 < 0 || i1 >= I[1]) continue;
                  for (int r2 = 0; r2 < Kz[2]; r2++) {
                    const int i2 = o2 * str[2] - pad[2] + r2 * dil[2];
                    if (i2 < 0 || i2 >= I[2]) continue;
                    const int ch = grp * Cg + cc;
                    const int64_t wi = (((int64_t)k * Cg + cc) * Kz[0] + r0) * Kz[1] * Kz[2] + (int64_t)r1 * Kz[2] + r2;
                    if (pass == FWD) acc[yi] += load(xp, tpos(x, n, ch, i0, i1, i2), dbl) * load(wp, wi, dbl);
                    else if (pass == BWD_DATA) acc[dense(x->dims, nb, n, ch, i0, i1, i2)] += dy * load(wp, wi, dbl);
                    else acc[wi] += dy * load(xp, tpos(x, n, ch, i0, i1, i2), dbl);
                  }
                }
              }
          }
  for (int64_t i = 0; i < n_out; i++) {
    const int64_t pos = pass == BWD_FILTER ? i : at(pass == FWD ? y : x, i);   /* dense -> the strides */
    store(out, pos, dbl, alpha * acc[i] + (beta != 0 ? beta * load(out, pos, dbl) : 0));
  }
  free(acc);
  return SUCCESS;
}

static double scalar(const void *p, int dbl) { return dbl ? *(const double *)p : *(const float *)p; }

static int run(int pass, void *h, const void *alpha, const void *ad, const void *a, const void *bd, const void *b,
               const void *cd, int algo, void *ws, size_t ws_bytes, const void *beta, const void *od, void *out) {
  geom g;
  int st = check_handle(h);
  if (st || (st = pass_geom(pass, ad, bd, cd, od, &g))) return st;
  if (!alpha || !beta || !a || !b || !out) return BAD_PARAM;
  if (!supported(pass, algo)) return NOT_SUPPORTED;
  const size_t need = workspace_of(pass, algo, &g);
  if (ws_bytes < need || (need && !ws)) return BAD_PARAM;
  const int dev = ((const handle *)h)->device;
  if (!on_device(a, dev) || !on_device(b, dev) || !on_device(out, dev) || (ws_bytes && !on_device(ws, dev)))
    return EXECUTION_FAILED;   /* the real library would fault */
  find_driver();
  emu_device_work(dev, ((const handle *)h)->stream, 1);
  if (emu_noexec()) return emu_device_work(dev, ((const handle *)h)->stream, 0), SUCCESS;
  if (ws_bytes) memset(ws, 0xA5, ws_bytes);   /* workspace holds nothing a caller may read */
  st = compute(pass, &g, scalar(alpha, g.dtype == 1), scalar(beta, g.dtype == 1), a, b, out);
  emu_device_work(dev, ((const handle *)h)->stream, 0);
  return st;
}

EXPORT int cudnnConvolutionForward(void *h, const void *alpha, const void *xd, const void *x, const void *wd,
                                   const void *w, const void *cd, int algo, void *ws, size_t wsb, const void *beta,
                                   const void *yd, void *y) {
  count(__func__);
  return run(FWD, h, alpha, xd, x, wd, w, cd, algo, ws, wsb, beta, yd, y);
}
EXPORT int cudnnConvolutionBackwardData(void *h, const void *alpha, const void *wd, const void *w, const void *dyd,
                                        const void *dy, const void *cd, int algo, void *ws, size_t wsb,
                                        const void *beta, const void *dxd, void *dx) {
  count(__func__);
  return run(BWD_DATA, h, alpha, wd, w, dyd, dy, cd, algo, ws, wsb, beta, dxd, dx);
}
EXPORT int cudnnConvolutionBackwardFilter(void *h, const void *alpha, const void *xd, const void *x,
                                          const void *dyd, const void *dy, const void *cd, int algo, void *ws,
                                          size_t wsb, const void *beta, const void *dwd, void *dw) {
  count(__func__);
  return run(BWD_FILTER, h, alpha, xd, x, dyd, dy, cd, algo, ws, wsb, beta, dwd, dw);
}

/* Find*Ex: every supported algorithm run on the caller's buffers (out is overwritten, as cuDNN does), those
 * needing more workspace than given reported ALLOC_FAILED at the end, the rest in find_order's "time" order */
static int find(int pass, void *h, const void *ad, const void *a, const void *bd, const void *b, const void *cd,
                const void *od, void *out, int req, int *ret, perf_t *perf, void *ws, size_t wsb) {
  geom g;
  int st = check_handle(h);
  if (st || (st = pass_geom(pass, ad, bd, cd, od, &g))) return st;
  if (req < 1 || !ret || !perf) return BAD_PARAM;
  const int dbl = g.dtype == 1;
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  int n = 0, failed[3], nf = 0;
  for (int i = 0; i < 3; i++) {
    int algo = find_order[pass][i];
    if (algo < 0) continue;
    size_t need = workspace_of(pass, algo, &g);
    if (need > wsb) {
      failed[nf++] = algo;
      continue;
    }
    st = run(pass, h, dbl ? (const void *)&one : &onef, ad, a, bd, b, cd, algo, ws, wsb,
             dbl ? (const void *)&zero : &zerof, od, out);
    if (st) return st;
    if (n < req) perf[n++] = (perf_t){.algo = algo, .status = SUCCESS, .time = 1.0f + (float)i, .memory = need};
  }
  for (int i = 0; i < nf && n < req; i++)
    perf[n++] = (perf_t){.algo = failed[i], .status = ALLOC_FAILED, .time = -1, .memory = workspace_of(pass, failed[i], &g)};
  *ret = n;
  return SUCCESS;
}

EXPORT int cudnnFindConvolutionForwardAlgorithmEx(void *h, const void *xd, const void *x, const void *wd,
                                                  const void *w, const void *cd, const void *yd, void *y, int req,
                                                  int *ret, perf_t *perf, void *ws, size_t wsb) {
  return find(FWD, h, xd, x, wd, w, cd, yd, y, req, ret, perf, ws, wsb);
}
EXPORT int cudnnFindConvolutionBackwardDataAlgorithmEx(void *h, const void *wd, const void *w, const void *dyd,
                                                       const void *dy, const void *cd, const void *dxd, void *dx,
                                                       int req, int *ret, perf_t *perf, void *ws, size_t wsb) {
  return find(BWD_DATA, h, wd, w, dyd, dy, cd, dxd, dx, req, ret, perf, ws, wsb);
}
EXPORT int cudnnFindConvolutionBackwardFilterAlgorithmEx(void *h, const void *xd, const void *x, const void *dyd,
                                                         const void *dy, const void *cd, const void *dwd, void *dw,
                                                         int req, int *ret, perf_t *perf, void *ws, size_t wsb) {
  return find(BWD_FILTER, h, xd, x, dyd, dy, cd, dwd, dw, req, ret, perf, ws, wsb);
}

/* ---------------------------------------------------------------- bias */

/* C = alpha A + beta C with A (1, K, 1, 1(, 1)) broadcast over C (N, K, (T,) H, W); db = alpha sum(dy) + beta db */
static int bias_op(int grad, void *h, const void *alpha, const tensor *bd, void *bias, const void *beta,
                   const tensor *td, void *t) {
  int st = check_handle(h);
  if (st) return st;
  if (!is(bd, K_TENSOR) || !is(td, K_TENSOR) || !bd->set || !td->set || bd->dtype != td->dtype) return BAD_PARAM;
  if (bd->nb != td->nb || bd->dims[0] != 1 || bd->dims[1] != td->dims[1] || spatial(bd->dims, bd->nb) != 1)
    return BAD_PARAM;
  const int dev = ((const handle *)h)->device, dbl = bd->dtype, nb = td->nb;   /* (the element type) */
  if (!on_device(bias, dev) || !on_device(t, dev)) return EXECUTION_FAILED;
  const double al = scalar(alpha, dbl == 1), be = scalar(beta, dbl == 1);   /* float scalars for half data */
  emu_device_work(dev, ((const handle *)h)->stream, 1);
  if (emu_noexec()) return emu_device_work(dev, ((const handle *)h)->stream, 0), SUCCESS;
  for (int k = 0; k < td->dims[1]; k++) {
    const int64_t bi = (int64_t)k * bd->strides[1];
    double sum = 0;
    for (int n = 0; n < td->dims[0]; n++)
      for (int a = 0; a < ext(td->dims, nb, 0); a++)
        for (int y = 0; y < ext(td->dims, nb, 1); y++)
          for (int x = 0; x < ext(td->dims, nb, 2); x++) {
            const int64_t ti = tpos(td, n, k, a, y, x);
            if (grad) sum += load(t, ti, dbl);
            else store(t, ti, dbl, al * load(bias, bi, dbl) + (be != 0 ? be * load(t, ti, dbl) : 0));
          }
    if (grad) store(bias, bi, dbl, al * sum + (be != 0 ? be * load(bias, bi, dbl) : 0));
  }
  emu_device_work(dev, ((const handle *)h)->stream, 0);
  return SUCCESS;
}

EXPORT int cudnnAddTensor(void *h, const void *alpha, const void *ad, const void *a, const void *beta,
                          const void *cd, void *c) {
  find_driver();
  return bias_op(0, h, alpha, ad, (void *)a, beta, cd, c);
}
EXPORT int cudnnConvolutionBackwardBias(void *h, const void *alpha, const void *dyd, const void *dy, const void *beta,
                                        const void *dbd, void *db) {
  find_driver();
  return bias_op(1, h, alpha, dbd, db, beta, dyd, (void *)dy);
}

/* ---------------------------------------------------------------- batch normalization (spatial mode) */

/* x and y N x C x H x W of one type, the parameters' descriptor 1 x C x 1 x 1 of the same type (cuDNN's rule for
 * float and double data); epsilon >= 0 (CUDNN_BN_MIN_EPSILON) */
static int bn_check(void *h, int mode, const tensor *x, const tensor *y, const tensor *p, double eps) {
  int st = check_handle(h);
  if (st) return st;
  if (mode != 1) return NOT_SUPPORTED;   /* the spatial mode is all this emulation computes */
  if (!is(x, K_TENSOR) || !is(y, K_TENSOR) || !is(p, K_TENSOR) || !x->set || !y->set || !p->set) return BAD_PARAM;
  if (x->nb != 4 || y->nb != 4 || p->nb != 4) return BAD_PARAM;
  if (x->dtype != y->dtype || p->dtype != x->dtype || eps < 0) return BAD_PARAM;
  if (x->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  for (int i = 0; i < 4; i++)
    if (x->dims[i] != y->dims[i]) return BAD_PARAM;
  if (p->dims[0] != 1 || p->dims[1] != x->dims[1] || p->dims[2] != 1 || p->dims[3] != 1) return BAD_PARAM;
  return SUCCESS;
}

static int bn_on_device(int dev, const void *const *ptrs, int n) {
  for (int i = 0; i < n; i++)
    if (ptrs[i] && !on_device(ptrs[i], dev)) return 0;
  return 1;
}

/* the mean and biased variance of channel c over N, H, W */
static void bn_stats(const tensor *x, const void *xp, int dbl, int c, double *mean, double *var, int64_t *count) {
  double s = 0, s2 = 0;
  int64_t n = 0;
  for (int i = 0; i < x->dims[0]; i++)
    for (int a = 0; a < x->dims[2]; a++)
      for (int b = 0; b < x->dims[3]; b++, n++) s += load(xp, tpos(x, i, c, 0, a, b), dbl);
  *mean = s / (double)n;
  for (int i = 0; i < x->dims[0]; i++)
    for (int a = 0; a < x->dims[2]; a++)
      for (int b = 0; b < x->dims[3]; b++) {
        double d = load(xp, tpos(x, i, c, 0, a, b), dbl) - *mean;
        s2 += d * d;
      }
  *var = s2 / (double)n;
  *count = n;
}

static int bn_forward(int train, void *h, int mode, const void *alpha, const void *beta, const tensor *xd,
                      const void *x, const tensor *yd, void *y, const tensor *pd, const void *scale,
                      const void *bias, double factor, void *rmean, void *rvar, double eps, void *smean,
                      void *sinv) {
  int st = bn_check(h, mode, xd, yd, pd, eps);
  if (st) return st;
  if (!alpha || !beta || !x || !y || !scale || !bias || (!train && (!rmean || !rvar))) return BAD_PARAM;
  if (train && ((rmean == NULL) != (rvar == NULL) || (smean == NULL) != (sinv == NULL))) return BAD_PARAM;
  const int dev = ((const handle *)h)->device, dbl = xd->dtype == 1;
  const void *ptrs[] = {x, y, scale, bias, rmean, rvar, smean, sinv};
  if (!bn_on_device(dev, ptrs, 8)) return EXECUTION_FAILED;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  emu_device_work(dev, ((const handle *)h)->stream, 1);
  if (emu_noexec()) return emu_device_work(dev, ((const handle *)h)->stream, 0), SUCCESS;
  for (int c = 0; c < xd->dims[1]; c++) {
    double mean, var;
    int64_t n;
    if (train) {
      bn_stats(xd, x, dbl, c, &mean, &var, &n);
      if (rmean) {
        double unbiased = n > 1 ? var * (double)n / (double)(n - 1) : var;
        store(rmean, c, dbl, factor * mean + (1 - factor) * load(rmean, c, dbl));
        store(rvar, c, dbl, factor * unbiased + (1 - factor) * load(rvar, c, dbl));
      }
      if (smean) store(smean, c, dbl, mean), store(sinv, c, dbl, 1 / sqrt(var + eps));
    } else {
      mean = load(rmean, c, dbl), var = load(rvar, c, dbl);
    }
    const double inv = 1 / sqrt(var + eps), g = load(scale, c, dbl), b = load(bias, c, dbl);
    for (int i = 0; i < xd->dims[0]; i++)
      for (int a = 0; a < xd->dims[2]; a++)
        for (int w = 0; w < xd->dims[3]; w++) {
          const int64_t yi = tpos(yd, i, c, 0, a, w);
          double v = (load(x, tpos(xd, i, c, 0, a, w), dbl) - mean) * inv * g + b;
          store(y, yi, dbl, al * v + (be != 0 ? be * load(y, yi, dbl) : 0));
        }
  }
  emu_device_work(dev, ((const handle *)h)->stream, 0);
  return SUCCESS;
}

EXPORT int cudnnBatchNormalizationForwardTraining(void *h, int mode, const void *alpha, const void *beta,
                                                  const void *xd, const void *x, const void *yd, void *y,
                                                  const void *pd, const void *scale, const void *bias, double factor,
                                                  void *rmean, void *rvar, double eps, void *smean, void *sinv) {
  find_driver();
  return bn_forward(1, h, mode, alpha, beta, xd, x, yd, y, pd, scale, bias, factor, rmean, rvar, eps, smean, sinv);
}

EXPORT int cudnnBatchNormalizationForwardInference(void *h, int mode, const void *alpha, const void *beta,
                                                   const void *xd, const void *x, const void *yd, void *y,
                                                   const void *pd, const void *scale, const void *bias,
                                                   const void *mean, const void *var, double eps) {
  find_driver();
  return bn_forward(0, h, mode, alpha, beta, xd, x, yd, y, pd, scale, bias, 0, (void *)mean, (void *)var, eps, NULL,
                    NULL);
}

/* dx = alphaD * dx_bn + betaD * dx; dscale/dbias = alphaP * d + betaP * old; from the saved statistics when given
 * (they must be the forward's: recomputed here and compared), else recomputed */
EXPORT int cudnnBatchNormalizationBackward(void *h, int mode, const void *alpha_d, const void *beta_d,
                                           const void *alpha_p, const void *beta_p, const void *xd_, const void *x,
                                           const void *dyd_, const void *dy, const void *dxd_, void *dx,
                                           const void *pd_, const void *scale, void *dscale, void *dbias, double eps,
                                           const void *smean, const void *sinv) {
  find_driver();
  const tensor *xd = xd_, *dyd = dyd_, *dxd = dxd_, *pd = pd_;
  int st = bn_check(h, mode, xd, dyd, pd, eps);
  if (st || (st = bn_check(h, mode, xd, dxd, pd, eps))) return st;
  if (!alpha_d || !beta_d || !alpha_p || !beta_p || !x || !dy || !dx || !scale || !dscale || !dbias) return BAD_PARAM;
  if ((smean == NULL) != (sinv == NULL)) return BAD_PARAM;
  const int dev = ((const handle *)h)->device, dbl = xd->dtype == 1;
  const void *ptrs[] = {x, dy, dx, scale, dscale, dbias, smean, sinv};
  if (!bn_on_device(dev, ptrs, 8)) return EXECUTION_FAILED;
  const double ad = scalar(alpha_d, dbl), bd = scalar(beta_d, dbl), ap = scalar(alpha_p, dbl),
               bp = scalar(beta_p, dbl);
  emu_device_work(dev, ((const handle *)h)->stream, 1);
  if (emu_noexec()) return emu_device_work(dev, ((const handle *)h)->stream, 0), SUCCESS;
  st = SUCCESS;
  for (int c = 0; c < xd->dims[1] && st == SUCCESS; c++) {
    double mean, var;
    int64_t n;
    bn_stats(xd, x, dbl, c, &mean, &var, &n);
    double inv = 1 / sqrt(var + eps);
    if (smean) {   /* the caller's saved statistics must be this batch's (as the forward pass left them) */
      const double sm = load(smean, c, dbl), si = load(sinv, c, dbl);
      const double tol = dbl ? 1e-9 : 1e-4;
      if (!(fabs(sm - mean) <= tol * (1 + fabs(mean)) && fabs(si - inv) <= tol * (1 + fabs(inv))))
        st = BAD_PARAM;
      mean = sm, inv = si;
    }
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int i = 0; i < xd->dims[0]; i++)
      for (int a = 0; a < xd->dims[2]; a++)
        for (int w = 0; w < xd->dims[3]; w++) {
          const double g = load(dy, tpos(dyd, i, c, 0, a, w), dbl);
          sum_dy += g;
          sum_dy_xhat += g * (load(x, tpos(xd, i, c, 0, a, w), dbl) - mean) * inv;
        }
    const double gamma = load(scale, c, dbl);
    for (int i = 0; i < xd->dims[0]; i++)
      for (int a = 0; a < xd->dims[2]; a++)
        for (int w = 0; w < xd->dims[3]; w++) {
          const double xhat = (load(x, tpos(xd, i, c, 0, a, w), dbl) - mean) * inv;
          const double g = load(dy, tpos(dyd, i, c, 0, a, w), dbl);
          const double v = gamma * inv * (g - sum_dy / (double)n - xhat * sum_dy_xhat / (double)n);
          const int64_t di = tpos(dxd, i, c, 0, a, w);
          store(dx, di, dbl, ad * v + (bd != 0 ? bd * load(dx, di, dbl) : 0));
        }
    store(dscale, c, dbl, ap * sum_dy_xhat + (bp != 0 ? bp * load(dscale, c, dbl) : 0));
    store(dbias, c, dbl, ap * sum_dy + (bp != 0 ? bp * load(dbias, c, dbl) : 0));
  }
  emu_device_work(dev, ((const handle *)h)->stream, 0);
  return st;
}

/* ---------------------------------------------------------------- pooling, activations, softmax */

/* How often each of these entry points ran, for tests that must know cuDNN computed a layer (not our kernels):
 * emu_cudnn_calls("cudnnPoolingForward"); the convolutions' three passes too. */
static const char *const counted[] = {"cudnnPoolingForward", "cudnnPoolingBackward", "cudnnActivationForward",
                                      "cudnnActivationBackward", "cudnnSoftmaxForward", "cudnnSoftmaxBackward",
                                      "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                      "cudnnConvolutionBackwardFilter"};
static long counts[sizeof counted / sizeof counted[0]];
static void count(const char *fn) {
  for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++)
    if (!strcmp(counted[i], fn)) __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED);
}
EXPORT long emu_cudnn_calls(const char *fn) {
  for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++)
    if (!strcmp(counted[i], fn)) return __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
  return -1;
}

typedef struct { int magic, kind, set, mode, nan, dims, win[3], pad[3], stride[3]; } pooling;
typedef struct { int magic, kind, set, mode, nan; double coef; } activation;
CREATE(Pooling, pooling, K_POOL)
CREATE(Activation, activation, K_ACT)

static int same_dims(const tensor *a, const tensor *b) {
  if (!is(a, K_TENSOR) || !is(b, K_TENSOR) || !a->set || !b->set || a->nb != b->nb || a->dtype != b->dtype) return 0;
  for (int i = 0; i < a->nb; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}
static int all_on_device(const void *h, const void *const *ptrs, int n) {
  const int dev = ((const handle *)h)->device;
  for (int i = 0; i < n; i++)
    if (!on_device(ptrs[i], dev)) return 0;
  return 1;
}
static void begin(const void *h, int on) {
  emu_device_work(((const handle *)h)->device, ((const handle *)h)->stream, on);
}

EXPORT int cudnnSetPoolingNdDescriptor(void *d, int mode, int nan, int n, const int *win, const int *pad,
                                       const int *stride) {
  if (!is(d, K_POOL) || !win || !pad || !stride) return BAD_PARAM;
  if (n < 2 || n > 3) return NOT_SUPPORTED;
  if (mode < 0 || mode > 3 || (nan != 0 && nan != 1)) return BAD_PARAM;
  pooling *p = d;
  for (int i = 0; i < n; i++) {
    if (win[i] <= 0 || stride[i] <= 0 || pad[i] < 0) return BAD_PARAM;
    p->win[i] = win[i], p->pad[i] = pad[i], p->stride[i] = stride[i];
  }
  p->mode = mode, p->nan = nan, p->dims = n, p->set = 1;
  return SUCCESS;
}

static int pool_out(const pooling *p, const tensor *x, int *out) {
  if (!is(p, K_POOL) || !p->set || !is(x, K_TENSOR) || !x->set || x->nb != p->dims + 2) return BAD_PARAM;
  out[0] = x->dims[0], out[1] = x->dims[1];
  for (int i = 0; i < p->dims; i++) {
    if (x->dims[2 + i] + 2 * p->pad[i] < p->win[i]) return BAD_PARAM;
    out[2 + i] = (x->dims[2 + i] + 2 * p->pad[i] - p->win[i]) / p->stride[i] + 1;
  }
  return SUCCESS;
}

EXPORT int cudnnGetPoolingNdForwardOutputDim(const void *pd, const void *xd, int n, int *out) {
  if (!out || !is(xd, K_TENSOR) || n != ((const tensor *)xd)->nb) return BAD_PARAM;
  return pool_out(pd, xd, out);
}

/* The window of output o (dense index over y's dims) as per-dimension [lo, hi) input ranges, (T,) H, W padded
 * as 3-D with T = 1 for 2-D pooling; *nc the (n, c) plane */
typedef struct { int lo[3], hi[3], full; } window;
static void window_of(const pooling *p, const tensor *x, const tensor *y, int64_t o, int64_t *nc, window *w) {
  int idx[3] = {0, 0, 0};
  int64_t r = o;
  for (int d = p->dims - 1; d >= 0; d--) {
    idx[3 - p->dims + d] = (int)(r % y->dims[2 + d]);
    r /= y->dims[2 + d];
  }
  *nc = r;
  w->full = 1;
  for (int d = 0; d < 3; d++) {
    const int k = d - (3 - p->dims);
    if (k < 0) {
      w->lo[d] = 0, w->hi[d] = 1;
      continue;
    }
    const int start = idx[d] * p->stride[k] - p->pad[k], n = x->dims[2 + k];
    w->full *= p->win[k];
    w->lo[d] = start < 0 ? 0 : start;
    w->hi[d] = start + p->win[k] > n ? n : start + p->win[k];
  }
}
/* dense index into x of plane nc at (t, h, w) */
static int64_t x_index(const pooling *p, const tensor *x, int64_t nc, int t, int h, int w) {
  int64_t i = nc;
  const int pos[3] = {t, h, w};
  for (int d = 3 - p->dims; d < 3; d++) i = i * x->dims[2 + d - (3 - p->dims)] + pos[d];
  return i;
}

EXPORT int cudnnPoolingForward(void *h, const void *pd, const void *alpha, const void *xd_, const void *x,
                               const void *beta, const void *yd_, void *y) {
  find_driver();
  count(__func__);
  const pooling *p = pd;
  const tensor *xd = xd_, *yd = yd_;
  int out[5], st = check_handle(h);
  if (st || (st = pool_out(p, xd, out))) return st;
  if (!alpha || !beta || !x || !y || !is(yd, K_TENSOR) || !yd->set || yd->nb != xd->nb || yd->dtype != xd->dtype)
    return BAD_PARAM;
  for (int i = 0; i < yd->nb; i++)
    if (yd->dims[i] != out[i]) return BAD_PARAM;
  const void *ptrs[] = {x, y};
  if (!all_on_device(h, ptrs, 2)) return EXECUTION_FAILED;
  if (xd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = xd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t o = 0; o < tcount(yd); o++) {
    int64_t nc;
    window w;
    window_of(p, xd, yd, o, &nc, &w);
    double m = -INFINITY, sum = 0;
    int64_t valid = 0;
    for (int a = w.lo[0]; a < w.hi[0]; a++)
      for (int b = w.lo[1]; b < w.hi[1]; b++)
        for (int c = w.lo[2]; c < w.hi[2]; c++) {
          const double v = load(x, at(xd, x_index(p, xd, nc, a, b, c)), dbl);
          if (isnan(v) && !p->nan) continue;
          if (v > m || isnan(v)) m = isnan(m) ? m : v;
          sum += v, valid++;
        }
    const double r = p->mode == 0 || p->mode == 3 ? m : sum / (double)(p->mode == 1 ? w.full : valid);
    const int64_t yi = at(yd, o);
    store(y, yi, dbl, al * r + (be != 0 ? be * load(y, yi, dbl) : 0));
  }
  begin(h, 0);
  return SUCCESS;
}

/* dx = alpha pool'(x) dy + beta dx; max pooling routes each dy to the first input in its window equal to the
 * forward's output there (NaN to the first NaN) */
EXPORT int cudnnPoolingBackward(void *h, const void *pd, const void *alpha, const void *yd_, const void *y,
                                const void *dyd_, const void *dy, const void *xd_, const void *x, const void *beta,
                                const void *dxd_, void *dx) {
  find_driver();
  count(__func__);
  const pooling *p = pd;
  const tensor *xd = xd_, *yd = yd_, *dyd = dyd_, *dxd = dxd_;
  int out[5], st = check_handle(h);
  if (st || (st = pool_out(p, xd, out))) return st;
  if (!alpha || !beta || !x || !y || !dy || !dx || !same_dims(yd, dyd) || !same_dims(xd, dxd) ||
      yd->dtype != xd->dtype)
    return BAD_PARAM;
  for (int i = 0; i < yd->nb; i++)
    if (yd->dims[i] != out[i]) return BAD_PARAM;
  const void *ptrs[] = {x, y, dy, dx};
  if (!all_on_device(h, ptrs, 4)) return EXECUTION_FAILED;
  if (xd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = xd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  const int64_t nx = tcount(xd);
  double *acc = calloc((size_t)nx, sizeof *acc);
  if (!acc) return ALLOC_FAILED;
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t o = 0; o < tcount(yd); o++) {
    int64_t nc;
    window w;
    window_of(p, xd, yd, o, &nc, &w);
    const double g = load(dy, at(dyd, o), dbl), m = load(y, at(yd, o), dbl);
    int done = 0;
    int64_t valid = 0;
    for (int a = w.lo[0]; a < w.hi[0]; a++)
      for (int b = w.lo[1]; b < w.hi[1]; b++)
        for (int c = w.lo[2]; c < w.hi[2]; c++) valid++;
    for (int a = w.lo[0]; a < w.hi[0] && !done; a++)
      for (int b = w.lo[1]; b < w.hi[1] && !done; b++)
        for (int c = w.lo[2]; c < w.hi[2] && !done; c++) {
          const int64_t i = x_index(p, xd, nc, a, b, c);
          if (p->mode == 0 || p->mode == 3) {
            const double v = load(x, at(xd, i), dbl);
            if (v == m || (isnan(v) && isnan(m))) acc[i] += g, done = 1;
          } else {
            acc[i] += g / (double)(p->mode == 1 ? w.full : valid);
          }
        }
  }
  for (int64_t i = 0; i < nx; i++) {
    const int64_t di = at(dxd, i);
    store(dx, di, dbl, al * acc[i] + (be != 0 ? be * load(dx, di, dbl) : 0));
  }
  begin(h, 0);
  free(acc);
  return SUCCESS;
}

EXPORT int cudnnSetActivationDescriptor(void *d, int mode, int nan, double coef) {
  if (!is(d, K_ACT) || mode < 0 || mode > 5 || (nan != 0 && nan != 1)) return BAD_PARAM;
  activation *a = d;
  a->mode = mode, a->nan = nan, a->coef = coef, a->set = 1;
  return SUCCESS;
}

static int act_ok(const void *h, const activation *a) {
  int st = check_handle(h);
  if (st) return st;
  if (!is(a, K_ACT) || !a->set) return BAD_PARAM;
  return a->mode <= 3 ? SUCCESS : NOT_SUPPORTED;   /* sigmoid, relu, tanh, clipped relu */
}

EXPORT int cudnnActivationForward(void *h, void *ad, const void *alpha, const void *xd_, const void *x,
                                  const void *beta, const void *yd_, void *y) {
  find_driver();
  count(__func__);
  const activation *a = ad;
  const tensor *xd = xd_, *yd = yd_;
  int st = act_ok(h, a);
  if (st) return st;
  if (!alpha || !beta || !x || !y || !same_dims(xd, yd)) return BAD_PARAM;
  const void *ptrs[] = {x, y};
  if (!all_on_device(h, ptrs, 2)) return EXECUTION_FAILED;
  if (xd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = xd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t i = 0; i < tcount(xd); i++) {
    const double v = load(x, at(xd, i), dbl);
    double r;
    switch (a->mode) {
      case 0: r = 1 / (1 + exp(-v)); break;
      case 1: r = v > 0 ? v : 0; break;
      case 2: r = tanh(v); break;
      default: r = v > 0 ? (v < a->coef ? v : a->coef) : 0; break;
    }
    if (isnan(v)) r = a->nan ? v : 0;
    const int64_t yi = at(yd, i);
    store(y, yi, dbl, al * r + (be != 0 ? be * load(y, yi, dbl) : 0));
  }
  begin(h, 0);
  return SUCCESS;
}

/* sigmoid and tanh from y; relu and clipped relu from x */
EXPORT int cudnnActivationBackward(void *h, void *ad, const void *alpha, const void *yd_, const void *y,
                                   const void *dyd_, const void *dy, const void *xd_, const void *x, const void *beta,
                                   const void *dxd_, void *dx) {
  find_driver();
  count(__func__);
  const activation *a = ad;
  const tensor *xd = xd_, *yd = yd_, *dyd = dyd_, *dxd = dxd_;
  int st = act_ok(h, a);
  if (st) return st;
  if (!alpha || !beta || !x || !y || !dy || !dx || !same_dims(xd, yd) || !same_dims(xd, dyd) || !same_dims(xd, dxd))
    return BAD_PARAM;
  const void *ptrs[] = {x, y, dy, dx};
  if (!all_on_device(h, ptrs, 4)) return EXECUTION_FAILED;
  if (xd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = xd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t i = 0; i < tcount(xd); i++) {
    const double v = load(x, at(xd, i), dbl), out = load(y, at(yd, i), dbl), g = load(dy, at(dyd, i), dbl);
    double r;
    switch (a->mode) {
      case 0: r = g * out * (1 - out); break;
      case 1: r = v > 0 ? g : 0; break;
      case 2: r = g * (1 - out * out); break;
      default: r = v > 0 && v < a->coef ? g : 0; break;
    }
    const int64_t di = at(dxd, i);
    store(dx, di, dbl, al * r + (be != 0 ? be * load(dx, di, dbl) : 0));
  }
  begin(h, 0);
  return SUCCESS;
}

/* The groups a softmax normalizes over: instance mode (0) all of C x H x W per sample, channel mode (1) C at each
 * (sample, h, w); dense index of member j of group g */
static int64_t sm_groups(int mode, const tensor *t) {
  return mode == 0 ? t->dims[0] : (int64_t)t->dims[0] * t->dims[2] * t->dims[3];
}
static int64_t sm_size(int mode, const tensor *t) {
  return mode == 0 ? (int64_t)t->dims[1] * t->dims[2] * t->dims[3] : t->dims[1];
}
static int64_t sm_index(int mode, const tensor *t, int64_t g, int64_t j) {
  if (mode == 0) return g * sm_size(mode, t) + j;
  const int64_t hw = (int64_t)t->dims[2] * t->dims[3], n = g / hw, pix = g % hw;
  return (n * t->dims[1] + j) * hw + pix;
}
static int sm_ok(void *h, int algo, int mode, const tensor *a, const tensor *b) {
  int st = check_handle(h);
  if (st) return st;
  if (algo < 0 || algo > 2 || mode < 0 || mode > 1 || !same_dims(a, b) || a->nb != 4) return BAD_PARAM;
  return SUCCESS;
}

EXPORT int cudnnSoftmaxForward(void *h, int algo, int mode, const void *alpha, const void *xd_, const void *x,
                               const void *beta, const void *yd_, void *y) {
  find_driver();
  count(__func__);
  const tensor *xd = xd_, *yd = yd_;
  int st = sm_ok(h, algo, mode, xd, yd);
  if (st) return st;
  if (!alpha || !beta || !x || !y) return BAD_PARAM;
  const void *ptrs[] = {x, y};
  if (!all_on_device(h, ptrs, 2)) return EXECUTION_FAILED;
  if (xd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = xd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  const int64_t size = sm_size(mode, xd);
  double *v = malloc((size_t)size * sizeof *v);
  if (!v) return ALLOC_FAILED;
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t g = 0; g < sm_groups(mode, xd); g++) {
    double m = algo == 0 ? 0 : -INFINITY, sum = 0;   /* the fast algorithm subtracts no maximum */
    for (int64_t j = 0; j < size; j++) {
      v[j] = load(x, at(xd, sm_index(mode, xd, g, j)), dbl);
      if (algo != 0 && v[j] > m) m = v[j];
    }
    for (int64_t j = 0; j < size; j++) sum += exp(v[j] - m);
    for (int64_t j = 0; j < size; j++) {
      const double r = algo == 2 ? v[j] - m - log(sum) : exp(v[j] - m) / sum;
      const int64_t yi = at(yd, sm_index(mode, yd, g, j));
      store(y, yi, dbl, al * r + (be != 0 ? be * load(y, yi, dbl) : 0));
    }
  }
  begin(h, 0);
  free(v);
  return SUCCESS;
}

/* softmax: dx = y (dy - sum(dy y)); log-softmax: dx = dy - exp(y) sum(dy) */
EXPORT int cudnnSoftmaxBackward(void *h, int algo, int mode, const void *alpha, const void *yd_, const void *y,
                                const void *dyd_, const void *dy, const void *beta, const void *dxd_, void *dx) {
  find_driver();
  count(__func__);
  const tensor *yd = yd_, *dyd = dyd_, *dxd = dxd_;
  int st = sm_ok(h, algo, mode, yd, dyd);
  if (st || (st = sm_ok(h, algo, mode, yd, dxd))) return st;
  if (!alpha || !beta || !y || !dy || !dx) return BAD_PARAM;
  const void *ptrs[] = {y, dy, dx};
  if (!all_on_device(h, ptrs, 3)) return EXECUTION_FAILED;
  if (yd->dtype == HALF) return NOT_SUPPORTED;   /* half: convolutions and bias only */
  const int dbl = yd->dtype == 1;
  const double al = scalar(alpha, dbl), be = scalar(beta, dbl);
  const int64_t size = sm_size(mode, yd);
  begin(h, 1);
  if (emu_noexec()) return begin(h, 0), SUCCESS;
  for (int64_t g = 0; g < sm_groups(mode, yd); g++) {
    double dot = 0;
    for (int64_t j = 0; j < size; j++) {
      const double gy = load(dy, at(dyd, sm_index(mode, dyd, g, j)), dbl);
      dot += algo == 2 ? gy : gy * load(y, at(yd, sm_index(mode, yd, g, j)), dbl);
    }
    for (int64_t j = 0; j < size; j++) {
      const double out = load(y, at(yd, sm_index(mode, yd, g, j)), dbl), gy = load(dy, at(dyd, sm_index(mode, dyd, g, j)), dbl);
      const double r = algo == 2 ? gy - exp(out) * dot : out * (gy - dot);
      const int64_t di = at(dxd, sm_index(mode, dxd, g, j));
      store(dx, di, dbl, al * r + (be != 0 ? be * load(dx, di, dbl) : 0));
    }
  }
  begin(h, 0);
  return SUCCESS;
}
