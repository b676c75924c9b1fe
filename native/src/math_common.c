/* Argument checks and result preparation shared by the math kernels. */
#include "math_common.h"

const char *lt_math_shape(const lt_tensor *t, char *buf, size_t len) {
  size_t pos = 0;
  pos += snprintf(buf + pos, len - pos, "[");
  for (int d = 0; d < t->ndim && pos < len; d++)
    pos += snprintf(buf + pos, len - pos, d ? " x %lld" : "%lld", (long long)t->size[d]);
  if (pos < len) snprintf(buf + pos, len - pos, "]");
  return buf;
}

int lt_math_check_type(const lt_tensor *t, int type, const char *fname, const char *what) {
  if (t->type == type) return 0;
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
                 fname, an, lt_math_shape(a, sa, sizeof sa), bn, lt_math_shape(b, sb, sizeof sb), (long long)na,
                 (long long)nb);
}

int lt_math_resize_as(lt_tensor *r, const lt_tensor *t) {
  if (r == t || lt_tensor_is_same_size(r, t)) return 0;
  return lt_tensor_resize(r, t->ndim, t->size);
}
