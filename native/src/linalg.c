/* BLAS-level products: dot, addmm, addmv, addr, baddbmm, addbmm.
 *
 * Everything reduces to one 2-D kernel, gemm2d (r = beta*r + alpha*a@b on
 * matrix views): vectors are viewed as n x 1 or 1 x n matrices. Float and
 * Double call row-major GEMM, reading each operand in whichever layout its
 * strides allow (row-major, or column-major through the transpose flag, with
 * the leading dimension of narrowed views) and copying only when neither
 * works (e.g. stride-0 expanded operands). Integer types use plain loops that
 * accumulate in 64 bits (wrapping like the C casts TH did). */
#include "lt_internal.h"

static int same_type(const char *fname, const lt_tensor *r, const lt_tensor *t, const lt_tensor *a,
                     const lt_tensor *b) {
  const lt_tensor *all[4] = {r, t, a, b};
  for (int i = 0; i < 4; i++)
    if (all[i] && all[i]->type != a->type)
      return lt_fail("%s: expected all tensors to be %sTensor, got a %sTensor", fname, lt_type_name(a->type),
                     lt_type_name(all[i]->type));
  return 0;
}

/* ---- matrix views (borrowed headers: no reference taken, never cleared) ---- */

static void as_col(lt_tensor *v, const lt_tensor *x) { /* vector -> n x 1 */
  *v = *x;
  v->ndim = 2;
  v->size[1] = 1;
  v->stride[1] = 1;
}

static void as_row(lt_tensor *v, const lt_tensor *x) { /* vector -> 1 x n */
  *v = *x;
  v->ndim = 2;
  v->size[0] = 1;
  v->stride[0] = x->size[0] > 0 ? x->size[0] : 1;
  v->size[1] = x->size[0];
  v->stride[1] = x->stride[0];
}

static void slice0(lt_tensor *v, const lt_tensor *x, int64_t i) { /* x[i] of a 3-D tensor */
  *v = *x;
  v->ndim = 2;
  v->offset = x->offset + i * x->stride[0];
  v->size[0] = x->size[1];
  v->stride[0] = x->stride[1];
  v->size[1] = x->size[2];
  v->stride[1] = x->stride[2];
}

/* How GEMM can read a matrix view: 0 row-major, 1 column-major (pass the
 * transpose flag), -1 neither. *ld gets the leading dimension; size-1
 * dimensions leave their stride free, as BLAS only needs ld >= max(1, cols). */
static int mat_layout(const lt_tensor *t, int64_t *ld) {
  int64_t r = t->size[0], c = t->size[1], s0 = t->stride[0], s1 = t->stride[1];
  int64_t rmin = r > 1 ? r : 1, cmin = c > 1 ? c : 1;
  if ((c == 1 || s1 == 1) && (r == 1 || s0 >= cmin)) {
    *ld = r == 1 ? cmin : s0;
    return 0;
  }
  if ((r == 1 || s0 == 1) && (c == 1 || s1 >= rmin)) {
    *ld = c == 1 ? rmin : s1;
    return 1;
  }
  return -1;
}

static int contiguous_copy(lt_tensor *tmp, const lt_tensor *src) {
  lt_tensor_init(tmp, src->type);
  if (lt_tensor_resize(tmp, src->ndim, src->size) != 0) return -1;
  return lt_tensor_copy(tmp, src);
}

/* r *= beta (beta == 0 writes zeros): the k == 0 product. */
static int scale2d(lt_tensor *r, double beta) {
  if (beta == 0) return lt_tensor_fill(r, 0);
  LT_DISPATCH(r->type, {
    scalar_t *R = (scalar_t *)lt_tensor_data(r);
    int is_int = (scalar_t)0.5 == 0;
    for (int64_t i = 0; i < r->size[0]; i++)
      for (int64_t j = 0; j < r->size[1]; j++) {
        scalar_t *p = R + i * r->stride[0] + j * r->stride[1];
        *p = is_int ? (scalar_t)((uint64_t)(int64_t)beta * (uint64_t)(int64_t)*p) : (scalar_t)(beta * *p);
      }
  });
  return 0;
}

