/* cunn's modules on a device: LogSoftMax and SoftMax, BatchNormalization, SpatialMaxPooling and
 * SpatialAveragePooling. Shapes and types checked here with the CPU kernels' rules, inputs made contiguous on
 * the device, native/cuda's kernels started through the launcher (lt_cuda_ops.h). Nothing here touches device
 * memory. */
#include "cuda_ops_internal.h"

/* Device scratch copies made for one call, freed together. */
typedef struct {
  void *p[8];
  int n;
} copies_t;

/* t's data on the device, contiguous (a scratch copy when t is not), or NULL when t is absent. */
static int input_data(const lt_cuops *ops, void *stream, copies_t *c, const lt_tensor *t, const void **data) {
  *data = NULL;
  if (!t) return 0;
  void *copy;
  if (contiguous_input(ops, stream, t, data, &copy)) return -1;
  if (copy) c->p[c->n++] = copy;
  return 0;
}

static int copies_free(const lt_cuops *ops, copies_t *c, int rc) {
  for (int i = 0; i < c->n; i++) rc = scratch_free(ops, c->p[i], rc);
  return rc;
}

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

/* ---------------------------------------------------------------- BatchNormalization */

/* The input as (N, C, S), S the product of the dimensions after the features (nn_batchnorm.c's rule). */
static int bn_geometry(const char *fn, const lt_tensor *input, int64_t *N, int64_t *C, int64_t *S) {
  char b[256];
  if (check_float_input(fn, input)) return -1;
  if (input->ndim < 2)
    return lt_fail("%s: 2D or 4D input tensor expected (batch x features) but got: %s", fn,
                   lt_shape_str(input, b, sizeof b));
  *N = input->size[0], *C = input->size[1], *S = 1;
  for (int d = 2; d < input->ndim; d++) *S *= input->size[d];
  return 0;
}

/* A per-feature vector: C elements of input's type; an output must also be contiguous. Absent (NULL) is
 * accepted unless needed. */
static int bn_vector(const char *fn, const lt_tensor *v, const lt_tensor *input, int64_t C, const char *what,
                     int needed, int output) {
  char b[256];
  if (!v) return needed ? lt_fail("%s: %s is needed", fn, what) : 0;
  if (v->type != input->type || lt_tensor_nelement(v) != C)
    return lt_fail("%s: %s should be a %s tensor of %lld elements, not a %s one of %s", fn, what, tname(input->type),
                   (long long)C, tname(v->type), lt_shape_str(v, b, sizeof b));
  if (output && !lt_tensor_is_contiguous(v)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

/* The block-per-feature kernels' grid. */
static unsigned feature_grid(const lt_cuops *ops, int64_t C) {
  return (unsigned)(C < 1 ? 1 : C < block_cap(ops) ? C : block_cap(ops));
}

/* The chunks per feature of the reducing kernels (batchnorm.cu): enough blocks to fill the device (the launcher's
 * block cap over the C features), none with fewer than 8 values per thread. */
static int64_t bn_chunks(const lt_cuops *ops, int64_t C, int64_t n) {
  const int64_t per_block = (int64_t)threads(ops) * 8, most = block_cap(ops) / (C > 0 ? C : 1);
  int64_t P = (n + per_block - 1) / per_block;
  if (P > most) P = most;
  return P < 1 ? 1 : P;
}

/* The grid of the chunk kernels: a block per chunk up to the cap (they loop over the rest). */
static unsigned bn_grid(const lt_cuops *ops, int64_t C, int64_t P) {
  const int64_t blocks = C * P;
  return (unsigned)(blocks < 1 ? 1 : blocks < block_cap(ops) ? blocks : block_cap(ops));
}

/* Bytes of the partials: k per chunk in the compute type (double for Double, float otherwise). */
static int64_t bn_partial_bytes(const lt_tensor *input, int64_t C, int64_t P, int k) {
  return C * P * k * (lt_host_type(input->type) == LT_DOUBLE ? 8 : 4);
}

/* The chunk kernels' geometry arguments, which all of them take in this order: N, C, S, P. */
static void bn_add_geometry(args_t *a, int64_t N, int64_t C, int64_t S, int64_t P) {
  add_count(a, N);
  add_count(a, C);
  add_count(a, S);
  add_count(a, P);
}

/* One launch of a batchnorm.cu chunk kernel, "lt_batchnorm_<what>_<T>". */
static int bn_launch(const lt_cuops *ops, void *stream, const char *what, const lt_tensor *input, unsigned grid,
                     args_t *a) {
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_batchnorm_%s_%s", what, tname(input->type));
  return launch(ops, stream, "batchnorm", kernel, grid, a);
}

int lt_cuops_batchnorm_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                               const lt_tensor *weight, const lt_tensor *bias, lt_tensor *running_mean,
                               lt_tensor *running_var, lt_tensor *save_mean, lt_tensor *save_std, int train,
                               double momentum, double eps) {
  static const char fn[] = "cuda BatchNormalization forward";
  int64_t N = 0, C = 0, S = 0;
  if (check_ops(ops, fn) || bn_geometry(fn, input, &N, &C, &S) ||
      check_contiguous_output(fn, out, input, "the output") || bn_vector(fn, weight, input, C, "weight", 0, 0) ||
      bn_vector(fn, bias, input, C, "bias", 0, 0) ||
      bn_vector(fn, running_mean, input, C, "running_mean", !train, train) ||
      bn_vector(fn, running_var, input, C, "running_var", !train, train) ||
      (train && (bn_vector(fn, save_mean, input, C, "save_mean", 1, 1) ||
                 bn_vector(fn, save_std, input, C, "save_std", 1, 1))))
    return -1;
  if (C == 0 || (!train && N * S == 0)) return 0;
  copies_t c = {{0}, 0};
  const void *in, *w, *b, *rm = NULL, *rv = NULL;
  if (input_data(ops, stream, &c, input, &in) || input_data(ops, stream, &c, weight, &w) ||
      input_data(ops, stream, &c, bias, &b) ||
      (!train && (input_data(ops, stream, &c, running_mean, &rm) || input_data(ops, stream, &c, running_var, &rv))))
    return copies_free(ops, &c, -1);
  void *po = output_data(out);
  const int host = lt_host_type(input->type);
  const int64_t P = bn_chunks(ops, C, N * S);
  const unsigned grid = bn_grid(ops, C, P);
  if (!train) {
    args_t a = {0};
    add_raw(&a, &po, "p");
    add_raw(&a, (void *)&in, "p");
    add_raw(&a, (void *)&w, "p");
    add_raw(&a, (void *)&b, "p");
    add_raw(&a, (void *)&rm, "p");
    add_raw(&a, (void *)&rv, "p");
    bn_add_geometry(&a, N, C, S, P);
    add_value(&a, host, eps);
    return copies_free(ops, &c, bn_launch(ops, stream, "fwd_eval", input, grid, &a));
  }
  /* training: each chunk's mean and squared deviations, then the statistics and the output */
  void *part = NULL;
  if (scratch(ops, stream, bn_partial_bytes(input, C, P, 2), &part)) return copies_free(ops, &c, -1);
  args_t a1 = {0}, a2 = {0};
  add_raw(&a1, &part, "p");
  add_raw(&a1, (void *)&in, "p");
  void *sm = output_data(save_mean), *ss = output_data(save_std);
  void *orm = output_data(running_mean), *orv = output_data(running_var);
  add_raw(&a2, &po, "p");
  add_raw(&a2, &sm, "p");
  add_raw(&a2, &ss, "p");
  add_raw(&a2, &orm, "p");
  add_raw(&a2, &orv, "p");
  add_raw(&a2, &part, "p");
  add_raw(&a2, (void *)&in, "p");
  add_raw(&a2, (void *)&w, "p");
  add_raw(&a2, (void *)&b, "p");
  bn_add_geometry(&a1, N, C, S, P);
  bn_add_geometry(&a2, N, C, S, P);
  add_value(&a2, host, momentum);
  add_value(&a2, host, eps);
  int rc = bn_launch(ops, stream, "stats", input, grid, &a1);
  if (rc == 0) rc = bn_launch(ops, stream, "fwd_train", input, grid, &a2);
  rc = scratch_free(ops, part, rc);
  return copies_free(ops, &c, rc);
}

int lt_cuops_batchnorm_backward(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_input, lt_tensor *grad_weight,
                                lt_tensor *grad_bias, const lt_tensor *weight, const lt_tensor *running_mean,
                                const lt_tensor *running_var, const lt_tensor *save_mean, const lt_tensor *save_std,
                                int train, double scale, double eps) {
  static const char fn[] = "cuda BatchNormalization backward";
  char b1[256], b2[256];
  int64_t N = 0, C = 0, S = 0;
  if (check_ops(ops, fn) || bn_geometry(fn, input, &N, &C, &S)) return -1;
  if (!grad_output || grad_output->type != input->type || !lt_tensor_is_same_size(input, grad_output))
    return lt_fail("%s: gradOutput %s should be a %s tensor of the input's size %s", fn,
                   grad_output ? lt_shape_str(grad_output, b1, sizeof b1) : "(none)", tname(input->type),
                   lt_shape_str(input, b2, sizeof b2));
  const lt_tensor *mean = train ? save_mean : running_mean, *std = train ? save_std : running_var;
  if ((grad_input && check_contiguous_output(fn, grad_input, input, "gradInput")) ||
      bn_vector(fn, grad_weight, input, C, "gradWeight", 0, 1) || bn_vector(fn, grad_bias, input, C, "gradBias", 0, 1) ||
      bn_vector(fn, weight, input, C, "weight", 0, 0) ||
      bn_vector(fn, mean, input, C, train ? "save_mean" : "running_mean", 1, 0) ||
      bn_vector(fn, std, input, C, train ? "save_std" : "running_var", 1, 0))
    return -1;
  if (C == 0 || (!grad_input && !grad_weight && !grad_bias)) return 0;
  copies_t c = {{0}, 0};
  const void *in, *go, *w, *m, *s;
  if (input_data(ops, stream, &c, input, &in) || input_data(ops, stream, &c, grad_output, &go) ||
      input_data(ops, stream, &c, weight, &w) || input_data(ops, stream, &c, mean, &m) ||
      input_data(ops, stream, &c, std, &s))
    return copies_free(ops, &c, -1);
  /* the sums of dy and (x - mean) dy per chunk, where the gradient asks for them: in training, or for the
   * parameters (evaluation's gradInput alone is elementwise) */
  const int sums = train || grad_weight || grad_bias;
  const int64_t P = bn_chunks(ops, C, N * S);
  const unsigned grid = bn_grid(ops, C, P);
  void *part = NULL;
  int rc = 0;
  if (sums && scratch(ops, stream, bn_partial_bytes(input, C, P, 2), &part)) return copies_free(ops, &c, -1);
  if (sums) {
    args_t a = {0};
    add_raw(&a, &part, "p");
    add_raw(&a, (void *)&in, "p");
    add_raw(&a, (void *)&go, "p");
    add_raw(&a, (void *)&m, "p");
    bn_add_geometry(&a, N, C, S, P);
    rc = bn_launch(ops, stream, "grad_sums", input, grid, &a);
  }
  if (rc == 0) {
    void *gi = output_data(grad_input), *gw = output_data(grad_weight), *gb = output_data(grad_bias);
    int tr = train ? 1 : 0;
    args_t a = {0};
    add_raw(&a, &gi, "p");
    add_raw(&a, &gw, "p");
    add_raw(&a, &gb, "p");
    add_raw(&a, &part, "p");
    add_raw(&a, (void *)&in, "p");
    add_raw(&a, (void *)&go, "p");
    add_raw(&a, (void *)&w, "p");
    add_raw(&a, (void *)&m, "p");
    add_raw(&a, (void *)&s, "p");
    bn_add_geometry(&a, N, C, S, P);
    add_raw(&a, &tr, "i");
    add_value(&a, lt_host_type(input->type), scale);
    add_value(&a, lt_host_type(input->type), eps);
    rc = bn_launch(ops, stream, "bwd", input, grid, &a);
  }
  rc = scratch_free(ops, part, rc);
  return copies_free(ops, &c, rc);
}

/* ---------------------------------------------------------------- SpatialMaxPooling, SpatialAveragePooling */

/* A pooling call's operands checked: input 3-D or 4-D (planes, iH, iW), the output size by the CPU module's rule
 * (nn_pooling.c), `pooled` (output, indices or gradOutput) of the input's leading dimensions and that size.
 * geo gets the kernels' geometry arguments: planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW. */
static int pool_operands(const char *fn, const lt_tensor *input, const lt_tensor *pooled, const char *what,
                         int same_type_as_input, const int *kp, int ceil_mode, long long geo[11]) {
  const int kW = kp[0], kH = kp[1], dW = kp[2], dH = kp[3], padW = kp[4], padH = kp[5];
  int64_t oH, oW;
  if (check_float_input(fn, input) ||
      lt_nn_SpatialPooling_outputSize(fn, input, kW, kH, dW, dH, padW, padH, ceil_mode, &oH, &oW))
    return -1;
  const int nd = input->ndim;
  char b1[256], b2[256];
  int ok = pooled->ndim == nd && (!same_type_as_input || pooled->type == input->type);
  for (int d = 0; ok && d < nd - 2; d++) ok = pooled->size[d] == input->size[d];
  ok = ok && pooled->size[nd - 2] == oH && pooled->size[nd - 1] == oW;
  if (!ok)
    return lt_fail("%s: %s %s (%s) does not match the input %s pooled to %lld x %lld", fn, what,
                   lt_shape_str(pooled, b1, sizeof b1), tname(pooled->type), lt_shape_str(input, b2, sizeof b2),
                   (long long)oH, (long long)oW);
  long long planes = input->size[nd - 3] * (nd == 4 ? input->size[0] : 1);
  long long g[11] = {planes, input->size[nd - 2], input->size[nd - 1], oH, oW, kH, kW, dH, dW, padH, padW};
  memcpy(geo, g, sizeof g);
  return 0;
}

static void add_geometry(args_t *a, const long long geo[11]) {
  for (int k = 0; k < 11; k++) add_count(a, geo[k]);
}

static int check_indices(const char *fn, const lt_tensor *indices) {
  if (lt_host_type(indices->type) != LT_LONG)
    return lt_fail("%s: indices must be a CudaLongTensor, not a %s one", fn, tname(indices->type));
  return 0;
}

int lt_cuops_maxpool_forward(const lt_cuops *ops, void *stream, lt_tensor *out, lt_tensor *indices,
                             const lt_tensor *input, int kW, int kH, int dW, int dH, int padW, int padH,
                             int ceil_mode) {
  static const char fn[] = "cuda SpatialMaxPooling forward";
  const int kp[6] = {kW, kH, dW, dH, padW, padH};
  long long geo[11];
  if (check_ops(ops, fn) || pool_operands(fn, input, out, "the output", 1, kp, ceil_mode, geo) ||
      check_indices(fn, indices) || pool_operands(fn, input, indices, "indices", 0, kp, ceil_mode, geo))
    return -1;
  if (!lt_tensor_is_contiguous(out) || !lt_tensor_is_contiguous(indices))
    return lt_fail("%s: the output and indices must be contiguous", fn);
  const int64_t n = geo[0] * geo[3] * geo[4];
  if (n == 0) return 0;
  copies_t c = {{0}, 0};
  const void *in;
  if (input_data(ops, stream, &c, input, &in)) return copies_free(ops, &c, -1);
  void *po = output_data(out), *pi = output_data(indices);
  args_t a = {0};
  add_raw(&a, &po, "p");
  add_raw(&a, &pi, "p");
  add_raw(&a, (void *)&in, "p");
  add_geometry(&a, geo);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_maxpool_fwd_%s", tname(input->type));
  return copies_free(ops, &c, launch(ops, stream, "pooling", kernel, grid_for(ops, n), &a));
}

int lt_cuops_maxpool_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *indices, const lt_tensor *input, int kW,
                              int kH, int dW, int dH, int padW, int padH, int ceil_mode) {
  static const char fn[] = "cuda SpatialMaxPooling backward";
  const int kp[6] = {kW, kH, dW, dH, padW, padH};
  long long geo[11];
  if (check_ops(ops, fn) || pool_operands(fn, input, grad_output, "gradOutput", 1, kp, ceil_mode, geo) ||
      check_indices(fn, indices) || pool_operands(fn, input, indices, "indices", 0, kp, ceil_mode, geo) ||
      check_contiguous_output(fn, grad_input, input, "gradInput"))
    return -1;
  const int64_t n = lt_tensor_nelement(input);
  if (n == 0) return 0;
  copies_t c = {{0}, 0};
  const void *go, *ind;
  if (input_data(ops, stream, &c, grad_output, &go) || input_data(ops, stream, &c, indices, &ind))
    return copies_free(ops, &c, -1);
  void *gi = output_data(grad_input);
  args_t a = {0};
  add_raw(&a, &gi, "p");
  add_raw(&a, (void *)&go, "p");
  add_raw(&a, (void *)&ind, "p");
  add_geometry(&a, geo);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_maxpool_bwd_%s", tname(input->type));
  return copies_free(ops, &c, launch(ops, stream, "pooling", kernel, grid_for(ops, n), &a));
}

