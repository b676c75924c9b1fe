/* nn kernels: pooling and normalization layers (Torch7's THNN counterparts). */
#ifndef LT_NN_POOLING_H
#define LT_NN_POOLING_H

/* ---- SpatialAdaptiveMaxPooling / SpatialAdaptiveAveragePooling ----
 * (C, H, W) or (N, C, H, W) to a fixed (H, W) output; output cell o of n
 * covers the input rows [floor(o*in/n), ceil((o+1)*in/n)). indices are
 * Torch7's (2, [N,] C, H, W) LongTensor: the row (first half) and column
 * (second half) of each maximum, 1-based within its window. */
int lt_nn_SpatialAdaptiveMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int W,
                                                 int H);
int lt_nn_SpatialAdaptiveMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *indices);
int lt_nn_SpatialAdaptiveAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int W, int H);
int lt_nn_SpatialAdaptiveAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                        lt_tensor *gradInput);

/* ---- SpatialDilatedMaxPooling ----
 * Output size floor|ceil((in + 2*pad - dilation*(k-1) - 1) / d) + 1, one less
 * when padded and the last window would start past in + pad. indices as
 * SpatialMaxPooling's: 1-based flat positions h * iW + w + 1 in the plane. */
int lt_nn_SpatialDilatedMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW,
                                                int kH, int dW, int dH, int padW, int padH, int dilationW,
                                                int dilationH, int ceil_mode);
int lt_nn_SpatialDilatedMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   lt_tensor *indices, int kW, int kH, int dW, int dH, int padW,
                                                   int padH, int dilationW, int dilationH, int ceil_mode);

/* ---- SpatialMaxUnpooling ----
 * input and indices have the pooling module's output shape; each value goes
 * to its 1-based flat position in an (oH, oW) plane of zeros. */
int lt_nn_SpatialMaxUnpooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int oW, int oH);
int lt_nn_SpatialMaxUnpooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *indices, int oW, int oH);

/* ---- SpatialCrossMapLRN ----
 * scale = k + alpha/size * sum of input^2 over the channels
 * [c - size/2, c + (size-1)/2]; output = input * scale^-beta. scale and
 * output from updateOutput feed updateGradInput. */
int lt_nn_SpatialCrossMapLRN_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *scale, int size,
                                          double alpha, double beta, double k);
int lt_nn_SpatialCrossMapLRN_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *scale, lt_tensor *output, int size, double alpha,
                                             double beta, double k);

/* ---- VolumetricMaxPooling / VolumetricDilatedMaxPooling ----
 * (C, T, H, W) or (N, C, T, H, W); sizes as SpatialDilatedMaxPooling's per
 * dimension. indices (LongTensor, output's size) hold Torch7's packed taps:
 * t | h << 8 | w << 16, the maximum's tap within its unclipped window
 * (kernels of at most 255 taps). */
int lt_nn_VolumetricDilatedMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kT,
                                                   int kW, int kH, int dT, int dW, int dH, int padT, int padW,
                                                   int padH, int dilationT, int dilationW, int dilationH,
                                                   int ceil_mode);
int lt_nn_VolumetricDilatedMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                      lt_tensor *indices, int kT, int kW, int kH, int dT, int dW,
                                                      int dH, int padT, int padW, int padH, int dilationT,
                                                      int dilationW, int dilationH, int ceil_mode);
/* ---- SpatialSubSampling / TemporalSubSampling on CUDA tensors (cunn's GPU versions): input (N, C, iH, iW), any
 * layout; out = w[c] * (the kH x kW window's sum) + b[c], c the plane, or with byCol the output column (a temporal
 * input as (N, 1, T, F) with kW = 1). pass 0 the forward into result ((N, C, oH, oW)), 1 the gradInput into
 * result, 2 scale * the gradients added into result (gradWeight) and result2 (gradBias), both contiguous. Float,
 * Double and Half (in float). */
int lt_cuda_nn_subsampling(int pass, const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result,
                           lt_tensor *result2, const lt_tensor *weight, const lt_tensor *bias, int kW, int kH,
                           int dW, int dH, int byCol, double scale);

