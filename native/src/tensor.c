/* Tensor geometry, strided iteration, copy and fill, thread count. */
#include "lt_internal.h"

void lt_tensor_init(lt_tensor *t, int type) {
  memset(t, 0, sizeof *t);
  t->type = type;
}

void lt_tensor_clear(lt_tensor *t) {
  lt_storage_release(t->storage);
  t->storage = NULL;
  t->offset = 0;
  t->ndim = 0;
}

static int check_geometry(int type, lt_storage *s, int64_t offset, int ndim, const int64_t *size,
                          const int64_t *stride) {
  if (ndim < 0 || ndim > LT_MAXDIM) return lt_fail("tensors have at most %d dimensions, got %d", LT_MAXDIM, ndim);
  if (offset < 0) return lt_fail("storage offset must be positive, got %lld", (long long)offset + 1);
  if (s && s->type != type)
    return lt_fail("storage type %s does not match tensor type %s", lt_type_name(s->type), lt_type_name(type));
  int64_t extent = 1, n = 1;
  for (int d = 0; d < ndim; d++) {
    if (stride && stride[d] < 0) return lt_fail("negative stride %lld in dimension %d", (long long)stride[d], d + 1);
    n *= size[d];
  }
  if (n == 0) return 0;
  if (stride) {
    int64_t last = 0;
    for (int d = 0; d < ndim; d++) last += (size[d] - 1) * stride[d];
    extent = last + 1;
  } else {
    extent = n;
  }
  if (ndim > 0 && (!s || offset + extent > s->size))
    return lt_fail("storage of %lld elements is too small for a view of size %lld at offset %lld (needs %lld)",
                   (long long)(s ? s->size : 0), (long long)n, (long long)offset + 1, (long long)(offset + extent));
  return 0;
}

/* Torch7 (TH) semantics: a size <= 0 ends the dimension list, so
 * Tensor(0) and Tensor(3, 0) have 0 and 1 dimensions. */
static int leading_dims(int ndim, const int64_t *size) {
  int n = 0;
  while (n < ndim && n < LT_MAXDIM && size[n] > 0) n++;
  return ndim > LT_MAXDIM ? ndim : n;
}

int lt_tensor_set_storage(lt_tensor *t, lt_storage *s, int64_t offset, int ndim, const int64_t *size,
                          const int64_t *stride) {
  ndim = leading_dims(ndim, size);
  if (check_geometry(t->type, s, offset, ndim, size, stride) != 0) return -1;
  /* size/stride may alias t's own arrays: copy before touching t. */
  int64_t sz[LT_MAXDIM], st[LT_MAXDIM];
  for (int d = 0; d < ndim; d++) sz[d] = size[d];
  if (stride) {
    for (int d = 0; d < ndim; d++) st[d] = stride[d];
  } else {
    int64_t acc = 1;
    for (int d = ndim - 1; d >= 0; d--) { st[d] = acc; acc *= sz[d] > 0 ? sz[d] : 1; }
  }
  lt_storage_retain(s);
  lt_storage_release(t->storage);
  t->storage = s;
  t->offset = offset;
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) { t->size[d] = sz[d]; t->stride[d] = st[d]; }
  return 0;
}

int lt_tensor_set(lt_tensor *t, const lt_tensor *src) {
  if (t == src) return 0;
  if (t->type != src->type)
    return lt_fail("cannot set a %sTensor to a %sTensor", lt_type_name(t->type), lt_type_name(src->type));
  return lt_tensor_set_storage(t, src->storage, src->offset, src->ndim, src->size, src->stride);
}

void lt_tensor_free_ref(void *ref) { lt_tensor_clear((lt_tensor *)ref); }
void lt_storage_release_ref(void *ref) { lt_storage_release(*(lt_storage **)ref); }

const char *lt_shape_str(const lt_tensor *t, char *buf, size_t len) {
  size_t pos = 0;
  pos += snprintf(buf + pos, len - pos, "[");
  for (int d = 0; d < t->ndim && pos < len; d++)
    pos += snprintf(buf + pos, len - pos, d ? " x %lld" : "%lld", (long long)t->size[d]);
  if (pos < len) snprintf(buf + pos, len - pos, "]");
  return buf;
}

int64_t lt_tensor_nelement(const lt_tensor *t) {
  if (t->ndim == 0) return 0;
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->size[d];
  return n;
}

