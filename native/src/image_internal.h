/* Shared by the image kernels (image_*.c): a plane-strided view of an image and the per-type
 * instantiation of the generic kernels. Not part of the FFI surface. */
#ifndef LT_IMAGE_INTERNAL_H
#define LT_IMAGE_INTERNAL_H

#include "lt_internal.h"

/* An H x W or C x H x W tensor seen as C planes (C = 1, sc = 0 for H x W); strides in elements. */
typedef struct im_view {
  char *data;
  int64_t c, h, w;
  int64_t sc, sh, sw;
} im_view;

/* Fill v from t (2-D or 3-D); -1 + error naming fn otherwise. */
static inline int im_view_of(const lt_tensor *t, im_view *v, const char *fn, const char *role) {
  if (t->ndim != 2 && t->ndim != 3)
    return lt_fail("%s: the %s image must be H x W or C x H x W, got %d dimensions", fn, role, (int)t->ndim);
  int off = t->ndim - 2;
  v->data = (char *)lt_tensor_data(t);
  v->c = off ? t->size[0] : 1;
  v->sc = off ? t->stride[0] : 0;
  v->h = t->size[off];
  v->w = t->size[off + 1];
  v->sh = t->stride[off];
  v->sw = t->stride[off + 1];
  return 0;
}

/* Views of src and dst that must agree in type, number of dimensions and channels. */
static inline int im_pair(const lt_tensor *dst, const lt_tensor *src, im_view *d, im_view *s, const char *fn) {
  if (im_view_of(src, s, fn, "source") || im_view_of(dst, d, fn, "destination")) return -1;
  if (dst->type != src->type)
    return lt_fail("%s: source and destination types differ (%s, %s)", fn, lt_type_name(src->type),
                   lt_type_name(dst->type));
  if (dst->ndim != src->ndim || d->c != s->c)
    return lt_fail("%s: source and destination depths do not match", fn);
  return 0;
}

/* The element types the kernels are written for. */
static inline int im_supported(int type) {
  int h = lt_host_type(type);
  return h == LT_BYTE || h == LT_FLOAT || h == LT_DOUBLE;
}

/* Call NAME_byte / NAME_float / NAME_double by t's type, or fail naming fn. */
#define IM_DISPATCH(TYPE, FN, NAME, ...)                                                   \
  switch (lt_host_type(TYPE)) {                                                            \
    case LT_BYTE: return NAME##_byte(__VA_ARGS__);                                         \
    case LT_FLOAT: return NAME##_float(__VA_ARGS__);                                       \
    case LT_DOUBLE: return NAME##_double(__VA_ARGS__);                                     \
    default: return lt_fail("%s: expected a Byte, Float or Double tensor, got %s", FN,     \
                            lt_type_name(TYPE));                                           \
  }

/* Images at least this many pixels get OpenMP threads. */
#define IM_OMP_PIXELS 16384

#endif