/* Integer product: alpha and beta are truncated to integers as TH's `real`
 * arguments were; sums wrap in 64 bits. */
static int gemm_int(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  int64_t n = r->size[0], m = r->size[1], k = a->size[1];
  uint64_t ia = (uint64_t)(int64_t)alpha, ib = (uint64_t)(int64_t)beta;
  uint64_t *acc = malloc((m > 0 ? m : 1) * sizeof *acc);
  if (!acc) return lt_fail("out of memory");
  LT_DISPATCH(r->type, {
    scalar_t *R = (scalar_t *)lt_tensor_data(r);
    const scalar_t *A = (const scalar_t *)lt_tensor_data(a), *B = (const scalar_t *)lt_tensor_data(b);
    int64_t as0 = a->stride[0], as1 = a->stride[1], bs0 = b->stride[0], bs1 = b->stride[1];
    for (int64_t i = 0; i < n; i++) {
      memset(acc, 0, m * sizeof *acc);
      for (int64_t l = 0; l < k; l++) {
        uint64_t av = (uint64_t)(int64_t)A[i * as0 + l * as1];
        const scalar_t *brow = B + l * bs0;
        if (bs1 == 1)
          for (int64_t j = 0; j < m; j++) acc[j] += av * (uint64_t)(int64_t)brow[j];
        else
          for (int64_t j = 0; j < m; j++) acc[j] += av * (uint64_t)(int64_t)brow[j * bs1];
      }
      scalar_t *rrow = R + i * r->stride[0];
      for (int64_t j = 0; j < m; j++) {
        scalar_t *p = rrow + j * r->stride[1];
        uint64_t v = ia * acc[j];
        if (beta != 0) v += ib * (uint64_t)(int64_t)*p;
        *p = (scalar_t)(int64_t)v;
      }
    }
  });
  free(acc);
  return 0;
}

/* r = beta * r + alpha * a @ b on matrix views; r does not overlap a or b.
 * beta == 0 does not read r. */
static int gemm2d(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  int64_t n = r->size[0], m = r->size[1], k = a->size[1];
  if (n == 0 || m == 0) return 0;
  if (k == 0) return scale2d(r, beta);
  if (lt_host_type(r->type) != LT_FLOAT && lt_host_type(r->type) != LT_DOUBLE) return gemm_int(r, beta, alpha, a, b);

  lt_tensor ta, tb, tr;
  int own_a = 0, own_b = 0, own_r = 0, rc = -1;
  int64_t lda, ldb, ldr;
  int la = mat_layout(a, &lda), lb = mat_layout(b, &ldb), lr = mat_layout(r, &ldr);
  if (la < 0) {
    if (contiguous_copy(&ta, a) != 0) goto done;
    own_a = 1; a = &ta; la = 0; lda = k;
  }
  if (lb < 0) {
    if (contiguous_copy(&tb, b) != 0) goto done;
    own_b = 1; b = &tb; lb = 0; ldb = m;
  }
  lt_tensor *out = r;
  if (lr < 0) { /* e.g. an expanded result: compute contiguous, copy back */
    lt_tensor_init(&tr, r->type);
    own_r = 1;
    if (lt_tensor_resize(&tr, 2, r->size) != 0) goto done;
    if (beta != 0 && lt_tensor_copy(&tr, r) != 0) goto done;
    out = &tr; lr = 0; ldr = m;
  }
  const void *A = lt_tensor_data(a), *B = lt_tensor_data(b);
  void *R = lt_tensor_data(out);
  /* A column-major result is the row-major r^T = b^T a^T. */
  if (lt_host_type(r->type) == LT_FLOAT) {
    rc = lr == 0 ? lt_sgemm(la, lb, n, m, k, (float)alpha, A, lda, B, ldb, (float)beta, R, ldr)
                 : lt_sgemm(!lb, !la, m, n, k, (float)alpha, B, ldb, A, lda, (float)beta, R, ldr);
  } else {
    rc = lr == 0 ? lt_dgemm(la, lb, n, m, k, alpha, A, lda, B, ldb, beta, R, ldr)
                 : lt_dgemm(!lb, !la, m, n, k, alpha, B, ldb, A, lda, beta, R, ldr);
  }
  if (rc == 0 && own_r) rc = lt_tensor_copy(r, &tr);
done:
  if (own_a) lt_tensor_clear(&ta);
  if (own_b) lt_tensor_clear(&tb);
  if (own_r) lt_tensor_clear(&tr);
  return rc;
}