/* SpatialAveragePooling's forward (dst = out, src = input) or backward (dst = gradInput, src = gradOutput). */
static int avgpool(const lt_cuops *ops, void *stream, int backward, lt_tensor *dst, const lt_tensor *src,
                   const lt_tensor *input, const int *kp, int ceil_mode, int count_include_pad) {
  const char *fn = backward ? "cuda SpatialAveragePooling backward" : "cuda SpatialAveragePooling forward";
  long long geo[11];
  if (check_ops(ops, fn)) return -1;
  if (backward ? pool_operands(fn, input, src, "gradOutput", 1, kp, ceil_mode, geo) ||
                     check_contiguous_output(fn, dst, input, "gradInput")
               : pool_operands(fn, input, dst, "the output", 1, kp, ceil_mode, geo))
    return -1;
  if (!backward && !lt_tensor_is_contiguous(dst)) return lt_fail("%s: the output must be contiguous", fn);
  const int64_t n = backward ? lt_tensor_nelement(input) : geo[0] * geo[3] * geo[4];
  if (n == 0) return 0;
  copies_t c = {{0}, 0};
  const void *ps;
  if (input_data(ops, stream, &c, src, &ps)) return copies_free(ops, &c, -1);
  void *pd = output_data(dst);
  int include = count_include_pad ? 1 : 0;
  args_t a = {0};
  add_raw(&a, &pd, "p");
  add_raw(&a, (void *)&ps, "p");
  add_geometry(&a, geo);
  add_raw(&a, &include, "i");
  char kernel[64];
  snprintf(kernel, sizeof kernel, "lt_avgpool_%s_%s", backward ? "bwd" : "fwd", tname(input->type));
  return copies_free(ops, &c, launch(ops, stream, "pooling", kernel, grid_for(ops, n), &a));
}

int lt_cuops_avgpool_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input, int kW,
                             int kH, int dW, int dH, int padW, int padH, int ceil_mode, int count_include_pad) {
  const int kp[6] = {kW, kH, dW, dH, padW, padH};
  return avgpool(ops, stream, 0, out, input, input, kp, ceil_mode, count_include_pad);
}

int lt_cuops_avgpool_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *input, int kW, int kH, int dW, int dH,
                              int padW, int padH, int ceil_mode, int count_include_pad) {
  const int kp[6] = {kW, kH, dW, dH, padW, padH};
  return avgpool(ops, stream, 1, grad_input, grad_output, input, kp, ceil_mode, count_include_pad);
}

/* ---------------------------------------------------------------- nn's elementwise activations */

/* Every tensor given (non-NULL, with a storage) in device dev's memory, else an error naming the odd one. */
static int on_device(const char *fn, int dev, const lt_tensor *t, const char *what) {
  if (!t || !t->storage) return 0;
  if (!lt_tensor_is_device(t)) return lt_fail("%s: %s is in host memory, the input on GPU %d", fn, what, dev + 1);
  if (t->storage->device != dev)
    return lt_fail("%s: its tensors are on different GPUs (input on GPU %d, %s on GPU %d): move them to one", fn,
                   dev + 1, what, t->storage->device + 1);
  return 0;
}

/* t resized to (ndim, sizes), a new storage (if it needs one) on device dev whichever device is current. */
static int resize_on(lt_tensor *t, int ndim, const int64_t *sizes, int dev) {
  int current = lt_cuda_storage_device();
  if (lt_cuda_storage_set_device(dev)) return -1;
  int rc = lt_tensor_resize(t, ndim, sizes);
  if (lt_cuda_storage_set_device(current)) rc = -1;
  return rc;
}

/* The least and greatest value of a device tensor (two device reductions), for the CPU kernels' range checks. */
static int value_range(const lt_cuops *ops, const lt_tensor *t, double *lo, double *hi) {
  return lt_cuops_reduce(ops, NULL, "min", t, 0, lo) || lt_cuops_reduce(ops, NULL, "max", t, 0, hi) ? -1 : 0;
}

