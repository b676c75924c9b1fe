/* The stream-ordered caching allocator of lt_cuda_alloc.h, its host backend and its C stress test.
 *
 * Layout. Each device has two pools of free blocks (small: blocks of 2 MiB segments for requests up to
 * 1 MiB; large: everything else), each a sorted array of block pointers ordered by (stream, size,
 * address), so a best fit for (stream, size) is one binary search. An array and memmove rather than a
 * tree: the pools hold hundreds of blocks, not millions, and the code stays short. Blocks of one segment
 * form a doubly linked list in address order; all of them belong to the segment's stream, since a free
 * block is only ever reused by its own stream. Live blocks are found by address in one open-addressing
 * table for the whole allocator (the free call names no device).
 *
 * Locks: a mutex per device guards its pools, segments, pending list, stats and the blocks themselves;
 * the table has its own mutex, only ever taken alone or inside a device mutex (never the other way),
 * and held for a lookup or an update.
 *
 * Nothing fails half-way: host memory that a later step needs (pool slots, pending entries) is reserved
 * before the state changes, so a failed call leaves the allocator as it was. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "lt_internal.h"

enum { ST_FREE = 0, ST_LIVE = 1, ST_PENDING = 2 };

typedef struct segment segment;

typedef struct block {
  char *ptr;
  int64_t size;          /* a multiple of LT_CUDA_ALLOC_ROUND */
  int64_t requested;     /* while live */
  void *stream;
  int device;
  int state;
  int small;             /* which pool */
  int events;            /* events still to complete, while pending */
  struct block *prev, *next;
  segment *seg;
  void **uses;           /* streams recorded by record_stream (never the block's own) */
  int nuses, capuses;
} block;

struct segment {
  char *base;
  int64_t size;
  int small;
  block *first;
  segment *prev, *next;
};

typedef struct {
  block **v;
  int64_t n, cap;
  int64_t nblocks;       /* blocks of this pool's segments, free or not: v never needs more slots */
} pool;

typedef struct {
  void *event;
  block *b;
} pending;

typedef struct {
  pthread_mutex_t mu;
  pool pools[2];         /* [0] large, [1] small */
  segment *segs;
  pending *pend;
  int64_t npend, cappend;
  lt_cuda_alloc_stats st;
} devstate;

typedef struct {
  uintptr_t key;         /* 0: empty */
  block *b;
} slot;

struct lt_cuda_allocator {
  lt_cuda_backend be;
  int ndev;
  devstate *dev;
  pthread_mutex_t map_mu;
  slot *map;
  int64_t map_cap, map_n;
};

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* "3.00 MiB" */
static const char *fmt_bytes(char *buf, size_t len, int64_t n) {
  if (n >= 1048576) snprintf(buf, len, "%.2f MiB", n / 1048576.0);
  else if (n >= 1024) snprintf(buf, len, "%.1f KiB", n / 1024.0);
  else snprintf(buf, len, "%lld bytes", (long long)n);
  return buf;
}

/* ------------------------------------------------------------------ pools */

static int blk_less(const block *b, void *stream, int64_t size, const char *ptr) {
  if (b->stream != stream) return (uintptr_t)b->stream < (uintptr_t)stream;
  if (b->size != size) return b->size < size;
  return (uintptr_t)b->ptr < (uintptr_t)ptr;
}

