/* The GPU side of cutorch's device path: the caching allocator's backend over the CUDA driver
 * (cuMemAlloc, events), and lt_cuops's launcher: each native/cuda file compiled by NVRTC for the device's
 * compute capability through the kernel cache (the very inputs `luatorch cuda compile` and
 * cutorch.kernels use, so a pre-compiled cache serves here), loaded with cuModuleLoadData, its kernels
 * found once with cuModuleGetFunction and started with cuLaunchKernel. Driver functions are looked up in
 * the dlopen'ed libcuda (cuda_lib.c) on first use; without a driver every entry fails with its reason. */
#include <dirent.h>
#include <pthread.h>

#include "lt_internal.h"

enum { CU_OK = 0, CU_OUT_OF_MEMORY = 2, CU_NOT_READY = 600, CU_EVENT_DISABLE_TIMING = 2,
       CU_ATTR_MULTIPROCESSORS = 16, CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

typedef unsigned long long cu_ptr;   /* CUdeviceptr */

static struct {
  int (*mem_alloc)(cu_ptr *, size_t);
  int (*mem_free)(cu_ptr);
  int (*event_create)(void **, unsigned);
  int (*event_record)(void *, void *);
  int (*event_query)(void *);
  int (*event_destroy)(void *);
  int (*stream_sync)(void *);
  int (*dtoh_async)(void *, cu_ptr, size_t, void *);
  int (*htod_async)(cu_ptr, const void *, size_t, void *);
  int (*module_load)(void **, const void *);
  int (*module_function)(void **, void *, const char *);
  int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **,
                void **);
  int (*device_get)(int *, int);
  int (*device_attribute)(int *, int, int);
  int (*peer_async)(cu_ptr, void *, cu_ptr, void *, size_t, void *);
} drv;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int resolved;   /* 1 once every driver function above was found */

typedef lt_cuda_sym symbol;

/* Each of syms from library `which`, once (*done set when all were found). */
int lt_cuda_find_symbols(int which, const lt_cuda_sym *syms, size_t n, int *done) {
  pthread_mutex_lock(&lock);
  int rc = 0;
  for (size_t i = 0; !*done && i < n; i++)
    if (!(*syms[i].slot = lt_cuda_symbol(which, syms[i].name))) rc = -1;
  if (rc == 0) *done = 1;
  pthread_mutex_unlock(&lock);
  return rc;
}

static int resolve(void) {
  static const symbol syms[] = {
    {(void **)&drv.mem_alloc, "cuMemAlloc_v2"}, {(void **)&drv.mem_free, "cuMemFree_v2"},
    {(void **)&drv.event_create, "cuEventCreate"}, {(void **)&drv.event_record, "cuEventRecord"},
    {(void **)&drv.event_query, "cuEventQuery"}, {(void **)&drv.event_destroy, "cuEventDestroy_v2"},
    {(void **)&drv.stream_sync, "cuStreamSynchronize"}, {(void **)&drv.dtoh_async, "cuMemcpyDtoHAsync_v2"},
    {(void **)&drv.htod_async, "cuMemcpyHtoDAsync_v2"}, {(void **)&drv.module_load, "cuModuleLoadData"},
    {(void **)&drv.module_function, "cuModuleGetFunction"}, {(void **)&drv.launch, "cuLaunchKernel"},
    {(void **)&drv.device_get, "cuDeviceGet"}, {(void **)&drv.device_attribute, "cuDeviceGetAttribute"},
    {(void **)&drv.peer_async, "cuMemcpyPeerAsync"}};
  int count = 0;
  if (lt_cuda_device_count(&count) || count == 0)
    return lt_fail("cuda: no CUDA device: %s", lt_cuda_library_info(LT_CUDA_DRIVER));
  return lt_cuda_find_symbols(LT_CUDA_DRIVER, syms, sizeof syms / sizeof syms[0], &resolved);
}

static int failed(const char *what, int device, int code) {
  return lt_fail("cuda: %s on device %d: %s (%d)", what, device, lt_cuda_error_text(code), code);
}

