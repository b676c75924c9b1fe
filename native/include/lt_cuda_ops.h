/* cutorch's tensor math on a device: the host side of the kernels in native/cuda/.
 *
 * Each function takes tensors whose elements are device memory (an lt_tensor's storage data is a device
 * pointer; nothing here reads or writes it from the host), checks them as cutorch's THC did, describes each
 * operand for the kernel ABI of native/cuda/lt_cuda_common.cuh (dimensions collapsed per operand, the
 * 32-bit index path when every offset fits), sizes the grid, and starts the kernels through a launcher:
 * cuLaunchKernel on a GPU, the SIMT emulator of tests/cuda_host in the tests, so that this layer runs the
 * very code a GPU runs it with, on the CPU. Outputs have their final shape already (the storage layer
 * resizes them; here shapes are checked). Scratch (partial sums, contiguous copies) comes from the
 * launcher's caching allocator, on the call's stream. Every function returns 0, or -1 with lt_errmsg. */

/* The kernels' tensor operand (144 bytes, passed by value): lt_cuda_common.cuh's struct of the same name. */
typedef struct lt_cu_tensor {
  void *data;
  long long sizes[8];
  long long strides[8];
  int dims;
  int pad_;
} lt_cu_tensor;

typedef struct lt_cuops {
  /* Start kernel `kernel` of native/cuda/<file>.cu with grid x block threads (1-D) on stream; params as
   * cuLaunchKernel takes them (params[k] points at argument k). sig names the argument kinds, comma
   * separated: S144 a tensor operand, p a pointer, q long long, Q unsigned long long, i int, f float,
   * d double (the emulator checks it against the kernel's own). 0, or -1 with lt_fail. */
  int (*launch)(void *ctx, const char *file, const char *kernel, const char *sig, unsigned grid, unsigned block,
                void *stream, void **params);
  /* bytes from device to host once the stream's work so far has run (synchronous), and host to device
   * (stream-ordered: src may be reused when it returns) */
  int (*to_host)(void *ctx, void *dst, const void *src, int64_t bytes, void *stream);
  int (*to_device)(void *ctx, void *dst, const void *src, int64_t bytes, void *stream);
  void *ctx;
  lt_cuda_allocator *alloc;  /* scratch, freed (stream-ordered) before each function returns */
  int device;                /* the allocator's device number */
  int threads_per_block;     /* 0: 256; a multiple of 32, at most 1024 */
  int max_blocks;            /* grid cap of the grid-stride kernels; 0: 1024 */
  /* C = alpha op(A) op(B) + beta C on stream, column-major, as BLAS's gemm (cuBLAS on a GPU): type is the
   * host type LT_FLOAT or LT_DOUBLE, trans 'n' or 't', sizes and leading dimensions in elements, each below
   * 2^31. beta == 0 does not read C. NULL: matrix products are refused. 0, or -1 with lt_fail. */
  int (*gemm)(void *ctx, void *stream, int type, char transa, char transb, int64_t m, int64_t n, int64_t k,
              double alpha, const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *c,
              int64_t ldc);
  /* batch such products in one call, entry e's matrices at a + e sa, b + e sb, c + e sc (strides in elements;
   * cuBLAS's gemmStridedBatched). NULL where cuBLAS lacks it (lt_cuops_baddbmm then declines). */
  int (*gemm_strided_batched)(void *ctx, void *stream, int type, char transa, char transb, int64_t m, int64_t n,
                              int64_t k, double alpha, const void *a, int64_t lda, int64_t sa, const void *b,
                              int64_t ldb, int64_t sb, double beta, void *c, int64_t ldc, int64_t sc, int64_t batch);
} lt_cuops;

/* The operand a kernel gets for t: sizes and strides with size-1 dimensions dropped and dimensions that
 * are contiguous with each other merged; *max_offset (if not NULL) the largest element offset. More than 8
 * dimensions left, or a negative stride, is an error. */
int lt_cuops_describe(const lt_tensor *t, lt_cu_tensor *out, int64_t *max_offset);

/* out = beta m + alpha (a b), Torch7's addmm: 2-D Float or Double tensors of one type, a [r x k], b [k x c],
 * m and out [r x c]; out may be m. Any strides: operands BLAS can read as they lie (column-major, or
 * row-major as the transpose) go to gemm directly, others through contiguous scratch copies; a row-major
 * out is computed as out^T = b^T a^T. beta == 0 ignores m's values (NaN included), as BLAS does. */
int lt_cuops_addmm(const lt_cuops *ops, void *stream, lt_tensor *out, double beta, const lt_tensor *m, double alpha,
                   const lt_tensor *a, const lt_tensor *b);

