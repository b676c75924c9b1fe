/* nn kernels: simple parametric layers, lookup, misc (Torch7's THNN counterparts). */
#ifndef LT_NN_LINEAR_H
#define LT_NN_LINEAR_H

/* ---- LookupTable ----
 * input: contiguous LongTensor or IntTensor of 1-based row indices (any
 * shape, read flat, n elements); gradOutput: n x dim (any shape of n*dim
 * elements, any strides); gradWeight: contiguous nIndex x dim.
 * gradWeight[input[i]] += scale * gradOutput[i] (divided by how often the
 * index occurs in input when scale_by_freq); rows equal to padding_value are
 * skipped. count (IntTensor, may be NULL unless scale_by_freq) is resized to
 * nIndex and holds the counts. */
int lt_nn_LookupTable_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                        lt_tensor *count, int scale_by_freq, int64_t padding_value,
                                        double scale);
/* Rows of weight (contiguous nIndex x dim) named in input whose normType-norm
 * exceeds maxNorm are scaled to norm maxNorm (each distinct row once). */
int lt_nn_LookupTable_renorm(lt_tensor *input, lt_tensor *weight, double maxNorm, double normType);

/* ---- SparseLinear ----
 * input: (nnz, 3) float/double rows {sample, column, value}, sample and column
 * 1-based; weight (nOut, nIn) contiguous; bias (nOut). output is resized to
 * (nSamples, nOut): output[s] = bias + sum of value * weight[:, column] over the
 * entries of sample s. accGradParameters: gradWeight[:, column] += scale *
 * value * gradOutput[s], gradBias += scale * column sums of gradOutput, then
 * gradWeight += weightDecay * weight (dense, as THNN). gradWeight contiguous. */
int lt_nn_SparseLinear_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                    int64_t nSamples);
int lt_nn_SparseLinear_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                         lt_tensor *gradBias, lt_tensor *weight, double weightDecay, double scale);

#endif