/* ---------------------------------------------------------------- the allocator's backend */

/* Events and streams do not name their device; the allocator calls with the device's mutex held, on a
 * thread whose current context may be another device's, so each call sets its own. */
typedef struct { void *event; int device; } cu_event;

static int64_t counts[LT_CUDA_NCOUNTS];
void lt_cuda_count(int what) { __atomic_fetch_add(&counts[what], 1, __ATOMIC_RELAXED); }
int64_t lt_cuda_counted(int what) {
  return what >= 0 && what < LT_CUDA_NCOUNTS ? __atomic_load_n(&counts[what], __ATOMIC_RELAXED) : -1;
}

static int be_malloc(void *ctx, int device, int64_t size, void **ptr) {
  (void)ctx;
  if (lt_cuda_set_device(device)) return -1;
  lt_cuda_count(LT_CUDA_COUNT_DEVICE_ALLOCS);
  cu_ptr p = 0;
  int rc = drv.mem_alloc(&p, (size_t)size);
  if (rc == CU_OUT_OF_MEMORY) return LT_CUDA_BACKEND_OOM;
  if (rc != CU_OK) return failed("cuMemAlloc", device, rc);
  *ptr = (void *)(uintptr_t)p;
  return 0;
}

static int be_free(void *ctx, int device, void *ptr) {
  (void)ctx;
  if (lt_cuda_set_device(device)) return -1;
  int rc = drv.mem_free((cu_ptr)(uintptr_t)ptr);
  return rc == CU_OK ? 0 : failed("cuMemFree", device, rc);
}

static int be_event_create(void *ctx, int device, void **event) {
  (void)ctx;
  if (lt_cuda_set_device(device)) return -1;
  cu_event *e = malloc(sizeof *e);
  if (!e) return lt_fail("cuda: out of host memory for an event");
  e->device = device;
  int rc = drv.event_create(&e->event, CU_EVENT_DISABLE_TIMING);
  if (rc != CU_OK) {
    free(e);
    return failed("cuEventCreate", device, rc);
  }
  *event = e;
  return 0;
}

static int be_event_record(void *ctx, void *event, void *stream) {
  (void)ctx;
  cu_event *e = event;
  if (lt_cuda_set_device(e->device)) return -1;
  int rc = drv.event_record(e->event, stream);
  return rc == CU_OK ? 0 : failed("cuEventRecord", e->device, rc);
}

static int be_event_query(void *ctx, void *event) {
  (void)ctx;
  cu_event *e = event;
  int rc = drv.event_query(e->event);
  if (rc == CU_OK) return LT_CUDA_EVENT_DONE;
  if (rc == CU_NOT_READY) return LT_CUDA_EVENT_PENDING;
  return failed("cuEventQuery", e->device, rc);
}

static void be_event_destroy(void *ctx, void *event) {
  (void)ctx;
  cu_event *e = event;
  if (e) drv.event_destroy(e->event);
  free(e);
}

lt_cuda_backend *lt_cuda_device_backend(void) {
  static lt_cuda_backend b;
  if (resolve()) return NULL;
  int n = 0;
  lt_cuda_device_count(&n);
  pthread_mutex_lock(&lock);
  if (!b.name) {
    b.ctx = NULL, b.ndevices = n;
    b.dev_malloc = be_malloc, b.dev_free = be_free;
    b.event_create = be_event_create, b.event_record = be_event_record;
    b.event_query = be_event_query, b.event_destroy = be_event_destroy;
    b.name = "cuda";
  }
  pthread_mutex_unlock(&lock);
  return &b;
}

/* ---------------------------------------------------------------- kernels: modules and functions */

enum { MAX_FILES = 32, FUNCTION_SLOTS = 4096 };

typedef struct {
  int ready;             /* arch and multiprocessors read */
  char arch[16];         /* "sm_90" */
  int multiprocessors;
  struct { char file[32]; void *module; } modules[MAX_FILES];
  int nmodules;
} device_state;

