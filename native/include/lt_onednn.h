/* lt_onednn: the float32 passes of nn.SpatialConvolution(MM), SpatialDilatedConvolution and
 * VolumetricConvolution through oneDNN (onednn.c).
 *
 * The library (libdnnl.so.3 of the onednn-cpu-gomp wheel, oneDNN 3.x, GNU
 * OpenMP) is dlopen'ed by path at run time, like BLAS; without it, with
 * lt_onednn_set_enabled(0), for double tensors or for a shape oneDNN does
 * not implement, the convolutions stay im2col + GEMM (nn_conv.c, nn_spatialconv.c,
 * nn_tvconv.c). */

/* Load the library at path once per process; 0 on success, else -1 with lt_errmsg() set. */
int lt_onednn_load(const char *path);
int lt_onednn_loaded(void);
/* 1 (the default once loaded) lets convolutions use oneDNN, 0 keeps them on im2col; returns the old value. */
int lt_onednn_set_enabled(int on);
int lt_onednn_enabled(void);
/* The library's path and version, or why it is not loaded. */
const char *lt_onednn_info(void);
/* Convolution passes oneDNN has run in this process (tests use it to tell which path ran). */
int64_t lt_onednn_calls(void);
/* Shapes in the primitive cache. */
int lt_onednn_cache_size(void);
/* Layouts oneDNN works in: 0 (default) the fastest per shape and pass, timed on its first call, of im2col and
 * oneDNN in 1 Torch7's plain NCHW/OIHW (no copies) and in 2 its own choice (blocked), with reorders of the
 * inputs and the output around each call; 1 and 2 force that layout; returns the old mode. */
int lt_onednn_set_layout(int mode);

/* For nn_conv.c, nn_spatialconv.c and nn_tvconv.c: one convolution's geometry (N samples, C x H x W in,
 * O x oH x oW out, kernel, stride, pad, and dilation in Torch7's terms: a tap every dilH rows, 0 or 1 meaning
 * none), and for a volumetric one its depth the same way (T = 0: a 2-D convolution). */
typedef struct lt_onednn_conv {
  int64_t N, C, H, W, O, oH, oW;
  int64_t kH, kW, dH, dW, padH, padW;
  int64_t dilH, dilW;
  int64_t T, oT, kT, dT, padT, dilT;
} lt_onednn_conv;
/* Runs the same pass the im2col way, for the one-time timing (it must only overwrite outputs, or write into
 * scratch of its own: backward-weights' timing run must not accumulate into gradWeight). */
typedef int (*lt_onednn_im2col_fn)(void *ctx);
/* Each returns 0 when oneDNN did the pass, 1 when the caller should use im2col (not loaded, disabled, shape
 * not implemented, or im2col timed faster for this shape and pass), -1 on an error (lt_errmsg() set). All
 * tensors contiguous NCHW / OIHW (NCDHW / OIDHW) float32. im2col (may be NULL) with ctx is timed beside
 * oneDNN's layouts on a shape's first call, when the layout mode is 0.
 *   forward:          out = conv(in, w) + bias (bias may be NULL; bias_stride its element stride)
 *   backward_data:    gi = the gradient of conv(., w) applied to go (overwritten)
 *   backward_weights: gw += scale * dL/dw, gb[o * gb_stride] += scale * dL/db[o] (gb may be NULL) */
int lt_onednn_conv_forward(const lt_onednn_conv *c, const float *in, const float *w, const float *bias,
                           int64_t bias_stride, float *out, lt_onednn_im2col_fn im2col, void *ctx);
int lt_onednn_conv_backward_data(const lt_onednn_conv *c, const float *go, const float *w, float *gi,
                                 lt_onednn_im2col_fn im2col, void *ctx);
int lt_onednn_conv_backward_weights(const lt_onednn_conv *c, const float *in, const float *go, float *gw, float *gb,
                                    int64_t gb_stride, double scale, lt_onednn_im2col_fn im2col, void *ctx);
