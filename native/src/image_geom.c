/* image: scaling, rotation, polar resampling, warping, cropping, translation and flips. */
#include "image_internal.h"

#define IM_GENERIC_FILE "image_geom_kernels.h"
#include "image_generic.h"

int lt_image_scale(lt_tensor *dst, const lt_tensor *src, int mode) {
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, "image.scale")) return -1;
  if (mode < LT_IMAGE_SIMPLE || mode > LT_IMAGE_BICUBIC)
    return lt_fail("image.scale: mode must be one of: simple | bilinear | bicubic");
  if (s.h < 1 || s.w < 1 || d.h < 1 || d.w < 1) return lt_fail("image.scale: empty image");
  IM_DISPATCH(src->type, "image.scale", scale, d, s, mode);
}

int lt_image_rotate(lt_tensor *dst, const lt_tensor *src, double theta, int mode) {
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, "image.rotate")) return -1;
  if (d.data == s.data) return lt_fail("image.rotate: in-place rotation is not supported (give another destination)");
  IM_DISPATCH(src->type, "image.rotate", rotate, d, s, theta, mode);
}

int lt_image_polar(lt_tensor *dst, const lt_tensor *src, int mode, int full, int logpolar) {
  im_view d = {0}, s = {0};
  const char *fn = logpolar ? "image.logpolar" : "image.polar";
  if (im_pair(dst, src, &d, &s, fn)) return -1;
  IM_DISPATCH(src->type, fn, polar, d, s, mode, full, logpolar);
}

/* A view of t narrowed to rows [y, y + h) and columns [x, x + w) of its last two dimensions. */
static lt_tensor im_window(const lt_tensor *t, int64_t y, int64_t x, int64_t h, int64_t w) {
  lt_tensor v = *t;
  int off = t->ndim - 2;
  v.offset += y * t->stride[off] + x * t->stride[off + 1];
  v.size[off] = h;
  v.size[off + 1] = w;
  return v;
}

int lt_image_crop(lt_tensor *dst, const lt_tensor *src, int64_t x, int64_t y) {
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, "image.crop")) return -1;
  if (x < 0 || y < 0 || x + d.w > s.w || y + d.h > s.h)
    return lt_fail("image.crop: the crop (x %lld..%lld, y %lld..%lld) goes outside the %lld x %lld source",
                   (long long)x, (long long)(x + d.w), (long long)y, (long long)(y + d.h), (long long)s.w,
                   (long long)s.h);
  lt_tensor window = im_window(src, y, x, d.h, d.w);
  return lt_tensor_copy(dst, &window);
}

int lt_image_translate(lt_tensor *dst, const lt_tensor *src, int64_t dx, int64_t dy) {
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, "image.translate")) return -1;
  /* the part of src that lands inside dst */
  int64_t sx0 = dx < 0 ? -dx : 0, sy0 = dy < 0 ? -dy : 0;
  int64_t sx1 = s.w < d.w - dx ? s.w : d.w - dx, sy1 = s.h < d.h - dy ? s.h : d.h - dy;
  if (sx1 <= sx0 || sy1 <= sy0) return 0;
  lt_tensor from = im_window(src, sy0, sx0, sy1 - sy0, sx1 - sx0);
  lt_tensor to = im_window(dst, sy0 + dy, sx0 + dx, sy1 - sy0, sx1 - sx0);
  return lt_tensor_copy(&to, &from);
}

