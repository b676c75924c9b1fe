/* nn_criterion.cu — nn's elementwise criterions on the GPU (Abs, SmoothL1, DistKLDiv, Margin, SoftMargin, BCE,
 * L1Cost, HingeEmbedding, MSE: lt_nn_criterion.h's LT_CRIT_* kinds, whose formulas these are; native/src/
 * nn_criterion_pointwise.c is the CPU kernel and the oracle).
 *
 *   lt_nn_crit_fwd_<T>_<idx>(double *loss, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor w, int has_w,
 *                            long long n, int kind, double param)
 *     loss[i] = f_kind(x[i], y[i]) (times w[i] for BCE with has_w), in double: the caller sums the n terms
 *     (contiguous) as the CPU kernel sums them in its accumulation type.
 *   lt_nn_crit_bwd_<T>_<idx>(lt_cu_tensor gradInput, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor w, int has_w,
 *                            long long n, int kind, double param, double norm)
 *     gradInput[i] = f'_kind(x[i], y[i]) (times w[i]) times norm (1/n with sizeAverage).
 * T is Float, Double or Half; values are computed in double, as the CPU kernel's accreal for Float and Double, the
 * gradient stored through float for Half (lt_store: the Float kernel's rounded once to half); the loss, summed in
 * double by the caller, is rounded to half by writing it into the half output (through float). A BCE input
 * outside [0, 1] (or NaN) makes its term NaN, so the sum is NaN: the caller, which refuses such inputs, searches
 * for the culprit only then (no range check before each forward). Grid-stride loops: any launch geometry.
 *
 * The class-score criterions (native/src/nn_criterion_class.c), one thread per frame (a row of dim scores, x and
 * the outputs contiguous), targets 1-based and checked by the caller:
 *   lt_multimargin_fwd_<T>(double *terms, const T *x, const q *target, const T *w (or 0), q nframe, q dim, int p,
 *                          double margin)
 *     terms[f] = w[t] sum_{d != t} max(0, margin - x[t] + x[d])^p: the caller sums, / dim (/ nframe)
 *   lt_multimargin_bwd_<T>(T *gradIn, const T *x, const q *target, const T *w, q nframe, q dim, int p,
 *                          double margin, double scale)
 *   lt_multilabel_fwd_<T>(double *terms, T *isTarget, const T *x, const q *target, q nframe, q dim)
 *     a frame's targets are its row of target up to the first 0; isTarget marks them; terms[f] =
 *     sum_{j target, d not} max(0, 1 - x[j] + x[d])
 *   lt_multilabel_bwd_<T>(T *gradIn, const T *x, const T *isTarget, const q *target, q nframe, q dim,
 *                         double scale)
 *     the CPU kernel's own sequence of += and -= scale, in T (Half: each step in float, rounded to half)
 * These too for Float, Double and Half (scores read exactly in double; gradients stored through lt_store).
 */
#include "lt_cuda_common.cuh"

enum { CRIT_ABS = 1, CRIT_SMOOTHL1, CRIT_DISTKLDIV, CRIT_MARGIN, CRIT_SOFTMARGIN, CRIT_BCE, CRIT_L1COST,
       CRIT_HINGE, CRIT_MSE };
#define LT_CRIT_EPS 1e-12

LT_D double lt_crit_f(int kind, double a, double b, double param) {
  switch (kind) {
    case CRIT_ABS: return fabs(a - b);
    case CRIT_SMOOTHL1: {
      const double z = fabs(a - b);
      return z < 1 ? 0.5 * z * z : z - 0.5;
    }
    case CRIT_DISTKLDIV: return b > 0 ? b * (log(b) - a) : 0;
    case CRIT_MARGIN: {
      const double z = param - a * b;
      return z > 0 ? z : 0;
    }
    case CRIT_SOFTMARGIN: {   /* log(1 + exp(-a b)) without overflow */
      const double z = -a * b;
      return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
    }
    case CRIT_BCE:   /* an input outside [0, 1] (or NaN) gives a NaN term: the caller looks for it only then */
      if (!(a >= 0 && a <= 1)) return lt_nan_d();
      return -(log(a + LT_CRIT_EPS) * b + log(1 - a + LT_CRIT_EPS) * (1 - b));
    case CRIT_L1COST: return fabs(a);
    case CRIT_HINGE: return (b != -1 ? a : 0) + (b != 1 && param - a > 0 ? param - a : 0);
    case CRIT_MSE: return (a - b) * (a - b);
  }
  return 0;
}