/* dst = src converted to dst's type (any of the 8 element types each); same number of elements. */
int lt_cuops_copy(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src);
int lt_cuops_fill(const lt_cuops *ops, void *stream, lt_tensor *t, double value);
/* dst[k] = src[k] for k < n in one launch (torch.cat's slabs): every pair of one type, element counts equal per pair,
 * any strides; the destinations must not overlap each other or the sources. The pairs' descriptions go up as one
 * table (lt_cuops_upload). */
int lt_cuops_copy_batch(const lt_cuops *ops, void *stream, lt_tensor *const *dst, const lt_tensor *const *src, int n);
/* A host array (index tables, targets) copied into device scratch that only work queued after it on the same stream
 * reads: on a GPU through a cached pinned block, without waiting for the GPU (native/src/cuda_pinned.c); with another
 * launcher (the tests' host one), its to_device. Copies a program makes (tensor and storage copies) keep CUDA's
 * synchronous semantics for pageable memory: work on any stream queued after them sees the bytes. */
int lt_cuops_upload(const lt_cuops *ops, void *dst, const void *src, int64_t bytes, void *stream);
/* cutorch._sleep: one thread keeps the stream busy for `cycles` of the device's clock. */
int lt_cuops_sleep(const lt_cuops *ops, void *stream, int64_t cycles);

/* out = op(x[, y[, z]]; a, b), elementwise; every operand of out's type and element count; out may be x.
 *   adds muls divs pows (a)   clamp (a = lo, b = hi)
 *   sqrt rsqrt exp log abs neg sign tanh sigmoid
 *   cadd (x + a*y)  cmul  cdiv   addcmul (x + a*y*z)  addcdiv (x + a*y/z)
 * Integer types take adds, muls, clamp, cadd and cmul (computed in long long, wrapping when stored). */
int lt_cuops_pointwise(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, const lt_tensor *x,
                       const lt_tensor *y, const lt_tensor *z, double a, double b);

/* Over all elements: sum prod max min mean sumsq, or norm (p; 0 counts non-zeros, inf is max |x|). max and
 * min of no elements, and mean of none, are errors (as in Torch7). *result in double (an integer sum in
 * long long first). */
int lt_cuops_reduce(const lt_cuops *ops, void *stream, const char *op, const lt_tensor *x, double p,
                    double *result);

/* Along dimension dim (0-based): sum prod mean into out, or max min into out and ind (a LongTensor of
 * 1-based indices, Torch7's, the first of ties and of NaNs). out and ind have x's shape with dim of size 1. */
int lt_cuops_reduce_dim(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, lt_tensor *ind,
                        const lt_tensor *x, int dim);

/* nn.LogSoftMax over the last dimension of a 1-D or 2-D input, over dimension 2 of (N, C, H, W) or dimension
 * 1 of (C, H, W) (THNN's rule); out and gradInput contiguous, of input's shape. */
int lt_cuops_logsoftmax_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input);
int lt_cuops_logsoftmax_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                                 const lt_tensor *grad_output, const lt_tensor *output);

/* nn.SoftMax (and SpatialSoftMax) over the same dimension as LogSoftMax above; the same operands. */
int lt_cuops_softmax_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input);
int lt_cuops_softmax_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *output);

/* nn.BatchNormalization / SpatialBatchNormalization (and VolumetricBatchNormalization) as the CPU kernels
 * lt_nn_BatchNormalization_updateOutput / _backward (same arguments, same semantics): input (N, C, ...), out and
 * grad_input contiguous of its shape, the per-feature vectors of C elements of its type. weight, bias (and
 * running_mean, running_var in training) may be NULL; in training save_mean and save_std (contiguous) get the
 * batch mean and 1/sqrt(var + eps) and the running statistics (contiguous) are updated with momentum; in
 * evaluation the running statistics normalize. Backward: grad_input, grad_weight, grad_bias may each be NULL;
 * the last two are accumulated with scale. Sums in the compute type (float for Float, double for Double). */
int lt_cuops_batchnorm_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                               const lt_tensor *weight, const lt_tensor *bias, lt_tensor *running_mean,
                               lt_tensor *running_var, lt_tensor *save_mean, lt_tensor *save_std, int train,
                               double momentum, double eps);
int lt_cuops_batchnorm_backward(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_input, lt_tensor *grad_weight,
                                lt_tensor *grad_bias, const lt_tensor *weight, const lt_tensor *running_mean,
                                const lt_tensor *running_var, const lt_tensor *save_mean, const lt_tensor *save_std,
                                int train, double scale, double eps);

