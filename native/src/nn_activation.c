/* Threshold (and ReLU = Threshold(0, 0)), THNN's Threshold.c:
 *   y = x > threshold ? x : val         (strict >, so NaN gives val)
 *   dx = x > threshold ? dy : 0
 * Any strides; the in-place forms write into input / gradOutput and make
 * output / gradInput views of them. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

#define NN_GENERIC_FILE "nn_activation.c"
#include "nn_generic.h"

static int thr_check(const char *fn, const lt_tensor *input, const lt_tensor *other, const char *what) {
  char b1[160], b2[160];
  if (!nn_is_floating(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_float(other, input->type, fn, what)) return -1;
  if (other && lt_tensor_nelement(other) != lt_tensor_nelement(input))
    return lt_fail("%s: inconsistent tensor size: %s %s vs input %s", fn, what, lt_shape_str(other, b1, sizeof b1),
                   lt_shape_str(input, b2, sizeof b2));
  return 0;
}

int lt_nn_Threshold_updateOutput(lt_tensor *input, lt_tensor *output, double threshold, double val, int inplace) {
  NN_NEED(input);
  static const char fn[] = "Threshold_updateOutput";
  if (thr_check(fn, input, NULL, NULL) || nn_check_float(output, input->type, fn, "output")) return -1;
  if (inplace) {
    NN_CALL(input->type, thr_forward, input, input, threshold, val);
    return lt_tensor_set(output, input);
  }
  if (nn_resize_as(output, input)) return -1;
  NN_CALL(input->type, thr_forward, output, input, threshold, val);
  return 0;
}

int lt_nn_Threshold_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, double threshold,
                                    double val, int inplace) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "Threshold_updateGradInput";
  (void)val;
  if (thr_check(fn, input, gradOutput, "gradOutput") || nn_check_float(gradInput, input->type, fn, "gradInput"))
    return -1;
  lt_tensor *dst = gradOutput;
  if (!inplace) {
    if (nn_resize_as(gradInput, input)) return -1;
    dst = gradInput;
  }
  NN_CALL(input->type, thr_backward, dst, gradOutput, input, threshold);
  return inplace ? lt_tensor_set(gradInput, gradOutput) : 0;
}

#else /* ---------------------------------------------- generic part (real) */

/* out = in > th ? in : val (out may be in). */
static void NN_(thr_forward)(lt_tensor *out, const lt_tensor *in, double th, double val) {
  const real t = (real)th, v = (real)val;
  if (lt_tensor_is_contiguous(out) && lt_tensor_is_contiguous(in)) {
    real *y = lt_tensor_data(out);
    const real *x = lt_tensor_data(in);
    int64_t n = lt_tensor_nelement(in), lt_par_n = n;
    LT_PARALLEL_FOR
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > t ? x[i] : v;
    return;
  }
  lt_iter a, b;
  lt_iter_init(&a, out);
  lt_iter_init(&b, in);
  while (!lt_iter_done(&a)) {
    int64_t m = lt_iter_run(&a, &b, NULL);
    real *y = (real *)a.ptr;
    const real *x = (const real *)b.ptr;
    int64_t sy = a.inner_stride, sx = b.inner_stride;
    for (int64_t i = 0; i < m; i++) y[i * sy] = x[i * sx] > t ? x[i * sx] : v;
    lt_iter_advance(&a, m);
    lt_iter_advance(&b, m);
  }
}

/* gi = x > th ? go : 0 (gi may be go). */
static void NN_(thr_backward)(lt_tensor *gi, const lt_tensor *go, const lt_tensor *in, double th) {
  const real t = (real)th;
  if (lt_tensor_is_contiguous(gi) && lt_tensor_is_contiguous(go) && lt_tensor_is_contiguous(in)) {
    real *d = lt_tensor_data(gi);
    const real *g = lt_tensor_data(go), *x = lt_tensor_data(in);
    int64_t n = lt_tensor_nelement(in), lt_par_n = n;
    LT_PARALLEL_FOR
    for (int64_t i = 0; i < n; i++) d[i] = x[i] > t ? g[i] : 0;
    return;
  }
  lt_iter a, b, c;
  lt_iter_init(&a, gi);
  lt_iter_init(&b, go);
  lt_iter_init(&c, in);
  while (!lt_iter_done(&a)) {
    int64_t m = lt_iter_run(&a, &b, &c);
    real *d = (real *)a.ptr;
    const real *g = (const real *)b.ptr, *x = (const real *)c.ptr;
    int64_t sd = a.inner_stride, sg = b.inner_stride, sx = c.inner_stride;
    for (int64_t i = 0; i < m; i++) d[i * sd] = x[i * sx] > t ? g[i * sg] : 0;
    lt_iter_advance(&a, m);
    lt_iter_advance(&b, m);
    lt_iter_advance(&c, m);
  }
}

#endif
