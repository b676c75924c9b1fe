/* An emulated libcuda.so.1 for tests on machines without a GPU: the part of the CUDA driver API that
 * native/src/cuda_lib.c and cuda_device.c call, over host memory, with kernels run by the SIMT emulator
 * (tests/cuda_host/simt.h). It lets the GPU side of the device path run end to end on a CPU: the real
 * CUBIN that NVRTC compiled is "loaded" (its ELF is read for the kernels it holds, so a kernel NVRTC did
 * not put there is not found), and cuLaunchKernel hands the same params array to the emulated kernel of
 * that name, from the libraries named in LT_EMULATED_CUDA_KERNELS (paths, ':'-separated).
 *
 * LT_EMULATED_CUDA_DEVICES devices (1 to 8, default 1), each with its primary context (the current one is per
 * thread, as the driver's), compute capability 8.0, 2 multiprocessors and 1 GiB (LT_EMULATED_CUDA_MEMORY_GIB).
 * Memory is allocated on the current context's device.
 *
 * Streams are asynchronous, and lazily so: a launch, an asynchronous copy, an event record or a wait only joins
 * its stream's queue (each context's legacy stream, and those cuStreamCreate made), and a queue runs only when
 * something waits for it: cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize, a wait item of another
 * stream that is reached (cuStreamWaitEvent: the other stream runs up to the recorded point first), a copy to
 * pageable host memory (synchronous in CUDA too), cuMemFree and cuMemFreeHost (which synchronize), and the
 * emulated libraries, which run their calls at once after their stream's queue (emulated_stream_flush). So a
 * kernel on one stream never sees the work of another stream it was not ordered after: a missing wait reads
 * stale data and gives wrong numbers, as it may on a GPU, instead of passing because everything ran in
 * submission order. Copies from pageable host memory take the bytes when they are queued (as CUDA's staging
 * does); pinned memory (cuMemHostAlloc) is read and written when the copy runs. cuEventQuery says NOT_READY
 * until the event's stream has run that far. LT_EMULATED_CUDA_SYNC=1 runs every item when it is queued (the
 * old synchronous model), to tell a missing wait from another fault.
 *
 * LT_EMULATED_CUDA_GUARD=1 makes device memory unreachable from the host, as a GPU's is: each device's memory
 * is an arena mapped PROT_NONE, opened only while this driver copies (the arenas the copy's pointers are in)
 * or runs a kernel (the current device's arena alone: a kernel reading another device's memory crashes, as it
 * faults on GPUs without peer access), and while the emulated cuBLAS multiplies (emulated_device_access), so
 * host code that dereferences a device pointer crashes the test instead of passing unnoticed. Without it
 * device memory is plain host memory, which tests that share buffers with the host (bench cuda's) rely on.
 *
 * LT_EMULATED_CUDA_NOEXEC=1 (null execution) checks and queues every call as usual, but runs no kernel and moves
 * no bytes, and the emulated libraries skip their arithmetic: a copy to the host fills it with all-one bytes
 * (which reads as -1, a kernel's "no error" index). Values are meaningless; what is left is the host's own cost
 * per call, which `luatorch bench cuda --ours-only` measures for whole training steps (device memory, malloc'ed
 * and never touched, costs nothing until used).
 * CUresult values as CUDA's: 0 success, 1 invalid value, 2 out of memory, 101 invalid device, 200 invalid
 * image, 201 invalid context, 500 not found, 719 launch failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_DEVICE = 101, INVALID_IMAGE = 200,
       INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500, NOT_READY = 600, LAUNCH_FAILED = 719,
       MAX_DEVICES = 8 };
/* per device: 1 GiB, or LT_EMULATED_CUDA_MEMORY_GIB (an unguarded device's memory is malloc'ed on demand) */
static long long memory_bytes(void) {
  static long long m;
  if (!__atomic_load_n(&m, __ATOMIC_ACQUIRE)) {
    const char *e = getenv("LT_EMULATED_CUDA_MEMORY_GIB");
    long long g = e && *e ? atoll(e) : 1;
    __atomic_store_n(&m, (g < 1 ? 1 : g) << 30, __ATOMIC_RELEASE);
  }
  return m;
}
#define MEMORY memory_bytes()
static long long in_use[MAX_DEVICES];
/* What the driver saw, for tests to compare with the C layer's own counts (lt_cuda_counted): [0] launches,
 * [1] stream and context synchronizations, [2] cuMemAlloc calls */
