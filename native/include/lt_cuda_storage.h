/* cutorch's storages in GPU memory (native/src/cuda_storage.c).
 *
 * Off by default: storages of the Cuda types are host memory and every kernel runs the host code (the CPU
 * fallback). cutorch turns device storages on when it selects the GPU backend; from then on a new storage
 * of a Cuda type is memory of the calling thread's current device, from one process-wide caching allocator
 * over the driver (zero-filled, as our host storages are), and is given back to that allocator when its last
 * reference goes. Such a storage carries LT_STORAGE_DEVICE and its device number; lt_storage_fill,
 * lt_storage_copy, lt_storage_resize, lt_tensor_copy and lt_tensor_fill see the flag and run on the device
 * (copies between host and device memory stage through contiguous buffers). Every other host kernel
 * must not be given such a tensor: nn's kernels refuse it by name. All work goes to the calling thread's current
 * stream on the device (below), in order; copies to the host return once their data has arrived; a copy between
 * two devices is queued on the destination's current stream after the work queued so far on the source's, whose
 * later work waits for it (the host does not wait). Devices are numbered from 0. */

enum { LT_STORAGE_DEVICE = 8 };   /* storage flag: data is device memory of storage->device */
enum { LT_STORAGE_PINNED = 16 };  /* storage flag: data is pinned host memory (native/src/cuda_pinned.c) */

/* Turn device storages on: the driver, a device and NVRTC must be there (0, or -1 and why). Idempotent. */
int lt_cuda_storage_enable(void);
int lt_cuda_storage_enabled(void);
/* The calling thread's current device (new device storages go there); setting it makes the device's
 * primary context current on this thread. */
int lt_cuda_storage_set_device(int device);
int lt_cuda_storage_device(void);
/* While > 0 on a thread, new Cuda-type storages made by that thread are host memory again (for code that
 * must run the host kernels on Cuda-typed tensors, such as a staged fallback). Returns the new depth. */
int lt_cuda_storage_host_scope(int delta);

int lt_storage_is_device(const lt_storage *s);
int lt_tensor_is_device(const lt_tensor *t);
/* The operations (kernel launcher, copies, gemm) for device, made on first use over the shared allocator. */
const lt_cuops *lt_cuda_storage_ops(int device);
lt_cuda_allocator *lt_cuda_storage_allocator(void);
/* Wait for all work queued on device (-1: every device touched so far). */
int lt_cuda_storage_synchronize(int device);
/* The element at a 0-based storage offset of a device storage, read to / written from the host as a double
 * (what t[i] and s[i] do in Lua). */
int lt_cuda_storage_get(lt_storage *s, int64_t index, double *value);
int lt_cuda_storage_set(lt_storage *s, int64_t index, double value);
/* Bytes between a device storage and host memory: n elements from element offset off (host side: host
 * bytes of the storage's element type). The storage format's reader and writer use these. */
int lt_cuda_storage_read(lt_storage *s, int64_t off, int64_t n, void *host);
int lt_cuda_storage_write(lt_storage *s, int64_t off, int64_t n, const void *host);

/* Pinned host memory (native/src/cuda_pinned.c), cached as cutorch's THCCachingHostAllocator cached it:
 * cuMemHostAlloc is slow and synchronizes, so blocks (sizes rounded up to a power of two, at least 512 bytes) go
 * back to a cache when their storage goes, and are handed out again, best fit among the free blocks of exactly
 * that size, once the device work that used them is done: each asynchronous copy records an event on its stream
 * (lt_cuda_pinned_record), and a block is reused only after all its events are done.
 * lt_cuda_pinned_storage_new: a host storage of n elements in such a block (zero-filled), for
 * cutorch.createCudaHost*Tensor. lt_cuda_pinned_storage_resize (lt_storage_resize's, for such a storage): a block of
 * the new size, the kept elements copied, new ones zero, the old block back to the cache (as TH resized a storage of
 * cutorch's host allocator: fb.resnet.torch's trainer resizes an empty createCudaHostTensor() to each batch). */
lt_storage *lt_cuda_pinned_storage_new(int type, int64_t n);
int lt_cuda_pinned_storage_resize(lt_storage *s, int64_t n);
int lt_storage_is_pinned(const lt_storage *s);
/* copyAsync: a contiguous copy between a device tensor and a pinned host tensor of the same type and size, queued
 * on the current stream of the device tensor's device without waiting (0); 1 when the pair is not one (copy
 * synchronously); -1 error. */
int lt_cuda_copy_async(lt_tensor *dst, const lt_tensor *src);
/* A copy from pageable host memory to device memory that does not wait for the GPU: the bytes go into a cached
 * pinned block, which is queued to the device on (device, stream) and returned to the cache, reusable once that
 * copy has run. 1 when it was not done this way (too large, or no pinned memory to be had: copy synchronously),
 * 0 when queued, -1 on an error. */
int lt_cuda_pinned_stage_to_device(int device, void *stream, void *dst, const void *src, int64_t bytes);
/* Free the cached blocks that no storage holds and no device work uses. The stats, for tests: blocks and bytes in
 * the cache (held or not), blocks no storage holds (some perhaps still used by queued copies), cuMemHostAlloc calls
 * so far. */
int lt_cuda_pinned_empty_cache(void);
void lt_cuda_pinned_cache_stats(int64_t *blocks, int64_t *bytes, int64_t *free_blocks, int64_t *host_allocs);

/* cutorch's streams (native/src/cuda_stream.c): on each device, 0 is the legacy default stream and 1..n the
 * reserved ones (non-blocking, made on first use). The current index is per thread and holds on every device;
 * device work passed a NULL stream (kernels, copies, cuBLAS, cuDNN, the allocator's blocks) goes to it. */
enum { LT_CUDA_MAX_STREAMS = 256 };
int lt_cuda_stream_reserve(int n);
int lt_cuda_stream_count(void);
int lt_cuda_stream_set(int index);
int lt_cuda_stream_current(void);
/* The CUstream of index on device (NULL for 0). */
int lt_cuda_stream_of(int device, int index, void **stream);
/* *stream NULL: the calling thread's current stream on device (left NULL for stream 0). */
int lt_cuda_resolve_stream(int device, void **stream);
/* Work queued on the waiting stream from now on starts after the work queued on the waited-for stream so far
 * (an event; the host does not wait). Either may be on another device. */
int lt_cuda_stream_wait(int waiting_device, int waiting, int waited_device, int waited);
/* Events of device: the point a stream had reached when one was recorded there (the end of its work queued so
 * far), which other streams, on any device, can wait for without the host waiting. */
int lt_cuda_event_new(int device, void **event);
void lt_cuda_event_free(void *event);
int lt_cuda_event_record(void *event, int index);
/* The same on a CUstream of the event's device (NULL: its legacy stream), as lt_cuda_resolve_stream gives. */
int lt_cuda_event_record_stream(void *event, void *stream);
int lt_cuda_event_wait(void *event, int device, int index);
/* 0 once the work before the event's point has run (or it was never recorded), 1 before, -1 on an error. */
int lt_cuda_event_query(void *event);
/* Wait on the host for the work queued on stream index of device. */
int lt_cuda_stream_synchronize(int device, int index);