/* The ops of the GPU holding input, for a layer defined for Float and Double, and Half where its kernels have a
 * Half instantiation (half). (Its caller checked that input is in GPU memory and gradOutput, if any, of its type.) */
static const lt_cuops *layer_ops(const char *fn, const lt_tensor *input, int half) {
  const int type = lt_host_type(input->type);
  if (type != LT_FLOAT && type != LT_DOUBLE && !(half && type == LT_HALF)) {
    lt_fail("%s: Float and Double%s only, not %s", fn, half ? " and Half" : "", tname(type));
    return NULL;
  }
  return lt_cuda_storage_ops(input->storage->device);
}

/* nn_pointwise.c's entries for tensors in GPU memory: its contract (inplace writes into input / gradOutput and
 * makes output / gradInput a view of it; else they are resized on the input's GPU). */
int lt_cuda_nn_pointwise_updateOutput(int op, lt_tensor *input, lt_tensor *output, double a, double b, int inplace) {
  static const char fn[] = "pointwise_updateOutput";
  int dev = input->storage->device;
  const lt_cuops *ops = lt_cuda_storage_ops(dev);
  if (!ops || on_device(fn, dev, output, "output")) return -1;
  if (inplace) return lt_cuops_nn_pointwise_forward(ops, NULL, op, input, input, a, b) || lt_tensor_set(output, input);
  return resize_on(output, input->ndim, input->size, dev) || lt_cuops_nn_pointwise_forward(ops, NULL, op, output, input, a, b);
}

int lt_cuda_nn_pointwise_updateGradInput(int op, lt_tensor *ref, lt_tensor *gradOutput, lt_tensor *gradInput,
                                         double a, double b, int inplace) {
  static const char fn[] = "pointwise_updateGradInput";
  int dev = gradOutput->storage->device;
  const lt_cuops *ops = lt_cuda_storage_ops(dev);
  if (!ops || on_device(fn, dev, ref, "the input or output") || on_device(fn, dev, gradInput, "gradInput")) return -1;
  if (inplace)
    return lt_cuops_nn_pointwise_backward(ops, NULL, op, gradOutput, gradOutput, ref, a, b) ||
           lt_tensor_set(gradInput, gradOutput);
  return resize_on(gradInput, gradOutput->ndim, gradOutput->size, dev) ||
         lt_cuops_nn_pointwise_backward(ops, NULL, op, gradInput, gradOutput, ref, a, b);
}

/* nn_pointwise_prelu.c's entries for tensors in GPU memory, its checks passed (geometry outer x planes x inner):
 * pass 0 the forward into result (resized as input), 1 gradInput into result, 2 scale * the weight's gradient added
 * into result (gradWeight, any stride). nn_pointwise.cu's PReLU kernels, Float, Double and Half. */
int lt_cuda_nn_prelu(const char *fn, int pass, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                     const lt_tensor *weight, int64_t outer, int64_t planes, int64_t inner, double scale) {
  const int dev = input->storage->device;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, weight, "weight") ||
      on_device(fn, dev, result, pass == 2 ? "gradWeight" : pass ? "gradInput" : "output") ||
      (pass < 2 && resize_on(result, input->ndim, input->size, dev)))
    return -1;
  const int64_t n = outer * planes * inner;
  if (n == 0) return 0;
  copies_t c = {{0}, 0};
  const void *x, *go = NULL, *w = NULL;
  if (input_data(ops, NULL, &c, input, &x) || input_data(ops, NULL, &c, pass ? gradOutput : NULL, &go) ||
      input_data(ops, NULL, &c, pass < 2 ? weight : NULL, &w))
    return copies_free(ops, &c, -1);
  void *dst = lt_tensor_data(result);
  const int type = lt_host_type(input->type);
  args_t a = {0};
  add_raw(&a, &dst, "p");
  int64_t gw_stride = 1;   /* (gradWeight: a vector of any stride, in its one dimension longer than 1) */
  for (int d = 0; d < result->ndim; d++)
    if (result->size[d] != 1) gw_stride = result->stride[d];
  if (pass == 2) add_count(&a, gw_stride);
  if (pass) add_raw(&a, (void *)&go, "p");
  add_raw(&a, (void *)&x, "p");
  if (pass < 2) {
    add_raw(&a, (void *)&w, "p");
    add_count(&a, n);
  } else {
    add_count(&a, outer);
  }
  add_count(&a, planes);
  add_count(&a, inner);
  if (pass == 2) add_value(&a, type, scale);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_prelu_%s_%s", pass == 0 ? "fwd" : pass == 1 ? "bwd" : "acc", tname(type));
  int rc = launch(ops, NULL, "nn_pointwise", kernel, pass == 2 ? feature_grid(ops, planes) : grid_for(ops, n), &a);
  return copies_free(ops, &c, rc);
}

/* nn.GatedLinearUnit with its input in GPU memory, split in halves along dim (0-based, of even size): the forward
 * (gradOutput NULL) into result, the input's size with dim halved, or the backward into result (the input's size).
 * nn_pointwise.cu's GLU kernels, Float, Double and Half, on a contiguous copy of the input where it is not. */
int lt_cuda_nn_glu(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, int dim) {
  const char *fn = gradOutput ? "GatedLinearUnit_updateGradInput" : "GatedLinearUnit_updateOutput";
  char b[256];
  if (!input || !result || !lt_tensor_is_device(input)) return lt_fail("%s: a tensor in GPU memory expected", fn);
  const int dev = input->storage->device;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, result, "the result")) return -1;
  if (dim < 0 || dim >= input->ndim || input->size[dim] % 2 != 0)
    return lt_fail("%s: dim %d of the input %s does not split in halves", fn, dim + 1,
                   lt_shape_str(input, b, sizeof b));
  int64_t sizes[LT_MAXDIM], outer = 1, inner = 1;
  for (int d = 0; d < input->ndim; d++) {
    sizes[d] = input->size[d];
    if (d < dim) outer *= input->size[d];
    if (d > dim) inner *= input->size[d];
  }
  const int64_t h = input->size[dim] / 2;
  sizes[dim] = h;
  if (gradOutput && (gradOutput->type != input->type || lt_tensor_nelement(gradOutput) != outer * h * inner))
    return lt_fail("%s: gradOutput %s should be a %s tensor of the output's %lld elements", fn,
                   lt_shape_str(gradOutput, b, sizeof b), tname(input->type), (long long)(outer * h * inner));
  if (gradOutput ? resize_on(result, input->ndim, input->size, dev) : resize_on(result, input->ndim, sizes, dev))
    return -1;
  if (outer * h * inner == 0) return 0;
  copies_t c = {{0}, 0};
  const void *x, *go = NULL;
  if (input_data(ops, NULL, &c, input, &x) || input_data(ops, NULL, &c, gradOutput, &go))
    return copies_free(ops, &c, -1);
  void *dst = lt_tensor_data(result);
  args_t a = {0};
  add_raw(&a, &dst, "p");
  if (gradOutput) add_raw(&a, (void *)&go, "p");
  add_raw(&a, (void *)&x, "p");
  add_count(&a, outer);
  add_count(&a, h);
  add_count(&a, inner);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_glu_%s_%s", gradOutput ? "bwd" : "fwd", tname(input->type));
  return copies_free(ops, &c, launch(ops, NULL, "nn_pointwise", kernel, grid_for(ops, outer * h * inner), &a));
}

/* ---------------------------------------------------------------- layers with a weight and a bias */

/* The ops of a weight-and-bias layer's pass (0 forward, 1 gradInput, 2 the parameters' gradients into result and
 * result2) with its operands present and on the input's GPU; NULL with the reason. */
static const lt_cuops *param_layer_ops(const char *fn, int pass, const lt_tensor *input, const lt_tensor *gradOutput,
                                       const lt_tensor *result, const lt_tensor *result2, const lt_tensor *weight,
                                       const lt_tensor *bias) {
  if (!input || !result || !lt_tensor_is_device(input) || (pass > 0 && !gradOutput) || (pass == 2 && !result2) ||
      (pass < 2 && !weight) || (pass == 0 && !bias)) {
    lt_fail("%s: device tensors expected", fn);
    return NULL;
  }
  const int dev = input->storage->device;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, result, "the result") ||
      on_device(fn, dev, result2, "gradBias") || on_device(fn, dev, weight, "weight") ||
      on_device(fn, dev, bias, "bias"))
    return NULL;
  return ops;
}

/* The pass's weight and bias (or gradWeight and gradBias, contiguous) of nweight and nbias elements, gradOutput of
 * nout, all of the input's type; the result sized: out_sizes (4-D) for the forward, the input's for gradInput. */
static int param_layer_sized(const char *fn, int pass, const lt_tensor *input, const lt_tensor *gradOutput,
                             lt_tensor *result, const lt_tensor *result2, const lt_tensor *weight,
                             const lt_tensor *bias, int64_t nweight, int64_t nbias, int64_t nout,
                             const int64_t out_sizes[4]) {
  char b[256];
  const lt_tensor *vecs[2] = {pass == 2 ? result : weight, pass == 2 ? result2 : pass == 0 ? bias : NULL};
  for (int i = 0; i < 2; i++)
    if (vecs[i] && (vecs[i]->type != input->type || lt_tensor_nelement(vecs[i]) != (i ? nbias : nweight) ||
                    (pass == 2 && !lt_tensor_is_contiguous(vecs[i]))))
      return lt_fail("%s: %s should be a%s %s tensor of %lld elements, got %s", fn,
                     i ? (pass == 2 ? "gradBias" : "bias") : (pass == 2 ? "gradWeight" : "weight"),
                     pass == 2 ? " contiguous" : "", tname(input->type), (long long)(i ? nbias : nweight),
                     lt_shape_str(vecs[i], b, sizeof b));
  if (gradOutput && (gradOutput->type != input->type || lt_tensor_nelement(gradOutput) != nout))
    return lt_fail("%s: gradOutput %s should be a %s tensor of %lld elements", fn,
                   lt_shape_str(gradOutput, b, sizeof b), tname(input->type), (long long)nout);
  const int dev = input->storage->device;
  return (pass == 0 && resize_on(result, 4, out_sizes, dev)) || (pass == 1 && resize_on(result, 4, input->size, dev))
             ? -1
             : 0;
}

/* The launch of a layer's kernel lt_<family>_<fwd|bwd|acc>_<T> in `file`, its operands checked and result(s) sized:
 * pass 0 (y, x, w, b), 1 (gradIn, gradOut, w), 2 (gradWeight, gradBias, gradOut, x), then the geometry counts, the
 * int *flag where given, and scale for pass 2; contiguous copies of the operands that are not contiguous. A thread
 * per element of n, or with blocks (pass 2 of the block-per-index kernels) a block per one of n indices. */