static long long seen[3];
EXPORT long long emulated_calls_seen(int which) {
  return which >= 0 && which < 3 ? __atomic_load_n(&seen[which], __ATOMIC_RELAXED) : -1;
}
static char contexts[MAX_DEVICES];            /* a primary context is the address of its device's byte */
static __thread int current = -1;             /* the calling thread's current context's device */

static int device_count(void) {
  static int n;
  if (!__atomic_load_n(&n, __ATOMIC_ACQUIRE)) {
    const char *e = getenv("LT_EMULATED_CUDA_DEVICES");
    int v = e && *e ? atoi(e) : 1;
    __atomic_store_n(&n, v < 1 ? 1 : v > MAX_DEVICES ? MAX_DEVICES : v, __ATOMIC_RELEASE);
  }
  return n;
}
static int valid(int dev) { return dev >= 0 && dev < device_count(); }

typedef int (*simt_launch_fn)(const char *, const char *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              void **, char *, int);
typedef int (*simt_count_fn)(void);
typedef const char *(*simt_info_fn)(int, int);

static struct { void *handle; simt_launch_fn launch; simt_count_fn count; simt_info_fn info; } libs[64];
static int nlibs = -1;

static void load_kernels(void) {
  if (nlibs >= 0) return;
  nlibs = 0;
  const char *list = getenv("LT_EMULATED_CUDA_KERNELS");
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", list ? list : "");
  for (char *save = NULL, *p = strtok_r(buf, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
    if (nlibs == (int)(sizeof libs / sizeof libs[0])) {
      fprintf(stderr, "emulated driver: more than %d kernel libraries in LT_EMULATED_CUDA_KERNELS; %s and later ones left out\n",
              nlibs, p);
      break;
    }
    void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "emulated driver: %s\n", dlerror());
      continue;
    }
    libs[nlibs].handle = h;
    libs[nlibs].launch = (simt_launch_fn)dlsym(h, "simt_launch");
    libs[nlibs].count = (simt_count_fn)dlsym(h, "simt_kernel_count");
    libs[nlibs].info = (simt_info_fn)dlsym(h, "simt_kernel_info");
    if (libs[nlibs].launch && libs[nlibs].count && libs[nlibs].info) nlibs++;
  }
}

EXPORT int cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }
EXPORT int cuDriverGetVersion(int *v) { *v = 13000; return OK; }
EXPORT int cuDeviceGetCount(int *n) { *n = device_count(); return OK; }
EXPORT int cuDeviceGet(int *dev, int ordinal) {
  if (!valid(ordinal)) return INVALID_DEVICE;
  *dev = ordinal;
  return OK;
}
EXPORT int cuDeviceGetName(char *name, int len, int dev) {
  if (!valid(dev)) return INVALID_DEVICE;
  snprintf(name, (size_t)len, "luatorch emulated device (SIMT on the CPU)");
  return OK;
}
EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  if (!valid(dev)) return INVALID_DEVICE;
  *bytes = (size_t)MEMORY;
  return OK;
}
EXPORT int cuDeviceGetAttribute(int *v, int attr, int dev) {
  if (!valid(dev)) return INVALID_DEVICE;
  switch (attr) {
    case 1: *v = 1024; break;       /* max threads per block */
    case 8: *v = 49152; break;      /* shared memory per block */
    case 10: *v = 32; break;        /* warp size */
    case 16: *v = 2; break;         /* multiprocessors */
    case 33: *v = dev; break;       /* PCI bus id */
    case 75: *v = 8; break;         /* compute capability 8.0 */
    case 76: *v = 0; break;
    default: *v = 0; break;
  }
  return OK;
}
EXPORT int cuDeviceComputeCapability(int *major, int *minor, int dev) {   /* (deprecated; pycuda asks it) */
  int rc = cuDeviceGetAttribute(major, 75, dev);
  return rc == OK ? cuDeviceGetAttribute(minor, 76, dev) : rc;
}
EXPORT int cuGetErrorString(int rc, const char **s) {
  switch (rc) {
    case OK: *s = "no error"; break;
    case INVALID_VALUE: *s = "invalid argument"; break;
    case OUT_OF_MEMORY: *s = "out of memory"; break;
    case INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case INVALID_IMAGE: *s = "device kernel image is invalid"; break;
    case INVALID_CONTEXT: *s = "invalid device context"; break;
    case NOT_FOUND: *s = "named symbol not found"; break;
    case INVALID_HANDLE: *s = "invalid resource handle"; break;
    case NOT_READY: *s = "device not ready"; break;
    case LAUNCH_FAILED: *s = "unspecified launch failure"; break;
    default: *s = NULL; return INVALID_VALUE;
  }
  return OK;
}
EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  if (!valid(dev)) return INVALID_DEVICE;
  *ctx = &contexts[dev];
  return OK;
}
EXPORT int cuCtxGetCurrent(void **ctx) {
  *ctx = current < 0 ? NULL : &contexts[current];
  return OK;
}
EXPORT int cuCtxSetCurrent(void *ctx) {
  if (!ctx) { current = -1; return OK; }
  ptrdiff_t d = (char *)ctx - contexts;
  if (d < 0 || d >= device_count()) return INVALID_CONTEXT;
  current = (int)d;
  return OK;
}
/* The context stack of pycuda's Context.push/pop: the contexts pushed over others, per thread. */
static __thread int pushed_under[16];
static __thread int npushed;
EXPORT int cuCtxPushCurrent_v2(void *ctx) {
  ptrdiff_t d = (char *)ctx - contexts;
  if (!ctx || d < 0 || d >= device_count()) return INVALID_CONTEXT;
  if (npushed == 16) return INVALID_VALUE;
  pushed_under[npushed++] = current;
  current = (int)d;
  return OK;
}
EXPORT int cuCtxPopCurrent_v2(void **ctx) {
  if (current < 0) return INVALID_CONTEXT;
  if (ctx) *ctx = &contexts[current];
  current = npushed ? pushed_under[--npushed] : -1;
  return OK;
}
EXPORT int cuCtxGetDevice(int *dev) {
  if (current < 0) return INVALID_CONTEXT;
  *dev = current;
  return OK;
}
EXPORT int cuDevicePrimaryCtxRelease_v2(int dev) { return valid(dev) ? OK : INVALID_DEVICE; }
EXPORT int cuCtxDetach(void *ctx) {   /* (deprecated; pycuda's handle on a context it did not make lets go) */
  ptrdiff_t d = (char *)ctx - contexts;
  return ctx && d >= 0 && d < device_count() ? OK : INVALID_CONTEXT;
}
EXPORT int cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  if (current < 0) return INVALID_CONTEXT;
  *free_bytes = (size_t)(MEMORY - __atomic_load_n(&in_use[current], __ATOMIC_RELAXED));
  *total = (size_t)MEMORY;
  return OK;
}
/* The device of the calling thread's current context (-1: none), for the emulated cuBLAS's handles. */
EXPORT int emulated_current_device(void) { return current; }

