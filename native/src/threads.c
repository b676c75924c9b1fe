/* Thread pool with one LuaJIT state per worker (see lt_threads.h).
 *
 * The LuaJIT C API is not linked: it is looked up in whichever loaded shared
 * object exports both luaL_newstate and luaJIT_setmode (lupa's luajit21
 * extension), so worker states run the same VM and bytecode version as the
 * creating state. Everything else a worker does goes through LuaJIT's FFI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include "lt_internal.h"

typedef struct lua_State lua_State;
static struct {
  lua_State *(*newstate)(void);
  void (*openlibs)(lua_State *);
  int (*loadbuffer)(lua_State *, const char *, size_t, const char *);
  int (*pcall)(lua_State *, int, int, int);
  const char *(*tolstring)(lua_State *, int, size_t *);
  void (*pushlightuserdata)(lua_State *, void *);
  void (*pushnumber)(lua_State *, double);
  void (*close)(lua_State *);
} api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static const char *api_path;
static void *api_handle;

static int find_luajit(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size; (void)data;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
  void *h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  if (dlsym(h, "luaL_newstate") && dlsym(h, "luaJIT_setmode")) {
    api_handle = h;
    return 1;
  }
  dlclose(h);
  return 0;
}

static void load_api(void) {
  if (api_path) api_handle = dlopen(api_path, RTLD_NOW | RTLD_NOLOAD);
  if (!api_handle) dl_iterate_phdr(find_luajit, NULL);
  if (!api_handle) return;
  void *h = api_handle;
  api.newstate = (lua_State * (*)(void)) dlsym(h, "luaL_newstate");
  api.openlibs = (void (*)(lua_State *))dlsym(h, "luaL_openlibs");
  api.loadbuffer = (int (*)(lua_State *, const char *, size_t, const char *))dlsym(h, "luaL_loadbuffer");
  api.pcall = (int (*)(lua_State *, int, int, int))dlsym(h, "lua_pcall");
  api.tolstring = (const char *(*)(lua_State *, int, size_t *))dlsym(h, "lua_tolstring");
  api.pushlightuserdata = (void (*)(lua_State *, void *))dlsym(h, "lua_pushlightuserdata");
  api.pushnumber = (void (*)(lua_State *, double))dlsym(h, "lua_pushnumber");
  api.close = (void (*)(lua_State *))dlsym(h, "lua_close");
}

/* ---------------------------------------------------------------- queues */

typedef struct {
  lt_msg *head, *tail;
} queue;

static void q_push(queue *q, lt_msg *m) {
  m->next = NULL;
  if (q->tail) q->tail->next = m; else q->head = m;
  q->tail = m;
}

static lt_msg *q_pop(queue *q) {
  lt_msg *m = q->head;
  if (m) {
    q->head = m->next;
    if (!q->head) q->tail = NULL;
    m->next = NULL;
  }
  return m;
}

static void q_clear(queue *q) {
  lt_msg *m;
  while ((m = q_pop(q))) lt_msg_free(m);
}

typedef struct {
  lt_pool *pool;
  int index;
  pthread_t tid;
  int started;
} worker;

struct lt_pool {
  int n;
  worker *workers;
  pthread_mutex_t mu;
  pthread_cond_t job_cv, res_cv;
  queue *jobs;      /* n per-worker queues, then the shared one at [n] */
  queue results;
  int64_t queued;
  int stopping;
  char *boot;
  size_t bootlen;
};

static int alive_count;

static lt_msg *msg_new(int64_t id, int thread, int status, const char *data, int64_t len) {
  lt_msg *m = malloc(sizeof *m + (size_t)len + 1);
  if (!m) return NULL;
  m->next = NULL;
  m->id = id;
  m->thread = thread;
  m->status = status;
  m->len = len;
  m->data = (char *)(m + 1);
  if (len) memcpy(m->data, data, (size_t)len);
  m->data[len] = 0;
  return m;
}

void lt_msg_free(lt_msg *m) { free(m); }

