/* data: a sample's draws and resize taps in C (lt_data_plan_draw, see lt_data.h), so that the loader's
 * worker threads plan a sample without the GIL (lt_data_jpeg_sample_drawn, in data_pipeline.c). Each function mirrors one of pytorch_bridge/data/transforms.py, operation
 * for operation on the same IEEE doubles and floats (the tests compare them bit for bit): TorchRNG's
 * draws from the stream's uniforms, random_sized_crop_geometry, short_center_geometry,
 * color_jitter_draws, lighting_rgb and cubic_taps. Compiled without fused multiply-adds, as numpy does
 * each operation on its own. */
#include "lt_internal.h"

#include <math.h>

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

/* The stream: the next uniform, or a note that the caller gave too few (the plan is then abandoned). */
typedef struct dd_stream {
  const double *u;
  int64_t n, used;
  int short_of;
} dd_stream;

static double dd_next(dd_stream *s) {
  if (s->used >= s->n) {
    s->short_of = 1;
    return 0.0;
  }
  return s->u[s->used++];
}

static double dd_uniform(dd_stream *s, double a, double b) { return a + (b - a) * dd_next(s); }

static int64_t dd_random(dd_stream *s, int64_t a, int64_t b) {   /* an integer in [a, b] */
  int64_t n = b - a + 1, k = (int64_t)(dd_next(s) * (double)n);
  return a + (k < n - 1 ? k : n - 1);
}

/* Box-Muller, the cosine half: two uniforms per number. cos and log are called one by one (the same
 * glibc functions Python's math module calls); a volatile keeps the compiler from merging them into
 * other calls. */
static double dd_normal(dd_stream *s, double mean, double std) {
  double u1 = dd_next(s), u2 = dd_next(s);
  volatile double r = sqrt(-2.0 * log(1.0 - u1));
  volatile double c = cos(2.0 * M_PI * u2);
  return mean + std * (r * c);
}

