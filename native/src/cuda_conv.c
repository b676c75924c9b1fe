/* cunn's convolutions on a device (lt_cuops_conv2d_*, lt_cuops_full_conv2d_*): im2col + cuBLAS per sample, as
 * Torch7's cunn computed SpatialConvolutionMM; the column kernels are native/cuda/conv.cu. Nothing here touches
 * device memory. */
#include "lt_internal.h"
#include "cuda_ops_internal.h"

#include <limits.h>

/* What the column kernels and GEMMs see: an image (C, H, W) per sample, a kernel of kH x kW taps, and its
 * column matrix of K = C*kH*kW rows by P = oH*oW columns; `rows` is the other side of the weight matrix (rows x
 * K): a plain convolution's output planes, or a full convolution's input planes. For a plain convolution the
 * image is the input; for a full (transposed) one it is the output, whose columns span the input. */
typedef struct {
  int64_t N, C, H, W, oH, oW, K, P, rows;
  int64_t kW, kH, dW, dH, padW, padH, dilW, dilH;
  int batch, type;
} conv_geom;

static int conv_check_common(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                             int dH, int padW, int padH) {
  char a[256];
  if (lt_conv2d_check_sizes(fn, kW, kH, dW, dH, padW, padH)) return -1;
  const int type = lt_host_type(input->type);
  if (type != LT_FLOAT && type != LT_DOUBLE && type != LT_HALF)
    return lt_fail("%s: not defined for %s tensors (CudaTensor, CudaDoubleTensor and CudaHalfTensor only)", fn,
                   tname(input->type));
  if (weight->type != input->type)
    return lt_fail("%s: weight must be a %s tensor like the input, not %s", fn, tname(input->type), tname(weight->type));
  if (input->ndim != 3 && input->ndim != 4)
    return lt_fail("%s: 3D or 4D input tensor expected but got: %s", fn, lt_shape_str(input, a, sizeof a));
  return 0;
}

/* The unfolding geometry of a plain (full = 0) or full convolution, checked as the CPU kernels check it. */
static int conv_geometry(const char *fn, conv_geom *g, int full, const lt_tensor *input, const lt_tensor *weight,
                         int kW, int kH, int dW, int dH, int padW, int padH, int dilW_or_adjW, int dilH_or_adjH) {
  lt_conv2d_geom cg;
  if (conv_check_common(fn, input, weight, kW, kH, dW, dH, padW, padH) ||
      (full ? lt_full_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, dilW_or_adjW, dilH_or_adjH, &cg)
            : lt_conv2d_geometry(fn, input, weight, kW, kH, dW, dH, padW, padH, dilW_or_adjW, dilH_or_adjH, &cg)))
    return -1;
  if (!lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be contiguous", fn);
  memset(g, 0, sizeof *g);
  g->batch = cg.batch, g->type = lt_host_type(input->type), g->N = cg.N;
  if (full) {   /* the image is the output */
    g->C = cg.nOut, g->H = cg.oH, g->W = cg.oW, g->oH = cg.H, g->oW = cg.W, g->rows = cg.C;
    g->dilW = g->dilH = 1;
  } else {
    g->C = cg.C, g->H = cg.H, g->W = cg.W, g->oH = cg.oH, g->oW = cg.oW, g->rows = cg.nOut;
    g->dilW = dilW_or_adjW, g->dilH = dilH_or_adjH;
  }
  g->kW = kW, g->kH = kH, g->dW = dW, g->dH = dH, g->padW = padW, g->padH = padH;
  g->K = g->C * kH * kW, g->P = g->oH * g->oW;
  if (g->K >= INT_MAX || g->P >= INT_MAX || g->rows >= INT_MAX)
    return lt_fail("%s: a matrix dimension is beyond cuBLAS's 32-bit int", fn);
  return 0;
}

/* t must be an (N x) planes x h x w tensor of the input's type and batch-ness; contiguous when asked. */
static int conv_check_shape(const char *fn, const conv_geom *g, const lt_tensor *t, int type, const char *what,
                            int64_t planes, int64_t h, int64_t w, int contiguous) {
  char a[256];
  const int f = g->batch;
  int ok = t->type == type && t->ndim == 3 + f && (!f || t->size[0] == g->N) && t->size[f] == planes &&
           t->size[f + 1] == h && t->size[f + 2] == w;
  if (!ok)
    return lt_fail("%s: %s should be a %s tensor of shape %s%lld x %lld x %lld, not a %s one of %s", fn, what,
                   tname(type), f ? "N x " : "", (long long)planes, (long long)h, (long long)w, tname(t->type),
                   lt_shape_str(t, a, sizeof a));
  if (contiguous && !lt_tensor_is_contiguous(t)) return lt_fail("%s: %s must be contiguous", fn, what);
  return 0;
}