/* nn.SpatialMaxPooling / SpatialAveragePooling on (C, H, W) or (N, C, H, W) input, as the CPU kernels: the
 * output size by lt_nn_SpatialPooling_outputSize; out, indices (a CudaLongTensor of 1-based positions in the
 * input plane, h*iW + w + 1; 0 for a window without a value above -inf) and grad_input contiguous, of their
 * shapes. The backward passes gather (one thread per input element, no atomics): deterministic. */
int lt_cuops_maxpool_forward(const lt_cuops *ops, void *stream, lt_tensor *out, lt_tensor *indices,
                             const lt_tensor *input, int kW, int kH, int dW, int dH, int padW, int padH,
                             int ceil_mode);
int lt_cuops_maxpool_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *indices, const lt_tensor *input, int kW,
                              int kH, int dW, int dH, int padW, int padH, int ceil_mode);
int lt_cuops_avgpool_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input, int kW,
                             int kH, int dW, int dH, int padW, int padH, int ceil_mode, int count_include_pad);
int lt_cuops_avgpool_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *input, int kW, int kH, int dW, int dH,
                              int padW, int padH, int ceil_mode, int count_include_pad);

/* nn.ClassNLLCriterion: input (C) or (N, C), target of N 1-based classes (a LongTensor), weights of C or
 * NULL. Forward gives the loss and the total weight on the host; a target outside 1..C (other than
 * ignore_index) is an error naming the sample. Backward writes every element of grad_input (contiguous, of
 * input's shape) from that total weight. */
int lt_cuops_classnll_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, const lt_tensor *target,
                              const lt_tensor *weights, int size_average, int64_t ignore_index, double *loss,
                              double *total_weight);
int lt_cuops_classnll_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input, const lt_tensor *target,
                               const lt_tensor *weights, int size_average, int64_t ignore_index,
                               double total_weight);

/* nn.Dropout: noise (contiguous, of input's type and element count) gets 0 or the kept value (1, or
 * 1/(1-p) unless v1), from Philox4x32-10 on (seed, offset .. offset + n - 1); out = input * noise.
 * Backward: grad_input = grad_output * noise. */
/* nn's elementwise activations (lt_nn_pointwise.h's ops; native/cuda/nn_pointwise.cu): out = f_op(input; a, b),
 * grad_input = df_op(grad_output, ref; a, b) with ref the input or the output as that header says. Float and
 * Double; any layouts; out may be input and grad_input grad_output. */
int lt_cuops_nn_pointwise_forward(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *input,
                                  double a, double b);
int lt_cuops_nn_pointwise_backward(const lt_cuops *ops, void *stream, int op, lt_tensor *grad_input,
                                   const lt_tensor *grad_output, const lt_tensor *ref, double a, double b);
/* cutorch's uniform (kind 0: [a, b)), normal (1: mean a, std b) and bernoulli (2: probability a) fills of out, any
 * type and layout, from the Philox stream (seed) at draw number offset, two draws per element (the caller
 * reserves 2 * nElement). Also exponential (3: rate a), cauchy (4: median a, sigma b), logNormal (5: mean a, std b
 * of the log), geometric (6: Torch7's, P(x > k) = a^k) and integers in [a, b] (7: a <= b integers; the first draw
 * modulo b - a + 1, plus a). The caller checks the parameters. */
int lt_cuops_random(const lt_cuops *ops, void *stream, lt_tensor *out, int kind, double a, double b, uint64_t seed,
                    uint64_t offset);
/* nn's elementwise criterions (lt_nn_criterion.h's LT_CRIT_* kinds; native/cuda/nn_criterion.cu): *loss = the
 * sum over the elements of f_kind(input, target) (times weights for BCE; weights may be NULL), in double;
 * grad_input = f'_kind(input, target) (times weights) times norm. Float and Double; input, target and weights
 * of one type and element count, any layouts. BCE's inputs outside [0, 1] are the caller's to refuse. */
int lt_cuops_criterion_forward(const lt_cuops *ops, void *stream, int kind, const lt_tensor *input,
                               const lt_tensor *target, const lt_tensor *weights, double param, double *loss);
int lt_cuops_criterion_backward(const lt_cuops *ops, void *stream, int kind, lt_tensor *grad_input,
                                const lt_tensor *input, const lt_tensor *target, const lt_tensor *weights,
                                double param, double norm);
int lt_cuops_dropout_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                             lt_tensor *noise, double p, int v1, uint64_t seed, uint64_t offset);
int lt_cuops_dropout_backward(const lt_cuops *ops, void *stream, lt_tensor *grad_input,
                              const lt_tensor *grad_output, const lt_tensor *noise);
