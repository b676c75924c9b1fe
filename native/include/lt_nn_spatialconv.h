/* nn kernels: spatial convolutions (Torch7's THNN counterparts).
 * Same conventions as lt_nn.h (outputs and buffers resized here, parameter
 * gradients accumulated with scale, bias/gradBias may be NULL, 3-D or 4-D
 * (batch) images). `columns` is a scratch tensor (column chunks and partial
 * weight gradients; see lt_nn_unfold_set_chunk in lt_nn_tvconv.h). */
#ifndef LT_NN_SPATIALCONV_H
#define LT_NN_SPATIALCONV_H


/* ---- SpatialDilatedConvolution ----
 * weight (nOut, nIn, kH, kW) or (nOut, nIn*kH*kW). Output size:
 * floor((in + 2*pad - (dil*(k-1)+1)) / d) + 1. */
int lt_nn_SpatialDilatedConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                 lt_tensor *bias, lt_tensor *columns, int kW, int kH, int dW,
                                                 int dH, int padW, int padH, int dilationW, int dilationH);
int lt_nn_SpatialDilatedConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    lt_tensor *weight, lt_tensor *columns, int kW, int kH, int dW,
                                                    int dH, int padW, int padH, int dilationW, int dilationH);
int lt_nn_SpatialDilatedConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradWeight, lt_tensor *gradBias,
                                                      lt_tensor *columns, int kW, int kH, int dW, int dH, int padW,
                                                      int padH, int dilationW, int dilationH, double scale);

/* ---- SpatialFullConvolution (transposed convolution) ----
 * weight (nIn, nOut, kH, kW). Output size: (in - 1)*d - 2*pad + k + adj,
 * with 0 <= adj < d. */
int lt_nn_SpatialFullConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                              lt_tensor *bias, lt_tensor *columns, int kW, int kH, int dW, int dH,
                                              int padW, int padH, int adjW, int adjH);
int lt_nn_SpatialFullConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                 lt_tensor *weight, lt_tensor *columns, int kW, int kH, int dW,
                                                 int dH, int padW, int padH, int adjW, int adjH);
int lt_nn_SpatialFullConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                   lt_tensor *gradBias, lt_tensor *columns, int kW, int kH, int dW,
                                                   int dH, int padW, int padH, int adjW, int adjH, double scale);

/* ---- SpatialSubSampling ----
 * One weight and bias per plane: out = bias[c] + weight[c] * (sum of the
 * kH x kW window); no padding; output size floor((in - k) / d) + 1. */
int lt_nn_SpatialSubSampling_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                          int kW, int kH, int dW, int dH);
int lt_nn_SpatialSubSampling_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             lt_tensor *weight, int kW, int kH, int dW, int dH);
int lt_nn_SpatialSubSampling_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                               lt_tensor *gradBias, int kW, int kH, int dW, int dH, double scale);

/* ---- SpatialConvolutionMap / SpatialFullConvolutionMap ----
 * connTable (nk x 2, Float/Double/LongTensor): row k connects input plane
 * connTable[k][1] to output plane connTable[k][2] (1-based) through the
 * kH x kW kernel weight[k] (weight (nk, kH, kW)); bias (nOutputPlane).
 * full == 0 (ConvolutionMap): valid cross-correlation, output size
 * floor((in - k) / d) + 1. full != 0 (FullConvolutionMap): its adjoint,
 * output size (in - 1)*d + k. The input has at least nInputPlane planes. */
int lt_nn_SpatialConvolutionMap_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight, lt_tensor *bias,
                                             lt_tensor *connTable, int nInputPlane, int nOutputPlane, int dW, int dH,
                                             int full);
int lt_nn_SpatialConvolutionMap_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                lt_tensor *weight, lt_tensor *connTable, int nInputPlane,
                                                int nOutputPlane, int dW, int dH, int full);
int lt_nn_SpatialConvolutionMap_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                  lt_tensor *gradBias, lt_tensor *connTable, int nInputPlane,
                                                  int nOutputPlane, int dW, int dH, int full, double scale);

/* ---- SpatialDepthWiseConvolution ----
 * Each input plane i is convolved with nOutputPlane (the depth multiplier)
 * kernels: output plane i*nOutputPlane + m = bias[m][i] +
 * xcorr(input plane i, weight[m][i]) with zero padding. weight
 * (nOutputPlane, nInputPlane, kH, kW) or (nOutputPlane, nInputPlane*kH*kW);
 * bias (nOutputPlane, nInputPlane) or NULL. Output size as SpatialConvolution. */
int lt_nn_SpatialDepthWiseConvolution_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                                   lt_tensor *bias, int kW, int kH, int dW, int dH, int padW,
                                                   int padH);
int lt_nn_SpatialDepthWiseConvolution_updateGradInput(lt_tensor *input, lt_tensor *gradOutput,
                                                      lt_tensor *gradInput, lt_tensor *weight, int kW, int kH,
                                                      int dW, int dH, int padW, int padH);
int lt_nn_SpatialDepthWiseConvolution_accGradParameters(lt_tensor *input, lt_tensor *gradOutput,
                                                        lt_tensor *gradWeight, lt_tensor *gradBias, int kW, int kH,
                                                        int dW, int dH, int padW, int padH, double scale);

/* ---- SpatialConvolutionLocal (unshared weights) ----
 * weight (oH, oW, nOut, nIn, kH, kW) in any view with that many elements,
 * bias (nOut, oH, oW): output[o][y][x] = bias[o][y][x] + sum over i, ky, kx
 * of weight[y][x][o][i][ky][kx] * input[i][y*dH - padH + ky][x*dW - padW + kx]
 * (0 outside). The input must be (N,) nIn x iH x iW. */
int lt_nn_SpatialConvolutionLocal_updateOutput(lt_tensor *input, lt_tensor *output, lt_tensor *weight,
                                               lt_tensor *bias, int kW, int kH, int dW, int dH, int padW, int padH,
                                               int64_t iW, int64_t iH, int64_t oW, int64_t oH);
int lt_nn_SpatialConvolutionLocal_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                  lt_tensor *weight, int kW, int kH, int dW, int dH, int padW,
                                                  int padH, int64_t iW, int64_t iH, int64_t oW, int64_t oH);
int lt_nn_SpatialConvolutionLocal_accGradParameters(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradWeight,
                                                    lt_tensor *gradBias, int kW, int kH, int dW, int dH, int padW,
                                                    int padH, int64_t iW, int64_t iH, int64_t oW, int64_t oH,
                                                    double scale);

/* nn.SpatialConvolutionLocal on CUDA tensors (cunn's GPU version): input (N, C, H, W), any layout; weight
 * (oH, oW, nOutputPlane, C, kH, kW), bias (nOutputPlane, oH, oW). pass 0 the forward into result, 1 the gradInput
 * into result from gradOutput, 2 scale * the gradients added into result (gradWeight) and result2 (gradBias), both
 * contiguous. Float, Double and Half (in float). */
int lt_cuda_nn_convlocal(int pass, const lt_tensor *input, const lt_tensor *gradOutput, lt_tensor *result,
                         lt_tensor *result2, const lt_tensor *weight, const lt_tensor *bias, int nOutputPlane, int kW,
                         int kH, int dW, int dH, int padW, int padH, double scale);

#endif
