/* lt_conv: Torch7's conv2, xcorr2, conv3, xcorr3 (conv.c), every tensor type.
 *
 * r = the ndim-D (2 or 3) convolution (correlation == 0: the kernel flipped)
 * or cross-correlation (correlation != 0) of input with kernel, mode "V"
 * (valid: input - kernel + 1 per dimension) or "F" (full: input + kernel - 1).
 * Shapes, for ndim = 2 (add a depth dimension for 3):
 *   input H x W,     kernel kH x kW           -> r oH x oW
 *   input P x H x W, kernel P x kH x kW       -> r P x oH x oW  (plane p with kernel p)
 *   input P x H x W, kernel O x P x kH x kW   -> r O x oH x oW  (sum over p of plane p with kernel [o][p])
 * r is resized and overwritten; it may be the input or the kernel. */
int lt_conv(lt_tensor *r, const lt_tensor *input, const lt_tensor *kernel, int ndim, const char *mode, int correlation);