/* The first index whose block is not ordered before (stream, size, ptr). */
static int64_t pool_lower(const pool *p, void *stream, int64_t size, const char *ptr) {
  int64_t lo = 0, hi = p->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (blk_less(p->v[mid], stream, size, ptr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Make room for one more block of the pool's segments, before creating it. */
static int pool_reserve(pool *p) {
  if (p->nblocks + 1 > p->cap) {
    int64_t cap = p->cap ? p->cap * 2 : 64;
    block **v = realloc(p->v, (size_t)cap * sizeof *v);
    if (!v) return lt_fail("cuda allocator: out of host memory for its block table");
    p->v = v;
    p->cap = cap;
  }
  p->nblocks++;
  return 0;
}

static void pool_insert(pool *p, block *b) {
  int64_t i = pool_lower(p, b->stream, b->size, b->ptr);
  memmove(p->v + i + 1, p->v + i, (size_t)(p->n - i) * sizeof *p->v);
  p->v[i] = b;
  p->n++;
}

static void pool_remove_at(pool *p, int64_t i) {
  memmove(p->v + i, p->v + i + 1, (size_t)(p->n - i - 1) * sizeof *p->v);
  p->n--;
}

static void pool_remove(pool *p, block *b) {
  int64_t i = pool_lower(p, b->stream, b->size, b->ptr);
  if (i < p->n && p->v[i] == b) pool_remove_at(p, i);
}

/* ----------------------------------------------------------- live table */

static uint64_t mix(uintptr_t k) {
  uint64_t x = (uint64_t)k;
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ULL;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dULL;
  return x ^ (x >> 33);
}

static int64_t map_find(const lt_cuda_allocator *a, const void *ptr) {
  if (!a->map_cap) return -1;
  uintptr_t k = (uintptr_t)ptr;
  int64_t mask = a->map_cap - 1;
  for (int64_t i = (int64_t)(mix(k) & (uint64_t)mask);; i = (i + 1) & mask) {
    if (a->map[i].key == k) return i;
    if (!a->map[i].key) return -1;
  }
}

static void map_put(lt_cuda_allocator *a, block *b) {
  int64_t mask = a->map_cap - 1;
  int64_t i = (int64_t)(mix((uintptr_t)b->ptr) & (uint64_t)mask);
  while (a->map[i].key) i = (i + 1) & mask;
  a->map[i].key = (uintptr_t)b->ptr;
  a->map[i].b = b;
  a->map_n++;
}

/* Keep the table at most half full. */
static int map_reserve(lt_cuda_allocator *a) {
  if ((a->map_n + 1) * 2 <= a->map_cap) return 0;
  int64_t cap = a->map_cap ? a->map_cap * 2 : 1024;
  slot *old = a->map, *m = calloc((size_t)cap, sizeof *m);
  if (!m) return lt_fail("cuda allocator: out of host memory for its table of live blocks");
  int64_t oldcap = a->map_cap;
  a->map = m;
  a->map_cap = cap;
  a->map_n = 0;
  for (int64_t i = 0; i < oldcap; i++)
    if (old[i].key) map_put(a, old[i].b);
  free(old);
  return 0;
}

/* Remove slot i, shifting back the entries of its probe run so lookups need no tombstones. */
static void map_del(lt_cuda_allocator *a, int64_t i) {
  int64_t mask = a->map_cap - 1;
  for (int64_t j = (i + 1) & mask; a->map[j].key; j = (j + 1) & mask) {
    int64_t home = (int64_t)(mix(a->map[j].key) & (uint64_t)mask);
    /* entry j may move to the hole at i unless its home lies cyclically in (i, j] */
    int stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      a->map[i] = a->map[j];
      i = j;
    }
  }
  a->map[i].key = 0;
  a->map[i].b = NULL;
  a->map_n--;
}

/* The live block at ptr with its device's mutex held, or NULL (no mutex held). The device is read
 * under the table's mutex, then looked up again under the device's: between the two the block may have
 * been freed, and its address reused on another device. */
static block *lock_live(lt_cuda_allocator *a, const void *ptr) {
  for (;;) {
    pthread_mutex_lock(&a->map_mu);
    int64_t i = map_find(a, ptr);
    int dev = i >= 0 ? a->map[i].b->device : -1;
    pthread_mutex_unlock(&a->map_mu);
    if (dev < 0) return NULL;
    pthread_mutex_lock(&a->dev[dev].mu);
    pthread_mutex_lock(&a->map_mu);
    i = map_find(a, ptr);
    block *b = i >= 0 ? a->map[i].b : NULL;
    pthread_mutex_unlock(&a->map_mu);
    if (b && b->device == dev) return b;
    pthread_mutex_unlock(&a->dev[dev].mu);
    if (!b) return NULL;
  }
}

/* Why ptr is not a live block: says what it is, for the error message (no mutex held on entry). */
static int bad_pointer(lt_cuda_allocator *a, const void *ptr, const char *what) {
  const char *p = ptr;
  for (int dev = 0; dev < a->ndev; dev++) {
    devstate *d = &a->dev[dev];
    pthread_mutex_lock(&d->mu);
    for (segment *s = d->segs; s; s = s->next) {
      if (p < s->base || p >= s->base + s->size) continue;
      for (block *b = s->first; b; b = b->next) {
        if (p < b->ptr || p >= b->ptr + b->size) continue;
        int state = b->state;
        int64_t size = b->size;
        char *start = b->ptr;
        pthread_mutex_unlock(&d->mu);
        if (p != start)
          return lt_fail("%s: %p points inside a block of %lld bytes at %p (device %d), not at its start", what,
                         ptr, (long long)size, (void *)start, dev);
        if (state == ST_LIVE)  /* freed by another thread at this moment */
          return lt_fail("%s: %p is being freed by another thread (device %d)", what, ptr, dev);
        return lt_fail("%s: %p was freed already (device %d; %s)", what, ptr, dev,
                       state == ST_PENDING ? "it waits for the streams it was recorded on" : "it is cached free");
      }
    }
    pthread_mutex_unlock(&d->mu);
  }
  return lt_fail("%s: %p was not allocated by this cuda allocator", what, ptr);
}

/* ------------------------------------------------------------- blocks */

static void block_delete(block *b) {
  free(b->uses);
  free(b);
}

/* Put a block that is no longer live or pending into its pool, merged with its free neighbours. */
static void free_block(devstate *d, block *b) {
  pool *p = &d->pools[b->small];
  d->st.cached_bytes += b->size;
  b->state = ST_FREE;
  b->nuses = 0;
  b->events = 0;
  block *n;
  if ((n = b->prev) && n->state == ST_FREE) {
    pool_remove(p, n);
    b->ptr = n->ptr;
    b->size += n->size;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
    if (b->seg->first == n) b->seg->first = b;
    block_delete(n);
    p->nblocks--;
  }
  if ((n = b->next) && n->state == ST_FREE) {
    pool_remove(p, n);
    b->size += n->size;
    b->next = n->next;
    if (b->next) b->next->prev = b;
    block_delete(n);
    p->nblocks--;
  }
  pool_insert(p, b);
}

/* Cut b down to size, the rest a free block after it; when host memory for it is short b stays whole
 * (correct, only wasteful). */
static void split_block(devstate *d, block *b, int64_t size) {
  pool *p = &d->pools[b->small];
  block *r = calloc(1, sizeof *r);
  if (!r) return;
  if (pool_reserve(p)) {
    free(r);
    return;
  }
  r->ptr = b->ptr + size;
  r->size = b->size - size;
  r->stream = b->stream;
  r->device = b->device;
  r->small = b->small;
  r->seg = b->seg;
  r->prev = b;
  r->next = b->next;
  if (r->next) r->next->prev = r;
  b->next = r;
  b->size = size;
  r->state = ST_FREE;
  d->st.cached_bytes += r->size;
  pool_insert(p, r);
}

/* A new segment from the backend, as one block (not in the pool). 0, LT_CUDA_BACKEND_OOM or -1. */
static int new_segment(lt_cuda_allocator *a, devstate *d, int dev, int64_t size, void *stream, int small,
                       block **out) {
  pool *p = &d->pools[small];
  segment *s = calloc(1, sizeof *s);
  block *b = calloc(1, sizeof *b);
  if (!s || !b) {
    free(s);
    free(b);
    return lt_fail("cuda allocator: out of host memory for its block records");
  }
  if (pool_reserve(p)) {
    free(s);
    free(b);
    return -1;
  }
  void *mem = NULL;
  int rc = a->be.dev_malloc(a->be.ctx, dev, size, &mem);
  if (rc == 0 && !mem) rc = lt_fail("%s backend returned NULL for a %lld-byte segment on device %d", a->be.name,
                                    (long long)size, dev);
  if (rc != 0) {
    p->nblocks--;
    free(s);
    free(b);
    if (rc == LT_CUDA_BACKEND_OOM) {
      d->st.ooms++;
      return LT_CUDA_BACKEND_OOM;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", lt_errmsg());
    return lt_fail("%s backend failed to allocate a %lld-byte segment on device %d: %s", a->be.name,
                   (long long)size, dev, msg);
  }
  s->base = mem;
  s->size = size;
  s->small = small;
  s->first = b;
  s->next = d->segs;
  if (d->segs) d->segs->prev = s;
  d->segs = s;
  b->ptr = mem;
  b->size = size;
  b->stream = stream;
  b->device = dev;
  b->small = small;
  b->seg = s;
  b->state = ST_FREE;
  d->st.reserved_bytes += size;
  if (d->st.reserved_bytes > d->st.peak_reserved_bytes) d->st.peak_reserved_bytes = d->st.reserved_bytes;
  d->st.segments++;
  d->st.backend_mallocs++;
  *out = b;
  return 0;
}

/* Give every wholly free segment of the device back to the backend. -1 if the backend failed to free
 * one (it is dropped from the books all the same: its state is the backend's to report). */
static int release_free_segments(lt_cuda_allocator *a, devstate *d, int dev) {
  int rc = 0;
  char msg[512] = "";
  for (int k = 0; k < 2; k++) {
    pool *p = &d->pools[k];
    int64_t j = 0;
    for (int64_t i = 0; i < p->n; i++) {
      block *b = p->v[i];
      if (b->prev || b->next) {
        p->v[j++] = b;
        continue;
      }
      segment *s = b->seg;
      if (a->be.dev_free(a->be.ctx, dev, s->base) && !rc) {
        rc = -1;
        snprintf(msg, sizeof msg, "%s", lt_errmsg());
      }
      if (s->prev) s->prev->next = s->next;
      else d->segs = s->next;
      if (s->next) s->next->prev = s->prev;
      d->st.reserved_bytes -= s->size;
      d->st.cached_bytes -= s->size;
      d->st.segments--;
      d->st.backend_frees++;
      p->nblocks--;
      free(s);
      block_delete(b);
    }
    p->n = j;
  }
  if (rc) return lt_fail("%s backend failed to free a segment on device %d: %s", a->be.name, dev, msg);
  return 0;
}

/* Destroy the done events; blocks whose events are all done go back to their pools. -1 (after doing
 * the rest) if a query failed: that block stays pending. */
static int process_events_locked(lt_cuda_allocator *a, devstate *d, int dev) {
  int rc = 0;
  char msg[512] = "";
  int64_t j = 0;
  for (int64_t i = 0; i < d->npend; i++) {
    pending e = d->pend[i];
    int q = a->be.event_query(a->be.ctx, e.event);
    if (q == LT_CUDA_EVENT_DONE) {
      a->be.event_destroy(a->be.ctx, e.event);
      if (--e.b->events == 0) {
        d->st.pending_bytes -= e.b->size;
        d->st.pending_blocks--;
        free_block(d, e.b);
      }
      continue;
    }
    if (q != LT_CUDA_EVENT_PENDING && !rc) {
      rc = -1;
      snprintf(msg, sizeof msg, "%s", lt_errmsg());
    }
    d->pend[j++] = e;
  }
  d->npend = j;
  if (rc)
    return lt_fail("device %d: querying the event of a block freed after record_stream failed (the block "
                   "stays unused): %s", dev, msg);
  return 0;
}

static int check_device(const lt_cuda_allocator *a, int dev, const char *what) {
  if (!a) return lt_fail("%s: no allocator (NULL)", what);
  if (dev < 0 || dev >= a->ndev)
    return lt_fail("%s: device %d does not exist (the %s backend has %d, numbered from 0)", what, dev,
                   a->be.name, a->ndev);
  return 0;
}

/* --------------------------------------------------------------- API */

lt_cuda_allocator *lt_cuda_alloc_new(const lt_cuda_backend *be) {
  if (!be) {
    lt_fail("lt_cuda_alloc_new: no backend (NULL)");
    return NULL;
  }
  if (!be->dev_malloc || !be->dev_free || !be->event_create || !be->event_record || !be->event_query ||
      !be->event_destroy) {
    lt_fail("lt_cuda_alloc_new: the backend lacks a function (malloc, free and the four event calls are needed)");
    return NULL;
  }
  if (be->ndevices < 1 || be->ndevices > 4096) {
    lt_fail("lt_cuda_alloc_new: the backend has %d devices (1 to 4096 wanted)", be->ndevices);
    return NULL;
  }
  lt_cuda_allocator *a = calloc(1, sizeof *a);
  if (a) a->dev = calloc((size_t)be->ndevices, sizeof *a->dev);
  if (!a || !a->dev) {
    free(a);
    lt_fail("lt_cuda_alloc_new: out of host memory");
    return NULL;
  }
  a->be = *be;
  if (!a->be.name) a->be.name = "device";
  a->ndev = be->ndevices;
  pthread_mutex_init(&a->map_mu, NULL);
  for (int i = 0; i < a->ndev; i++) {
    pthread_mutex_init(&a->dev[i].mu, NULL);
  }
  return a;
}

void lt_cuda_alloc_destroy(lt_cuda_allocator *a) {
  if (!a) return;
  for (int dev = 0; dev < a->ndev; dev++) {
    devstate *d = &a->dev[dev];
    for (int64_t i = 0; i < d->npend; i++) a->be.event_destroy(a->be.ctx, d->pend[i].event);
    free(d->pend);
    segment *s = d->segs;
    while (s) {
      segment *next = s->next;
      a->be.dev_free(a->be.ctx, dev, s->base);
      block *b = s->first;
      while (b) {
        block *bn = b->next;
        block_delete(b);
        b = bn;
      }
      free(s);
      s = next;
    }
    free(d->pools[0].v);
    free(d->pools[1].v);
    pthread_mutex_destroy(&d->mu);
  }
  pthread_mutex_destroy(&a->map_mu);
  free(a->map);
  free(a->dev);
  free(a);
}

int lt_cuda_alloc_ndevices(const lt_cuda_allocator *a) { return a ? a->ndev : 0; }

int lt_cuda_alloc(lt_cuda_allocator *a, int dev, int64_t size, void *stream, void **ptr) {
  if (!ptr) return lt_fail("lt_cuda_alloc: ptr is NULL");
  *ptr = NULL;
  if (check_device(a, dev, "lt_cuda_alloc")) return -1;
  if (size < 0) return lt_fail("lt_cuda_alloc: size must be non-negative, got %lld", (long long)size);
  if (size == 0) return 0;
  if (size > INT64_MAX / 4) return lt_fail("lt_cuda_alloc: size %lld is too large", (long long)size);
  int64_t rsize = round_up(size, LT_CUDA_ALLOC_ROUND);
  int small = rsize <= LT_CUDA_ALLOC_SMALL;
  devstate *d = &a->dev[dev];
  pthread_mutex_lock(&d->mu);
  if (d->npend && process_events_locked(a, d, dev)) {
    d->st.failed_allocs++;
    pthread_mutex_unlock(&d->mu);
    return -1;
  }
  pool *p = &d->pools[small];
  block *b = NULL;
  int hit = 0;
  int64_t i = pool_lower(p, stream, rsize, NULL);
  if (i < p->n && p->v[i]->stream == stream) {
    b = p->v[i];
    pool_remove_at(p, i);
    d->st.cached_bytes -= b->size;
    hit = 1;
  } else {
    int64_t seg = small ? LT_CUDA_ALLOC_SMALL_SEGMENT : round_up(rsize, LT_CUDA_ALLOC_LARGE_ROUND);
    int rc = new_segment(a, d, dev, seg, stream, small, &b);
    if (rc == LT_CUDA_BACKEND_OOM) {
      /* the cached segments of every stream and pool are memory the backend can hand out again */
      if (release_free_segments(a, d, dev)) rc = -1;
      else rc = new_segment(a, d, dev, seg, stream, small, &b);
    }
    if (rc != 0) {
      d->st.failed_allocs++;
      if (rc == LT_CUDA_BACKEND_OOM) {
        char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32];
        lt_fail("%s device %d is out of memory: tried to allocate %s (%lld bytes, in a %s segment); %s is "
                "allocated and %s reserved by the caching allocator (%s of it cached free, %s waiting for "
                "streams), and giving its free segments back did not make room",
                a->be.name, dev, fmt_bytes(s1, sizeof s1, size), (long long)size, fmt_bytes(s2, sizeof s2, seg),
                fmt_bytes(s3, sizeof s3, d->st.allocated_bytes), fmt_bytes(s4, sizeof s4, d->st.reserved_bytes),
                fmt_bytes(s5, sizeof s5, d->st.cached_bytes), fmt_bytes(s6, sizeof s6, d->st.pending_bytes));
      }
      pthread_mutex_unlock(&d->mu);
      return -1;
    }
  }
  int64_t rest = b->size - rsize;
  /* a large-pool leftover of 1 MiB or less could serve no large request: it stays in the block */
  if (rest > 0 && (small || rest > LT_CUDA_ALLOC_SMALL)) split_block(d, b, rsize);
  pthread_mutex_lock(&a->map_mu);
  if (map_reserve(a)) {
    pthread_mutex_unlock(&a->map_mu);
    free_block(d, b);
    d->st.failed_allocs++;
    pthread_mutex_unlock(&d->mu);
    return -1;
  }
  b->state = ST_LIVE;
  b->requested = size;
  map_put(a, b);
  pthread_mutex_unlock(&a->map_mu);
  d->st.allocated_bytes += b->size;
  d->st.requested_bytes += size;
  if (d->st.allocated_bytes > d->st.peak_allocated_bytes) d->st.peak_allocated_bytes = d->st.allocated_bytes;
  d->st.active_blocks++;
  d->st.allocs++;
  d->st.cache_hits += hit;
  *ptr = b->ptr;
  pthread_mutex_unlock(&d->mu);
  return 0;
}

int lt_cuda_alloc_free(lt_cuda_allocator *a, void *ptr) {
  if (!a) return lt_fail("lt_cuda_alloc_free: no allocator (NULL)");
  if (!ptr) return 0;
  block *b = lock_live(a, ptr);
  if (!b) return bad_pointer(a, ptr, "lt_cuda_alloc_free");
  int dev = b->device;
  devstate *d = &a->dev[dev];
  if (b->nuses) {
    /* events first: if the backend refuses one, the block stays live and nothing changed */
    if (d->npend + b->nuses > d->cappend) {
      int64_t cap = d->cappend ? d->cappend : 16;
      while (cap < d->npend + b->nuses) cap *= 2;
      pending *pe = realloc(d->pend, (size_t)cap * sizeof *pe);
      if (!pe) {
        pthread_mutex_unlock(&d->mu);
        return lt_fail("lt_cuda_alloc_free: out of host memory for the events of %p", ptr);
      }
      d->pend = pe;
      d->cappend = cap;
    }
    int k;
    for (k = 0; k < b->nuses; k++) {
      void *ev = NULL;
      if (a->be.event_create(a->be.ctx, dev, &ev)) break;
      d->pend[d->npend + k].event = ev;
      d->pend[d->npend + k].b = b;
      if (a->be.event_record(a->be.ctx, ev, b->uses[k])) {
        a->be.event_destroy(a->be.ctx, ev);
        break;
      }
    }
    if (k < b->nuses) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", lt_errmsg());
      for (int j = 0; j < k; j++) a->be.event_destroy(a->be.ctx, d->pend[d->npend + j].event);
      pthread_mutex_unlock(&d->mu);
      return lt_fail("lt_cuda_alloc_free: %p stays allocated: recording an event on stream %p (it was given to "
                     "record_stream) failed: %s", ptr, b->uses[k], msg);
    }
  }
  pthread_mutex_lock(&a->map_mu);
  map_del(a, map_find(a, ptr));
  pthread_mutex_unlock(&a->map_mu);
  d->st.allocated_bytes -= b->size;
  d->st.requested_bytes -= b->requested;
  d->st.active_blocks--;
  d->st.frees++;
  if (b->nuses) {
    d->npend += b->nuses;
    d->st.events += b->nuses;
    b->events = b->nuses;
    b->state = ST_PENDING;
    d->st.pending_bytes += b->size;
    d->st.pending_blocks++;
  } else {
    free_block(d, b);
  }
  /* a failed query is reported by the next allocation or explicit call; this free has succeeded */
  if (d->npend) process_events_locked(a, d, dev);
  pthread_mutex_unlock(&d->mu);
  return 0;
}

int lt_cuda_alloc_record_stream(lt_cuda_allocator *a, void *ptr, void *stream) {
  if (!a) return lt_fail("lt_cuda_alloc_record_stream: no allocator (NULL)");
  block *b = ptr ? lock_live(a, ptr) : NULL;
  if (!b) return ptr ? bad_pointer(a, ptr, "lt_cuda_alloc_record_stream")
                     : lt_fail("lt_cuda_alloc_record_stream: the pointer is NULL");
  devstate *d = &a->dev[b->device];
  int rc = 0;
  int k = 0;
  while (k < b->nuses && b->uses[k] != stream) k++;
  if (stream != b->stream && k == b->nuses) {
    if (b->nuses == b->capuses) {
      int cap = b->capuses ? b->capuses * 2 : 4;
      void **u = realloc(b->uses, (size_t)cap * sizeof *u);
      if (!u) rc = lt_fail("lt_cuda_alloc_record_stream: out of host memory");
      else {
        b->uses = u;
        b->capuses = cap;
      }
    }
    if (!rc) b->uses[b->nuses++] = stream;
  }
  pthread_mutex_unlock(&d->mu);
  return rc;
}

int lt_cuda_alloc_block_info(lt_cuda_allocator *a, void *ptr, lt_cuda_alloc_block *info) {
  if (!a || !info) return lt_fail("lt_cuda_alloc_block_info: NULL allocator or info");
  block *b = ptr ? lock_live(a, ptr) : NULL;
  if (!b) return ptr ? bad_pointer(a, ptr, "lt_cuda_alloc_block_info")
                     : lt_fail("lt_cuda_alloc_block_info: the pointer is NULL");
  info->device = b->device;
  info->stream = b->stream;
  info->size = b->size;
  info->requested = b->requested;
  info->segment = b->seg->base;
  info->segment_size = b->seg->size;
  info->recorded_streams = b->nuses;
  pthread_mutex_unlock(&a->dev[b->device].mu);
  return 0;
}

/* fn on one device, or on each with device -1; the first error is kept, the other devices still run. */
static int each_device(lt_cuda_allocator *a, int device, const char *what,
                       int (*fn)(lt_cuda_allocator *, devstate *, int)) {
  if (device != -1 && check_device(a, device, what)) return -1;
  if (!a) return lt_fail("%s: no allocator (NULL)", what);
  int lo = device == -1 ? 0 : device, hi = device == -1 ? a->ndev : device + 1;
  int rc = 0;
  char msg[1024] = "";
  for (int dev = lo; dev < hi; dev++) {
    devstate *d = &a->dev[dev];
    pthread_mutex_lock(&d->mu);
    if (fn(a, d, dev) && !rc) {
      rc = -1;
      snprintf(msg, sizeof msg, "%s", lt_errmsg());
    }
    pthread_mutex_unlock(&d->mu);
  }
  if (rc) lt_set_error(msg);
  return rc;
}

static int do_process(lt_cuda_allocator *a, devstate *d, int dev) {
  return d->npend ? process_events_locked(a, d, dev) : 0;
}

static int do_empty(lt_cuda_allocator *a, devstate *d, int dev) {
  int rc = do_process(a, d, dev);
  if (rc) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lt_errmsg());
    release_free_segments(a, d, dev);
    lt_set_error(msg);
    return -1;
  }
  return release_free_segments(a, d, dev);
}

