/* gather_map.cu — nn's gather layers on the GPU: the zero, reflection and replication paddings (spatial and
 * volumetric) and nearest-neighbour upsampling. native/src/nn_padding.c (the CPU kernels and the oracle) gives
 * each a per-axis map: output index o along axis a reads input index map_a[o], or nothing (-1, zero padding).
 * Planes x (D x H x W) in, planes x (oD x oH x oW) out, both contiguous (D = oD = 1 for the 2-D layers).
 *
 *   lt_map_fwd_<T>(T* out, const T* in, const q* maps, q planes, q D, q H, q W, q oD, q oH, q oW)
 *     maps: oD entries for D, then oH for H, then oW for W; thread per output element.
 *   lt_map_bwd_<T>(T* gradIn, const T* gradOut, const q* first, const q* outputs, q planes, q D, q H, q W,
 *                  q oD, q oH, q oW)
 *     the maps inverted, per axis: input index i is read by outputs[first[i] .. first[i+1]) (first: D+1, H+1,
 *     W+1 entries; outputs: oD, oH, oW entries, each axis's offsets relative to its own part); thread per input
 *     element, which sums the gradient of every output reading it (a gather: no atomics, deterministic).
 * Sums in lt_acc_t<T>.
 */
#include "lt_cuda_common.cuh"

template <typename T>
LT_D void lt_map_fwd_impl(T *out, const T *in, const long long *maps, long long planes, long long D, long long H,
                          long long W, long long oD, long long oH, long long oW) {
  const long long *md = maps, *mh = maps + oD, *mw = maps + oD + oH;
  LT_GRID_LOOP(long long, e, planes * oD * oH * oW) {
    const long long x = e % oW, y = (e / oW) % oH, z = (e / (oW * oH)) % oD, p = e / (oW * oH * oD);
    const long long iz = md[z], iy = mh[y], ix = mw[x];
    out[e] = (iz < 0 || iy < 0 || ix < 0) ? (T)0 : in[((p * D + iz) * H + iy) * W + ix];
  }
}

template <typename T>
LT_D void lt_map_bwd_impl(T *gin, const T *gout, const long long *first, const long long *outputs,
                          long long planes, long long D, long long H, long long W, long long oD, long long oH,
                          long long oW) {
  typedef lt_acc_t<T> A;
  const long long *fd = first, *fh = first + D + 1, *fw = first + D + 1 + H + 1;
  const long long *od = outputs, *oh = outputs + oD, *ow = outputs + oD + oH;
  LT_GRID_LOOP(long long, e, planes * D * H * W) {
    const long long x = e % W, y = (e / W) % H, z = (e / (W * H)) % D, p = e / (W * H * D);
    A s = (A)0;
    for (long long a = fd[z]; a < fd[z + 1]; a++)
      for (long long b = fh[y]; b < fh[y + 1]; b++)
        for (long long c = fw[x]; c < fw[x + 1]; c++)
          s += lt_cast<A>(gout[((p * oD + od[a]) * oH + oh[b]) * oW + ow[c]]);
    gin[e] = lt_cast<T>(s);
  }
}

#define LT_MAP(T, N)                                                                                            \
  extern "C" __global__ void lt_map_fwd_##N(T *out, const T *in, const long long *maps, long long planes,       \
                                            long long D, long long H, long long W, long long oD, long long oH,  \
                                            long long oW) {                                                     \
    lt_map_fwd_impl<T>(out, in, maps, planes, D, H, W, oD, oH, oW);                                             \
  }                                                                                                             \
  LT_EXPORT(lt_map_fwd_##N)                                                                                     \
  extern "C" __global__ void lt_map_bwd_##N(T *gradIn, const T *gradOut, const long long *first,               \
                                            const long long *outputs, long long planes, long long D,            \
                                            long long H, long long W, long long oD, long long oH,               \
                                            long long oW) {                                                     \
    lt_map_bwd_impl<T>(gradIn, gradOut, first, outputs, planes, D, H, W, oD, oH, oW);                           \
  }                                                                                                             \
  LT_EXPORT(lt_map_bwd_##N)

LT_IF_Float(LT_MAP(float, Float))
LT_IF_Double(LT_MAP(double, Double))
