/* oneDNN convolutions, resolved at run time from the onednn-cpu-gomp wheel.
 *
 * Like BLAS (blas.c), the library is dlopen'ed by path (the Python bridge
 * finds libdnnl.so.3 in the wheel's files), so the build needs no oneDNN
 * headers: the few functions, handles and constants of oneDNN's C API v3 that
 * we call are declared below in our own terms, from its documentation.
 * Handles are opaque pointers; enums are passed as int.
 *
 * Layouts: the tensors stay Torch7's (NCHW data, OIHW weights, format tag
 * "abcd"; NCDHW / OIDHW, "abcde", for the volumetric layer), and
 * getParameters' flat storage stays the owner of the weights.
 * Each shape and pass has two oneDNN variants: oneDNN told the plain layouts
 * (no copies; it then mostly runs its own im2col + GEMM), and oneDNN free to
 * pick its blocked layouts (tag "any"), with reorders of the inputs into
 * scratch and of the output back around the call. Which is faster depends on
 * the layer (docs/results/nn.md, "oneDNN convolutions": blocked wins for 3x3,
 * loses for 1x1 and the 3-channel first layer), so on a shape's first call
 * both, and our im2col path, are timed and the fastest is kept.
 *
 * Threads: this build of oneDNN runs its parallel regions on GNU OpenMP, the
 * libgomp our kernels use, with omp_get_max_threads() of the calling thread:
 * torch.setnumthreads / DataParallelTable's per-worker counts set exactly
 * that (omp_set_num_threads is per thread, tensor.c). A oneDNN primitive is
 * tied to the thread count it was created for, so the count is part of the
 * cache key. Primitives are shared between threads (oneDNN primitives may be
 * executed concurrently); streams and the scratchpad memory (user mode, so no
 * library-global scratchpad is shared) are per thread.
 *
 * Checked once: oneDNN 3.2 (the wheel's 2023.2) computes some shapes wrong (blocked_kernel_is_broken: those
 * this CPU's kernels were seen to get wrong, or hang on, are not offered to it; docs/results/nn.md). Other CPUs
 * run other kernels, so each way oneDNN runs a shape and pass is also compared once, on its first call whose
 * result can tell, with the caller's own way (im2col or unfold + GEMM, tested against PyTorch); a way that
 * disagrees is never used again for that shape and pass, and stderr says so once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lt_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- our declarations of oneDNN's C API v3 ---- */
typedef void *dn_engine, *dn_stream, *dn_md, *dn_pd, *dn_prim, *dn_mem, *dn_attr;
typedef int64_t dn_dims[12];
typedef struct { int arg; dn_mem memory; } dn_arg;
typedef struct { int major, minor, patch; const char *hash; } dn_version;

enum { DN_SUCCESS = 0 };
enum { DN_ENGINE_CPU = 1 };
enum { DN_STREAM_IN_ORDER = 1 };
enum { DN_F32 = 3 };
enum { DN_TAG_ANY = 1, DN_TAG_A = 2, DN_TAG_ABCD = 5, DN_TAG_ABCDE = 6 };
enum { DN_FORWARD_TRAINING = 64, DN_BACKWARD_DATA = 160, DN_BACKWARD_WEIGHTS = 192 };
enum { DN_CONV_DIRECT = 1 };
enum { DN_SCRATCHPAD_USER = 1 };
enum { DN_Q_SRC_MD = 129, DN_Q_DIFF_SRC_MD, DN_Q_WEIGHTS_MD, DN_Q_DIFF_WEIGHTS_MD, DN_Q_DST_MD, DN_Q_DIFF_DST_MD,
       DN_Q_SCRATCHPAD_MD = 136 };
enum { DN_ARG_SRC = 1, DN_ARG_DST = 17, DN_ARG_WEIGHTS = 33, DN_ARG_BIAS = 41, DN_ARG_SCRATCHPAD = 80,
       DN_ARG_DIFF_SRC = 129, DN_ARG_DIFF_DST = 145, DN_ARG_DIFF_WEIGHTS = 161, DN_ARG_DIFF_BIAS = 169 };

