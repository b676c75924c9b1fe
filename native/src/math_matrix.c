/* Matrix constructors and per-slice kernels: diag, eye, tril/triu, trace,
 * cross, histc/bhistc, renorm. Every result is resized the TH way (kept, with
 * its strides, when it already has the size) and written through its strides,
 * so results can be views of other tensors. */
#include "math_common.h"

#define ACCREAL __typeof__(_Generic((scalar_t)0, float: (double)0, double: (double)0, default: (int64_t)0))

static int check_matrix(const char *fname, const lt_tensor *t) {
  if (t->ndim == 2) return 0;
  return lt_fail("%s: a matrix (2D tensor) expected, got a %dD tensor", fname, t->ndim);
}

static int check_floating(const char *fname, const lt_tensor *t) {
  if (lt_host_type(t->type) == LT_FLOAT || lt_host_type(t->type) == LT_DOUBLE) return 0;
  return lt_fail("%s: only defined for FloatTensor and DoubleTensor, got %sTensor", fname, lt_type_name(t->type));
}

/* A borrowed view (no reference taken) of t without dimension dim, at index i. */
static void select_view(lt_tensor *out, const lt_tensor *t, int dim, int64_t i) {
  *out = *t;
  out->offset = t->offset + i * t->stride[dim];
  for (int d = dim; d < t->ndim - 1; d++) {
    out->size[d] = t->size[d + 1];
    out->stride[d] = t->stride[d + 1];
  }
  out->ndim = t->ndim - 1;
}

/* Element offset, from x's data, of the s-th slice along dim; slices are
 * numbered row-major over the other dimensions of `shape`, whose sizes x
 * shares there. */
static int64_t slice_offset(const lt_tensor *shape, const lt_tensor *x, int dim, int64_t s) {
  int64_t off = 0;
  for (int d = shape->ndim - 1; d >= 0; d--) {
    if (d == dim) continue;
    off += (s % shape->size[d]) * x->stride[d];
    s /= shape->size[d];
  }
  return off;
}

int lt_math_diag(lt_tensor *r, const lt_tensor *t, int64_t k) {
  if (t->ndim != 1 && t->ndim != 2)
    return lt_fail("diag: a matrix or a vector expected, got a %dD tensor", t->ndim);
  if (lt_math_check_type(r, t->type, "diag", "result") != 0) return -1;
  if (r == t) return lt_fail("diag: the result cannot be the input tensor");
  if (t->ndim == 1) {
    int64_t n = t->size[0], sz = n + (k >= 0 ? k : -k);
    int64_t size[2] = {sz, sz};
    if (lt_tensor_resize(r, 2, size) != 0 || lt_tensor_fill(r, 0) != 0) return -1;
    int64_t start = k >= 0 ? k * r->stride[1] : -k * r->stride[0], step = r->stride[0] + r->stride[1];
    LT_DISPATCH(t->type, {
      scalar_t *rd = (scalar_t *)lt_tensor_data(r);
      const scalar_t *td = (const scalar_t *)lt_tensor_data(t);
      for (int64_t i = 0; i < n; i++) rd[start + i * step] = td[i * t->stride[0]];
    });
    return 0;
  }
  int64_t rows = t->size[0], cols = t->size[1];
  int64_t sz = k >= 0 ? (rows < cols - k ? rows : cols - k) : (rows + k < cols ? rows + k : cols);
  if (sz < 0) sz = 0;
  if (lt_tensor_resize(r, 1, &sz) != 0) return -1;
  if (sz == 0) return 0;
  int64_t start = k >= 0 ? k * t->stride[1] : -k * t->stride[0], step = t->stride[0] + t->stride[1];
  LT_DISPATCH(t->type, {
    scalar_t *rd = (scalar_t *)lt_tensor_data(r);
    const scalar_t *td = (const scalar_t *)lt_tensor_data(t);
    for (int64_t i = 0; i < sz; i++) rd[i * r->stride[0]] = td[start + i * step];
  });
  return 0;
}

int lt_math_eye(lt_tensor *r, int64_t n, int64_t m) {
  if (n <= 0) return lt_fail("eye: the number of rows must be positive (got %lld)", (long long)n);
  if (m <= 0) m = n;
  int64_t size[2] = {n, m};
  if (lt_tensor_resize(r, 2, size) != 0 || lt_tensor_fill(r, 0) != 0) return -1;
  int64_t sz = n < m ? n : m, step = r->stride[0] + r->stride[1];
  LT_DISPATCH(r->type, {
    scalar_t *rd = (scalar_t *)lt_tensor_data(r);
    for (int64_t i = 0; i < sz; i++) rd[i * step] = 1;
  });
  return 0;
}

