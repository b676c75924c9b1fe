/* Element types, error messages, reference-counted storages, half precision
 * conversions and memory-mapped storages. */
#include <pthread.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
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

/* The Cuda types (cutorch's) have their host types' elements; Torch7 names
 * cutorch's float type plain "Cuda" (torch.CudaTensor, torch.CudaStorage). */
static const int elemsizes[LT_NTYPES] = {1, 1, 2, 4, 8, 4, 8, 2, 1, 1, 2, 4, 8, 4, 8, 2};
static const char *type_names[LT_NTYPES] = {"Byte", "Char", "Short", "Int", "Long", "Float", "Double", "Half",
                                            "CudaByte", "CudaChar", "CudaShort", "CudaInt", "CudaLong", "Cuda",
                                            "CudaDouble", "CudaHalf"};

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
  int on_device = 0;
  lt_storage *d = lt_cuda_storage_new_if_device(type, size, &on_device);
  if (on_device) return d;
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

static pthread_mutex_t released_mutex = PTHREAD_MUTEX_INITIALIZER;
static void **released;
static int64_t n_released, cap_released;

void lt_foreign_release_later(void *ctx) {
  pthread_mutex_lock(&released_mutex);
  if (n_released == cap_released) {
    int64_t cap = cap_released ? 2 * cap_released : 64;
    void **grown = realloc(released, (size_t)cap * sizeof *grown);
    if (grown) { released = grown; cap_released = cap; }
  }
  if (n_released < cap_released) {  /* out of memory: the owner stays alive */
    released[n_released] = ctx;
    __atomic_store_n(&n_released, n_released + 1, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&released_mutex);
}

int64_t lt_foreign_take_released(void **out, int64_t cap) {
  if (__atomic_load_n(&n_released, __ATOMIC_RELAXED) == 0) return 0;  /* the common case: no lock */
  pthread_mutex_lock(&released_mutex);
  int64_t n = n_released < cap ? n_released : cap;
  __atomic_store_n(&n_released, n_released - n, __ATOMIC_RELAXED);
  memcpy(out, released + n_released, (size_t)n * sizeof *out);
  pthread_mutex_unlock(&released_mutex);
  return n;
}

void lt_storage_retain(lt_storage *s) {
  if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

void lt_storage_release(lt_storage *s) {
  if (!s) return;
  if (__atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->flags & LT_STORAGE_DEVICE) lt_cuda_storage_free_data(s);
  else if (s->flags & LT_STORAGE_OWNED) free(s->data);
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
  const int pinned = lt_storage_is_pinned(s);
  if (!(s->flags & LT_STORAGE_OWNED) && !pinned)
    return lt_fail("cannot resize a storage whose memory belongs to another owner (numpy array or mapped memory): "
                   "it has %lld elements, %lld requested", (long long)s->size, (long long)size);
  if (__atomic_load_n(&s->pins, __ATOMIC_RELAXED) > 0)
    return lt_fail("cannot resize a storage while numpy views of it are alive (%lld elements, %lld requested)",
                   (long long)s->size, (long long)size);
  if (pinned) return lt_cuda_pinned_storage_resize(s, size);
  if (s->flags & LT_STORAGE_DEVICE) return lt_cuda_storage_resize(s, size);
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
  if (s->flags & LT_STORAGE_DEVICE) return lt_cuda_storage_fill(s, value);
  int64_t n = s->size;
  if (lt_host_type(s->type) == LT_HALF) {
    uint16_t v = lt_float_to_half((float)value);
    uint16_t *d = (uint16_t *)s->data;
    for (int64_t i = 0; i < n; i++) d[i] = v;
    return 0;
  }
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
  if ((dst->flags | src->flags) & LT_STORAGE_DEVICE) return lt_cuda_storage_copy(dst, dst_off, src, src_off, n);
  if (dst->type == src->type) {
    memmove((char *)dst->data + dst_off * elemsizes[dst->type], (char *)src->data + src_off * elemsizes[src->type],
            n * elemsizes[dst->type]);
    return 0;
  }
  if (lt_host_type(src->type) == LT_HALF) {
    const uint16_t *s = (const uint16_t *)src->data + src_off;
    LT_DISPATCH_AS(dst->type, dst_t, {
      dst_t *d = (dst_t *)dst->data + dst_off;
      for (int64_t i = 0; i < n; i++) d[i] = (dst_t)lt_half_to_float(s[i]);
    });
    return 0;
  }
  if (lt_host_type(dst->type) == LT_HALF) {
    uint16_t *d = (uint16_t *)dst->data + dst_off;
    LT_DISPATCH_AS(src->type, src_t, {
      const src_t *s = (const src_t *)src->data + src_off;
      for (int64_t i = 0; i < n; i++) d[i] = lt_float_to_half((float)s[i]);
    });
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

/* ---- half precision ------------------------------------------------------
 * binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits. Other
 * types convert through float, as TH did (a double is rounded to float first). */

float lt_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);               /* inf, nan */
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  /* normal: rebias 15 -> 127 */
  } else if (mantissa == 0) {
    bits = sign;                                                 /* signed zero */
  } else {
    /* subnormal m * 2^-24: shift the leading 1 up to the implicit bit */
    uint32_t shifts = 0;
    while (!(mantissa & 0x400u)) { mantissa <<= 1; shifts++; }
    bits = sign | ((113 - shifts) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t lt_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);  /* nan stays a (quiet) nan */
  if (a >= 0x477ff000u) return sign | 0x7c00u;   /* >= 65520 (halfway past 65504): inf */
  if (a >= 0x38800000u) {                         /* >= 2^-14: a normal half */
    uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ffu);
    uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;  /* a carry into the exponent is right */
    return sign | (uint16_t)h;
  }
  if (a < 0x33000000u) return sign;               /* below 2^-25: rounds to zero */
  /* a subnormal half: m = value * 2^24 rounded to nearest even */
  uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - (a >> 23);               /* 14..24 */
  uint32_t h = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1))) h++;
  return sign | (uint16_t)h;
}

