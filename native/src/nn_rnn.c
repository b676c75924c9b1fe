/* One time step of cuDNN's recurrent cells, the elementwise part (see
 * lt_nn_rnn.h for the equations). The caller does the matrix products; the
 * kernels here loop over batch rows (OpenMP for large steps) and, within a
 * row, over the hidden units in loops GCC vectorizes. */
#ifndef NN_GENERIC_PASS
#include <math.h>
#include <string.h>
#include "nn_internal.h"

/* A B x cols block of a tensor: its first element and the row stride. */
typedef struct rnn_mat {
  void *p;
  int64_t ld;
} rnn_mat;

/* Below this many gate elements a step runs on one thread: each step sits between two
 * GEMMs, and waking the OpenMP team there (then OpenBLAS's again) costs more than the
 * arithmetic for all but very large batch x hidden (measured: 32 x 256 LSTM steps). */
#define RNN_OMP_MIN (1 << 18)

static int rnn_gates(int mode) {
  switch (mode) {
    case LT_RNN_RELU:
    case LT_RNN_TANH: return 1;
    case LT_RNN_LSTM: return 4;
    case LT_RNN_GRU: return 3;
  }
  return 0;
}

/* e^x - 1 in float, written so that GCC vectorizes the loops calling it (libm's expf and
 * tanhf are a call per element, which made the gate kernels slower than the GEMMs around
 * them): e^x = 2^k e^r with k = round(x / ln 2), |r| <= ln2 / 2, e^r - 1 by its Taylor series
 * to r^8 (truncation below float's rounding); x is clamped to where 2^k stays a normal float.
 * 2^k (e^r - 1) + (2^k - 1) keeps full relative accuracy near 0 (k = 0), so tanh through it
 * is accurate for small arguments too. */
