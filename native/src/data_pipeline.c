/* data: the input pipeline's fast path (see lt_data.h) — JPEG bytes to a normalized float32 sample in
 * its batch slot, for pytorch_bridge/data's worker threads.
 *
 * The resize reproduces transforms.py's float32 arithmetic operation for operation (the taps come from
 * its cubic_taps), so it is compiled without contracting a * b + c into fused multiply-adds; only the
 * colour pass, which works in double, may use them. */
#include "data_internal.h"

#include <pthread.h>
#include <time.h>

/* ---- per-thread scratch buffers, grown on demand and freed when the thread ends ---- */

enum { DP_PIXELS, DP_ROW, DP_TMP, DP_SCALED, DP_TAPS, DP_PLAN_IDX, DP_PLAN_W, DP_WINDOW, DP_NBUF };
typedef struct dp_scratch {
  void *p[DP_NBUF];
  size_t n[DP_NBUF];
} dp_scratch;
static __thread dp_scratch dp_tls;
static pthread_key_t dp_key;
static pthread_once_t dp_once = PTHREAD_ONCE_INIT;

static void dp_free(void *arg) {
  dp_scratch *s = arg;
  for (int k = 0; k < DP_NBUF; k++) {
    free(s->p[k]);
    s->p[k] = NULL;
    s->n[k] = 0;
  }
}

static void dp_make_key(void) { pthread_key_create(&dp_key, dp_free); }

static void *dp_buffer(int which, size_t n) {
  if (dp_tls.n[which] < n) {
    free(dp_tls.p[which]);
    dp_tls.p[which] = malloc(n);
    dp_tls.n[which] = dp_tls.p[which] ? n : 0;
    pthread_once(&dp_once, dp_make_key);
    pthread_setspecific(dp_key, &dp_tls);
  }
  return dp_tls.p[which];
}

static double dp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- decoding ---- */

enum { DP_ROWS_AT_ONCE = 16 };   /* rows asked of libjpeg per call: an iMCU row's worth */

typedef struct dp_rows {
  void (*fn)(void *ctx, int64_t r, const uint8_t *pixels);
  void *ctx;
  double seconds;   /* spent in fn */
} dp_rows;

#ifdef LT_HAVE_JPEG
/* Rows and columns decoded around the box: the chroma upsampling of a pixel next to a cropped or
 * skipped edge would otherwise see that edge as the image's. Measured against full decodes
 * (tests/test_data_fastpath.py): 2 columns are enough, 2 rows are not (4 are; 8 for a margin). */
#define DP_MARGIN_X 2
#define DP_MARGIN_Y 8

static uint8_t *dp_window_room(size_t n) { return dp_buffer(DP_WINDOW, n); }

static int dp_ends_with_eoi(const uint8_t *data, int64_t len) {
  return len >= 4 && data[len - 2] == 0xFF && data[len - 1] == 0xD9;
}

