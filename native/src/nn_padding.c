/* Paddings and upsamplings (Torch7's SpatialZero/Reflection/ReplicationPadding,
 * VolumetricReplicationPadding, Spatial/VolumetricUpSamplingNearest,
 * SpatialUpSamplingBilinear, VolumetricUpSamplingTrilinear).
 *
 * All of them work on the trailing 2 or 3 dimensions of the tensor (the
 * "spatial" ones); every leading dimension is a plane, and planes run in
 * parallel. Paddings and nearest upsampling are gathers: each output position
 * along an axis reads one input position (or none: zero padding), given by a
 * per-axis map, so forward copies and backward scatter-adds through the same
 * maps. Linear upsampling uses aligned corners (Torch7's rule): output o reads
 * input o * (in - 1) / (out - 1), interpolated between its two neighbours. */
#ifndef NN_GENERIC_PASS
#include "nn_internal.h"

enum { PAD_ZERO, PAD_REFLECT, PAD_REPLICATE, MAP_NEAREST };

/* Geometry of one call: planes x (D x H x W) in, planes x (oD x oH x oW) out
 * (D = oD = 1 for 2-D ops). */
typedef struct map_geom {
  int64_t planes, in[3], out[3];
} map_geom;

/* Per-axis tables for the gather ops: map[a][o] is the input index read by
 * output index o along axis a, or -1 (zero). */
typedef struct map_tables {
  int64_t *map[3];
} map_tables;

/* Per-axis tables for linear interpolation: output o mixes i0[o] (weight
 * 1 - w1[o]) and i1[o] (weight w1[o]). */
typedef struct lin_tables {
  int64_t *i0[3], *i1[3];
  double *w1[3];
} lin_tables;

/* Reads the spatial sizes of input (nsp trailing dims) into g; the leading
 * dims (1 or 2 of them) make the planes. */
static int geom_from_input(map_geom *g, const char *fn, const lt_tensor *input, int nsp) {
  char buf[160];
  if (!nn_is_floating_or_gpu_half(input))
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (input->ndim != nsp + 1 && input->ndim != nsp + 2)
    return lt_fail("%s: %dD or %dD input tensor expected but got: %s", fn, nsp + 1, nsp + 2,
                   lt_shape_str(input, buf, sizeof buf));
  int lead = input->ndim - nsp;
  g->planes = 1;
  for (int d = 0; d < lead; d++) g->planes *= input->size[d];
  for (int a = 0; a < 3; a++) g->in[a] = g->out[a] = 1;
  for (int a = 0; a < nsp; a++) g->in[3 - nsp + a] = input->size[lead + a];
  return 0;
}

/* The output's shape: input's leading dimensions, then the spatial output sizes. */
static void out_shape(int64_t sz[5], const lt_tensor *input, const map_geom *g, int nsp) {
  int nd = input->ndim;
  for (int d = 0; d < nd - nsp; d++) sz[d] = input->size[d];
  for (int a = 0; a < nsp; a++) sz[nd - nsp + a] = g->out[3 - nsp + a];
}

static int resize_out(lt_tensor *t, const lt_tensor *input, const map_geom *g, int nsp) {
  int64_t sz[5];
  out_shape(sz, input, g, nsp);
  return lt_tensor_resize(t, input->ndim, sz);
}

static int check_gradOutput(const char *fn, const lt_tensor *input, const lt_tensor *gradOutput, const map_geom *g,
                            int nsp) {
  char b1[160], b2[160];
  int nd = input->ndim, ok = gradOutput->ndim == nd && gradOutput->type == input->type;
  for (int d = 0; ok && d < nd - nsp; d++) ok = gradOutput->size[d] == input->size[d];
  for (int a = 0; ok && a < nsp; a++) ok = gradOutput->size[nd - nsp + a] == g->out[3 - nsp + a];
  if (!ok)
    return lt_fail("%s: gradOutput %s does not match the output size of input %s", fn,
                   lt_shape_str(gradOutput, b1, sizeof b1), lt_shape_str(input, b2, sizeof b2));
  return 0;
}

/* Input index read by output o of an axis of n inputs padded by `before`. */
static int64_t pad_index(int64_t o, int64_t before, int64_t n, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PAD_REFLECT: return i < 0 ? -i : 2 * (n - 1) - i;
    case PAD_REPLICATE: return i < 0 ? 0 : n - 1;
    default: return -1;
  }
}

static void map_tables_free(map_tables *t) {
  for (int a = 0; a < 3; a++) free(t->map[a]);
}

