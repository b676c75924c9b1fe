/* dropout.cu — nn.Dropout training forward and backward with a counter-based RNG (philox.cuh).
 *
 *   lt_dropout_fwd_<T>_<idx>(lt_cu_tensor out, lt_cu_tensor in, T *noise, long long n, double p,
 *                            int v1, unsigned long long seed, unsigned long long offset)
 *     noise: contiguous T[n], written in full: noise[i] = kept_i ? scale : 0 with
 *            kept_i as defined in philox.cuh for element number offset + i, and
 *            scale = 1 when v1 (Torch7's Dropout(p, true): the v1 mode scales at evaluation instead),
 *            else (T)(1 / (1 - p)) (inverted dropout, Torch7's default).
 *     out[i] = in[i] * noise[i], computed in lt_acc_t<T> from the stored T noise.
 *     out may be the same tensor as in (Dropout's inplace). The host checks 0 <= p < 1.
 *   lt_dropout_bwd_<T>_<idx>(lt_cu_tensor gradIn, lt_cu_tensor gradOut, const T *noise, long long n)
 *     gradIn[i] = gradOut[i] * noise[i]; gradIn may be gradOut.
 * T is Float, Double or Half. Grid-stride (one thread per group of 4 element numbers, one Philox call
 * per group): any launch geometry, and the result does not depend on it.
 *
 *   lt_random_<T>_<idx>(lt_cu_tensor out, long long n, int kind, double a, double b, unsigned long long seed,
 *                       unsigned long long offset)
 *     cutorch's random fills from the same Philox stream, element i taking draws offset + 2i and offset + 2i + 1:
 *     kind 0 uniform in [a, b) (a 53-bit fraction u from both draws), 1 normal (mean a, std b; Box-Muller on the two
 *     draws as (0, 1] and [0, 1) fractions), 2 bernoulli (1 where u is below a, else 0), 3 exponential
 *     (-log(1 - u) / a), 4 cauchy (a + b tan(pi (u - 1/2))), 5 logNormal (exp of kind 1's normal), 6 geometric
 *     (floor(log(1 - u) / log(a)) + 1: Torch7's, P(x > k) = a^k); computed in double and converted to T.
 *     7: integers in [a, b] (a <= b, both integers): the first draw modulo b - a + 1, plus a, in 64-bit integers
 *     and converted to T (the CPU's rule: one 32-bit draw, so only [a, a + 2^32) when the range is wider). Any type.
 *
 *   lt_rrelu_fwd_<T>_<idx>(lt_cu_tensor out, lt_cu_tensor in, T *noise, long long n, double lower, double upper,
 *                          unsigned long long seed, unsigned long long offset)
 *     nn.RReLU in training: element i's slope is the uniform fill's value in [lower, upper) from the same draws
 *     (offset + 2i, offset + 2i + 1), rounded to lt_acc_t<T> (for Half the Float fill's value, so a half module
 *     draws the float module's slopes); noise[i] = x > 0 ? 1 : slope (contiguous T[n]), out[i] = x * that in
 *     lt_acc_t<T>, rounded once (the float module's output rounded to half). out may be in. Float, Double, Half.
 */
#include "lt_cuda_common.cuh"
#include "philox.cuh"

template <typename T, typename I>
LT_D void lt_dropout_fwd_impl(lt_cu_tensor out, lt_cu_tensor in, T *noise, long long n, double p,
                              int v1, unsigned long long seed, unsigned long long offset) {
  typedef lt_acc_t<T> A;
  if (n <= 0) return;
  T *po = (T *)out.data;
  const T *pin = (const T *)in.data;
  const unsigned long long thr = lt_dropout_threshold(p);
  const T keep = lt_cast<T>(v1 ? 1.0 : 1.0 / (1.0 - p));
  const T drop = lt_cast<T>((A)0);
  const unsigned long long first = offset >> 2;
  const unsigned long long last = (offset + (unsigned long long)n - 1ull) >> 2;
  const I groups = (I)(last - first + 1ull);
  LT_GRID_LOOP(I, g, groups) {
    const unsigned long long block = first + (unsigned long long)g;
    const lt_philox4 r = lt_dropout_block(seed, block);
    for (int l = 0; l < 4; ++l) {
      const unsigned long long e = block * 4ull + (unsigned long long)l;
      if (e - offset >= (unsigned long long)n) continue; /* e < offset wraps to a huge difference */
      const I i = (I)(e - offset);
      const T nz = (unsigned long long)r.v[l] < thr ? keep : drop;
      noise[i] = nz;
      po[lt_offset<I>(out, i)] = lt_cast<T>(lt_cast<A>(pin[lt_offset<I>(in, i)]) * lt_cast<A>(nz));
    }
  }
}

template <typename T, typename I>
LT_D void lt_dropout_bwd_impl(lt_cu_tensor gin, lt_cu_tensor gout, const T *noise, long long n) {
  typedef lt_acc_t<T> A;
  T *pgi = (T *)gin.data;
  const T *pgo = (const T *)gout.data;
  LT_GRID_LOOP(I, i, n) {
    pgi[lt_offset<I>(gin, i)] = lt_cast<T>(lt_cast<A>(pgo[lt_offset<I>(gout, i)]) * lt_cast<A>(noise[i]));
  }
}

