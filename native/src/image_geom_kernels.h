/* Generic body of image_geom.c (see image_generic.h): resampling kernels for one element type. */

/* A computed value stored into an element: bytes round to nearest and saturate. */
static inline real IM_(store)(temp_t x) {
#if IM_IS_BYTE
  x += 0.5f;
  if (x <= 0) return 0;
  if (x >= 255) return 255;
#endif
  return (real)x;
}

#define AT(v, k, y, x) (((real *)(v).data)[(k) * (v).sc + (y) * (v).sh + (x) * (v).sw])

/* One row or column, linear: upsampling interpolates between the two nearest samples (ends
 * aligned), downsampling averages the source interval each output covers (partial samples weighted). */
static void IM_(linear_line)(const real *s, int64_t ss, int64_t sn, real *d, int64_t ds, int64_t dn) {
  if (dn == sn) {
    for (int64_t i = 0; i < dn; i++) d[i * ds] = s[i * ss];
  } else if (dn > sn) {
    if (sn == 1) {
      for (int64_t i = 0; i < dn; i++) d[i * ds] = s[0];
      return;
    }
    float step = (float)(sn - 1) / (float)(dn - 1);
    for (int64_t i = 0; i < dn - 1; i++) {
      float pos = (float)i * step;
      int64_t p = (int64_t)pos;
      float f = pos - (float)p;
      d[i * ds] = IM_(store)((1 - f) * (temp_t)s[p * ss] + f * (temp_t)s[(p + 1) * ss]);
    }
    d[(dn - 1) * ds] = s[(sn - 1) * ss];
  } else {
    float step = (float)sn / (float)dn;
    int64_t p0 = 0;
    float f0 = 0;
    for (int64_t i = 0; i < dn; i++) {
      float end = (float)(i + 1) * step;
      int64_t p1 = (int64_t)end;
      float f1 = end - (float)p1;
      temp_t sum = (1 - f0) * (temp_t)s[p0 * ss];
      float weight = 1 - f0;
      for (int64_t p = p0 + 1; p < p1; p++) {
        sum += (temp_t)s[p * ss];
        weight += 1;
      }
      if (p1 < sn) {
        sum += f1 * (temp_t)s[p1 * ss];
        weight += f1;
      }
      d[i * ds] = IM_(store)(sum / weight);
      p0 = p1;
      f0 = f1;
    }
  }
}

/* Catmull-Rom through p1..p2 at t in [0, 1). */
static inline temp_t IM_(cubic)(temp_t p0, temp_t p1, temp_t p2, temp_t p3, temp_t t) {
  return p1 + (temp_t)0.5 * t * ((p2 - p0) + t * ((2 * p0 - 5 * p1 + 4 * p2 - p3) + t * (3 * (p1 - p2) + p3 - p0)));
}

/* One row or column, cubic, ends aligned; the samples beyond the ends are extrapolated linearly. */
static void IM_(cubic_line)(const real *s, int64_t ss, int64_t sn, real *d, int64_t ds, int64_t dn) {
  if (dn == sn) {
    for (int64_t i = 0; i < dn; i++) d[i * ds] = s[i * ss];
    return;
  }
  if (sn == 1) {
    for (int64_t i = 0; i < dn; i++) d[i * ds] = s[0];
    return;
  }
  float step = dn == 1 ? (float)(sn - 1) : (float)(sn - 1) / (float)(dn - 1);
  for (int64_t i = 0; i < dn - 1; i++) {
    float pos = (float)i * step;
    int64_t p = (int64_t)pos;
    float f = pos - (float)p;
    temp_t p1 = s[p * ss], p2 = s[(p + 1) * ss];
    temp_t p0 = p > 0 ? (temp_t)s[(p - 1) * ss] : 2 * p1 - p2;
    temp_t p3 = p + 2 < sn ? (temp_t)s[(p + 2) * ss] : 2 * p2 - p1;
    d[i * ds] = IM_(store)(IM_(cubic)(p0, p1, p2, p3, f));
  }
  d[(dn - 1) * ds] = s[(sn - 1) * ss];
}

/* Separable scaling: rows into a (src height x dst width) buffer of the element type, then columns. */
static int IM_(scale_separable)(im_view d, im_view s, int cubic) {
  real *tmp = malloc(sizeof(real) * (size_t)(s.h * d.w > 0 ? s.h * d.w : 1));
  if (!tmp) return lt_fail("image.scale: out of memory");
  void (*line)(const real *, int64_t, int64_t, real *, int64_t, int64_t) =
      cubic ? IM_(cubic_line) : IM_(linear_line);
  for (int64_t k = 0; k < s.c; k++) {
    const real *sp = (const real *)s.data + k * s.sc;
    real *dp = (real *)d.data + k * d.sc;
    int64_t lt_rows = s.h;
#pragma omp parallel for schedule(static) if (lt_rows * d.w >= IM_OMP_PIXELS)
    for (int64_t y = 0; y < lt_rows; y++) line(sp + y * s.sh, s.sw, s.w, tmp + y * d.w, 1, d.w);
#pragma omp parallel for schedule(static) if (s.h * d.w >= IM_OMP_PIXELS)
    for (int64_t x = 0; x < d.w; x++) line(tmp + x, d.w, s.h, dp + x * d.sw, d.sh, d.h);
  }
  free(tmp);
  return 0;
}

