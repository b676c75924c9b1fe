/* batchnorm.cu — BatchNormalization / SpatialBatchNormalization (nn's, and cudnn's subclasses) forward and
 * backward, with the semantics of the CPU kernel native/src/nn_batchnorm.c.
 *
 * The input is contiguous (N, C, S): element (i, f, k) at (i*C + f)*S + k, S the product of the dimensions
 * after the features (1 for a 2-D input). Per-feature vectors are contiguous arrays of C elements; an optional
 * one is a null pointer when absent. Everything is computed in A = lt_acc_t<T> (float for Float and Half,
 * double for Double); n = N*S values per feature.
 *
 * Training forward — one block per feature (grid-stride over features); blockDim.x a multiple of 32 (<= 1024):
 *   lt_batchnorm_fwd_train_<T>(T *out, T *save_mean, T *save_std, T *running_mean, T *running_var,
 *                              const T *in, const T *weight, const T *bias, long long N, long long C,
 *                              long long S, A momentum, A eps)
 *     mean = sum/n (0 when n = 0); var = sum (x - mean)^2 (two passes: centred squares);
 *     invstd = 1/sqrt(var/n + eps), 0 when var and eps are both 0;
 *     save_mean = mean, save_std = invstd;
 *     running_mean = momentum*mean + (1-momentum)*running_mean     (if given)
 *     running_var  = momentum*var/(n-1) + (1-momentum)*running_var (if given; unbiased)
 *     out = (x - mean) * (invstd * weight) + bias    (weight 1 and bias 0 when absent)
 * Evaluation forward — one thread per element (grid-stride), any geometry:
 *   lt_batchnorm_fwd_eval_<T>(T *out, const T *in, const T *weight, const T *bias, const T *running_mean,
 *                             const T *running_var, long long N, long long C, long long S, A eps)
 *     out = (x - running_mean) * (invstd * weight) + bias,  invstd = 1/sqrt(running_var + eps)
 * Backward — one block per feature, blockDim.x a multiple of 32 (<= 1024):
 *   lt_batchnorm_bwd_<T>(T *gradIn, T *gradWeight, T *gradBias, const T *in, const T *gradOut,
 *                        const T *weight, const T *mean, const T *std, long long N, long long C, long long S,
 *                        int train, A scale, A eps)
 *     train: mean, std = save_mean, save_std (invstd = std); else running_mean, running_var
 *     (invstd = 1/sqrt(running_var + eps)). With sum = sum dy and dotp = sum (x - mean)*dy:
 *     gradIn = train ? (dy - sum/n - (x - mean) * dotp*invstd^2/n) * invstd * weight : dy * invstd * weight
 *     gradWeight += scale * dotp * invstd;  gradBias += scale * sum   (each written only when given)
 * T is Float, Double or Half. gradIn, gradWeight and gradBias may each be null.
 */
#include "lt_cuda_common.cuh"

/* Element j (0 <= j < N*S) of feature f. */
LT_D long long lt_bn_at(long long j, long long f, long long C, long long S) {
  const long long i = j / S;
  return (i * C + f) * S + (j - i * S);
}

template <typename T> LT_D lt_acc_t<T> lt_bn_or(const T *v, long long f, lt_acc_t<T> absent) {
  return v ? lt_cast<lt_acc_t<T>>(v[f]) : absent;
}

template <typename T>
LT_D void lt_bn_fwd_train(T *out, T *save_mean, T *save_std, T *running_mean, T *running_var, const T *in,
                          const T *weight, const T *bias, long long N, long long C, long long S, lt_acc_t<T> momentum,
                          lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  const long long n = N * S;
  for (long long f = blockIdx.x; f < C; f += gridDim.x) {
    A sum = 0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) sum += lt_cast<A>(in[lt_bn_at(j, f, C, S)]);
    sum = lt_block_reduce(sum, lt_op_sum(), (A)0);
    const A mean = n > 0 ? sum / (A)n : (A)0;
    A var = 0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const A d = lt_cast<A>(in[lt_bn_at(j, f, C, S)]) - mean;
      var += d * d;
    }
    var = lt_block_reduce(var, lt_op_sum(), (A)0);
    const A invstd = (var == 0 && eps == 0) ? (A)0 : (A)1 / lt_m_sqrt(var / (A)n + eps);
    if (threadIdx.x == 0) {
      save_mean[f] = lt_cast<T>(mean);
      save_std[f] = lt_cast<T>(invstd);
      if (running_mean)
        running_mean[f] = lt_cast<T>(momentum * mean + ((A)1 - momentum) * lt_cast<A>(running_mean[f]));
      if (running_var)
        running_var[f] = lt_cast<T>(momentum * (var / (A)(n - 1)) + ((A)1 - momentum) * lt_cast<A>(running_var[f]));
    }
    const A a = invstd * lt_bn_or(weight, f, (A)1), c = lt_bn_or(bias, f, (A)0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long e = lt_bn_at(j, f, C, S);
      out[e] = lt_cast<T>((lt_cast<A>(in[e]) - mean) * a + c);
    }
  }
}

