/* An emulated libcublas for the emulated driver (emulated_driver.c, whose device memory is host memory): the
 * few cuBLAS entry points native/src/cuda_device.c calls, with the checks cuBLAS makes of its arguments, so
 * that cu_gemm (handles per thread and device, operation codes, float and double scalars, status codes) runs
 * in CI as it runs on a GPU. gemm is the plain triple loop in double: an oracle, not a fast path; the strided
 * batched gemms run it per entry. lt_emulated_cublas_calls counts the calls of each kind (tests read which path a
 * product took).
 * cublasGetProperty answers version 13.1.0, so the C layer takes it for cuBLAS 13. Statuses as cuBLAS's:
 * 0 success, 1 not initialized, 7 invalid value, 13 execution failed (a handle used on another device than
 * the one current when it was made), 15 not supported (a cublasGemmEx type combination other than all-half or
 * all-float with float compute). Under the driver's LT_EMULATED_CUDA_GUARD, gemm opens the
 * guarded device memory to itself through the driver's emulated_device_access, as a kernel launch does. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "emulated_half.h"
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { SUCCESS = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, EXECUTION_FAILED = 13, NOT_SUPPORTED = 15 };
/* the element kinds gemm_body reads and writes */
enum { EL_FLOAT = 0, EL_DOUBLE = 1, EL_HALF = 2 };

typedef struct { int magic; void *stream; int device; } handle;
static const int MAGIC = 0x6c744842;

EXPORT int cublasGetProperty(int which, int *value) {
  static const int version[3] = {13, 1, 0};
  if (which < 0 || which > 2) return INVALID_VALUE;
  *value = version[which];
  return SUCCESS;
}

/* C (m x n, ldc) = alpha op(A) op(B) + beta C, column-major; cuBLAS's argument rules */
#include "emulated_link.h"

static int device_now(void) { find_driver(); return emu_current_device ? emu_current_device() : 0; }

EXPORT int cublasCreate_v2(void **h) {
  handle *p = malloc(sizeof *p);
  if (!p) return NOT_INITIALIZED;
  p->magic = MAGIC, p->stream = NULL, p->device = device_now();
  *h = p;
  return SUCCESS;
}

EXPORT int cublasDestroy_v2(void *h) {
  free(h);
  return SUCCESS;
}

EXPORT int cublasSetStream_v2(void *h, void *stream) {
  if (!h || ((handle *)h)->magic != MAGIC) return NOT_INITIALIZED;
  ((handle *)h)->stream = stream;
  return SUCCESS;
}

static int gemm_body(void *h, int ta, int tb, int m, int n, int k, double alpha, const void *a, int lda,
                     const void *b, int ldb, double beta, void *c, int ldc, int el);

static double load(const void *p, int64_t i, int el) {
  if (el == EL_DOUBLE) return ((const double *)p)[i];
  if (el == EL_FLOAT) return ((const float *)p)[i];
  return half_to_double(((const uint16_t *)p)[i]);
}

/* the calls so far: [0] gemm, [1] strided batched gemm (tests tell which path a product took) */
static long long calls[2];
EXPORT void lt_emulated_cublas_calls(long long *out) {
  out[0] = __atomic_load_n(&calls[0], __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&calls[1], __ATOMIC_RELAXED);
}

static int gemm(void *h, int ta, int tb, int m, int n, int k, double alpha, const void *a, int lda, const void *b,
                int ldb, double beta, void *c, int ldc, int el) {
  if (!h || ((handle *)h)->magic != MAGIC) return NOT_INITIALIZED;
  __atomic_fetch_add(&calls[0], 1, __ATOMIC_RELAXED);
  const int dev = device_now();
  emu_device_work(dev, ((handle *)h)->stream, 1);
  int rc = gemm_body(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, el);
  emu_device_work(dev, ((handle *)h)->stream, 0);
  return rc;
}

