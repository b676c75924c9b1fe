/* data: the training input pipeline's fast path — one encoded JPEG to one normalized C x H x W float32
 * sample written straight into its batch slot (libjpeg-turbo decode of the rows and columns the resize
 * reads, separable bicubic resize of the bytes, colour transforms as one per-image matrix).
 *
 * The random draws and the resize taps are transforms.py's, made from the stream's uniforms
 * (lt_data_plan_draw) or given by the caller (lt_data_jpeg_sample), so the
 * numbers are those of the numpy pipeline; see lt_data_plan. No OpenMP inside: one sample per thread,
 * and callers from Python run with the GIL released. Every function returns 0, or -1 with lt_errmsg(). */

/* Header of an encoded JPEG: info[0] width, info[1] height, info[2] components, info[3] 1 when
 * lt_data_jpeg_sample can decode it (3 components in YCbCr or RGB, data ending with the EOI marker,
 * so a truncated file is left to the fallback decoder). -1: not a readable JPEG header. */
int lt_data_jpeg_info(const uint8_t *data, int64_t len, int64_t *info);

/* One sample: the box (box_x, box_y, box_w x box_h) of the decoded image is resampled with 4-tap
 * separable filters, first along x (xidx/xw: out_w x 4 box-relative column indices and float32 weights,
 * row-major), then along y (yidx/yw: out_h x 4), each output t = s0 w0; t += s1 w1; t += s2 w2;
 * t += s3 w3 in float32 on samples byte / 255.0f (so equal to numpy's float32 arithmetic). Then the
 * colour transforms in double, per pixel, folded into one 3 x 3 matrix and offset:
 *   jitter ops[0..nops-1] (0 brightness, 1 contrast, 2 saturation) with factors alpha, each as
 *   fb.resnet.torch's (blend with black, the grey mean, the grey pixel; Rec. 601 weights),
 *   then + light[c], then (x - mean[c]) / std[c];
 * flip = 1 mirrors x. out: 3 x out_h x out_w float32, contiguous. roi = 0 decodes the whole image
 * (the same pixels, slower). times (optional, 3 doubles) gets the seconds spent decoding, resampling
 * and in the colour pass. */
typedef struct lt_data_plan {
  int64_t box_x, box_y, box_w, box_h;
  int64_t out_w, out_h;
  const int64_t *xidx;
  const float *xw;
  const int64_t *yidx;
  const float *yw;
  int nops;
  int ops[3];
  double alpha[3];
  float light[3];
  float mean[3];
  float std[3];
  int flip;
  int roi;
} lt_data_plan;
int lt_data_jpeg_sample(const uint8_t *data, int64_t len, const lt_data_plan *plan, float *out, double *times);

/* The recipe a sample's draws follow (fb.resnet.torch's ImageNet transforms, pytorch_bridge/data/
 * transforms.py): train = 1: RandomSizedCrop(size) with areas min_area..1 and aspects 3/4..4/3 (10 tries,
 * else Scale + CenterCrop), ColorJitter(jitter[0..2]: brightness, contrast, saturation; zeros skipped) in
 * a random order, Lighting(alphastd, eigval, eigvec), normalize (mean, std), HorizontalFlip(0.5);
 * train = 0: Scale(resize) + CenterCrop(size) + normalize, nothing drawn. */
typedef struct lt_data_recipe {
  int train;
  int64_t size, resize;
  double min_area;
  double jitter[3];
  double alphastd;
  double eigval[3];
  double eigvec[3][3];
  float mean[3];
  float std[3];
  int roi;
} lt_data_recipe;

/* A sample's plan for a w x h image from the stream's uniforms u[0..nu-1] (in [0, 1), in the order
 * numpy's Generator.random() gives them), with transforms.py's draws made the same way from the same
 * numbers (TorchRNG) and cubic_taps' taps: xidx/xw and yidx/yw (size x 4 each, caller's memory) get
 * the taps and p points at them. 0: planned; 1: not a sample for the C path (the window leaves the
 * scaled box, or more than nu uniforms were needed); -1: bad arguments. */
int lt_data_plan_draw(const lt_data_recipe *r, int64_t w, int64_t h, const double *u, int64_t nu, lt_data_plan *p,
                      int64_t *xidx, float *xw, int64_t *yidx, float *yw);

/* lt_data_jpeg_info, lt_data_plan_draw and lt_data_jpeg_sample in one call (taps in per-thread memory).
 * 0: written; 1: not taken, nothing written (not a JPEG the C path decodes, or not planned); -1: the
 * decode failed (lt_errmsg says why; out may be partly written). */
int lt_data_jpeg_sample_drawn(const uint8_t *data, int64_t len, const lt_data_recipe *r, const double *u, int64_t nu,
                              float *out, double *times);

/* A sample's stream: u[0..n-1] = numpy.random.default_rng([seed, epoch, index]).random(n), bit for bit
 * (numpy's SeedSequence and PCG64), so that a batch is drawn without Python. */
int lt_data_stream_uniforms(uint64_t seed, uint64_t epoch, uint64_t index, double *u, int64_t n);

/* A batch: sample k (data[k], len[k] bytes) planned from its stream (seed, epoch, index[k]) as
 * lt_data_jpeg_sample_drawn does with LT_DATA_UNIFORMS uniforms (none for validation), written to
 * out + k * slot_floats (slot_floats = 3 size^2); status[k] = its result (0 written, 1 not taken, -1
 * failed). times (optional) accumulates the written samples' seconds. -1 only for bad arguments. */
enum { LT_DATA_UNIFORMS = 64 };   /* a sample's draws take at most 44 (10 crop tries, jitter, lighting, flip) */
int lt_data_jpeg_batch(const lt_data_recipe *r, int64_t n, const uint8_t *const *data, const int64_t *len,
                       uint64_t seed, uint64_t epoch, const int64_t *index, float *out, int64_t slot_floats,
                       int8_t *status, double *times);

/* The JPEG transcoded losslessly (the same DCT coefficients, so the same pixels; Huffman tables
 * optimized) with a restart marker every 1-4 MCUs, the interval dividing an MCU row, so that a sample's
 * decode reads only the rows and segments its box covers (data_restart.c). 0: *out (free it with
 * lt_data_free) holds *out_len bytes; 1: left as it is (progressive, arithmetic, already has restart
 * markers, corrupt, or not a JPEG). */
int lt_data_jpeg_add_restarts(const uint8_t *data, int64_t len, uint8_t **out, int64_t *out_len);
void lt_data_free(void *p);

/* Decode only (the pipeline's ceiling): the w x h box at (x, y) (roi = 1, or the whole image with
 * roi = 0) into interleaved RGB bytes; out (w x h x 3 bytes) may be NULL to discard them. */
int lt_data_jpeg_decode(const uint8_t *data, int64_t len, int64_t x, int64_t y, int64_t w, int64_t h, int roi,
                        uint8_t *out);