static int map_tables_alloc(map_tables *t, const map_geom *g) {
  for (int a = 0; a < 3; a++) t->map[a] = NULL;
  for (int a = 0; a < 3; a++)
    if (!(t->map[a] = malloc(sizeof(int64_t) * g->out[a]))) {
      map_tables_free(t);
      return lt_fail("out of memory");
    }
  return 0;
}

/* pads[a] = {before, after} for axes D, H, W. */
static int pad_tables(map_tables *t, map_geom *g, const char *fn, const int pads[3][2], int mode) {
  for (int a = 0; a < 3; a++) {
    g->out[a] = g->in[a] + pads[a][0] + pads[a][1];
    if (g->out[a] < 1)
      return lt_fail("%s: input is too small: %lld after padding %d, %d along dimension %d", fn, (long long)g->in[a],
                     pads[a][0], pads[a][1], a + 1);
    if (mode == PAD_REFLECT && (pads[a][0] >= g->in[a] || pads[a][1] >= g->in[a]))
      return lt_fail("%s: padding size (%d, %d) should be less than the corresponding input dimension (%lld)", fn,
                     pads[a][0], pads[a][1], (long long)g->in[a]);
  }
  if (map_tables_alloc(t, g)) return -1;
  for (int a = 0; a < 3; a++)
    for (int64_t o = 0; o < g->out[a]; o++) t->map[a][o] = pad_index(o, pads[a][0], g->in[a], mode);
  return 0;
}

static int nearest_tables(map_tables *t, map_geom *g, const char *fn, int nsp, int scale) {
  if (scale < 1) return lt_fail("%s: scale_factor must be a positive integer, got %d", fn, scale);
  for (int a = 3 - nsp; a < 3; a++) g->out[a] = g->in[a] * scale;
  if (map_tables_alloc(t, g)) return -1;
  for (int a = 0; a < 3; a++)
    for (int64_t o = 0; o < g->out[a]; o++) t->map[a][o] = a < 3 - nsp ? o : o / scale;
  return 0;
}

static void lin_tables_free(lin_tables *t) {
  for (int a = 0; a < 3; a++) {
    free(t->i0[a]);
    free(t->i1[a]);
    free(t->w1[a]);
  }
}

static int lin_tables_init(lin_tables *t, map_geom *g, const char *fn, int nsp, const int64_t *osize) {
  for (int a = 0; a < 3; a++) t->i0[a] = t->i1[a] = NULL, t->w1[a] = NULL;
  for (int a = 3 - nsp; a < 3; a++) {
    g->out[a] = osize[a - (3 - nsp)];
    if (g->out[a] < 1 || g->in[a] < 1)
      return lt_fail("%s: input (%lld) and output (%lld) sizes should be greater than 0", fn, (long long)g->in[a],
                     (long long)g->out[a]);
  }
  for (int a = 0; a < 3; a++) {
    int64_t n = g->out[a], in = g->in[a];
    t->i0[a] = malloc(sizeof(int64_t) * n);
    t->i1[a] = malloc(sizeof(int64_t) * n);
    t->w1[a] = malloc(sizeof(double) * n);
    if (!t->i0[a] || !t->i1[a] || !t->w1[a]) {
      lin_tables_free(t);
      return lt_fail("out of memory");
    }
    double ratio = n > 1 ? (double)(in - 1) / (double)(n - 1) : 0.0;
    for (int64_t o = 0; o < n; o++) {
      double pos = ratio * (double)o;
      int64_t i = (int64_t)pos;
      if (i > in - 1) i = in - 1;
      t->i0[a][o] = i;
      t->i1[a][o] = i < in - 1 ? i + 1 : i;
      t->w1[a][o] = pos - (double)i;
    }
  }
  return 0;
}

#define NN_GENERIC_FILE "nn_padding.c"
#include "nn_generic.h"

/* Runs a gather op (forward) or its scatter-add (backward) through the maps. */
static int gather_run(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, map_geom *g,
                      map_tables *t, int nsp) {
  nn_copies cp = {0};
  int rc = -1;
  if (nn_check_float(result, input->type, fn, gradOutput ? "gradInput" : "output")) goto done;
  if (lt_tensor_is_device(input) || (gradOutput && lt_tensor_is_device(gradOutput))) {   /* gather_map.cu */
    int64_t sz[5];
    out_shape(sz, input, g, nsp);
    if (!lt_tensor_is_device(input)) {
      rc = lt_fail("%s: gradOutput is in GPU memory, the input in host memory: move them to one", fn);
      goto done;
    }
    if (gradOutput && check_gradOutput(fn, input, gradOutput, g, nsp)) goto done;
    rc = lt_cuda_nn_gather(fn, input, gradOutput, result, sz, g->planes, g->in, g->out, t->map);
    goto done;
  }
  if (!gradOutput) {
    const void *in = nn_contig(&cp, input);
    if (!in || resize_out(result, input, g, nsp)) goto done;
    NN_CALL(input->type, gather_forward, g, t, in, lt_tensor_data(result));
  } else {
    if (check_gradOutput(fn, input, gradOutput, g, nsp)) goto done;
    const void *go = nn_contig(&cp, gradOutput);
    if (!go || nn_resize_as(result, input)) goto done;
    NN_CALL(input->type, gather_backward, g, t, go, lt_tensor_data(result));
  }
  rc = 0;
done:
  map_tables_free(t);
  return nn_copies_free(&cp, rc);
}