static int gemm_body(void *h, int ta, int tb, int m, int n, int k, double alpha, const void *a, int lda,
                     const void *b, int ldb, double beta, void *c, int ldc, int el) {
  if (!h || ((handle *)h)->magic != MAGIC) return NOT_INITIALIZED;
  if (((handle *)h)->device != device_now()) return EXECUTION_FAILED;   /* a handle works on its own device */
  const int arows = ta ? k : m, brows = tb ? n : k;
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || m < 0 || n < 0 || k < 0 || lda < (arows > 1 ? arows : 1) ||
      ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1))
    return INVALID_VALUE;
  if (emu_noexec()) return SUCCESS;
#define AT(p, i, j, ld) load(p, (int64_t)(j) * (ld) + (i), el)
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double s = 0;
      for (int l = 0; l < k; l++) s += (ta ? AT(a, l, i, lda) : AT(a, i, l, lda)) * (tb ? AT(b, j, l, ldb) : AT(b, l, j, ldb));
      double r = alpha * s + (beta != 0 ? beta * AT(c, i, j, ldc) : 0);
      const int64_t at = (int64_t)j * ldc + i;
      if (el == EL_DOUBLE) ((double *)c)[at] = r;
      else if (el == EL_FLOAT) ((float *)c)[at] = (float)r;
      else ((uint16_t *)c)[at] = float_to_half((float)r);   /* float compute, then half out */
    }
#undef AT
  return SUCCESS;
}

EXPORT int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                          const float *b, int ldb, const float *beta, float *c, int ldc) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc, 0);
}

EXPORT int cublasDgemm_v2(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *a,
                          int lda, const double *b, int ldb, const double *beta, double *c, int ldc) {
  return gemm(h, ta, tb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc, 1);
}

/* batch products, entry e's operands at a + e sa, b + e sb, c + e sc (in elements) */
static int gemm_strided_batched(void *h, int ta, int tb, int m, int n, int k, double alpha, const void *a, int lda,
                                long long sa, const void *b, int ldb, long long sb, double beta, void *c, int ldc,
                                long long sc, int batch, int dbl) {
  if (!h || ((handle *)h)->magic != MAGIC) return NOT_INITIALIZED;
  if (batch < 0) return INVALID_VALUE;
  __atomic_fetch_add(&calls[1], 1, __ATOMIC_RELAXED);
  const int64_t es = dbl ? 8 : 4;   /* (Sgemm/Dgemm entries only) */
  const int dev = device_now();
  emu_device_work(dev, ((handle *)h)->stream, 1);
  int rc = SUCCESS;
  for (int e = 0; e < batch && rc == SUCCESS; e++)
    rc = gemm_body(h, ta, tb, m, n, k, alpha, (const char *)a + e * sa * es, lda, (const char *)b + e * sb * es, ldb,
                   beta, (char *)c + e * sc * es, ldc, dbl);
  emu_device_work(dev, ((handle *)h)->stream, 0);
  return rc;
}

EXPORT int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a,
                                     int lda, long long sa, const float *b, int ldb, long long sb, const float *beta,
                                     float *c, int ldc, long long sc, int batch) {
  return gemm_strided_batched(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c, ldc, sc, batch, 0);
}

EXPORT int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                                     const double *a, int lda, long long sa, const double *b, int ldb, long long sb,
                                     const double *beta, double *c, int ldc, long long sc, int batch) {
  return gemm_strided_batched(h, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c, ldc, sc, batch, 1);
}

/* cublasGemmEx for the combinations the C layer uses: A, B, C all half (2, CUDA_R_16F) or all float (0) with float
 * compute (68, CUBLAS_COMPUTE_32F); scalars are float then. Others answer not supported. */
EXPORT int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int atype,
                        int lda, const void *b, int btype, int ldb, const void *beta, void *c, int ctype, int ldc,
                        int compute, int algo) {
  (void)algo;
  if (atype != btype || atype != ctype || (atype != 2 && atype != 0) || compute != 68) return NOT_SUPPORTED;
  return gemm(h, ta, tb, m, n, k, *(const float *)alpha, a, lda, b, ldb, *(const float *)beta, c, ldc,
              atype == 2 ? EL_HALF : EL_FLOAT);
}
