/* philox_check.c — native/cuda/philox.cuh compiled as plain C99 (as native/src/ host code would use
 * it), for tests/test_cuda_kernels_host.py. */
#include "philox.cuh"

void lt_check_philox(const unsigned int *ctr, const unsigned int *key, unsigned int *out) {
  lt_philox4 c;
  int k;
  for (k = 0; k < 4; ++k) c.v[k] = ctr[k];
  c = lt_philox4x32_10(c, key[0], key[1]);
  for (k = 0; k < 4; ++k) out[k] = c.v[k];
}

/* mask[i] = 1 when element offset + i is kept by a dropout with probability p, stream seed */
void lt_check_dropout_mask(unsigned long long seed, unsigned long long offset, long long n, double p,
                           unsigned char *mask) {
  const unsigned long long thr = lt_dropout_threshold(p);
  long long i;
  for (i = 0; i < n; ++i) mask[i] = (unsigned long long)lt_dropout_draw(seed, offset + (unsigned long long)i) < thr;
}
