/* BLAS, resolved at run time from the scipy-openblas32 wheel.
 *
 * The library is dlopen'ed by path (the Python bridge passes
 * scipy_openblas32.get_lib_dir()) rather than linked, so one build works for
 * plain, editable and isolated-build installs alike. Its symbols carry the
 * `scipy_` prefix and use 32-bit integers (LP64 interface). */
#include <dlfcn.h>
#include "lt_internal.h"

enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                         double *, int);
typedef void (*set_threads_fn)(int);
typedef char *(*get_config_fn)(void);

static sgemm_fn p_sgemm;
static dgemm_fn p_dgemm;
static set_threads_fn p_set_threads;
static get_config_fn p_get_config;
static void *blas_handle; /* kept for LAPACK's symbols (lapack.c) */
/* oneDNN's sgemm, when oneDNN is loaded and its GEMM selected (onednn.c): it runs on the libgomp threads our
 * kernels and oneDNN's convolutions use, so that a process has one thread pool, not OpenBLAS's besides. */
static lt_sgemm_provider p_sgemm_provider;
static int sgemm_provider_on = 1;
static char blas_info[1024] = "BLAS not loaded";

int lt_blas_load(const char *path) {
  if (p_sgemm) return 0;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return lt_fail("cannot load BLAS library %s: %s", path, dlerror());
  sgemm_fn s = (sgemm_fn)dlsym(h, "scipy_cblas_sgemm");
  dgemm_fn d = (dgemm_fn)dlsym(h, "scipy_cblas_dgemm");
  if (!s || !d) return lt_fail("BLAS library %s has no scipy_cblas_sgemm/dgemm symbols", path);
  p_set_threads = (set_threads_fn)dlsym(h, "scipy_openblas_set_num_threads");
  p_get_config = (get_config_fn)dlsym(h, "scipy_openblas_get_config");
  p_dgemm = d;
  __atomic_store_n(&blas_handle, h, __ATOMIC_RELEASE);
  __atomic_store_n(&p_sgemm, s, __ATOMIC_RELEASE);
  snprintf(blas_info, sizeof blas_info, "%s (%s)", path, p_get_config ? p_get_config() : "unknown config");
  if (p_set_threads) p_set_threads(lt_get_num_threads());
  return 0;
}

int lt_blas_loaded(void) { return p_sgemm != NULL; }

void *lt_blas_symbol(const char *name) {
  void *h = __atomic_load_n(&blas_handle, __ATOMIC_ACQUIRE);
  return h ? dlsym(h, name) : NULL;
}
const char *lt_blas_info(void) { return blas_info; }

void lt_blas_set_threads(int n) {
  if (p_set_threads) p_set_threads(n);
}

static int check_dims(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  if (!p_sgemm) return lt_fail("BLAS is not loaded (lt_blas_load was not called)");
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
    return lt_fail("matrix dimensions exceed the 32-bit BLAS interface");
  return 0;
}

void lt_blas_set_sgemm_provider(lt_sgemm_provider f) { __atomic_store_n(&p_sgemm_provider, f, __ATOMIC_RELEASE); }

int lt_blas_use_onednn_sgemm(int on) {
  int old = sgemm_provider_on;
  sgemm_provider_on = on != 0;
  return old;
}

/* The GEMM lt_sgemm calls instead of OpenBLAS's now, or NULL. */
static lt_sgemm_provider active_sgemm_provider(void) {
  lt_sgemm_provider f = __atomic_load_n(&p_sgemm_provider, __ATOMIC_ACQUIRE);
  return f && sgemm_provider_on && lt_onednn_enabled() ? f : NULL;
}

const char *lt_blas_sgemm_name(void) { return active_sgemm_provider() ? "oneDNN" : "OpenBLAS"; }

int lt_sgemm(int transA, int transB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda,
             const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  if (check_dims(m, n, k, lda, ldb, ldc)) return -1;
  if (m == 0 || n == 0) return 0;
  lt_sgemm_provider f = active_sgemm_provider();
  if (f && f(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
    return 0;  /* else (a status oneDNN should never give for valid sizes) OpenBLAS does it */
  p_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)m, (int)n,
          (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
  return 0;
}

int lt_dgemm(int transA, int transB, int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t lda,
             const double *B, int64_t ldb, double beta, double *C, int64_t ldc) {
  if (check_dims(m, n, k, lda, ldb, ldc)) return -1;
  if (m == 0 || n == 0) return 0;
  p_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans, (int)m, (int)n,
          (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
  return 0;
}
