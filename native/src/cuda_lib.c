/* The CUDA libraries, dlopen'ed on first need (lt_cuda.h).
 *
 * Like BLAS and oneDNN (blas.c, onednn.c), no NVIDIA header is used: the few
 * entry points called are declared below in our own terms from NVIDIA's API
 * documentation (handles as void *, enums and status codes as int), so the
 * package builds and loads on machines with no CUDA at all. */
#define _GNU_SOURCE   /* dladdr */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lt_internal.h"

/* ---- our declarations ---- */

enum {   /* the driver's device attributes read by lt_cuda_device_properties */
  CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  CU_ATTR_SHARED_MEMORY_PER_BLOCK = 8,
  CU_ATTR_WARP_SIZE = 10,
  CU_ATTR_CLOCK_RATE = 13,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_INTEGRATED = 18,
  CU_ATTR_PCI_BUS_ID = 33,
  CU_ATTR_MEMORY_CLOCK_RATE = 36,
  CU_ATTR_MEMORY_BUS_WIDTH = 37,
  CU_ATTR_L2_CACHE_SIZE = 38,
  CU_ATTR_CC_MAJOR = 75,
  CU_ATTR_CC_MINOR = 76,
};

static struct {
  int (*init)(unsigned);
  int (*driver_version)(int *);
  int (*device_count)(int *);
  int (*device_get)(int *, int);
  int (*device_name)(char *, int, int);
  int (*device_total_mem)(size_t *, int);
  int (*device_attribute)(int *, int, int);
  int (*error_string)(int, const char **);
  int (*primary_ctx_retain)(void **, int);
  int (*ctx_set_current)(void *);
  int (*mem_get_info)(size_t *, size_t *);
} cu;

static struct {
  int (*runtime_version)(int *);
} cudart;

static struct {
  int (*version)(int *, int *);
  const char *(*error_string)(int);
  int (*create)(void **, const char *, const char *, int, const char *const *, const char *const *);
  int (*compile)(void *, int, const char *const *);
  int (*log_size)(void *, size_t *);
  int (*log)(void *, char *);
  int (*cubin_size)(void *, size_t *);
  int (*cubin)(void *, char *);
  int (*ptx_size)(void *, size_t *);
  int (*ptx)(void *, char *);
  int (*destroy)(void **);
} nvrtc;

static struct {
  int (*get_property)(int, int *);   /* libraryPropertyType: 0 major, 1 minor, 2 patch */
} cublas;

static struct {
  size_t (*get_version)(void);
} cudnn;

static struct {
  int (*get_version)(int *);
} nccl;

typedef struct { void **slot; const char *name; } lt_sym;

static const char *default_name[LT_CUDA_NLIBS] = {"libcuda.so.1", "libcudart.so", "libnvrtc.so", "libcublas.so",
                                                 "libcudnn.so", "libnccl.so.2"};
static const char *lib_title[LT_CUDA_NLIBS] = {"the CUDA driver", "the CUDA runtime", "NVRTC", "cuBLAS", "cuDNN",
                                              "NCCL"};

