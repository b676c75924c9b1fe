/* cutorch's streams on the GPU backend (see lt_cuda_storage.h): on every device, stream 0 is the legacy
 * default stream and 1..n are the streams cutorch.reserveStreams asked for, created non-blocking (as
 * cutorch's were) on a device's first use of each. The current stream is an index per thread that holds on
 * every device, as cutorch's setStream set it; lt_cuda_resolve_stream turns the NULL stream the callers of
 * lt_cuops pass into the calling thread's current stream on the device the work runs on, so kernels, copies,
 * cuBLAS, cuDNN and the allocator's blocks all follow cutorch.setStream. Waits between streams are events
 * recorded on the waited-for stream and waited on by the waiting one (cuStreamWaitEvent), which is also how
 * work on two devices is ordered. */
#include <pthread.h>

#include "lt_internal.h"

enum { CU_OK = 0, CU_STREAM_NON_BLOCKING = 1, CU_EVENT_DISABLE_TIMING = 2, CU_NOT_READY = 600 };

static struct {
  int (*stream_create)(void **, unsigned);
  int (*stream_sync)(void *);
  int (*stream_wait_event)(void *, void *, unsigned);
  int (*event_create)(void **, unsigned);
  int (*event_record)(void *, void *);
  int (*event_destroy)(void *);
  int (*event_query)(void *);
  int (*ctx_get)(void **);
  int (*ctx_set)(void *);
} drv;
static int resolved;

static int resolve(void) {
  static const lt_cuda_sym syms[] = {
    {(void **)&drv.stream_create, "cuStreamCreate"}, {(void **)&drv.stream_sync, "cuStreamSynchronize"},
    {(void **)&drv.stream_wait_event, "cuStreamWaitEvent"}, {(void **)&drv.event_create, "cuEventCreate"},
    {(void **)&drv.event_record, "cuEventRecord"}, {(void **)&drv.event_destroy, "cuEventDestroy_v2"},
    {(void **)&drv.event_query, "cuEventQuery"},
    {(void **)&drv.ctx_get, "cuCtxGetCurrent"}, {(void **)&drv.ctx_set, "cuCtxSetCurrent"}};
  if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) return 0;
  return lt_cuda_find_symbols(LT_CUDA_DRIVER, syms, sizeof syms / sizeof syms[0], &resolved);
}

/* Work in another device's context (a stream's calls go to its own: the legacy stream is the current context's)
 * puts the caller's context back afterwards: the launchers resolve their stream between making their device
 * current and launching. */
