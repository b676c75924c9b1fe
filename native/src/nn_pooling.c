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

/* The geometry alone, for any element type (the GPU versions' half tensors size their output with it). */
static int pool_geom_shape(pool_geom *g, const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                           int padW, int padH, int ceil_mode) {
  char buf[160];
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

static int pool_geom_init(pool_geom *g, const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                          int padW, int padH, int ceil_mode) {
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  return pool_geom_shape(g, fn, input, kW, kH, dW, dH, padW, padH, ceil_mode);
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

/* The separable passes work on copies of the planes with a border of `fill` (-inf for the max, 0 for the
 * average) wide enough for every window, padding and ceil mode's last window included, so that every window
 * lies wholly inside and the loops have no edge cases: padded row r is image row r - padH, padded column c
 * image column c - padW. The padded width Wp is a multiple of dW, so that the row pass's table (Hp x Wo per
 * plane, Wo = Wp / dW; entry q for the window's columns starting at padded column (q mod Wo) * dW) is one
 * flat loop reading q * dW + kw. A thread takes B planes at a time, one after another in its scratch, and
 * runs each pass as one loop over all of them, because planes of 7x7 or 14x14 are too short for vector
 * loops of their own; the entries past oW and oH of each plane are computed and never read. */
typedef struct pool_layout {
  int64_t Hp, Wp, Wo;  /* one padded plane, and its row pass's table width */
  int64_t B;           /* planes per block */
  int64_t nblocks;     /* blocks of B planes (the last one may have fewer) */
  int64_t np, nq;      /* elements of a block's padded planes (B Hp Wp) and of its tables (B Hp Wo) */
  int64_t slack_p;     /* past the padded planes, for the flat row pass's last reads */
  int64_t slack_q;     /* past the tables, for the flat column pass's (stride 1) last reads */
  int64_t tq;          /* a table with its slack: nq + slack_q */
} pool_layout;

#define POOL_BLOCK_ELEMENTS 16384  /* a block's padded planes: with its tables, well inside L2 */

static pool_layout pool_layout_make(const pool_geom *g) {
  pool_layout L;
  int64_t need_h = (g->oH - 1) * g->dH + g->kH, need_w = (g->oW - 1) * g->dW + g->kW;
  L.Hp = g->padH + g->iH > need_h ? g->padH + g->iH : need_h;
  L.Wp = g->padW + g->iW > need_w ? g->padW + g->iW : need_w;
  L.Wp = (L.Wp + g->dW - 1) / g->dW * g->dW;
  L.Wo = L.Wp / g->dW;
  int64_t per_thread = (g->planes + omp_get_max_threads() - 1) / omp_get_max_threads();
  L.B = POOL_BLOCK_ELEMENTS / (L.Hp * L.Wp);
  if (L.B > per_thread) L.B = per_thread;
  if (L.B < 1) L.B = 1;
  L.nblocks = (g->planes + L.B - 1) / L.B;
  L.np = L.B * L.Hp * L.Wp;
  L.nq = L.B * L.Hp * L.Wo;
  L.slack_p = g->kW;
  L.slack_q = (g->kH - 1) * L.Wo;
  L.tq = L.nq + L.slack_q;
  return L;
}

/* The planes of block blk. */
static inline int64_t pool_block_planes(const pool_geom *g, const pool_layout *L, int64_t blk) {
  int64_t left = g->planes - blk * L->B;
  return left < L->B ? left : L->B;
}

/* The column pass (over each window's rows of the row pass's table) as segments: with stride 1, one flat
 * loop over the block's tables; otherwise one per output row. Segment s reads the table from src (and kH - 1
 * rows of Wo further) and writes n entries from dst, in the tables' layout (plane b, output row oh at
 * b Hp Wo + oh Wo). */
static inline int64_t pool_segments(const pool_geom *g, int64_t planes) { return g->dH == 1 ? 1 : planes * g->oH; }

static inline void pool_segment(const pool_geom *g, const pool_layout *L, int64_t planes, int64_t s, int64_t *dst,
                                int64_t *src, int64_t *n) {
  if (g->dH == 1) {
    *dst = *src = 0;
    *n = planes * L->Hp * L->Wo;
  } else {
    int64_t b = s / g->oH, oh = s % g->oH;
    *dst = b * L->Hp * L->Wo + oh * L->Wo;
    *src = b * L->Hp * L->Wo + oh * g->dH * L->Wo;
    *n = L->Wo;
  }
}

/* The average's divisor along one side, for each output position: the window clipped to the padded image
 * (count_include_pad) or to the image. */
static void pool_divisors(int64_t n, int d, int pad, int k, int64_t in, int include_pad, int64_t *div) {
  for (int64_t o = 0; o < n; o++) {
    int64_t a = o * d - pad, b = a + k;
    if (include_pad) {
      div[o] = (b > in + pad ? in + pad : b) - a;
    } else {
      div[o] = (b > in ? in : b) - (a < 0 ? 0 : a);
    }
  }
}

/* The average's divisors along each side (pool_divisors), rows then columns, in one allocation. */
static int64_t *pool_divisor_tables(const pool_geom *g, int include_pad) {
  int64_t *t = malloc(sizeof(int64_t) * (size_t)(g->oH + g->oW));
  if (!t) return NULL;
  pool_divisors(g->oH, g->dH, g->padH, g->kH, g->iH, include_pad, t);
  pool_divisors(g->oW, g->dW, g->padW, g->kW, g->iW, include_pad, t + g->oH);
  return t;
}

/* For every entry q of a block's row-pass tables, where the window's first column is in the image plane
 * (row * iW + column; outside the image for windows starting in the padding, whose taps there never win):
 * the max's winners are kept as positions in the plane. NULL for want of memory, or when a plane's
 * positions do not fit in 32 bits. */
static int32_t *pool_tap_positions(const pool_geom *g, const pool_layout *L) {
  if (g->iH * g->iW >= INT32_MAX || L->Hp * L->Wp >= INT32_MAX) return NULL;
  int32_t *t = malloc(sizeof(int32_t) * (size_t)L->nq);
  if (!t) return NULL;
  const int64_t plane_q = L->Hp * L->Wo;
  for (int64_t r = 0; r < L->Hp; r++)
    for (int64_t o = 0; o < L->Wo; o++) t[r * L->Wo + o] = (int32_t)((r - g->padH) * g->iW + o * g->dW - g->padW);
  for (int64_t b = 1; b < L->B; b++) memcpy(t + b * plane_q, t, sizeof(int32_t) * (size_t)plane_q);
  return t;
}

/* The scratch of every thread of the coming parallel region, in one allocation: `each` bytes per thread,
 * found by the thread's number; for a kernel that also needs `table`, which is freed here when either
 * allocation failed. */
static void *pool_scratch_with(size_t each, void *table) {
  void *s = table ? malloc(each * (size_t)omp_get_max_threads()) : NULL;
  if (!s) free(table);
  return s;
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

int lt_nn_SpatialPooling_outputSize(const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                                    int padW, int padH, int ceil_mode, int64_t *oH, int64_t *oW) {
  pool_geom g = {0};
  if (!input) return lt_fail("%s: input must be a tensor, got none (a table?)", fn);
  if (pool_geom_shape(&g, fn, input, kW, kH, dW, dH, padW, padH, ceil_mode)) return -1;
  *oH = g.oH;
  *oW = g.oW;
  return 0;
}

int lt_nn_SpatialMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW, int kH,
                                         int dW, int dH, int padW, int padH, int ceil_mode) {
  NN_NEED(input);
  static const char fn[] = "SpatialMaxPooling_updateOutput";
  pool_call c;
  if (pool_begin(&c, fn, input, NULL, kW, kH, dW, dH, padW, padH, ceil_mode)) return pool_end(&c, -1);
  if (nn_check_float(output, input->type, fn, "output")) return pool_end(&c, -1);
  if (lt_host_type(indices->type) != LT_LONG) return pool_end(&c, lt_fail("%s: indices must be a LongTensor", fn));
  if (pool_resize(output, input, &c.g) || pool_resize(indices, input, &c.g)) return pool_end(&c, -1);
  if (c.g.iH * c.g.iW >= INT32_MAX)
    return pool_end(&c, lt_fail("%s: planes of 2^31 elements or more are not supported", fn));
  if (NN_CALL(input->type, maxpool_forward, &c.g, c.in, lt_tensor_data(output), lt_tensor_data(indices)))
    return pool_end(&c, lt_fail("%s: out of memory for the pooling tables", fn));
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
  if (NN_CALL(input->type, avgpool_forward, &c.g, c.in, lt_tensor_data(output), count_include_pad))
    return pool_end(&c, lt_fail("%s: out of memory for the pooling tables", fn));
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
  if (NN_CALL(input->type, avgpool_backward, &c.g, c.go, lt_tensor_data(gradInput), count_include_pad))
    return pool_end(&c, lt_fail("%s: out of memory for the pooling tables", fn));
  return pool_end(&c, 0);
}

#else /* ---------------------------------------------- generic part (real) */

/* Planes run in parallel when there is enough work. */
#define POOL_PARALLEL_IF (g->planes > 1 && g->planes * g->oH * g->oW * g->kH * g->kW >= LT_OMP_THRESHOLD)

/* Planes x (iH x iW each, `planes` of them) into the block's padded planes xp, `fill` around each and in
 * the slack after them (pool_layout). */
static void NN_(pool_pad_planes)(const pool_geom *g, const pool_layout *L, const real *x, int64_t planes, real *xp,
                                 real fill) {
  const int64_t Wp = L->Wp, plane = L->Hp * Wp;
  for (int64_t b = 0; b < planes; b++, x += g->iH * g->iW) {
    real *P = xp + b * plane;
    for (int64_t i = 0; i < g->padH * Wp; i++) P[i] = fill;
    for (int64_t h = 0; h < g->iH; h++) {
      real *row = P + (g->padH + h) * Wp;
      for (int64_t c = 0; c < g->padW; c++) row[c] = fill;
      memcpy(row + g->padW, x + h * g->iW, sizeof(real) * (size_t)g->iW);
      for (int64_t c = g->padW + g->iW; c < Wp; c++) row[c] = fill;
    }
    for (int64_t i = (g->padH + g->iH) * Wp; i < plane; i++) P[i] = fill;
  }
  for (int64_t i = planes * plane; i < planes * plane + L->slack_p; i++) xp[i] = fill;
}

/* A window's maximum as Torch7 takes it, scanning rows then columns: the first maximum wins, a NaN
 * propagates (the last NaN wins); an all -inf window keeps index 0. Separably, with the same result: over
 * each window's columns for every padded row (the row's winner and where it is in the image plane), then
 * the same rule over the window's rows of those. The padding is -inf, which never wins. Branch-free loops,
 * which the compiler vectorizes. Fails only for want of scratch memory. */
static int NN_(maxpool_forward)(const pool_geom *g, const real *in, real *out, int64_t *ind) {
  const pool_layout L = pool_layout_make(g);
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW, Wo = L.Wo, plane_q = L.Hp * L.Wo;
  const int kW = g->kW, kH = g->kH, dW = g->dW;
  size_t each = (sizeof(real) * (size_t)(L.np + L.slack_p + L.tq + L.nq) + sizeof(int32_t) * (size_t)(L.tq + L.nq)
                 + 63) & ~(size_t)63;
  int32_t *at0 = pool_tap_positions(g, &L);
  char *scratch = pool_scratch_with(each, at0);
  if (!scratch) return -1;
#pragma omp parallel for schedule(static) if (POOL_PARALLEL_IF)
  for (int64_t blk = 0; blk < L.nblocks; blk++) {
    real *restrict xp = (real *)(scratch + each * (size_t)omp_get_thread_num());
    real *restrict rb = xp + L.np + L.slack_p;     /* each padded row's maximum over window q's columns */
    real *restrict yb = rb + L.tq;                 /* the maximum over the window's rows of those */
    int32_t *restrict rc = (int32_t *)(yb + L.nq); /* rb's winner in the image plane, -1 for none */
    int32_t *restrict kt = rc + L.tq;              /* yb's winner in the image plane, -1 for none */
    const int64_t p0 = blk * L.B, planes = pool_block_planes(g, &L, blk), nq = planes * plane_q;
    NN_(pool_pad_planes)(g, &L, in + p0 * iH * iW, planes, xp, -INFINITY);
    /* the stride-1 column pass reads kH - 1 rows past the block's tables, for entries never used */
    for (int64_t q = nq; q < nq + L.slack_q; q++) {
      rb[q] = -INFINITY;
      rc[q] = -1;
    }
    for (int64_t q = 0; q < nq; q++) {
      real v = xp[q * dW];
      rb[q] = v;
      rc[q] = v > -INFINITY || v != v ? at0[q] : -1;
    }
    for (int kw = 1; kw < kW; kw++) {
      const real *restrict xs = xp + kw;
      for (int64_t q = 0; q < nq; q++) {
        real v = xs[q * dW], b = rb[q];
        int take = v > b || v != v;
        rb[q] = take ? v : b;
        rc[q] = take ? at0[q] + kw : rc[q];
      }
    }
    for (int64_t s = 0, nseg = pool_segments(g, planes); s < nseg; s++) {
      int64_t dst, src, n;
      pool_segment(g, &L, planes, s, &dst, &src, &n);
      real *restrict y = yb + dst;
      int32_t *restrict k = kt + dst;
      memcpy(y, rb + src, sizeof(real) * (size_t)n);
      memcpy(k, rc + src, sizeof(int32_t) * (size_t)n);
      for (int kh = 1; kh < kH; kh++) {
        const real *restrict r = rb + src + kh * Wo;
        const int32_t *restrict c = rc + src + kh * Wo;
        for (int64_t i = 0; i < n; i++) {
          real v = r[i], b = y[i];
          int take = v > b || v != v;
          y[i] = take ? v : b;
          k[i] = take ? c[i] : k[i];
        }
      }
    }
    for (int64_t b = 0; b < planes; b++) {
      real *restrict y = out + (p0 + b) * oH * oW;
      int64_t *restrict yi = ind + (p0 + b) * oH * oW;
      for (int64_t oh = 0; oh < oH; oh++) {
        const int64_t t = b * plane_q + oh * Wo;
        memcpy(y + oh * oW, yb + t, sizeof(real) * (size_t)oW);
        for (int64_t ow = 0; ow < oW; ow++) yi[oh * oW + ow] = (int64_t)kt[t + ow] + 1;
      }
    }
  }
  free(scratch);
  free(at0);
  return 0;
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

/* Separably, on the zero-padded planes: each padded row's sums over the windows' columns, then each output's
 * sum of its window's rows of those; kH + kW additions per output instead of kH * kW, in the order of a
 * window-by-window sum (the padding's zeros change no sum). Fails only for want of scratch memory. */
static int NN_(avgpool_forward)(const pool_geom *g, const real *in, real *out, int include_pad) {
  const pool_layout L = pool_layout_make(g);
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW, Wo = L.Wo, plane_q = L.Hp * L.Wo;
  const int kW = g->kW, kH = g->kH, dW = g->dW;
  size_t each = (sizeof(real) * (size_t)(L.np + L.slack_p) + sizeof(accreal) * (size_t)(L.tq + L.nq) + 63)
                & ~(size_t)63;
  int64_t *div = pool_divisor_tables(g, include_pad);
  char *scratch = pool_scratch_with(each, div);
  if (!scratch) return -1;
  const int64_t *dh = div, *dw = div + oH;
#pragma omp parallel for schedule(static) if (POOL_PARALLEL_IF)
  for (int64_t blk = 0; blk < L.nblocks; blk++) {
    real *restrict xp = (real *)(scratch + each * (size_t)omp_get_thread_num());
    accreal *restrict rs = (accreal *)(xp + L.np + L.slack_p), *restrict acc = rs + L.tq;
    const int64_t p0 = blk * L.B, planes = pool_block_planes(g, &L, blk), nq = planes * plane_q;
    NN_(pool_pad_planes)(g, &L, in + p0 * iH * iW, planes, xp, 0);
    /* the stride-1 column pass reads kH - 1 rows past the block's tables, for entries never used */
    for (int64_t q = nq; q < nq + L.slack_q; q++) rs[q] = 0;
    for (int64_t q = 0; q < nq; q++) rs[q] = xp[q * dW];
    for (int kw = 1; kw < kW; kw++) {
      const real *restrict xs = xp + kw;
      for (int64_t q = 0; q < nq; q++) rs[q] += xs[q * dW];
    }
    for (int64_t s = 0, nseg = pool_segments(g, planes); s < nseg; s++) {
      int64_t dst, src, n;
      pool_segment(g, &L, planes, s, &dst, &src, &n);
      accreal *restrict a = acc + dst;
      const accreal *r0 = rs + src;
      for (int64_t i = 0; i < n; i++) a[i] = r0[i];
      for (int kh = 1; kh < kH; kh++) {
        const accreal *restrict r = r0 + kh * Wo;
        for (int64_t i = 0; i < n; i++) a[i] += r[i];
      }
    }
    for (int64_t b = 0; b < planes; b++) {
      real *restrict y = out + (p0 + b) * oH * oW;
      for (int64_t oh = 0; oh < oH; oh++) {
        const accreal *a = acc + b * plane_q + oh * Wo;
        for (int64_t ow = 0; ow < oW; ow++) y[oh * oW + ow] = (real)(a[ow] / (accreal)(dh[oh] * dw[ow]));
      }
    }
  }
  free(scratch);
  free(div);
  return 0;
}

/* Separably, the adjoint of the forward: each output's share summed into the padded rows of its window,
 * then each of those spread over its window's columns of the padded planes, whose image part is the
 * gradient. A gradient element receives its shares in the order of a window-by-window loop (the offsets
 * run backwards so that the windows run forwards; the tables' unused entries are zeros, which change no
 * sum). Fails only for want of scratch memory. */
static int NN_(avgpool_backward)(const pool_geom *g, const real *go, real *gi, int include_pad) {
  const pool_layout L = pool_layout_make(g);
  const int64_t iH = g->iH, iW = g->iW, oH = g->oH, oW = g->oW, Wo = L.Wo, Wp = L.Wp, plane_q = L.Hp * L.Wo;
  const int kW = g->kW, kH = g->kH, dW = g->dW;
  size_t each = (sizeof(real) * (size_t)(L.np + L.slack_p + L.tq + L.nq) + 63) & ~(size_t)63;
  int64_t *div = pool_divisor_tables(g, include_pad);
  char *scratch = pool_scratch_with(each, div);
  if (!scratch) return -1;
  const int64_t *dh = div, *dw = div + oH;
#pragma omp parallel for schedule(static) if (POOL_PARALLEL_IF)
  for (int64_t blk = 0; blk < L.nblocks; blk++) {
    real *restrict gp = (real *)(scratch + each * (size_t)omp_get_thread_num());
    real *restrict cs = gp + L.np + L.slack_p, *restrict v = cs + L.tq;
    const int64_t p0 = blk * L.B, planes = pool_block_planes(g, &L, blk), nq = planes * plane_q;
    memset(gp, 0, sizeof(real) * (size_t)(L.np + L.slack_p + L.tq + L.nq));
    for (int64_t b = 0; b < planes; b++) {
      const real *r = go + (p0 + b) * oH * oW;
      for (int64_t oh = 0; oh < oH; oh++) {
        real *vr = v + b * plane_q + oh * Wo;
        for (int64_t ow = 0; ow < oW; ow++) vr[ow] = (real)(r[oh * oW + ow] / (accreal)(dh[oh] * dw[ow]));
      }
    }
    for (int64_t s = 0, nseg = pool_segments(g, planes); s < nseg; s++) {
      int64_t dst, src, n;
      pool_segment(g, &L, planes, s, &dst, &src, &n);
      const real *restrict a = v + dst;
      for (int kh = kH - 1; kh >= 0; kh--) {
        real *restrict c = cs + src + kh * Wo;
        for (int64_t i = 0; i < n; i++) c[i] += a[i];
      }
    }
    for (int kw = kW - 1; kw >= 0; kw--) {
      real *restrict gs = gp + kw;
      for (int64_t q = 0; q < nq; q++) gs[q * dW] += cs[q];
    }
    for (int64_t b = 0; b < planes; b++) {
      real *x = gi + (p0 + b) * iH * iW;
      const real *P = gp + b * L.Hp * Wp;
      for (int64_t h = 0; h < iH; h++) memcpy(x + h * iW, P + (g->padH + h) * Wp + g->padW, sizeof(real) * (size_t)iW);
    }
  }
  free(scratch);
  free(div);
  return 0;
}

#undef POOL_PARALLEL_IF

#endif
