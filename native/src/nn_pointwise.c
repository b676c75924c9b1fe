/* Elementwise activations (see lt_nn_pointwise.h for the op table).
 * One generic loop per direction, the per-element formula chosen by op;
 * contiguous tensors take a parallel flat loop, others the strided iterator. */
#ifndef NN_GENERIC_PASS
#include <math.h>
#include "nn_internal.h"

#define NN_GENERIC_FILE "nn_pointwise.c"
#include "nn_generic.h"

static int pw_check(const char *fn, int op, const lt_tensor *input, const lt_tensor *other, const char *what) {
  char b1[160], b2[160];
  if (op < 1 || op >= LT_PW_LAST) return lt_fail("%s: unknown op %d", fn, op);
  if (!nn_is_floating_or_gpu_half(input))   /* (nn_pointwise.cu has Half kernels) */
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(other, input->type, fn, what)) return -1;
  if (other && lt_tensor_nelement(other) != lt_tensor_nelement(input))
    return lt_fail("%s: inconsistent tensor size: %s %s vs input %s", fn, what, lt_shape_str(other, b1, sizeof b1),
                   lt_shape_str(input, b2, sizeof b2));
  return 0;
}

int lt_nn_pointwise_updateOutput(int op, lt_tensor *input, lt_tensor *output, double a, double b, int inplace) {
  static const char fn[] = "pointwise_updateOutput";
  const int device = lt_tensor_is_device(input);   /* cunn's: native/cuda/nn_pointwise.cu */
  if (!device) NN_NEED(input);
  if (pw_check(fn, op, input, NULL, NULL) || nn_check_float(output, input->type, fn, "output")) return -1;
  if (device) return lt_cuda_nn_pointwise_updateOutput(op, input, output, a, b, inplace);
  if (inplace) {
    NN_CALL(input->type, pw_forward, op, input, input, a, b);
    return lt_tensor_set(output, input);
  }
  if (nn_resize_as(output, input)) return -1;
  NN_CALL(input->type, pw_forward, op, output, input, a, b);
  return 0;
}

int lt_nn_pointwise_updateGradInput(int op, lt_tensor *ref, lt_tensor *gradOutput, lt_tensor *gradInput, double a,
                                    double b, int inplace) {
  static const char fn[] = "pointwise_updateGradInput";
  const int device = lt_tensor_is_device(gradOutput);
  if (!device) NN_NEED(gradOutput);
  if (pw_check(fn, op, ref, gradOutput, "gradOutput") || nn_check_float(gradInput, ref->type, fn, "gradInput"))
    return -1;
  if (device) return lt_cuda_nn_pointwise_updateGradInput(op, ref, gradOutput, gradInput, a, b, inplace);
  lt_tensor *dst = gradOutput;
  if (!inplace) {
    if (nn_resize_as(gradInput, gradOutput)) return -1;
    dst = gradInput;
  }
  NN_CALL(ref->type, pw_backward, op, dst, gradOutput, ref, a, b);
  return inplace ? lt_tensor_set(gradInput, gradOutput) : 0;
}

#else /* ---------------------------------------------- generic part (real) */

static inline real NN_(pw_f)(int op, real x, real a, real b) {
  switch (op) {
    case LT_PW_TANH: return (real)tanh(x);
    case LT_PW_SIGMOID: return (real)(1 / (1 + NN_EXP(-x)));
    case LT_PW_HARDTANH: return x < a ? a : (x > b ? b : x);
    case LT_PW_LEAKYRELU: return x > 0 ? x : x * a;
    case LT_PW_ELU: return x <= 0 ? (NN_EXP(x) - 1) * a : x;
    case LT_PW_SOFTPLUS: return x * a > b ? x : (real)(log1p(exp((double)x * a)) / a);
    case LT_PW_SOFTSIGN: return x / (1 + (x < 0 ? -x : x));
    case LT_PW_SOFTSHRINK: return x > a ? x - a : (x < -a ? x + a : 0);
    case LT_PW_HARDSHRINK: return (x > a || x < -a) ? x : 0;
    case LT_PW_TANHSHRINK: return x - (real)tanh(x);
    case LT_PW_LOGSIGMOID: {
      /* -log(1+e^-x) = min(x,0) - log1p(e^-|x|): no overflow either side */
      double d = x;
      return (real)((d < 0 ? d : 0) - log1p(exp(d < 0 ? d : -d)));
    }
    case LT_PW_ABS: return x < 0 ? -x : x;
    case LT_PW_EXP: return NN_EXP(x);
    case LT_PW_LOG: return NN_LOG(x);
    case LT_PW_SQRT: return (real)sqrt((double)x + a);
    case LT_PW_SQUARE: return x * x;
    case LT_PW_POWER: return (real)pow(x, a);
    case LT_PW_THRESHOLD: return x > a ? x : b;
  }
  return 0;
}