static device_state devices[LT_CUDA_MAX_DEVICES];

/* (device, kernel name) -> CUfunction, open addressing; entries are never removed. */
static struct { int device; char name[64]; void *function; } functions[FUNCTION_SLOTS];
static int nfunctions;

static uint64_t fnv1a(const char *s, int device) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)device;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int lt_cuda_kernel_image(const char *file, const char *arch, const char *cache_dir, char **image, int64_t *len,
                         int *from_cache) {
  const char *dir = lt_cuda_path(LT_CUDA_KERNEL_DIR), *incs = lt_cuda_path(LT_CUDA_INCLUDE_DIRS);
  if (!*dir) return lt_fail("cuda: the kernel sources (native/cuda) are not found: reinstall luatorch");
  if (!*incs)
    return lt_fail("cuda: CUDA's headers (cuda_fp16.h) are not found: pip install 'luatorch[cuda]'");
  char path[4096], name[64];
  size_t flen = strlen(file);
  int has_suffix = flen > 3 && !strcmp(file + flen - 3, ".cu");
  snprintf(name, sizeof name, "%.*s.cu", (int)(has_suffix ? flen - 3 : flen), file);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *source = NULL, *names[16], *texts[16], *opts[18], incbuf[4096], *log = NULL;
  int nheaders = 0, nopts = 0, rc = -1;
  int64_t bytes;
  if (lt_read_whole_file(path, &source, &bytes)) return lt_fail("cuda: cannot read the kernel source %s", path);
  DIR *d = opendir(dir);
  struct dirent *ent;
  while (d && (ent = readdir(d)) && nheaders < 16) {
    size_t len = strlen(ent->d_name);
    if (len > 4 && !strcmp(ent->d_name + len - 4, ".cuh")) names[nheaders++] = strdup(ent->d_name);
  }
  if (d) closedir(d);
  qsort(names, (size_t)nheaders, sizeof names[0], by_name);
  for (int i = 0; i < nheaders; i++) texts[i] = NULL;
  for (int i = 0; i < nheaders; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (lt_read_whole_file(path, &texts[i], &bytes)) {
      lt_fail("cuda: cannot read the kernel header %s", path);
      goto done;
    }
  }
  opts[nopts++] = "-std=c++17";
  opts[nopts++] = "-DLT_CUDA_NVRTC=1";
  snprintf(incbuf, sizeof incbuf, "%s", incs);
  char *optbufs[16];
  int nbufs = 0;
  for (char *save = NULL, *tok = strtok_r(incbuf, ":", &save); tok && nbufs < 16; tok = strtok_r(NULL, ":", &save)) {
    size_t n = strlen(tok) + 3;
    optbufs[nbufs] = malloc(n);
    if (!optbufs[nbufs]) break;
    snprintf(optbufs[nbufs], n, "-I%s", tok);
    opts[nopts++] = optbufs[nbufs++];
  }
  const char *cache = cache_dir ? cache_dir : lt_cuda_path(LT_CUDA_CACHE_DIR);
  *from_cache = 0;
  rc = *cache ? lt_cuda_compile_cached(source, name, arch, nheaders, (const char *const *)texts,
                                       (const char *const *)names, nopts, (const char *const *)opts, cache, image,
                                       len, from_cache, &log)
              : lt_cuda_compile(source, name, arch, nheaders, (const char *const *)texts, (const char *const *)names,
                                nopts, (const char *const *)opts, image, len, &log);
  lt_cuda_free(log);
  for (int i = 0; i < nbufs; i++) free(optbufs[i]);
done:
  for (int i = 0; i < nheaders; i++) free(names[i]), free(texts[i]);
  free(source);
  return rc;
}