/* Nearest: the source pixel at floor(i * src/dst). */
static int IM_(scale_simple)(im_view d, im_view s) {
  float fx = (float)s.w / (float)d.w, fy = (float)s.h / (float)d.h;
#pragma omp parallel for schedule(static) if (d.h * d.w >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < d.h; y++) {
    int64_t sy = (int64_t)((float)y * fy);
    if (sy > s.h - 1) sy = s.h - 1;
    for (int64_t x = 0; x < d.w; x++) {
      int64_t sx = (int64_t)((float)x * fx);
      if (sx > s.w - 1) sx = s.w - 1;
      for (int64_t k = 0; k < s.c; k++) AT(d, k, y, x) = AT(s, k, sy, sx);
    }
  }
  return 0;
}

static int IM_(scale)(im_view d, im_view s, int mode) {
  if (mode == LT_IMAGE_SIMPLE) return IM_(scale_simple)(d, s);
  return IM_(scale_separable)(d, s, mode == LT_IMAGE_BICUBIC);
}

/* Rotation about the image centre; destination pixels whose source falls outside are 0. */
static int IM_(rotate)(im_view d, im_view s, double theta, int mode) {
  float xc = (float)(s.w - 1) / 2.0f, yc = (float)(s.h - 1) / 2.0f;
  float ct = (float)cos(theta), st = (float)sin(theta);
#pragma omp parallel for schedule(static) if (d.h * d.w >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < d.h; y++) {
    for (int64_t x = 0; x < d.w; x++) {
      float rx = ct * ((float)x - xc) - st * ((float)y - yc);
      float ry = ct * ((float)y - yc) + st * ((float)x - xc);
      if (mode == LT_IMAGE_SIMPLE) {
        int64_t sx = (int64_t)roundf(rx + xc), sy = (int64_t)roundf(ry + yc);
        int inside = sx >= 0 && sy >= 0 && sx < s.w && sy < s.h;
        for (int64_t k = 0; k < s.c; k++) AT(d, k, y, x) = inside ? AT(s, k, sy, sx) : 0;
        continue;
      }
      int64_t x0 = (int64_t)floorf(rx + xc), y0 = (int64_t)floorf(ry + yc);
      int64_t x1 = x0 + 1, y1 = y0 + 1;
      temp_t wx = rx + xc - (float)x0, wy = ry + yc - (float)y0;
      int outside = 0;
      /* a sample within half a pixel of the border takes the border pixel */
      if (x1 == s.w && wx < 0.5) x1 = x0; else if (x1 >= s.w) outside = 1;
      if (y1 == s.h && wy < 0.5) y1 = y0; else if (y1 >= s.h) outside = 1;
      if (x0 == -1 && wx > 0.5) x0 = x1; else if (x0 < 0) outside = 1;
      if (y0 == -1 && wy > 0.5) y0 = y1; else if (y0 < 0) outside = 1;
      for (int64_t k = 0; k < s.c; k++) {
        if (outside) { AT(d, k, y, x) = 0; continue; }
        temp_t v = (1 - wx) * (1 - wy) * AT(s, k, y0, x0) + wx * (1 - wy) * AT(s, k, y0, x1) +
                   (1 - wx) * wy * AT(s, k, y1, x0) + wx * wy * AT(s, k, y1, x1);
        AT(d, k, y, x) = IM_(store)(v);
      }
    }
  }
  return 0;
}

/* Polar and log-polar: row j is the angle 2 pi j / H', column i the radius (linear or exponential
 * up to the maximum distance). Bilinear falls back to the nearest pixel at the borders. */
static int IM_(polar)(im_view d, im_view s, int mode, int full, int logpolar) {
  float my = (float)s.h / 2.0f, mx = (float)s.w / 2.0f;
  float maxr = full ? sqrtf((float)s.w * (float)s.w + (float)s.h * (float)s.h) / 2.0f : (s.w < s.h ? mx : my);
  float logstep = logf(maxr) / (float)d.w;
#pragma omp parallel for schedule(static) if (d.h * d.w >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < d.h; y++) {
    float a = (float)(2 * M_PI * (double)y / (double)d.h);
    for (int64_t x = 0; x < d.w; x++) {
      float r = logpolar ? expf((float)x * logstep) : maxr * (float)x / (float)d.w;
      float sy = r * cosf(a) + my, sx = -r * sinf(a) + mx;
      int64_t x0 = (int64_t)floorf(sx), y0 = (int64_t)floorf(sy);
      int near = mode == LT_IMAGE_SIMPLE || x0 + 1 > s.w - 1 || y0 + 1 > s.h - 1 || x0 < 0 || y0 < 0;
      int inside = x0 >= 0 && y0 >= 0 && x0 < s.w && y0 < s.h;
      temp_t wx = sx - (float)x0, wy = sy - (float)y0;
      for (int64_t k = 0; k < s.c; k++) {
        if (near) {
          AT(d, k, y, x) = inside ? AT(s, k, y0, x0) : 0;
        } else {
          temp_t v = (1 - wx) * (1 - wy) * AT(s, k, y0, x0) + wx * (1 - wy) * AT(s, k, y0, x0 + 1) +
                     (1 - wx) * wy * AT(s, k, y0 + 1, x0) + wx * wy * AT(s, k, y0 + 1, x0 + 1);
          AT(d, k, y, x) = IM_(store)(v);
        }
      }
    }
  }
  return 0;
}

