/* lt_onednn: the float32 passes of nn.SpatialConvolution(MM), SpatialDilatedConvolution,
 * SpatialFullConvolution and VolumetricConvolution through oneDNN (onednn.c).
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
/* Ways (a shape, a pass, a layout) dropped because their result disagreed with the caller's own way's. */
int64_t lt_onednn_rejections(void);
/* For tests: the next n results oneDNN writes (outputs and gradWeights, or with bias != 0 the gradBias of
 * backward-weights passes) are made wrong, as a faulty kernel would, before they are checked. */
void lt_onednn_inject_faults(int n, int bias);
/* Shapes in the primitive cache. */
int lt_onednn_cache_size(void);
/* Layouts oneDNN works in: 0 (default) the fastest per shape and pass, timed on its first call, of im2col and
 * oneDNN in 1 Torch7's plain NCHW/OIHW (no copies) and in 2 its own choice (blocked), with reorders of the
 * inputs and the output around each call; 1 and 2 force that layout (the other where that one is not offered
 * or was found wrong); returns the old mode. */
int lt_onednn_set_layout(int mode);

/* For nn_conv.c, nn_spatialconv.c and nn_tvconv.c: one (plain) convolution's geometry (N samples, C x H x W in,
 * O x oH x oW out, kernel, stride, pad, and dilation in Torch7's terms: a tap every dilH rows, 0 or 1 meaning
 * none), and for a volumetric one its depth the same way (T = 0: a 2-D convolution). */
typedef struct lt_onednn_conv {
  int64_t N, C, H, W, O, oH, oW;
  int64_t kH, kW, dH, dW, padH, padW;
  int64_t dilH, dilW;
  int64_t T, oT, kT, dT, padT, dilT;
} lt_onednn_conv;
/* One pass of a convolution handed to onednn.c, by the convolution's roles (x its input, dy the gradient of its
 * output; all contiguous NCHW / OIHW (NCDHW / OIDHW) float32):
 *   LT_ONEDNN_FORWARD:          out = conv(x, w) + bias (bias may be NULL; bs its element stride)
 *   LT_ONEDNN_BACKWARD_DATA:    out = the gradient of conv(., w) applied to dy (overwritten)
 *   LT_ONEDNN_BACKWARD_WEIGHTS: gw += scale * dL/dw, gb[o * gbs] += scale * dL/db[o] (gb may be NULL), from x, dy
 * A full (transposed) convolution is a plain one run backwards: its forward is the backward-data pass of the
 * convolution whose input is the full convolution's output, its gradInput that convolution's forward. */
enum { LT_ONEDNN_FORWARD, LT_ONEDNN_BACKWARD_DATA, LT_ONEDNN_BACKWARD_WEIGHTS };
typedef struct lt_onednn_pass {
  const char *fn;  /* the layer's function, for messages */
  int pass;
  const float *x, *w, *dy, *bias;
  int64_t bs;
  float *out, *gw, *gb;
  int64_t gbs;
  double scale;
  /* The caller's own way of the same pass (may be NULL), timed beside oneDNN's layouts on a shape's first call
   * (layout mode 0) and kept when faster. It must only overwrite out, or, for backward weights, accumulate
   * into scratch of its own (gradWeight must not get the timing runs). ctx is the caller's geometry; scratch,
   * made by own on its first run, is freed by lt_onednn_run. Each way oneDNN runs a shape and pass is checked
   * once against own (onednn.c), so own sets own_gw to where its backward-weights result (scale times dL/dw,
   * gradWeight's layout) is. */
  int (*own)(struct lt_onednn_pass *p);
  void *ctx;
  void *scratch;
  const float *own_gw;
} lt_onednn_pass;
/* For own: its scratch of bytes, made on the first run (the same pointer after); NULL with lt_errmsg() set. */
void *lt_onednn_own_scratch(lt_onednn_pass *p, size_t bytes);
/* 0 when oneDNN did the pass, 1 when the caller should run its own way (oneDNN not loaded, disabled, the shape
 * not implemented, or its own way timed faster for this shape and pass), -1 on an error (lt_errmsg() set). */
int lt_onednn_run(const lt_onednn_conv *c, lt_onednn_pass *p);
