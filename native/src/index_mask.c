/* Mask ops (maskedSelect, maskedFill, maskedCopy) and nonzero. Masks are
 * ByteTensors of 0/1 with as many elements as the tensor, walked together
 * with it in row-major order. */
#include "index_internal.h"

enum { MASK_FILL, MASK_TAKE, MASK_PUT };

/* Walk t and mask together in row-major order; where the mask is 1:
 * MASK_FILL sets t's element to value, MASK_TAKE appends it to seq, MASK_PUT
 * replaces it by the next element of seq (seq: elements `seqstride` apart). */
static int masked_walk(lt_tensor *t, const lt_tensor *mask, int mode, void *seq, int64_t seqstride, double value) {
  LT_DISPATCH(t->type, {
    scalar_t v = (scalar_t)value;
    scalar_t *q = (scalar_t *)seq;
    lt_iter a, b;
    lt_iter_init(&a, t);
    lt_iter_init(&b, mask);
    while (!lt_iter_done(&a)) {
      int64_t m = lt_iter_run(&a, &b, NULL);
      scalar_t *d = (scalar_t *)a.ptr;
      const uint8_t *mk = (const uint8_t *)b.ptr;
      int64_t ds = a.inner_stride, ms = b.inner_stride;
      for (int64_t j = 0; j < m; j++) {
        if (!mk[j * ms]) continue;
        if (mode == MASK_FILL) d[j * ds] = v;
        else if (mode == MASK_TAKE) { *q = d[j * ds]; q += seqstride; }
        else { d[j * ds] = *q; q += seqstride; }
      }
      lt_iter_advance(&a, m);
      lt_iter_advance(&b, m);
    }
  });
  return 0;
}

int lt_masked_select(lt_tensor *dst, const lt_tensor *src, const lt_tensor *mask) {
  int64_t ones;
  if (lt_ix_check_mask("maskedSelect", mask, lt_tensor_nelement(src), &ones) != 0) return -1;
  if (dst->type != src->type)
    return lt_fail("maskedSelect: result is a %sTensor, source a %sTensor", lt_type_name(dst->type),
                   lt_type_name(src->type));
  if (lt_ix_same_storage(dst, src) || lt_ix_same_storage(dst, mask)) {
    lt_tensor tmp;
    lt_tensor_init(&tmp, dst->type);
    if (lt_masked_select(&tmp, src, mask) != 0) { lt_tensor_clear(&tmp); return -1; }
    return lt_ix_take_result(dst, &tmp);
  }
  if (lt_ix_resize(dst, 1, &ones) != 0) return -1;
  if (ones == 0) return 0;
  /* src is only read (MASK_TAKE) */
  return masked_walk((lt_tensor *)src, mask, MASK_TAKE, lt_tensor_data(dst), dst->stride[0], 0);
}

int lt_masked_fill(lt_tensor *t, const lt_tensor *mask, double value) {
  if (lt_ix_check_mask("maskedFill", mask, lt_tensor_nelement(t), NULL) != 0) return -1;
  return masked_walk(t, mask, MASK_FILL, NULL, 0, value);
}

int lt_masked_copy(lt_tensor *t, const lt_tensor *mask, const lt_tensor *src) {
  int64_t ones, n = lt_tensor_nelement(t);
  if (lt_host_type(mask->type) == LT_BYTE && lt_tensor_nelement(mask) != n)
    return lt_fail("maskedCopy: Number of elements of destination tensor (%lld) != Number of elements in mask (%lld)",
                   (long long)n, (long long)lt_tensor_nelement(mask));
  if (lt_ix_check_mask("maskedCopy", mask, n, &ones) != 0) return -1;
  if (src->type != t->type)
    return lt_fail("maskedCopy: tensor is a %sTensor, source a %sTensor", lt_type_name(t->type), lt_type_name(src->type));
  if (lt_tensor_nelement(src) < ones)
    return lt_fail("maskedCopy: Number of elements of src (%lld) < number of ones in mask (%lld)",
                   (long long)lt_tensor_nelement(src), (long long)ones);
  if (ones == 0) return 0;
  /* src is read in row-major order: make it contiguous (and apart from t) */
  lt_tensor tmp;
  lt_tensor_init(&tmp, src->type);
  const lt_tensor *s_ = src;
  if (!lt_tensor_is_contiguous(src) || lt_ix_same_storage(src, t)) {
    if (lt_tensor_resize(&tmp, src->ndim, src->size) != 0 || lt_tensor_copy(&tmp, src) != 0) {
      lt_tensor_clear(&tmp);
      return -1;
    }
    s_ = &tmp;
  }
  int rc = masked_walk(t, mask, MASK_PUT, lt_tensor_data(s_), 1, 0);
  lt_tensor_clear(&tmp);
  return rc;
}

int lt_nonzero(lt_tensor *dst, const lt_tensor *src) {
  if (lt_host_type(dst->type) != LT_LONG) return lt_fail("nonzero: the result must be a LongTensor");
  if (lt_ix_same_storage(dst, src)) {
    lt_tensor tmp;
    lt_tensor_init(&tmp, LT_LONG);
    if (lt_nonzero(&tmp, src) != 0) { lt_tensor_clear(&tmp); return -1; }
    return lt_ix_take_result(dst, &tmp);
  }
  int64_t count = 0;
  LT_DISPATCH(src->type, {
    lt_iter a;
    lt_iter_init(&a, src);
    while (!lt_iter_done(&a)) {
      int64_t m = a.inner_left, st = a.inner_stride;
      const scalar_t *p = (const scalar_t *)a.ptr;
      for (int64_t j = 0; j < m; j++) count += p[j * st] != 0;
      lt_iter_advance(&a, m);
    }
  });
  int nd = src->ndim;
  int64_t size[2] = {count, nd};
  if (lt_ix_resize(dst, 2, size) != 0) return -1;
  if (count == 0) return 0;
  /* walk src in row-major order keeping the coordinates */
  int64_t *out = (int64_t *)lt_tensor_data(dst);
  int64_t os0 = dst->stride[0], os1 = dst->stride[1], row = 0;
  int64_t coord[LT_MAXDIM] = {0};
  int last = nd - 1;
  int64_t len = src->size[last], lst = src->stride[last];
  LT_DISPATCH(src->type, {
    const scalar_t *base = (const scalar_t *)lt_tensor_data(src);
    for (;;) {
      int64_t off = 0;
      for (int k = 0; k < last; k++) off += coord[k] * src->stride[k];
      for (int64_t j = 0; j < len; j++) {
        if (base[off + j * lst] == 0) continue;
        int64_t *o = out + row * os0;
        for (int k = 0; k < last; k++) o[k * os1] = coord[k] + 1;
        o[last * os1] = j + 1;
        row++;
      }
      int k = last - 1;
      while (k >= 0 && ++coord[k] == src->size[k]) coord[k--] = 0;
      if (k < 0) break;
    }
  });
  return 0;
}
