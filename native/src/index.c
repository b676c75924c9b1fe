/* Index-vector ops along one dimension (TH indexSelect, indexCopy, indexAdd,
 * indexFill) and the helpers the other index kernels share. */
#include "index_internal.h"

int lt_ix_same_storage(const lt_tensor *a, const lt_tensor *b) {
  return a->storage != NULL && a->storage == b->storage;
}

/* Torch7's resize: a tensor that already has the size keeps its strides,
 * so results can be written into views. */
int lt_ix_resize(lt_tensor *t, int ndim, const int64_t *size) {
  int n = 0;
  while (n < ndim && size[n] > 0) n++;
  if (n == t->ndim && (n == 0 || t->storage != NULL)) {
    int same = 1;
    for (int d = 0; d < n; d++) same &= t->size[d] == size[d];
    if (same) return 0;
  }
  return lt_tensor_resize(t, ndim, size);
}

/* dst = tmp (the result computed aside because dst aliased an input). */
int lt_ix_take_result(lt_tensor *dst, lt_tensor *tmp) {
  int rc = lt_ix_resize(dst, tmp->ndim, tmp->size);
  if (rc == 0) rc = lt_tensor_copy(dst, tmp);
  lt_tensor_clear(tmp);
  return rc;
}

/* x itself, or a contiguous copy of it in *tmp when it shares storage with t
 * (reading it while writing t would see our own writes). */
const lt_tensor *lt_ix_detach(const lt_tensor *x, const lt_tensor *t, lt_tensor *tmp) {
  lt_tensor_init(tmp, x->type);
  if (!lt_ix_same_storage(x, t)) return x;
  if (lt_tensor_resize(tmp, x->ndim, x->size) != 0 || lt_tensor_copy(tmp, x) != 0) return NULL;
  return tmp;
}

int lt_ix_check_long(const char *op, const lt_tensor *index) {
  if (lt_host_type(index->type) != LT_LONG)
    return lt_fail("%s: the index must be a LongTensor (got a %sTensor)", op, lt_type_name(index->type));
  return 0;
}

/* Every element of the LongTensor index must lie in [1, n]. */
int lt_ix_check_range(const char *op, const lt_tensor *index, int64_t n, int dim) {
  lt_iter it;
  lt_iter_init(&it, index);
  while (!lt_iter_done(&it)) {
    int64_t m = it.inner_left, st = it.inner_stride;
    const int64_t *p = (const int64_t *)it.ptr;
    for (int64_t j = 0; j < m; j++) {
      int64_t v = p[j * st];
      if (v < 1 || v > n)
        return lt_fail("%s: index out of range: %lld is not in [1, %lld] (dimension %d)", op, (long long)v,
                       (long long)n, dim + 1);
    }
    lt_iter_advance(&it, m);
  }
  return 0;
}

int lt_ix_check_mask(const char *op, const lt_tensor *mask, int64_t n, int64_t *ones) {
  if (lt_host_type(mask->type) != LT_BYTE)
    return lt_fail("%s: the mask must be a ByteTensor (got a %sTensor)", op, lt_type_name(mask->type));
  if (lt_tensor_nelement(mask) != n)
    return lt_fail("%s: inconsistent tensor size: the mask has %lld elements, the tensor %lld", op,
                   (long long)lt_tensor_nelement(mask), (long long)n);
  int64_t count = 0;
  lt_iter it;
  lt_iter_init(&it, mask);
  while (!lt_iter_done(&it)) {
    int64_t m = it.inner_left, st = it.inner_stride;
    const uint8_t *p = (const uint8_t *)it.ptr;
    for (int64_t j = 0; j < m; j++) {
      uint8_t v = p[j * st];
      if (v > 1) return lt_fail("%s: Mask tensor can take 0 and 1 values only (found %d)", op, (int)v);
      count += v;
    }
    lt_iter_advance(&it, m);
  }
  if (ones) *ones = count;
  return 0;
}

/* A borrowed view (no reference taken) of t narrowed to [i, i + n) along dim. */
lt_tensor lt_ix_narrow(const lt_tensor *t, int dim, int64_t i, int64_t n) {
  lt_tensor v = *t;
  v.offset += i * t->stride[dim];
  v.size[dim] = n;
  return v;
}

/* outer = product of the sizes before dim, inner = after it. */
static void outer_inner(const lt_tensor *t, int dim, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < dim; d++) *outer *= t->size[d];
  for (int d = dim + 1; d < t->ndim; d++) *inner *= t->size[d];
}