static int do_reset_peak(lt_cuda_allocator *a, devstate *d, int dev) {
  (void)a;
  (void)dev;
  d->st.peak_allocated_bytes = d->st.allocated_bytes;
  d->st.peak_reserved_bytes = d->st.reserved_bytes;
  return 0;
}

int lt_cuda_alloc_process_events(lt_cuda_allocator *a, int device) {
  return each_device(a, device, "lt_cuda_alloc_process_events", do_process);
}

int lt_cuda_alloc_empty_cache(lt_cuda_allocator *a, int device) {
  return each_device(a, device, "lt_cuda_alloc_empty_cache", do_empty);
}

int lt_cuda_alloc_reset_peak(lt_cuda_allocator *a, int device) {
  return each_device(a, device, "lt_cuda_alloc_reset_peak", do_reset_peak);
}

int lt_cuda_alloc_stats_get(lt_cuda_allocator *a, int device, lt_cuda_alloc_stats *stats) {
  if (check_device(a, device, "lt_cuda_alloc_stats_get")) return -1;
  if (!stats) return lt_fail("lt_cuda_alloc_stats_get: stats is NULL");
  devstate *d = &a->dev[device];
  pthread_mutex_lock(&d->mu);
  *stats = d->st;
  int64_t largest = 0;
  for (int k = 0; k < 2; k++)
    for (int64_t i = 0; i < d->pools[k].n; i++)
      if (d->pools[k].v[i]->size > largest) largest = d->pools[k].v[i]->size;
  stats->largest_free_block = largest;
  pthread_mutex_unlock(&d->mu);
  return 0;
}

