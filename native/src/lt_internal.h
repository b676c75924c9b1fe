/* Internal helpers shared by the C kernels: type dispatch, strided iteration,
 * error reporting, OpenMP thresholds. Not part of the FFI surface. */
#ifndef LT_INTERNAL_H
#define LT_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "luatorch.h"

#define LT_MAXDIM 16

/* Elementwise loops shorter than this run on one thread: below it the
 * OpenMP fork/join costs more than the work. */
#define LT_OMP_THRESHOLD 32768

/* "[2 x 3]": a tensor's sizes as TH's error messages print them. */
const char *lt_shape_str(const lt_tensor *t, char *buf, size_t len);

/* A symbol of the loaded BLAS library (its LAPACK routines), NULL if absent or not loaded. */
void *lt_blas_symbol(const char *name);
/* A row-major float32 GEMM with dnnl_sgemm's signature ('N'/'T'; 0 on success), set by onednn.c. */
typedef int (*lt_sgemm_provider)(char transA, char transB, int64_t m, int64_t n, int64_t k, float alpha,
                                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                                 int64_t ldc);
void lt_blas_set_sgemm_provider(lt_sgemm_provider f);

/* A whole file into a malloc'ed, NUL-terminated buffer (*len bytes before the NUL); -1, with no message,
 * when it cannot be opened or read. */
int lt_read_whole_file(const char *path, char **data, int64_t *len);

/* Set the per-thread error message (printf style) and return -1. */
int lt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The element type of a type id: a Cuda type (cutorch's names; on this build
 * its elements are host memory) has its host counterpart's elements. Kernels
 * dispatch on this; equality checks between two tensors compare the ids
 * themselves, so a CudaTensor and a FloatTensor do not mix (as in cutorch). */
static inline int lt_host_type(int type) { return type >= LT_CUDA_BYTE ? type - LT_CUDA_BYTE : type; }

/* A double for Lua: the scalar results that the FFI hands to LuaJIT (returned, or written through a double *)
 * pass through this. LuaJIT NaN-tags its values and does not canonicalize FFI doubles (its issue #348): a
 * negative NaN with a large payload (high word 0xFFF90000 and up: sums of such data, bytes from files) would
 * be nil or a pointer to Lua. Torch7's lua_pushnumber canonicalized; every NaN here becomes the positive quiet
 * NaN, whose bits are spelled out so that no platform's NAN macro can change them. */
static inline double lt_number(double x) {
  if (x == x) return x;
  const uint64_t positive_quiet_nan = 0x7ff8000000000000ull;
  double nan;
  memcpy(&nan, &positive_quiet_nan, sizeof nan);
  return nan;
}

/* cuda_storage.c: the storage and copy paths of device memory (lt_cuda_storage.h), called where the host
 * code would otherwise read or write a device storage's data. */
lt_storage *lt_cuda_storage_new_if_device(int type, int64_t size, int *handled);
/* Functions of one of the CUDA libraries looked up once (cuda_device.c): every slot filled and *done set, or -1
 * with lt_errmsg naming the first one missing. */
typedef struct { void **slot; const char *name; } lt_cuda_sym;
int lt_cuda_find_symbols(int which, const lt_cuda_sym *syms, size_t n, int *done);
/* nn_pointwise.c's entries for tensors in GPU memory (cuda_nn.c), its arguments already checked. */
int lt_cuda_nn_pointwise_updateOutput(int op, lt_tensor *input, lt_tensor *output, double a, double b, int inplace);
int lt_cuda_nn_pointwise_updateGradInput(int op, lt_tensor *ref, lt_tensor *gradOutput, lt_tensor *gradInput,
                                         double a, double b, int inplace);