static struct {
  int (*engine_create)(dn_engine *, int kind, size_t index);
  int (*stream_create)(dn_stream *, dn_engine, unsigned flags);
  int (*stream_wait)(dn_stream);
  int (*stream_destroy)(dn_stream);
  int (*md_create_with_tag)(dn_md *, int ndims, const int64_t *dims, int data_type, int tag);
  int (*md_destroy)(dn_md);
  size_t (*md_get_size)(const void *md);
  int (*attr_create)(dn_attr *);
  int (*attr_destroy)(dn_attr);
  int (*attr_set_scratchpad_mode)(dn_attr, int mode);
  int (*conv_fwd_pd)(dn_pd *, dn_engine, int prop, int alg, const void *src, const void *wei, const void *bias,
                     const void *dst, const int64_t *strides, const int64_t *dilates, const int64_t *pad_l,
                     const int64_t *pad_r, const void *attr);
  int (*conv_bwd_data_pd)(dn_pd *, dn_engine, int alg, const void *diff_src, const void *wei, const void *diff_dst,
                          const int64_t *strides, const int64_t *dilates, const int64_t *pad_l, const int64_t *pad_r,
                          const void *hint_fwd, const void *attr);
  int (*conv_bwd_weights_pd)(dn_pd *, dn_engine, int alg, const void *src, const void *diff_wei,
                             const void *diff_bias, const void *diff_dst, const int64_t *strides,
                             const int64_t *dilates, const int64_t *pad_l, const int64_t *pad_r, const void *hint_fwd,
                             const void *attr);
  int (*reorder_pd)(dn_pd *, const void *src_md, dn_engine, const void *dst_md, dn_engine, const void *attr);
  int (*md_equal)(const void *a, const void *b);
  const void *(*pd_query_md)(const void *pd, int what, int index);
  int (*pd_destroy)(dn_pd);
  int (*prim_create)(dn_prim *, const void *pd);
  int (*prim_execute)(const void *prim, dn_stream, int nargs, const dn_arg *args);
  int (*prim_destroy)(dn_prim);
  int (*mem_create)(dn_mem *, const void *md, dn_engine, void *handle);
  int (*mem_destroy)(dn_mem);
  const dn_version *(*get_version)(void);
  int (*sgemm)(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
               const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
} dn;

static dn_engine engine;
static int loaded;
static int enabled;
static int64_t calls;
static int64_t rejections;  /* ways dropped for disagreeing with the own way */
static int faults, fault_role;  /* for tests: oneDNN results still to corrupt, and which (lt_onednn_inject_faults) */
static char info[1024] = "oneDNN not loaded";
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

int lt_onednn_load(const char *path) {
  if (loaded) return 0;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(info, sizeof info, "oneDNN not loaded: %s", dlerror());
    return lt_fail("cannot load oneDNN library %s: %s", path, info + 19);
  }
  struct { void **slot; const char *name; } syms[] = {
    {(void **)&dn.engine_create, "dnnl_engine_create"},
    {(void **)&dn.stream_create, "dnnl_stream_create"},
    {(void **)&dn.stream_wait, "dnnl_stream_wait"},
    {(void **)&dn.stream_destroy, "dnnl_stream_destroy"},
    {(void **)&dn.md_create_with_tag, "dnnl_memory_desc_create_with_tag"},
    {(void **)&dn.md_destroy, "dnnl_memory_desc_destroy"},
    {(void **)&dn.md_get_size, "dnnl_memory_desc_get_size"},
    {(void **)&dn.attr_create, "dnnl_primitive_attr_create"},
    {(void **)&dn.attr_destroy, "dnnl_primitive_attr_destroy"},
    {(void **)&dn.attr_set_scratchpad_mode, "dnnl_primitive_attr_set_scratchpad_mode"},
    {(void **)&dn.conv_fwd_pd, "dnnl_convolution_forward_primitive_desc_create"},
    {(void **)&dn.conv_bwd_data_pd, "dnnl_convolution_backward_data_primitive_desc_create"},
    {(void **)&dn.conv_bwd_weights_pd, "dnnl_convolution_backward_weights_primitive_desc_create"},
    {(void **)&dn.reorder_pd, "dnnl_reorder_primitive_desc_create"},
    {(void **)&dn.md_equal, "dnnl_memory_desc_equal"},
    {(void **)&dn.pd_query_md, "dnnl_primitive_desc_query_md"},
    {(void **)&dn.pd_destroy, "dnnl_primitive_desc_destroy"},
    {(void **)&dn.prim_create, "dnnl_primitive_create"},
    {(void **)&dn.prim_execute, "dnnl_primitive_execute"},
    {(void **)&dn.prim_destroy, "dnnl_primitive_destroy"},
    {(void **)&dn.mem_create, "dnnl_memory_create"},
    {(void **)&dn.mem_destroy, "dnnl_memory_destroy"},
    {(void **)&dn.get_version, "dnnl_version"},
    {(void **)&dn.sgemm, "dnnl_sgemm"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) {
      snprintf(info, sizeof info, "oneDNN not loaded: %s has no %s (oneDNN 3.x expected)", path, syms[i].name);
      dlclose(h);
      return lt_fail("%s", info);
    }
  }
  const dn_version *v = dn.get_version();
  if (v->major != 3) {
    snprintf(info, sizeof info, "oneDNN not loaded: %s is oneDNN %d.%d, 3.x expected", path, v->major, v->minor);
    return lt_fail("%s", info);
  }
  int st = dn.engine_create(&engine, DN_ENGINE_CPU, 0);
  if (st != DN_SUCCESS) {
    snprintf(info, sizeof info, "oneDNN not loaded: no CPU engine (status %d)", st);
    return lt_fail("%s", info);
  }
  snprintf(info, sizeof info, "%s (oneDNN %d.%d.%d)", path, v->major, v->minor, v->patch);
  enabled = 1;
  __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
  lt_blas_set_sgemm_provider((lt_sgemm_provider)dn.sgemm);
  return 0;
}

int lt_onednn_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }
int lt_onednn_set_enabled(int on) {
  int old = enabled;
  enabled = on != 0;
  return old;
}
int lt_onednn_enabled(void) { return lt_onednn_loaded() && enabled; }
const char *lt_onednn_info(void) { return info; }
int64_t lt_onednn_calls(void) { return __atomic_load_n(&calls, __ATOMIC_RELAXED); }
int64_t lt_onednn_rejections(void) { return __atomic_load_n(&rejections, __ATOMIC_RELAXED); }
void lt_onednn_inject_faults(int n, int bias) {
  fault_role = bias ? 3 : 2;
  __atomic_store_n(&faults, n, __ATOMIC_RELAXED);
}

