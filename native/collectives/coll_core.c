/* The context and the public entry points: communicator duplication, the
 * agreement check that turns mismatched calls into errors on every rank, the
 * communication thread behind the non-blocking form, and the watchdog that
 * ends a stuck collective with a message and MPI_Abort.
 *
 * Funneling: every MPI call of one context runs under ctx->mpi_lock, from
 * the caller's thread (blocking calls with nothing queued) or from the
 * communication thread (queued requests, run in order). So MPI sees one
 * thread at a time from us: MPI_THREAD_SERIALIZED is enough for the
 * non-blocking form. mpi4py asks for MPI_THREAD_MULTIPLE by default, which
 * also lets the program make its own mpi4py calls while a request runs. */
#include "coll_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static __thread char errbuf[512];

const char *ltc_errmsg(void) { return errbuf; }

int ltc_fail(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errbuf, sizeof errbuf, fmt, ap);
  va_end(ap);
  return -1;
}

int ltc_abi_version(void) { return LTC_ABI; }

MPI_Datatype ltc_mpi_type(int dtype) { return dtype == LTC_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }
size_t ltc_esize(int dtype) { return dtype == LTC_FLOAT ? sizeof(float) : sizeof(double); }

/* An MPI error inside a collective means a peer died or the transport
 * broke: nothing can be recovered, and a Python exception would only leave
 * this rank hanging in MPI_Finalize. So say what happened and abort the job,
 * the same end as the watchdog's. Without a context (setup) it is an error. */
int ltc_mpi_check(ltc_ctx *ctx, int rc, const char *what)
{
  if (rc == MPI_SUCCESS)
    return 0;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  if (!ctx)
    return ltc_fail("%s: MPI error: %s", what, msg);
  char peers[160] = "";
  int off = 0;
  for (int i = 0; i < ctx->nwaiting; i++)
    off += snprintf(peers + off, sizeof peers - off, "%s%d", i ? ", " : " (talking to ranks ", ctx->waiting_peers[i]);
  if (ctx->nwaiting)
    snprintf(peers + off, sizeof peers - off, ")");
  fprintf(stderr,
          "luatorch mpi: rank %d of %d: %s failed in %s: MPI error: %s%s; a peer has probably died. "
          "Aborting all ranks (MPI_Abort).\n",
          ctx->rank, ctx->size, ctx->op_desc, what, msg, peers);
  fflush(stderr);
  MPI_Abort(ctx->comm, 4);
  _exit(4);
}

static const char *names[LTC_NALGORITHMS] = {"auto", "mpi", "ring", "rhd", "tree", "multicolor", "multicolor_ring"};

int ltc_algorithm_id(const char *name)
{
  for (int i = 0; i < LTC_NALGORITHMS; i++)
    if (name && strcmp(name, names[i]) == 0)
      return i;
  return -1;
}

const char *ltc_algorithm_name(int id) { return id >= 0 && id < LTC_NALGORITHMS ? names[id] : "?"; }

char *ltc_scratch(ltc_ctx *ctx, size_t bytes)
{
  if (bytes <= ctx->scratch_cap)
    return ctx->scratch;
  if (ctx->scratch)
    LTC_BUF_FREE(ctx->scratch);
  ctx->scratch = LTC_BUF_ALLOC(bytes);
  ctx->scratch_cap = ctx->scratch ? bytes : 0;
  if (!ctx->scratch)
    ltc_fail("allreduce: cannot allocate %zu bytes of scratch", bytes);
  return ctx->scratch;
}

/* ---------------------------------------------------------------- watchdog */

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ltc_op_begin(ltc_ctx *ctx, const char *desc)
{
  pthread_mutex_lock(&ctx->wlock);
  snprintf(ctx->op_desc, sizeof ctx->op_desc, "%s", desc);
  ctx->nwaiting = 0;
  ctx->op_phase = "in the MPI library";
  ctx->op_start = now();
  ctx->op_active = 1;
  pthread_mutex_unlock(&ctx->wlock);
}

void ltc_op_phase(ltc_ctx *ctx, const char *phase) { ctx->op_phase = phase; }