#define LT_DROPOUT1(T, N, IDX)                                                                     \
  extern "C" __global__ void lt_dropout_fwd_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor in, T *noise, \
                                                        long long n, double p, int v1,              \
                                                        unsigned long long seed,                    \
                                                        unsigned long long offset) {                \
    lt_dropout_fwd_impl<T, lt_##IDX>(out, in, noise, n, p, v1, seed, offset);                      \
  }                                                                                                \
  LT_EXPORT(lt_dropout_fwd_##N##_##IDX)                                                            \
  extern "C" __global__ void lt_dropout_bwd_##N##_##IDX(lt_cu_tensor gradIn, lt_cu_tensor gradOut,  \
                                                        const T *noise, long long n) {             \
    lt_dropout_bwd_impl<T, lt_##IDX>(gradIn, gradOut, noise, n);                                   \
  }                                                                                                \
  LT_EXPORT(lt_dropout_bwd_##N##_##IDX)

#define LT_DROPOUT(T, N) LT_DROPOUT1(T, N, i32) LT_DROPOUT1(T, N, i64)

LT_FOR_FLOAT_TYPES(LT_DROPOUT)

/* a fraction in [0, 1) of 53 bits from two draws */
LT_D double lt_uniform53(unsigned int r0, unsigned int r1) {
  return ((double)(r0 >> 5) * 67108864.0 + (double)(r1 >> 6)) * (1.0 / 9007199254740992.0);
}

template <typename T, typename I>
LT_D void lt_random_impl(lt_cu_tensor out, long long n, int kind, double a, double b, unsigned long long seed,
                         unsigned long long offset) {
  T *po = (T *)out.data;
  LT_GRID_LOOP(I, i, n) {
    const unsigned long long k = offset + 2ull * (unsigned long long)i;
    const unsigned int r0 = lt_dropout_draw(seed, k), r1 = lt_dropout_draw(seed, k + 1ull);
    if (kind == 7) { /* integers in [a, b] from the first draw, the CPU's r mod (b - a + 1) + a */
      const unsigned long long lo = (unsigned long long)(long long)a;
      const unsigned long long span = (unsigned long long)(long long)b - lo + 1ull; /* 0: all of 2^64 */
      const long long r = (long long)((span ? (unsigned long long)r0 % span : (unsigned long long)r0) + lo);
      po[lt_offset<I>(out, i)] = lt_cast<T>(r);
      continue;
    }
    double v;
    if (kind == 1 || kind == 5) {
      const double u1 = ((double)r0 + 1.0) * (1.0 / 4294967296.0), u2 = (double)r1 * (1.0 / 4294967296.0);
      v = a + b * (sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
      if (kind == 5) v = exp(v);
    } else {
      const double u = lt_uniform53(r0, r1);
      switch (kind) {
        case 0: v = a + (b - a) * u; break;
        case 2: v = u < a ? 1.0 : 0.0; break;
        case 3: v = -1.0 / a * log(1.0 - u); break;
        case 4: v = a + b * tan(3.141592653589793 * (u - 0.5)); break;
        default: v = floor(log(1.0 - u) / log(a)) + 1.0; break; /* 6 */
      }
    }
    po[lt_offset<I>(out, i)] = lt_cast<T>(v);
  }
}

#define LT_RANDOM1(T, N, IDX)                                                                          \
  extern "C" __global__ void lt_random_##N##_##IDX(lt_cu_tensor out, long long n, int kind, double a,  \
                                                   double b, unsigned long long seed,                  \
                                                   unsigned long long offset) {                        \
    lt_random_impl<T, lt_##IDX>(out, n, kind, a, b, seed, offset);                                     \
  }                                                                                                    \
  LT_EXPORT(lt_random_##N##_##IDX)
#define LT_RANDOM(T, N) LT_RANDOM1(T, N, i32) LT_RANDOM1(T, N, i64)

LT_FOR_ALL_TYPES(LT_RANDOM)

template <typename T, typename I>
LT_D void lt_rrelu_fwd_impl(lt_cu_tensor out, lt_cu_tensor in, T *noise, long long n, double lower, double upper,
                            unsigned long long seed, unsigned long long offset) {
  typedef lt_acc_t<T> A;
  T *po = (T *)out.data;
  const T *pin = (const T *)in.data;
  LT_GRID_LOOP(I, i, n) {
    const unsigned long long k = offset + 2ull * (unsigned long long)i;
    const double u = lt_uniform53(lt_dropout_draw(seed, k), lt_dropout_draw(seed, k + 1ull));
    const A slope = (A)(lower + (upper - lower) * u);   /* the uniform fill's value, as its Float kernel stores it */
    const A x = lt_cast<A>(pin[lt_offset<I>(in, i)]);
    const A r = x > (A)0 ? (A)1 : slope;
    noise[i] = lt_cast<T>(r);
    po[lt_offset<I>(out, i)] = lt_cast<T>(x * r);
  }
}

#define LT_RRELU1(T, N, IDX)                                                                           \
  extern "C" __global__ void lt_rrelu_fwd_##N##_##IDX(lt_cu_tensor out, lt_cu_tensor in, T *noise,     \
                                                      long long n, double lower, double upper,         \
                                                      unsigned long long seed,                         \
                                                      unsigned long long offset) {                     \
    lt_rrelu_fwd_impl<T, lt_##IDX>(out, in, noise, n, lower, upper, seed, offset);                     \
  }                                                                                                    \
  LT_EXPORT(lt_rrelu_fwd_##N##_##IDX)
#define LT_RRELU(T, N) LT_RRELU1(T, N, i32) LT_RRELU1(T, N, i64)

LT_FOR_FLOAT_TYPES(LT_RRELU)