static int param_layer_launch(const lt_cuops *ops, const char *file, const char *family, int pass,
                              const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result,
                              lt_tensor *result2, const lt_tensor *weight, const lt_tensor *bias,
                              const int64_t *counts, int ncounts, const int *flag, double scale, int64_t n,
                              int blocks) {
  copies_t c = {{0}, 0};
  const void *x = NULL, *go = NULL, *w = NULL, *bb = NULL;
  if (input_data(ops, NULL, &c, pass == 1 ? NULL : input, &x) || input_data(ops, NULL, &c, gradOutput, &go) ||
      input_data(ops, NULL, &c, pass < 2 ? weight : NULL, &w) ||
      input_data(ops, NULL, &c, pass == 0 ? bias : NULL, &bb))
    return copies_free(ops, &c, -1);
  void *dst = lt_tensor_data(result), *dst2 = pass == 2 && result2 ? lt_tensor_data(result2) : NULL;
  args_t a = {0};
  add_raw(&a, &dst, "p");
  if (pass == 2) add_raw(&a, &dst2, "p");
  if (pass > 0) add_raw(&a, (void *)&go, "p");
  if (pass != 1) add_raw(&a, (void *)&x, "p");
  if (pass < 2) add_raw(&a, (void *)&w, "p");
  if (pass == 0) add_raw(&a, (void *)&bb, "p");
  for (int i = 0; i < ncounts; i++) add_count(&a, counts[i]);
  if (flag) add_raw(&a, (void *)flag, "i");
  if (pass == 2) add_value(&a, lt_host_type(input->type), scale);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", family, pass == 0 ? "fwd" : pass == 1 ? "bwd" : "acc",
           tname(input->type));
  return copies_free(ops, &c, launch(ops, NULL, file, kernel, blocks ? feature_grid(ops, n) : grid_for(ops, n), &a));
}

/* ---------------------------------------------------------------- SpatialSubSampling, TemporalSubSampling */

/* pass 0: the forward into result; 1: gradInput into result; 2: scale * the parameters' gradients added into
 * result (gradWeight) and result2 (gradBias). input (N, C, iH, iW) in GPU memory, any layout (a contiguous copy
 * where it is not); weight and bias vectors of C elements (byCol: iW's windows' count, TemporalSubSampling's
 * features); gradWeight and gradBias contiguous. pooling.cu's lt_subsample_* kernels, Float, Double and Half. */
int lt_cuda_nn_subsampling(int pass, const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result,
                           lt_tensor *result2, const lt_tensor *weight, const lt_tensor *bias, int kW, int kH,
                           int dW, int dH, int byCol, double scale) {
  static const char *const names[3] = {"SubSampling_updateOutput", "SubSampling_updateGradInput",
                                        "SubSampling_accGradParameters"};
  const char *fn = names[pass < 0 || pass > 2 ? 0 : pass];
  char b[256];
  if (pass < 0 || pass > 2) return lt_fail("%s: pass %d", fn, pass);
  const lt_cuops *ops = param_layer_ops(fn, pass, input, gradOutput, result, result2, weight, bias);
  if (!ops) return -1;
  if (input->ndim != 4 || kW < 1 || kH < 1 || dW < 1 || dH < 1 || input->size[2] < kH || input->size[3] < kW)
    return lt_fail("%s: a 4-D input of at least %d x %d per plane expected, got %s", fn, kH, kW,
                   lt_shape_str(input, b, sizeof b));
  const int64_t N = input->size[0], C = input->size[1], iH = input->size[2], iW = input->size[3];
  const int64_t oH = (iH - kH) / dH + 1, oW = (iW - kW) / dW + 1, nidx = byCol ? oW : C;
  const int64_t out_sizes[4] = {N, C, oH, oW};
  if (param_layer_sized(fn, pass, input, gradOutput, result, result2, weight, bias, nidx, nidx, N * C * oH * oW,
                        out_sizes))
    return -1;
  if (N * C * oH * oW == 0) return 0;
  const int64_t geo[12] = {N * C, iH, iW, oH, oW, kH, kW, dH, dW, 0, 0, C};
  const int by_col = byCol ? 1 : 0;
  return param_layer_launch(ops, "pooling", "subsample", pass, input, gradOutput, result, result2, weight, bias, geo,
                            12, &by_col, scale, pass == 2 ? nidx : pass ? N * C * iH * iW : N * C * oH * oW,
                            pass == 2);
}

/* nn.Normalize with its input (a row, or n rows of d) in GPU memory: the forward (gradOutput NULL) into result and
 * norm (n, resized), or the backward into result from norm; nn_pointwise.cu's lt_normalize_* kernels, a block per
 * row, on contiguous copies where the operands are not contiguous. Float, Double and Half. */
int lt_cuda_nn_normalize(const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result, lt_tensor *norm,
                         double p, double eps) {
  const char *fn = gradOutput ? "Normalize_updateGradInput" : "Normalize_updateOutput";
  char b[256];
  if (!input || !result || !norm || !lt_tensor_is_device(input)) return lt_fail("%s: device tensors expected", fn);
  const int dev = input->storage->device;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, result, "the result") ||
      on_device(fn, dev, norm, "norm"))
    return -1;
  if (input->ndim != 1 && input->ndim != 2)
    return lt_fail("%s: expected a 1-D or 2-D input, got %s", fn, lt_shape_str(input, b, sizeof b));
  if (!(p > 0)) return lt_fail("%s: p must be positive, got %g", fn, p);
  const int64_t n = input->ndim == 2 ? input->size[0] : 1, d = input->size[input->ndim - 1];
  if (gradOutput && (gradOutput->type != input->type || lt_tensor_nelement(gradOutput) != n * d ||
                     norm->type != input->type || lt_tensor_nelement(norm) != n))
    return lt_fail("%s: gradOutput %s (and the norms, %lld) should be %s tensors of the input's size", fn,
                   lt_shape_str(gradOutput, b, sizeof b), (long long)n, tname(input->type));
  if (resize_on(result, input->ndim, input->size, dev) || (!gradOutput && resize_on(norm, 1, &n, dev))) return -1;
  if (n * d == 0) return 0;
  copies_t c = {{0}, 0};
  const void *x, *go = NULL, *nm = NULL;
  if (input_data(ops, NULL, &c, input, &x) || input_data(ops, NULL, &c, gradOutput, &go) ||
      input_data(ops, NULL, &c, gradOutput ? norm : NULL, &nm))
    return copies_free(ops, &c, -1);
  void *dst = lt_tensor_data(result), *pn = lt_tensor_data(norm);
  double pp = p, ee = eps;
  args_t a = {0};
  add_raw(&a, &dst, "p");
  if (gradOutput) add_raw(&a, (void *)&go, "p");
  else add_raw(&a, &pn, "p");
  add_raw(&a, (void *)&x, "p");
  if (gradOutput) add_raw(&a, (void *)&nm, "p");
  add_count(&a, n);
  add_count(&a, d);
  add_raw(&a, &pp, "d");
  add_raw(&a, &ee, "d");
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_normalize_%s_%s", gradOutput ? "bwd" : "fwd", tname(input->type));
  return copies_free(ops, &c, launch(ops, NULL, "nn_pointwise", kernel, feature_grid(ops, n), &a));
}

/* nn.FeatureLPPooling with its input in GPU memory, seen as (B, F, S) (input3, any layout): the forward (gradOutput
 * NULL) into result, (B, oF, S), or the backward into result, (B, F, S), from gradOutput and the forward's output
 * (oF x S per sample each). pooling.cu's lt_flp_* kernels, Float, Double and Half. */
int lt_cuda_nn_feature_lp(const lt_tensor *input3, const lt_tensor *gradOutput, const lt_tensor *output,
                          lt_tensor *result, double power, int width, int stride) {
  const char *fn = gradOutput ? "FeatureLPPooling_updateGradInput" : "FeatureLPPooling_updateOutput";
  char b[256];
  if (!input3 || !result || !lt_tensor_is_device(input3) || (gradOutput && !output))
    return lt_fail("%s: device tensors expected", fn);
  const int dev = input3->storage->device;
  const lt_cuops *ops = layer_ops(fn, input3, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, output, "output") ||
      on_device(fn, dev, result, "the result"))
    return -1;
  if (input3->ndim != 3 || width < 1 || stride < 1 || input3->size[1] < width)
    return lt_fail("%s: a (B, F, S) input with F >= %d expected, got %s", fn, width, lt_shape_str(input3, b, sizeof b));
  const int64_t B = input3->size[0], F = input3->size[1], S = input3->size[2], oF = (F - width) / stride + 1;
  const int64_t out_sizes[3] = {B, oF, S};
  if (gradOutput && (gradOutput->type != input3->type || output->type != input3->type ||
                     lt_tensor_nelement(gradOutput) != B * oF * S || lt_tensor_nelement(output) != B * oF * S))
    return lt_fail("%s: gradOutput %s and the output should be %s tensors of %lld elements", fn,
                   lt_shape_str(gradOutput, b, sizeof b), tname(input3->type), (long long)(B * oF * S));
  if (resize_on(result, 3, gradOutput ? input3->size : out_sizes, dev)) return -1;
  if (B * F * S == 0) return 0;
  copies_t c = {{0}, 0};
  const void *x, *go = NULL, *y = NULL;
  if (input_data(ops, NULL, &c, input3, &x) || input_data(ops, NULL, &c, gradOutput, &go) ||
      input_data(ops, NULL, &c, gradOutput ? output : NULL, &y))
    return copies_free(ops, &c, -1);
  void *dst = lt_tensor_data(result);
  double pw = power;
  args_t a = {0};
  add_raw(&a, &dst, "p");
  if (gradOutput) add_raw(&a, (void *)&go, "p");
  add_raw(&a, (void *)&x, "p");
  if (gradOutput) add_raw(&a, (void *)&y, "p");
  const int64_t geo[6] = {B, F, S, oF, width, stride};
  for (int i = 0; i < 6; i++) add_count(&a, geo[i]);
  add_raw(&a, &pw, "d");
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_flp_%s_%s", gradOutput ? "bwd" : "fwd", tname(input3->type));
  return copies_free(ops, &c, launch(ops, NULL, "pooling", kernel, grid_for(ops, gradOutput ? B * F * S : B * oF * S),
                                     &a));
}

/* nn.TemporalRowConvolution on (N, F, T) views of any strides in GPU memory (conv.cu's lt_rowconv_*): pass 0 the
 * forward into y (N, F, oT, already sized); 1 the gradInput into result (x's shape, sized) from y = gradOutput; 2
 * scale * the gradients added into result (gradWeight, contiguous F x kW) and result2 (gradBias, contiguous, or
 * NULL) from x and y = gradOutput. Float, Double and Half. */
