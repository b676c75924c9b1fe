/* Sorting, selection (topk, kthvalue) and scans (cumsum, cumprod) along one
 * dimension. Each slice along dim is gathered into a buffer of (value,
 * index) pairs, processed (merge sort, or quickselect for top-k), and
 * scattered to the outputs; slices run in parallel for large tensors. */
#include "lt_internal.h"

enum { MODE_SORT, MODE_TOPK, MODE_TOPK_SORTED, MODE_KTH, MODE_MODE };

/* What a sort-family call does: input t, outputs values/indices, slice length
 * n along dim, and the other dimensions to enumerate slices over. */
typedef struct slice_plan {
  const lt_tensor *t;
  lt_tensor *values, *indices;
  int mode, desc;
  int64_t n, k, nslices;
  int64_t tstride, vstride, istride; /* strides along dim */
  int nouter;                        /* the other dimensions */
  int64_t osize[LT_MAXDIM];
  int64_t ostride[3][LT_MAXDIM];     /* t, values, indices */
} slice_plan;

/* Storage offsets (relative to each tensor's data) of slice s. */
static void slice_offsets(const slice_plan *p, int64_t s, int64_t offs[3]) {
  offs[0] = offs[1] = offs[2] = 0;
  for (int d = p->nouter - 1; d >= 0; d--) {
    int64_t c = s % p->osize[d];
    s /= p->osize[d];
    for (int j = 0; j < 3; j++) offs[j] += c * p->ostride[j][d];
  }
}

#define SORT_FLOAT 0
#define SORT_T uint8_t
#define SORT_S _byte
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#define SORT_T int8_t
#define SORT_S _char
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#define SORT_T int16_t
#define SORT_S _short
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#define SORT_T int32_t
#define SORT_S _int
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#define SORT_T int64_t
#define SORT_S _long
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#undef SORT_FLOAT
#define SORT_FLOAT 1
#define SORT_T float
#define SORT_S _float
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#define SORT_T double
#define SORT_S _double
#include "sort_generic.h"
#undef SORT_T
#undef SORT_S
#undef SORT_FLOAT

static int check_dim(const char *fname, const lt_tensor *t, int dim) {
  if (dim < 0 || dim >= t->ndim)
    return lt_fail("%s: dimension %d out of range of %dD tensor", fname, dim + 1, t->ndim);
  return 0;
}

static int run_slices(const char *fname, lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim,
                      int mode, int desc, int64_t k) {
  if (values->type != t->type)
    return lt_fail("%s: values must be a %sTensor, got a %sTensor", fname, lt_type_name(t->type),
                   lt_type_name(values->type));
  if (lt_host_type(indices->type) != LT_LONG)
    return lt_fail("%s: indices must be a LongTensor, got a %sTensor", fname, lt_type_name(indices->type));
  if (t->ndim == 0) { /* an empty tensor sorts to empty results */
    lt_tensor_clear(values);
    lt_tensor_clear(indices);
    if (mode == MODE_SORT) return 0;
    return lt_fail("%s: empty tensor", fname);
  }
  if (check_dim(fname, t, dim)) return -1;
  slice_plan p;
  p.t = t;
  p.values = values;
  p.indices = indices;
  p.mode = mode;
  p.desc = desc;
  p.n = t->size[dim];
  p.k = k;
  int64_t count = mode == MODE_SORT ? p.n : (mode == MODE_KTH || mode == MODE_MODE) ? 1 : k;
  int64_t size[LT_MAXDIM];
  for (int d = 0; d < t->ndim; d++) size[d] = d == dim ? count : t->size[d];
  if (values == t) {
    if (count != p.n) return lt_fail("%s: the values result cannot be the input", fname);
  } else if (lt_tensor_resize(values, t->ndim, size) != 0) {
    return -1;
  }
  if (lt_tensor_resize(indices, t->ndim, size) != 0) return -1;
  if (count == 0 || lt_tensor_nelement(t) == 0) return 0;
  p.tstride = t->stride[dim];
  p.vstride = values->stride[dim];
  p.istride = indices->stride[dim];
  p.nouter = 0;
  p.nslices = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (d == dim) continue;
    p.osize[p.nouter] = t->size[d];
    p.ostride[0][p.nouter] = t->stride[d];
    p.ostride[1][p.nouter] = values->stride[d];
    p.ostride[2][p.nouter] = indices->stride[d];
    p.nslices *= t->size[d];
    p.nouter++;
  }
  switch (lt_host_type(t->type)) {
    case LT_BYTE: return slices__byte(&p);
    case LT_CHAR: return slices__char(&p);
    case LT_SHORT: return slices__short(&p);
    case LT_INT: return slices__int(&p);
    case LT_LONG: return slices__long(&p);
    case LT_FLOAT: return slices__float(&p);
    case LT_DOUBLE: return slices__double(&p);
  }
  return lt_fail("unknown tensor type %d", t->type);
}

int lt_sort(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim, int descending) {
  return run_slices("sort", values, indices, t, dim, MODE_SORT, descending != 0, 0);
}

