/* cat: TH catArray semantics. A tensor with fewer dimensions than the result
 * counts as having trailing dimensions of size 1; empty tensors (no
 * dimension) are skipped; sizes must agree outside the cat dimension. */
#include "index_internal.h"

/* Size of input t in dimension d of the result (TH: 1 past its last
 * dimension, 0 when t is empty). */
static int64_t dim_size(const lt_tensor *t, int d) {
  if (d < t->ndim) return t->size[d];
  return t->ndim > 0 ? 1 : 0;
}

/* The slabs of a device result filled in one batched launch where the inputs are on its GPU (cutorch's
 * catArray): a cat of many small tensors would otherwise cost a launch each. */
static int device_slabs(lt_tensor *dst, lt_tensor **inputs, int n, int cd) {
  lt_tensor *slabs = malloc((size_t)n * sizeof *slabs);
  lt_tensor **to = malloc((size_t)n * sizeof *to);
  const lt_tensor **from = malloc((size_t)n * sizeof *from);
  int m = 0, rc = 0;
  if (!slabs || !to || !from) rc = lt_fail("cat: out of host memory");
  int64_t offset = 0;
  for (int j = 0; rc == 0 && j < n; j++) {
    if (inputs[j]->ndim == 0) continue;
    int64_t s = dim_size(inputs[j], cd);
    slabs[m] = lt_ix_narrow(dst, cd, offset, s);
    to[m] = &slabs[m], from[m] = inputs[j], m++;
    offset += s;
  }
  if (rc == 0) rc = lt_cuda_tensor_copy_many(to, from, m);
  free(slabs), free(to), free(from);
  return rc;
}

int lt_cat(lt_tensor *dst, lt_tensor **inputs, int n, int dim) {
  if (n <= 0) return lt_fail("cat: invalid number of inputs %d", n);
  if (dim < -1) return lt_fail("cat: invalid dimension %d", dim + 1);
  int maxdim = dim + 1;
  for (int j = 0; j < n; j++) {
    if (inputs[j]->type != dst->type)
      return lt_fail("cat: expected %sTensor inputs, input %d is a %sTensor", lt_type_name(dst->type), j + 1,
                     lt_type_name(inputs[j]->type));
    if (inputs[j]->ndim > maxdim) maxdim = inputs[j]->ndim;
  }
  int cd = dim >= 0 ? dim : (maxdim > 0 ? maxdim - 1 : 0);
  if (maxdim > LT_MAXDIM) return lt_fail("cat: tensors have at most %d dimensions, got %d", LT_MAXDIM, maxdim);

  int64_t size[LT_MAXDIM];
  int all_empty = 1;
  for (int d = 0; d < maxdim; d++) {
    int64_t s = dim_size(inputs[0], d);
    for (int j = 1; j < n; j++) {
      int64_t sj = dim_size(inputs[j], d);
      if (d == cd) {
        s += sj;
      } else if (s != sj && s && sj) {
        return lt_fail("cat: inconsistent tensor sizes: dimension %d has size %lld in one input and %lld in input %d",
                       d + 1, (long long)s, (long long)sj, j + 1);
      } else if (!s) {
        s = sj;
      }
    }
    all_empty = all_empty && !s;
    size[d] = s;
  }
  if (all_empty) return 0;

  for (int j = 0; j < n; j++) {
    if (lt_ix_same_storage(dst, inputs[j])) {
      lt_tensor tmp;
      lt_tensor_init(&tmp, dst->type);
      if (lt_cat(&tmp, inputs, n, dim) != 0) { lt_tensor_clear(&tmp); return -1; }
      return lt_ix_take_result(dst, &tmp);
    }
  }
  if (lt_ix_resize(dst, maxdim, size) != 0) return -1;
  /* copy each input into its slab of the result (a contiguous memmove when
   * both are contiguous, e.g. cat along the first dimension) */
  if (lt_tensor_is_device(dst)) return device_slabs(dst, inputs, n, cd);
  int64_t offset = 0;
  for (int j = 0; j < n; j++) {
    if (inputs[j]->ndim == 0) continue;
    int64_t s = dim_size(inputs[j], cd);
    lt_tensor slab = lt_ix_narrow(dst, cd, offset, s);
    if (lt_tensor_copy(&slab, inputs[j]) != 0) return -1;
    offset += s;
  }
  return 0;
}