int lt_cuda_nn_rowconv(int pass, const lt_tensor *x, const lt_tensor *y, lt_tensor *result, lt_tensor *result2,
                       const lt_tensor *weight, const lt_tensor *bias, int kW, int dW, double scale) {
  static const char *const names[3] = {"TemporalRowConvolution_updateOutput",
                                        "TemporalRowConvolution_updateGradInput",
                                        "TemporalRowConvolution_accGradParameters"};
  if (pass < 0 || pass > 2) return lt_fail("TemporalRowConvolution: pass %d", pass);
  const char *fn = names[pass];
  char b1[256], b2[256];
  const lt_tensor *xv = pass == 1 ? result : x;   /* the (N, F, T) view the kernel reads or writes */
  if (!x || !y || !xv || !lt_tensor_is_device(x) || (pass == 2 && !result) || (pass < 2 && !weight))
    return lt_fail("%s: device tensors expected", fn);
  const int dev = x->storage->device;
  const lt_cuops *ops = layer_ops(fn, x, 1);
  if (!ops || on_device(fn, dev, y, "the output or gradOutput") || on_device(fn, dev, result, "the result") ||
      on_device(fn, dev, result2, "gradBias") || on_device(fn, dev, weight, "weight") ||
      on_device(fn, dev, bias, "bias"))
    return -1;
  if (x->ndim != 3 || y->ndim != 3 || xv->ndim != 3 || kW < 1 || dW < 1 || y->type != x->type ||
      xv->type != x->type || !lt_tensor_is_same_size(xv, x) || y->size[0] != x->size[0] ||
      y->size[1] != x->size[1] || x->size[2] < kW || y->size[2] != (x->size[2] - kW) / dW + 1)
    return lt_fail("%s: (N, F, T) and (N, F, oT) views of one type expected, got %s and %s", fn,
                   lt_shape_str(x, b1, sizeof b1), lt_shape_str(y, b2, sizeof b2));
  const int64_t N = x->size[0], F = x->size[1], T = x->size[2], oT = y->size[2];
  const lt_tensor *vecs[2] = {pass == 2 ? result : weight, pass == 2 ? result2 : bias};
  for (int i = 0; i < 2; i++)
    if (vecs[i] && (vecs[i]->type != x->type || lt_tensor_nelement(vecs[i]) != (i ? F : F * kW) ||
                    (pass == 2 && !lt_tensor_is_contiguous(vecs[i]))))
      return lt_fail("%s: %s should be a%s %s tensor of %lld elements", fn,
                     i ? (pass == 2 ? "gradBias" : "bias") : (pass == 2 ? "gradWeight" : "weight"),
                     pass == 2 ? " contiguous" : "", tname(x->type), (long long)(i ? F : F * kW));
  if (N * F * oT == 0) return 0;
  copies_t c = {{0}, 0};
  const void *w = NULL, *bb = NULL;
  if (input_data(ops, NULL, &c, pass < 2 ? weight : NULL, &w) ||
      input_data(ops, NULL, &c, pass == 0 ? bias : NULL, &bb))
    return copies_free(ops, &c, -1);
  void *px = lt_tensor_data(xv), *py = lt_tensor_data(y), *dst = pass == 2 ? lt_tensor_data(result) : NULL;
  void *dst2 = pass == 2 && result2 ? lt_tensor_data(result2) : NULL;
  args_t a = {0};
  if (pass == 2) {
    add_raw(&a, &dst, "p");
    add_raw(&a, &dst2, "p");
    add_raw(&a, &py, "p");
    add_raw(&a, &px, "p");
  } else {
    add_raw(&a, pass == 0 ? &py : &px, "p");
    add_raw(&a, pass == 0 ? &px : &py, "p");
    add_raw(&a, (void *)&w, "p");
    if (pass == 0) add_raw(&a, (void *)&bb, "p");
  }
  const int64_t geo[12] = {N, F, T, oT, kW, dW, xv->stride[0], xv->stride[1], xv->stride[2],
                           y->stride[0], y->stride[1], y->stride[2]};
  for (int i = 0; i < 12; i++) add_count(&a, geo[i]);
  if (pass == 2) add_value(&a, lt_host_type(x->type), scale);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_rowconv_%s_%s", pass == 0 ? "fwd" : pass == 1 ? "bwd" : "acc", tname(x->type));
  const unsigned grid = pass == 2 ? feature_grid(ops, F) : grid_for(ops, pass ? N * F * T : N * F * oT);
  return copies_free(ops, &c, launch(ops, NULL, "conv", kernel, grid, &a));
}

/* nn.SpatialConvolutionLocal with input (N, C, H, W) in GPU memory (any layout: a contiguous copy where it is not):
 * pass 0 the forward into result ((N, O, oH, oW), resized); 1 the gradInput into result (the input's shape) from
 * gradOutput; 2 scale * the gradients added into result (gradWeight) and result2 (gradBias), contiguous. weight
 * (oH, oW, O, C, kH, kW) and bias (O, oH, oW). conv.cu's lt_convlocal_* kernels, Float, Double and Half. */
int lt_cuda_nn_convlocal(int pass, const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result,
                         lt_tensor *result2, const lt_tensor *weight, const lt_tensor *bias, int nOutputPlane, int kW,
                         int kH, int dW, int dH, int padW, int padH, double scale) {
  static const char *const names[3] = {"SpatialConvolutionLocal_updateOutput",
                                        "SpatialConvolutionLocal_updateGradInput",
                                        "SpatialConvolutionLocal_accGradParameters"};
  if (pass < 0 || pass > 2) return lt_fail("SpatialConvolutionLocal: pass %d", pass);
  const char *fn = names[pass];
  char b[256];
  const lt_cuops *ops = param_layer_ops(fn, pass, input, gradOutput, result, result2, weight, bias);
  if (!ops) return -1;
  if (input->ndim != 4 || nOutputPlane < 1 || kW < 1 || kH < 1 || dW < 1 || dH < 1 || padW < 0 || padH < 0)
    return lt_fail("%s: a 4-D input expected, got %s", fn, lt_shape_str(input, b, sizeof b));
  const int64_t N = input->size[0], C = input->size[1], H = input->size[2], W = input->size[3], O = nOutputPlane;
  const int64_t oH = (H + 2 * padH - kH) / dH + 1, oW = (W + 2 * padW - kW) / dW + 1;
  const int64_t nw = oH * oW * O * C * kH * kW, nb = O * oH * oW, out_sizes[4] = {N, O, oH, oW};
  if (oH < 1 || oW < 1)
    return lt_fail("%s: the input %s is smaller than the kernel", fn, lt_shape_str(input, b, sizeof b));
  if (param_layer_sized(fn, pass, input, gradOutput, result, result2, weight, bias, nw, nb, N * nb, out_sizes))
    return -1;
  if (N * C * H * W == 0) return 0;
  const int64_t geo[13] = {N, C, H, W, O, oH, oW, kH, kW, dH, dW, padH, padW};
  return param_layer_launch(ops, "conv", "convlocal", pass, input, gradOutput, result, result2, weight, bias, geo, 13,
                            NULL, scale, pass == 0 ? N * nb : pass == 1 ? N * C * H * W : nw + nb, 0);
}

/* ---------------------------------------------------------------- nn's elementwise criterions */

/* A criterion's loss as its one-element output of tensor type `type` will hold it (the fill rounds to float, and
 * half through float, as THCUNN's half criterions did): handed to the caller, who need not read the device back. */
static double as_stored(int type, double loss) {
  type = lt_host_type(type);
  if (type == LT_FLOAT) return (float)loss;
  if (type == LT_HALF) return lt_half_to_float(lt_float_to_half((float)loss));
  return loss;
}

/* nn_criterion_pointwise.c's entries for tensors in GPU memory, its arguments already checked: the loss into
 * output (one element, made on the input's GPU), BCE's input range refused as the CPU kernel refuses it. */
int lt_cuda_nn_criterion_updateOutput(const char *fn, int kind, lt_tensor *input, lt_tensor *target,
                                      lt_tensor *output, int size_average, lt_tensor *weights, double param,
                                      double *value) {
  int dev = input->storage->device;
  const lt_cuops *ops = lt_cuda_storage_ops(dev);
  if (!ops || on_device(fn, dev, target, "target") || on_device(fn, dev, weights, "weights") ||
      on_device(fn, dev, output, "output"))
    return -1;
  const int64_t n = lt_tensor_nelement(input);
  double loss = 0;
  if (lt_cuops_criterion_forward(ops, NULL, kind, input, target, weights, param, &loss)) return -1;
  /* BCE: an input outside [0, 1] made the sum NaN (nn_criterion.cu); a NaN loss from a NaN target passes */
  if (kind == LT_CRIT_BCE && loss != loss) {   /* NaN fails both comparisons, as in the CPU kernel's test */
    double lo = 0, hi = 0;
    if (value_range(ops, input, &lo, &hi)) return -1;
    if (!(lo >= 0 && lo <= 1)) return lt_fail("BCECriterion: input value should be between 0 and 1, but got %g", lo);
    if (!(hi >= 0 && hi <= 1)) return lt_fail("BCECriterion: input value should be between 0 and 1, but got %g", hi);
  }
  const int64_t one = 1;
  if (size_average && n > 0) loss /= (double)n;
  loss = as_stored(input->type, loss);
  if (value) *value = lt_number(loss);
  return resize_on(output, 1, &one, dev) || lt_cuops_fill(ops, NULL, output, loss);
}

int lt_cuda_nn_criterion_updateGradInput(const char *fn, int kind, lt_tensor *input, lt_tensor *target,
                                         lt_tensor *gradInput, int size_average, lt_tensor *weights, double param) {
  int dev = input->storage->device;
  const lt_cuops *ops = lt_cuda_storage_ops(dev);
  if (!ops || on_device(fn, dev, target, "target") || on_device(fn, dev, weights, "weights") ||
      on_device(fn, dev, gradInput, "gradInput") || resize_on(gradInput, input->ndim, input->size, dev))
    return -1;
  const int64_t n = lt_tensor_nelement(input);
  return lt_cuops_criterion_backward(ops, NULL, kind, gradInput, input, target, weights, param,
                                     size_average && n > 0 ? 1.0 / (double)n : 1.0);
}

/* ---------------------------------------------------------------- gather layers: paddings, nearest upsampling */

/* The ops of input's GPU for a map layer (gather, linear upsampling), its result resized there (out_sizes for the
 * forward, the input's shape for the backward) and contiguous, *n its elements; NULL with the reason. */
