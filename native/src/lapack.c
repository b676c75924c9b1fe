/* LAPACK with Torch7's argument and result conventions: gesv, trtrs, gels,
 * syev, geev, gesvd (through gesdd), getri (inverse), potrf, potrs, potri, pstrf, geqrf,
 * orgqr, ormqr and qr.
 *
 * The routines come from the BLAS library loaded at run time (the
 * scipy-openblas32 wheel ships LAPACK: Fortran symbols with the `scipy_`
 * prefix, 32-bit integers, trailing hidden lengths for character arguments).
 * Float and Double routines take the same arguments apart from the element
 * type, so each is declared once with void pointers for the real arrays.
 *
 * LAPACK works on column-major matrices, and Torch7 hands its results back in
 * that layout: a result matrix is a transposed contiguous tensor (strides
 * 1, rows). work_begin() decides where LAPACK writes: into the result itself
 * when it has (or can be given) that layout, else into a temporary that
 * work_end() copies back. A result that is also the input (torch.gesv(b, a,
 * b, a)) is worked on in place when its layout allows. */
#include "lt_internal.h"

typedef int lint; /* LAPACK's integer in the LP64 interface */

enum {
  L_GESV, L_TRTRS, L_GELS, L_SYEV, L_GEEV, L_GESDD, L_GETRF, L_GETRI, L_POTRF, L_POTRS, L_POTRI, L_PSTRF,
  L_GEQRF, L_ORGQR, L_ORMQR, L_COUNT
};
static const char *const lapack_names[L_COUNT] = {"gesv",  "trtrs", "gels",  "syev",  "geev",
                                                  "gesdd", "getrf", "getri", "potrf", "potrs",
                                                  "potri", "pstrf", "geqrf", "orgqr", "ormqr"};
static void *lapack_fns[2][L_COUNT];

typedef void (*gesv_fn)(const lint *n, const lint *nrhs, void *a, const lint *lda, lint *ipiv, void *b,
                        const lint *ldb, lint *info);
typedef void (*trtrs_fn)(const char *uplo, const char *trans, const char *diag, const lint *n, const lint *nrhs,
                         const void *a, const lint *lda, void *b, const lint *ldb, lint *info, size_t, size_t,
                         size_t);
typedef void (*gels_fn)(const char *trans, const lint *m, const lint *n, const lint *nrhs, void *a, const lint *lda,
                        void *b, const lint *ldb, void *work, const lint *lwork, lint *info, size_t);
typedef void (*syev_fn)(const char *jobz, const char *uplo, const lint *n, void *a, const lint *lda, void *w,
                        void *work, const lint *lwork, lint *info, size_t, size_t);
typedef void (*geev_fn)(const char *jobvl, const char *jobvr, const lint *n, void *a, const lint *lda, void *wr,
                        void *wi, void *vl, const lint *ldvl, void *vr, const lint *ldvr, void *work,
                        const lint *lwork, lint *info, size_t, size_t);
typedef void (*gesdd_fn)(const char *jobz, const lint *m, const lint *n, void *a, const lint *lda, void *s, void *u,
                         const lint *ldu, void *vt, const lint *ldvt, void *work, const lint *lwork, lint *iwork,
                         lint *info, size_t);
typedef void (*getrf_fn)(const lint *m, const lint *n, void *a, const lint *lda, lint *ipiv, lint *info);
typedef void (*getri_fn)(const lint *n, void *a, const lint *lda, const lint *ipiv, void *work, const lint *lwork,
                         lint *info);
typedef void (*potrf_fn)(const char *uplo, const lint *n, void *a, const lint *lda, lint *info, size_t); /* potri too */
typedef void (*potrs_fn)(const char *uplo, const lint *n, const lint *nrhs, const void *a, const lint *lda, void *b,
                         const lint *ldb, lint *info, size_t);
typedef void (*pstrf_fn)(const char *uplo, const lint *n, void *a, const lint *lda, lint *piv, lint *rank,
                         const void *tol, void *work, lint *info, size_t);
typedef void (*geqrf_fn)(const lint *m, const lint *n, void *a, const lint *lda, void *tau, void *work,
                         const lint *lwork, lint *info);
typedef void (*orgqr_fn)(const lint *m, const lint *n, const lint *k, void *a, const lint *lda, const void *tau,
                         void *work, const lint *lwork, lint *info);
typedef void (*ormqr_fn)(const char *side, const char *trans, const lint *m, const lint *n, const lint *k,
                         const void *a, const lint *lda, const void *tau, void *c, const lint *ldc, void *work,
                         const lint *lwork, lint *info, size_t, size_t);

