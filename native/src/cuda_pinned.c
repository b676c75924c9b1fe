/* Pinned (page-locked) host memory for cutorch.createCudaHost*Tensor, and copyAsync between it and device memory.
 *
 * A pinned storage is a host storage (its tensors are FloatTensor and the like, as cutorch's were) whose memory
 * comes from cuMemHostAlloc (portable: every context can use it for DMA) and goes back with cuMemFreeHost when
 * its last reference goes. Copies from or to it that lt_cuda_copy_async takes are queued on the calling thread's
 * current stream on the device, where its kernels run, and return at once: the kernels queued after a host-to-device
 * copy see its data, and the host may read a device-to-host copy's destination after cutorch.synchronize() (or
 * streamSynchronize), as with cutorch. Everything else copies synchronously (lt_tensor_copy). */
#include "lt_internal.h"

enum { MEMHOSTALLOC_PORTABLE = 1 };
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

typedef struct {
  void *data;
  int device;   /* whose context allocated it: made current again to free it, whichever thread drops it */
} pinned;

static void release_pinned(void *ctx) {
  pinned *p = ctx;
  if (lt_cuda_set_device(p->device) == 0) drv.free_host(p->data);
  free(p);
}

lt_storage *lt_cuda_pinned_storage_new(int type, int64_t n) {
  if (type < 0 || type >= LT_NTYPES || n < 0) {
    lt_fail("cutorch.createCudaHostTensor: bad type %d or size %lld", type, (long long)n);
    return NULL;
  }
  if (resolve()) return NULL;
  const int device = lt_cuda_storage_device();
  if (lt_cuda_set_device(device)) return NULL;
  const size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)lt_elemsize(type);
  pinned *p = calloc(1, sizeof *p);
  if (!p) {
    lt_fail("cutorch.createCudaHostTensor: out of host memory");
    return NULL;
  }
  int rc = drv.host_alloc(&p->data, bytes, MEMHOSTALLOC_PORTABLE);
  if (rc != 0) {
    free(p);
    lt_fail("cutorch.createCudaHostTensor: cuMemHostAlloc of %zu bytes: %s (%d)", bytes, lt_cuda_error_text(rc), rc);
    return NULL;
  }
  memset(p->data, 0, bytes);   /* as every new host storage */
  p->device = device;
  lt_storage *s = lt_storage_new_foreign(type, p->data, n, release_pinned, p);
  if (!s) {
    release_pinned(p);
    return NULL;
  }
  s->flags |= LT_STORAGE_PINNED;
  return s;
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
  return 0;
}