/* ---- per-thread state: stream and scratch ---- */
typedef struct thread_state {
  dn_stream stream;
  void *scratch;      /* oneDNN's scratchpad, then our own temporaries */
  size_t scratch_size;
} thread_state;

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void state_free(void *p) {
  thread_state *s = p;
  if (s->stream) dn.stream_destroy(s->stream);
  free(s->scratch);
  free(s);
}
static void state_key_init(void) { pthread_key_create(&state_key, state_free); }

static thread_state *this_thread(void) {
  pthread_once(&state_once, state_key_init);
  thread_state *s = pthread_getspecific(state_key);
  if (s) return s;
  s = calloc(1, sizeof *s);
  if (!s) return NULL;
  if (dn.stream_create(&s->stream, engine, DN_STREAM_IN_ORDER) != DN_SUCCESS) {
    free(s);
    return NULL;
  }
  pthread_setspecific(state_key, s);
  return s;
}

/* At least n bytes of this thread's scratch, 64-byte aligned. */
static void *scratch(thread_state *s, size_t n) {
  if (n <= s->scratch_size) return s->scratch;
  void *p = NULL;
  if (posix_memalign(&p, 64, n)) return NULL;
  free(s->scratch);
  s->scratch = p;
  s->scratch_size = n;
  return p;
}

/* ---- primitives cached by shape, pass and thread count ---- */
/* Each pass has two tensor inputs and one tensor output (roles), plus the bias of forward/backward-weights:
 *   forward:          in0 src,      in1 weights,  out dst          (+ bias, in)
 *   backward data:    in0 diff_dst, in1 weights,  out diff_src
 *   backward weights: in0 src,      in1 diff_dst, out diff_weights (+ diff_bias, out) */
enum { PASS_FWD, PASS_BWD_DATA, PASS_BWD_WEIGHTS };
static const int pass_args[3][4] = {
  {DN_ARG_SRC, DN_ARG_WEIGHTS, DN_ARG_DST, DN_ARG_BIAS},
  {DN_ARG_DIFF_DST, DN_ARG_WEIGHTS, DN_ARG_DIFF_SRC, 0},
  {DN_ARG_SRC, DN_ARG_DIFF_DST, DN_ARG_DIFF_WEIGHTS, DN_ARG_DIFF_BIAS},
};
static const int pass_queries[3][3] = {
  {DN_Q_SRC_MD, DN_Q_WEIGHTS_MD, DN_Q_DST_MD},
  {DN_Q_DIFF_DST_MD, DN_Q_WEIGHTS_MD, DN_Q_DIFF_SRC_MD},
  {DN_Q_SRC_MD, DN_Q_DIFF_DST_MD, DN_Q_DIFF_WEIGHTS_MD},
};

typedef struct prim_key {
  lt_onednn_conv c;
  int pass, bias, threads;
} prim_key;

/* One way to run a pass: oneDNN told Torch7's plain layouts, or free to pick its own (format tag "any"), with
 * reorders from and to the plain tensors around it. */
typedef struct variant {
  dn_pd pd;
  dn_prim prim;          /* NULL: not implemented */
  size_t scratch_size;   /* oneDNN's scratchpad */
  const void *md[3];     /* the layouts it chose per role (owned by pd) */
  dn_pd reorder_pd[3];   /* NULL where the chosen layout is the plain one */
  dn_prim reorder[3];
  size_t size[3];        /* bytes of the reordered copy per role */
  int verdict;           /* VERDICT_*: its result against the caller's own way */
  int64_t unchecked_calls; /* its calls while the verdict is unknown */
} variant;

/* A way is compared with the caller's own way on its first call whose result can tell (finite, not all zero).
 * While none could (a layer fed zeros or NaNs), calls 1 to CHECK_EVERY_CALL are checked, then the 16th, 32nd,
 * 64th...: the pass runs twice only on a vanishing share of calls. */
enum { VERDICT_UNKNOWN = 0, VERDICT_AGREES = 1, VERDICT_WRONG = -1 };
enum { CHECK_EVERY_CALL = 8 };

enum { LAYOUT_PLAIN, LAYOUT_BLOCKED, USE_IM2COL };

typedef struct prim_entry {
  prim_key key;
  dn_md plain[3], bias;  /* the plain descriptors per role, and the bias vector's */
  variant v[2];          /* LAYOUT_PLAIN, LAYOUT_BLOCKED */
  int choice;            /* the fastest of LAYOUT_PLAIN, LAYOUT_BLOCKED, USE_IM2COL, once timed; -1 before */
  struct prim_entry *next;
} prim_entry;

enum { CACHE_MAX = 512 };  /* beyond it, primitives are made for the call and freed */
static prim_entry *cache;
static int cache_count;
static int layout_mode;  /* 0: the faster per shape, timed once; 1: plain; 2: blocked */

int lt_onednn_cache_size(void) { return cache_count; }
int lt_onednn_set_layout(int mode) {
  int old = layout_mode;
  layout_mode = mode < 0 || mode > 2 ? 0 : mode;
  return old;
}

static void variant_free(variant *v) {
  for (int i = 0; i < 3; i++) {
    if (v->reorder[i]) dn.prim_destroy(v->reorder[i]);
    if (v->reorder_pd[i]) dn.pd_destroy(v->reorder_pd[i]);
  }
  if (v->prim) dn.prim_destroy(v->prim);
  if (v->pd) dn.pd_destroy(v->pd);
}