static inline float rnn_expm1f(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  /* round to nearest by adding and taking away 1.5 * 2^23 (floorf would not vectorize) */
  float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  float r = x - k * 0.693359375f + k * 2.12194440e-4f; /* ln 2 in two parts: r stays exact */
  float q = 1.0f / 40320;
  q = q * r + 1.0f / 5040;
  q = q * r + 1.0f / 720;
  q = q * r + 1.0f / 120;
  q = q * r + 1.0f / 24;
  q = q * r + 1.0f / 6;
  q = q * r + 0.5f;
  q = q * r + 1.0f;
  q = q * r;
  int32_t bits = ((int32_t)k + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return scale * q + (scale - 1);
}

#define NN_GENERIC_FILE "nn_rnn.c"
#include "nn_generic.h"

/* t must be a rows x cols matrix of gates' type with unit stride along a
 * row; NULL is allowed when optional (a zero state). */
static int rnn_mat_of(const char *fn, const char *what, const lt_tensor *t, int type, int64_t rows, int64_t cols,
                      int optional, rnn_mat *m) {
  m->p = NULL;
  m->ld = cols;
  if (!t) return optional ? 0 : lt_fail("%s: %s is required", fn, what);
  if (nn_check_float(t, type, fn, what)) return -1;
  if (t->ndim != 2 || t->size[0] != rows || t->size[1] != cols)
    return lt_fail("%s: %s should be a %lld x %lld matrix", fn, what, (long long)rows, (long long)cols);
  if (cols > 1 && t->stride[1] != 1) return lt_fail("%s: %s needs contiguous rows", fn, what);
  m->p = lt_tensor_data(t);
  m->ld = rows > 1 ? t->stride[0] : cols;
  return 0;
}

static int rnn_bias_of(const char *fn, const char *what, const lt_tensor *t, int type, int64_t n, const void **p) {
  if (nn_check_vec(t, n, type, fn, what)) return -1;
  if (!t) return lt_fail("%s: %s is required", fn, what);
  if (n > 1 && nn_vec_stride(t) != 1) return lt_fail("%s: %s must be contiguous", fn, what);
  *p = lt_tensor_data(t);
  return 0;
}

/* The shape every step shares: B rows of G*H gates. */
static int rnn_shape(const char *fn, int mode, const lt_tensor *gates, int64_t *B, int64_t *H) {
  int G = rnn_gates(mode);
  if (!G) return lt_fail("%s: unknown mode %d (0 RELU, 1 TANH, 2 LSTM, 3 GRU)", fn, mode);
  if (nn_need(fn, "gates", gates, "gates", gates)) return -1;   /* cudnn/RNN.lua runs GPU tensors on the device */
  if (lt_host_type(gates->type) != LT_FLOAT && lt_host_type(gates->type) != LT_DOUBLE)
    return lt_fail("%s is only defined for FloatTensor and DoubleTensor", fn);
  if (gates->ndim != 2 || gates->size[1] % G)
    return lt_fail("%s: gates should be a batch x %d*hiddenSize matrix", fn, G);
  *B = gates->size[0];
  *H = gates->size[1] / G;
  return 0;
}

int lt_nn_rnn_cell_forward(int mode, lt_tensor *gates, lt_tensor *rec, lt_tensor *biasW, lt_tensor *biasR,
                           lt_tensor *hprev, lt_tensor *cprev, lt_tensor *h, lt_tensor *c) {
  static const char fn[] = "rnn_cell_forward";
  int64_t B, H;
  if (rnn_shape(fn, mode, gates, &B, &H)) return -1;
  int G = rnn_gates(mode), type = gates->type, lstm = mode == LT_RNN_LSTM;
  rnn_mat mg, mr, mhp, mcp, mh, mc;
  const void *bW, *bR;
  if (rnn_mat_of(fn, "gates", gates, type, B, G * H, 0, &mg) ||
      rnn_mat_of(fn, "rec", rec, type, B, G * H, 0, &mr) ||
      rnn_bias_of(fn, "biasW", biasW, type, G * H, &bW) || rnn_bias_of(fn, "biasR", biasR, type, G * H, &bR) ||
      rnn_mat_of(fn, "hprev", mode == LT_RNN_GRU ? hprev : NULL, type, B, H, 1, &mhp) ||
      rnn_mat_of(fn, "cprev", lstm ? cprev : NULL, type, B, H, 1, &mcp) ||
      rnn_mat_of(fn, "h", h, type, B, H, 0, &mh) || rnn_mat_of(fn, "c", lstm ? c : NULL, type, B, H, !lstm, &mc))
    return -1;
  NN_CALL(type, rnn_forward, mode, B, H, mg, mr, bW, bR, mhp, mcp, mh, mc);
  return 0;
}

int lt_nn_rnn_cell_backward(int mode, lt_tensor *gates, lt_tensor *rec, lt_tensor *hprev, lt_tensor *cprev,
                            lt_tensor *c, lt_tensor *dh, lt_tensor *dc, lt_tensor *dgates, lt_tensor *drec,
                            lt_tensor *dhprev) {
  static const char fn[] = "rnn_cell_backward";
  int64_t B, H;
  if (rnn_shape(fn, mode, gates, &B, &H)) return -1;
  int G = rnn_gates(mode), type = gates->type, lstm = mode == LT_RNN_LSTM, gru = mode == LT_RNN_GRU;
  rnn_mat mg, mr, mhp, mcp, mc, mdh, mdc, mdg, mdr, mdhp;
  if (rnn_mat_of(fn, "gates", gates, type, B, G * H, 0, &mg) ||
      rnn_mat_of(fn, "rec", gru ? rec : NULL, type, B, G * H, !gru, &mr) ||
      rnn_mat_of(fn, "hprev", gru ? hprev : NULL, type, B, H, 1, &mhp) ||
      rnn_mat_of(fn, "cprev", lstm ? cprev : NULL, type, B, H, 1, &mcp) ||
      rnn_mat_of(fn, "c", lstm ? c : NULL, type, B, H, !lstm, &mc) ||
      rnn_mat_of(fn, "dh", dh, type, B, H, 0, &mdh) ||
      rnn_mat_of(fn, "dc", lstm ? dc : NULL, type, B, H, !lstm, &mdc) ||
      rnn_mat_of(fn, "dgates", dgates, type, B, G * H, 0, &mdg) ||
      rnn_mat_of(fn, "drec", gru ? drec : NULL, type, B, G * H, !gru, &mdr) ||
      rnn_mat_of(fn, "dhprev", gru ? dhprev : NULL, type, B, H, !gru, &mdhp))
    return -1;
  NN_CALL(type, rnn_backward, mode, B, H, mg, mr, mhp, mcp, mc, mdh, mdc, mdg, mdr, mdhp);
  return 0;
}

#else /* ---------------------------------------------- generic part (real) */

#define RNN_ROW(m, b) ((real *)(m).p + (b) * (m).ld)

/* float: through the vectorizable e^x - 1 above; double: libm's, exact to the last bits */
static inline real NN_(rnn_sigmoid)(real x) {
  return sizeof(real) == sizeof(float) ? 1 / (2 + rnn_expm1f((float)-x)) : 1 / (1 + exp(-x));
}
static inline real NN_(rnn_tanh)(real x) {
  if (sizeof(real) != sizeof(float)) return (real)tanh((double)x);
  real em = rnn_expm1f((float)(-2 * x)); /* tanh x = (1 - e^-2x) / (1 + e^-2x) */
  return -em / (2 + em);
}

/* `has` says whether the previous state row exists; always inlined with a constant one, so that
 * each copy of the loop is free of branches (a conditional load stops the vectorizer). */
#define RNN_INLINE static inline __attribute__((always_inline))

/* The gate activations of [from, to) of a row: act(g + bW + r + bR), r keeping + bR. */
RNN_INLINE void NN_(gates_act_row)(int64_t from, int64_t to, int tanh_, real *restrict g, real *restrict r,
                                   const real *restrict bW, const real *restrict bR) {
#pragma GCC ivdep /* the rows never overlap (restrict is lost when inlined) */
  for (int64_t k = from; k < to; k++) {
    real rk = r[k] + bR[k];
    r[k] = rk;
    real a = g[k] + bW[k] + rk;
    g[k] = tanh_ ? NN_(rnn_tanh)(a) : NN_(rnn_sigmoid)(a);
  }
}

/* Loops with one transcendental function each: GCC vectorizes those, not one loop doing all. */
RNN_INLINE void NN_(lstm_fwd_row)(int64_t H, real *restrict g, real *restrict r, const real *restrict bW,
                                  const real *restrict bR, int has, const real *restrict cp, real *restrict c,
                                  real *restrict h) {
  NN_(gates_act_row)(0, 2 * H, 0, g, r, bW, bR);     /* i, f */
  NN_(gates_act_row)(2 * H, 3 * H, 1, g, r, bW, bR); /* g */
  NN_(gates_act_row)(3 * H, 4 * H, 0, g, r, bW, bR); /* o */
#pragma GCC ivdep
  for (int64_t j = 0; j < H; j++) {
    real cc = (has ? g[H + j] * cp[j] : 0) + g[j] * g[2 * H + j];
    c[j] = cc;
    h[j] = g[3 * H + j] * NN_(rnn_tanh)(cc);
  }
}

RNN_INLINE void NN_(gru_fwd_row)(int64_t H, real *restrict g, real *restrict r, const real *restrict bW,
                                 const real *restrict bR, int has, const real *restrict hp, real *restrict h) {
  NN_(gates_act_row)(0, 2 * H, 0, g, r, bW, bR); /* r, z */
#pragma GCC ivdep
  for (int64_t j = 0; j < H; j++) {
    real rn = r[2 * H + j] + bR[2 * H + j];
    r[2 * H + j] = rn;
    real z = g[H + j];
    /* cuDNN applies the reset gate to the recurrent projection after its bias */
    real nn = NN_(rnn_tanh)(g[2 * H + j] + bW[2 * H + j] + g[j] * rn);
    g[2 * H + j] = nn;
    h[j] = (1 - z) * nn + (has ? z * hp[j] : 0);
  }
}

RNN_INLINE void NN_(plain_fwd_row)(int64_t H, int relu, real *restrict g, real *restrict r,
                                      const real *restrict bW, const real *restrict bR, real *restrict h) {
#pragma GCC ivdep /* the rows never overlap (restrict is lost when inlined) */
  for (int64_t j = 0; j < H; j++) {
    real rj = r[j] + bR[j];
    r[j] = rj;
    real a = g[j] + bW[j] + rj;
    real y = relu ? (a > 0 ? a : 0) : NN_(rnn_tanh)(a);
    g[j] = y;
    h[j] = y;
  }
}

static void NN_(rnn_forward)(int mode, int64_t B, int64_t H, rnn_mat g, rnn_mat r, const void *vbW, const void *vbR,
                             rnn_mat hp, rnn_mat cp, rnn_mat h, rnn_mat c) {
  const real *bW = vbW, *bR = vbR;
  int64_t work = B * H * rnn_gates(mode);
#pragma omp parallel for schedule(static) if (work >= RNN_OMP_MIN)
  for (int64_t b = 0; b < B; b++) {
    if (mode == LT_RNN_LSTM)
      if (cp.p) NN_(lstm_fwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), bW, bR, 1, RNN_ROW(cp, b), RNN_ROW(c, b), RNN_ROW(h, b));
      else NN_(lstm_fwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), bW, bR, 0, NULL, RNN_ROW(c, b), RNN_ROW(h, b));
    else if (mode == LT_RNN_GRU)
      if (hp.p) NN_(gru_fwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), bW, bR, 1, RNN_ROW(hp, b), RNN_ROW(h, b));
      else NN_(gru_fwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), bW, bR, 0, NULL, RNN_ROW(h, b));
    else
      NN_(plain_fwd_row)(H, mode == LT_RNN_RELU, RNN_ROW(g, b), RNN_ROW(r, b), bW, bR, RNN_ROW(h, b));
  }
}

