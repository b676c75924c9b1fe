/* lt_nn: THNN-like kernels for Torch7's nn (float and double tensors).
 *
 * Conventions, as in THNN: the kernel resizes its outputs (output, gradInput,
 * work buffers) itself; parameter gradients are accumulated (+= scale * ...),
 * never zeroed; optional tensors (bias, weight, gradBias, ...) may be NULL.
 * Inputs may be non-contiguous (they are copied when they are); parameter
 * vectors may be strided; the convolution's gradWeight must be contiguous. Every function returns 0, or -1 with the
 * message in lt_errmsg(). Images are (N, C, H, W) batches or (C, H, W) single
 * samples. */

/* ---- SpatialConvolutionMM (im2col + GEMM) ----
 * weight is (nOut, nIn, kH, kW) or (nOut, nIn*kH*kW); bias (nOut) or NULL.
 * Output size: floor((in + 2*pad - k) / d) + 1.
 * finput: im2col columns, one nIn*kH*kW x oH*oW matrix per thread (1x1
 * stride-1 pad-0 convolutions use the input itself and leave it alone);
 * accGradParameters unfolds the input again, so nothing has to survive from
 * updateOutput and the buffers may be shared between layers.
 * fgradInput: scratch (per-thread gradient columns, per-thread gradWeight
 * partial sums).
 * Both are resized here and only grow, so warm calls do not allocate. */
int lt_nn_SpatialConvolutionMM_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                            lt_tensor *finput, lt_tensor *fgradInput, int kW, int kH, int dW, int dH,
                                            int padW, int padH);
int lt_nn_SpatialConvolutionMM_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                               lt_tensor *weight, lt_tensor *finput, lt_tensor *fgradInput, int kW,
                                               int kH, int dW, int dH, int padW, int padH);
int lt_nn_SpatialConvolutionMM_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                 lt_tensor *gradBias, lt_tensor *finput, lt_tensor *fgradInput,
                                                 int kW, int kH, int dW, int dH, int padW, int padH, double scale);
/* How the batch is spread over threads: 1 samples in parallel with
 * single-threaded GEMMs, 2 one multi-threaded GEMM per sample, 0 auto
 * (the default: 1 when the batch has at least as many samples as threads).
 * Process-wide; returns the previous setting. For benchmarks and tests. */
int lt_nn_conv_set_strategy(int strategy);

/* ---- BatchNormalization (2-D (N, C)) / SpatialBatchNormalization (4-D) ----
 * Features are dimension 2 (1-based) of input. train != 0: batch statistics,
 * normalized with the biased variance; running_mean/running_var (may be NULL)
 * updated with momentum and the unbiased variance; save_mean and save_std
 * (= 1/sqrt(var + eps)) resized to (C) and filled for backward.
 * train == 0: running statistics. */
int lt_nn_BatchNormalization_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                          lt_tensor *running_mean, lt_tensor *running_var, lt_tensor *save_mean,
                                          lt_tensor *save_std, int train, double momentum, double eps);
/* gradInput, gradWeight, gradBias may each be NULL (skipped). */
int lt_nn_BatchNormalization_backward(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                      lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *weight,
                                      lt_tensor *running_mean, lt_tensor *running_var, lt_tensor *save_mean,
                                      lt_tensor *save_std, int train, double scale, double eps);

/* ---- SpatialMaxPooling / SpatialAveragePooling ----
 * Output size: floor or ceil((in + 2*pad - k) / d) + 1, then, when padW or
 * padH is non-zero, one less where the last window would start at or past
 * in + pad (Torch7's rule). pad must be at most k/2.
 * indices (LongTensor, output's size) hold 1-based flat positions within the
 * input plane: h * iW + w + 1 (THNN's TH_INDEX_BASE). Padding never wins the
 * max; NaN does. */
int lt_nn_SpatialMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW, int kH,
                                         int dW, int dH, int padW, int padH, int ceil_mode);
int lt_nn_SpatialMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                            lt_tensor *indices, int kW, int kH, int dW, int dH, int padW, int padH,
                                            int ceil_mode);
/* The output's height and width by that rule, with the same checks (fn names the caller in errors); only
 * input's sizes are read, so it serves the GPU versions too. */
int lt_nn_SpatialPooling_outputSize(const char *fn, const lt_tensor *input, int kW, int kH, int dW, int dH,
                                    int padW, int padH, int ceil_mode, int64_t *oH, int64_t *oW);
/* Divisor: the window clipped to the padded image (count_include_pad) or to
 * the image itself (exclude). */
int lt_nn_SpatialAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int kW, int kH, int dW, int dH,
                                             int padW, int padH, int ceil_mode, int count_include_pad);
int lt_nn_SpatialAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                int kW, int kH, int dW, int dH, int padW, int padH, int ceil_mode,
                                                int count_include_pad);

/* ---- Threshold (ReLU = Threshold(0, 0)) ----
 * y = x > threshold ? x : val. inplace: input is overwritten and output is
 * set to it; in updateGradInput gradOutput is overwritten and gradInput set
 * to it. The gradient passes where input > threshold. */
int lt_nn_Threshold_updateOutput(lt_tensor *input, lt_tensor *output, double threshold, double val, int inplace);
int lt_nn_Threshold_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                    double threshold, double val, int inplace);

/* ---- SoftMax / LogSoftMax over the feature dimension ----
 * 1-D (dim), 2-D (N, dim), 3-D (dim, H, W), 4-D (N, dim, H, W). */
int lt_nn_SoftMax_updateOutput(lt_tensor *input, lt_tensor *output);
int lt_nn_SoftMax_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, lt_tensor *output);
int lt_nn_LogSoftMax_updateOutput(lt_tensor *input, lt_tensor *output);
int lt_nn_LogSoftMax_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                     lt_tensor *output);

/* ---- ClassNLLCriterion ----
 * input (nClasses) or (N, nClasses); target a LongTensor of 1-based class
 * indices (one, or N); weights (nClasses) or NULL. A target equal to
 * ignore_index contributes nothing. output and total_weight are resized to
 * one element. With size_average the loss is divided by the total weight
 * (unless it is 0). */
int lt_nn_ClassNLLCriterion_updateOutput(lt_tensor *input, lt_tensor *target, lt_tensor *output, int size_average,
                                         lt_tensor *weights, lt_tensor *total_weight, int64_t ignore_index);
int lt_nn_ClassNLLCriterion_updateGradInput(lt_tensor *input, lt_tensor *target, lt_tensor *gradInput,
                                            int size_average, lt_tensor *weights, lt_tensor *total_weight,
                                            int64_t ignore_index);
