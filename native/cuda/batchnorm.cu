/* batchnorm.cu — BatchNormalization / SpatialBatchNormalization (nn's, and cudnn's subclasses) forward and
 * backward, with the semantics of the CPU kernel native/src/nn_batchnorm.c.
 *
 * The input is contiguous (N, C, S): element (i, f, k) at (i*C + f)*S + k, S the product of the dimensions
 * after the features (1 for a 2-D input). Per-feature vectors are contiguous arrays of C elements; an optional
 * one is a null pointer when absent. Everything is computed in A = lt_acc_t<T> (float for Float and Half,
 * double for Double); n = N*S values per feature.
 *
 * Why chunks: one block per feature leaves most of a GPU idle where features are few and long (ResNet-50's
 * first stage: 64 features of N*112*112 values on 132 SMs). Each feature's n values (in (i, k) order) are cut
 * into P chunks, chunk p = [n*p/P, n*(p+1)/P); block b (grid-stride over C*P blocks) takes chunk p = b % P of
 * feature f = b / P and writes its partial results at b. Later kernels combine a feature's P partials in order
 * p = 0..P-1, every thread the same way, so the statistics do not depend on the grid, and the kernels that
 * recombine them get the very same values. P is the host's choice (>= 1; chunks may be empty). No atomics.
 * The reducing kernels need blockDim.x a multiple of 32 (<= 1024); fwd_eval and bwd take any block.
 *
 * Training forward, two launches over the same P:
 *   lt_batchnorm_stats_<T>(A *part, const T *in, q N, q C, q S, q P)
 *     part[2b], part[2b+1] = the chunk's mean and sum of squared deviations from it (Welford's update per
 *     thread, Chan's merge across threads), in one read of the chunk
 *   lt_batchnorm_fwd_train_<T>(T *out, T *save_mean, T *save_std, T *running_mean, T *running_var,
 *                              const A *part, const T *in, const T *weight, const T *bias,
 *                              q N, q C, q S, q P, A momentum, A eps)
 *     mean and var (the sum of squared deviations) from the feature's chunks merged in order (n = 0: mean 0);
 *     invstd = 1/sqrt(var/n + eps), 0 when var and eps are both 0;
 *     chunk 0's block: save_mean = mean, save_std = invstd,
 *       running_mean = momentum*mean + (1-momentum)*running_mean     (if given)
 *       running_var  = momentum*var/(n-1) + (1-momentum)*running_var (if given; unbiased);
 *     every block: out = (x - mean) * (invstd * weight) + bias over its chunk (weight 1, bias 0 when absent)
 * Evaluation forward, one launch (elementwise over the chunks, any block):
 *   lt_batchnorm_fwd_eval_<T>(T *out, const T *in, const T *weight, const T *bias, const T *running_mean,
 *                             const T *running_var, q N, q C, q S, q P, A eps)
 *     out = (x - running_mean) * (invstd * weight) + bias,  invstd = 1/sqrt(running_var + eps)
 * Backward, two launches over the same P (the first only where a sum is needed: training, or parameter
 * gradients):
 *   lt_batchnorm_grad_sums_<T>(A *part, const T *in, const T *gradOut, const T *mean, q N, q C, q S, q P)
 *     part[2b] = sum of the chunk's dy, part[2b+1] = sum of the chunk's (x - mean)*dy
 *   lt_batchnorm_bwd_<T>(T *gradIn, T *gradWeight, T *gradBias, const A *part, const T *in, const T *gradOut,
 *                        const T *weight, const T *mean, const T *std, q N, q C, q S, q P, int train, A scale,
 *                        A eps)
 *     train: mean, std = save_mean, save_std (invstd = std); else running_mean, running_var
 *     (invstd = 1/sqrt(running_var + eps)). sum and dotp are the feature's partials combined in order (part
 *     may be null when train is 0 and no parameter gradient is asked for):
 *     gradIn = train ? (dy - sum/n - (x - mean) * dotp*invstd^2/n) * invstd * weight : dy * invstd * weight
 *     chunk 0's block: gradWeight += scale * dotp * invstd;  gradBias += scale * sum   (each only when given)
 * T is Float, Double or Half. gradIn, gradWeight and gradBias may each be null.
 */
#include "lt_cuda_common.cuh"

/* A thread's walk over chunk [lo, hi) of feature f, blockDim.x elements apart: (i, k) kept up to date without a
 * division per element (S = 1, nn.BatchNormalization's N x C, would otherwise make one per element). */