/* nn_pointwise_prelu.c's PReLU for tensors in GPU memory (cuda_nn.c): pass 0 forward, 1 gradInput, 2 gradWeight. */
int lt_cuda_nn_prelu(const char *fn, int pass, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                     const lt_tensor *weight, int64_t outer, int64_t planes, int64_t inner, double scale);
/* nn_padding.c's gather layers for tensors in GPU memory (cuda_nn.c): the forward (gradOutput NULL) into result
 * (resized to out_sizes, input's dimension count) or the backward into result (input's shape), through the
 * per-axis maps (out[a] entries each, -1 for none). */
int lt_cuda_nn_gather(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                      const int64_t *out_sizes, int64_t planes, const int64_t in[3], const int64_t out[3],
                      int64_t *const maps[3]);
/* nn_padding.c's linear upsampling for tensors in GPU memory (cuda_nn.c): as lt_cuda_nn_gather, through the
 * per-axis tap tables (output o reads inputs i0[o], i1[o] with weights 1 - w1[o], w1[o]). */
int lt_cuda_nn_linear(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                      const int64_t *out_sizes, int64_t planes, const int64_t in[3], const int64_t out[3],
                      int64_t *const i0[3], int64_t *const i1[3], double *const w1[3]);
/* nn_criterion_class.c's MultiMargin (multilabel 0: weights, p, margin) and MultiLabelMargin (1: isTarget) criterions
 * for inputs in GPU memory (cuda_nn.c), the targets already checked on the host (nframe or nframe x dim 1-based
 * classes): the loss into output (gradInput NULL) or the gradient into gradInput. */
int lt_cuda_nn_class_margin(const char *fn, int multilabel, lt_tensor *input, const int64_t *target, int64_t nframe,
                            int64_t dim, lt_tensor *weights, lt_tensor *isTarget, lt_tensor *output,
                            lt_tensor *gradInput, int size_average, int p, double margin, double *value);
/* nn_pooling_volumetric.c's TemporalMaxPooling for tensors in GPU memory (cuda_nn.c): forward (gradOutput NULL) into
 * result and indices (Torch7's 0-based frames in the window, a CudaLongTensor), or backward into result. */
int lt_cuda_nn_temporal_maxpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                lt_tensor *indices, int64_t N, int64_t T, int64_t F, int64_t oT, int kW, int dW);
/* nn_pooling_spatial.c's SpatialAdaptiveMaxPooling for tensors in GPU memory (cuda_nn.c): forward (gradOutput NULL)
 * into result and indices (Torch7's (2, [N,] C, oH, oW) layout, a CudaLongTensor), or backward into result. */
int lt_cuda_nn_adaptive_maxpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                lt_tensor *indices, int64_t planes, int64_t iH, int64_t iW, int64_t oH, int64_t oW);
/* nn_pooling_spatial.c's plane-indexed scatter (SpatialMaxUnpooling's forward, SpatialDilatedMaxPooling's backward:
 * dst zeroed, src added at the 1-based positions of indices) and gather (unpooling's backward) for tensors in GPU
 * memory (cuda_nn.c): planes x L entries of src and indices, planes x other of the other side; dst resized to
 * dst_sizes; positions outside 0..other refused naming `plane`. */
int lt_cuda_nn_plane_index(const char *fn, int scatter, lt_tensor *src, lt_tensor *indices, lt_tensor *dst, int ndim,
                           const int64_t *dst_sizes, int64_t planes, int64_t L, int64_t other, const char *plane);
/* SpatialDilatedMaxPooling's forward in GPU memory: geo = planes, iH, iW, oH, oW, kH, kW, dH, dW, padH, padW,
 * dilH, dilW; output and indices (a CudaLongTensor) resized to out_sizes. */
int lt_cuda_nn_dilated_maxpool(const char *fn, lt_tensor *input, lt_tensor *output, lt_tensor *indices,
                               const int64_t *out_sizes, const int64_t geo[13]);
/* nn_pooling_spatial.c's SpatialCrossMapLRN for tensors in GPU memory (cuda_nn.c): forward (gradOutput and
 * output NULL) into result and scale, or backward into result from the forward's output and scale. */