/* ---- guarded device memory (LT_EMULATED_CUDA_GUARD=1): first-fit blocks of one PROT_NONE arena per device ---- */
enum { MAX_BLOCKS = 16384 };
static int guard = -1;
typedef struct {
  char *base;
  struct { size_t off, size; int used; } blocks[MAX_BLOCKS];
  int nblocks, opened;
} arena_t;
static arena_t arenas[MAX_DEVICES];
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

static int guarded(void) {
  if (__atomic_load_n(&guard, __ATOMIC_ACQUIRE) >= 0) return guard;
  pthread_mutex_lock(&arena_lock);
  if (guard < 0) {
    const char *g = getenv("LT_EMULATED_CUDA_GUARD");
    int on = g && *g && strcmp(g, "0");
    for (int d = 0; on && d < device_count(); d++) {
      arena_t *a = &arenas[d];
      a->base = mmap(NULL, (size_t)MEMORY, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (a->base == MAP_FAILED) on = 0, a->base = NULL;
      a->blocks[0].off = 0, a->blocks[0].size = (size_t)MEMORY, a->blocks[0].used = 0, a->nblocks = 1;
    }
    __atomic_store_n(&guard, on, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&arena_lock);
  return guard;
}

/* The device whose arena holds p (-1: none). */
static int arena_of(unsigned long long p) {
  for (int d = 0; d < device_count(); d++)
    if (arenas[d].base && p >= (uintptr_t)arenas[d].base && p < (uintptr_t)arenas[d].base + (size_t)MEMORY) return d;
  return -1;
}

/* Open (1) or close (0) device dev's arena to the host; nested opens from several threads are counted. */
static void access_device(int dev, int open) {
  if (!guarded() || dev < 0) return;
  pthread_mutex_lock(&arena_lock);
  arena_t *a = &arenas[dev];
  if (open && a->opened++ == 0) mprotect(a->base, (size_t)MEMORY, PROT_READ | PROT_WRITE);
  if (!open && --a->opened == 0) mprotect(a->base, (size_t)MEMORY, PROT_NONE);
  pthread_mutex_unlock(&arena_lock);
}

/* The current context's device memory, for work that runs "on the device" (the emulated cuBLAS). */
EXPORT void emulated_device_access(int open) { access_device(current, open); }
/* Device dev's memory, for the emulated NCCL (whose collectives span devices). */
EXPORT void emulated_access_device(int dev, int open) { access_device(dev, open); }
/* The device whose memory holds p under LT_EMULATED_CUDA_GUARD (-1: none of them); without the guard -2 (not
 * known: memory is plain host memory). */
EXPORT int emulated_device_of(unsigned long long p) { return guarded() ? arena_of(p) : -2; }

static int arena_alloc(int dev, size_t n, unsigned long long *p) {
  n = (n + 511) / 512 * 512;
  pthread_mutex_lock(&arena_lock);
  arena_t *a = &arenas[dev];
  int rc = OUT_OF_MEMORY;
  for (int i = 0; i < a->nblocks; i++) {
    if (a->blocks[i].used || a->blocks[i].size < n) continue;
    if (a->blocks[i].size > n) {   /* split: the rest becomes a free block after it */
      if (a->nblocks == MAX_BLOCKS) break;
      memmove(&a->blocks[i + 2], &a->blocks[i + 1], (size_t)(a->nblocks - i - 1) * sizeof a->blocks[0]);
      a->blocks[i + 1].off = a->blocks[i].off + n, a->blocks[i + 1].size = a->blocks[i].size - n;
      a->blocks[i + 1].used = 0;
      a->blocks[i].size = n;
      a->nblocks++;
    }
    a->blocks[i].used = 1;
    *p = (unsigned long long)(uintptr_t)(a->base + a->blocks[i].off);
    rc = OK;
    break;
  }
  pthread_mutex_unlock(&arena_lock);
  return rc;
}

static int arena_free(int dev, unsigned long long p, size_t *n) {
  pthread_mutex_lock(&arena_lock);
  arena_t *a = &arenas[dev];
  int rc = INVALID_VALUE;
  for (int i = 0; i < a->nblocks; i++) {
    if (!a->blocks[i].used || (uintptr_t)(a->base + a->blocks[i].off) != p) continue;
    *n = a->blocks[i].size;
    a->blocks[i].used = 0;
    for (int j = i; j >= i - 1 && j >= 0; j--)   /* merge with the free neighbours */
      while (j + 1 < a->nblocks && !a->blocks[j].used && !a->blocks[j + 1].used) {
        a->blocks[j].size += a->blocks[j + 1].size;
        memmove(&a->blocks[j + 1], &a->blocks[j + 2], (size_t)(a->nblocks - j - 2) * sizeof a->blocks[0]);
        a->nblocks--;
      }
    rc = OK;
    break;
  }
  pthread_mutex_unlock(&arena_lock);
  return rc;
}

/* The stream queues (below) that freeing memory waits for, and the pinned blocks they tell from pageable memory. */
static void qlock(void);
static void qunlock(void);
static void run_device(int dev);
static struct { char *p; size_t n; } pinned[4096];
static int npinned;

/* Device memory of the current context's device: host memory with its size and device just before it (for
 * the accounting), or guarded arena blocks. */
typedef struct { size_t size; int device; } header;

EXPORT int cuMemAlloc_v2(unsigned long long *p, size_t n) {
  __atomic_fetch_add(&seen[2], 1, __ATOMIC_RELAXED);
  if (n == 0) return INVALID_VALUE;
  int dev = current;
  if (dev < 0) return INVALID_CONTEXT;
  if (guarded()) n = (n + 511) / 512 * 512;   /* the block's size, which cuMemFree gives back */
  if (__atomic_add_fetch(&in_use[dev], (long long)n, __ATOMIC_RELAXED) > MEMORY) {
    __atomic_sub_fetch(&in_use[dev], (long long)n, __ATOMIC_RELAXED);
    return OUT_OF_MEMORY;
  }
  if (guarded()) {
    int rc = arena_alloc(dev, n, p);
    if (rc != OK) __atomic_sub_fetch(&in_use[dev], (long long)n, __ATOMIC_RELAXED);
    return rc;
  }
  char *m = aligned_alloc(512, 512 + (n + 511) / 512 * 512);
  if (!m) return OUT_OF_MEMORY;
  header h = {n, dev};
  memcpy(m, &h, sizeof h);
  *p = (unsigned long long)(uintptr_t)(m + 512);
  return OK;
}
EXPORT int cuMemFree_v2(unsigned long long p) {
  if (!p) return OK;
  run_device(-1);   /* cuMemFree synchronizes: no queued work may still touch p */
  if (guarded()) {
    size_t n;
    int dev = arena_of(p);
    if (dev < 0 || arena_free(dev, p, &n) != OK) return INVALID_VALUE;
    __atomic_sub_fetch(&in_use[dev], (long long)n, __ATOMIC_RELAXED);
    return OK;
  }
  char *m = (char *)(uintptr_t)p - 512;
  header h;
  memcpy(&h, m, sizeof h);
  __atomic_sub_fetch(&in_use[h.device], (long long)h.size, __ATOMIC_RELAXED);
  free(m);
  return OK;
}

/* Pinned host memory: plain host memory here, counted (emulated_pinned_live) so that tests see it freed; a context
 * must be current, as the real driver asks. */
static long pinned_live;
EXPORT int cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  if (current < 0) return INVALID_CONTEXT;
  if (!p || flags > 7) return INVALID_VALUE;
  if (!(*p = malloc(n ? n : 1))) return OUT_OF_MEMORY;
  __atomic_add_fetch(&pinned_live, 1, __ATOMIC_RELAXED);
  qlock();
  if (npinned < (int)(sizeof pinned / sizeof pinned[0])) pinned[npinned].p = *p, pinned[npinned++].n = n;
  qunlock();
  return OK;
}
EXPORT int cuMemFreeHost(void *p) {
  if (current < 0) return INVALID_CONTEXT;
  if (!p) return INVALID_VALUE;
  run_device(-1);   /* as cuMemFreeHost synchronizes */
  qlock();
  for (int i = 0; i < npinned; i++)
    if (pinned[i].p == p) {
      pinned[i] = pinned[--npinned];
      break;
    }
  qunlock();
  free(p);
  __atomic_sub_fetch(&pinned_live, 1, __ATOMIC_RELAXED);
  return OK;
}
EXPORT long emulated_pinned_live(void) { return __atomic_load_n(&pinned_live, __ATOMIC_RELAXED); }

/* ---- streams: queues of work that run when waited for (see the top of the file) ---- */
typedef struct stream_t stream_t;
enum { I_LAUNCH, I_COPY, I_WAIT };
struct function;
typedef struct item {
  int kind;
  int dev, dev2;                 /* the device(s) whose memory the item touches (-1: none) */
  /* I_LAUNCH */
  struct function *f;
  unsigned grid[3], block[3];
  void **params;                 /* into blob */
  char *blob;
  /* I_COPY: n bytes from src to dst */
  void *dst;
  const void *src;
  size_t n;
  char *owned;                   /* a snapshot of pageable source bytes, freed after the copy */
  char dtoh;                     /* to host memory (which LT_EMULATED_CUDA_NOEXEC fills with all-one bytes) */
  /* I_WAIT: the stream that must have run up to seq */
  stream_t *on;
  unsigned long long seq;
  struct item *next;
} item;
struct stream_t { int device; unsigned long long queued, done; item *head, *tail; };
typedef struct { stream_t *stream; unsigned long long seq; } event_t;

static pthread_mutex_t queue_lock;                 /* recursive: running a wait runs another queue */
static pthread_once_t queue_once = PTHREAD_ONCE_INIT;
static stream_t legacy[MAX_DEVICES];
static stream_t *made[1024];                       /* cuStreamCreate's, for cuCtxSynchronize */
static int nmade;
static void queue_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&queue_lock, &a);
  for (int d = 0; d < MAX_DEVICES; d++) legacy[d].device = d;
}
static void qlock(void) { pthread_once(&queue_once, queue_init); pthread_mutex_lock(&queue_lock); }
static void qunlock(void) { pthread_mutex_unlock(&queue_lock); }