int lt_data_jpeg_info(const uint8_t *data, int64_t len, int64_t *info) {
  if (!data || len <= 0) return lt_fail("data: the JPEG data is empty");
  struct jpeg_decompress_struct cinfo;
  dp_err err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = dp_error_exit;
  err.mgr.output_message = dp_quiet;
  err.mgr.emit_message = dp_emit;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: not a readable JPEG: %s", err.msg);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, (unsigned char *)data, (unsigned long)len);
  jpeg_read_header(&cinfo, TRUE);
  info[0] = cinfo.image_width;
  info[1] = cinfo.image_height;
  info[2] = cinfo.num_components;
  info[3] = cinfo.num_components == 3 && (cinfo.jpeg_color_space == JCS_YCbCr || cinfo.jpeg_color_space == JCS_RGB) &&
            dp_ends_with_eoi(data, len);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

/* Decode rows [y, y + h) and at least columns [x, x + w) as RGB bytes, handing each row of the box to
 * to->fn as libjpeg gives it (a few rows at a time, so they are used while in cache): fn(ctx, r, pixels)
 * gets row y + r, its pixels from column x on. roi = 0 decodes every row and column (the reference the
 * box decode must equal). A JPEG with restart segments (data_restart.c) is first cut to the MCU rows and
 * segments around the box. */
static int dp_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                     dp_rows *to) {
  if (!data || len <= 0) return lt_fail("data: the JPEG data is empty");
  int64_t ox = 0, oy = 0;
  if (roi) {
    const uint8_t *sub;
    int64_t sublen;
    int64_t x0 = x > DP_MARGIN_X ? x - DP_MARGIN_X : 0, y0 = y > DP_MARGIN_Y ? y - DP_MARGIN_Y : 0;
    if (lt_data_jpeg_window(data, len, x0, y0, x + w + DP_MARGIN_X, y + h + DP_MARGIN_Y, dp_window_room, &sub,
                            &sublen, &ox, &oy) == 0) {
      data = sub, len = sublen;
      x -= ox, y -= oy;
    } else {
      ox = oy = 0;
    }
  }
  struct jpeg_decompress_struct cinfo;
  dp_err err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = dp_error_exit;
  err.mgr.output_message = dp_quiet;
  err.mgr.emit_message = dp_emit;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: not a readable JPEG: %s", err.msg);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, (unsigned char *)data, (unsigned long)len);
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.num_components != 3 || (cinfo.jpeg_color_space != JCS_YCbCr && cinfo.jpeg_color_space != JCS_RGB)) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: the JPEG is not 3-channel YCbCr or RGB (%d components); decode it another way",
                   cinfo.num_components);
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  int64_t iw = cinfo.output_width, ih = cinfo.output_height;
  if (x < 0 || y < 0 || w < 1 || h < 1 || x + w > iw || y + h > ih) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: the box (x %lld, y %lld, %lld x %lld) is not inside the %lld x %lld image", (long long)x,
                   (long long)y, (long long)w, (long long)h, (long long)iw, (long long)ih);
  }
  JDIMENSION cx = 0, cw = (JDIMENSION)iw;
  int64_t last = ih;
  if (roi) {
    int64_t left = x > DP_MARGIN_X ? x - DP_MARGIN_X : 0;
    int64_t right = x + w + DP_MARGIN_X < iw ? x + w + DP_MARGIN_X : iw;
    cx = (JDIMENSION)left;
    cw = (JDIMENSION)(right - left);
    if (cx > 0 || (int64_t)cw < iw) jpeg_crop_scanline(&cinfo, &cx, &cw);
    int64_t top = y > DP_MARGIN_Y ? y - DP_MARGIN_Y : 0;
    if (top > 0) jpeg_skip_scanlines(&cinfo, (JDIMENSION)top);
    last = y + h;
  }
  int64_t rowbytes = (int64_t)cinfo.output_width * 3;
  uint8_t *buf = dp_buffer(DP_PIXELS, (size_t)(DP_ROWS_AT_ONCE * rowbytes));
  if (!buf) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: out of memory for a %lld-pixel JPEG row", (long long)cinfo.output_width);
  }
  while ((int64_t)cinfo.output_scanline < last) {
    JSAMPROW rows[DP_ROWS_AT_ONCE];
    int64_t first = (int64_t)cinfo.output_scanline, n = last - first < DP_ROWS_AT_ONCE ? last - first : DP_ROWS_AT_ONCE;
    for (int64_t k = 0; k < n; k++) rows[k] = buf + k * rowbytes;   /* rows above the box are overwritten */
    int64_t got = (int64_t)jpeg_read_scanlines(&cinfo, rows, (JDIMENSION)n);
    double t = dp_now();
    for (int64_t k = 0; k < got; k++)
      if (first + k >= y && first + k < y + h) to->fn(to->ctx, first + k - y, rows[k] + (x - (int64_t)cx) * 3);
    to->seconds += dp_now() - t;
  }
  jpeg_destroy_decompress(&cinfo);   /* also ends a decode stopped before the last row */
  return 0;
}
#else
int lt_data_jpeg_info(const uint8_t *data, int64_t len, int64_t *info) {
  (void)data, (void)len, (void)info;
  return lt_fail("data: this build of luatorch has no JPEG support (install Debian's libjpeg-dev, then reinstall)");
}
static int dp_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                     dp_rows *to) {
  (void)data, (void)len, (void)x, (void)y, (void)w, (void)h, (void)roi, (void)to;
  return lt_data_jpeg_info(NULL, 0, NULL);
}
#endif

