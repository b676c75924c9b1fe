/* simt_selftest.cu — kernels that check the emulator itself (shuffles, barriers, early exit),
 * compiled like the kernel sources: g++ -std=c++20 -DLT_SIMT_HOST -I tests/cuda_host ... */
#include "simt.h"

/* per thread g (global index), 7 results of shuffles of v = 7*g + 1 with the given width */
extern "C" __global__ void simt_test_shfl(int *out, int width) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = 7 * g + 1;
  int *o = out + 7 * g;
  o[0] = __shfl_down_sync(0xffffffffu, v, 1, width);
  o[1] = __shfl_down_sync(0xffffffffu, v, 5, width);
  o[2] = __shfl_down_sync(0xffffffffu, v, 16, width);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 1, width);
  o[4] = __shfl_xor_sync(0xffffffffu, v, 12, width);
  o[5] = __shfl_up_sync(0xffffffffu, v, 3, width);
  o[6] = __shfl_sync(0xffffffffu, v, 5, width);
}
static const int simt_reg_shfl = simt::reg("simt_test_shfl", &simt_test_shfl);

/* a 64-bit and a double shuffle (two 32-bit halves on the hardware) */
extern "C" __global__ void simt_test_shfl64(long long *out, double *outd) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const long long v = 0x100000000ll * (g + 3) + g;
  out[g] = __shfl_down_sync(0xffffffffu, v, 2);
  outd[g] = __shfl_xor_sync(0xffffffffu, 0.5 + g, 3);
}
static const int simt_reg_shfl64 = simt::reg("simt_test_shfl64", &simt_test_shfl64);

/* shared memory and barriers over several phases: out[g] = sum over phases of a neighbour's value */
extern "C" __global__ void simt_test_sync(int *out, int phases) {
  __shared__ int buf[1024];
  const int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  int acc = 0;
  for (int k = 0; k < phases; ++k) {
    buf[t] = 1000 * k + 10 * t + (int)blockIdx.x;
    __syncthreads();
    acc += buf[(t + 1) % blockDim.x];
    __syncthreads();
  }
  out[g] = acc;
}
static const int simt_reg_sync = simt::reg("simt_test_sync", &simt_test_sync);

/* threads t % 3 == 0 return at once; the others keep synchronizing among themselves */
extern "C" __global__ void simt_test_exit(int *out) {
  __shared__ int buf[1024];
  const int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  if (t % 3 == 0) return;
  int partner = (t + 1) % (int)blockDim.x;
  while (partner % 3 == 0) partner = (partner + 1) % (int)blockDim.x; /* the next live thread */
  int acc = 0;
  for (int k = 0; k < 3; ++k) {
    buf[t] = 100 * k + t;
    __syncthreads();
    acc += buf[partner];
    __syncthreads();
  }
  out[g] = acc;
}
static const int simt_reg_exit = simt::reg("simt_test_exit", &simt_test_exit);

/* geometry: every thread writes its coordinates */
extern "C" __global__ void simt_test_ids(int *out) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  out[4 * g + 0] = (int)threadIdx.x;
  out[4 * g + 1] = (int)blockIdx.x;
  out[4 * g + 2] = (int)blockDim.x;
  out[4 * g + 3] = (int)gridDim.x;
}
static const int simt_reg_ids = simt::reg("simt_test_ids", &simt_test_ids);