static int eager(void) {
  static int e = -1;
  if (e < 0) {
    const char *v = getenv("LT_EMULATED_CUDA_SYNC");
    e = v && *v && strcmp(v, "0");
  }
  return e;
}

/* LT_EMULATED_CUDA_NOEXEC=1: launches and library calls make every check, but no kernel runs and no bytes move;
 * a copy to the host fills it with all-one bytes, which a kernel's "no error" index (-1) reads as. What remains is
 * the host's own cost per call (emulated_link.h has the libraries' side). */
static int noexec(void) {
  static int v = -1;
  if (v < 0) {
    const char *e = getenv("LT_EMULATED_CUDA_NOEXEC");
    v = e && *e && e[0] != '0';
  }
  return v;
}

/* The stream a call names: NULL is the current context's legacy stream. */
static stream_t *stream_of(void *stream) {
  pthread_once(&queue_once, queue_init);   /* the legacy streams' devices */
  if (stream) return stream;
  return current < 0 ? NULL : &legacy[current];
}

static int run_item(item *it);
static int failures;   /* items that failed when they ran (reported by the next synchronize) */

/* Run s's queue until `seq` items of it have run. Under queue_lock. */
static void run_until(stream_t *s, unsigned long long seq) {
  while (s->done < seq && s->head) {
    item *it = s->head;
    if (it->kind == I_WAIT) run_until(it->on, it->seq);
    if (run_item(it)) failures++;
    s->head = it->next;
    if (!s->head) s->tail = NULL;
    s->done++;
    free(it->blob), free(it->owned), free(it);
  }
}

