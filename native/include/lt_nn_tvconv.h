/* nn kernels: temporal and volumetric convolutions (Torch7's THNN counterparts). */
#ifndef LT_NN_TVCONV_H
#define LT_NN_TVCONV_H

/* ---- TemporalConvolution ----
 * input (nFrames, inputFrameSize) or (N, nFrames, inputFrameSize); weight
 * (outputFrameSize, kW*inputFrameSize); output (nOutFrames, outputFrameSize)
 * with nOutFrames = (nFrames - kW) / dW + 1. Each output frame is
 * bias + weight * (the kW input frames of its window, concatenated). */
int lt_nn_TemporalConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                           int kW, int dW, int inputFrameSize, int outputFrameSize);
int lt_nn_TemporalConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *weight, int kW, int dW);
int lt_nn_TemporalConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                lt_tensor *gradBias, int kW, int dW, double scale);

/* ---- TemporalSubSampling ----
 * input (nFrames, inputFrameSize) or (N, nFrames, inputFrameSize); weight and
 * bias (inputFrameSize): out[t][f] = bias[f] + weight[f] * sum of the kW
 * input frames of window t, feature f. */
int lt_nn_TemporalSubSampling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                           int kW, int dW, int inputFrameSize);
int lt_nn_TemporalSubSampling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                              lt_tensor *weight, int kW, int dW);
int lt_nn_TemporalSubSampling_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                lt_tensor *gradBias, int kW, int dW, double scale);

/* ---- TemporalRowConvolution (each feature row convolved with its own kernel) ----
 * featFirst: input (inputFrameSize, nFrames) or (N, inputFrameSize, nFrames);
 * otherwise (nFrames, inputFrameSize) or (N, nFrames, inputFrameSize), and
 * the output has the same layout. weight (inputFrameSize, 1, kW), bias
 * (inputFrameSize) or NULL. nOutFrames = (nFrames + 2*padW - kW) / dW + 1. */
int lt_nn_TemporalRowConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                              lt_tensor *bias, int kW, int dW, int padW, int featFirst);
int lt_nn_TemporalRowConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *weight, int kW, int dW, int padW, int featFirst);
int lt_nn_TemporalRowConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                   lt_tensor *gradBias, int kW, int dW, int padW, int featFirst,
                                                   double scale);
/* The same on CUDA tensors (cunn's GPU version), on (N, F, T) views x of the input and y of the output or
 * gradOutput ((N, F, oT)), any strides: pass 0 the forward into y; 1 the gradInput into result (x's shape) from
 * y = gradOutput; 2 scale * the gradients added into result (gradWeight, contiguous) and result2 (gradBias,
 * contiguous, or NULL). No padding. Float, Double and Half (in float). */
int lt_cuda_nn_rowconv(int pass, const lt_tensor *x, const lt_tensor *y, lt_tensor *result, lt_tensor *result2,
                       const lt_tensor *weight, const lt_tensor *bias, int kW, int dW, double scale);

/* The unfold-based convolutions (SpatialDilatedConvolution, SpatialFullConvolution,
 * Volumetric[Dilated|Full]Convolution) build their column matrices in chunks
 * of about this many elements per thread (whole output rows, at least one);
 * 0 restores the default (2^18, and at least 256 columns). Returns the
 * previous setting. For tests of the chunked paths. */
int64_t lt_nn_unfold_set_chunk(int64_t elements);

/* ---- VolumetricConvolution / VolumetricDilatedConvolution (vol2col + GEMM) ----
 * input (nIn, T, H, W) or (N, nIn, T, H, W); weight (nOut, nIn, kT, kH, kW)
 * or (nOut, nIn*kT*kH*kW); bias (nOut) or NULL. Output size per dimension:
 * (in + 2*pad - dil*(k-1) - 1) / d + 1. finput: the column buffer (resized
 * here; nothing in it survives between calls). gradWeight contiguous. */
int lt_nn_VolumetricConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                             lt_tensor *bias, lt_tensor *finput, int kT, int kW, int kH, int dT,
                                             int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                                             int dilH);
int lt_nn_VolumetricConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                lt_tensor *weight, lt_tensor *finput, int kT, int kW, int kH, int dT,
                                                int dW, int dH, int padT, int padW, int padH, int dilT, int dilW,
                                                int dilH);
int lt_nn_VolumetricConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                  lt_tensor *gradBias, lt_tensor *finput, int kT, int kW, int kH,
                                                  int dT, int dW, int dH, int padT, int padW, int padH, int dilT,
                                                  int dilW, int dilH, double scale);

/* ---- VolumetricFullConvolution (transposed convolution) ----
 * weight (nIn, nOut, kT, kH, kW); output size per dimension:
 * (in - 1)*d - 2*pad + k + adj. finput: the column buffer. */
int lt_nn_VolumetricFullConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                 lt_tensor *bias, lt_tensor *finput, int dT, int dW, int dH,
                                                 int padT, int padW, int padH, int adjT, int adjW, int adjH);
int lt_nn_VolumetricFullConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *weight, lt_tensor *finput, int dT, int dW, int dH,
                                                    int padT, int padW, int padH, int adjT, int adjW, int adjH);
int lt_nn_VolumetricFullConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradWeight, lt_tensor *gradBias, lt_tensor *finput,
                                                      int dT, int dW, int dH, int padT, int padW, int padH, int adjT,
                                                      int adjW, int adjH, double scale);

#endif
