/* The schedule engine: algorithms describe an allreduce as tasks (send,
 * receive, reduce) with dependencies on earlier tasks; one progress loop
 * posts every task whose dependencies are done, runs reductions as soon as
 * their data arrived and tests the requests in flight. Several colors or
 * chunks therefore proceed at once: while chunk k is being reduced, chunk
 * k+1 is in flight and chunk k-1 is already on its way up or down. */
#include "coll_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ltc_sched_init(ltc_sched *S, ltc_ctx *ctx, int dtype)
{
  memset(S, 0, sizeof *S);
  S->ctx = ctx;
  S->dtype = dtype;
  S->esize = ltc_esize(dtype);
  S->mtype = ltc_mpi_type(dtype);
}

void ltc_sched_free(ltc_sched *S)
{
  free(S->t);
  S->t = NULL;
  S->n = S->cap = 0;
}

int ltc_task_add(ltc_sched *S, int kind, int peer, int tag, char *buf, const char *src, int64_t count,
                 int dep0, int dep1, int dep2)
{
  if (S->err)
    return -1;
  if (S->n == S->cap) {
    int cap = S->cap ? 2 * S->cap : 256;
    ltc_task *t = realloc(S->t, (size_t)cap * sizeof *t);
    if (!t) {
      S->err = 1;
      return -1;
    }
    S->t = t;
    S->cap = cap;
  }
  ltc_task *t = &S->t[S->n];
  t->kind = kind;
  t->peer = peer;
  t->tag = tag;
  t->buf = buf;
  t->src = src;
  t->count = count;
  t->ndeps = 0;
  int d[3] = {dep0, dep1, dep2};
  for (int i = 0; i < 3; i++)
    if (d[i] >= 0)
      t->deps[t->ndeps++] = d[i];
  return S->n++;
}

/* Tag of chunk `chunk` of stream `stream`: the low 10 bits number chunks
 * (windows keep far fewer than 1024 of one stream in flight), the rest the
 * stream, so tags stay below MPI's guaranteed 32767. */
int ltc_tag(int stream, int chunk) { return (stream & 31) * 1024 + (chunk & 1023); }

int ltc_nchunks(int64_t count, int64_t chunk_elems)
{
  if (count <= 0)
    return 0;
  return (int)((count + chunk_elems - 1) / chunk_elems);
}

int64_t ltc_part(int64_t count, int parts, int i) { return count / parts * i + (count % parts < i ? count % parts : i); }

/* Sum reduction, written so the compiler vectorizes it (-O3 -march=native). */
static void add_f32(float *restrict d, const float *restrict s, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    d[i] += s[i];
}

static void add_f64(double *restrict d, const double *restrict s, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    d[i] += s[i];
}

void ltc_reduce(void *dst, const void *src, int64_t count, int dtype)
{
#ifdef LTC_SIMULATOR
  /* LTC_SIM_REDUCE=skip (`simulate --skip-reductions`, for shared-malloc buffers that hold no data): no
   * sum, so it costs neither wall time nor simulated time, as the reductions inside SMPI's own
   * collectives cost no simulated time. */
  static int skip = -1;
  if (skip < 0) {
    const char *e = getenv("LTC_SIM_REDUCE");
    skip = e && strcmp(e, "skip") == 0;
  }
  if (skip)
    return;
#endif
  if (dtype == LTC_FLOAT)
    add_f32(dst, src, count);
  else
    add_f64(dst, src, count);
}

/* Waiting with nothing arrived: first give the core away (ranks may
 * outnumber cores), and after a long wait sleep a little, so that a rank
 * sharing our core gets whole time slices instead of yields bouncing back. */
static void ltc_idle(long n)
{
  if (n < 256) {
    sched_yield();
  } else {
    struct timespec ts = {0, n < 4096 ? 2000 : 20000};
    nanosleep(&ts, NULL);
  }
}

/* Peers of the requests still in flight, for the watchdog's message. */
static void note_waiting(ltc_sched *S, const int *req_task, int nactive)
{
  int peers[8], n = 0;
  for (int i = 0; i < nactive && n < 8; i++) {
    int p = S->t[req_task[i]].peer, seen = 0;
    for (int k = 0; k < n; k++)
      seen |= peers[k] == p;
    if (!seen)
      peers[n++] = p;
  }
  ltc_op_waiting(S->ctx, peers, n);
}