/* ---- result preparation shared by all products ---- */

static int ranges_overlap(const lt_tensor *x, int64_t xext, const lt_tensor *y) {
  int64_t yext = lt_tensor_extent(y);
  if (xext == 0 || yext == 0) return 0;
  return x->offset < y->offset + yext && y->offset < x->offset + xext;
}

/* Whether writing r (once resized to nd/size) may clobber an operand. */
static int result_aliases(const lt_tensor *r, int nd, const int64_t *size, const lt_tensor *a, const lt_tensor *b) {
  if (!r->storage || (r->storage != a->storage && r->storage != b->storage)) return 0;
  int same = r->ndim == nd;
  int64_t n = 1;
  for (int d = 0; d < nd; d++) {
    n *= size[d];
    if (same && r->size[d] != size[d]) same = 0;
  }
  int64_t ext = same ? lt_tensor_extent(r) : n;
  return (r->storage == a->storage && ranges_overlap(r, ext, a)) ||
         (r->storage == b->storage && ranges_overlap(r, ext, b));
}

/* Computes on r already shaped nd/size and holding t (when beta != 0). */
typedef int (*product_fn)(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b);

/* r = beta * t + alpha * f(a, b), with r resized to nd/size. When r overlaps
 * an operand (e.g. x:addmm(x, y)) the product goes to a temporary first, as
 * BLAS cannot write over its inputs. */
static int run_product(lt_tensor *r, int nd, const int64_t *size, double beta, const lt_tensor *t, double alpha,
                       const lt_tensor *a, const lt_tensor *b, product_fn f) {
  if (!t) beta = 0;
  if (result_aliases(r, nd, size, a, b)) {
    lt_tensor tmp;
    lt_tensor_init(&tmp, r->type);
    int rc = lt_tensor_resize(&tmp, nd, size);
    if (rc == 0 && beta != 0) rc = lt_tensor_copy(&tmp, t);
    if (rc == 0) rc = f(&tmp, beta, alpha, a, b);
    if (rc == 0) rc = lt_tensor_resize(r, nd, size);
    if (rc == 0) rc = lt_tensor_copy(r, &tmp);
    lt_tensor_clear(&tmp);
    return rc;
  }
  if (t != r) {
    if (lt_tensor_resize(r, nd, size) != 0) return -1;
    if (beta != 0 && lt_tensor_copy(r, t) != 0) return -1;
  }
  return f(r, beta, alpha, a, b);
}

static int mm_fn(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  return gemm2d(r, beta, alpha, a, b);
}

static int mv_fn(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  lt_tensor rv, bv;
  as_col(&rv, r);
  as_col(&bv, b);
  return gemm2d(&rv, beta, alpha, a, &bv);
}

static int outer_fn(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  lt_tensor av, bv;
  as_col(&av, a);
  as_row(&bv, b);
  return gemm2d(r, beta, alpha, &av, &bv);
}

static int bmm_fn(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  for (int64_t i = 0; i < a->size[0]; i++) {
    lt_tensor rv, av, bv;
    slice0(&rv, r, i);
    slice0(&av, a, i);
    slice0(&bv, b, i);
    if (gemm2d(&rv, beta, alpha, &av, &bv) != 0) return -1;
  }
  return 0;
}