struct lt_bn_walk {
  long long j, hi, i, k, qi, qk, S, CS, fS;
  LT_D lt_bn_walk(long long lo, long long hi_, long long f, long long C, long long S_) {
    S = S_, CS = C * S_, fS = f * S_, hi = hi_;
    j = lo + (long long)threadIdx.x;
    i = k = qi = qk = 0;
    if (S > 0) {   /* S = 0: no values, an empty walk */
      i = j / S, k = j - i * S;
      const long long step = (long long)blockDim.x;
      qi = step / S, qk = step - qi * S;
    }
  }
  LT_D bool more() const { return j < hi; }
  LT_D long long at() const { return i * CS + fS + k; }
  LT_D void next() {
    j += (long long)blockDim.x, i += qi, k += qk;
    if (k >= S) k -= S, i++;
  }
};

/* Chunk p of P of a feature's n values. */
LT_D long long lt_bn_lo(long long n, long long p, long long P) { return n * p / P; }

/* sum_p part[(f*P + p)*stride + which] in order p = 0..P-1 */
template <typename A> LT_D A lt_bn_combine(const A *part, long long f, long long P, int stride, int which) {
  A s = 0;
  for (long long p = 0; p < P; p++) s += part[(f * P + p) * stride + which];
  return s;
}

template <typename T> LT_D lt_acc_t<T> lt_bn_or(const T *v, long long f, lt_acc_t<T> absent) {
  return v ? lt_cast<lt_acc_t<T>>(v[f]) : absent;
}

/* The blocks' loop: b = f*P + p over the C*P chunks. */
#define LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P)                                                            \
  for (long long b = blockIdx.x; b < (C) * (P); b += gridDim.x)                                            \
    for (long long f = b / (P), p = b - f * (P), lo = lt_bn_lo((N) * (S), p, P),                           \
                   hi = lt_bn_lo((N) * (S), p + 1, P), once_ = 1;                                          \
         once_; once_ = 0)

/* Moments of a run of values: count, mean, sum of squared deviations from the mean. */
template <typename A> struct lt_bn_moments {
  long long n;
  A mean, m2;
};

/* Chan et al.'s merge of b into a (a's values first). */
template <typename A> LT_D void lt_bn_merge(lt_bn_moments<A> &a, const lt_bn_moments<A> &b) {
  if (b.n == 0) return;
  if (a.n == 0) {
    a = b;
    return;
  }
  const long long n = a.n + b.n;
  const A d = b.mean - a.mean, fb = (A)b.n / (A)n;
  a.mean += d * fb;
  a.m2 += b.m2 + d * d * (A)a.n * fb;
  a.n = n;
}

/* The warp's moments at lane 0: lane l merges lane l + d's (its later threads) for d = 1, 2, 4, 8, 16. */
template <typename A> LT_D lt_bn_moments<A> lt_bn_warp_moments(lt_bn_moments<A> v, unsigned lane) {
  for (int d = 1; d < 32; d <<= 1) {
    lt_bn_moments<A> o;
    o.n = lt_shfl_down(v.n, d), o.mean = lt_shfl_down(v.mean, d), o.m2 = lt_shfl_down(v.m2, d);
    if ((lane & (2 * d - 1)) == 0) lt_bn_merge(v, o);
  }
  return v;
}

/* The block's moments, merged in thread order over a tree fixed by blockDim, returned to every thread.
 * blockDim.x a multiple of 32 (<= 1024); every thread must call it. */
template <typename A> LT_D lt_bn_moments<A> lt_bn_block_moments(lt_bn_moments<A> v) {
  __shared__ long long sh_n[32];
  __shared__ A sh_mean[32], sh_m2[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31u) >> 5;
  v = lt_bn_warp_moments(v, lane);
  if (lane == 0) sh_n[warp] = v.n, sh_mean[warp] = v.mean, sh_m2[warp] = v.m2;
  __syncthreads();
  if (warp == 0) {
    v.n = lane < nwarps ? sh_n[lane] : 0;
    v.mean = lane < nwarps ? sh_mean[lane] : (A)0;
    v.m2 = lane < nwarps ? sh_m2[lane] : (A)0;
    v = lt_bn_warp_moments(v, lane);
    if (lane == 0) sh_n[0] = v.n, sh_mean[0] = v.mean, sh_m2[0] = v.m2;
  }
  __syncthreads();
  lt_bn_moments<A> r;
  r.n = sh_n[0], r.mean = sh_mean[0], r.m2 = sh_m2[0];
  __syncthreads(); /* the arrays may be reused by the next call */
  return r;
}