/* The routine for the tensors' type, resolved on first use. */
static void *lapack_fn(int type, int which, const char *fname) {
  int d = lt_host_type(type) == LT_DOUBLE;
  void *f = __atomic_load_n(&lapack_fns[d][which], __ATOMIC_ACQUIRE);
  if (f) return f;
  char name[32];
  snprintf(name, sizeof name, "scipy_%c%s_", d ? 'd' : 's', lapack_names[which]);
  f = lt_blas_symbol(name);
  if (!f) {
    if (!lt_blas_loaded()) lt_fail("%s: BLAS/LAPACK is not loaded (lt_blas_load was not called)", fname);
    else lt_fail("%s: the BLAS library has no LAPACK routine %s (%s)", fname, name, lt_blas_info());
    return NULL;
  }
  __atomic_store_n(&lapack_fns[d][which], f, __ATOMIC_RELEASE);
  return f;
}

/* ---- argument checks ---- */

/* All given tensors (NULLs skipped) share the first one's type, Float or Double. */
static int check_types(const char *fname, const lt_tensor *t0, const lt_tensor *t1, const lt_tensor *t2,
                       const lt_tensor *t3, const lt_tensor *t4) {
  const lt_tensor *all[5] = {t0, t1, t2, t3, t4};
  if (lt_host_type(t0->type) != LT_FLOAT && lt_host_type(t0->type) != LT_DOUBLE)
    return lt_fail("%s: only FloatTensor and DoubleTensor are supported, got a %sTensor", fname,
                   lt_type_name(t0->type));
  for (int i = 1; i < 5; i++)
    if (all[i] && all[i]->type != t0->type)
      return lt_fail("%s: expected all tensors to be %sTensor, got a %sTensor", fname, lt_type_name(t0->type),
                     lt_type_name(all[i]->type));
  return 0;
}

static int check_matrix(const char *fname, const char *what, const lt_tensor *a, int square) {
  char buf[128];
  if (a->ndim != 2) return lt_fail("%s: %s should be a matrix (2D), got %s", fname, what, lt_shape_str(a, buf, sizeof buf));
  if (square && a->size[0] != a->size[1])
    return lt_fail("%s: %s should be square, got %s", fname, what, lt_shape_str(a, buf, sizeof buf));
  if (a->size[0] > INT32_MAX / 2 || a->size[1] > INT32_MAX / 2)
    return lt_fail("%s: %s is too large for the 32-bit LAPACK interface", fname, what);
  return 0;
}

/* B of A x = B: a matrix or a vector (viewed as one column) with A's rows. */
static int rhs_matrix(const char *fname, const lt_tensor *b, const lt_tensor *a, lt_tensor *view) {
  char ba[128], bb[128];
  if (b->ndim != 1 && b->ndim != 2)
    return lt_fail("%s: B should be a vector or a matrix, got %s", fname, lt_shape_str(b, bb, sizeof bb));
  if (b->size[0] != a->size[0])
    return lt_fail("%s: A and B do not match: A is %s, B is %s (they need the same number of rows)", fname,
                   lt_shape_str(a, ba, sizeof ba), lt_shape_str(b, bb, sizeof bb));
  *view = *b;
  if (b->ndim == 1) {
    view->ndim = 2;
    view->size[1] = 1;
    view->stride[1] = 1;
  }
  return check_matrix(fname, "B", view, 0);
}

static int check_option(const char *fname, const char *what, const char *opt, const char *allowed) {
  if (opt && opt[0] && !opt[1] && strchr(allowed, opt[0])) return 0;
  char list[32] = "";
  for (const char *p = allowed; *p; p++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s'%c'", p == allowed ? "" : p[1] ? ", " : " or ", *p);
  }
  return lt_fail("%s: %s should be %s, got '%s'", fname, what, list, opt ? opt : "(null)");
}

/* LAPACK's info < 0 means we passed a bad argument: our bug, not the user's. */
static int illegal_argument(const char *fname, lint info) {
  return lt_fail("%s: LAPACK rejected argument %d (please report this as a luatorch bug)", fname, (int)-info);
}

/* ---- column-major working matrices ---- */

static int is_colmajor(const lt_tensor *t) {
  return t->ndim == 2 && t->stride[0] == 1 && t->stride[1] == t->size[0];
}

static void transpose2d(lt_tensor *t) {
  int64_t s = t->size[0], st = t->stride[0];
  t->size[0] = t->size[1];
  t->stride[0] = t->stride[1];
  t->size[1] = s;
  t->stride[1] = st;
}

/* Resize t to rows x cols, column-major when t had to change (Torch7's
 * resize-then-transpose: a result of the right size keeps its strides). */
static int resize_colmajor(lt_tensor *t, int64_t rows, int64_t cols) {
  int64_t size[2] = {cols, rows};
  if (lt_tensor_resize(t, 2, size) != 0) return -1;
  if (lt_tensor_is_contiguous(t)) transpose2d(t);
  return 0;
}

typedef struct work_mat {
  lt_tensor *result; /* the caller's tensor */
  lt_tensor *m;      /* the column-major matrix LAPACK works on: result or &tmp */
  lt_tensor tmp;
  int own;           /* m is tmp: copied to result by work_end */
} work_mat;

/* Prepare w->m as a column-major rows x cols matrix whose top rows hold src
 * (when given; rows >= src's rows). */
