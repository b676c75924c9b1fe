/* cutorch's storages in GPU memory: allocation through one caching allocator, and the copies and fills of
 * storages and tensors that touch device memory (see lt_cuda_storage.h). The element math of the copies runs
 * on the device (lt_cuops_copy converts types and strides there); the host side only moves contiguous bytes. */
#include <pthread.h>

#include "lt_internal.h"

static int enabled;                          /* atomic: device storages on */
static lt_cuda_allocator *allocator;         /* set once, under lock, before enabled */
static lt_cuops ops_of[LT_CUDA_MAX_DEVICES];
static int ops_ready[LT_CUDA_MAX_DEVICES];   /* atomic; also the devices work can have gone to (synchronize(-1)) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_device;
static __thread int host_scope;

int lt_cuda_storage_enable(void) {
  if (__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) return 0;
  int count = 0;
  if (lt_cuda_device_count(&count)) return -1;
  if (count == 0) return lt_fail("cuda: no CUDA device: %s", lt_cuda_library_info(LT_CUDA_DRIVER));
  if (lt_cuda_require(LT_CUDA_NVRTC)) {
    char why[512];   /* lt_fail formats into the buffer lt_errmsg() reads from */
    snprintf(why, sizeof why, "%s", lt_errmsg());
    return lt_fail("cuda: the kernels need NVRTC: %s", why);
  }
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (!allocator) {
    lt_cuda_backend *backend = lt_cuda_device_backend();
    if (!backend || !(allocator = lt_cuda_alloc_new(backend))) rc = -1;
  }
  if (rc == 0) __atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return rc;
}

int lt_cuda_storage_enabled(void) { return __atomic_load_n(&enabled, __ATOMIC_ACQUIRE); }

int lt_cuda_storage_set_device(int device) {
  int count = 0;
  if (lt_cuda_device_count(&count)) return -1;
  if (device < 0 || device >= count || device >= LT_CUDA_MAX_DEVICES)
    return lt_fail("cuda: device %d is out of range: this machine has %d CUDA device%s", device, count,
                   count == 1 ? "" : "s");
  if (lt_cuda_set_device(device)) return -1;
  current_device = device;
  return 0;
}

int lt_cuda_storage_device(void) { return current_device; }

int lt_cuda_storage_host_scope(int delta) {
  host_scope += delta;
  if (host_scope < 0) host_scope = 0;
  return host_scope;
}

int lt_storage_is_device(const lt_storage *s) { return s && (s->flags & LT_STORAGE_DEVICE); }
int lt_tensor_is_device(const lt_tensor *t) { return t && lt_storage_is_device(t->storage); }

lt_cuda_allocator *lt_cuda_storage_allocator(void) { return lt_cuda_storage_enabled() ? allocator : NULL; }