/* ---- FeatureLPPooling on CUDA tensors (cunn's GPU version): input3 the input seen as (B, F, S); the forward
 * (gradOutput NULL) into result (B, oF, S), or the gradient into result (B, F, S) from gradOutput and the forward's
 * output. Float, Double and Half (in float). */
int lt_cuda_nn_feature_lp(const lt_tensor *input3, const lt_tensor *gradOutput, const lt_tensor *output,
                          lt_tensor *result, double power, int width, int stride);

/* ---- VolumetricAveragePooling (no padding, floor): output (in - k) / d + 1 ---- */
int lt_nn_VolumetricAveragePooling_updateOutput(lt_tensor *input, lt_tensor *output, int kT, int kW, int kH, int dT,
                                                int dW, int dH);
int lt_nn_VolumetricAveragePooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   int kT, int kW, int kH, int dT, int dW, int dH);
/* ---- VolumetricMaxUnpooling: the pooling module's indices, strides and pads,
 * rebuilding an (oT, oH, oW) volume. ---- */
int lt_nn_VolumetricMaxUnpooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int oT,
                                              int oW, int oH, int dT, int dW, int dH, int padT, int padW, int padH);
int lt_nn_VolumetricMaxUnpooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *indices, int oT, int oW, int oH, int dT, int dW, int dH,
                                                 int padT, int padW, int padH);
/* ---- TemporalMaxPooling: (T, F) or (N, T, F), output (T - kW) / dW + 1 frames;
 * indices are 0-based offsets of the maximum within its window (Torch7). ---- */
int lt_nn_TemporalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *indices, int kW, int dW);
int lt_nn_TemporalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *indices, int kW, int dW);

/* ---- FeatureLPPooling ----
 * (sum x^p)^(1/p) over `width` (2..16) consecutive features, `stride` (1..4)
 * apart; input [B,] F [, o1 [, o2]] (B only with batch_mode), output with
 * (F - width) / stride + 1 features. Backward: gradOutput * (x / y)^(p-1),
 * nothing where y is 0. */
int lt_nn_FeatureLPPooling_updateOutput(lt_tensor *input, lt_tensor *output, double power, int width, int stride,
                                        int batch_mode);
int lt_nn_FeatureLPPooling_updateGradInput(lt_tensor *gradOutput, lt_tensor *input, lt_tensor *output,
                                           lt_tensor *gradInput, double power, int width, int stride,
                                           int batch_mode);

/* ---- SpatialFractionalMaxPooling ----
 * (outH, outW) maxima of poolSizeH x poolSizeW windows whose starts follow
 * Torch7's pseudo-random sequence, per plane from randomSamples ([N,] C, 2)
 * (u for W, then for H, in [0, 1)); outW + poolSizeW - 1 < iW (and H).
 * indices as SpatialMaxPooling's (1-based flat plane positions). */
int lt_nn_SpatialFractionalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, int outW, int outH,
                                                   int poolSizeW, int poolSizeH, lt_tensor *indices,
                                                   lt_tensor *randomSamples);
int lt_nn_SpatialFractionalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                      int outW, int outH, int poolSizeW, int poolSizeH,
                                                      lt_tensor *indices);

/* ---- VolumetricFractionalMaxPooling ----
 * Torch7's layout: input ([N,] C, H, W, T), output ([N,] C, outH, outW, outT),
 * randomSamples ([N,] C, 3) = the samples for T, W, H; windows as
 * SpatialFractionalMaxPooling's; indices 1-based flat positions in the
 * (H, W, T) volume. */
int lt_nn_VolumetricFractionalMaxPooling_updateOutput(lt_tensor *input, lt_tensor *output, int outT, int outW,
                                                      int outH, int poolSizeT, int poolSizeW, int poolSizeH,
                                                      lt_tensor *indices, lt_tensor *randomSamples);
int lt_nn_VolumetricFractionalMaxPooling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                         lt_tensor *gradInput, int outT, int outW, int outH,
                                                         int poolSizeT, int poolSizeW, int poolSizeH,
                                                         lt_tensor *indices);

#endif