static int take_failures(void) {
  int f = failures;
  failures = 0;
  return f ? LAUNCH_FAILED : OK;
}

static int enqueue(stream_t *s, item *it) {
  it->next = NULL;
  qlock();
  if (s->tail) s->tail->next = it;
  else s->head = it;
  s->tail = it;
  s->queued++;
  if (eager()) run_until(s, s->queued);
  qunlock();
  return OK;
}

static item *new_item(int kind) {
  item *it = calloc(1, sizeof *it);
  if (it) it->kind = kind, it->dev = it->dev2 = -1;
  return it;
}

/* Every queue of device dev (-1: of all devices) run to its end. */
static void run_device(int dev) {
  qlock();
  for (int d = 0; d < device_count(); d++)
    if (dev < 0 || d == dev) run_until(&legacy[d], legacy[d].queued);
  for (int i = 0; i < nmade; i++)
    if (dev < 0 || made[i]->device == dev) run_until(made[i], made[i]->queued);
  qunlock();
}

/* For the emulated libraries: run stream's queue (NULL: device dev's legacy stream) before their call runs. */
EXPORT void emulated_stream_flush(int dev, void *stream) {
  stream_t *s = stream ? stream : (dev >= 0 && dev < MAX_DEVICES ? &legacy[dev] : NULL);
  if (!s) return;
  qlock();
  run_until(s, s->queued);
  qunlock();
}