/* nn.RReLU's training forward: each element's slope drawn as the uniform fill in [lower, upper) from draws offset +
 * 2i, offset + 2i + 1 of seed's stream (cutorch._philoxDraws(2 n)), rounded to the compute type; noise (contiguous,
 * the input's type and count) = 1 where x > 0, else the slope; out = x * noise (out may be input). The backward is
 * lt_cuops_dropout_backward's gradIn = gradOut * noise. */
int lt_cuops_rrelu_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                           lt_tensor *noise, double lower, double upper, uint64_t seed, uint64_t offset);

/* nn's convolutions (SpatialConvolution, SpatialConvolutionMM, SpatialDilatedConvolution, the cudnn.* ones) as
 * Torch7's cunn computed them: per sample, im2col into scratch columns (none for a 1x1 kernel with unit
 * stride and no padding) and a cuBLAS GEMM. Input (C, H, W) or (N, C, H, W), any strides; weight contiguous,
 * (nOut, C, kH, kW) or (nOut, C*kH*kW); bias and gradBias contiguous nOut or NULL; output and gradInput
 * contiguous and already of their shape ((N,) nOut x oH x oW, oH = (H + 2 padH - (dilH (kH-1) + 1)) / dH + 1;
 * the input's shape). Float and Double. The forward writes output (bias added if given); backward_data
 * writes gradInput; backward_params adds scale * the gradients to gradWeight (of weight's shape) and gradBias. */
int lt_cuops_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                            const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH, int padW,
                            int padH, int dilW, int dilH);
int lt_cuops_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight, int kW,
                                  int kH, int dW, int dH, int padW, int padH, int dilW, int dilH);
int lt_cuops_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                    const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias, int kW,
                                    int kH, int dW, int dH, int padW, int padH, int dilW, int dilH, double scale);
/* nn.SpatialFullConvolution (and cudnn's): the adjoint of a plain convolution of the output. Weight (nIn, nOut, kH,
 * kW) contiguous; output (N x) nOut x oH x oW with oH = (H - 1) dH - 2 padH + kH + adjH, 0 <= adj < stride;
 * per sample a GEMM into columns and col2im (forward), im2col and a GEMM (gradInput, gradWeight). */
int lt_cuops_full_conv2d_forward(const lt_cuops *ops, void *stream, const lt_tensor *input, lt_tensor *output,
                                 const lt_tensor *weight, const lt_tensor *bias, int kW, int kH, int dW, int dH,
                                 int padW, int padH, int adjW, int adjH);
int lt_cuops_full_conv2d_backward_data(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                       const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight,
                                       int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH);
int lt_cuops_full_conv2d_backward_params(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                         const lt_tensor *grad_output, lt_tensor *grad_weight, lt_tensor *grad_bias,
                                         int kW, int kH, int dW, int dH, int padW, int padH, int adjW, int adjH,
                                         double scale);

/* ---- on a GPU (native/src/cuda_device.c): NULL / -1 with the reason where there is none ---- */

/* The caching allocator's backend over the CUDA driver: cuMemAlloc/cuMemFree and timing-free events, each
 * call with its device's primary context current. One for the process. */
lt_cuda_backend *lt_cuda_device_backend(void);
/* bytes from src on device src_device to dst on device dst_device (the driver's peer copy), queued on dst_device's
 * current stream after src_device's current stream's work so far, which then waits for it (the host does not); the
 * current device is dst_device afterwards. */
int lt_cuda_copy_peer(int dst_device, void *dst, int src_device, const void *src, int64_t bytes);

/* NCCL over the GPUs of a DataParallelTable (native/src/cuda_nccl.c): a communicator per device (distinct
 * devices, 0-based), then buffers[i] (count elements of type, on devices[i]) summed into buffers[0]
 * (lt_nccl_reduce) or buffers[0] copied into the others (lt_nccl_bcast); finished on return. NULL / -1 with
 * lt_errmsg when NCCL is not installed or refuses. */
typedef struct lt_nccl lt_nccl;
lt_nccl *lt_nccl_new(int n, const int *devices);
void lt_nccl_free(lt_nccl *c);
int lt_nccl_reduce(lt_nccl *c, int type, void **buffers, int64_t count);
int lt_nccl_bcast(lt_nccl *c, int type, void **buffers, int64_t count);
/* cuDNN's convolutions for the cudnn.* modules (native/src/cuda_cudnn.c): libcudnn dlopen'ed, descriptors and
 * algorithms per geometry (a plan, kept for the process), workspace from ops' allocator, a handle per (thread,
 * device). Input (N x) C x H x W, weight K x C/groups x kH x kW, output (N x) K x oH x oW as nn's convolution
 * computes them (with a T axis before H for dims = 3: cudnn.VolumetricConvolution); inputs of any layout (copied
 * when not contiguous), outputs contiguous. */