static int device_ready(int device) {
  if (device < 0 || device >= LT_CUDA_MAX_DEVICES) return lt_fail("cuda: device %d is out of range", device);
  device_state *s = &devices[device];
  if (s->ready) return 0;
  int dev, major = 0, minor = 0, sms = 0, rc = drv.device_get(&dev, device);
  if (rc == CU_OK) rc = drv.device_attribute(&major, CU_ATTR_CC_MAJOR, dev);
  if (rc == CU_OK) rc = drv.device_attribute(&minor, CU_ATTR_CC_MINOR, dev);
  if (rc == CU_OK) rc = drv.device_attribute(&sms, CU_ATTR_MULTIPROCESSORS, dev);
  if (rc != CU_OK) return failed("the device's attributes", device, rc);
  snprintf(s->arch, sizeof s->arch, "sm_%d%d", major, minor);
  s->multiprocessors = sms;
  s->ready = 1;
  return 0;
}

/* The function `kernel` of file on device: compiled, loaded and looked up on first use. Under the lock. */
static int find_function(int device, const char *file, const char *kernel, void **function) {
  uint64_t h = fnv1a(kernel, device);
  for (uint64_t i = 0; i < FUNCTION_SLOTS; i++) {
    size_t slot = (size_t)((h + i) % FUNCTION_SLOTS);
    if (!functions[slot].function) break;
    if (functions[slot].device == device && !strcmp(functions[slot].name, kernel)) {
      *function = functions[slot].function;
      return 0;
    }
  }
  if (strlen(kernel) >= sizeof functions[0].name || strlen(file) >= sizeof devices[0].modules[0].file)
    return lt_fail("cuda: the kernel name %s is too long", kernel);
  if (nfunctions >= FUNCTION_SLOTS / 2) return lt_fail("cuda: more than %d kernels loaded", FUNCTION_SLOTS / 2);
  device_state *s = &devices[device];
  void *module = NULL;
  for (int i = 0; i < s->nmodules && !module; i++)
    if (!strcmp(s->modules[i].file, file)) module = s->modules[i].module;
  if (!module) {
    if (s->nmodules == MAX_FILES) return lt_fail("cuda: more than %d kernel files", MAX_FILES);
    char *image = NULL;
    int64_t len = 0;
    int cached = 0;
    if (lt_cuda_kernel_image(file, s->arch, NULL, &image, &len, &cached)) return -1;
    int rc = drv.module_load(&module, image);
    lt_cuda_free(image);
    if (rc != CU_OK) return failed("cuModuleLoadData", device, rc);
    snprintf(s->modules[s->nmodules].file, sizeof s->modules[0].file, "%s", file);
    s->modules[s->nmodules++].module = module;
  }
  void *f = NULL;
  int rc = drv.module_function(&f, module, kernel);
  if (rc != CU_OK) return lt_fail("cuda: %s.cu has no kernel %s: %s", file, kernel, lt_cuda_error_text(rc));
  for (uint64_t i = 0;; i++) {
    size_t slot = (size_t)((h + i) % FUNCTION_SLOTS);
    if (!functions[slot].function) {
      functions[slot].device = device;
      snprintf(functions[slot].name, sizeof functions[slot].name, "%s", kernel);
      functions[slot].function = f;
      nfunctions++;
      break;
    }
  }
  *function = f;
  return 0;
}

