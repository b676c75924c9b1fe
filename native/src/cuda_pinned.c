/* Pinned (page-locked) host memory for cutorch.createCudaHost*Tensor, copyAsync between it and device memory,
 * and the staging of pageable uploads.
 *
 * A pinned storage is a host storage (its tensors are FloatTensor and the like, as cutorch's were) whose memory is
 * a block of the pinned cache below. Copies from or to it that lt_cuda_copy_async takes are queued on the calling
 * thread's current stream on the device, where its kernels run, and return at once: the kernels queued after a
 * host-to-device copy see its data, and the host may read a device-to-host copy's destination after
 * cutorch.synchronize() (or streamSynchronize), as with cutorch. Everything else copies synchronously
 * (lt_tensor_copy), except uploads from pageable memory, which go through a cached block without waiting.
 *
 * The cache (cutorch's THCCachingHostAllocator, PyTorch's CachingHostAllocator): cuMemHostAlloc costs about as
 * much as the copy it serves and synchronizes the device, so a block whose storage goes is kept, and handed out
 * again once every device use of it is done. Each use is an event recorded on the using stream right after the
 * copy is queued (so it completes when the copy has run); a free block is reusable once all its events are done,
 * which is checked (cuEventQuery, no waiting) when a block is asked for. Sizes are rounded up to a power of two
 * (at least 512 bytes) and a request takes a free block of exactly its rounded size, so a small request never
 * holds a large block. Memory is portable (every context may DMA from it) and stays in the cache until
 * lt_cuda_pinned_empty_cache. One mutex guards the cache; events are made and queried under it. */
#include <pthread.h>

#include "lt_internal.h"

enum { MEMHOSTALLOC_PORTABLE = 1, PINNED_MIN = 512 };
/* Pageable uploads staged through the cache up to this size; larger ones copy synchronously (their copy time
 * dwarfs a wait, and the cache would otherwise keep a block that large). */
static const int64_t STAGE_MAX = (int64_t)64 << 20;
/* Staged uploads of one size still queued, beyond which the next copies synchronously (and so lets them all run):
 * many small uploads behind a long kernel (element writes, say) would otherwise each pin a block of their own. */
enum { STAGE_BUSY_MAX = 64 };
typedef unsigned long long cu_ptr;

static struct {
  int (*host_alloc)(void **, size_t, unsigned);
  int (*free_host)(void *);
  int (*dtoh_async)(void *, cu_ptr, size_t, void *);
  int (*htod_async)(cu_ptr, const void *, size_t, void *);
} drv;
static int resolved;

static int resolve(void) {
  static const lt_cuda_sym syms[] = {{(void **)&drv.host_alloc, "cuMemHostAlloc"},
                                     {(void **)&drv.free_host, "cuMemFreeHost"},
                                     {(void **)&drv.dtoh_async, "cuMemcpyDtoHAsync_v2"},
                                     {(void **)&drv.htod_async, "cuMemcpyHtoDAsync_v2"}};
  if (lt_cuda_require(LT_CUDA_DRIVER)) return -1;
  return lt_cuda_find_symbols(LT_CUDA_DRIVER, syms, sizeof syms / sizeof syms[0], &resolved);
}

