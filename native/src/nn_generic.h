/* Includes NN_GENERIC_FILE once for float and once for double, with
 * real / accreal / NN_(name) / NN_GEMM / NN_REAL_IS_DOUBLE defined (see nn_internal.h).
 * No include guard: every kernel file includes it. */
#define NN_GENERIC_PASS

#define real float
#define accreal double
#define NN_REAL_IS_DOUBLE 0
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
#undef NN_REAL_IS_DOUBLE

#define real double
#define accreal double
#define NN_REAL_IS_DOUBLE 1
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
#undef NN_REAL_IS_DOUBLE

#undef NN_GENERIC_PASS
#undef NN_GENERIC_FILE