int lt_topk(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int64_t k, int dim, int largest, int sorted) {
  if (t->ndim > 0 && dim >= 0 && dim < t->ndim && (k < 0 || k > t->size[dim]))
    return lt_fail("topk: selected number k (%lld) out of range (dimension %d of size %lld)", (long long)k,
                   dim + 1, (long long)t->size[dim]);
  return run_slices("topk", values, indices, t, dim, sorted ? MODE_TOPK_SORTED : MODE_TOPK, largest != 0, k);
}

int lt_mode(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim) {
  return run_slices("mode", values, indices, t, dim, MODE_MODE, 0, 1);
}

int lt_kthvalue(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int64_t k, int dim) {
  if (t->ndim > 0 && dim >= 0 && dim < t->ndim && (k < 1 || k > t->size[dim]))
    return lt_fail("kthvalue: selected index k (%lld) out of range (dimension %d of size %lld)", (long long)k,
                   dim + 1, (long long)t->size[dim]);
  return run_slices("kthvalue", values, indices, t, dim, MODE_KTH, 0, k);
}

/* ---- scans ---- */

/* r[..., i, ...] = op over t[..., 0..i, ...] along dim. The accumulator is
 * double for floating types and a wrapping 64-bit integer otherwise (TH's
 * accreal), so the result does not depend on the memory layout. */
static int scan(const char *fname, lt_tensor *r, const lt_tensor *t, int dim, int prod) {
  if (r->type != t->type)
    return lt_fail("%s: result must be a %sTensor, got a %sTensor", fname, lt_type_name(t->type),
                   lt_type_name(r->type));
  if (t->ndim == 0) {
    if (r != t) lt_tensor_clear(r);
    return 0;
  }
  if (check_dim(fname, t, dim)) return -1;
  if (r != t && lt_tensor_resize(r, t->ndim, t->size) != 0) return -1;
  if (lt_tensor_nelement(t) == 0) return 0;
  int64_t n = t->size[dim], outer = 1, inner = 1;
  for (int d = 0; d < dim; d++) outer *= t->size[d];
  for (int d = dim + 1; d < t->ndim; d++) inner *= t->size[d];
  int contiguous = lt_tensor_is_contiguous(t) && lt_tensor_is_contiguous(r);
  LT_DISPATCH(t->type, {
    int is_int = (scalar_t)0.5 == 0;
    const scalar_t *x = (const scalar_t *)lt_tensor_data(t);
    scalar_t *y = (scalar_t *)lt_tensor_data(r);
    if (contiguous) {
      /* Row by row along dim with one accumulator per inner position:
       * unit-stride loops that vectorize. */
      union { double d; uint64_t u; } *acc = malloc(inner * sizeof *acc);
      if (!acc) return lt_fail("out of memory");
      for (int64_t o = 0; o < outer; o++) {
        const scalar_t *xs = x + o * n * inner;
        scalar_t *ys = y + o * n * inner;
        for (int64_t j = 0; j < inner; j++) {
          if (is_int) acc[j].u = prod; else acc[j].d = prod;
        }
        for (int64_t i = 0; i < n; i++, xs += inner, ys += inner) {
          if (is_int) {
            if (prod) for (int64_t j = 0; j < inner; j++) { acc[j].u *= (uint64_t)(int64_t)xs[j]; ys[j] = (scalar_t)(int64_t)acc[j].u; }
            else for (int64_t j = 0; j < inner; j++) { acc[j].u += (uint64_t)(int64_t)xs[j]; ys[j] = (scalar_t)(int64_t)acc[j].u; }
          } else {
            if (prod) for (int64_t j = 0; j < inner; j++) { acc[j].d *= xs[j]; ys[j] = (scalar_t)acc[j].d; }
            else for (int64_t j = 0; j < inner; j++) { acc[j].d += xs[j]; ys[j] = (scalar_t)acc[j].d; }
          }
        }
      }
      free(acc);
    } else {
      /* Strided: one slice at a time (TH's order). */
      int64_t nsl = outer * inner, ts = t->stride[dim], rs = r->stride[dim];
      for (int64_t s = 0; s < nsl; s++) {
        int64_t rem = s, to = 0, ro = 0;
        for (int d = t->ndim - 1; d >= 0; d--) {
          if (d == dim) continue;
          int64_t c = rem % t->size[d];
          rem /= t->size[d];
          to += c * t->stride[d];
          ro += c * r->stride[d];
        }
        if (is_int) {
          uint64_t a = prod;
          for (int64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)(int64_t)x[to + i * ts];
            a = prod ? a * v : a + v;
            y[ro + i * rs] = (scalar_t)(int64_t)a;
          }
        } else {
          double a = prod;
          for (int64_t i = 0; i < n; i++) {
            double v = x[to + i * ts];
            a = prod ? a * v : a + v;
            y[ro + i * rs] = (scalar_t)a;
          }
        }
      }
    }
  });
  return 0;
}

int lt_cumsum(lt_tensor *r, const lt_tensor *t, int dim) { return scan("cumsum", r, t, dim, 0); }
int lt_cumprod(lt_tensor *r, const lt_tensor *t, int dim) { return scan("cumprod", r, t, dim, 1); }