static int work_begin(work_mat *w, lt_tensor *result, const lt_tensor *src, int64_t rows, int64_t cols) {
  w->result = result;
  w->m = result;
  w->own = 0;
  lt_tensor_init(&w->tmp, result->type);
  if (src == result && is_colmajor(result) && result->size[0] == rows) return 0; /* in place */
  /* A result sharing memory with its input (itself, or a vector's column
   * view) is written only at the end. */
  int alias = src && (src == result || (result->storage && result->storage == src->storage));
  if (!alias && resize_colmajor(result, rows, cols) != 0) return -1;
  if (alias || !is_colmajor(result)) {
    w->own = 1;
    w->m = &w->tmp;
    int64_t size[2] = {cols, rows};
    if (lt_tensor_resize(&w->tmp, 2, size) != 0) return -1;
    transpose2d(&w->tmp);
  }
  if (!src) return 0;
  lt_tensor top = *w->m;
  top.size[0] = src->size[0];
  return lt_tensor_copy(&top, src);
}

/* Hand the work matrix (possibly narrowed since) to the result. */
static int work_end(work_mat *w) {
  int rc = 0;
  if (w->own) {
    rc = lt_tensor_resize(w->result, 2, w->m->size);
    if (rc == 0) rc = lt_tensor_copy(w->result, w->m);
  }
  lt_tensor_clear(&w->tmp);
  return rc;
}

static void work_drop(work_mat *w) { lt_tensor_clear(&w->tmp); }

/* A contiguous vector of n elements for LAPACK to write (or read, with src):
 * the result itself when contiguous, else a temporary. */
typedef struct work_vec {
  lt_tensor *result;
  lt_tensor *v;
  lt_tensor tmp;
} work_vec;

static int vec_begin(work_vec *w, lt_tensor *result, int64_t n) {
  w->result = result;
  w->v = result;
  lt_tensor_init(&w->tmp, result->type);
  int64_t size[1] = {n};
  if (lt_tensor_resize(result, 1, size) != 0) return -1;
  if (lt_tensor_is_contiguous(result)) return 0;
  w->v = &w->tmp;
  return lt_tensor_resize(&w->tmp, 1, size);
}

static int vec_end(work_vec *w) {
  int rc = w->v == w->result ? 0 : lt_tensor_copy(w->result, w->v);
  lt_tensor_clear(&w->tmp);
  return rc;
}

/* A private contiguous copy of an input LAPACK only reads but wants packed
 * (column-major with leading dimension = rows, or a contiguous vector). */
static int packed_copy(lt_tensor *dst, const lt_tensor *src, int colmajor) {
  lt_tensor_init(dst, src->type);
  if (colmajor) {
    int64_t size[2] = {src->size[1], src->size[0]};
    if (lt_tensor_resize(dst, 2, size) != 0) return -1;
    transpose2d(dst);
  } else if (lt_tensor_resize(dst, src->ndim, src->size) != 0) {
    return -1;
  }
  return lt_tensor_copy(dst, src);
}

/* Scratch of n reals (or n ints when is_int), n >= 1. */
static void *scratch(int type, int64_t n, int is_int) {
  if (n < 1) n = 1;
  void *p = malloc((size_t)n * (is_int ? sizeof(lint) : (size_t)lt_elemsize(type)));
  if (!p) lt_fail("out of memory for a LAPACK workspace of %lld elements", (long long)n);
  return p;
}

/* The optimal workspace size a query (lwork = -1) left in its first element. */
static lint query_size(int type, const void *q) {
  double v = lt_host_type(type) == LT_DOUBLE ? *(const double *)q : *(const float *)q;
  return v < 1 ? 1 : (lint)v;
}

static lint ld(int64_t rows) { return rows > 1 ? (lint)rows : 1; }

/* Zero the triangle of a square matrix opposite to uplo ('U' keeps the upper
 * triangle), or, with mirror, fill it from the kept one (a symmetric result). */
static int fix_triangle(lt_tensor *a, char uplo, int mirror) {
  int64_t n = a->size[0], s0 = a->stride[0], s1 = a->stride[1];
  LT_DISPATCH_FLOATING(a->type, "fix_triangle", {
    scalar_t *p = (scalar_t *)lt_tensor_data(a);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        int drop = uplo == 'U' ? i > j : i < j;
        if (drop) p[i * s0 + j * s1] = mirror ? p[j * s0 + i * s1] : 0;
      }
  });
  return 0;
}

/* ---- solvers ---- */