static const lt_cuops *map_layer_result(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                        const int64_t *out_sizes, int64_t *n) {
  const int dev = input->storage->device, backward = gradOutput != NULL;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") ||
      on_device(fn, dev, result, backward ? "gradInput" : "output") ||
      resize_on(result, input->ndim, backward ? input->size : out_sizes, dev))
    return NULL;
  if (!lt_tensor_is_contiguous(result)) {
    lt_fail("%s: the %s must be contiguous", fn, backward ? "gradInput" : "output");
    return NULL;
  }
  *n = lt_tensor_nelement(result);
  return ops;
}

/* One axis of a map layer inverted: output o reads input idx[t][o] through each of its ntaps taps (none where that is
 * negative); first[i] .. first[i + 1] then index the entries of outputs (and of weights, where w1 is given: tap 0
 * weighs 1 - w1[o], tap 1 w1[o]) that read input i, in output order. A counting sort; fill is in + 1 entries of
 * scratch. */
static void invert_axis(int64_t in, int64_t out, int ntaps, int64_t *const idx[2], const double *w1, int64_t *first,
                        int64_t *fill, int64_t *outputs, double *weights) {
  for (int64_t i = 0; i <= in; i++) first[i] = 0;
  for (int64_t o = 0; o < out; o++)
    for (int t = 0; t < ntaps; t++)
      if (idx[t][o] >= 0) first[idx[t][o] + 1]++;
  for (int64_t i = 0; i < in; i++) first[i + 1] += first[i];
  memcpy(fill, first, (size_t)(in + 1) * sizeof *fill);
  for (int64_t o = 0; o < out; o++)
    for (int t = 0; t < ntaps; t++) {
      if (idx[t][o] < 0) continue;
      const int64_t k = fill[idx[t][o]]++;
      outputs[k] = o;
      if (weights) weights[k] = t == 0 ? 1 - w1[o] : w1[o];
    }
}

/* The per-axis inversions of a map layer's taps into host (first | outputs | weights, laid out as the backward
 * kernels read them: first has in + 1 entries per axis, outputs and weights ntaps * out per axis). */
static int invert_axes(const char *fn, const int64_t in[3], const int64_t out[3], int ntaps, int64_t *const idx[2][3],
                       double *const w1[3], int64_t *host) {
  const int64_t nin = in[0] + in[1] + in[2] + 3, nout = out[0] + out[1] + out[2];
  int64_t *fill = malloc((size_t)nin * sizeof *fill);
  if (!fill) return lt_fail("%s: out of host memory", fn);
  int64_t *first = host, *outputs = host + nin;
  double *weights = w1 ? (double *)(host + nin + ntaps * nout) : NULL;
  for (int a = 0; a < 3; a++) {
    int64_t *const taps[2] = {idx[0][a], ntaps > 1 ? idx[1][a] : NULL};
    invert_axis(in[a], out[a], ntaps, taps, w1 ? w1[a] : NULL, first, fill, outputs, weights);
    first += in[a] + 1, outputs += ntaps * out[a];
    if (weights) weights += ntaps * out[a];
  }
  free(fill);
  return 0;
}

/* A map layer's host tables (count 8-byte entries; freed here) uploaded, then gather_map's
 * lt_<prefix>_<fwd|bwd>_<T>(result, src, the tables at entries offs[0 .. ntab), planes, in[3], out[3]) launched over
 * n elements; src is the forward's input or the backward's gradOutput, made contiguous. */
static int map_launch(const lt_cuops *ops, const char *prefix, lt_tensor *input, lt_tensor *gradOutput,
                      lt_tensor *result, int64_t *host, int64_t count, const int64_t *offs, int ntab, int64_t planes,
                      const int64_t in[3], const int64_t out[3], int64_t n) {
  void *tables = NULL, *copy = NULL, *at[3];
  const void *src = NULL;
  int rc = scratch(ops, NULL, count * 8, &tables);
  if (rc == 0) rc = lt_cuops_upload(ops, tables, host, count * 8, NULL);
  free(host);
  if (rc == 0) rc = contiguous_input(ops, NULL, gradOutput ? gradOutput : input, &src, &copy);
  if (rc == 0) {
    void *dst = lt_tensor_data(result);
    args_t a = {0};
    add_raw(&a, &dst, "p");
    add_raw(&a, (void *)&src, "p");
    for (int t = 0; t < ntab; t++) {
      at[t] = (char *)tables + offs[t] * 8;
      add_raw(&a, &at[t], "p");
    }
    add_count(&a, planes);
    for (int i = 0; i < 3; i++) add_count(&a, in[i]);
    for (int i = 0; i < 3; i++) add_count(&a, out[i]);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", prefix, gradOutput ? "bwd" : "fwd", tname(lt_host_type(input->type)));
    rc = launch(ops, NULL, "gather_map", kernel, grid_for(ops, n), &a);
  }
  rc = scratch_free(ops, copy, rc);
  return scratch_free(ops, tables, rc);
}

int lt_cuda_nn_gather(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                      const int64_t *out_sizes, int64_t planes, const int64_t in[3], const int64_t out[3],
                      int64_t *const maps[3]) {
  int64_t n;
  const lt_cuops *ops = map_layer_result(fn, input, gradOutput, result, out_sizes, &n);
  if (!ops || n == 0) return ops ? 0 : -1;
  /* the maps (forward: oD + oH + oW entries) or their inverse (backward: first | outputs) */
  const int64_t nout = out[0] + out[1] + out[2], nin = in[0] + in[1] + in[2] + 3;
  const int64_t count = gradOutput ? nin + nout : nout;
  int64_t *host = malloc((size_t)count * sizeof *host);
  if (!host) return lt_fail("%s: out of host memory", fn);
  if (!gradOutput) {
    for (int a = 0, k = 0; a < 3; a++)
      for (int64_t o = 0; o < out[a]; o++) host[k++] = maps[a][o];
  } else {
    int64_t *const idx[2][3] = {{maps[0], maps[1], maps[2]}, {NULL, NULL, NULL}};
    if (invert_axes(fn, in, out, 1, idx, NULL, host)) {
      free(host);
      return -1;
    }
  }
  const int64_t offs[2] = {0, nin};
  return map_launch(ops, "map", input, gradOutput, result, host, count, offs, gradOutput ? 2 : 1, planes, in, out, n);
}

/* ---------------------------------------------------------------- SpatialCrossMapLRN */

int lt_cuda_nn_lrn(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, lt_tensor *scale,
                   lt_tensor *output, int64_t N, int64_t C, int64_t S, int size, double alpha, double beta,
                   double k) {
  const int dev = input->storage->device, backward = gradOutput != NULL, type = lt_host_type(input->type);
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, scale, "scale") ||
      on_device(fn, dev, result, backward ? "gradInput" : "output") || on_device(fn, dev, output, "output"))
    return -1;
  if (resize_on(result, input->ndim, input->size, dev) ||
      (!backward && resize_on(scale, input->ndim, input->size, dev)))
    return -1;
  if (!lt_tensor_is_contiguous(result) || !lt_tensor_is_contiguous(scale))
    return lt_fail("%s: the %s and scale must be contiguous", fn, backward ? "gradInput" : "output");
  if (N * S == 0 || C == 0) return 0;
  const void *x = NULL, *go = NULL;
  void *x_copy = NULL, *go_copy = NULL;
  int rc = contiguous_input(ops, NULL, input, &x, &x_copy);
  if (rc == 0 && backward) rc = contiguous_input(ops, NULL, gradOutput, &go, &go_copy);
  if (rc == 0) {
    void *dst = lt_tensor_data(result), *sc = lt_tensor_data(scale), *out = backward ? lt_tensor_data(output) : NULL;
    args_t a = {0};
    add_raw(&a, &dst, "p");
    if (!backward) add_raw(&a, &sc, "p");
    add_raw(&a, (void *)&x, "p");
    if (backward) {
      add_raw(&a, (void *)&go, "p");
      add_raw(&a, &out, "p");
      add_raw(&a, &sc, "p");
    }
    add_count(&a, N);
    add_count(&a, C);
    add_count(&a, S);
    add_raw(&a, &size, "i");
    add_raw(&a, &alpha, "d");
    add_raw(&a, &beta, "d");
    if (!backward) add_raw(&a, &k, "d");
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_lrn_%s_%s", backward ? "bwd" : "fwd", tname(type));
    rc = launch(ops, NULL, "lrn", kernel, grid_for(ops, N * S), &a);
  }
  rc = scratch_free(ops, go_copy, rc);
  return scratch_free(ops, x_copy, rc);
}

/* ---------------------------------------------------------------- SpatialAdaptiveAveragePooling */

int lt_cuda_nn_adaptive_avgpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                int64_t planes, int64_t iH, int64_t iW, int64_t oH, int64_t oW) {
  const int dev = input->storage->device, backward = gradOutput != NULL, type = lt_host_type(input->type);
  int64_t sz[4];
  for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
  if (!backward) sz[input->ndim - 2] = oH, sz[input->ndim - 1] = oW;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") ||
      on_device(fn, dev, result, backward ? "gradInput" : "output") || resize_on(result, input->ndim, sz, dev))
    return -1;
  if (!lt_tensor_is_contiguous(result)) return lt_fail("%s: the result must be contiguous", fn);
  const int64_t n = lt_tensor_nelement(result);
  if (n == 0) return 0;
  const void *src;
  void *copy;
  if (contiguous_input(ops, NULL, backward ? gradOutput : input, &src, &copy)) return -1;
  void *dst = lt_tensor_data(result);
  args_t a = {0};
  add_raw(&a, &dst, "p");
  add_raw(&a, (void *)&src, "p");
  const int64_t sizes[5] = {planes, iH, iW, oH, oW};
  for (int i = 0; i < 5; i++) add_count(&a, sizes[i]);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_adaptive_avgpool_%s_%s", backward ? "bwd" : "fwd", tname(type));
  return scratch_free(ops, copy, launch(ops, NULL, "adaptive_pooling", kernel, grid_for(ops, n), &a));
}

/* ---------------------------------------------------------------- LookupTable */

/* The indices (any integer or floating type, host or GPU memory, any layout) as n 1-based rows on the host, each
 * checked in 1..nIndex as the CPU kernel checks them. *rows is malloc'ed. */