static void entry_free(prim_entry *e) {
  variant_free(&e->v[0]);
  variant_free(&e->v[1]);
  for (int i = 0; i < 3; i++)
    if (e->plain[i]) dn.md_destroy(e->plain[i]);
  if (e->bias) dn.md_destroy(e->bias);
  free(e);
}

/* The convolution primitive descriptor of pass over src/wei/dst (plain or "any" descriptors). */
static int conv_pd(dn_pd *pd, const prim_key *k, const void *src, const void *wei, const void *bias, const void *dst,
                   const void *attr) {
  const lt_onednn_conv *c = &k->c;
  /* per spatial dimension (depth first, for a volumetric convolution) */
  const int64_t in[3] = {c->T, c->H, c->W}, out[3] = {c->oT, c->oH, c->oW}, ker[3] = {c->kT, c->kH, c->kW},
                str[3] = {c->dT, c->dH, c->dW}, pad[3] = {c->padT, c->padH, c->padW},
                dl[3] = {c->dilT, c->dilH, c->dilW};
  int64_t strides[3], dil[3], pad_l[3], pad_r[3];
  for (int i = c->T ? 0 : 1, j = 0; i < 3; i++, j++) {
    /* oneDNN counts the rows skipped between taps (Torch7's dilation - 1); the kernel then spans ext rows */
    dil[j] = dl[i] > 1 ? dl[i] - 1 : 0;
    int64_t ext = dil[j] * (ker[i] - 1) + ker[i];
    strides[j] = str[i];
    pad_l[j] = pad[i];
    /* Torch7's output size floors (H + 2 pad - ext) / d; oneDNN wants the right padding that gives exactly it. */
    pad_r[j] = (out[i] - 1) * str[i] + ext - in[i] - pad[i];
  }
  if (k->pass == PASS_FWD)
    return dn.conv_fwd_pd(pd, engine, DN_FORWARD_TRAINING, DN_CONV_DIRECT, src, wei, bias, dst, strides, dil, pad_l,
                          pad_r, attr);
  dn_pd hint = NULL;  /* the backward passes need the forward primitive descriptor as a hint */
  int st = dn.conv_fwd_pd(&hint, engine, DN_FORWARD_TRAINING, DN_CONV_DIRECT, src, wei, bias, dst, strides, dil,
                          pad_l, pad_r, NULL);
  if (st == DN_SUCCESS && k->pass == PASS_BWD_DATA)
    st = dn.conv_bwd_data_pd(pd, engine, DN_CONV_DIRECT, src, wei, dst, strides, dil, pad_l, pad_r, hint, attr);
  else if (st == DN_SUCCESS)
    st = dn.conv_bwd_weights_pd(pd, engine, DN_CONV_DIRECT, src, wei, bias, dst, strides, dil, pad_l, pad_r, hint,
                                attr);
  if (hint) dn.pd_destroy(hint);
  return st;
}

/* Fill v from its descriptors (tensor order src, weights, dst); v->prim stays NULL when oneDNN cannot. */
static void variant_make(variant *v, const prim_entry *e, dn_md const *mds, const void *attr) {
  const prim_key *k = &e->key;
  if (conv_pd(&v->pd, k, mds[0], mds[1], e->bias, mds[2], attr) != DN_SUCCESS ||
      dn.prim_create(&v->prim, v->pd) != DN_SUCCESS) {
    v->prim = NULL;
    return;
  }
  const void *smd = dn.pd_query_md(v->pd, DN_Q_SCRATCHPAD_MD, 0);
  v->scratch_size = smd ? dn.md_get_size(smd) : 0;
  for (int r = 0; r < 3; r++) {
    v->md[r] = dn.pd_query_md(v->pd, pass_queries[k->pass][r], 0);
    if (!v->md[r] || dn.md_equal(v->md[r], e->plain[r])) continue;
    v->size[r] = dn.md_get_size(v->md[r]);
    const void *from = r < 2 ? e->plain[r] : v->md[r], *to = r < 2 ? v->md[r] : e->plain[r];
    if (dn.reorder_pd(&v->reorder_pd[r], from, engine, to, engine, NULL) != DN_SUCCESS ||
        dn.prim_create(&v->reorder[r], v->reorder_pd[r]) != DN_SUCCESS) {
      v->reorder[r] = NULL;
      variant_free(v);
      memset(v, 0, sizeof *v);
      return;
    }
  }
}

/* oneDNN 3.2's direct AVX-512 backward-weights kernel of a volumetric convolution, which its blocked layout
 * runs, gets a depth with a front pad of 3 or more and stride 2 or more wrong (kT 4 to 6; gradWeight 30-260%
 * off, or garbage), and at times never returns (a worker spinning in its JIT code inside reduce_diff_bias).
 * A hang cannot be checked after the fact, so such shapes are not offered to it, from a pad of 2 for a margin
 * (2 was seen right); the plain layout runs them on oneDNN's GEMM kernel. Strides of 1, heights, widths and
 * 2-D convolutions were swept and seen right (docs/results/nn.md). */
static int blocked_kernel_is_broken(const prim_key *k) {
  const lt_onednn_conv *c = &k->c;
  return k->pass == PASS_BWD_WEIGHTS && c->T && c->dT >= 2 && c->padT >= 2;
}

/* Make the primitives of key; NULL only when out of memory. A variant whose prim is NULL marks a shape oneDNN
 * does not implement that way, so that it is asked once. */