int lt_cuda_nn_lrn(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, lt_tensor *scale,
                   lt_tensor *output, int64_t N, int64_t C, int64_t S, int size, double alpha, double beta,
                   double k);
/* nn_pooling_spatial.c's SpatialAdaptiveAveragePooling for tensors in GPU memory (cuda_nn.c): forward (gradOutput
 * NULL) into result (oH x oW), or backward into result (input's shape). */
int lt_cuda_nn_adaptive_avgpool(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result,
                                int64_t planes, int64_t iH, int64_t iW, int64_t oH, int64_t oW);
/* nn_criterion_pointwise.c's (cuda_nn.c), its arguments already checked. */
int lt_cuda_nn_criterion_updateOutput(const char *fn, int kind, lt_tensor *input, lt_tensor *target,
                                      lt_tensor *output, int size_average, lt_tensor *weights, double param,
                                      double *value);
int lt_cuda_nn_criterion_updateGradInput(const char *fn, int kind, lt_tensor *input, lt_tensor *target,
                                         lt_tensor *gradInput, int size_average, lt_tensor *weights, double param);
void lt_cuda_storage_free_data(lt_storage *s);
int lt_cuda_storage_resize(lt_storage *s, int64_t size);
int lt_cuda_storage_fill(lt_storage *s, double value);
int lt_cuda_storage_copy(lt_storage *dst, int64_t dst_off, lt_storage *src, int64_t src_off, int64_t n);
int lt_cuda_tensor_copy(lt_tensor *dst, const lt_tensor *src);
/* dst[k] <- src[k] for k < n, same type per pair: pairs within one device in one launch, others one by one */
int lt_cuda_tensor_copy_many(lt_tensor *const *dst, const lt_tensor *const *src, int n);
int lt_cuda_tensor_fill(lt_tensor *t, double value);

/* Run the body (the variadic argument, so it may contain commas) with `scalar_t` typedef'd to the C type of lt_type TYPE. */
#define LT_DISPATCH(TYPE, ...)                                              \
  switch (lt_host_type(TYPE)) {                                                           \
    case LT_BYTE:   { typedef uint8_t scalar_t; __VA_ARGS__; } break;              \
    case LT_CHAR:   { typedef int8_t scalar_t; __VA_ARGS__; } break;               \
    case LT_SHORT:  { typedef int16_t scalar_t; __VA_ARGS__; } break;              \
    case LT_INT:    { typedef int32_t scalar_t; __VA_ARGS__; } break;              \
    case LT_LONG:   { typedef int64_t scalar_t; __VA_ARGS__; } break;              \
    case LT_FLOAT:  { typedef float scalar_t; __VA_ARGS__; } break;                \
    case LT_DOUBLE: { typedef double scalar_t; __VA_ARGS__; } break;               \
    default: return lt_fail("unknown tensor type %d", (int)(TYPE));         \
  }

/* Same, with the type named by the caller (for nested dispatch). */
#define LT_DISPATCH_AS(TYPE, NAME, ...)                                     \
  switch (lt_host_type(TYPE)) {                                                           \
    case LT_BYTE:   { typedef uint8_t NAME; __VA_ARGS__; } break;                  \
    case LT_CHAR:   { typedef int8_t NAME; __VA_ARGS__; } break;                   \
    case LT_SHORT:  { typedef int16_t NAME; __VA_ARGS__; } break;                  \
    case LT_INT:    { typedef int32_t NAME; __VA_ARGS__; } break;                  \
    case LT_LONG:   { typedef int64_t NAME; __VA_ARGS__; } break;                  \
    case LT_FLOAT:  { typedef float NAME; __VA_ARGS__; } break;                    \
    case LT_DOUBLE: { typedef double NAME; __VA_ARGS__; } break;                   \
    default: return lt_fail("unknown tensor type %d", (int)(TYPE));         \
  }