typedef struct dp_copy {
  uint8_t *out;
  int64_t w;
} dp_copy;

static void dp_copy_row(void *ctx, int64_t r, const uint8_t *pixels) {
  dp_copy *c = ctx;
  if (c->out) memcpy(c->out + r * c->w * 3, pixels, (size_t)(c->w * 3));
}

int lt_data_jpeg_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                        uint8_t *out) {
  dp_copy c = {out, w};
  dp_rows to = {dp_copy_row, &c, 0};
  return dp_decode(data, len, x, y, w, h, roi, &to) ? -1 : 0;
}

/* ---- resampling: transforms.py's _taps, in the same float32 operations ---- */

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

/* A decoded row as three float planes, byte / 255.0f (numpy's u8 / float32(255), exact division):
 * plane c at P + c * ps, pixel i at [i]. The planes' padding (one float before, at least 32 after) is
 * zero and stays so: the vector tail writes zeros there. */
#if defined(__AVX512F__) && defined(__AVX512VBMI__)
#include <immintrin.h>
static void dp_row_planes(const uint8_t *src, int64_t n, float *P, int64_t ps) {
  /* R0..R15 G0..G15 B0..B15 of 16 interleaved pixels */
  static const uint8_t order[64] = {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 1, 4, 7, 10, 13, 16, 19, 22,
                                     25, 28, 31, 34, 37, 40, 43, 46, 2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 41, 44, 47};   /* then zeros */
  const __m512i idx = _mm512_loadu_si512(order);
  const __m512 d255 = _mm512_set1_ps(255.0f);
  for (int64_t i = 0; i < n; i += 16) {
    int64_t m = n - i < 16 ? n - i : 16;
    __m512i v = _mm512_permutexvar_epi8(idx, _mm512_maskz_loadu_epi8(((__mmask64)1 << (3 * m)) - 1, src + 3 * i));
    _mm512_storeu_ps(P + i, _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(v))), d255));
    _mm512_storeu_ps(P + ps + i,
                     _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(v, 1))), d255));
    _mm512_storeu_ps(P + 2 * ps + i,
                     _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32(v, 2))), d255));
  }
}
#else
static void dp_row_planes(const uint8_t *src, int64_t n, float *P, int64_t ps) {
  for (int c = 0; c < 3; c++)
    for (int64_t i = 0; i < n; i++) P[c * ps + i] = (float)src[3 * i + c] / 255.0f;
}
#endif

/* The x taps of one image, prepared once for all its rows: output x reads plane samples base[x] - 1 ..
 * base[x] + 2. With AVX-512, outputs go 16 at a time: a group whose samples span at most 32 floats
 * (from lo) takes them from two loads with a two-register permute; a wider one (a box over ~1.9 x the
 * output) gathers them. idx and w: per group, the 4 taps' 16 lane indices (relative to lo, or absolute
 * for a gather) and weights; lanes past n have weight 0. */
typedef struct dp_xtaps {
  int64_t n, groups;
  const int32_t *base;
  const float *xw;
  int32_t *lo;      /* groups; INT32_MIN: gather */
  int32_t *idx;     /* groups x 4 x 16 */
  float *w;         /* groups x 4 x 16 */
} dp_xtaps;