EXPORT int cuStreamCreate(void **out, unsigned flags) {
  if (current < 0) return INVALID_CONTEXT;
  if (!out || flags != 1) return INVALID_VALUE;   /* non-blocking only: no implicit legacy-stream ordering here */
  stream_t *s = calloc(1, sizeof *s);
  if (!s) return OUT_OF_MEMORY;
  s->device = current;
  qlock();
  int rc = nmade < (int)(sizeof made / sizeof made[0]) ? OK : OUT_OF_MEMORY;
  if (rc == OK) made[nmade++] = s;
  qunlock();
  if (rc != OK) free(s);
  else *out = s;
  return rc;
}
EXPORT int cuStreamDestroy_v2(void *stream) {
  if (!stream) return INVALID_HANDLE;
  emulated_stream_flush(-1, stream);   /* kept (a wait may still name it), its work done */
  return OK;
}
EXPORT int cuStreamSynchronize(void *stream) {
  __atomic_fetch_add(&seen[1], 1, __ATOMIC_RELAXED);
  stream_t *s = stream_of(stream);
  if (!s) return INVALID_CONTEXT;
  qlock();
  run_until(s, s->queued);
  int rc = take_failures();
  qunlock();
  return rc;
}
EXPORT int cuCtxSynchronize(void) {
  __atomic_fetch_add(&seen[1], 1, __ATOMIC_RELAXED);
  if (current < 0) return INVALID_CONTEXT;
  run_device(current);
  qlock();
  int rc = take_failures();
  qunlock();
  return rc;
}

EXPORT int cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(event_t));
  return *e ? OK : OUT_OF_MEMORY;
}
EXPORT int cuEventRecord(void *e, void *stream) {
  stream_t *s = stream_of(stream);
  if (!e) return INVALID_VALUE;
  if (!s) return INVALID_CONTEXT;
  qlock();
  ((event_t *)e)->stream = s, ((event_t *)e)->seq = s->queued;   /* done once s has run what is queued now */
  qunlock();
  return OK;
}
EXPORT int cuEventQuery(void *e) {
  if (!e) return INVALID_VALUE;
  event_t *ev = e;
  qlock();
  int done = !ev->stream || ev->stream->done >= ev->seq;
  qunlock();
  return done ? OK : NOT_READY;
}
EXPORT int cuEventSynchronize(void *e) {
  if (!e) return INVALID_VALUE;
  event_t *ev = e;
  qlock();
  if (ev->stream) run_until(ev->stream, ev->seq);
  qunlock();
  return OK;
}
EXPORT int cuEventDestroy_v2(void *e) { free(e); return OK; }
EXPORT int cuStreamWaitEvent(void *stream, void *e, unsigned flags) {
  stream_t *s = stream_of(stream);
  if (!e || flags) return INVALID_VALUE;
  if (!s) return INVALID_CONTEXT;
  event_t *ev = e;
  if (!ev->stream) return OK;   /* never recorded: nothing to wait for */
  item *it = new_item(I_WAIT);
  if (!it) return OUT_OF_MEMORY;
  qlock();
  it->on = ev->stream, it->seq = ev->seq;
  qunlock();
  return enqueue(s, it);
}