/* ------------------------------------------------------ host streams */

struct lt_host_stream {
  int64_t enqueued;
  int64_t completed;
  int failed;
};

static lt_host_stream default_stream;

lt_host_stream *lt_host_stream_new(void) {
  lt_host_stream *s = calloc(1, sizeof *s);
  if (!s) lt_fail("lt_host_stream_new: out of host memory");
  return s;
}

void lt_host_stream_free(lt_host_stream *s) {
  if (s != &default_stream) free(s);
}

lt_host_stream *lt_host_stream_default(void) { return &default_stream; }

int64_t lt_host_stream_enqueue(lt_host_stream *s, int64_t n) {
  if (!s) s = &default_stream;
  return __atomic_add_fetch(&s->enqueued, n > 0 ? n : 0, __ATOMIC_ACQ_REL);
}

int64_t lt_host_stream_complete(lt_host_stream *s, int64_t n) {
  if (!s) s = &default_stream;
  int64_t c = __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE);
  for (;;) {
    int64_t q = __atomic_load_n(&s->enqueued, __ATOMIC_ACQUIRE);
    int64_t nc = (n <= 0) ? c : (n > q - c ? q : c + n);
    if (nc <= c) return c;
    /* release: whoever sees the new count also sees what this thread did before completing */
    if (__atomic_compare_exchange_n(&s->completed, &c, nc, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return nc;
  }
}

int64_t lt_host_stream_pending(lt_host_stream *s) {
  if (!s) s = &default_stream;
  int64_t c = __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE);
  return __atomic_load_n(&s->enqueued, __ATOMIC_ACQUIRE) - c;
}