static void dp_xtaps_prepare(dp_xtaps *t) {
  for (int64_t g = 0; g < t->groups; g++) {
    int64_t x0 = 16 * g, m = t->n - x0 < 16 ? t->n - x0 : 16;
    int32_t lo = t->base[x0] - 1, hi = lo;
    for (int64_t j = 0; j < m; j++) {
      if (t->base[x0 + j] - 1 < lo) lo = t->base[x0 + j] - 1;
      if (t->base[x0 + j] + 2 > hi) hi = t->base[x0 + j] + 2;
    }
    int gather = hi - lo > 31;
    t->lo[g] = gather ? INT32_MIN : lo;
    for (int k = 0; k < 4; k++)
      for (int64_t j = 0; j < 16; j++) {
        int64_t x = x0 + j;
        t->idx[(g * 4 + k) * 16 + j] = j < m ? t->base[x] - 1 + k - (gather ? 0 : lo) : (gather ? -1 : 0);
        t->w[(g * 4 + k) * 16 + j] = j < m ? t->xw[4 * x + k] : 0.0f;
      }
  }
}

/* One row of each plane along x: d + c * plane gets channel c's n outputs, each t = s0 w0; t += s1 w1;
 * t += s2 w2; t += s3 w3, as transforms.py computes it. */
#ifdef __AVX512F__
#include <immintrin.h>
__attribute__((noinline)) static void dp_row_taps(const float *P, int64_t ps, const dp_xtaps *t, float *d,
                                                  int64_t plane) {
  for (int64_t g = 0; g < t->groups; g++) {
    const int32_t *ix = t->idx + g * 64;
    const float *wg = t->w + g * 64;
    int64_t m = t->n - 16 * g < 16 ? t->n - 16 * g : 16;
    __mmask16 keep = (__mmask16)((1u << m) - 1);
    __m512 w0 = _mm512_loadu_ps(wg), w1 = _mm512_loadu_ps(wg + 16), w2 = _mm512_loadu_ps(wg + 32),
           w3 = _mm512_loadu_ps(wg + 48);
    __m512i i0 = _mm512_loadu_si512(ix), i1 = _mm512_loadu_si512(ix + 16), i2 = _mm512_loadu_si512(ix + 32),
            i3 = _mm512_loadu_si512(ix + 48);
    for (int c = 0; c < 3; c++) {
      const float *s = P + c * ps;
      __m512 v0, v1, v2, v3;
      if (t->lo[g] != INT32_MIN) {
        __m512 a = _mm512_loadu_ps(s + t->lo[g]), b = _mm512_loadu_ps(s + t->lo[g] + 16);
        v0 = _mm512_permutex2var_ps(a, i0, b);
        v1 = _mm512_permutex2var_ps(a, i1, b);
        v2 = _mm512_permutex2var_ps(a, i2, b);
        v3 = _mm512_permutex2var_ps(a, i3, b);
      } else {
        v0 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, i0, s, 4);
        v1 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, i1, s, 4);
        v2 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, i2, s, 4);
        v3 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, i3, s, 4);
      }
      __m512 acc = _mm512_mul_ps(v0, w0);
      acc = _mm512_add_ps(acc, _mm512_mul_ps(v1, w1));
      acc = _mm512_add_ps(acc, _mm512_mul_ps(v2, w2));
      acc = _mm512_add_ps(acc, _mm512_mul_ps(v3, w3));
      _mm512_mask_storeu_ps(d + c * plane + 16 * g, keep, acc);
    }
  }
}
#else
__attribute__((noinline)) static void dp_row_taps(const float *P, int64_t ps, const dp_xtaps *t, float *d,
                                                  int64_t plane) {
  for (int c = 0; c < 3; c++)
    for (int64_t x = 0; x < t->n; x++) {
      const float *q = P + c * ps + t->base[x] - 1, *wx = t->xw + 4 * x;
      float v = q[0] * wx[0];
      v += q[1] * wx[1];
      v += q[2] * wx[2];
      v += q[3] * wx[3];
      d[c * plane + x] = v;
    }
}
#endif

/* One output line from four input lines: t = r0 w0; t += r1 w1; t += r2 w2; t += r3 w3. Returns the
 * line's sum in double (for contrast's mean), taken on the way. */