int lt_math_tri(lt_tensor *r, const lt_tensor *t, int64_t k, int upper) {
  const char *fname = upper ? "triu" : "tril";
  if (check_matrix(fname, t) != 0 || lt_math_check_type(r, t->type, fname, "result") != 0 ||
      lt_math_resize_as(r, t) != 0)
    return -1;
  int64_t rows = t->size[0], cols = t->size[1];
  LT_DISPATCH(t->type, {
    scalar_t *rd = (scalar_t *)lt_tensor_data(r);
    const scalar_t *td = (const scalar_t *)lt_tensor_data(t);
    for (int64_t i = 0; i < rows; i++) {
      for (int64_t j = 0; j < cols; j++) {
        int keep = upper ? j - i >= k : j - i <= k;
        rd[i * r->stride[0] + j * r->stride[1]] = keep ? td[i * t->stride[0] + j * t->stride[1]] : 0;
      }
    }
  });
  return 0;
}

int lt_math_trace(const lt_tensor *t, double *out) {
  if (check_matrix("trace", t) != 0) return -1;
  int64_t sz = t->size[0] < t->size[1] ? t->size[0] : t->size[1], step = t->stride[0] + t->stride[1];
  LT_DISPATCH(t->type, {
    const scalar_t *td = (const scalar_t *)lt_tensor_data(t);
    ACCREAL sum = 0;
    for (int64_t i = 0; i < sz; i++) sum += td[i * step];
    *out = lt_number((double)sum);
  });
  return 0;
}

int lt_math_cross(lt_tensor *r, const lt_tensor *a, const lt_tensor *b, int dim) {
  if (lt_math_check_type(b, a->type, "cross", "second tensor") != 0 ||
      lt_math_check_type(r, a->type, "cross", "result") != 0)
    return -1;
  if (!lt_tensor_is_same_size(a, b)) {
    char sa[200], sb[200];
    return lt_fail("cross: inconsistent tensor sizes %s and %s", lt_shape_str(a, sa, sizeof sa),
                   lt_shape_str(b, sb, sizeof sb));
  }
  if (dim < 0) {
    for (int d = 0; d < a->ndim && dim < 0; d++)
      if (a->size[d] == 3) dim = d;
    if (dim < 0) {
      char sa[200];
      return lt_fail("cross: no dimension of size 3 in %s", lt_shape_str(a, sa, sizeof sa));
    }
  }
  if (dim >= a->ndim) return lt_fail("cross: dimension %d out of range of %dD tensor", dim + 1, a->ndim);
  if (a->size[dim] != 3)
    return lt_fail("cross: dimension %d has size %lld, expected 3", dim + 1, (long long)a->size[dim]);
  if (lt_math_resize_as(r, a) != 0) return -1;
  int64_t nslices = lt_tensor_nelement(a) / 3;
  int64_t as = a->stride[dim], bs = b->stride[dim], rs = r->stride[dim];
  LT_DISPATCH(a->type, {
    const scalar_t *ad = (const scalar_t *)lt_tensor_data(a);
    const scalar_t *bd = (const scalar_t *)lt_tensor_data(b);
    scalar_t *rd = (scalar_t *)lt_tensor_data(r);
    for (int64_t s = 0; s < nslices; s++) {
      const scalar_t *x = ad + slice_offset(a, a, dim, s), *y = bd + slice_offset(a, b, dim, s);
      scalar_t *z = rd + slice_offset(a, r, dim, s);
      /* all six operands are read before writing, so r may be a or b */
      scalar_t x0 = x[0], x1 = x[as], x2 = x[2 * as], y0 = y[0], y1 = y[bs], y2 = y[2 * bs];
      z[0] = (scalar_t)(x1 * y2 - x2 * y1);
      z[rs] = (scalar_t)(x2 * y0 - x0 * y2);
      z[2 * rs] = (scalar_t)(x0 * y1 - x1 * y0);
    }
  });
  return 0;
}