enum { LT_CUDNN_HEURISTIC = 0, LT_CUDNN_BENCHMARK = 1, LT_CUDNN_FASTEST = 2 };
typedef struct lt_cudnn_conv {
  int kW, kH, dW, dH, padW, padH, dilW, dilH, groups;
  int mode;                 /* LT_CUDNN_*: cuDNN's heuristics within workspace_limit (cudnn.torch's default),
                               every algorithm timed once (cudnn.benchmark), heuristics without a limit (fastest) */
  int algo[3];              /* forward, backward data, backward filter: an algorithm number (setMode), or -1 */
  int tf32;                 /* float32 convolutions may use TF32 tensor cores; 0: FMA math, float32 throughout */
  int adjW, adjH;           /* the full convolution's extra output columns and rows (0 <= adj < stride) */
  int dims;                 /* spatial dimensions: 2 (H, W) or 3 (T, H, W; the volumetric modules) */
  int kT, dT, padT, dilT, adjT;   /* the T axis of a 3-D one */
  int64_t workspace_limit;  /* bytes; -1 none */
} lt_cudnn_conv;
/* 0 where libcudnn loads and has every function used here; -1 with the reason */
int lt_cudnn_available(void);
/* 1 for the process's first caller, 0 after: the one notice that cuDNN is missing, whichever Lua state sees it */
int lt_cudnn_first_notice(void);
int lt_cudnn_conv_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                            lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias);
int lt_cudnn_conv_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                  const lt_tensor *grad_output, lt_tensor *grad_input, const lt_tensor *weight);
/* gradWeight += scale dW, gradBias (may be NULL) += scale db */
int lt_cudnn_conv_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                    const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_weight,
                                    lt_tensor *grad_bias, double scale);
/* cudnn.SpatialFullConvolution (cudnn.VolumetricFullConvolution for dims = 3): input (N x) nIn x H x W, weight
 * nIn x nOut x kH x kW, output (N x) nOut x oH x oW, oH = (H - 1) dH - 2 padH + kH + adjH; the adjoint of the
 * convolution from output to input, on that convolution's plans (its forward is the backward-data pass, its
 * gradInput the forward pass). One group, no dilation. */
int lt_cudnn_fullconv_forward(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c, const lt_tensor *input,
                                lt_tensor *output, const lt_tensor *weight, const lt_tensor *bias);
int lt_cudnn_fullconv_backward_data(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                      const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_input,
                                      const lt_tensor *weight);
int lt_cudnn_fullconv_backward_params(const lt_cuops *ops, void *stream, const lt_cudnn_conv *c,
                                        const lt_tensor *input, const lt_tensor *grad_output, lt_tensor *grad_weight,
                                        lt_tensor *grad_bias, double scale);
/* The output size (N, K, (oT,) oH, oW) cuDNN's own descriptors give for input (N, C, (T,) H, W): no GPU needed. */
int lt_cudnn_conv_output_size(const lt_cudnn_conv *c, int type, const int64_t *input, int64_t nOutputPlane,
                              int64_t *out);
/* The algorithms and workspace bytes the plan of this geometry chose (-1: the pass has not run yet); -1 with
 * lt_errmsg when no convolution of it has run on that device. */
int lt_cudnn_conv_algorithms(const lt_cudnn_conv *c, int device, int type, const int64_t *input, int64_t nOutputPlane,
                             int algos[3], int64_t workspace[3]);
/* cuDNN's batch normalization (spatial mode over the input viewed as N x C x L x 1: nn.BatchNormalization's
 * statistics for 2-D to 5-D inputs), affine: weight and bias required. Forward in training updates the running
 * statistics with momentum (cuDNN's unbiased running variance, as Torch7's) and saves the batch mean and
 * 1/sqrt(var + eps) in save_mean/save_std; in evaluation the running statistics normalize. Backward from the saved
 * batch statistics: grad_input (may be NULL) overwritten, grad_weight/grad_bias (may be NULL) += scale times
 * theirs. Outputs contiguous; inputs in any layout. */
int lt_cudnn_batchnorm_forward(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *input,
                               const lt_tensor *weight, const lt_tensor *bias, lt_tensor *running_mean,
                               lt_tensor *running_var, lt_tensor *save_mean, lt_tensor *save_std, int train,
                               double momentum, double eps);
