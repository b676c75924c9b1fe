/* cutorch's device memory: a stream-ordered caching allocator over a backend.
 *
 * The allocator keeps the memory it got from the backend (cudaMalloc on a GPU, aligned host memory in
 * tests and on the CPU path) in segments and hands out blocks carved from them, so that the training
 * loop's steady state allocates without calling the backend (cudaMalloc and cudaFree synchronize the
 * device). Rules:
 *  - sizes are rounded up to 512 bytes; requests of at most 1 MiB ("small") are carved from 2 MiB
 *    segments of their own, larger ones from segments of their size rounded up to 2 MiB; a free block
 *    larger than asked is split (a large one only when more than 1 MiB would be left over, since no large
 *    request could use less), and a freed block merges with the free blocks beside it in its segment;
 *  - a free block is found best fit (the smallest that fits, then the lowest address) among the free
 *    blocks of the request's stream: a block belongs to the stream it was allocated on and, once freed,
 *    is at once reusable by that stream only (work queued on one stream runs in order, so that stream's
 *    next user comes after the last one);
 *  - lt_cuda_alloc_record_stream marks a block as used by another stream too: freeing it then records an
 *    event on each such stream, and the block waits (pending) until every one of those events is done;
 *    events are checked on each later allocation and free of that device, by lt_cuda_alloc_process_events
 *    and by lt_cuda_alloc_empty_cache;
 *  - when the backend says out of memory, the device's wholly free segments go back to the backend and
 *    the backend is asked once more; then the allocation fails with a message that names the size and
 *    the device's allocated and reserved bytes;
 *  - every returned pointer is 512-byte aligned when the backend's segments are (the host backend's are;
 *    cudaMalloc's are at least 256-byte aligned, 512 or more in practice);
 *  - thread safe: one mutex per device, and one for the table of live pointers (held briefly).
 * Devices are numbered from 0 (cutorch numbers them from 1). Streams and events are the backend's opaque
 * pointers; NULL is the device's default stream. */

enum {
  LT_CUDA_ALLOC_ROUND = 512,             /* size granularity and alignment of blocks */
  LT_CUDA_ALLOC_SMALL = 1048576,         /* requests up to this size are "small" */
  LT_CUDA_ALLOC_SMALL_SEGMENT = 2097152, /* the segment size of the small pool */
  LT_CUDA_ALLOC_LARGE_ROUND = 2097152,   /* large segments are rounded up to a multiple of this */

  LT_CUDA_BACKEND_OOM = 1,               /* dev_malloc: out of memory (other errors: -1 with lt_errmsg) */
  LT_CUDA_EVENT_DONE = 0,                /* event_query results; -1 is an error (lt_errmsg) */
  LT_CUDA_EVENT_PENDING = 1
};

/* What the allocator needs from a device. Every function gets ctx. dev_malloc: 0 with *ptr set, or
 * LT_CUDA_BACKEND_OOM, or -1 (another error, message through lt_fail). dev_free: 0 or -1. Events: create
 * one for a device, record it on a stream (it completes when the work queued on the stream so far has
 * run), query it (LT_CUDA_EVENT_DONE / LT_CUDA_EVENT_PENDING / -1), destroy it. The allocator copies this
 * struct; ctx must stay valid until lt_cuda_alloc_destroy returns. Calls come from any thread, with the
 * device's mutex held. */
typedef struct lt_cuda_backend {
  void *ctx;
  const char *name;     /* for messages: "host", "cuda" */
  int ndevices;
  int (*dev_malloc)(void *ctx, int device, int64_t size, void **ptr);
  int (*dev_free)(void *ctx, int device, void *ptr);
  int (*event_create)(void *ctx, int device, void **event);
  int (*event_record)(void *ctx, void *event, void *stream);
  int (*event_query)(void *ctx, void *event);
  void (*event_destroy)(void *ctx, void *event);
} lt_cuda_backend;

typedef struct lt_cuda_allocator lt_cuda_allocator;

/* Per device; bytes are block sizes (rounded), except requested_bytes.
 * reserved_bytes == allocated_bytes + pending_bytes + cached_bytes always. */
typedef struct lt_cuda_alloc_stats {
  int64_t allocated_bytes;       /* in blocks handed out and not freed */
  int64_t requested_bytes;       /* the sizes asked for, of those blocks */
  int64_t reserved_bytes;        /* in segments held from the backend */
  int64_t pending_bytes;         /* in freed blocks waiting for their events */
  int64_t cached_bytes;          /* in free blocks, ready for reuse */
  int64_t largest_free_block;
  int64_t peak_allocated_bytes;  /* since creation or lt_cuda_alloc_reset_peak */
  int64_t peak_reserved_bytes;
  int64_t active_blocks;         /* live allocations */
  int64_t pending_blocks;
  int64_t segments;
  int64_t allocs;                /* successful allocations of a nonzero size */
  int64_t frees;                 /* successful frees of a non-NULL pointer */
  int64_t cache_hits;            /* allocations served from a cached free block, no backend call */
  int64_t backend_mallocs;       /* segments obtained from the backend */
  int64_t backend_frees;         /* segments given back to it */
  int64_t ooms;                  /* out-of-memory answers from the backend, before or after the retry */
  int64_t failed_allocs;         /* allocations that failed (out of memory or a backend error) */
  int64_t events;                /* events recorded for record_stream'ed blocks */
} lt_cuda_alloc_stats;

/* One live allocation, as lt_cuda_alloc_block_info describes it. */
typedef struct lt_cuda_alloc_block {
  int device;
  void *stream;                  /* the stream it was allocated on */
  int64_t size;                  /* the block's size: the request rounded up, or more (an unsplit tail) */
  int64_t requested;
  void *segment;                 /* base address and size of the segment it was carved from */
  int64_t segment_size;
  int64_t recorded_streams;      /* other streams recorded with lt_cuda_alloc_record_stream */
} lt_cuda_alloc_block;