int lt_math_histc(lt_tensor *r, const lt_tensor *t, int64_t nbins, double lo, double hi, int batch) {
  const char *fname = batch ? "bhistc" : "histc";
  if (check_floating(fname, t) != 0 || lt_math_check_type(r, t->type, fname, "result") != 0) return -1;
  if (nbins < 1) return lt_fail("%s: the number of bins must be positive (got %lld)", fname, (long long)nbins);
  if (batch && t->ndim != 2) return lt_fail("bhistc: a 2D tensor (one row per histogram) expected, got %dD", t->ndim);
  if (r == t) return lt_fail("%s: the result cannot be the input tensor", fname);
  int64_t size[2] = {batch ? t->size[0] : nbins, nbins};
  if (lt_tensor_resize(r, batch ? 2 : 1, batch ? size : size + 1) != 0 || lt_tensor_fill(r, 0) != 0) return -1;
  LT_DISPATCH_FLOATING(t->type, fname, {
    scalar_t mn = (scalar_t)lo, mx = (scalar_t)hi;
    if (mn == mx) {
      /* the data's range (TH's minall/maxall: a NaN makes it NaN, counting nothing) */
      lt_iter it;
      lt_iter_init(&it, t);
      int first = 1, nan = 0;
      while (!lt_iter_done(&it) && !nan) {
        int64_t m = lt_iter_run(&it, NULL, NULL);
        const scalar_t *p = (const scalar_t *)it.ptr;
        for (int64_t i = 0; i < m && !nan; i++) {
          scalar_t x = p[i * it.inner_stride];
          nan = x != x;
          if (nan || first || x < mn) mn = x;
          if (nan || first || x > mx) mx = x;
          first = 0;
        }
        lt_iter_advance(&it, m);
      }
      if (mn == mx) { mn -= 1; mx += 1; }
    }
    scalar_t *rd = (scalar_t *)lt_tensor_data(r);
    int64_t rows = batch ? t->size[0] : 1, cols = batch ? t->size[1] : lt_tensor_nelement(t);
    int64_t rstride = r->stride[r->ndim - 1];
    lt_iter it;
    lt_iter_init(&it, t);
    for (int64_t row = 0; row < rows; row++) {
      scalar_t *h = rd + (batch ? row * r->stride[0] : 0);
      for (int64_t left = cols; left > 0;) {
        int64_t m = lt_iter_run(&it, NULL, NULL);
        if (m > left) m = left;
        const scalar_t *p = (const scalar_t *)it.ptr;
        for (int64_t i = 0; i < m; i++) {
          scalar_t x = p[i * it.inner_stride];
          if (x >= mn && x <= mx) {
            int64_t bin = (int64_t)((x - mn) / (mx - mn) * (scalar_t)nbins);
            if (bin > nbins - 1) bin = nbins - 1;
            h[bin * rstride] += 1;
          }
        }
        lt_iter_advance(&it, m);
        left -= m;
      }
    }
  });
  return 0;
}

int lt_math_renorm(lt_tensor *r, const lt_tensor *t, double p, int dim, double maxnorm) {
  if (check_floating("renorm", t) != 0 || lt_math_check_type(r, t->type, "renorm", "result") != 0) return -1;
  if (t->ndim < 2) return lt_fail("renorm: need at least 2 dimensions, got %d", t->ndim);
  if (dim < 0 || dim >= t->ndim) return lt_fail("renorm: dimension %d out of range of %dD tensor", dim + 1, t->ndim);
  if (!(p > 0)) return lt_fail("renorm: the norm's p must be positive (got %g)", p);
  if (lt_math_resize_as(r, t) != 0) return -1;
  int lt_math_zerodiv = 0;
  (void)lt_math_zerodiv;
  for (int64_t i = 0; i < t->size[dim]; i++) {
    lt_tensor ts, rs;
    select_view(&ts, t, dim, i);
    select_view(&rs, r, dim, i);
    double norm = 0;
    LT_DISPATCH_FLOATING(t->type, "renorm", {
      lt_iter it;
      lt_iter_init(&it, &ts);
      while (!lt_iter_done(&it)) {
        int64_t m = lt_iter_run(&it, NULL, NULL);
        const scalar_t *q = (const scalar_t *)it.ptr;
        for (int64_t j = 0; j < m; j++) {
          double x = fabs((double)q[j * it.inner_stride]);
          norm += p == 1 ? x : p == 2 ? x * x : pow(x, p);
        }
        lt_iter_advance(&it, m);
      }
      norm = pow(norm, 1.0 / p);
      if (norm > maxnorm) {
        const scalar_t f = (scalar_t)(maxnorm / (norm + 1e-7));
        LT_MAP2(&rs, &ts, x * f);
      } else if (r != t && lt_tensor_copy(&rs, &ts) != 0) {
        return -1;
      }
    });
  }
  return 0;
}
