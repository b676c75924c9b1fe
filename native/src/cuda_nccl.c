/* NCCL for nn.DataParallelTable over GPUs: one communicator per device of the table's replicas
 * (ncclCommInitAll), the sum of every replica's buffer into the first's (ncclReduce, root 0) and the first's
 * copied to the others (ncclBcast), each a single NCCL group over the devices' current streams, finished when
 * the call returns (every device synchronized). libnccl is dlopen'ed with our declarations (cuda_lib.c);
 * without it lt_nccl_new fails saying why and the table reduces through peer copies instead. */
#include "lt_internal.h"

enum { NCCL_SUCCESS = 0, NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_SUM = 0 };

static struct {
  int (*init_all)(void **, int, const int *);
  int (*destroy)(void *);
  int (*group_start)(void);
  int (*group_end)(void);
  int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *);
  int (*bcast)(void *, size_t, int, int, void *, void *);
  const char *(*error_string)(int);
} api;
static int resolved;

static int resolve(void) {
  static const lt_cuda_sym syms[] = {
    {(void **)&api.init_all, "ncclCommInitAll"}, {(void **)&api.destroy, "ncclCommDestroy"},
    {(void **)&api.group_start, "ncclGroupStart"}, {(void **)&api.group_end, "ncclGroupEnd"},
    {(void **)&api.reduce, "ncclReduce"}, {(void **)&api.bcast, "ncclBcast"},
    {(void **)&api.error_string, "ncclGetErrorString"}};
  return lt_cuda_find_symbols(LT_CUDA_NCCL, syms, sizeof syms / sizeof syms[0], &resolved);
}

struct lt_nccl {
  int n;
  int devices[LT_CUDA_MAX_DEVICES];
  void *comms[LT_CUDA_MAX_DEVICES];
};

static int nccl_failed(const char *what, int rc) {
  return lt_fail("nccl: %s: %s (%d)", what, api.error_string ? api.error_string(rc) : "?", rc);
}

lt_nccl *lt_nccl_new(int n, const int *devices) {
  if (n < 1 || n > LT_CUDA_MAX_DEVICES) {
    lt_fail("nccl: %d devices (1 to %d)", n, LT_CUDA_MAX_DEVICES);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (devices[i] == devices[j]) {
        lt_fail("nccl: device %d appears twice (NCCL takes one communicator per GPU)", devices[i]);
        return NULL;
      }
  if (resolve()) return NULL;
  lt_nccl *c = calloc(1, sizeof *c);
  if (!c) {
    lt_fail("nccl: out of host memory");
    return NULL;
  }
  c->n = n;
  memcpy(c->devices, devices, (size_t)n * sizeof *devices);
  for (int i = 0; i < n; i++)   /* NCCL works in the primary contexts, which our kernels use too */
    if (lt_cuda_set_device(devices[i])) {
      free(c);
      return NULL;
    }
  int rc = api.init_all(c->comms, n, c->devices);
  if (rc != NCCL_SUCCESS) {
    nccl_failed("ncclCommInitAll", rc);
    free(c);
    return NULL;
  }
  return c;
}

void lt_nccl_free(lt_nccl *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) api.destroy(c->comms[i]);
  free(c);
}

static int nccl_type(int type, int *out) {
  switch (lt_host_type(type)) {
    case LT_FLOAT: *out = NCCL_FLOAT32; return 0;
    case LT_DOUBLE: *out = NCCL_FLOAT64; return 0;
    case LT_HALF: *out = NCCL_FLOAT16; return 0;
    default:
      return lt_fail("nccl: %s tensors are not reduced here (Float, Double and Half)", lt_type_name(lt_host_type(type)));
  }
}

/* Every device's queued work done (the group's collectives ran on the devices' current streams). */
static int finish(lt_nccl *c) {
  for (int i = 0; i < c->n; i++)
    if (lt_cuda_storage_synchronize(c->devices[i])) return -1;
  return 0;
}

/* op 0: reduce into buffers[0]; op 1: broadcast buffers[0]. */
static int group(lt_nccl *c, int op, int type, void **buffers, int64_t count) {
  const char *what = op == 0 ? "ncclReduce" : "ncclBcast";
  int dt = 0;
  if (nccl_type(type, &dt)) return -1;
  if (count < 0) return lt_fail("nccl: %s of %lld elements", what, (long long)count);
  if (count == 0) return 0;
  int rc = api.group_start();
  if (rc != NCCL_SUCCESS) return nccl_failed("ncclGroupStart", rc);
  int first = NCCL_SUCCESS;
  for (int i = 0; i < c->n; i++) {
    void *stream = NULL;   /* each device's current stream: after the work queued there on its buffer */
    if (lt_cuda_set_device(c->devices[i]) || lt_cuda_resolve_stream(c->devices[i], &stream)) {
      api.group_end();
      return -1;
    }
    lt_cuda_count(LT_CUDA_COUNT_LIBRARY_OPS);
    rc = op == 0 ? api.reduce(buffers[i], buffers[i], (size_t)count, dt, NCCL_SUM, 0, c->comms[i], stream)
                 : api.bcast(buffers[i], (size_t)count, dt, 0, c->comms[i], stream);
    if (rc != NCCL_SUCCESS && first == NCCL_SUCCESS) first = rc;
  }
  rc = api.group_end();
  if (first != NCCL_SUCCESS) return nccl_failed(what, first);
  if (rc != NCCL_SUCCESS) return nccl_failed("ncclGroupEnd", rc);
  return finish(c);
}

int lt_nccl_reduce(lt_nccl *c, int type, void **buffers, int64_t count) { return group(c, 0, type, buffers, count); }
int lt_nccl_bcast(lt_nccl *c, int type, void **buffers, int64_t count) { return group(c, 1, type, buffers, count); }