static struct {
  char path[4096];   /* registered; empty: the default name */
  void *handle;
  int tried;         /* a load failed: the same failure is reported again without retrying */
  char info[1024];
} libs[LT_CUDA_NLIBS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int driver_ready = -1;   /* cuInit: -1 not tried, 0 failed, 1 ok */
static int n_devices;

static lt_sym driver_syms[] = {
  {(void **)&cu.init, "cuInit"}, {(void **)&cu.driver_version, "cuDriverGetVersion"},
  {(void **)&cu.device_count, "cuDeviceGetCount"}, {(void **)&cu.device_get, "cuDeviceGet"},
  {(void **)&cu.device_name, "cuDeviceGetName"}, {(void **)&cu.device_total_mem, "cuDeviceTotalMem_v2"},
  {(void **)&cu.device_attribute, "cuDeviceGetAttribute"}, {(void **)&cu.error_string, "cuGetErrorString"},
  {(void **)&cu.primary_ctx_retain, "cuDevicePrimaryCtxRetain"}, {(void **)&cu.ctx_set_current, "cuCtxSetCurrent"},
  {(void **)&cu.mem_get_info, "cuMemGetInfo_v2"}, {NULL, NULL}};
static lt_sym runtime_syms[] = {{(void **)&cudart.runtime_version, "cudaRuntimeGetVersion"}, {NULL, NULL}};
static lt_sym nvrtc_syms[] = {
  {(void **)&nvrtc.version, "nvrtcVersion"}, {(void **)&nvrtc.error_string, "nvrtcGetErrorString"},
  {(void **)&nvrtc.create, "nvrtcCreateProgram"}, {(void **)&nvrtc.compile, "nvrtcCompileProgram"},
  {(void **)&nvrtc.log_size, "nvrtcGetProgramLogSize"}, {(void **)&nvrtc.log, "nvrtcGetProgramLog"},
  {(void **)&nvrtc.cubin_size, "nvrtcGetCUBINSize"}, {(void **)&nvrtc.cubin, "nvrtcGetCUBIN"},
  {(void **)&nvrtc.ptx_size, "nvrtcGetPTXSize"}, {(void **)&nvrtc.ptx, "nvrtcGetPTX"},
  {(void **)&nvrtc.destroy, "nvrtcDestroyProgram"}, {NULL, NULL}};
static lt_sym cublas_syms[] = {{(void **)&cublas.get_property, "cublasGetProperty"}, {NULL, NULL}};
static lt_sym cudnn_syms[] = {{(void **)&cudnn.get_version, "cudnnGetVersion"}, {NULL, NULL}};
static lt_sym nccl_syms[] = {{(void **)&nccl.get_version, "ncclGetVersion"}, {NULL, NULL}};
static lt_sym *const lib_syms[LT_CUDA_NLIBS] = {driver_syms, runtime_syms, nvrtc_syms, cublas_syms, cudnn_syms,
                                                nccl_syms};

static lt_sym *symbols(int which) { return lib_syms[which]; }

static int check_which(int which) {
  if (which < 0 || which >= LT_CUDA_NLIBS) return lt_fail("cuda: no library number %d", which);
  return 0;
}

int lt_cuda_set_library(int which, const char *path) {
  if (check_which(which)) return -1;
  pthread_mutex_lock(&lock);
  const char *want = path && *path ? path : "";
  int rc = 0;
  if (libs[which].handle && strcmp(libs[which].path, want) != 0) {
    rc = lt_fail("cuda: %s is already loaded from %s", lib_title[which],
                 libs[which].path[0] ? libs[which].path : default_name[which]);
  } else if (strlen(want) >= sizeof libs[which].path) {
    rc = lt_fail("cuda: the path of %s is too long", lib_title[which]);
  } else {
    if (strcmp(libs[which].path, want) != 0) libs[which].tried = 0;
    snprintf(libs[which].path, sizeof libs[which].path, "%s", want);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* NVRTC 13.0 does not find its builtins library (libnvrtc-builtins.so.MAJOR.MINOR) beside itself; once a
 * library of that soname is loaded, its own dlopen of the bare name finds it. */
static void preload_nvrtc_builtins(const char *nvrtc_path) {
  const char *slash = strrchr(nvrtc_path, '/');
  if (!slash) return;
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", (int)(slash - nvrtc_path), nvrtc_path);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "libnvrtc-builtins.so.", 21) != 0) continue;   /* not the .alt. variant */
    char full[8192];
    snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
    dlopen(full, RTLD_NOW | RTLD_GLOBAL);
  }
  closedir(d);
}

static int version_locked(int which);

static int require_locked(int which) {
  if (libs[which].handle) return 0;
  const char *name = libs[which].path[0] ? libs[which].path : default_name[which];
  if (libs[which].tried) return lt_fail("%s", libs[which].info);
  libs[which].tried = 1;
  if (which == LT_CUDA_NVRTC) preload_nvrtc_builtins(name);
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    snprintf(libs[which].info, sizeof libs[which].info, "%s is not loaded: %s%s", lib_title[which],
             why ? why : name,
             which == LT_CUDA_DRIVER ? " (it comes with the NVIDIA driver: no GPU driver on this machine)"
                                     : " (pip install 'luatorch[cuda]' installs the CUDA libraries)");
    return lt_fail("%s", libs[which].info);
  }
  for (lt_sym *s = symbols(which); s->slot; s++) {
    *s->slot = dlsym(h, s->name);
    if (!*s->slot) {
      snprintf(libs[which].info, sizeof libs[which].info, "%s at %s has no %s: not a library this build knows",
               lib_title[which], name, s->name);
      for (lt_sym *t = symbols(which); t->slot; t++) *t->slot = NULL;
      dlclose(h);
      return lt_fail("%s", libs[which].info);
    }
  }
  libs[which].handle = h;
  char where[4096] = "";
  Dl_info di;
  void *any = symbols(which)[0].slot ? *symbols(which)[0].slot : NULL;
  if (any && dladdr(any, &di) && di.dli_fname) snprintf(where, sizeof where, "%s", di.dli_fname);
  int v = version_locked(which);
  char ver[32];
  if (which <= LT_CUDA_NVRTC)   /* 13000: 13.0 */
    snprintf(ver, sizeof ver, "%d.%d", v / 1000, v % 1000 / 10);
  else                          /* 130101, 92400, 23007: 13.1.1, 9.24.0, 2.30.7 */
    snprintf(ver, sizeof ver, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
  snprintf(libs[which].info, sizeof libs[which].info, "%s %s from %s", lib_title[which], ver, where[0] ? where : name);
  return 0;
}

int lt_cuda_require(int which) {
  if (check_which(which)) return -1;
  pthread_mutex_lock(&lock);
  int rc = require_locked(which);
  pthread_mutex_unlock(&lock);
  return rc;
}

int lt_cuda_loaded(int which) { return which >= 0 && which < LT_CUDA_NLIBS && libs[which].handle != NULL; }

const char *lt_cuda_library_info(int which) {
  if (which < 0 || which >= LT_CUDA_NLIBS) return "no such library";
  if (!libs[which].handle && !libs[which].tried) return "not loaded yet";
  return libs[which].info;
}

static int version_locked(int which) {
  int v = -1, a = 0, b = 0, c = 0;
  switch (which) {
    case LT_CUDA_DRIVER:
      if (cu.driver_version(&v) != 0) v = -1;
      break;
    case LT_CUDA_RUNTIME:
      if (cudart.runtime_version(&v) != 0) v = -1;
      break;
    case LT_CUDA_NVRTC:
      if (nvrtc.version(&a, &b) == 0) v = a * 1000 + b * 10;
      break;
    case LT_CUDA_CUBLAS:
      if (cublas.get_property(0, &a) == 0 && cublas.get_property(1, &b) == 0 && cublas.get_property(2, &c) == 0)
        v = a * 10000 + b * 100 + c;
      break;
    case LT_CUDA_CUDNN:
      v = (int)cudnn.get_version();
      break;
    default:
      if (nccl.get_version(&v) != 0) v = -1;
  }
  return v;
}

int lt_cuda_version(int which) {
  if (check_which(which)) return -1;
  pthread_mutex_lock(&lock);
  int v = require_locked(which) ? -1 : version_locked(which);
  pthread_mutex_unlock(&lock);
  return v;
}

/* ---- settings ---- */

static char *settings[LT_CUDA_NPATHS];

int lt_cuda_set_path(int what, const char *value) {
  if (what < 0 || what >= LT_CUDA_NPATHS) return lt_fail("cuda: no setting number %d", what);
  char *copy = strdup(value ? value : "");
  if (!copy) return lt_fail("cuda: out of memory");
  pthread_mutex_lock(&lock);
  /* the old string is kept: another thread may still be reading it (a few bytes, set rarely) */
  settings[what] = copy;
  pthread_mutex_unlock(&lock);
  return 0;
}

const char *lt_cuda_path(int what) {
  if (what < 0 || what >= LT_CUDA_NPATHS) return "";
  pthread_mutex_lock(&lock);
  const char *v = settings[what] ? settings[what] : "";
  pthread_mutex_unlock(&lock);
  return v;
}

/* ---- devices ---- */

static const char *cu_error(int rc) {
  const char *s = NULL;
  if (cu.error_string && cu.error_string(rc, &s) == 0 && s) return s;
  return "unknown error";
}

static int driver_init(void) {
  pthread_mutex_lock(&lock);
  if (driver_ready < 0) {
    if (require_locked(LT_CUDA_DRIVER)) {
      driver_ready = 0;
    } else {
      int rc = cu.init(0);
      if (rc != 0) {
        snprintf(libs[LT_CUDA_DRIVER].info + strlen(libs[LT_CUDA_DRIVER].info),
                 sizeof libs[LT_CUDA_DRIVER].info - strlen(libs[LT_CUDA_DRIVER].info), "; cuInit failed: %s (%d)",
                 cu_error(rc), rc);
        driver_ready = 0;
      } else {
        driver_ready = cu.device_count(&n_devices) == 0;
        if (!driver_ready) n_devices = 0;
      }
    }
  }
  int ok = driver_ready;
  pthread_mutex_unlock(&lock);
  return ok;
}

int lt_cuda_device_count(int *count) {
  *count = driver_init() ? n_devices : 0;
  return 0;
}

static int device_handle(int device, int *dev) {
  if (!driver_init()) return lt_fail("cuda: no CUDA device: %s", libs[LT_CUDA_DRIVER].info);
  if (device < 0 || device >= n_devices)
    return lt_fail("cuda: device %d is out of range (this machine has %d)", device, n_devices);
  int rc = cu.device_get(dev, device);
  if (rc != 0) return lt_fail("cuda: cuDeviceGet(%d): %s", device, cu_error(rc));
  return 0;
}

int lt_cuda_device_properties(int device, lt_cuda_device_props *p) {
  int dev;
  if (device_handle(device, &dev)) return -1;
  memset(p, 0, sizeof *p);
  size_t total = 0;
  int rc = cu.device_name(p->name, (int)sizeof p->name, dev);
  if (rc == 0) rc = cu.device_total_mem(&total, dev);
  struct { int *out; int attr; } a[] = {
    {&p->major, CU_ATTR_CC_MAJOR}, {&p->minor, CU_ATTR_CC_MINOR},
    {&p->multiprocessors, CU_ATTR_MULTIPROCESSOR_COUNT}, {&p->warp_size, CU_ATTR_WARP_SIZE},
    {&p->max_threads_per_block, CU_ATTR_MAX_THREADS_PER_BLOCK}, {&p->clock_khz, CU_ATTR_CLOCK_RATE},
    {&p->memory_clock_khz, CU_ATTR_MEMORY_CLOCK_RATE}, {&p->memory_bus_width, CU_ATTR_MEMORY_BUS_WIDTH},
    {&p->l2_cache_bytes, CU_ATTR_L2_CACHE_SIZE}, {&p->pci_bus_id, CU_ATTR_PCI_BUS_ID},
    {&p->integrated, CU_ATTR_INTEGRATED},
  };
  for (size_t i = 0; rc == 0 && i < sizeof a / sizeof a[0]; i++) rc = cu.device_attribute(a[i].out, a[i].attr, dev);
  int shared = 0;
  if (rc == 0) rc = cu.device_attribute(&shared, CU_ATTR_SHARED_MEMORY_PER_BLOCK, dev);
  if (rc != 0) return lt_fail("cuda: the properties of device %d: %s", device, cu_error(rc));
  p->total_memory = (int64_t)total;
  p->shared_memory_per_block = shared;
  return 0;
}

/* The primary contexts retained so far, one per device (retained once, kept for the process). */
static void *primary_ctx[LT_CUDA_MAX_DEVICES];

/* Device `device`'s primary context, retained on first use. */
int lt_cuda_context(int device, void **out) {
  void *ctx = device >= 0 && device < LT_CUDA_MAX_DEVICES ? __atomic_load_n(&primary_ctx[device], __ATOMIC_ACQUIRE)
                                                          : NULL;
  int rc = 0;
  if (!ctx) {
    int dev;
    if (device_handle(device, &dev)) return -1;
    if (device >= LT_CUDA_MAX_DEVICES)
      return lt_fail("cuda: device %d: this build handles %d devices", device, LT_CUDA_MAX_DEVICES);
    pthread_mutex_lock(&lock);
    ctx = primary_ctx[device];
    if (!ctx && (rc = cu.primary_ctx_retain(&ctx, dev)) == 0) __atomic_store_n(&primary_ctx[device], ctx, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
    if (rc != 0) return lt_fail("cuda: device %d's context: %s", device, cu_error(rc));
  }
  *out = ctx;
  return 0;
}

int lt_cuda_set_device(int device) {
  /* every kernel launch comes here: once a device's context is retained, only make it current */
  void *ctx;
  if (lt_cuda_context(device, &ctx)) return -1;
  int rc = cu.ctx_set_current(ctx);
  if (rc != 0) return lt_fail("cuda: device %d's context: %s", device, cu_error(rc));
  return 0;
}

void *lt_cuda_symbol(int which, const char *name) {
  if (check_which(which) || lt_cuda_require(which)) return NULL;
  void *f = dlsym(libs[which].handle, name);
  if (!f) lt_fail("%s has no %s", lib_title[which], name);
  return f;
}

const char *lt_cuda_error_text(int code) { return cu_error(code); }

int lt_cuda_mem_info(int device, int64_t *free_bytes, int64_t *total_bytes) {
  if (lt_cuda_set_device(device)) return -1;
  size_t f = 0, t = 0;
  int rc = cu.mem_get_info(&f, &t);
  if (rc != 0) return lt_fail("cuda: the memory of device %d: %s", device, cu_error(rc));
  *free_bytes = (int64_t)f;
  *total_bytes = (int64_t)t;
  return 0;
}

/* ---- NVRTC ---- */

void lt_cuda_free(void *p) { free(p); }

static int arch_kind(const char *arch) {   /* 1 CUBIN, 2 PTX, 0 neither */
  if (!arch) return 0;
  const char *digits = NULL;
  int kind = 0;
  if (strncmp(arch, "sm_", 3) == 0) digits = arch + 3, kind = 1;
  else if (strncmp(arch, "compute_", 8) == 0) digits = arch + 8, kind = 2;
  if (!digits || !*digits) return 0;
  for (const char *c = digits; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c == 'a' && c[1] == 0) || (*c == 'f' && c[1] == 0))) return 0;
  return kind;
}

int lt_cuda_compile(const char *source, const char *name, const char *arch, int nheaders,
                    const char *const *headers, const char *const *include_names, int nopts,
                    const char *const *opts, char **image, int64_t *len, char **log) {
  *image = NULL;
  *len = 0;
  if (log) *log = NULL;
  int kind = arch_kind(arch);
  if (!kind) return lt_fail("cuda: architecture \"%s\" is not sm_NN (a CUBIN) or compute_NN (PTX)", arch ? arch : "");
  if (!source || !name) return lt_fail("cuda: compile needs a source and a program name");
  if (nheaders < 0 || nopts < 0) return lt_fail("cuda: negative header or option count");
  if (lt_cuda_require(LT_CUDA_NVRTC)) return -1;
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  const char **all = malloc(sizeof(char *) * (size_t)(nopts + 1));
  if (!all) return lt_fail("cuda: out of memory");
  all[0] = archopt;
  for (int i = 0; i < nopts; i++) all[i + 1] = opts[i];
  void *prog = NULL;
  int rc = nvrtc.create(&prog, source, name, nheaders, headers, include_names);
  if (rc != 0) {
    free(all);
    return lt_fail("cuda: nvrtcCreateProgram(%s): %s", name, nvrtc.error_string(rc));
  }
  int crc = nvrtc.compile(prog, nopts + 1, all);
  free(all);
  size_t lsz = 0;
  char *text = NULL;
  if (nvrtc.log_size(prog, &lsz) == 0 && lsz > 1 && (text = malloc(lsz)) != NULL && nvrtc.log(prog, text) != 0) {
    free(text);
    text = NULL;
  }
  int result = 0;
  if (crc != 0) {
    result = lt_fail("cuda: NVRTC could not compile %s for %s: %s%s%.1500s", name, arch, nvrtc.error_string(crc),
                     text ? "\n" : "", text ? text : "");
  } else {
    size_t n = 0;
    rc = kind == 1 ? nvrtc.cubin_size(prog, &n) : nvrtc.ptx_size(prog, &n);
    char *out = rc == 0 ? malloc(n ? n : 1) : NULL;
    if (rc == 0 && !out) {
      result = lt_fail("cuda: out of memory for the %zu-byte image of %s", n, name);
    } else if (rc != 0 || (rc = kind == 1 ? nvrtc.cubin(prog, out) : nvrtc.ptx(prog, out)) != 0) {
      free(out);
      result = lt_fail("cuda: reading the %s of %s: %s", kind == 1 ? "CUBIN" : "PTX", name, nvrtc.error_string(rc));
    } else {
      *image = out;
      *len = (int64_t)(kind == 2 && n > 0 && out[n - 1] == 0 ? n - 1 : n);   /* PTX without its NUL */
    }
  }
  nvrtc.destroy(&prog);
  if (log) *log = text;
  else free(text);
  return result;
}

/* ---- the on-disk cache ---- */

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* Each field with its length first, so that no two different input lists hash the same bytes. */
static uint64_t fnv_field(uint64_t h, const char *s) {
  uint64_t n = s ? strlen(s) : UINT64_MAX;
  h = fnv(h, &n, sizeof n);
  return s ? fnv(h, s, (size_t)n) : h;
}

/* What an include folder gives NVRTC, independent of where it is: the names and contents of its headers
 * (*.h, *.hpp, *.cuh, and those of its subfolders one level down, as CUDA's crt/), sorted by name. A kernel
 * cache made in one environment then serves another with the same CUDA headers at another path (the GPU
 * machine's wheel folder is not the development machine's). Computed once per folder per process. */
static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_header(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (!strcmp(dot, ".h") || !strcmp(dot, ".hpp") || !strcmp(dot, ".cuh"));
}

/* Header paths relative to root, under rel ("" or a subfolder), appended to *names. */
static void list_headers(const char *root, const char *rel, int depth, char ***names, int *n, int *cap) {
  char path[4096];
  int len = snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
  DIR *d = len > 0 && len < (int)sizeof path ? opendir(path) : NULL;
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char relname[4096], full[8192];
    int a = snprintf(relname, sizeof relname, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    int b = snprintf(full, sizeof full, "%s/%s", root, relname);
    if (a < 0 || a >= (int)sizeof relname || b < 0 || b >= (int)sizeof full) continue;   /* paths too long */
    struct stat st;
    if (stat(full, &st)) continue;
    if (S_ISDIR(st.st_mode) && depth > 0) {
      list_headers(root, relname, depth - 1, names, n, cap);
    } else if (S_ISREG(st.st_mode) && is_header(e->d_name)) {
      if (*n == *cap) {
        int grown = *cap ? 2 * *cap : 64;
        char **more = realloc(*names, (size_t)grown * sizeof *more);
        if (!more) break;
        *names = more, *cap = grown;
      }
      (*names)[(*n)++] = strdup(relname);
    }
  }
  closedir(d);
}

static uint64_t include_dir_digest(const char *dir) {
  enum { SLOTS = 16 };
  static struct { char dir[1024]; uint64_t digest; } seen[SLOTS];
  static int nseen;
  static pthread_mutex_t digest_lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&digest_lock);
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i].dir, dir)) {
      uint64_t d = seen[i].digest;
      pthread_mutex_unlock(&digest_lock);
      return d;
    }
  char **names = NULL;
  int n = 0, cap = 0;
  list_headers(dir, "", 1, &names, &n, &cap);
  if (n > 1) qsort(names, (size_t)n, sizeof *names, by_string);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < n; i++) {
    char full[8192];
    int len = snprintf(full, sizeof full, "%s/%s", dir, names[i]);
    h = fnv_field(h, names[i]);
    FILE *f = len > 0 && len < (int)sizeof full ? fopen(full, "rb") : NULL;
    char buf[65536];
    for (size_t got; f && (got = fread(buf, 1, sizeof buf, f)) > 0;) h = fnv(h, buf, got);
    if (f) fclose(f);
    free(names[i]);
  }
  free(names);
  if (nseen < SLOTS && strlen(dir) < sizeof seen[0].dir) {
    snprintf(seen[nseen].dir, sizeof seen[0].dir, "%s", dir);
    seen[nseen++].digest = h;
  }
  pthread_mutex_unlock(&digest_lock);
  return h;
}