/* NULL (and lt_errmsg) on bad input or out of host memory. */
lt_cuda_allocator *lt_cuda_alloc_new(const lt_cuda_backend *backend);
/* Give every segment back to the backend, live blocks included, and destroy pending events unwaited. */
void lt_cuda_alloc_destroy(lt_cuda_allocator *a);
int lt_cuda_alloc_ndevices(const lt_cuda_allocator *a);

/* Allocate size bytes on device for use on stream. size 0 gives *ptr = NULL. */
int lt_cuda_alloc(lt_cuda_allocator *a, int device, int64_t size, void *stream, void **ptr);
/* Free a pointer lt_cuda_alloc returned (NULL: nothing). A pointer not live in this allocator (never
 * allocated, freed already, inside a block) is an error that changes nothing. */
int lt_cuda_alloc_free(lt_cuda_allocator *a, void *ptr);
/* The live block at ptr will also be used by stream's work (its allocation stream: nothing to do). */
int lt_cuda_alloc_record_stream(lt_cuda_allocator *a, void *ptr, void *stream);
int lt_cuda_alloc_block_info(lt_cuda_allocator *a, void *ptr, lt_cuda_alloc_block *info);
/* Return the pending blocks whose events are all done to the free pools. device -1: every device. */
int lt_cuda_alloc_process_events(lt_cuda_allocator *a, int device);
/* Process events, then give every wholly free segment back to the backend. device -1: every device. */
int lt_cuda_alloc_empty_cache(lt_cuda_allocator *a, int device);
int lt_cuda_alloc_stats_get(lt_cuda_allocator *a, int device, lt_cuda_alloc_stats *stats);
/* Peaks start again from the current values. device -1: every device. */
int lt_cuda_alloc_reset_peak(lt_cuda_allocator *a, int device);

/* ---- the host backend: device memory in host RAM, streams whose work is simulated ----
 *
 * A host stream counts the work items queued on it and those completed; an event recorded on it captures
 * the queued count and is done once that many have completed (an event never recorded is done, as in
 * CUDA). Nothing runs: tests (and the CPU path) queue and complete items by hand. The NULL stream is one
 * process-wide host stream, lt_host_stream_default(). A stream set to fail makes queries of its events
 * return -1. Counters are atomic; any thread may queue and complete. */
typedef struct lt_host_stream lt_host_stream;
lt_host_stream *lt_host_stream_new(void);
void lt_host_stream_free(lt_host_stream *s);
lt_host_stream *lt_host_stream_default(void);
int64_t lt_host_stream_enqueue(lt_host_stream *s, int64_t n);   /* queue n items; returns the queued count */
int64_t lt_host_stream_complete(lt_host_stream *s, int64_t n);  /* complete up to n; returns the completed count */
int64_t lt_host_stream_pending(lt_host_stream *s);              /* queued and not completed */
void lt_host_stream_set_error(lt_host_stream *s, int failed);

/* Counters of a host backend device, kept by the backend itself (an oracle for the allocator's stats). */
typedef struct lt_host_backend_stats {
  int64_t live_allocs;
  int64_t live_bytes;
  int64_t mallocs;
  int64_t frees;
  int64_t ooms;                  /* mallocs refused by the limit */
  int64_t bad_frees;             /* frees of a pointer it did not hand out (or twice); ignored */
  int64_t live_events;           /* created and not destroyed, all devices */
} lt_host_backend_stats;

/* ndevices devices; limit_bytes > 0 caps each device's live bytes (0: no cap). Memory is 512-byte
 * aligned and not zeroed. Free it with lt_host_backend_free after the allocators that use it. */
lt_cuda_backend *lt_host_backend_new(int ndevices, int64_t limit_bytes);
int lt_host_backend_set_limit(lt_cuda_backend *b, int device, int64_t limit_bytes);
int lt_host_backend_stats_get(lt_cuda_backend *b, int device, lt_host_backend_stats *stats);
/* -1 (and nothing freed) while allocations or events are live: destroy the allocator first. */
int lt_host_backend_free(lt_cuda_backend *b);

/* ---- a C stress test, for real thread interleaving (Python threads take turns on the GIL) ----
 *
 * nthreads pthreads (1..64) run iters steps each on one device: allocate a random size (up to max_size,
 * most of them small) on a random stream of streams[0..nstreams), write a word unique to the allocation
 * every 512 bytes of the block (and its last word: blocks start 512-aligned, so two overlapping blocks
 * share one of those words), check them just before freeing (an overlap of live blocks shows there),
 * sometimes record_stream the block on the thread's own stream (streams[i] for thread i, so nstreams >=
 * nthreads; only thread i queues and completes work there) and queue an item on it before the free; a
 * freed block whose item has not completed is checked again until then (the allocator must not hand it
 * out). Steps also complete own-stream work, process events and empty the cache. Every block is freed and
 * all own-stream work completed at the end. -1 with the first problem in lt_errmsg, counts in *result. */
typedef struct lt_cuda_alloc_stress_result {
  int64_t allocs;
  int64_t frees;
  int64_t recorded;              /* blocks freed with a pending record_stream'ed use */
  int64_t checks;                /* pattern checks made (live blocks before free, pending blocks later) */
  int64_t corruptions;
  int64_t errors;                /* allocator calls that failed */
} lt_cuda_alloc_stress_result;
int lt_cuda_alloc_stress(lt_cuda_allocator *a, int device, int nthreads, int64_t iters, int64_t max_size,
                         lt_host_stream *const *streams, int nstreams, uint64_t seed,
                         lt_cuda_alloc_stress_result *result);