int lt_cudnn_batchnorm_backward(const lt_cuops *ops, void *stream, const lt_tensor *input,
                                const lt_tensor *grad_output, lt_tensor *grad_input, lt_tensor *grad_weight,
                                lt_tensor *grad_bias, const lt_tensor *weight, const lt_tensor *save_mean,
                                const lt_tensor *save_std, double scale, double eps);
/* Drops every plan (cudnn.reset): algorithms are chosen again on next use. */
void lt_cudnn_forget_plans(void);
/* cuDNN's pooling, activations and softmax for the cudnn.* modules (native/src/cuda_cudnn_layers.c). Inputs in
 * any layout (copied when not contiguous), outputs contiguous; an in-place activation passes the same tensor as
 * input and output (gradOutput and gradInput backward). NaNs propagate, as nn's CPU kernels let them. */
enum { LT_CUDNN_POOL_MAX = 0, LT_CUDNN_POOL_AVERAGE_INCLUDE_PAD = 1, LT_CUDNN_POOL_AVERAGE_EXCLUDE_PAD = 2 };
typedef struct lt_cudnn_pool {
  int dims;                        /* 2 (N x C x H x W) or 3 (N x C x T x H x W) */
  int mode;                        /* LT_CUDNN_POOL_* */
  int window[3], pad[3], stride[3];   /* in cuDNN's order: (T,) H, W */
} lt_cudnn_pool;
/* The output sizes cuDNN's descriptors give for an input of dims + 2 sizes (the batch included): no GPU needed. */
int lt_cudnn_pooling_output_size(const lt_cudnn_pool *p, int type, const int64_t *input, int64_t *out);
/* input (N x) C x (T x) H x W; output of cuDNN's (floor-mode) pooled size */
int lt_cudnn_pooling_forward(const lt_cuops *ops, void *stream, const lt_cudnn_pool *p, const lt_tensor *input,
                             lt_tensor *output);
/* gradInput from the forward's input and output and gradOutput */
int lt_cudnn_pooling_backward(const lt_cuops *ops, void *stream, const lt_cudnn_pool *p, const lt_tensor *input,
                              const lt_tensor *output, const lt_tensor *grad_output, lt_tensor *grad_input);
enum { LT_CUDNN_SIGMOID = 0, LT_CUDNN_RELU = 1, LT_CUDNN_TANH = 2, LT_CUDNN_CLIPPED_RELU = 3 };
/* output = f(input); coef: the ceiling of the clipped ReLU */
int lt_cudnn_activation_forward(const lt_cuops *ops, void *stream, int mode, double coef, const lt_tensor *input,
                                lt_tensor *output);
int lt_cudnn_activation_backward(const lt_cuops *ops, void *stream, int mode, double coef, const lt_tensor *input,
                                 const lt_tensor *output, const lt_tensor *grad_output, lt_tensor *grad_input);
/* algorithm: 0 fast (no max subtracted), 1 accurate, 2 log; mode: 0 instance (over all but the batch dimension),
 * 1 channel (over dimension 2 of N x C x H x W at every position); 1-D to 4-D inputs as cudnn.torch viewed them:
 * C, N x C, C x H x W (one image), N x C x H x W. */
int lt_cudnn_softmax_forward(const lt_cuops *ops, void *stream, int algorithm, int mode, const lt_tensor *input,
                             lt_tensor *output);
int lt_cudnn_softmax_backward(const lt_cuops *ops, void *stream, int algorithm, int mode, const lt_tensor *output,
                              const lt_tensor *grad_output, lt_tensor *grad_input);

/* The CUBIN (or PTX for "compute_XX") of native/cuda/<file>.cu ("copy" or "copy.cu") for arch, as the launcher,
 * cutorch.kernels and `luatorch cuda compile` all compile it: the .cuh headers of the folder in memory, sorted by
 * name; -std=c++17 -DLT_CUDA_NVRTC=1 and the registered include folders; through cache_dir (NULL: the
 * registered cache folder; "": no cache). Free *image with lt_cuda_free. Needs NVRTC, not a GPU. */
int lt_cuda_kernel_image(const char *file, const char *arch, const char *cache_dir, char **image, int64_t *len,
                         int *from_cache);
/* ops for device (0-based) over alloc: kernels compiled for the device's compute capability on first use
 * (through the kernel cache) and started with cuLaunchKernel; 256 threads a block, 8 blocks per
 * multiprocessor at most for the grid-stride kernels. */
int lt_cuda_ops_init(lt_cuops *ops, int device, lt_cuda_allocator *alloc);

