/* SpatialMaxPooling and SpatialAveragePooling (THNN SpatialDilatedMaxPooling.c
 * with dilation 1, and SpatialAveragePooling.c).
 *
 * Output size per dimension: floor or ceil((in + 2*pad - k) / d) + 1; when
 * padW or padH is non-zero, Torch7 then drops the last window if it would
 * start at or past in + pad, so every window starts inside the image or its
 * left/top padding. Windows are clipped to the image for the max (padding
 * never wins); the average divides by the window clipped to the padded image
 * (count_include_pad) or to the image. Planes (N*C) run in parallel. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

typedef struct pool_geom {
  int batch;
  int64_t planes, iH, iW, oH, oW;  /* planes = N*C */
  int kW, kH, dW, dH, padW, padH;
} pool_geom;

static int64_t pool_out_size(int64_t in, int k, int d, int pad, int ceil_mode) {
  int64_t span = in + 2 * (int64_t)pad - k;
  if (span < 0) return 0;
  return (ceil_mode ? (span + d - 1) / d : span / d) + 1;
}

static int pool_geom_init(pool_geom *g, const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                          int padW, int padH, int ceil_mode) {
  char buf[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (kW <= 0 || kH <= 0) return lt_fail("%s: kernel size should be greater than zero, but got kH: %d kW: %d", fn, kH, kW);
  if (dW <= 0 || dH <= 0) return lt_fail("%s: stride should be greater than zero, but got dH: %d dW: %d", fn, dH, dW);
  if (padW < 0 || padH < 0 || padW > kW / 2 || padH > kH / 2)
    return lt_fail("%s: pad should be smaller than half of kernel size, but got padW = %d, padH = %d, kW = %d, kH = %d",
                   fn, padW, padH, kW, kH);
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, buf, sizeof buf));
  g->batch = input->ndim == 4;
  int f = g->batch;
  int64_t C = input->size[f];
  g->planes = C * (g->batch ? input->size[0] : 1);
  g->iH = input->size[f + 1];
  g->iW = input->size[f + 2];
  g->oH = pool_out_size(g->iH, kH, dH, padH, ceil_mode);
  g->oW = pool_out_size(g->iW, kW, dW, padW, ceil_mode);
  if (padW || padH) {
    if (g->oH > 0 && (g->oH - 1) * dH >= g->iH + padH) g->oH--;
    if (g->oW > 0 && (g->oW - 1) * dW >= g->iW + padW) g->oW--;
  }
  if (g->oH < 1 || g->oW < 1)
    return lt_fail("%s: Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size "
                   "is too small", fn, (long long)C, (long long)g->iH, (long long)g->iW, (long long)C,
                   (long long)g->oH, (long long)g->oW);
  g->kW = kW; g->kH = kH; g->dW = dW; g->dH = dH; g->padW = padW; g->padH = padH;
  return 0;
}

static int pool_resize(lt_tensor *t, const lt_tensor *input, const pool_geom *g) {
  int64_t sz[4];
  int nd = input->ndim;
  for (int d = 0; d < nd - 2; d++) sz[d] = input->size[d];
  sz[nd - 2] = g->oH;
  sz[nd - 1] = g->oW;
  return lt_tensor_resize(t, nd, sz);
}

static int pool_check_gradOutput(const pool_geom *g, const char *fn, const lt_tensor *input,
                                 const lt_tensor *gradOutput) {
  char b1[160];
  int nd = input->ndim, ok = gradOutput->ndim == nd && gradOutput->type == input->type;
  for (int d = 0; ok && d < nd - 2; d++) ok = gradOutput->size[d] == input->size[d];
  if (ok) ok = gradOutput->size[nd - 2] == g->oH && gradOutput->size[nd - 1] == g->oW;
  if (!ok)
    return lt_fail("%s: gradOutput %s does not match the output size (%lld x %lld per plane)", fn,
                   lt_shape_str(gradOutput, b1, sizeof b1), (long long)g->oH, (long long)g->oW);
  return 0;
}

