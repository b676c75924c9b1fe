/* Argument checks and result preparation shared by the math kernels. */
#include "math_common.h"

int lt_math_check_type(const lt_tensor *t, int type, const char *fname, const char *what) {
  /* an index or mask type (a host id) may be the Cuda one of the same elements, as cutorch's CudaLongTensor */
  if (t->type == type || (type < LT_CUDA_BYTE && lt_host_type(t->type) == type &&
                          (type == LT_LONG || type == LT_BYTE)))
    return 0;
  return lt_fail("%s: %s must be a %sTensor, got %sTensor", fname, what, lt_type_name(type),
                 lt_type_name(t->type));
}

int lt_math_check_numel(const char *fname, const lt_tensor *a, const char *an, const lt_tensor *b,
                        const char *bn) {
  int64_t na = lt_tensor_nelement(a), nb = lt_tensor_nelement(b);
  if (na == nb) return 0;
  char sa[200], sb[200];
  return lt_fail("%s: inconsistent tensor size, expected %s %s and %s %s to have the same number of elements, "
                 "but got %lld and %lld elements respectively",
                 fname, an, lt_shape_str(a, sa, sizeof sa), bn, lt_shape_str(b, sb, sizeof sb), (long long)na,
                 (long long)nb);
}

int lt_math_resize_as(lt_tensor *r, const lt_tensor *t) {
  if (r == t || lt_tensor_is_same_size(r, t)) return 0;
  return lt_tensor_resize(r, t->ndim, t->size);
}

static void swap_dims(lt_tensor *t, int i, int j) {
  if (!t) return;
  int64_t s = t->size[i], st = t->stride[i];
  t->size[i] = t->size[j];
  t->stride[i] = t->stride[j];
  t->size[j] = s;
  t->stride[j] = st;
}

void lt_math_memory_order(lt_tensor *a, lt_tensor *b, lt_tensor *c) {
  if ((b && !lt_tensor_is_same_size(a, b)) || (c && !lt_tensor_is_same_size(a, c))) return;
  /* insertion sort of the dimensions: larger strides of a (then b) outside */
  for (int i = 1; i < a->ndim; i++) {
    for (int j = i; j > 0; j--) {
      int64_t so = a->stride[j - 1], si = a->stride[j];
      int swap = so < si || (so == si && b && b->stride[j - 1] < b->stride[j]);
      if (!swap) break;
      swap_dims(a, j - 1, j);
      swap_dims(b, j - 1, j);
      swap_dims(c, j - 1, j);
    }
  }
}

void lt_math_iter_seek(lt_iter *it, int64_t e) {
  if (e <= 0 || it->remaining <= 0) return;
  if (e >= it->remaining) {
    it->remaining = 0;
    return;
  }
  /* the same state lt_iter_advance would reach: outer counters, the pointer
   * inside the current run, what is left of the run */
  int last = it->ndim - 1;
  int64_t rest = e, off = 0;
  for (int d = last; d >= 0; d--) {
    int64_t i = rest % it->size[d];
    rest /= it->size[d];
    if (d < last) it->counter[d] = i;
    else it->inner_left = it->size[d] - i;
    off += i * it->stride[d];
  }
  it->ptr = it->base + off * it->elemsize;
  it->remaining -= e;
}