static int pad_call(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, int nsp,
                    const int pads[3][2], int mode) {
  map_geom g;
  map_tables t;
  if (geom_from_input(&g, fn, input, nsp) || pad_tables(&t, &g, fn, pads, mode)) return -1;
  return gather_run(fn, input, gradOutput, result, &g, &t, nsp);
}

#define PADS2(l, r, t, b) {{0, 0}, {t, b}, {l, r}}

int lt_nn_SpatialZeroPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                          int pad_b) {
  NN_GIVEN(input);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialZeroPadding_updateOutput", input, NULL, output, 2, pads, PAD_ZERO);
}
int lt_nn_SpatialZeroPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                             int pad_l, int pad_r, int pad_t, int pad_b) {
  NN_GIVEN(input, gradOutput);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialZeroPadding_updateGradInput", input, gradOutput, gradInput, 2, pads, PAD_ZERO);
}
int lt_nn_SpatialReflectionPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                                int pad_b) {
  NN_GIVEN(input);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialReflectionPadding_updateOutput", input, NULL, output, 2, pads, PAD_REFLECT);
}
int lt_nn_SpatialReflectionPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                   int pad_l, int pad_r, int pad_t, int pad_b) {
  NN_GIVEN(input, gradOutput);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialReflectionPadding_updateGradInput", input, gradOutput, gradInput, 2, pads, PAD_REFLECT);
}
int lt_nn_SpatialReplicationPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pad_l, int pad_r, int pad_t,
                                                 int pad_b) {
  NN_GIVEN(input);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialReplicationPadding_updateOutput", input, NULL, output, 2, pads, PAD_REPLICATE);
}
int lt_nn_SpatialReplicationPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                    int pad_l, int pad_r, int pad_t, int pad_b) {
  NN_GIVEN(input, gradOutput);
  const int pads[3][2] = PADS2(pad_l, pad_r, pad_t, pad_b);
  return pad_call("SpatialReplicationPadding_updateGradInput", input, gradOutput, gradInput, 2, pads, PAD_REPLICATE);
}

#define PADS3(l, r, t, b, f, k) {{f, k}, {t, b}, {l, r}}

int lt_nn_VolumetricReplicationPadding_updateOutput(lt_tensor *input, lt_tensor *output, int pleft, int pright,
                                                    int ptop, int pbottom, int pfront, int pback) {
  NN_GIVEN(input);
  const int pads[3][2] = PADS3(pleft, pright, ptop, pbottom, pfront, pback);
  return pad_call("VolumetricReplicationPadding_updateOutput", input, NULL, output, 3, pads, PAD_REPLICATE);
}
int lt_nn_VolumetricReplicationPadding_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput,
                                                       int pleft, int pright, int ptop, int pbottom, int pfront,
                                                       int pback) {
  NN_GIVEN(input, gradOutput);
  const int pads[3][2] = PADS3(pleft, pright, ptop, pbottom, pfront, pback);
  return pad_call("VolumetricReplicationPadding_updateGradInput", input, gradOutput, gradInput, 3, pads,
                  PAD_REPLICATE);
}

static int nearest_call(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, int nsp,
                        int scale) {
  map_geom g;
  map_tables t;
  if (geom_from_input(&g, fn, input, nsp) || nearest_tables(&t, &g, fn, nsp, scale)) return -1;
  return gather_run(fn, input, gradOutput, result, &g, &t, nsp);
}