static int summed_bmm_fn(lt_tensor *r, double beta, double alpha, const lt_tensor *a, const lt_tensor *b) {
  if (a->size[0] == 0) return scale2d(r, beta);
  for (int64_t i = 0; i < a->size[0]; i++) {
    lt_tensor av, bv;
    slice0(&av, a, i);
    slice0(&bv, b, i);
    if (gemm2d(r, i == 0 ? beta : 1, alpha, &av, &bv) != 0) return -1;
  }
  return 0;
}

/* t, when given, must have the result's shape. */
static int check_t(const char *what, const lt_tensor *t, int nd, const int64_t *size, const lt_tensor *a,
                   const lt_tensor *b, const char *an, const char *bn) {
  if (!t) return 0;
  int ok = t->ndim == nd;
  for (int d = 0; ok && d < nd; d++) ok = t->size[d] == size[d];
  if (ok) return 0;
  char bt[128], ba[128], bb[128];
  return lt_fail("size mismatch, %s: %s, %s: %s, %s: %s", what, lt_shape_str(t, bt, sizeof bt), an,
                 lt_shape_str(a, ba, sizeof ba), bn, lt_shape_str(b, bb, sizeof bb));
}

int lt_addmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *m1, const lt_tensor *m2) {
  if (same_type("addmm", r, t, m1, m2)) return -1;
  if (m1->ndim != 2 || m2->ndim != 2)
    return lt_fail("matrices expected, got %dD, %dD tensors", m1->ndim, m2->ndim);
  char b1[128], b2[128];
  if (m1->size[1] != m2->size[0])
    return lt_fail("size mismatch, m1: %s, m2: %s", lt_shape_str(m1, b1, sizeof b1), lt_shape_str(m2, b2, sizeof b2));
  int64_t size[2] = {m1->size[0], m2->size[1]};
  if (t && t->ndim != 2) return lt_fail("matrix expected, got %dD tensor for t", t->ndim);
  if (check_t("t", t, 2, size, m1, m2, "m1", "m2")) return -1;
  return run_product(r, 2, size, beta, t, alpha, m1, m2, mm_fn);
}

int lt_addmv(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *mat, const lt_tensor *vec) {
  if (same_type("addmv", r, t, mat, vec)) return -1;
  if (mat->ndim != 2 || vec->ndim != 1)
    return lt_fail("matrix and vector expected, got %dD, %dD", mat->ndim, vec->ndim);
  char b1[128], b2[128];
  if (mat->size[1] != vec->size[0])
    return lt_fail("size mismatch, mat: %s, vec: %s", lt_shape_str(mat, b1, sizeof b1), lt_shape_str(vec, b2, sizeof b2));
  int64_t size[1] = {mat->size[0]};
  if (t && t->ndim != 1) return lt_fail("vector expected, got t: %dD", t->ndim);
  if (check_t("t", t, 1, size, mat, vec, "mat", "vec")) return -1;
  return run_product(r, 1, size, beta, t, alpha, mat, vec, mv_fn);
}

int lt_addr(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *vec1,
            const lt_tensor *vec2) {
  if (same_type("addr", r, t, vec1, vec2)) return -1;
  if (vec1->ndim != 1 || vec2->ndim != 1)
    return lt_fail("vector and vector expected, got %dD, %dD tensors", vec1->ndim, vec2->ndim);
  int64_t size[2] = {vec1->size[0], vec2->size[0]};
  if (t && t->ndim != 2) return lt_fail("expected matrix, got %dD tensor for t", t->ndim);
  if (check_t("t", t, 2, size, vec1, vec2, "vec1", "vec2")) return -1;
  return run_product(r, 2, size, beta, t, alpha, vec1, vec2, outer_fn);
}

static int check_batches(const char *fname, const lt_tensor *b1, const lt_tensor *b2) {
  if (b1->ndim != 3 || b2->ndim != 3)
    return lt_fail("%s: expected 3D tensors, got %dD, %dD", fname, b1->ndim, b2->ndim);
  if (b1->size[0] != b2->size[0])
    return lt_fail("%s: equal number of batches expected, got %lld, %lld", fname, (long long)b1->size[0],
                   (long long)b2->size[0]);
  char s1[128], s2[128];
  if (b1->size[2] != b2->size[1])
    return lt_fail("size mismatch, batch1: %s, batch2: %s", lt_shape_str(b1, s1, sizeof s1),
                   lt_shape_str(b2, s2, sizeof s2));
  return 0;
}