#ifdef __AVX512F__
__attribute__((noinline)) static double dp_col_taps(const float *r0, const float *r1, const float *r2, const float *r3,
                                                    const float *w, int64_t n, float *d) {
  const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(w[1]), w2 = _mm512_set1_ps(w[2]), w3 = _mm512_set1_ps(w[3]);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t x = 0; x < n; x += 16) {
    __mmask16 m = n - x >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - x)) - 1);
    __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r0 + x), w0);
    t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r1 + x), w1));
    t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r2 + x), w2));
    t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r3 + x), w3));
    _mm512_mask_storeu_ps(d + x, m, t);
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(t)));   /* masked-off lanes are zeros */
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(t, 1)));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}
#else
__attribute__((noinline)) static double dp_col_taps(const float *r0, const float *r1, const float *r2, const float *r3,
                                                    const float *w, int64_t n, float *d) {
  float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, total = 0;   /* eight running sums the compiler can vectorize */
  for (int64_t x = 0; x < n; x++) {
    float t = r0[x] * w0;
    t += r1[x] * w1;
    t += r2[x] * w2;
    t += r3[x] * w3;
    d[x] = t;
    acc[x & 7] += t;
  }
  for (int k = 0; k < 8; k++) total += acc[k];
  return total;
}
#endif

#pragma GCC pop_options

/* The first-but-one tap of each output (relative to column x0): every tap with a non-zero weight must be
 * one of the four consecutive columns around it, as image.scale's bicubic reads them; a zero weight adds
 * nothing whichever (finite) sample it multiplies, so where cubic_taps clamped it to the border, the
 * padded row's neighbour does as well. */
static int dp_tap_bases(const int64_t *idx, const float *w, int64_t n, int64_t x0, int32_t *base) {
  for (int64_t x = 0; x < n; x++) {
    const int64_t *i = idx + 4 * x;
    const float *wx = w + 4 * x;
    int64_t b = (wx[1] == 0 && wx[2] == 0 && wx[3] == 0) ? i[0] + 1 : i[1];
    for (int k = 0; k < 4; k++)
      if (wx[k] != 0 && i[k] != b - 1 + k)
        return lt_fail("data: the taps of output column %lld are not four neighbouring columns", (long long)x);
    base[x] = (int32_t)(b - x0);
  }
  return 0;
}

/* Box-relative tap indices must lie in [0, limit); their range goes to *lo, *hi. */
static int dp_tap_range(const int64_t *idx, int64_t n, int64_t limit, int64_t *lo, int64_t *hi, const char *axis) {
  int64_t a = idx[0], b = idx[0];
  for (int64_t k = 1; k < 4 * n; k++) {
    if (idx[k] < a) a = idx[k];
    if (idx[k] > b) b = idx[k];
  }
  if (a < 0 || b >= limit)
    return lt_fail("data: a %s tap (%lld..%lld) is outside the %lld-pixel box", axis, (long long)a, (long long)b,
                   (long long)limit);
  *lo = a;
  *hi = b;
  return 0;
}

/* ---- colour: jitter, lighting and normalization as out = M x + b ---- */

static const float dp_gray[3] = {0.299f, 0.587f, 0.114f};

static void dp_scale3(double A[3][3], double a[3], double f) {
  for (int i = 0; i < 3; i++) {
    a[i] *= f;
    for (int j = 0; j < 3; j++) A[i][j] *= f;
  }
}

/* The affine map of the ops, in order, on an image whose channel means are mu (for contrast's grey
 * mean). Scalars are rounded to float32 where transforms.py rounds them. */