static int cu_launch(void *ctx, const char *file, const char *kernel, const char *sig, unsigned grid,
                     unsigned block, void *stream, void **params) {
  (void)sig;
  int device = (int)(intptr_t)ctx;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  void *f = NULL;
  pthread_mutex_lock(&lock);
  int rc = find_function(device, file, kernel, &f);
  pthread_mutex_unlock(&lock);
  if (rc) return -1;
  lt_cuda_count(LT_CUDA_COUNT_LAUNCHES);
  rc = drv.launch(f, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
  if (rc != CU_OK) return lt_fail("cuda: launching %s (%u x %u threads) on device %d: %s (%d)", kernel, grid, block,
                                  device, lt_cuda_error_text(rc), rc);
  return 0;
}

static int cu_to_host(void *ctx, void *dst, const void *src, int64_t bytes, void *stream) {
  int device = (int)(intptr_t)ctx;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  lt_cuda_count(LT_CUDA_COUNT_HOST_COPIES);
  lt_cuda_count(LT_CUDA_COUNT_HOST_WAITS);
  int rc = drv.dtoh_async(dst, (cu_ptr)(uintptr_t)src, (size_t)bytes, stream);
  if (rc == CU_OK) rc = drv.stream_sync(stream);
  return rc == CU_OK ? 0 : failed("a copy to the host", device, rc);
}

/* Host bytes to the device and a wait for them: src is the caller's again when this returns, and work queued
 * afterwards on any stream sees the bytes, as with CUDA's synchronous copy from pageable memory. */
static int upload_and_wait(int device, void *dst, const void *src, int64_t bytes, void *stream) {
  lt_cuda_count(LT_CUDA_COUNT_HOST_WAITS);
  int rc = drv.htod_async((cu_ptr)(uintptr_t)dst, src, (size_t)bytes, stream);
  if (rc == CU_OK) rc = drv.stream_sync(stream);
  return rc == CU_OK ? 0 : failed("a copy to the device", device, rc);
}

static int cu_to_device(void *ctx, void *dst, const void *src, int64_t bytes, void *stream) {
  int device = (int)(intptr_t)ctx;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  lt_cuda_count(LT_CUDA_COUNT_HOST_COPIES);
  return upload_and_wait(device, dst, src, bytes, stream);
}

int lt_cuops_upload(const lt_cuops *ops, void *dst, const void *src, int64_t bytes, void *stream) {
  if (ops->to_device != cu_to_device) return ops->to_device(ops->ctx, dst, src, bytes, stream);
  int device = (int)(intptr_t)ops->ctx;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return -1;
  lt_cuda_count(LT_CUDA_COUNT_HOST_COPIES);
  int staged = lt_cuda_pinned_stage_to_device(device, stream, dst, src, bytes);   /* cuda_pinned.c */
  return staged <= 0 ? staged : upload_and_wait(device, dst, src, bytes, stream);
}

/* Bytes from device src_device's memory to device dst_device's, by the driver (directly where the GPUs can
 * reach each other, staged through host memory by the driver where not), queued on dst_device's current stream
 * after the work queued so far on src_device's current stream (which may be writing src); src_device's current
 * stream then waits for the copy, so work queued there later (a write to src, a reuse of its block) cannot overtake
 * it. The host does not wait, as with PyTorch's copies between GPUs. */
int lt_cuda_copy_peer(int dst_device, void *dst, int src_device, const void *src, int64_t bytes) {
  if (resolve()) return -1;
  void *dst_ctx, *src_ctx, *stream = NULL;
  const int cur = lt_cuda_stream_current(), two = src_device != dst_device;
  if (lt_cuda_context(dst_device, &dst_ctx) || lt_cuda_context(src_device, &src_ctx) ||
      (two && lt_cuda_stream_wait(dst_device, cur, src_device, cur)) || lt_cuda_set_device(dst_device) ||
      lt_cuda_stream_of(dst_device, cur, &stream))
    return -1;
  int rc = drv.peer_async((cu_ptr)(uintptr_t)dst, dst_ctx, (cu_ptr)(uintptr_t)src, src_ctx, (size_t)bytes, stream);
  if (rc != CU_OK)
    return lt_fail("cuda: a copy from device %d to device %d: %s (%d)", src_device, dst_device, lt_cuda_error_text(rc), rc);
  return two ? lt_cuda_stream_wait(src_device, cur, dst_device, cur) : 0;
}

/* ---------------------------------------------------------------- cuBLAS */

static struct {
  int (*create)(void **);
  int (*set_stream)(void *, void *);
  int (*sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
               const float *, float *, int);
  int (*dgemm)(void *, int, int, int, int, int, const double *, const double *, int, const double *, int,
               const double *, double *, int);
  int (*sgemm_sb)(void *, int, int, int, int, int, const float *, const float *, int, long long, const float *, int,
                  long long, const float *, float *, int, long long, int);
  int (*dgemm_sb)(void *, int, int, int, int, int, const double *, const double *, int, long long, const double *,
                  int, long long, const double *, double *, int, long long, int);
  /* cublasGemmEx(handle, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
   * algo): half operands multiplied with float accumulation */
  int (*gemm_ex)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                 const void *, void *, int, int, int, int);
} blas;
static int blas_resolved, blas_batched_resolved, blas_ex_resolved;
/* cuBLAS's enumerations for cublasGemmEx (library_types.h, cublas_api.h) */
enum { LT_CUDA_R_16F = 2, LT_CUBLAS_COMPUTE_32F = 68, LT_CUBLAS_GEMM_DEFAULT = -1 };

