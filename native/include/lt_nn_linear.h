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
/* nn.LookupTable with its weight in GPU memory (native/src/cuda_nn.c; cutorch's GPU backend): the indices (any
 * type, host or GPU memory) are read on the host. The forward gathers the rows into output (n x dim, on the
 * weight's GPU); the other two are the CPU kernels' semantics, gradient sums without atomics. */
int lt_cuda_nn_lookup_forward(const lt_tensor *input, lt_tensor *weight, lt_tensor *output);
int lt_cuda_nn_lookup_acc(const lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight, int scale_by_freq,
                          int64_t padding_value, double scale);
int lt_cuda_nn_lookup_renorm(const lt_tensor *input, lt_tensor *weight, double max_norm, double norm_type);

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

/* IndexLinear */
/* Samples of sparse {key, value} features, concatenated over the batch:
 * keys (LongTensor) and values (float/double, the weight's type) hold nKeys
 * elements, sizes (LongTensor) the number of keys of each sample and
 * cumSumSizes their running sums. A key names weight row key + keysOffset
 * (0-based). weight: contiguous (nIn, nNorm + nOut) with nNorm 0, or 4 under
 * max-normalization (per row {max |value| seen, its inverse, update scale,
 * value bias}, then the nOut weights); bias: contiguous (nOut).
 * updateOutput: output is resized to (nSamples, nOut), output[s] = bias +
 * sum of value * weight row over the keys of s; under max-normalization the
 * value is first normalized (into normalizedValues, resized to nKeys):
 * (|v| > max ? sign(v) : v / max) + value bias, the statistics updated first
 * when train != 0. accGradParameters resizes gradWeight to one row per key,
 * scale * value * gradOutput[s] (preceded by scale * gradOutput[s] under
 * max-normalization), and adds scale * column sums of gradOutput to gradBias.
 * accUpdateGradParameters applies that step to weight and bias directly (and
 * updateParameters a recorded gradWeight for keys, learningRate times): each
 * key's row decays by weightDecay (times the update scale when normalizing)
 * and moves by -step * gradient, in key order. */
int lt_nn_IndexLinear_updateOutput(lt_tensor *keys, int64_t keysOffset, lt_tensor *values, lt_tensor *sizes,
                                   lt_tensor *cumSumSizes, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                   lt_tensor *normalizedValues, int train);
int lt_nn_IndexLinear_accGradParameters(lt_tensor *keys, int64_t keysOffset, lt_tensor *values, lt_tensor *sizes,
                                        lt_tensor *cumSumSizes, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                        lt_tensor *gradBias, lt_tensor *weight, lt_tensor *bias, double scale);
int lt_nn_IndexLinear_accUpdateGradParameters(lt_tensor *keys, int64_t keysOffset, lt_tensor *values,
                                              lt_tensor *sizes, lt_tensor *cumSumSizes, lt_tensor *gradOutput,
                                              lt_tensor *weight, lt_tensor *bias, double weightDecay, double scale);
int lt_nn_IndexLinear_updateParameters(lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *weight,
                                       lt_tensor *bias, lt_tensor *keys, int64_t keysOffset, double weightDecay,
                                       double learningRate);

#endif