int lt_nn_UpSamplingNearest_updateOutput(lt_tensor *input, lt_tensor *output, int nsp, int scale) {
  NN_GIVEN(input);
  if (nsp != 2 && nsp != 3) return lt_fail("UpSamplingNearest: 2 or 3 spatial dimensions, got %d", nsp);
  return nearest_call("UpSamplingNearest_updateOutput", input, NULL, output, nsp, scale);
}
int lt_nn_UpSamplingNearest_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, int nsp,
                                            int scale) {
  NN_GIVEN(input, gradOutput);
  if (nsp != 2 && nsp != 3) return lt_fail("UpSamplingNearest: 2 or 3 spatial dimensions, got %d", nsp);
  return nearest_call("UpSamplingNearest_updateGradInput", input, gradOutput, gradInput, nsp, scale);
}

static int linear_call(const char *fn, lt_tensor *input, lt_tensor *gradOutput, lt_tensor *result, int nsp,
                       const int64_t *osize) {
  map_geom g;
  lin_tables t;
  nn_copies cp = {0};
  int rc = -1;
  if (nsp != 2 && nsp != 3) return lt_fail("%s: 2 or 3 spatial dimensions, got %d", fn, nsp);
  if (geom_from_input(&g, fn, input, nsp)) return -1;
  if (lin_tables_init(&t, &g, fn, nsp, osize)) {
    lin_tables_free(&t);
    return -1;
  }
  if (nn_check_float(result, input->type, fn, gradOutput ? "gradInput" : "output")) goto done;
  if (lt_tensor_is_device(input) || (gradOutput && lt_tensor_is_device(gradOutput))) {   /* gather_map.cu */
    int64_t sz[5];
    out_shape(sz, input, &g, nsp);
    if (!lt_tensor_is_device(input)) {
      rc = lt_fail("%s: gradOutput is in GPU memory, the input in host memory: move them to one", fn);
      goto done;
    }
    if (gradOutput && check_gradOutput(fn, input, gradOutput, &g, nsp)) goto done;
    rc = lt_cuda_nn_linear(fn, input, gradOutput, result, sz, g.planes, g.in, g.out, t.i0, t.i1, t.w1);
    goto done;
  }
  if (!gradOutput) {
    const void *in = nn_contig(&cp, input);
    if (!in || resize_out(result, input, &g, nsp)) goto done;
    NN_CALL(input->type, linear_forward, &g, &t, in, lt_tensor_data(result));
  } else {
    if (check_gradOutput(fn, input, gradOutput, &g, nsp)) goto done;
    const void *go = nn_contig(&cp, gradOutput);
    if (!go || nn_resize_as(result, input)) goto done;
    NN_CALL(input->type, linear_backward, &g, &t, go, lt_tensor_data(result));
  }
  rc = 0;
done:
  lin_tables_free(&t);
  return nn_copies_free(&cp, rc);
}

int lt_nn_UpSamplingLinear_updateOutput(lt_tensor *input, lt_tensor *output, int nsp, int64_t oD, int64_t oH,
                                        int64_t oW) {
  NN_GIVEN(input);
  const int64_t osize[3] = {oD, oH, oW};
  return linear_call("UpSamplingLinear_updateOutput", input, NULL, output, nsp, nsp == 3 ? osize : osize + 1);
}
int lt_nn_UpSamplingLinear_updateGradInput(lt_tensor *input, lt_tensor *gradOutput, lt_tensor *gradInput, int nsp,
                                           int64_t oD, int64_t oH, int64_t oW) {
  NN_GIVEN(input, gradOutput);
  const int64_t osize[3] = {oD, oH, oW};
  return linear_call("UpSamplingLinear_updateGradInput", input, gradOutput, gradInput, nsp,
                     nsp == 3 ? osize : osize + 1);
}

#else /* ---------------------------------------------- generic part (real) */

/* Planes in parallel when there is enough work (oplane: output elements per plane). */
#define PLANES_PARALLEL \
  _Pragma("omp parallel for schedule(static) if (g->planes > 1 && g->planes * oplane >= LT_OMP_THRESHOLD)")

static void NN_(gather_forward)(const map_geom *g, const map_tables *t, const real *in, real *out) {
  const int64_t iplane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * iplane;
    real *y = out + p * oplane;
    for (int64_t od = 0; od < g->out[0]; od++) {
      int64_t d = t->map[0][od];
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        int64_t h = t->map[1][oh];
        real *row = y + (od * g->out[1] + oh) * g->out[2];
        if (d < 0 || h < 0) {
          for (int64_t ow = 0; ow < g->out[2]; ow++) row[ow] = 0;
          continue;
        }
        const real *src = x + (d * g->in[1] + h) * g->in[2];
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
          int64_t w = t->map[2][ow];
          row[ow] = w < 0 ? 0 : src[w];
        }
      }
    }
  }
}