static prim_entry *entry_make(const prim_key *k) {
  prim_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->key = *k;
  e->choice = -1;
  const lt_onednn_conv *c = &k->c;
  /* Torch7's NC(D)HW data and OI(D)HW weights: format tag abcd(e) */
  const int nd = c->T ? 5 : 4, tag = c->T ? DN_TAG_ABCDE : DN_TAG_ABCD;
  int64_t dims[3][5] = {{c->N, c->C, c->T, c->H, c->W}, {c->O, c->C, c->kT, c->kH, c->kW},
                        {c->N, c->O, c->oT, c->oH, c->oW}};
  if (!c->T)
    for (int t = 0; t < 3; t++) memmove(dims[t] + 2, dims[t] + 3, 2 * sizeof dims[t][0]);
  int64_t bias_d[1] = {c->O};
  /* tensor order src, weights, dst -> the pass's roles */
  static const int role_of[3][3] = {{0, 1, 2}, {2, 1, 0}, {0, 2, 1}};  /* [pass][tensor] */
  dn_md plain[3] = {NULL, NULL, NULL}, any[3] = {NULL, NULL, NULL};
  dn_attr attr = NULL;
  int ok = dn.attr_create(&attr) == DN_SUCCESS && dn.attr_set_scratchpad_mode(attr, DN_SCRATCHPAD_USER) == DN_SUCCESS &&
           (!k->bias || dn.md_create_with_tag(&e->bias, 1, bias_d, DN_F32, DN_TAG_A) == DN_SUCCESS);
  for (int t = 0; t < 3 && ok; t++)
    ok = dn.md_create_with_tag(&plain[t], nd, dims[t], DN_F32, tag) == DN_SUCCESS &&
         dn.md_create_with_tag(&any[t], nd, dims[t], DN_F32, DN_TAG_ANY) == DN_SUCCESS;
  if (ok) {
    for (int t = 0; t < 3; t++) e->plain[role_of[k->pass][t]] = plain[t];
    variant_make(&e->v[LAYOUT_PLAIN], e, plain, attr);
    if (!blocked_kernel_is_broken(k)) variant_make(&e->v[LAYOUT_BLOCKED], e, any, attr);
  } else {
    for (int t = 0; t < 3; t++)
      if (plain[t]) dn.md_destroy(plain[t]);
  }
  for (int t = 0; t < 3; t++)
    if (any[t]) dn.md_destroy(any[t]);
  if (attr) dn.attr_destroy(attr);
  return e;
}