void ltc_op_end(ltc_ctx *ctx)
{
  ctx->op_active = 0;
}

void ltc_op_waiting(ltc_ctx *ctx, const int *peers, int n)
{
  pthread_mutex_lock(&ctx->wlock);
  for (int i = 0; i < n && i < 8; i++)
    ctx->waiting_peers[i] = peers[i];
  ctx->nwaiting = n < 8 ? n : 8;
  pthread_mutex_unlock(&ctx->wlock);
}

static unsigned long host_hash(void)
{
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  unsigned long h = 5381;
  for (const char *c = name; *c; c++)
    h = h * 33 + (unsigned char)*c;
  return h;
}

#ifndef LTC_SIMULATOR   /* the watchdog and what it reports */
/* A process that no longer runs: gone, or a zombie its launcher has not reaped yet. */
static int process_gone(int pid)
{
  if (kill(pid, 0) == -1 && errno == ESRCH)
    return 1;
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *close = strrchr(buf, ')');
  return close && (close[2] == 'Z' || close[2] == 'X');
}

/* "; gone from this host: rank 1 (pid ...)": peers on our host whose process is gone. */
static void dead_local_peers(ltc_ctx *ctx, char *buf, size_t cap)
{
  buf[0] = 0;
  if (!ctx->peer_pid)
    return;
  unsigned long me = ctx->peer_host[ctx->rank];
  size_t off = 0;
  int n = 0;
  for (int i = 0; i < ctx->size && off + 32 < cap; i++) {
    if (i == ctx->rank || ctx->peer_host[i] != me)
      continue;
    if (process_gone(ctx->peer_pid[i]))
      off += snprintf(buf + off, cap - off, "%s%d (pid %d)", n++ ? ", " : "; gone from this host: rank ", i,
                      ctx->peer_pid[i]);
  }
}

static void *watchdog_main(void *arg)
{
  ltc_ctx *ctx = arg;
  pthread_mutex_lock(&ctx->wlock);
  while (!ctx->stop) {
    double step = ctx->timeout / 8 < 1.0 ? ctx->timeout / 8 : 1.0;
    if (step < 0.01)
      step = 0.01;
    double until = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    until = ts.tv_sec + ts.tv_nsec * 1e-9 + step;
    ts.tv_sec = (time_t)until;
    ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&ctx->wcond, &ctx->wlock, &ts);
    if (ctx->stop || !ctx->op_active || now() - ctx->op_start < ctx->timeout)
      continue;
    char peers[128] = "";
    int off = 0;
    for (int i = 0; i < ctx->nwaiting; i++)
      off += snprintf(peers + off, sizeof peers - off, "%s%d", i ? ", " : "", ctx->waiting_peers[i]);
    char dead[256];
    dead_local_peers(ctx, dead, sizeof dead);
    fprintf(stderr,
            "luatorch mpi: rank %d of %d: %s did not finish within %.3g s (waiting for %s%s%s); "
            "a peer has died or hangs. Aborting all ranks (MPI_Abort). "
            "Set LUATORCH_MPI_TIMEOUT or timeout= to change the limit.\n",
            ctx->rank, ctx->size, ctx->op_desc, ctx->timeout, ctx->nwaiting ? (ctx->nwaiting == 1 ? "rank " : "ranks ") : "",
            ctx->nwaiting ? peers : ctx->op_phase, dead);
    fflush(stderr);
    MPI_Abort(ctx->comm, 3);
    _exit(3);
  }
  pthread_mutex_unlock(&ctx->wlock);
  return NULL;
}
#endif

/* -------------------------------------------------------------- operations */

static const char *dtype_name(int dtype) { return dtype == LTC_FLOAT ? "float32" : "float64"; }

/* Every rank contributes (v, -v); one MIN allreduce yields min and max of
 * each field everywhere, so all ranks see the same disagreement and fail
 * alike instead of hanging in mismatched messages. */
