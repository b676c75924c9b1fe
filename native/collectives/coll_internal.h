/* Shared internals of the collectives: context, schedules (a small dependency
 * graph of sends, receives and reductions run by one progress loop), errors. */
#ifndef LTC_INTERNAL_H
#define LTC_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#include "lt_coll.h"

#define LTC_ABI 1
#define LTC_MAXDEP 3
#define LTC_SLOTS 4        /* receive buffers per incoming stream: depth of the pipeline */
#define LTC_WINDOW 8       /* sends in flight per outgoing stream */
#ifdef LTC_SIMULATOR
/* Allgather receives posted ahead per ring stream. In the simulator every posted request is on the rank's
 * list that SimGrid walks at each completion and in each MPI_Waitany, and 8 ahead are as early as 64 for
 * the simulated time: a ring moves one step at a time, so the data of step t + 8 cannot come before the
 * receive of step t is done (docs/results/paper-scale.md, "Simulation cost"). */
#define LTC_RECV_AHEAD LTC_WINDOW
#else
#define LTC_RECV_AHEAD (8 * LTC_WINDOW)
#endif
#define LTC_MAXTABLE 64

/* LTC_SIMULATOR: the build for SimGrid's SMPI (smpicc -DLTC_SIMULATOR), the
 * same algorithms with what a simulated rank cannot do taken out: no
 * communication or watchdog thread (SMPI ranks are simulated actors that
 * cannot call MPI from extra OS threads), waiting blocks in MPI_Waitany
 * instead of polling (every MPI_Test costs simulated time, smpi/test), and
 * scratch comes from SMPI's shared malloc so that many ranks x large buffers
 * fit in memory (with --cfg=smpi/shared-malloc:off it is a plain malloc and
 * real data moves). */
#ifdef LTC_SIMULATOR
#define LTC_BUF_ALLOC(bytes) SMPI_SHARED_MALLOC(bytes)
#define LTC_BUF_FREE(p) SMPI_SHARED_FREE(p)
#else
#define LTC_BUF_ALLOC(bytes) aligned_alloc(64, ((bytes) + 63) / 64 * 64)
#define LTC_BUF_FREE(p) free(p)
#endif

int ltc_fail(const char *fmt, ...);

enum { T_SEND = 0, T_RECV = 1, T_REDUCE = 2 };

typedef struct ltc_task {
  int kind, peer, tag;
  char *buf;          /* SEND: data sent; RECV: where it lands; REDUCE: buf += src */
  const char *src;
  int64_t count;      /* elements */
  int deps[LTC_MAXDEP];
  int ndeps;          /* while building: deps used; while running: deps not yet done */
  int out_start, out_n;
} ltc_task;

/* A schedule: tasks in creation order, with dependencies on earlier tasks. */
typedef struct ltc_sched {
  ltc_ctx *ctx;
  ltc_task *t;
  int n, cap;
  int dtype;
  size_t esize;
  MPI_Datatype mtype;
  int err;
} ltc_sched;

struct ltc_req {
  ltc_ctx *ctx;
  const void *sendbuf;
  void *recvbuf;
  int64_t count;
  int dtype, algorithm, colors;
  int64_t chunk;
  volatile int done;
  int rc;
  char err[512];
  ltc_req *next;
};

struct ltc_ctx {
  MPI_Comm comm;
  int rank, size, thread_level, check;
  double timeout;
  char library[160];

  /* the funnel: one thread at a time runs MPI for this context */
  pthread_mutex_t mpi_lock;

  /* communication thread and its FIFO of requests */
  pthread_t thread;
  int thread_started, stop, busy;
  pthread_mutex_t qlock;
  pthread_cond_t qcond, dcond;
  ltc_req *head, *tail;

