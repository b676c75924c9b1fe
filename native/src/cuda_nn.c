/* cunn's modules on a device: LogSoftMax and SoftMax. Shapes and types checked here with the CPU kernels' rules, inputs made contiguous on
 * the device, native/cuda's kernels started through the launcher (lt_cuda_ops.h). Nothing here touches device
 * memory. */
#include "cuda_ops_internal.h"

/* The device address of t's first element (t checked contiguous), or NULL when t is absent. */
static void *output_data(const lt_tensor *t) {
  lt_cu_tensor d;
  if (!t || lt_cuops_describe(t, &d, NULL)) return NULL;
  return d.data;
}

/* ---------------------------------------------------------------- LogSoftMax, SoftMax */

/* (outer, classes, inner) of (Log)SoftMax's input, by THNN's rule. */
static int lsm_geometry(const char *fn, const lt_tensor *t, int64_t *outer, int64_t *classes, int64_t *inner) {
  char b[256];
  switch (t->ndim) {
    case 1: *outer = 1, *classes = t->size[0], *inner = 1; return 0;
    case 2: *outer = t->size[0], *classes = t->size[1], *inner = 1; return 0;
    case 3: *outer = 1, *classes = t->size[0], *inner = t->size[1] * t->size[2]; return 0;
    case 4: *outer = t->size[0], *classes = t->size[1], *inner = t->size[2] * t->size[3]; return 0;
    default: return lt_fail("%s: 1D, 2D, 3D or 4D tensor expected, got %s", fn, lt_shape_str(t, b, sizeof b));
  }
}

/* (Log)SoftMax's forward (dst = out, x = input) or backward (dst = gradInput, x = gradOutput, y = output):
 * rows of a 1-D or 2-D tensor a block each, the class dimension of a 3-D or 4-D one a thread per position. */
static int softmax_family(const lt_cuops *ops, void *stream, int log, int backward, lt_tensor *dst,
                          const lt_tensor *x, const lt_tensor *y) {
  static const char *const names[2][2] = {{"cuda SoftMax forward", "cuda SoftMax backward"},
                                          {"cuda LogSoftMax forward", "cuda LogSoftMax backward"}};
  const char *fn = names[log != 0][backward != 0];
  const lt_tensor *shape = backward ? y : x;  /* the forward output has the input's shape */
  int64_t outer = 0, classes = 0, inner = 0;
  if (check_ops(ops, fn) || check_float_input(fn, shape) || lsm_geometry(fn, shape, &outer, &classes, &inner) ||
      check_contiguous_output(fn, dst, shape, backward ? "gradInput" : "the output") ||
      (backward && (same_type(fn, y, x, "gradOutput") || same_count(fn, y, x, "gradOutput"))))
    return -1;
  if (lt_tensor_nelement(shape) == 0) return 0;
  const void *px, *py = NULL;
  void *copy1, *copy2 = NULL;
  if (contiguous_input(ops, stream, x, &px, &copy1)) return -1;
  if (backward && contiguous_input(ops, stream, y, &py, &copy2)) return scratch_free(ops, copy1, -1);
  void *pd = output_data(dst);
  args_t a = {0};
  add_raw(&a, &pd, "p");
  add_raw(&a, (void *)&px, "p");
  if (backward) add_raw(&a, (void *)&py, "p");
  add_count(&a, outer);
  add_count(&a, classes);
  if (inner != 1) add_count(&a, inner);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_%s_%s%s_%s", log ? "logsoftmax" : "softmax", inner == 1 ? "" : "spatial_",
           backward ? "bwd" : "fwd", tname(shape->type));
  unsigned grid = inner == 1 ? (unsigned)(outer < block_cap(ops) ? outer : block_cap(ops)) : grid_for(ops, outer * inner);
  int rc = launch(ops, stream, "logsoftmax", kernel, grid, &a);
  rc = scratch_free(ops, copy1, rc);
  return scratch_free(ops, copy2, rc);
}

int lt_cuops_logsoftmax_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input) {
  return softmax_family(ops, stream, 1, 0, out, input, NULL);
}

int lt_cuops_logsoftmax_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                                 const lt_tensor *grad_output, const lt_tensor *output) {
  return softmax_family(ops, stream, 1, 1, grad_input, grad_output, output);
}

int lt_cuops_softmax_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input) {
  return softmax_family(ops, stream, 0, 0, out, input, NULL);
}

int lt_cuops_softmax_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *output) {
  return softmax_family(ops, stream, 0, 1, grad_input, grad_output, output);
}