int lt_image_warp(lt_tensor *dst, const lt_tensor *src, const lt_tensor *flow, int mode, int offset,
                  int clamp_mode, double pad) {
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, "image.warp")) return -1;
  if (flow->ndim != 3 || flow->size[0] != 2 || flow->size[1] != d.h || flow->size[2] != d.w)
    return lt_fail("image.warp: the flow field must be 2 x %lld x %lld (y and x of each output pixel)",
                   (long long)d.h, (long long)d.w);
  if (mode < LT_IMAGE_SIMPLE || mode > LT_IMAGE_LANCZOS)
    return lt_fail("image.warp: mode must be one of: simple | bilinear | bicubic | lanczos");
  if (s.h < 1 || s.w < 1) return lt_fail("image.warp: empty source image");
  /* the kernels read the field as contiguous doubles, whatever its type and layout */
  lt_tensor field;
  lt_tensor_init(&field, LT_DOUBLE);
  if (lt_tensor_resize(&field, 3, flow->size) || lt_tensor_copy(&field, flow)) {
    lt_tensor_clear(&field);
    return -1;
  }
  const double *f = (const double *)lt_tensor_data(&field);
  int rc;
  switch (lt_host_type(src->type)) {
    case LT_BYTE: rc = warp_byte(d, s, f, mode, offset ? 1 : 0, clamp_mode, pad); break;
    case LT_FLOAT: rc = warp_float(d, s, f, mode, offset ? 1 : 0, clamp_mode, pad); break;
    case LT_DOUBLE: rc = warp_double(d, s, f, mode, offset ? 1 : 0, clamp_mode, pad); break;
    default: rc = lt_fail("image.warp: expected a Byte, Float or Double tensor, got %s", lt_type_name(src->type));
  }
  lt_tensor_clear(&field);
  return rc;
}

/* Flips move whole elements, so they work on bytes of the element size, for every type. */
int lt_image_flip(lt_tensor *dst, const lt_tensor *src, int dim) {
  if (dst->type != src->type) return lt_fail("image.flip: source and destination types differ");
  if (!lt_tensor_is_same_size(dst, src)) return lt_fail("image.flip: source and destination sizes differ");
  if (dim < 0 || dim >= src->ndim) return lt_fail("image.flip: dimension %d out of range", dim + 1);
  int64_t n = lt_tensor_nelement(src);
  if (n == 0) return 0;
  size_t es = (size_t)lt_elemsize(src->type);
  lt_tensor from = *src;
  lt_tensor copy;
  lt_tensor_init(&copy, src->type);
  if (dst->storage == src->storage) {
    /* in place (or overlapping): read from a copy of the source */
    if (lt_tensor_resize(&copy, src->ndim, src->size) || lt_tensor_copy(&copy, src)) {
      lt_tensor_clear(&copy);
      return -1;
    }
    from = copy;
  }
  const char *sp = (const char *)lt_tensor_data(&from);
  char *dp = (char *)lt_tensor_data(dst);
  int nd = src->ndim, last = nd - 1;
  int64_t len = src->size[last], rows = n / len;
  int64_t ss = from.stride[last], ds = dst->stride[last];
  /* along the last dimension the run is reversed; along another, whole runs move */
  int64_t dstep = dim == last ? -ds : ds;
  int64_t lt_par_n = n;
#pragma omp parallel for schedule(static) if (lt_par_n >= 65536)
  for (int64_t r = 0; r < rows; r++) {
    int64_t rest = r, so = 0, doff = 0;
    for (int k = last - 1; k >= 0; k--) {
      int64_t idx = rest % src->size[k];
      rest /= src->size[k];
      so += idx * from.stride[k];
      doff += (k == dim ? src->size[k] - 1 - idx : idx) * dst->stride[k];
    }
    if (dim == last) doff += (len - 1) * ds;
    switch (es) {
      case 1: for (int64_t i = 0; i < len; i++) ((uint8_t *)dp)[doff + i * dstep] = ((const uint8_t *)sp)[so + i * ss]; break;
      case 2: for (int64_t i = 0; i < len; i++) ((uint16_t *)dp)[doff + i * dstep] = ((const uint16_t *)sp)[so + i * ss]; break;
      case 4: for (int64_t i = 0; i < len; i++) ((uint32_t *)dp)[doff + i * dstep] = ((const uint32_t *)sp)[so + i * ss]; break;
      case 8: for (int64_t i = 0; i < len; i++) ((uint64_t *)dp)[doff + i * dstep] = ((const uint64_t *)sp)[so + i * ss]; break;
      default:
        for (int64_t i = 0; i < len; i++) memcpy(dp + (doff + i * dstep) * (int64_t)es, sp + (so + i * ss) * (int64_t)es, es);
    }
  }
  lt_tensor_clear(&copy);
  return 0;
}