static int lookup_rows(const char *fn, const lt_tensor *input, int64_t nIndex, int64_t **rows, int64_t *n) {
  *rows = NULL;
  *n = lt_tensor_nelement(input);
  lt_tensor host;
  lt_tensor_init(&host, LT_LONG);
  int64_t len = *n;
  int rc = lt_tensor_resize(&host, 1, &len);
  if (rc == 0 && len > 0) rc = lt_tensor_copy(&host, input);   /* from GPU memory, or converted */
  if (rc == 0 && !(*rows = malloc((size_t)(len > 0 ? len : 1) * sizeof **rows)))
    rc = lt_fail("%s: out of host memory", fn);
  if (rc == 0 && len > 0) memcpy(*rows, lt_tensor_data(&host), (size_t)len * sizeof **rows);
  lt_tensor_clear(&host);
  for (int64_t i = 0; rc == 0 && i < len; i++)
    if ((*rows)[i] < 1 || (*rows)[i] > nIndex)
      rc = lt_fail("%s: index %lld out of range [1, %lld]", fn, (long long)(*rows)[i], (long long)nIndex);
  if (rc) {
    free(*rows);
    *rows = NULL;
  }
  return rc;
}

static int lookup_matrix(const char *fn, const lt_tensor *w, const char *what) {
  if (!lt_tensor_is_device(w)) return lt_fail("%s: %s is in host memory (the GPU version was called)", fn, what);
  if (w->ndim != 2 || !lt_tensor_is_contiguous(w)) return lt_fail("%s: %s must be a contiguous matrix", fn, what);
  return 0;
}

int lt_cuda_nn_lookup_forward(const lt_tensor *input, lt_tensor *weight, lt_tensor *output) {
  static const char fn[] = "LookupTable_updateOutput";
  if (lookup_matrix(fn, weight, "weight")) return -1;
  const int64_t V = weight->size[0], dim = weight->size[1];
  int64_t *rows, n;
  if (lookup_rows(fn, input, V, &rows, &n)) return -1;
  /* a gather through per-axis maps: one plane of V x dim, rows picked along H, every column along W */
  int64_t zero = 0, *cols = malloc((size_t)(dim > 0 ? dim : 1) * sizeof *cols);
  if (!cols) {
    free(rows);
    return lt_fail("%s: out of host memory", fn);
  }
  for (int64_t i = 0; i < n; i++) rows[i]--;
  for (int64_t c = 0; c < dim; c++) cols[c] = c;
  const int64_t in[3] = {1, V, dim}, out[3] = {1, n, dim}, sizes[2] = {n, dim};
  int64_t *const maps[3] = {&zero, rows, cols};
  int rc = lt_cuda_nn_gather(fn, weight, NULL, output, sizes, 1, in, out, maps);
  free(rows);
  free(cols);
  return rc;
}

int lt_cuda_nn_lookup_acc(const lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight, int scale_by_freq,
                          int64_t padding_value, double scale) {
  static const char fn[] = "LookupTable_accGradParameters";
  if (lookup_matrix(fn, gradWeight, "gradWeight")) return -1;
  const int dev = gradWeight->storage->device, type = lt_host_type(gradWeight->type);
  const lt_cuops *ops = layer_ops(fn, gradWeight, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput")) return -1;
  if (gradOutput->type != gradWeight->type)
    return lt_fail("%s: gradOutput is a %s tensor, gradWeight a %s one", fn, tname(gradOutput->type), tname(type));
  const int64_t dim = gradWeight->size[1];
  int64_t *idx, n, m = 0;
  if (lookup_rows(fn, input, gradWeight->size[0], &idx, &n)) return -1;
  if (lt_tensor_nelement(gradOutput) != n * dim) {
    free(idx);
    return lt_fail("%s: gradOutput has %lld elements, expected %lld (indices x %lld)", fn,
                   (long long)lt_tensor_nelement(gradOutput), (long long)(n * dim), (long long)dim);
  }
  void *lists = NULL, *copy = NULL;
  const void *go = NULL;
  int rc = row_lists(fn, ops, NULL, idx, n, padding_value, 0, &lists, &m);
  free(idx);
  if (rc == 0 && m > 0 && dim > 0) rc = contiguous_input(ops, NULL, gradOutput, &go, &copy);
  if (rc == 0 && m > 0 && dim > 0) {
    void *gw = lt_tensor_data(gradWeight), *first = (char *)lists + m * 8, *positions = (char *)lists + (2 * m + 1) * 8;
    args_t a = {0};
    add_raw(&a, &gw, "p");
    add_raw(&a, (void *)&go, "p");
    add_raw(&a, &lists, "p");
    add_raw(&a, &first, "p");
    add_raw(&a, &positions, "p");
    add_count(&a, m);
    add_count(&a, dim);
    add_value(&a, type, scale);
    add_count(&a, scale_by_freq ? 1 : 0);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_rows_acc_%s", tname(type));
    rc = launch(ops, NULL, "gather_map", kernel, grid_for(ops, m * dim), &a);
  }
  rc = scratch_free(ops, copy, rc);
  return scratch_free(ops, lists, rc);
}

int lt_cuda_nn_lookup_renorm(const lt_tensor *input, lt_tensor *weight, double max_norm, double norm_type) {
  static const char fn[] = "LookupTable_renorm";
  if (lookup_matrix(fn, weight, "weight")) return -1;
  if (norm_type <= 0) return lt_fail("%s: normType must be positive, got %g", fn, norm_type);
  const int type = lt_host_type(weight->type);
  const lt_cuops *ops = layer_ops(fn, weight, 1);
  int64_t *idx, n, m = 0;
  if (!ops || lookup_rows(fn, input, weight->size[0], &idx, &n)) return -1;
  void *lists = NULL;
  int rc = row_lists(fn, ops, NULL, idx, n, 0, 1, &lists, &m);
  free(idx);
  if (rc == 0 && m > 0) {
    void *w = lt_tensor_data(weight);
    const int64_t dim = weight->size[1];
    args_t a = {0};
    add_raw(&a, &w, "p");
    add_raw(&a, &lists, "p");
    add_count(&a, m);
    add_count(&a, dim);
    add_value(&a, type, max_norm);
    add_value(&a, type, norm_type);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_rows_renorm_%s", tname(type));
    rc = launch(ops, NULL, "gather_map", kernel, grid_for(ops, m), &a);
  }
  return scratch_free(ops, lists, rc);
}

/* ---------------------------------------------------------------- linear upsampling */

int lt_cuda_nn_linear(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                      const int64_t *out_sizes, int64_t planes, const int64_t in[3], const int64_t out[3],
                      int64_t *const i0[3], int64_t *const i1[3], double *const w1[3]) {
  int64_t n;
  const lt_cuops *ops = map_layer_result(fn, input, gradOutput, result, out_sizes, &n);
  if (!ops || n == 0) return ops ? 0 : -1;
  /* forward: i0 | i1 (int64) | w1 (double), each oD + oH + oW entries; backward, per axis the two taps inverted:
   * first (in + 1 entries per axis) | outputs (2 out per axis) | weights (2 out per axis, double) */
  const int64_t nout = out[0] + out[1] + out[2], nin = in[0] + in[1] + in[2] + 3;
  const int64_t count = gradOutput ? nin + 4 * nout : 3 * nout;
  int64_t *host = malloc((size_t)count * 8);
  if (!host) return lt_fail("%s: out of host memory", fn);
  if (!gradOutput) {
    int64_t *a0 = host, *a1 = host + nout;
    double *aw = (double *)(host + 2 * nout);
    for (int a = 0, k = 0; a < 3; a++)
      for (int64_t o = 0; o < out[a]; o++, k++) a0[k] = i0[a][o], a1[k] = i1[a][o], aw[k] = w1[a][o];
  } else {
    int64_t *const idx[2][3] = {{i0[0], i0[1], i0[2]}, {i1[0], i1[1], i1[2]}};
    if (invert_axes(fn, in, out, 2, idx, w1, host)) {
      free(host);
      return -1;
    }
  }
  const int64_t offs[3] = {0, gradOutput ? nin : nout, gradOutput ? nin + 2 * nout : 2 * nout};
  return map_launch(ops, "lin", input, gradOutput, result, host, count, offs, 3, planes, in, out, n);
}

/* ---------------------------------------------------------------- plane-indexed scatter and gather, dilated max */

/* A max pooling's kernel that keeps its own index layout: forward (output, indices, input, sizes...) or backward
 * (gradInput, gradOutput, indices, sizes...), the tensor it reads (src) through a contiguous copy when it is not
 * contiguous; n threads' worth of blocks. */
static int index_pool_launch(const lt_cuops *ops, const char *file, const char *kernel, int backward,
                             const lt_tensor *src, lt_tensor *result, lt_tensor *indices, const int64_t *sizes,
                             int nsizes, int64_t n) {
  const void *s;
  void *copy;
  if (contiguous_input(ops, NULL, src, &s, &copy)) return -1;
  void *dst = lt_tensor_data(result), *ind = lt_tensor_data(indices);
  args_t a = {0};
  add_raw(&a, &dst, "p");
  if (backward) add_raw(&a, (void *)&s, "p");
  add_raw(&a, &ind, "p");
  if (!backward) add_raw(&a, (void *)&s, "p");
  for (int i = 0; i < nsizes; i++) add_count(&a, sizes[i]);
  return scratch_free(ops, copy, launch(ops, NULL, file, kernel, grid_for(ops, n), &a));
}

int lt_cuda_nn_plane_index(const char *fn, int scatter, lt_tensor *src, lt_tensor *indices, lt_tensor *dst, int ndim,
                           const int64_t *dst_sizes, int64_t planes, int64_t L, int64_t other, const char *plane) {
  const int dev = src->storage->device, type = lt_host_type(src->type);
  const lt_cuops *ops = layer_ops(fn, src, 1);
  if (!ops || on_device(fn, dev, indices, "indices") || on_device(fn, dev, dst, scatter ? "output" : "gradInput") ||
      resize_on(dst, ndim, dst_sizes, dev))
    return -1;
  if (!lt_tensor_is_contiguous(dst)) return lt_fail("%s: the %s must be contiguous", fn, scatter ? "output" : "gradInput");
  if (lt_tensor_nelement(dst) == 0) return 0;
  /* the positions checked as the CPU kernel checks them, from their least and greatest */
  double lo = 0, hi = 0;
  if (lt_tensor_nelement(indices) > 0 && value_range(ops, indices, &lo, &hi)) return -1;
  if (lo < 0 || hi > (double)other) return lt_fail("%s: indices hold a position outside %s", fn, plane);
  const void *s = NULL, *ind = NULL;
  void *copies[2] = {NULL, NULL};
  int rc = contiguous_input(ops, NULL, src, &s, &copies[0]);
  if (rc == 0) rc = contiguous_input(ops, NULL, indices, &ind, &copies[1]);
  if (rc == 0) {
    void *d = lt_tensor_data(dst);
    args_t a = {0};
    add_raw(&a, &d, "p");
    add_raw(&a, (void *)&s, "p");
    add_raw(&a, (void *)&ind, "p");
    add_count(&a, planes);
    add_count(&a, L);
    add_count(&a, other);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_plane_%s_%s", scatter ? "scatter" : "gather", tname(type));
    rc = launch(ops, NULL, "pooling", kernel, grid_for(ops, scatter ? planes : planes * L), &a);
  }
  rc = scratch_free(ops, copies[0], rc);
  return scratch_free(ops, copies[1], rc);
}

int lt_cuda_nn_dilated_maxpool(const char *fn, lt_tensor *input, lt_tensor *output, lt_tensor *indices,
                               const int64_t *out_sizes, const int64_t geo[13]) {
  const int dev = input->storage->device, type = lt_host_type(input->type);
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, indices, "indices") || on_device(fn, dev, output, "output") ||
      resize_on(output, input->ndim, out_sizes, dev) || resize_on(indices, input->ndim, out_sizes, dev))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG) return lt_fail("%s: indices must be a CudaLongTensor", fn);
  if (!lt_tensor_is_contiguous(output) || !lt_tensor_is_contiguous(indices))
    return lt_fail("%s: the output and indices must be contiguous", fn);
  const int64_t n = lt_tensor_nelement(output);
  if (n == 0) return 0;
  const void *x = NULL;
  void *copy = NULL;
  int rc = contiguous_input(ops, NULL, input, &x, &copy);
  if (rc == 0) {
    void *out = lt_tensor_data(output), *ind = lt_tensor_data(indices);
    args_t a = {0};
    add_raw(&a, &out, "p");
    add_raw(&a, &ind, "p");
    add_raw(&a, (void *)&x, "p");
    for (int i = 0; i < 13; i++) add_count(&a, geo[i]);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_dilmax_fwd_%s", tname(type));
    rc = launch(ops, NULL, "pooling", kernel, grid_for(ops, n), &a);
  }
  return scratch_free(ops, copy, rc);
}