static int blas_resolve(void) {
  static const symbol syms[] = {
    {(void **)&blas.create, "cublasCreate_v2"}, {(void **)&blas.set_stream, "cublasSetStream_v2"},
    {(void **)&blas.sgemm, "cublasSgemm_v2"}, {(void **)&blas.dgemm, "cublasDgemm_v2"}};
  return lt_cuda_find_symbols(LT_CUDA_CUBLAS, syms, sizeof syms / sizeof syms[0], &blas_resolved);
}

/* the strided batched products: optional (older cuBLAS lack them; products then go entry by entry) */
static int blas_batched_resolve(void) {
  static const symbol syms[] = {{(void **)&blas.sgemm_sb, "cublasSgemmStridedBatched"},
                                {(void **)&blas.dgemm_sb, "cublasDgemmStridedBatched"}};
  return lt_cuda_find_symbols(LT_CUDA_CUBLAS, syms, sizeof syms / sizeof syms[0], &blas_batched_resolved);
}

/* the mixed-precision product: optional (half matrix products need it, and say so without it) */
static int blas_ex_resolve(void) {
  static const symbol syms[] = {{(void **)&blas.gemm_ex, "cublasGemmEx"}};
  return lt_cuda_find_symbols(LT_CUDA_CUBLAS, syms, 1, &blas_ex_resolved);
}

static const char *blas_status(int s) {
  switch (s) {
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "a cuBLAS error";
  }
}

/* One cuBLAS handle per (thread, device), as cutorch kept them: a handle is not for two threads at once. */
static __thread void *blas_handles[LT_CUDA_MAX_DEVICES];

/* the thread's cuBLAS handle of ctx's device, current and on stream (NULL: lt_fail) */
static void *blas_handle(void *ctx, void *stream) {
  int device = (int)(intptr_t)ctx;
  if (lt_cuda_set_device(device) || lt_cuda_resolve_stream(device, &stream)) return NULL;
  void **h = &blas_handles[device];
  int st;
  if (!*h && (st = blas.create(h)) != 0) {
    *h = NULL;
    lt_fail("cuda: cublasCreate on device %d: %s (%d)", device, blas_status(st), st);
    return NULL;
  }
  if ((st = blas.set_stream(*h, stream)) != 0) {
    lt_fail("cuda: cublasSetStream on device %d: %s (%d)", device, blas_status(st), st);
    return NULL;
  }
  lt_cuda_count(LT_CUDA_COUNT_LIBRARY_OPS);
  return *h;
}

