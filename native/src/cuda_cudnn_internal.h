/* What cuda_cudnn.c shares with the other cuDNN files (cuda_cudnn_layers.c): the core of the dlopen'ed library
 * (handles, tensor descriptors, error strings), the handle per (thread, device), and errors named as cuDNN names
 * them. */
#ifndef LT_CUDA_CUDNN_INTERNAL_H
#define LT_CUDA_CUDNN_INTERNAL_H

#include <stdint.h>

enum { LT_CUDNN_ST_SUCCESS = 0, LT_CUDNN_DATA_FLOAT = 0, LT_CUDNN_DATA_DOUBLE = 1 };

/* 0 when libcudnn loads with the core functions; -1 with the reason */
int lt_cudnn_core_resolve(void);
/* The calling thread's handle on device, bound to stream; the device made current. */
int lt_cudnn_handle(const char *fn, int device, void *stream, void **h);
/* lt_fail with "fn: cudnn<what>: <cuDNN's name of status> (status)"; -1 */
int lt_cudnn_failed(const char *fn, const char *what, int status);
/* A descriptor of a packed (row-major) tensor of nb (3 to 8) dims; destroyed with lt_cudnn_tensor_free. */
int lt_cudnn_packed_tensor(const char *fn, int dtype, int nb, const int64_t *dims, void **desc);
void lt_cudnn_tensor_free(void *desc);
/* The layers' functions (cuda_cudnn_layers.c) all resolved */
int lt_cudnn_layers_resolve(void);

#endif /* LT_CUDA_CUDNN_INTERNAL_H */