typedef struct block {
  void *data;
  size_t size;           /* rounded */
  int device;            /* whose context allocated it: made current again to free it */
  int held;              /* by a storage or a staged upload in progress */
  int nevents, capevents;
  void **events;         /* lt_cuda_event_new's: uses not yet seen done */
  struct block *next;
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block *blocks;
static int64_t n_blocks, n_bytes, n_host_allocs;

static size_t rounded(size_t bytes) {
  size_t r = PINNED_MIN;
  while (r < bytes) r <<= 1;
  return r;
}

/* Drop the block's events that are done; the number left (-1 on a query error, which keeps the block out of use). */
static int poll_events(block *b) {
  int kept = 0;
  for (int i = 0; i < b->nevents; i++) {
    int q = lt_cuda_event_query(b->events[i]);
    if (q < 0) return -1;
    if (q == 0) lt_cuda_event_free(b->events[i]);
    else b->events[kept++] = b->events[i];
  }
  b->nevents = kept;
  return kept;
}

/* A held block of at least bytes, zero-filled if asked, or NULL (lt_errmsg, except when max_busy blocks of that size
 * are still used by queued copies: then *busy is set and no block is made). */
static block *take(size_t bytes, int zero, int max_busy, int *busy) {
  if (resolve()) return NULL;
  const size_t size = rounded(bytes);
  pthread_mutex_lock(&lock);
  block *found = NULL;
  int in_use = 0;
  for (block *b = blocks; b && !found; b = b->next) {
    if (b->held || b->size != size) continue;
    if (poll_events(b) == 0) found = b;
    else in_use++;
  }
  if (found) found->held = 1;
  pthread_mutex_unlock(&lock);
  if (!found && max_busy > 0 && in_use >= max_busy) {
    *busy = 1;
    return NULL;
  }
  if (!found) {
    const int device = lt_cuda_storage_device();
    if (lt_cuda_set_device(device)) return NULL;
    found = calloc(1, sizeof *found);
    if (!found) {
      lt_fail("cuda: out of host memory for a pinned block");
      return NULL;
    }
    int rc = drv.host_alloc(&found->data, size, MEMHOSTALLOC_PORTABLE);
    if (rc != 0) {
      free(found);
      lt_fail("cuda: cuMemHostAlloc of %zu bytes: %s (%d)", size, lt_cuda_error_text(rc), rc);
      return NULL;
    }
    found->size = size, found->device = device, found->held = 1;
    pthread_mutex_lock(&lock);
    found->next = blocks, blocks = found;
    n_blocks++, n_bytes += (int64_t)size, n_host_allocs++;
    pthread_mutex_unlock(&lock);
  }
  if (zero) memset(found->data, 0, bytes);   /* as every new host storage */
  return found;
}

static void give_back(void *ctx) {
  block *b = ctx;
  pthread_mutex_lock(&lock);
  b->held = 0;
  pthread_mutex_unlock(&lock);
}

/* The block's memory is used by the work queued so far on a stream of device (an event after it). */
static int record_use(block *b, int device, void *stream) {
  void *e;
  if (lt_cuda_event_new(device, &e)) return -1;
  if (lt_cuda_event_record_stream(e, stream)) {
    lt_cuda_event_free(e);
    return -1;
  }
  pthread_mutex_lock(&lock);
  if (b->nevents == b->capevents) {
    int cap = b->capevents ? 2 * b->capevents : 4;
    void **grown = realloc(b->events, (size_t)cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&lock);
      lt_cuda_event_free(e);   /* (destroying a recorded event is allowed: its work still runs) */
      return lt_fail("cuda: out of host memory for a pinned block's event");
    }
    b->events = grown, b->capevents = cap;
  }
  b->events[b->nevents++] = e;
  pthread_mutex_unlock(&lock);
  return 0;
}

lt_storage *lt_cuda_pinned_storage_new(int type, int64_t n) {
  if (type < 0 || type >= LT_NTYPES || n < 0) {
    lt_fail("cutorch.createCudaHostTensor: bad type %d or size %lld", type, (long long)n);
    return NULL;
  }
  block *b = take((size_t)(n > 0 ? n : 1) * (size_t)lt_elemsize(type), 1, 0, NULL);
  if (!b) return NULL;
  lt_storage *s = lt_storage_new_foreign(type, b->data, n, give_back, b);
  if (!s) {
    give_back(b);
    return NULL;
  }
  s->flags |= LT_STORAGE_PINNED;
  return s;
}

int lt_cuda_pinned_storage_resize(lt_storage *s, int64_t n) {
  const size_t es = (size_t)lt_elemsize(s->type), bytes = (size_t)(n > 0 ? n : 1) * es;
  block *old = s->release_ctx;
  if (rounded(bytes) == old->size) {   /* the same block size: in place */
    if (n > s->size) memset((char *)s->data + s->size * es, 0, (size_t)(n - s->size) * es);
    s->size = n;
    return 0;
  }
  block *b = take(bytes, 1, 0, NULL);
  if (!b) return -1;
  const int64_t keep = n < s->size ? n : s->size;
  if (keep > 0) memcpy(b->data, s->data, (size_t)keep * es);
  s->data = b->data, s->release_ctx = b, s->size = n;
  give_back(old);   /* reused once the copies queued on it have run */
  return 0;
}