/* Same sizes in every dimension but dim. */
static int same_except(const lt_tensor *a, const lt_tensor *b, int dim) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != dim && a->size[d] != b->size[d]) return 0;
  return 1;
}

static int check_vector(const char *op, const lt_tensor *index, const lt_tensor *t, int dim) {
  if (lt_ix_check_long(op, index) != 0) return -1;
  if (index->ndim != 1)
    return lt_fail("%s: Index is supposed to be a vector (got a %d-dimensional index)", op, index->ndim);
  if (dim < 0 || dim >= t->ndim)
    return lt_fail("%s: Indexing dim %d is out of bounds of tensor (of %d dimensions)", op, dim + 1, t->ndim);
  return 0;
}

int lt_index_select(lt_tensor *dst, const lt_tensor *src, int dim, const lt_tensor *index) {
  if (src->ndim == 0) return lt_fail("index: Source tensor is empty");
  if (check_vector("index", index, src, dim) != 0) return -1;
  if (dst->type != src->type)
    return lt_fail("index: result is a %sTensor, source a %sTensor", lt_type_name(dst->type), lt_type_name(src->type));
  int64_t n = index->size[0], limit = src->size[dim];
  if (lt_ix_check_range("index", index, limit, dim) != 0) return -1;
  if (lt_ix_same_storage(dst, src) || lt_ix_same_storage(dst, index)) {
    lt_tensor tmp;
    lt_tensor_init(&tmp, dst->type);
    if (lt_index_select(&tmp, src, dim, index) != 0) { lt_tensor_clear(&tmp); return -1; }
    return lt_ix_take_result(dst, &tmp);
  }
  int64_t size[LT_MAXDIM];
  for (int d = 0; d < src->ndim; d++) size[d] = src->size[d];
  size[dim] = n;
  if (lt_ix_resize(dst, src->ndim, size) != 0) return -1;

  const int64_t *ix = (const int64_t *)lt_tensor_data(index);
  int64_t ixs = index->stride[0];
  if (lt_tensor_is_contiguous(src) && lt_tensor_is_contiguous(dst)) {
    /* rows of `inner` contiguous elements: memcpy each */
    int64_t outer, inner;
    outer_inner(src, dim, &outer, &inner);
    int64_t rows = outer * n;
    LT_DISPATCH(src->type, {
      const scalar_t *s = (const scalar_t *)lt_tensor_data(src);
      scalar_t *d = (scalar_t *)lt_tensor_data(dst);
      int64_t lt_par_n = rows * inner;
      LT_PARALLEL_FOR
      for (int64_t r = 0; r < rows; r++) {
        int64_t o = r / n, i = r % n;
        const scalar_t *from = s + (o * limit + ix[i * ixs] - 1) * inner;
        if (inner == 1) d[r] = *from;
        else memcpy(d + r * inner, from, inner * sizeof(scalar_t));
      }
    });
    return 0;
  }
  for (int64_t i = 0; i < n; i++) {
    lt_tensor to = lt_ix_narrow(dst, dim, i, 1), from = lt_ix_narrow(src, dim, ix[i * ixs] - 1, 1);
    if (lt_tensor_copy(&to, &from) != 0) return -1;
  }
  return 0;
}