/* Window [start, end) of output position o along one dimension, clipped to [0, in). */
static inline void pool_window(int64_t o, int d, int pad, int k, int64_t in, int64_t *s, int64_t *e) {
  int64_t a = o * d - pad, b = a + k;
  *s = a < 0 ? 0 : a;
  *e = b > in ? in : b;
}

/* The windows of every output row and column (start, end in the image) and the divisor's factor along that
 * side (pool_divisor is their product): a window's area is the product of its height and width. */
typedef struct pool_windows {
  int64_t *hs, *he, *ws, *we, *dh, *dw;
} pool_windows;

static void pool_side(int64_t n, int d, int pad, int k, int64_t in, int include_pad, int64_t *s, int64_t *e,
                      int64_t *div) {
  for (int64_t o = 0; o < n; o++) {
    pool_window(o, d, pad, k, in, &s[o], &e[o]);
    int64_t a = o * d - pad, b = a + k;
    div[o] = include_pad ? (b > in + pad ? in + pad : b) - a : e[o] - s[o];
  }
}

static int pool_windows_make(pool_windows *t, const pool_geom *g, int include_pad) {
  int64_t *m = malloc(sizeof(int64_t) * (size_t)(3 * g->oH + 3 * g->oW));
  if (!m) return -1;
  t->hs = m; t->he = m + g->oH; t->dh = m + 2 * g->oH;
  t->ws = m + 3 * g->oH; t->we = t->ws + g->oW; t->dw = t->ws + 2 * g->oW;
  pool_side(g->oH, g->dH, g->padH, g->kH, g->iH, include_pad, t->hs, t->he, t->dh);
  pool_side(g->oW, g->dW, g->padW, g->kW, g->iW, include_pad, t->ws, t->we, t->dw);
  return 0;
}

/* The average's divisor: the window clipped to the padded image, or to the image. */
static inline int64_t pool_divisor(const pool_geom *g, int64_t oh, int64_t ow, int include_pad) {
  int64_t hs = oh * g->dH - g->padH, ws = ow * g->dW - g->padW;
  int64_t he = hs + g->kH, we = ws + g->kW;
  if (include_pad) {
    if (he > g->iH + g->padH) he = g->iH + g->padH;
    if (we > g->iW + g->padW) we = g->iW + g->padW;
  } else {
    if (hs < 0) hs = 0;
    if (ws < 0) ws = 0;
    if (he > g->iH) he = g->iH;
    if (we > g->iW) we = g->iW;
  }
  return (he - hs) * (we - ws);
}

#define NN_GENERIC_FILE "nn_pooling.c"
#include "nn_generic.h"

/* Shared front of the four entry points: geometry, contiguous input/gradOutput. */
typedef struct pool_call {
  pool_geom g;
  nn_copies cp;
  const void *in, *go;
} pool_call;

static int pool_begin(pool_call *c, const char *fn, lt_tensor *input, lt_tensor *gradOutput, int kW, int kH, int dW,
                      int dH, int padW, int padH, int ceil_mode) {
  c->cp.n = 0;
  c->go = NULL;
  if (pool_geom_init(&c->g, fn, input, kW, kH, dW, dH, padW, padH, ceil_mode)) return -1;
  c->in = nn_contig(&c->cp, input);
  if (!c->in) return -1;
  if (gradOutput) {
    if (pool_check_gradOutput(&c->g, fn, input, gradOutput)) return -1;
    c->go = nn_contig(&c->cp, gradOutput);
    if (!c->go) return -1;
  }
  return 0;
}

static int pool_end(pool_call *c, int rc) { return nn_copies_free(&c->cp, rc); }

int lt_nn_SpatialMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW, int kH,
                                         int dW, int dH, int padW, int padH, int ceil_mode) {
  NN_NEED(input);
  static const char fn[] = "SpatialMaxPooling_updateOutput";
  pool_call c;
  if (pool_begin(&c, fn, input, NULL, kW, kH, dW, dH, padW, padH, ceil_mode)) return pool_end(&c, -1);
  if (nn_check_float(output, input->type, fn, "output")) return pool_end(&c, -1);
  if (lt_host_type(indices->type) != LT_LONG) return pool_end(&c, lt_fail("%s: indices must be a LongTensor", fn));
  if (pool_resize(output, input, &c.g) || pool_resize(indices, input, &c.g)) return pool_end(&c, -1);
  NN_CALL(input->type, maxpool_forward, &c.g, c.in, lt_tensor_data(output), lt_tensor_data(indices));
  return pool_end(&c, 0);
}