/* Torch7's sort family along dimension dim (0-based) of x (native/src/cuda_ops_sort.c, native/cuda/sort.cu), in the
 * CPU sort's order (stable; NaN after every number ascending, before every number descending): op "sort" (all
 * n of each slice, descending with desc), "topk" (the first k of that order: the k largest with desc, the k
 * smallest without; always in order), "kthvalue" (the k-th smallest, 1 <= k <= n), "mode" (the most frequent
 * value, the smallest of equally frequent ones, and its last position). values (x's type) and indices (a Long
 * tensor, 1-based positions) have x's shape with dim of size n, k or 1, any layout; they may be x. */
int lt_cuops_sort(const lt_cuops *ops, void *stream, const char *op, lt_tensor *values, lt_tensor *indices,
                  const lt_tensor *x, int dim, int desc, int64_t k);
/* Comparisons, elementwise max/min and other binary functions, masked fills, more unary functions
 * (native/cuda/compare.cu); every type but Half.
 * lt_cuops_compare: out (a Byte tensor) = 1 where x op y (y NULL: the number v, converted to x's type first),
 * else 0; op as lt_math.h's lt_cmpop (0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge); NaN compares false but for ne.
 * lt_cuops_binop: out = cmax (op 4: x > y ? x : y) or cmin (op 5: x < y ? x : y) of x and y (NULL: v, converted
 * to the type first), lt_binop's numbering; out, x (and y) of one type.
 * lt_cuops_masked_fill: out = v where mask (a Byte tensor of out's element count) is not 0.
 * Operands pair elements in row-major order (equal element counts, any shapes and strides). */
int lt_cuops_compare(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x,
                     const lt_tensor *y, double v);
int lt_cuops_binop(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x,
                   const lt_tensor *y, double v);
int lt_cuops_masked_fill(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *mask, double v);
/* lt_cuops_binop also takes op 6 cpow, 7 tpow (pow(v or y, x)), 8 fmod, 9 remainder (the sign of the divisor) and
 * 10 atan2 (Float and Double); integer fmod and remainder only with a non-zero number (Torch7 raises an error for a
 * zero divisor). lt_cuops_unop: out = f_op(x) for Float and Double, op as lt_unop: 7 log1p, 10 floor .. 24 expm1
 * (ceil round trunc frac cinv sin cos tan asin acos atan sinh cosh between). lt_cuops_lerp: out = x + w (y - x),
 * Float and Double. */
int lt_cuops_unop(const lt_cuops *ops, void *stream, int op, lt_tensor *out, const lt_tensor *x);
int lt_cuops_lerp(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, const lt_tensor *y, double w);
/* tril (upper 0: the elements with j - i <= k) or triu (upper 1: j - i >= k) of the matrix x into out (x's shape and
 * type; may be x), the others 0; every type but Half. */
int lt_cuops_tri(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int64_t k, int upper);
/* Torch7's index family along dimension dim (0-based), any of the 8 element types, any strides (kernels:
 * native/cuda/index.cu). index is a 1-D host LongTensor of 1-based positions, checked here with the CPU kernels'
 * messages. index_select: dst (already src's shape with #index along dim) = src's rows index. index_copy:
 * t's rows index = src's rows (add 0: the last of repeated indices wins), or += them in order (add 1: indexAdd),
 * through per-destination row lists built on the host (no atomics, deterministic); src's slices have as many
 * elements as t's and must not overlap t. index_fill: t's rows index = value. */
int lt_cuops_index_select(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, int dim,
                          const lt_tensor *index);
int lt_cuops_index_copy(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                        const lt_tensor *src, int add);
int lt_cuops_index_fill(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                        double value);
/* gather: dst (already index's shape) = src at the 1-based positions index gives along dim. scatter: t at those
 * positions = src (add 0), += src (add 1: scatterAdd), or = value (src NULL); repeated targets as the CPU kernel
 * leaves them (the last wins; sums in order). index is a device LongTensor with the other tensors' sizes except
 * along dim; a kernel checks its values and the verdict is read back (the call waits for the stream): *bad = 1,
 * and nothing written, when one is out of range (the caller then reports it). */
int lt_cuops_gather(const lt_cuops *ops, void *stream, lt_tensor *dst, const lt_tensor *src, int dim,
                    const lt_tensor *index, int *bad);
int lt_cuops_scatter(const lt_cuops *ops, void *stream, lt_tensor *t, int dim, const lt_tensor *index,
                     const lt_tensor *src, int add, double value, int *bad);