int lt_tensor_resize(lt_tensor *t, int ndim, const int64_t *size) {
  if (ndim < 0 || ndim > LT_MAXDIM) return lt_fail("tensors have at most %d dimensions, got %d", LT_MAXDIM, ndim);
  for (int d = 0; d < ndim; d++)
    if (size[d] < 0) return lt_fail("invalid size %lld for dimension %d", (long long)size[d], d + 1);
  ndim = leading_dims(ndim, size);
  /* TH: resizing to the current sizes keeps the strides (a transposed
   * result tensor stays transposed). */
  if (ndim == t->ndim && (ndim == 0 || t->storage)) {
    int d = 0;
    while (d < ndim && t->size[d] == size[d]) d++;
    if (d == ndim) return 0;
  }
  int64_t sz[LT_MAXDIM], st[LT_MAXDIM], n = 1;
  for (int d = 0; d < ndim; d++) sz[d] = size[d];
  for (int d = ndim - 1; d >= 0; d--) { st[d] = n; n *= sz[d]; }
  if (ndim == 0) n = 0;
  int64_t need = t->offset + n;
  if (n > 0) {
    if (!t->storage) {
      lt_storage *s = lt_storage_new(t->type, need);
      if (!s) return -1;
      t->storage = s;
    } else if (need > t->storage->size) {
      if (lt_storage_resize(t->storage, need) != 0) return -1;
    }
  }
  t->ndim = ndim;
  for (int d = 0; d < ndim; d++) { t->size[d] = sz[d]; t->stride[d] = st[d]; }
  return 0;
}

int lt_tensor_is_contiguous(const lt_tensor *t) {
  int64_t expected = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->size[d] != 1) {
      if (t->stride[d] != expected) return 0;
      expected *= t->size[d];
    }
  }
  return 1;
}

int lt_tensor_is_same_size(const lt_tensor *a, const lt_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->size[d] != b->size[d]) return 0;
  return 1;
}

int64_t lt_tensor_extent(const lt_tensor *t) {
  if (lt_tensor_nelement(t) == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) last += (t->size[d] - 1) * t->stride[d];
  return last + 1;
}

void *lt_tensor_data(const lt_tensor *t) {
  if (!t->storage || !t->storage->data) return NULL;
  return (char *)t->storage->data + t->offset * lt_elemsize(t->type);
}

/* ---- iteration ---- */

int lt_collapse(const lt_tensor *t, int64_t *size, int64_t *stride) {
  int n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->size[d] == 1) continue;
    if (n > 0 && stride[n - 1] == t->stride[d] * t->size[d]) {
      size[n - 1] *= t->size[d];
      stride[n - 1] = t->stride[d];
    } else {
      size[n] = t->size[d];
      stride[n] = t->stride[d];
      n++;
    }
  }
  return n;
}

void lt_iter_init(lt_iter *it, const lt_tensor *t) {
  it->elemsize = lt_elemsize(t->type);
  it->remaining = lt_tensor_nelement(t);
  it->base = (char *)lt_tensor_data(t);
  it->ptr = it->base;
  it->ndim = lt_collapse(t, it->size, it->stride);
  if (it->ndim == 0) { /* a single element (all dims of size 1) */
    it->ndim = 1;
    it->size[0] = 1;
    it->stride[0] = 1;
  }
  for (int d = 0; d < it->ndim; d++) it->counter[d] = 0;
  it->inner_stride = it->stride[it->ndim - 1];
  it->inner_left = it->remaining > 0 ? it->size[it->ndim - 1] : 0;
}

int64_t lt_iter_run(const lt_iter *a, const lt_iter *b, const lt_iter *c) {
  int64_t n = a->inner_left;
  if (b && b->inner_left < n) n = b->inner_left;
  if (c && c->inner_left < n) n = c->inner_left;
  return n;
}

void lt_iter_advance(lt_iter *it, int64_t n) {
  it->remaining -= n;
  it->inner_left -= n;
  it->ptr += n * it->inner_stride * it->elemsize;
  if (it->inner_left > 0 || it->remaining <= 0) return;
  int last = it->ndim - 1;
  /* carry into the outer dimensions */
  int d = last - 1;
  for (; d >= 0; d--) {
    it->counter[d]++;
    if (it->counter[d] < it->size[d]) break;
    it->counter[d] = 0;
  }
  int64_t off = 0;
  for (int k = 0; k < last; k++) off += it->counter[k] * it->stride[k];
  it->ptr = it->base + off * it->elemsize;
  it->inner_left = it->size[last];
}