int lt_gesv(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a) {
  const char *fn = "gesv";
  lt_tensor bv;
  if (check_types(fn, a, b, ra, rb, NULL) || check_matrix(fn, "A", a, 1) || rhs_matrix(fn, b, a, &bv)) return -1;
  gesv_fn f = (gesv_fn)lapack_fn(a->type, L_GESV, fn);
  if (!f) return -1;
  int64_t n = a->size[0], nrhs = bv.size[1];
  work_mat wa = {0}, wb = {0};
  lint *ipiv = NULL, info = 0;
  int rc = -1;
  if (work_begin(&wa, ra, a, n, n) || work_begin(&wb, rb, b == rb ? rb : &bv, n, nrhs)) goto out;
  if (!(ipiv = scratch(a->type, n, 1))) goto out;
  lint ln = (lint)n, lnrhs = (lint)nrhs, lda = ld(n);
  f(&ln, &lnrhs, lt_tensor_data(wa.m), &lda, ipiv, lt_tensor_data(wb.m), &lda, &info);
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail("gesv: A is singular: U(%d,%d) of its LU factorization is exactly zero", (int)info, (int)info);
  else rc = (work_end(&wa) | work_end(&wb)) ? -1 : 0;
out:
  free(ipiv);
  work_drop(&wa);
  work_drop(&wb);
  return rc;
}

int lt_trtrs(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a, const char *uplo,
             const char *trans, const char *diag) {
  const char *fn = "trtrs";
  lt_tensor bv;
  if (check_types(fn, a, b, ra, rb, NULL) || check_matrix(fn, "A", a, 1) || rhs_matrix(fn, b, a, &bv) ||
      check_option(fn, "uplo", uplo, "UL") || check_option(fn, "trans", trans, "NT") ||
      check_option(fn, "diag", diag, "NU"))
    return -1;
  trtrs_fn f = (trtrs_fn)lapack_fn(a->type, L_TRTRS, fn);
  if (!f) return -1;
  int64_t n = a->size[0], nrhs = bv.size[1];
  work_mat wa = {0}, wb = {0};
  lint info = 0;
  int rc = -1;
  if (work_begin(&wa, ra, a, n, n) || work_begin(&wb, rb, b == rb ? rb : &bv, n, nrhs)) goto out;
  lint ln = (lint)n, lnrhs = (lint)nrhs, lda = ld(n);
  f(uplo, trans, diag, &ln, &lnrhs, lt_tensor_data(wa.m), &lda, lt_tensor_data(wb.m), &lda, &info, 1, 1, 1);
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0) lt_fail("trtrs: A is singular: its diagonal element A(%d,%d) is zero", (int)info, (int)info);
  else rc = (work_end(&wa) | work_end(&wb)) ? -1 : 0;
out:
  work_drop(&wa);
  work_drop(&wb);
  return rc;
}

int lt_gels(lt_tensor *rb, lt_tensor *ra, const lt_tensor *b, const lt_tensor *a) {
  const char *fn = "gels";
  lt_tensor bv;
  if (check_types(fn, a, b, ra, rb, NULL) || check_matrix(fn, "A", a, 0) || rhs_matrix(fn, b, a, &bv)) return -1;
  gels_fn f = (gels_fn)lapack_fn(a->type, L_GELS, fn);
  if (!f) return -1;
  int64_t m = a->size[0], n = a->size[1], nrhs = bv.size[1], ldb = m > n ? m : n;
  work_mat wa = {0}, wb = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  /* B's matrix has max(m, n) rows: the solution (n rows) may be taller than B. */
  if (work_begin(&wa, ra, a, m, n) || work_begin(&wb, rb, b == rb ? rb : &bv, ldb, nrhs)) goto out;
  lint lm = (lint)m, lnn = (lint)n, lnrhs = (lint)nrhs, lda = ld(m), lldb = ld(ldb), lwork = -1;
  char q[16];
  f("N", &lm, &lnn, &lnrhs, lt_tensor_data(wa.m), &lda, lt_tensor_data(wb.m), &lldb, q, &lwork, &info, 1);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f("N", &lm, &lnn, &lnrhs, lt_tensor_data(wa.m), &lda, lt_tensor_data(wb.m), &lldb, work, &lwork, &info, 1);
  }
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail("gels: A does not have full rank: diagonal element %d of its triangular factor is zero", (int)info);
  else {
    wb.m->size[0] = n; /* the solution: the top n rows */
    rc = (work_end(&wa) | work_end(&wb)) ? -1 : 0;
  }
out:
  free(work);
  work_drop(&wa);
  work_drop(&wb);
  return rc;
}

/* ---- eigenvalues and singular values ---- */

int lt_syev(lt_tensor *re, lt_tensor *rv, const lt_tensor *a, const char *jobz, const char *uplo) {
  const char *fn = "symeig";
  if (check_types(fn, a, re, rv, NULL, NULL) || check_matrix(fn, "A", a, 1) ||
      check_option(fn, "jobz", jobz, "NV") || check_option(fn, "uplo", uplo, "UL"))
    return -1;
  syev_fn f = (syev_fn)lapack_fn(a->type, L_SYEV, fn);
  if (!f) return -1;
  int64_t n = a->size[0];
  work_mat wv = {0};
  work_vec we = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  if (work_begin(&wv, rv, a, n, n) || vec_begin(&we, re, n)) goto out;
  lint ln = (lint)n, lda = ld(n), lwork = -1;
  char q[16];
  f(jobz, uplo, &ln, lt_tensor_data(wv.m), &lda, lt_tensor_data(we.v), q, &lwork, &info, 1, 1);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f(jobz, uplo, &ln, lt_tensor_data(wv.m), &lda, lt_tensor_data(we.v), work, &lwork, &info, 1, 1);
  }
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail("symeig: the eigenvalue algorithm did not converge (%d off-diagonal elements stayed nonzero)", (int)info);
  else rc = (work_end(&wv) | vec_end(&we)) ? -1 : 0;
