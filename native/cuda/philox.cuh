/* philox.cuh — Philox4x32-10 counter-based random numbers, and the dropout mask built on it.
 *
 * Usable from CUDA device code (NVRTC), from the host emulator's C++ and from plain C99 host code
 * (native/src is C): every function is LT_HOST_DEVICE, which is `__host__ __device__ __forceinline__`
 * under CUDA/NVRTC and `static inline` in ordinary C/C++. So the host can recompute any mask a kernel
 * drew, bit for bit.
 *
 * Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC11):
 * a 128-bit counter c[0..3] and a 64-bit key k[0..1]; ten rounds, each
 *     (hi0, lo0) = M0 * c[0],  (hi1, lo1) = M1 * c[2]        (32 x 32 -> 64-bit products)
 *     c = (hi1 ^ c[1] ^ k[0],  lo1,  hi0 ^ c[3] ^ k[1],  lo0)
 * with the key bumped by (W0, W1) (mod 2^32) before every round after the first.
 * M0 = 0xD2511F53, M1 = 0xCD9E8D57, W0 = 0x9E3779B9 (golden ratio), W1 = 0xBB67AE85 (sqrt(3) - 1).
 * Checked against the Random123 known-answer vectors in tests/test_cuda_kernels_host.py.
 *
 * Dropout stream (used by dropout.cu; the host reproduces it with lt_dropout_draw):
 *   key     = (low 32 bits of seed, high 32 bits of seed)
 *   element = offset + i for the tensor's element i (row-major), offset chosen by the host so that
 *             successive calls with one seed never reuse an element number (advance it by n, or by
 *             n rounded up to a multiple of 4 to keep whole Philox blocks)
 *   counter = (low 32 bits of element/4, high 32 bits of element/4, 0, 0)
 *   draw    = output word (element % 4) of Philox4x32-10(counter, key)
 *   kept    = draw < lt_dropout_threshold(p) = floor((1 - p) * 2^32)   so P(kept) = 1 - p  (to 2^-32)
 */
#ifndef LT_PHILOX_CUH
#define LT_PHILOX_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(LT_SIMT_HOST)
#define LT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define LT_HOST_DEVICE static inline
#endif

#define LT_PHILOX_M0 0xD2511F53u
#define LT_PHILOX_M1 0xCD9E8D57u
#define LT_PHILOX_W0 0x9E3779B9u
#define LT_PHILOX_W1 0xBB67AE85u

typedef struct lt_philox4 {
  unsigned int v[4];
} lt_philox4;

LT_HOST_DEVICE lt_philox4 lt_philox4x32_10(lt_philox4 c, unsigned int k0, unsigned int k1) {
  int r;
  for (r = 0; r < 10; ++r) {
    unsigned long long p0, p1;
    lt_philox4 n;
    if (r > 0) {
      k0 += LT_PHILOX_W0;
      k1 += LT_PHILOX_W1;
    }
    p0 = (unsigned long long)LT_PHILOX_M0 * c.v[0];
    p1 = (unsigned long long)LT_PHILOX_M1 * c.v[2];
    n.v[0] = (unsigned int)(p1 >> 32) ^ c.v[1] ^ k0;
    n.v[1] = (unsigned int)p1;
    n.v[2] = (unsigned int)(p0 >> 32) ^ c.v[3] ^ k1;
    n.v[3] = (unsigned int)p0;
    c = n;
  }
  return c;
}

/* the four draws of Philox block `block` (elements 4*block .. 4*block+3) of stream `seed` */
LT_HOST_DEVICE lt_philox4 lt_dropout_block(unsigned long long seed, unsigned long long block) {
  lt_philox4 c;
  c.v[0] = (unsigned int)block;
  c.v[1] = (unsigned int)(block >> 32);
  c.v[2] = 0u;
  c.v[3] = 0u;
  return lt_philox4x32_10(c, (unsigned int)seed, (unsigned int)(seed >> 32));
}

/* the draw for element number `element` (= offset + i) */
LT_HOST_DEVICE unsigned int lt_dropout_draw(unsigned long long seed, unsigned long long element) {
  return lt_dropout_block(seed, element >> 2).v[element & 3u];
}

/* keep iff draw < threshold; 0 keeps nothing (p >= 1 or NaN), 2^32 keeps everything (p <= 0) */
LT_HOST_DEVICE unsigned long long lt_dropout_threshold(double p) {
  const double q = 1.0 - p;
  if (!(q > 0.0)) return 0ull;
  if (q >= 1.0) return 1ull << 32;
  return (unsigned long long)(q * 4294967296.0);
}

#endif /* LT_PHILOX_CUH */