static int agree(ltc_ctx *ctx, const char *op, const int64_t *v, const char *const *what, int n)
{
  int64_t buf[16];
  for (int i = 0; i < n; i++) {
    buf[i] = v[i];
    buf[n + i] = -v[i];
  }
  if (ltc_mpi_check(ctx, MPI_Allreduce(MPI_IN_PLACE, buf, 2 * n, MPI_INT64_T, MPI_MIN, ctx->comm), op))
    return -1;
  for (int i = 0; i < n; i++)
    if (buf[i] != -buf[n + i])
      return ltc_fail("%s: ranks disagree on %s (from %lld to %lld across the %d ranks)", op, what[i],
                      (long long)buf[i], (long long)-buf[n + i], ctx->size);
  return 0;
}

static int run_allreduce(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype, int alg,
                         int colors, int64_t chunk)
{
  size_t es = ltc_esize(dtype);
  int64_t nbytes = count * (int64_t)es;
  int asked = alg;
  if (alg == LTC_AUTO)
    ltc_auto_choose(ctx, nbytes, &alg, &colors);
  if (colors <= 0)
    colors = alg == LTC_MULTICOLOR || alg == LTC_MULTICOLOR_RING ? ltc_default_colors(ctx, nbytes) : 1;
  if (chunk <= 0)
    chunk = ltc_default_chunk(nbytes, colors);
  if (sendbuf == recvbuf)
    sendbuf = NULL;
  char desc[160];
  snprintf(desc, sizeof desc, "allreduce(%s%s, %lld x %s)", ltc_algorithm_name(alg),
           asked == LTC_AUTO ? " by auto" : "", (long long)count, dtype_name(dtype));
  ltc_op_begin(ctx, desc);
  int rc = 0;
  if (ctx->check) {
    static const char *const what[] = {"the element count", "the element type (0 float32, 1 float64)",
                                       "the algorithm", "the number of colors", "the chunk size"};
    int64_t v[5] = {count, dtype, alg, colors, chunk};
    ltc_op_phase(ctx, "all ranks in the agreement check (some rank has not called this allreduce)");
    rc = agree(ctx, "allreduce", v, what, 5);
    ltc_op_phase(ctx, "in the MPI library");
  }
  if (rc == 0 && alg == LTC_MPI) {
    rc = ltc_allreduce_mpi(ctx, sendbuf, recvbuf, count, dtype);
  } else if (rc == 0) {
    if (sendbuf)
      memcpy(recvbuf, sendbuf, (size_t)nbytes);
    if (ctx->size > 1 && count > 0) {
      switch (alg) {
      case LTC_RING: rc = ltc_allreduce_ring(ctx, recvbuf, count, dtype, chunk); break;
      case LTC_RHD: rc = ltc_allreduce_rhd(ctx, recvbuf, count, dtype); break;
      case LTC_TREE: rc = ltc_allreduce_tree(ctx, recvbuf, count, dtype, chunk); break;
      case LTC_MULTICOLOR: rc = ltc_allreduce_multicolor(ctx, recvbuf, count, dtype, colors, chunk, 0); break;
      case LTC_MULTICOLOR_RING: rc = ltc_allreduce_multicolor(ctx, recvbuf, count, dtype, colors, chunk, 1); break;
      default: rc = ltc_fail("allreduce: unknown algorithm %d", alg);
      }
    }
  }
  ltc_op_end(ctx);
  return rc;
}

static int check_args(const void *recvbuf, int64_t count, int dtype, int alg, int colors)
{
  if (dtype != LTC_FLOAT && dtype != LTC_DOUBLE)
    return ltc_fail("allreduce: element type %d is not float32 (0) or float64 (1)", dtype);
  if (count < 0)
    return ltc_fail("allreduce: negative count %lld", (long long)count);
  if (count > 0 && !recvbuf)
    return ltc_fail("allreduce: no buffer");
  if (alg < 0 || alg >= LTC_NALGORITHMS)
    return ltc_fail("allreduce: unknown algorithm %d", alg);
  if (colors > 15)
    return ltc_fail("allreduce: %d colors (at most 15)", colors);
  return 0;
}

/* Wait until the communication thread has nothing queued, so that a direct
 * call keeps the order of the collectives the same on every rank. */