/* The cached entry of key, made on first use; *temp = 1 when the cache is full and the caller must free it. */
static prim_entry *entry_get(const prim_key *k, int *temp) {
  *temp = 0;
  pthread_mutex_lock(&cache_lock);
  prim_entry *e = cache;
  while (e && memcmp(&e->key, k, sizeof *k)) e = e->next;
  if (!e) {
    e = entry_make(k);
    if (e && cache_count < CACHE_MAX) {
      e->next = cache;
      cache = e;
      cache_count++;
    } else if (e) {
      *temp = 1;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  return e;
}

static int execute(const void *prim, dn_stream stream, int n, const int *ids, const void *const *mds, void **ptrs) {
  dn_arg args[8];
  int made = 0, st = DN_SUCCESS;
  for (int i = 0; i < n && st == DN_SUCCESS; i++) {
    args[i].arg = ids[i];
    st = dn.mem_create(&args[i].memory, mds[i], engine, ptrs[i]);
    if (st == DN_SUCCESS) made++;
  }
  if (st == DN_SUCCESS) st = dn.prim_execute(prim, stream, n, args);
  for (int i = 0; i < made; i++) dn.mem_destroy(args[i].memory);
  return st;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Run variant v of entry e on the user's buffers ptrs (per role, then the bias); a oneDNN status. */
static int run_variant(const prim_entry *e, const variant *v, thread_state *s, void **ptrs, int *oom) {
  const int *ids = pass_args[e->key.pass];
  size_t need = align64(v->scratch_size);
  for (int r = 0; r < 3; r++) need += v->reorder[r] ? align64(v->size[r]) : 0;
  char *buf = need ? scratch(s, need) : NULL;
  if (need && !buf) return *oom = 1, -1;
  void *pad = v->scratch_size ? buf : NULL, *where[3];
  size_t off = align64(v->scratch_size);
  for (int r = 0; r < 3; r++) {
    where[r] = v->reorder[r] ? buf + off : ptrs[r];
    off += v->reorder[r] ? align64(v->size[r]) : 0;
  }
  static const int reorder_ids[2] = {DN_ARG_SRC, DN_ARG_DST};  /* oneDNN's "from" and "to" */
  int st = DN_SUCCESS;
  for (int r = 0; r < 2 && st == DN_SUCCESS; r++)
    if (v->reorder[r]) {
      const void *mds[2] = {e->plain[r], v->md[r]};
      void *p[2] = {ptrs[r], where[r]};
      st = execute(v->reorder[r], s->stream, 2, reorder_ids, mds, p);
    }
  if (st == DN_SUCCESS) {
    int ids_all[5] = {ids[0], ids[1], ids[2], 0, DN_ARG_SCRATCHPAD}, n = 0, id[5];
    const void *mds_all[5] = {v->md[0], v->md[1], v->md[2], e->bias, dn.pd_query_md(v->pd, DN_Q_SCRATCHPAD_MD, 0)};
    void *ptr_all[5] = {where[0], where[1], where[2], ptrs[3], pad}, *p[5];
    const void *mds[5];
    ids_all[3] = ids[3];
    for (int i = 0; i < 5; i++)
      if (ptr_all[i] && (i != 3 || e->bias) && (i != 4 || pad)) {
        id[n] = ids_all[i];
        mds[n] = mds_all[i];
        p[n++] = ptr_all[i];
      }
    st = execute(v->prim, s->stream, n, id, mds, p);
  }
  if (st == DN_SUCCESS && v->reorder[2]) {
    const void *mds[2] = {v->md[2], e->plain[2]};
    void *p[2] = {where[2], ptrs[2]};
    st = execute(v->reorder[2], s->stream, 2, reorder_ids, mds, p);
  }
  if (st == DN_SUCCESS) st = dn.stream_wait(s->stream);
  return st;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Runs of each candidate when a shape's way is picked, the fastest kept: the first run pays one-time costs
 * (page faults of fresh scratch, cold caches), and with two the choice still flipped between runs of the
 * same program on a 2-core machine under load. Passes of a few milliseconds run until each candidate has
 * had PICK_MIN_SECONDS: with 3 runs, GoogLeNet's 1x1 576->96 layer at 14x14 kept a way 40% slower. */
enum { PICK_RUNS = 3, PICK_MAX_RUNS = 10 };
#define PICK_MIN_SECONDS 0.03

/* Which way to run: the forced layout, or the fastest of oneDNN's variants and the caller's own way (USE_IM2COL:
 * im2col or unfold + GEMM), timed on this first call (each run PICK_RUNS times or more, the best kept), of
 * those not found wrong. oneDNN's variants write the same results, so when one of them wins the call's outputs
 * are already there, variant *ran's (-2); -1: an error. */
static int usable(const variant *v) {
  return v->prim != NULL && __atomic_load_n(&v->verdict, __ATOMIC_RELAXED) != VERDICT_WRONG;
}

static int pick(prim_entry *e, int temp, thread_state *s, void **ptrs, lt_onednn_pass *p, int *st, int *oom,
                int *ran) {
  int have[3] = {usable(&e->v[LAYOUT_PLAIN]), usable(&e->v[LAYOUT_BLOCKED]), p->own != NULL};
  *ran = have[LAYOUT_PLAIN] ? LAYOUT_PLAIN : LAYOUT_BLOCKED;  /* the variant the timing loop runs last */
  if (layout_mode == 1 && have[0]) return LAYOUT_PLAIN;
  if (layout_mode == 2 && have[1]) return LAYOUT_BLOCKED;
  /* the other layout; and for a shape beyond the full cache, made for this call only, no timing: a choice
   * timed anew on each call could differ between calls, and so would the results' last bits */
  if ((layout_mode || temp) && (have[0] || have[1])) return have[0] ? LAYOUT_PLAIN : LAYOUT_BLOCKED;
  if (have[0] + have[1] + have[2] == 1) return have[0] ? LAYOUT_PLAIN : have[1] ? LAYOUT_BLOCKED : USE_IM2COL;
  int c = __atomic_load_n(&e->choice, __ATOMIC_RELAXED);
  if (c >= 0) return c;
  double best[3] = {1e30, 1e30, 1e30}, total[3] = {0, 0, 0}, least = 0;
  for (int rep = 0; rep < PICK_MAX_RUNS && (rep < PICK_RUNS || least < PICK_MIN_SECONDS); rep++) {
    for (int i = 2; i >= 0; i--) {  /* the caller's own way first: the last run's outputs are oneDNN's */
      if (!have[i]) continue;
      double t0 = now();
      if (i == USE_IM2COL) {
        if (p->own(p)) return -1;
      } else {
        *st = run_variant(e, &e->v[i], s, ptrs, oom);
        if (*st != DN_SUCCESS) return -1;
      }
      double t = now() - t0;
      if (t < best[i]) best[i] = t;
      total[i] += t;
    }
    least = 1e30;  /* the least time any candidate has had so far */
    for (int i = 0; i < 3; i++)
      if (have[i] && total[i] < least) least = total[i];
  }
  c = LAYOUT_PLAIN;
  for (int i = 0; i < 3; i++)
    if (best[i] < best[c]) c = i;
  __atomic_store_n(&e->choice, c, __ATOMIC_RELAXED);
  /* the outputs must be the winner's, as on every later call (the variants' sums run in different orders) */
  return c == USE_IM2COL ? USE_IM2COL : c == *ran ? -2 : c;
}

/* Agreement of oneDNN's and the own way's results: float32 sums in different orders differ by a few ulp of the
 * largest term; a wrong tap or an unset element is off by the size of the values. */
#define CHECK_TOL 1e-3

static const char *const pass_names[3] = {"forward", "backward-data", "backward-weights"};

static void say_wrong(const prim_entry *e, int which, const char *fn, const char *what, double err, double size) {
  const lt_onednn_conv *c = &e->key.c;
  char shape[200];
  if (c->T)
    snprintf(shape, sizeof shape,
             "%lldx%lldx%lldx%lldx%lld into %lld planes, kernel %lldx%lldx%lld, stride %lldx%lldx%lld, "
             "pad %lldx%lldx%lld",
             (long long)c->N, (long long)c->C, (long long)c->T, (long long)c->H, (long long)c->W, (long long)c->O,
             (long long)c->kT, (long long)c->kH, (long long)c->kW, (long long)c->dT, (long long)c->dH,
             (long long)c->dW, (long long)c->padT, (long long)c->padH, (long long)c->padW);
  else
    snprintf(shape, sizeof shape,
             "%lldx%lldx%lldx%lld into %lld planes, kernel %lldx%lld, stride %lldx%lld, pad %lldx%lld",
             (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->O, (long long)c->kH,
             (long long)c->kW, (long long)c->dH, (long long)c->dW, (long long)c->padH, (long long)c->padW);
  fprintf(stderr, "luatorch: %s: oneDNN's %s pass in its %s layout is wrong for the convolution of %s (%s off by %.3g, "
          "largest value %.3g); that shape's pass no longer runs that way\n",
          fn, pass_names[e->key.pass], which == LAYOUT_PLAIN ? "plain" : "blocked", shape, what, err, size);
}

/* Compare the result variant `which` just wrote (ptrs) with the caller's own way's, once: 1 when they disagree
 * (the variant is marked wrong; the caller's own way must run the pass), 0 when they agree or the result cannot
 * tell (non-finite, all zero: asked again on a later call), -1 on an error. The forward and backward-data output
 * is oneDNN's again afterwards when they agree, else the own way's; backward weights keeps oneDNN's in ptrs. */
static int check(prim_entry *e, int which, void **ptrs, lt_onednn_pass *p) {
  variant *v = &e->v[which];
  if (!p->own || __atomic_load_n(&v->verdict, __ATOMIC_RELAXED) != VERDICT_UNKNOWN) return 0;
  int64_t call = __atomic_add_fetch(&v->unchecked_calls, 1, __ATOMIC_RELAXED);
  if (call > CHECK_EVERY_CALL && (call & (call - 1))) return 0;
  const int weights = e->key.pass == PASS_BWD_WEIGHTS;
  const size_t n = dn.md_get_size(e->plain[2]) / sizeof(float);
  float *saved = NULL;
  if (!weights) {
    if (!(saved = malloc(sizeof(float) * (n ? n : 1)))) return lt_fail("%s: out of memory", p->fn);
    memcpy(saved, ptrs[2], sizeof(float) * n);
  }
  p->own_gw = NULL;
  if (p->own(p)) {
    free(saved);
    return -1;
  }
  /* theirs: oneDNN's; ours: the own way's (backward weights: scale times the gradient, in its scratch) */
  const float *theirs = weights ? ptrs[2] : saved, *ours = weights ? p->own_gw : ptrs[2];
  const double scale = weights ? p->scale : 1.0;
  double err = 0, size = 0;
  int finite = ours != NULL;
  for (size_t i = 0; i < n && finite; i++) {
    double o = ours[i], d = fabs(scale * theirs[i] - o);
    finite = isfinite(o);
    if (fabs(o) > size) size = fabs(o);
    if (!(d <= err)) err = isnan(d) ? INFINITY : d;
  }
  int verdict = !finite || size == 0 ? VERDICT_UNKNOWN : err <= CHECK_TOL * size ? VERDICT_AGREES : VERDICT_WRONG;
  /* agreeing, a checked call returns what an unchecked one would: oneDNN's, not the own way's (equal up to the
   * order of float32 sums, which would make a forward on the same input differ between calls); when the check
   * cannot tell (all zero, non-finite) the own way's stands, right either way */
  if (saved && verdict == VERDICT_AGREES) memcpy(ptrs[2], saved, sizeof(float) * n);
  free(saved);
  const char *what = weights ? "gradWeight" : "output";
  double berr = 0, bsize = 0;
  if (verdict == VERDICT_AGREES && weights && ptrs[3]) {
    /* the own way skips the bias: its gradient is the sum of dy over samples and positions, per plane */
    const lt_onednn_conv *c = &e->key.c;
    const int64_t planes = c->O, area = (c->T ? c->oT : 1) * c->oH * c->oW;
    const float *dy = ptrs[1], *gb = ptrs[3];
    for (int64_t o = 0; o < planes && verdict == VERDICT_AGREES; o++) {
      double sum = 0, mag = 0;
      for (int64_t b = 0; b < c->N; b++)
        for (int64_t i = 0; i < area; i++) {
          double x = dy[(b * planes + o) * area + i];
          sum += x;
          mag += fabs(x);
        }
      double d = fabs(gb[o] - sum);
      if (!isfinite(mag)) verdict = VERDICT_UNKNOWN;
      else if (!(d <= CHECK_TOL * mag)) verdict = VERDICT_WRONG, berr = isnan(d) ? INFINITY : d, bsize = fabs(sum);
    }
    if (verdict == VERDICT_WRONG) what = "gradBias", err = berr, size = bsize;
  }
  if (verdict == VERDICT_UNKNOWN) return 0;
  /* two threads may check the same way at once: the first verdict stands, and is said once */
  int unknown = VERDICT_UNKNOWN;
  if (!__atomic_compare_exchange_n(&v->verdict, &unknown, verdict, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return unknown == VERDICT_WRONG;
  if (verdict == VERDICT_AGREES) return 0;
  __atomic_add_fetch(&rejections, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&e->choice, -1, __ATOMIC_RELAXED);  /* the next call picks again, without it */
  say_wrong(e, which, p->fn, what, err, size);
  return 1;
}

/* For tests of check: make the result oneDNN just wrote (the output or gradWeight, or gradBias) wrong by the size
 * of its values. */
static void corrupt(const prim_entry *e, void **ptrs) {
  int left = __atomic_load_n(&faults, __ATOMIC_RELAXED);
  if (left <= 0 || !ptrs[fault_role] || (fault_role == 3 && e->key.pass != PASS_BWD_WEIGHTS) ||
      !__atomic_compare_exchange_n(&faults, &left, left - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return;
  float *out = ptrs[fault_role];
  const size_t n = fault_role == 3 ? (size_t)e->key.c.O : dn.md_get_size(e->plain[2]) / sizeof(float);
  for (size_t i = 0; i < n; i += 7) out[i] += 1.0f + fabsf(out[i]);
}

/* Run pass over ptrs (per role, then the bias or NULL); 1 when oneDNN cannot. */
static int run_pass(const lt_onednn_conv *c, lt_onednn_pass *p, void **ptrs) {
  const char *fn = p->fn;
  const int pass = p->pass;
  if (!lt_onednn_enabled() || c->N == 0 || c->C == 0 || c->O == 0) return 1;  /* empty: im2col's loops do it */
  prim_key k;
  memset(&k, 0, sizeof k);  /* the key is compared bytewise, padding included */
  k.c = *c;
  k.pass = pass;
  k.bias = ptrs[3] != NULL;
#ifdef _OPENMP
  k.threads = omp_get_max_threads();
#else
  k.threads = 1;
#endif
  int temp, rc = -1, st = DN_SUCCESS, oom = 0;
  prim_entry *e = entry_get(&k, &temp);
  if (!e) return lt_fail("%s: out of memory for a oneDNN primitive", fn);
  if (!usable(&e->v[LAYOUT_PLAIN]) && !usable(&e->v[LAYOUT_BLOCKED])) {
    rc = 1;
    goto out;
  }
  thread_state *s = this_thread();
  if (!s) {
    lt_fail("%s: cannot create a oneDNN stream", fn);
    goto out;
  }
  int ran, which = pick(e, temp, s, ptrs, p, &st, &oom, &ran);
  if (which == -1 && st == DN_SUCCESS && !oom) goto out;  /* the own way's timing run failed; its message stands */
  if (which == USE_IM2COL) {
    rc = 1;
    goto out;
  }
  if (which >= 0) st = run_variant(e, &e->v[which], s, ptrs, &oom);
  if (oom) {
    lt_fail("%s: out of memory for oneDNN's scratch", fn);
    goto out;
  }
  if (st != DN_SUCCESS) {
    lt_fail("%s: oneDNN failed (status %d); LUATORCH_ONEDNN=0 keeps convolutions on im2col", fn, st);
    goto out;
  }
  if (which >= 0) ran = which;
  corrupt(e, ptrs);
  if ((rc = check(e, ran, ptrs, p)) != 0) goto out;  /* wrong: the caller's own way runs the pass */
  __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
out:
  if (temp) entry_free(e);
  return rc;
}

void *lt_onednn_own_scratch(lt_onednn_pass *p, size_t bytes) {
  if (!p->scratch && !(p->scratch = malloc(bytes ? bytes : 1)))
    lt_fail("%s: out of memory for %zu bytes of scratch", p->fn, bytes);
  return p->scratch;
}

int lt_onednn_run(const lt_onednn_conv *c, lt_onednn_pass *p) {
  int rc = 1;
  float *copy = NULL;
  if (!lt_onednn_enabled() || p->pass < LT_ONEDNN_FORWARD || p->pass > LT_ONEDNN_BACKWARD_WEIGHTS) goto out;
  if (p->pass == LT_ONEDNN_FORWARD) {
    const float *b = p->bias;
    if (b && p->bs != 1) {  /* oneDNN's bias is a dense vector */
      if (!(copy = malloc(sizeof(float) * c->O))) {
        rc = lt_fail("%s: out of memory", p->fn);
        goto out;
      }
      for (int64_t o = 0; o < c->O; o++) copy[o] = b[o * p->bs];
      b = copy;
    }
    void *ptrs[4] = {(void *)p->x, (void *)p->w, p->out, (void *)b};
    rc = run_pass(c, p, ptrs);
  } else if (p->pass == LT_ONEDNN_BACKWARD_DATA) {
    void *ptrs[4] = {(void *)p->dy, (void *)p->w, p->out, NULL};
    rc = run_pass(c, p, ptrs);
  } else {
    /* oneDNN overwrites its gradients; Torch7 accumulates scale times them */
    int64_t nw = c->O * c->C * (c->T ? c->kT : 1) * c->kH * c->kW, nb = p->gb ? c->O : 0;
    if (!(copy = malloc(sizeof(float) * (size_t)(nw + nb)))) {
      rc = lt_fail("%s: out of memory for %lld gradient elements", p->fn, (long long)(nw + nb));
      goto out;
    }
    void *ptrs[4] = {(void *)p->x, (void *)p->dy, copy, p->gb ? copy + nw : NULL};
    rc = run_pass(c, p, ptrs);
    if (rc == 0) {
      float s = (float)p->scale, *gw = p->gw;
#pragma omp parallel for schedule(static) if (nw >= LT_OMP_THRESHOLD)
      for (int64_t i = 0; i < nw; i++) gw[i] += s * copy[i];
      for (int64_t o = 0; o < nb; o++) p->gb[o * p->gbs] += s * copy[nw + o];
    }
  }
out:
  free(copy);
  free(p->scratch);
  p->scratch = NULL;
  return rc;
}