RNN_INLINE void NN_(lstm_bwd_row)(int64_t H, const real *restrict g, int has, const real *restrict cp,
                                  const real *restrict c, const real *restrict dh, real *restrict dc,
                                  real *restrict dg) {
  real *tc = dg + 3 * H; /* tanh(c) first, in the o slot it is overwritten from */
#pragma GCC ivdep /* the rows never overlap (restrict is lost when inlined) */
  for (int64_t j = 0; j < H; j++) tc[j] = NN_(rnn_tanh)(c[j]);
#pragma GCC ivdep
  for (int64_t j = 0; j < H; j++) {
    real i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
    real t = tc[j];
    real cprev = has ? cp[j] : 0;
    real dhv = dh[j];
    real dcv = dc[j] + dhv * o * (1 - t * t);
    dg[j] = dcv * gg * i * (1 - i);
    dg[H + j] = dcv * cprev * f * (1 - f);
    dg[2 * H + j] = dcv * i * (1 - gg * gg);
    dg[3 * H + j] = dhv * t * o * (1 - o);
    dc[j] = dcv * f;
  }
}

RNN_INLINE void NN_(gru_bwd_row)(int64_t H, const real *restrict g, const real *restrict r, int has,
                                 const real *restrict hp, const real *restrict dh, real *restrict dg,
                                    real *restrict dr, real *restrict dhp) {
#pragma GCC ivdep /* the rows never overlap (restrict is lost when inlined) */
  for (int64_t j = 0; j < H; j++) {
    real rr = g[j], z = g[H + j], nn = g[2 * H + j];
    real hprev = has ? hp[j] : 0;
    real dhv = dh[j];
    real dan = dhv * (1 - z) * (1 - nn * nn);
    real dar = dan * r[2 * H + j] * rr * (1 - rr);
    real daz = dhv * (hprev - nn) * z * (1 - z);
    dg[j] = dar, dg[H + j] = daz, dg[2 * H + j] = dan;
    dr[j] = dar, dr[H + j] = daz, dr[2 * H + j] = dan * rr;
    dhp[j] = dhv * z;
  }
}