static int conv_check_vector(const char *fn, const lt_tensor *t, int type, int64_t n, const char *what) {
  char a[256];
  if (t->type != type || lt_tensor_nelement(t) != n || !lt_tensor_is_contiguous(t))
    return lt_fail("%s: %s should be a contiguous %s tensor of %lld elements, not a %s one of %s", fn, what,
                   tname(type), (long long)n, tname(t->type), lt_shape_str(t, a, sizeof a));
  return 0;
}

/* A 1x1 kernel with unit stride, no padding: the image is its own column matrix. */
static int conv_is_pointwise(const conv_geom *g) {
  return g->kW == 1 && g->kH == 1 && g->dW == 1 && g->dH == 1 && g->padW == 0 && g->padH == 0;
}

static const char *conv_type_name(const conv_geom *g) {
  return g->type == LT_DOUBLE ? "Double" : g->type == LT_HALF ? "Half" : "Float";
}

/* im2col (to_columns) or col2im of one sample. */
static int conv_unfold(const lt_cuops *ops, void *stream, const conv_geom *g, int to_columns, void *dst,
                       const void *src) {
  args_t a = {0};
  add_raw(&a, &dst, "p");
  add_raw(&a, (void *)&src, "p");
  const int64_t sizes[13] = {g->C, g->H, g->W, g->kH, g->kW, g->padH, g->padW, g->dH, g->dW, g->dilH, g->dilW,
                             g->oH, g->oW};
  for (int i = 0; i < 13; i++) add_count(&a, sizes[i]);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_%s_%s", to_columns ? "im2col" : "col2im", conv_type_name(g));
  return launch(ops, stream, "conv", kernel, grid_for(ops, to_columns ? g->C * g->P : g->C * g->H * g->W), &a);
}

/* bias += scale * the sums of x (outer, channels, inner) over outer and inner: partial sums of `chunks` runs of each
 * channel, then each channel's in order (conv.cu). */
static int conv_bias_chunked(const lt_cuops *ops, void *stream, const conv_geom *g, void *bias, const void *x,
                             int64_t outer, int64_t channels, int64_t inner, int64_t chunks, double scale) {
  const char *t = conv_type_name(g);
  const int64_t acc_bytes = g->type == LT_DOUBLE ? 8 : 4;   /* lt_acc_t: double, else float */
  void *partial = NULL;
  int rc = scratch(ops, stream, channels * chunks * acc_bytes, &partial);
  if (rc == 0) {
    args_t a = {0};
    add_raw(&a, &partial, "p");
    add_raw(&a, (void **)&x, "p");
    add_count(&a, outer);
    add_count(&a, channels);
    add_count(&a, inner);
    add_count(&a, chunks);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_conv_bias_partial_%s", t);
    const int64_t blocks = channels * chunks;
    rc = launch(ops, stream, "conv", kernel, (unsigned)(blocks < block_cap(ops) ? blocks : block_cap(ops)), &a);
  }
  if (rc == 0) {
    args_t a = {0};
    add_raw(&a, &bias, "p");
    add_raw(&a, &partial, "p");
    add_count(&a, channels);
    add_count(&a, chunks);
    add_value(&a, g->type, scale);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "lt_conv_bias_finish_%s", t);
    rc = launch(ops, stream, "conv", kernel, grid_for(ops, channels), &a);
  }
  return scratch_free(ops, partial, rc);
}

/* The bias kernels over an (outer, channels, inner) tensor x: add bias into it, or accumulate scale * its sums
 * over outer and inner into bias. */
static int conv_bias(const lt_cuops *ops, void *stream, const conv_geom *g, int grad, void *bias, const void *x,
                     int64_t outer, int64_t channels, int64_t inner, double scale) {
  /* the gradient over (channel, run) blocks when a block per channel would leave blocks of the grid idle and each
   * run still has a few values a thread (2048 a block) */
  int64_t chunks = (outer * inner + 2047) / 2048, fit = block_cap(ops) / (channels > 0 ? channels : 1);
  if (chunks > fit) chunks = fit;
  if (grad && chunks > 1) return conv_bias_chunked(ops, stream, g, bias, x, outer, channels, inner, chunks, scale);
  args_t a = {0};
  add_raw(&a, grad ? &bias : (void **)&x, "p");
  add_raw(&a, grad ? (void **)&x : &bias, "p");
  add_count(&a, outer);
  add_count(&a, channels);
  add_count(&a, inner);
  if (grad) add_value(&a, g->type, scale);
  char kernel[48];
  snprintf(kernel, sizeof kernel, "lt_conv_bias_%s_%s", grad ? "grad" : "add", conv_type_name(g));
  unsigned grid = grad ? (unsigned)(channels < block_cap(ops) ? channels : block_cap(ops))
                       : grid_for(ops, outer * channels * inner);
  return launch(ops, stream, "conv", kernel, grid, &a);
}

