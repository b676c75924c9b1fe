/* classnll.cu — ClassNLLCriterion forward and backward (nn.ClassNLLCriterion).
 *
 * input: contiguous (batch, classes) log-probabilities of type T (Float, Double, Half); a 1-D input
 *   is batch = 1. target: contiguous int64, batch entries, 1-BASED class numbers as in Torch7
 *   (1..classes). weights: contiguous T[classes] or NULL (0) for all ones.
 * A = lt_acc_t<T> (float for Float and Half, double for Double).
 * A sample whose target equals ignore_index (compared with the raw 1-based value; Torch7's default
 * is -100) contributes nothing. A target outside 1..classes that is not ignore_index is an error:
 * the sample contributes nothing and bad[0] reports it.
 *
 *   lt_classnll_fwd_<T>(A *output, A *total_weight, long long *bad, const T *input,
 *                       const long long *target, const T *weights, long long batch,
 *                       long long classes, int size_average, long long ignore_index)
 *     grid = 1 (other blocks return), blockDim.x a multiple of 32. Writes
 *       total_weight[0] = sum_i w[t_i]                  (over the samples that count)
 *       output[0]       = -sum_i w[t_i] * input[i][t_i], divided by total_weight when size_average
 *                         and total_weight != 0
 *       bad[0]          = -1, or the smallest 0-based sample index whose target is out of range.
 *     Output and total weight are A (float for Half, so the weight count stays exact).
 *
 *   lt_classnll_bwd_<T>(T *gradInput, const long long *target, const T *weights,
 *                       double total_weight, long long batch, long long classes,
 *                       int size_average, long long ignore_index)
 *     Writes EVERY element of the contiguous (batch, classes) gradInput (no zeroing needed):
 *       gradInput[i][t_i - 1] = -w[t_i] * (size_average ? 1 / total_weight : 1), 0 elsewhere;
 *     all zeros when total_weight <= 0 (Torch7 returns early then). total_weight is the forward's (the value
 *     the host read back, rounded to A here): an argument, so the backward needs no upload and no host wait.
 *     Grid-stride over batch*classes: any geometry.
 */
#include "lt_cuda_common.cuh"

template <typename T>
LT_D void lt_cnll_fwd(lt_acc_t<T> *output, lt_acc_t<T> *total_weight, long long *bad, const T *input,
                      const long long *target, const T *weights, long long batch, long long classes,
                      int size_average, long long ignore_index) {
  typedef lt_acc_t<T> A;
  if (blockIdx.x != 0) return;
  A ls = 0, ws = 0;
  long long b = lt_highest<long long>();
  for (long long i = threadIdx.x; i < batch; i += blockDim.x) {
    const long long t = target[i];
    if (t == ignore_index) continue;
    if (t < 1 || t > classes) {
      if (i < b) b = i;
      continue;
    }
    const A w = weights ? lt_cast<A>(weights[t - 1]) : (A)1;
    ls += w * lt_cast<A>(input[i * classes + (t - 1)]);
    ws += w;
  }
  ls = lt_block_reduce(ls, lt_op_sum(), (A)0);
  ws = lt_block_reduce(ws, lt_op_sum(), (A)0);
  b = lt_block_reduce(b, lt_op_min(), lt_highest<long long>());
  if (threadIdx.x == 0) {
    A o = (A)0 - ls;
    if (size_average && ws != (A)0) o = o / ws;
    output[0] = o;
    total_weight[0] = ws;
    bad[0] = b == lt_highest<long long>() ? -1 : b;
  }
}

template <typename T>
LT_D void lt_cnll_bwd(T *gin, const long long *target, const T *weights, double total_weight, long long batch,
                      long long classes, int size_average, long long ignore_index) {
  typedef lt_acc_t<T> A;
  const A tw = (A)total_weight;
  const A norm = size_average ? (A)1 / tw : (A)1;
  LT_GRID_LOOP(long long, e, batch * classes) {
    const long long i = e / classes, c = e - i * classes;
    const long long t = target[i];
    A g = 0;
    if (tw > (A)0 && t != ignore_index && t == c + 1) g = -(weights ? lt_cast<A>(weights[c]) : (A)1) * norm;
    gin[e] = lt_cast<T>(g);
  }
}

#define LT_CNLL(T, N)                                                                              \
  extern "C" __global__ void lt_classnll_fwd_##N(                                                  \
      lt_acc_t<T> *output, lt_acc_t<T> *total_weight, long long *bad, const T *input,              \
      const long long *target, const T *weights, long long batch, long long classes,               \
      int size_average, long long ignore_index) {                                                  \
    lt_cnll_fwd<T>(output, total_weight, bad, input, target, weights, batch, classes, size_average, \
                   ignore_index);                                                                  \
  }                                                                                                \
  LT_EXPORT(lt_classnll_fwd_##N)                                                                   \
  extern "C" __global__ void lt_classnll_bwd_##N(T *gradInput, const long long *target,             \
                                                 const T *weights, double total_weight,             \
                                                 long long batch, long long classes,                \
                                                 int size_average, long long ignore_index) {        \
    lt_cnll_bwd<T>(gradInput, target, weights, total_weight, batch, classes, size_average,          \
                   ignore_index);                                                                  \
  }                                                                                                \
  LT_EXPORT(lt_classnll_bwd_##N)

LT_FOR_FLOAT_TYPES(LT_CNLL)
