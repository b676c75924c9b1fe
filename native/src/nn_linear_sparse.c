/* SparseLinear's kernels (THNN's SparseLinear.c counterpart) on a list of
 * {sample, column, value} entries. Threads split the output units, so each
 * writes only its own rows of weight-shaped tensors and columns of output. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

#define NN_GENERIC_FILE "nn_linear_sparse.c"
#include "nn_generic.h"

static int sl_check(const char *fn, const lt_tensor *input, const lt_tensor *weight, int64_t nSamples) {
  if (lt_host_type(weight->type) != LT_FLOAT && lt_host_type(weight->type) != LT_DOUBLE)
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (nn_check_given(input, weight->type, fn, "input")) return -1;
  if (weight->ndim != 2 || !lt_tensor_is_contiguous(weight)) return lt_fail("%s: weight must be a contiguous matrix", fn);
  if (input->ndim != 2 || input->size[1] != 3 || !lt_tensor_is_contiguous(input))
    return lt_fail("%s: input must be a contiguous nnz x 3 tensor of {sample, column, value}", fn);
  return NN_CALL(weight->type, sl_check_entries, fn, input, weight->size[1], nSamples);
}

int lt_nn_SparseLinear_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                    int64_t nSamples) {
  NN_NEED(input);
  static const char fn[] = "SparseLinear_updateOutput";
  if (sl_check(fn, input, weight, nSamples) || nn_check_float(output, weight->type, fn, "output") ||
      nn_check_vec(bias, weight->size[0], weight->type, fn, "bias"))
    return -1;
  int64_t shape[2] = {nSamples, weight->size[0]};
  if (lt_tensor_resize(output, 2, shape)) return -1;
  NN_CALL(weight->type, sl_forward, input, output, weight, bias);
  return 0;
}

int lt_nn_SparseLinear_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                         lt_tensor *gradBias, lt_tensor *weight, double weightDecay, double scale) {
  NN_NEED(input, gradOutput);
  static const char fn[] = "SparseLinear_accGradParameters";
  int64_t nOut = weight->size[0];
  if (gradOutput->ndim != 2 || gradOutput->size[1] != nOut)
    return lt_fail("%s: gradOutput must be nSamples x %lld", fn, (long long)nOut);
  if (sl_check(fn, input, weight, gradOutput->size[0]) || sl_check(fn, input, gradWeight, gradOutput->size[0]) ||
      nn_check_given(gradOutput, weight->type, fn, "gradOutput") ||
      nn_check_vec(gradBias, nOut, weight->type, fn, "gradBias"))
    return -1;
  if (!lt_tensor_is_same_size(gradWeight, weight)) return lt_fail("%s: gradWeight and weight differ in size", fn);
  nn_copies cp = {0};
  const void *go = nn_contig(&cp, gradOutput);
  if (!go) return nn_copies_free(&cp, -1);
  NN_CALL(weight->type, sl_backward, input, go, gradOutput->size[0], gradWeight, gradBias, weight, weightDecay,
          scale);
  return nn_copies_free(&cp, 0);
}

#else /* ---------------------------------------------- generic part (real) */

static int NN_(sl_check_entries)(const char *fn, const lt_tensor *input, int64_t nIn, int64_t nSamples) {
  const real *e = lt_tensor_data(input);
  for (int64_t i = 0; i < input->size[0]; i++) {
    int64_t s = (int64_t)e[3 * i], c = (int64_t)e[3 * i + 1];
    if (s < 1 || s > nSamples) return lt_fail("%s: sample %lld out of range [1, %lld]", fn, (long long)s, (long long)nSamples);
    if (c < 1 || c > nIn) return lt_fail("%s: column %lld out of range [1, %lld]", fn, (long long)c, (long long)nIn);
  }
  return 0;
}

static void NN_(sl_forward)(const lt_tensor *input, lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias) {
  const real *e = lt_tensor_data(input), *w = lt_tensor_data(weight);
  const real *b = bias ? lt_tensor_data(bias) : NULL;
  int64_t bs = bias ? nn_vec_stride(bias) : 0;
  real *y = lt_tensor_data(output);
  int64_t nOut = weight->size[0], nIn = weight->size[1], nnz = input->size[0], nS = output->size[0];
  int64_t lt_par_n = nnz * nOut;
  LT_PARALLEL_FOR
  for (int64_t o = 0; o < nOut; o++) {
    for (int64_t s = 0; s < nS; s++) y[s * nOut + o] = b ? b[o * bs] : 0;
    for (int64_t i = 0; i < nnz; i++) {
      int64_t s = (int64_t)e[3 * i] - 1, c = (int64_t)e[3 * i + 1] - 1;
      y[s * nOut + o] += e[3 * i + 2] * w[o * nIn + c];
    }
  }
}

static void NN_(sl_backward)(const lt_tensor *input, const void *gov, int64_t nS, lt_tensor *gradWeight,
                             lt_tensor *gradBias, const lt_tensor *weight, double weightDecay, double scale) {
  const real *e = lt_tensor_data(input), *go = gov, *w = lt_tensor_data(weight);
  real *gw = lt_tensor_data(gradWeight);
  real *gb = gradBias ? lt_tensor_data(gradBias) : NULL;
  int64_t gbs = gradBias ? nn_vec_stride(gradBias) : 0;
  int64_t nOut = weight->size[0], nIn = weight->size[1], nnz = input->size[0];
  int64_t lt_par_n = (nnz + nIn) * nOut;
  const real sc = (real)scale, wd = (real)weightDecay;
  LT_PARALLEL_FOR
  for (int64_t o = 0; o < nOut; o++) {
    real *row = gw + o * nIn;
    for (int64_t i = 0; i < nnz; i++) {
      int64_t s = (int64_t)e[3 * i] - 1, c = (int64_t)e[3 * i + 1] - 1;
      row[c] += sc * e[3 * i + 2] * go[s * nOut + o];
    }
    if (gb) {
      accreal sum = 0;
      for (int64_t s = 0; s < nS; s++) sum += go[s * nOut + o];
      gb[o * gbs] += (real)(scale * sum);
    }
    if (wd != 0)
      for (int64_t c = 0; c < nIn; c++) row[c] += wd * w[o * nIn + c];
  }
}

#endif