static int cache_key(const char *source, const char *name, const char *arch, int nheaders, const char *const *headers,
                     const char *const *include_names, int nopts, const char *const *opts, uint64_t *key) {
  int v = lt_cuda_version(LT_CUDA_NVRTC);
  if (v < 0) return -1;
  uint64_t h = 0xcbf29ce484222325ULL;
  char ver[32];
  snprintf(ver, sizeof ver, "nvrtc %d", v);
  h = fnv_field(h, ver);
  h = fnv_field(h, name);
  h = fnv_field(h, arch);
  h = fnv_field(h, source);
  for (int i = 0; i < nheaders; i++) {
    h = fnv_field(h, include_names[i]);
    h = fnv_field(h, headers[i]);
  }
  for (int i = 0; i < nopts; i++) {
    if (opts[i] && !strncmp(opts[i], "-I", 2) && opts[i][2]) {   /* a folder: what is in it, not where */
      uint64_t digest = include_dir_digest(opts[i] + 2);
      char field[48];
      snprintf(field, sizeof field, "-I#%016llx", (unsigned long long)digest);
      h = fnv_field(h, field);
    } else {
      h = fnv_field(h, opts[i]);
    }
  }
  *key = h;
  return 0;
}

int lt_cuda_cache_file(const char *source, const char *name, const char *arch, int nheaders,
                       const char *const *headers, const char *const *include_names, int nopts,
                       const char *const *opts, const char *cache_dir, char *path, int64_t size) {
  if (!cache_dir || !*cache_dir) return lt_fail("cuda: no cache folder given");
  if (!arch_kind(arch)) return lt_fail("cuda: architecture \"%s\" is not sm_NN or compute_NN", arch ? arch : "");
  if (!name || !source) return lt_fail("cuda: compile needs a source and a program name");
  uint64_t key;
  if (cache_key(source, name, arch, nheaders, headers, include_names, nopts, opts, &key)) return -1;
  char base[256];
  size_t j = 0;
  for (const char *c = name; *c && j < 120; c++)   /* the program name, as a safe file name */
    base[j++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                 *c == '-') ? *c : '_';
  base[j] = 0;
  int n = snprintf(path, (size_t)size, "%s/%s.%s.%016llx.%s", cache_dir, base, arch, (unsigned long long)key,
                   arch_kind(arch) == 1 ? "cubin" : "ptx");
  if (n < 0 || n >= size) return lt_fail("cuda: the cache path under %s is too long", cache_dir);
  return 0;
}