static void post_result(lt_pool *p, lt_msg *m) {
  pthread_mutex_lock(&p->mu);
  q_push(&p->results, m);
  pthread_cond_broadcast(&p->res_cv);
  pthread_mutex_unlock(&p->mu);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  lt_pool *p = w->pool;
  __atomic_add_fetch(&alive_count, 1, __ATOMIC_SEQ_CST);
  lua_State *L = api.newstate();
  const char *err = NULL;
  size_t errlen = 0;
  if (!L) {
    err = "cannot create a lua_State";
    errlen = strlen(err);
  } else {
    api.openlibs(L);
    if (api.loadbuffer(L, p->boot, p->bootlen, "=threads.boot") == 0) {
      api.pushlightuserdata(L, p);
      api.pushnumber(L, w->index + 1);
      if (api.pcall(L, 2, 0, 0) != 0) err = api.tolstring(L, -1, &errlen);
    } else {
      err = api.tolstring(L, -1, &errlen);
    }
  }
  if (err) {
    /* the worker is gone: say so to whoever waits for results */
    lt_msg *m = msg_new(-1, w->index, 2, err, (int64_t)errlen);
    if (m) post_result(p, m);
  }
  if (L) api.close(L);
  __atomic_sub_fetch(&alive_count, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

int lt_threads_alive(void) { return __atomic_load_n(&alive_count, __ATOMIC_SEQ_CST); }

lt_pool *lt_pool_new(int n, const char *boot, int64_t bootlen, const char *lualib) {
  if (n < 1) {
    lt_fail("threads: the number of threads must be >= 1, got %d", n);
    return NULL;
  }
  api_path = lualib;
  pthread_once(&api_once, load_api);
  if (!api.newstate || !api.openlibs || !api.loadbuffer || !api.pcall || !api.tolstring || !api.close ||
      !api.pushlightuserdata || !api.pushnumber) {
    lt_fail("threads: no loaded LuaJIT library exports the Lua C API (luaL_newstate)");
    return NULL;
  }
  lt_pool *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->n = n;
  p->workers = calloc((size_t)n, sizeof(worker));
  p->jobs = calloc((size_t)n + 1, sizeof(queue));
  p->boot = malloc((size_t)bootlen + 1);
  if (!p->workers || !p->jobs || !p->boot) goto oom;
  memcpy(p->boot, boot, (size_t)bootlen);
  p->boot[bootlen] = 0;
  p->bootlen = (size_t)bootlen;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->job_cv, NULL);
  pthread_cond_init(&p->res_cv, NULL);
  for (int i = 0; i < n; i++) {
    worker *w = &p->workers[i];
    w->pool = p;
    w->index = i;
    int rc = pthread_create(&w->tid, NULL, worker_main, w);
    if (rc) {
      lt_fail("threads: pthread_create failed for thread %d: %s", i + 1, strerror(rc));
      lt_pool_terminate(p);
      return NULL;
    }
    w->started = 1;
  }
  return p;
oom:
  if (p) {
    free(p->workers);
    free(p->jobs);
    free(p->boot);
    free(p);
  }
  lt_fail("threads: out of memory");
  return NULL;
}

int lt_pool_size(lt_pool *p) { return p->n; }

int lt_pool_addjob(lt_pool *p, int thread, int64_t id, const char *data, int64_t len) {
  if (thread < -1 || thread >= p->n) return lt_fail("threads: no thread %d (pool of %d)", thread + 1, p->n);
  lt_msg *m = msg_new(id, thread, 0, data, len);
  if (!m) return lt_fail("threads: out of memory for a job of %lld bytes", (long long)len);
  pthread_mutex_lock(&p->mu);
  if (p->stopping) {
    pthread_mutex_unlock(&p->mu);
    free(m);
    return lt_fail("threads: the pool is terminated");
  }
  q_push(&p->jobs[thread < 0 ? p->n : thread], m);
  p->queued++;
  /* broadcast: the job may be for one particular sleeper */
  pthread_cond_broadcast(&p->job_cv);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

lt_msg *lt_pool_take_job(lt_pool *p, int thread) {
  pthread_mutex_lock(&p->mu);
  lt_msg *m;
  for (;;) {
    m = q_pop(&p->jobs[thread]);
    if (!m) m = q_pop(&p->jobs[p->n]);
    if (m || p->stopping) break;
    pthread_cond_wait(&p->job_cv, &p->mu);
  }
  if (m) p->queued--;
  pthread_mutex_unlock(&p->mu);
  return m;
}

int64_t lt_pool_jobs_queued(lt_pool *p) {
  pthread_mutex_lock(&p->mu);
  int64_t n = p->queued;
  pthread_mutex_unlock(&p->mu);
  return n;
}

int lt_pool_put_result(lt_pool *p, int thread, int64_t id, int status, const char *data, int64_t len) {
  lt_msg *m = msg_new(id, thread, status, data, len);
  if (!m) return lt_fail("threads: out of memory for a result of %lld bytes", (long long)len);
  post_result(p, m);
  return 0;
}

lt_msg *lt_pool_take_result(lt_pool *p, int block) {
  pthread_mutex_lock(&p->mu);
  lt_msg *m;
  while (!(m = q_pop(&p->results)) && block) pthread_cond_wait(&p->res_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return m;
}

void lt_pool_terminate(lt_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_cond_broadcast(&p->job_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++)
    if (p->workers[i].started) pthread_join(p->workers[i].tid, NULL);
  for (int i = 0; i <= p->n; i++) q_clear(&p->jobs[i]);
  q_clear(&p->results);
  pthread_cond_destroy(&p->job_cv);
  pthread_cond_destroy(&p->res_cv);
  pthread_mutex_destroy(&p->mu);
  free(p->workers);
  free(p->jobs);
  free(p->boot);
  free(p);
}

/* ---------------------------------------------------------------- misc */

void lt_threads_sleep(double seconds) {
  if (seconds <= 0) return;
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

void *lt_mutex_new(void) {
  pthread_mutex_t *m = malloc(sizeof *m);
  if (m) pthread_mutex_init(m, NULL);
  return m;
}
void lt_mutex_lock(void *m) { pthread_mutex_lock(m); }
void lt_mutex_unlock(void *m) { pthread_mutex_unlock(m); }
void lt_mutex_free(void *m) {
  if (!m) return;
  pthread_mutex_destroy(m);
  free(m);
}

void *lt_cond_new(void) {
  pthread_cond_t *c = malloc(sizeof *c);
  if (c) pthread_cond_init(c, NULL);
  return c;
}

int lt_cond_wait(void *c, void *m, double timeout) {
  if (timeout < 0) {
    pthread_cond_wait(c, m);
    return 0;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double t = (double)ts.tv_nsec * 1e-9 + timeout;
  ts.tv_sec += (time_t)t;
  ts.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
  return pthread_cond_timedwait(c, m, &ts) == ETIMEDOUT;
}
void lt_cond_signal(void *c) { pthread_cond_signal(c); }
void lt_cond_broadcast(void *c) { pthread_cond_broadcast(c); }
void lt_cond_free(void *c) {
  if (!c) return;
  pthread_cond_destroy(c);
  free(c);
}

/* ---------------------------------------------------------------- barrier, channel */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, count, aborted;
  unsigned gen;
} barrier;

void *lt_barrier_new(int n) {
  barrier *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  b->n = n;
  return b;
}

int lt_barrier_wait(void *vb) {
  barrier *b = vb;
  pthread_mutex_lock(&b->mu);
  unsigned gen = b->gen;
  if (!b->aborted && ++b->count == b->n) {
    b->count = 0;
    b->gen++;
    pthread_cond_broadcast(&b->cv);
  } else {
    while (gen == b->gen && !b->aborted) pthread_cond_wait(&b->cv, &b->mu);
  }
  int rc = (gen == b->gen && b->aborted) ? -1 : 0;
  pthread_mutex_unlock(&b->mu);
  return rc;
}

void lt_barrier_abort(void *vb) {
  barrier *b = vb;
  pthread_mutex_lock(&b->mu);
  b->aborted = 1;
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

void lt_barrier_free(void *vb) {
  barrier *b = vb;
  if (!b) return;
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t *v;
  size_t head, count, cap;
} chan;

void *lt_chan_new(void) {
  chan *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  return c;
}

void lt_chan_push(void *vc, int64_t v) {
  chan *c = vc;
  pthread_mutex_lock(&c->mu);
  if (c->count == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    int64_t *nv = malloc(cap * sizeof *nv);
    if (nv) {
      for (size_t i = 0; i < c->count; i++) nv[i] = c->v[(c->head + i) % c->cap];
      free(c->v);
      c->v = nv;
      c->head = 0;
      c->cap = cap;
    }
  }
  if (c->count < c->cap) {
    c->v[(c->head + c->count) % c->cap] = v;
    c->count++;
  }
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

int lt_chan_pop(void *vc, int64_t *v, double timeout) {
  chan *c = vc;
  pthread_mutex_lock(&c->mu);
  int timed_out = 0;
  while (c->count == 0 && !timed_out) timed_out = lt_cond_wait(&c->cv, &c->mu, timeout);
  if (c->count) {
    *v = c->v[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
    timed_out = 0;
  }
  pthread_mutex_unlock(&c->mu);
  return timed_out;
}

void lt_chan_free(void *vc) {
  chan *c = vc;
  if (!c) return;
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  free(c->v);
  free(c);
}

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t notempty, notfull;
  char **msg;
  int64_t *len;
  int64_t head, count, size, refs;
} msgqueue;

void *lt_queue_new(int64_t size) {
  if (size < 1) size = 1;
  msgqueue *q = calloc(1, sizeof *q);
  if (!q) return NULL;
  q->msg = calloc((size_t)size, sizeof *q->msg);
  q->len = calloc((size_t)size, sizeof *q->len);
  if (!q->msg || !q->len) {
    free(q->msg), free(q->len), free(q);
    return NULL;
  }
  q->size = size;
  q->refs = 1;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->notempty, NULL);
  pthread_cond_init(&q->notfull, NULL);
  return q;
}

void lt_queue_retain(void *vq) { __atomic_add_fetch(&((msgqueue *)vq)->refs, 1, __ATOMIC_ACQ_REL); }

void lt_queue_release(void *vq) {
  msgqueue *q = vq;
  if (!q || __atomic_sub_fetch(&q->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  for (int64_t i = 0; i < q->count; i++) free(q->msg[(q->head + i) % q->size]);
  pthread_cond_destroy(&q->notempty);
  pthread_cond_destroy(&q->notfull);
  pthread_mutex_destroy(&q->mu);
  free(q->msg), free(q->len), free(q);
}

int lt_queue_push(void *vq, const char *data, int64_t len, double timeout) {
  msgqueue *q = vq;
  char *copy = malloc(len > 0 ? (size_t)len : 1);
  if (!copy) return -1;
  memcpy(copy, data, (size_t)len);
  pthread_mutex_lock(&q->mu);
  int timed_out = 0;
  while (q->count == q->size && !timed_out) timed_out = lt_cond_wait(&q->notfull, &q->mu, timeout);
  if (q->count < q->size) {
    int64_t at = (q->head + q->count) % q->size;
    q->msg[at] = copy, q->len[at] = len;
    q->count++;
    timed_out = 0;
    pthread_cond_signal(&q->notempty);
  } else {
    free(copy);
  }
  pthread_mutex_unlock(&q->mu);
  return timed_out;
}

int lt_queue_pop(void *vq, char **data, int64_t *len, double timeout) {
  msgqueue *q = vq;
  pthread_mutex_lock(&q->mu);
  int timed_out = 0;
  while (q->count == 0 && !timed_out) timed_out = lt_cond_wait(&q->notempty, &q->mu, timeout);
  if (q->count) {
    *data = q->msg[q->head], *len = q->len[q->head];
    q->msg[q->head] = NULL;
    q->head = (q->head + 1) % q->size;
    q->count--;
    timed_out = 0;
    pthread_cond_signal(&q->notfull);
  }
  pthread_mutex_unlock(&q->mu);
  return timed_out;
}

void lt_queue_msg_free(char *data) { free(data); }

int64_t lt_queue_count(void *vq) {
  msgqueue *q = vq;
  pthread_mutex_lock(&q->mu);
  int64_t n = q->count;
  pthread_mutex_unlock(&q->mu);
  return n;
}

int64_t lt_queue_size(void *vq) { return ((msgqueue *)vq)->size; }

int64_t lt_atomic_add(int64_t *p, int64_t v) { return __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL); }

#define SUM_BUFFERS(T)                                           \
  do {                                                           \
    T *d = (T *)dst;                                             \
    for (int k = 0; k < n; k++) {                                \
      T *s = (T *)srcs[k];                                       \
      if (s == d) continue;                                      \
      for (int64_t i = from; i < to; i++) d[i] += s[i];          \
      if (zero_srcs) memset(s + from, 0, (size_t)(to - from) * sizeof(T)); \
    }                                                            \
  } while (0)

/* The device reduction of the optimized DataParallelTable: each worker sums
 * its own chunk (or a finished bucket) of every replica's flat gradient. */
void lt_sum_buffers(int type, void *dst, void **srcs, int n, int64_t from, int64_t to, int zero_srcs) {
  if (to <= from) return;
  if (lt_host_type(type) == LT_FLOAT) SUM_BUFFERS(float);
  else if (lt_host_type(type) == LT_DOUBLE) SUM_BUFFERS(double);
}