LT_D double lt_crit_df(int kind, double a, double b, double param) {
  switch (kind) {
    case CRIT_ABS: return a - b >= 0 ? 1 : -1;
    case CRIT_SMOOTHL1: {
      const double z = a - b;
      return z < -1 ? -1 : (z > 1 ? 1 : z);
    }
    case CRIT_DISTKLDIV: return b > 0 ? -b : 0;
    case CRIT_MARGIN: return a * b < param ? -b : 0;
    case CRIT_SOFTMARGIN: {   /* -b / (1 + exp(a b)) */
      const double z = a * b;
      return z > 0 ? -b * exp(-z) / (1 + exp(-z)) : -b / (1 + exp(z));
    }
    case CRIT_BCE: return -(b - a) / ((1 - a + LT_CRIT_EPS) * (a + LT_CRIT_EPS));
    case CRIT_L1COST: return a > 0 ? 1 : (a < 0 ? -1 : 0);
    case CRIT_HINGE: return b == -1 && a > param ? 0 : b;
    case CRIT_MSE: return 2 * (a - b);
  }
  return 0;
}

template <typename T, typename I>
LT_D void lt_nn_crit_fwd_impl(double *loss, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor w, int has_w, long long n,
                              int kind, double param) {
  const T *px = (const T *)x.data, *py = (const T *)y.data, *pw = (const T *)w.data;
  LT_GRID_LOOP(I, i, n) {
    double v = lt_crit_f(kind, lt_cast<double>(px[lt_offset<I>(x, i)]), lt_cast<double>(py[lt_offset<I>(y, i)]),
                         param);
    if (has_w && kind == CRIT_BCE) v *= lt_cast<double>(pw[lt_offset<I>(w, i)]);
    loss[i] = v;
  }
}

template <typename T, typename I>
LT_D void lt_nn_crit_bwd_impl(lt_cu_tensor gi, lt_cu_tensor x, lt_cu_tensor y, lt_cu_tensor w, int has_w,
                              long long n, int kind, double param, double norm) {
  T *pg = (T *)gi.data;
  const T *px = (const T *)x.data, *py = (const T *)y.data, *pw = (const T *)w.data;
  LT_GRID_LOOP(I, i, n) {
    double g = lt_crit_df(kind, lt_cast<double>(px[lt_offset<I>(x, i)]), lt_cast<double>(py[lt_offset<I>(y, i)]),
                          param);
    if (has_w && kind == CRIT_BCE) g *= lt_cast<double>(pw[lt_offset<I>(w, i)]);
    pg[lt_offset<I>(gi, i)] = lt_store<T>(g * norm);
  }
}