int lt_storage_is_pinned(const lt_storage *s) { return s && (s->flags & LT_STORAGE_PINNED); }

int lt_cuda_copy_async(lt_tensor *dst, const lt_tensor *src) {
  const int to_device = lt_tensor_is_device(dst) && src->storage && lt_storage_is_pinned(src->storage);
  const int to_host = lt_tensor_is_device(src) && dst->storage && lt_storage_is_pinned(dst->storage);
  const int64_t n = lt_tensor_nelement(src);
  if ((!to_device && !to_host) || lt_host_type(dst->type) != lt_host_type(src->type) || lt_tensor_nelement(dst) != n ||
      !lt_tensor_is_contiguous(dst) || !lt_tensor_is_contiguous(src))
    return 1;   /* not a copy this takes: the caller copies synchronously */
  if (n == 0) return 0;
  if (resolve()) return -1;
  const int device = (to_device ? dst : src)->storage->device;
  void *stream = NULL;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  const size_t bytes = (size_t)n * (size_t)lt_elemsize(src->type);
  lt_cuda_count(LT_CUDA_COUNT_HOST_COPIES);   /* (no wait: pinned memory) */
  int rc = to_device ? drv.htod_async((cu_ptr)(uintptr_t)lt_tensor_data(dst), lt_tensor_data((lt_tensor *)src), bytes,
                                      stream)
                     : drv.dtoh_async(lt_tensor_data(dst), (cu_ptr)(uintptr_t)lt_tensor_data((lt_tensor *)src),
                                      bytes, stream);
  if (rc != 0)
    return lt_fail("copyAsync: cuMemcpy%sAsync of %zu bytes on device %d: %s (%d)", to_device ? "HtoD" : "DtoH",
                   bytes, device, lt_cuda_error_text(rc), rc);
  /* the pinned block stays out of the cache's reach until this copy has run */
  const lt_storage *host = (to_device ? src : dst)->storage;
  if (host->release == give_back) return record_use(host->release_ctx, device, stream);
  return 0;
}

int lt_cuda_pinned_stage_to_device(int device, void *stream, void *dst, const void *src, int64_t bytes) {
  if (bytes <= 0 || bytes > STAGE_MAX) return 1;
  int busy = 0;
  block *b = take((size_t)bytes, 0, STAGE_BUSY_MAX, &busy);
  if (!b) return 1;   /* no pinned memory to be had, or enough already queued: the caller copies and waits */
  memcpy(b->data, src, (size_t)bytes);
  int rc = drv.htod_async((cu_ptr)(uintptr_t)dst, b->data, (size_t)bytes, stream);
  if (rc != 0) {
    give_back(b);
    return lt_fail("cuda: cuMemcpyHtoDAsync of %lld bytes on device %d: %s (%d)", (long long)bytes, device,
                   lt_cuda_error_text(rc), rc);
  }
  rc = record_use(b, device, stream);
  give_back(b);
  return rc;
}

int lt_cuda_pinned_empty_cache(void) {
  if (!resolved) return 0;   /* nothing was ever allocated */
  int rc = 0;
  pthread_mutex_lock(&lock);
  for (block **p = &blocks; *p;) {
    block *b = *p;
    if (!b->held && poll_events(b) == 0) {
      *p = b->next;
      if (lt_cuda_set_device(b->device) == 0) drv.free_host(b->data);
      else rc = -1;
      n_blocks--, n_bytes -= (int64_t)b->size;
      free(b->events);
      free(b);
    } else {
      p = &b->next;
    }
  }
  pthread_mutex_unlock(&lock);
  if (lt_cuda_set_device(lt_cuda_storage_device())) rc = -1;   /* the caller's device current again */
  return rc;
}

void lt_cuda_pinned_cache_stats(int64_t *nblocks, int64_t *bytes, int64_t *free_blocks, int64_t *host_allocs) {
  pthread_mutex_lock(&lock);
  int64_t f = 0;
  for (block *b = blocks; b; b = b->next) f += !b->held;
  *nblocks = n_blocks, *bytes = n_bytes, *free_blocks = f, *host_allocs = n_host_allocs;
  pthread_mutex_unlock(&lock);
}
