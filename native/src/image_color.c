/* image: colour spaces, luma, saturation, Gaussian kernels, colour maps and rectangles. */
#include "image_internal.h"

#define IM_GENERIC_FILE "image_color_kernels.h"
#include "image_generic.h"

static const char *const im_conversion_names[] = {"image.rgb2hsl", "image.hsl2rgb", "image.rgb2hsv",
                                                  "image.hsv2rgb", "image.rgb2lab", "image.lab2rgb"};

int lt_image_color(lt_tensor *dst, const lt_tensor *src, int conversion) {
  if (conversion < LT_IMAGE_RGB2HSL || conversion > LT_IMAGE_LAB2RGB)
    return lt_fail("image: unknown colour conversion %d", conversion);
  const char *fn = im_conversion_names[conversion];
  im_view d = {0}, s = {0};
  if (im_pair(dst, src, &d, &s, fn)) return -1;
  if (src->ndim != 3 || s.c != 3) return lt_fail("%s: expected a 3 x H x W image, got %lld channels", fn, (long long)s.c);
  if ((conversion == LT_IMAGE_RGB2LAB || conversion == LT_IMAGE_LAB2RGB) && lt_host_type(src->type) == LT_BYTE)
    return lt_fail("%s: not supported for torch.ByteTensor (Lab values do not fit in bytes); convert to float first", fn);
  IM_DISPATCH(src->type, fn, color, d, s, conversion);
}

int lt_image_rgb2y(lt_tensor *dst, const lt_tensor *src) {
  im_view d = {0}, s = {0};
  if (im_view_of(src, &s, "image.rgb2y", "source") || im_view_of(dst, &d, "image.rgb2y", "destination")) return -1;
  if (src->ndim != 3 || s.c < 3) return lt_fail("image.rgb2y: expected a 3 x H x W image");
  if (dst->type != src->type) return lt_fail("image.rgb2y: source and destination types differ");
  if (d.h != s.h || d.w != s.w) return lt_fail("image.rgb2y: source and destination sizes differ");
  IM_DISPATCH(src->type, "image.rgb2y", rgb2y, d, s);
}

int lt_image_saturate(lt_tensor *t) {
  IM_DISPATCH(t->type, "image.saturate", saturate, t);
}

int lt_image_gaussian(lt_tensor *dst, double amplitude, int normalize, double sigma_u, double sigma_v,
                      double mean_u, double mean_v) {
  im_view d = {0};
  if (dst->ndim != 2) return lt_fail("image.gaussian: expected a 2-D result tensor");
  if (im_view_of(dst, &d, "image.gaussian", "result")) return -1;
  switch (lt_host_type(dst->type)) {
    case LT_BYTE: return gaussian_byte(d, (float)amplitude, normalize, (float)sigma_u, (float)sigma_v, (float)mean_u, (float)mean_v);
    case LT_FLOAT: return gaussian_float(d, (float)amplitude, normalize, (float)sigma_u, (float)sigma_v, (float)mean_u, (float)mean_v);
    case LT_DOUBLE: return gaussian_double(d, amplitude, normalize, sigma_u, sigma_v, mean_u, mean_v);
    default: return lt_fail("image.gaussian: expected a Byte, Float or Double tensor, got %s", lt_type_name(dst->type));
  }
}

int lt_image_colorize(lt_tensor *dst, const lt_tensor *index, const lt_tensor *colormap) {
  if (index->ndim != 2) return lt_fail("image.colorize: the index image must be H x W");
  if (colormap->ndim != 2) return lt_fail("image.colorize: the colour map must be N x K");
  if (dst->type != colormap->type) return lt_fail("image.colorize: the result and the colour map types differ");
  int64_t h = index->size[0], w = index->size[1], n = colormap->size[0], k = colormap->size[1];
  int64_t size[3] = {k, h, w};
  if (lt_tensor_resize(dst, 3, size)) return -1;
  /* read the indices as doubles whatever their type */
  lt_tensor ids;
  lt_tensor_init(&ids, LT_DOUBLE);
  if (lt_tensor_resize(&ids, 2, index->size) || lt_tensor_copy(&ids, index)) {
    lt_tensor_clear(&ids);
    return -1;
  }
  const double *id = (const double *)lt_tensor_data(&ids);
  size_t es = (size_t)lt_elemsize(dst->type);
  const char *cm = (const char *)lt_tensor_data(colormap);
  char *out = (char *)lt_tensor_data(dst);
  int rc = 0;
  for (int64_t p = 0; p < h * w && rc == 0; p++) {
    int64_t row = (int64_t)id[p];
    if (row < 0 || row >= n) {
      rc = lt_fail("image.colorize: level %lld is outside the colour map's %lld entries", (long long)row + 1, (long long)n);
      break;
    }
    int64_t y = p / w, x = p % w;
    for (int64_t c = 0; c < k; c++)
      memcpy(out + (c * dst->stride[0] + y * dst->stride[1] + x * dst->stride[2]) * (int64_t)es,
             cm + (row * colormap->stride[0] + c * colormap->stride[1]) * (int64_t)es, es);
  }
  lt_tensor_clear(&ids);
  return rc;
}

int lt_image_draw_rect(lt_tensor *img, int64_t x1, int64_t y1, int64_t x2, int64_t y2, int line_width,
                       int r, int g, int b) {
  im_view d = {0};
  if (im_view_of(img, &d, "image.drawRect", "target")) return -1;
  if (img->ndim != 3 || d.c != 3) return lt_fail("image.drawRect: expected a 3 x H x W image");
  int rgb[3] = {r, g, b};
  IM_DISPATCH(img->type, "image.drawRect", draw_rect, d, x1, y1, x2, y2, line_width, rgb);
}