static void drain(ltc_ctx *ctx)
{
  pthread_mutex_lock(&ctx->qlock);
  while (ctx->head)
    pthread_cond_wait(&ctx->dcond, &ctx->qlock);
  pthread_mutex_unlock(&ctx->qlock);
}

int ltc_allreduce(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype, int algorithm,
                  int colors, int64_t chunk_bytes)
{
  if (check_args(recvbuf, count, dtype, algorithm, colors))
    return -1;
  drain(ctx);
  pthread_mutex_lock(&ctx->mpi_lock);
  int rc = run_allreduce(ctx, sendbuf, recvbuf, count, dtype, algorithm, colors, chunk_bytes);
  pthread_mutex_unlock(&ctx->mpi_lock);
  return rc;
}

#ifndef LTC_SIMULATOR
static void *comm_main(void *arg)
{
  ltc_ctx *ctx = arg;
  pthread_mutex_lock(&ctx->qlock);
  for (;;) {
    while (!ctx->head && !ctx->stop)
      pthread_cond_wait(&ctx->qcond, &ctx->qlock);
    if (!ctx->head)
      break;
    ltc_req *r = ctx->head;
    pthread_mutex_unlock(&ctx->qlock);
    pthread_mutex_lock(&ctx->mpi_lock);
    int rc = run_allreduce(ctx, r->sendbuf, r->recvbuf, r->count, r->dtype, r->algorithm, r->colors, r->chunk);
    pthread_mutex_unlock(&ctx->mpi_lock);
    if (rc)
      snprintf(r->err, sizeof r->err, "%s", ltc_errmsg());
    pthread_mutex_lock(&ctx->qlock);
    r->rc = rc;
    r->done = 1;
    ctx->head = r->next;
    if (!ctx->head)
      ctx->tail = NULL;
    pthread_cond_broadcast(&ctx->dcond);
  }
  pthread_mutex_unlock(&ctx->qlock);
  return NULL;
}
#endif

int ltc_iallreduce(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype, int algorithm,
                   int colors, int64_t chunk_bytes, ltc_req **out)
{
  *out = NULL;
  if (check_args(recvbuf, count, dtype, algorithm, colors))
    return -1;
#ifndef LTC_SIMULATOR   /* there, no thread: the request runs in the caller's */
  if (ctx->thread_level < MPI_THREAD_SERIALIZED)
    return ltc_fail("iallreduce: MPI was initialized with thread level %d; the communication thread needs "
                    "MPI_THREAD_SERIALIZED or more (mpi4py.rc.thread_level = 'multiple' or 'serialized')",
                    ctx->thread_level);
#endif
  ltc_req *r = calloc(1, sizeof *r);
  if (!r)
    return ltc_fail("iallreduce: out of memory");
  r->ctx = ctx;
  r->sendbuf = sendbuf;
  r->recvbuf = recvbuf;
  r->count = count;
  r->dtype = dtype;
  r->algorithm = algorithm;
  r->colors = colors;
  r->chunk = chunk_bytes;
#ifdef LTC_SIMULATOR
  /* no communication thread: run it now, in order, and hand back a finished request */
  r->rc = ltc_allreduce(ctx, sendbuf, recvbuf, count, dtype, algorithm, colors, chunk_bytes);
  if (r->rc)
    snprintf(r->err, sizeof r->err, "%s", ltc_errmsg());
  r->done = 1;
#else
  pthread_mutex_lock(&ctx->qlock);
  if (!ctx->thread_started) {
    if (pthread_create(&ctx->thread, NULL, comm_main, ctx) != 0) {
      pthread_mutex_unlock(&ctx->qlock);
      free(r);
      return ltc_fail("iallreduce: cannot start the communication thread");
    }
    ctx->thread_started = 1;
  }
  if (ctx->tail)
    ctx->tail->next = r;
  else
    ctx->head = r;
  ctx->tail = r;
  pthread_cond_signal(&ctx->qcond);
  pthread_mutex_unlock(&ctx->qlock);
#endif
  *out = r;
  return 0;
}