static int cu_gemm(void *ctx, void *stream, int type, char transa, char transb, int64_t m, int64_t n, int64_t k,
                   double alpha, const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
                   int64_t ldc) {
  int device = (int)(intptr_t)ctx;
  void **h = &blas_handles[device];
  if (!blas_handle(ctx, stream)) return -1;
  int st;
  const int ta = transa == 't' ? 1 : 0, tb = transb == 't' ? 1 : 0;   /* CUBLAS_OP_N, CUBLAS_OP_T */
  if (type == LT_HALF) {
    /* half in and out, float accumulation and scalars: what cunn's half convolutions asked cuBLAS for */
    if (blas_ex_resolve()) return lt_fail("cuda: half matrix products need cublasGemmEx, which this cuBLAS lacks");
    const float al = (float)alpha, be = (float)beta;
    st = blas.gemm_ex(*h, ta, tb, (int)m, (int)n, (int)k, &al, a, LT_CUDA_R_16F, (int)lda, b, LT_CUDA_R_16F, (int)ldb,
                      &be, c, LT_CUDA_R_16F, (int)ldc, LT_CUBLAS_COMPUTE_32F, LT_CUBLAS_GEMM_DEFAULT);
  } else if (type == LT_FLOAT) {
    const float al = (float)alpha, be = (float)beta;
    st = blas.sgemm(*h, ta, tb, (int)m, (int)n, (int)k, &al, a, (int)lda, b, (int)ldb, &be, c, (int)ldc);
  } else {
    st = blas.dgemm(*h, ta, tb, (int)m, (int)n, (int)k, &alpha, a, (int)lda, b, (int)ldb, &beta, c, (int)ldc);
  }
  if (st != 0)
    return lt_fail("cuda: cublas%sgemm%s (%c%c, %lld x %lld x %lld) on device %d: %s (%d)",
                   type == LT_HALF ? "" : type == LT_FLOAT ? "S" : "D", type == LT_HALF ? "Ex (half)" : "", transa,
                   transb, (long long)m, (long long)n, (long long)k, device, blas_status(st), st);
  return 0;
}

static int cu_gemm_strided_batched(void *ctx, void *stream, int type, char transa, char transb, int64_t m, int64_t n,
                                   int64_t k, double alpha, const void *a, int64_t lda, int64_t sa, const void *b,
                                   int64_t ldb, int64_t sb, double beta, void *c, int64_t ldc, int64_t sc,
                                   int64_t batch) {
  void *h = blas_handle(ctx, stream);
  if (!h) return -1;
  const int ta = transa == 't' ? 1 : 0, tb = transb == 't' ? 1 : 0;
  int st;
  if (type == LT_FLOAT) {
    const float al = (float)alpha, be = (float)beta;
    st = blas.sgemm_sb(h, ta, tb, (int)m, (int)n, (int)k, &al, a, (int)lda, sa, b, (int)ldb, sb, &be, c, (int)ldc, sc,
                       (int)batch);
  } else {
    st = blas.dgemm_sb(h, ta, tb, (int)m, (int)n, (int)k, &alpha, a, (int)lda, sa, b, (int)ldb, sb, &beta, c,
                       (int)ldc, sc, (int)batch);
  }
  if (st != 0)
    return lt_fail("cuda: cublas%cgemmStridedBatched (%c%c, %lld x %lld x %lld, %lld entries) on device %d: %s (%d)",
                   type == LT_FLOAT ? 'S' : 'D', transa, transb, (long long)m, (long long)n, (long long)k,
                   (long long)batch, (int)(intptr_t)ctx, blas_status(st), st);
  return 0;
}

int lt_cuda_ops_init(lt_cuops *ops, int device, lt_cuda_allocator *alloc) {
  if (resolve()) return -1;
  if (!alloc) return lt_fail("cuda: lt_cuda_ops_init needs an allocator");
  pthread_mutex_lock(&lock);
  int rc = device_ready(device);
  int sms = devices[device < 0 || device >= LT_CUDA_MAX_DEVICES ? 0 : device].multiprocessors;
  pthread_mutex_unlock(&lock);
  if (rc) return -1;
  memset(ops, 0, sizeof *ops);
  ops->launch = cu_launch, ops->to_host = cu_to_host, ops->to_device = cu_to_device;
  ops->ctx = (void *)(intptr_t)device;
  ops->alloc = alloc;
  ops->device = device;
  ops->threads_per_block = 256;
  ops->max_blocks = 8 * (sms > 0 ? sms : 1);   /* 8 blocks of 256 threads fill a multiprocessor */
  /* matrix products where cuBLAS loads; without it everything else still runs, addmm says why not */
  if (blas_resolve() == 0) {
    ops->gemm = cu_gemm;
    if (blas_batched_resolve() == 0) ops->gemm_strided_batched = cu_gemm_strided_batched;
  }
  return 0;
}
