/* IEEE binary16 <-> double/float for the emulated CUDA libraries' half data (round to nearest even), shared by
 * emulated_cublas.c and emulated_cudnn.c. */
#ifndef LT_EMULATED_HALF_H
#define LT_EMULATED_HALF_H
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return sign * ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * ldexp(m + 1024, e - 25);
}

static inline uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  if ((x & 0x7fffffff) > 0x7f800000) return sign | 0x7e00;   /* NaN */
  const double a = fabs((double)f);
  if (a >= 65520.0) return sign | 0x7c00;                    /* rounds past the largest half: infinity */
  /* the value in units of the half's last place at its exponent (subnormals: 2^-24), rounded to even */
  int e;
  frexp(a, &e);                                              /* a = f * 2^e, f in [0.5, 1) */
  const int unit = e - 11 < -24 ? -24 : e - 11;
  const double v = ldexp(nearbyint(ldexp(a, -unit)), unit);  /* the default rounding mode: to nearest even */
  if (v == 0) return sign;
  int ve;
  const double vm = frexp(v, &ve);                          /* v = vm 2^ve */
  if (ve - 1 < -14) return sign | (uint16_t)ldexp(v, 24);   /* subnormal */
  return sign | (uint16_t)(((ve - 1 + 15) << 10) | ((uint16_t)ldexp(vm * 2 - 1, 10) & 1023));
}
#endif