int ltc_test(ltc_req *req, int *done)
{
  pthread_mutex_lock(&req->ctx->qlock);
  *done = req->done;
  pthread_mutex_unlock(&req->ctx->qlock);
  return 0;
}

int ltc_wait(ltc_req *req)
{
  ltc_ctx *ctx = req->ctx;
  pthread_mutex_lock(&ctx->qlock);
  while (!req->done)
    pthread_cond_wait(&ctx->dcond, &ctx->qlock);
  pthread_mutex_unlock(&ctx->qlock);
  int rc = req->rc;
  if (rc)
    ltc_fail("%s", req->err);
  free(req);
  return rc;
}

int ltc_broadcast(ltc_ctx *ctx, void *buf, int64_t nbytes, int root)
{
  if (root < 0 || root >= ctx->size)
    return ltc_fail("broadcast: root %d is not a rank (0..%d)", root, ctx->size - 1);
  if (nbytes < 0 || (nbytes > 0 && !buf))
    return ltc_fail("broadcast: bad buffer");
  drain(ctx);
  pthread_mutex_lock(&ctx->mpi_lock);
  ltc_op_begin(ctx, "broadcast");
  int rc = 0;
  if (ctx->check) {
    static const char *const what[] = {"the byte count", "the root"};
    int64_t v[2] = {nbytes, root};
    ltc_op_phase(ctx, "all ranks in the agreement check (some rank has not called this broadcast)");
    rc = agree(ctx, "broadcast", v, what, 2);
    ltc_op_phase(ctx, "in the MPI library");
  }
  const int64_t piece = 1 << 30;
  for (int64_t lo = 0; rc == 0 && lo < nbytes; lo += piece) {
    int n = (int)(nbytes - lo < piece ? nbytes - lo : piece);
    rc = ltc_mpi_check(ctx, MPI_Bcast((char *)buf + lo, n, MPI_BYTE, root, ctx->comm), "broadcast");
  }
  ltc_op_end(ctx);
  pthread_mutex_unlock(&ctx->mpi_lock);
  return rc;
}

int ltc_barrier(ltc_ctx *ctx)
{
  drain(ctx);
  pthread_mutex_lock(&ctx->mpi_lock);
  ltc_op_begin(ctx, "barrier");
  int rc = ltc_mpi_check(ctx, MPI_Barrier(ctx->comm), "barrier");
  ltc_op_end(ctx);
  pthread_mutex_unlock(&ctx->mpi_lock);
  return rc;
}

/* ----------------------------------------------------------------- context */