/* A whole image: a CUBIN is an ELF file whose section headers end within it; PTX is text that names its
 * target. (A torn or truncated file fails these and is compiled again.) */
static int image_is_whole(const char *data, int64_t n, int kind) {
  if (kind == 2) return n > 0 && memchr(data, 0, (size_t)n) == NULL && strstr(data, ".target") != NULL;
  if (n < 64 || memcmp(data, "\x7f" "ELF", 4) != 0 || data[4] != 2 || data[5] != 1) return 0;   /* 64-bit LE */
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, data + 0x28, 8);
  memcpy(&shentsize, data + 0x3A, 2);
  memcpy(&shnum, data + 0x3C, 2);
  return shoff <= (uint64_t)n && (uint64_t)shentsize * shnum <= (uint64_t)n - shoff;
}

int lt_read_whole_file(const char *path, char **data, int64_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  int rc = -1;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)n, f) == (size_t)n) {
      buf[n] = 0;
      *data = buf;
      *len = n;
      rc = 0;
    } else {
      free(buf);
    }
  }
  fclose(f);
  return rc;
}

static int make_dirs(const char *dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s", dir);
  for (char *c = p + 1; ; c++) {
    if (*c == '/' || *c == 0) {
      char keep = *c;
      *c = 0;
      if (mkdir(p, 0777) != 0 && errno != EEXIST) return lt_fail("cuda: cannot make the cache folder %s: %s", p, strerror(errno));
      *c = keep;
      if (!keep) break;
    }
  }
  return 0;
}