/* Whether [p, p + n) is in a pinned block (cuMemHostAlloc) rather than pageable host memory. */
static int is_pinned(const void *p, size_t n) {
  int found = 0;
  qlock();
  for (int i = 0; i < npinned && !found; i++)
    found = (const char *)p >= pinned[i].p && (const char *)p + n <= pinned[i].p + pinned[i].n;
  qunlock();
  return found;
}

/* Copies find the devices of their device pointers from the addresses, as unified addressing does. */
static int queue_copy(stream_t *s, void *dst, const void *src, size_t n, int dev, int dev2, int snapshot, int dtoh) {
  item *it = new_item(I_COPY);
  if (!it) return OUT_OF_MEMORY;
  it->dtoh = (char)dtoh;
  it->dst = dst, it->src = src, it->n = n, it->dev = dev, it->dev2 = dev2;
  if (snapshot) {   /* pageable source: its bytes now, as CUDA's staging copy takes them */
    if (!(it->owned = malloc(n ? n : 1))) {
      free(it);
      return OUT_OF_MEMORY;
    }
    memcpy(it->owned, src, n);
    it->src = it->owned;
  }
  return enqueue(s, it);
}
EXPORT int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *stream) {
  stream_t *s = stream_of(stream);
  if (!s) return INVALID_CONTEXT;
  int rc = queue_copy(s, dst, (const void *)(uintptr_t)src, n, guarded() ? arena_of(src) : current, -1, 0, 1);
  if (rc == OK && !is_pinned(dst, n)) {   /* to pageable memory: done when this returns, as CUDA's */
    qlock();
    run_until(s, s->queued);
    rc = take_failures();
    qunlock();
  }
  return rc;
}
EXPORT int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *stream) {
  stream_t *s = stream_of(stream);
  if (!s) return INVALID_CONTEXT;
  return queue_copy(s, (void *)(uintptr_t)dst, src, n, guarded() ? arena_of(dst) : current, -1, !is_pinned(src, n), 0);
}
/* The synchronous copies (pycuda's memcpy_dtoh/htod, GPUArray.get/set): on the legacy stream, done on return. */
static int copy_and_wait(void *dst, const void *src, size_t n, int dev, int dtoh) {
  stream_t *s = stream_of(NULL);
  if (!s) return INVALID_CONTEXT;
  int rc = queue_copy(s, dst, src, n, dev, -1, 0, dtoh);
  if (rc != OK) return rc;
  qlock();
  run_until(s, s->queued);
  rc = take_failures();
  qunlock();
  return rc;
}
EXPORT int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) {
  return copy_and_wait(dst, (const void *)(uintptr_t)src, n, guarded() ? arena_of(src) : current, 1);
}
EXPORT int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) {
  return copy_and_wait((void *)(uintptr_t)dst, src, n, guarded() ? arena_of(dst) : current, 0);
}
/* Between the memories of two contexts' devices (the same one allowed). */
EXPORT int cuMemcpyPeerAsync(unsigned long long dst, void *dst_ctx, unsigned long long src, void *src_ctx, size_t n,
                             void *stream) {
  ptrdiff_t dd = (char *)dst_ctx - contexts, sd = (char *)src_ctx - contexts;
  if (!dst_ctx || !src_ctx || dd < 0 || dd >= device_count() || sd < 0 || sd >= device_count()) return INVALID_CONTEXT;
  if (guarded() && (arena_of(dst) != dd || arena_of(src) != sd)) return INVALID_VALUE;   /* not that device's */
  stream_t *s = stream_of(stream);
  if (!s) return INVALID_CONTEXT;
  return queue_copy(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, (int)dd, sd != dd ? (int)sd : -1, 0, 0);
}

/* A module: the kernel names of its CUBIN (each __global__ function is an ELF section .text.NAME). */
typedef struct { int n; char **names; } module;

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