static void dp_colour_matrix(const lt_data_plan *p, const double mu[3], double M[3][3], double b[3]) {
  double A[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, a[3] = {0, 0, 0};
  for (int k = 0; k < p->nops; k++) {
    double al = (float)p->alpha[k], be = (float)(1.0 - p->alpha[k]);
    if (p->ops[k] == 0) {          /* brightness: blend with black */
      dp_scale3(A, a, al);
    } else if (p->ops[k] == 1) {   /* contrast: blend with the grey image's mean */
      double m = 0;
      for (int i = 0; i < 3; i++) {
        double ci = a[i];
        for (int j = 0; j < 3; j++) ci += A[i][j] * mu[j];
        m += (double)dp_gray[i] * ci;
      }
      float off = (float)be * (float)m;
      dp_scale3(A, a, al);
      for (int i = 0; i < 3; i++) a[i] += (double)off;
    } else {                       /* saturation: blend with each pixel's grey */
      double G[3][3], B[3][3], g[3];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) G[i][j] = (i == j ? al : 0) + be * (double)dp_gray[j];
      for (int i = 0; i < 3; i++) {
        g[i] = 0;
        for (int j = 0; j < 3; j++) {
          B[i][j] = 0;
          for (int l = 0; l < 3; l++) B[i][j] += G[i][l] * A[l][j];
          g[i] += G[i][j] * a[j];
        }
      }
      memcpy(A, B, sizeof A);
      memcpy(a, g, sizeof g);
    }
  }
  for (int i = 0; i < 3; i++) {
    double s = (double)p->std[i];
    b[i] = (a[i] + (double)p->light[i] - (double)p->mean[i]) / s;
    for (int j = 0; j < 3; j++) M[i][j] = A[i][j] / s;
  }
}

#ifdef __AVX512F__
/* 16 pixels of the three planes at once, in double halves; a flipped row's 16 land mirrored. Rows of
 * whole aligned vectors are streamed past the cache: the sample is not read again here, and a store
 * that misses would first read its line (the batch slot is far bigger than the caches). */
static void dp_colour(const float *restrict S, int64_t h, int64_t w, const double M[3][3], const double b[3],
                      int flip, float *restrict out) {
  __m512d m[3][3], o[3];
  for (int i = 0; i < 3; i++) {
    o[i] = _mm512_set1_pd(b[i]);
    for (int j = 0; j < 3; j++) m[i][j] = _mm512_set1_pd(M[i][j]);
  }
  const __m512i rev = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t plane = h * w;
  int stream = w % 16 == 0 && ((uintptr_t)out & 63) == 0;
  for (int64_t y = 0; y < h; y++) {
    const float *s = S + y * w;
    float *d = out + y * w;
    for (int64_t x = 0; x < w; x += 16) {
      int64_t n = w - x < 16 ? w - x : 16;
      __mmask16 mk = (__mmask16)((1u << n) - 1);
      __m512d in[3][2];
      for (int j = 0; j < 3; j++) {
        __m512 v = _mm512_maskz_loadu_ps(mk, s + j * plane + x);
        in[j][0] = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        in[j][1] = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
      }
      for (int i = 0; i < 3; i++) {
        __m512 r = _mm512_setzero_ps();
        for (int half = 0; half < 2; half++) {
          __m512d t = _mm512_fmadd_pd(m[i][0], in[0][half], o[i]);
          t = _mm512_fmadd_pd(m[i][1], in[1][half], t);
          t = _mm512_fmadd_pd(m[i][2], in[2][half], t);
          __m256 f = _mm512_cvtpd_ps(t);
          r = half ? _mm512_insertf32x8(r, f, 1) : _mm512_castps256_ps512(f);
        }
        if (stream)
          _mm512_stream_ps(d + i * plane + (flip ? w - x - 16 : x), flip ? _mm512_permutexvar_ps(rev, r) : r);
        else if (flip)   /* lane k to column w - 1 - (x + k) */
          _mm512_mask_storeu_ps(d + i * plane + w - x - 16, (__mmask16)(mk << (16 - n)), _mm512_permutexvar_ps(rev, r));
        else
          _mm512_mask_storeu_ps(d + i * plane + x, mk, r);
      }
    }
  }
  if (stream) _mm_sfence();   /* the streamed stores are seen before the batch is handed over */
}
#else
static void dp_colour(const float *restrict S, int64_t h, int64_t w, const double M[3][3], const double b[3],
                      int flip, float *restrict out) {
  /* the matrix in locals, so the compiler keeps it in registers and vectorizes over x */
  const double m00 = M[0][0], m01 = M[0][1], m02 = M[0][2], m10 = M[1][0], m11 = M[1][1], m12 = M[1][2];
  const double m20 = M[2][0], m21 = M[2][1], m22 = M[2][2], b0 = b[0], b1 = b[1], b2 = b[2];
  int64_t plane = h * w;
  for (int64_t y = 0; y < h; y++) {
    const float *restrict s0 = S + y * w, *restrict s1 = s0 + plane, *restrict s2 = s1 + plane;
    float *restrict o0 = out + y * w, *restrict o1 = o0 + plane, *restrict o2 = o1 + plane;
    if (flip) {
      for (int64_t x = 0; x < w; x++) {
        double r = s0[x], g = s1[x], bl = s2[x];
        o0[w - 1 - x] = (float)(m00 * r + m01 * g + m02 * bl + b0);
        o1[w - 1 - x] = (float)(m10 * r + m11 * g + m12 * bl + b1);
        o2[w - 1 - x] = (float)(m20 * r + m21 * g + m22 * bl + b2);
      }
    } else {
      for (int64_t x = 0; x < w; x++) {
        double r = s0[x], g = s1[x], bl = s2[x];
        o0[x] = (float)(m00 * r + m01 * g + m02 * bl + b0);
        o1[x] = (float)(m10 * r + m11 * g + m12 * bl + b1);
        o2[x] = (float)(m20 * r + m21 * g + m22 * bl + b2);
      }
    }
  }
}
#endif

