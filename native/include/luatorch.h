/* luatorch public C API.
 *
 * This header is the single source of truth for the C declarations that both
 * cffi (Python) and LuaJIT's ffi.cdef (Lua) read. The ffi/ build expands the
 * quoted #include lines below, drops every other preprocessor line and embeds
 * the result in the extension module (lt_cdef_text), so Lua gets exactly these
 * declarations from the same shared object it calls.
 *
 * Rules for everything included from here: plain C declarations only — no
 * macros used in declarations, no inline functions, no bit fields; sizes are
 * int64_t, element types are the lt_type enum.
 */
#ifndef LUATORCH_H
#define LUATORCH_H

#include <stdint.h>
#include <stddef.h>

#include "lt_core.h"    /* types, storages, tensors, copy/fill, threads, BLAS */
#include "lt_math.h"    /* pointwise, comparisons, reductions */
#include "lt_linalg.h"  /* dot, mm/mv/addmm/addmv/addr/bmm/baddbmm */
#include "lt_conv.h"    /* conv2, xcorr2, conv3, xcorr3 */
#include "lt_sort.h"    /* sort, topk, kthvalue, cumsum, cumprod */
#include "lt_random.h"  /* Mersenne Twister generator and random fills */
#include "lt_index.h"   /* index/gather/scatter/masked ops, nonzero, cat */
#include "lt_nn.h"      /* THNN-like nn kernels: convolution, batch norm, pooling, activations, criteria */
#include "lt_nn_pointwise.h" /* nn: activations and pointwise layers */
#include "lt_nn_linear.h" /* nn: simple parametric layers, lookup, misc */
#include "lt_nn_table.h" /* nn: table modules, shape modules, containers */
#include "lt_nn_criterion.h" /* nn: the criterions */
#include "lt_nn_spatialconv.h" /* nn: spatial convolutions */
#include "lt_onednn.h" /* nn: SpatialConvolution's float32 passes through oneDNN, when loaded */
#include "lt_nn_tvconv.h" /* nn: temporal and volumetric convolutions */
#include "lt_nn_pooling.h" /* nn: pooling and normalization layers */
#include "lt_nn_padding.h" /* nn: paddings, upsampling, dropouts, shuffles */
#include "lt_nn_rnn.h" /* nn: cuDNN's recurrent cells (cudnn.RNN, LSTM, GRU) */
#include "lt_image.h" /* image: JPEG/PNG/PPM codecs, resampling, colour spaces */
#include "lt_data.h" /* data: the input pipeline's JPEG -> batch slot fast path */
#include "lt_cuda.h" /* cutorch: the CUDA libraries (dlopen), devices, NVRTC and its kernel cache */
#include "lt_threads.h" /* pthread pool with one LuaJIT state per worker, barriers, channels, mutexes */
#include "lt_cuda_alloc.h" /* cutorch: stream-ordered caching allocator over a device-memory backend */
#include "lt_cuda_ops.h" /* cutorch: tensor math on a device, through a kernel launcher */
#include "lt_cuda_storage.h" /* cutorch: storages in GPU memory, and their copies */

#endif