void lt_host_stream_set_error(lt_host_stream *s, int failed) {
  if (!s) s = &default_stream;
  __atomic_store_n(&s->failed, failed, __ATOMIC_RELEASE);
}

/* ----------------------------------------------------- host backend */

typedef struct {
  void *ptr;
  int64_t size;
  int device;
} host_alloc;

typedef struct {
  lt_cuda_backend be;      /* first: the lt_cuda_backend * handed out is this struct */
  pthread_mutex_t mu;
  int ndev;
  int64_t *limits;
  lt_host_backend_stats *st;
  host_alloc *live;        /* every live allocation: frees are checked against it */
  int64_t nlive, caplive;
  int64_t live_events;
} host_backend;

typedef struct {
  lt_host_stream *s;       /* NULL until recorded */
  int64_t target;
} host_event;

static int host_malloc(void *ctx, int dev, int64_t size, void **ptr) {
  host_backend *h = ctx;
  if (dev < 0 || dev >= h->ndev) return lt_fail("host backend: device %d does not exist (%d)", dev, h->ndev);
  pthread_mutex_lock(&h->mu);
  lt_host_backend_stats *st = &h->st[dev];
  if ((h->limits[dev] > 0 && st->live_bytes + size > h->limits[dev])) {
    st->ooms++;
    pthread_mutex_unlock(&h->mu);
    return LT_CUDA_BACKEND_OOM;
  }
  if (h->nlive == h->caplive) {
    int64_t cap = h->caplive ? h->caplive * 2 : 64;
    host_alloc *l = realloc(h->live, (size_t)cap * sizeof *l);
    if (!l) {
      st->ooms++;
      pthread_mutex_unlock(&h->mu);
      return LT_CUDA_BACKEND_OOM;
    }
    h->live = l;
    h->caplive = cap;
  }
  void *p = NULL;
  if (posix_memalign(&p, LT_CUDA_ALLOC_ROUND, (size_t)size)) {
    st->ooms++;
    pthread_mutex_unlock(&h->mu);
    return LT_CUDA_BACKEND_OOM;
  }
  h->live[h->nlive++] = (host_alloc){p, size, dev};
  st->live_allocs++;
  st->live_bytes += size;
  st->mallocs++;
  pthread_mutex_unlock(&h->mu);
  *ptr = p;
  return 0;
}