out:
  free(work);
  work_drop(&wv);
  lt_tensor_clear(&we.tmp);
  return rc;
}

int lt_geev(lt_tensor *re, lt_tensor *rv, const lt_tensor *a, const char *jobvr) {
  const char *fn = "eig";
  if (check_types(fn, a, re, rv, NULL, NULL) || check_matrix(fn, "A", a, 1) || check_option(fn, "jobvr", jobvr, "NV"))
    return -1;
  geev_fn f = (geev_fn)lapack_fn(a->type, L_GEEV, fn);
  if (!f) return -1;
  int64_t n = a->size[0];
  int vectors = jobvr[0] == 'V';
  lt_tensor ac = {0}, wri = {0};
  work_mat wv = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  lt_tensor_init(&wri, a->type);
  int64_t two_n[2] = {2, n};
  if (packed_copy(&ac, a, 1) || lt_tensor_resize(&wri, 2, two_n)) goto out; /* geev overwrites A */
  if (vectors && work_begin(&wv, rv, NULL, n, n)) goto out;
  char *wr = lt_tensor_data(&wri), *wi = wr + n * lt_elemsize(a->type);
  void *vr = vectors ? lt_tensor_data(wv.m) : NULL;
  lint ln = (lint)n, lda = ld(n), ldvl = 1, ldvr = vectors ? ld(n) : 1, lwork = -1;
  char q[16];
  f("N", jobvr, &ln, lt_tensor_data(&ac), &lda, wr, wi, NULL, &ldvl, vr, &ldvr, q, &lwork, &info, 1, 1);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f("N", jobvr, &ln, lt_tensor_data(&ac), &lda, wr, wi, NULL, &ldvl, vr, &ldvr, work, &lwork, &info, 1, 1);
  }
  if (info < 0) {
    illegal_argument(fn, info);
    goto out;
  }
  if (info > 0) {
    lt_fail("eig: the QR algorithm did not compute all eigenvalues (the first %d did not converge)", (int)info);
    goto out;
  }
  /* re is n x 2: real parts in column 1, imaginary parts in column 2. */
  int64_t n_two[2] = {n, 2};
  lt_tensor parts = wri;
  transpose2d(&parts);
  if (lt_tensor_resize(re, 2, n_two) || lt_tensor_copy(re, &parts)) goto out;
  rc = vectors ? work_end(&wv) : 0;
out:
  free(work);
  lt_tensor_clear(&ac);
  lt_tensor_clear(&wri);
  work_drop(&wv);
  return rc;
}

/* Torch7 called gesvd; gesdd (divide and conquer, what NumPy uses) gives the
 * same factors with the same jobu meaning and is an order of magnitude
 * faster on large matrices (gesvd's QR iteration applies its rotations to U
 * and V one vector pair at a time). */
int lt_gesvd(lt_tensor *ru, lt_tensor *rs, lt_tensor *rv, const lt_tensor *a, const char *jobu) {
  const char *fn = "svd";
  if (check_types(fn, a, ru, rs, rv, NULL) || check_matrix(fn, "A", a, 0) || check_option(fn, "jobu", jobu, "AS"))
    return -1;
  gesdd_fn f = (gesdd_fn)lapack_fn(a->type, L_GESDD, fn);
  if (!f) return -1;
  int64_t m = a->size[0], n = a->size[1], k = m < n ? m : n;
  int all = jobu[0] == 'A';
  lt_tensor ac = {0}, vt = {0};
  work_mat wu = {0};
  work_vec ws = {0};
  void *work = NULL;
  lint *iwork = NULL, info = 0;
  int rc = -1;
  lt_tensor_init(&vt, a->type);
  int64_t nn[2] = {n, n};
  if (packed_copy(&ac, a, 1) || lt_tensor_resize(&vt, 2, nn)) goto out; /* gesdd overwrites A */
  if (work_begin(&wu, ru, NULL, m, all ? m : k) || vec_begin(&ws, rs, k)) goto out;
  if (!(iwork = scratch(a->type, 8 * k, 1))) goto out;
  lint lm = (lint)m, lnn = (lint)n, lda = ld(m), ldu = ld(m), ldvt = ld(n), lwork = -1;
  char q[16];
  f(jobu, &lm, &lnn, lt_tensor_data(&ac), &lda, lt_tensor_data(ws.v), lt_tensor_data(wu.m), &ldu,
    lt_tensor_data(&vt), &ldvt, q, &lwork, iwork, &info, 1);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f(jobu, &lm, &lnn, lt_tensor_data(&ac), &lda, lt_tensor_data(ws.v), lt_tensor_data(wu.m), &ldu,
      lt_tensor_data(&vt), &ldvt, work, &lwork, iwork, &info, 1);
  }
  if (info < 0) {
    illegal_argument(fn, info);
    goto out;
  }
  if (info > 0) {
    lt_fail("svd: the divide and conquer algorithm did not converge (LAPACK info %d)", (int)info);
    goto out;
  }
  /* V^T column-major, read row-major, is V; 'S' keeps its first k columns. */
  lt_tensor v = vt;
  if (!all) v.size[1] = k;
  if (work_end(&wu) || vec_end(&ws)) goto out;
  if (lt_tensor_resize(rv, 2, v.size) || lt_tensor_copy(rv, &v)) goto out;
  rc = 0;