int lt_nn_SpatialMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                            lt_tensor *indices, int kW, int kH, int dW, int dH, int padW, int padH,
                                            int ceil_mode) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialMaxPooling_updateGradInput";
  pool_call c;
  if (pool_begin(&c, fn, input, gradOutput, kW, kH, dW, dH, padW, padH, ceil_mode)) return pool_end(&c, -1);
  if (nn_check_float(gradInput, input->type, fn, "gradInput")) return pool_end(&c, -1);
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != c.g.planes * c.g.oH * c.g.oW)
    return pool_end(&c, lt_fail("%s: indices must be the LongTensor filled by updateOutput", fn));
  const int64_t *idx = nn_contig(&c.cp, indices);
  if (!idx || nn_resize_as(gradInput, input)) return pool_end(&c, -1);
  int rc = NN_CALL(input->type, maxpool_backward, &c.g, c.go, lt_tensor_data(gradInput), idx);
  return pool_end(&c, rc ? lt_fail("%s: indices hold a position outside the input plane", fn) : 0);
}

int lt_nn_SpatialAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int kW, int kH, int dW, int dH,
                                             int padW, int padH, int ceil_mode, int count_include_pad) {
  NN_NEED(input);
  static const char fn[] = "SpatialAveragePooling_updateOutput";
  pool_call c;
  if (pool_begin(&c, fn, input, NULL, kW, kH, dW, dH, padW, padH, ceil_mode)) return pool_end(&c, -1);
  if (nn_check_float(output, input->type, fn, "output") || pool_resize(output, input, &c.g)) return pool_end(&c, -1);
  NN_CALL(input->type, avgpool_forward, &c.g, c.in, lt_tensor_data(output), count_include_pad);
  return pool_end(&c, 0);
}

int lt_nn_SpatialAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                int kW, int kH, int dW, int dH, int padW, int padH, int ceil_mode,
                                                int count_include_pad) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SpatialAveragePooling_updateGradInput";
  pool_call c;
  if (pool_begin(&c, fn, input, gradOutput, kW, kH, dW, dH, padW, padH, ceil_mode)) return pool_end(&c, -1);
  if (nn_check_float(gradInput, input->type, fn, "gradInput") || nn_resize_as(gradInput, input))
    return pool_end(&c, -1);
  NN_CALL(input->type, avgpool_backward, &c.g, c.go, lt_tensor_data(gradInput), count_include_pad);
  return pool_end(&c, 0);
}

#else /* ---------------------------------------------- generic part (real) */

/* Runs BODY for every output position of every plane p, with the window
 * [hs, he) x [ws, we) clipped to the image, x the input plane (X_T const or
 * not) and o the output offset; the geometry must be in a pool_geom *g (the
 * OpenMP condition names it). Planes run in parallel when there is enough work. */
#define POOL_FOR_WINDOWS(X_T, base, ...)                                                             \
  _Pragma("omp parallel for schedule(static) if (g->planes > 1 && g->planes * g->oH * g->oW * g->kH * g->kW >= LT_OMP_THRESHOLD)") \
  for (int64_t p = 0; p < g->planes; p++) {                                                           \
    X_T *x = (base) + p * g->iH * g->iW;                                                            \
    for (int64_t oh = 0; oh < g->oH; oh++) {                                                          \
      int64_t hs, he;                                                                                   \
      pool_window(oh, g->dH, g->padH, g->kH, g->iH, &hs, &he);                                  \
      for (int64_t ow = 0; ow < g->oW; ow++) {                                                        \
        int64_t ws, we, o = (p * g->oH + oh) * g->oW + ow;                                          \
        pool_window(ow, g->dW, g->padW, g->kW, g->iW, &ws, &we);                                \
        __VA_ARGS__                                                                                     \
      }                                                                                                 \
    }                                                                                                   \
  }