EXPORT int cuModuleLoadData(void **out, const void *image) {
  const unsigned char *e = image;
  if (!e || memcmp(e, "\177ELF", 4) || e[4] != 2) return INVALID_IMAGE;
  uint64_t shoff = le(e + 0x28, 8), entsize = le(e + 0x3A, 2), shnum = le(e + 0x3C, 2), strndx = le(e + 0x3E, 2);
  uint64_t strings = le(e + shoff + strndx * entsize + 0x18, 8);
  module *m = calloc(1, sizeof *m);
  m->names = calloc(shnum, sizeof *m->names);
  for (uint64_t i = 0; i < shnum; i++) {
    const char *name = (const char *)e + strings + le(e + shoff + i * entsize, 4);
    if (!strncmp(name, ".text.", 6)) m->names[m->n++] = strdup(name + 6);
  }
  *out = m;
  return OK;
}

typedef struct function { char name[128], sig[96]; size_t bytes; simt_launch_fn launch; } function;

/* The bytes of an argument of signature kind k ("S144", "p", "i", ...), as the kernel's C++ types take them. */
static size_t kind_bytes(const char *k) {
  if (*k == 'S') return (size_t)strtoul(k + 1, NULL, 10);
  return strchr("iIf", *k) ? 4 : 8;
}

EXPORT int cuModuleGetFunction(void **out, void *mod, const char *name) {
  module *m = mod;
  int in_image = 0;
  for (int i = 0; i < m->n && !in_image; i++) in_image = !strcmp(m->names[i], name);
  if (!in_image) return NOT_FOUND;
  load_kernels();
  for (int l = 0; l < nlibs; l++)
    for (int k = 0, n = libs[l].count(); k < n; k++)
      if (!strcmp(libs[l].info(k, 0), name)) {
        function *f = calloc(1, sizeof *f);
        snprintf(f->name, sizeof f->name, "%s", name);
        snprintf(f->sig, sizeof f->sig, "%s", libs[l].info(k, 1));
        f->launch = libs[l].launch;
        *out = f;
        return OK;
      }
  fprintf(stderr, "emulated driver: %s is in the CUBIN but in none of LT_EMULATED_CUDA_KERNELS\n", name);
  return NOT_FOUND;
}

/* A launch joins its stream's queue with a copy of its arguments (params may be reused once this returns). */
EXPORT int cuLaunchKernel(void *fp, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                          unsigned shared, void *stream, void **params, void **extra) {
  function *f = fp;
  if (shared || extra) return INVALID_VALUE;   /* the kernels use neither */
  if (current < 0) return INVALID_CONTEXT;
  stream_t *s = stream_of(stream);
  if (s->device != current) return INVALID_HANDLE;   /* a stream of another context */
  size_t nargs = 0, sizes[64], total = 0;
  char sig[96];
  snprintf(sig, sizeof sig, "%s", f->sig);
  for (char *save = NULL, *k = strtok_r(sig, ",", &save); k && nargs < 64; k = strtok_r(NULL, ",", &save)) {
    sizes[nargs] = kind_bytes(k);
    total += (sizes[nargs++] + 7) / 8 * 8;
  }
  item *it = new_item(I_LAUNCH);
  if (!it) return OUT_OF_MEMORY;
  it->blob = malloc(nargs * sizeof(void *) + total + 8);
  if (!it->blob) {
    free(it);
    return OUT_OF_MEMORY;
  }
  it->params = (void **)it->blob;
  char *at = it->blob + nargs * sizeof(void *);
  for (size_t i = 0; i < nargs; i++) {
    memcpy(at, params[i], sizes[i]);
    it->params[i] = at;
    at += (sizes[i] + 7) / 8 * 8;
  }
  __atomic_fetch_add(&seen[0], 1, __ATOMIC_RELAXED);
  it->f = f, it->dev = current;
  it->grid[0] = gx, it->grid[1] = gy, it->grid[2] = gz, it->block[0] = bx, it->block[1] = by, it->block[2] = bz;
  return enqueue(s, it);
}

/* Run one queued item (under queue_lock): 0, or nonzero after saying what failed. */
static int run_item(item *it) {
  if (it->kind == I_WAIT) return 0;
  access_device(it->dev, 1);   /* a kernel: its device's memory only */
  if (it->dev2 >= 0) access_device(it->dev2, 1);
  int rc = 0;
  if (it->kind == I_COPY) {
    if (!noexec()) memmove(it->dst, it->src, it->n);
    else if (it->dtoh) memset(it->dst, 0xFF, it->n);
  } else if (!noexec()) {
    char err[512] = "";
    rc = it->f->launch(it->f->name, NULL, it->grid[0], it->grid[1], it->grid[2], it->block[0], it->block[1],
                       it->block[2], it->params, err, (int)sizeof err);
    if (rc) fprintf(stderr, "emulated driver: %s: %s\n", it->f->name, err);
  }
  if (it->dev2 >= 0) access_device(it->dev2, 0);
  access_device(it->dev, 0);
  return rc;
}