out:
  free(work);
  free(iwork);
  lt_tensor_clear(&ac);
  lt_tensor_clear(&vt);
  work_drop(&wu);
  lt_tensor_clear(&ws.tmp);
  return rc;
}

/* ---- inverses and Cholesky ---- */

int lt_getri(lt_tensor *ra, const lt_tensor *a) {
  const char *fn = "inverse";
  if (check_types(fn, a, ra, NULL, NULL, NULL) || check_matrix(fn, "A", a, 1)) return -1;
  getrf_fn frf = (getrf_fn)lapack_fn(a->type, L_GETRF, fn);
  getri_fn fri = frf ? (getri_fn)lapack_fn(a->type, L_GETRI, fn) : NULL;
  if (!fri) return -1;
  int64_t n = a->size[0];
  work_mat wa = {0};
  lint *ipiv = NULL, info = 0;
  void *work = NULL;
  int rc = -1;
  if (work_begin(&wa, ra, a, n, n) || !(ipiv = scratch(a->type, n, 1))) goto out;
  lint ln = (lint)n, lda = ld(n), lwork = -1;
  frf(&ln, &ln, lt_tensor_data(wa.m), &lda, ipiv, &info);
  if (info == 0) {
    char q[16];
    fri(&ln, lt_tensor_data(wa.m), &lda, ipiv, q, &lwork, &info);
    if (info == 0) {
      lwork = query_size(a->type, q);
      if (!(work = scratch(a->type, lwork, 0))) goto out;
      fri(&ln, lt_tensor_data(wa.m), &lda, ipiv, work, &lwork, &info);
    }
  }
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail("inverse: the matrix is singular: U(%d,%d) of its LU factorization is exactly zero", (int)info, (int)info);
  else rc = work_end(&wa);
out:
  free(ipiv);
  free(work);
  work_drop(&wa);
  return rc;
}

/* potrf and potri: one triangle of A worked in place (the factor, or the inverse from the factor), the
   other triangle zeroed (potrf) or mirrored (potri) as Torch7 returned them; `failed` words info > 0. */
static int cholesky_step(const char *fn, int which, const char *failed, int symmetric, lt_tensor *ra,
                         const lt_tensor *a, const char *uplo) {
  if (check_types(fn, a, ra, NULL, NULL, NULL) || check_matrix(fn, "A", a, 1) || check_option(fn, "uplo", uplo, "UL"))
    return -1;
  potrf_fn f = (potrf_fn)lapack_fn(a->type, which, fn);
  if (!f) return -1;
  int64_t n = a->size[0];
  work_mat wa = {0};
  lint info = 0;
  int rc = -1;
  if (work_begin(&wa, ra, a, n, n)) goto out;
  lint ln = (lint)n, lda = ld(n);
  f(uplo, &ln, lt_tensor_data(wa.m), &lda, &info, 1);
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail(failed, (int)info, (int)info);
  else rc = (fix_triangle(wa.m, uplo[0], symmetric) || work_end(&wa)) ? -1 : 0;
out:
  work_drop(&wa);
  return rc;
}

int lt_potrf(lt_tensor *ra, const lt_tensor *a, const char *uplo) {
  return cholesky_step("potrf", L_POTRF,
                       "potrf: the matrix is not positive definite: its leading minor of order %d is not positive",
                       0, ra, a, uplo);
}

int lt_potrs(lt_tensor *rb, const lt_tensor *b, const lt_tensor *a, const char *uplo) {
  const char *fn = "potrs";
  lt_tensor bv;
  if (check_types(fn, a, b, rb, NULL, NULL) || check_matrix(fn, "A", a, 1) || rhs_matrix(fn, b, a, &bv) ||
      check_option(fn, "uplo", uplo, "UL"))
    return -1;
  potrs_fn f = (potrs_fn)lapack_fn(a->type, L_POTRS, fn);
  if (!f) return -1;
  int64_t n = a->size[0], nrhs = bv.size[1];
  lt_tensor ac = {0};
  work_mat wb = {0};
  lint info = 0;
  int rc = -1;
  if (packed_copy(&ac, a, 1) || work_begin(&wb, rb, b == rb ? rb : &bv, n, nrhs)) goto out;
  lint ln = (lint)n, lnrhs = (lint)nrhs, lda = ld(n);
  f(uplo, &ln, &lnrhs, lt_tensor_data(&ac), &lda, lt_tensor_data(wb.m), &lda, &info, 1);
  if (info != 0) illegal_argument(fn, info);
  else rc = work_end(&wb);
out:
  lt_tensor_clear(&ac);
  work_drop(&wb);
  return rc;
}