/* Float and Double, accumulated in double (kernels: native/cuda/stats.cu). op "norm" (p: 0 counts non-zeros, inf
 * is max |x|), "var" or "std" (biased: divided by n, else by n - 1; two passes). dim >= 0: along dimension dim
 * into out (x's shape with 1 there); dim < 0: over all elements into *result (out unused). */
int lt_cuops_stat(const lt_cuops *ops, void *stream, const char *op, lt_tensor *out, const lt_tensor *x, int dim,
                  double p, int biased, double *result);
/* Torch7's renorm: out = x with each sub-tensor along dim whose p-norm (p > 0) exceeds maxnorm scaled by
 * maxnorm / (norm + 1e-7); out (x's shape) may be x. */
int lt_cuops_renorm(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int dim, double p,
                    double maxnorm);
/* Torch7's cumsum (prod 0) and cumprod (prod 1) along dimension dim into out (x's shape; may be x), any of the 8
 * types, accumulated as the CPU kernel does (double for the floating types, wrapping int64 for the others); a
 * thread per slice (kernels: native/cuda/scan.cu). */
int lt_cuops_scan(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int dim, int prod);
/* Torch7's nonzero: lt_cuops_nonzero_count gives the number of non-zero elements of x (read back); lt_cuops_nonzero
 * writes their 1-based coordinates, in row-major order, into out (a contiguous Long tensor of that many rows and
 * x's dimension count, 1 to 8, columns). Each counts per chunk on the device and reads the counts back. */
int lt_cuops_nonzero_count(const lt_cuops *ops, void *stream, const lt_tensor *x, int64_t *count);
int lt_cuops_nonzero(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x);
/* maskedSelect and maskedCopy (native/cuda/masked.cu), every type but Half; the mask a Byte tensor with as many
 * elements as x (out for maskedCopy), any shapes and strides, paired in row-major order; a mask element is set when
 * it is not 0. lt_cuops_mask_count: *ones = the set elements, *above = the elements above 1 (Torch7 refuses such
 * masks); it reads the two counts back (synchronous). lt_cuops_masked_select: out (x's type, sized by the caller to
 * the mask's count) = x's elements where the mask is set, in row-major order. lt_cuops_masked_copy: out's set
 * elements, in row-major order, = src's first elements (src holds at least the mask's count: the caller checks;
 * elements past src's end are never read). Both count the mask again on the device (no read back). */
int lt_cuops_mask_count(const lt_cuops *ops, void *stream, const lt_tensor *mask, int64_t *ones, int64_t *above);
int lt_cuops_masked_select(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x,
                           const lt_tensor *mask);
int lt_cuops_masked_copy(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *mask,
                         const lt_tensor *src);
/* Torch7's histc (native/cuda/histc.cu), Float and Double: out (x's type, a vector of nbins elements, any stride) =
 * the counts of x's elements in nbins equal bins over [lo, hi] (lo and hi in x's type, lo < hi: the caller resolves
 * Torch7's lo == hi to the data's range); bin (v - lo) / (hi - lo) * nbins computed in x's type, v = hi in the last
 * bin, elements outside [lo, hi] and NaNs counted nowhere. Per-block counts, then their sums (no atomics). */
int lt_cuops_histc(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *x, int64_t nbins, double lo,
                   double hi);
/* Torch7's multinomial with replacement (native/cuda/multinomial.cu): cum (rows x ncat) the running sums of each
 * row's probabilities (>= 0, a positive finite total: the caller checks), u (rows x n) uniform draws in [0, 1), both
 * contiguous Double; out (Long, rows * n elements in (row, draw) order, any strides) = 1 + the first category whose
 * running sum exceeds u * the row's total (the first that reaches the total when rounding leaves none): categories
 * of zero probability are never drawn. */
int lt_cuops_multinomial_search(const lt_cuops *ops, void *stream, lt_tensor *out, const lt_tensor *cum,
                                const lt_tensor *u);
/* Torch7's baddbmm with the result as the added batch: out[e] = beta out[e] + alpha a[e] b[e] for every entry e
 * (3-D Float or Double tensors of one type, out nb x r x c, a nb x r x k, b nb x k x c), in one strided batched
 * cuBLAS call when every operand's entries lie alike, equally spaced (each matrix one gemm reads as it lies, out's
 * entries not overlapping one another and not sharing memory with a or b). 1 (nothing done) for other layouts
 * (the caller multiplies entry by entry), 0 when done, -1 with lt_fail. */
int lt_cuops_baddbmm(const lt_cuops *ops, void *stream, lt_tensor *out, double beta, double alpha, const lt_tensor *a,
                     const lt_tensor *b);