int ltc_sched_run(ltc_sched *S, const char *opname)
{
  if (S->err)
    return ltc_fail("%s: out of memory building the schedule", opname);
  int n = S->n;
  if (n == 0)
    return 0;
  int rc = 0;
  int *out_n = calloc((size_t)n + 1, sizeof(int));
  int *ready = malloc((size_t)n * sizeof(int));
  int *req_task = malloc((size_t)n * sizeof(int));
  int *idx = malloc((size_t)n * sizeof(int));
  MPI_Request *reqs = malloc((size_t)n * sizeof(MPI_Request));
  int nedges = 0;
  for (int i = 0; i < n; i++)
    nedges += S->t[i].ndeps;
  int *edges = malloc((size_t)(nedges + 1) * sizeof(int));
  if (!out_n || !ready || !req_task || !idx || !reqs || !edges) {
    rc = ltc_fail("%s: out of memory running the schedule", opname);
    goto done;
  }
  /* dependents of each task, as a compressed adjacency list */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < S->t[i].ndeps; k++)
      out_n[S->t[i].deps[k]]++;
  int acc = 0;
  for (int i = 0; i < n; i++) {
    S->t[i].out_start = acc;
    acc += out_n[i];
    S->t[i].out_n = 0;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < S->t[i].ndeps; k++) {
      ltc_task *d = &S->t[S->t[i].deps[k]];
      edges[d->out_start + d->out_n++] = i;
    }

  int rh = 0, rt = 0, finished = 0, nactive = 0;
  for (int i = 0; i < n; i++)
    if (S->t[i].ndeps == 0)
      ready[rt++] = i;
  long idle = 0;
  for (;;) {
    while (rh < rt) {
      int i = ready[rh++];
      ltc_task *t = &S->t[i];
      if (S->ctx->fault_after && ++S->ctx->tasks_run >= S->ctx->fault_after)
        _exit(7);   /* test hook: this rank dies in the middle of a collective */
      if (t->kind == T_REDUCE) {
        ltc_reduce(t->buf, t->src, t->count, S->dtype);
      } else {
        int e = t->kind == T_SEND
                  ? MPI_Isend(t->buf, (int)t->count, S->mtype, t->peer, t->tag, S->ctx->comm, &reqs[nactive])
                  : MPI_Irecv(t->buf, (int)t->count, S->mtype, t->peer, t->tag, S->ctx->comm, &reqs[nactive]);
        if (ltc_mpi_check(S->ctx, e, opname)) {
          rc = -1;
          goto done;
        }
        req_task[nactive++] = i;
        continue;
      }
      finished++;
      for (int k = 0; k < t->out_n; k++) {
        int j = edges[t->out_start + k];
        if (--S->t[j].ndeps == 0)
          ready[rt++] = j;
      }
    }
    if (finished == n)
      break;
    if (nactive == 0) {
      rc = ltc_fail("%s: internal error: schedule stalled (%d of %d tasks done)", opname, finished, n);
      goto done;
    }
    int outc = 0;
#ifdef LTC_SIMULATOR
    /* One completion per call. SMPI's MPI_Waitsome waits for one request and MPI_Tests the others, and
     * SimGrid (3.32) does not take a communication found done by a test off its rank's list of
     * activities, which every later event on that rank walks (a fifth of the wall time at 64 ranks).
     * Waitany completes each request through the waiting simcall, which removes it. The simulated time
     * is the same to the nanosecond: what is done is found by the next call at the same instant. */
    int e = MPI_Waitany(nactive, reqs, &idx[0], MPI_STATUS_IGNORE);
    if (e == MPI_SUCCESS)
      outc = idx[0] == MPI_UNDEFINED ? 0 : 1;
#else
    int e = MPI_Testsome(nactive, reqs, &outc, idx, MPI_STATUSES_IGNORE);
#endif
    if (e != MPI_SUCCESS)
      note_waiting(S, req_task, nactive);
    if (ltc_mpi_check(S->ctx, e, opname)) {
      rc = -1;
      goto done;
    }
    if (outc == 0 || outc == MPI_UNDEFINED) {
      /* Nothing arrived: spin briefly, then give the core away (ranks may
       * outnumber cores), and tell the watchdog whom we wait for. */
      if (++idle > S->ctx->spin && S->ctx->spin >= 0)
        ltc_idle(idle - S->ctx->spin);
      if ((idle & 4095) == 64)
        note_waiting(S, req_task, nactive);
      continue;
    }
    idle = 0;
    for (int k = 0; k < outc; k++) {
      ltc_task *t = &S->t[req_task[idx[k]]];
      finished++;
      for (int q = 0; q < t->out_n; q++) {
        int j = edges[t->out_start + q];
        if (--S->t[j].ndeps == 0)
          ready[rt++] = j;
      }
    }
    /* drop completed requests (Testsome and Waitany set them to MPI_REQUEST_NULL) */
    int w = 0;
    for (int k = 0; k < nactive; k++)
      if (reqs[k] != MPI_REQUEST_NULL) {
        reqs[w] = reqs[k];
        req_task[w++] = req_task[k];
      }
    nactive = w;
  }
done:
  free(out_n);
  free(ready);
  free(req_task);
  free(idx);
  free(reqs);
  free(edges);
  return rc;
}