int lt_potri(lt_tensor *ra, const lt_tensor *a, const char *uplo) {
  return cholesky_step("potri", L_POTRI, "potri: the Cholesky factor is singular: its diagonal element (%d,%d) is zero",
                       1, ra, a, uplo);
}

int lt_pstrf(lt_tensor *ra, lt_tensor *rpiv, const lt_tensor *a, const char *uplo, double tol) {
  const char *fn = "pstrf";
  if (check_types(fn, a, ra, NULL, NULL, NULL) || check_matrix(fn, "A", a, 1) || check_option(fn, "uplo", uplo, "UL"))
    return -1;
  if (lt_host_type(rpiv->type) != LT_INT)
    return lt_fail("pstrf: the pivots go to an IntTensor, got a %sTensor", lt_type_name(rpiv->type));
  pstrf_fn f = (pstrf_fn)lapack_fn(a->type, L_PSTRF, fn);
  if (!f) return -1;
  int64_t n = a->size[0];
  work_mat wa = {0};
  work_vec wp = {0};
  void *work = NULL;
  lint info = 0, rank = 0;
  int rc = -1;
  if (work_begin(&wa, ra, a, n, n) || vec_begin(&wp, rpiv, n) || !(work = scratch(a->type, 2 * n, 0))) goto out;
  lint ln = (lint)n, lda = ld(n);
  float ftol = (float)tol;
  f(uplo, &ln, lt_tensor_data(wa.m), &lda, lt_tensor_data(wp.v), &rank,
    lt_host_type(a->type) == LT_DOUBLE ? (const void *)&tol : (const void *)&ftol, work, &info, 1);
  if (info < 0) illegal_argument(fn, info);
  else if (info > 0)
    lt_fail("pstrf: the matrix is rank deficient or not positive semidefinite (rank %d of %lld within the tolerance)",
            (int)rank, (long long)n);
  else rc = (fix_triangle(wa.m, uplo[0], 0) || work_end(&wa) || vec_end(&wp)) ? -1 : 0;
out:
  free(work);
  work_drop(&wa);
  lt_tensor_clear(&wp.tmp);
  return rc;
}

/* ---- QR ---- */

int lt_geqrf(lt_tensor *ra, lt_tensor *rtau, const lt_tensor *a) {
  const char *fn = "geqrf";
  if (check_types(fn, a, ra, rtau, NULL, NULL) || check_matrix(fn, "A", a, 0)) return -1;
  geqrf_fn f = (geqrf_fn)lapack_fn(a->type, L_GEQRF, fn);
  if (!f) return -1;
  int64_t m = a->size[0], n = a->size[1], k = m < n ? m : n;
  work_mat wa = {0};
  work_vec wt = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  if (work_begin(&wa, ra, a, m, n) || vec_begin(&wt, rtau, k)) goto out;
  lint lm = (lint)m, lnn = (lint)n, lda = ld(m), lwork = -1;
  char q[16];
  f(&lm, &lnn, lt_tensor_data(wa.m), &lda, lt_tensor_data(wt.v), q, &lwork, &info);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f(&lm, &lnn, lt_tensor_data(wa.m), &lda, lt_tensor_data(wt.v), work, &lwork, &info);
  }
  if (info != 0) illegal_argument(fn, info);
  else rc = (work_end(&wa) || vec_end(&wt)) ? -1 : 0;
out:
  free(work);
  work_drop(&wa);
  lt_tensor_clear(&wt.tmp);
  return rc;
}

/* tau as LAPACK reads it: a vector of at most `most` elements, packed. */
static int tau_input(const char *fn, const lt_tensor *tau, int64_t most, lt_tensor *packed) {
  char buf[128];
  if (tau->ndim != 1 || tau->size[0] > most)
    return lt_fail("%s: tau should be a vector of at most %lld elements, got %s", fn, (long long)most,
                   lt_shape_str(tau, buf, sizeof buf));
  return packed_copy(packed, tau, 0);
}