static int host_free(void *ctx, int dev, void *ptr) {
  host_backend *h = ctx;
  pthread_mutex_lock(&h->mu);
  int64_t i = h->nlive - 1;
  while (i >= 0 && !(h->live[i].ptr == ptr && h->live[i].device == dev)) i--;
  if (i < 0) {
    if (dev >= 0 && dev < h->ndev) h->st[dev].bad_frees++;
    pthread_mutex_unlock(&h->mu);
    return lt_fail("host backend: %p is not a live allocation of device %d", ptr, dev);
  }
  h->st[dev].live_allocs--;
  h->st[dev].live_bytes -= h->live[i].size;
  h->st[dev].frees++;
  h->live[i] = h->live[--h->nlive];
  pthread_mutex_unlock(&h->mu);
  free(ptr);
  return 0;
}

static int host_event_create(void *ctx, int dev, void **event) {
  host_backend *h = ctx;
  (void)dev;
  host_event *e = calloc(1, sizeof *e);
  if (!e) return lt_fail("host backend: out of host memory for an event");
  __atomic_add_fetch(&h->live_events, 1, __ATOMIC_RELAXED);
  *event = e;
  return 0;
}

static int host_event_record(void *ctx, void *event, void *stream) {
  (void)ctx;
  host_event *e = event;
  e->s = stream ? stream : &default_stream;
  e->target = __atomic_load_n(&e->s->enqueued, __ATOMIC_ACQUIRE);
  return 0;
}

static int host_event_query(void *ctx, void *event) {
  (void)ctx;
  host_event *e = event;
  if (!e->s) return LT_CUDA_EVENT_DONE;
  if (__atomic_load_n(&e->s->failed, __ATOMIC_ACQUIRE))
    return lt_fail("host stream %p has failed (lt_host_stream_set_error)", (void *)e->s);
  return __atomic_load_n(&e->s->completed, __ATOMIC_ACQUIRE) >= e->target ? LT_CUDA_EVENT_DONE
                                                                           : LT_CUDA_EVENT_PENDING;
}

static void host_event_destroy(void *ctx, void *event) {
  host_backend *h = ctx;
  free(event);
  __atomic_sub_fetch(&h->live_events, 1, __ATOMIC_RELAXED);
}

lt_cuda_backend *lt_host_backend_new(int ndevices, int64_t limit_bytes) {
  if (ndevices < 1 || ndevices > 4096) {
    lt_fail("lt_host_backend_new: %d devices (1 to 4096 wanted)", ndevices);
    return NULL;
  }
  if (limit_bytes < 0) {
    lt_fail("lt_host_backend_new: the limit must be 0 (none) or positive, got %lld", (long long)limit_bytes);
    return NULL;
  }
  host_backend *h = calloc(1, sizeof *h);
  if (h) {
    h->limits = calloc((size_t)ndevices, sizeof *h->limits);
    h->st = calloc((size_t)ndevices, sizeof *h->st);
  }
  if (!h || !h->limits || !h->st) {
    if (h) {
      free(h->limits);
      free(h->st);
    }
    free(h);
    lt_fail("lt_host_backend_new: out of host memory");
    return NULL;
  }
  pthread_mutex_init(&h->mu, NULL);
  h->ndev = ndevices;
  for (int i = 0; i < ndevices; i++) h->limits[i] = limit_bytes;
  h->be = (lt_cuda_backend){h, "host", ndevices, host_malloc, host_free, host_event_create, host_event_record,
                            host_event_query, host_event_destroy};
  return &h->be;
}

