/* threads: a pool of pthreads, each owning its own LuaJIT state (Torch's
 * torch/threads), with byte-string job and result queues between them.
 *
 * Worker states are made through the LuaJIT C API resolved at run time from
 * the LuaJIT already loaded in the process (lupa's extension exports it), so
 * no Python runs on a worker. Jobs and results are opaque byte strings (the
 * Lua side serializes closures and arguments); `thread` -1 is "any worker",
 * 0..n-1 addresses one (specific mode). */

typedef struct lt_pool lt_pool;

typedef struct lt_msg {
  struct lt_msg *next;
  int64_t id;      /* job id chosen by the submitter */
  int thread;      /* worker index 0..n-1 that produced a result */
  int status;      /* results: 0 ok, 1 the job raised, 2 the worker could not start */
  int64_t len;
  char *data;
} lt_msg;

/* Start n workers; each runs `boot` (Lua source) with (pool, index 1..n) as
 * arguments; boot is expected to loop on lt_pool_take_job until it gets NULL.
 * lualib: path of the LuaJIT shared object, or NULL to find the loaded one. */
lt_pool *lt_pool_new(int n, const char *boot, int64_t bootlen, const char *lualib);
int lt_pool_size(lt_pool *p);
int lt_pool_addjob(lt_pool *p, int thread, int64_t id, const char *data, int64_t len);
lt_msg *lt_pool_take_job(lt_pool *p, int thread);            /* blocks; NULL once the pool stops */
int lt_pool_put_result(lt_pool *p, int thread, int64_t id, int status, const char *data, int64_t len);
lt_msg *lt_pool_take_result(lt_pool *p, int block);          /* NULL if none and !block */
int64_t lt_pool_jobs_queued(lt_pool *p);                      /* jobs not yet taken by a worker */
void lt_msg_free(lt_msg *m);
/* Stop (workers finish queued jobs first), join and free the pool. */
void lt_pool_terminate(lt_pool *p);
int lt_threads_alive(void);                                   /* worker threads running in the process */

/* Per-thread compute threads: OpenMP and luatorch kernels on the calling
 * thread use n threads (lt_get_num_threads() then returns n on this thread). */
void lt_set_local_threads(int n);
void lt_threads_sleep(double seconds);

/* Mutexes and conditions shared across states by address. */
void *lt_mutex_new(void);
void lt_mutex_lock(void *m);
void lt_mutex_unlock(void *m);
void lt_mutex_free(void *m);
void *lt_cond_new(void);
int lt_cond_wait(void *c, void *m, double timeout);           /* timeout < 0: forever; returns 1 on timeout */
void lt_cond_signal(void *c);
void lt_cond_broadcast(void *c);
void lt_cond_free(void *c);

/* A reusable barrier for n threads that can be aborted (a failing party
 * aborts it so the others return -1 instead of waiting forever). */
void *lt_barrier_new(int n);
int lt_barrier_wait(void *b);                                 /* 0, or -1 once aborted */
void lt_barrier_abort(void *b);
void lt_barrier_free(void *b);

/* A channel of int64 values (many producers, one consumer). */
void *lt_chan_new(void);
void lt_chan_push(void *c, int64_t v);
int lt_chan_pop(void *c, int64_t *v, double timeout);         /* 0, or 1 on timeout (timeout < 0: forever) */
void lt_chan_free(void *c);

/* A bounded queue of byte strings (torch/threads' Queue): any thread pushes and pops, waiting while
 * it is full (push) or empty (pop). Reference-counted: each state that attaches retains it. */
void *lt_queue_new(int64_t size);
void lt_queue_retain(void *q);
void lt_queue_release(void *q);                                /* frees at the last reference */
int lt_queue_push(void *q, const char *data, int64_t len, double timeout);  /* 0, 1 on timeout, -1 no memory */
/* 0 with *data (free it with lt_queue_msg_free) and *len, or 1 on timeout */
int lt_queue_pop(void *q, char **data, int64_t *len, double timeout);
void lt_queue_msg_free(char *data);
int64_t lt_queue_count(void *q);
int64_t lt_queue_size(void *q);

int64_t lt_atomic_add(int64_t *p, int64_t v);                 /* returns the new value */

/* dst[from:to] += srcs[k][from:to] for every srcs[k] != dst (float or double
 * buffers); with zero_srcs those source ranges are then set to 0. */
void lt_sum_buffers(int type, void *dst, void **srcs, int n, int64_t from, int64_t to, int zero_srcs);
