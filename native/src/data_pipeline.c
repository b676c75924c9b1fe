/* data: the input pipeline's fast path (see lt_data.h) — JPEG bytes to a normalized float32 sample in
 * its batch slot, for pytorch_bridge/data's worker threads.
 *
 * The resize reproduces transforms.py's float32 arithmetic operation for operation (the taps come from
 * its cubic_taps), so it is compiled without contracting a * b + c into fused multiply-adds; only the
 * colour pass, which works in double, may use them. */
#include "lt_internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <time.h>
#ifdef LT_HAVE_JPEG
#include <jpeglib.h>
#include <jerror.h>
#endif

/* ---- per-thread scratch buffers, grown on demand and freed when the thread ends ---- */

enum { DP_PIXELS, DP_ROW, DP_TMP, DP_SCALED, DP_TAPS, DP_PLAN_IDX, DP_PLAN_W, DP_NBUF };
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

#ifdef LT_HAVE_JPEG
/* Rows and columns decoded around the box: the chroma upsampling of a pixel next to a cropped or
 * skipped edge would otherwise see that edge as the image's. Measured against full decodes
 * (tests/test_data_fastpath.py): 2 columns are enough, 2 rows are not (4 are; 8 for a margin). */
#define DP_MARGIN_X 2
#define DP_MARGIN_Y 8

typedef struct dp_err {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
} dp_err;

static void dp_error_exit(j_common_ptr cinfo) {
  dp_err *e = (dp_err *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jump, 1);
}

static void dp_quiet(j_common_ptr cinfo) { (void)cinfo; }

/* Corrupt-data warnings are errors here: the record goes to the fallback decoder, which decides. */
static void dp_emit(j_common_ptr cinfo, int level) {
  if (level < 0) {
    dp_err *e = (dp_err *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->msg);
    longjmp(e->jump, 1);
  }
}

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

/* Decode rows [y, y + h) and at least columns [x, x + w) as RGB bytes into the thread's pixel buffer:
 * *pix row r is image row y + r, its first pixel image column *xbase, rows *stride bytes apart.
 * roi = 0 decodes every row and column (the reference the box decode must equal). */
static int dp_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                     uint8_t **pix, int64_t *stride, int64_t *xbase) {
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
  uint8_t *buf = dp_buffer(DP_PIXELS, (size_t)((h + 1) * rowbytes));
  if (!buf) {
    jpeg_destroy_decompress(&cinfo);
    return lt_fail("data: out of memory for a %lld x %lld JPEG box", (long long)w, (long long)h);
  }
  uint8_t *junk = buf + h * rowbytes;   /* rows outside the box */
  while ((int64_t)cinfo.output_scanline < last) {
    int64_t r = (int64_t)cinfo.output_scanline - y;
    JSAMPROW row = r >= 0 && r < h ? buf + r * rowbytes : junk;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_destroy_decompress(&cinfo);   /* also ends a decode stopped before the last row */
  *pix = buf;
  *stride = rowbytes;
  *xbase = cx;
  return 0;
}
#else
int lt_data_jpeg_info(const uint8_t *data, int64_t len, int64_t *info) {
  (void)data, (void)len, (void)info;
  return lt_fail("data: this build of luatorch has no JPEG support (install Debian's libjpeg-dev, then reinstall)");
}
static int dp_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                     uint8_t **pix, int64_t *stride, int64_t *xbase) {
  (void)data, (void)len, (void)x, (void)y, (void)w, (void)h, (void)roi, (void)pix, (void)stride, (void)xbase;
  return lt_data_jpeg_info(NULL, 0, NULL);
}
#endif

int lt_data_jpeg_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                        uint8_t *out) {
  uint8_t *pix;
  int64_t stride, xbase;
  if (dp_decode(data, len, x, y, w, h, roi, &pix, &stride, &xbase)) return -1;
  if (out)
    for (int64_t r = 0; r < h; r++) memcpy(out + r * w * 3, pix + r * stride + (x - xbase) * 3, (size_t)(w * 3));
  return 0;
}

/* ---- resampling: transforms.py's _taps, in the same float32 operations ---- */

#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

/* One row along x, the three channels at once: s holds interleaved RGB floats with one pixel before and
 * five after (zeros), so the four taps of output x are the pixels base[x] - 1 .. base[x] + 2; planes
 * `plane` floats apart get the results. wide: per output, its weights spread over 16 lanes as
 * w0 w0 w0 w1 w1 w1 w2 w2 w2 w3 w3 w3 0 0 0 0 (dp_wide_weights); line: 3 n floats of scratch. */
#ifdef __AVX512F__
#include <immintrin.h>
/* One vector per output: the 12 samples times their weights, then lanes 3-5, 6-8 and 9-11 moved onto
 * 0-2 and added in that order, which is the scalar t = s0 w0; t += s1 w1; t += s2 w2; t += s3 w3. */