/* indexCopy (add = 0) and indexAdd (add = 1). */
static int index_copy_add(const char *op, lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src,
                          int add) {
  if (check_vector(op, index, src, dim) != 0 || check_vector(op, index, t, dim) != 0) return -1;
  if (t->type != src->type)
    return lt_fail("%s: tensor is a %sTensor, source a %sTensor", op, lt_type_name(t->type), lt_type_name(src->type));
  int64_t n = index->size[0];
  if (n != src->size[dim])
    return lt_fail("%s: Number of indices (%lld) should be equal to source:size(%d) (%lld)", op, (long long)n,
                   dim + 1, (long long)src->size[dim]);
  int64_t slice_t = lt_tensor_nelement(t) / t->size[dim], slice_s = lt_tensor_nelement(src) / src->size[dim];
  if (slice_t != slice_s)
    return lt_fail("%s: inconsistent tensor size: slices of the source have %lld elements, of the tensor %lld", op,
                   (long long)slice_s, (long long)slice_t);
  int64_t limit = t->size[dim];
  if (lt_ix_check_range(op, index, limit, dim) != 0) return -1;

  lt_tensor tmp_src, tmp_idx;
  const lt_tensor *s_ = lt_ix_detach(src, t, &tmp_src);
  const lt_tensor *i_ = lt_ix_detach(index, t, &tmp_idx);
  int rc = (s_ && i_) ? 0 : -1;
  const int64_t *ix = i_ ? (const int64_t *)lt_tensor_data(i_) : NULL;
  int64_t ixs = i_ ? i_->stride[0] : 0;

  if (rc == 0 && same_except(t, s_, dim) && lt_tensor_is_contiguous(t) && lt_tensor_is_contiguous(s_)) {
    int64_t outer, inner;
    outer_inner(t, dim, &outer, &inner);
    LT_DISPATCH(t->type, {
      const scalar_t *s = (const scalar_t *)lt_tensor_data(s_);
      scalar_t *d = (scalar_t *)lt_tensor_data(t);
      /* rows of one index may repeat (indexAdd accumulates), so only the
       * outer loop runs in parallel */
      int64_t lt_par_n = outer > 1 ? outer * n * inner : 0;
      LT_PARALLEL_FOR
      for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < n; i++) {
          scalar_t *to = d + (o * limit + ix[i * ixs] - 1) * inner;
          const scalar_t *from = s + (o * n + i) * inner;
          if (add) {
            for (int64_t k = 0; k < inner; k++) to[k] = (scalar_t)(to[k] + from[k]);
          } else {
            memcpy(to, from, inner * sizeof(scalar_t));
          }
        }
      }
    });
  } else if (rc == 0) {
    for (int64_t i = 0; i < n && rc == 0; i++) {
      lt_tensor to = lt_ix_narrow(t, dim, ix[i * ixs] - 1, 1), from = lt_ix_narrow(s_, dim, i, 1);
      if (!add) {
        rc = lt_tensor_copy(&to, &from);
        continue;
      }
      LT_DISPATCH(t->type, {
        lt_iter a, b;
        lt_iter_init(&a, &to);
        lt_iter_init(&b, &from);
        while (!lt_iter_done(&a)) {
          int64_t m = lt_iter_run(&a, &b, NULL);
          scalar_t *x = (scalar_t *)a.ptr;
          const scalar_t *y = (const scalar_t *)b.ptr;
          int64_t xs = a.inner_stride, ys = b.inner_stride;
          for (int64_t k = 0; k < m; k++) x[k * xs] = (scalar_t)(x[k * xs] + y[k * ys]);
          lt_iter_advance(&a, m);
          lt_iter_advance(&b, m);
        }
      });
    }
  }
  lt_tensor_clear(&tmp_src);
  lt_tensor_clear(&tmp_idx);
  return rc;
}

int lt_index_copy(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src) {
  return index_copy_add("indexCopy", t, dim, index, src, 0);
}

int lt_index_add(lt_tensor *t, int dim, const lt_tensor *index, const lt_tensor *src) {
  return index_copy_add("indexAdd", t, dim, index, src, 1);
}

int lt_index_fill(lt_tensor *t, int dim, const lt_tensor *index, double value) {
  if (check_vector("indexFill", index, t, dim) != 0) return -1;
  int64_t n = index->size[0], limit = t->size[dim];
  if (lt_ix_check_range("indexFill", index, limit, dim) != 0) return -1;
  lt_tensor tmp_idx;
  const lt_tensor *i_ = lt_ix_detach(index, t, &tmp_idx);
  if (!i_) return -1;
  const int64_t *ix = (const int64_t *)lt_tensor_data(i_);
  int64_t ixs = i_->stride[0];
  int rc = 0;
  if (lt_tensor_is_contiguous(t)) {
    int64_t outer, inner;
    outer_inner(t, dim, &outer, &inner);
    LT_DISPATCH(t->type, {
      scalar_t v = (scalar_t)value;
      scalar_t *d = (scalar_t *)lt_tensor_data(t);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n; i++) {
          scalar_t *to = d + (o * limit + ix[i * ixs] - 1) * inner;
          for (int64_t k = 0; k < inner; k++) to[k] = v;
        }
    });
  } else {
    for (int64_t i = 0; i < n && rc == 0; i++) {
      lt_tensor to = lt_ix_narrow(t, dim, ix[i * ixs] - 1, 1);
      rc = lt_tensor_fill(&to, value);
    }
  }
  lt_tensor_clear(&tmp_idx);
  return rc;
}
