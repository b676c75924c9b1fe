/* Generic body of image_color.c (see image_generic.h): colour spaces and pixel kernels. */

static inline real IM_(cstore)(temp_t x) {
#if IM_IS_BYTE
  x += 0.5f;
  if (x <= 0) return 0;
  if (x >= 255) return 255;
#endif
  return (real)x;
}

/* Bytes hold 0..255 for [0, 1]. */
#if IM_IS_BYTE
#define UNIT (temp_t)255
#else
#define UNIT (temp_t)1
#endif

#define PX(v, k, y, x) (((real *)(v).data)[(k) * (v).sc + (y) * (v).sh + (x) * (v).sw])

static inline temp_t IM_(hue_part)(temp_t p, temp_t q, temp_t t) {
  if (t < 0) t += 1;
  if (t > 1) t -= 1;
  if (t < (temp_t)(1.0 / 6)) return p + (q - p) * 6 * t;
  if (t < (temp_t)0.5) return q;
  if (t < (temp_t)(2.0 / 3)) return p + (q - p) * ((temp_t)(2.0 / 3) - t) * 6;
  return p;
}

/* Hue of (r, g, b) in [0, 1) given their max and min (mx > mn). */
static inline temp_t IM_(hue)(temp_t r, temp_t g, temp_t b, temp_t mx, temp_t mn) {
  temp_t d = mx - mn, h;
  if (mx == r) h = (g - b) / d + (g < b ? 6 : 0);
  else if (mx == g) h = (b - r) / d + 2;
  else h = (r - g) / d + 4;
  return h / 6;
}

static inline void IM_(convert_pixel)(int conversion, temp_t a, temp_t b, temp_t c, temp_t *o) {
  switch (conversion) {
    case LT_IMAGE_RGB2HSL:
    case LT_IMAGE_RGB2HSV: {
      temp_t mx = a > b ? (a > c ? a : c) : (b > c ? b : c);
      temp_t mn = a < b ? (a < c ? a : c) : (b < c ? b : c);
      if (mx == mn) {
        o[0] = 0; o[1] = 0; o[2] = mx;  /* grey: no hue, no saturation */
        return;
      }
      o[0] = IM_(hue)(a, b, c, mx, mn);
      if (conversion == LT_IMAGE_RGB2HSV) {
        o[1] = (mx - mn) / mx;
        o[2] = mx;
      } else {
        temp_t l = (mx + mn) / 2;
        o[1] = l > (temp_t)0.5 ? (mx - mn) / (2 - mx - mn) : (mx - mn) / (mx + mn);
        o[2] = l;
      }
      return;
    }
    case LT_IMAGE_HSL2RGB: {
      temp_t h = a, s = b, l = c;
      if (s == 0) { o[0] = o[1] = o[2] = l; return; }
      temp_t q = l < (temp_t)0.5 ? l * (1 + s) : l + s - l * s;
      temp_t p = 2 * l - q;
      o[0] = IM_(hue_part)(p, q, h + (temp_t)(1.0 / 3));
      o[1] = IM_(hue_part)(p, q, h);
      o[2] = IM_(hue_part)(p, q, h - (temp_t)(1.0 / 3));
      return;
    }
    case LT_IMAGE_HSV2RGB: {
      temp_t h = a, s = b, v = c;
      int sector = (int)floor((double)h * 6);
      temp_t f = h * 6 - (temp_t)sector;
      temp_t p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
      switch (sector % 6) {
        case 0: o[0] = v; o[1] = t; o[2] = p; break;
        case 1: o[0] = q; o[1] = v; o[2] = p; break;
        case 2: o[0] = p; o[1] = v; o[2] = t; break;
        case 3: o[0] = p; o[1] = q; o[2] = v; break;
        case 4: o[0] = t; o[1] = p; o[2] = v; break;
        case 5: o[0] = v; o[1] = p; o[2] = q; break;
        default: o[0] = o[1] = o[2] = 0;
      }
      return;
    }
    default: {
      /* CIE L*a*b* (D65) from sRGB and back, through linear RGB and XYZ */
      const double eps = 216.0 / 24389.0, kappa = 24389.0 / 27.0, xn = 0.950456, zn = 1.088754;
      if (conversion == LT_IMAGE_RGB2LAB) {
        double lin[3], in[3] = {a, b, c};
        for (int i = 0; i < 3; i++)
          lin[i] = in[i] <= 0.04045 ? in[i] / 12.92 : pow((in[i] + 0.055) / 1.055, 2.4);
        double X = (0.412453 * lin[0] + 0.357580 * lin[1] + 0.180423 * lin[2]) / xn;
        double Y = 0.212671 * lin[0] + 0.715160 * lin[1] + 0.072169 * lin[2];
        double Z = (0.019334 * lin[0] + 0.119193 * lin[1] + 0.950227 * lin[2]) / zn;
        double fx = X > eps ? cbrt(X) : (kappa * X + 16) / 116;
        double fy = Y > eps ? cbrt(Y) : (kappa * Y + 16) / 116;
        double fz = Z > eps ? cbrt(Z) : (kappa * Z + 16) / 116;
        o[0] = (temp_t)(116 * fy - 16);
        o[1] = (temp_t)(500 * (fx - fy));
        o[2] = (temp_t)(200 * (fy - fz));
      } else {
        double L = a, fy = (L + 16) / 116, fx = fy + b / 500.0, fz = fy - c / 200.0;
        double X = fx * fx * fx, Z = fz * fz * fz;
        if (X <= eps) X = (116 * fx - 16) / kappa;
        if (Z <= eps) Z = (116 * fz - 16) / kappa;
        double Y = L > kappa * eps ? fy * fy * fy : L / kappa;
        X *= xn;
        Z *= zn;
        double lin[3] = {3.2404542 * X - 1.5371385 * Y - 0.4985314 * Z,
                         -0.9692660 * X + 1.8760108 * Y + 0.0415560 * Z,
                         0.0556434 * X - 0.2040259 * Y + 1.0572252 * Z};
        for (int i = 0; i < 3; i++)
          o[i] = (temp_t)(lin[i] <= 0.0031308 ? 12.92 * lin[i] : 1.055 * pow(lin[i], 1.0 / 2.4) - 0.055);
      }
    }
  }
}