/* ---- the sample ---- */

/* The x pass of one decoded row of the box: its planes, then its outputs into row r of tmp's planes. */
typedef struct dp_xpass {
  const dp_xtaps *t;
  float *P;
  int64_t ps, nc;
  float *tmp;
  int64_t ow, plane;
} dp_xpass;

static void dp_xpass_row(void *ctx, int64_t r, const uint8_t *pixels) {
  dp_xpass *c = ctx;
  dp_row_planes(pixels, c->nc, c->P, c->ps);
  dp_row_taps(c->P, c->ps, c->t, c->tmp + r * c->ow, c->plane);
}

int lt_data_jpeg_sample(const uint8_t *data, int64_t len, const lt_data_plan *p, float *out, double *times) {
  int64_t ow = p->out_w, oh = p->out_h;
  if (ow < 1 || oh < 1 || p->box_w < 1 || p->box_h < 1 || !out)
    return lt_fail("data: an empty sample plan (%lld x %lld from a %lld x %lld box)", (long long)ow, (long long)oh,
                   (long long)p->box_w, (long long)p->box_h);
  if (p->nops < 0 || p->nops > 3) return lt_fail("data: %d colour jitter ops (at most 3)", p->nops);
  for (int k = 0; k < p->nops; k++)
    if (p->ops[k] < 0 || p->ops[k] > 2) return lt_fail("data: unknown colour jitter op %d", p->ops[k]);
  int64_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  if (dp_tap_range(p->xidx, ow, p->box_w, &x0, &x1, "column") || dp_tap_range(p->yidx, oh, p->box_h, &y0, &y1, "row"))
    return -1;
  int64_t nc = x1 - x0 + 1, nr = y1 - y0 + 1;
  int64_t ps = (nc + 1 + 32 + 15) / 16 * 16;   /* a plane of the decoded row, padding included */
  int64_t groups = (ow + 15) / 16;
  float *row = dp_buffer(DP_ROW, sizeof(float) * (size_t)(3 * ps + 128 * groups));
  float *tmp = dp_buffer(DP_TMP, sizeof(float) * (size_t)(3 * nr * ow));
  float *S = dp_buffer(DP_SCALED, sizeof(float) * (size_t)(3 * oh * ow));
  int32_t *base = dp_buffer(DP_TAPS, sizeof(int32_t) * (size_t)(ow + 65 * groups));
  if (!row || !tmp || !S || !base)
    return lt_fail("data: out of memory for a %lld x %lld sample", (long long)ow, (long long)oh);
  if (dp_tap_bases(p->xidx, p->xw, ow, x0, base)) return -1;
  dp_xtaps xt = {ow, groups, base, p->xw, base + ow, base + ow + groups, row + 3 * ps};
  dp_xtaps_prepare(&xt);
  memset(row, 0, sizeof(float) * (size_t)(3 * ps));
  dp_xpass xp = {&xt, row + 1, ps, nc, tmp, ow, nr * ow};
  dp_rows to = {dp_xpass_row, &xp, 0};
  double t0 = dp_now();
  if (dp_decode(data, len, p->box_x + x0, p->box_y + y0, nc, nr, p->roi, &to)) return -1;
  double t1 = dp_now();
  double sum[3] = {0, 0, 0};
  for (int c = 0; c < 3; c++) {
    const float *plane = tmp + c * nr * ow;
    for (int64_t y = 0; y < oh; y++) {
      const int64_t *j = p->yidx + y * 4;
      float *d = S + (c * oh + y) * ow;
      sum[c] += dp_col_taps(plane + (j[0] - y0) * ow, plane + (j[1] - y0) * ow, plane + (j[2] - y0) * ow,
                  plane + (j[3] - y0) * ow, p->yw + y * 4, ow, d);
    }
  }
  double t2 = dp_now();

  double mu[3], M[3][3], b[3];
  for (int c = 0; c < 3; c++) mu[c] = sum[c] / (double)(oh * ow);
  dp_colour_matrix(p, mu, M, b);
  dp_colour(S, oh, ow, M, b, p->flip, out);
  if (times) {   /* the x pass ran inside the decode, as its rows came */
    times[0] = t1 - t0 - to.seconds;
    times[1] = t2 - t1 + to.seconds;
    times[2] = dp_now() - t2;
  }
  return 0;
}