/* dx given dy and the op's reference value r (x or y, see the header). */
static inline real NN_(pw_df)(int op, real g, real r, real a, real b) {
  switch (op) {
    case LT_PW_TANH: return g * (1 - r * r);
    case LT_PW_SIGMOID: return g * (1 - r) * r;
    case LT_PW_HARDTANH: return (r <= a || r >= b) ? 0 : g;
    case LT_PW_LEAKYRELU: return r > 0 ? g : g * a;
    case LT_PW_ELU: return r <= 0 ? g * (r + a) : g;
    case LT_PW_SOFTPLUS: {
      if (r * a > b) return g;
      double z = exp((double)r * a);
      return (real)(g * (z - 1) / z);
    }
    case LT_PW_SOFTSIGN: {
      real d = 1 + (r < 0 ? -r : r);
      return g / (d * d);
    }
    case LT_PW_SOFTSHRINK:
    case LT_PW_HARDSHRINK: return (r > a || r < -a) ? g : 0;
    case LT_PW_TANHSHRINK: {
      real t = (real)tanh(r);
      return g * t * t;
    }
    case LT_PW_LOGSIGMOID: {
      /* d/dx = 1 - sigmoid(x) = sigmoid(-x) */
      double d = r, e = exp(d < 0 ? d : -d);
      return (real)(g * (d < 0 ? 1 / (1 + e) : e / (1 + e)));
    }
    case LT_PW_ABS: return r < 0 ? -g : g;
    case LT_PW_EXP: return g * r;
    case LT_PW_LOG: return g / r;
    case LT_PW_SQRT: return r == 0 ? 0 : (real)0.5 * g / r;
    case LT_PW_SQUARE: return 2 * g * r;
    case LT_PW_POWER: return (real)(g * a * pow(r, a - 1));
    case LT_PW_THRESHOLD: return r > a ? g : 0;
  }
  return 0;
}

/* out = f(in) (out may be in). */
static void NN_(pw_forward)(int op, lt_tensor *out, const lt_tensor *in, double a_, double b_) {
  const real a = (real)a_, b = (real)b_;
  if (lt_tensor_is_contiguous(out) && lt_tensor_is_contiguous(in)) {
    real *y = lt_tensor_data(out);
    const real *x = lt_tensor_data(in);
    int64_t n = lt_tensor_nelement(in), lt_par_n = n * 8;
    LT_PARALLEL_FOR
    for (int64_t i = 0; i < n; i++) y[i] = NN_(pw_f)(op, x[i], a, b);
    return;
  }
  lt_iter ia, ib;
  lt_iter_init(&ia, out);
  lt_iter_init(&ib, in);
  while (!lt_iter_done(&ia)) {
    int64_t m = lt_iter_run(&ia, &ib, NULL);
    real *y = (real *)ia.ptr;
    const real *x = (const real *)ib.ptr;
    int64_t sy = ia.inner_stride, sx = ib.inner_stride;
    for (int64_t i = 0; i < m; i++) y[i * sy] = NN_(pw_f)(op, x[i * sx], a, b);
    lt_iter_advance(&ia, m);
    lt_iter_advance(&ib, m);
  }
}

/* gi = f'(ref) * go (gi may be go). */
static void NN_(pw_backward)(int op, lt_tensor *gi, const lt_tensor *go, const lt_tensor *ref, double a_,
                             double b_) {
  const real a = (real)a_, b = (real)b_;
  if (lt_tensor_is_contiguous(gi) && lt_tensor_is_contiguous(go) && lt_tensor_is_contiguous(ref)) {
    real *d = lt_tensor_data(gi);
    const real *g = lt_tensor_data(go), *r = lt_tensor_data(ref);
    int64_t n = lt_tensor_nelement(ref), lt_par_n = n * 8;
    LT_PARALLEL_FOR
    for (int64_t i = 0; i < n; i++) d[i] = NN_(pw_df)(op, g[i], r[i], a, b);
    return;
  }
  lt_iter ia, ib, ic;
  lt_iter_init(&ia, gi);
  lt_iter_init(&ib, go);
  lt_iter_init(&ic, ref);
  while (!lt_iter_done(&ia)) {
    int64_t m = lt_iter_run(&ia, &ib, &ic);
    real *d = (real *)ia.ptr;
    const real *g = (const real *)ib.ptr, *r = (const real *)ic.ptr;
    int64_t sd = ia.inner_stride, sg = ib.inner_stride, sr = ic.inner_stride;
    for (int64_t i = 0; i < m; i++) d[i * sd] = NN_(pw_df)(op, g[i * sg], r[i * sr], a, b);
    lt_iter_advance(&ia, m);
    lt_iter_advance(&ib, m);
    lt_iter_advance(&ic, m);
  }
}

#endif