static void dd_randperm(dd_stream *s, int n, int *perm) {   /* Fisher-Yates from the top */
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int64_t j = dd_random(s, 0, i);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

static int64_t dd_c_round(double x) { return x >= 0 ? (int64_t)floor(x + 0.5) : -(int64_t)floor(-x + 0.5); }

typedef struct dd_geometry {
  int64_t x, y, w, h, scaled_w, scaled_h, ox, oy, size;
} dd_geometry;

static dd_geometry dd_short_center(int64_t h, int64_t w, int64_t resize, int64_t size) {
  dd_geometry g = {0, 0, w, h, 0, 0, 0, 0, size};
  if ((w <= h && w == resize) || (h <= w && h == resize)) {
    g.scaled_w = w, g.scaled_h = h;
  } else if (w < h) {
    g.scaled_w = resize, g.scaled_h = (int64_t)((double)h / (double)w * (double)resize);
  } else {
    g.scaled_w = (int64_t)((double)w / (double)h * (double)resize), g.scaled_h = resize;
  }
  g.ox = (int64_t)ceil((double)(g.scaled_w - size) / 2.0);
  g.oy = (int64_t)ceil((double)(g.scaled_h - size) / 2.0);
  return g;
}

static dd_geometry dd_random_sized_crop(int64_t h, int64_t w, int64_t size, double min_area, dd_stream *s) {
  for (int attempt = 0; attempt < 10; attempt++) {
    double target = dd_uniform(s, min_area, 1.0) * (double)(h * w);
    double aspect = dd_uniform(s, 3.0 / 4.0, 4.0 / 3.0);
    int64_t cw = dd_c_round(sqrt(target * aspect)), ch = dd_c_round(sqrt(target / aspect));
    if (dd_uniform(s, 0.0, 1.0) < 0.5) {
      int64_t t = cw;
      cw = ch, ch = t;
    }
    if (ch <= h && cw <= w) {
      int64_t y1 = dd_random(s, 0, h - ch), x1 = dd_random(s, 0, w - cw);
      dd_geometry g = {x1, y1, cw, ch, size, size, 0, 0, size};
      return g;
    }
  }
  return dd_short_center(h, w, size, size);
}

/* cubic_taps(src, dst) for the outputs off .. off + n - 1: 4 indices and float32 weights each. */
static void dd_cubic_taps(int64_t src, int64_t dst, int64_t off, int64_t n, int64_t *idx, float *wts) {
  float scale = dst > 1 ? (float)(src - 1) / (float)(dst - 1) : (float)(src - 1);
  for (int64_t k = 0; k < n; k++) {
    int64_t j = off + k, *ix = idx + 4 * k;
    float *wx = wts + 4 * k;
    for (int t = 0; t < 4; t++) ix[t] = 0, wx[t] = 0;
    if (dst == src || src == 1) {
      ix[0] = dst == src ? j : 0;
      wx[0] = 1;
      continue;
    }
    if (j == dst - 1) {   /* the last sample is copied */
      ix[0] = src - 1;
      wx[0] = 1;
      continue;
    }
    float pos = (float)j * scale;
    int64_t i = (int64_t)pos;
    double x = (double)(pos - (float)i), x3 = x * x * x;
    double w0 = 0.5 * (-x + 2 * x * x - x3);
    double w1 = 0.5 * (2 - 5 * x * x + 3 * x3);
    double w2 = 0.5 * (x + 4 * x * x - 3 * x3);
    double w3 = 0.5 * (-x * x + x3);
    if (i == 0) {   /* p0 = 2 p1 - p2 */
      w1 = w1 + 2 * w0, w2 = w2 - w0, w0 = 0;
    }
    if (i + 2 >= src) {   /* p3 = 2 p2 - p1 */
      w2 = w2 + 2 * w3, w1 = w1 - w3, w3 = 0;
    }
    ix[0] = i - 1 > 0 ? i - 1 : 0, ix[1] = i, ix[2] = i + 1, ix[3] = i + 2 < src - 1 ? i + 2 : src - 1;
    wx[0] = (float)w0, wx[1] = (float)w1, wx[2] = (float)w2, wx[3] = (float)w3;
  }
}

int lt_data_plan_draw(const lt_data_recipe *r, int64_t w, int64_t h, const double *u, int64_t nu, lt_data_plan *p,
                      int64_t *xidx, float *xw, int64_t *yidx, float *yw) {
  if (!r || !p || !xidx || !xw || !yidx || !yw || w < 1 || h < 1 || r->size < 1 || (r->train && (!u || nu < 0)))
    return lt_fail("data: a sample plan needs a recipe, a w x h >= 1 image, uniforms and tap arrays");
  dd_stream s = {u, nu, 0, 0};
  dd_geometry g;
  memset(p, 0, sizeof *p);
  if (r->train) {
    g = dd_random_sized_crop(h, w, r->size, r->min_area, &s);
    int order[3], which[3], n = 0;
    for (int k = 0; k < 3; k++)
      if (r->jitter[k] != 0) which[n++] = k;
    if (n > 0) dd_randperm(&s, n, order);
    for (int k = 0; k < n; k++) {
      int op = which[order[k]];
      p->ops[k] = op;
      p->alpha[k] = 1.0 + dd_uniform(&s, -r->jitter[op], r->jitter[op]);
    }
    p->nops = n;
    if (r->alphastd != 0) {
      double alpha[3];
      for (int k = 0; k < 3; k++) alpha[k] = dd_normal(&s, 0.0, r->alphastd);
      for (int i = 0; i < 3; i++)
        p->light[i] = (float)(r->eigvec[i][0] * alpha[0] * r->eigval[0] + r->eigvec[i][1] * alpha[1] * r->eigval[1] +
                              r->eigvec[i][2] * alpha[2] * r->eigval[2]);
    }
    p->flip = dd_uniform(&s, 0.0, 1.0) < 0.5;
  } else {
    g = dd_short_center(h, w, r->resize, r->size);
  }
  if (s.short_of) return 1;
  if (!(0 <= g.ox && g.ox + g.size <= g.scaled_w && 0 <= g.oy && g.oy + g.size <= g.scaled_h) || g.w < 1 || g.h < 1)
    return 1;   /* outside the scaled box only numpy's slicing defines the window */
  dd_cubic_taps(g.w, g.scaled_w, g.ox, g.size, xidx, xw);
  dd_cubic_taps(g.h, g.scaled_h, g.oy, g.size, yidx, yw);
  p->box_x = g.x, p->box_y = g.y, p->box_w = g.w, p->box_h = g.h;
  p->out_w = p->out_h = g.size;
  p->xidx = xidx, p->xw = xw, p->yidx = yidx, p->yw = yw;
  for (int c = 0; c < 3; c++) p->mean[c] = r->mean[c], p->std[c] = r->std[c];
  p->roi = r->roi;
  return 0;
}

#pragma GCC pop_options