int lt_cuda_compile_cached(const char *source, const char *name, const char *arch, int nheaders,
                           const char *const *headers, const char *const *include_names, int nopts,
                           const char *const *opts, const char *cache_dir, char **image, int64_t *len,
                           int *from_cache, char **log) {
  *image = NULL;
  *len = 0;
  *from_cache = 0;
  if (log) *log = NULL;
  char path[4096];
  if (lt_cuda_cache_file(source, name, arch, nheaders, headers, include_names, nopts, opts, cache_dir, path,
                         sizeof path))
    return -1;
  int kind = arch_kind(arch);
  char *data = NULL;
  int64_t n = 0;
  if (lt_read_whole_file(path, &data, &n) == 0) {
    if (image_is_whole(data, n, kind)) {
      *image = data;
      *len = n;
      *from_cache = 1;
      return 0;
    }
    free(data);
  }
  if (lt_cuda_compile(source, name, arch, nheaders, headers, include_names, nopts, opts, image, len, log)) return -1;
  if (make_dirs(cache_dir)) goto unwritable;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.%lx.tmp", path, (long)getpid(), (unsigned long)pthread_self());
  FILE *f = fopen(tmp, "wb");
  if (!f) goto unwritable;
  int ok = fwrite(*image, 1, (size_t)*len, f) == (size_t)*len;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    remove(tmp);
    goto unwritable;
  }
  return 0;
unwritable:   /* the compiled image is still good: say once that the cache is not kept */
  {
    static int warned;
    if (!warned) {
      warned = 1;
      fprintf(stderr, "luatorch: cannot write the CUDA kernel cache in %s (%s); kernels compile on every run\n",
              cache_dir, strerror(errno));
    }
  }
  return 0;
}