/* Strided copies and fills that involve a HalfTensor (lt_tensor_copy and
 * lt_tensor_fill hand them over; the general kernels have no half case). */
int lt_tensor_copy_half(lt_tensor *dst, const lt_tensor *src) {
  lt_iter a, b;
  lt_iter_init(&a, dst);
  lt_iter_init(&b, src);
  while (!lt_iter_done(&a)) {
    int64_t m = lt_iter_run(&a, &b, NULL);
    int64_t ds = a.inner_stride, ss = b.inner_stride;
    if (lt_host_type(dst->type) == LT_HALF && lt_host_type(src->type) == LT_HALF) {
      uint16_t *d = (uint16_t *)a.ptr;
      const uint16_t *s = (const uint16_t *)b.ptr;
      for (int64_t i = 0; i < m; i++) d[i * ds] = s[i * ss];
    } else if (lt_host_type(src->type) == LT_HALF) {
      const uint16_t *s = (const uint16_t *)b.ptr;
      LT_DISPATCH_AS(dst->type, dst_t, {
        dst_t *d = (dst_t *)a.ptr;
        for (int64_t i = 0; i < m; i++) d[i * ds] = (dst_t)lt_half_to_float(s[i * ss]);
      });
    } else {
      uint16_t *d = (uint16_t *)a.ptr;
      LT_DISPATCH_AS(src->type, src_t, {
        const src_t *s = (const src_t *)b.ptr;
        for (int64_t i = 0; i < m; i++) d[i * ds] = lt_float_to_half((float)s[i * ss]);
      });
    }
    lt_iter_advance(&a, m);
    lt_iter_advance(&b, m);
  }
  return 0;
}

int lt_tensor_fill_half(lt_tensor *t, double value) {
  uint16_t v = lt_float_to_half((float)value);
  lt_iter a;
  lt_iter_init(&a, t);
  while (!lt_iter_done(&a)) {
    int64_t m = a.inner_left;
    uint16_t *d = (uint16_t *)a.ptr;
    for (int64_t i = 0; i < m; i++) d[i * a.inner_stride] = v;
    lt_iter_advance(&a, m);
  }
  return 0;
}

/* ---- memory-mapped storages ---- */

typedef struct mapping {
  void *data;
  size_t bytes;
  int unlink_shm;   /* a shared-memory object this storage created the name of: removed at free */
  char name[];
} mapping;

static void release_mapping(void *ctx) {
  mapping *m = ctx;
  if (m->data) munmap(m->data, m->bytes);
  if (m->unlink_shm) shm_unlink(m->name);
  free(m);
}

lt_storage *lt_storage_new_mapped(int type, const char *filename, int shared, int sharedmem, int64_t size) {
  if (type < 0 || type >= LT_NTYPES) { lt_fail("unknown storage type %d", type); return NULL; }
  if (size < 0) { lt_fail("storage size must be non-negative, got %lld", (long long)size); return NULL; }
  sharedmem = shared && sharedmem;
  int es = elemsizes[type];
  int fd = sharedmem ? shm_open(filename, O_RDWR | O_CREAT, 0600)
                     : open(filename, shared ? O_RDWR | O_CREAT : O_RDONLY, 0600);
  if (fd < 0) {
    lt_fail("cannot open %s <%s> %s: %s", sharedmem ? "the shared memory object" : "the file", filename,
            shared ? "in read-write mode" : "for reading", strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    lt_fail("cannot stat <%s>: %s", filename, strerror(errno));
    close(fd);
    return NULL;
  }
  int64_t bytes = size > 0 ? size * es : (int64_t)st.st_size;
  if (size > 0 && bytes > (int64_t)st.st_size) {
    if (!shared) {
      lt_fail("the file <%s> has %lld bytes, smaller than the %lld (%lld elements) to map; open it shared to grow it",
              filename, (long long)st.st_size, (long long)bytes, (long long)size);
      close(fd);
      return NULL;
    }
    if (ftruncate(fd, bytes) != 0) {
      lt_fail("cannot grow <%s> to %lld bytes: %s", filename, (long long)bytes, strerror(errno));
      close(fd);
      return NULL;
    }
  }
  mapping *m = calloc(1, sizeof *m + strlen(filename) + 1);
  if (!m) { close(fd); lt_fail("out of memory"); return NULL; }
  strcpy(m->name, filename);
  m->unlink_shm = sharedmem;
  m->bytes = (size_t)bytes;
  if (bytes > 0) {
    m->data = mmap(NULL, m->bytes, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (m->data == MAP_FAILED) {
      m->data = NULL;
      lt_fail("cannot map <%s> (%lld bytes): %s", filename, (long long)bytes, strerror(errno));
      close(fd);
      release_mapping(m);
      return NULL;
    }
  }
  close(fd);
  lt_storage *s = lt_storage_new_foreign(type, m->data, bytes / es, release_mapping, m);
  if (!s) release_mapping(m);
  return s;
}