/* A feature's moments from its P chunks' (mean, m2) partials, merged in chunk order. */
template <typename A> LT_D lt_bn_moments<A> lt_bn_feature_moments(const A *part, long long f, long long P, long long n) {
  lt_bn_moments<A> all = {0, (A)0, (A)0};
  for (long long p = 0; p < P; p++) {
    lt_bn_moments<A> c;
    c.n = lt_bn_lo(n, p + 1, P) - lt_bn_lo(n, p, P);
    c.mean = part[2 * (f * P + p)], c.m2 = part[2 * (f * P + p) + 1];
    lt_bn_merge(all, c);
  }
  return all;
}

template <typename T>
LT_D void lt_bn_stats(lt_acc_t<T> *part, const T *in, long long N, long long C, long long S, long long P) {
  typedef lt_acc_t<T> A;
  LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P) {
    lt_bn_moments<A> m = {0, (A)0, (A)0};
    for (lt_bn_walk w(lo, hi, f, C, S); w.more(); w.next()) {   /* Welford */
      const A x = lt_cast<A>(in[w.at()]), d = x - m.mean;
      m.n++;
      m.mean += d / (A)m.n;
      m.m2 += d * (x - m.mean);
    }
    m = lt_bn_block_moments(m);
    if (threadIdx.x == 0) part[2 * b] = m.mean, part[2 * b + 1] = m.m2;
  }
}

template <typename T>
LT_D void lt_bn_fwd_train(T *out, T *save_mean, T *save_std, T *running_mean, T *running_var,
                          const lt_acc_t<T> *part, const T *in, const T *weight, const T *bias, long long N, long long C,
                          long long S, long long P, lt_acc_t<T> momentum, lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  const long long n = N * S;
  LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P) {
    const lt_bn_moments<A> m = lt_bn_feature_moments(part, f, P, n);
    const A mean = m.mean, var = m.m2;
    const A invstd = (var == 0 && eps == 0) ? (A)0 : (A)1 / lt_m_sqrt(var / (A)n + eps);
    if (p == 0 && threadIdx.x == 0) {
      save_mean[f] = lt_cast<T>(mean);
      save_std[f] = lt_cast<T>(invstd);
      if (running_mean)
        running_mean[f] = lt_cast<T>(momentum * mean + ((A)1 - momentum) * lt_cast<A>(running_mean[f]));
      if (running_var)
        running_var[f] = lt_cast<T>(momentum * (var / (A)(n - 1)) + ((A)1 - momentum) * lt_cast<A>(running_var[f]));
    }
    const A a = invstd * lt_bn_or(weight, f, (A)1), c = lt_bn_or(bias, f, (A)0);
    for (lt_bn_walk w(lo, hi, f, C, S); w.more(); w.next()) {
      const long long e = w.at();
      out[e] = lt_cast<T>((lt_cast<A>(in[e]) - mean) * a + c);
    }
  }
}

template <typename T>
LT_D void lt_bn_fwd_eval(T *out, const T *in, const T *weight, const T *bias, const T *running_mean,
                         const T *running_var, long long N, long long C, long long S, long long P, lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P) {
    const A invstd = (A)1 / lt_m_sqrt(lt_cast<A>(running_var[f]) + eps);
    const A a = invstd * lt_bn_or(weight, f, (A)1), c = lt_bn_or(bias, f, (A)0), mean = lt_cast<A>(running_mean[f]);
    for (lt_bn_walk w(lo, hi, f, C, S); w.more(); w.next()) {
      const long long e = w.at();
      out[e] = lt_cast<T>((lt_cast<A>(in[e]) - mean) * a + c);
    }
  }
}

template <typename T>
LT_D void lt_bn_grad_sums(lt_acc_t<T> *part, const T *in, const T *grad_out, const T *mean_v, long long N, long long C,
                          long long S, long long P) {
  typedef lt_acc_t<T> A;
  LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P) {
    const A mean = lt_cast<A>(mean_v[f]);
    A sum = 0, dotp = 0;
    for (lt_bn_walk w(lo, hi, f, C, S); w.more(); w.next()) {
      const long long e = w.at();
      const A dy = lt_cast<A>(grad_out[e]);
      sum += dy;
      dotp += (lt_cast<A>(in[e]) - mean) * dy;
    }
    sum = lt_block_reduce(sum, lt_op_sum(), (A)0);
    dotp = lt_block_reduce(dotp, lt_op_sum(), (A)0);
    if (threadIdx.x == 0) part[2 * b] = sum, part[2 * b + 1] = dotp;
  }
}