/* ---------------------------------------------------------------- SpatialAdaptiveMaxPooling */

int lt_cuda_nn_adaptive_maxpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                lt_tensor *indices, int64_t planes, int64_t iH, int64_t iW, int64_t oH, int64_t oW) {
  const int dev = input->storage->device, backward = gradOutput != NULL, type = lt_host_type(input->type);
  const int64_t n = planes * oH * oW;
  int64_t sz[4], isz[5] = {2};
  for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
  if (!backward) sz[input->ndim - 2] = oH, sz[input->ndim - 1] = oW;
  for (int d = 0; d < input->ndim; d++) isz[d + 1] = d < input->ndim - 2 ? input->size[d] : d == input->ndim - 2 ? oH : oW;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, indices, "indices") ||
      on_device(fn, dev, result, backward ? "gradInput" : "output") || resize_on(result, input->ndim, sz, dev) ||
      (!backward && resize_on(indices, input->ndim + 1, isz, dev)))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != 2 * n)
    return lt_fail("%s: indices must be the CudaLongTensor filled by updateOutput", fn);
  if (!lt_tensor_is_contiguous(result) || !lt_tensor_is_contiguous(indices))
    return lt_fail("%s: the result and the indices must be contiguous", fn);
  if (lt_tensor_nelement(result) == 0) return 0;
  if (backward && n > 0) {   /* positions within a window: 1 .. the largest window's side (a loose check) */
    int64_t side = 0;
    for (int64_t o = 0; o < oH; o++) {
      int64_t w = ((o + 1) * iH + oH - 1) / oH - o * iH / oH;
      if (w > side) side = w;
    }
    for (int64_t o = 0; o < oW; o++) {
      int64_t w = ((o + 1) * iW + oW - 1) / oW - o * iW / oW;
      if (w > side) side = w;
    }
    double lo, hi;
    if (value_range(ops, indices, &lo, &hi)) return -1;
    if (lo < 1 || hi > (double)side) return lt_fail("%s: indices hold a position outside their window", fn);
  }
  const int64_t sizes[5] = {planes, iH, iW, oH, oW};
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_adaptive_maxpool_%s_%s", backward ? "bwd" : "fwd", tname(type));
  return index_pool_launch(ops, "adaptive_pooling", kernel, backward, backward ? gradOutput : input, result, indices,
                           sizes, 5, lt_tensor_nelement(result));
}

/* ---------------------------------------------------------------- class-score criterions */

int lt_cuda_nn_class_margin(const char *fn, int multilabel, lt_tensor *input, const int64_t *target, int64_t nframe,
                            int64_t dim, lt_tensor *weights, lt_tensor *isTarget, lt_tensor *output,
                            lt_tensor *gradInput, int size_average, int p, double margin, double *value) {
  const int dev = input->storage->device, type = lt_host_type(input->type), backward = gradInput != NULL;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, weights, "weights") || on_device(fn, dev, isTarget, "isTarget") ||
      on_device(fn, dev, backward ? gradInput : output, backward ? "gradInput" : "output"))
    return -1;
  if (multilabel && !backward && resize_on(isTarget, input->ndim, input->size, dev)) return -1;
  if (multilabel && lt_tensor_nelement(isTarget) != nframe * dim)
    return lt_fail("%s: isTarget should have input's size (call updateOutput first)", fn);
  if (backward && resize_on(gradInput, input->ndim, input->size, dev)) return -1;
  const int64_t one = 1, ntarget = multilabel ? nframe * dim : nframe;
  if (!backward && resize_on(output, 1, &one, dev)) return -1;
  if ((backward && !lt_tensor_is_contiguous(gradInput)) || (multilabel && !lt_tensor_is_contiguous(isTarget)))
    return lt_fail("%s: gradInput and isTarget must be contiguous", fn);
  void *tg = NULL, *terms = NULL, *copies[2] = {NULL, NULL};
  const void *x = NULL, *w = NULL;
  double *host = NULL;
  int rc = 0;
  if (nframe > 0 && dim > 0) {
    rc = scratch(ops, NULL, ntarget * 8, &tg);
    if (rc == 0) rc = lt_cuops_upload(ops, tg, target, ntarget * 8, NULL);
    if (rc == 0) rc = contiguous_input(ops, NULL, input, &x, &copies[0]);
    if (rc == 0 && weights && weights->storage) rc = contiguous_input(ops, NULL, weights, &w, &copies[1]);
    if (rc == 0 && !backward) rc = scratch(ops, NULL, nframe * 8, &terms);
  }
  const double scale = size_average ? 1.0 / ((double)nframe * (double)dim) : 1.0 / (double)dim;
  if (rc == 0 && nframe > 0 && dim > 0) {
    void *out = backward ? lt_tensor_data(gradInput) : terms, *is = multilabel ? lt_tensor_data(isTarget) : NULL;
    args_t a = {0};
    add_raw(&a, &out, "p");
    if (multilabel && !backward) add_raw(&a, &is, "p");
    add_raw(&a, (void *)&x, "p");
    if (multilabel && backward) add_raw(&a, &is, "p");
    add_raw(&a, &tg, "p");
    if (!multilabel) add_raw(&a, (void *)&w, "p");
    add_count(&a, nframe);
    add_count(&a, dim);
    double m = margin, sc = scale;
    if (!multilabel) {
      add_raw(&a, &p, "i");
      add_raw(&a, &m, "d");
    }
    if (backward) add_raw(&a, &sc, "d");
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_%s_%s_%s", multilabel ? "multilabel" : "multimargin", backward ? "bwd" : "fwd",
             tname(type));
    rc = launch(ops, NULL, "nn_criterion", kernel, grid_for(ops, nframe), &a);
  }
  if (rc == 0 && !backward) {   /* the frames' terms summed in order, as the CPU kernel sums them */
    double sum = 0;
    if (nframe > 0 && dim > 0) {
      if (!(host = malloc((size_t)nframe * sizeof *host))) rc = lt_fail("%s: out of host memory", fn);
      if (rc == 0) rc = ops->to_host(ops->ctx, host, terms, nframe * 8, NULL);
      for (int64_t f = 0; rc == 0 && f < nframe; f++) sum += host[f];
    }
    sum /= (double)dim;
    if (size_average && nframe > 0) sum /= (double)nframe;
    sum = as_stored(input->type, sum);
    if (rc == 0 && value) *value = lt_number(sum);
    if (rc == 0) rc = lt_cuops_fill(ops, NULL, output, sum);
  }
  free(host);
  rc = scratch_free(ops, terms, rc);
  rc = scratch_free(ops, copies[0], rc);
  rc = scratch_free(ops, copies[1], rc);
  return scratch_free(ops, tg, rc);
}

/* ---------------------------------------------------------------- TemporalMaxPooling */

int lt_cuda_nn_temporal_maxpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                lt_tensor *indices, int64_t N, int64_t T, int64_t F, int64_t oT, int kW, int dW) {
  const int dev = input->storage->device, backward = gradOutput != NULL, type = lt_host_type(input->type);
  int64_t sz[3];
  for (int d = 0; d < input->ndim; d++) sz[d] = input->size[d];
  if (!backward) sz[input->ndim - 2] = oT;
  const lt_cuops *ops = layer_ops(fn, input, 1);
  if (!ops || on_device(fn, dev, gradOutput, "gradOutput") || on_device(fn, dev, indices, "indices") ||
      on_device(fn, dev, result, backward ? "gradInput" : "output") || resize_on(result, input->ndim, sz, dev) ||
      (!backward && resize_on(indices, input->ndim, sz, dev)))
    return -1;
  if (lt_host_type(indices->type) != LT_LONG || lt_tensor_nelement(indices) != N * oT * F)
    return lt_fail("%s: indices must be the CudaLongTensor filled by updateOutput", fn);
  if (!lt_tensor_is_contiguous(result) || !lt_tensor_is_contiguous(indices))
    return lt_fail("%s: the result and the indices must be contiguous", fn);
  if (lt_tensor_nelement(result) == 0) return 0;
  if (backward && lt_tensor_nelement(indices) > 0) {   /* the CPU kernel's check: a frame within the window */
    double lo, hi;
    if (value_range(ops, indices, &lo, &hi)) return -1;
    if (lo < 0 || hi >= kW) return lt_fail("%s: indices hold an offset outside the window", fn);
  }
  const int64_t sizes[6] = {N, T, F, oT, kW, dW};
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_tmaxpool_%s_%s", backward ? "bwd" : "fwd", tname(type));
  return index_pool_launch(ops, "pooling", kernel, backward, backward ? gradOutput : input, result, indices, sizes, 6,
                           backward ? N * F : N * oT * F);
}