RNN_INLINE void NN_(plain_bwd_row)(int64_t H, int relu, const real *restrict g, const real *restrict dh,
                                      real *restrict dg) {
#pragma GCC ivdep /* the rows never overlap (restrict is lost when inlined) */
  for (int64_t j = 0; j < H; j++) {
    real y = g[j]; /* the gates hold h itself */
    dg[j] = relu ? (y > 0 ? dh[j] : 0) : dh[j] * (1 - y * y);
  }
}

static void NN_(rnn_backward)(int mode, int64_t B, int64_t H, rnn_mat g, rnn_mat r, rnn_mat hp, rnn_mat cp,
                              rnn_mat c, rnn_mat dh, rnn_mat dc, rnn_mat dg, rnn_mat dr, rnn_mat dhp) {
  int64_t work = B * H * rnn_gates(mode);
#pragma omp parallel for schedule(static) if (work >= RNN_OMP_MIN)
  for (int64_t b = 0; b < B; b++) {
    if (mode == LT_RNN_LSTM)
      if (cp.p) NN_(lstm_bwd_row)(H, RNN_ROW(g, b), 1, RNN_ROW(cp, b), RNN_ROW(c, b), RNN_ROW(dh, b), RNN_ROW(dc, b), RNN_ROW(dg, b));
      else NN_(lstm_bwd_row)(H, RNN_ROW(g, b), 0, NULL, RNN_ROW(c, b), RNN_ROW(dh, b), RNN_ROW(dc, b), RNN_ROW(dg, b));
    else if (mode == LT_RNN_GRU)
      if (hp.p) NN_(gru_bwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), 1, RNN_ROW(hp, b), RNN_ROW(dh, b), RNN_ROW(dg, b), RNN_ROW(dr, b), RNN_ROW(dhp, b));
      else NN_(gru_bwd_row)(H, RNN_ROW(g, b), RNN_ROW(r, b), 0, NULL, RNN_ROW(dh, b), RNN_ROW(dg, b), RNN_ROW(dr, b), RNN_ROW(dhp, b));
    else
      NN_(plain_bwd_row)(H, mode == LT_RNN_RELU, RNN_ROW(g, b), RNN_ROW(dh, b), RNN_ROW(dg, b));
  }
}

#undef RNN_ROW
#undef RNN_INLINE

#endif
