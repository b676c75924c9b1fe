/* lt_math: Torch7's pointwise math, comparisons, reductions and sequences.
 *
 * Conventions (TH's): the result tensor r is resized like the first source
 * unless it already has that size (then its strides are kept, so results can
 * be written into views); sources only need equal element counts, not equal
 * shapes; all tensors of one call have the same element type (comparisons
 * write a ByteTensor). Scalars are converted to the element type first, as
 * TH's `real` arguments were (IntTensor:add(2.7) adds 2). Integer sums and
 * products accumulate in int64, floating ones in double (TH's accreal).
 * Functions return 0, or -1 with the message in lt_errmsg(). */

/* Element-wise operations with a scalar (lt_math_scalar) or a second tensor
 * (lt_math_binary). */
typedef enum lt_binop {
  LT_OP_ADD = 0,        /* x + v  (csub passes -v) */
  LT_OP_RSUB = 1,       /* v - x  (number - tensor) */
  LT_OP_MUL = 2,        /* x * v */
  LT_OP_DIV = 3,        /* x / v, truncating on integers */
  LT_OP_MAX = 4,        /* cmax */
  LT_OP_MIN = 5,        /* cmin */
  LT_OP_POW = 6,        /* x ^ v */
  LT_OP_TPOW = 7,       /* v ^ x */
  LT_OP_FMOD = 8,       /* C fmod: the sign of x */
  LT_OP_REMAINDER = 9,  /* x - v * floor(x / v): the sign of v */
  LT_OP_ATAN2 = 10,     /* atan2(x, y), FloatTensor and DoubleTensor only */
  /* Integer types shift the element's bits as an unsigned number of its
   * width (no sign extension; shifts past the width give 0); floating types
   * multiply (lshift) or divide (rshift) by 2^v, as TH. */
  LT_OP_LSHIFT = 11,
  LT_OP_RSHIFT = 12,
  /* bitwise and, or, xor: integer types only */
  LT_OP_BITAND = 13,
  LT_OP_BITOR = 14,
  LT_OP_BITXOR = 15
} lt_binop;

typedef enum lt_unop {
  /* all types */
  LT_UN_NEG = 0, LT_UN_ABS = 1, LT_UN_SIGN = 2,
  /* FloatTensor and DoubleTensor only */
  LT_UN_SQRT = 3, LT_UN_RSQRT = 4, LT_UN_EXP = 5, LT_UN_LOG = 6, LT_UN_LOG1P = 7,
  LT_UN_TANH = 8, LT_UN_SIGMOID = 9, LT_UN_FLOOR = 10, LT_UN_CEIL = 11, LT_UN_ROUND = 12,
  LT_UN_TRUNC = 13, LT_UN_FRAC = 14, LT_UN_CINV = 15, LT_UN_SIN = 16, LT_UN_COS = 17,
  LT_UN_TAN = 18, LT_UN_ASIN = 19, LT_UN_ACOS = 20, LT_UN_ATAN = 21, LT_UN_SINH = 22,
  LT_UN_COSH = 23, LT_UN_EXPM1 = 24
} lt_unop;

typedef enum lt_cmpop {
  LT_CMP_EQ = 0, LT_CMP_NE = 1, LT_CMP_LT = 2, LT_CMP_LE = 3, LT_CMP_GT = 4, LT_CMP_GE = 5
} lt_cmpop;

typedef enum lt_redop {
  LT_RED_SUM = 0, LT_RED_PROD = 1, LT_RED_MEAN = 2, LT_RED_VAR = 3, LT_RED_STD = 4,
  LT_RED_NORM = 5, LT_RED_MAX = 6, LT_RED_MIN = 7
} lt_redop;

/* ---- pointwise ---- */
int lt_math_scalar(lt_tensor *r, const lt_tensor *t, int op, double value);          /* r = t op value */
int lt_math_binary(lt_tensor *r, const lt_tensor *a, int op, const lt_tensor *b);    /* r = a op b */
int lt_math_cadd(lt_tensor *r, const lt_tensor *a, double value, const lt_tensor *b); /* r = a + value * b */
/* r = a + value * b * c (divide = 0) or a + value * b / c (divide = 1) */
int lt_math_addc(lt_tensor *r, const lt_tensor *a, double value, const lt_tensor *b, int divide,
                 const lt_tensor *c);
