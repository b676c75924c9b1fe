/* cutorch's comparisons, elementwise max/min and masked fills on a device: the host side of
 * native/cuda/compare.cu (operands described for the kernel ABI, shapes and types checked, grids sized). */
#include "cuda_ops_internal.h"

/* The kernels' element types: every Cuda type but Half. */
static int check_compare_type(const char *fn, const lt_tensor *t) {
  if (lt_host_type(t->type) != LT_HALF) return 0;
  return lt_fail("%s: not defined for Half tensors", fn);
}

/* One elementwise launch of compare.cu: kernel lt_<name>[s]_<T>_<idx> with the arguments out, x[, y], n[, v][, op]:
 * y when not NULL, the number v (in x's compute type) when has_value, the int op when op >= 0; the s when v stands
 * in for y. T is x's type; out's type is checked by the caller. */
static int compare_launch(const lt_cuops *ops, void *stream, const char *fn, const char *name, lt_tensor *out,
                          const lt_tensor *x, const lt_tensor *y, int has_value, double v, int op) {
  if (check_ops(ops, fn) || check_compare_type(fn, x) || same_count(fn, out, x, "the input") ||
      (y && (same_count(fn, out, y, "the second input") || (y->type != x->type &&
             lt_fail("%s: the second input is a %s tensor, the first a %s one", fn, tname(y->type), tname(x->type))))))
    return -1;
  lt_cu_tensor d[3];
  int64_t off[3];
  const int k = y ? 3 : 2;
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(x, &d[1], &off[1]) ||
      (y && lt_cuops_describe(y, &d[2], &off[2])))
    return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  const unsigned grid = grid_for(ops, n);
  char kernel[64];
  /* a number in place of the second tensor: the kernel's name ends in s */
  snprintf(kernel, sizeof kernel, "lt_%s%s_%s_%s", name, !y && has_value ? "s" : "", tname(x->type),
           index_kind(ops, n, off, k, grid));
  args_t a = {0};
  for (int i = 0; i < k; i++) add_tensor(&a, &d[i]);
  add_count(&a, n);
  if (has_value) add_value(&a, lt_host_type(x->type), v);
  if (op >= 0) add_raw(&a, &op, "i");
  return launch(ops, stream, "compare", kernel, grid, &a);
}

int lt_cuops_compare(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x,
                     const lt_tensor *y, double v) {
  static const char fn[] = "cuda comparison";
  if (op < 0 || op > 5) return lt_fail("%s: no comparison %d (eq ne lt le gt ge are 0..5)", fn, op);
  if (lt_host_type(out->type) != LT_BYTE)
    return lt_fail("%s: the result must be a Byte tensor, not %s", fn, tname(out->type));
  return compare_launch(ops, stream, fn, "cmp", out, x, y, !y, v, op);
}

int lt_cuops_binop(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x,
                   const lt_tensor *y, double v) {
  static const char *const names[] = {"cmax", "cmin", "cpow", "tpow", "fmod", "remainder", "atan2"};
  if (op < 4 || op > 10) return lt_fail("cuda binary operation: no operation %d (4..10 of lt_binop)", op);
  char fn[64];
  snprintf(fn, sizeof fn, "cuda %s", names[op - 4]);
  if (same_type(fn, out, x, "the input")) return -1;
  const int integer = !is_float_type(lt_host_type(x->type));
  if (op == 10 && integer) return check_float_input(fn, x);
  if ((op == 8 || op == 9) && integer) {   /* Torch7 raises an error for a zero divisor: the kernels cannot */
    if (y) return lt_fail("%s: integer types with a tensor divisor are not handled on the device", fn);
    if ((long long)v == 0) return lt_fail("%s: integer division by zero", fn);
  }
  return compare_launch(ops, stream, fn, "binop", out, x, y, !y, v, op);
}

int lt_cuops_unop(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x) {
  static const char fn[] = "cuda unary function";
  if (op != 7 && (op < 10 || op > 24)) return lt_fail("%s: no operation %d (7, 10..24 of lt_unop)", fn, op);
  if (check_float_input(fn, x) || same_type(fn, out, x, "the input")) return -1;
  return compare_launch(ops, stream, fn, "unop", out, x, NULL, 0, 0, op);
}

int lt_cuops_lerp(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, const lt_tensor *y, double w) {
  static const char fn[] = "cuda lerp";
  if (!y) return lt_fail("%s: the end tensor is missing", fn);
  if (check_float_input(fn, x) || same_type(fn, out, x, "the input")) return -1;
  return compare_launch(ops, stream, fn, "lerp", out, x, y, 1, w, -1);
}

int lt_cuops_masked_fill(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *mask, double v) {
  static const char fn[] = "cuda maskedFill";
  if (lt_host_type(mask->type) != LT_BYTE) return lt_fail("%s: the mask must be a Byte tensor, not %s", fn, tname(mask->type));
  if (check_ops(ops, fn) || check_compare_type(fn, out) || same_count(fn, out, mask, "the mask")) return -1;
  lt_cu_tensor d[2];
  int64_t off[2];
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(mask, &d[1], &off[1])) return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  const unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_masked_fill_%s_%s", tname(out->type), index_kind(ops, n, off, 2, grid));
  args_t a = {0};
  add_tensor(&a, &d[0]);
  add_tensor(&a, &d[1]);
  add_count(&a, n);
  add_value(&a, lt_host_type(out->type), v);
  return launch(ops, stream, "compare", kernel, grid, &a);
}

int lt_cuops_tri(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int64_t k, int upper) {
  const char *fn = upper ? "cuda triu" : "cuda tril";
  if (check_ops(ops, fn) || check_compare_type(fn, x) || same_type(fn, out, x, "the input") ||
      same_count(fn, out, x, "the input"))
    return -1;
  if (x->ndim != 2) return lt_fail("%s: a matrix expected, got a %dD tensor", fn, x->ndim);
  lt_cu_tensor d[2];
  int64_t off[2];
  if (lt_cuops_describe(out, &d[0], &off[0]) || lt_cuops_describe(x, &d[1], &off[1])) return -1;
  const int64_t n = lt_tensor_nelement(out);
  if (n == 0) return 0;
  const unsigned grid = grid_for(ops, n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_tri_%s_%s", tname(x->type), index_kind(ops, n, off, 2, grid));
  int up = upper ? 1 : 0;
  args_t a = {0};
  add_tensor(&a, &d[0]);
  add_tensor(&a, &d[1]);
  add_count(&a, n);
  add_count(&a, x->size[1]);
  add_count(&a, k);
  add_raw(&a, &up, "i");
  return launch(ops, stream, "compare", kernel, grid, &a);
}
