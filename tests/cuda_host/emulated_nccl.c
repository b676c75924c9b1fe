/* An emulated libnccl.so.2 for the emulated driver (emulated_driver.c): the entry points native/src/cuda_nccl.c
 * calls, so that DataParallelTable's NCCL path (communicators per device, grouped reduce and broadcast) runs in
 * CI as it would on GPUs. Collectives are collected between ncclGroupStart and ncclGroupEnd from one thread
 * (how a single process drives several GPUs) and run at ncclGroupEnd, in double for the sum; each rank's
 * buffer must be in its communicator's device's memory (checked under LT_EMULATED_CUDA_GUARD, which the
 * driver's guarded arenas make possible). A collective outside a group, or a group whose collectives do not
 * match across the clique, is ncclInvalidUsage, as the real library would hang or fail there. Results as
 * NCCL's: 0 success, 4 invalid argument, 5 invalid usage. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, FLOAT16 = 6, FLOAT32 = 7, FLOAT64 = 8, SUM = 0, MAX_RANKS = 8,
       MAX_OPS = 64 };

typedef struct clique clique;
typedef struct { int magic, rank, device; clique *clique; } comm;
struct clique { int n, refs; };
static const int MAGIC = 0x6e63636c;

typedef struct { int kind; const void *send; void *recv; size_t count; int type, root; comm *c; void *stream; } op;   /* 0 reduce, 1 bcast */
static __thread op queue[MAX_OPS];
static __thread int queued, depth;

#include "emulated_link.h"
#include "emulated_half.h"

EXPORT int ncclGetVersion(int *v) { *v = 22703; return SUCCESS; }   /* 2.27.3 */

EXPORT const char *ncclGetErrorString(int rc) {
  switch (rc) {
    case SUCCESS: return "no error";
    case INVALID_ARGUMENT: return "invalid argument";
    case INVALID_USAGE: return "invalid usage";
    default: return "unknown result code";
  }
}

EXPORT int ncclCommInitAll(void **comms, int n, const int *devices) {
  if (n < 1 || n > MAX_RANKS || !comms) return INVALID_ARGUMENT;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (devices && devices[i] == devices[j]) return INVALID_USAGE;   /* NCCL: duplicate GPU */
  clique *q = calloc(1, sizeof *q);
  q->n = n, q->refs = n;
  for (int i = 0; i < n; i++) {
    comm *c = calloc(1, sizeof *c);
    c->magic = MAGIC, c->rank = i, c->device = devices ? devices[i] : i, c->clique = q;
    comms[i] = c;
  }
  return SUCCESS;
}

EXPORT int ncclCommDestroy(void *p) {
  comm *c = p;
  if (!c || c->magic != MAGIC) return INVALID_ARGUMENT;
  c->magic = 0;
  if (--c->clique->refs == 0) free(c->clique);
  free(c);
  return SUCCESS;
}

EXPORT int ncclGroupStart(void) { depth++; return SUCCESS; }

static int enqueue(op o) {
  if (!o.c || o.c->magic != MAGIC || (o.type != FLOAT16 && o.type != FLOAT32 && o.type != FLOAT64) || o.root < 0 || o.root >= o.c->clique->n)
    return INVALID_ARGUMENT;
  find_driver();
  /* a rank's buffers in its own device's memory, where the guard can tell */
  if (emu_device_of) {
    int d = emu_device_of((unsigned long long)(uintptr_t)o.send);
    if (d != -2 && d != o.c->device) return INVALID_ARGUMENT;
  }
  if (depth == 0 || queued == MAX_OPS) return INVALID_USAGE;   /* one thread drives all ranks: groups only */
  queue[queued++] = o;
  return SUCCESS;
}

EXPORT int ncclReduce(const void *send, void *recv, size_t count, int type, int red, int root, void *c, void *stream) {
  if (red != SUM) return INVALID_ARGUMENT;
  return enqueue((op){0, send, recv, count, type, root, c, stream});
}

EXPORT int ncclBcast(void *buf, size_t count, int type, int root, void *c, void *stream) {
  return enqueue((op){1, buf, buf, count, type, root, c, stream});
}

static double load(const void *p, int type, size_t i) {
  if (type == FLOAT16) return half_to_double(((const uint16_t *)p)[i]);
  return type == FLOAT32 ? ((const float *)p)[i] : ((const double *)p)[i];
}
static void store(void *p, int type, size_t i, double v) {
  if (type == FLOAT16) ((uint16_t *)p)[i] = float_to_half((float)v);   /* (two roundings: NCCL's sum of two is one) */
  else if (type == FLOAT32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* One collective: the queued ops of every rank of a clique, same kind, count, type and root. */
static int run(op *ops, int n) {
  clique *q = ops[0].c->clique;
  op *by_rank[MAX_RANKS] = {0};
  for (int i = 0; i < n; i++) {
    if (ops[i].c->clique != q || ops[i].kind != ops[0].kind || ops[i].count != ops[0].count ||
        ops[i].type != ops[0].type || ops[i].root != ops[0].root || by_rank[ops[i].c->rank])
      return INVALID_USAGE;
    by_rank[ops[i].c->rank] = &ops[i];
  }
  if (n != q->n) return INVALID_USAGE;
  for (int r = 0; r < n; r++) emu_device_work(by_rank[r]->c->device, by_rank[r]->stream, 1);
  op *root = by_rank[ops[0].root];
  for (size_t i = 0; i < (emu_noexec() ? 0 : ops[0].count); i++) {
    if (ops[0].kind == 0) {
      double s = 0;
      for (int r = 0; r < n; r++) s += load(by_rank[r]->send, ops[0].type, i);
      store(root->recv, ops[0].type, i, s);
    } else {
      double v = load(root->send, ops[0].type, i);
      for (int r = 0; r < n; r++) store(by_rank[r]->recv, ops[0].type, i, v);
    }
  }
  for (int r = 0; r < n; r++) emu_device_work(by_rank[r]->c->device, by_rank[r]->stream, 0);
  return SUCCESS;
}

EXPORT int ncclGroupEnd(void) {
  if (depth == 0) return INVALID_USAGE;
  if (--depth > 0) return SUCCESS;
  int rc = SUCCESS, start = 0;
  /* consecutive ops of one clique form one collective (how the ranks' calls are queued: one per rank) */
  while (rc == SUCCESS && start < queued) {
    int end = start + 1;
    while (end < queued && queue[end].c->clique == queue[start].c->clique && end - start < queue[start].c->clique->n) end++;
    rc = run(&queue[start], end - start);
    start = end;
  }
  queued = 0;
  return rc;
}