__attribute__((noinline)) static void dp_row_taps(const float *s, const int32_t *base, const float *wide, int64_t n,
                                                  float *line, float *d, int64_t plane) {
  static const int32_t k3[16] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2};
  static const int32_t k6[16] = {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5};
  static const int32_t k9[16] = {9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  const __m512i i3 = _mm512_loadu_si512(k3), i6 = _mm512_loadu_si512(k6), i9 = _mm512_loadu_si512(k9);
  for (int64_t x = 0; x < n; x++) {
    __m512 v = _mm512_loadu_ps(s + 3 * ((int64_t)base[x] - 1));
    __m512 pr = _mm512_mul_ps(v, _mm512_loadu_ps(wide + 16 * x));
    __m512 t = _mm512_add_ps(pr, _mm512_permutexvar_ps(i3, pr));
    t = _mm512_add_ps(t, _mm512_permutexvar_ps(i6, pr));
    t = _mm512_add_ps(t, _mm512_permutexvar_ps(i9, pr));
    _mm512_mask_storeu_ps(line + 3 * x, 0x7, t);
  }
  for (int64_t x = 0; x < n; x++) {
    d[x] = line[3 * x];
    d[plane + x] = line[3 * x + 1];
    d[2 * plane + x] = line[3 * x + 2];
  }
}
#else
__attribute__((noinline)) static void dp_row_taps(const float *s, const int32_t *base, const float *wide, int64_t n,
                                                  float *line, float *d, int64_t plane) {
  (void)line;
  for (int64_t x = 0; x < n; x++) {
    const float *q = s + 3 * ((int64_t)base[x] - 1), *wx = wide + 16 * x;
    for (int c = 0; c < 3; c++) {
      float t = q[c] * wx[0];
      t += q[3 + c] * wx[3];
      t += q[6 + c] * wx[6];
      t += q[9 + c] * wx[9];
      d[c * plane + x] = t;
    }
  }
}
#endif

static void dp_wide_weights(const float *w, int64_t n, float *wide) {
  for (int64_t x = 0; x < n; x++) {
    for (int k = 0; k < 4; k++)
      for (int c = 0; c < 3; c++) wide[16 * x + 3 * k + c] = w[4 * x + k];
    for (int l = 12; l < 16; l++) wide[16 * x + l] = 0;
  }
}

/* One output line from four input lines: t = r0 w0; t += r1 w1; t += r2 w2; t += r3 w3. */
__attribute__((noinline)) static void dp_col_taps(const float *r0, const float *r1, const float *r2, const float *r3, const float *w,
                        int64_t n, float *d) {
  float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  for (int64_t x = 0; x < n; x++) {
    float t = r0[x] * w0;
    t += r1[x] * w1;
    t += r2[x] * w2;
    t += r3[x] * w3;
    d[x] = t;
  }
}

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

/* Sum of a row in double, eight running sums (independent chains the compiler can vectorize). */
static double dp_row_sum(const float *d, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, total = 0;
  int64_t x = 0;
  for (; x + 8 <= n; x += 8)
    for (int k = 0; k < 8; k++) acc[k] += d[x + k];
  for (; x < n; x++) total += d[x];
  for (int k = 0; k < 8; k++) total += acc[k];
  return total;
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

/* ---- the sample ---- */

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
  double t0 = dp_now();
  uint8_t *pix;
  int64_t stride, xbase;
  int64_t nc = x1 - x0 + 1, nr = y1 - y0 + 1;
  if (dp_decode(data, len, p->box_x + x0, p->box_y + y0, nc, nr, p->roi, &pix, &stride, &xbase)) return -1;
  double t1 = dp_now();

  float *row = dp_buffer(DP_ROW, sizeof(float) * (size_t)(3 * (nc + 6) + 3 * ow + 16 * ow));
  float *tmp = dp_buffer(DP_TMP, sizeof(float) * (size_t)(3 * nr * ow));
  float *S = dp_buffer(DP_SCALED, sizeof(float) * (size_t)(3 * oh * ow));
  int32_t *base = dp_buffer(DP_TAPS, sizeof(int32_t) * (size_t)ow);
  if (!row || !tmp || !S || !base)
    return lt_fail("data: out of memory for a %lld x %lld sample", (long long)ow, (long long)oh);
  if (dp_tap_bases(p->xidx, p->xw, ow, x0, base)) return -1;
  float *line = row + 3 * (nc + 6), *wide = line + 3 * ow;
  dp_wide_weights(p->xw, ow, wide);
  /* row: one zero pixel, the nc decoded pixels as interleaved floats, five zero pixels (a last-sample
   * copy has its base one past that sample, and the vector loads read 16 floats) */
  memset(row, 0, sizeof(float) * 3);
  memset(row + 3 * (nc + 1), 0, sizeof(float) * 15);
  for (int64_t r = 0; r < nr; r++) {
    const uint8_t *src = pix + r * stride + (p->box_x + x0 - xbase) * 3;
    for (int64_t i = 0; i < 3 * nc; i++) row[3 + i] = (float)src[i] / 255.0f;   /* numpy's u8 / float32(255) */
    dp_row_taps(row + 3, base, wide, ow, line, tmp + r * ow, nr * ow);
  }
  double sum[3] = {0, 0, 0};
  for (int c = 0; c < 3; c++) {
    const float *plane = tmp + c * nr * ow;
    for (int64_t y = 0; y < oh; y++) {
      const int64_t *j = p->yidx + y * 4;
      float *d = S + (c * oh + y) * ow;
      dp_col_taps(plane + (j[0] - y0) * ow, plane + (j[1] - y0) * ow, plane + (j[2] - y0) * ow,
                  plane + (j[3] - y0) * ow, p->yw + y * 4, ow, d);
      sum[c] += dp_row_sum(d, ow);
    }
  }
  double t2 = dp_now();

  double mu[3], M[3][3], b[3];
  for (int c = 0; c < 3; c++) mu[c] = sum[c] / (double)(oh * ow);
  dp_colour_matrix(p, mu, M, b);
  dp_colour(S, oh, ow, M, b, p->flip, out);
  if (times) {
    times[0] = t1 - t0;
    times[1] = t2 - t1;
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