static host_backend *as_host(lt_cuda_backend *b, int device, const char *what) {
  if (!b || b->dev_malloc != host_malloc) {
    lt_fail("%s: not a host backend (make it with lt_host_backend_new)", what);
    return NULL;
  }
  host_backend *h = (host_backend *)b;
  if (device != -1 && (device < 0 || device >= h->ndev)) {
    lt_fail("%s: device %d does not exist (the host backend has %d)", what, device, h->ndev);
    return NULL;
  }
  return h;
}

int lt_host_backend_set_limit(lt_cuda_backend *b, int device, int64_t limit_bytes) {
  host_backend *h = as_host(b, device, "lt_host_backend_set_limit");
  if (!h) return -1;
  if (limit_bytes < 0) return lt_fail("lt_host_backend_set_limit: the limit must be 0 (none) or positive");
  pthread_mutex_lock(&h->mu);
  for (int i = 0; i < h->ndev; i++)
    if (device == -1 || i == device) h->limits[i] = limit_bytes;
  pthread_mutex_unlock(&h->mu);
  return 0;
}

int lt_host_backend_stats_get(lt_cuda_backend *b, int device, lt_host_backend_stats *stats) {
  host_backend *h = as_host(b, device, "lt_host_backend_stats_get");
  if (!h) return -1;
  if (device == -1 || !stats) return lt_fail("lt_host_backend_stats_get: a device and a stats struct are needed");
  pthread_mutex_lock(&h->mu);
  *stats = h->st[device];
  pthread_mutex_unlock(&h->mu);
  stats->live_events = __atomic_load_n(&h->live_events, __ATOMIC_RELAXED);
  return 0;
}

int lt_host_backend_free(lt_cuda_backend *b) {
  if (!b) return 0;
  host_backend *h = as_host(b, -1, "lt_host_backend_free");
  if (!h) return -1;
  int64_t events = __atomic_load_n(&h->live_events, __ATOMIC_RELAXED);
  if (h->nlive || events)
    return lt_fail("lt_host_backend_free: %lld allocations and %lld events are still live (destroy the "
                   "allocator that uses this backend first)", (long long)h->nlive, (long long)events);
  pthread_mutex_destroy(&h->mu);
  free(h->live);
  free(h->limits);
  free(h->st);
  free(h);
  return 0;
}

/* ------------------------------------------------------- stress test */

enum { STRESS_SLOTS = 16, STRESS_INFLIGHT = 64 };

typedef struct {
  char *p;
  int64_t n;             /* the rounded size: the pattern covers the whole block */
  uint64_t id;
  void *stream;
  int64_t ticket;        /* inflight: the own-stream item that uses it */
} stress_blk;

typedef struct {
  lt_cuda_allocator *a;
  int device, index;
  int64_t iters, max_size;
  lt_host_stream *const *streams;
  int nstreams;
  uint64_t rng;
  int *stop;
  lt_cuda_alloc_stress_result r;
  int failed;
  char msg[768];
  pthread_t tid;
} stress_worker;