  /* watchdog: the running operation and since when */
  pthread_t watchdog;
  int watchdog_started;
  pthread_mutex_t wlock;
  pthread_cond_t wcond;
  volatile double op_start;     /* 0 when idle */
  volatile int op_active;
  char op_desc[160];
  const char *volatile op_phase;  /* what the operation is doing, for the message */
  long fault_after;               /* test hook: _exit after this many tasks (LUATORCH_MPI_FAULT_AFTER) */
  long tasks_run;
  long spin;                      /* empty polls before yielding, -1 never (LUATORCH_MPI_SPIN) */
  volatile int waiting_peers[8];
  volatile int nwaiting;
  int *peer_pid;                  /* every rank's pid and host, so the watchdog can name */
  unsigned long *peer_host;       /* the ranks of this host that no longer exist */

  /* scratch for received chunks, grown on demand */
  char *scratch;
  size_t scratch_cap;

  /* auto: model and measured table */
  double alpha, beta, gamma;
  int table_n;
  int64_t table_bytes[LTC_MAXTABLE];
  int table_alg[LTC_MAXTABLE], table_colors[LTC_MAXTABLE];
};

/* schedules */
void ltc_sched_init(ltc_sched *S, ltc_ctx *ctx, int dtype);
void ltc_sched_free(ltc_sched *S);
int ltc_task_add(ltc_sched *S, int kind, int peer, int tag, char *buf, const char *src, int64_t count,
                 int dep0, int dep1, int dep2);
int ltc_sched_run(ltc_sched *S, const char *opname);
char *ltc_scratch(ltc_ctx *ctx, size_t bytes);   /* NULL + error on out of memory */

/* the pieces the algorithms are made of */
int ltc_nchunks(int64_t count, int64_t chunk_elems);
int64_t ltc_part(int64_t count, int parts, int i);   /* start of part i of a balanced split */
void ltc_reduce(void *dst, const void *src, int64_t count, int dtype);
int ltc_tag(int stream, int chunk);                  /* tag of chunk `chunk` of stream `stream` */
int64_t ltc_default_chunk(int64_t nbytes, int colors);

/* Pipelined allreduce of one region along one tree: reduce toward the root
 * (children's contributions added in the order given), broadcast back down.
 * Scratch is LTC_SLOTS chunks per child at scratch. stream: tag family. */
int ltc_sched_tree(ltc_sched *S, char *buf, int64_t count, int64_t chunk_elems, int parent,
                   const int *children, int nchildren, char *scratch, int stream);
size_t ltc_tree_scratch(int nchildren, int64_t chunk_elems, size_t esize);

/* Pipelined ring allreduce of one region: ring[i] is the rank at position i. */
int ltc_sched_ring(ltc_sched *S, char *buf, int64_t count, int64_t chunk_elems, const int *ring,
                   char *scratch, int stream);
size_t ltc_ring_scratch(int64_t chunk_elems, size_t esize);

/* the algorithms, in place on buf */
int ltc_allreduce_mpi(ltc_ctx *ctx, const void *sendbuf, void *recvbuf, int64_t count, int dtype);
int ltc_allreduce_ring(ltc_ctx *ctx, void *buf, int64_t count, int dtype, int64_t chunk);
int ltc_allreduce_rhd(ltc_ctx *ctx, void *buf, int64_t count, int dtype);
int ltc_allreduce_tree(ltc_ctx *ctx, void *buf, int64_t count, int dtype, int64_t chunk);
int ltc_allreduce_multicolor(ltc_ctx *ctx, void *buf, int64_t count, int dtype, int colors, int64_t chunk,
                             int rings);
void ltc_auto_choose(ltc_ctx *ctx, int64_t nbytes, int *algorithm, int *colors);
int ltc_default_colors(ltc_ctx *ctx, int64_t nbytes);

/* watchdog bookkeeping */
void ltc_op_begin(ltc_ctx *ctx, const char *desc);
void ltc_op_end(ltc_ctx *ctx);
void ltc_op_phase(ltc_ctx *ctx, const char *phase);
void ltc_op_waiting(ltc_ctx *ctx, const int *peers, int n);
int ltc_mpi_check(ltc_ctx *ctx, int rc, const char *what);

MPI_Datatype ltc_mpi_type(int dtype);
size_t ltc_esize(int dtype);

#endif