/* info, plan and sample in one call; the plan's taps in this thread's scratch. */
int lt_data_jpeg_sample_drawn(const uint8_t *data, int64_t len, const lt_data_recipe *r, const double *u, int64_t nu,
                              float *out, double *times) {
  int64_t info[4];
  if (!r || r->size < 1 || lt_data_jpeg_info(data, len, info) != 0 || !info[3]) return 1;
  int64_t m = 4 * r->size;   /* per axis */
  int64_t *idx = dp_buffer(DP_PLAN_IDX, sizeof(int64_t) * 2 * (size_t)m);
  float *w = dp_buffer(DP_PLAN_W, sizeof(float) * 2 * (size_t)m);
  if (!idx || !w) return lt_fail("data: out of memory for the taps of a %lld-pixel sample", (long long)r->size);
  lt_data_plan p;
  int rc = lt_data_plan_draw(r, info[0], info[1], u, nu, &p, idx, w, idx + m, w + m);
  if (rc) return rc;
  return lt_data_jpeg_sample(data, len, &p, out, times) ? -1 : 0;
}

/* A batch in one call: sample k's stream is drawn here (lt_data_stream_uniforms), so a worker thread
 * leaves Python once per batch. Samples not taken or failed are left to the caller (status 1 / -1). */
int lt_data_jpeg_batch(const lt_data_recipe *r, int64_t n, const uint8_t *const *data, const int64_t *len,
                       uint64_t seed, uint64_t epoch, const int64_t *index, float *out, int64_t slot_floats,
                       int8_t *status, double *times) {
  if (!r || n < 0 || !data || !len || !index || !out || !status || slot_floats != 3 * r->size * r->size)
    return lt_fail("data: a batch call without its arrays, or with slots of %lld floats for %lld-pixel samples",
                   (long long)slot_floats, r ? (long long)r->size : 0LL);
  double u[LT_DATA_UNIFORMS];
  for (int64_t k = 0; k < n; k++) {
    status[k] = 1;
    if (!data[k] || len[k] <= 0 || index[k] < 0) continue;
    int64_t nu = 0;
    if (r->train) {
      lt_data_stream_uniforms(seed, epoch, (uint64_t)index[k], u, LT_DATA_UNIFORMS);
      nu = LT_DATA_UNIFORMS;
    }
    double t[3] = {0, 0, 0};
    int rc = lt_data_jpeg_sample_drawn(data[k], len[k], r, nu ? u : NULL, nu, out + k * slot_floats, times ? t : NULL);
    status[k] = (int8_t)rc;
    if (times && rc == 0)
      for (int i = 0; i < 3; i++) times[i] += t[i];
  }
  return 0;
}