/* The three per-sample passes, each over the N samples of contiguous (sample-major) tensors. In each, cols is
 * sample n's column matrix (K x P) and w the weight as a (rows x K) matrix; x is a (rows x P) tensor per sample.
 *   UNFOLD_MULTIPLY:   x_n = w cols(image_n)                   (plain forward; full backward-data)
 *   MULTIPLY_FOLD:     image_n = fold(w^T x_n)                 (plain backward-data; full forward)
 *   UNFOLD_ACCUMULATE: w += scale x_n cols(image_n)^T          (both backward-parameters)
 * Column-major (cuBLAS) views of the row-major matrices are their transposes, hence the operand orders. */
enum { UNFOLD_MULTIPLY, MULTIPLY_FOLD, UNFOLD_ACCUMULATE };

static int conv_passes(const lt_cuops *ops, void *stream, const conv_geom *g, int pass, char *image, char *x,
                       char *w, double scale) {
  const int64_t es = lt_elemsize(g->type);
  const int64_t image_step = g->C * g->H * g->W * es, x_step = g->rows * g->P * es;
  const int pointwise = conv_is_pointwise(g);
  void *col = NULL;
  int rc = pointwise ? 0 : scratch(ops, stream, g->K * g->P * es, &col);
  for (int64_t n = 0; rc == 0 && n < g->N; n++) {
    char *image_n = image + n * image_step, *x_n = x + n * x_step;
    void *cols = pointwise ? (void *)image_n : col;
    switch (pass) {
      case UNFOLD_MULTIPLY:
        if (!pointwise) rc = conv_unfold(ops, stream, g, 1, col, image_n);
        if (rc == 0)
          rc = ops->gemm(ops->ctx, stream, g->type, 'n', 'n', g->P, g->rows, g->K, 1.0, cols, g->P, w, g->K, 0.0, x_n,
                         g->P);
        break;
      case MULTIPLY_FOLD:
        rc = ops->gemm(ops->ctx, stream, g->type, 'n', 't', g->P, g->K, g->rows, 1.0, x_n, g->P, w, g->K, 0.0, cols,
                       g->P);
        if (rc == 0 && !pointwise) rc = conv_unfold(ops, stream, g, 0, image_n, col);
        break;
      default:
        if (!pointwise) rc = conv_unfold(ops, stream, g, 1, col, image_n);
        if (rc == 0)
          rc = ops->gemm(ops->ctx, stream, g->type, 't', 'n', g->K, g->rows, g->P, scale, cols, g->P, x_n, g->P, 1.0,
                         w, g->K);
    }
  }
  return scratch_free(ops, col, rc);
}

/* The data of t, or of a contiguous scratch copy (*copy, to be freed) when t is not contiguous. */
static int conv_contiguous(const lt_cuops *ops, void *stream, const lt_tensor *t, char **data, void **copy) {
  const void *d;
  if (contiguous_input(ops, stream, t, &d, copy)) return -1;
  *data = (char *)d;
  return 0;
}

static int conv_ready(const lt_cuops *ops, const char *fn) {
  if (check_ops(ops, fn)) return -1;
  if (!ops->gemm) return lt_fail("%s: no matrix product on this device (cuBLAS is not loaded)", fn);
  return 0;
}

