/* gather / scatter / scatterAdd / scatterFill along one dimension (TH's
 * DIM_APPLY kernels): the iteration space is the index tensor's shape; each
 * index element picks the position along `dim` in the other tensor. */
#include "index_internal.h"

static const char *sizes_str(const lt_tensor *t, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  if (t->ndim == 0) snprintf(buf, cap, "(empty)");
  for (int d = 0; d < t->ndim && n < cap; d++)
    n += snprintf(buf + n, cap - n, d ? "x%lld" : "%lld", (long long)t->size[d]);
  return buf;
}

/* a and b have the same size in every dimension but dim. */
static int check_sizes(const char *op, const lt_tensor *a, const char *aname, const lt_tensor *b, const char *bname,
                       int dim) {
  for (int d = 0; d < a->ndim; d++) {
    if (d != dim && a->size[d] != b->size[d]) {
      char sa[400], sb[400];
      return lt_fail("%s: inconsistent tensor size: %s %s and %s %s must have the same size in every dimension "
                     "but %d", op, aname, sizes_str(a, sa, sizeof sa), bname, sizes_str(b, sb, sizeof sb), dim + 1);
    }
  }
  return 0;
}

static int check_dims(const char *op, const lt_tensor *t, const char *tname, const lt_tensor *index, int dim) {
  if (lt_ix_check_long(op, index) != 0) return -1;
  if (dim < 0 || dim >= t->ndim)
    return lt_fail("%s: Index dimension %d is out of bounds (%s tensor of %d dimensions)", op, dim + 1, tname, t->ndim);
  if (index->ndim != t->ndim)
    return lt_fail("%s: Index tensor must have same dimensions as %s tensor (%d and %d)", op, tname, index->ndim,
                   t->ndim);
  return check_sizes(op, index, "index", t, tname, dim);
}

/* Offsets of row r (a position in every dimension but the last, in the
 * iteration space `size`) in tensors a and b (all coordinates) and c (all
 * coordinates but `skip`, which comes from the index). */
static inline void row_offsets(int64_t r, int nd, const int64_t *size, const int64_t *sa, const int64_t *sb,
                               const int64_t *sc, int skip, int64_t *oa, int64_t *ob, int64_t *oc) {
  int64_t a = 0, b = 0, c = 0;
  for (int k = nd - 2; k >= 0; k--) {
    int64_t x = r % size[k];
    r /= size[k];
    a += x * sa[k];
    b += x * sb[k];
    if (k != skip) c += x * sc[k];
  }
  *oa = a;
  *ob = b;
  *oc = c;
}

int lt_gather(lt_tensor *dst, const lt_tensor *src, int dim, const lt_tensor *index) {
  if (check_dims("gather", src, "input", index, dim) != 0) return -1;
  if (dst->type != src->type)
    return lt_fail("gather: result is a %sTensor, source a %sTensor", lt_type_name(dst->type), lt_type_name(src->type));
  if (lt_ix_check_range("gather", index, src->size[dim], dim) != 0) return -1;
  if (lt_ix_same_storage(dst, src) || lt_ix_same_storage(dst, index)) {
    lt_tensor tmp;
    lt_tensor_init(&tmp, dst->type);
    if (lt_gather(&tmp, src, dim, index) != 0) { lt_tensor_clear(&tmp); return -1; }
    return lt_ix_take_result(dst, &tmp);
  }
  if (lt_ix_resize(dst, index->ndim, index->size) != 0) return -1;
  int64_t n = lt_tensor_nelement(index);
  if (n == 0) return 0;
  int nd = index->ndim, last = nd - 1;
  int64_t len = index->size[last], rows = n / len;
  LT_DISPATCH(src->type, {
    const scalar_t *s = (const scalar_t *)lt_tensor_data(src);
    scalar_t *d = (scalar_t *)lt_tensor_data(dst);
    const int64_t *ix = (const int64_t *)lt_tensor_data(index);
    int64_t ds = dst->stride[last], is = index->stride[last], sd = src->stride[dim];
    int64_t sl = dim == last ? 0 : src->stride[last];
    int64_t lt_par_n = n;
    LT_PARALLEL_FOR
    for (int64_t r = 0; r < rows; r++) {
      int64_t od, oi, os;
      row_offsets(r, nd, index->size, dst->stride, index->stride, src->stride, dim, &od, &oi, &os);
      for (int64_t j = 0; j < len; j++) d[od + j * ds] = s[os + (ix[oi + j * is] - 1) * sd + j * sl];
    }
  });
  return 0;
}