static uint64_t stress_rand(stress_worker *w) {
  uint64_t x = w->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  w->rng = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t pattern(uint64_t id, int64_t off) { return mix((uintptr_t)id) ^ (uint64_t)off; }

/* A word every 512 bytes and the last one: blocks start 512-aligned, so two overlapping blocks share a
 * word position (the start of the later one) and the second writer overwrites the first one's word. */
static void stress_fill(const stress_blk *b) {
  for (int64_t o = 0; o < b->n; o += LT_CUDA_ALLOC_ROUND) *(uint64_t *)(b->p + o) = pattern(b->id, o);
  *(uint64_t *)(b->p + b->n - 8) = pattern(b->id, b->n - 8);
}

static int stress_check(stress_worker *w, const stress_blk *b, const char *when) {
  w->r.checks++;
  int64_t bad = -1;
  for (int64_t o = 0; o < b->n && bad < 0; o += LT_CUDA_ALLOC_ROUND)
    if (*(uint64_t *)(b->p + o) != pattern(b->id, o)) bad = o;
  if (bad < 0 && *(uint64_t *)(b->p + b->n - 8) != pattern(b->id, b->n - 8)) bad = b->n - 8;
  if (bad < 0) return 0;
  w->r.corruptions++;
  if (!w->failed)
    snprintf(w->msg, sizeof w->msg, "cuda allocator stress, thread %d: the block at %p (%lld bytes, allocation "
             "%llu) %s was overwritten at offset %lld: the allocator handed out memory still in use",
             w->index, (void *)b->p, (long long)b->n, (unsigned long long)b->id, when, (long long)bad);
  w->failed = 1;
  __atomic_store_n(w->stop, 1, __ATOMIC_RELAXED);
  return -1;
}

static void stress_error(stress_worker *w, const char *what) {
  w->r.errors++;
  if (!w->failed) snprintf(w->msg, sizeof w->msg, "cuda allocator stress, thread %d: %s: %s", w->index, what,
                           lt_errmsg());
  w->failed = 1;
  __atomic_store_n(w->stop, 1, __ATOMIC_RELAXED);
}

static int stress_free(stress_worker *w, stress_blk *live, int *nlive, int k, stress_blk *infl, int *ninfl) {
  stress_blk b = live[k];
  live[k] = live[--*nlive];
  if (stress_check(w, &b, "before its free")) return -1;
  lt_host_stream *own = w->streams[w->index];
  int record = b.stream != (void *)own && *ninfl < STRESS_INFLIGHT && stress_rand(w) % 3 == 0;
  if (record) {
    if (lt_cuda_alloc_record_stream(w->a, b.p, own)) {
      stress_error(w, "record_stream");
      return -1;
    }
    b.ticket = lt_host_stream_enqueue(own, 1);
  }
  if (lt_cuda_alloc_free(w->a, b.p)) {
    stress_error(w, "free");
    return -1;
  }
  w->r.frees++;
  if (record) {
    infl[(*ninfl)++] = b;
    w->r.recorded++;
  }
  return 0;
}

/* Only this thread completes its own stream, so until it does the in-flight blocks must stay untouched
 * (and their segments held: reading them is safe). */
static int stress_complete(stress_worker *w, stress_blk *infl, int *ninfl, int64_t n) {
  for (int i = 0; i < *ninfl; i++)
    if (stress_check(w, &infl[i], "after its free, while a stream it was recorded on still had work queued"))
      return -1;
  int64_t done = lt_host_stream_complete(w->streams[w->index], n);
  int j = 0;
  for (int i = 0; i < *ninfl; i++)
    if (infl[i].ticket > done) infl[j++] = infl[i];
  *ninfl = j;
  return 0;
}

static void *stress_main(void *arg) {
  stress_worker *w = arg;
  stress_blk live[STRESS_SLOTS], infl[STRESS_INFLIGHT];
  int nlive = 0, ninfl = 0;
  uint64_t next_id = ((uint64_t)w->index << 40) + 1;
  for (int64_t it = 0; it < w->iters && !__atomic_load_n(w->stop, __ATOMIC_RELAXED); it++) {
    uint64_t r = stress_rand(w) % 100;
    if (r < 42 || nlive == 0) {
      if (nlive == STRESS_SLOTS && stress_free(w, live, &nlive, (int)(stress_rand(w) % nlive), infl, &ninfl)) break;
      int64_t size = stress_rand(w) % 4 ? 1 + (int64_t)(stress_rand(w) % 65536)
                                        : 1 + (int64_t)(stress_rand(w) % (uint64_t)w->max_size);
      stress_blk b = {0};
      b.stream = w->streams[stress_rand(w) % (uint64_t)w->nstreams];
      void *p = NULL;
      if (lt_cuda_alloc(w->a, w->device, size, b.stream, &p)) {
        stress_error(w, "alloc");
        break;
      }
      b.p = p;
      b.n = round_up(size, LT_CUDA_ALLOC_ROUND);
      b.id = next_id++;
      stress_fill(&b);
      live[nlive++] = b;
      w->r.allocs++;
    } else if (r < 80) {
      if (stress_free(w, live, &nlive, (int)(stress_rand(w) % nlive), infl, &ninfl)) break;
    } else if (r < 92) {
      if (stress_complete(w, infl, &ninfl, 1 + (int64_t)(stress_rand(w) % 3))) break;
    } else if (r < 96) {
      if (lt_cuda_alloc_process_events(w->a, w->device)) {
        stress_error(w, "process_events");
        break;
      }
    } else if (r < 99) {
      lt_cuda_alloc_stats st;
      if (lt_cuda_alloc_stats_get(w->a, w->device, &st)) {
        stress_error(w, "stats");
        break;
      }
      if (st.reserved_bytes != st.allocated_bytes + st.pending_bytes + st.cached_bytes) {
        lt_fail("stats do not add up: reserved %lld != allocated %lld + pending %lld + cached %lld",
                (long long)st.reserved_bytes, (long long)st.allocated_bytes, (long long)st.pending_bytes,
                (long long)st.cached_bytes);
        stress_error(w, "stats");
        break;
      }
    } else if (lt_cuda_alloc_empty_cache(w->a, w->device)) {
      stress_error(w, "empty_cache");
      break;
    }
  }
  /* clean up even after a failure: the caller checks that nothing is left allocated */
  while (nlive) {
    stress_blk b = live[--nlive];
    if (!w->failed) stress_check(w, &b, "before its free");
    if (lt_cuda_alloc_free(w->a, b.p)) stress_error(w, "free");
    else w->r.frees++;
  }
  if (!w->failed) stress_complete(w, infl, &ninfl, 0);
  lt_host_stream_complete(w->streams[w->index], INT64_MAX);
  return NULL;
}

int lt_cuda_alloc_stress(lt_cuda_allocator *a, int device, int nthreads, int64_t iters, int64_t max_size,
                         lt_host_stream *const *streams, int nstreams, uint64_t seed,
                         lt_cuda_alloc_stress_result *result) {
  if (check_device(a, device, "lt_cuda_alloc_stress")) return -1;
  if (nthreads < 1 || nthreads > 64) return lt_fail("lt_cuda_alloc_stress: nthreads %d (1 to 64)", nthreads);
  if (!streams || nstreams < nthreads)
    return lt_fail("lt_cuda_alloc_stress: %d streams for %d threads (each thread needs its own)", nstreams, nthreads);
  for (int i = 0; i < nthreads; i++)
    if (!streams[i]) return lt_fail("lt_cuda_alloc_stress: streams[%d] (thread %d's own) is NULL", i, i);
  if (iters < 0 || max_size < 1) return lt_fail("lt_cuda_alloc_stress: iters must be >= 0 and max_size >= 1");
  stress_worker *w = calloc((size_t)nthreads, sizeof *w);
  if (!w) return lt_fail("lt_cuda_alloc_stress: out of host memory");
  int stop = 0, started = 0, rc = 0;
  for (int i = 0; i < nthreads; i++) {
    w[i] = (stress_worker){.a = a, .device = device, .index = i, .iters = iters, .max_size = max_size,
                           .streams = streams, .nstreams = nstreams, .stop = &stop};
    w[i].rng = mix((uintptr_t)(seed * 1000003u + (uint64_t)i + 1)) | 1;
  }
  for (; started < nthreads; started++)
    if (pthread_create(&w[started].tid, NULL, stress_main, &w[started])) break;
  for (int i = 0; i < started; i++) pthread_join(w[i].tid, NULL);
  lt_cuda_alloc_stress_result sum = {0};
  const char *first = NULL;
  for (int i = 0; i < started; i++) {
    sum.allocs += w[i].r.allocs;
    sum.frees += w[i].r.frees;
    sum.recorded += w[i].r.recorded;
    sum.checks += w[i].r.checks;
    sum.corruptions += w[i].r.corruptions;
    sum.errors += w[i].r.errors;
    if (w[i].failed && !first) first = w[i].msg;
  }
  if (result) *result = sum;
  if (first) rc = lt_fail("%s", first);
  else if (started < nthreads) rc = lt_fail("lt_cuda_alloc_stress: could only start %d of %d threads", started, nthreads);
  free(w);
  return rc;
}
