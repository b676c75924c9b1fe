/* nn kernels: paddings, upsampling, dropouts, shuffles (Torch7's THNN counterparts). */
#ifndef LT_NN_PADDING_H
#define LT_NN_PADDING_H

/* ---- Paddings of the last 2 (Spatial: W by l/r, H by t/b) or 3 (Volumetric:
 * also D by front/back) dimensions; every leading dimension is a plane.
 * A negative pad crops. Zero fills with 0, Reflection mirrors without
 * repeating the edge (each pad must be less than the size it pads),
 * Replication repeats the edge. updateGradInput resizes gradInput to input. */
int lt_nn_SpatialZeroPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                          int pad_b);
int lt_nn_SpatialZeroPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             int pad_l, int pad_r, int pad_t, int pad_b);
int lt_nn_SpatialReflectionPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                                int pad_b);
int lt_nn_SpatialReflectionPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   int pad_l, int pad_r, int pad_t, int pad_b);
int lt_nn_SpatialReplicationPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                                 int pad_b);
int lt_nn_SpatialReplicationPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    int pad_l, int pad_r, int pad_t, int pad_b);
int lt_nn_VolumetricReplicationPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pleft, int pright,
                                                    int ptop, int pbottom, int pfront, int pback);
int lt_nn_VolumetricReplicationPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                       int pleft, int pright, int ptop, int pbottom, int pfront,
                                                       int pback);

/* ---- Upsampling of the last nsp (2 or 3) dimensions ----
 * Nearest: each size times the integer scale. Linear (bi-/trilinear) to the
 * given sizes (oD ignored when nsp == 2), aligned corners: output o reads
 * input o * (in - 1) / (out - 1). */
int lt_nn_UpSamplingNearest_updateOutput(lt_tensor *input, lt_tensor *output, int nsp, int scale);
int lt_nn_UpSamplingNearest_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, int nsp,
                                            int scale);
int lt_nn_UpSamplingLinear_updateOutput(lt_tensor *input, lt_tensor *output, int nsp, int64_t oD, int64_t oH,
                                        int64_t oW);
int lt_nn_UpSamplingLinear_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, int nsp,
                                           int64_t oD, int64_t oH, int64_t oW);

#endif