/* A window's maximum as Torch7 takes it, scanning rows then columns: the first maximum wins, a NaN
 * propagates (the last NaN wins); an all -inf window keeps index 0. Separably, with the same result: each
 * image row's maximum and its column over the windows' columns (iH x oW), then the same rule over the
 * window's rows of those. Window by window when there is no memory for the tables. */
static void NN_(maxpool_forward)(const pool_geom *g, const real *in, real *out, int64_t *ind) {
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW;
  pool_windows t;
  if (pool_windows_make(&t, g, 0)) {
    POOL_FOR_WINDOWS(const real, in, {
      real best = -INFINITY;
      int64_t at = -1;
      for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++) {
          real v = x[h * iW + w];
          if (v > best || isnan(v)) {
            best = v;
            at = h * iW + w;
          }
        }
      out[o] = best;
      ind[o] = at + 1;
    })
    return;
  }
#pragma omp parallel if (g->planes > 1 && g->planes * g->oH * g->oW * g->kH * g->kW >= LT_OMP_THRESHOLD)
  {
    real *rb = malloc((sizeof(real) + sizeof(int64_t)) * (size_t)(iH * oW));
    int64_t *rc = rb ? (int64_t *)(rb + iH * oW) : NULL;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g->planes; p++) {
      const real *x = in + p * iH * iW;
      real *y = out + p * oH * oW;
      int64_t *yi = ind + p * oH * oW;
      if (!rb) {  /* no scratch on this thread: window by window */
        for (int64_t oh = 0; oh < oH; oh++)
          for (int64_t ow = 0; ow < oW; ow++) {
            real best = -INFINITY;
            int64_t at = -1;
            for (int64_t h = t.hs[oh]; h < t.he[oh]; h++)
              for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) {
                real v = x[h * iW + w];
                if (v > best || isnan(v)) {
                  best = v;
                  at = h * iW + w;
                }
              }
            y[oh * oW + ow] = best;
            yi[oh * oW + ow] = at + 1;
          }
        continue;
      }
      for (int64_t h = 0; h < iH; h++)
        for (int64_t ow = 0; ow < oW; ow++) {
          real best = -INFINITY;
          int64_t at = -1;
          for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) {
            real v = x[h * iW + w];
            if (v > best || isnan(v)) {
              best = v;
              at = w;
            }
          }
          rb[h * oW + ow] = best;
          rc[h * oW + ow] = at;
        }
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          real best = -INFINITY;
          int64_t at = -1;
          for (int64_t h = t.hs[oh]; h < t.he[oh]; h++) {
            real v = rb[h * oW + ow];
            if ((v > best || isnan(v)) && rc[h * oW + ow] >= 0) {
              best = v;
              at = h * iW + rc[h * oW + ow];
            }
          }
          y[oh * oW + ow] = best;
          yi[oh * oW + ow] = at + 1;
        }
    }
    free(rb);
  }
  free(t.hs);
}

static int NN_(maxpool_backward)(const pool_geom *g, const real *go, real *gi, const int64_t *ind) {
  const int64_t plane = g->iH * g->iW, L = g->oH * g->oW;
  int bad = 0;
  memset(gi, 0, sizeof(real) * g->planes * plane);
#pragma omp parallel for schedule(static) reduction(| : bad) if (g->planes > 1 && g->planes * L >= LT_OMP_THRESHOLD)
  for (int64_t p = 0; p < g->planes; p++) {
    for (int64_t l = 0; l < L; l++) {
      int64_t at = ind[p * L + l] - 1;
      if (at < 0 || at >= plane) {
        bad |= at != -1;  /* -1: an empty window (never happens with valid sizes) */
        continue;
      }
      gi[p * plane + at] += go[p * L + l];
    }
  }
  return bad ? -1 : 0;
}

