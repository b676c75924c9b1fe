/* Includes NN_GENERIC_FILE once for float and once for double, with
 * real / accreal / NN_(name) / NN_GEMM / NN_SUM_LANES defined (see nn_internal.h).
 * No include guard: every kernel file includes it.
 *
 * NN_SUM_LANES(+ : s) before a loop that sums into the double s: for float the
 * loop runs in vector lanes (the additions in the lanes' order; one serial chain
 * of double additions is latency-bound, 4 cycles a value, and made batch norm
 * 15% of a GoogLeNet-BN step); for double it keeps THNN's serial order, which
 * the float64 whole-model checks against PyTorch were made in (1e-14 on the
 * output in it, 1e-12 in the lanes' order). */
#define NN_GENERIC_PASS
#define NN_PRAGMA_(x) _Pragma(#x)

#define real float
#define accreal double
#define NN_SUM_LANES(...) NN_PRAGMA_(omp simd reduction(__VA_ARGS__))
#define NN_(name) NN_CAT(name, float)
#define NN_GEMM lt_sgemm
#define NN_EXP expf
#define NN_LOG logf
#include NN_GENERIC_FILE
#undef real
#undef accreal
#undef NN_
#undef NN_GEMM
#undef NN_EXP
#undef NN_LOG
#undef NN_SUM_LANES

#define real double
#define accreal double
#define NN_SUM_LANES(...)
#define NN_(name) NN_CAT(name, double)
#define NN_GEMM lt_dgemm
#define NN_EXP exp
#define NN_LOG log
#include NN_GENERIC_FILE
#undef real
#undef accreal
#undef NN_
#undef NN_GEMM
#undef NN_EXP
#undef NN_LOG
#undef NN_SUM_LANES

#undef NN_PRAGMA_
#undef NN_GENERIC_PASS
#undef NN_GENERIC_FILE