template <typename T>
LT_D void lt_bn_fwd_eval(T *out, const T *in, const T *weight, const T *bias, const T *running_mean,
                         const T *running_var, long long N, long long C, long long S, lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  LT_GRID_LOOP(long long, e, N * C * S) {
    const long long f = (e / S) % C;
    const A invstd = (A)1 / lt_m_sqrt(lt_cast<A>(running_var[f]) + eps);
    const A a = invstd * lt_bn_or(weight, f, (A)1), c = lt_bn_or(bias, f, (A)0);
    out[e] = lt_cast<T>((lt_cast<A>(in[e]) - lt_cast<A>(running_mean[f])) * a + c);
  }
}

template <typename T>
LT_D void lt_bn_bwd(T *grad_in, T *grad_weight, T *grad_bias, const T *in, const T *grad_out, const T *weight,
                    const T *mean_v, const T *std_v, long long N, long long C, long long S, int train,
                    lt_acc_t<T> scale, lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  const long long n = N * S;
  for (long long f = blockIdx.x; f < C; f += gridDim.x) {
    const A mean = lt_cast<A>(mean_v[f]);
    const A invstd = train ? lt_cast<A>(std_v[f]) : (A)1 / lt_m_sqrt(lt_cast<A>(std_v[f]) + eps);
    const A w = lt_bn_or(weight, f, (A)1);
    A sum = 0, dotp = 0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const long long e = lt_bn_at(j, f, C, S);
      const A dy = lt_cast<A>(grad_out[e]);
      sum += dy;
      dotp += (lt_cast<A>(in[e]) - mean) * dy;
    }
    sum = lt_block_reduce(sum, lt_op_sum(), (A)0);
    dotp = lt_block_reduce(dotp, lt_op_sum(), (A)0);
    if (grad_in) {
      const A k1 = dotp * invstd * invstd / (A)n, gmean = sum / (A)n, a = invstd * w;
      for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        const long long e = lt_bn_at(j, f, C, S);
        const A dy = lt_cast<A>(grad_out[e]);
        grad_in[e] = lt_cast<T>(train ? (dy - gmean - (lt_cast<A>(in[e]) - mean) * k1) * invstd * w : dy * a);
      }
    }
    if (threadIdx.x == 0) {
      /* as the CPU: the term rounded to T, then added in T's precision (A for Half) */
      if (grad_weight)
        grad_weight[f] = lt_cast<T>(lt_cast<A>(grad_weight[f]) + lt_cast<A>(lt_cast<T>(scale * dotp * invstd)));
      if (grad_bias) grad_bias[f] = lt_cast<T>(lt_cast<A>(grad_bias[f]) + lt_cast<A>(lt_cast<T>(scale * sum)));
    }
  }
}

#define LT_BN(T, N)                                                                                        \
  extern "C" __global__ void lt_batchnorm_fwd_train_##N(T *out, T *save_mean, T *save_std, T *running_mean,  \
                                                        T *running_var, const T *in, const T *weight,        \
                                                        const T *bias, long long N, long long C, long long S, \
                                                        lt_acc_t<T> momentum, lt_acc_t<T> eps) {             \
    lt_bn_fwd_train<T>(out, save_mean, save_std, running_mean, running_var, in, weight, bias, N, C, S,      \
                       momentum, eps);                                                                     \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_fwd_train_##N)                                                                    \
  extern "C" __global__ void lt_batchnorm_fwd_eval_##N(T *out, const T *in, const T *weight, const T *bias,   \
                                                       const T *running_mean, const T *running_var,          \
                                                       long long N, long long C, long long S,                \
                                                       lt_acc_t<T> eps) {                                    \
    lt_bn_fwd_eval<T>(out, in, weight, bias, running_mean, running_var, N, C, S, eps);                      \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_fwd_eval_##N)                                                                     \
  extern "C" __global__ void lt_batchnorm_bwd_##N(T *gradIn, T *gradWeight, T *gradBias, const T *in,         \
                                                  const T *gradOut, const T *weight, const T *mean,          \
                                                  const T *std, long long N, long long C, long long S,       \
                                                  int train, lt_acc_t<T> scale, lt_acc_t<T> eps) {           \
    lt_bn_bwd<T>(gradIn, gradWeight, gradBias, in, gradOut, weight, mean, std, N, C, S, train, scale, eps); \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_bwd_##N)

LT_FOR_FLOAT_TYPES(LT_BN)