/* Separably: each image row's sums over the windows' columns (iH x oW), then each output's sum of its
 * window's rows of those; kH + kW additions per output instead of kH * kW. Without memory for the tables,
 * window by window. */
static void NN_(avgpool_forward)(const pool_geom *g, const real *in, real *out, int include_pad) {
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW;
  pool_windows t;
  if (pool_windows_make(&t, g, include_pad)) {
    POOL_FOR_WINDOWS(const real, in, {
      accreal s = 0;
      for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++) s += x[h * iW + w];
      out[o] = (real)(s / pool_divisor(g, oh, ow, include_pad));
    })
    return;
  }
#pragma omp parallel if (g->planes > 1 && g->planes * g->oH * g->oW * g->kH * g->kW >= LT_OMP_THRESHOLD)
  {
    accreal *rs = malloc(sizeof(accreal) * (size_t)(iH * oW));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g->planes; p++) {
      const real *x = in + p * iH * iW;
      real *y = out + p * oH * oW;
      if (!rs) {  /* no scratch on this thread: window by window */
        for (int64_t oh = 0; oh < oH; oh++)
          for (int64_t ow = 0; ow < oW; ow++) {
            accreal s = 0;
            for (int64_t h = t.hs[oh]; h < t.he[oh]; h++)
              for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) s += x[h * iW + w];
            y[oh * oW + ow] = (real)(s / (accreal)(t.dh[oh] * t.dw[ow]));
          }
        continue;
      }
      for (int64_t h = 0; h < iH; h++)
        for (int64_t ow = 0; ow < oW; ow++) {
          accreal s = 0;
          for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) s += x[h * iW + w];
          rs[h * oW + ow] = s;
        }
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          accreal s = 0;
          for (int64_t h = t.hs[oh]; h < t.he[oh]; h++) s += rs[h * oW + ow];
          y[oh * oW + ow] = (real)(s / (accreal)(t.dh[oh] * t.dw[ow]));
        }
    }
    free(rs);
  }
  free(t.hs);
}

/* Separably, the adjoint of the forward: each output's share summed into the image rows of its window
 * (iH x oW), then each of those spread over its window's columns. */
static void NN_(avgpool_backward)(const pool_geom *g, const real *go, real *gi, int include_pad) {
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW;
  memset(gi, 0, sizeof(real) * g->planes * iH * iW);
  pool_windows t;
  if (pool_windows_make(&t, g, include_pad)) {
    POOL_FOR_WINDOWS(real, gi, {
      real v = (real)(go[o] / (accreal)pool_divisor(g, oh, ow, include_pad));
      for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++) x[h * iW + w] += v;
    })
    return;
  }
#pragma omp parallel if (g->planes > 1 && g->planes * g->oH * g->oW * g->kH * g->kW >= LT_OMP_THRESHOLD)
  {
    real *cs = malloc(sizeof(real) * (size_t)(iH * oW));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < g->planes; p++) {
      const real *r = go + p * oH * oW;
      real *x = gi + p * iH * iW;
      if (!cs) {  /* no scratch on this thread: window by window */
        for (int64_t oh = 0; oh < oH; oh++)
          for (int64_t ow = 0; ow < oW; ow++) {
            real v = (real)(r[oh * oW + ow] / (accreal)(t.dh[oh] * t.dw[ow]));
            for (int64_t h = t.hs[oh]; h < t.he[oh]; h++)
              for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) x[h * iW + w] += v;
          }
        continue;
      }
      memset(cs, 0, sizeof(real) * (size_t)(iH * oW));
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          real v = (real)(r[oh * oW + ow] / (accreal)(t.dh[oh] * t.dw[ow]));
          for (int64_t h = t.hs[oh]; h < t.he[oh]; h++) cs[h * oW + ow] += v;
        }
      for (int64_t h = 0; h < iH; h++)
        for (int64_t ow = 0; ow < oW; ow++) {
          real v = cs[h * oW + ow];
          for (int64_t w = t.ws[ow]; w < t.we[ow]; w++) x[h * iW + w] += v;
        }
    }
    free(cs);
  }
  free(t.hs);
}


#endif