/* scatter (src != NULL, add = 0), scatterAdd (add = 1), scatterFill (src == NULL). */
static int scatter_impl(const char *op, lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src,
                        int add, double value) {
  if (check_dims(op, t, "output", index, dim) != 0) return -1;
  if (src) {
    if (src->type != t->type)
      return lt_fail("%s: tensor is a %sTensor, source a %sTensor", op, lt_type_name(t->type), lt_type_name(src->type));
    if (src->ndim != t->ndim)
      return lt_fail("%s: Input tensor must have same dimensions as output tensor (%d and %d)", op, src->ndim, t->ndim);
    if (check_sizes(op, src, "src", t, "tensor", dim) != 0) return -1;
    if (src->size[dim] < index->size[dim])
      return lt_fail("%s: inconsistent tensor size: src has %lld elements in dimension %d, index %lld", op,
                     (long long)src->size[dim], dim + 1, (long long)index->size[dim]);
  }
  if (lt_ix_check_range(op, index, t->size[dim], dim) != 0) return -1;
  int64_t n = lt_tensor_nelement(index);
  if (n == 0) return 0;
  lt_tensor tmp_src, tmp_idx;
  lt_tensor_init(&tmp_src, t->type);
  const lt_tensor *s_ = src ? lt_ix_detach(src, t, &tmp_src) : NULL;
  const lt_tensor *i_ = lt_ix_detach(index, t, &tmp_idx);
  int rc = (i_ && (s_ || !src)) ? 0 : -1;
  if (rc == 0) {
    int nd = index->ndim, last = nd - 1;
    int64_t len = index->size[last], rows = n / len;
    LT_DISPATCH(t->type, {
      scalar_t *d = (scalar_t *)lt_tensor_data(t);
      const scalar_t *s = s_ ? (const scalar_t *)lt_tensor_data(s_) : NULL;
      const int64_t *ix = (const int64_t *)lt_tensor_data(i_);
      const int64_t *sst = s_ ? s_->stride : i_->stride; /* any strides when there is no src */
      int64_t is = i_->stride[last], ss = sst[last], td = t->stride[dim];
      int64_t tl = dim == last ? 0 : t->stride[last];
      scalar_t v = (scalar_t)value;
      /* rows write to disjoint places only when dim is the last dimension */
      int64_t lt_par_n = dim == last ? n : 0;
      LT_PARALLEL_FOR
      for (int64_t r = 0; r < rows; r++) {
        int64_t oi, os, ot;
        row_offsets(r, nd, i_->size, i_->stride, sst, t->stride, dim, &oi, &os, &ot);
        for (int64_t j = 0; j < len; j++) {
          scalar_t *to = d + ot + (ix[oi + j * is] - 1) * td + j * tl;
          if (!s) *to = v;
          else if (add) *to = (scalar_t)(*to + s[os + j * ss]);
          else *to = s[os + j * ss];
        }
      }
    });
  }
  lt_tensor_clear(&tmp_src);
  lt_tensor_clear(&tmp_idx);
  return rc;
}

int lt_scatter(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src, int add) {
  return scatter_impl(add ? "scatterAdd" : "scatter", t, dim, index, src, add, 0);
}

int lt_scatter_fill(lt_tensor *t, int dim, const lt_tensor *index, double value) {
  return scatter_impl("scatter", t, dim, index, NULL, 0, value);
}