int lt_math_unary(lt_tensor *r, const lt_tensor *t, int op);
int lt_math_clamp(lt_tensor *r, const lt_tensor *t, double lo, double hi);
/* r = a + weight * (b - a), FloatTensor and DoubleTensor only. */
int lt_math_lerp(lt_tensor *r, const lt_tensor *a, const lt_tensor *b, double weight);
const char *lt_math_unop_name(int op);

/* ---- comparisons: r is a ByteTensor of 0/1, resized like a ---- */
int lt_math_compare_value(lt_tensor *r, const lt_tensor *a, int op, double value);
int lt_math_compare(lt_tensor *r, const lt_tensor *a, int op, const lt_tensor *b);
/* *out = 1 if all (any = 0) or any (any = 1) elements are nonzero. */
int lt_math_all_any(const lt_tensor *t, int any, int *out);

/* ---- reductions ----
 * p is the norm's exponent; biased selects var/std's n divisor (else n - 1). */
int lt_math_reduce_all(const lt_tensor *t, int op, double p, int biased, double *out);
/* r = reduction of t along dim (0-based); r keeps dim with size 1. */
int lt_math_reduce_dim(lt_tensor *r, const lt_tensor *t, int dim, int op, double p, int biased);
/* Max (want_max = 1) or min along dim: values like t, indices a LongTensor (1-based). */
int lt_math_maxmin_dim(lt_tensor *values, lt_tensor *indices, const lt_tensor *t, int dim, int want_max);

/* ---- sequences: r is resized to 1-D unless it already has as many elements
 * (then its shape and strides are kept and it is filled in row-major order) ---- */
int lt_math_linspace(lt_tensor *r, double a, double b, int64_t n);
int lt_math_logspace(lt_tensor *r, double a, double b, int64_t n);
int lt_math_range(lt_tensor *r, double a, double b, double step);

/* ---- matrices and slices (math_matrix.c) ----
 * Results are resized as TH did (a result that already has the size keeps its
 * strides) and written through their strides. */
/* t 1-D: r = the square matrix with t on diagonal k (k > 0 above the main
 * diagonal, k < 0 below), zeros elsewhere; t 2-D: r = diagonal k of t (1-D). */
int lt_math_diag(lt_tensor *r, const lt_tensor *t, int64_t k);
/* r = the n x m identity matrix (m <= 0: m = n). */
int lt_math_eye(lt_tensor *r, int64_t n, int64_t m);
/* r = the matrix t with the elements above diagonal k (upper = 0: tril) or
 * below it (upper = 1: triu) set to zero. r may be t. */
int lt_math_tri(lt_tensor *r, const lt_tensor *t, int64_t k, int upper);
/* *out = the sum of the main diagonal of the matrix t (accumulated in double
 * or int64, TH's accreal). */
int lt_math_trace(const lt_tensor *t, double *out);
/* r = the cross product of a and b (same sizes) along dim, which must have
 * size 3; dim < 0 picks the first dimension of size 3. */
int lt_math_cross(lt_tensor *r, const lt_tensor *a, const lt_tensor *b, int dim);
/* Histogram of t's values in nbins equal bins spanning [lo, hi] (lo == hi:
 * t's minimum and maximum, widened by 1 each way when they are equal).
 * Values outside are not counted; hi falls in the last bin. batch = 0: r is
 * 1-D (nbins) over all of t; batch = 1: t is 2-D and r (rows x nbins) holds
 * one histogram per row. FloatTensor and DoubleTensor only. */
int lt_math_histc(lt_tensor *r, const lt_tensor *t, int64_t nbins, double lo, double hi, int batch);
/* r = t with every slice along dim whose p-norm exceeds maxnorm scaled by
 * maxnorm / (norm + 1e-7) (TH's renorm); other slices are copied. t has at
 * least 2 dimensions, p > 0. FloatTensor and DoubleTensor only. r may be t. */
int lt_math_renorm(lt_tensor *r, const lt_tensor *t, double p, int dim, double maxnorm);

