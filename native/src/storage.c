/* Element types, error messages and reference-counted storages. */
#include <stdarg.h>
#include "lt_internal.h"

static __thread char lt_error_buf[1024];

const char *lt_errmsg(void) { return lt_error_buf; }

void lt_set_error(const char *msg) {
  snprintf(lt_error_buf, sizeof lt_error_buf, "%s", msg ? msg : "");
}

int lt_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lt_error_buf, sizeof lt_error_buf, fmt, ap);
  va_end(ap);
  return -1;
}

static const int elemsizes[LT_NTYPES] = {1, 1, 2, 4, 8, 4, 8};
static const char *type_names[LT_NTYPES] = {"Byte", "Char", "Short", "Int", "Long", "Float", "Double"};

int lt_elemsize(int type) { return (type >= 0 && type < LT_NTYPES) ? elemsizes[type] : 0; }
const char *lt_type_name(int type) { return (type >= 0 && type < LT_NTYPES) ? type_names[type] : "?"; }

/* Storage data is 64-byte aligned so that vector loads never split lines. */
static void *aligned_zalloc(int64_t bytes) {
  if (bytes <= 0) return NULL;
  void *p = NULL;
  size_t rounded = ((size_t)bytes + 63) & ~(size_t)63;
  if (posix_memalign(&p, 64, rounded) != 0) return NULL;
  memset(p, 0, rounded);
  return p;
}

lt_storage *lt_storage_new(int type, int64_t size) {
  if (type < 0 || type >= LT_NTYPES) { lt_fail("unknown storage type %d", type); return NULL; }
  if (size < 0) { lt_fail("storage size must be non-negative, got %lld", (long long)size); return NULL; }
  if (size > (INT64_MAX / 8)) { lt_fail("storage size %lld is too large", (long long)size); return NULL; }
  lt_storage *s = calloc(1, sizeof *s);
  if (!s) { lt_fail("out of memory allocating a storage"); return NULL; }
  s->type = type;
  s->size = size;
  s->flags = LT_STORAGE_OWNED;
  s->refcount = 1;
  if (size > 0) {
    s->data = aligned_zalloc(size * elemsizes[type]);
    if (!s->data) {
      free(s);
      lt_fail("out of memory allocating a %s storage of %lld elements (%.1f MiB)", type_names[type],
              (long long)size, (double)size * elemsizes[type] / 1048576.0);
      return NULL;
    }
  }
  return s;
}

lt_storage *lt_storage_new_foreign(int type, void *data, int64_t size, void (*release)(void *), void *ctx) {
  if (type < 0 || type >= LT_NTYPES) { lt_fail("unknown storage type %d", type); return NULL; }
  lt_storage *s = calloc(1, sizeof *s);
  if (!s) { lt_fail("out of memory allocating a storage"); return NULL; }
  s->type = type;
  s->size = size;
  s->data = data;
  s->flags = LT_STORAGE_FOREIGN;
  s->refcount = 1;
  s->release = release;
  s->release_ctx = ctx;
  return s;
}

void lt_storage_retain(lt_storage *s) {
  if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void lt_storage_release(lt_storage *s) {
  if (!s) return;
  if (__atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->flags & LT_STORAGE_OWNED) free(s->data);
  if ((s->flags & LT_STORAGE_FOREIGN) && s->release) s->release(s->release_ctx);
  free(s);
}

int64_t lt_storage_refcount(lt_storage *s) { return s ? __atomic_load_n(&s->refcount, __ATOMIC_RELAXED) : 0; }

void lt_storage_pin(lt_storage *s) { if (s) __atomic_add_fetch(&s->pins, 1, __ATOMIC_RELAXED); }
void lt_storage_unpin(lt_storage *s) { if (s) __atomic_sub_fetch(&s->pins, 1, __ATOMIC_RELAXED); }
void *lt_storage_data(lt_storage *s) { return s ? s->data : NULL; }

int lt_storage_resize(lt_storage *s, int64_t size) {
  if (size < 0) return lt_fail("storage size must be non-negative, got %lld", (long long)size);
  if (size == s->size) return 0;
  if (!(s->flags & LT_STORAGE_OWNED))
    return lt_fail("cannot resize a storage whose memory belongs to another owner (numpy array or mapped memory): "
                   "it has %lld elements, %lld requested", (long long)s->size, (long long)size);
  if (__atomic_load_n(&s->pins, __ATOMIC_RELAXED) > 0)
    return lt_fail("cannot resize a storage while numpy views of it are alive (%lld elements, %lld requested)",
                   (long long)s->size, (long long)size);
  int es = elemsizes[s->type];
  void *p = NULL;
  if (size > 0) {
    p = aligned_zalloc(size * es);
    if (!p) return lt_fail("out of memory resizing a %s storage to %lld elements", type_names[s->type], (long long)size);
    int64_t keep = size < s->size ? size : s->size;
    if (keep > 0) memcpy(p, s->data, keep * es);
  }
  free(s->data);
  s->data = p;
  s->size = size;
  return 0;
}

int lt_storage_fill(lt_storage *s, double value) {
  int64_t n = s->size;
  LT_DISPATCH(s->type, {
    scalar_t v = (scalar_t)value;
    scalar_t *d = (scalar_t *)s->data;
    for (int64_t i = 0; i < n; i++) d[i] = v;
  });
  return 0;
}

int lt_storage_copy(lt_storage *dst, int64_t dst_off, lt_storage *src, int64_t src_off, int64_t n) {
  if (n < 0 || dst_off < 0 || src_off < 0 || dst_off + n > dst->size || src_off + n > src->size)
    return lt_fail("storage copy out of range (%lld elements from offset %lld of %lld into offset %lld of %lld)",
                   (long long)n, (long long)src_off, (long long)src->size, (long long)dst_off, (long long)dst->size);
  if (dst->type == src->type) {
    memmove((char *)dst->data + dst_off * elemsizes[dst->type], (char *)src->data + src_off * elemsizes[src->type],
            n * elemsizes[dst->type]);
    return 0;
  }
  LT_DISPATCH_AS(dst->type, dst_t, {
    LT_DISPATCH_AS(src->type, src_t, {
      dst_t *d = (dst_t *)dst->data + dst_off;
      const src_t *s = (const src_t *)src->data + src_off;
      for (int64_t i = 0; i < n; i++) d[i] = (dst_t)s[i];
    });
  });
  return 0;
}