template <typename T>
LT_D void lt_bn_bwd(T *grad_in, T *grad_weight, T *grad_bias, const lt_acc_t<T> *part, const T *in, const T *grad_out,
                    const T *weight, const T *mean_v, const T *std_v, long long N, long long C, long long S,
                    long long P, int train, lt_acc_t<T> scale, lt_acc_t<T> eps) {
  typedef lt_acc_t<T> A;
  const long long n = N * S;
  LT_BN_CHUNKS(b, f, p, lo, hi, N, C, S, P) {
    const A mean = lt_cast<A>(mean_v[f]);
    const A invstd = train ? lt_cast<A>(std_v[f]) : (A)1 / lt_m_sqrt(lt_cast<A>(std_v[f]) + eps);
    const A w = lt_bn_or(weight, f, (A)1);
    const A sum = part ? lt_bn_combine(part, f, P, 2, 0) : (A)0, dotp = part ? lt_bn_combine(part, f, P, 2, 1) : (A)0;
    if (grad_in) {
      const A k1 = dotp * invstd * invstd / (A)n, gmean = sum / (A)n, a = invstd * w;
      for (lt_bn_walk it(lo, hi, f, C, S); it.more(); it.next()) {
        const long long e = it.at();
        const A dy = lt_cast<A>(grad_out[e]);
        grad_in[e] = lt_cast<T>(train ? (dy - gmean - (lt_cast<A>(in[e]) - mean) * k1) * invstd * w : dy * a);
      }
    }
    if (p == 0 && threadIdx.x == 0) {
      /* as the CPU: the term rounded to T, then added in T's precision (A for Half) */
      if (grad_weight)
        grad_weight[f] = lt_cast<T>(lt_cast<A>(grad_weight[f]) + lt_cast<A>(lt_cast<T>(scale * dotp * invstd)));
      if (grad_bias) grad_bias[f] = lt_cast<T>(lt_cast<A>(grad_bias[f]) + lt_cast<A>(lt_cast<T>(scale * sum)));
    }
  }
}

#define LT_BN(T, N)                                                                                        \
  extern "C" __global__ void lt_batchnorm_stats_##N(lt_acc_t<T> *part, const T *in, long long N, long long C, \
                                                    long long S, long long P) {                              \
    lt_bn_stats<T>(part, in, N, C, S, P);                                                                  \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_stats_##N)                                                                        \
  extern "C" __global__ void lt_batchnorm_fwd_train_##N(T *out, T *save_mean, T *save_std, T *running_mean,  \
                                                        T *running_var, const lt_acc_t<T> *part, const T *in, \
                                                        const T *weight, const T *bias, long long N,         \
                                                        long long C, long long S, long long P,               \
                                                        lt_acc_t<T> momentum, lt_acc_t<T> eps) {             \
    lt_bn_fwd_train<T>(out, save_mean, save_std, running_mean, running_var, part, in, weight, bias, N, C, S, P, \
                       momentum, eps);                                                                     \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_fwd_train_##N)                                                                    \
  extern "C" __global__ void lt_batchnorm_fwd_eval_##N(T *out, const T *in, const T *weight, const T *bias,   \
                                                       const T *running_mean, const T *running_var,          \
                                                       long long N, long long C, long long S, long long P,   \
                                                       lt_acc_t<T> eps) {                                    \
    lt_bn_fwd_eval<T>(out, in, weight, bias, running_mean, running_var, N, C, S, P, eps);                   \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_fwd_eval_##N)                                                                     \
  extern "C" __global__ void lt_batchnorm_grad_sums_##N(lt_acc_t<T> *part, const T *in, const T *gradOut,     \
                                                        const T *mean, long long N, long long C, long long S, \
                                                        long long P) {                                       \
    lt_bn_grad_sums<T>(part, in, gradOut, mean, N, C, S, P);                                               \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_grad_sums_##N)                                                                    \
  extern "C" __global__ void lt_batchnorm_bwd_##N(T *gradIn, T *gradWeight, T *gradBias,                      \
                                                  const lt_acc_t<T> *part, const T *in, const T *gradOut,    \
                                                  const T *weight, const T *mean, const T *std, long long N, \
                                                  long long C, long long S, long long P, int train,          \
                                                  lt_acc_t<T> scale, lt_acc_t<T> eps) {                      \
    lt_bn_bwd<T>(gradIn, gradWeight, gradBias, part, in, gradOut, weight, mean, std, N, C, S, P, train, scale, \
                 eps);                                                                                     \
  }                                                                                                        \
  LT_EXPORT(lt_batchnorm_bwd_##N)

LT_FOR_FLOAT_TYPES(LT_BN)