static int IM_(color)(im_view d, im_view s, int conversion) {
#pragma omp parallel for schedule(static) if (s.h * s.w >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < s.h; y++) {
    for (int64_t x = 0; x < s.w; x++) {
      temp_t o[3];
      IM_(convert_pixel)(conversion, (temp_t)PX(s, 0, y, x) / UNIT, (temp_t)PX(s, 1, y, x) / UNIT,
                         (temp_t)PX(s, 2, y, x) / UNIT, o);
      for (int k = 0; k < 3; k++) PX(d, k, y, x) = IM_(cstore)(o[k] * UNIT);
    }
  }
  return 0;
}

static int IM_(rgb2y)(im_view d, im_view s) {
#pragma omp parallel for schedule(static) if (s.h * s.w >= IM_OMP_PIXELS)
  for (int64_t y = 0; y < s.h; y++)
    for (int64_t x = 0; x < s.w; x++)
      PX(d, 0, y, x) = IM_(cstore)((temp_t)0.299 * PX(s, 0, y, x) + (temp_t)0.587 * PX(s, 1, y, x) +
                                   (temp_t)0.114 * PX(s, 2, y, x));
  return 0;
}

static int IM_(saturate)(lt_tensor *t) {
#if !IM_IS_BYTE
  lt_iter it;
  lt_iter_init(&it, t);
  while (!lt_iter_done(&it)) {
    int64_t n = lt_iter_run(&it, NULL, NULL);
    real *p = (real *)it.ptr;
    for (int64_t i = 0; i < n; i++) {
      real v = p[i * it.inner_stride];
      p[i * it.inner_stride] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
    lt_iter_advance(&it, n);
  }
#else
  (void)t;
#endif
  return 0;
}

static int IM_(gaussian)(im_view d, temp_t amplitude, int normalize, temp_t su, temp_t sv, temp_t mu, temp_t mv) {
  temp_t cu = mu * (temp_t)d.w + (temp_t)0.5, cv = mv * (temp_t)d.h + (temp_t)0.5;
  temp_t iu = 1 / (su * (temp_t)d.w), iv = 1 / (sv * (temp_t)d.h);
#pragma omp parallel for schedule(static) if (d.h * d.w >= IM_OMP_PIXELS)
  for (int64_t v = 0; v < d.h; v++)
    for (int64_t u = 0; u < d.w; u++) {
      temp_t du = ((temp_t)(u + 1) - cu) * iu, dv = ((temp_t)(v + 1) - cv) * iv;
      PX(d, 0, v, u) = IM_(cstore)(amplitude * (temp_t)exp(-0.5 * (double)(du * du + dv * dv)));
    }
  if (normalize) {
    temp_t sum = 0;
    for (int64_t v = 0; v < d.h; v++)
      for (int64_t u = 0; u < d.w; u++) sum += PX(d, 0, v, u);
    temp_t inv = 1 / sum;
    for (int64_t v = 0; v < d.h; v++)
      for (int64_t u = 0; u < d.w; u++) PX(d, 0, v, u) = (real)(PX(d, 0, v, u) * inv);
  }
  return 0;
}

/* Draw colour (r, g, b in 0..255) at one pixel. */
static inline void IM_(dot)(im_view d, int64_t y, int64_t x, const int *rgb) {
  for (int k = 0; k < 3; k++) PX(d, k, y, x) = (real)(IM_IS_BYTE ? (temp_t)rgb[k] : (temp_t)rgb[k] / 255.0f);
}

/* Fill rows [y0, y1) x columns [x0, x1), clipped to the image. */
static void IM_(fill_box)(im_view d, int64_t y0, int64_t y1, int64_t x0, int64_t x1, const int *rgb) {
  if (y0 < 0) y0 = 0;
  if (x0 < 0) x0 = 0;
  if (y1 > d.h) y1 = d.h;
  if (x1 > d.w) x1 = d.w;
  for (int64_t y = y0; y < y1; y++)
    for (int64_t x = x0; x < x1; x++) IM_(dot)(d, y, x, rgb);
}

static int IM_(draw_rect)(im_view d, int64_t x1, int64_t y1, int64_t x2, int64_t y2, int lw, const int *rgb) {
  /* a line at coordinate c covers [c - below, c + above] */
  int64_t below = lw / 2 + 1, above = lw - below - 1;
  IM_(fill_box)(d, y1 - below, y2 + above + 1, x1 - below, x1 + above + 1, rgb);   /* left */
  IM_(fill_box)(d, y1 - below, y2 + above + 1, x2 - below, x2 + above + 1, rgb);   /* right */
  IM_(fill_box)(d, y1 - below, y1 + above + 1, x1 - below, x2 + above + 1, rgb);   /* top */
  IM_(fill_box)(d, y2 - below, y2 + above + 1, x1 - below, x2 + above + 1, rgb);   /* bottom */
  return 0;
}

#undef PX
#undef UNIT