#define LT_NN_CRIT1(T, N, IDX)                                                                                   \
  extern "C" __global__ void lt_nn_crit_fwd_##N##_##IDX(double *loss, lt_cu_tensor x, lt_cu_tensor y,             \
                                                        lt_cu_tensor w, int has_w, long long n, int kind,         \
                                                        double param) {                                          \
    lt_nn_crit_fwd_impl<T, lt_##IDX>(loss, x, y, w, has_w, n, kind, param);                                      \
  }                                                                                                              \
  LT_EXPORT(lt_nn_crit_fwd_##N##_##IDX)                                                                          \
  extern "C" __global__ void lt_nn_crit_bwd_##N##_##IDX(lt_cu_tensor gradInput, lt_cu_tensor x, lt_cu_tensor y,   \
                                                        lt_cu_tensor w, int has_w, long long n, int kind,         \
                                                        double param, double norm) {                             \
    lt_nn_crit_bwd_impl<T, lt_##IDX>(gradInput, x, y, w, has_w, n, kind, param, norm);                           \
  }                                                                                                              \
  LT_EXPORT(lt_nn_crit_bwd_##N##_##IDX)

#define LT_NN_CRIT(T, N) LT_NN_CRIT1(T, N, i32) LT_NN_CRIT1(T, N, i64)

LT_IF_Float(LT_NN_CRIT(float, Float))
LT_IF_Double(LT_NN_CRIT(double, Double))
LT_IF_Half(LT_NN_CRIT(__half, Half))

template <typename T>
LT_D void lt_multimargin_fwd_impl(double *terms, const T *x, const long long *target, const T *w, long long nframe,
                                  long long dim, int p, double margin) {
  LT_GRID_LOOP(long long, f, nframe) {
    const T *row = x + f * dim;
    const long long t = target[f] - 1;
    double frame = 0;
    for (long long d = 0; d < dim; d++) {
      const double z = margin - lt_cast<double>(row[t]) + lt_cast<double>(row[d]);
      if (d != t && z > 0) frame += p == 1 ? z : z * z;
    }
    terms[f] = w ? frame * lt_cast<double>(w[t]) : frame;
  }
}

template <typename T>
LT_D void lt_multimargin_bwd_impl(T *gi, const T *x, const long long *target, const T *w, long long nframe,
                                  long long dim, int p, double margin, double scale) {
  LT_GRID_LOOP(long long, f, nframe) {
    const T *row = x + f * dim;
    T *grow = gi + f * dim;
    const long long t = target[f] - 1;
    const double gs = w ? scale * lt_cast<double>(w[t]) : scale;
    double gt = 0;
    for (long long d = 0; d < dim; d++) {
      const double z = margin - lt_cast<double>(row[t]) + lt_cast<double>(row[d]);
      const double h = d != t && z > 0 ? (p == 1 ? gs : 2 * gs * z) : 0;
      grow[d] = lt_store<T>(h);
      gt -= h;
    }
    grow[t] = lt_store<T>(gt);
  }
}

template <typename T>
LT_D void lt_multilabel_fwd_impl(double *terms, T *is_target, const T *x, const long long *target, long long nframe,
                                 long long dim) {
  LT_GRID_LOOP(long long, f, nframe) {
    const T *row = x + f * dim;
    const long long *tg = target + f * dim;
    T *is = is_target + f * dim;
    for (long long d = 0; d < dim; d++) is[d] = lt_cast<T>(0.0f);
    for (long long j = 0; j < dim && tg[j] != 0; j++) is[tg[j] - 1] = lt_cast<T>(1.0f);
    double sum = 0;
    for (long long j = 0; j < dim && tg[j] != 0; j++) {
      const double xt = lt_cast<double>(row[tg[j] - 1]);
      for (long long d = 0; d < dim; d++) {
        const double z = 1 - xt + lt_cast<double>(row[d]);
        if (!lt_cast<double>(is[d]) && z > 0) sum += z;
      }
    }
    terms[f] = sum;
  }
}

template <typename T>
LT_D void lt_multilabel_bwd_impl(T *gi, const T *x, const T *is_target, const long long *target, long long nframe,
                                 long long dim, double scale) {
  typedef lt_acc_t<T> A;
  const A s = lt_cast<A>(lt_cast<T>(scale));
  LT_GRID_LOOP(long long, f, nframe) {
    const T *row = x + f * dim, *is = is_target + f * dim;
    const long long *tg = target + f * dim;
    T *grow = gi + f * dim;
    for (long long d = 0; d < dim; d++) grow[d] = lt_cast<T>(0.0f);
    for (long long j = 0; j < dim && tg[j] != 0; j++) {
      const long long t = tg[j] - 1;
      const double xt = lt_cast<double>(row[t]);
      for (long long d = 0; d < dim; d++) {
        const double z = 1 - xt + lt_cast<double>(row[d]);
        if (!lt_cast<double>(is[d]) && z > 0) {
          grow[t] = lt_cast<T>(lt_cast<A>(grow[t]) - s);
          grow[d] = lt_cast<T>(lt_cast<A>(grow[d]) + s);
        }
      }
    }
  }
}

#define LT_CLASS_CRIT(T, N)                                                                                      \
  extern "C" __global__ void lt_multimargin_fwd_##N(double *terms, const T *x, const long long *target,          \
                                                    const T *w, long long nframe, long long dim, int p,          \
                                                    double margin) {                                             \
    lt_multimargin_fwd_impl<T>(terms, x, target, w, nframe, dim, p, margin);                                     \
  }                                                                                                              \
  LT_EXPORT(lt_multimargin_fwd_##N)                                                                              \
  extern "C" __global__ void lt_multimargin_bwd_##N(T *gradIn, const T *x, const long long *target, const T *w,  \
                                                    long long nframe, long long dim, int p, double margin,       \
                                                    double scale) {                                              \
    lt_multimargin_bwd_impl<T>(gradIn, x, target, w, nframe, dim, p, margin, scale);                             \
  }                                                                                                              \
  LT_EXPORT(lt_multimargin_bwd_##N)                                                                              \
  extern "C" __global__ void lt_multilabel_fwd_##N(double *terms, T *isTarget, const T *x,                       \
                                                   const long long *target, long long nframe, long long dim) {   \
    lt_multilabel_fwd_impl<T>(terms, isTarget, x, target, nframe, dim);                                          \
  }                                                                                                              \
  LT_EXPORT(lt_multilabel_fwd_##N)                                                                               \
  extern "C" __global__ void lt_multilabel_bwd_##N(T *gradIn, const T *x, const T *isTarget,                     \
                                                   const long long *target, long long nframe, long long dim,     \
                                                   double scale) {                                               \
    lt_multilabel_bwd_impl<T>(gradIn, x, isTarget, target, nframe, dim, scale);                                  \
  }                                                                                                              \
  LT_EXPORT(lt_multilabel_bwd_##N)

LT_IF_Float(LT_CLASS_CRIT(float, Float))
LT_IF_Double(LT_CLASS_CRIT(double, Double))
LT_IF_Half(LT_CLASS_CRIT(__half, Half))