/* Lanczos window of radius 3 at distance t. */
static inline float IM_(lanczos)(float t) {
  const float radius = 3;
  t = fabsf(t);
  if (t < 1e-6f) return 1;
  if (t > radius) return 0;
  float pt = (float)M_PI * t;
  return radius * sinf(pt) * sinf(pt / radius) / (pt * pt);
}

static int IM_(warp)(im_view d, im_view s, const double *flow, int mode, int offset, int clamp_mode,
                     double pad) {
  int64_t plane = d.h * d.w;
#pragma omp parallel for schedule(static) if (plane >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < d.h; y++) {
    for (int64_t x = 0; x < d.w; x++) {
      float iy = (float)(offset * y) + (float)flow[y * d.w + x];
      float ix = (float)(offset * x) + (float)flow[plane + y * d.w + x];
      int off = iy < 0 || iy > s.h - 1 || ix < 0 || ix > s.w - 1;
      if (off && clamp_mode == 1) {
        for (int64_t k = 0; k < d.c; k++) AT(d, k, y, x) = (real)pad;
        continue;
      }
      ix = ix < 0 ? 0 : ix > s.w - 1 ? (float)(s.w - 1) : ix;
      iy = iy < 0 ? 0 : iy > s.h - 1 ? (float)(s.h - 1) : iy;
      int64_t x0 = (int64_t)floorf(ix), y0 = (int64_t)floorf(iy);
      if (mode == LT_IMAGE_SIMPLE) {
        int64_t nx = (int64_t)floorf(ix + 0.5f), ny = (int64_t)floorf(iy + 0.5f);
        for (int64_t k = 0; k < d.c; k++) AT(d, k, y, x) = AT(s, k, ny, nx);
      } else if (mode == LT_IMAGE_BILINEAR) {
        int64_t x1 = x0 + 1 < s.w ? x0 + 1 : s.w - 1, y1 = y0 + 1 < s.h ? y0 + 1 : s.h - 1;
        temp_t fx = ix - (float)x0, fy = iy - (float)y0;
        for (int64_t k = 0; k < d.c; k++)
          AT(d, k, y, x) = IM_(store)((1 - fx) * (1 - fy) * AT(s, k, y0, x0) + fx * (1 - fy) * AT(s, k, y0, x1) +
                                      (1 - fx) * fy * AT(s, k, y1, x0) + fx * fy * AT(s, k, y1, x1));
      } else if (mode == LT_IMAGE_BICUBIC) {
        temp_t fx = ix - (float)x0, fy = iy - (float)y0;
        for (int64_t k = 0; k < d.c; k++) {
          temp_t rows[4];
          for (int i = 0; i < 4; i++) {
            int64_t v = y0 + i - 1;
            temp_t p[4];
            for (int j = 0; j < 4; j++) {
              int64_t u = x0 + j - 1;
              p[j] = (v < 0 || v >= s.h || u < 0 || u >= s.w) ? (temp_t)(real)pad : (temp_t)AT(s, k, v, u);
            }
            rows[i] = IM_(cubic)(p[0], p[1], p[2], p[3], fx);
          }
          AT(d, k, y, x) = IM_(store)(IM_(cubic)(rows[0], rows[1], rows[2], rows[3], fy));
        }
      } else {
        float wu[6], wv[6], total = 0;
        for (int i = 0; i < 6; i++) {
          wu[i] = IM_(lanczos)(ix - (float)(x0 - 2 + i));
          wv[i] = IM_(lanczos)(iy - (float)(y0 - 2 + i));
        }
        for (int i = 0; i < 6; i++)
          for (int j = 0; j < 6; j++) total += wu[i] * wv[j];
        for (int64_t k = 0; k < d.c; k++) {
          temp_t acc = 0;
          for (int i = 0; i < 6; i++) {
            int64_t u = x0 - 2 + i;
            u = u < 0 ? 0 : u > s.w - 1 ? s.w - 1 : u;
            for (int j = 0; j < 6; j++) {
              int64_t v = y0 - 2 + j;
              v = v < 0 ? 0 : v > s.h - 1 ? s.h - 1 : v;
              acc += (temp_t)AT(s, k, v, u) * (wu[i] * wv[j]);
            }
          }
          AT(d, k, y, x) = IM_(store)(acc / total);
        }
      }
    }
  }
  return 0;
}

#undef AT
