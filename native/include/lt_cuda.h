/* cutorch's CUDA libraries, reached with dlopen and our own declarations.
 *
 * Nothing here needs a CUDA header or library at build time, and the package
 * loads on a machine without them. Each library (the driver, the runtime,
 * NVRTC, cuBLAS, cuDNN, NCCL) is dlopen'ed on first need, from the path the
 * Python bridge registered (found in the NVIDIA wheels, or LUATORCH_CUDA_*),
 * else by its usual soname. With no driver or no GPU, lt_cuda_device_count
 * gives 0 and says why in lt_cuda_library_info(LT_CUDA_DRIVER).
 *
 * Kernels: CUDA C sources (native/cuda/) compiled by NVRTC for one
 * architecture ("sm_90": a CUBIN for that compute capability; "compute_90":
 * PTX), optionally through an on-disk cache keyed by the sources, headers,
 * options, architecture and NVRTC version (lt_cuda_compile_cached); an
 * include folder (-I) enters the key by its headers' names and contents, not
 * its path, so that a cache made in one environment serves another. */

enum {
  LT_CUDA_DRIVER = 0,   /* libcuda.so.1, comes with the GPU driver */
  LT_CUDA_RUNTIME = 1,  /* libcudart */
  LT_CUDA_NVRTC = 2,    /* libnvrtc (and its builtins library beside it) */
  LT_CUDA_CUBLAS = 3,
  LT_CUDA_CUDNN = 4,
  LT_CUDA_NCCL = 5,
  LT_CUDA_NLIBS = 6
};

/* The file to dlopen for a library, before its first use (a path or a soname); NULL goes back to the
 * default soname. Refused once the library is loaded from another file. */
int lt_cuda_set_library(int which, const char *path);
/* Load it now if not yet (0, or -1 with lt_errmsg); idempotent. */
int lt_cuda_require(int which);
int lt_cuda_loaded(int which);
/* What was loaded from where and its version, or why it is not loaded. */
const char *lt_cuda_library_info(int which);
/* The library's version as an integer, loading it if needed: driver and runtime as CUDA writes them
 * (13000 = 13.0), NVRTC major * 1000 + minor * 10, cuBLAS major * 10000 + minor * 100 + patch, cuDNN and
 * NCCL as their own GetVersion calls give it. -1 (and lt_errmsg) if it cannot be loaded. */
int lt_cuda_version(int which);

/* Process-wide settings, registered by the Python bridge, read by every Lua state (DPT workers too):
 * the folder of the kernel sources, the ':'-separated folders NVRTC searches for CUDA's headers
 * (cuda_fp16.h), and the kernel cache folder ("" keeps no cache). */
enum { LT_CUDA_KERNEL_DIR = 0, LT_CUDA_INCLUDE_DIRS = 1, LT_CUDA_CACHE_DIR = 2, LT_CUDA_NPATHS = 3 };
int lt_cuda_set_path(int what, const char *value);
const char *lt_cuda_path(int what);   /* "" if not set */

/* ---- the driver: devices ---- */

typedef struct lt_cuda_device_props {
  char name[256];
  int64_t total_memory;           /* bytes */
  int major, minor;               /* compute capability */
  int multiprocessors;
  int warp_size;
  int max_threads_per_block;
  int64_t shared_memory_per_block;
  int clock_khz;
  int memory_clock_khz;
  int memory_bus_width;           /* bits */
  int l2_cache_bytes;
  int pci_bus_id;
  int integrated;
} lt_cuda_device_props;

/* Number of CUDA devices: 0 (and rc 0) when there is no driver or cuInit fails (no GPU; the reason is in
 * lt_cuda_library_info(LT_CUDA_DRIVER)). Devices are numbered from 0 here, from 1 in cutorch. */
int lt_cuda_device_count(int *count);
int lt_cuda_device_properties(int device, lt_cuda_device_props *props);
enum { LT_CUDA_MAX_DEVICES = 64 };   /* devices this build addresses */

/* Make device's primary context current on this thread (retained on first use). */
int lt_cuda_set_device(int device);
/* Device device's primary context (a CUcontext), retained on first use. */
int lt_cuda_context(int device, void **ctx);
/* A function of one of the libraries (loaded if need be): NULL and lt_errmsg when it is not there. */
void *lt_cuda_symbol(int which, const char *name);
/* The driver's name for a CUresult. */
const char *lt_cuda_error_text(int code);
/* Free and total memory of a device (its primary context made current on this thread). */
int lt_cuda_mem_info(int device, int64_t *free_bytes, int64_t *total_bytes);

/* What this process asked of its GPUs so far, counted where the C layer asks it (all devices and threads):
 * kernel launches; library operations (a cuBLAS or cuDNN operation fetching its handle, an NCCL call); host waits
 * (the calling thread blocked until a stream or device has drained: every synchronize, and the copies between
 * host and device that wait); those copies; device allocations (cuMemAlloc, which the caching allocator
 * makes only when it has no free block). `luatorch bench cuda` reports them per training step. */
enum { LT_CUDA_COUNT_LAUNCHES = 0, LT_CUDA_COUNT_LIBRARY_OPS = 1, LT_CUDA_COUNT_HOST_WAITS = 2,
       LT_CUDA_COUNT_HOST_COPIES = 3, LT_CUDA_COUNT_DEVICE_ALLOCS = 4, LT_CUDA_NCOUNTS = 5 };
void lt_cuda_count(int what);
int64_t lt_cuda_counted(int what);

/* ---- NVRTC ---- */

/* Compile one CUDA C++ source. arch: "sm_XX" (CUBIN) or "compute_XX" (PTX). headers: nheaders in-memory
 * files, found by #include "include_names[i]". opts: more NVRTC options (-I, -D, -std...). On success
 * *image / *len hold the CUBIN or PTX (free with lt_cuda_free). *log, if log is not NULL, gets NVRTC's log
 * (or NULL if empty) on success and on failure; free it with lt_cuda_free. */
int lt_cuda_compile(const char *source, const char *name, const char *arch, int nheaders,
                    const char *const *headers, const char *const *include_names, int nopts,
                    const char *const *opts, char **image, int64_t *len, char **log);
/* As lt_cuda_compile, through cache_dir (made if missing): a file named after the program, the
 * architecture and a 64-bit hash of everything the result depends on. A cached file that is not a whole
 * CUBIN/PTX is compiled again and replaced; files are written to a temporary name and renamed, so
 * processes sharing the folder see whole files only. *from_cache: 1 if read from the cache. */
int lt_cuda_compile_cached(const char *source, const char *name, const char *arch, int nheaders,
                           const char *const *headers, const char *const *include_names, int nopts,
                           const char *const *opts, const char *cache_dir, char **image, int64_t *len,
                           int *from_cache, char **log);
/* The cache file lt_cuda_compile_cached uses for these inputs (written into path, size bytes). */
int lt_cuda_cache_file(const char *source, const char *name, const char *arch, int nheaders,
                       const char *const *headers, const char *const *include_names, int nopts,
                       const char *const *opts, const char *cache_dir, char *path, int64_t size);
void lt_cuda_free(void *p);