const lt_cuops *lt_cuda_storage_ops(int device) {
  if (!lt_cuda_storage_enabled()) {
    lt_fail("cuda: device storages are off (cutorch runs on the CPU)");
    return NULL;
  }
  if (device < 0 || device >= LT_CUDA_MAX_DEVICES) {
    lt_fail("cuda: device %d is out of range", device);
    return NULL;
  }
  if (!__atomic_load_n(&ops_ready[device], __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&lock);
    int rc = ops_ready[device] ? 0 : lt_cuda_ops_init(&ops_of[device], device, allocator);
    if (rc == 0) __atomic_store_n(&ops_ready[device], 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    if (rc) return NULL;
  }
  return &ops_of[device];
}

int lt_cuda_storage_synchronize(int device) {
  static int (*ctx_sync)(void);
  if (!lt_cuda_storage_enabled()) return 0;
  if (!ctx_sync && !(ctx_sync = (int (*)(void))lt_cuda_symbol(LT_CUDA_DRIVER, "cuCtxSynchronize"))) return -1;
  for (int d = 0; d < LT_CUDA_MAX_DEVICES; d++) {
    if (device >= 0 ? d != device : !__atomic_load_n(&ops_ready[d], __ATOMIC_ACQUIRE)) continue;
    if (lt_cuda_set_device(d)) return -1;
    lt_cuda_count(LT_CUDA_COUNT_HOST_WAITS);
    int rc = ctx_sync();
    if (rc) return lt_fail("cuda: synchronizing device %d: %s (%d)", d, lt_cuda_error_text(rc), rc);
  }
  return lt_cuda_set_device(current_device);
}

/* ---------------------------------------------------------------- storages */

/* A 1-D view of n elements of s from element offset off (holds a reference: lt_tensor_clear it). */
static void flat_view(lt_tensor *t, lt_storage *s, int64_t off, int64_t n) {
  lt_tensor_init(t, s->type);
  lt_tensor_set_storage(t, s, off, 1, &n, NULL);
}

/* A new device storage of type on device (zero-filled), or NULL with lt_errmsg. */
static lt_storage *device_storage(int type, int64_t size, int device) {
  const lt_cuops *ops = lt_cuda_storage_ops(device);
  if (!ops) return NULL;
  lt_storage *s = calloc(1, sizeof *s);
  if (!s) {
    lt_fail("out of memory allocating a storage");
    return NULL;
  }
  s->type = type;
  s->size = size;
  s->flags = LT_STORAGE_OWNED | LT_STORAGE_DEVICE;
  s->device = device;
  s->refcount = 1;
  if (size > 0) {
    void *stream = NULL;   /* the block belongs to the current stream, where its fill and first uses go */
    if (lt_cuda_resolve_stream(device, &stream) ||
        lt_cuda_alloc(allocator, device, size * lt_elemsize(type), stream, &s->data)) {
      free(s);
      return NULL;
    }
    lt_tensor all;
    flat_view(&all, s, 0, size);
    int rc = lt_cuops_fill(ops, NULL, &all, 0);
    lt_tensor_clear(&all);   /* drops the view's reference: s stays at 1 */
    if (rc) {
      lt_cuda_alloc_free(allocator, s->data);
      free(s);
      return NULL;
    }
  }
  return s;
}

/* storage.c asks here before making a storage of a Cuda type. */
lt_storage *lt_cuda_storage_new_if_device(int type, int64_t size, int *handled) {
  *handled = type >= LT_CUDA_BYTE && host_scope == 0 && lt_cuda_storage_enabled();
  return *handled ? device_storage(type, size, current_device) : NULL;
}

void lt_cuda_storage_free_data(lt_storage *s) {
  if (s->data && lt_cuda_alloc_free(allocator, s->data))
    fprintf(stderr, "luatorch: freeing a device storage: %s\n", lt_errmsg());   /* from a finalizer: no caller */
  s->data = NULL;
}

int lt_cuda_storage_resize(lt_storage *s, int64_t size) {
  lt_storage *grown = device_storage(s->type, size, s->device);
  if (!grown) return -1;
  int64_t keep = size < s->size ? size : s->size;
  int rc = 0;
  if (keep > 0) {
    lt_tensor from, to;
    flat_view(&from, s, 0, keep);
    flat_view(&to, grown, 0, keep);
    rc = lt_cuops_copy(lt_cuda_storage_ops(s->device), NULL, &to, &from);
    lt_tensor_clear(&from);
    lt_tensor_clear(&to);
  }
  if (rc == 0) {   /* s takes grown's memory; grown goes with s's old memory */
    void *old = s->data;
    s->data = grown->data, s->size = size;
    grown->data = old;
  }
  lt_storage_release(grown);
  return rc;
}

/* ---------------------------------------------------------------- copies */

/* A contiguous tensor shaped like like, of element type type, in fresh memory: device memory of device, or
 * host memory (device < 0; host type). */
static int scratch(lt_tensor *t, int type, const lt_tensor *like, int device) {
  lt_tensor_init(t, device < 0 ? lt_host_type(type) : lt_host_type(type) + LT_CUDA_BYTE);
  int64_t n = lt_tensor_nelement(like);
  lt_storage *s = device < 0 ? lt_storage_new(t->type, n) : device_storage(t->type, n, device);
  if (!s) return -1;
  int rc = lt_tensor_set_storage(t, s, 0, like->ndim, like->size, NULL);
  lt_storage_release(s);
  return rc;
}

static int64_t nbytes(const lt_tensor *t) { return lt_tensor_nelement(t) * lt_elemsize(t->type); }

/* Host src into device dst: src's bytes go over as they are (made contiguous on the host first if need be),
 * and the device converts type and layout. */
static int upload(lt_tensor *dst, const lt_tensor *src) {
  const lt_cuops *ops = lt_cuda_storage_ops(dst->storage->device);
  if (!ops) return -1;
  lt_tensor host = {0}, dev = {0};
  int rc = 0;
  const lt_tensor *from = src;
  if (!lt_tensor_is_contiguous(src)) {
    rc = scratch(&host, src->type, src, -1) || lt_tensor_copy(&host, src);
    from = &host;
  }
  int direct = lt_tensor_is_contiguous(dst) && lt_host_type(dst->type) == lt_host_type(src->type);
  if (rc == 0 && direct) {
    rc = ops->to_device(ops->ctx, lt_tensor_data(dst), lt_tensor_data(from), nbytes(dst), NULL);
  } else if (rc == 0) {
    rc = scratch(&dev, src->type, src, dst->storage->device) ||
         ops->to_device(ops->ctx, lt_tensor_data(&dev), lt_tensor_data(from), nbytes(&dev), NULL) ||
         lt_cuops_copy(ops, NULL, dst, &dev);
  }
  lt_tensor_clear(&host);
  lt_tensor_clear(&dev);
  return rc ? -1 : 0;
}

/* Device src into host dst: the device makes a contiguous copy in dst's type if src is not one already,
 * its bytes come over, and land in dst directly when dst is contiguous. */
static int download(lt_tensor *dst, const lt_tensor *src) {
  const lt_cuops *ops = lt_cuda_storage_ops(src->storage->device);
  if (!ops) return -1;
  lt_tensor dev = {0}, host = {0};
  int rc = 0;
  const lt_tensor *from = src;
  if (!lt_tensor_is_contiguous(src) || lt_host_type(dst->type) != lt_host_type(src->type)) {
    rc = scratch(&dev, dst->type, src, src->storage->device) || lt_cuops_copy(ops, NULL, &dev, src);
    from = &dev;
  }
  if (rc == 0 && lt_tensor_is_contiguous(dst)) {
    rc = ops->to_host(ops->ctx, lt_tensor_data(dst), lt_tensor_data(from), nbytes(dst), NULL);
  } else if (rc == 0) {
    rc = scratch(&host, dst->type, src, -1) ||
         ops->to_host(ops->ctx, lt_tensor_data(&host), lt_tensor_data(from), nbytes(&host), NULL) ||
         lt_tensor_copy(dst, &host);
  }
  lt_tensor_clear(&dev);
  lt_tensor_clear(&host);
  return rc ? -1 : 0;
}

/* Device src into device dst on another device: contiguous bytes go over by the driver's peer copy, src made
 * contiguous on its device first if need be, and converted to dst's type and layout on dst's device. */
static int between_devices(lt_tensor *dst, const lt_tensor *src) {
  int from_device = src->storage->device, to_device = dst->storage->device;
  lt_tensor packed = {0}, landed = {0};
  int rc = 0;
  const lt_tensor *from = src;
  if (!lt_tensor_is_contiguous(src)) {
    rc = scratch(&packed, src->type, src, from_device) || lt_cuops_copy(lt_cuda_storage_ops(from_device), NULL, &packed, src);
    from = &packed;
  }
  lt_tensor *to = dst;
  if (rc == 0 && (!lt_tensor_is_contiguous(dst) || dst->type != src->type)) {
    rc = scratch(&landed, src->type, src, to_device);
    to = &landed;
  }
  if (rc == 0) rc = lt_cuda_copy_peer(to_device, lt_tensor_data(to), from_device, lt_tensor_data(from), nbytes(from));
  if (rc == 0 && to != dst) rc = lt_cuops_copy(lt_cuda_storage_ops(to_device), NULL, dst, &landed);
  lt_tensor_clear(&packed);
  lt_tensor_clear(&landed);
  if (lt_cuda_set_device(current_device)) rc = -1;
  return rc ? -1 : 0;
}

/* lt_tensor_copy's case where either side is device memory (same element counts, checked there). */
int lt_cuda_tensor_copy(lt_tensor *dst, const lt_tensor *src) {
  int dd = lt_tensor_is_device(dst), sd = lt_tensor_is_device(src);
  if (dd && sd && dst->storage->device == src->storage->device)
    return lt_cuops_copy(lt_cuda_storage_ops(dst->storage->device), NULL, dst, src);
  if (dd && sd) return between_devices(dst, src);
  return dd ? upload(dst, src) : download(dst, src);
}

int lt_cuda_tensor_copy_many(lt_tensor *const *dst, const lt_tensor *const *src, int n) {
  /* the pairs with elements (an empty tensor may have no device memory to tell its GPU by) */
  lt_tensor **to = malloc((size_t)(n > 0 ? n : 1) * sizeof *to);
  const lt_tensor **from = malloc((size_t)(n > 0 ? n : 1) * sizeof *from);
  if (!to || !from) {
    free(to), free(from);
    return lt_fail("copy: out of host memory");
  }
  int m = 0;
  for (int k = 0; k < n; k++)
    if (lt_tensor_nelement(dst[k]) > 0) to[m] = dst[k], from[m] = src[k], m++;
  int batch = m >= 3;   /* (two: the table's upload would cost what a launch saves) */
  for (int k = 0; batch && k < m; k++)
    batch = lt_tensor_is_device(to[k]) && lt_tensor_is_device(from[k]) && to[k]->type == from[k]->type &&
            to[k]->type == to[0]->type && to[k]->storage->device == to[0]->storage->device &&
            from[k]->storage->device == to[0]->storage->device;
  int rc = 0;
  if (batch) rc = lt_cuops_copy_batch(lt_cuda_storage_ops(to[0]->storage->device), NULL, to, from, m);
  for (int k = 0; !batch && rc == 0 && k < n; k++) rc = lt_tensor_copy(dst[k], src[k]);
  free(to), free(from);
  return rc;
}

int lt_cuda_tensor_fill(lt_tensor *t, double value) {
  return lt_cuops_fill(lt_cuda_storage_ops(t->storage->device), NULL, t, value);
}

int lt_cuda_storage_fill(lt_storage *s, double value) {
  lt_tensor all;
  flat_view(&all, s, 0, s->size);
  int rc = s->size ? lt_cuda_tensor_fill(&all, value) : 0;
  lt_tensor_clear(&all);
  return rc;
}

int lt_cuda_storage_copy(lt_storage *dst, int64_t dst_off, lt_storage *src, int64_t src_off, int64_t n) {
  if (n == 0) return 0;
  lt_tensor d, s;
  flat_view(&d, dst, dst_off, n);
  flat_view(&s, src, src_off, n);
  int rc = lt_cuda_tensor_copy(&d, &s);
  lt_tensor_clear(&d);
  lt_tensor_clear(&s);
  return rc;
}

static int bytes_range(lt_storage *s, int64_t off, int64_t n, const char *what) {
  if (!lt_storage_is_device(s)) return lt_fail("cuda: %s: not a device storage", what);
  if (off < 0 || n < 0 || off + n > s->size)
    return lt_fail("cuda: %s: elements %lld..%lld are outside the storage's %lld", what, (long long)off + 1,
                   (long long)(off + n), (long long)s->size);
  return 0;
}

int lt_cuda_storage_read(lt_storage *s, int64_t off, int64_t n, void *host) {
  if (bytes_range(s, off, n, "reading a device storage")) return -1;
  if (n == 0) return 0;
  const lt_cuops *ops = lt_cuda_storage_ops(s->device);
  int es = lt_elemsize(s->type);
  return ops ? ops->to_host(ops->ctx, host, (char *)s->data + off * es, n * es, NULL) : -1;
}

int lt_cuda_storage_write(lt_storage *s, int64_t off, int64_t n, const void *host) {
  if (bytes_range(s, off, n, "writing a device storage")) return -1;
  if (n == 0) return 0;
  const lt_cuops *ops = lt_cuda_storage_ops(s->device);
  int es = lt_elemsize(s->type);
  return ops ? ops->to_device(ops->ctx, (char *)s->data + off * es, host, n * es, NULL) : -1;
}

/* One element through a one-element host tensor of the storage's type (the host copy converts). */
int lt_cuda_storage_get(lt_storage *s, int64_t index, double *value) {
  lt_storage *one = lt_storage_new(LT_DOUBLE, 1);
  lt_storage *raw = lt_storage_new(lt_host_type(s->type), 1);
  int rc = !one || !raw || lt_cuda_storage_read(s, index, 1, raw->data) || lt_storage_copy(one, 0, raw, 0, 1);
  if (rc == 0) *value = lt_number(*(double *)one->data);   /* for Lua */
  lt_storage_release(one);
  lt_storage_release(raw);
  return rc ? -1 : 0;
}

int lt_cuda_storage_set(lt_storage *s, int64_t index, double value) {
  lt_storage *one = lt_storage_new(LT_DOUBLE, 1);
  lt_storage *raw = lt_storage_new(lt_host_type(s->type), 1);
  int rc = !one || !raw;
  if (rc == 0) {
    *(double *)one->data = value;
    rc = lt_storage_copy(raw, 0, one, 0, 1) || lt_cuda_storage_write(s, index, 1, raw->data);
  }
  lt_storage_release(one);
  lt_storage_release(raw);
  return rc ? -1 : 0;
}