/* Planes are disjoint, so the scatter-add needs no atomics. */
static void NN_(gather_backward)(const map_geom *g, const map_tables *t, const real *go, real *gi) {
  const int64_t iplane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    real *x = gi + p * iplane;
    const real *y = go + p * oplane;
    memset(x, 0, sizeof(real) * iplane);
    for (int64_t od = 0; od < g->out[0]; od++) {
      int64_t d = t->map[0][od];
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        int64_t h = t->map[1][oh];
        if (d < 0 || h < 0) continue;
        const real *row = y + (od * g->out[1] + oh) * g->out[2];
        real *dst = x + (d * g->in[1] + h) * g->in[2];
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
          int64_t w = t->map[2][ow];
          if (w >= 0) dst[w] += row[ow];
        }
      }
    }
  }
}

static void NN_(linear_forward)(const map_geom *g, const lin_tables *t, const real *in, real *out) {
  const int64_t iH = g->in[1], iW = g->in[2];
  const int64_t iplane = g->in[0] * iH * iW, oplane = g->out[0] * g->out[1] * g->out[2];
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    const real *x = in + p * iplane;
    real *y = out + p * oplane;
    for (int64_t od = 0; od < g->out[0]; od++) {
      const int64_t d0 = t->i0[0][od], d1 = t->i1[0][od];
      const accreal wd1 = t->w1[0][od], wd0 = 1 - wd1;
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        const int64_t h0 = t->i0[1][oh], h1 = t->i1[1][oh];
        const accreal wh1 = t->w1[1][oh], wh0 = 1 - wh1;
        const real *r00 = x + (d0 * iH + h0) * iW, *r01 = x + (d0 * iH + h1) * iW;
        const real *r10 = x + (d1 * iH + h0) * iW, *r11 = x + (d1 * iH + h1) * iW;
        real *row = y + (od * g->out[1] + oh) * g->out[2];
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
          const int64_t w0 = t->i0[2][ow], w1 = t->i1[2][ow];
          const accreal ww1 = t->w1[2][ow], ww0 = 1 - ww1;
          accreal v0 = wh0 * (ww0 * r00[w0] + ww1 * r00[w1]) + wh1 * (ww0 * r01[w0] + ww1 * r01[w1]);
          accreal v1 = wh0 * (ww0 * r10[w0] + ww1 * r10[w1]) + wh1 * (ww0 * r11[w0] + ww1 * r11[w1]);
          row[ow] = (real)(wd0 * v0 + wd1 * v1);
        }
      }
    }
  }
}

static void NN_(linear_backward)(const map_geom *g, const lin_tables *t, const real *go, real *gi) {
  const int64_t iH = g->in[1], iW = g->in[2];
  const int64_t iplane = g->in[0] * iH * iW, oplane = g->out[0] * g->out[1] * g->out[2];
  PLANES_PARALLEL
  for (int64_t p = 0; p < g->planes; p++) {
    real *x = gi + p * iplane;
    const real *y = go + p * oplane;
    memset(x, 0, sizeof(real) * iplane);
    for (int64_t od = 0; od < g->out[0]; od++) {
      const int64_t d0 = t->i0[0][od], d1 = t->i1[0][od];
      const accreal wd1 = t->w1[0][od], wd0 = 1 - wd1;
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        const int64_t h0 = t->i0[1][oh], h1 = t->i1[1][oh];
        const accreal wh1 = t->w1[1][oh], wh0 = 1 - wh1;
        real *r00 = x + (d0 * iH + h0) * iW, *r01 = x + (d0 * iH + h1) * iW;
        real *r10 = x + (d1 * iH + h0) * iW, *r11 = x + (d1 * iH + h1) * iW;
        const real *row = y + (od * g->out[1] + oh) * g->out[2];
        for (int64_t ow = 0; ow < g->out[2]; ow++) {
          const int64_t w0 = t->i0[2][ow], w1 = t->i1[2][ow];
          const accreal ww1 = t->w1[2][ow], ww0 = 1 - ww1, v = row[ow];
          r00[w0] += (real)(wd0 * wh0 * ww0 * v);
          r00[w1] += (real)(wd0 * wh0 * ww1 * v);
          r01[w0] += (real)(wd0 * wh1 * ww0 * v);
          r01[w1] += (real)(wd0 * wh1 * ww1 * v);
          r10[w0] += (real)(wd1 * wh0 * ww0 * v);
          r10[w1] += (real)(wd1 * wh0 * ww1 * v);
          r11[w0] += (real)(wd1 * wh1 * ww0 * v);
          r11[w1] += (real)(wd1 * wh1 * ww1 * v);
        }
      }
    }
  }
}

#undef PLANES_PARALLEL

#endif