int lt_orgqr(lt_tensor *ra, const lt_tensor *a, const lt_tensor *tau) {
  const char *fn = "orgqr";
  if (check_types(fn, a, ra, tau, NULL, NULL) || check_matrix(fn, "A", a, 0)) return -1;
  orgqr_fn f = (orgqr_fn)lapack_fn(a->type, L_ORGQR, fn);
  if (!f) return -1;
  int64_t m = a->size[0], n = a->size[1];
  lt_tensor tp = {0};
  work_mat wa = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  if (tau_input(fn, tau, m < n ? m : n, &tp)) return -1;
  if (work_begin(&wa, ra, a, m, n)) goto out;
  /* Q's first k columns (k reflectors), as Torch7: the rest of ra is left as is. */
  lint lm = (lint)m, lk = (lint)tau->size[0], lda = ld(m), lwork = -1;
  char q[16];
  f(&lm, &lk, &lk, lt_tensor_data(wa.m), &lda, lt_tensor_data(&tp), q, &lwork, &info);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f(&lm, &lk, &lk, lt_tensor_data(wa.m), &lda, lt_tensor_data(&tp), work, &lwork, &info);
  }
  if (info != 0) illegal_argument(fn, info);
  else rc = work_end(&wa);
out:
  free(work);
  lt_tensor_clear(&tp);
  work_drop(&wa);
  return rc;
}

int lt_ormqr(lt_tensor *ra, const lt_tensor *a, const lt_tensor *tau, const lt_tensor *c, const char *side,
             const char *trans) {
  const char *fn = "ormqr";
  if (check_types(fn, a, ra, tau, c, NULL) || check_matrix(fn, "A", a, 0) || check_matrix(fn, "C", c, 0) ||
      check_option(fn, "side", side, "LR") || check_option(fn, "trans", trans, "NT"))
    return -1;
  ormqr_fn f = (ormqr_fn)lapack_fn(a->type, L_ORMQR, fn);
  if (!f) return -1;
  int64_t m = c->size[0], n = c->size[1], nq = side[0] == 'L' ? m : n;
  char ba[128], bc[128];
  if (a->size[0] != nq)
    return lt_fail("ormqr: the reflectors (A: %s) do not fit C: %s multiplied from the %s needs A with %lld rows", 
                   lt_shape_str(a, ba, sizeof ba), lt_shape_str(c, bc, sizeof bc),
                   side[0] == 'L' ? "left" : "right", (long long)nq);
  lt_tensor ac = {0}, tp = {0};
  work_mat wc = {0};
  void *work = NULL;
  lint info = 0;
  int rc = -1;
  lt_tensor_init(&ac, a->type);
  if (tau_input(fn, tau, a->size[0] < a->size[1] ? a->size[0] : a->size[1], &tp)) return -1;
  if (packed_copy(&ac, a, 1) || work_begin(&wc, ra, c, m, n)) goto out;
  lint lm = (lint)m, lnn = (lint)n, lk = (lint)tau->size[0], lda = ld(nq), ldc = ld(m), lwork = -1;
  char q[16];
  f(side, trans, &lm, &lnn, &lk, lt_tensor_data(&ac), &lda, lt_tensor_data(&tp), lt_tensor_data(wc.m), &ldc, q,
    &lwork, &info, 1, 1);
  if (info == 0) {
    lwork = query_size(a->type, q);
    if (!(work = scratch(a->type, lwork, 0))) goto out;
    f(side, trans, &lm, &lnn, &lk, lt_tensor_data(&ac), &lda, lt_tensor_data(&tp), lt_tensor_data(wc.m), &ldc,
      work, &lwork, &info, 1, 1);
  }
  if (info != 0) illegal_argument(fn, info);
  else rc = work_end(&wc);
out:
  free(work);
  lt_tensor_clear(&ac);
  lt_tensor_clear(&tp);
  work_drop(&wc);
  return rc;
}

int lt_qr(lt_tensor *rq, lt_tensor *rr, const lt_tensor *a) {
  const char *fn = "qr";
  if (check_types(fn, a, rq, rr, NULL, NULL) || check_matrix(fn, "A", a, 0)) return -1;
  int64_t m = a->size[0], n = a->size[1], k = m < n ? m : n;
  lt_tensor fac = {0}, tau = {0};
  lt_tensor_init(&fac, a->type);
  lt_tensor_init(&tau, a->type);
  int rc = lt_geqrf(&fac, &tau, a);
  /* R: the upper triangle of the factorization's first k rows. */
  if (rc == 0) {
    lt_tensor top = fac;
    top.size[0] = k;
    int64_t size[2] = {k, n};
    rc = lt_tensor_resize(rr, 2, size);
    if (rc == 0) rc = lt_tensor_copy(rr, &top);
    if (rc == 0) {
      LT_DISPATCH_FLOATING(rr->type, fn, {
        scalar_t *p = (scalar_t *)lt_tensor_data(rr);
        for (int64_t i = 1; i < k; i++)
          for (int64_t j = 0; j < i && j < n; j++) p[i * rr->stride[0] + j * rr->stride[1]] = 0;
      });
    }
  }
  /* Q: the first k columns of the orthogonal factor. */
  if (rc == 0) rc = lt_orgqr(rq, &fac, &tau);
  if (rc == 0) rq->size[1] = k;
  lt_tensor_clear(&fac);
  lt_tensor_clear(&tau);
  return rc;
}