int lt_baddbmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *b1,
               const lt_tensor *b2) {
  if (same_type("baddbmm", r, t, b1, b2) || check_batches("baddbmm", b1, b2)) return -1;
  int64_t size[3] = {b1->size[0], b1->size[1], b2->size[2]};
  if (t && t->ndim != 3) return lt_fail("baddbmm: expected 3D tensor for t, got %dD", t->ndim);
  if (check_t("t", t, 3, size, b1, b2, "batch1", "batch2")) return -1;
  return run_product(r, 3, size, beta, t, alpha, b1, b2, bmm_fn);
}

int lt_addbmm(lt_tensor *r, double beta, const lt_tensor *t, double alpha, const lt_tensor *b1,
              const lt_tensor *b2) {
  if (same_type("addbmm", r, t, b1, b2) || check_batches("addbmm", b1, b2)) return -1;
  int64_t size[2] = {b1->size[1], b2->size[2]};
  if (t && t->ndim != 2) return lt_fail("addbmm: expected 2D tensor for t, got %dD", t->ndim);
  if (check_t("t", t, 2, size, b1, b2, "batch1", "batch2")) return -1;
  return run_product(r, 2, size, beta, t, alpha, b1, b2, summed_bmm_fn);
}

/* ---- dot ---- */

int lt_dot(const lt_tensor *a, const lt_tensor *b, double *out) {
  if (a->type != b->type)
    return lt_fail("dot: expected both tensors to be %sTensor, got a %sTensor", lt_type_name(a->type),
                   lt_type_name(b->type));
  int64_t n = lt_tensor_nelement(a);
  if (n != lt_tensor_nelement(b))
    return lt_fail("inconsistent tensor size: dot of %lld and %lld elements", (long long)n,
                   (long long)lt_tensor_nelement(b));
  *out = 0;
  if (n == 0) return 0;
  int contiguous = lt_tensor_is_contiguous(a) && lt_tensor_is_contiguous(b);
  /* Floating types sum in double (TH summed Float in float through sdot);
   * integer types wrap in 64 bits. Four partial sums let the loop vectorize. */
  LT_DISPATCH(a->type, {
    int is_int = (scalar_t)0.5 == 0;
    double dsum = 0;
    uint64_t isum = 0;
    lt_iter ia, ib;
    lt_iter_init(&ia, a);
    lt_iter_init(&ib, b);
    while (!lt_iter_done(&ia)) {
      int64_t m = contiguous ? n : lt_iter_run(&ia, &ib, NULL);
      const scalar_t *x = (const scalar_t *)ia.ptr, *y = (const scalar_t *)ib.ptr;
      int64_t sx = contiguous ? 1 : ia.inner_stride, sy = contiguous ? 1 : ib.inner_stride;
      if (is_int) {
        for (int64_t i = 0; i < m; i++) isum += (uint64_t)(int64_t)x[i * sx] * (uint64_t)(int64_t)y[i * sy];
      } else if (sx == 1 && sy == 1) {
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = 0;
        for (; i + 4 <= m; i += 4) {
          s0 += (double)x[i] * y[i];
          s1 += (double)x[i + 1] * y[i + 1];
          s2 += (double)x[i + 2] * y[i + 2];
          s3 += (double)x[i + 3] * y[i + 3];
        }
        for (; i < m; i++) s0 += (double)x[i] * y[i];
        dsum += (s0 + s1) + (s2 + s3);
      } else {
        for (int64_t i = 0; i < m; i++) dsum += (double)x[i * sx] * y[i * sy];
      }
      lt_iter_advance(&ia, m);
      lt_iter_advance(&ib, m);
    }
    *out = is_int ? (double)(int64_t)isum : lt_number(dsum);
  });
  return 0;
}