static int enter(int device, void **saved) {
  *saved = NULL;
  if (resolve()) return -1;   /* its reason stands */
  if (drv.ctx_get(saved) != CU_OK) return lt_fail("cuda: cuCtxGetCurrent failed");
  return lt_cuda_set_device(device);
}
static int leave(void *saved, int rc) {
  if (!drv.ctx_set) return rc;   /* the driver was not found: nothing was switched */
  if (drv.ctx_set(saved) != CU_OK && rc == 0) return lt_fail("cuda: cuCtxSetCurrent failed");
  return rc;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int reserved;                                                 /* streams 1..reserved exist for all */
static void *streams[LT_CUDA_MAX_DEVICES][LT_CUDA_MAX_STREAMS + 1];  /* made on first use; never destroyed */
static __thread int current;                                         /* this thread's index, every device */

int lt_cuda_stream_reserve(int n) {
  if (n > LT_CUDA_MAX_STREAMS)
    return lt_fail("cutorch.reserveStreams: %d streams asked for, at most %d", n, LT_CUDA_MAX_STREAMS);
  pthread_mutex_lock(&lock);
  if (n > reserved) reserved = n;
  pthread_mutex_unlock(&lock);
  return 0;
}

int lt_cuda_stream_count(void) { return __atomic_load_n(&reserved, __ATOMIC_ACQUIRE); }

static int check_index(const char *fn, int index) {
  int n = lt_cuda_stream_count();
  if (index < 0 || index > n)
    return lt_fail("%s: stream %d is not one of 0..%d (cutorch.reserveStreams(%d) makes it one)", fn, index, n,
                   index);
  return 0;
}

int lt_cuda_stream_set(int index) {
  if (check_index("cutorch.setStream", index)) return -1;
  current = index;
  return 0;
}

int lt_cuda_stream_current(void) { return current; }

/* The CUstream of stream index on device (NULL for 0), made on first use. */
int lt_cuda_stream_of(int device, int index, void **stream) {
  *stream = NULL;
  if (index == 0) return 0;
  if (device < 0 || device >= LT_CUDA_MAX_DEVICES) return lt_fail("cuda: device %d is out of range", device);
  if (check_index("cuda", index)) return -1;
  void *s = __atomic_load_n(&streams[device][index], __ATOMIC_ACQUIRE), *saved;
  if (!s) {
    if (enter(device, &saved)) return leave(saved, -1);
    pthread_mutex_lock(&lock);
    int rc = CU_OK;
    if (!(s = streams[device][index]) && (rc = drv.stream_create(&s, CU_STREAM_NON_BLOCKING)) == CU_OK)
      __atomic_store_n(&streams[device][index], s, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    if (rc != CU_OK)
      return leave(saved, lt_fail("cuda: creating stream %d on device %d: %s (%d)", index, device,
                                  lt_cuda_error_text(rc), rc));
    if (leave(saved, 0)) return -1;
  }
  *stream = s;
  return 0;
}

int lt_cuda_resolve_stream(int device, void **stream) {
  if (*stream || current == 0) return 0;
  return lt_cuda_stream_of(device, current, stream);
}

/* Events: a point in a stream's work (recorded), which another stream can be made to wait for. */
typedef struct { void *event; int device; } stream_event;

int lt_cuda_event_new(int device, void **out) {
  void *saved;
  *out = NULL;
  if (enter(device, &saved)) return leave(saved, -1);
  stream_event *e = calloc(1, sizeof *e);
  if (!e) return leave(saved, lt_fail("cuda: out of host memory for an event"));
  e->device = device;
  int rc = drv.event_create(&e->event, CU_EVENT_DISABLE_TIMING);
  if (rc != CU_OK) {
    free(e);
    return leave(saved, lt_fail("cuda: creating an event on device %d: %s (%d)", device, lt_cuda_error_text(rc), rc));
  }
  *out = e;
  return leave(saved, 0);
}

void lt_cuda_event_free(void *event) {
  stream_event *e = event;
  if (e && e->event) drv.event_destroy(e->event);   /* released by the driver once waits on it are over */
  free(e);
}

/* The event marks the end of the work queued so far on a CUstream of its device (NULL: its legacy stream). */
int lt_cuda_event_record_stream(void *event, void *stream) {
  stream_event *e = event;
  void *saved;
  if (!e) return lt_fail("cuda: recording a NULL event");
  if (enter(e->device, &saved)) return leave(saved, -1);
  int rc = drv.event_record(e->event, stream);
  if (rc != CU_OK)
    return leave(saved, lt_fail("cuda: recording an event on a stream of device %d: %s (%d)", e->device,
                                lt_cuda_error_text(rc), rc));
  return leave(saved, 0);
}

/* The event marks the end of the work queued so far on stream index of its device. */
int lt_cuda_event_record(void *event, int index) {
  stream_event *e = event;
  void *s;
  if (!e) return lt_fail("cuda: recording a NULL event");
  if (lt_cuda_stream_of(e->device, index, &s)) return -1;
  return lt_cuda_event_record_stream(e, s);
}

/* LT_CUDA_EVENT_DONE (0) once the work before the event's point has run (or it was never recorded),
 * LT_CUDA_EVENT_PENDING (1) before, -1 on an error. */
int lt_cuda_event_query(void *event) {
  stream_event *e = event;
  if (!e) return lt_fail("cuda: querying a NULL event");
  int rc = drv.event_query(e->event);
  if (rc == CU_OK) return 0;
  if (rc == CU_NOT_READY) return 1;
  return lt_fail("cuda: querying an event of device %d: %s (%d)", e->device, lt_cuda_error_text(rc), rc);
}

/* Work queued on stream index of device from now on starts after the event's point. */
int lt_cuda_event_wait(void *event, int device, int index) {
  stream_event *e = event;
  void *s, *saved;
  if (!e) return lt_fail("cuda: waiting for a NULL event");
  if (lt_cuda_stream_of(device, index, &s)) return -1;
  if (enter(device, &saved)) return leave(saved, -1);
  int rc = drv.stream_wait_event(s, e->event, 0);
  if (rc != CU_OK)
    return leave(saved, lt_fail("cuda: stream %d of device %d waiting for an event of device %d: %s (%d)", index,
                                device, e->device, lt_cuda_error_text(rc), rc));
  return leave(saved, 0);
}

/* Work queued on (waiting_device, waiting) after this call starts once the work queued on (waited_device, waited)
 * before it has finished; the host does not wait. */
int lt_cuda_stream_wait(int waiting_device, int waiting, int waited_device, int waited) {
  void *e;
  if (lt_cuda_event_new(waited_device, &e)) return -1;
  int rc = lt_cuda_event_record(e, waited) || lt_cuda_event_wait(e, waiting_device, waiting) ? -1 : 0;
  lt_cuda_event_free(e);
  return rc;
}

/* Block the calling thread until the work queued on stream index of device has finished. */
int lt_cuda_stream_synchronize(int device, int index) {
  void *s, *saved;
  if (lt_cuda_stream_of(device, index, &s)) return -1;
  if (enter(device, &saved)) return leave(saved, -1);
  lt_cuda_count(LT_CUDA_COUNT_HOST_WAITS);
  int rc = drv.stream_sync(s);
  if (rc != CU_OK)
    return leave(saved, lt_fail("cuda: synchronizing stream %d of device %d: %s (%d)", index, device,
                                lt_cuda_error_text(rc), rc));
  return leave(saved, 0);
}