/* ---- copy / fill ---- */

int lt_tensor_copy_half(lt_tensor *dst, const lt_tensor *src); /* storage.c: half has no case in the dispatch */
int lt_tensor_fill_half(lt_tensor *t, double value);

int lt_tensor_copy(lt_tensor *dst, const lt_tensor *src) {
  int64_t n = lt_tensor_nelement(dst);
  if (n != lt_tensor_nelement(src))
    return lt_fail("inconsistent tensor size: copying %lld elements into %lld", (long long)lt_tensor_nelement(src),
                   (long long)n);
  if (n == 0) return 0;
  if (lt_tensor_is_device(dst) || lt_tensor_is_device(src)) return lt_cuda_tensor_copy(dst, src);
  int contiguous = lt_tensor_is_contiguous(dst) && lt_tensor_is_contiguous(src);
  if (contiguous && dst->type == src->type) {
    memmove(lt_tensor_data(dst), lt_tensor_data(src), n * lt_elemsize(dst->type));
    return 0;
  }
  if (lt_host_type(dst->type) == LT_HALF || lt_host_type(src->type) == LT_HALF) return lt_tensor_copy_half(dst, src);
  LT_DISPATCH_AS(dst->type, dst_t, {
    LT_DISPATCH_AS(src->type, src_t, {
      if (contiguous) {
        dst_t *d = (dst_t *)lt_tensor_data(dst);
        const src_t *s = (const src_t *)lt_tensor_data(src);
        int64_t lt_par_n = n;
        LT_PARALLEL_FOR
        for (int64_t i = 0; i < n; i++) d[i] = (dst_t)s[i];
      } else {
        lt_iter a, b;
        lt_iter_init(&a, dst);
        lt_iter_init(&b, src);
        while (!lt_iter_done(&a)) {
          int64_t m = lt_iter_run(&a, &b, NULL);
          dst_t *d = (dst_t *)a.ptr;
          const src_t *s = (const src_t *)b.ptr;
          int64_t ds = a.inner_stride, ss = b.inner_stride;
          for (int64_t i = 0; i < m; i++) d[i * ds] = (dst_t)s[i * ss];
          lt_iter_advance(&a, m);
          lt_iter_advance(&b, m);
        }
      }
    });
  });
  return 0;
}

int lt_tensor_fill(lt_tensor *t, double value) {
  int64_t n = lt_tensor_nelement(t);
  if (n == 0) return 0;
  if (lt_tensor_is_device(t)) return lt_cuda_tensor_fill(t, value);
  if (lt_host_type(t->type) == LT_HALF) return lt_tensor_fill_half(t, value);
  LT_DISPATCH(t->type, {
    scalar_t v = (scalar_t)value;
    if (lt_tensor_is_contiguous(t)) {
      scalar_t *d = (scalar_t *)lt_tensor_data(t);
        int64_t lt_par_n = n;
        LT_PARALLEL_FOR
      for (int64_t i = 0; i < n; i++) d[i] = v;
    } else {
      lt_iter a;
      lt_iter_init(&a, t);
      while (!lt_iter_done(&a)) {
        int64_t m = a.inner_left;
        scalar_t *d = (scalar_t *)a.ptr;
        for (int64_t i = 0; i < m; i++) d[i * a.inner_stride] = v;
        lt_iter_advance(&a, m);
      }
    }
  });
  return 0;
}

/* ---- threads ---- */

static int lt_threads = 0;
/* Worker threads (threads.c) each get their own share of the cores. */
static __thread int lt_local_threads = 0;
extern void lt_blas_set_threads(int n);

/* Set the process-wide (global) or this thread's (local) count. */
static void set_threads(int *where, int n) {
  if (n < 1) n = 1;
  *where = n;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  lt_blas_set_threads(n);
}

void lt_set_num_threads(int n) { set_threads(&lt_threads, n); }
void lt_set_local_threads(int n) { set_threads(&lt_local_threads, n); }

int lt_get_num_threads(void) {
  if (lt_local_threads > 0) return lt_local_threads;
  if (lt_threads > 0) return lt_threads;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