/* Only the floating types (float, double). */
#define LT_DISPATCH_FLOATING(TYPE, OPNAME, ...)                             \
  switch (lt_host_type(TYPE)) {                                                           \
    case LT_FLOAT:  { typedef float scalar_t; __VA_ARGS__; } break;                \
    case LT_DOUBLE: { typedef double scalar_t; __VA_ARGS__; } break;               \
    default: return lt_fail("%s is only defined for FloatTensor and DoubleTensor", OPNAME); \
  }

/* ---- strided iteration ---------------------------------------------------
 * An lt_iter walks a tensor in row-major order as a sequence of runs along
 * its innermost (collapsed) dimension. Kernels over several tensors with the
 * same element count (Torch7 only requires equal nElement, not equal shapes)
 * take runs of the length all iterators can serve and advance them together:
 *
 *   lt_iter a, b; lt_iter_init(&a, ta); lt_iter_init(&b, tb);
 *   while (!lt_iter_done(&a)) {
 *     int64_t n = lt_iter_run(&a, &b, NULL);
 *     ... loop i < n over a.ptr + i*a.inner_stride, b.ptr + i*b.inner_stride ...
 *     lt_iter_advance(&a, n); lt_iter_advance(&b, n);
 *   }
 */
typedef struct lt_iter {
  char *ptr;              /* current element */
  int64_t inner_stride;   /* in elements */
  int64_t inner_left;     /* elements left in the current run */
  int64_t remaining;      /* elements left in total */
  int ndim;
  int elemsize;
  int64_t size[LT_MAXDIM];
  int64_t stride[LT_MAXDIM];  /* in elements */
  int64_t counter[LT_MAXDIM];
  char *base;
} lt_iter;

void lt_iter_init(lt_iter *it, const lt_tensor *t);
int64_t lt_iter_run(const lt_iter *a, const lt_iter *b, const lt_iter *c);
void lt_iter_advance(lt_iter *it, int64_t n);
static inline int lt_iter_done(const lt_iter *it) { return it->remaining <= 0; }

/* Collapse a tensor's dimensions: drop size-1 dims and merge dims that are
 * contiguous with each other. Returns the collapsed ndim (0 for a scalar
 * run of one element or an empty tensor). */
int lt_collapse(const lt_tensor *t, int64_t *size, int64_t *stride);

/* `#pragma omp` cannot appear inside the dispatch macros' arguments, so
 * parallel loops use this _Pragma form. The loop count must be in a
 * variable named lt_par_n:
 *     int64_t lt_par_n = n;
 *     LT_PARALLEL_FOR
 *     for (int64_t i = 0; i < n; i++) ...                                  */
#define LT_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if(lt_par_n >= 32768)")

/* A 2-D convolution's geometry (nn_spatialconv.c), shared by the CPU kernels and the GPU ones (cuda_ops.c).
 * lt_conv2d_check_sizes: kernel, stride and padding in range. lt_conv2d_geometry: input 3-D or 4-D (the caller
 * checked), weight (nOut, C, kH, kW) or (nOut, C*kH*kW), dilation >= 1, the input's planes, and an output of at
 * least 1 x 1: oH = (H + 2 padH - (dilH (kH-1) + 1)) / dH + 1. Torch7's messages. */
typedef struct lt_conv2d_geom {
  int batch;                 /* input was 4-D */
  int64_t N, C, H, W, nOut, oH, oW;
} lt_conv2d_geom;
int lt_conv2d_check_sizes(const char *fn, int kW, int kH, int dW, int dH, int padW, int padH);
int lt_conv2d_geometry(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                       int dH, int padW, int padH, int dilW, int dilH, lt_conv2d_geom *g);
/* The full (transposed) convolution's: weight (C, nOut, kH, kW), 0 <= adj < stride, an output of at least 1 x 1:
 * oH = (H - 1) dH - 2 padH + kH + adjH. */
int lt_full_conv2d_geometry(const char *fn, const lt_tensor *input, const lt_tensor *weight, int kW, int kH, int dW,
                            int dH, int padW, int padH, int adjW, int adjH, lt_conv2d_geom *g);

#endif