int ltc_create(const void *comm_handle_addr, double timeout_s, ltc_ctx **out)
{
  *out = NULL;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin)
    return ltc_fail("MPI is not initialized (import mpi4py.MPI first) or already finalized");
  if (!comm_handle_addr)
    return ltc_fail("ltc_create: no communicator");
  ltc_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return ltc_fail("ltc_create: out of memory");
  MPI_Comm user = *(const MPI_Comm *)comm_handle_addr;
  if (ltc_mpi_check(NULL, MPI_Comm_dup(user, &ctx->comm), "MPI_Comm_dup")) {
    free(ctx);
    return -1;
  }
  MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(ctx->comm, &ctx->rank);
  MPI_Comm_size(ctx->comm, &ctx->size);
  MPI_Query_thread(&ctx->thread_level);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  size_t k = strcspn(lib, "\n,");
  snprintf(ctx->library, sizeof ctx->library, "%.*s", (int)k, lib);
  int *tagub = NULL, flag = 0;
  MPI_Comm_get_attr(ctx->comm, MPI_TAG_UB, &tagub, &flag);
  if (flag && *tagub < 32767) {
    MPI_Comm_free(&ctx->comm);
    free(ctx);
    return ltc_fail("MPI_TAG_UB is %d, below the 32767 the collectives need", *tagub);
  }
  const char *env = getenv("LUATORCH_MPI_TIMEOUT");
  ctx->timeout = timeout_s > 0 ? timeout_s : env && atof(env) > 0 ? atof(env) : 60.0;
  env = getenv("LUATORCH_MPI_CHECK");
  ctx->check = !(env && strcmp(env, "0") == 0);
  /* Idle policy: with a core per rank, spin (a peer's progress, e.g. Open
   * MPI's receiver-side CMA copy, must not wait for our nanosleep); with more
   * ranks on this node than cores, give the core away soon. */
  MPI_Comm node;
  int local = 1;
  if (MPI_Comm_split_type(ctx->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  env = getenv("LUATORCH_MPI_SPIN");
  ctx->spin = env ? atol(env) : (cpus > 0 && local > cpus) ? 32 : -1;
  env = getenv("LUATORCH_MPI_FAULT_AFTER");
  ctx->fault_after = env ? atol(env) : 0;
  ltc_set_model(ctx, 3e-6, 0.2e-9, 0.25e-9);
  ctx->peer_pid = calloc(ctx->size, sizeof *ctx->peer_pid);
  ctx->peer_host = calloc(ctx->size, sizeof *ctx->peer_host);
  if (ctx->peer_pid && ctx->peer_host) {
    int pid = (int)getpid();
    unsigned long host = host_hash();
    if (MPI_Allgather(&pid, 1, MPI_INT, ctx->peer_pid, 1, MPI_INT, ctx->comm) != MPI_SUCCESS ||
        MPI_Allgather(&host, 1, MPI_UNSIGNED_LONG, ctx->peer_host, 1, MPI_UNSIGNED_LONG, ctx->comm) != MPI_SUCCESS) {
      free(ctx->peer_pid);
      free(ctx->peer_host);
      ctx->peer_pid = NULL;
      ctx->peer_host = NULL;
    }
  }
  pthread_mutex_init(&ctx->mpi_lock, NULL);
  pthread_mutex_init(&ctx->qlock, NULL);
  pthread_cond_init(&ctx->qcond, NULL);
  pthread_cond_init(&ctx->dcond, NULL);
  pthread_mutex_init(&ctx->wlock, NULL);
  pthread_cond_init(&ctx->wcond, NULL);
#ifndef LTC_SIMULATOR
  if (pthread_create(&ctx->watchdog, NULL, watchdog_main, ctx) == 0)
    ctx->watchdog_started = 1;
#endif
  *out = ctx;
  return 0;
}

int ltc_destroy(ltc_ctx *ctx)
{
  if (!ctx)
    return 0;
  drain(ctx);
  pthread_mutex_lock(&ctx->qlock);
  ctx->stop = 1;
  pthread_cond_broadcast(&ctx->qcond);
  pthread_mutex_unlock(&ctx->qlock);
  if (ctx->thread_started)
    pthread_join(ctx->thread, NULL);
  pthread_mutex_lock(&ctx->wlock);
  pthread_cond_broadcast(&ctx->wcond);
  pthread_mutex_unlock(&ctx->wlock);
  if (ctx->watchdog_started)
    pthread_join(ctx->watchdog, NULL);
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin)
    MPI_Comm_free(&ctx->comm);
  if (ctx->scratch)
    LTC_BUF_FREE(ctx->scratch);
  free(ctx->peer_pid);
  free(ctx->peer_host);
  free(ctx);
  return 0;
}

int ltc_rank(ltc_ctx *ctx) { return ctx->rank; }
int ltc_size(ltc_ctx *ctx) { return ctx->size; }
const char *ltc_library(ltc_ctx *ctx) { return ctx->library; }
int ltc_thread_level(ltc_ctx *ctx) { return ctx->thread_level; }
void ltc_set_timeout(ltc_ctx *ctx, double seconds)
{
  if (seconds > 0)
    ctx->timeout = seconds;
}
double ltc_get_timeout(ltc_ctx *ctx) { return ctx->timeout; }
void ltc_set_check(ltc_ctx *ctx, int on) { ctx->check = on != 0; }

const char *ltc_mpi_family(void)
{
#if defined(LTC_SIMULATOR)
  return "smpi";
#elif defined(OPEN_MPI)
  return "openmpi";
#elif defined(MPICH_VERSION) || defined(MPICH)
  return "mpich";
#else
  return "unknown";
#endif
}