/* forward of a plain (full = 0) or full convolution: output = conv(input) + bias */
static int conv_forward(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                        lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW,
                        int dH, int padW, int padH, int extraW, int extraH) {
  conv_geom g;
  if (conv_ready(ops, fn) || conv_geometry(fn, &g, full, input, weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  if ((bias && conv_check_vector(fn, bias, input->type, planes, "bias")) ||
      conv_check_shape(fn, &g, output, input->type, "the output", planes, oH, oW, 1))
    return -1;
  if (g.N == 0) return 0;
  char *in, *out = lt_tensor_data(output);
  void *copy;
  if (conv_contiguous(ops, stream, input, &in, &copy)) return -1;
  int rc = full ? conv_passes(ops, stream, &g, MULTIPLY_FOLD, out, in, lt_tensor_data(weight), 0)
                : conv_passes(ops, stream, &g, UNFOLD_MULTIPLY, in, out, lt_tensor_data(weight), 0);
  if (rc == 0 && bias) rc = conv_bias(ops, stream, &g, 0, lt_tensor_data(bias), out, g.N, planes, oH * oW, 0);
  return scratch_free(ops, copy, rc);
}

static int conv_backward_data(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                              const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight, int kW,
                              int kH, int dW, int dH, int padW, int padH, int extraW, int extraH) {
  conv_geom g;
  if (conv_ready(ops, fn) || conv_geometry(fn, &g, full, input, weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t out_planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  const int64_t in_planes = full ? g.rows : g.C, iH = full ? g.oH : g.H, iW = full ? g.oW : g.W;
  if (conv_check_shape(fn, &g, grad_output, input->type, "gradOutput", out_planes, oH, oW, 0) ||
      conv_check_shape(fn, &g, grad_input, input->type, "gradInput", in_planes, iH, iW, 1))
    return -1;
  if (g.N == 0) return 0;
  char *go, *gi = lt_tensor_data(grad_input);
  void *copy;
  if (conv_contiguous(ops, stream, grad_output, &go, &copy)) return -1;
  int rc = full ? conv_passes(ops, stream, &g, UNFOLD_MULTIPLY, go, gi, lt_tensor_data(weight), 0)
                : conv_passes(ops, stream, &g, MULTIPLY_FOLD, gi, go, lt_tensor_data(weight), 0);
  return scratch_free(ops, copy, rc);
}

static int conv_backward_params(const char *fn, int full, const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias, int kW,
                                int kH, int dW, int dH, int padW, int padH, int extraW, int extraH, double scale) {
  conv_geom g;
  if (conv_ready(ops, fn) ||
      conv_geometry(fn, &g, full, input, grad_weight, kW, kH, dW, dH, padW, padH, extraW, extraH))
    return -1;
  const int64_t out_planes = full ? g.C : g.rows, oH = full ? g.H : g.oH, oW = full ? g.W : g.oW;
  if (conv_check_shape(fn, &g, grad_output, input->type, "gradOutput", out_planes, oH, oW, 0) ||
      (grad_bias && conv_check_vector(fn, grad_bias, input->type, out_planes, "gradBias")))
    return -1;
  if (g.N == 0 || scale == 0) return 0;
  char *in, *go = NULL;
  void *in_copy, *go_copy = NULL;
  if (conv_contiguous(ops, stream, input, &in, &in_copy)) return -1;
  int rc = conv_contiguous(ops, stream, grad_output, &go, &go_copy);
  if (rc == 0)
    rc = conv_passes(ops, stream, &g, UNFOLD_ACCUMULATE, full ? go : in, full ? in : go,
                     lt_tensor_data(grad_weight), scale);
  if (rc == 0 && grad_bias)
    rc = conv_bias(ops, stream, &g, 1, lt_tensor_data(grad_bias), go, g.N, out_planes, oH * oW, scale);
  rc = scratch_free(ops, go_copy, rc);
  return scratch_free(ops, in_copy, rc);
}

int lt_cuops_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                            const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH, int padW,
                            int padH, int dilW, int dilH) {
  return conv_forward("cuda SpatialConvolution forward", 0, ops, stream, input, output, weight, bias, kW, kH, dW, dH,
                      padW, padH, dilW, dilH);
}

int lt_cuops_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight, int kW,
                                  int kH, int dW, int dH, int padW, int padH, int dilW, int dilH) {
  return conv_backward_data("cuda SpatialConvolution backward (gradInput)", 0, ops, stream, input, grad_output,
                            grad_input, weight, kW, kH, dW, dH, padW, padH, dilW, dilH);
}

int lt_cuops_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                    const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias, int kW,
                                    int kH, int dW, int dH, int padW, int padH, int dilW, int dilH, double scale) {
  return conv_backward_params("cuda SpatialConvolution backward (gradWeight, gradBias)", 0, ops, stream, input,
                              grad_output, grad_weight, grad_bias, kW, kH, dW, dH, padW, padH, dilW, dilH, scale);
}

int lt_cuops_full_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                                 const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH,
                                 int padW, int padH, int adjW, int adjH) {
  return conv_forward("cuda SpatialFullConvolution forward", 1, ops, stream, input, output, weight, bias, kW, kH, dW,
                      dH, padW, padH, adjW, adjH);
}

int lt_cuops_full_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                       const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight,
                                       int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH) {
  return conv_backward_data("cuda SpatialFullConvolution backward (gradInput)", 1, ops, stream, input, grad_output,
                            grad_input, weight, kW, kH, dW, dH, padW, padH, adjW, adjH);
}

int lt_cuops_full_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                         const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias,
                                         int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH,
                                         double scale) {
  return conv_backward_params("cuda SpatialFullConvolution backward (gradWeight, gradBias)", 1, ops, stream, input,
                              grad_output, grad_weight, grad_bias, kW, kH, dW, dH, padW, padH, adjW, adjH, scale);
}
